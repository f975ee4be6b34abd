"""The simulated R1: motors and boards on their buses, over the physics.

`SimRobot` is ROS-free. The node feeds it received frames (`handle`) and time
(`step`, at the physics rate) and puts the frames it emits on the buses. Which
motor sits on which bus under which ids comes from the robot's CAN layout
(r1_can.config), the driver's own, so the simulator answers exactly the ids the
driver speaks to; the bodies each motor moves are MuJoCo's (r1_sim.mujoco_world: the URDF
in the scene), the swerve modules the chassis model's (r1_sim.physics); friction, gains and
the rest from `SimSettings`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Tuple, Union

import numpy as np

from r1_can import board_frames, damiao
from r1_can.config import GroupSpec, MotorSpec, RobotConfig
from r1_sim import mjcf
from r1_sim.motor import SimMotor
from r1_sim.mujoco_world import MujocoWorld, ObjectState
from r1_sim.physics import BatteryModel, ImuModel, SwerveChassisSim
from r1_sim.sim_settings import SimSettings

Frame = Tuple[int, bytes]     # (typing's names: a module-level alias runs on Python 3.8)


REMOTE_OFF = 255        # /sim/remote mode: the receiver sends nothing (remote off, link lost)
# A physics step is taken again at most this often while a motor's law ends it in another region (within its
# peak torque, or saturated) than it took (SimRobot.step): one joint needs two at most.
MAX_REDO = 3


@dataclass
class Slot:
    """One simulated motor and what it drives."""

    bus: str
    group: str
    spec: MotorSpec
    motor: SimMotor
    kind: str            # "body" (a pinocchio joint), "gripper" (both fingers), "steer", "wheel"
    index: int           # body joint index, or chassis module
    index2: int = -1     # second finger of a gripper


class SimRobot:
    """Motors, boards and physics of one R1, driven by CAN frames and time."""

    def __init__(self, config: RobotConfig, urdf_xml: str, settings: Union[SimSettings, Mapping[str, Any]],
                 now: float):
        """`config`: the CAN layout; `urdf_xml`: the robot's URDF; `settings`: the simulator's settings, or
        its parameter namespace (read with SimSettings.from_namespace); `now`: the start of simulated time [s].

        :raises r1_common.settings.ConfigError: bad settings.
        :raises KeyError: a chassis steer joint that is not in the URDF."""
        self.config = config
        self.settings = settings if isinstance(settings, SimSettings) else SimSettings.from_namespace(settings)
        self.params = self.settings.to_params()     # the settings as a namespace, defaults included
        s = self.settings
        body_joints: list[str] = []
        self.slots: list[Slot] = []
        # chassis geometry from the URDF joint origins of the steer joints
        chassis: GroupSpec | None = next((g for g in config.groups.values() if g.kind == "chassis"), None)
        for group in config.groups.values():
            if group.kind == "chassis":
                continue
            for spec in group.motors:
                if spec is group.gripper:
                    body_joints += [spec.joint, spec.joint.replace("joint1", "joint2")]
                else:
                    body_joints.append(spec.joint)
        self.body_joints = body_joints
        self.chassis = self._make_chassis(urdf_xml, chassis) if chassis else None
        self.world = self._make_world(config, urdf_xml, body_joints, chassis)
        start = np.array([s.start_pose.get(j, 0.0) for j in body_joints])
        self.world.set_state(start, np.zeros(len(body_joints)))
        timeout_units = int(round(s.comm_timeout_s / 50e-6))     # the TIMEOUT register counts 50 µs
        for group in config.groups.values():
            for k, spec in enumerate(group.motors):
                if group.kind == "chassis":
                    modules = len(group.motors) // 2
                    kind, index = ("steer", k) if k < modules else ("wheel", k - modules)
                    gains = s.motor_loop(kind)
                elif spec is group.gripper:
                    kind, index = "gripper", body_joints.index(spec.joint)
                    gains = s.motor_loop("gripper")
                else:
                    kind, index = "body", body_joints.index(spec.joint)
                    gains = s.motor_loop(group.kind)
                motor = SimMotor(spec.esc_id, spec.mst_id, spec.limits, timeout=timeout_units,
                                 kp_apr=gains.kp_apr, kp_asr=gains.kp_asr, ki_asr=gains.ki_asr, torque=spec.torque)
                slot = Slot(group.bus, group.name, spec, motor, kind, index)
                if kind == "gripper":
                    slot.index2 = body_joints.index(spec.joint.replace("joint1", "joint2"))   # tied in the world
                self.slots.append(slot)
        self._command_ids: dict[str, dict[int, Slot]] = {b: {} for b in config.buses}
        self._register_ids: dict[str, dict[int, Slot]] = {b: {} for b in config.buses}
        for slot in self.slots:
            for mode in damiao.ControlMode:
                self._command_ids[slot.bus][damiao.command_id(slot.spec.esc_id, mode)] = slot
            self._register_ids[slot.bus][slot.spec.esc_id] = slot
        # torso joints have brakes that hold them whenever their motor is unpowered
        self._braked = [s for s in self.slots if s.kind == "body" and config.groups[s.group].kind == "torso"]
        self._brakes_on: tuple[bool, ...] = ()     # set at the first step
        # the motors by what they drive, for the per-step loops: (motor, body joint),
        # (motor, finger joint, other finger joint, metres per rad), and the chassis modules in order
        self._body_motors = [(s.motor, s.index) for s in self.slots if s.kind == "body"]
        self._grip_motors = [(s.motor, s.index, s.index2, s.spec.metres_per_rad)
                             for s in self.slots if s.kind == "gripper"]
        self._steer_motors = [s.motor for s in sorted((s for s in self.slots if s.kind == "steer"),
                                                      key=lambda s: s.index)]
        self._wheel_motors = [s.motor for s in sorted((s for s in self.slots if s.kind == "wheel"),
                                                      key=lambda s: s.index)]
        self._chassis_motors = self._steer_motors + self._wheel_motors
        self.imu = {name: ImuModel(gyro_noise=s.imu.gyro_noise, acc_noise=s.imu.acc_noise)
                    for name, b in config.boards.items() if b.kind == "imu"}
        self.battery = BatteryModel(capacity_ah=s.battery.capacity_ah, state_of_charge=s.battery.state_of_charge)
        self.remote_mode = s.remote.mode
        self.remote_sticks = [0.0, 0.0, 0.0, 0.0]
        self._next_board = {name: now for name in config.boards}
        self._board_due = now                # the earliest of them
        self._imu_seq = 0
        self._power = 0.0
        self.redone_steps = 0                # physics steps taken again for a motor's saturation (`step`)
        self.time = now
        self._sync_motor_state(now)

    @staticmethod
    def _make_chassis(urdf_xml: str, chassis: GroupSpec) -> SwerveChassisSim:
        """Module positions from the URDF's steer joint origins, wheel radius from the CAN layout."""
        import xml.etree.ElementTree as ET
        origins = {j.get("name"): j.find("origin") for j in ET.fromstring(urdf_xml).iter("joint")}
        modules = len(chassis.motors) // 2
        xy = []
        for spec in chassis.motors[:modules]:
            origin = origins.get(spec.joint)
            if origin is None:
                raise KeyError(f"steer joint {spec.joint} not in robot_description")
            x, y, _ = (float(v) for v in origin.get("xyz", "0 0 0").split())
            xy.append((x, y))
        return SwerveChassisSim(np.array(xy), float(chassis.params["wheel_radius"]))

    def _make_world(self, config: RobotConfig, urdf_xml: str, body_joints: list[str],
                    chassis: Optional[GroupSpec]) -> MujocoWorld:
        """The bodies in MuJoCo: the scene of the settings, the fingers tied, the torso's brakes, the IMUs.

        :raises r1_sim.mjcf.WorldError: a scene that is not there or that MuJoCo refuses."""
        scene = mjcf.scene_path(self.settings.scene).read_text()
        ties = [(g.gripper.joint.replace("joint1", "joint2"), g.gripper.joint)
                for g in config.groups.values() if g.gripper is not None]
        brakes = [m.joint for g in config.groups.values() if g.kind == "torso" for m in g.motors]
        imus = [b.frame_id for b in config.boards.values() if b.kind == "imu"]
        chassis_joints = [m.joint for m in chassis.motors] if chassis is not None else []
        return MujocoWorld(urdf_xml, scene, body_joints, timestep=1.0 / self.settings.physics_rate_hz,
                           ties=ties, brakes=brakes, imus=imus, chassis=chassis_joints,
                           **self._friction(body_joints))

    def _friction(self, joints: list[str]) -> dict[str, np.ndarray]:
        """The world's friction arrays (viscous, coulomb, armature per joint) from the settings."""
        table = [self.settings.friction_of(j) for j in joints]
        return {k: np.array([getattr(f, k) for f in table], dtype=float) for k in ("viscous", "coulomb", "armature")}

    # -- frames ------------------------------------------------------------------------------
    def handle(self, bus: str, arbitration_id: int, data: bytes) -> Iterable[Frame]:
        """A frame the driver sent; the addressed motor's reply, if any."""
        if arbitration_id == damiao.REGISTER_ID:
            slot = self._register_ids[bus].get(data[0] | data[1] << 8) if len(data) >= 2 else None
        else:
            slot = self._command_ids[bus].get(arbitration_id)
        if slot is None:
            return ()
        reply = slot.motor.handle(arbitration_id, data, self.time)
        return ((slot.spec.mst_id, reply),) if reply is not None else ()

    def board_frames(self, now: float) -> list[tuple[str, int, bytes]]:
        """Periodic frames of the IMUs, the BMS and the remote controller that are due."""
        if now < self._board_due:         # asked on every pass of the simulator's loop
            return []
        out = []
        for name, spec in self.config.boards.items():
            if now < self._next_board[name]:
                continue
            self._next_board[name] = max(self._next_board[name] + 1.0 / spec.rate_hz, now - 0.5 / spec.rate_hz)
            if spec.kind == "imu":
                rpy, gyro, acc = self.imu_reading(name)
                self._imu_seq = (self._imu_seq + 1) & 0xFF
                out += [(spec.bus, spec.can_id, f) for f in board_frames.encode_imu(self._imu_seq, rpy, gyro, acc)]
            elif spec.kind == "bms":
                b = self.battery
                out.append((spec.bus, spec.can_id, board_frames.encode_bms(
                    board_frames.BmsReport(b.voltage, b.current, b.state_of_charge, 30.0, 0))))
            elif spec.kind == "remote":
                if self.remote_mode == REMOTE_OFF:        # receiver unplugged or link lost: no frames
                    continue
                rx, ry, lx, ly = (board_frames.stick_to_raw(x) for x in self.remote_sticks)
                out.append((spec.bus, spec.can_id, board_frames.encode_remote(
                    board_frames.RemoteReport((rx, ry, lx, ly), self.remote_mode, True))))
        self._board_due = min(self._next_board.values(), default=math.inf)
        return out

    # -- physics -----------------------------------------------------------------------------
    def step(self, dt: float) -> None:
        """Advance the world by dt: motor torques at the current state, then integrate.

        The motors on the bodies (torso, arms, grippers) give their law as a torque and a damping
        (SimMotor.drive) that the world integrates implicitly, so a stiff damper (the MIT frame's kd up to
        5 N·m·s/rad, ~3 kN·s/m at a finger through its linkage) is stable at any physics rate, as the real
        motor's loop at tens of kHz is; where a motor's law ends the step in another region (within its
        peak, or saturated) than it took, the step is taken again in that region (SimMotor.redrive,
        MujocoWorld.redo; `redone_steps` counts them). The chassis motors drive the chassis model as before.

        The motors live on this simulated clock (`time`), not the wall clock, so a pause
        of the simulator process (a busy machine) does not trip their comm watchdogs.
        """
        self.time += dt
        now = self.time
        n = len(self.body_joints)
        tau = [0.0] * n
        damping = [0.0] * n
        power = 0.0
        for m, i in self._body_motors:       # each at the state the last sync gave it (nothing moved since)
            tau[i], damping[i] = m.drive(now)
            power += abs(m.last_torque * m.velocity)
        for m, i, j, r in self._grip_motors:
            f, d = m.drive(now)
            power += abs(m.last_torque * m.velocity)
            tau[i] = tau[j] = f / (2 * r)    # the linkage: half the motor's force on each finger
            damping[i] = damping[j] = d / (2 * r * r)   # and its damping: d (v_i + v_j) / (2 r)^2 on each, v_i = v_j
        modules = [m.output(now) for m in self._chassis_motors]      # steering, then wheels
        for m, t in zip(self._chassis_motors, modules):
            power += abs(t * m.velocity)
        n = len(self._steer_motors)
        steer_tau, wheel_tau = modules[:n], modules[n:]
        braked = tuple(not s.motor.powered for s in self._braked)
        if braked != self._brakes_on:           # engaging a brake holds the joint where it is then
            self._brakes_on = braked
            brakes = np.zeros(len(self.body_joints), dtype=bool)
            for s, on in zip(self._braked, braked):
                brakes[s.index] = on
            self.world.set_brakes(brakes)
        chassis = self.chassis
        if chassis:
            chassis.step(steer_tau, wheel_tau, dt)
        if dt != self.world.model.opt.timestep:
            self.world.model.opt.timestep = dt
        if chassis:
            steer_q, steer_v, wheel_q, wheel_v = chassis.module_state()
            self.world.step(tau, chassis.base_twist(), steer_q + wheel_q, steer_v + wheel_v, damping)
        else:
            self.world.step(tau, (0.0, 0.0, 0.0), damping=damping)
        v = self._saturate(tau, damping)
        self.battery.step(power / 0.85, dt)
        self._sync_motor_state(now, dt, v)

    def _saturate(self, tau: list, damping: list) -> list:
        """Take the step again while a body motor's law, at the velocity the step ended with, is in another
        region than the step took (SimMotor.redrive), at most MAX_REDO times (the last step taken stands);
        the body joints' velocities at the end."""
        redone = 0
        while True:
            v = self.world.velocities.tolist()
            if redone == MAX_REDO:
                return v
            again = False
            for m, i in self._body_motors:
                new = m.redrive(v[i])
                if new is not None:
                    tau[i], damping[i] = new
                    again = True
            for m, i, j, r in self._grip_motors:
                new = m.redrive(0.5 * (v[i] + v[j]) / r)
                if new is not None:
                    f, d = new
                    tau[i] = tau[j] = f / (2 * r)
                    damping[i] = damping[j] = d / (2 * r * r)
                    again = True
            if not again:
                return v
            self.world.redo(tau, damping)
            redone += 1
            self.redone_steps += 1

    def _sync_motor_state(self, now: float, dt: float = 0.0, v: Optional[list] = None) -> None:
        """Tell each motor where its joint is (`v`: the body joints' velocities, if read already), for its
        feedback replies, thermal model and watchdog, and the next step's torques. Python floats, not numpy
        scalars: this runs for every motor at every physics step, where numpy scalar arithmetic is ~4x
        slower (and numpy on the 24 motors' arrays slower still: ~1.5 µs an operation)."""
        q = self.world.positions.tolist()
        if v is None:
            v = self.world.velocities.tolist()
        for m, i in self._body_motors:
            m.set_state(q[i], v[i], now, dt)
        for m, i, j, r in self._grip_motors:
            # the linkage moves both fingers: motor angle = mean finger travel / ratio
            m.set_state(0.5 * (q[i] + q[j]) / r, 0.5 * (v[i] + v[j]) / r, now, dt)
        chassis = self.chassis
        if chassis:
            steer_q, steer_v, wheel_q, wheel_v = chassis.module_state()
            for m, p, w in zip(self._steer_motors, steer_q, steer_v):
                m.set_state(p, w, now, dt)
            for m, p, w in zip(self._wheel_motors, wheel_q, wheel_v):
                m.set_state(p, w, now, dt)

    def imu_reading(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(roll pitch yaw, gyro, specific force) of an IMU board: MuJoCo's sensors at its frame (the base's
        motion, the torso's and gravity together), the board's noise added."""
        return self.imu[name].report(*self.world.imu(self.config.boards[name].frame_id))

    # -- faults and ground truth -----------------------------------------------------------
    def slot(self, joint: str) -> Slot:
        for s in self.slots:
            if s.spec.joint == joint:
                return s
        raise KeyError(f"no simulated motor drives joint '{joint}'")

    def inject_fault(self, joint: str, fault: str) -> None:
        """Make the motor of `joint` misbehave (see r1_sim.motor.FAULTS); 'none' removes the cause."""
        self.slot(joint).motor.inject(fault)

    def apply_wrench(self, link: str, force: tuple, torque: tuple, duration: float) -> None:
        """Push `link` (of the robot, or an object of the scene): `force` [N] and `torque` [N·m] in the world frame at
        its centre of mass, for `duration` s of simulated time from the next step (MujocoWorld.apply_wrench).

        :raises ValueError: no such link, or a wrench r1_sim.mujoco_world.check_wrench refuses."""
        self.world.apply_wrench(link, force, torque, duration)

    def set_remote(self, sticks: list[float], mode: int) -> None:
        """Remote controller state: sticks [left x, left y, right x, right y] in [-1, 1], switch mode
        (REMOTE_OFF: the receiver sends no frames at all)."""
        lx, ly, rx, ry = (float(x) for x in sticks)
        self.remote_sticks = [rx, ry, lx, ly]        # receiver channel order
        self.remote_mode = int(mode)

    def base_pose(self) -> tuple[float, float, float]:
        """(x, y, yaw) of the base in the world: where it truly is (MuJoCo's), which its wheels' odometry
        only estimates (they slip when the base pushes against something)."""
        return self.world.base_pose()

    def base_height(self) -> float:
        """z of base_link over the floor [m] (MujocoWorld.base_height)."""
        return self.world.base_height()

    def base_twist(self) -> tuple[float, float, float]:
        """(vx, vy, wz) of the base, its own frame."""
        return self.world.base_twist()

    def objects(self) -> list[ObjectState]:
        """The scene's free bodies."""
        return self.world.objects()

    def contacts(self) -> list[tuple[str, str]]:
        """What the robot's links touch: (link, scene body or world geom) pairs (MujocoWorld.robot_contacts)."""
        return self.world.robot_contacts()

    def joint_positions(self) -> dict[str, float]:
        out = dict(zip(self.body_joints, self.world.positions.tolist()))
        if self.chassis:
            for k in range(3):
                out[f"steer_motor_joint{k + 1}"] = float(self.chassis.steer_angles[k])
                out[f"wheel_motor_joint{k + 1}"] = float(self.chassis.wheel_angles[k])
        return out
