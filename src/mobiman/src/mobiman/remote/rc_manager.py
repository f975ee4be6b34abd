"""The remote controller's say over the robot: chassis speed from the sticks, presets on gestures.

The stock `r1_control_manager` reads /controller (hdas_msg/controller_signal_stamped) and,
with the switch in mode 2, drives the chassis from the sticks; mode 5 hands the chassis to
the host computer. This core decides, for each 20 Hz tick, what the manager publishes:

* mode 5 (host in control): nothing at all, so the host's commands are the only ones (after
  one zero Twist on the switch from mode 2, so a stick command does not outlive the handover);
* mode 2: a Twist from the sticks (dead band rescaled so the output is continuous, then scaled
  to the configured maximum speeds), but zero until the sticks have been seen at rest once
  after the mode was entered (a switch flipped with a stick held does not lurch the robot);
* any other mode, or /controller silent for `stale_timeout`: a zero Twist (park), like a
  receiver failsafe (HDAS itself publishes neutral sticks when the receiver loses its link);
* stick gestures in mode 2, once the sticks were at rest there (both sticks held in given
  corners for `hold_s`, the timer restarting whenever a stick leaves its corner): one set of
  joint targets (torso, arms) per hold; while both sticks sit in a gesture's corners, and until
  they are back at rest after a gesture fired, the chassis stays parked instead of driving.

Stick convention (DBUS, docs/protocol.md): a stick pushed up or right reads positive. The
chassis twist is REP 103: +x forward, +y left, +z counter-clockwise. Hence left_y -> +linear.x,
left_x -> −linear.y, right_x -> −angular.z; the signs are config.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple

from r1_common.settings import Settings, setting

AXES = ("left_x", "left_y", "right_x", "right_y")
TWIST_FIELDS = ("linear_x", "linear_y", "angular_z")
CHASSIS_LIMITS = {"linear_x": 1.5, "linear_y": 1.5, "angular_z": 3.0}     # the chassis topic's ranges
TARGET_GROUPS = ("torso", "left_arm", "right_arm")


@dataclass(frozen=True)
class Sticks:
    """One /controller sample: sticks in [−1, 1] and the mode switch."""

    left_x: float
    left_y: float
    right_x: float
    right_y: float
    mode: int

    def axis(self, name: str) -> float:
        """The value of stick axis `name` (one of AXES)."""
        return float(getattr(self, name))


@dataclass(frozen=True)
class AxisMap(Settings):
    """One twist component: which stick axis, with which sign, up to which speed."""

    axis: str = setting("left_y", "the stick axis", choices=AXES)
    sign: float = setting(1.0, "1 or -1: the twist's sign for a stick pushed up or right", choices=(1.0, -1.0))
    max_speed: float = setting(1.0, "m/s or rad/s; at full stick travel (above the chassis limit: clamped, with "
                               "a warning)", low=0.0)


@dataclass(frozen=True)
class StickMapping(Settings):
    """Twist component <- stick axis × sign × max_speed. A component given in part keeps its own defaults
    for the rest (Settings reads a section over its field's default)."""

    linear_x: AxisMap = setting(AxisMap("left_y", 1.0, 1.0), "m/s; left stick up drives forward")
    linear_y: AxisMap = setting(AxisMap("left_x", -1.0, 0.5), "m/s; left stick left drives left")
    angular_z: AxisMap = setting(AxisMap("right_x", -1.0, 1.0), "rad/s; right stick left turns left (CCW)")

    def __getitem__(self, name: str) -> AxisMap:
        """The component `name` (one of TWIST_FIELDS)."""
        return getattr(self, name)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Target:
    """A joint target for the joint tracker: positions [rad] and per-joint speed caps [rad/s]."""

    group: str
    positions: Tuple[float, ...]
    velocities: Tuple[float, ...]


@dataclass(frozen=True)
class JointTarget(Settings):
    """A gesture's target of one group. Raises ValueError on construction unless positions and velocities
    have one length (> 0) and every velocity is > 0."""

    positions: List[float] = setting([], "rad; the group's joint positions")
    velocities: List[float] = setting([], "rad/s; > 0; per-joint speed caps")

    def __post_init__(self) -> None:
        if len(self.positions) != len(self.velocities) or not self.positions \
                or not all(math.isfinite(v) for v in list(self.positions) + list(self.velocities)) \
                or any(v <= 0.0 for v in self.velocities):
            raise ValueError("positions and velocities (> 0) of one length, finite")


@dataclass(frozen=True)
class Gesture(Settings):
    """Both sticks held in the given corners for hold_s seconds: the targets, once. Raises ValueError on
    construction unless both corners are [±1, ±1] and there is at least one target."""

    left: Optional[Tuple[int, int]] = setting(None, "[x sign, y sign] of the left stick's corner, each 1 or -1")
    right: Optional[Tuple[int, int]] = setting(None, "[x sign, y sign] of the right stick's corner")
    hold_s: float = setting(1.0, "s; how long both sticks are held (a deliberate hold)", low=0.5)
    torso: Optional[JointTarget] = setting(None, "the torso's target (`positions`, `velocities`)")
    left_arm: Optional[JointTarget] = setting(None, "the left arm's target")
    right_arm: Optional[JointTarget] = setting(None, "the right arm's target")

    def __post_init__(self) -> None:
        for side in ("left", "right"):
            c = getattr(self, side)
            if c is None or len(c) != 2 or any(v not in (-1, 1) for v in c):
                raise ValueError(f"{side}: a corner is [x sign, y sign] with signs ±1, not {c}")
        if not self.targets:
            raise ValueError("no targets (torso, left_arm, right_arm)")

    @property
    def targets(self) -> Tuple[Target, ...]:
        """The targets it sends, in TARGET_GROUPS order."""
        out = []
        for group in TARGET_GROUPS:
            t = getattr(self, group)
            if t is not None:
                out.append(Target(group, tuple(t.positions), tuple(t.velocities)))
        return tuple(out)


@dataclass(frozen=True)
class RcConfig(Settings):
    """The manager's behaviour. Raises ValueError on construction unless 0 <= dead_band < 0.5,
    dead_band < corner_threshold < 1, stale_timeout > 0 and no two gestures share their corners."""

    dead_band: float = setting(0.05, "stick travel that reads as zero, in [0, 0.5); the rest is rescaled to "
                               "[0, 1]")
    stale_timeout: float = setting(0.5, "s; > 0; /controller older than this (ROS and wall time): park (zero "
                                   "Twist)")
    drive_mode: int = setting(2, "switch position: the remote drives the chassis")
    host_mode: int = setting(5, "switch position: the host computer is in control; nothing is published")
    corner_threshold: float = setting(0.6, "in (dead_band, 1); both axes of a stick beyond this (in magnitude): "
                                      "it is in a corner (gestures); reachable on a round stick gate (0.707 at "
                                      "45°)")
    stop_on_handover: bool = setting(True, "one zero Twist when the switch goes from drive_mode to host_mode")
    mapping: StickMapping = setting(StickMapping(), "twist component <- stick (`axis`, `sign`, `max_speed`)")
    gestures: Dict[str, Gesture] = setting({}, "name -> `left`, `right` corners, `hold_s`, targets (`torso`, "
                                           "`left_arm`, `right_arm`)")

    def __post_init__(self) -> None:
        if not 0.0 <= self.dead_band < 0.5:
            raise ValueError(f"dead_band must be in [0, 0.5), not {self.dead_band}")
        if not self.dead_band < self.corner_threshold < 1.0:
            raise ValueError(f"corner_threshold must be in (dead_band, 1), not {self.corner_threshold}")
        if not self.stale_timeout > 0.0:
            raise ValueError(f"stale_timeout must be > 0, not {self.stale_timeout}")
        corners = [(g.left, g.right) for g in self.gestures.values()]
        if len(set(corners)) != len(corners):
            raise ValueError("two gestures use the same pair of corners")

    def clamped(self) -> Tuple["RcConfig", List[str]]:
        """This config with every max_speed within the chassis topic's limits (CHASSIS_LIMITS), and a
        note per value that was clamped."""
        notes, axes = [], {}
        for name in TWIST_FIELDS:
            a = self.mapping[name]
            if a.max_speed > CHASSIS_LIMITS[name]:
                notes.append(f"mapping/{name}: max_speed {a.max_speed} clamped to the chassis limit "
                             f"{CHASSIS_LIMITS[name]}")
                a = replace(a, max_speed=CHASSIS_LIMITS[name])
            axes[name] = a
        return replace(self, mapping=StickMapping(**axes)), notes


@dataclass(frozen=True)
class Twist:
    """A chassis Twist's planar part: m/s, m/s, rad/s (REP 103)."""

    linear_x: float = 0.0
    linear_y: float = 0.0
    angular_z: float = 0.0


ZERO = Twist()


@dataclass(frozen=True)
class RcOutput:
    """What to publish this tick: a Twist or None (nothing), joint targets of a gesture that fired."""

    twist: Twist | None
    targets: tuple[Target, ...]
    state: str


def dead_band(x: float, band: float) -> float:
    """0 inside ±band, then linear to ±1 at ±1: continuous at the band's edge, full range kept."""
    x = max(-1.0, min(1.0, x))
    if abs(x) <= band:
        return 0.0
    return math.copysign((abs(x) - band) / (1.0 - band), x)


class RcManager:
    """The manager's state machine: `on_signal` per /controller sample, `step` per tick (see the module's
    docstring). Times are the caller's clock [s]."""

    def __init__(self, config: RcConfig):
        self.cfg = config
        self.signal: Sticks | None = None
        self._mode: int | None = None          # mode of the last tick that saw a fresh signal
        self._engaged = False                  # sticks seen at rest since mode 2 was entered
        self._armed = False                    # ... and since the last gesture fired: may drive
        self._hold: dict[str, float] = {}      # gesture -> time its corners were entered
        self._fired: set[str] = set()          # gestures fired during the current hold
        self._pending: list[Target] = []
        self._published_twist = False
        self.fired_count = 0
        self.state = "waiting for /controller"

    # -- inputs ------------------------------------------------------------------------------
    def on_signal(self, sig: Sticks, now: float) -> None:
        """A /controller sample; ValueError (and nothing changes) if a stick is not finite."""
        values = [sig.axis(a) for a in AXES]
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"non-finite stick value in {values}")
        self.signal = sig
        self._track_gestures(sig, now)

    def _in_corner(self, x: float, y: float, corner: tuple[int, int]) -> bool:
        th = self.cfg.corner_threshold
        return x * corner[0] >= th and y * corner[1] >= th

    def _gesture_pose(self, sig: Sticks) -> str | None:
        """The name of the gesture whose corners both sticks are in, if any."""
        for name, g in self.cfg.gestures.items():
            assert g.left is not None and g.right is not None, "Gesture.__post_init__ refuses a missing corner"
            if self._in_corner(sig.left_x, sig.left_y, g.left) and self._in_corner(sig.right_x, sig.right_y, g.right):
                return name
        return None

    def _track_gestures(self, sig: Sticks, now: float) -> None:
        """Hold timers run on every sample: leaving the corners (even for one sample) restarts them."""
        engaged = self._engaged and sig.mode == self.cfg.drive_mode == self._mode
        held = self._gesture_pose(sig) if engaged else None
        for name in list(self._hold):
            if name != held:
                del self._hold[name]
                self._fired.discard(name)
        if held is None:
            return
        g = self.cfg.gestures[held]
        start = self._hold.setdefault(held, now)
        if held not in self._fired and now - start >= g.hold_s:
            self._fired.add(held)
            self._pending.extend(g.targets)
            self.fired_count += 1
            self._armed = False            # no driving until the sticks are back at rest

    # -- the 20 Hz tick ----------------------------------------------------------------------
    def step(self, now: float, signal_age: float | None) -> RcOutput:
        """What to publish now; `signal_age` is the age of the last /controller sample (None: never)."""
        sig = self.signal
        if sig is None or signal_age is None or signal_age > self.cfg.stale_timeout:
            self._reset()
            self.state = "park: no /controller" if sig is None else "park: /controller stale"
            return self._out(ZERO)
        if sig.mode == self.cfg.host_mode:
            handover = self._published_twist and self.cfg.stop_on_handover and self._mode == self.cfg.drive_mode
            self._reset()
            self._mode = sig.mode
            self.state = "host in control"
            self._published_twist = False
            return RcOutput(ZERO if handover else None, (), self.state)
        if sig.mode != self.cfg.drive_mode:
            self._reset()
            self._mode = sig.mode
            self.state = f"park: mode {sig.mode}"
            return self._out(ZERO)
        if self._mode != self.cfg.drive_mode:
            self._armed = self._engaged = False
            self._mode = sig.mode
        targets, self._pending = tuple(self._pending), []
        at_rest = all(dead_band(sig.axis(a), self.cfg.dead_band) == 0.0 for a in AXES)
        if at_rest:
            self._armed = self._engaged = True
        if self._gesture_pose(sig) is not None:
            self.state = "gesture: " + next(iter(self._hold), "?")
            return self._out(ZERO, targets)
        if not self._armed:
            self.state = "park: sticks to rest first"
            return self._out(ZERO, targets)
        self.state = "remote drives"
        m = self.cfg.mapping
        return self._out(Twist(*(m[f].sign * m[f].max_speed * dead_band(sig.axis(m[f].axis), self.cfg.dead_band)
                                 for f in TWIST_FIELDS)), targets)

    def _out(self, twist: Twist, targets: tuple[Target, ...] = ()) -> RcOutput:
        self._published_twist = True
        return RcOutput(twist, targets, self.state)

    def _reset(self) -> None:
        self._hold.clear()
        self._fired.clear()
        self._pending.clear()
        self._armed = self._engaged = False
        if self.signal is None:
            self._mode = None
