#!/usr/bin/env python3
"""HDAS against the simulated R1 (r1_sim.launch): topics, services, physics, safety, faults.

Every check goes through the real chain: ROS topic -> HDAS -> CAN frames on the r1sim
buses -> simulated motors and pinocchio physics -> CAN feedback -> HDAS -> ROS topic.
"""
import math
import subprocess
import time
import unittest
from pathlib import Path

import numpy as np
import pinocchio as pin
import rosgraph
import rosnode
import rospkg
import rospy
import rostest
from diagnostic_msgs.msg import DiagnosticArray
from hdas_msg.msg import bms, controller_signal_stamped, feedback_status, motor_control
from hdas_msg.srv import FunctionFrame
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float32

from r1_common.loop_stats import STANDARD_KEYS
from r1_common.ros_testing import Latest, Recorder
from r1_sim.srv import InjectFault

ARM_JOINTS = [f"left_arm_joint{k}" for k in range(1, 7)]
TORSO_JOINTS = [f"torso_joint{k}" for k in range(1, 5)]
GUIDE_KP = [140, 200, 120, 20, 20, 20]
GUIDE_KD = [10, 50, 5, 1, 1, 0.4]


class HdasSimTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rospy.init_node("test_hdas_sim", anonymous=True)
        cls.fb = {name: Latest(f"/hdas/{name}", JointState) for name in (
            "feedback_arm_left", "feedback_arm_right", "feedback_torso", "feedback_chassis",
            "feedback_gripper_left", "feedback_gripper_right")}
        cls.status = {name: Latest(f"/hdas/feedback_status_{name}", feedback_status) for name in (
            "arm_left", "arm_right", "torso", "chassis", "gripper_left", "gripper_right")}
        cls.imu = {name: Latest(f"/hdas/imu_{name}", Imu) for name in ("chassis", "torso")}
        cls.bms = Latest("/hdas/bms", bms)
        cls.controller = Latest("/controller", controller_signal_stamped)
        cls.odom = Latest("/sim/odom", Odometry)
        cls.truth = Latest("/sim/joint_states", JointState)
        cls.diagnostics = Latest("/diagnostics", DiagnosticArray)
        cls.pub = {name: rospy.Publisher(f"/motion_control/{name}", motor_control, queue_size=1) for name in (
            "control_arm_left", "control_arm_right", "control_torso", "control_chassis", "control_gripper_left")}
        cls.stroke = rospy.Publisher("/motion_control/position_control_gripper_left", Float32, queue_size=1)
        for name in ("left_arm", "right_arm", "torso"):
            rospy.wait_for_service(f"/hdas/function_frame_{name}", timeout=120)
        cls.frame = {name: rospy.ServiceProxy(f"/hdas/function_frame_{name}", FunctionFrame)
                     for name in ("left_arm", "right_arm", "torso")}
        rospy.wait_for_service("/sim/inject_fault", timeout=120)
        cls.inject = rospy.ServiceProxy("/sim/inject_fault", InjectFault)
        # arms enabled in MIT at boot: wait until every arm joint answers enabled
        cls.status["arm_left"].wait(120, lambda m: all(e.error_code == 0 for e in m.errors))
        # gravity as a teleoperation program computes it: pinocchio on the URDF (RNEA at rest)
        share = Path(rospkg.RosPack().get_path("r1_description")) / "urdf/r1_v2_1_0.urdf"
        cls.model = pin.buildModelFromXML(share.read_text())
        cls.data = cls.model.createData()

    # -- helpers ----------------------------------------------------------------------------
    def gravity_left(self, arm_q):
        torso = self.fb["feedback_torso"].wait().position
        m = self.model
        q = pin.neutral(m)
        for names, values in ((TORSO_JOINTS, torso[:4]), (ARM_JOINTS, arm_q)):
            for name, value in zip(names, values):
                q[m.joints[m.getJointId(name)].idx_q] = value
        tau = pin.computeGeneralizedGravity(m, self.data, q)
        return np.array([tau[m.joints[m.getJointId(name)].idx_v] for name in ARM_JOINTS])

    def command_left(self, p, kp, kd, t, v=None):
        msg = motor_control(p_des=list(p), v_des=list(v if v is not None else [0.0] * 6), kp=list(kp),
                            kd=list(kd), t_ff=list(t))
        self.pub["control_arm_left"].publish(msg)

    def arm_left(self):
        return np.array(self.fb["feedback_arm_left"].wait().position[:6])

    def move_left_arm(self, target, seconds=3.0, tolerance=0.03, timeout=20.0):
        """Servo the left arm to `target` (guide gains + gravity feed-forward) at 100 Hz.

        A smooth ramp over `seconds`, then the target held until every joint is within
        `tolerance` and at rest (the simulator may run behind the wall clock on a busy machine).
        """
        start = self.arm_left()
        target = np.asarray(target)
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            s = min(1.0, (time.monotonic() - t0) / seconds)
            p = start + (target - start) * (3 * s * s - 2 * s ** 3)
            fb = self.fb["feedback_arm_left"].wait()
            q = np.array(fb.position[:6])
            self.command_left(p, GUIDE_KP, GUIDE_KD, self.gravity_left(q))
            if s >= 1.0 and np.max(np.abs(q - target)) < tolerance and np.max(np.abs(fb.velocity[:6])) < 0.02:
                return
            time.sleep(0.01)

    def call(self, group, command):
        return self.frame[group](command)

    # -- item 4: topics, types, layout ------------------------------------------------------
    def test_feedback_layout(self):
        arm = self.fb["feedback_arm_left"].wait()
        self.assertEqual(list(arm.name), ARM_JOINTS + ["left_gripper_finger_joint1"])
        self.assertEqual((len(arm.position), len(arm.velocity), len(arm.effort)), (7, 7, 7))
        right = self.fb["feedback_arm_right"].wait()
        self.assertEqual(right.name[0], "right_arm_joint1")
        torso = self.fb["feedback_torso"].wait()
        self.assertEqual(list(torso.name), [f"torso_joint{k}" for k in range(1, 5)])
        self.assertEqual(len(torso.position), 4)
        chassis = self.fb["feedback_chassis"].wait()
        self.assertEqual(list(chassis.name), [f"steer_motor_joint{k}" for k in range(1, 4)])
        self.assertEqual((len(chassis.position), len(chassis.velocity), len(chassis.effort)), (3, 3, 6))
        self.assertEqual(list(chassis.effort), [0.0] * 6)
        grip = self.fb["feedback_gripper_left"].wait()
        self.assertEqual(len(grip.position), 1)
        self.assertTrue(0.0 <= grip.position[0] <= 100.0, grip.position)
        # the start pose of the simulator, seen through the driver
        self.assertAlmostEqual(arm.position[0], -1.5708, delta=0.05)
        self.assertAlmostEqual(arm.position[2], -2.8919, delta=0.05)

    def test_status_topics(self):
        for name, latest in self.status.items():
            msg = latest.wait(120)
            self.assertTrue(msg.name_id, name)
            # all clear (a frame lost while the machine is starved may flag one report: wait for a clean one)
            msg = latest.wait(120, lambda m: all(e.error_code == 0 for e in m.errors))
            for e in msg.errors:
                self.assertEqual(e.error_description, [], f"{name} {e.name}")
        self.assertEqual([e.name for e in self.status["arm_left"].wait().errors], ARM_JOINTS)
        self.assertEqual(len(self.status["torso"].wait().errors), 4)

    def test_boards(self):
        imu = self.imu["chassis"].wait()
        self.assertEqual(imu.header.frame_id, "imu_chassis_link")
        a = imu.linear_acceleration
        self.assertAlmostEqual(math.sqrt(a.x ** 2 + a.y ** 2 + a.z ** 2), 9.81, delta=0.05)
        q = imu.orientation
        self.assertAlmostEqual(q.x ** 2 + q.y ** 2 + q.z ** 2 + q.w ** 2, 1.0, delta=1e-3)
        torso_imu = self.imu["torso"].wait()
        self.assertEqual(torso_imu.header.frame_id, "imu_torso_link")
        battery = self.bms.wait()
        self.assertTrue(42.0 <= battery.voltage <= 60.0, battery.voltage)
        self.assertTrue(0.0 < battery.capital <= 100.0, battery.capital)
        self.assertGreater(battery.current, 0.0)
        rc = self.controller.wait()
        self.assertEqual(rc.data.mode, 5)
        self.assertEqual((rc.data.left_x_axis, rc.data.left_y_axis), (0.0, 0.0))

    def test_simulator_keeps_its_own_clock(self):
        """The simulator publishes /clock without reading it back, and its own stamps follow it."""
        _, subscribers, _ = rosgraph.Master("/test_hdas_sim").getSystemState()
        clock_readers = dict(subscribers).get("/clock", [])
        self.assertIn("/HDAS", clock_readers)
        self.assertNotIn("/r1_sim", clock_readers)
        for _ in range(3):   # the simulator's /diagnostics (1 Hz of wall time), stamped with its ROS time
            sim = self.diagnostics.wait(30, lambda m: any(s.name.startswith("r1_sim") for s in m.status))
            self.assertGreater(sim.header.stamp.to_sec(), 0.0)
            self.assertLess(abs(sim.header.stamp.to_sec() - rospy.get_time()), 2.0)
            time.sleep(1.0)

    # -- item 5: services ---------------------------------------------------------------------
    def test_mode_change_refused_while_enabled_then_2_6_1(self):
        r = self.call("right_arm", 6)
        self.assertFalse(r.success)
        self.assertIn("disabled first", r.message)
        self.assertFalse(self.call("right_arm", 3).success)       # calibration while enabled
        self.assertFalse(self.call("right_arm", 9).success)       # unknown command
        for command in (2, 6, 1):
            r = self.call("right_arm", command)
            self.assertTrue(r.success, f"command {command}: {r.message}")
        before = np.array(self.fb["feedback_arm_right"].wait().position[:6])
        time.sleep(0.5)      # PID hold of the measured position keeps the arm where it was
        after = np.array(self.fb["feedback_arm_right"].wait().position[:6])
        self.assertLess(np.max(np.abs(after - before)), 0.05)
        for command in (2, 5, 1):
            r = self.call("right_arm", command)
            self.assertTrue(r.success, f"command {command}: {r.message}")

    # -- MIT physics: a raised arm falls without feed-forward and holds with RNEA gravity ---------
    def test_gravity_fall_and_rnea_hold(self):
        raised = np.array([-0.6, 0.4, -1.2, 0.0, 0.3, 0.0])
        g = self.gravity_left(raised)
        self.assertGreater(abs(g[0]) + abs(g[1]), 3.0, "pose must load the shoulder")
        self.move_left_arm(raised)
        np.testing.assert_allclose(self.arm_left(), raised, atol=0.08)
        # kp = 0, t_ff = RNEA gravity at the measured configuration: holds. A little damping
        # (kd = 1, no position feedback at all) removes the velocity the move leaves behind,
        # which in this neutral equilibrium would otherwise coast; kd alone cannot hold the
        # shoulder's 6 N·m (it would sink at 6 rad/s), so holding proves the gravity term.
        start = self.arm_left()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.5:
            self.command_left(start, [0.0] * 6, [1.0] * 6, self.gravity_left(self.arm_left()))
            time.sleep(0.005)
        held = self.arm_left()
        drift = np.max(np.abs(held - start))
        # a neutral equilibrium held by a feed-forward that is up to a stall old: it creeps a
        # little on a starved machine; unsupported it falls far more (below)
        self.assertLess(drift, 0.1, f"drifted {held - start}")
        # kp = kd = 0, t_ff = 0: it falls (judged by how far, not how fast: the machine may be busy)
        deadline = time.monotonic() + 10.0
        fallen = self.arm_left()
        while np.max(np.abs(fallen - start)) < 0.3 and time.monotonic() < deadline:
            self.command_left(start, [0.0] * 6, [0.0] * 6, [0.0] * 6)
            time.sleep(0.01)
            fallen = self.arm_left()
        self.assertGreater(np.max(np.abs(fallen - start)), 0.3, f"moved only {fallen - start}")
        self.assertGreater(np.max(np.abs(fallen - start)), 3 * drift, "fell no further than it drifted when held")
        # back home for the other tests
        self.move_left_arm([-1.5708, 0.0, -2.8919, 0.0, 0.0657, 0.0])

    # -- item 6: safety -----------------------------------------------------------------------
    def test_malformed_commands_dropped_node_lives(self):
        home = self.arm_left()
        bad = [
            motor_control(p_des=[0.0] * 5, v_des=[0.0] * 5, kp=[50.0] * 5, kd=[1.0] * 5, t_ff=[0.0] * 5),
            motor_control(p_des=[float("nan")] * 6, v_des=[0.0] * 6, kp=[50.0] * 6, kd=[1.0] * 6, t_ff=[0.0] * 6),
            motor_control(p_des=[0.0] * 6, v_des=[0.0] * 6, kp=[50.0] * 6, kd=[1.0] * 6, t_ff=[float("inf")] * 6),
            motor_control(p_des=[0.0] * 6, v_des=[0.0] * 6, kp=[50.0] * 2, kd=[1.0] * 6, t_ff=[0.0] * 6),
        ]
        count = self.fb["feedback_arm_left"].count
        for _ in range(20):
            for msg in bad:
                self.pub["control_arm_left"].publish(msg)
            time.sleep(0.01)
        self.fb["feedback_arm_left"].wait(120, lambda m: self.fb["feedback_arm_left"].count > count + 50)
        self.assertIn("/HDAS", rosnode.get_node_names())
        # a NaN or short command executed would swing the arm by a radian or more
        self.assertLess(np.max(np.abs(self.arm_left() - home)), 0.1)
        # counted in the bus's diagnostics, beside the standard keys of every node (docs/diagnostics.md)
        bus = lambda m: {kv.key: kv.value for s in m.status if s.name == "HDAS: bus left_arm" for kv in s.values}
        values = bus(self.diagnostics.wait(120, lambda m: int(bus(m).get("dropped", 0)) > 0))
        for key in (*STANDARD_KEYS, "clamped", "errors", "load_percent"):
            self.assertIn(key, values)
        self.assertGreater(float(values["rate_hz"]), 0.0)
        # every subscriber of the feedback streams (this test's among them) reads: none was cut off
        self.assertEqual(values["feedback_subscribers_disconnected"], "0")

    def test_chassis_stream_stop_stops_wheels(self):
        odom0 = self.odom.wait()

        def drive_until(done, timeout=180.0):
            deadline = time.monotonic() + timeout
            while not done() and time.monotonic() < deadline:
                self.pub["control_chassis"].publish(motor_control(p_des=[0.0] * 3, v_des=[0.4] * 3))
                time.sleep(0.02)

        at_speed = lambda: all(abs(s - 0.4) < 0.05 for s in self.fb["feedback_chassis"].wait().velocity)
        drive_until(at_speed)
        self.assertTrue(at_speed(), self.fb["feedback_chassis"].wait().velocity)
        moved = lambda: self.odom.wait().pose.pose.position.x - odom0.pose.pose.position.x > 0.2
        drive_until(moved)
        self.assertTrue(moved())
        self.assertLess(abs(self.odom.wait().pose.pose.position.y - odom0.pose.pose.position.y), 0.05)
        # the stream stops: the wheels ramp to zero and the base stops
        self.fb["feedback_chassis"].wait(120, lambda m: all(abs(s) < 0.01 for s in m.velocity))
        twist = self.odom.wait(120, lambda m: abs(m.twist.twist.linear.x) < 0.01).twist.twist
        self.assertAlmostEqual(twist.linear.x, 0.0, delta=0.01)

    def test_gripper_stroke_position_control(self):
        for _ in range(5):
            self.stroke.publish(Float32(60.0))
            time.sleep(0.05)
        msg = self.fb["feedback_gripper_left"].wait(120, lambda m: abs(m.position[0] - 60.0) < 3.0)
        self.assertAlmostEqual(msg.position[0], 60.0, delta=3.0)

    def truth_speeds(self, joints, seconds, during=None):
        """The largest speed of each joint in the ground truth (/sim/joint_states, 100 Hz) over
        `seconds` of simulated time, by finite differences; `during` runs after the start (once, or
        with an argument `done` until it is true, if it takes one)."""
        rec = Recorder("/sim/joint_states", JointState)
        time.sleep(0.5)
        rec.start()
        first = self.truth.wait().header.stamp.to_sec()
        done = lambda: self.truth.wait().header.stamp.to_sec() - first > seconds
        if during is not None:
            during(done) if during.__code__.co_argcount else during()
        self.truth.wait(300, lambda m: m.header.stamp.to_sec() - first > seconds)
        msgs = [m for _, m in rec.stop()]
        t = np.array([m.header.stamp.to_sec() for m in msgs])
        q = np.array([[m.position[m.name.index(j)] for j in joints] for m in msgs])
        keep = np.diff(t) > 0
        return np.max(np.abs(np.diff(q, axis=0)[keep] / np.diff(t)[keep][:, None]), axis=0), q[-1]

    def test_gripper_stroke_step_ramps_at_the_finger_speed_limit(self):
        """Regression (issue 19): a stroke step 0 -> 100 mm moved the fingers at 1.7-2.9x the URDF's
        0.25 m/s (the set-point stepped); HDAS now ramps it at the limit."""
        finger = "left_gripper_finger_joint1"
        self.stroke.publish(Float32(0.0))
        self.fb["feedback_gripper_left"].wait(120, lambda m: m.position[0] < 5.0)
        speed, end = self.truth_speeds([finger], 1.0, lambda: self.stroke.publish(Float32(100.0)))
        self.assertAlmostEqual(end[0], 0.05, delta=0.002)
        # HDAS's set-point ramps at exactly the limit (test_command_limits.py holds it to that); the finger,
        # measured on the ground truth, follows it with a PD's transient: 0.23 m/s on a quiet machine, up to
        # 1.09x the limit when a loaded machine delivers /clock to HDAS in coarser steps (docs/safety.md).
        # The regression this guards against moved it at 1.7-2.9x.
        self.assertLessEqual(speed[0], 0.25 * 1.15, "finger faster than its URDF velocity limit")

    def test_raw_arm_steps_ramp_at_the_velocity_limit(self):
        """A raw motor_control step of a radian or more on one joint (a publisher streaming the guide's
        gains with gravity feed-forward, as a teleoperation program would) reaches the motors as a
        ramp at the joint's velocity limit, with v_des the ramp's speed: the joint stays near its
        limit. Measured on the simulated robot without the ramp: 1.4-3.7x the limit (a wrist at
        18 rad/s); with it 1.00-1.05x, the shoulder pitch 1.25x (the guide's kp 200 with kd capped
        at 5 by the frame: an underdamped spring overshoots any start; docs/safety.md)."""
        home = self.arm_left()
        start = np.array([-1.2, 0.4, -2.0, 0.0, 0.0, 0.0])
        steps = [0.9, 0.9, 0.9, 1.5, 1.0, 1.5]
        limits = np.array([3.0, 3.0, 3.0, 5.0, 5.0, 5.0])
        speeds = []
        try:
            for k in range(6):
                self.move_left_arm(start)
                target = self.arm_left()
                target[k] += steps[k]

                def stream(done):
                    while not done():
                        self.command_left(target, GUIDE_KP, GUIDE_KD, self.gravity_left(self.arm_left()))
                        time.sleep(0.01)
                speed, _ = self.truth_speeds(ARM_JOINTS, 1.0, stream)
                speeds.append(speed[k])
        finally:
            self.move_left_arm(home)
        ratio = np.array(speeds) / limits
        rospy.loginfo(f"raw steps: peak speed / velocity limit per joint {ratio.round(2).tolist()}")
        self.assertTrue(np.all(ratio <= 1.35), f"peak speed / limit {ratio.round(2).tolist()}")

    def test_two_commanders_on_one_topic_are_named_and_warned(self):
        """A second node streaming on a /motion_control topic that another node also streams on makes
        them fight over the motors: HDAS names both in /diagnostics (HDAS: commanders) and warns."""
        topic = "/motion_control/position_control_gripper_left"
        other = subprocess.Popen(["rostopic", "pub", "-r", "20", topic, "std_msgs/Float32", "data: 60.0",
                                  "__name:=teleop_program"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        commanders = lambda m: next((s for s in m.status if s.name == "HDAS: commanders"), None)
        try:
            deadline = time.monotonic() + 120
            found = None
            while time.monotonic() < deadline and found is None:
                self.stroke.publish(Float32(60.0))
                m = self.diagnostics.wait(10)
                st = commanders(m)
                if st is not None and st.level == 1:
                    found = st
                time.sleep(0.05)
            self.assertIsNotNone(found, "no WARN from HDAS: commanders while two nodes stream")
            listed = next(kv.value for kv in found.values if kv.key == topic)
            self.assertIn("/teleop_program", listed)
            self.assertIn(rospy.get_name(), listed)
            self.assertIn(topic, found.message)
        finally:
            other.terminate()
            other.wait(30)
        # one commander again: OK once the other has been silent for the active window
        self.diagnostics.wait(120, lambda m: commanders(m) is not None and commanders(m).level == 0)

    def fault_report(self, joint, fault, words, topic="arm_left"):
        """Inject `fault` on `joint`: (report delay in simulated time, the status message). The
        report is the first feedback_status naming `joint` with every one of `words`."""
        index = next(i for i, m in enumerate(self.status[topic].wait().errors) if m.name == joint)
        rec = Recorder(f"/hdas/feedback_status_{topic}", feedback_status)
        time.sleep(0.5)
        rec.start()
        r = self.inject(joint, fault)
        self.assertTrue(r.success, r.message)
        shows = lambda m: all(w in m.errors[index].error_description for w in words)
        self.status[topic].wait(120, shows)
        first = next(m for _, m in rec.stop() if shows(m))
        return first.header.stamp.to_sec() - r.stamp.to_sec(), first

    def test_faults_are_reported_within_100_ms_and_named_in_diagnostics(self):
        """Regression (issue 19): faults showed on feedback_status only at its 1 Hz cadence (0.2-1 s
        late) and /diagnostics named no joint. A change of a joint's error bits is published at once."""
        try:
            delay, msg = self.fault_report("left_arm_joint3", "over_temperature", ["MOTOR_OVER_TEMP"])
            rospy.loginfo(f"faults: over-temperature reported {delay * 1e3:.0f} ms (simulated) after injection")
            self.assertLessEqual(delay, 0.1, f"over-temperature reported {delay:.3f} s after it happened")
            self.assertGreater(delay, -0.01)
            joints = lambda m: {kv.key: kv.value for s in m.status if s.name == "HDAS: joints left_arm"
                                for kv in s.values}
            diag = self.diagnostics.wait(60, lambda m: "left_arm_joint3" in joints(m))
            self.assertIn("MOTOR_OVER_TEMP", joints(diag)["left_arm_joint3"])
            level = next(s.level for s in diag.status if s.name == "HDAS: joints left_arm")
            self.assertEqual(level, 2)
            delay, _ = self.fault_report("left_arm_joint5", "no_reply", ["RECEIVE_TIMEOUT"])
            rospy.loginfo(f"faults: silent motor declared {delay * 1e3:.0f} ms (simulated) after it fell silent")
            self.assertLessEqual(delay, 0.1, f"a silent motor declared {delay:.3f} s after it fell silent")
        finally:
            self.inject("left_arm_joint3", "none")
            self.inject("left_arm_joint5", "none")
            self.call("left_arm", 4)
            self.status["arm_left"].wait(120, lambda m: all(e.error_code == 0 for e in m.errors))
        joints = lambda m: {kv.key for s in m.status if s.name == "HDAS: joints left_arm" for kv in s.values}
        self.diagnostics.wait(60, lambda m: "HDAS: joints left_arm" in {s.name for s in m.status}
                              and joints(m) == {"joints_in_error"})

    # -- item 7 + 13: faults --------------------------------------------------------------------
    def test_injected_fault_shows_and_clears_with_4(self):
        r = self.inject("left_arm_joint5", "over_current")
        self.assertTrue(r.success, r.message)
        try:
            msg = self.status["arm_left"].wait(120, lambda m: "OVER_CURRENT" in m.errors[4].error_description)
            self.assertEqual(msg.errors[4].error_code & (1 << 10), 1 << 10)
            r = self.call("left_arm", 4)
            self.assertTrue(r.success, r.message)
            self.status["arm_left"].wait(120, lambda m: all(e.error_code == 0 for e in m.errors))
        finally:
            self.inject("left_arm_joint5", "none")
            self.call("left_arm", 4)
        self.assertFalse(self.inject("left_arm_joint5", "gremlins").success)
        self.assertFalse(self.inject("no_such_joint", "over_current").success)

    def test_silent_motor_shows_receive_timeout(self):
        self.assertTrue(self.inject("torso_joint2", "no_reply").success)
        try:
            msg = self.status["torso"].wait(120, lambda m: m.errors[1].error_code != 0)
            self.assertIn("RECEIVE_TIMEOUT", msg.errors[1].error_description)
        finally:
            self.assertTrue(self.inject("torso_joint2", "none").success)
        # command 4 brings it back, whether or not its own comm watchdog tripped meanwhile
        self.assertTrue(self.call("torso", 4).success)
        self.status["torso"].wait(120, lambda m: all(e.error_code == 0 for e in m.errors))

    # -- item 8: the self-check passes on the simulated robot --------------------------------------
    # Rates are reported, not judged, here: tests never assert wall-clock figures on a shared
    # machine. The benchmark (scripts/benchmark_hdas) runs the full stock judgement and records it.
    def test_zz_check_node_mode_1(self):
        out = subprocess.run(["rosrun", "HDAS", "check_node", "--mode", "1", "--duration", "4", "--rates", "report"],
                             capture_output=True, text=True, timeout=240)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)


if __name__ == "__main__":
    rostest.rosrun("HDAS", "hdas_sim", HdasSimTest)
