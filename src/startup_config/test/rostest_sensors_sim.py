#!/usr/bin/env python3
"""r1_sim_sensors on the simulated R1: every guide topic, its layout, the walls, and motion.

Checks, against the node's own parameters (sensors.yaml) and the scene (r1_sim/worlds/room.xml):
- every camera and lidar topic of the guide appears with its type, format/encoding, frame_id and
  size, stamped with a ground-truth stamp (/sim/joint_states);
- the lidar's points, put in the world with the true base pose and the URDF, lie on the room's
  left wall at the distance the scene implies;
- driving the base (HDAS chassis command) changes a chassis camera's image and moves the front
  wall in the lidar's frame by the distance driven (points still land on the wall in the world).

Simulated time runs at 20-100 % of real time here: every wait is a condition with a deadline.
"""
import io
import threading
import time
import unittest

import numpy as np
import pinocchio as pin
import rospy
import rostest
from diagnostic_msgs.msg import DiagnosticArray
from hdas_msg.msg import motor_control
from nav_msgs.msg import Odometry
from PIL import Image as PILImage
from sensor_msgs import point_cloud2
from sensor_msgs.msg import CompressedImage, Image, JointState, PointCloud2

from r1_common import ros_testing
from r1_sim.sensor_rig import parse_sensor_config

# r1_sim/worlds/room.xml (the sensors' default scene): inner wall faces
LEFT_WALL_Y, FRONT_WALL_X, WALL_TOP = 2.5, 3.0, 2.5
FIRST_MESSAGE_S = 400.0
CONDITION_S = 300.0


class Latest(ros_testing.Latest):
    """The latest message of a topic, and with keep_stamps the stamps of the last few thousand."""

    def __init__(self, topic, cls, keep_stamps=False):
        self.stamps = set() if keep_stamps else None      # (before the subscriber: it may call back at once)
        super().__init__(topic, cls)

    def _cb(self, msg):
        super()._cb(msg)
        if self.stamps is not None:
            with self.lock:
                if len(self.stamps) > 20000:
                    self.stamps.clear()
                self.stamps.add(msg.header.stamp.to_nsec())

    def wait(self, timeout=CONDITION_S, predicate=None):
        return super().wait(timeout, predicate)


def decode_jpeg(msg):
    return np.asarray(PILImage.open(io.BytesIO(bytes(msg.data))).convert("RGB")).astype(float)


def cloud_points(msg):
    return np.array(list(point_cloud2.read_points(msg, field_names=("x", "y", "z", "intensity"))),
                    dtype=float).reshape(-1, 4)


class Body:
    """The URDF's frames in the world at the true joints and base pose (pinocchio, independent of MuJoCo)."""

    def __init__(self, urdf):
        self.model = pin.buildModelFromXML(urdf)
        self.data = self.model.createData()
        self.world = pin.SE3.Identity()

    def set_state(self, joints, base):
        q = pin.neutral(self.model)
        for name, v in joints.items():
            if self.model.existJointName(name):
                j = self.model.joints[self.model.getJointId(name)]
                if j.nq == 1:
                    q[j.idx_q] = v
        pin.framesForwardKinematics(self.model, self.data, q)
        x, y, yaw = base
        self.world = pin.SE3(pin.rpy.rpyToMatrix(0, 0, yaw), np.array([x, y, 0.0]))

    def frame_pose(self, frame):
        return self.world * self.data.oMf[self.model.getFrameId(frame)]


def yaw_of(q):
    return np.arctan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


class SensorsSimTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rospy.init_node("test_sensors_sim", anonymous=True)
        cls.config = parse_sensor_config(rospy.get_param("/r1_sim_sensors"))
        cls.body = Body(rospy.get_param("/robot_description"))
        cls.truth = Latest("/sim/joint_states", JointState, keep_stamps=True)
        cls.odom = Latest("/sim/odom", Odometry)
        cls.cams = {}
        for name, spec in cls.config.cameras.items():
            if spec.enabled:
                cls.cams[name] = {"rgb": Latest(spec.rgb_topic, CompressedImage)}
                if spec.depth_topic:
                    cls.cams[name]["depth"] = Latest(spec.depth_topic, Image)
        cls.cloud = Latest(cls.config.lidar.topic, PointCloud2)
        cls.diag, cls.diag_lock = {}, threading.Lock()
        rospy.Subscriber("/diagnostics", DiagnosticArray, cls._on_diag, queue_size=20)
        cls.chassis = rospy.Publisher("/motion_control/control_chassis", motor_control, queue_size=1)
        t0 = time.monotonic()
        cls.truth.wait(FIRST_MESSAGE_S)
        for subs in cls.cams.values():
            for latest in subs.values():
                latest.wait(FIRST_MESSAGE_S)
        cls.cloud.wait(FIRST_MESSAGE_S)
        rospy.loginfo(f"sensors_sim: every sensor topic up after {time.monotonic() - t0:.0f} s")

    @classmethod
    def _on_diag(cls, msg):
        with cls.diag_lock:
            for s in msg.status:
                cls.diag[s.name] = s

    def lidar_in_world(self, after_stamp=None):
        """A cloud (stamped after `after_stamp`) and its points in sim_world, with the base pose
        and joints of the ground truth (the robot is at rest when this is called)."""
        msg = self.cloud.wait(CONDITION_S, None if after_stamp is None else lambda m: m.header.stamp > after_stamp)
        odom = self.odom.wait()
        truth = self.truth.wait()
        p, q = odom.pose.pose.position, odom.pose.pose.orientation
        self.body.set_state(dict(zip(truth.name, truth.position)), (p.x, p.y, yaw_of(q)))
        pose = self.body.frame_pose(msg.header.frame_id)
        pts = cloud_points(msg)
        return msg, pts, pts[:, :3] @ pose.rotation.T + pose.translation, pose

    def wait_at_rest(self, timeout=CONDITION_S):
        return self.odom.wait(timeout, lambda m: abs(m.twist.twist.linear.x) < 0.005
                              and abs(m.twist.twist.linear.y) < 0.005
                              and abs(m.twist.twist.angular.z) < 0.01)

    # -- tests -------------------------------------------------------------------------------------
    def test_a_every_topic_with_its_type_encoding_frame_and_size(self):
        published = dict(rospy.get_published_topics())
        for name, subs in self.cams.items():
            spec = self.config.cameras[name]
            self.assertEqual(published.get(spec.rgb_topic), "sensor_msgs/CompressedImage", spec.rgb_topic)
            # stamped with a ground-truth stamp
            rgb = subs["rgb"].wait(CONDITION_S, lambda m: m.header.stamp.to_nsec() in self.truth.stamps)
            self.assertEqual(rgb.header.frame_id, spec.frame, spec.rgb_topic)
            self.assertEqual(rgb.format, "jpeg", spec.rgb_topic)
            img = PILImage.open(io.BytesIO(bytes(rgb.data)))
            self.assertEqual((img.format, img.size), ("JPEG", (spec.width, spec.height)), spec.rgb_topic)
            if "depth" not in subs:
                continue
            self.assertEqual(published.get(spec.depth_topic), "sensor_msgs/Image", spec.depth_topic)
            d = subs["depth"].wait(CONDITION_S, lambda m: m.header.stamp.to_nsec() in self.truth.stamps)
            self.assertEqual(d.header.frame_id, spec.frame, spec.depth_topic)
            self.assertEqual((d.encoding, d.is_bigendian, d.width, d.height),
                             (spec.depth_encoding, 0, spec.width, spec.height))
            size = 2 if spec.depth_encoding == "16UC1" else 4
            self.assertEqual(d.step, size * spec.width)
            self.assertEqual(len(d.data), d.step * d.height)
            values = np.frombuffer(bytes(d.data), dtype="<u2" if size == 2 else "<f4")
            valid = values[values > 0] / 1000.0 if size == 2 else values[np.isfinite(values)]   # mm / m
            self.assertGreater(len(valid), 0.1 * len(values), f"{spec.depth_topic}: mostly no data")
            self.assertTrue(np.all((valid >= spec.min_depth_m - 1e-3) & (valid <= spec.max_depth_m + 1e-3)),
                            spec.depth_topic)
        li = self.config.lidar
        self.assertEqual(published.get(li.topic), "sensor_msgs/PointCloud2")
        c = self.cloud.wait(CONDITION_S, lambda m: m.header.stamp.to_nsec() in self.truth.stamps)
        self.assertEqual(c.header.frame_id, "lidar_chassis_left_link")
        self.assertEqual([(f.name, f.offset, f.datatype) for f in c.fields],
                         [("x", 0, 7), ("y", 4, 7), ("z", 8, 7), ("intensity", 12, 7)])
        self.assertEqual((c.height, c.point_step, c.row_step, c.is_bigendian), (1, 16, 16 * c.width, False))
        self.assertGreater(c.width, 0.5 * li.points_per_scan)     # a closed room: most beams return

    def test_b_lidar_sees_the_left_wall_where_the_scene_puts_it(self):
        self.wait_at_rest()
        _, pts, world, pose = self.lidar_in_world()
        wall = ((world[:, 1] > 2.2) & (np.abs(world[:, 0]) < FRONT_WALL_X - 0.1)
                & (world[:, 2] > 0.05) & (world[:, 2] < WALL_TOP - 0.05))
        self.assertGreater(wall.sum(), 10, "no points on the left wall")
        np.testing.assert_allclose(world[wall, 1], LEFT_WALL_Y, atol=0.01)
        # the nearest wall point of the near-horizontal beams: the lidar's distance to the wall
        horizontal = wall & (np.abs(world[:, 2] - pose.translation[2]) < 0.15)
        self.assertGreater(horizontal.sum(), 0)
        nearest = np.min(np.linalg.norm(world[horizontal, :2] - pose.translation[:2], axis=1))
        expected = LEFT_WALL_Y - pose.translation[1]
        rospy.loginfo(f"sensors_sim: nearest left-wall point {nearest:.3f} m, the scene implies {expected:.3f} m")
        self.assertAlmostEqual(nearest, expected, delta=0.06)

    def test_c_views_change_when_the_base_drives(self):
        rest = self.wait_at_rest()
        cam = self.cams["chassis_front_left"]["rgb"]
        a = cam.wait(CONDITION_S, lambda m: m.header.stamp > rest.header.stamp)
        b = cam.wait(CONDITION_S, lambda m: m.header.stamp > a.header.stamp)
        still = np.abs(decode_jpeg(a) - decode_jpeg(b)).mean()
        _, _, world0, pose0 = self.lidar_in_world(rest.header.stamp)
        x0 = self.odom.wait().pose.pose.position.x
        deadline = time.monotonic() + CONDITION_S
        while self.odom.wait().pose.pose.position.x - x0 < 0.4 and time.monotonic() < deadline:
            self.chassis.publish(motor_control(p_des=[0.0] * 3, v_des=[0.4] * 3))
            time.sleep(0.02)
        self.assertGreater(self.odom.wait().pose.pose.position.x - x0, 0.4, "the base did not drive")
        stopped = self.wait_at_rest()                     # the stream stopped: HDAS ramps the wheels down
        moved = self.odom.wait().pose.pose.position.x - x0
        c = cam.wait(CONDITION_S, lambda m: m.header.stamp > stopped.header.stamp)
        change = np.abs(decode_jpeg(c) - decode_jpeg(a)).mean()
        rospy.loginfo(f"sensors_sim: drove {moved:.3f} m; chassis_front_left image changed by {change:.1f} "
                      f"(grey levels, mean) against {still:.1f} at rest")
        self.assertGreater(change, max(3.0 * still, 2.0))
        # the front wall, in the world with the new pose: still at x = 3; in the lidar frame: nearer by `moved`
        _, pts, world, pose = self.lidar_in_world(stopped.header.stamp)
        front = ((world[:, 0] > 2.6) & (np.abs(world[:, 1]) < LEFT_WALL_Y - 0.1)
                 & (world[:, 2] > 0.05) & (world[:, 2] < WALL_TOP - 0.05))
        self.assertGreater(front.sum(), 10, "no points on the front wall")
        np.testing.assert_allclose(world[front, 0], FRONT_WALL_X, atol=0.01)
        self.assertAlmostEqual(pose.translation[0] - pose0.translation[0], moved, delta=0.01)

    def test_d_diagnostics_per_sensor(self):
        names = ([f"r1_sim_sensors: {self.config.cameras[n].label}" for n in self.cams]
                 + ["r1_sim_sensors: chassis lidar"])
        deadline = time.monotonic() + CONDITION_S
        missing = names
        while time.monotonic() < deadline:
            with self.diag_lock:
                missing = [n for n in names if n not in self.diag or
                           float(dict((kv.key, kv.value) for kv in self.diag[n].values).get("rate_hz", 0)) <= 0]
                gt = self.diag.get("r1_sim_sensors: ground truth")
            if not missing and gt is not None and gt.level == 0:
                break
            time.sleep(0.2)
        self.assertEqual(missing, [], "sensors without a positive rate in /diagnostics")
        with self.diag_lock:
            values = dict((kv.key, kv.value) for kv in self.diag["r1_sim_sensors: head camera"].values)
        for key in ("rate_hz", "compute_ms_median", "compute_ms_p99", "latency_ms_median", "latency_ms_p99"):
            self.assertIn(key, values)
        self.assertNotEqual(values["compute_ms_median"], "n/a")
        rospy.loginfo(f"sensors_sim: head camera diagnostics {values}")


if __name__ == "__main__":
    rostest.rosrun("r1_sim", "sensors_sim", SensorsSimTest)
