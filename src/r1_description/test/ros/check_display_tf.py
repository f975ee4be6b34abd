#!/usr/bin/env python3
"""rostest node: display.launch publishes a TF for every link of robot_description."""
import sys
import unittest
import xml.etree.ElementTree as ET

import numpy as np
import rospy
import rostest
import tf2_ros


class DisplayTf(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        rospy.init_node("check_display_tf")
        cls.buffer = tf2_ros.Buffer()
        cls.listener = tf2_ros.TransformListener(cls.buffer)
        cls.links = [link.get("name") for link in ET.fromstring(rospy.get_param("robot_description")).iter("link")]

    def lookup(self, target: str, source: str):
        return self.buffer.lookup_transform(target, source, rospy.Time(0), rospy.Duration(20.0))

    def test_every_link_has_a_transform(self) -> None:
        self.assertGreater(len(self.links), 40)
        missing = []
        for link in self.links:
            try:
                self.lookup("base_link", link)
            except tf2_ros.TransformException as e:  # collect all, report once
                missing.append(f"{link}: {e}")
        self.assertEqual(missing, [])

    def test_static_joint_positions_are_applied(self) -> None:
        t = self.lookup("base_link", "torso_link4").transform.translation
        np.testing.assert_allclose([t.x, t.y, t.z], [0.2035, 0.0, 1.0649], atol=1e-3)

    def test_gripper_pose_at_arm_zero(self) -> None:
        t = self.lookup("torso_link4", "left_gripper_link").transform.translation
        np.testing.assert_allclose([t.x, t.y, t.z], [0.086181, 0.3377, 0.30285], atol=1e-5)


if __name__ == "__main__":
    rostest.rosrun("r1_description", "display_tf", DisplayTf, sys.argv)
