#!/usr/bin/env python3
"""r1_sim_sensors fed by hand: what it does with missing, stale, bad and odd ground truth.

The test plays the simulator (/sim/joint_states, /sim/odom, /sim/objects on wall-clock time) and
checks: no image before ground truth; images stamped with the ground truth's stamp once it flows; none while
it is stale, with the reason in /diagnostics; bad messages (objects too) dropped and counted, the node alive;
unknown joints and objects reported; a sensor nobody subscribes to not rendered. Waits are conditions with
generous deadlines (a shared, loaded machine).
"""
import threading
import time
import unittest

import rospy
import rostest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Pose, Twist
from nav_msgs.msg import Odometry
from sensor_msgs.msg import CompressedImage, JointState

from r1_sim.msg import ObjectStates

HEAD = "/hdas/camera_head/left_raw/image_raw_color/compressed"
TIMEOUT = 120.0


class Feed(threading.Thread):
    """Publishes ground truth at 20 Hz; what it publishes is switched by the test."""

    def __init__(self):
        super().__init__(daemon=True)
        self.joints = rospy.Publisher("/sim/joint_states", JointState, queue_size=5)
        self.odom = rospy.Publisher("/sim/odom", Odometry, queue_size=5)
        self.objects = rospy.Publisher("/sim/objects", ObjectStates, queue_size=5)
        self.mode, self.age, self.stamps, self.lock = "off", 0.0, set(), threading.Lock()
        self.names = ["torso_joint1", "left_arm_joint1"]

    def run(self):
        while not rospy.is_shutdown():
            if self.mode != "off":
                stamp = rospy.Time.now() - rospy.Duration.from_sec(self.age)
                j = JointState(name=list(self.names), position=[0.0] * len(self.names))
                o = Odometry()
                o.header.stamp = j.header.stamp = stamp
                o.header.frame_id = "sim_world"
                o.pose.pose.orientation.w = 1.0
                if self.mode == "bad":
                    j.position = [float("nan")] * len(self.names)
                    o.pose.pose.orientation.w = 0.0
                    self.joints.publish(JointState(name=["torso_joint1"], position=[]))
                    bad = Pose()                  # a zero quaternion: no rotation
                    self.objects.publish(ObjectStates(name=["red_box"], pose=[bad], twist=[Twist()]))
                with self.lock:
                    self.stamps.add(stamp.to_nsec())
                self.joints.publish(j)
                self.odom.publish(o)
                if self.mode == "good":       # the red box moved, and a thing the room does not have
                    p = Pose()
                    p.position.x, p.position.y, p.position.z, p.orientation.w = 1.2, -0.3, 0.79, 1.0
                    self.objects.publish(ObjectStates(header=j.header, name=["red_box", "teapot"], pose=[p, p],
                                                      twist=[Twist(), Twist()]))
            time.sleep(0.05)


class SensorsInputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rospy.init_node("test_sensors_input", anonymous=True)
        cls.images, cls.lock = [], threading.Lock()
        cls.diag = {}
        rospy.Subscriber(HEAD, CompressedImage, cls._on_image, queue_size=20)
        rospy.Subscriber("/diagnostics", DiagnosticArray, cls._on_diag, queue_size=20)
        cls.feed = Feed()
        cls.feed.start()
        cls.wait_for(lambda: "r1_sim_sensors: ground truth" in cls.diag, "the node's diagnostics")

    @classmethod
    def _on_image(cls, msg):
        with cls.lock:
            cls.images.append((time.monotonic(), msg))

    @classmethod
    def _on_diag(cls, msg):
        with cls.lock:
            for s in msg.status:
                cls.diag[s.name] = (s, {kv.key: kv.value for kv in s.values})

    @classmethod
    def wait_for(cls, cond, what, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not rospy.is_shutdown():
            with cls.lock:
                if cond():
                    return
            time.sleep(0.05)
        raise AssertionError(f"no {what} within {timeout} s")

    def images_since(self, t):
        with self.lock:
            return [m for ts, m in self.images if ts >= t]

    def test_a_nothing_before_ground_truth(self):
        time.sleep(3.0)
        self.assertEqual(self.images_since(0), [])
        s, _ = self.diag["r1_sim_sensors: ground truth"]
        self.assertEqual((s.level, s.message), (1, "no ground truth yet"))

    def test_b_bad_messages_are_dropped_and_counted(self):
        self.feed.mode = "bad"
        self.wait_for(lambda: int(self.diag["r1_sim_sensors: ground truth"][1]["bad_messages"]) >= 4,
                      "bad-message count")
        self.assertEqual(self.diag["r1_sim_sensors: ground truth"][1]["objects"], "none yet: the scene's poses")
        self.assertEqual(self.images_since(0), [])

    def test_c_images_flow_with_the_ground_truth_stamp(self):
        self.feed.names = ["torso_joint1", "left_arm_joint1", "tail_joint"]
        self.feed.mode, self.feed.age = "good", 0.0
        t0 = time.monotonic()
        self.wait_for(lambda: len([1 for ts, _ in self.images if ts >= t0]) >= 3, "head images")
        with self.feed.lock:
            stamps = set(self.feed.stamps)
        for m in self.images_since(t0):
            self.assertIn(m.header.stamp.to_nsec(), stamps)
            self.assertEqual((m.header.frame_id, m.format), ("zed_link", "jpeg"))
        # the node is alive after the bad messages, reports the unknown joint and an idle lidar
        self.wait_for(lambda: self.diag["r1_sim_sensors: ground truth"][0].level == 0, "ground truth OK")
        self.wait_for(lambda: "tail_joint" in self.diag["r1_sim_sensors: ground truth"][1]["unknown_joints"],
                      "the unknown joint in diagnostics")
        self.wait_for(lambda: self.diag["r1_sim_sensors: ground truth"][1]["unknown_objects"] == "teapot"
                      and self.diag["r1_sim_sensors: ground truth"][1]["objects"] == "received",
                      "the objects received and the unknown one reported")
        lidar, values = self.diag["r1_sim_sensors: chassis lidar"]
        self.assertEqual((lidar.message, values["frames"]), ("idle (no subscribers)", "0"))

    def test_d_stale_ground_truth_stops_publishing(self):
        self.feed.mode, self.feed.age = "good", 3.0          # older than stale_after_s (1 s)
        self.wait_for(lambda: self.diag["r1_sim_sensors: ground truth"][0].message.startswith("stale"), "stale report")
        t0 = time.monotonic()
        time.sleep(3.0)
        self.assertEqual(self.images_since(t0), [])
        s, _ = self.diag["r1_sim_sensors: head camera"]
        self.assertEqual((s.level, s.message), (1, "ground truth stale"))
        self.feed.age = 0.0                                   # fresh again: images resume
        t1 = time.monotonic()
        self.wait_for(lambda: any(ts >= t1 for ts, _ in self.images), "images after fresh ground truth")


if __name__ == "__main__":
    rostest.rosrun("r1_sim", "sensors_input", SensorsInputTest)
