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
from dataclasses import dataclass, field
from typing import Any, Mapping

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
        return float(getattr(self, name))


@dataclass(frozen=True)
class AxisMap:
    """One twist component: which stick axis, with which sign, up to which speed."""

    axis: str
    sign: float
    max_speed: float


@dataclass(frozen=True)
class Target:
    """A joint target for the joint tracker: positions and per-joint speed caps."""

    group: str
    positions: tuple[float, ...]
    velocities: tuple[float, ...]


@dataclass(frozen=True)
class Gesture:
    """Both sticks held in the given corners (signs of x and y per stick) for hold_s seconds."""

    name: str
    left: tuple[int, int]
    right: tuple[int, int]
    hold_s: float
    targets: tuple[Target, ...]


@dataclass(frozen=True)
class RcConfig:
    dead_band: float = 0.05
    stale_timeout: float = 0.5
    drive_mode: int = 2
    host_mode: int = 5
    corner_threshold: float = 0.6      # |x| and |y| both beyond this: the stick is in a corner
    stop_on_handover: bool = True
    mapping: Mapping[str, AxisMap] = field(default_factory=lambda: {
        "linear_x": AxisMap("left_y", 1.0, 1.0),
        "linear_y": AxisMap("left_x", -1.0, 0.5),
        "angular_z": AxisMap("right_x", -1.0, 1.0)})
    gestures: tuple[Gesture, ...] = ()

    @classmethod
    def from_params(cls, p: Mapping[str, Any]) -> tuple["RcConfig", list[str]]:
        """Config from the node's params; ValueError on nonsense, notes for values that were clamped."""
        notes: list[str] = []
        d = cls()
        dead_band = float(p.get("dead_band", d.dead_band))
        if not 0.0 <= dead_band < 0.5:
            raise ValueError(f"dead_band must be in [0, 0.5), not {dead_band}")
        threshold = float(p.get("corner_threshold", d.corner_threshold))
        if not dead_band < threshold < 1.0:
            raise ValueError(f"corner_threshold must be in (dead_band, 1), not {threshold}")
        stale = float(p.get("stale_timeout", d.stale_timeout))
        if not stale > 0.0:
            raise ValueError(f"stale_timeout must be > 0, not {stale}")
        mapping = dict(d.mapping)
        for name, spec in (p.get("mapping") or {}).items():
            if name not in TWIST_FIELDS:
                raise ValueError(f"mapping: unknown twist field {name!r}; known {TWIST_FIELDS}")
            base = mapping[name]
            axis = str(spec.get("axis", base.axis))
            if axis not in AXES:
                raise ValueError(f"mapping/{name}: unknown axis {axis!r}; known {AXES}")
            sign = float(spec.get("sign", base.sign))
            if sign not in (1.0, -1.0):
                raise ValueError(f"mapping/{name}: sign must be 1 or -1, not {sign}")
            max_speed = float(spec.get("max_speed", base.max_speed))
            if not (math.isfinite(max_speed) and max_speed >= 0.0):
                raise ValueError(f"mapping/{name}: max_speed must be finite and >= 0, not {max_speed}")
            if max_speed > CHASSIS_LIMITS[name]:
                notes.append(f"mapping/{name}: max_speed {max_speed} clamped to the chassis limit "
                             f"{CHASSIS_LIMITS[name]}")
                max_speed = CHASSIS_LIMITS[name]
            mapping[name] = AxisMap(axis, sign, max_speed)
        gestures = tuple(_gesture(name, spec) for name, spec in (p.get("gestures") or {}).items())
        corners = [(g.left, g.right) for g in gestures]
        if len(set(corners)) != len(corners):
            raise ValueError("two gestures use the same pair of corners")
        return cls(dead_band, stale, int(p.get("drive_mode", d.drive_mode)), int(p.get("host_mode", d.host_mode)),
                   threshold, bool(p.get("stop_on_handover", d.stop_on_handover)), mapping, gestures), notes


def _corner(name: str, value: Any) -> tuple[int, int]:
    c = tuple(int(v) for v in value)
    if len(c) != 2 or any(v not in (-1, 1) for v in c):
        raise ValueError(f"gesture {name}: a corner is [x sign, y sign] with signs ±1, not {value}")
    return c  # type: ignore[return-value]


def _gesture(name: str, spec: Mapping[str, Any]) -> Gesture:
    hold = float(spec.get("hold_s", 1.0))
    if not hold >= 0.5:
        raise ValueError(f"gesture {name}: hold_s must be >= 0.5 s (a deliberate hold), not {hold}")
    targets = []
    for group in TARGET_GROUPS:
        t = spec.get(group)
        if t is None:
            continue
        pos = tuple(float(v) for v in t["positions"])
        vel = tuple(float(v) for v in t["velocities"])
        if len(pos) != len(vel) or not pos or not all(math.isfinite(v) for v in pos + vel) \
                or any(v <= 0.0 for v in vel):
            raise ValueError(f"gesture {name}/{group}: positions and velocities (> 0) of one length, finite")
        targets.append(Target(group, pos, vel))
    if not targets:
        raise ValueError(f"gesture {name}: no targets (torso, left_arm, right_arm)")
    return Gesture(name, _corner(name, spec["left"]), _corner(name, spec["right"]), hold, tuple(targets))


@dataclass(frozen=True)
class Twist:
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

    def _gesture_pose(self, sig: Sticks) -> Gesture | None:
        for g in self.cfg.gestures:
            if self._in_corner(sig.left_x, sig.left_y, g.left) and self._in_corner(sig.right_x, sig.right_y, g.right):
                return g
        return None

    def _track_gestures(self, sig: Sticks, now: float) -> None:
        """Hold timers run on every sample: leaving the corners (even for one sample) restarts them."""
        engaged = self._engaged and sig.mode == self.cfg.drive_mode == self._mode
        g = self._gesture_pose(sig) if engaged else None
        for name in list(self._hold):
            if g is None or name != g.name:
                del self._hold[name]
                self._fired.discard(name)
        if g is None:
            return
        start = self._hold.setdefault(g.name, now)
        if g.name not in self._fired and now - start >= g.hold_s:
            self._fired.add(g.name)
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
