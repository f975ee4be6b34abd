#!/usr/bin/env python3
"""The tracker alone, the test playing HDAS's feedback: nothing before feedback, a start-up
hold at the measured position, the 7th (gripper) entry only for 7-entry targets, and silence
when the feedback goes stale.
"""
import threading
import time
import unittest

import numpy as np
import rospy
import rostest
from hdas_msg.msg import motor_control
from sensor_msgs.msg import JointState

from mobiman.ros_testing import Latest

ARM = [f"left_arm_joint{k}" for k in range(1, 7)] + ["left_gripper_finger_joint1"]
MEASURED = [-1.2, 0.3, -2.0, 0.1, 0.2, -0.1, 0.01]


class FeedbackPlayer(threading.Thread):
    """Publishes a fixed arm feedback at `rate` Hz while `playing`."""

    def __init__(self, rate: float = 200.0):
        super().__init__(daemon=True)
        self.pub = rospy.Publisher("/hdas/feedback_arm_left", JointState, queue_size=1)
        self.torso = rospy.Publisher("/hdas/feedback_torso", JointState, queue_size=1)
        self.playing = False
        self.position = list(MEASURED)
        self.period = 1.0 / rate

    def run(self) -> None:
        while not rospy.is_shutdown():
            if self.playing:
                try:
                    self.pub.publish(JointState(name=ARM, position=self.position, velocity=[0.0] * 7, effort=[0.0] * 7))
                    self.torso.publish(JointState(name=[f"torso_joint{k}" for k in range(1, 5)],
                                                  position=[0.0] * 4, velocity=[0.0] * 4, effort=[0.0] * 4))
                except rospy.ROSException:      # shutting down
                    return
            time.sleep(self.period)


class JointTrackerFeedbackTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rospy.init_node("test_joint_tracker_feedback", anonymous=True)
        cls.cmd = Latest("/motion_control/control_arm_left", motor_control)
        cls.target = rospy.Publisher("/motion_target/target_joint_state_arm_left", JointState, queue_size=10)
        cls.player = FeedbackPlayer()
        cls.player.start()
        # the tracker is up once it listens to the feedback (a starved machine starts it slowly)
        deadline = time.monotonic() + 120
        while cls.player.pub.get_num_connections() == 0 or cls.target.get_num_connections() == 0:
            assert time.monotonic() < deadline, "the tracker node did not come up"
            time.sleep(0.1)
        time.sleep(0.5)

    def test_lifecycle(self):
        # 1. no feedback: no output, even with a target
        self.target.publish(JointState(position=[0.0] * 6))
        time.sleep(1.0)
        self.assertEqual(self.cmd.count, 0, "published before any feedback")
        # 2. feedback arrives: it holds the measured position (the early target was dropped)
        self.player.playing = True
        first = self.cmd.wait(30)
        np.testing.assert_allclose(first.p_des, MEASURED[:6], atol=1e-6)
        np.testing.assert_allclose(first.v_des, 0.0, atol=1e-9)
        time.sleep(0.5)
        np.testing.assert_allclose(self.cmd.wait().p_des, MEASURED[:6], atol=1e-6)
        # 3. a 7-entry target adds the gripper entry; a 6-entry target removes it again
        self.target.publish(JointState(position=MEASURED[:6] + [0.03]))
        msg = self.cmd.wait(5, lambda m: len(m.p_des) == 7)
        self.assertAlmostEqual(msg.p_des[6], 0.03, places=5)
        self.target.publish(JointState(position=MEASURED[:6]))
        self.cmd.wait(5, lambda m: len(m.p_des) == 6)
        # 4. feedback stops: output stops (within the 50 ms stale time plus scheduling)
        self.player.playing = False
        time.sleep(0.5)
        count = self.cmd.count
        time.sleep(1.0)
        self.assertEqual(self.cmd.count, count, "still publishing without feedback")
        # 5. feedback returns: output resumes, still holding
        self.player.playing = True
        msg = self.cmd.wait(5, lambda m: self.cmd.count > count + 5)
        np.testing.assert_allclose(msg.p_des, MEASURED[:6], atol=1e-6)
        # 6. the arm is found far from the plan (motors were off, someone pushed it): the tracker
        #    re-plans from where it is, from rest, toward its target, instead of yanking it back
        moved = list(MEASURED)
        moved[1] += 0.6
        self.player.position = moved
        msg = self.cmd.wait(5, lambda m: abs(m.p_des[1] - moved[1]) < 1e-3)
        np.testing.assert_allclose(msg.p_des, moved[:6], atol=1e-3)
        self.assertLess(max(abs(v) for v in msg.v_des), 0.05, "a re-planned trajectory starts from rest")
        # and a joint read just past its hard stop (joint 2's lower limit is 0) is held at the limit
        past = list(moved)
        past[1] = -0.0005
        self.player.position = past
        msg = self.cmd.wait(5, lambda m: abs(m.p_des[1]) < 1e-3)
        self.assertGreaterEqual(min(c for c in msg.p_des[1:2]), 0.0)


if __name__ == "__main__":
    rostest.rosrun("mobiman", "joint_tracker_feedback", JointTrackerFeedbackTest)
