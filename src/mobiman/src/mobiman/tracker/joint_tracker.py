"""Joint-space target tracking for one joint group (an arm or the torso), free of ROS.

Each target of the stream (joint positions, optional per-joint speed limits) becomes a
jerk-limited Ruckig trajectory that starts from the previous output state, so a new target
never makes the commanded velocity or acceleration jump. The helpers at the end give the
HDAS motor_control fields (MIT or PID mode) and the gravity feed-forward torque.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Collection, List, Mapping, Sequence, Tuple

import numpy as np
import ruckig

from mobiman.control.upper_body import feedforward_at
from mobiman.control.upper_body import group_vector as _vector
from mobiman.model.robot_model import RobotModel

_SLACK = 1.0 + 1e-9   # rounding allowance when comparing a state with limits
Command = Tuple[List[float], List[float], List[float], List[float], List[float]]   # (3.8: typing's)


class TargetError(ValueError):
    """A target that must be dropped (wrong length, non-finite values, no feedback yet)."""


def target_order(names: Sequence[str], joints: Sequence[str], urdf_joints: Collection[str],
                 extra: str | None = None) -> list[int] | None:
    """Where each of the group's `joints` (then `extra`, the gripper, if named) is in a target's arrays.

    None: take the arrays by index, for a target without names, or whose names are no URDF
    joints (the vendor's node reads targets by index, so programs written for it may name the
    entries anything). A target named with URDF joints is read by name, in any order: all the
    group's joints must be there, and nothing else but `extra`; a joint of another group (the
    other arm's target on this arm's topic) or one named twice is a TargetError.
    """
    if not any(names):
        return None
    known = [n for n in names if n in urdf_joints]
    if not known:
        return None
    if len(known) != len(names):
        raise TargetError(f"target names mix URDF joints with others: {list(names)}")
    index = {n: i for i, n in enumerate(names)}
    if len(index) != len(names):
        raise TargetError(f"a joint is named twice in the target: {list(names)}")
    allowed = set(joints) | ({extra} if extra else set())
    foreign = [n for n in names if n not in allowed]
    if foreign:
        raise TargetError(f"target names joints of another group: {foreign} (this group: {list(joints)})")
    missing = [j for j in joints if j not in index]
    if missing:
        raise TargetError(f"target lacks joints {missing}")
    return [index[j] for j in joints] + ([index[extra]] if extra and extra in index else [])


def reorder(values: Sequence[float], order: list[int] | None, what: str) -> Sequence[float]:
    """`values` in the group's order (`target_order`); an empty field stays empty."""
    if order is None or len(values) == 0:
        return values
    if len(values) <= max(order):
        raise TargetError(f"{what} has {len(values)} entries for {max(order) + 1} names")
    return [values[i] for i in order]


def read_target(names: Sequence[str], position: Sequence[float], velocity: Sequence[float], joints: Sequence[str],
                urdf_joints: Collection[str], extra: str | None = None
                ) -> tuple[Sequence[float], Sequence[float], bool]:
    """A JointState target's positions and velocities in the group's order (`target_order`), and
    whether it carried names that are no URDF joints (read by index: worth a warning)."""
    order = target_order(names, joints, urdf_joints, extra)
    n = len(joints)
    return (reorder(position, order, "target position"),
            reorder(velocity, order[:n] if order else order, "target velocity"),
            order is None and any(names))


@dataclass(frozen=True)
class TrackerLimits:
    """Limits of one group; accelerations and jerks follow the speed limit (vendor rule)."""

    lower: np.ndarray
    upper: np.ndarray
    velocity_cap: np.ndarray
    accel_factor: float = 1.5
    jerk_factor: float = 1.5
    fixed_velocity: np.ndarray | None = None
    fixed_acceleration: np.ndarray | None = None

    def __post_init__(self) -> None:
        for f in ("lower", "upper", "velocity_cap", "fixed_velocity", "fixed_acceleration"):
            if getattr(self, f) is not None:
                object.__setattr__(self, f, np.array(getattr(self, f), dtype=float).ravel())
        if (self.fixed_velocity is None) != (self.fixed_acceleration is None):
            raise ValueError("fast mode needs both fixed_velocity and fixed_acceleration")
        rates = [self.velocity_cap] + [a for a in (self.fixed_velocity, self.fixed_acceleration) if a is not None]
        if any(a.shape != self.lower.shape for a in [self.upper, *rates]):
            raise ValueError("all limit arrays need one entry per joint")
        if not all(np.all(a > 0) for a in rates) or min(self.accel_factor, self.jerk_factor) <= 0:
            raise ValueError("speed caps, fixed limits and factors must be positive")

    @property
    def fast(self) -> bool:
        return self.fixed_velocity is not None

    def dynamics(self, speed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Ruckig (v, a, j) limits for speed limits `speed`; fast mode: the fixed ones, infinite jerk.

        Ruckig 0.19 takes max_jerk = inf and plans second-order (acceleration-step) profiles.
        """
        if self.fixed_velocity is not None and self.fixed_acceleration is not None:   # fast (both or neither)
            return self.fixed_velocity.copy(), self.fixed_acceleration.copy(), np.full(speed.shape, np.inf)
        return speed.copy(), self.accel_factor * speed, self.jerk_factor * speed


class JointTrajectoryTracker:
    """One group (an arm: 6 joints, the torso: 4): Ruckig online trajectory from the current state to the latest target.

    A new speed limit applies at once, but a joint moving (or accelerating) beyond the new limits
    brakes with the acceleration and jerk limits it had and takes the new ones once its state
    complies: with a and j scaled down with the speed, Ruckig's brake could take minutes and
    swing radians past the goal. Ruckig (community) ignores position limits, so only targets are
    clamped; a joint slowed down just before a goal at a joint limit may pass it slightly.
    """

    def __init__(self, names: Sequence[str], limits: TrackerLimits, dt: float):
        self.names: tuple[str, ...] = tuple(names)
        if len(self.names) != limits.lower.shape[0] or not dt > 0:
            raise ValueError(f"{len(self.names)} joints, limits for {limits.lower.shape[0]}, dt {dt}")
        self.dt, self.limits, n = float(dt), limits, len(self.names)
        self._otg, self._inp, self._out = ruckig.Ruckig(n, self.dt), ruckig.InputParameter(n), ruckig.OutputParameter(n)
        self._target: np.ndarray | None = None
        self._pending: tuple[np.ndarray, np.ndarray] | None = None   # (a, j) waiting for a brake to end
        self._started = self._finished = False
        self.last_error: str | None = None
        self._write_limits(*limits.dynamics(limits.velocity_cap))

    @property
    def started(self) -> bool:
        return self._started

    @property
    def position(self) -> np.ndarray:
        return np.array(self._inp.current_position)

    @property
    def velocity(self) -> np.ndarray:
        return np.array(self._inp.current_velocity)

    def position_list(self) -> list[float]:
        """The planned position as a list (what a message carries: no array in between)."""
        return list(self._inp.current_position)

    def velocity_list(self) -> list[float]:
        return list(self._inp.current_velocity)

    @property
    def acceleration(self) -> np.ndarray:
        return np.array(self._inp.current_acceleration)

    @property
    def target(self) -> np.ndarray | None:
        return None if self._target is None else self._target.copy()

    @property
    def at_target(self) -> bool:
        """The trajectory to the current target has finished: at rest there (False with no target)."""
        return self._target is not None and self._finished

    def velocity_limits(self) -> np.ndarray:
        """Active speed limits (the cap, or fixed_velocity in fast mode, before any target)."""
        return self._v.copy()

    def acceleration_limits(self) -> np.ndarray:
        """Acceleration limits in use (the previous ones while a joint brakes; likewise jerk)."""
        return self._a.copy()

    def jerk_limits(self) -> np.ndarray:
        return self._j.copy()

    def reset(self, position: Sequence[float] | np.ndarray) -> None:
        """Hold `position` at rest (start-up: the measured position); clears the target."""
        q = _vector(position, len(self.names), "reset position")
        self._hold(q)
        self._inp.target_position = q.tolist()
        self._target, self._pending, self._finished, self.last_error = None, None, False, None
        self._write_limits(*self.limits.dynamics(self.limits.velocity_cap))
        self._started = True

    def set_target(self, position: Sequence[float] | np.ndarray, velocity: Sequence[float] | np.ndarray | None = None
                   ) -> list[str]:
        """Validate and accept a target; returns notes on what was clamped or capped.

        All is checked before anything changes: after a TargetError the previous target goes on.
        """
        if not self._started:
            raise TargetError("not started: no feedback yet")
        n, lim, cap = len(self.names), self.limits, self.limits.velocity_cap
        q = _vector(position, n, "target position", TargetError)
        speed = None if velocity is None or len(velocity) == 0 else _vector(velocity, n, "target velocity", TargetError)
        goal = np.clip(q, lim.lower, lim.upper)
        notes = [f"{name} target {a:.4g} clamped to {b:.4g}" for name, a, b in zip(self.names, q, goal) if a != b]
        chosen = cap.copy()
        if speed is not None and not lim.fast:
            notes += [f"{name} speed {s:.4g} capped to {c:.4g}" for name, s, c in zip(self.names, speed, cap) if s > c]
            chosen = np.where(speed > 0, np.minimum(speed, cap), cap)
        v, a, j = lim.dynamics(chosen)
        ok = self._complies(v, a, j)
        self._pending = None if ok.all() else (a, j)
        self._write_limits(v, np.where(ok, a, np.maximum(a, self._a)), np.where(ok, j, np.maximum(j, self._j)))
        self._target = goal
        self._inp.target_position = goal.tolist()
        return notes

    def step(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Advance one dt (`advance`); returns (position, velocity, acceleration) of the trajectory."""
        self.advance()
        return self.position, self.velocity, self.acceleration

    def advance(self) -> None:
        """Advance one dt. With no target the reset position is held at rest. If Ruckig fails, the
        last position is held at rest and the reason goes to `last_error` (a successful step clears
        it); the target is kept, so the next step tries again from rest. (The control loop reads
        only what it sends: no arrays are built here.)
        """
        if not self._started:
            raise RuntimeError("reset() the tracker with the measured position first")
        if self._target is not None:
            self._release_pending()
            try:
                result, error = self._otg.update(self._inp, self._out), None
            except ruckig.RuckigError as exc:
                result, error = ruckig.Result.Error, str(exc).strip()
            out = self._out
            finite = all(map(math.isfinite, (*out.new_position, *out.new_velocity, *out.new_acceleration)))
            if result in (ruckig.Result.Working, ruckig.Result.Finished) and finite:
                out.pass_to_input(self._inp)
                self._finished, self.last_error = result == ruckig.Result.Finished, None
                if self._finished:      # settle exactly: Ruckig's end state is off by rounding (~1e-16)
                    self._hold(self._target)
            else:
                self.last_error = error or f"ruckig: {result.name}" + ("" if finite else " (non-finite output)")
                self._hold(self.position)
                self._finished = False

    def _hold(self, position: np.ndarray) -> None:
        self._inp.current_position = np.asarray(position, dtype=float).tolist()
        self._inp.current_velocity = self._inp.current_acceleration = [0.0] * len(self.names)

    def _write_limits(self, v: np.ndarray, a: np.ndarray, j: np.ndarray) -> None:
        self._v, self._a, self._j = v, a, j
        self._inp.max_velocity, self._inp.max_acceleration, self._inp.max_jerk = v.tolist(), a.tolist(), j.tolist()

    def _complies(self, v: np.ndarray, a: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Per joint: the state is within (v, a), and ramping a to zero at jerk j stays within v."""
        vel, acc = self.velocity, self.acceleration
        peak = vel + acc * np.abs(acc) / (2.0 * j)
        return (np.abs(vel) <= v * _SLACK) & (np.abs(acc) <= a * _SLACK) & (np.abs(peak) <= v * _SLACK)

    def _release_pending(self) -> None:
        """Give braking joints the new acceleration/jerk limits once their state allows."""
        if self._pending is not None:
            a, j = self._pending
            ok = self._complies(self._v, a, j)
            self._pending = None if ok.all() else self._pending
            if ok.any():
                self._write_limits(self._v, np.where(ok, a, self._a), np.where(ok, j, self._j))


def gravity_feedforward(model: RobotModel, feedback: Mapping[str, Sequence[float] | np.ndarray], group: str,
                        acceleration: Sequence[float] | np.ndarray | None = None, inertial_gain: float = 0.0
                        ) -> np.ndarray:
    """Feed-forward torque for `group` at the measured configuration of the whole upper body.

    Gravity is RNEA(q, 0, 0) with every group of `feedback` set (missing ones at neutral), so the
    torso posture counts in the arms' load. The inertial term is
    inertial_gain * (RNEA(q, 0, a_full) - RNEA(q, 0, 0))[group] = inertial_gain * M[group, group] @ a,
    with the planned acceleration on the group's joints and zero elsewhere in a_full (the other
    groups' plans are not known here); velocity (Coriolis) terms are left out.
    """
    q = model.configuration({name: _vector(values, len(model.group(name).joints), f"{name} feedback")
                             for name, values in feedback.items()})
    return feedforward_at(model, q, group, acceleration, inertial_gain)


@dataclass(frozen=True)
class MitGains:
    """Per-joint stiffness and damping of the motors' MIT (impedance) mode."""

    kp: np.ndarray
    kd: np.ndarray
    # the lists a motor_control message carries, made once by __post_init__ (not on every tick)
    kp_list: List[float] = field(init=False, repr=False, compare=False)
    kd_list: List[float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for f in ("kp", "kd"):
            arr = np.array(getattr(self, f), dtype=float).ravel()
            if not np.isfinite(arr).all():
                raise ValueError(f"{f} must be finite, got {arr.tolist()}")
            object.__setattr__(self, f, arr)
        object.__setattr__(self, "kp_list", self.kp.tolist())
        object.__setattr__(self, "kd_list", self.kd.tolist())


def _sized(values: Sequence[float] | np.ndarray, n: int, what: str) -> list[float]:
    out = np.asarray(values, dtype=float).ravel().tolist()
    if len(out) != n or not all(map(math.isfinite, out)):
        raise ValueError(f"{what} needs {n} finite entries, got {out}")
    return out


def mit_command(tracker: JointTrajectoryTracker, gains: MitGains, t_ff: np.ndarray) -> Command:
    """(p_des, v_des, kp, kd, t_ff) lists for an hdas_msg/motor_control in MIT mode from the tracker's current state."""
    n = len(tracker.names)
    if gains.kp.shape != (n,) or gains.kd.shape != (n,):      # finite since MitGains checked them
        raise ValueError(f"kp and kd need {n} entries, got {gains.kp.tolist()}, {gains.kd.tolist()}")
    return (tracker.position_list(), tracker.velocity_list(), gains.kp_list, gains.kd_list, _sized(t_ff, n, "t_ff"))


def pid_command(tracker: JointTrajectoryTracker, torque_ratio: Sequence[float] | np.ndarray) -> Command:
    """PID (Damiao force-position) mode: the motor's own loop drives to p_des at speed v_des.

    p_des = trajectory position, v_des = the active speed limit per joint, kp = kd = zeros,
    t_ff = torque ratio clipped to [0, 1].
    """
    n = len(tracker.names)
    ratio = np.clip(_sized(torque_ratio, n, "torque_ratio"), 0.0, 1.0)
    return (tracker.position.tolist(), tracker.velocity_limits().tolist(), [0.0] * n, [0.0] * n, ratio.tolist())
