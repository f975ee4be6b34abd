"""Byte layouts of the sensor messages, ROS-free: JPEG, depth images, PointCloud2 data.

The node copies these into sensor_msgs messages; keeping the packing here lets pytest check the
layouts (and decode them with the same libraries a consumer would) without a ROS master.

- CompressedImage: format "jpeg", data = a baseline JPEG (Pillow), as image_transport's
  compressed plugin and the vendor's drivers publish;
- RealSense aligned depth: encoding 16UC1, millimetres, little-endian, 0 = no data;
- ZED depth: encoding 32FC1, metres, little-endian, NaN/±inf kept (no data / too near / too far);
- PointCloud2: one row of points, fields x, y, z, intensity as little-endian float32
  (PointField.FLOAT32 = 7), point_step 16.
"""
from __future__ import annotations

import io
from typing import NamedTuple

import numpy as np
from PIL import Image

FLOAT32 = 7  # sensor_msgs/PointField.FLOAT32
CLOUD_FIELDS = (("x", 0), ("y", 4), ("z", 8), ("intensity", 12))
CLOUD_POINT_STEP = 16


class RawImage(NamedTuple):
    """What a sensor_msgs/Image needs besides its header."""

    height: int
    width: int
    encoding: str
    is_bigendian: int
    step: int
    data: bytes


def jpeg(rgb: np.ndarray, quality: int = 80) -> bytes:
    """(H, W, 3) uint8 RGB -> JPEG bytes."""
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb, dtype=np.uint8)).save(buf, format="JPEG", quality=int(quality))
    return buf.getvalue()


def depth_16uc1(depth_m: np.ndarray) -> RawImage:
    """z-depth [m] -> 16UC1 millimetres; NaN, ±inf and out-of-range become 0 (no data)."""
    mm = np.where(np.isfinite(depth_m), np.round(depth_m * 1000.0), 0.0)
    mm = np.where((mm > 0) & (mm <= 65535), mm, 0.0).astype("<u2")
    h, w = mm.shape
    return RawImage(h, w, "16UC1", 0, 2 * w, mm.tobytes())


def depth_32fc1(depth_m: np.ndarray) -> RawImage:
    """z-depth [m] -> 32FC1 metres, non-finite values kept."""
    f = np.ascontiguousarray(depth_m, dtype="<f4")
    h, w = f.shape
    return RawImage(h, w, "32FC1", 0, 4 * w, f.tobytes())


def cloud_data(points: np.ndarray) -> bytes:
    """(N, 4) x, y, z, intensity -> PointCloud2 data (point_step 16, little-endian float32)."""
    return np.ascontiguousarray(points, dtype="<f4").reshape(-1, 4).tobytes()
