"""The scripted demo of the whole stack (`scripts/run demo`, `rosrun mobiman r1_demo`).

Drives a square with the chassis at 0.5 and at 1 m/s, the torso standing straight (behind and right of the
start: the room's table is ahead), lowers the torso and lifts it by torso speed control, reaches with both
arms through the arm pose controllers, opens and closes both grippers, then (in simulation, or on the robot
with `--pick`) picks the room's green can with the right arm, lifts it 10 cm and places it 15 cm to the right
(`mobiman.demo.pick`), and measures each outcome on the robot's own feedback (and, in simulation, on the
simulator's ground truth). It talks only to the guide's topics, as a user's program would, so it runs
unchanged on the robot (where it moves the robot: clear the space first). The system rostest asserts the
outcomes it returns.

Every wait is a condition on the stack's clock (simulated time when /use_sim_time is set) bounded by a
generous wall-clock timeout: on a loaded machine simulated time may run at a fifth of real time.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

import numpy as np
import rospy
from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import Odometry
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import JointState
from std_msgs.msg import Float32

from mobiman.demo.common import Latest, Outcome, in_frame, planar, pose_error, table
from mobiman.demo.pick import PickAndPlace
from r1_sim.msg import ObjectStates  # /sim/objects: the objects' ground truth (simulation only)

TORSO_CROUCH = [1.0, -2.0, -1.0, 0.0]       # torso_link3 0.32 m below full height, pitch 0 (vendor-like posture)
LEFT_REACH = (0.373, 0.637, 0.303, 0.0, 0.0, -0.028, 1.0)   # the guide's left-arm example (x y z qx qy qz qw)
RIGHT_REACH = (0.373, -0.637, 0.303, 0.0, 0.0, 0.028, 1.0)  # its mirror image for the right arm


@dataclass
class DemoConfig:
    square_side: float = 1.0          # [m]
    drive_speeds: Sequence[float] = (0.5, 1.0)   # [m/s] the square is driven once at each, the torso straight
    torso_tolerance: float = 0.05     # [rad] each torso joint held within this of where it stood while driving
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


class Demo(PickAndPlace):
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
        self.odom = Latest("/odom", Odometry)
        self.truth = Latest("/sim/odom", Odometry)          # simulation only
        self.torso_fb = Latest("/hdas/feedback_torso", JointState)
        self.base_pose = Latest("/motion_control/pose_floating_base", PoseStamped)
        self.ee = {s: Latest(f"/motion_control/pose_ee_arm_{s}", PoseStamped) for s in ("left", "right")}
        self.gripper = {s: Latest(f"/hdas/feedback_gripper_{s}", JointState) for s in ("left", "right")}
        self.objects = Latest("/sim/objects", ObjectStates)     # simulation only

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
        """The square of `square_side` at each of `drive_speeds` (the chassis accelerating and braking at its
        limits), the torso standing straight: the corners reached and the torso held."""
        self.log("  torso: straight")
        self.cmd_torso.publish(JointState(position=[0.0] * 4, velocity=[0.6] * 4))
        self._until(lambda: np.max(np.abs(np.asarray(self.torso_fb.get().position[:4]))) < 0.02,
                    "torso straight", detail=lambda: self._torso_report([0.0] * 4))
        self._settle_torso()
        out: list[Outcome] = []
        for v in self.cfg.drive_speeds:
            out += self._square(v)
        return out

    def _square(self, v: float) -> list[Outcome]:
        """A square at speed `v` on the robot's odometry (heading held), closed loop on /odom."""
        side = self.cfg.square_side
        start_odom = planar(self.odom.get())
        truth0 = self.truth.get()
        start_truth = planar(truth0) if truth0 is not None else None
        held = np.asarray(self.torso_fb.get().position[:4])
        torso = {"worst": 0.0}
        # behind and to the right of the start: the room's table stands 0.8 m ahead (r1_sim/worlds/room.xml),
        # and the arms and torso touch it (a square ahead ran them into it at 0.75 m)
        corners = [(-side, 0.0), (-side, -side), (0.0, -side), (0.0, 0.0)]
        truth_errors, odom_errors = [], []
        for cx, cy in corners:
            self.log(f"  chassis: to ({cx:.1f}, {cy:.1f}) m at {v} m/s")

            def error(cx: float = cx, cy: float = cy) -> np.ndarray:
                here = in_frame(start_odom, planar(self.odom.get()))
                return np.array([cx - here[0], cy - here[1], -here[2]]), here[2]

            def steer() -> None:
                torso["worst"] = max(torso["worst"], float(np.max(np.abs(
                    np.asarray(self.torso_fb.get().position[:4]) - held))))
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
            here = in_frame(start_odom, planar(self.odom.get()))
            odom_errors.append(float(np.hypot(cx - here[0], cy - here[1])))
            if start_truth is not None:
                t_here = in_frame(start_truth, planar(self.truth.get()))
                truth_errors.append(float(np.hypot(cx - t_here[0], cy - t_here[1])))
        path = 4.0 * side
        step = f"drive square at {v:g} m/s"
        out = [Outcome(step, "worst corner on odometry", max(odom_errors), 0.0, self.cfg.corner_tolerance + 0.02, "m"),
               Outcome(step, "torso joints off where they stood", torso["worst"], 0.0, self.cfg.torso_tolerance,
                       "rad")]
        if truth_errors:
            out.append(Outcome(step, "worst corner on ground truth", max(truth_errors), 0.0,
                               0.02 * path + self.cfg.corner_tolerance, "m"))
            out.append(Outcome(step, "closing error on ground truth", truth_errors[-1], 0.0,
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
            return all(pose_error(self.ee[s].get(), targets[s])[0] < 0.5 * self.cfg.arm_tolerance for s in targets)

        try:
            self._until(arrived, "arms reaching", stream, rate_hz=10.0)
        except TimeoutError:
            pass                      # judged below, on what was reached
        self._for(1.0, stream, rate_hz=10.0)
        out = []
        for side, t in targets.items():
            dp, dr = pose_error(self.ee[side].get(), t)
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
