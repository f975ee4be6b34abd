"""The chassis controller's behaviour, ROS-free: twist targets in, module commands out.

`ChassisController` owns what happens between `/motion_target/target_speed_chassis` and
`/motion_control/control_chassis`: input checks and caps, the twist acceleration limit (and, with a
`PostureLimits`, the lower one the upper body's posture can ride), the command timeout, brake mode,
and the swerve kinematics (`mobiman.chassis.swerve`). Each step's twist and its rate of change are
what the upper body's controllers feed forward (`acceleration`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mobiman.chassis.posture_limits import PostureLimits
from mobiman.chassis.swerve import ModuleCommand, SwerveKinematics, Twist2D, limit_twist
from mobiman.model.robot_model import RobotModel
from r1_common.settings import Settings, setting
from r1_common.validation import FEEDBACK_MARGIN, InputError, finite_vector, plausible_positions


def module_positions(urdf: str, steer_joints: Sequence[str], base_frame: str) -> np.ndarray:
    """The steer axes' (x, y) in `base_frame` [m], one row per joint of `steer_joints`, from the URDF's
    joint origins (the robot at its zero configuration). Raises what `RobotModel` raises on a URDF it
    cannot read or a joint or frame it does not have."""
    model = RobotModel(urdf, {"chassis_steer": list(steer_joints)})
    q = model.configuration()
    return np.array([model.pose(j, q, base_frame).translation[:2] for j in steer_joints])


class ChassisInputError(ValueError):
    """A chassis input that cannot be used at all (non-finite values)."""


@dataclass(frozen=True)
class ChassisLimits(Settings):
    """Speed caps of the target, the twist's acceleration limits: (x [m/s or m/s²], y, yaw [rad/s or rad/s²]).

    Raises ValueError on construction unless every value is positive and acc_min <= acc_default <= acc_max
    on every axis."""

    max_speed: Twist2D = setting(
        (1.5, 1.5, 3.0), "m/s, m/s, rad/s; > 0; caps of the target (the guide's): a larger target is capped "
        "and logged")
    acc_default: Twist2D = setting(
        (2.5, 1.0, 1.0), "m/s², m/s², rad/s²; > 0; the acceleration limits of the chassis twist at start-up")
    acc_max: Twist2D = setting(
        (2.5, 1.0, 1.0), "m/s², m/s², rad/s²; the most a /motion_target/chassis_acc_limit message may set "
        "(higher values are capped)")
    acc_min: Twist2D = setting(
        (0.3, 0.3, 0.3), "m/s², m/s², rad/s²; > 0; the least a chassis_acc_limit message may set (lower "
        "positive values are raised): how gently a stopped command stream may stop the base at most (1.5 m/s "
        "at 0.3 m/s² stops in 5 s)")

    def __post_init__(self) -> None:
        for name in ("max_speed", "acc_default", "acc_max", "acc_min"):
            v = getattr(self, name)
            if len(v) != 3 or not all(math.isfinite(x) and x > 0 for x in v):
                raise ValueError(f"{name} must be three positive numbers (x, y, yaw), got {tuple(v)}")
        if any(not lo <= a <= m for lo, a, m in zip(self.acc_min, self.acc_default, self.acc_max)):
            raise ValueError("acc_min <= acc_default <= acc_max must hold on every axis")


def _finite3(values: Twist2D, what: str) -> np.ndarray:
    try:
        return finite_vector(values, what, (3,))
    except InputError as e:
        raise ChassisInputError(f"{e} (needs three finite numbers: linear.x, linear.y, angular.z)") from None


class ChassisController:
    """Twist target → acceleration-limited twist → module angles and wheel speeds.

    Time is the caller's clock [s] (ROS time in the node); `step` is called at the control rate
    with the latest measured steering angles. A target older than `command_timeout` [s] becomes
    zero; a twist slower than `stopped_speed` (m/s and rad/s on every axis) counts as stopped.
    """

    AXES = ("linear.x", "linear.y", "angular.z")

    def __init__(self, kinematics: SwerveKinematics, limits: ChassisLimits, command_timeout: float,
                 stopped_speed: float = 1e-3, posture: PostureLimits | None = None):
        """`posture`: the upper body's limits on the base's acceleration (None: the limits alone); it is
        applied once it has been updated with a measured posture."""
        self.kin = kinematics
        self.limits = limits
        self.posture = posture
        self.posture_limited = 0                      # steps whose acceleration the posture lowered
        self.acceleration: Twist2D = (0.0, 0.0, 0.0)  # the commanded twist's rate of change at the last step
        self.command_timeout = float(command_timeout)
        self.stopped_speed = float(stopped_speed)
        self.acc = limits.acc_default
        self.target: Twist2D = (0.0, 0.0, 0.0)
        self.twist: Twist2D = (0.0, 0.0, 0.0)        # the acceleration-limited commanded twist
        self.brake = False
        self.braking = False                          # modules at (or turning to) the lock angles
        self.timed_out = False
        self._target_stamp: float | None = None
        self._angles: np.ndarray | None = None       # last commanded steering angles
        self._last_step: float | None = None

    # -- inputs ----------------------------------------------------------------------------
    def set_target(self, twist: Twist2D, now: float) -> list[str]:
        """A new twist target; returns notes on what was capped. Non-finite → ChassisInputError."""
        v = _finite3(twist, "target speed")
        cap = np.asarray(self.limits.max_speed)
        out = np.clip(v, -cap, cap)
        self.target = tuple(float(x) for x in out)  # type: ignore[assignment]
        self._target_stamp = now
        self.timed_out = False
        return [f"{self.AXES[i]} {v[i]:.3f} capped to {out[i]:.3f}" for i in range(3) if v[i] != out[i]]

    def set_acceleration_limit(self, acc: Twist2D) -> list[str]:
        """New acceleration limits; values above the maxima are capped, positive ones below the minima
        raised to them, ≤ 0 keeps that axis's current limit."""
        v = _finite3(acc, "acceleration limit")
        notes, out = [], list(self.acc)
        for i in range(3):
            if v[i] <= 0:
                notes.append(f"{self.AXES[i]} {v[i]:.3g} is not positive, kept {out[i]:.3f}")
            elif v[i] > self.limits.acc_max[i]:
                out[i] = self.limits.acc_max[i]
                notes.append(f"{self.AXES[i]} {v[i]:.3g} capped to {out[i]:.3f}")
            elif v[i] < self.limits.acc_min[i]:
                out[i] = self.limits.acc_min[i]
                notes.append(f"{self.AXES[i]} {v[i]:.3g} raised to {out[i]:.3f} (a stop must not take longer)")
            else:
                out[i] = float(v[i])
        self.acc = tuple(out)  # type: ignore[assignment]
        return notes

    def check_feedback(self, position: Sequence[float], velocity: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        """The steering angles and wheel speeds [m/s] of a chassis feedback message (the first n of
        each); InputError when missing, not finite, or beyond what a module can report (its steering
        range + FEEDBACK_MARGIN, twice its wheel speed limit)."""
        n = self.kin.n
        angles = finite_vector(position[:n], "feedback position", (n,))
        speeds = finite_vector(velocity[:n], "feedback velocity", (n,))
        lim = np.full(n, self.kin.steer_limit)
        plausible_positions(angles, -lim, lim, FEEDBACK_MARGIN, "feedback position")
        fastest = 2.0 * self.kin.max_wheel_speed
        if np.any(np.abs(speeds) > fastest):
            raise InputError("feedback velocity", speeds, f"has a wheel faster than {fastest:g} m/s (twice its limit)")
        return angles, speeds

    def set_brake(self, on: bool) -> None:
        self.brake = bool(on)

    # -- control ---------------------------------------------------------------------------
    def step(self, now: float, measured_angles: np.ndarray) -> ModuleCommand:
        """One control step at time `now` with the measured steering angles."""
        measured = np.asarray(measured_angles, dtype=float)
        if self._angles is None:
            self._angles = np.clip(measured, -self.kin.steer_limit, self.kin.steer_limit)
        dt = 0.0 if self._last_step is None else min(max(now - self._last_step, 0.0), 0.1)
        self._last_step = now
        if self._target_stamp is not None and now - self._target_stamp > self.command_timeout:
            self.timed_out = True
            self.target = (0.0, 0.0, 0.0)
        before = self.twist
        self.twist = limit_twist(before, self.target, self.acc, dt)
        if self.posture is not None and self.posture.known and dt > 0.0 and self.twist != before:
            self.twist = self._within_posture(before, self.twist, dt)
        stopped = max(abs(x) for x in self.twist) < self.stopped_speed
        target_zero = not any(self.target)
        if self.brake and target_zero and stopped:
            self.braking = True
            self.twist = (0.0, 0.0, 0.0)
            angles = self.kin.brake_angles()
            cmd = ModuleCommand(angles, np.zeros(self.kin.n))
        else:
            self.braking = False
            cmd = self.kin.inverse(self.twist, self._angles, measured)
            share = float(cmd.alignment.min()) if cmd.alignment is not None else 1.0
            if share < 1.0:
                # the wheels deliver this share of the twist while a module turns: the twist goes
                # on from there at the acceleration limit, instead of running ahead and reaching
                # the wheels in one jump once the modules point right
                vx, vy, wz = self.twist
                self.twist = (vx * share, vy * share, wz * share)
        self._angles = cmd.angles.copy()
        self.acceleration = (0.0, 0.0, 0.0) if dt <= 0.0 else (  # type: ignore[assignment]
            tuple((a - b) / dt for a, b in zip(self.twist, before)))
        return cmd

    def _within_posture(self, before: Twist2D, after: Twist2D, dt: float) -> Twist2D:
        """The step from `before` to `after` shortened to what the upper body's posture can ride
        (PostureLimits.share); braking on an axis is never slowed below its acc_min (a moving base must
        stop: the floor a stopped command stream has too)."""
        assert self.posture is not None
        delta = np.subtract(after, before)
        share = self.posture.share(delta / dt, turn_rate=before[2])
        if share >= 1.0:
            return after
        self.posture_limited += 1
        step = delta * share
        for i in range(3):
            if delta[i] * before[i] < 0.0:            # toward standstill on this axis
                floor = min(abs(delta[i]), self.limits.acc_min[i] * dt)
                if abs(step[i]) < floor:
                    step[i] = math.copysign(floor, delta[i])
        return tuple(float(x) for x in np.add(before, step))  # type: ignore[return-value]
