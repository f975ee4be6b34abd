"""Swerve-drive kinematics of the R1's three steer/drive modules, ROS-free.

The maths follows WPILib's `SwerveDriveKinematics` (N modules, pseudo-inverse forward
kinematics, module heading kept at zero speed, common-factor desaturation) with what a
steering range of ±90° changes: every direction has exactly one representation inside
the range, so the "optimise" step (reverse the wheel rather than turn more than 90°) must
also respect the range (see `SwerveKinematics.optimize`).

Conventions (URDF r1_v2_1_0, the simulator's too): a steering angle is measured from
base_link +x, counter-clockwise about +z; a positive wheel speed rolls the module along
its steering direction; speeds are wheel *linear* speeds in m/s (HDAS's units).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from r1_common.settings import Settings, setting

Twist2D = Tuple[float, float, float]      # (vx [m/s], vy [m/s], wz [rad/s]) in base_link


def wrap_pi(a: float) -> float:
    """Angle wrapped to (−π, π]."""
    return math.atan2(math.sin(a), math.cos(a))


@dataclass(frozen=True)
class ModuleCommand:
    """What the modules are told: steering angles [rad] and wheel linear speeds [m/s]."""

    angles: np.ndarray
    speeds: np.ndarray
    alignment: np.ndarray | None = None   # per module, the share of its speed its steering error allows


@dataclass(frozen=True)
class SwerveParams(Settings):
    """The modules' limits and steering rules (`SwerveKinematics.inverse`, `optimize`).

    Raises ValueError on construction unless max_wheel_speed > 0 and
    0 <= align_deadband < align_tolerance <= π/2."""

    max_wheel_speed: float = setting(
        2.1, "m/s; > 0; the fastest wheel (the URDF's 30 rad/s × radius 0.07 m): a twist that needs more is "
        "scaled down as a whole, its direction kept")
    steer_limit: float = setting(math.pi / 2, "rad; the steering range ± (the URDF's ±1.5708)", low=0.0)
    max_clamp_error: float = setting(
        0.35, "rad; when the shorter turn (≤ 90°, wheel reversed) would point a module beyond its steering range, "
        "it stops at the limit if the direction it misses is within this; beyond it, it turns the long way",
        low=0.0, high=math.pi / 2)
    align_tolerance: float = setting(
        0.35, "rad; e0: a module whose steering error is e drives (cos e − cos e0)/(cos e1 − cos e0) of its "
        "speed, nothing beyond e0 (plain cosine scaling, e0 = π/2, let a sideways start push the robot "
        "forward); the twist waits for the modules likewise", low=0.0, high=math.pi / 2)
    align_deadband: float = setting(
        0.05, "rad; e1 (< e0): all of its speed below this error (the steering servo's own steady error)",
        low=0.0, high=math.pi / 2)

    def __post_init__(self) -> None:
        if not self.max_wheel_speed > 0:
            raise ValueError(f"max_wheel_speed must be positive, not {self.max_wheel_speed}")
        if not 0.0 <= self.align_deadband < self.align_tolerance <= math.pi / 2:
            raise ValueError("need 0 <= align_deadband < align_tolerance <= pi/2")


class SwerveKinematics:
    """Inverse and forward kinematics of swerve modules at fixed positions in the base.

    `module_xy` (n×2, n ≥ 2) are the steer axes in base_link [m] (the URDF's steer joint origins);
    `params` the limits and steering rules (None: the declared defaults). Raises ValueError on a
    `module_xy` of another shape.
    """

    ZERO_SPEED = 1e-4        # [m/s] a module slower than this keeps its angle

    def __init__(self, module_xy: np.ndarray, params: SwerveParams | None = None):
        xy = np.asarray(module_xy, dtype=float)
        if xy.ndim != 2 or xy.shape[1] != 2 or xy.shape[0] < 2:
            raise ValueError("module_xy must be n×2 with n ≥ 2")
        params = params if params is not None else SwerveParams()
        self.params = params
        self.module_xy = xy.copy()
        self.n = xy.shape[0]
        self.max_wheel_speed = params.max_wheel_speed
        self.steer_limit = params.steer_limit
        self.max_clamp_error = params.max_clamp_error
        self.zero_speed = self.ZERO_SPEED
        self.align_tolerance, self.align_deadband = params.align_tolerance, params.align_deadband
        self._cos_tolerance, self._cos_deadband = math.cos(self.align_tolerance), math.cos(self.align_deadband)
        # module ground velocity u = G · (vx, vy, wz): rows (1, 0, −y_i) and (0, 1, x_i)
        G = np.zeros((2 * self.n, 3))
        G[0::2, 0] = 1.0
        G[1::2, 1] = 1.0
        G[0::2, 2] = -xy[:, 1]
        G[1::2, 2] = xy[:, 0]
        self.G = G
        self._G_pinv = np.linalg.pinv(G)

    # -- inverse ---------------------------------------------------------------------------
    def module_velocities(self, twist: Twist2D) -> np.ndarray:
        """Ground velocity (n×2) of each module for a base twist."""
        return (self.G @ np.asarray(twist, dtype=float)).reshape(self.n, 2)

    def inverse(self, twist: Twist2D, current_angles: np.ndarray,
                measured_angles: np.ndarray | None = None) -> ModuleCommand:
        """Module angles [rad] and wheel speeds [m/s] for a base twist (m/s, m/s, rad/s).

        `current_angles`: the angles last commanded; `measured_angles`: the modules' feedback (None: no
        alignment scaling, `alignment` None in the result).

        1. per-module velocity from the rigid-body twist;
        2. desaturation: if a wheel would exceed `max_wheel_speed`, all wheels are scaled by
           one factor, so the base keeps the commanded direction of motion (and its ratio of
           translation to rotation) and only slows down;
        3. a module with (nearly) zero speed keeps `current_angles` (no snap to straight);
        4. `optimize` against the current angle: turn at most 90° by reversing the wheel,
           within the steering range;
        5. alignment scaling against `measured_angles` (if given): a module still turning
           drives (cos e − cos e₀)/(cos e₁ − cos e₀) of its speed for a steering error e between
           e₁ = `align_deadband` (all of it below: the steering's own small error costs nothing)
           and e₀ = `align_tolerance` (nothing beyond), so a module turning 90° (a sideways start)
           does not push along where it points meanwhile (docs/chassis_control.md).
        """
        current = np.asarray(current_angles, dtype=float)
        u = self.module_velocities(twist)
        speeds = np.hypot(u[:, 0], u[:, 1])
        top = float(speeds.max(initial=0.0))
        if top > self.max_wheel_speed:
            speeds = speeds * (self.max_wheel_speed / top)
        angles = np.empty(self.n)
        out = np.empty(self.n)
        for i in range(self.n):
            if speeds[i] < self.zero_speed:
                angles[i], out[i] = float(np.clip(current[i], -self.steer_limit, self.steer_limit)), 0.0
                continue
            heading = math.atan2(u[i, 1], u[i, 0])
            angles[i], out[i] = self.optimize(heading, float(speeds[i]), float(current[i]))
        alignment = None
        if measured_angles is not None:
            error = angles - np.asarray(measured_angles, dtype=float)
            c0, c1 = self._cos_tolerance, self._cos_deadband
            alignment = np.clip((np.cos(error) - c0) / (c1 - c0), 0.0, 1.0)
            out = out * alignment
        return ModuleCommand(angles, out, alignment)

    def optimize(self, heading: float, speed: float, current: float) -> tuple[float, float]:
        """(angle, signed speed) for a module to move along `heading` at `speed` ≥ 0.

        Of the two ways to move along a line (steer to `heading` and roll forward, or to
        `heading` ± π and roll backward), take the one nearer to `current`: a turn of at
        most 90°. With a ±90° steering range that nearer angle can lie outside the range;
        within `max_clamp_error` of it the module stops at the limit (the remaining error is
        taken care of by cosine scaling), beyond it the module takes the other
        representation, which is inside the range: a turn of more than 90° is then the only
        way to that direction.
        """
        a = wrap_pi(heading)
        b = wrap_pi(a + math.pi)
        near, far = (a, speed), (b, -speed)
        if abs(wrap_pi(b - current)) < abs(wrap_pi(a - current)):
            near, far = far, near
        lim = self.steer_limit
        if abs(near[0]) <= lim:
            return near
        if abs(near[0]) - lim <= self.max_clamp_error:
            return math.copysign(lim, near[0]), near[1]
        return float(np.clip(far[0], -lim, lim)), far[1]

    # -- forward ---------------------------------------------------------------------------
    def forward(self, angles: np.ndarray, speeds: np.ndarray) -> Twist2D:
        """Least-squares base twist from measured module angles and wheel speeds."""
        a = np.asarray(angles, dtype=float)
        s = np.asarray(speeds, dtype=float)
        u = np.empty(2 * self.n)
        u[0::2] = s * np.cos(a)
        u[1::2] = s * np.sin(a)
        vx, vy, wz = self._G_pinv @ u
        return float(vx), float(vy), float(wz)

    def brake_angles(self) -> np.ndarray:
        """Angles that lock the chassis: each wheel rolls only toward the modules' centroid.

        With the wheels on lines through one point, no rigid motion of the base lets every
        wheel roll without sliding sideways (a translation needs parallel lines, a rotation
        about the point perpendicular ones), so the chassis resists pushing.
        """
        c = self.module_xy.mean(axis=0)
        d = c - self.module_xy
        heading = np.arctan2(d[:, 1], d[:, 0])
        # a line direction inside ±90°
        out = np.array([wrap_pi(h) for h in heading])
        out[out > math.pi / 2] -= math.pi
        out[out < -math.pi / 2] += math.pi
        return np.clip(out, -self.steer_limit, self.steer_limit)


def limit_twist(current: Twist2D, target: Twist2D, acc_limits: Twist2D, dt: float) -> Twist2D:
    """One step of the chassis acceleration limit, applied to the twist, not per wheel.

    The change toward the target is scaled by one factor so that no axis exceeds its
    limit (m/s², m/s², rad/s²): the twist moves along a straight line in (vx, vy, wz)
    space, so the base accelerates along the commanded direction instead of curving
    (per-axis limiting with x 2.5 and y 1.0 would bend a diagonal start).
    """
    cur = np.asarray(current, dtype=float)
    delta = np.asarray(target, dtype=float) - cur
    step = np.asarray(acc_limits, dtype=float) * max(dt, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(np.abs(delta) > 1e-12, step / np.abs(delta), np.inf)
    scale = min(1.0, float(ratios.min()))
    vx, vy, wz = cur + scale * delta
    return float(vx), float(vy), float(wz)


@dataclass
class Odometry2D:
    """Planar pose integrated from base twists, exactly for a twist constant over each step."""

    x: float = 0.0
    y: float = 0.0
    yaw: float = 0.0
    distance: float = 0.0          # path length travelled [m]

    def integrate(self, twist: Twist2D, dt: float) -> None:
        vx, vy, wz = twist
        th = wz * dt
        if abs(th) < 1e-9:
            sx, cx = 1.0 - th * th / 6.0, th / 2.0
        else:
            sx, cx = math.sin(th) / th, (1.0 - math.cos(th)) / th
        dx = (sx * vx - cx * vy) * dt          # displacement in the base frame at the step start
        dy = (cx * vx + sx * vy) * dt
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        self.x += c * dx - s * dy
        self.y += s * dx + c * dy
        self.yaw = wrap_pi(self.yaw + th)
        self.distance += math.hypot(vx, vy) * dt      # arc length of the base origin's path
