#!/usr/bin/env python3
"""The whole R1 stack on the simulated robot, as a user sees it (issue: full bring-up).

1. Every topic of config/r1_topics.yaml (the guide's HDAS, motion control, pose estimation and sensor
   topics, /odom, /diagnostics) is published with its type, and every stream delivers.
2. The scripted demo (mobiman.demo.scripted: drive a square at 0.5 and at 1 m/s with the torso held
   straight, lift the torso, reach with both arms, open and close the grippers; its pick and place skipped
   here, pick_sim.test asserts it) meets every outcome within its tolerance: chassis displacement on ground
   truth, the torso held while driving, torso height, both gripper poses, gripper strokes.
3. Every node of ours publishes /diagnostics, and its statuses arrive with the standard loop keys.
4. TF is one tree: every link of the URDF has a transform from `odom` (wheel odometry, the pose
   estimator's /joint_states and robot_state_publisher together).
"""
import time
import unittest
import xml.etree.ElementTree as ET

import rosgraph
import rospy
import rostest
import tf2_ros
from diagnostic_msgs.msg import DiagnosticArray

from mobiman.demo.scripted import Demo, DemoConfig, table
from r1_startup.topics import TopicWatcher, load_topics
from r1_startup.wait_stack import default_topics_file

NOT_OURS = {"/rosout", "/robot_state_publisher"}     # ROS's own nodes (C++), no /diagnostics of theirs


class SystemSimTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rospy.init_node("test_system_sim", anonymous=True)
        cls.specs = load_topics(default_topics_file())
        cls.status: dict[str, dict[str, str]] = {}

    @classmethod
    def _on_diagnostics(cls, msg):
        for s in msg.status:
            cls.status[s.name] = {kv.key: kv.value for kv in s.values}

    def test_a_every_topic_with_its_type(self):
        watcher = TopicWatcher(self.specs)     # untyped subscribers: they must go before the typed ones below
        try:
            found = watcher.wait(900, log=rospy.loginfo)   # simulated time may run at 20 % of real time
        finally:
            watcher.close()
        self.assertEqual(found, [], "topics not right:\n" + "\n".join(found))
        rospy.Subscriber("/diagnostics", DiagnosticArray, self._on_diagnostics, queue_size=50)

    def test_b_the_demo_meets_every_outcome(self):
        # without the pick and place (on by default in simulation): pick_sim.test asserts it, on a lighter
        # stack, and this test's time stays what it was
        outcomes = Demo(DemoConfig(wall_timeout=900, skip=("pick",)), log=rospy.loginfo).run()
        rospy.loginfo("demo outcomes:\n" + table(outcomes))
        steps = {o.step for o in outcomes}
        self.assertEqual(steps, {"drive square at 0.5 m/s", "drive square at 1 m/s", "lift torso", "reach",
                                 "gripper open", "gripper close"})
        held = [o for o in outcomes if o.quantity == "torso joints off where they stood"]
        self.assertEqual([o.tolerance for o in held], [0.05, 0.05])      # the torso straight, held while driving
        self.assertTrue(any("ground truth" in o.quantity for o in outcomes), "no ground truth in simulation?")
        bad = [o for o in outcomes if not o.ok]
        self.assertEqual(bad, [], "out of tolerance:\n" + table(bad))

    def test_c_every_node_reports_on_diagnostics(self):
        master = rosgraph.Master(rospy.get_name())
        deadline = time.monotonic() + 300
        while True:
            pubs, _, _ = master.getSystemState()
            nodes = {n for _, ns in pubs for n in ns} - NOT_OURS - {rospy.get_name()}
            reporting = set(next((ns for t, ns in pubs if t == "/diagnostics"), []))
            silent = sorted(nodes - reporting)
            if not silent or time.monotonic() > deadline:
                break
            time.sleep(1.0)
        self.assertEqual(silent, [], "nodes that do not publish /diagnostics")
        # the statuses themselves: at least one per node family, each with the standard loop keys
        families = ("HDAS: bus", "r1_sim: ", "r1_sim_sensors: ", "r1_jointTracker_demo_node: ",
                    "chassis_control_node: ",
                    "/torso_speed_control: ", "fk_calculator: ", "r1_control_manager: ",
                    "/r1_left_arm_relaxed_ik: ", "/r1_right_arm_relaxed_ik: ")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            missing = [f for f in families if not any(name.startswith(f) for name in self.status)]
            if not missing:
                break
            time.sleep(1.0)
        self.assertEqual(missing, [], f"no statuses from {missing}; seen {sorted(self.status)}")
        for family in families:      # each reports its loop with the standard keys (r1_common.loop_stats)
            loops = [name for name, values in self.status.items() if name.startswith(family) and "rate_hz" in values]
            self.assertTrue(loops, f"no status of {family!r} carries the standard loop keys")

    def test_d_tf_connects_every_link_to_odom(self):
        urdf = ET.fromstring(rospy.get_param("/robot_description"))
        links = [link.get("name") for link in urdf.iter("link")]
        buf = tf2_ros.Buffer()
        self._tf_listener = tf2_ros.TransformListener(buf)   # kept alive while waiting
        deadline = time.monotonic() + 120
        missing = links
        while missing and time.monotonic() < deadline:
            missing = [link for link in missing if not buf.can_transform("odom", link, rospy.Time(0))]
            time.sleep(0.5)
        self.assertEqual(missing, [], f"links without a transform from odom (of {len(links)})")


if __name__ == "__main__":
    rostest.rosrun("startup_config", "system_sim", SystemSimTest)
