#!/usr/bin/env python3
"""Pose estimator and remote-control manager on the simulated R1.

Poses: HDAS feedback -> r1_eepose_pub_node (fk_calculator) -> /motion_control/pose_*, checked
against FK (mobiman.model.robot_model) of the simulator's ground truth (/sim/joint_states) at the
standing pose and after the torso and the left arm were moved by MIT commands sent here.
Remote: /sim/remote -> simulated receiver -> CAN -> HDAS /controller -> r1_control_manager ->
/motion_target/target_speed_chassis (and a gesture's torso target).

Simulated time runs at a fifth of real time here: every wait is a condition with a deadline.
"""
import os
import signal
import time
import unittest
from collections import Counter

import numpy as np
import pinocchio as pin
import rospkg
import rospy
import rostest
from geometry_msgs.msg import PoseStamped, Twist
from hdas_msg.msg import controller_signal, controller_signal_stamped, motor_control
from sensor_msgs.msg import JointState

from mobiman.model.robot_model import RobotModel, load_group_config
from r1_common.ros_testing import Diagnostics, Latest, Recorder, node_pid

POSES = {"torso": ("/motion_control/pose_floating_base", "/hdas/feedback_torso", "base_link"),
         "left": ("/motion_control/pose_ee_arm_left", "/hdas/feedback_arm_left", "torso_link4"),
         "right": ("/motion_control/pose_ee_arm_right", "/hdas/feedback_arm_right", "torso_link4")}
TORSO_GOAL = np.array([0.2, -0.3, -0.1, 0.4])          # trunk level (q3 = q1 + q2), turned 0.4 rad
LEFT_ARM_DELTA = np.array([0.0, 0.3, 0.0, 0.5, 0.3, 0.5])
TORSO_GAINS = ([500, 500, 400, 200], [5, 5, 5, 3])     # config/joint_tracker.yaml
ARM_GAINS = ([140, 200, 120, 20, 20, 20], [5, 5, 5, 1, 1, 0.4])
SPEED = 0.2            # [rad/s of simulated time] of the commanded ramps
CHASSIS = "/motion_target/target_speed_chassis"


def se3(msg: PoseStamped) -> pin.SE3:
    p, o = msg.pose.position, msg.pose.orientation
    return pin.SE3(pin.Quaternion(o.w, o.x, o.y, o.z).toRotationMatrix(), np.array([p.x, p.y, p.z]))


def seq_gaps(recorded) -> int:
    """Messages missing between the header.seq numbers of recorded (time, message) pairs."""
    seqs = [m.header.seq for _, m in recorded]
    return sum(max(0, b - a - 1) for a, b in zip(seqs, seqs[1:]))


def pose_error(a: pin.SE3, b: pin.SE3) -> tuple:
    return (float(np.linalg.norm(a.translation - b.translation)),
            float(np.linalg.norm(pin.log3(a.rotation.T @ b.rotation))))


class EePoseRcSimTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rospy.init_node("test_eepose_rc_sim", anonymous=True)
        path = rospkg.RosPack().get_path("mobiman") + "/config/r1_joint_groups.yaml"
        groups, _ = load_group_config(path)
        cls.groups = groups
        cls.model = RobotModel(rospy.get_param("/robot_description"), groups)
        cls.truth = Latest("/sim/joint_states", JointState)
        cls.fb = {k: Latest(v[1], JointState) for k, v in POSES.items()}
        cls.pose = {k: Latest(v[0], PoseStamped) for k, v in POSES.items()}
        cls.pose_rec = {k: Recorder(v[0], PoseStamped) for k, v in POSES.items()}
        cls.fb_rec = {k: Recorder(v[1], JointState) for k, v in POSES.items()}
        cls.joint_states = Latest("/joint_states", JointState)
        cls.chassis = Latest(CHASSIS, Twist)
        cls.chassis_rec = Recorder(CHASSIS, Twist)
        cls.controller = Latest("/controller", controller_signal_stamped)
        cls.torso_target = Latest("/motion_target/target_joint_state_torso", JointState)
        cls.remote = rospy.Publisher("/sim/remote", controller_signal, queue_size=1, latch=True)
        cls.cmd = {"torso": rospy.Publisher("/motion_control/control_torso", motor_control, queue_size=1),
                   "left": rospy.Publisher("/motion_control/control_arm_left", motor_control, queue_size=1)}
        cls.diag = Diagnostics()
        t0 = time.monotonic()
        for k in POSES:
            cls.pose[k].wait(300)
        cls.truth.wait(300)
        cls.controller.wait(300)
        rospy.loginfo(f"eepose_rc_sim: simulator, HDAS and both nodes up after {time.monotonic() - t0:.0f} s")
        time.sleep(1.0)      # publishers connected

    # -- helpers -----------------------------------------------------------------------------------
    def truth_q(self):
        m = self.truth.wait()
        d = dict(zip(m.name, m.position))
        return {g: np.array([d[j] for j in self.groups[g]]) for g in ("torso", "left_arm", "right_arm")}, m

    def wait_still(self, timeout=300.0):
        """Until no upper-body joint of the ground truth (positions only) moved more than 0.2 mrad
        over 0.2 s of simulated time."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            a, ma = self.truth_q()
            self.truth.wait(60, lambda m: (m.header.stamp - ma.header.stamp).to_sec() >= 0.2)
            b, _ = self.truth_q()
            if max(np.max(np.abs(a[g] - b[g])) for g in a) < 2e-4:
                return
        self.fail(f"the robot did not come to rest within {timeout} s")

    def node_counts(self, k, published_at_least=0):
        """(missed_feedback, published) of the pose estimator's stream `k` from /diagnostics."""
        def values(st):
            return {kv.key: kv.value for kv in st.values}
        st = self.diag.wait(f"fk_calculator: {k}", lambda st: int(values(st)["published"]) >= published_at_least)
        v = values(st)
        return int(v["missed_feedback"]), int(v["published"])

    def check_poses_against_truth(self, label):
        self.wait_still()
        time.sleep(0.5)
        q, _ = self.truth_q()
        full = self.model.configuration(q)
        expected = {"torso": self.model.pose("torso_link4", full, "base_link"),
                    "left": self.model.pose("left_gripper_link", full, "torso_link4"),
                    "right": self.model.pose("right_gripper_link", full, "torso_link4")}
        worst = {}
        for k, (topic, _, frame) in POSES.items():
            msg = self.pose[k].wait()
            self.assertEqual(msg.header.frame_id, frame, f"{topic}: frame_id")
            dp, dr = pose_error(se3(msg), expected[k])
            worst[k] = (dp, dr)
            self.assertLess(dp, 0.001, f"{label}: {topic} {dp * 1e3:.3f} mm from FK of the true joints")
            self.assertLess(dr, 0.01, f"{label}: {topic} {dr:.4f} rad from FK of the true joints")
        rospy.loginfo(f"eepose_rc_sim: {label}: pose vs FK of /sim/joint_states: " + ", ".join(
            f"{k} {dp * 1e3:.3f} mm {dr * 1e3:.3f} mrad" for k, (dp, dr) in worst.items()))
        return q

    def ramp(self, goals, timeout=600.0):
        """MIT commands stepping each group from where it is to its goal at SPEED (simulated time),
        gravity feed-forward at the commanded posture, until the joints are within 5 mrad."""
        q0, _ = self.truth_q()
        start = {"torso": q0["torso"], "left": q0["left_arm"]}
        t0, deadline = rospy.get_time(), time.monotonic() + timeout
        while time.monotonic() < deadline:
            elapsed = rospy.get_time() - t0
            q, _ = self.truth_q()
            des = {k: start[k] + np.clip(goals[k] - start[k], -SPEED * elapsed, SPEED * elapsed) for k in goals}
            posture = {"torso": des.get("torso", q["torso"]), "left_arm": des.get("left", q["left_arm"]),
                       "right_arm": q["right_arm"]}
            tau = self.model.gravity(self.model.configuration(posture))
            for k, group, gains in (("torso", "torso", TORSO_GAINS), ("left", "left_arm", ARM_GAINS)):
                if k not in goals:
                    continue
                m = motor_control()
                m.header.stamp = rospy.Time.now()
                m.name = group
                m.p_des = des[k].tolist()
                m.v_des = [0.0] * len(des[k])
                m.kp, m.kd = list(gains[0]), list(gains[1])
                m.t_ff = tau[self.model.group(group).idx_v].tolist()
                self.cmd[k].publish(m)
            reached = all(np.max(np.abs(q["torso" if k == "torso" else "left_arm"] - goals[k])) < 0.005 for k in goals)
            if reached and all(np.allclose(des[k], goals[k]) for k in goals):
                return     # HDAS holds the last command from here on (command_timeout)
            time.sleep(0.05)
        q, _ = self.truth_q()
        self.fail(f"the joints did not reach the goals within {timeout} s: torso {q['torso'].round(3).tolist()}, "
                  f"left arm {q['left_arm'].round(3).tolist()}")

    def set_remote(self, mode, lx=0.0, ly=0.0, rx=0.0, ry=0.0, timeout=120.0):
        """Set the simulated remote and wait until HDAS reports it on /controller."""
        self.remote.publish(controller_signal(left_x_axis=lx, left_y_axis=ly, right_x_axis=rx, right_y_axis=ry,
                                              mode=mode))

        def same(m):
            d = m.data
            return d.mode == mode and np.allclose([d.left_x_axis, d.left_y_axis, d.right_x_axis, d.right_y_axis],
                                                  [lx, ly, rx, ry], atol=0.002)
        return self.controller.wait(timeout, same)

    def sleep_ros(self, seconds, timeout=120.0):
        """At least `seconds` of ROS (simulated) time: the manager's 20 Hz ticks ran."""
        t0, deadline = rospy.get_time(), time.monotonic() + timeout
        while rospy.get_time() - t0 < seconds and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertGreaterEqual(rospy.get_time() - t0, seconds, "ROS time stopped advancing")

    def engage(self):
        """Mode 2 with the sticks at rest, seen by the manager (it drives only after that)."""
        self.set_remote(2)
        self.sleep_ros(0.3)
        self.twist_matching(lambda t: t.linear.x == 0.0 and t.linear.y == 0.0 and t.angular.z == 0.0)

    def twist_matching(self, predicate, timeout=120.0):
        return self.chassis.wait(timeout, predicate)

    # -- poses -------------------------------------------------------------------------------------
    def pose_window(self, stall=0):
        """Records feedback and poses over 1 s of simulated time and checks one pose per feedback
        message the node got, stamped with the feedback's stamp, equal to FK of that feedback.
        `stall` > 0 stops the pose estimator's process (SIGSTOP) in the window until that many
        feedback messages of every stream went by, so it falls behind. Returns per stream the
        feedback messages the node says it missed, and how many went by while it was stopped."""
        # the node's own count of feedback it never got (fell behind), before the window
        before = {k: self.node_counts(k) for k in POSES}
        for k in POSES:      # feedback recorded first: each recorded pose's feedback is recorded too
            self.fb_rec[k].start()
        for k in POSES:
            deadline = time.monotonic() + 60
            while len(self.fb_rec[k].items) < 3 and time.monotonic() < deadline:
                time.sleep(0.02)
            self.pose_rec[k].start()
        stalled = {}
        if stall:
            time.sleep(0.2)
            pid = node_pid("/r1_eepose_pub_node")
            before_stop = {k: len(self.fb_rec[k].items) for k in POSES}
            os.kill(pid, signal.SIGSTOP)
            try:
                deadline = time.monotonic() + 60
                while (min(len(self.fb_rec[k].items) - before_stop[k] for k in POSES) < stall
                       and time.monotonic() < deadline):
                    time.sleep(0.02)
            finally:
                os.kill(pid, signal.SIGCONT)
            stalled = {k: len(self.fb_rec[k].items) - before_stop[k] for k in POSES}
        t0 = rospy.get_time()
        deadline = time.monotonic() + 120
        while rospy.get_time() - t0 < 1.0 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        missed = {}
        for k, (topic, _, _) in POSES.items():
            self.pose_rec[k].recording = False
            time.sleep(0.3)
            fbs, poses = self.fb_rec[k].stop(), self.pose_rec[k].stop()
            first = min(m.header.stamp for _, m in fbs)      # a pose of older feedback, late: window-cut
            poses = [(t, p) for t, p in poses if p.header.stamp >= first]
            # messages this test itself never got (a publisher skips a subscriber that falls far behind)
            own_missed, own_missed_poses = seq_gaps(fbs), seq_gaps(poses)
            by_stamp = {m.header.stamp.to_nsec(): m for _, m in fbs}
            self.assertGreater(len(poses), 20, f"{topic}: too few poses")
            matched = [(by_stamp[p.header.stamp.to_nsec()], p) for _, p in poses
                       if p.header.stamp.to_nsec() in by_stamp]
            self.assertLessEqual(len(poses) - len(matched), own_missed,
                                 f"{topic}: poses whose stamp is no feedback's stamp")
            # per stamp no more poses than feedback messages (HDAS may stamp two messages alike on a
            # slow simulated clock), and no fewer in all than the node says it missed (it fell behind
            # and rospy kept the newest for it). The first and last stamps are cut by the window.
            pose_count = Counter(p.header.stamp.to_nsec() for _, p in poses)
            lo, hi = min(pose_count), max(pose_count)
            fb_count = Counter(s for s in (m.header.stamp.to_nsec() for _, m in fbs) if lo < s < hi)
            inner = Counter({s: n for s, n in pose_count.items() if lo < s < hi})
            extra = inner - fb_count
            self.assertLessEqual(sum(extra.values()), own_missed,
                                 f"{topic}: more poses than feedback messages for stamps {sorted(extra)[:5]}")
            after = self.node_counts(k, published_at_least=before[k][1] + len(poses))
            missed[k] = after[0] - before[k][0]
            lost = fb_count - inner
            self.assertLessEqual(sum(lost.values()), missed[k] + own_missed_poses,
                                 f"{topic}: feedback messages without a pose that the node did not count as "
                                 f"missed (stamps {sorted(lost)[:5]})")
            inside = sum(fb_count.values())
            self.assertGreater(sum(inner.values()), inside / 2, f"{topic}: the node missed most feedback")
            for fb, p in matched[:: max(1, len(matched) // 10)]:
                d = dict(zip(fb.name, fb.position))
                if k == "torso":
                    exp = self.model.pose("torso_link4", self.model.configuration(
                        {"torso": [d[j] for j in self.groups["torso"]]}), "base_link")
                else:
                    exp = self.model.pose(f"{k}_gripper_link", self.model.configuration(
                        {f"{k}_arm": [d[j] for j in self.groups[f"{k}_arm"]]}), "torso_link4")
                dp, dr = pose_error(se3(p), exp)
                self.assertLess(dp, 1e-6)
                self.assertLess(dr, 1e-6)
            rospy.loginfo(f"eepose_rc_sim: {topic}{f' (node stopped for {stalled[k]} messages)' if stall else ''}: "
                          f"{sum(inner.values())} poses for {inside} feedback messages (inner stamps); the node "
                          f"missed {missed[k]}, this test {own_missed} feedback and {own_missed_poses} poses")
        return missed, stalled

    def test_a_poses_equal_fk_of_the_true_joints(self):
        self.check_poses_against_truth("standing")
        self.pose_window()
        # the torso and the left arm moved: poses follow
        q_before, _ = self.truth_q()
        goal_arm = np.clip(q_before["left_arm"] + LEFT_ARM_DELTA, self.model.limits("left_arm").lower + 0.05,
                           self.model.limits("left_arm").upper - 0.05)
        t0 = time.monotonic()
        self.ramp({"torso": TORSO_GOAL, "left": goal_arm})
        rospy.loginfo(f"eepose_rc_sim: torso and left arm moved in {time.monotonic() - t0:.0f} s")
        q = self.check_poses_against_truth("moved")
        self.assertGreater(np.max(np.abs(q["torso"])), 0.3, "the torso did not move")
        base = self.pose["torso"].wait()
        self.assertGreater(abs(pin.rpy.matrixToRpy(se3(base).rotation)[2]), 0.3, "torso yaw not in the pose")
        status = self.diag.wait("fk_calculator: torso", lambda s: s.message == "publishing")
        rospy.loginfo(f"eepose_rc_sim: diagnostics {[(kv.key, kv.value) for kv in status.values]}")

    def test_b_joint_states_carry_every_urdf_joint(self):
        urdf_joints = {self.model.model.names[i] for i in range(1, self.model.model.njoints)}
        msg = self.joint_states.wait(120, lambda m: set(m.name) >= urdf_joints)
        self.assertEqual(set(msg.name), urdf_joints)
        self.assertEqual(len(msg.name), len(msg.position))
        self.assertTrue(np.all(np.isfinite(msg.position)))
        d = dict(zip(msg.name, msg.position))
        truth, _ = self.truth_q()
        for g in ("torso", "left_arm", "right_arm"):
            np.testing.assert_allclose([d[j] for j in self.groups[g]], truth[g], atol=0.01)

    def test_a2_a_node_that_falls_behind_counts_the_feedback_it_missed(self):
        # stopped while 100 feedback messages per stream go by: rospy keeps the newest 10 of what
        # piled up for the node when it goes on (or HDAS skipped it), the rest it never gets
        missed, stalled = self.pose_window(stall=100)
        for k, (topic, _, _) in POSES.items():
            self.assertGreaterEqual(stalled[k], 100, f"{topic}: the feedback stopped too")
            self.assertGreaterEqual(missed[k], stalled[k] / 2, f"{topic}: the stopped node counted "
                                    f"{missed[k]} missed feedback messages of {stalled[k]}")

    def test_b2_bad_feedback_is_dropped(self):
        pub = rospy.Publisher("/hdas/feedback_torso", JointState, queue_size=10)
        time.sleep(2.0)      # connected
        before = self.diag.wait("fk_calculator: torso", lambda s: True)
        dropped0 = int({kv.key: kv.value for kv in before.values}["dropped"])
        self.pose_rec["torso"].start()
        names = list(self.groups["torso"])
        bad = [JointState(name=names, position=[0.1, float("nan"), 0.0, 0.0]),
               JointState(name=names[:3], position=[0.1, 0.2, 0.3]),
               JointState(position=[0.1, 0.2, 0.3, 0.4, 0.5])]
        for m in bad:
            m.header.stamp = rospy.Time(12345, 678)
            pub.publish(m)
            time.sleep(0.1)
        status = self.diag.wait("fk_calculator: torso", lambda s: int(
            {kv.key: kv.value for kv in s.values}["dropped"]) >= dropped0 + len(bad))
        poses = self.pose_rec["torso"].stop()
        self.assertTrue(poses, "no poses after bad feedback: the node stopped")
        self.assertFalse([p for _, p in poses if p.header.stamp == rospy.Time(12345, 678)], "a bad message gave a pose")
        rospy.loginfo(f"eepose_rc_sim: bad feedback: {[(kv.key, kv.value) for kv in status.values][:3]}")
        pub.unregister()

    # -- remote ------------------------------------------------------------------------------------
    def test_c_remote_drives_in_mode_2_and_is_silent_in_mode_5(self):
        # mode 2, sticks at rest, then the left stick forward: forward at 0.5 rescaled × 1.0 m/s
        self.engage()
        self.set_remote(2, ly=0.5)
        expected = (0.5 - 0.05) / 0.95 * 1.0
        t = self.twist_matching(lambda t: t.linear.x > 0.0)
        self.assertAlmostEqual(t.linear.x, expected, delta=0.003)
        self.assertEqual((t.linear.y, t.angular.z), (0.0, 0.0))
        # stick left (and right stick left): drives left and turns left (counter-clockwise)
        self.set_remote(2, lx=-1.0, rx=-1.0)
        t = self.twist_matching(lambda t: t.linear.y > 0.0)
        self.assertAlmostEqual(t.linear.y, 0.5, delta=0.003)
        self.assertAlmostEqual(t.angular.z, 1.0, delta=0.003)
        self.assertEqual(t.linear.x, 0.0)
        # another mode: park
        self.set_remote(3, ly=1.0)
        self.twist_matching(lambda t: t.linear.x == 0.0 and t.linear.y == 0.0 and t.angular.z == 0.0)
        # mode 5: nothing at all (after the handover stop, if any)
        self.engage()
        self.set_remote(2, ly=1.0)
        self.twist_matching(lambda t: t.linear.x > 0.9)
        self.set_remote(5, ly=1.0)
        self.diag.wait("r1_control_manager: remote", lambda s: s.message == "host in control")
        time.sleep(0.5)
        self.chassis_rec.start()
        # 2 s of wall time, and enough ROS time for the manager's 20 Hz loop to have ticked
        # (simulated time ran at 4-15 % of real time here)
        t_ros, t_wall = rospy.get_time(), time.monotonic()
        while (time.monotonic() - t_wall < 2.0 or rospy.get_time() - t_ros < 0.3) \
                and time.monotonic() - t_wall < 120.0:
            time.sleep(0.05)
        silent = self.chassis_rec.stop()
        ros_span = rospy.get_time() - t_ros
        rospy.loginfo(f"eepose_rc_sim: mode 5: {len(silent)} Twists in {time.monotonic() - t_wall:.1f} s wall, "
                      f"{ros_span:.2f} s ROS time")
        self.assertGreaterEqual(ros_span, 0.3, "ROS time did not advance: the silence proves nothing")
        self.assertEqual(silent, [], f"Twists published in mode 5: {[m for _, m in silent][:3]}")
        self.assertEqual(self.controller.wait().data.mode, 5)

    def test_d_gesture_publishes_the_stand_target(self):
        self.engage()
        before = self.torso_target.count
        d = float(np.sqrt(0.5))
        self.set_remote(2, lx=-d, ly=d, rx=d, ry=d)      # both sticks up and outward (round gate)
        self.chassis_rec.start()
        msg = self.torso_target.wait(180, lambda m: self.torso_target.count > before)
        held = self.chassis_rec.stop()
        np.testing.assert_allclose(msg.position, [0.0, 0.0, 0.0, 0.0])
        np.testing.assert_allclose(msg.velocity, [0.25] * 4)
        self.assertEqual(list(msg.name), list(self.groups["torso"]))
        self.assertTrue(held and all(m.linear.x == 0.0 and m.linear.y == 0.0 and m.angular.z == 0.0
                                     for _, m in held), "the chassis drove while the gesture was held")
        time.sleep(1.0)
        self.assertEqual(self.torso_target.count, before + 1, "the gesture fired more than once")
        self.set_remote(5)


if __name__ == "__main__":
    rostest.rosrun("mobiman", "eepose_rc_sim", EePoseRcSimTest)
