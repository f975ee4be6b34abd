"""Physics of the simulated R1, ROS-free: upper body, swerve chassis, battery and IMU.

* `UpperBodySim`: the torso, arms and grippers as a fixed-base rigid-body tree
  (pinocchio, from the URDF) with joint friction, brakes and hard stops;
* `SwerveChassisSim`: three steer/drive modules and the planar motion of the base;
* `BatteryModel`: a Li-ion pack whose voltage sags with load and state of charge;
* `ImuModel`: what an IMU board reports for a given motion of its frame.

Every model advances with `step(..., dt)` at the physics rate (1 kHz), so the
integrators are chosen to be stable there: damping is implicit, dry friction and
stops are velocity-level constraints instead of stiff penalty forces.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pinocchio as pin

GRAVITY = 9.81

# R1 chassis (r1_v2_1_0.urdf): steer joint origins in base_link (x, y) and the wheel radius.
R1_MODULE_XY = np.array([[0.21516, 0.28], [0.21516, -0.28], [-0.28084, 0.0]])
R1_WHEEL_RADIUS = 0.07
R1_WHEEL_ROTOR_INERTIA = 0.0016   # wheel_motor_link iyy in the URDF [kg·m²]


class UpperBodySim:
    """Joint-space dynamics of the body joints driven by motor torques.

    One semi-implicit Euler step per `step`:

        (M + dt·B) Δv = dt·(τ − h − B v) + λ,   v⁺ = v + Δv,   q⁺ = q + v⁺ dt

    with M the joint-space inertia (CRBA, plus the rotors' armature on the
    diagonal), h the Coriolis/centrifugal/gravity torques, B the viscous friction
    (implicit, hence stable for any damping) and λ the impulses of Coulomb friction,
    hard stops and brakes. λ solves a box-constrained complementarity problem per
    joint: a joint is either held (v⁺ = 0, its impulse inside the box) or moves with
    its impulse at a bound of the box:

        free joint            [−c dt, +c dt]      (stiction / kinetic Coulomb c)
        at its lower stop     [−c dt, +∞)         (the stop can only push it up)
        at its upper stop     (−∞,  +c dt]
        braked                (−∞,  +∞)           (held whatever the torque)

    solved exactly by an active-set iteration, so joints stick without drift or
    chatter and the others feel the exact constrained dynamics. Joints that reach a
    stop within a step are put back at the limit and lose their velocity into it
    (inelastic impact).
    """

    def __init__(self, urdf_xml: str, joints: list[str], viscous: np.ndarray,
                 coulomb: np.ndarray, armature: np.ndarray):
        full = pin.buildModelFromXML(urdf_xml)
        unknown = [j for j in joints if not full.existJointName(j)]
        if unknown:
            raise ValueError(f"joints not in the URDF: {unknown}")
        if len(set(joints)) != len(joints):
            raise ValueError("duplicate joint names")
        keep = set(joints)
        lock = [full.getJointId(name) for name in full.names[1:] if name not in keep]
        model = pin.buildReducedModel(full, lock, pin.neutral(full)) if lock else full
        n = len(joints)
        if model.nv != n:
            raise ValueError(f"reduced model has {model.nv} dofs for {n} joints")
        self.model = model
        self.data = model.createData()
        self._kin_data = model.createData()       # for frame_motion, apart from the dynamics
        self.joints = list(joints)
        idx_q, idx_v, cont = [], [], []
        for name in joints:
            jm = model.joints[model.getJointId(name)]
            if jm.nv != 1:
                raise ValueError(f"joint '{name}' is not 1-DoF")
            idx_q.append(jm.idx_q)
            idx_v.append(jm.idx_v)
            cont.append(jm.nq == 2)                # continuous joint: (cos, sin) in q
        self.idx_q = np.array(idx_q)
        self.idx_v = np.array(idx_v)              # caller index -> pinocchio velocity index
        # Internal state is in pinocchio velocity order; the angle of a continuous joint
        # is kept unwrapped and mapped to (cos, sin) only for pinocchio.
        self._has_cont = any(cont)
        self._qpin = pin.neutral(model)
        self._rev_q = np.array([model.joints[j].idx_q for j in range(1, model.njoints)
                                if model.joints[j].nq == 1], dtype=int)
        self._rev_v = np.array([model.joints[j].idx_v for j in range(1, model.njoints)
                                if model.joints[j].nq == 1], dtype=int)
        self._cont_q = np.array([model.joints[j].idx_q for j in range(1, model.njoints)
                                 if model.joints[j].nq == 2], dtype=int)
        self._cont_v = np.array([model.joints[j].idx_v for j in range(1, model.njoints)
                                 if model.joints[j].nq == 2], dtype=int)
        self._lower = np.full(n, -np.inf)           # continuous joints have no stops
        self._upper = np.full(n, np.inf)
        self._lower[self._rev_v] = model.lowerPositionLimit[self._rev_q]
        self._upper[self._rev_v] = model.upperPositionLimit[self._rev_q]
        self._viscous = self._to_pin(np.asarray(viscous, dtype=float))
        self._coulomb = self._to_pin(np.asarray(coulomb, dtype=float))
        model.armature = self._to_pin(np.asarray(armature, dtype=float))  # crba adds it to M
        self._diag = np.diag_indices(n)
        self._theta = np.zeros(n)
        self._v = np.zeros(n)
        self._a = np.zeros(n)
        self._brakes = np.zeros(n, dtype=bool)
        self._tau = np.zeros(n)
        self._ties: list[tuple[int, int]] = []      # (follower, leader), pinocchio velocity indices

    # -- state ---------------------------------------------------------------------------
    def _to_pin(self, x: np.ndarray) -> np.ndarray:
        """Caller order -> pinocchio velocity order (a new array)."""
        if x.shape != (len(self.joints),):
            raise ValueError(f"expected {len(self.joints)} values, got shape {x.shape}")
        out = np.empty(len(self.joints))
        out[self.idx_v] = x
        return out

    def _q_pin(self, theta: np.ndarray) -> np.ndarray:
        """Pinocchio configuration of the joint angles."""
        q = self._qpin
        if not self._has_cont:
            q[:] = theta
            return q
        q[self._rev_q] = theta[self._rev_v]
        q[self._cont_q] = np.cos(theta[self._cont_v])
        q[self._cont_q + 1] = np.sin(theta[self._cont_v])
        return q

    def tie(self, follower: int, leader: int) -> None:
        """Joint `follower` moves with joint `leader` (caller indices): a linkage, as the gripper's
        second finger with its first. After every step the follower takes the leader's position and
        velocity. Two free fingers under one motor force drifted apart (gravity acts on them
        differently), and once one reached its stop the motor, which senses their mean, drove the
        other at twice the speed it meant (0.4 m/s on a 0.25 m/s finger)."""
        self._ties.append((int(self.idx_v[follower]), int(self.idx_v[leader])))

    def set_state(self, q: np.ndarray, v: np.ndarray) -> None:
        """Joint positions and velocities, caller order."""
        self._theta = self._to_pin(np.asarray(q, dtype=float))
        self._v = self._to_pin(np.asarray(v, dtype=float))
        self._a[:] = 0.0

    @property
    def positions(self) -> np.ndarray:
        return self._theta[self.idx_v]

    @property
    def velocities(self) -> np.ndarray:
        return self._v[self.idx_v]

    @property
    def lower_limits(self) -> np.ndarray:
        """Hard stops from the URDF, caller order (−inf for continuous joints)."""
        return self._lower[self.idx_v]

    @property
    def upper_limits(self) -> np.ndarray:
        return self._upper[self.idx_v]

    @property
    def accelerations(self) -> np.ndarray:
        """Joint accelerations of the last step (Δv/dt, impacts on stops excluded)."""
        return self._a[self.idx_v]

    def set_brakes(self, mask: np.ndarray) -> None:
        """Joints whose brake is engaged (caller order); they are held from the next step."""
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (len(self.joints),):
            raise ValueError(f"expected {len(self.joints)} brake flags, got shape {mask.shape}")
        self._brakes[self.idx_v] = mask

    # -- dynamics ------------------------------------------------------------------------
    def step(self, tau: np.ndarray, dt: float) -> None:
        """Advance dt under the motor torques/forces tau (caller order)."""
        tau_p = self._tau
        tau_p[self.idx_v] = tau
        v, theta, brakes = self._v, self._theta, self._brakes
        v[brakes] = 0.0
        q = self._q_pin(theta)
        model, data = self.model, self.data
        A = pin.crba(model, data, q)               # full symmetric M (a copy), armature included
        h = pin.nonLinearEffects(model, data, q, v)
        b = self._viscous
        A[self._diag] += dt * b
        rhs = dt * (tau_p - h - b * v)
        dv = self._solve_constrained(A, rhs, v, theta, dt)
        self._a = dv / dt
        v += dv
        theta += v * dt
        # hard stops: back to the limit, velocity into the stop lost
        over = theta > self._upper
        if over.any():
            theta[over] = self._upper[over]
            v[over] = np.minimum(v[over], 0.0)
        under = theta < self._lower
        if under.any():
            theta[under] = self._lower[under]
            v[under] = np.maximum(v[under], 0.0)
        for follower, leader in self._ties:
            theta[follower], v[follower] = theta[leader], v[leader]

    def _solve_constrained(self, A: np.ndarray, rhs: np.ndarray, v: np.ndarray,
                           theta: np.ndarray, dt: float) -> np.ndarray:
        """Δv of A Δv = rhs + λ with the box-constrained impulses λ (see the class doc)."""
        c = self._coulomb * dt
        lo, hi = -c, c.copy()
        at_upper = theta >= self._upper
        at_lower = theta <= self._lower
        brakes = self._brakes
        lo[at_upper | brakes] = -np.inf
        hi[at_lower | brakes] = np.inf
        boxed = lo < hi                         # joints with friction, a stop or a brake
        if not boxed.any():
            return np.linalg.solve(A, rhs)
        # Start: joints at rest hold, moving ones get kinetic friction against their motion
        # (a joint moving into its stop, or braked, cannot: it holds).
        lam = np.where(v > 0.0, lo, np.where(v < 0.0, hi, 0.0))
        lam[~boxed] = 0.0
        held = boxed & ((v == 0.0) | ~np.isfinite(lam))
        lam[held] = 0.0
        dv = np.empty_like(v)
        tol = 1e-12
        for _ in range(2 * len(v) + 2):
            h_idx = np.flatnonzero(held)
            f_idx = np.flatnonzero(~held)
            dv[h_idx] = -v[h_idx]
            if f_idx.size:
                r = rhs[f_idx] + lam[f_idx]
                if h_idx.size:
                    r -= A[f_idx][:, h_idx] @ dv[h_idx]
                dv[f_idx] = np.linalg.solve(A[f_idx][:, f_idx], r)
            # impulse that holds each held joint; friction direction check of the others
            need = A[h_idx] @ dv - rhs[h_idx]
            lo_h, hi_h = lo[h_idx], hi[h_idx]
            slide_down = h_idx[need > hi_h + tol]     # needs more upward push than available
            slide_up = h_idx[need < lo_h - tol]
            vn = v[f_idx] + dv[f_idx]
            lam_f, boxed_f = lam[f_idx], boxed[f_idx]
            stop = f_idx[boxed_f & (((lam_f == lo[f_idx]) & (vn < -tol))   # friction reversed
                                    | ((lam_f == hi[f_idx]) & (vn > tol)))]  # the motion
            if not (slide_down.size or slide_up.size or stop.size):
                break
            held[slide_down] = False
            held[slide_up] = False
            held[stop] = True
            lam[slide_down] = hi[slide_down]
            lam[slide_up] = lo[slide_up]
            lam[stop] = 0.0
        return dv

    # -- kinematics ----------------------------------------------------------------------
    def frame_motion(self, frame: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rotation in base_footprint, angular velocity, classical linear acceleration) of a frame.

        Velocity and acceleration are expressed in the frame itself (LOCAL), from the
        state and accelerations of the last step, which is what a body-fixed IMU senses.
        """
        model, data = self.model, self._kin_data
        fid = model.getFrameId(frame)
        if fid >= model.nframes:
            raise KeyError(f"no frame '{frame}'")
        q = self._q_pin(self._theta).copy()
        pin.forwardKinematics(model, data, q, self._v, self._a)
        pin.updateFramePlacements(model, data)
        rot = data.oMf[fid].rotation.copy()
        omega = pin.getFrameVelocity(model, data, fid, pin.LOCAL).angular.copy()
        acc = pin.getFrameClassicalAcceleration(model, data, fid, pin.LOCAL).linear.copy()
        return rot, omega, acc

    def frame_position(self, frame: str) -> np.ndarray:
        """Translation of a frame in base_footprint at the current configuration (lever arm of the base's motion)."""
        model, data = self.model, self._kin_data
        fid = model.getFrameId(frame)
        if fid >= model.nframes:
            raise KeyError(f"no frame '{frame}'")
        pin.framesForwardKinematics(model, data, self._q_pin(self._theta))
        return data.oMf[fid].translation.copy()


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
        self._acc = (0.0, 0.0)

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
        return (sum(k * x for k, x in zip(f0, u)), sum(k * x for k, x in zip(f1, u)),
                sum(k * x for k, x in zip(f2, u)))

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
        old = self._twist
        vx, vy, wz = twist = self._module_twist()
        self._acc = ((vx - old[0]) / dt - wz * vy, (vy - old[1]) / dt + wz * vx)
        self._twist = twist
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

    def base_acceleration(self) -> tuple[float, float]:
        """(ax, ay): acceleration of the base origin in the world, expressed in base axes.

        The body-frame derivative of the twist plus the rotating-frame term ω × v, so a
        base turning at constant speed feels its centripetal acceleration.
        """
        return float(self._acc[0]), float(self._acc[1])

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
        self._current = 0.0
        self._voltage = 0.0
        self._update(0.0)

    def open_circuit_voltage(self) -> float:
        return self.cells * float(np.interp(self._soc, self.SOC, self.CELL_OCV))

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
        self._up = np.array([0.0, 0.0, GRAVITY])

    def measure(self, rotation: np.ndarray, angular_velocity_local: np.ndarray,
                linear_acceleration_local: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(roll pitch yaw, gyro, acc) of a sensor with world-from-sensor rotation.

        rpy is extrinsic xyz (ROS's convention); acc is the specific force a − g in
        the sensor frame, so a sensor at rest and level reads (0, 0, +9.81).
        """
        rot = np.asarray(rotation, dtype=float)
        acc = np.asarray(linear_acceleration_local, dtype=float) + rot.T @ self._up
        return self.report(rot, angular_velocity_local, acc)

    def report(self, rotation: np.ndarray, angular_velocity_local: np.ndarray,
               specific_force_local: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(roll pitch yaw, gyro, acc) of a sensor whose specific force (a − g, sensor axes) is known, as
        MuJoCo's accelerometer gives it; noise added."""
        rot = np.asarray(rotation, dtype=float)
        rpy = pin.rpy.matrixToRpy(rot)     # extrinsic xyz, as scipy's as_euler("xyz"), at 1/300 of its cost
        gyro = np.array(angular_velocity_local, dtype=float)
        acc = np.array(specific_force_local, dtype=float)
        if self.gyro_noise > 0.0:
            gyro = gyro + self._rng.normal(0.0, self.gyro_noise, 3)
        if self.acc_noise > 0.0:
            acc = acc + self._rng.normal(0.0, self.acc_noise, 3)
        return rpy, gyro, acc
