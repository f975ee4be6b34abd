"""The simulated robot's bodies in MuJoCo: what the motors drive, stepped at the physics rate. ROS-free.

`MujocoWorld` holds one MuJoCo model and its data, built by `r1_sim.mjcf.world_xml` from the URDF and
a scene, and gives `r1_sim.robot.SimRobot` what its motors need:

* the **body joints** (torso, arms, fingers) in the caller's order: positions, velocities,
  accelerations of the last step; `step(tau, ...)` applies the motors' torques (N·m, or N on a
  finger) as generalised forces and advances one time step, the motors' own damping (`damping`)
  integrated implicitly with the joints' viscous friction; `redo` takes that step again from the
  state before it, with other torques and damping (the motors' saturation). Joint friction (viscous → damping,
  Coulomb → friction loss), rotor inertia (armature) and the hard stops are MuJoCo's; a **brake**
  is a joint equality that holds the joint where it was when the brake engaged;
* the **base**: its planar joints follow the swerve modules (the twist `step` is given, base frame),
  held by the floor's grip (r1_sim.base_traction); `base_pose`/`base_twist` are MuJoCo's;
  the steer and wheel joints are posed from the chassis model (they carry no dynamics here);
* **IMUs** (`imu`): orientation, rate gyro and specific force of a URDF frame, from MuJoCo's sensors,
  so they feel the base's motion, the torso's and gravity together;
* **objects** (`objects`): pose and twist of the scene's free bodies, for /sim/objects;
* **contacts** (`robot_contacts`): what the robot's links touch now (the scene's geoms: the table, an
  object, a wall), for the simulator's diagnostics;
* **pushes** (`apply_wrench`): a force and torque on a link of the robot or an object of the scene, for a
  time, for disturbance tests (/sim/apply_wrench); `check_wrench` says what is accepted.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import mujoco
import numpy as np
from numpy.typing import ArrayLike

from r1_sim import mjcf
from r1_sim.base_traction import BaseTraction

__all__ = ["MAX_WRENCH_DURATION_S", "MAX_WRENCH_FORCE_N", "MAX_WRENCH_TORQUE_NM", "MujocoWorld", "ObjectState",
           "check_wrench", "describe_contacts"]

# What a push may be (check_wrench): beyond these it is a mistake, not a disturbance (the R1 weighs ~100 kg).
MAX_WRENCH_FORCE_N = 1000.0       # [N] |force|
MAX_WRENCH_TORQUE_NM = 300.0      # [N·m] |torque|
MAX_WRENCH_DURATION_S = 10.0      # [s] of simulated time


@dataclass(frozen=True)
class ObjectState:
    """A free body of the scene: position [m] and orientation (w, x, y, z) in the world, its linear [m/s] and
    angular [rad/s] velocity in the world."""

    name: str
    position: Tuple[float, float, float]
    quaternion: Tuple[float, float, float, float]
    linear: Tuple[float, float, float]
    angular: Tuple[float, float, float]


def describe_contacts(pairs: Sequence[Tuple[str, str]]) -> str:
    """`MujocoWorld.robot_contacts` as one line, by what is touched: "green_can (left_arm_link6,
    left_gripper_link); table (right_arm_link5)"; "" for none."""
    by_other: Dict[str, List[str]] = {}
    for link, other in pairs:
        by_other.setdefault(other, []).append(link)
    return "; ".join(f"{other} ({', '.join(sorted(links))})" for other, links in sorted(by_other.items()))


def check_wrench(force: Sequence[float], torque: Sequence[float],
                 duration: float) -> Tuple[Tuple[float, float, float], Tuple[float, float, float], float]:
    """A push as `MujocoWorld.apply_wrench` takes it: `force` [N] and `torque` [N·m], 3 finite components each,
    |force| <= MAX_WRENCH_FORCE_N, |torque| <= MAX_WRENCH_TORQUE_NM; `duration` [s] finite, in
    (0, MAX_WRENCH_DURATION_S]. Returns them as floats.

    :raises ValueError: anything else (the message says what and why)."""
    out = []
    for name, v, cap, unit in (("force", force, MAX_WRENCH_FORCE_N, "N"),
                               ("torque", torque, MAX_WRENCH_TORQUE_NM, "N·m")):
        try:
            x, y, z = (float(c) for c in v)
        except (TypeError, ValueError):
            raise ValueError(f"{name} {v!r:.80}: must be 3 numbers") from None
        if not all(math.isfinite(c) for c in (x, y, z)):
            raise ValueError(f"{name} ({x:g}, {y:g}, {z:g}): must be finite")
        size = math.sqrt(x * x + y * y + z * z)
        if size > cap:
            raise ValueError(f"{name} ({x:g}, {y:g}, {z:g}): its size {size:g} {unit} is beyond the cap, "
                             f"{cap:g} {unit}")
        out.append((x, y, z))
    try:
        seconds = float(duration)
    except (TypeError, ValueError):
        raise ValueError(f"duration {duration!r:.80}: must be a number of seconds") from None
    if not (0.0 < seconds <= MAX_WRENCH_DURATION_S):
        raise ValueError(f"duration {seconds:g} s: must be more than 0 and at most {MAX_WRENCH_DURATION_S:g} s")
    return out[0], out[1], seconds


class MujocoWorld:
    """The robot's bodies and the scene in one MuJoCo model (see the module doc)."""

    def __init__(self, urdf_xml: str, scene_xml: str, joints: Sequence[str], viscous: np.ndarray,
                 coulomb: np.ndarray, armature: np.ndarray, timestep: float,
                 ties: Sequence[Tuple[str, str]] = (), brakes: Sequence[str] = (),
                 imus: Sequence[str] = (), chassis: Sequence[str] = ()):
        """`joints`: the body joints the motors drive (caller order); `viscous` [N·m·s/rad], `coulomb` [N·m],
        `armature` [kg·m²]: per joint; `timestep` [s]; `ties`: (follower, leader) joints moving together;
        `brakes`: joints with a brake; `imus`: URDF frames with an IMU; `chassis`: the steer and wheel
        joints, posed by `step`.

        :raises r1_sim.mjcf.WorldError: a scene or URDF MuJoCo refuses, a joint or frame not in the robot.
        :raises ValueError: arrays of the wrong length."""
        n = len(joints)
        arrays = [np.asarray(a, dtype=float) for a in (viscous, coulomb, armature)]
        if any(a.shape != (n,) for a in arrays):
            raise ValueError(f"friction arrays must have {n} entries")
        xml = mjcf.world_xml(urdf_xml, scene_xml, timestep=timestep, ties=ties, brakes=brakes, imus=imus)
        self.model = model = mjcf.load_world(xml)
        self.data = mujoco.MjData(model)
        self.joints = list(joints)
        self._qadr = np.array([self._joint(j).qposadr[0] for j in joints], dtype=int)
        self._dadr = np.array([self._joint(j).dofadr[0] for j in joints], dtype=int)
        model.dof_damping[self._dadr] = arrays[0]
        self._viscous = arrays[0]
        self._motor_damping: List[float] = [0.0] * n      # the motors' damping in dof_damping now (`step`)
        self._state_spec = int(mujoco.mjtState.mjSTATE_INTEGRATION)
        self._before = np.empty(mujoco.mj_stateSize(model, self._state_spec))     # where a `redo` starts
        self._pushes_before: Tuple[Dict[int, float], float] = ({}, math.inf)
        model.dof_frictionloss[self._dadr] = arrays[1]
        model.dof_armature[self._dadr] = arrays[2]
        ranges = np.array([model.jnt_range[self._joint(j).id] for j in joints]).reshape(n, 2)
        limited = np.array([model.jnt_limited[self._joint(j).id] for j in joints], dtype=bool)
        self._lower = np.where(limited, ranges[:, 0], -np.inf)
        self._upper = np.where(limited, ranges[:, 1], np.inf)
        self._brake_eq = {j: model.equality(mjcf.brake_name(j)).id for j in brakes}
        self._brake_index = {j: self.joints.index(j) for j in brakes if j in self.joints}
        try:
            self._base_link = model.body("base_link").id
        except KeyError:
            raise mjcf.WorldError("no link 'base_link' in the robot") from None
        self._base_q = np.array([self._joint(j).qposadr[0] for j in mjcf.BASE_JOINTS], dtype=int)
        self._base_v = np.array([self._joint(j).dofadr[0] for j in mjcf.BASE_JOINTS], dtype=int)
        self._chassis_q = np.array([self._joint(j).qposadr[0] for j in chassis], dtype=int)
        self._chassis_v = np.array([self._joint(j).dofadr[0] for j in chassis], dtype=int)
        self._imu = {}
        for frame in imus:
            quat, gyro, acc = (model.sensor(s) for s in mjcf.imu_sensors(frame))
            self._imu[frame] = (int(quat.adr[0]), int(gyro.adr[0]), int(acc.adr[0]))
        self._objects: List[Tuple[str, int, int]] = []     # (body name, qpos address, dof address)
        for j in range(model.njnt):
            if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                body = model.body(model.jnt_bodyid[j]).name
                self._objects.append((body, int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j])))
        # what can be pushed (apply_wrench): the robot's links (the bodies under its root) and the objects
        root = model.body("base_footprint").id
        self._pushable = {model.body(b).name: b for b in range(model.nbody) if model.body_rootid[b] == root}
        self._pushable.update((name, model.body(name).id) for name, _, _ in self._objects)
        self._pushes: Dict[int, float] = {}    # body -> simulated time its push ends
        self._push_end = math.inf              # the earliest of them
        # contacts: which geoms are the robot's (mjcf gives them ROBOT_CONTYPE), and each geom's label
        self._robot_geom = model.geom_contype == mjcf.ROBOT_CONTYPE
        self._geom_label = [model.body(model.geom_bodyid[g]).name if model.geom_bodyid[g] else
                            (model.geom(g).name or f"world geom {g}") for g in range(model.ngeom)]
        mujoco.mj_forward(model, self.data)
        # the floor's hold on the base, for the robot's inertia along each base joint at the start pose
        inertia = [float(self.data.qM[model.dof_Madr[dof]]) for dof in self._base_v]
        self.traction = t = BaseTraction(mass=inertia[0], yaw_inertia=inertia[2])
        self._servos = np.array([model.actuator(mjcf.base_servo(j)).id for j in mjcf.BASE_JOINTS], dtype=int)
        for k, servo in enumerate(self._servos):        # a position servo: kp · (ctrl − q) − kd · v
            model.actuator_gainprm[servo, 0] = t.kp[k]
            model.actuator_biasprm[servo, 1:3] = (-t.kp[k], -t.kd[k])
            limit = t.torque_limit if k == 2 else t.force_limit
            model.actuator_forcerange[servo] = (-limit, limit)

    def _joint(self, name: str):
        try:
            return self.model.joint(name)
        except KeyError:
            raise mjcf.WorldError(f"no joint {name!r} in the simulated world") from None

    # -- state ---------------------------------------------------------------------------------------
    def set_state(self, q: np.ndarray, v: np.ndarray) -> None:
        """Body joint positions and velocities (caller order); the rest of the world follows."""
        d = self.data
        d.qpos[self._qadr] = q
        d.qvel[self._dadr] = v
        mujoco.mj_forward(self.model, d)

    @property
    def positions(self) -> np.ndarray:
        return self.data.qpos[self._qadr].copy()

    @property
    def velocities(self) -> np.ndarray:
        return self.data.qvel[self._dadr].copy()

    @property
    def lower_limits(self) -> np.ndarray:
        """Hard stops, caller order (−inf where a joint has none)."""
        return self._lower.copy()

    @property
    def upper_limits(self) -> np.ndarray:
        return self._upper.copy()

    def set_brakes(self, mask: ArrayLike) -> None:
        """Engage (True) or release the brakes of the joints, caller order; joints without one are ignored.
        A brake engages where its joint is now."""
        d, m = self.data, self.model
        flags = np.asarray(mask, dtype=bool)
        for joint, i in self._brake_index.items():
            eq = self._brake_eq[joint]
            on = bool(flags[i])
            if on and not d.eq_active[eq]:
                m.eq_data[eq, 0] = d.qpos[self._qadr[i]]
            d.eq_active[eq] = on

    # -- dynamics ------------------------------------------------------------------------------------
    def step(self, tau: ArrayLike, base_twist: Tuple[float, float, float],
             chassis_q: ArrayLike = (), chassis_v: ArrayLike = (), damping: Optional[List[float]] = None) -> None:
        """One time step under the motor torques `tau` (caller order), the base following `base_twist`
        (vx, vy [m/s], wz [rad/s], base frame), the chassis joints posed at `chassis_q`, `chassis_v`.

        `damping` (caller order, each >= 0; N·m·s/rad, N·s/m on a finger; None: none): the motors' own
        damping, integrated implicitly (MuJoCo's joint damping, beside the joints' viscous friction), so
        that joint i is pushed by tau[i] - damping[i] · v[i] over the step, v[i] its velocity at the step's
        end, stably whatever damping[i] · time step / the joint's inertia. Given, the state before the step
        is kept for `redo`."""
        m, d = self.model, self.data
        d.qfrc_applied[self._dadr] = tau
        d.ctrl[self._servos] = self.traction.setpoint(d.qpos[self._base_q].tolist(), base_twist, m.opt.timestep)
        if len(self._chassis_q):
            d.qpos[self._chassis_q] = chassis_q
            d.qvel[self._chassis_v] = chassis_v
        if damping is not None:
            if damping != self._motor_damping:
                self._set_motor_damping(damping)
            mujoco.mj_getState(m, d, self._before, self._state_spec)
            self._pushes_before = (dict(self._pushes) if self._pushes else {}, self._push_end)
        mujoco.mj_step(m, d)
        if d.time >= self._push_end:
            self._end_pushes()

    def redo(self, tau: ArrayLike, damping: List[float]) -> None:
        """Take the last `step` (one given `damping`) again from the state before it, under the motor torques
        `tau` and `damping` (as `step`'s); the base's set-point, the chassis' pose, the brakes and the
        pushes as they were."""
        m, d = self.model, self.data
        mujoco.mj_setState(m, d, self._before, self._state_spec)
        pushes, self._push_end = self._pushes_before
        self._pushes = dict(pushes)
        d.qfrc_applied[self._dadr] = tau
        if damping != self._motor_damping:
            self._set_motor_damping(damping)
        mujoco.mj_step(m, d)
        if d.time >= self._push_end:
            self._end_pushes()

    def _set_motor_damping(self, damping: List[float]) -> None:
        self._motor_damping = list(damping)
        self.model.dof_damping[self._dadr] = self._viscous + np.asarray(damping, dtype=float)

    @property
    def time(self) -> float:
        return float(self.data.time)

    # -- pushes --------------------------------------------------------------------------------------
    def apply_wrench(self, body: str, force: Sequence[float], torque: Sequence[float], duration: float) -> float:
        """Push `body` (a URDF link of the robot, or a free body of the scene) with `force` [N] and `torque` [N·m],
        both in the world frame, at its centre of mass, for the next `duration` s of simulated time (whole
        time steps, at least one). A push on a body that is being pushed replaces that push. Returns the
        simulated time [s] it starts (the next step's). Values as `check_wrench` accepts them.

        :raises ValueError: no such link or object, or a wrench or duration `check_wrench` refuses."""
        f, t, seconds = check_wrench(force, torque, duration)
        b = self._pushable.get(body) if isinstance(body, str) else None
        if b is None:
            raise ValueError(f"{body!r:.80}: no link of the robot or object of the scene by that name "
                             f"(e.g. torso_link4, right_gripper_link)")
        d = self.data
        dt = self.model.opt.timestep
        d.xfrc_applied[b] = (*f, *t)
        self._pushes[b] = d.time + max(seconds, dt) - 0.5 * dt      # steps starting before it are pushed
        self._push_end = min(self._pushes.values())
        return float(d.time)

    def pushing(self) -> List[str]:
        """The bodies being pushed now (apply_wrench), sorted."""
        return sorted(self.model.body(b).name for b in self._pushes)

    def _end_pushes(self) -> None:
        """Clear the pushes whose time is up (the next step starts at or after their end)."""
        d = self.data
        for b, end in list(self._pushes.items()):
            if d.time >= end:
                d.xfrc_applied[b] = 0.0
                del self._pushes[b]
        self._push_end = min(self._pushes.values(), default=math.inf)

    # -- what the rest of the simulator reads -------------------------------------------------------
    def base_pose(self) -> Tuple[float, float, float]:
        """(x, y, yaw) of base_footprint in the world, yaw wrapped to (−π, π]."""
        x, y, yaw = self.data.qpos[self._base_q]
        return float(x), float(y), math.atan2(math.sin(yaw), math.cos(yaw))

    def base_height(self) -> float:
        """z of base_link in the world [m] (the floor at z = 0; the R1's 0.0415 m, which its planar base keeps):
        with `base_pose`, base_link's pose, directly above base_footprint."""
        return float(self.data.xpos[self._base_link, 2])

    def base_twist(self) -> Tuple[float, float, float]:
        """(vx, vy, wz) of the base in its own frame."""
        vxw, vyw, wz = self.data.qvel[self._base_v]
        yaw = self.data.qpos[self._base_q[2]]
        c, s = math.cos(yaw), math.sin(yaw)
        return float(c * vxw + s * vyw), float(-s * vxw + c * vyw), float(wz)

    def imu(self, frame: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(world-from-sensor rotation, angular velocity [rad/s], specific force [m/s²]) of an IMU frame, the
        last two in the sensor's axes (at rest and level: (0, 0, +9.81)).

        :raises KeyError: not an IMU frame of this world."""
        qa, ga, aa = self._imu[frame]
        s = self.data.sensordata
        rot = np.empty(9)
        mujoco.mju_quat2Mat(rot, s[qa:qa + 4])
        return rot.reshape(3, 3), s[ga:ga + 3].copy(), s[aa:aa + 3].copy()

    def robot_contacts(self) -> List[Tuple[str, str]]:
        """What the robot touches after the last step: (robot link, what it touches: a scene body's name,
        or a world geom's such as the floor or a wall), each pair once, sorted. The chassis has no
        contacts (it rolls kinematically), so an empty list is a robot touching nothing."""
        d = self.data
        pairs = set()
        for g1, g2 in d.contact.geom[:d.ncon].tolist():
            robot1, robot2 = self._robot_geom[g1], self._robot_geom[g2]
            if robot1 and not robot2:
                pairs.add((self._geom_label[g1], self._geom_label[g2]))
            elif robot2 and not robot1:
                pairs.add((self._geom_label[g2], self._geom_label[g1]))
        return sorted(pairs)

    def objects(self) -> List[ObjectState]:
        """The scene's free bodies, in the model's order."""
        q, v = self.data.qpos, self.data.qvel
        out = []
        w = np.empty(3)
        for name, qa, da in self._objects:
            p, quat = q[qa:qa + 3], q[qa + 3:qa + 7]
            mujoco.mju_rotVecQuat(w, v[da + 3:da + 6], quat)     # a free joint's angular velocity is local
            out.append(ObjectState(name, (float(p[0]), float(p[1]), float(p[2])),
                                   (float(quat[0]), float(quat[1]), float(quat[2]), float(quat[3])),
                                   (float(v[da]), float(v[da + 1]), float(v[da + 2])),
                                   (float(w[0]), float(w[1]), float(w[2]))))
        return out
