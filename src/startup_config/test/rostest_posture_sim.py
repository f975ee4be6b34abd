#!/usr/bin/env python3
"""The posture against the physical world through the stack's nodes (issue 28): the simulated R1 in the
payload scene (r1_sim/worlds/payload.xml: a 1 kg object on a pedestal beside the right hand), HDAS, chassis
control, the joint tracker for the arms and torso speed control (r1_stack.launch, light profile), driven
through the guide's topics as a user would and judged on the simulator's ground truth (/sim/joint_states,
/sim/odom, /sim/objects), pushed through /sim/apply_wrench. In order:

a. the right hand grasps the 1 kg object and lifts it off its pedestal (the scene's recipe);
b. holding it, the base drives to 1 m/s and back at 2.5 m/s², sideways and turning at their limits: each
   torso and arm joint within 0.05 rad of where it was held, back within 0.01 rad within 1 s, no limit
   reached, no set-point moved; the object stays in the hand; then the hand lets it fall;
c. pushes of 50 N at the shoulders, forward and backward, and 5 N at the left gripper, for 0.3 s: the same;
d. the torso crouched at the guide's target: the drive again;
e. leaning forward (torso_link4 25 cm ahead of base_link), the left arm out in front: chassis control brakes
   at what the posture allows (its /diagnostics: ~1.5 m/s²), the base's true deceleration shows it, and the
   posture holds.
"""
import math
import threading
import time
import unittest

import numpy as np
import rospy
import rostest
from geometry_msgs.msg import Twist, Vector3
from hdas_msg.msg import motor_control
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Float32

from r1_common.ros_testing import Diagnostics, Latest
from r1_sim.msg import ObjectStates
from r1_sim.srv import ApplyWrench
from r1_startup.posture_cases import MAX_DEVIATION, SETTLE_TIME, SETTLE_TOLERANCE, UPPER, judge_motion

GRASP = [(1.6708, 0.0, -2.8827, 0.0, -0.0657, 0.0), (1.6708, 0.0, -2.345, 0.0, -0.0657, 0.0)]   # payload.xml: A, B
LEFT_OUT = (0.0073, 2.3004, -1.0006, -1.5632, -1.2998, 1.5688)      # the left gripper 0.55 m ahead of torso_link4
CROUCHED = (1.0, -2.0, -1.0, 0.0)
LEANING = (1.6, -2.0, -0.4, 0.0)    # torso_link4 upright, 25 cm ahead of base_link: the ZMP limits braking
WALL = 120.0      # [s] a generous wall-clock bound for each wait on a shared machine


class Truth:
    """/sim/joint_states and /sim/odom recorded with their stamps (simulated time)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.joints: list = []
        self.base: list = []
        self.recording = False
        rospy.Subscriber("/sim/joint_states", JointState, self._on_joints, queue_size=1000)
        rospy.Subscriber("/sim/odom", Odometry, self._on_odom, queue_size=1000)

    def _on_joints(self, msg: JointState) -> None:
        if self.recording:
            with self.lock:
                self.joints.append((msg.header.stamp.to_sec(), dict(zip(msg.name, msg.position))))

    def _on_odom(self, msg: Odometry) -> None:
        if self.recording:
            with self.lock:
                self.base.append((msg.header.stamp.to_sec(), msg.twist.twist.linear.x))

    def start(self) -> None:
        with self.lock:
            self.joints, self.base = [], []
        self.recording = True

    def stop(self) -> tuple:
        self.recording = False
        with self.lock:
            return list(self.joints), list(self.base)


class SetPoints:
    """The controllers' set-points (p_des of /motion_control/control_torso and _arm_*) by joint, latest."""

    TOPICS = {"/motion_control/control_torso": [f"torso_joint{k}" for k in range(1, 5)],
              **{f"/motion_control/control_arm_{s}": [f"{s}_arm_joint{k}" for k in range(1, 7)]
                 for s in ("left", "right")}}

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latest: dict = {}
        for topic, names in self.TOPICS.items():
            rospy.Subscriber(topic, motor_control, self._on_command, names, queue_size=10)

    def _on_command(self, msg: motor_control, names: list) -> None:
        if msg._connection_header.get("callerid") == rospy.get_name() or len(msg.p_des) < len(names):
            return
        with self.lock:
            self.latest.update(zip(names, msg.p_des))

    def now(self) -> dict:
        with self.lock:
            return dict(self.latest)


class PostureSimTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        rospy.init_node("test_posture_sim", anonymous=True)
        cls.chassis = rospy.Publisher("/motion_target/target_speed_chassis", Twist, queue_size=5)
        cls.torso = rospy.Publisher("/motion_target/target_joint_state_torso", JointState, queue_size=1, latch=True)
        cls.arm = {s: rospy.Publisher(f"/motion_target/target_joint_state_arm_{s}", JointState, queue_size=1,
                                      latch=True) for s in ("left", "right")}
        cls.stroke = rospy.Publisher("/motion_control/position_control_gripper_right", Float32, queue_size=1,
                                     latch=True)
        cls.joints = Latest("/sim/joint_states", JointState)
        cls.objects = Latest("/sim/objects", ObjectStates)
        cls.truth = Truth()
        cls.set_points = SetPoints()
        cls.diagnostics = Diagnostics()
        rospy.wait_for_service("/sim/apply_wrench", timeout=WALL)
        cls.apply_wrench = rospy.ServiceProxy("/sim/apply_wrench", ApplyWrench)
        for topic in ("/hdas/feedback_torso", "/hdas/feedback_arm_right", "/motion_control/chassis_speed"):
            rospy.wait_for_message(topic, rospy.AnyMsg, timeout=WALL)
        limits = {}
        import xml.etree.ElementTree as ET
        for j in ET.fromstring(rospy.get_param("/robot_description")).iter("joint"):
            lim = j.find("limit")
            if j.get("name") in UPPER and lim is not None:
                limits[j.get("name")] = (float(lim.get("lower")), float(lim.get("upper")))
        cls.limits = limits
        time.sleep(1.0)

    # -- helpers -------------------------------------------------------------------------------
    def q(self) -> dict:
        m = self.joints.wait()
        return dict(zip(m.name, m.position))

    def payload_height(self) -> float:
        m = self.objects.wait()
        return m.pose[list(m.name).index("payload")].position.z

    def for_(self, seconds: float, every=None, rate: float = 50.0) -> None:
        """`seconds` of the stack's clock, calling `every` at `rate` meanwhile."""
        start, deadline = rospy.get_time(), time.monotonic() + WALL
        while rospy.get_time() - start < seconds and time.monotonic() < deadline and not rospy.is_shutdown():
            if every is not None:
                every()
            t = rospy.get_time()
            while rospy.get_time() - t < 1.0 / rate and time.monotonic() < deadline:
                time.sleep(0.002)

    def reach(self, targets: dict, tolerance: float = 0.02) -> None:
        """Joint targets ({"torso": q, "left": q, "right": q}) sent and reached, then 1 s more to settle."""
        for group, target in targets.items():
            pub = self.torso if group == "torso" else self.arm[group]
            pub.publish(JointState(position=list(target), velocity=[0.6] * len(target)))
        names = {"torso": [f"torso_joint{k}" for k in range(1, 5)],
                 **{s: [f"{s}_arm_joint{k}" for k in range(1, 7)] for s in ("left", "right")}}
        deadline = time.monotonic() + 2 * WALL
        while time.monotonic() < deadline:
            q = self.q()
            if all(abs(q[n] - t) < tolerance for g, target in targets.items() for n, t in zip(names[g], target)):
                break
            time.sleep(0.05)
        else:
            self.fail(f"targets {targets} not reached: {q}")
        self.for_(1.0)

    def case(self, name: str, disturb) -> tuple:
        """Hold 0.3 s, record, `disturb()` (returns when the disturbance ended), 1.5 s more; asserts the
        criteria on the ground truth and returns the base's recorded speeds."""
        self.for_(0.3, lambda: self.chassis.publish(Twist()))
        held, planned = self.q(), self.set_points.now()
        self.truth.start()
        disturb()
        end = rospy.get_time()
        self.for_(1.5, lambda: self.chassis.publish(Twist()))
        joints, base = self.truth.stop()
        deviation, worst, settle, margin = judge_motion(joints, held, end, self.limits)
        last, planned_after = joints[-1][1], self.set_points.now()
        off = max(UPPER, key=lambda j: abs(last[j] - held[j]))
        moved = {j: planned_after[j] - planned[j] for j in planned if j in planned_after}
        rospy.loginfo(f"posture: {name}: {worst} {deviation:.4f} rad, back within {SETTLE_TOLERANCE} rad after "
                      f"{settle:.2f} s, {margin:.3f} rad from a limit; at the end {off} {last[off] - held[off]:+.4f} "
                      f"rad from where it was held, its set-point moved {moved.get(off, math.nan):+.4f} rad "
                      f"(the most any moved: {max(map(abs, moved.values()), default=math.nan):.4f})")
        # the set-points never yield to the load: a hold's plan stays where it was (issue 28, item 1). 5 mrad:
        # a re-plan from where a load left a joint moves it by that joint's deviation then (20-50 mrad here);
        # a plan still finishing its last move within the tolerance it was reached to moved one 0.8 mrad
        self.assertTrue(moved and max(map(abs, moved.values())) < 0.005, f"{name}: set-points moved {moved}")
        self.assertLessEqual(deviation, MAX_DEVIATION, f"{name}: {worst}")
        self.assertLessEqual(settle, SETTLE_TIME, name)
        self.assertGreater(margin, 0.0, name)
        return base

    def drive(self, twist: tuple, ramp: float) -> None:
        t = Twist()
        t.linear.x, t.linear.y, t.angular.z = twist
        self.for_(ramp + 0.3, lambda: self.chassis.publish(t))
        self.for_(1.5 * ramp + 0.05, lambda: self.chassis.publish(Twist()))

    def push(self, link: str, force: tuple) -> None:
        answer = self.apply_wrench(link, Vector3(*force), Vector3(0.0, 0.0, 0.0), 0.3)
        self.assertTrue(answer.success, answer.message)
        start = answer.stamp.to_sec()
        deadline = time.monotonic() + WALL
        while rospy.get_time() < start + 0.3 and time.monotonic() < deadline:
            time.sleep(0.005)

    # -- the cases, in order -------------------------------------------------------------------------
    def test_a_the_hand_grasps_and_lifts_the_payload(self):
        z0 = self.payload_height()
        self.stroke.publish(Float32(100.0))
        self.for_(1.5)
        self.reach({"right": GRASP[0]})
        self.stroke.publish(Float32(0.0))
        self.for_(1.5)
        self.reach({"right": GRASP[1]}, tolerance=0.05)       # (the load sags the arm a little: held from there)
        m, q = self.objects.wait(), self.q()
        pose = m.pose[list(m.name).index("payload")]
        p, o = pose.position, pose.orientation
        rospy.loginfo(f"posture: grasped: fingers {q['right_gripper_finger_joint1']:.4f} "
                      f"{q['right_gripper_finger_joint2']:.4f} m, payload at {[round(v, 4) for v in (p.x, p.y, p.z)]} "
                      f"quat {[round(v, 3) for v in (o.x, o.y, o.z, o.w)]}, "
                      f"right arm {[round(q[f'right_arm_joint{k}'], 4) for k in range(1, 7)]}")
        self.assertGreater(self.payload_height() - z0, 0.08, "the payload did not come off its pedestal")

    def test_b_holding_it_the_base_drives_at_its_limits(self):
        z0 = self.payload_height()
        for twist, ramp in (((1.0, 0.0, 0.0), 0.4), ((0.0, 0.5, 0.0), 0.5), ((0.0, 0.0, 1.0), 1.0)):
            self.case(f"holding 1 kg, drive {twist}", lambda: self.drive(twist, ramp))
            rospy.loginfo(f"posture: the payload {1e3 * (self.payload_height() - z0):+.1f} mm since the drives began")
        self.assertGreater(self.payload_height(), z0 - 0.01, "the payload slipped in the hand")

    def test_c_pushes_at_the_shoulders_and_at_a_gripper(self):
        """Still holding the 1 kg payload. (With MuJoCo's default friction cones it crept in the closed fingers
        and fell out ~15 s after the grasp, after the shoulder pushes: the right elbow, unloaded, rose 0.025 rad
        during the push at the left gripper. r1_sim.mjcf.GRIP_FRICTION; docs/simulator.md.)"""
        z0 = self.payload_height()
        for link, force in (("torso_link4", (50.0, 0.0, 0.0)), ("torso_link4", (-50.0, 0.0, 0.0)),
                            ("left_gripper_link", (0.0, 5.0, 0.0))):
            self.case(f"holding 1 kg, push {link} {force}", lambda: self.push(link, force))
            rospy.loginfo(f"posture: the payload {1e3 * (self.payload_height() - z0):+.1f} mm since the pushes began")
        self.assertGreater(self.payload_height(), z0 - 0.01, "the payload slipped in the hand")
        # let it go (it falls to the floor 30 cm outside the right wheel): the crouch and the lean are judged on
        # a posture of their own
        self.stroke.publish(Float32(100.0))
        self.for_(2.0)
        self.assertLess(self.payload_height(), z0 - 0.3, "the payload did not leave the hand")

    def test_d_crouched_the_base_drives_at_its_limit(self):
        self.reach({"torso": CROUCHED})
        self.case("crouched, drive x", lambda: self.drive((1.0, 0.0, 0.0), 0.4))

    def test_e_leaning_with_an_arm_out_the_base_brakes_gentler_and_the_posture_holds(self):
        self.reach({"torso": LEANING, "left": LEFT_OUT})

        def lowered(status) -> bool:
            values = {kv.key: kv.value for kv in status.values}
            down = values.get("posture acceleration limits -", "")
            return bool(down) and float(down.strip("[]").split(",")[0]) < 2.0
        status = self.diagnostics.of("chassis_control_node", timeout=WALL, predicate=lowered)
        limit = float({kv.key: kv.value for kv in status.values}["posture acceleration limits -"]
                      .strip("[]").split(",")[0])
        base = self.case("leaning, arm out, drive x", lambda: self.drive((1.0, 0.0, 0.0), 0.4))
        t = np.array([b[0] for b in base])
        v = np.array([b[1] for b in base])
        peak = int(np.argmax(v))
        top = float(v[peak])
        after = slice(peak, None)
        hi, lo = np.flatnonzero(v[after] <= 0.9 * top), np.flatnonzero(v[after] <= 0.1 * top)
        braking = 0.8 * top / (t[after][lo[0]] - t[after][hi[0]])
        rospy.loginfo(f"posture: leaning, braking limit {limit:.2f} m/s², the base braked at {braking:.2f} m/s²")
        self.assertTrue(math.isfinite(braking))
        self.assertAlmostEqual(braking, limit, delta=0.25)
        self.assertLess(braking, 2.0)                       # the chassis' own limit is 2.5


if __name__ == "__main__":
    rostest.rosrun("startup_config", "posture_sim", PostureSimTest)
