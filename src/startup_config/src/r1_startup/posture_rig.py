"""The simulated robot, its driver and its controllers in one process and one clock: a closed loop to
put the robot's posture to the test, ROS-free.

`PostureRig` wires the same parts the stack runs, without the messages between them: the simulated
R1 (`r1_sim.robot.SimRobot`: Damiao motors on MuJoCo), HDAS's motor groups (`hdas.motor_group`:
clamps, set-point ramp, torque rate and bound, the codec) exchanging real CAN frames with it, and the
controllers' cores: the joint tracker's groups (`mobiman.tracker.group`), torso speed control
(`mobiman.torso.loop`, or the tracker's torso) and chassis control (`mobiman.chassis.control`),
with the base's commanded acceleration and measured twist fed to the upper body as the nodes do
(`mobiman.control.base_motion`), and each group's motor power as HDAS reports it.

Each bus cycle of a group sends its frames, reads the replies and ticks the group's controller on
them; the command goes out with the next cycle, as in the stack (one bus period of delay). A busy
machine delays both ways: `feedback_delay` holds each feedback back before the controller sees it (the
controller sees its age, as a late message's stamp shows it), `command_delay` each command before
the driver takes it (which nothing in the loop can see). The physics runs at its rate in between. Time is
simulated only: a second of it costs what the parts cost, nothing waits on a wall clock.

`scripts/benchmark posture` and the posture tests drive it (docs/posture.md).
"""
from __future__ import annotations

import collections
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Deque, Dict, List, Optional, Sequence, Tuple

import numpy as np
import yaml

from hdas.errors import UNPOWERED
from hdas.motor_group import ChassisGroup, MotorGroup
from hdas.urdf_limits import limit_arrays, read_limits
from mobiman.chassis.control import ChassisController, ChassisLimits, module_positions
from mobiman.chassis.posture_limits import PostureLimits, SupportPolygon
from mobiman.chassis.swerve import SwerveKinematics, SwerveParams
from mobiman.control.base_motion import BaseMotionInput
from mobiman.control.upper_body import UpperBody
from mobiman.model.robot_model import RobotModel, load_group_config
from mobiman.torso.config import TorsoSpeedConfig
from mobiman.torso.loop import TorsoLoop
from mobiman.tracker.group import Feedback, GroupCommand, build_groups
from mobiman.tracker.settings import JointTrackerSettings
from r1_can.config import RobotConfig, parse_config
from r1_common.validation import InputError
from r1_sim.robot import SimRobot

SRC = Path(__file__).resolve().parents[3]
PROFILES = {"stock": ("r1_buses_sim", 1000.0), "light": ("r1_buses_sim_light", 500.0)}


def _yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


@dataclass
class Sample:
    """The robot at one instant: simulated time [s], true joint positions (MuJoCo's) by name, the base's
    true twist (vx, vy, wz), and the t_ff each group's last command carried by joint name."""

    t: float
    q: Dict[str, float]
    base: Tuple[float, float, float]
    t_ff: Dict[str, float] = field(default_factory=dict)


class PostureRig:
    """The closed loop (see the module). Not thread-safe; one rig, one simulated robot."""

    def __init__(self, profile: str = "light", torso: str = "speed", scene: str = "empty",
                 feedback_delay: float = 0.0, command_delay: float = 0.0, sim: Optional[dict] = None,
                 tracker: Optional[dict] = None,
                 torso_speed: Optional[dict] = None, chassis: Optional[dict] = None, posture_limits: bool = True,
                 urdf_path: Optional[Path] = None):
        """`profile`: the bus rates (stock, light); `torso`: who drives it (speed: torso speed control,
        joint: the tracker); `scene`: the simulated world; `feedback_delay`, `command_delay` [s]: added to
        every feedback's way to its controller and every command's to the driver; `sim`, `tracker`,
        `torso_speed`, `chassis`: parameters over the stack's YAML; `posture_limits`: chassis control lowers
        the base's acceleration for the upper body's posture, as its node does by default."""
        if profile not in PROFILES or torso not in ("speed", "joint") or min(feedback_delay, command_delay) < 0.0:
            raise ValueError(f"profile {profile!r}, torso {torso!r}, delays {feedback_delay}, {command_delay}")
        buses, physics_hz = PROFILES[profile]
        self.urdf = (urdf_path or SRC / "r1_description/urdf/r1_v2_1_0.urdf").read_text()
        layout = {**_yaml(SRC / "r1_can/config/r1.yaml"), **_yaml(SRC / f"r1_can/config/{buses}.yaml")}
        self.config: RobotConfig = parse_config(layout)
        sim_params = {**layout, **_yaml(SRC / "r1_sim/config/sim.yaml"), "scene": scene,
                      "physics_rate_hz": physics_hz, **(sim or {})}
        self.now = 0.0
        self.dt = 1.0 / physics_hz
        self.robot = SimRobot(self.config, self.urdf, sim_params, now=0.0)
        # the driver: one motor group per group of the layout, on the robot's clock
        limits = read_limits(self.urdf)
        self.groups: Dict[str, MotorGroup] = {}
        self.period: Dict[str, float] = {}
        self.next_cycle: Dict[str, float] = {}
        for name, spec in self.config.groups.items():
            cls = ChassisGroup if spec.kind == "chassis" else MotorGroup
            group = cls(spec, limit_arrays(limits, [m.joint for m in spec.motors]), command_timeout=0.2,
                        reply_timeout=0.05, enable_on_start=True)
            group.robot_clock = lambda: self.now
            self.groups[name] = group
            self.period[name] = 1.0 / self.config.buses[spec.bus].rate_hz
            self.next_cycle[name] = 0.0
        # the controllers
        joint_groups, _ = load_group_config(SRC / "mobiman/config/r1_joint_groups.yaml")
        self.model = RobotModel(self.urdf, joint_groups, planar_base=True)
        tracker_params = {**_yaml(SRC / "mobiman/config/joint_tracker.yaml"), "disable_torso": torso == "speed",
                          **(tracker or {})}
        tracker_settings = JointTrackerSettings.from_params(tracker_params)
        self.body = UpperBody(self.model, tracker_settings.inertial_feedforward, tracker_settings.base_feedforward)
        self.tracked, _ = build_groups(tracker_settings, self.model, joint_groups, self.body,
                                       wall=lambda: self.now)
        self.torso: Optional[TorsoLoop] = None
        if torso == "speed":
            torso_params = {**_yaml(SRC / "mobiman/config/torso_speed_control.yaml"), **(torso_speed or {})}
            self.torso = TorsoLoop(self.model, TorsoSpeedConfig.from_params(torso_params))   # its own, as its node
            self.torso.clock._wall = lambda: self.now              # stale only on the robot's clock here
        steer = [m.joint for m in self.config.groups["chassis"].motors[:3]]
        xy = module_positions(self.urdf, steer, "base_link")
        self.posture = PostureLimits(self.model, ("torso", "left_arm", "right_arm"), SupportPolygon.of_points(xy)) \
            if posture_limits else None
        if self.posture is not None:       # a group no controller drives is the driver's, as the node sees it
            for name in self.posture.groups:
                if not (name in self.tracked or (name == "torso" and self.torso is not None)):
                    self.posture.hold(name, self.config.groups[name].hold_kp)
        self._posture_due = 0.0
        self.chassis = ChassisController(SwerveKinematics(xy, SwerveParams()), ChassisLimits.from_params(chassis or {}),
                                         command_timeout=0.2, posture=self.posture)
        self.base_input = BaseMotionInput(tracker_settings.base_timeout)
        self.feedback_delay, self.command_delay = float(feedback_delay), float(command_delay)
        self._pending: Dict[str, Deque[Tuple[float, GroupCommand]]] = {n: collections.deque() for n in self.groups}
        # feedback on its way to the controllers: (due, stamp, positions, velocities, powered)
        self._feedback: Dict[str, Deque[Tuple[float, float, np.ndarray, np.ndarray, List[bool]]]] = {
            n: collections.deque() for n in self.groups}
        self.samples: List[Sample] = []
        self.sample_period = 0.01
        self._next_sample = 0.0
        self._last_t_ff: Dict[str, float] = {}
        self.max_torque_ratio: Dict[str, float] = {}     # joint -> the largest |t_ff| commanded / its effort
        # joint -> the largest |torque| its motor applied / its effort (the MIT law's whole output)
        self.max_motor_ratio: Dict[str, float] = {}
        self._motors = [(slot.spec.joint, slot.motor, limits[slot.spec.joint].effort)
                        for slot in self.robot.slots if slot.kind == "body"]
        self.events: List[str] = []
        self._push: Optional[Tuple[int, np.ndarray, float]] = None

    # -- what a test asks -----------------------------------------------------------------------
    def controller(self, group: str):
        """The controller of a group (`GroupController`, or the `TorsoLoop` for the torso with speed control)."""
        if group == "torso" and self.torso is not None:
            return self.torso
        return self.tracked[group]

    def joint_target(self, group: str, position: Sequence[float], velocity: Sequence[float] = ()) -> None:
        """A joint target for a group, as /motion_target/target_joint_state_* gives it."""
        if group == "torso" and self.torso is not None:
            self.torso.controller.set_target(position, velocity or None)
        else:
            self.tracked[group].target([], list(position), list(velocity))

    def drive(self, twist: Sequence[float]) -> None:
        """The chassis target (vx, vy, wz), as /motion_target/target_speed_chassis gives it (keep sending it)."""
        vx, vy, wz = twist
        self.chassis.set_target((vx, vy, wz), self.now)

    def push(self, link: str, force: Sequence[float], duration: float) -> None:
        """A force [N] in the world's axes at a link's centre of mass (MuJoCo's xfrc_applied) for `duration` [s] of
        simulated time."""
        world = self.robot.world
        body = world.model.body(link).id
        self._push = (body, np.array(list(force) + [0.0, 0.0, 0.0]), self.now + duration)

    def run(self, seconds: float, each: Optional[Callable[["PostureRig"], None]] = None) -> None:
        """Advance `seconds` of simulated time; `each` is called once per physics step (to stream targets)."""
        end = self.now + seconds
        while self.now < end - 1e-9:
            if each is not None:
                each(self)
            self._step()

    def positions(self) -> Dict[str, float]:
        return self.robot.joint_positions()

    # -- the loop -------------------------------------------------------------------------------
    def _step(self) -> None:
        for name, group in self.groups.items():
            if self.now >= self.next_cycle[name] - 1e-9:
                self.next_cycle[name] += self.period[name]
                self._cycle(name, group)
        self._apply_push()
        self.robot.step(self.dt)
        self.now = self.robot.time
        worst = self.max_motor_ratio
        for joint, motor, effort in self._motors:
            r = abs(motor.last_torque) / effort
            if r > worst.get(joint, 0.0):
                worst[joint] = r
        if self.now >= self._next_sample - 1e-9:
            self._next_sample += self.sample_period
            self.samples.append(Sample(self.now, self.positions(), self.robot.base_twist(), dict(self._last_t_ff)))

    def _apply_push(self) -> None:
        if self._push is None:
            return
        body, wrench, until = self._push
        data = self.robot.world.data
        if self.now < until:
            data.xfrc_applied[body] = wrench
        else:
            data.xfrc_applied[body] = 0.0
            self._push = None

    def _cycle(self, name: str, group: MotorGroup) -> None:
        """One bus cycle: the command due goes out, the replies come back, the controller ticks on them."""
        pending = self._pending[name]
        while pending and pending[0][0] <= self.now + 1e-9:
            _, cmd = pending.popleft()
            group.set_command(cmd.p_des, cmd.v_des, cmd.kp, cmd.kd, cmd.t_ff, self.now)
        bus = group.spec.bus
        for arbitration_id, data in group.frames(self.now):
            for reply_id, reply in self.robot.handle(bus, arbitration_id, data):
                group.on_frame(reply_id, reply, self.now)
        powered = [not (c & UNPOWERED) for c in group.conditions(self.now)]
        if isinstance(group, ChassisGroup):
            self._chassis_tick(group)
            return
        position, velocity, _ = group.snapshot()
        if np.isfinite(position).all():
            self._feedback[name].append((self.now + self.feedback_delay - 1e-9, self.now, position, velocity,
                                         powered))
        while self._feedback[name] and self._feedback[name][0][0] <= self.now:
            _, stamp, position, velocity, powered = self._feedback[name].popleft()
            self._tick(name, group, stamp, position, velocity, powered)

    def _tick(self, name: str, group: MotorGroup, stamp: float, position: np.ndarray, velocity: np.ndarray,
              powered: List[bool]) -> None:
        """A group's controller on a feedback of time `stamp`, now; its command queued for the driver."""
        motion = self.base_input.at(self.now)
        for body in self._bodies():                   # every node hears every group's feedback and the base
            body.set(name, position)
            body.set_base(motion)
        ctrl = self.controller(name) if (name != "torso" or self.torso is not None or "torso" in self.tracked) \
            else None
        if ctrl is None:
            return
        ctrl.motors(powered[:group.n_joints])
        cmd = ctrl.update(Feedback(position.tolist(), velocity.tolist(), stamp), self.now)
        ctrl.events.clear()
        if cmd is None:
            return
        joints = [m.joint for m in group.motors[:group.n_joints]]
        effort = group.limits.effort
        for j, t, e in zip(joints, cmd.t_ff, effort):
            self._last_t_ff[j] = t
            self.max_torque_ratio[j] = max(self.max_torque_ratio.get(j, 0.0), abs(t) / e)
        self._pending[name].append((self.now + self.command_delay + 1e-9, cmd))

    def _bodies(self) -> List[UpperBody]:
        return [self.body] if self.torso is None else [self.body, self.torso.body]

    def _chassis_tick(self, group: ChassisGroup) -> None:
        angles, speeds, _ = group.snapshot()
        if not np.isfinite(angles).all():
            return
        if self.posture is not None and self.now >= self._posture_due:    # the node's pace: 20 Hz
            self._posture_due = self.now + 0.05
            for name in ("torso", "left_arm", "right_arm"):
                position = self.groups[name].snapshot()[0]
                if np.isfinite(position).all():
                    self.posture.set_posture(name, position[:self.groups[name].n_joints])
            self.posture.update()
        cmd = self.chassis.step(self.now, angles)
        acceleration, twist = self.chassis.acceleration, self.chassis.kin.forward(angles, speeds)
        try:                                                                    # as the nodes do
            self.base_input.set_acceleration(acceleration, self.now)
        except InputError:
            self.events.append(f"base acceleration dropped: {acceleration}")
        try:
            self.base_input.set_twist(twist, self.now)
        except InputError:
            self.events.append(f"base twist dropped: {twist}")
        group.set_command(cmd.angles.tolist(), cmd.speeds.tolist(), [0.0] * 3, [0.0] * 3, [0.0] * 3, self.now)


def deviation(samples: Sequence[Sample], joints: Sequence[str], reference: Dict[str, float]) -> float:
    """The largest |q − reference| over the samples and joints [rad]."""
    return max((abs(s.q[j] - reference[j]) for s in samples for j in joints), default=0.0)


def settle_time(samples: Sequence[Sample], joints: Sequence[str], reference: Dict[str, float], after: float,
                tolerance: float) -> float:
    """How long after `after` [s] every joint is back within `tolerance` of the reference for good (inf: never
    within the samples)."""
    last_out = after
    for s in samples:
        if s.t >= after and any(abs(s.q[j] - reference[j]) > tolerance for j in joints):
            last_out = s.t
    return last_out - after if samples and last_out < samples[-1].t else math.inf
