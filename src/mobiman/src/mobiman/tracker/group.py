"""One joint group of the tracker (an arm or the torso) as a controller, free of ROS.

`GroupController.update(feedback, t)` is what `r1_jointTracker_demo_node` does with a feedback message
of the group: check it, step the group's Ruckig trajectory on the feedback's stamps (the shared
`FeedbackClock`), re-plan from the measured position only when the motors were not holding the
joints (`mobiman.control.setpoint.SetpointGuard`: reported off by the driver, or unknown while the
feedback was stale; never because a load pushed them), wait while they lag it and do not keep pace,
and return the command to publish (MIT: the feed-forward of the upper body on the moving base and the
servo's damping, `mobiman.control`; PID: the speed limit and torque ratio), or None to publish
nothing. `target(...)` takes a target and, with `react_to_targets`, returns the next tick's command at
once. The node publishes what
these return and logs their `events`; it serialises the calls per group (one lock), and the groups
share one `UpperBody` (its own lock).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Collection, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from mobiman.control.servo import MitServo, ServoSettings
from mobiman.control.setpoint import SetpointGuard
from mobiman.control.upper_body import UpperBody
from mobiman.model.robot_model import RobotModel
from mobiman.tracker.feedback_clock import FeedbackClock
from mobiman.tracker.joint_tracker import (
    JointTrajectoryTracker,
    MitGains,
    TargetError,
    TrackerLimits,
    mit_command,
    pid_command,
    read_target,
)
from mobiman.tracker.settings import GroupSettings, JointTrackerSettings
from r1_common.settings import ConfigError
from r1_common.validation import FEEDBACK_MARGIN, InputError, plausible_positions

GROUPS = ("torso", "left_arm", "right_arm")


class Feedback(NamedTuple):
    """One feedback message of a group: measured positions and velocities (as HDAS sends them, the
    arm's gripper as a 7th entry), and its header stamp [s] (0: unstamped)."""

    position: Sequence[float]
    velocity: Sequence[float]
    stamp: float


@dataclass
class GroupCommand:
    """One hdas_msg/motor_control's fields (the gripper appended as a 7th entry when it has a target)."""

    p_des: List[float]
    v_des: List[float]
    kp: List[float]
    kd: List[float]
    t_ff: List[float]
    stamp: Optional[float] = None     # the feedback time the tick ran on (None: sent on a target's arrival)


class Event(NamedTuple):
    """A line for the node's log: `key` throttles it per group (None: always logged)."""

    level: str          # "info", "warn" or "error"
    key: Optional[str]
    text: str


class GroupController:
    """One group's tick: feedback in, command out (see the module). Thread-unsafe: the caller serialises."""

    def __init__(self, name: str, tracker: JointTrajectoryTracker, body: UpperBody, gains: MitGains,
                 effort: np.ndarray, clock: FeedbackClock, urdf_joints: Collection[str], *, mode: str = "mit",
                 torque_ratio: Optional[Sequence[float]] = None, gripper_gains: Optional[Tuple[float, float]] = None,
                 gripper_joint: Optional[str] = None, gripper_range: Tuple[float, float] = (0.0, 0.0),
                 gravity_at_plan: bool = False, max_following_error: float = 0.02, resync_error: float = 0.3,
                 react_to_targets: bool = True, servo: Optional[ServoSettings] = None) -> None:
        """`effort` [N·m]: the joints' torque limits (the URDF's: their motors' peak); `servo`: what the
        servo adds to t_ff (mobiman.control.servo: damping, gravity feedback, friction; None: nothing);
        `resync_error`, `max_following_error` [rad]: the SetpointGuard's."""
        if mode not in ("mit", "pid"):
            raise ValueError(f"mode must be mit or pid, not {mode!r}")
        self.name, self.tracker, self.body, self.gains, self.clock = name, tracker, body, gains, clock
        self.effort = np.asarray(effort, float)          # the URDF's torque limits: t_ff stays within them
        self.urdf_joints, self.mode = frozenset(urdf_joints), mode
        n = len(tracker.names)
        self.torque_ratio = np.array([1.0] * n if torque_ratio is None else torque_ratio, float)
        self.gripper_gains, self.gripper_joint, self.gripper_range = gripper_gains, gripper_joint, gripper_range
        self.gravity_at_plan = gravity_at_plan           # the group's own joints at the plan in RNEA
        self.servo = MitServo(servo if servo is not None else ServoSettings(), gains.kp, self.effort)
        self.guard = SetpointGuard(n, resync_error, max_following_error)
        self.react_to_targets = react_to_targets
        self.gripper_target: Optional[float] = None
        self.here: Optional[np.ndarray] = None           # the last measured joints, clipped to the limits
        self.measured_velocity: Optional[np.ndarray] = None   # and their velocities (None: not sent)
        self.age = 0.0                                   # the last feedback's age when its tick ran [s]
        self.delay = 0.0                                 # the loop's delay at the last tick [s]: feedback age + period
        self._last_why: Optional[str] = None             # the re-plan reason of the last tick
        self.early = False                               # a tick was sent ahead of this feedback period
        self.last_target: Optional[Tuple[List[float], List[float]]] = None
        self.events: List[Event] = []                    # for the caller to log (and clear)
        self.counters: Dict[str, int] = dict(
            ticks=0, dropped=0, clamped=0, torque_clamped=0, bad_feedback=0, bad_stamps=0, ruckig_errors=0,
            early_commands=0, resyncs=0, paused=0)

    @property
    def state(self) -> str:
        if not self.tracker.started:
            return "waiting for feedback"
        if self.clock.stale:
            return "feedback stale"
        if self.guard.off:
            return "motors off: following the measured position"
        return "at target" if self.tracker.at_target else "moving"

    def _say(self, level: str, key: Optional[str], text: str) -> None:
        self.events.append(Event(level, key, f"{self.name} {text}"))

    # -- inputs ----------------------------------------------------------------------------------
    def target(self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float]
               ) -> Optional[GroupCommand]:
        """A target (a JointState's fields); the command to send at once (react_to_targets) or None."""
        n = len(self.tracker.names)
        try:
            position, velocity, unknown_names = read_target(names, position, velocity, self.tracker.names,
                                                            self.urdf_joints, self.gripper_joint)
            if unknown_names:
                self._say("warn", "names", f"target names {list(names)} are no URDF joints: taken by index, "
                                           "as the vendor's node does")
            if len(position) == n + 1 and self.gripper_gains is None:
                raise TargetError(f"target position has {n + 1} entries; {self.name} takes {n} (no gripper)")
            grip = float(position[n]) if len(position) == n + 1 else None
            if grip is not None and not np.isfinite(grip):
                raise TargetError(f"gripper target {grip} is not finite")
            notes = self.tracker.set_target(position, velocity)
            self.last_target = (list(position[:n]), list(velocity))
            if grip is not None:
                lo, hi = self.gripper_range
                self.gripper_target = min(max(grip, lo), hi)
                if self.gripper_target != grip:
                    notes.append(f"gripper target {grip:.4g} clamped to {self.gripper_target:.4g} m")
            else:
                self.gripper_target = None
        except TargetError as e:
            self.counters["dropped"] += 1
            self._say("error", "bad", f"target dropped: {e}")
            return None
        if notes:
            self.counters["clamped"] += 1
            self._say("warn", "clamp", "target: " + "; ".join(notes))
        return self._tick_early() if self.react_to_targets else None

    def _tick_early(self) -> Optional[GroupCommand]:
        """The next tick's command now, borrowing that tick from the plan's clock; once per feedback
        period, and only while the feedback is live."""
        if not self.tracker.started or self.clock.stale or self.early or self.here is None:
            return None
        if not self._gate(1):
            return None
        self.early = True
        self.clock.borrow()
        self.tracker.advance()
        if self.tracker.last_error:
            self.counters["ruckig_errors"] += 1
        self.counters["early_commands"] += 1
        return self._command(None)

    def update(self, feedback: Feedback, t: float) -> Optional[GroupCommand]:
        """One tick at ROS time `t` (the node's clock) for a feedback message; None: publish nothing
        (the feedback was refused)."""
        n = len(self.tracker.names)
        # checked on the message's own tuple: numpy's isfinite/all on 6 values cost more than the rest
        position = feedback.position[:n]
        lim = self.tracker.limits
        try:
            if len(position) != n or not all(map(math.isfinite, position)):
                raise InputError("feedback position", feedback.position, f"needs {n} finite entries")
            q = plausible_positions(np.array(position, float), lim.lower, lim.upper, FEEDBACK_MARGIN,
                                    "feedback position", self.tracker.names)
        except InputError as e:
            self.counters["bad_feedback"] += 1
            self._say("error", "feedback", f"feedback ignored: {e}")
            return None
        arrival = self.clock.receive(feedback.stamp, t)
        if arrival.stamp_note:
            self.counters["bad_stamps"] += 1
            self._say("warn", "stamp", f"feedback {arrival.stamp_note}")
        self.body.set(self.name, q)
        if arrival.back:
            self.guard.feedback_back()
            self._say("info", "back", "feedback is back; publishing again")
        here = np.clip(q, lim.lower, lim.upper)       # a joint resting on its hard stop reads just past it
        self.here = here
        self.measured_velocity = self._velocity(feedback.velocity, n)
        if not self.tracker.started:
            self.tracker.reset(here)     # hold where the robot is: no jump to zero or a stale target
            self._say("info", None, f"feedback arrived; holding {np.round(q, 3).tolist()}")
        else:
            why = self.guard.resync(q, self.tracker.position)
            if why is not None:              # the motors were not holding the joints: start from where they are
                self._resync(q, here, why, news=why != self._last_why)
            self._last_why = why
        self.early = False
        due = self.clock.ticks_due(arrival.time)
        self.age = max(t - arrival.time, 0.0)
        self.delay = self.age + self.clock.period
        steps = self._gate(due)
        for _ in range(steps):
            self.tracker.advance()
        if steps and self.tracker.last_error:
            self.counters["ruckig_errors"] += 1
        self.counters["ticks"] += 1
        return self._command(arrival.time)

    def motors(self, powered: Sequence[bool]) -> None:
        """The driver's report of which joints' motors hold them (mobiman.control.setpoint); ValueError
        for another count than the group's joints."""
        self.guard.motors(powered)

    def watch(self, t: float) -> bool:
        """The watchdog at ROS time `t`: True when the feedback has just become stale (no output until it is back)."""
        if not self.tracker.started or not self.clock.check_stale(t):
            return False
        self._say("warn", "stale", f"feedback stale for {self.clock.age(t):.3f} s (> {self.clock.timeout} s): not "
                                   f"publishing until it is back (HDAS holds the last command); "
                                   f"{self.clock.stale_events} times so far")
        return True

    # -- the pieces ------------------------------------------------------------------------------
    def _gate(self, steps: int) -> int:
        """The ticks the plan may take now (mobiman.control.setpoint.SetpointGuard.gate: none while a joint
        lags the moving plan and does not keep pace)."""
        assert self.here is not None, "a tick has measured joints"
        allowed = self.guard.gate(steps, self.here, self.measured_velocity, self.tracker.position,
                                  self.tracker.velocity, self.age)
        if allowed < steps:
            self.counters["paused"] += 1
        return allowed

    @staticmethod
    def _velocity(velocity: Sequence[float], n: int) -> Optional[np.ndarray]:
        """The measured joint velocities of a feedback message, None when it has none usable."""
        if len(velocity) < n:
            return None
        v = np.array(velocity[:n], float)
        return v if np.isfinite(v).all() else None

    def _resync(self, q: np.ndarray, here: np.ndarray, why: str, news: bool = True) -> None:
        """The motors were not holding the joints (off, faulted, or unknown after stale feedback): plan again
        from where they are, so that motors holding again are never yanked toward a stale set-point.
        `news`: a new reason (counted and said; the same reason tick after tick is not)."""
        err = np.abs(q - self.tracker.position)
        worst = int(np.argmax(err))
        self.tracker.reset(here)
        if self.last_target is not None:
            try:
                self.tracker.set_target(*self.last_target)
            except TargetError:
                pass
        if not news:
            return
        self.counters["resyncs"] += 1
        self._say("warn", "resync", f"re-planned from the measured position: {why}; {self.tracker.names[worst]} was "
                                    f"{err[worst]:.3f} rad from the plan ({self.counters['resyncs']} times so far)")

    def _command(self, stamp: Optional[float]) -> GroupCommand:
        """The command for the plan's current state, the gripper appended when it has a target."""
        trk = self.tracker
        if self.mode == "mit":
            planned = trk.position if self.gravity_at_plan else None
            ff = self.body.feedforward(self.name, planned, trk.acceleration, self.servo.share(self.delay))
            inertia = self.body.inertia(self.name, planned) if self.servo.modal is not None else None
            t_ff, beyond = self.servo.t_ff(ff, trk.velocity, self.measured_velocity, self.delay, inertia)
            if beyond:
                self.counters["torque_clamped"] += 1
                self._say("warn", "torque", f"feed-forward torque beyond the effort limits {self.effort.tolist()} "
                                            "N·m: clamped (the motors cannot hold this posture or acceleration)")
            fields = mit_command(trk, self.gains, t_ff)
        else:
            fields = pid_command(trk, self.torque_ratio)
        p_des, v_des, kp_des, kd_des, t_ff_des = fields
        cmd = GroupCommand(list(p_des), list(v_des), list(kp_des), list(kd_des), list(t_ff_des), stamp=stamp)
        # Ruckig does not enforce position limits: a braking joint may pass one by a hair
        cmd.p_des = np.clip(cmd.p_des, trk.limits.lower, trk.limits.upper).tolist()
        if self.gripper_target is not None:
            assert self.gripper_gains is not None, "target() takes a gripper target only with gripper gains"
            kp, kd = self.gripper_gains
            for lst, x in zip((cmd.p_des, cmd.v_des, cmd.kp, cmd.kd, cmd.t_ff),
                              (self.gripper_target, 0.0, kp, kd, 0.0)):
                lst.append(x)
        return cmd


def build_groups(settings: JointTrackerSettings, model: RobotModel, joint_groups: Mapping[str, Sequence[str]],
                 body: UpperBody, wall: Callable[[], float] = time.monotonic
                 ) -> Tuple[Dict[str, GroupController], List[str]]:
    """The enabled groups' controllers from the settings, and warnings for the log (a speed cap above
    the URDF's velocity limit is capped to it). ConfigError naming the key for a group that does not fit."""
    enabled = [g for g in GROUPS if not (g == "torso" and settings.disable_torso)]
    unknown = sorted(set(settings.groups) - set(GROUPS))
    if unknown:
        raise ConfigError(f"groups/{unknown[0]}", f"unknown group (known: {', '.join(GROUPS)})")
    out: Dict[str, GroupController] = {}
    notes: List[str] = []
    urdf_joints = frozenset(model.joint_names)
    for name in enabled:
        if name not in settings.groups:
            raise ConfigError(f"groups/{name}", "missing: the group is enabled")
        try:
            out[name] = _group(name, settings, settings.groups[name], model, joint_groups, body, urdf_joints,
                               notes, wall)
        except ConfigError:
            raise
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"groups/{name}", f"{e.__class__.__name__}: {e}") from None
    return out, notes


def _group(name: str, s: JointTrackerSettings, cfg: GroupSettings, model: RobotModel,
           joint_groups: Mapping[str, Sequence[str]], body: UpperBody, urdf_joints: frozenset,
           notes: List[str], wall: Callable[[], float]) -> GroupController:
    n, limits = len(joint_groups[name]), model.limits(name)
    for key in ("kp", "kd", "velocity_cap", "torque_ratio", "friction_coulomb", "friction_viscous"):
        value = getattr(cfg, key)
        if value is not None and len(value) != n:
            raise ConfigError(f"groups/{name}/{key}", f"needs {n} entries, got {value}")
    if s.fast and name not in s.fast_limits:
        raise ConfigError(f"fast_limits/{name}", "fast mode needs the group's velocity and acceleration")
    fixed = s.fast_limits[name] if s.fast else None
    if fixed is not None:
        for key in ("velocity", "acceleration"):
            if len(getattr(fixed, key)) != n:
                raise ConfigError(f"fast_limits/{name}/{key}", f"needs {n} entries, got {getattr(fixed, key)}")

    def capped(what: str, values: Sequence[float]) -> np.ndarray:
        cap = np.array(values, float)
        if np.any(cap > limits.velocity):
            notes.append(f"{name} {what} {cap.tolist()} is above the URDF's velocity limits "
                         f"{limits.velocity.tolist()}; capped to them")
        return np.minimum(cap, limits.velocity)

    tracker_limits = TrackerLimits(
        lower=limits.lower, upper=limits.upper, velocity_cap=capped("velocity_cap", cfg.velocity_cap),
        fixed_velocity=capped("fast_limits velocity", fixed.velocity) if fixed else None,
        fixed_acceleration=np.array(fixed.acceleration, float) if fixed else None)
    gripper_joint, gripper_range = None, (0.0, 0.0)
    if cfg.gripper is not None:
        side = name[:-len("_arm")] if name.endswith("_arm") else name   # (3.8 has no removesuffix)
        if f"{side}_gripper" not in joint_groups:
            raise ConfigError(f"groups/{name}/gripper", f"no {side}_gripper group in the joint groups")
        gripper_joint = joint_groups[f"{side}_gripper"][0]
        g_lim = model.limits(f"{side}_gripper")
        gripper_range = (float(g_lim.lower[0]), float(g_lim.upper[0]))
    return GroupController(
        name, JointTrajectoryTracker(joint_groups[name], tracker_limits, 1.0 / s.nominal_rate_hz), body,
        MitGains(np.array(cfg.kp, float), np.array(cfg.kd, float)), limits.effort.copy(),
        FeedbackClock(s.feedback_timeout, s.nominal_rate_hz, wall=wall), urdf_joints, mode=s.output_mode,
        torque_ratio=cfg.torque_ratio, gripper_gains=(cfg.gripper.kp, cfg.gripper.kd) if cfg.gripper else None,
        gripper_joint=gripper_joint, gripper_range=gripper_range, gravity_at_plan=cfg.gravity_at == "planned",
        max_following_error=s.max_following_error, resync_error=s.resync_error,
        react_to_targets=s.react_to_targets, servo=servo_settings(cfg, s, n))


def servo_settings(cfg: GroupSettings, s: JointTrackerSettings, n: int) -> ServoSettings:
    """A group's share of its MIT command (mobiman.control.servo) from the settings."""
    return ServoSettings(cfg.damping_ratio, s.damping_phase, cfg.gravity_feedback,
                         tuple(cfg.friction_coulomb or ()), tuple(cfg.friction_viscous or ()), s.friction_smoothing,
                         *s.feedback_delay)
