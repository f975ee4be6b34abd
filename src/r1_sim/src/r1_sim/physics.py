"""The simulated R1's devices that are not rigid bodies, ROS-free: swerve modules, battery, IMU.

* `SwerveChassisSim`: the three steer/drive modules (their inertias under the motors' torques) and the
  twist they give the base (MuJoCo's base follows it: r1_sim.base_traction);
* `BatteryModel`: a Li-ion pack whose voltage sags with load and state of charge;
* `ImuModel`: what an IMU board reports from its frame's motion (MuJoCo's sensors), noise added.

The bodies (torso, arms, grippers, the base) are MuJoCo's: r1_sim.mujoco_world. Every model advances with
`step(..., dt)` at the physics rate; damping is implicit, so any rate is stable.
"""
from __future__ import annotations

import bisect
import math
from typing import Sequence

import numpy as np
import pinocchio as pin

GRAVITY = 9.81

# R1 chassis (r1_v2_1_0.urdf): steer joint origins in base_link (x, y) and the wheel radius.
R1_MODULE_XY = np.array([[0.21516, 0.28], [0.21516, -0.28], [-0.28084, 0.0]])
R1_WHEEL_RADIUS = 0.07
R1_WHEEL_ROTOR_INERTIA = 0.0016   # wheel_motor_link iyy in the URDF [kg·m²]


class SwerveChassisSim:
    """Three steer/drive modules and the planar motion of the base they carry.

    Conventions (r1_v2_1_0.urdf): a steering angle is measured from the base +x axis,
    positive counter-clockwise about +z (steer joint axis +z); the wheel spins about
    the steered module's +y axis (wheel joint axis 0 1 0), so a positive wheel speed
    ω rolls the module forward along its steering direction at ω·r
    (ω ŷ × r ẑ = ω r x̂ for the wheel centre above its contact point).

    The modules are driven independently (no slip, no coupling through the base):
    each wheel carries a third of the robot's mass as reflected inertia. The base
    twist is the least-squares rigid-body fit of the three module ground velocities.
    """

    def __init__(self, module_xy: np.ndarray = R1_MODULE_XY, wheel_radius: float = R1_WHEEL_RADIUS,
                 steer_inertia: float = 0.05, steer_viscous: float = 0.5,
                 wheel_inertia: float | None = None, wheel_viscous: float = 0.05, mass: float = 60.0,
                 steer_limit: float = math.pi / 2):
        xy = np.asarray(module_xy, dtype=float)
        if xy.shape != (3, 2):
            raise ValueError("module_xy must be 3x2")
        self.module_xy = xy.copy()
        self.wheel_radius = float(wheel_radius)
        self.steer_inertia = float(steer_inertia)
        self.steer_viscous = float(steer_viscous)
        self.wheel_inertia = (mass / 3.0 * self.wheel_radius ** 2 + R1_WHEEL_ROTOR_INERTIA
                              if wheel_inertia is None else float(wheel_inertia))
        self.wheel_viscous = float(wheel_viscous)
        self.steer_limit = float(steer_limit)
        # module velocity u = G · (vx, vy, wz): rows (1, 0, −y_i) and (0, 1, x_i)
        G = np.zeros((6, 3))
        G[0::2, 0] = 1.0
        G[1::2, 1] = 1.0
        G[0::2, 2] = -xy[:, 1]
        G[1::2, 2] = xy[:, 0]
        self._fit = np.linalg.pinv(G).tolist()    # least-squares twist from module velocities (3 rows of 6)
        # State as Python floats: three modules stepped ~1,000 times a second, where numpy's per-call cost on
        # 3-vectors was most of the step (190 µs of a 940 µs SimRobot step, profiled)
        self._steer = [0.0, 0.0, 0.0]
        self._steer_rate = [0.0, 0.0, 0.0]
        self._wheel = [0.0, 0.0, 0.0]
        self._wheel_rate = [0.0, 0.0, 0.0]
        self._pose = [0.0, 0.0, 0.0]
        self._twist = (0.0, 0.0, 0.0)

    # state arrays are exposed as copies so callers cannot bypass the dynamics
    @property
    def steer_angles(self) -> np.ndarray:
        return np.array(self._steer)

    @property
    def steer_rates(self) -> np.ndarray:
        return np.array(self._steer_rate)

    @property
    def wheel_angles(self) -> np.ndarray:
        return np.array(self._wheel)

    @property
    def wheel_speeds(self) -> np.ndarray:
        return np.array(self._wheel_rate)

    def module_state(self) -> tuple[list[float], list[float], list[float], list[float]]:
        """(steer angles, steer rates, wheel angles, wheel speeds) as lists of floats (copies)."""
        return list(self._steer), list(self._steer_rate), list(self._wheel), list(self._wheel_rate)

    def _module_twist(self) -> tuple[float, float, float]:
        """Least-squares base twist (vx, vy, wz) of the current module velocities."""
        r = self.wheel_radius
        u: list[float] = []
        for a, w in zip(self._steer, self._wheel_rate):
            u += (w * r * math.cos(a), w * r * math.sin(a))
        f0, f1, f2 = self._fit
        return (sum([k * x for k, x in zip(f0, u)]), sum([k * x for k, x in zip(f1, u)]),
                sum([k * x for k, x in zip(f2, u)]))

    def step(self, steer_tau: Sequence[float] | np.ndarray, wheel_tau: Sequence[float] | np.ndarray,
             dt: float) -> None:
        """Advance dt under the steering and wheel motor torques (N·m, 3 each)."""
        # steering: J ω̇ = τ − b ω, damping implicit
        inertia, b, lim = self.steer_inertia, self.steer_viscous, self.steer_limit
        den = 1.0 + dt * b / inertia
        for k in range(3):
            w = (self._steer_rate[k] + dt * float(steer_tau[k]) / inertia) / den
            a = self._steer[k] + w * dt
            if a > lim:
                a, w = lim, min(w, 0.0)
            elif a < -lim:
                a, w = -lim, max(w, 0.0)
            self._steer[k], self._steer_rate[k] = a, w
        # wheels: reflected inertia of the base, rolling resistance implicit
        J, bw = self.wheel_inertia, self.wheel_viscous
        den = 1.0 + dt * bw / J
        for k in range(3):
            ww = (self._wheel_rate[k] + dt * float(wheel_tau[k]) / J) / den
            self._wheel_rate[k] = ww
            self._wheel[k] += ww * dt
        # base: fit the twist, integrate the pose exactly for a constant twist (SE(2) exp)
        vx, vy, wz = self._twist = self._module_twist()
        th = wz * dt
        if abs(th) < 1e-9:
            sx, cx = 1.0 - th * th / 6.0, th / 2.0
        else:
            sx, cx = math.sin(th) / th, (1.0 - math.cos(th)) / th
        dx = (sx * vx - cx * vy) * dt            # displacement in the base frame at step start
        dy = (cx * vx + sx * vy) * dt
        x, y, yaw = self._pose
        c, s = math.cos(yaw), math.sin(yaw)
        self._pose = [x + c * dx - s * dy, y + s * dx + c * dy,
                      math.atan2(math.sin(yaw + th), math.cos(yaw + th))]

    def base_pose(self) -> tuple[float, float, float]:
        """(x, y, yaw) the modules alone would have taken the base to (no slip), yaw wrapped to (−π, π]."""
        x, y, yaw = self._pose
        return float(x), float(y), float(yaw)

    def base_twist(self) -> tuple[float, float, float]:
        """(vx, vy, wz) of the modules' rigid-body fit, base frame."""
        vx, vy, wz = self._twist
        return float(vx), float(vy), float(wz)

    def set_pose(self, x: float, y: float, yaw: float) -> None:
        self._pose = [float(x), float(y), float(yaw)]


class BatteryModel:
    """Li-ion pack: open-circuit voltage from state of charge, sag through its resistance."""

    # open-circuit voltage of one cell vs state of charge (monotonic, 3.3 V empty, 4.2 V full)
    SOC = np.array([0.0, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 0.9, 1.0])
    CELL_OCV = np.array([3.30, 3.45, 3.55, 3.65, 3.75, 3.86, 4.00, 4.08, 4.20])

    def __init__(self, capacity_ah: float, state_of_charge: float, cells: int = 13,
                 internal_resistance: float = 0.05, idle_power: float = 80.0):
        self.capacity_ah = float(capacity_ah)
        self.cells = int(cells)
        self.internal_resistance = float(internal_resistance)
        self.idle_power = float(idle_power)
        self._soc = float(np.clip(state_of_charge, 0.0, 1.0))
        self._soc_points, self._ocv_points = self.SOC.tolist(), self.CELL_OCV.tolist()
        self._current = 0.0
        self._voltage = 0.0
        self._update(0.0)

    def open_circuit_voltage(self) -> float:
        """The pack's voltage without load [V]: the cell curve, linear between its points (as np.interp,
        in plain floats: it runs every physics step)."""
        soc, xs, ys = self._soc, self._soc_points, self._ocv_points
        if soc <= xs[0]:
            return self.cells * ys[0]
        if soc >= xs[-1]:
            return self.cells * ys[-1]
        j = bisect.bisect_right(xs, soc) - 1
        slope = (ys[j + 1] - ys[j]) / (xs[j + 1] - xs[j])
        return self.cells * (slope * (soc - xs[j]) + ys[j])

    def _update(self, power: float) -> None:
        """Terminal voltage and current that deliver power + idle power.

        V = E − R·I and I = P/V give V² − E V + R P = 0; the larger root is the
        physical one. Beyond the pack's maximum power (E²/4R) the voltage stays at E/2.
        """
        e, r = self.open_circuit_voltage(), self.internal_resistance
        p = max(power, 0.0) + self.idle_power
        disc = e * e - 4.0 * r * p
        v = 0.5 * (e + math.sqrt(disc)) if disc > 0.0 else 0.5 * e
        self._voltage = v
        self._current = p / v if v > 0.0 else 0.0

    def step(self, power: float, dt: float) -> None:
        """Draw power (W, motors, >= 0; regeneration is not modelled) for dt seconds."""
        self._update(power)
        self._soc = max(0.0, self._soc - self._current * dt / 3600.0 / self.capacity_ah)

    @property
    def voltage(self) -> float:
        return self._voltage

    @property
    def current(self) -> float:
        """Positive when discharging."""
        return self._current

    @property
    def state_of_charge(self) -> float:
        return self._soc


class ImuModel:
    """An IMU board: orientation, rate gyro and accelerometer (specific force), with noise."""

    def __init__(self, gyro_noise: float = 0.0, acc_noise: float = 0.0, seed: int | None = None):
        self.gyro_noise = float(gyro_noise)
        self.acc_noise = float(acc_noise)
        self._rng = np.random.default_rng(seed)

    def report(self, rotation: np.ndarray, angular_velocity_local: np.ndarray,
               specific_force_local: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(roll pitch yaw, gyro, acc) of a sensor with world-from-sensor `rotation`, its angular velocity and
        its specific force (a − g; at rest and level (0, 0, +9.81)) in its own axes, as MuJoCo's sensors give
        them; noise added. rpy is extrinsic xyz (ROS's convention)."""
        rot = np.asarray(rotation, dtype=float)
        rpy = pin.rpy.matrixToRpy(rot)     # extrinsic xyz, as scipy's as_euler("xyz"), at 1/300 of its cost
        gyro = np.array(angular_velocity_local, dtype=float)
        acc = np.array(specific_force_local, dtype=float)
        if self.gyro_noise > 0.0:
            gyro = gyro + self._rng.normal(0.0, self.gyro_noise, 3)
        if self.acc_noise > 0.0:
            acc = acc + self._rng.normal(0.0, self.acc_noise, 3)
        return rpy, gyro, acc
