"""How the swerve modules hold the base on the floor: a stiff, traction-bounded servo on the base's pose. ROS-free.

The base of the simulated robot is a planar body (MuJoCo joints x, y, yaw). Its wheels define where it
goes: the twist of the modules (vx, vy in the base frame [m/s], wz [rad/s]) integrates into a reference
pose, and the floor pushes the base towards it with a critically damped spring-damper of time constant
`time_constant`, bounded by the wheels' grip: a horizontal force of at most mu · m · g and a torque of
that force at the modules' reach. Within the grip the base follows its wheels, whatever pushes it (the
swinging arms, a torso leaning on its brakes): no drift at a standstill, as real tyres hold. Beyond the
grip the wheels slip: the reference is dragged along with the base, so what slipped is lost, as odometry
loses it.

In MuJoCo the servo is a position actuator per base joint (`kp`, and its damping `kv` integrated
implicitly: explicit damping this stiff made the base ring against the unpowered arms and slip at every
turn); `setpoint` gives its control, reference + (kv · v_ref + I · a_ref) / kp, so that it pushes with
kp · (ref − q) + kv · (v_ref − v) + I · a_ref: the force that accelerates the base with its wheels, and
the spring-damper for what else pushes it (without that feedforward the base lagged a decelerating
stream by a/ω² and undershot the stop, -0.01 m/s for 30 ms).

A velocity servo was tried first: disturbances then integrated into the pose (0.23 m off after 2.6 m of
a square in the chassis rostest, the unpowered arms swinging at each corner).
"""
from __future__ import annotations

import math
from typing import List, Sequence, Tuple

GRAVITY = 9.81


class BaseTraction:
    """Force and torque the floor applies to the base (see the module doc); world frame."""

    def __init__(self, mass: float, yaw_inertia: float, mu: float = 0.8, reach: float = 0.3,
                 time_constant: float = 0.01):
        """`mass` [kg] and `yaw_inertia` [kg·m²]: what the base joints carry; `mu`: the wheels' friction;
        `reach` [m]: the modules' lever about the base's centre; `time_constant` [s].

        :raises ValueError: a non-positive value."""
        for name, v in (("mass", mass), ("yaw_inertia", yaw_inertia), ("mu", mu), ("reach", reach),
                        ("time_constant", time_constant)):
            if not (v > 0.0 and math.isfinite(v)):
                raise ValueError(f"{name} must be positive, not {v!r}")
        w = 1.0 / time_constant
        self.inertia = (mass, mass, yaw_inertia)
        self.kp = tuple(i * w * w for i in self.inertia)
        self.kd = tuple(i * 2.0 * w for i in self.inertia)
        self.force_limit = mu * mass * GRAVITY
        self.torque_limit = self.force_limit * reach
        self.reference = [0.0, 0.0, 0.0]      # x, y [m], yaw [rad, unwrapped], world
        self._v_ref = (0.0, 0.0, 0.0)
        self.slipping = False

    def reset(self, pose: Tuple[float, float, float]) -> None:
        """The base is at `pose` (x, y, yaw) and its wheels hold it there."""
        self.reference = [float(v) for v in pose]

    def setpoint(self, pose: Sequence[float], twist: Tuple[float, float, float], dt: float) -> List[float]:
        """The position actuators' controls for one step of `dt` [s], the base at `pose` (x, y, yaw, world),
        its modules at `twist` (base frame): the reference advanced by the modules, brought back to the base
        where the grip would be exceeded (`slipping`). Plain floats: it runs every physics step."""
        ref = self.reference
        c, s = math.cos(ref[2]), math.sin(ref[2])
        vx, vy, wz = twist
        v_ref = (c * vx - s * vy, s * vx + c * vy, wz)
        a_ref = tuple((v - v0) / dt for v, v0 in zip(v_ref, self._v_ref))
        self._v_ref = v_ref
        # the spring on where the wheels are now (the start of the step, as `pose`), the wheels' speed and
        # acceleration fed forward; the reference moves on by the step after (advancing it first made the
        # base lead its wheels by a step and rebound past them when a deceleration ended)
        error = [r - p for r, p in zip(ref, pose)]
        # The tyres' spring stretches no further than the grip holds: beyond it they slide, and the
        # reference comes back to the base (what slid is lost). Transients of the damping and the
        # feedforward are bounded by the actuators' force range alone: they do not move the reference.
        kp, kd, inertia = self.kp, self.kd, self.inertia
        slip = False
        planar = math.hypot(error[0], error[1]) * kp[0]
        if planar > self.force_limit:
            scale = self.force_limit / planar
            error[0] *= scale
            error[1] *= scale
            slip = True
        if abs(error[2]) * kp[2] > self.torque_limit:
            error[2] = math.copysign(self.torque_limit / kp[2], error[2])
            slip = True
        if slip:
            for k in range(3):
                ref[k] = pose[k] + error[k]
        self.slipping = slip
        out = [ref[k] + (kd[k] * v_ref[k] + inertia[k] * a_ref[k]) / kp[k] for k in range(3)]
        for k in range(3):
            ref[k] += v_ref[k] * dt
        return out
