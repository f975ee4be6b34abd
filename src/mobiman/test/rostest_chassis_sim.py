#!/usr/bin/env python3
"""Chassis control on the simulated R1: acceleration, straight motion, pure sideways and yaw,
odometry over a 5 m square, stopped streams, brake mode, remote-controller modes, bad input.

The chain is real: Twist -> chassis_control_node (mobiman.chassis.swerve) -> HDAS -> CAN -> simulated
steer and wheel motors -> the simulator's planar base, whose ground truth (/sim/odom) judges.
Simulated time runs at a fraction of real time here: every wait is a condition with a
wall-time deadline of minutes; durations are measured on ROS (simulated) time.
"""
import math
import os
import signal
import time
import unittest
from typing import Callable, TypeVar

import numpy as np
import rosnode
import rospy
import rostest
import tf2_ros
from geometry_msgs.msg import Twist
from hdas_msg.msg import controller_signal, controller_signal_stamped, motor_control
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Log
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool

from mobiman.chassis.swerve import SwerveKinematics, SwerveParams
from r1_common.ros_testing import Diagnostics, Latest, Recorder, node_pid
from r1_sim.robot import REMOTE_OFF

R1_XY = np.array([[0.21516, 0.28], [0.21516, -0.28], [-0.28084, 0.0]])
ACC_X = 2.5          # config/chassis_control.yaml acc_default
COMMAND_TIMEOUT = 0.2
CONTROLLER_LAPSE = 0.05   # chassis control's controller_lapse: a group's stream silent this long slows the base
T = TypeVar("T")


def twist(vx=0.0, vy=0.0, wz=0.0):
    t = Twist()
    t.linear.x, t.linear.y, t.angular.z = vx, vy, wz
    return t


def yaw_of(m: Odometry) -> float:
    q = m.pose.pose.orientation
    return math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))


def planar(m: Odometry) -> np.ndarray:
    return np.array([m.pose.pose.position.x, m.pose.pose.position.y, yaw_of(m)])


def relative(start: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """`pose` in the frame of `start` (x, y, yaw)."""
    c, s = math.cos(start[2]), math.sin(start[2])
    d = pose[:2] - start[:2]
    return np.array([c * d[0] + s * d[1], -s * d[0] + c * d[1],
                     math.atan2(math.sin(pose[2] - start[2]), math.cos(pose[2] - start[2]))])


def crossing(t: np.ndarray, x: np.ndarray, level: float) -> float:
    """When x first reaches `level`, linearly interpolated between the samples around it."""
    k = int(np.argmax(x >= level))
    if k == 0:
        return float(t[0])
    return float(t[k - 1] + (level - x[k - 1]) / (x[k] - x[k - 1]) * (t[k] - t[k - 1]))


def x_limit(status, key: str):
    """The x entry of chassis control's diagnostics list `key` ("posture acceleration limits +" or "-"), or None."""
    return next((float(kv.value.strip("[]").split(",")[0]) for kv in status.values if kv.key == key), None)


class ChassisSimTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rospy.init_node("chassis_sim_test")
        cls.cmd = rospy.Publisher("/motion_target/target_speed_chassis", Twist, queue_size=10)
        cls.brake = rospy.Publisher("/motion_target/brake_mode", Bool, queue_size=1, latch=True)
        cls.acc = rospy.Publisher("/motion_target/chassis_acc_limit", Twist, queue_size=1)
        cls.remote = rospy.Publisher("/sim/remote", controller_signal, queue_size=1, latch=True)
        cls.truth = Latest("/sim/odom", Odometry)
        cls.odom = Latest("/odom", Odometry)
        cls.feedback = Latest("/hdas/feedback_chassis", JointState)
        cls.speed = Latest("/motion_control/chassis_speed", Twist)
        cls.controller = Latest("/controller", controller_signal_stamped)
        cls.diag = Diagnostics()
        cls.tf_buffer = tf2_ros.Buffer()
        cls.tf_listener = tf2_ros.TransformListener(cls.tf_buffer)
        cls.truth.wait(300)
        cls.feedback.wait(300)
        cls.odom.wait(300)
        cls.kin = SwerveKinematics(R1_XY, SwerveParams(max_wheel_speed=2.1))

    # -- helpers -----------------------------------------------------------------------------
    def drive(self, t: Twist, sim_seconds: float, rate_hz: float = 50.0, wall_timeout: float = 300.0):
        """Publish `t` at `rate_hz` of ROS time for `sim_seconds` of ROS time."""
        start, deadline = rospy.get_time(), time.monotonic() + wall_timeout
        rate = rospy.Rate(rate_hz)
        while rospy.get_time() - start < sim_seconds:
            self.assertLess(time.monotonic(), deadline, "simulated time did not advance")
            self.cmd.publish(t)
            rate.sleep()

    def wait_sim(self, sim_seconds: float, wall_timeout: float = 300.0):
        start, deadline = rospy.get_time(), time.monotonic() + wall_timeout
        while rospy.get_time() - start < sim_seconds:
            self.assertLess(time.monotonic(), deadline, "simulated time did not advance")
            time.sleep(0.01)

    def wait_stopped(self, timeout: float = 300.0):
        def still(m):
            tw = m.twist.twist
            return abs(tw.linear.x) < 1e-3 and abs(tw.linear.y) < 1e-3 and abs(tw.angular.z) < 1e-3
        self.truth.wait(timeout, still)

    def controller_silent(self, quiet_s: float = 0.6, timeout: float = 60.0):
        """Until no /controller message came for `quiet_s` of wall time."""
        deadline = time.monotonic() + timeout
        last, since = self.controller.count, time.monotonic()
        while time.monotonic() - since < quiet_s:
            self.assertLess(time.monotonic(), deadline, "/controller did not stop")
            time.sleep(0.02)
            if self.controller.count != last:
                last, since = self.controller.count, time.monotonic()

    def diag_value(self, key: str, above: float = -math.inf) -> int:
        """The chassis node's diagnostics value `key`, once it is above `above`."""
        def value(st):
            return next((int(kv.value) for kv in st.values if kv.key == key), None)
        st = self.diag.wait("chassis_control_node: chassis",
                            lambda st: (value(st) or 0) > above and value(st) is not None)
        return value(st)

    def x_limits(self) -> tuple:
        """The base's acceleration limits along x now (speeding up, slowing down) [m/s²]: the chassis' ACC_X,
        lowered by what the upper body's posture allows (chassis control's diagnostics). In this launch no
        controller drives the arms: HDAS holds them hanging at its hold gains, and chassis control lets the
        base accelerate only as far as they bend within hold_deflection: 2.38 m/s² (issue 28, posture.md)."""
        st = self.diag.wait("chassis_control_node: chassis",
                            lambda st: x_limit(st, "posture acceleration limits +") is not None)
        return (min(ACC_X, x_limit(st, "posture acceleration limits +")),
                min(ACC_X, x_limit(st, "posture acceleration limits -")))

    def without_lapse(self, what: str, prepare: Callable[[], None], measure: Callable[[], T]) -> T:
        """`prepare()`, then `measure()`'s result, taken again (once) if chassis control logged meanwhile a group
        it counts as held by the driver or as driven again (a lapse that began before the measurement ends in
        it): a controller's lapse on a loaded machine lowers the base's acceleration, as it must (on a loaded
        machine the torso's feedback went stale for 0.24 s in a CI run: its controller stopped publishing, HDAS
        held the torso, and chassis control braked at what the hold allows), which is not what these tests
        measure."""
        lapses: list = []
        for _attempt in (1, 2):
            prepare()
            log = Recorder("/rosout", Log)
            torso = Recorder("/motion_control/control_torso", motor_control)
            log.start()
            torso.start()
            result = measure()
            lapses = [e.msg for _, e in log.stop() if e.name.endswith("chassis_control_node")
                      and ("held by the driver" in e.msg or "driven by a controller" in e.msg)]
            sent = np.array([m.header.stamp.to_sec() for _, m in torso.stop()])
            gaps = np.diff(sent) if len(sent) > 1 else np.array([math.inf])
            if gaps.max() > CONTROLLER_LAPSE:      # (its log line is throttled: the stream itself says it)
                lapses.append(f"the torso's controller silent for {gaps.max():.3f} s")
            if not lapses:
                return result
            rospy.logwarn(f"chassis: {what} measured while {lapses[0]!r}: measured again")
        self.fail(f"the torso's controller lapsed in both measurements of {what}: {lapses}")

    def torso_driven(self, timeout: float = 60.0):
        """Until chassis control's diagnostics count the torso as driven by its controller (not held by HDAS):
        a measurement starts on the posture limits of a driven torso."""
        def driven(st):
            held = next((kv.value for kv in st.values if kv.key == "held by the driver"), None)
            return held is not None and "torso" not in held
        self.diag.wait("chassis_control_node: chassis", driven, timeout)

    def stop_from(self, speed: float, braking: float) -> tuple:
        """The base driving at `speed` along x: the stream's last command, then (when the controller published its
        first decelerating command, when the ground truth fell below 0.01 m/s for good) [s] after it (test_g);
        `braking` [m/s²] only for the log line."""
        truth = Recorder("/sim/odom", Odometry)
        commands = Recorder("/motion_control/control_chassis", motor_control)
        for rec in (truth, commands):
            rec.start()
        self.cmd.publish(twist(vx=speed))
        last = rospy.get_time()
        self.wait_sim(1.0 + speed / ACC_X)
        items, sent = truth.stop(), commands.stop()
        # the controller: the wheel speeds it commands (straight modules: each = vx), stamped when it
        # published them (ROS time). Not test_a's pairing with /odom by header seq: a publisher's seq
        # counts only messages sent while it has subscribers, and /odom's fell 12 behind the commands'
        # in one CI run, moving every time here by 60 ms
        c_t = np.array([m.header.stamp.to_sec() for _, m in sent]) - last
        c_v = np.array([float(np.mean(m.v_des)) for _, m in sent])
        slowing = (c_t > 0) & (c_v < 0.98 * speed)
        self.assertTrue(slowing.any(), f"{speed} m/s: the controller never decelerated")
        decelerating = float(c_t[np.argmax(slowing)])
        # the robot (ground truth)
        stamps = np.array([m.header.stamp.to_sec() for _, m in items]) - last
        vx = np.abs([m.twist.twist.linear.x for _, m in items])
        self.assertGreater(vx[stamps < 0.15].min(), speed * 0.95, "not at speed when the stream stopped")
        moving = np.flatnonzero(vx >= 0.01)
        # below 0.01 m/s from then on: the crossing interpolated between the last sample at or above it and
        # the next (the next sample's stamp itself added up to one 10 ms ground-truth period to the time,
        # a fifth of the bound's 0.05 s margin: a loaded CI run measured 0.372 s against 0.370)
        if not len(moving):
            stopped = 0.0
        elif moving[-1] + 1 == len(vx):
            stopped = float("inf")                    # still moving at the end of the recording
        else:
            k = moving[-1]
            t_a, t_b, v_a, v_b = stamps[k], stamps[k + 1], vx[k], vx[k + 1]
            stopped = t_a + (v_a - 0.01) / (v_a - v_b) * (t_b - t_a)
        rospy.loginfo(f"chassis: {speed} m/s stream stopped: the controller decelerating {decelerating:.3f} s "
                      f"after the last command (bound {COMMAND_TIMEOUT + 0.05:.3f} s), the base below 0.01 m/s "
                      f"for good {stopped - decelerating:.3f} s later (bound {speed / braking + 0.05:.3f} s at "
                      f"{braking:.3f} m/s²; {stopped:.3f} s after the last command)")
        return decelerating, stopped

    def set_remote(self, mode: int, left_x=0.0, left_y=0.0, right_x=0.0, right_y=0.0):
        self.remote.publish(controller_signal(left_x_axis=left_x, left_y_axis=left_y, right_x_axis=right_x,
                                              right_y_axis=right_y, mode=mode))

    def module_angles(self) -> np.ndarray:
        return np.array(self.feedback.wait().position[:3])

    # -- tests (run in name order) -------------------------------------------------------------
    def test_a_forward_accelerates_at_the_limit_and_drives_straight(self):
        self.wait_stopped()
        self.drive(twist(vx=1e-3), 1.0)            # modules straight first: this measures the drive
        def prepare():
            self.wait_stopped()
            self.torso_driven()

        def ramp():     # the ground truth's recorder is returned too: it records the stop below
            recorders = (Recorder("/sim/odom", Odometry), Recorder("/motion_control/control_chassis", motor_control),
                         Recorder("/odom", Odometry))
            for rec in recorders:
                rec.start()
            start = rospy.get_time()
            self.drive(twist(vx=0.5), 2.5)
            return (start, recorders[0], *(rec.stop() for rec in recorders))
        t0, truth, items, sent, odom = self.without_lapse("the ramp", prepare, ramp)
        stamps = np.array([m.header.stamp.to_sec() - t0 for _, m in items])
        vx = np.array([m.twist.twist.linear.x for _, m in items])
        poses = np.array([planar(m) for _, m in items])
        # the controller: the commanded wheel speeds (straight modules: each = vx) ramp at the limit
        # on the controller's clock, the stamps of the feedback it steps on (±10 %). A command's own
        # stamp is its publish time, which jitters against that clock on a loaded machine (it failed
        # CI once); /odom carries the feedback's stamp and is published from the same feedback just
        # before the command, so their header seqs step together. They need not be equal: a rospy
        # publisher counts seq only while it has subscribers (test_g's note), so /odom's may trail by a
        # constant while this recording runs. That shifts every pair by the same time, which the slope
        # does not see; the ramp window below (first second) is wide enough for a shift of tens of ms.
        feedback_stamp = {m.header.seq: m.header.stamp.to_sec() - t0 for _, m in odom}
        paired = [(feedback_stamp[m.header.seq], np.mean(m.v_des)) for _, m in sent if m.header.seq in feedback_stamp]
        self.assertGreater(len(paired), 0.9 * len(sent), "commands without the /odom of their feedback")
        c_t, c_v = np.array(paired).T
        ramp = (c_v > 0.05) & (c_v < 0.45) & (c_t < 1.0)
        self.assertGreaterEqual(ramp.sum(), 3, f"too few commands on the ramp: {c_v[:40].round(3)}")
        commanded_slope = np.polyfit(c_t[ramp], c_v[ramp], 1)[0]
        acc, _ = self.x_limits()
        self.assertAlmostEqual(commanded_slope, acc, delta=0.1 * acc, msg="commanded ramp")
        # the robot (ground truth): from 10 % to 90 % of 0.5 m/s in the time the limit implies (±10 %); the
        # motion starts one loop delay late, and the simulated wheels' speed loop lags, then catches up
        # (mid-ramp slope up to ~1.1× the limit, a few % overshoot that decays). Crossing times are
        # interpolated between samples. (From 0.01 to 0.49 m/s before: the last 2 % of a ramp is where it
        # rounds off, and there the base's ±0.015 m/s ripple against the arms held at the hold gains moved
        # the crossing by up to 50 ms: 0.186-0.240 s in five runs against 0.192 ± 0.019.)
        moving = crossing(stamps, vx, 0.01)
        rise_from, rise_to = crossing(stamps, vx, 0.05), crossing(stamps, vx, 0.45)
        ideal = (0.45 - 0.05) / acc
        rospy.loginfo(f"chassis: commanded ramp {commanded_slope:.3f} m/s² (limit {acc:.3f}: the chassis' {ACC_X}, "
                      f"lowered for the arms the driver holds); ground truth from "
                      f"0.05 to 0.45 m/s in {rise_to - rise_from:.3f} s (ideal {ideal:.3f} s), moving "
                      f"{moving:.3f} s after the command, peak {vx.max():.3f} m/s")
        self.assertAlmostEqual(rise_to - rise_from, ideal, delta=0.1 * ideal, msg="time from 0.05 to 0.45 m/s")
        self.assertLess(moving, 0.1, "the chassis started late")
        self.assertLess(vx.max(), 0.5 * 1.1, "overshoot")
        steady = vx[stamps > 1.0]
        self.assertLess(np.max(np.abs(steady - 0.5)), 0.01, "steady speed")
        rel = relative(poses[0], poses[-1])
        rospy.loginfo(f"chassis: forward run moved {rel.round(4).tolist()} (x, y, yaw)")
        self.assertGreater(rel[0], 0.8)
        self.assertLess(abs(rel[1]), 0.005 * rel[0] + 1e-3, "drifted sideways")
        self.assertLess(abs(rel[2]), 0.005, "turned")
        # the node's own speed estimate agrees with the ground truth
        self.assertAlmostEqual(self.speed.wait().linear.x, 0.5, delta=0.02)
        # the stream stops: the chassis decelerates to zero, no harder than the limit
        truth.start()
        stop_t = rospy.get_time()
        self.wait_stopped()
        items = truth.stop()
        stamps = np.array([m.header.stamp.to_sec() for _, m in items])
        vx = np.array([m.twist.twist.linear.x for _, m in items])
        stopped_at = stamps[np.argmax(np.abs(vx) < 0.02)] - stop_t
        rospy.loginfo(f"chassis: stream stopped, below 0.02 m/s {stopped_at:.3f} s later "
                      f"(timeout {COMMAND_TIMEOUT} s + {0.5 / ACC_X:.2f} s ramp)")
        self.assertLess(stopped_at, COMMAND_TIMEOUT + 0.5 / ACC_X + 0.2)
        # deceleration over any 0.1 s of robot time: sample-to-sample differences of the 200 Hz
        # ground truth carry the wheels' speed-loop ripple (their p95 measured 2.97-3.26 m/s² on
        # runs whose 0.1 s maximum was 2.79-2.82, so that check failed by chance)
        later = np.searchsorted(stamps, stamps + 0.1)
        ok = later < len(stamps)
        decel = (vx[ok] - vx[later[ok]]) / (stamps[later[ok]] - stamps[ok])
        rospy.loginfo(f"chassis: braking over 0.1 s at most {decel.max():.3f} m/s² (limit {ACC_X})")
        self.assertLess(decel.max(), ACC_X * 1.3, "braked harder than the limit")

    def test_b_sideways_and_yaw_give_the_right_module_angles(self):
        self.wait_stopped()
        start = planar(self.truth.wait())
        self.drive(twist(vy=0.3), 2.0)
        angles = self.module_angles()
        np.testing.assert_allclose(np.abs(angles), math.pi / 2, atol=0.03, err_msg="sideways module angles")
        rel = relative(start, planar(self.truth.wait()))
        self.assertGreater(rel[1], 0.3)
        self.assertLess(abs(rel[0]), 0.01 * rel[1] + 0.005)
        self.wait_stopped()
        start = planar(self.truth.wait())
        self.drive(twist(wz=0.5), 3.0)
        angles = self.module_angles()
        for (x, y), a in zip(R1_XY, angles):       # each wheel perpendicular to its position vector
            self.assertLess(abs(math.cos(a) * x + math.sin(a) * y) / math.hypot(x, y), 0.03)
        self.assertAlmostEqual(self.truth.wait().twist.twist.angular.z, 0.5, delta=0.02)
        rel = relative(start, planar(self.truth.wait()))
        self.assertLess(math.hypot(rel[0], rel[1]), 0.02, "turning in place moved the base")
        self.assertGreater(rel[2], 0.8)
        self.wait_stopped()

    def test_c_odometry_tracks_a_5m_square(self):
        """At every corner of a 5 m square (at rest, so the feedback's stamps do not matter) the
        odometry's pose relative to the start is within 2 % of the distance driven of the truth."""
        self.wait_stopped()
        o0, g0 = planar(self.odom.wait()), planar(self.truth.wait())
        distance, last, errors = 0.0, np.zeros(2), []
        for corner in range(4):
            # ~1.25 m sides at 1 m/s: the modules turn back from the turn in place (at most 90° at
            # the steering's 3.14 rad/s, the wheels waiting for them), 0.4 s up, cruise, 0.2 s
            # timeout at speed and 0.4 s down
            self.drive(twist(vx=1.0), 1.6)
            self.wait_stopped()
            start_yaw = planar(self.truth.wait())[2]
            deadline = time.monotonic() + 300
            rate = rospy.Rate(50)
            while True:                             # turn in place until ~90° (the stop adds the rest)
                yaw = planar(self.truth.wait())[2]
                if abs(math.atan2(math.sin(yaw - start_yaw), math.cos(yaw - start_yaw))) > math.pi / 2 - 0.08:
                    break
                self.assertLess(time.monotonic(), deadline)
                self.cmd.publish(twist(wz=0.6))
                rate.sleep()
            self.wait_stopped()
            self.wait_sim(0.1)                      # the last feedback is in the odometry
            g = relative(g0, planar(self.truth.wait()))
            o = relative(o0, planar(self.odom.wait()))
            distance += float(np.hypot(*(g[:2] - last)))
            last = g[:2]
            err = float(np.hypot(*(o[:2] - g[:2])))
            errors.append((distance, err, abs(math.atan2(math.sin(o[2] - g[2]), math.cos(o[2] - g[2])))))
            rospy.loginfo(f"chassis: corner {corner + 1}: {distance:.2f} m driven, odometry off by {err * 1000:.1f} mm "
                          f"({100 * err / distance:.2f} %), yaw off by {errors[-1][2]:.4f} rad")
        self.assertGreater(distance, 4.5)
        for d, err, _ in errors:
            self.assertLessEqual(err, 0.02 * d, f"odometry off by {err:.4f} m after {d:.2f} m")
        # at rest, /tf's odom -> base_footprint is /odom's pose (what RViz and TF users see)
        odom = self.odom.wait()
        tf = self.tf_buffer.lookup_transform("odom", "base_footprint", rospy.Time(0), rospy.Duration(10.0))
        p, q = odom.pose.pose.position, odom.pose.pose.orientation
        for a, b in ((tf.transform.translation.x, p.x), (tf.transform.translation.y, p.y),
                     (tf.transform.rotation.z, q.z), (tf.transform.rotation.w, q.w)):
            self.assertAlmostEqual(a, b, delta=1e-3)

    def test_d_brake_mode_locks_and_releases(self):
        self.wait_stopped()
        self.brake.publish(Bool(True))
        lock = self.kin.brake_angles()
        deadline = time.monotonic() + 300
        while np.max(np.abs(self.module_angles() - lock)) > 0.03:
            self.assertLess(time.monotonic(), deadline, f"modules at {self.module_angles()}, lock {lock}")
            time.sleep(0.05)
        self.wait_sim(0.5)                          # and they hold there, wheels still
        self.assertLess(np.max(np.abs(self.module_angles() - lock)), 0.03)
        self.assertLess(np.max(np.abs(self.feedback.wait().velocity[:3])), 1e-3)
        self.drive(twist(vx=0.3), 1.5)              # a new command releases the lock
        np.testing.assert_allclose(self.module_angles(), 0.0, atol=0.03)
        self.assertGreater(self.truth.wait().twist.twist.linear.x, 0.25)
        self.brake.publish(Bool(False))
        self.wait_stopped()
        self.wait_sim(0.5)                          # brake off: modules stay where they were
        np.testing.assert_allclose(self.module_angles(), 0.0, atol=0.03)

    def test_e_remote_modes(self):
        self.wait_stopped()
        start = planar(self.truth.wait())
        self.set_remote(2)                          # mode 2 entered with the sticks at rest (the manager
        self.wait_sim(0.3)                          # refuses a stick already deflected at the switch)
        self.set_remote(2, left_y=1.0)              # mode 2: the remote's left stick drives
        deadline = time.monotonic() + 300
        while relative(start, planar(self.truth.wait()))[0] < 0.3:
            self.assertLess(time.monotonic(), deadline, "mode 2 stick forward did not drive the chassis forward")
            self.cmd.publish(twist(vx=-0.5))        # a host command is vetoed meanwhile
            time.sleep(0.02)
        self.set_remote(2)                          # sticks released
        self.wait_stopped()
        self.set_remote(5, left_y=1.0)              # mode 5: host in control, sticks ignored
        self.wait_sim(1.0)
        start = planar(self.truth.wait())
        self.wait_sim(1.0)
        moved = relative(start, planar(self.truth.wait()))
        self.assertLess(np.hypot(moved[0], moved[1]), 0.005, "mode 5 sticks moved the chassis")
        self.drive(twist(vx=0.3), 1.0)              # and host commands pass again
        self.assertGreater(self.truth.wait().twist.twist.linear.x, 0.25)
        self.set_remote(5)
        self.wait_stopped()

    def test_e2_a_remote_silent_in_mode_2_keeps_the_host_out(self):
        self.set_remote(5)
        self.wait_stopped()
        self.set_remote(2)                          # the operator takes over by hand
        self.wait_sim(0.3)
        self.set_remote(REMOTE_OFF)                 # and the link is lost: no /controller at all
        self.controller_silent()
        start = planar(self.truth.wait())
        vetoed = self.diag_value("vetoed")
        self.drive(twist(vx=0.3), 1.5)              # a host program goes on commanding
        moved = relative(start, planar(self.truth.wait()))
        self.assertLess(np.hypot(moved[0], moved[1]), 0.005, "a host command passed once the remote went silent")
        self.diag_value("vetoed", above=vetoed + 10)     # counted as vetoed (75 were sent)
        self.set_remote(5)                          # the remote is back, in host mode: the host drives
        self.drive(twist(vx=0.3), 1.0)
        self.assertGreater(self.truth.wait().twist.twist.linear.x, 0.25)
        self.wait_stopped()

    def test_f_bad_input_is_dropped_and_the_node_lives(self):
        self.set_remote(5)                          # host in control, whatever an earlier test left
        self.wait_stopped()
        self.acc.publish(twist(vx=10.0, vy=0.5, wz=1.0))       # capped to the maxima
        for _ in range(20):
            self.cmd.publish(twist(vx=float("nan")))
            time.sleep(0.01)
        self.drive(twist(vx=0.3), 1.0)
        self.assertGreater(self.truth.wait().twist.twist.linear.x, 0.25)
        self.wait_stopped()

    def test_g_a_stopped_stream_stops_the_base_within_the_bound(self):
        """Regression (issue 19): after the last command of a 0.3 m/s stream the base was still at
        0.13 m/s 0.32 s later and stopped after ~0.54 s (the simulated wheel's speed loop lagged 50
        ms and overshot into a reversal). The robot's bound, from the last command the controller
        received: the ground truth below 0.01 m/s, and staying there, within command_timeout + speed /
        deceleration limit + 0.05 s. The test knows when it published that command, not when the
        controller received it, so it checks the two parts the bound is made of, each with the 0.05 s:
        - the controller publishes its first decelerating command within command_timeout + 0.05 s of
          the test's publish (the message's delivery, one feedback period, the controller's own work);
        - the base is stopped within speed / limit + 0.05 s of that start (HDAS, the wheels, the base), the
          limit the one chassis control brakes at: with the arms held by the driver, 2.38 m/s² (x_limits;
          judged against 2.5 the stop measured 0.448-0.461 s at 1 m/s, over the 0.45 bound).
        Measured as one sum from the publish it failed two runs in ~15 by 1-2 ms (0.651-0.652 s against
        0.650 at 1 m/s, with the simulator of this commit and of the one before); apart, three runs
        measured the start at 0.198-0.210 s and the base stopped 6-16 ms after the zero command."""
        _, braking = self.x_limits()
        for speed in (0.3, 1.0):
            def prepare():
                self.wait_stopped()
                self.drive(twist(vx=1e-3), 1.0)               # modules straight
                self.torso_driven()
                self.drive(twist(vx=speed), 0.5 + speed / ACC_X)

            decelerating, stopped = self.without_lapse(f"the {speed} m/s stop", prepare,
                                                       lambda: self.stop_from(speed, braking))
            self.assertLessEqual(decelerating, COMMAND_TIMEOUT + 0.05, f"{speed} m/s: the controller reacted late")
            self.assertLessEqual(stopped - decelerating, speed / braking + 0.05, f"{speed} m/s: the base stopped late")

    def test_g2_a_late_torso_controller_slows_the_base_and_the_torso_holds(self):
        """Issue 28: a controller starved of CPU stops commanding for a while (a CI run on a saturated machine:
        torso speed control silent for 0.3-0.5 s), and HDAS repeats its last command, whose feed-forward does
        not follow the base. The base starting at 2.5 m/s² meanwhile threw the straight torso back 0.12 rad
        (the demo's square, two CPU hogs beside the stack). Chassis control counts a group whose stream is
        silent for controller_lapse (0.05 s) as held, and the base accelerates only as far as the hold carries.
        Here torso speed control is stopped (SIGSTOP) for 0.4 s of wall time as a 0.5 m/s drive begins: the
        base creeps until it is back, then accelerates, and the torso stays within 0.06 rad: twice the
        hold_deflection that the base's creep may bend the held torso statically (an undamped step's
        overshoot). Measured 0.013-0.046 rad in all (0.068 with the old 0.2 s rule), of which 0.006 while
        the controller was stopped: the rest comes as the base accelerates once it is back (not explained
        yet: the same start from rest bends it ~0.02)."""
        self.set_remote(5)
        self.wait_stopped()
        self.drive(twist(vx=1e-3), 1.0)            # modules straight
        self.wait_stopped()
        self.torso_driven()
        torso = Latest("/hdas/feedback_torso", JointState)
        ref = np.array(torso.wait().position[:4])
        pid = node_pid("/torso_speed_control")
        truth, bends = Recorder("/sim/odom", Odometry), Recorder("/hdas/feedback_torso", JointState)
        for rec in (truth, bends):
            rec.start()
        os.kill(pid, signal.SIGSTOP)
        try:
            stopped_at = time.monotonic()
            time.sleep(0.1)
            deadline = stopped_at + 0.4
            while time.monotonic() < deadline:     # the drive begins while the controller is stopped
                self.cmd.publish(twist(vx=0.5))
                time.sleep(0.02)
        finally:
            os.kill(pid, signal.SIGCONT)
        resumed_at = time.monotonic()
        self.drive(twist(vx=0.5), 1.0)
        self.wait_stopped()
        self.wait_sim(1.0)
        items, torso_items = truth.stop(), bends.stop()
        arrival = np.array([w for w, _ in items])
        vx = np.array([m.twist.twist.linear.x for _, m in items])
        t = np.array([m.header.stamp.to_sec() for _, m in items])
        during = arrival <= resumed_at
        speed_stopped = float(vx[during].max())
        lapse_sim = float(t[during][-1] - t[arrival >= stopped_at][0])
        bend = np.max(np.abs(np.array([m.position[:4] for _, m in torso_items]) - ref), axis=1)
        lapsed = np.array([w for w, _ in torso_items]) <= resumed_at
        worst = float(bend.max())
        worst_lapsed = float(bend[lapsed].max()) if lapsed.any() else 0.0
        rospy.loginfo(f"chassis: torso speed control stopped for 0.4 s of wall time ({lapse_sim:.3f} s simulated) "
                      f"as a 0.5 m/s drive began: the base reached {speed_stopped:.3f} m/s meanwhile (at 2.5 m/s²: "
                      f"0.5 within 0.2 s), then {vx.max():.3f} m/s; the torso moved {worst_lapsed:.4f} rad at most "
                      f"while its controller was stopped, {worst:.4f} in all")
        self.assertGreater(lapse_sim, 0.15, "the controller's lapse was too short to judge (simulated time)")
        self.assertLess(speed_stopped, 0.25, "the base accelerated at full rate while the torso's controller was late")
        self.assertGreater(vx.max(), 0.45, "the base did not drive once the controller was back")
        self.assertLess(worst, 0.06, "the torso gave way while its controller was late")

    def test_h_a_torso_no_controller_drives_slows_the_base_and_still_stands(self):
        """Issue 28: the torso's controller stops (killed: this test's launch runs it without respawn). HDAS then
        holds the torso at rest with its hold gains and the last feed-forward, nothing that follows the base:
        straight up an inverted pendulum of ~72 N·m/rad, which 2.5 m/s² folded to the floor (torso_link4
        dragged, the base stalled). Chassis control hears the torso's command stream stop and accelerates only
        as far as that hold bends within hold_deflection (0.03 rad: 0.21 m/s² straight up with the arms folded as
        they start, its diagnostics say how far); braking keeps its 0.3 m/s² floor. The torso stands: within
        0.15 rad throughout, back within 0.04 rad at rest."""
        self.set_remote(5)
        self.wait_stopped()
        torso = Latest("/hdas/feedback_torso", JointState)
        ref = np.array(torso.wait().position[:4])

        def held(st):
            return any(kv.key == "held by the driver" and "torso" in kv.value for kv in st.values)

        self.assertFalse(held(self.diag.wait("chassis_control_node: chassis", lambda st: True)),
                         "the torso counted as held while its controller ran")
        rosnode.kill_nodes(["/torso_speed_control"])
        limit = x_limit(self.diag.wait("chassis_control_node: chassis", held), "posture acceleration limits +")
        truth = Recorder("/sim/odom", Odometry)
        bends = Recorder("/hdas/feedback_torso", JointState)
        for rec in (truth, bends):
            rec.start()
        start = planar(self.truth.wait())
        self.drive(twist(vx=0.5), 4.0)
        self.wait_stopped()
        self.wait_sim(2.0)
        items, torso_items = truth.stop(), bends.stop()
        t = np.array([m.header.stamp.to_sec() for _, m in items])
        vx = np.array([m.twist.twist.linear.x for _, m in items])
        # the ramp's mean acceleration from 10 % to 90 % of the top speed (as posture_cases judges a ramp): the
        # steepest half second of it measured 0.197-0.253 m/s² in four runs, the base's speed rippling ±0.015
        # m/s against the torso's hold (0.06 m/s² over half a second)
        top = float(vx.max())
        lo, hi = int(np.argmax(vx >= 0.1 * top)), int(np.argmax(vx >= 0.9 * top))
        rise = 0.8 * top / float(t[hi] - t[lo]) if hi > lo else float("inf")
        q = np.array([m.position[:4] for _, m in torso_items]) - ref
        worst = float(np.max(np.abs(q)))
        moved = relative(start, planar(self.truth.wait()))[0]
        rest = np.abs(np.array(torso.wait().position[:4]) - ref)
        rospy.loginfo(f"chassis: torso held by the driver alone: the base sped up at {rise:.3f} m/s² (10-90 %) "
                      f"(the posture's limit {limit:.3f}, the chassis' {ACC_X}), reached {vx.max():.3f} m/s, moved "
                      f"{moved:.3f} m; the torso bent {worst:.3f} rad at most, {rest.max():.4f} rad at rest")
        self.assertLess(limit, 0.5, "the driver's hold did not lower the base's acceleration")
        self.assertLess(rise, 1.1 * limit + 0.02, "the base accelerated beyond what the driver's hold carries")
        self.assertGreater(moved, 0.2, "the base did not drive")
        self.assertLess(worst, 0.15, "the torso gave way")
        # standing again, not folded (folded is ~1 rad): where it comes to rest is the hold's, within its
        # friction band (the torso joints' 1 N·m Coulomb against a stiffness gravity softens to 72 N·m/rad at
        # torso_joint1): 0.005-0.006 rad in three quiet runs, 0.024 on a loaded machine after a 0.098 bend
        self.assertLess(float(rest.max()), 0.04, "the torso did not stand up again")


if __name__ == "__main__":
    rostest.rosrun("mobiman", "chassis_sim", ChassisSimTest)
