"""Message layouts of the simulated sensors, decoded the way a consumer decodes them.

The cloud is read back with sensor_msgs' own `point_cloud2.read_points`, the JPEG with Pillow, the
depth images with numpy from their declared encoding and step: a wrong offset, endianness or step
fails here, not in a user's pipeline.
"""
from __future__ import annotations

import io
import math

import numpy as np
import pytest
from PIL import Image
from sensor_msgs import point_cloud2
from sensor_msgs.msg import PointField
from std_msgs.msg import Header

from r1_sim.encoding import depth_16uc1, depth_32fc1, jpeg
from r1_sim.sensors_node import cloud_msg, image_msg, yaw_of


def test_pointcloud2_has_float32_xyz_intensity_and_reads_back():
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(257, 4)).astype(np.float32)
    msg = cloud_msg(pts, Header(frame_id="lidar_chassis_left_link"))
    assert [(f.name, f.offset, f.datatype, f.count) for f in msg.fields] == [
        ("x", 0, PointField.FLOAT32, 1), ("y", 4, PointField.FLOAT32, 1),
        ("z", 8, PointField.FLOAT32, 1), ("intensity", 12, PointField.FLOAT32, 1)]
    assert (msg.height, msg.width, msg.point_step, msg.row_step) == (1, 257, 16, 16 * 257)
    assert msg.is_bigendian is False and msg.is_dense is True and len(msg.data) == 16 * 257
    back = np.array(list(point_cloud2.read_points(msg, field_names=("x", "y", "z", "intensity"))), dtype=np.float32)
    np.testing.assert_array_equal(back, pts)


def test_empty_cloud_is_valid():
    msg = cloud_msg(np.zeros((0, 4), np.float32), Header())
    assert msg.width == 0 and msg.data == b"" and msg.row_step == 0


def test_depth_16uc1_is_little_endian_millimetres_with_zero_for_no_data():
    depth = np.array([[0.5, 1.2345, np.nan], [np.inf, -np.inf, 70.0]], dtype=np.float32)
    msg = image_msg(depth_16uc1(depth), Header())
    assert (msg.encoding, msg.is_bigendian, msg.height, msg.width, msg.step) == ("16UC1", 0, 2, 3, 6)
    mm = np.frombuffer(bytes(msg.data), dtype="<u2").reshape(2, 3)
    np.testing.assert_array_equal(mm, [[500, 1234, 0], [0, 0, 0]])   # 70 m does not fit in 16 bits: no data


def test_depth_32fc1_is_little_endian_metres_keeping_nan_and_inf():
    depth = np.array([[0.5, np.nan], [np.inf, -np.inf]], dtype=np.float32)
    msg = image_msg(depth_32fc1(depth), Header())
    assert (msg.encoding, msg.is_bigendian, msg.step) == ("32FC1", 0, 8)
    back = np.frombuffer(bytes(msg.data), dtype="<f4").reshape(2, 2)
    assert back[0, 0] == 0.5 and math.isnan(back[0, 1]) and back[1, 0] == np.inf and back[1, 1] == -np.inf


@pytest.mark.parametrize("w, h", [(160, 90), (7, 5)])
def test_jpeg_decodes_to_the_same_size_and_colours(w, h):
    rgb = np.zeros((h, w, 3), np.uint8)
    rgb[:, : w // 2] = (200, 30, 30)
    rgb[:, w // 2:] = (30, 30, 200)
    data = jpeg(rgb, 90)
    assert data[:2] == b"\xff\xd8"                                  # JPEG SOI
    img = Image.open(io.BytesIO(data))
    assert img.format == "JPEG" and img.size == (w, h) and img.mode == "RGB"
    back = np.asarray(img).astype(int)
    assert np.abs(back[:, :max(w // 2 - 2, 1)] - (200, 30, 30)).mean() < 12
    assert np.abs(back[:, w // 2 + 2:] - (30, 30, 200)).mean() < 12 or w < 8


def test_yaw_from_odometry_quaternion():
    class Q:
        def __init__(self, yaw):
            self.x, self.y, self.z, self.w = 0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)
    for yaw in (-3.0, -0.4, 0.0, 1.2, 3.1):
        assert yaw_of(Q(yaw)) == pytest.approx(yaw)
