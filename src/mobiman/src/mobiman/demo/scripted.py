"""The scripted demo of the whole stack (`scripts/run demo`, `rosrun mobiman r1_demo`).

Drives a square with the chassis (behind and right of the start: the room's table is ahead), lowers the
torso and lifts it by torso speed control, reaches with both arms through the arm pose controllers, opens
and closes both grippers, then (in simulation, or on the robot with `--pick`) picks the room's green can with
the right arm, lifts it 10 cm and places it 15 cm to the right (`pick_and_place`), and measures each outcome
on the robot's own feedback (and, in simulation, on the simulator's ground truth). It talks only to
the guide's topics, as a user's program would, so it runs unchanged on the robot (where it moves the
robot: clear the space first). The system rostest asserts the outcomes it returns.

Every wait is a condition on the stack's clock (simulated time when /use_sim_time is set) bounded by a
generous wall-clock timeout: on a loaded machine simulated time may run at a fifth of real time.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import rospy
from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import Odometry
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import JointState
from std_msgs.msg import Float32

from r1_sim.msg import ObjectStates  # /sim/objects: the objects' ground truth (simulation only)

TORSO_CROUCH = [1.0, -2.0, -1.0, 0.0]       # torso_link3 0.32 m below full height, pitch 0 (vendor-like posture)
LEFT_REACH = (0.373, 0.637, 0.303, 0.0, 0.0, -0.028, 1.0)   # the guide's left-arm example (x y z qx qy qz qw)
RIGHT_REACH = (0.373, -0.637, 0.303, 0.0, 0.0, 0.028, 1.0)  # its mirror image for the right arm
# Pick and place (right arm, side grasp of the room's green can, r1_sim/worlds/room.xml): the torso leans
# forward (torso_link4 at x 0.146, z 0.678 in base_link, pitch 0; torso_joint1's gravity load 81 N·m of its
# 100), the gripper points forward pitched 15 deg down; the wrist centre then stays >= 8 cm inside the arm's
# reach (0.632 m) from the approach to the place, and the palm 3.5 cm above the table.
PICK_TORSO = [1.4, -2.2, -0.8, 0.0]
PICK_OBJECT = "green_can"
PICK_NOMINAL = (0.86, -0.20, 0.80)    # [m] the object where the demo started (world = start frame) when no ground truth
PICK_PITCH = math.radians(15.0)       # gripper x (the approach) pitched down
PICK_DEPTH = 0.045                    # [m] gripper_link behind the object's axis along the approach
APPROACH = 0.10                       # [m] pre-grasp and retreat distance along the approach
PLACE_OFFSET = (0.0, -0.15)           # [m] in the robot's frame, from where the object was
BASE_LINK_HEIGHT = 0.0415             # [m] base_link above the floor (URDF: base_footprint -> base_link)


@dataclass
class Outcome:
    """One measured result of the demo against what was asked."""

    step: str
    quantity: str
    measured: float
    expected: float
    tolerance: float
    unit: str

    @property
    def ok(self) -> bool:
        return math.isfinite(self.measured) and abs(self.measured - self.expected) <= self.tolerance


@dataclass
class DemoConfig:
    square_side: float = 1.0          # [m]
    drive_speed: float = 0.4          # [m/s]
    corner_tolerance: float = 0.03    # [m] on the robot's odometry, where the closed loop stops
    lift_speed: float = 0.1           # [m/s] torso_link3 up
    lift_time: float = 1.5            # [s] of the stack's clock
    arm_tolerance: float = 0.005      # [m]
    gripper_open: float = 80.0        # [mm]
    gripper_closed: float = 10.0      # [mm]
    lift_height: float = 0.10         # [m] pick and place: the object lifted this high
    lift_tolerance: float = 0.02      # [m]
    place_tolerance: float = 0.03     # [m] the object's xy against the place target
    hand_speed: float = 0.10          # [m/s] of the streamed pick-and-place targets
    pick: bool | None = None          # the pick and place after the other steps; None: in simulation only
                                      # (/sim/objects published), the can being the room's
    wall_timeout: float = 600.0       # [s] per step
    skip: Sequence[str] = field(default_factory=tuple)


class _Latest:
    def __init__(self, topic: str, cls: type):
        self.msg: Any = None
        self._lock = threading.Lock()
        self.sub = rospy.Subscriber(topic, cls, self._cb, queue_size=1)

    def _cb(self, msg: Any) -> None:
        with self._lock:
            self.msg = msg

    def get(self) -> Any:
        with self._lock:
            return self.msg


def _planar(m: Odometry) -> np.ndarray:
    q = m.pose.pose.orientation
    yaw = math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))
    return np.array([m.pose.pose.position.x, m.pose.pose.position.y, yaw])


def _in_frame(origin: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """`pose` (x, y, yaw) in the frame of `origin`."""
    c, s = math.cos(origin[2]), math.sin(origin[2])
    d = pose[:2] - origin[:2]
    dyaw = math.atan2(math.sin(pose[2] - origin[2]), math.cos(pose[2] - origin[2]))
    return np.array([c * d[0] + s * d[1], -s * d[0] + c * d[1], dyaw])


def _pose_error(msg: PoseStamped, target: Sequence[float]) -> tuple[float, float]:
    p, o = msg.pose.position, msg.pose.orientation
    dp = float(np.linalg.norm(np.array([p.x, p.y, p.z]) - np.asarray(target[:3])))
    r = Rotation.from_quat([o.x, o.y, o.z, o.w]).inv() * Rotation.from_quat(target[3:])
    return dp, float(np.linalg.norm(r.as_rotvec()))


class Demo:
    """The demo's steps; each returns its outcomes. Needs the full stack
    (`roslaunch startup_config r1_stack.launch`)."""

    def __init__(self, cfg: DemoConfig = DemoConfig(), log: Callable[[str], None] = print):
        self.cfg, self.log = cfg, log
        self.cmd_chassis = rospy.Publisher("/motion_target/target_speed_chassis", Twist, queue_size=5)
        self.cmd_torso_speed = rospy.Publisher("/motion_target/target_speed_torso", Twist, queue_size=5)
        self.cmd_torso = rospy.Publisher("/motion_target/target_joint_state_torso", JointState, queue_size=1)
        self.cmd_pose = {s: rospy.Publisher(f"/motion_target/target_pose_arm_{s}", PoseStamped, queue_size=1)
                         for s in ("left", "right")}
        self.cmd_gripper = {s: rospy.Publisher(f"/motion_control/position_control_gripper_{s}", Float32,
                                               queue_size=1) for s in ("left", "right")}
        self.odom = _Latest("/odom", Odometry)
        self.truth = _Latest("/sim/odom", Odometry)          # simulation only
        self.torso_fb = _Latest("/hdas/feedback_torso", JointState)
        self.base_pose = _Latest("/motion_control/pose_floating_base", PoseStamped)
        self.ee = {s: _Latest(f"/motion_control/pose_ee_arm_{s}", PoseStamped) for s in ("left", "right")}
        self.gripper = {s: _Latest(f"/hdas/feedback_gripper_{s}", JointState) for s in ("left", "right")}
        self.objects = _Latest("/sim/objects", ObjectStates)     # simulation only

    # -- waiting on the stack's clock ---------------------------------------------------------------
    def _until(self, done: Callable[[], bool], what: str, every: Callable[[], None] | None = None,
               rate_hz: float = 20.0, detail: Callable[[], str] | None = None) -> None:
        """Call `every` at `rate_hz` of the stack's clock until `done()`. Raises TimeoutError after the
        config's wall_timeout, saying how much of the stack's clock passed meanwhile and `detail()`
        (the state a failure needs explained)."""
        deadline = time.monotonic() + self.cfg.wall_timeout
        stack_start = rospy.get_time()
        period = 1.0 / rate_hz
        while not done():
            if rospy.is_shutdown():
                raise RuntimeError("ROS shut down")
            if time.monotonic() > deadline:
                why = f"; {detail()}" if detail is not None else ""
                raise TimeoutError(f"{what}: not within {self.cfg.wall_timeout:g} s of wall time "
                                   f"({rospy.get_time() - stack_start:.1f} s of the stack's clock){why}")
            if every is not None:
                every()
            t = rospy.get_time()
            while rospy.get_time() - t < period and time.monotonic() < deadline and not rospy.is_shutdown():
                time.sleep(0.002)

    def _for(self, seconds: float, every: Callable[[], None], rate_hz: float = 50.0) -> None:
        start = rospy.get_time()
        self._until(lambda: rospy.get_time() - start >= seconds, f"{seconds} s of the stack's clock", every, rate_hz)

    def wait_ready(self) -> None:
        """Every stream the demo reads is live."""
        streams = {"/odom": self.odom, "/hdas/feedback_torso": self.torso_fb,
                   "/motion_control/pose_floating_base": self.base_pose,
                   **{f"/motion_control/pose_ee_arm_{s}": self.ee[s] for s in self.ee},
                   **{f"/hdas/feedback_gripper_{s}": self.gripper[s] for s in self.gripper}}
        for name, latest in streams.items():
            self._until(lambda latest=latest: latest.get() is not None, f"waiting for {name}")
        time.sleep(1.0)   # our publishers connected

    # -- steps --------------------------------------------------------------------------------------
    def drive_square(self) -> list[Outcome]:
        """A square of `square_side` on the robot's odometry (heading held), closed loop on /odom."""
        side, v = self.cfg.square_side, self.cfg.drive_speed
        start_odom = _planar(self.odom.get())
        truth0 = self.truth.get()
        start_truth = _planar(truth0) if truth0 is not None else None
        # behind and to the right of the start: the room's table stands 0.8 m ahead (r1_sim/worlds/room.xml),
        # and the arms and torso touch it (a square ahead ran them into it at 0.75 m)
        corners = [(-side, 0.0), (-side, -side), (0.0, -side), (0.0, 0.0)]
        truth_errors, odom_errors = [], []
        for cx, cy in corners:
            self.log(f"  chassis: to ({cx:.1f}, {cy:.1f}) m")

            def error(cx: float = cx, cy: float = cy) -> np.ndarray:
                here = _in_frame(start_odom, _planar(self.odom.get()))
                return np.array([cx - here[0], cy - here[1], -here[2]]), here[2]

            def steer() -> None:
                (ex, ey, eyaw), yaw = error()
                world = np.array([ex, ey]) * 1.5                      # P gain 1.5 1/s, capped at v
                n = np.linalg.norm(world)
                if n > v:
                    world *= v / n
                c, s = math.cos(yaw), math.sin(yaw)                  # into the body frame
                t = Twist()
                t.linear.x, t.linear.y = c * world[0] + s * world[1], -s * world[0] + c * world[1]
                t.angular.z = float(np.clip(2.0 * eyaw, -0.5, 0.5))
                self.cmd_chassis.publish(t)

            self._until(lambda: np.hypot(*error()[0][:2]) < self.cfg.corner_tolerance, f"corner ({cx}, {cy})",
                        steer)
            self._stop_chassis()
            here = _in_frame(start_odom, _planar(self.odom.get()))
            odom_errors.append(float(np.hypot(cx - here[0], cy - here[1])))
            if start_truth is not None:
                t_here = _in_frame(start_truth, _planar(self.truth.get()))
                truth_errors.append(float(np.hypot(cx - t_here[0], cy - t_here[1])))
        path = 4.0 * side
        out = [Outcome("drive square", "worst corner on odometry", max(odom_errors), 0.0,
                       self.cfg.corner_tolerance + 0.02, "m")]
        if truth_errors:
            out.append(Outcome("drive square", "worst corner on ground truth", max(truth_errors), 0.0,
                               0.02 * path + self.cfg.corner_tolerance, "m"))
            out.append(Outcome("drive square", "closing error on ground truth", truth_errors[-1], 0.0,
                               0.02 * path + self.cfg.corner_tolerance, "m"))
        return out

    def _stop_chassis(self) -> None:
        def still() -> bool:
            tw = self.odom.get().twist.twist
            return math.hypot(tw.linear.x, tw.linear.y) < 0.01 and abs(tw.angular.z) < 0.02
        self._until(still, "chassis stop", lambda: self.cmd_chassis.publish(Twist()))

    def lift_torso(self) -> list[Outcome]:
        """Crouch by a joint target, then lift torso_link3 at `lift_speed` for `lift_time` (torso speed control)."""
        self.log(f"  torso: crouch to {TORSO_CROUCH}")
        self.cmd_torso.publish(JointState(position=TORSO_CROUCH, velocity=[0.6] * 4))
        self._until(lambda: np.max(np.abs(np.asarray(self.torso_fb.get().position[:4]) - TORSO_CROUCH)) < 0.02,
                    "torso crouch", detail=lambda: self._torso_report(TORSO_CROUCH))
        self._settle_torso()
        z0, pitch0 = self._torso_height_pitch()
        self.log(f"  torso: lift at {self.cfg.lift_speed} m/s for {self.cfg.lift_time} s")
        lift = Twist()
        lift.linear.z = self.cfg.lift_speed
        self._for(self.cfg.lift_time, lambda: self.cmd_torso_speed.publish(lift))
        self._for(0.5, lambda: self.cmd_torso_speed.publish(Twist()))  # ramp down, then the stream stops
        self._settle_torso()
        z1, pitch1 = self._torso_height_pitch()
        expected = self.cfg.lift_speed * self.cfg.lift_time
        return [Outcome("lift torso", "torso height gained", z1 - z0, expected, 0.1 * expected + 0.005, "m"),
                Outcome("lift torso", "pitch change", pitch1 - pitch0, 0.0, 0.01, "rad")]

    def _torso_height_pitch(self) -> tuple[float, float]:
        m = self.base_pose.get()
        o = m.pose.orientation
        pitch = Rotation.from_quat([o.x, o.y, o.z, o.w]).as_euler("ZYX")[1]
        return m.pose.position.z, float(pitch)

    def _settle_torso(self) -> None:
        state = {"z": None, "t": None}

        def settled() -> bool:
            z = self.base_pose.get().pose.position.z
            now = rospy.get_time()
            if state["z"] is None or abs(z - state["z"]) > 0.001:
                state["z"], state["t"] = z, now
                return False
            return now - state["t"] > 0.5
        self._until(settled, "torso settling")

    def reach(self) -> list[Outcome]:
        """Both grippers to poses in torso_link4, streamed at 10 Hz until the measured poses arrive."""
        targets = {"left": LEFT_REACH, "right": RIGHT_REACH}
        self.log("  arms: reach " + ", ".join(f"{s} {t[:3]}" for s, t in targets.items()))

        def stream() -> None:
            for side, t in targets.items():
                m = PoseStamped()
                m.header.stamp = rospy.Time.now()
                m.header.frame_id = "torso_link4"
                (m.pose.position.x, m.pose.position.y, m.pose.position.z,
                 m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z, m.pose.orientation.w) = t
                self.cmd_pose[side].publish(m)

        def arrived() -> bool:
            return all(_pose_error(self.ee[s].get(), targets[s])[0] < 0.5 * self.cfg.arm_tolerance for s in targets)

        try:
            self._until(arrived, "arms reaching", stream, rate_hz=10.0)
        except TimeoutError:
            pass                      # judged below, on what was reached
        self._for(1.0, stream, rate_hz=10.0)
        out = []
        for side, t in targets.items():
            dp, dr = _pose_error(self.ee[side].get(), t)
            out.append(Outcome("reach", f"{side} gripper position error", dp, 0.0, self.cfg.arm_tolerance, "m"))
            out.append(Outcome("reach", f"{side} gripper orientation error", dr, 0.0, 0.02, "rad"))
        return out

    def grippers(self) -> list[Outcome]:
        """Open both grippers, then close them, by stroke targets in mm."""
        out = []
        for label, stroke in (("open", self.cfg.gripper_open), ("close", self.cfg.gripper_closed)):
            self.log(f"  grippers: {label} to {stroke:.0f} mm")

            def send(stroke=stroke) -> None:
                for pub in self.cmd_gripper.values():
                    pub.publish(Float32(stroke))

            def there(stroke=stroke) -> bool:
                return all(abs(g.get().position[0] - stroke) < 2.0 for g in self.gripper.values())
            try:
                self._until(there, f"grippers {label}", send, rate_hz=10.0)
            except TimeoutError:
                pass
            self._for(0.5, send, rate_hz=10.0)
            for side, g in self.gripper.items():
                out.append(Outcome(f"gripper {label}", f"{side} stroke", float(g.get().position[0]), stroke, 3.0,
                                   "mm"))
        return out

    # -- pick and place ------------------------------------------------------------------------------
    def _object_world(self) -> np.ndarray | None:
        """The pick object's position in sim_world from /sim/objects (None on the robot)."""
        msg = self.objects.get()
        if msg is None or PICK_OBJECT not in msg.name:
            return None
        p = msg.pose[msg.name.index(PICK_OBJECT)].position
        return np.array([p.x, p.y, p.z])

    def _base_world(self) -> np.ndarray:
        """(x, y, yaw) of base_link in the world: ground truth in simulation, else odometry (the
        demo's start frame, where PICK_NOMINAL is given)."""
        truth = self.truth.get()
        return _planar(truth if truth is not None else self.odom.get())

    def _torso_report(self, target: Sequence[float]) -> str:
        """Where the torso is against `target`, what its motors push and where the base stands: what a
        torso move that never arrives needs explained."""
        fb = self.torso_fb.get()
        q = np.asarray(fb.position[:4])
        effort = np.asarray(fb.effort[:4]) if len(fb.effort) >= 4 else np.full(4, math.nan)
        base = self._base_world()
        source = "ground truth" if self.truth.get() is not None else "odometry"
        return (f"torso at {np.round(q, 3).tolist()} ({np.round(q - np.asarray(target), 3).tolist()} off the "
                f"target), efforts {np.round(effort, 1).tolist()} N·m; base at x {base[0]:.3f} m, "
                f"y {base[1]:.3f} m, yaw {math.degrees(base[2]):.1f} deg ({source})")

    @staticmethod
    def _in_base(p_world: np.ndarray, base: np.ndarray) -> np.ndarray:
        """A world point in base_link, the base at `base` (x, y, yaw)."""
        c, s = math.cos(base[2]), math.sin(base[2])
        d = p_world[:2] - base[:2]
        return np.array([c * d[0] + s * d[1], -s * d[0] + c * d[1], p_world[2] - BASE_LINK_HEIGHT])

    def _torso4(self) -> tuple[Rotation, np.ndarray]:
        """torso_link4 in base_link now (/motion_control/pose_floating_base: the measured torso joints)."""
        m = self.base_pose.get().pose
        o, t = m.orientation, m.position
        return Rotation.from_quat([o.x, o.y, o.z, o.w]), np.array([t.x, t.y, t.z])

    def _stream_line(self, side: str, start: np.ndarray, end: np.ndarray, quat: Sequence[float],
                     tolerance: float = 0.01, holding: bool = False, offset: np.ndarray | None = None,
                     reaim: int = 0, speed: float | None = None) -> np.ndarray:
        """Stream gripper poses along the line start -> end, given in base_link (`quat`: the gripper's
        orientation there), at `speed` (default `hand_speed`; 10 Hz, the stack's clock), each sent in
        torso_link4 through the torso's pose at the time: the torso's joints give a little under the
        arm's load (6 mm at torso_link4 with the can), which targets fixed in torso_link4 would follow
        down. Then hold the end until the measured gripper has settled (moved less than 1 mm in 0.3 s)
        within `tolerance` of the end. `holding` an object, settled anywhere (for 0.5 s) will do: the
        object's weight bends the arm's joint servos, whose gravity feed-forward knows only the arm
        (~9 mm down with the can), so the gripper may never come within `tolerance`, and waiting for
        it lets the object creep out of the fingers (MuJoCo's soft contacts: 0.33 mm/s with the can;
        on the stack it fell out after 110 s of waiting). `reaim`: that many times, a gripper settled
        beyond `tolerance` is aimed past the end by its error. `offset`: aim at end + offset from the
        start (a re-aim kept from the move before). Returns the offset of the last target streamed
        from `end`."""
        aim = np.asarray(end, dtype=float) + (np.zeros(3) if offset is None else offset)
        speed = speed or self.cfg.hand_speed
        self._stream_to(side, start, aim, quat, tolerance, end, holding, speed)
        for _ in range(reaim):
            error = np.asarray(end) - self._ee_in_base(side)
            if float(np.linalg.norm(error)) < tolerance:
                break
            self._stream_to(side, aim, aim + error, quat, tolerance, end, holding, speed)
            aim = aim + error
        self._for(0.3, lambda: self._send_pose(side, aim, quat), rate_hz=10.0)
        return aim - np.asarray(end)

    def _send_pose(self, side: str, p: np.ndarray, quat: Sequence[float]) -> None:
        """A gripper pose given in base_link, sent in torso_link4 (the arm targets' frame)."""
        r4, t4 = self._torso4()
        m = PoseStamped()
        m.header.stamp = rospy.Time.now()
        m.header.frame_id = "torso_link4"
        m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in r4.inv().apply(p - t4))
        (m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z,
         m.pose.orientation.w) = (float(v) for v in (r4.inv() * Rotation.from_quat(quat)).as_quat())
        self.cmd_pose[side].publish(m)

    def _stream_to(self, side: str, start: np.ndarray, aim: np.ndarray, quat: Sequence[float], tolerance: float,
                   end: np.ndarray, holding: bool, speed: float) -> None:
        """`_stream_line`'s one stream: targets start -> aim, until the gripper settles."""
        t0 = rospy.get_time()
        duration = max(float(np.linalg.norm(aim - start)) / speed, 0.1)
        track: dict[str, Any] = {"p": None, "t": None}

        def send() -> None:
            s = min(1.0, (rospy.get_time() - t0) / duration)
            self._send_pose(side, start + (0.5 - 0.5 * math.cos(math.pi * s)) * (aim - start), quat)

        def there() -> bool:
            now, p = rospy.get_time(), self._ee_in_base(side)
            if now - t0 < duration:
                return False
            if track["p"] is None or float(np.linalg.norm(p - track["p"])) > 0.001:
                track["p"], track["t"] = p, now
                return False
            if float(np.linalg.norm(p - end)) < tolerance:
                return now - track["t"] > 0.3
            return holding and now - track["t"] > 0.5
        try:
            self._until(there, f"{side} gripper to {np.round(aim, 3).tolist()}", send, rate_hz=10.0)
        except TimeoutError:
            pass                  # judged by the outcomes
        error = float(np.linalg.norm(self._ee_in_base(side) - end))
        if error >= tolerance:
            self.log(f"  {side} gripper stopped {error * 1000:.1f} mm from {np.round(end, 3).tolist()}")

    def _gripper_to(self, side: str, stroke: float, settle: float = 0.8) -> None:
        """A stroke target, streamed until the stroke stops changing (closed on an object: where it
        holds), then `settle` s more."""
        state = {"p": None, "t": None}

        def send() -> None:
            self.cmd_gripper[side].publish(Float32(stroke))

        def still() -> bool:
            p, now = float(self.gripper[side].get().position[0]), rospy.get_time()
            if state["p"] is None or abs(p - state["p"]) > 0.3:
                state["p"], state["t"] = p, now
                return False
            return now - state["t"] > 0.3
        try:
            self._until(still, f"{side} gripper to {stroke:.0f} mm", send, rate_hz=10.0)
        except TimeoutError:
            pass
        self._for(settle, send, rate_hz=10.0)

    def pick_and_place(self) -> list[Outcome]:
        """Right arm: lean the torso forward, open, approach the can, close, lift, move, place, open,
        retreat; the object's ground truth (/sim/objects, simulation only) judges the lift and the place."""
        side = "right"
        self.log(f"  torso: lean to {PICK_TORSO}")
        self.cmd_torso.publish(JointState(position=PICK_TORSO, velocity=[0.6] * 4))
        self._until(lambda: np.max(np.abs(np.asarray(self.torso_fb.get().position[:4]) - PICK_TORSO)) < 0.02,
                    "torso lean", detail=lambda: self._torso_report(PICK_TORSO))
        self._settle_torso()
        base = self._base_world()
        obj0 = self._object_world()
        truth = obj0 is not None
        obj = obj0 if truth else np.asarray(PICK_NOMINAL)
        c, s = math.cos(base[2]), math.sin(base[2])
        place_world = obj + np.array([c * PLACE_OFFSET[0] - s * PLACE_OFFSET[1],
                                      s * PLACE_OFFSET[0] + c * PLACE_OFFSET[1], 0.0])
        self.log(f"  {PICK_OBJECT} at {np.round(obj, 3).tolist()} ({'ground truth' if truth else 'nominal'}), "
                 f"place at {np.round(place_world[:2], 3).tolist()}")
        # in base_link: the gripper's x (the approach) pitched down, the lift straight up
        hand = Rotation.from_euler("y", PICK_PITCH)
        quat = tuple(float(v) for v in hand.as_quat())
        approach = hand.apply([1.0, 0.0, 0.0])
        up = np.array([0.0, 0.0, 1.0])
        grasp = self._in_base(obj, base) - PICK_DEPTH * approach
        place = self._in_base(place_world, base) - PICK_DEPTH * approach + 0.005 * up
        lift = self.cfg.lift_height * up
        here = self._ee_in_base(side)
        self.log("  gripper: open")
        self._gripper_to(side, 100.0, settle=0.3)
        self.log("  arm: approach, descend")
        self._stream_line(side, here, grasp - APPROACH * approach + 0.05 * up, quat, 0.02)
        self._stream_line(side, grasp - APPROACH * approach + 0.05 * up, grasp - APPROACH * approach, quat)
        self._stream_line(side, grasp - APPROACH * approach, grasp, quat, 0.005,
                          speed=0.5 * self.cfg.hand_speed)          # slower: no swerve into the can
        self.log("  gripper: close")
        self._gripper_to(side, 0.0)
        self.log(f"  arm: lift {self.cfg.lift_height:.2f} m")
        sag = self._stream_line(side, grasp, grasp + lift, quat, 0.005, holding=True, reaim=2)
        self.log(f"  arm: lifted, re-aimed by {np.round(sag * 1000, 1).tolist()} mm")
        self._for(1.0, lambda: self._send_pose(side, grasp + lift + sag, quat), rate_hz=10.0)
        lifted = self._object_world()
        self.log("  arm: move, place")
        sag = self._stream_line(side, grasp + lift + sag, place + lift, quat, 0.01, holding=True, offset=sag,
                                reaim=1)
        self._stream_line(side, place + lift + sag, place, quat, 0.005, holding=True, offset=sag)
        self.log("  gripper: open")
        self._gripper_to(side, 100.0, settle=0.3)
        self.log("  arm: retreat")
        self._stream_line(side, place, place - APPROACH * approach, quat, 0.02)
        self._stream_line(side, place - APPROACH * approach, place - APPROACH * approach + 0.10 * up, quat, 0.02)
        self._for(0.5, lambda: None)
        placed = self._object_world()
        if not truth or lifted is None or placed is None:
            self.log("  no ground truth of the object (not in simulation): no outcome")
            return []
        return [Outcome("pick and place", "object lifted", float(lifted[2] - obj0[2]), self.cfg.lift_height,
                        self.cfg.lift_tolerance, "m"),
                Outcome("pick and place", "object placed (xy off the target)",
                        float(np.linalg.norm(placed[:2] - place_world[:2])), 0.0, self.cfg.place_tolerance, "m")]

    def _ee_in_base(self, side: str) -> np.ndarray:
        """The measured gripper's position (/motion_control/pose_ee_arm_*, torso_link4) in base_link."""
        p = self.ee[side].get().pose.position
        r4, t4 = self._torso4()
        return r4.apply([p.x, p.y, p.z]) + t4

    def run(self) -> list[Outcome]:
        self.wait_ready()
        steps = [("drive", self.drive_square), ("torso", self.lift_torso), ("arms", self.reach),
                 ("grippers", self.grippers)]
        pick = self.cfg.pick
        if pick is None:              # by default only where there is a can to pick: the simulated room
            pick = any(t == "/sim/objects" for t, _ in rospy.get_published_topics())
        if pick:
            steps.append(("pick", self.pick_and_place))
        outcomes: list[Outcome] = []
        for name, step in steps:
            if name in self.cfg.skip:
                continue
            self.log(f"{name}:")
            t0, s0 = time.monotonic(), rospy.get_time()
            outcomes += step()
            self.log(f"  done in {rospy.get_time() - s0:.1f} s of the stack's clock "
                     f"({time.monotonic() - t0:.1f} s wall)")
        return outcomes


def table(outcomes: Sequence[Outcome]) -> str:
    rows = [("step", "quantity", "measured", "expected", "tolerance", "ok")]
    for o in outcomes:
        rows.append((o.step, o.quantity, f"{o.measured:.4f} {o.unit}", f"{o.expected:.4f} {o.unit}",
                     f"±{o.tolerance:.4f}", "yes" if o.ok else "NO"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the outcomes to this file")
    ap.add_argument("--skip", nargs="*", default=[], choices=["drive", "torso", "arms", "grippers", "pick"])
    ap.add_argument("--square-side", type=float, default=DemoConfig.square_side)
    ap.add_argument("--pick", action="store_true", help="pick and place even without the simulator (on the "
                    "robot: a can at the room's place relative to the start; no outcome). In simulation the "
                    "pick runs by default (judged on /sim/objects); --skip pick leaves it out")
    args = ap.parse_args(rospy.myargv(argv if argv is not None else sys.argv)[1:])
    rospy.init_node("r1_demo", anonymous=True)
    demo = Demo(DemoConfig(square_side=args.square_side, skip=tuple(args.skip), pick=True if args.pick else None))
    outcomes = demo.run()
    print(table(outcomes))
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{**asdict(o), "ok": o.ok} for o in outcomes], f, indent=1)
    ok = all(o.ok for o in outcomes)
    print("demo: " + ("every outcome within tolerance" if ok else "SOME OUTCOMES OUT OF TOLERANCE"))
    return 0 if ok else 1
