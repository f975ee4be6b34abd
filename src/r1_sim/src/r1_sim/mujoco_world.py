"""The simulated robot's bodies in MuJoCo: what the motors drive, stepped at the physics rate. ROS-free.

`MujocoWorld` holds one MuJoCo model and its data, built by `r1_sim.mjcf.world_xml` from the URDF and
a scene, and gives `r1_sim.robot.SimRobot` what its motors need:

* the **body joints** (torso, arms, fingers) in the caller's order: positions, velocities,
  accelerations of the last step; `step(tau, ...)` applies the motors' torques (N·m, or N on a
  finger) as generalised forces and advances one time step. Joint friction (viscous → damping,
  Coulomb → friction loss), rotor inertia (armature) and the hard stops are MuJoCo's; a **brake**
  is a joint equality that holds the joint where it was when the brake engaged;
* the **base**: its planar joints follow the swerve modules (the twist `step` is given, base frame),
  held by the floor's grip (r1_sim.base_traction); `base_pose`/`base_twist` are MuJoCo's;
  the steer and wheel joints are posed from the chassis model (they carry no dynamics here);
* **IMUs** (`imu`): orientation, rate gyro and specific force of a URDF frame, from MuJoCo's sensors,
  so they feel the base's motion, the torso's and gravity together;
* **objects** (`objects`): pose and twist of the scene's free bodies, for /sim/objects;
* **contacts** (`robot_contacts`): what the robot's links touch now (the scene's geoms: the table, an
  object, a wall), for the simulator's diagnostics.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import mujoco
import numpy as np
from numpy.typing import ArrayLike

from r1_sim import mjcf
from r1_sim.base_traction import BaseTraction

__all__ = ["MujocoWorld", "ObjectState", "describe_contacts"]


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
        model.dof_frictionloss[self._dadr] = arrays[1]
        model.dof_armature[self._dadr] = arrays[2]
        ranges = np.array([model.jnt_range[self._joint(j).id] for j in joints]).reshape(n, 2)
        limited = np.array([model.jnt_limited[self._joint(j).id] for j in joints], dtype=bool)
        self._lower = np.where(limited, ranges[:, 0], -np.inf)
        self._upper = np.where(limited, ranges[:, 1], np.inf)
        self._brake_eq = {j: model.equality(mjcf.brake_name(j)).id for j in brakes}
        self._brake_index = {j: self.joints.index(j) for j in brakes if j in self.joints}
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
             chassis_q: ArrayLike = (), chassis_v: ArrayLike = ()) -> None:
        """One time step under the motor torques `tau` (caller order), the base following `base_twist`
        (vx, vy [m/s], wz [rad/s], base frame), the chassis joints posed at `chassis_q`, `chassis_v`."""
        m, d = self.model, self.data
        d.qfrc_applied[self._dadr] = tau
        d.ctrl[self._servos] = self.traction.setpoint(d.qpos[self._base_q].tolist(), base_twist, m.opt.timestep)
        if len(self._chassis_q):
            d.qpos[self._chassis_q] = chassis_q
            d.qvel[self._chassis_v] = chassis_v
        mujoco.mj_step(m, d)

    @property
    def time(self) -> float:
        return float(self.data.time)

    # -- what the rest of the simulator reads -------------------------------------------------------
    def base_pose(self) -> Tuple[float, float, float]:
        """(x, y, yaw) of base_footprint in the world, yaw wrapped to (−π, π]."""
        x, y, yaw = self.data.qpos[self._base_q]
        return float(x), float(y), math.atan2(math.sin(yaw), math.cos(yaw))

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
