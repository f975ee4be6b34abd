#!/usr/bin/env python3
"""Torso speed control on HDAS on the simulated R1: a joint target out of the straight (singular)
start posture, then v_z and v_x for 1 s of simulated time, judged on the simulator's ground truth
(/sim/joint_states) through FK; a stopped stream stops the torso; NaN input does not kill the node.

The whole chain is real: Twist -> torso_speed_control (resolved rate, RNEA) -> /motion_control ->
HDAS -> CAN -> simulated motors and physics -> feedback.
"""
import math
import time
import unittest
from pathlib import Path

import numpy as np
import rospkg
import rospy
import rostest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, Twist
from hdas_msg.msg import motor_control
from sensor_msgs.msg import JointState

from mobiman.model.robot_model import RobotModel
from r1_common.ros_testing import Latest, Recorder

TORSO = ["torso_joint1", "torso_joint2", "torso_joint3", "torso_joint4"]
BENT = [1.0, -2.0, -1.0, 0.0]            # torso_link3 at x 0.084, z 0.378 (workspace coordinates), pitch 0
NODE = "/torso_speed_control"
PITCH_TOL = 0.01                         # [rad] true pitch, the bound (see test_c)


class TorsoSpeedSimTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rospy.init_node("test_torso_speed_sim", anonymous=True)
        rp = rospkg.RosPack()
        cls.model = RobotModel.from_files(Path(rp.get_path("r1_description")) / "urdf/r1_v2_1_0.urdf",
                                          Path(rp.get_path("mobiman")) / "config/r1_joint_groups.yaml")
        cls.origin = cls.model.pose("torso_link1", cls.model.configuration(), "base_link").translation
        cls.speed = rospy.Publisher("/motion_target/target_speed_torso", Twist, queue_size=10)
        cls.target = rospy.Publisher("/motion_target/target_joint_state_torso", JointState, queue_size=10)
        cls.fb = Latest("/hdas/feedback_torso", JointState)
        cls.cmd = Latest("/motion_control/control_torso", motor_control)
        cls.truth = Latest("/sim/joint_states", JointState)
        cls.truth_rec = Recorder("/sim/joint_states", JointState)
        cls.cmd_rec = Recorder("/motion_control/control_torso", motor_control)
        cls.link3 = Latest(NODE + "/torso_link3", PoseStamped)
        cls.status = {}        # our node's latest diagnostic values (HDAS publishes on /diagnostics too)
        rospy.Subscriber("/diagnostics", DiagnosticArray, cls._on_diagnostics, queue_size=20)
        cls.fb.wait(300)
        cls.cmd.wait(300)
        cls.truth.wait(300)
        time.sleep(1.0)     # publishers connected

    @classmethod
    def _on_diagnostics(cls, msg):
        for s in msg.status:
            if s.name.startswith(NODE):
                cls.status = {"message": s.message, **{kv.key: kv.value for kv in s.values}}

    # -- helpers -----------------------------------------------------------------------------
    def q_truth(self, msg=None):
        m = msg or self.truth.wait()
        pos = dict(zip(m.name, m.position))
        return np.array([pos[j] for j in TORSO])

    def state(self, q):
        """(x, z, pitch) of torso_link3: x, z relative to torso_joint1's origin in base_link axes."""
        pose = self.model.pose("torso_link3", self.model.configuration({"torso": q}), "base_link")
        r = pose.rotation
        return np.array([pose.translation[0] - self.origin[0], pose.translation[2] - self.origin[2],
                         math.atan2(r[0, 2], r[2, 2])])

    def wait_still(self, timeout=300.0):
        """Until the torso is at rest (feedback velocities) and its true position steady over 0.2 s of
        simulated time; returns the true joint positions."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if np.max(np.abs(self.fb.wait().velocity[:4])) < 0.02:
                before = self.q_truth()
                self.sleep_sim(0.2)
                after = self.q_truth()
                if np.max(np.abs(after - before)) < 2e-3:
                    return after
            time.sleep(0.05)
        self.fail(f"the torso did not come to rest within {timeout} s: at {self.q_truth().tolist()}")

    @staticmethod
    def sleep_sim(seconds):
        t0 = rospy.get_time()
        while rospy.get_time() - t0 < seconds and not rospy.is_shutdown():
            time.sleep(0.005)

    def stream(self, vx, vz, seconds, rate=50.0):
        """Publish the speed at `rate` Hz on ROS (simulated) time for `seconds` of it."""
        msg = Twist()
        msg.linear.x, msg.linear.z = vx, vz
        t0, period = rospy.get_time(), 1.0 / rate
        k = 0
        while rospy.get_time() - t0 < seconds and not rospy.is_shutdown():
            self.speed.publish(msg)
            k += 1
            while rospy.get_time() < t0 + k * period and not rospy.is_shutdown():
                time.sleep(0.002)

    def move(self, vx, vz, seconds=1.0):
        """v for `seconds`, then an explicit stop streamed until at rest; the truth recorded meanwhile."""
        start = self.wait_still()
        self.truth_rec.start()
        self.cmd_rec.start()
        self.stream(vx, vz, seconds)
        self.stream(0.0, 0.0, 1.0)
        end = self.wait_still()
        samples = [self.q_truth(m) for _, m in self.truth_rec.stop()]
        commands = [np.array(m.p_des) for _, m in self.cmd_rec.stop()]
        self.assertGreater(len(samples), 20, "too few ground-truth samples")
        self.assertGreater(len(commands), 20, "too few commands")
        states = np.array([self.state(q) for q in samples])
        commanded_pitch = np.array([self.state(q)[2] for q in commands])
        s0, s1 = self.state(start), self.state(end)
        # the controller holds the commanded pitch exactly (a small correction of drift only)
        self.assertLess(np.max(np.abs(commanded_pitch - commanded_pitch[0])), 2e-3)
        rospy.loginfo(f"v ({vx}, {vz}) for {seconds} s: moved {np.round(s1 - s0, 4).tolist()}, true pitch "
                      f"deviation up to {np.max(np.abs(states[:, 2] - s0[2])):.4f} rad, commanded "
                      f"{np.max(np.abs(commanded_pitch - commanded_pitch[0])):.5f} rad")
        return s0, s1, states

    # -- tests --------------------------------------------------------------------------------
    def test_a_start_up_holds_the_measured_position(self):
        cmd, q = self.cmd.wait(), np.array(self.fb.wait().position[:4])
        self.assertEqual(len(cmd.p_des), 4)
        np.testing.assert_allclose(cmd.p_des, q, atol=0.02)
        np.testing.assert_allclose(cmd.v_des, 0.0, atol=1e-6)
        self.assertEqual(list(cmd.kp), [500, 500, 400, 200])
        pose = self.link3.wait(60)
        self.assertEqual(pose.header.frame_id, "base_link")

    def test_b_joint_target_out_of_the_straight_posture(self):
        start = self.wait_still()
        # dropped: another group's joint names, a 5th entry
        self.target.publish(JointState(name=[f"left_arm_joint{i}" for i in range(1, 5)], position=BENT))
        self.target.publish(JointState(position=list(BENT) + [0.0]))
        self.sleep_sim(1.0)
        np.testing.assert_allclose(self.q_truth(), start, atol=0.01, err_msg="a bad joint target moved the torso")
        # read by name: the torso's joints in reverse order
        names = [f"torso_joint{i}" for i in range(4, 0, -1)]
        self.target.publish(JointState(name=names, position=list(BENT)[::-1], velocity=[0.6] * 4))
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            q = self.q_truth()
            if np.max(np.abs(q - BENT)) < 0.02:
                break
            time.sleep(0.1)
        else:
            self.fail(f"joint target not reached: at {self.q_truth().tolist()}")
        q = self.wait_still()
        np.testing.assert_allclose(q, BENT, atol=0.02)

    # True pitch: within PITCH_TOL of its value at rest before the move, during the whole move. The
    # joints' friction against the servo's finite stiffness (kp + dG/dq, 270-470 N·m/rad at BENT) is
    # what moves it: without the friction feed-forward 0.012-0.022 rad were measured here, with it
    # 0.004 (docs/torso_speed_control.md).
    def test_c_vz_raises_torso_link3_with_pitch_held(self):
        s0, s1, states = self.move(0.0, 0.1)
        self.assertAlmostEqual(s1[1] - s0[1], 0.1, delta=0.01)
        self.assertAlmostEqual(s1[0], s0[0], delta=0.01)
        self.assertLess(np.max(np.abs(states[:, 2] - s0[2])), PITCH_TOL)

    def test_d_stopped_stream_stops_the_torso(self):
        start = self.state(self.wait_still())
        self.stream(0.0, -0.1, 0.5)            # and then nothing: the node times out and stops
        end = self.state(self.wait_still())
        self.sleep_sim(1.0)
        later = self.state(self.q_truth())
        moved = end[1] - start[1]
        # 0.05 m while streamed, plus 0.2 s of command timeout at 0.1 m/s and the ramp down
        self.assertLess(moved, -0.05)
        self.assertGreater(moved, -0.12)
        np.testing.assert_allclose(later[:2], end[:2], atol=2e-3)
        cmd = self.cmd.wait()
        np.testing.assert_allclose(cmd.v_des, 0.0, atol=1e-6)

    def test_e_vx_moves_torso_link3_with_pitch_held(self):
        s0, s1, states = self.move(-0.1, 0.0)
        self.assertAlmostEqual(s1[0] - s0[0], -0.1, delta=0.01)
        self.assertAlmostEqual(s1[1], s0[1], delta=0.01)
        self.assertLess(np.max(np.abs(states[:, 2] - s0[2])), PITCH_TOL)

    def test_f_nan_does_not_kill_the_node(self):
        start = self.state(self.wait_still())
        before = int(self.status.get("dropped", "0"))           # test_b's two bad joint targets
        bad = Twist()
        bad.linear.x, bad.linear.z = float("nan"), 0.1
        for _ in range(5):
            self.speed.publish(bad)
        count = self.cmd.count
        self.cmd.wait(300, lambda m: self.cmd.count > count + 20)      # still commanding
        np.testing.assert_allclose(self.state(self.wait_still())[:2], start[:2], atol=2e-3)
        deadline = time.monotonic() + 120
        while int(self.status.get("dropped", "0")) == before and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.5)                                          # a later report would count more
        self.assertEqual(int(self.status.get("dropped")), before + 5, f"diagnostics: {self.status}")
        s0, s1, _ = self.move(0.0, 0.05, 0.4)                            # and still obeys
        self.assertAlmostEqual(s1[1] - s0[1], 0.02, delta=0.008)


if __name__ == "__main__":
    rostest.rosrun("mobiman", "torso_speed_sim", TorsoSpeedSimTest)
