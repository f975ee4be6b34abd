#!/usr/bin/env python3
"""The tracker alone, the test playing HDAS's feedback: nothing before feedback, a start-up
hold at the measured position, the 7th (gripper) entry only for 7-entry targets, silence
when the feedback goes stale, a push held against (the plan stays), motors reported off
followed and re-planned from, and a new target answered at once (one tick borrowed from the
plan's clock, once per feedback period).
"""
import threading
import time
import unittest

import numpy as np
import rospy
import rostest
from hdas_msg.msg import feedback_status, feedback_status_detail, motor_control
from sensor_msgs.msg import JointState

from r1_common.ros_testing import Latest, Recorder

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
        cls.cmd = Latest("/motion_control/control_arm_left", motor_control)
        cls.target = rospy.Publisher("/motion_target/target_joint_state_arm_left", JointState, queue_size=10)
        cls.status = rospy.Publisher("/hdas/feedback_status_arm_left", feedback_status, queue_size=10)
        cls.player = FeedbackPlayer()
        cls.player.start()
        # the tracker is up once it listens to the feedback (a starved machine starts it slowly)
        deadline = time.monotonic() + 120
        while (cls.player.pub.get_num_connections() == 0 or cls.target.get_num_connections() == 0
               or cls.status.get_num_connections() == 0):
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
        # 6. the arm is pushed 0.6 rad away while the feedback flows: the plan stays, the motors pull back
        moved = list(MEASURED)
        moved[1] += 0.6
        self.player.position = moved
        time.sleep(0.5)
        np.testing.assert_allclose(self.cmd.wait().p_des, MEASURED[:6], atol=1e-6)
        # 7. the driver reports the arm's motors off: the tracker follows where the arm is (and once they
        #    hold again it re-plans from there, from rest, instead of yanking it back)
        status = feedback_status(name_id="left_arm", errors=[feedback_status_detail(j, 1, ["MOTOR_DISABLE"])
                                                             for j in ARM[:6]])
        self.status.publish(status)
        msg = self.cmd.wait(5, lambda m: abs(m.p_des[1] - moved[1]) < 1e-3)
        np.testing.assert_allclose(msg.p_des, moved[:6], atol=1e-3)
        self.status.publish(feedback_status(name_id="left_arm", errors=[feedback_status_detail(j, 0, [])
                                                                        for j in ARM[:6]]))
        time.sleep(0.05)
        msg = self.cmd.wait()                     # from where the arm is, from rest, on toward its target
        np.testing.assert_allclose(msg.p_des, moved[:6], atol=0.01)
        self.assertLess(max(abs(v) for v in msg.v_des), 0.05, "a re-planned trajectory starts from rest")
        # and a joint read just past its hard stop (joint 2's lower limit is 0), followed while the motors
        # are off, is followed to the limit, not past it
        past = list(moved)
        past[1] = -0.0005
        self.player.position = past
        self.status.publish(status)
        msg = self.cmd.wait(5, lambda m: abs(m.p_des[1]) < 1e-3)
        self.assertGreaterEqual(min(c for c in msg.p_des[1:2]), 0.0)
        self.status.publish(feedback_status(name_id="left_arm", errors=[feedback_status_detail(j, 0, [])
                                                                        for j in ARM[:6]]))


class JointTrackerReactTest(unittest.TestCase):
    """A second tracker (tracker_react) on /react/*: the test sends its feedback one message at a
    time with stamps 2 ms apart (one tick each), so every command is accounted for."""

    @classmethod
    def setUpClass(cls):
        cls.commands = Recorder("/react/control_arm_left", motor_control)
        cls.feedback = rospy.Publisher("/react/feedback_arm_left", JointState, queue_size=10, tcp_nodelay=True)
        cls.target = rospy.Publisher("/react/target_arm_left", JointState, queue_size=10, tcp_nodelay=True)
        deadline = time.monotonic() + 120
        while (cls.feedback.get_num_connections() == 0 or cls.target.get_num_connections() == 0
               or cls.commands.sub.get_num_connections() == 0):
            assert time.monotonic() < deadline, "tracker_react did not come up"
            time.sleep(0.1)
        time.sleep(0.5)
        cls.stamp = rospy.Time.now()

    def send_feedback(self) -> None:
        self.stamp += rospy.Duration(0.002)
        msg = JointState(name=ARM, position=MEASURED, velocity=[0.0] * 7, effort=[0.0] * 7)
        msg.header.stamp = self.stamp
        self.feedback.publish(msg)

    def expect(self, n: int, what: str) -> list:
        """Wait until n commands are recorded, then a while longer to see that no more come."""
        deadline = time.monotonic() + 30
        while len(self.commands.items) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.5)
        got = [m for _, m in self.commands.items]
        self.assertEqual(len(got), n, what)
        return got

    def test_target_answered_without_waiting_for_feedback(self):
        self.commands.start()
        self.send_feedback()                 # start-up: hold
        self.expect(1, "one command per feedback message")
        self.send_feedback()
        held = self.expect(2, "one command per feedback message")[-1]
        np.testing.assert_allclose(held.v_des, 0.0, atol=1e-12)
        goal = list(MEASURED[:6])
        goal[3] += 0.1
        self.target.publish(JointState(position=goal, velocity=[3.0] * 6))
        early = self.expect(3, "a new target is answered by one command before the next feedback")[-1]
        self.assertGreater(early.v_des[3], 0.0, "the early command moves toward the new target")
        # a second target in the same feedback period waits for the feedback (no second borrowed tick)
        goal[3] += 0.1
        self.target.publish(JointState(position=goal, velocity=[3.0] * 6))
        self.expect(3, "at most one early command per feedback period")
        # the next feedback's tick was the one borrowed: the plan stands where the early command put it
        self.send_feedback()
        same = self.expect(4, "one command per feedback message")[-1]
        np.testing.assert_allclose(same.p_des, early.p_des, atol=1e-12)
        np.testing.assert_allclose(same.v_des, early.v_des, atol=1e-12)
        # and the one after moves on by one tick
        self.send_feedback()
        on = self.expect(5, "one command per feedback message")[-1]
        self.assertGreater(on.v_des[3], early.v_des[3])
        self.assertGreaterEqual(on.p_des[3], early.p_des[3])


def suite() -> unittest.TestSuite:
    return unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromTestCase(c)
                              for c in (JointTrackerFeedbackTest, JointTrackerReactTest))


if __name__ == "__main__":
    rospy.init_node("test_joint_tracker_feedback", anonymous=True)
    rostest.rosrun("mobiman", "joint_tracker_feedback", "__main__.suite")
