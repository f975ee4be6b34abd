"""The R1's cameras and lidar on the simulated robot: configuration and rendering, ROS-free.

`sensor_config` resolves the node's settings (`r1_sim.sensor_settings.SensorsSettings`: sizes, rates,
on/off) over the vendor's facts (topic names, frames, depth encodings: the guide and r1_sdk_facts.md
§6), which live in `VENDOR_CAMERAS`/`VENDOR_LIDAR`, into one spec per sensor. `SensorRig` holds the
scene and the robot body and renders any sensor at the state last given to `set_state` (the
simulator's ground truth), so the node, the benchmark and the tests all render through the same code.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

import numpy as np
import pinocchio as pin

from r1_common.settings import ConfigError
from r1_sim.body import RobotBody
from r1_sim.camera import PinholeCamera
from r1_sim.lidar import LivoxLidar
from r1_sim.scene import Scene, Shapes
from r1_sim.sensor_settings import NODE, CameraSettings, LidarSettings, SensorsSettings

__all__ = ["ConfigError", "CameraSpec", "LidarSpec", "SensorConfig", "SensorRig", "VENDOR_CAMERAS", "VENDOR_LIDAR",
           "VendorCamera", "VendorLidar", "parse_sensor_config", "sensor_config"]


@dataclass(frozen=True)
class VendorCamera:
    """What the vendor's driver publishes for one camera."""

    name: str
    label: str                 # for logs and diagnostics: "head camera"
    frame: str                 # URDF optical frame (z forward), header.frame_id
    rgb_topic: str
    depth_topic: Optional[str]
    depth_encoding: Optional[str]  # "16UC1" (mm) or "32FC1" (m)
    vendor_size: tuple[int, int]   # the real driver's published size [px] (the benchmark renders it too)


@dataclass(frozen=True)
class VendorLidar:
    """What the vendor's lidar driver publishes."""

    name: str
    label: str
    frame: str
    topic: str
    vendor_points: int         # points per scan (MID360: 200,000 points/s at 10 Hz)


@dataclass(frozen=True)
class CameraSpec:
    """One camera as the node renders it: the vendor's facts with the settings applied."""

    name: str
    label: str
    frame: str
    rgb_topic: str
    depth_topic: str | None
    depth_encoding: str | None  # "16UC1" (mm) or "32FC1" (m)
    width: int                  # [px]
    height: int                 # [px]
    hfov_deg: float
    rate_hz: float              # frames per second of ROS time
    min_depth_m: float
    max_depth_m: float
    enabled: bool = True
    jpeg_quality: int = 80
    vendor_size: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class LidarSpec:
    """The lidar as the node renders it: the vendor's facts with the settings applied."""

    name: str
    label: str
    frame: str
    topic: str
    rate_hz: float
    points_per_scan: int
    elevation_deg: tuple[float, float]
    min_range_m: float
    max_range_m: float
    range_noise_m: float = 0.0
    enabled: bool = True
    vendor_points: int = 20000


# The vendor's topics and frames. Field of view (r1_sim.sensor_settings): ZED 2 110° horizontal;
# RealSense D405 87° (the wrist cameras' colour stream); chassis cameras 118° (assumed).
VENDOR_CAMERAS: dict[str, VendorCamera] = {
    "head": VendorCamera("head", "head camera", "zed_link", "/hdas/camera_head/left_raw/image_raw_color/compressed",
                         "/hdas/camera_head/depth/depth_registered", "32FC1", (640, 360)),
    "wrist_left": VendorCamera("wrist_left", "left wrist camera", "left_realsense_link",
                               "/hdas/camera_wrist_left/color/image_raw/compressed",
                               "/hdas/camera_wrist_left/aligned_depth_to_color/image_raw", "16UC1", (640, 480)),
    "wrist_right": VendorCamera("wrist_right", "right wrist camera", "right_realsense_link",
                                "/hdas/camera_wrist_right/color/image_raw/compressed",
                                "/hdas/camera_wrist_right/aligned_depth_to_color/image_raw", "16UC1", (640, 480)),
}
for _side in ("front_left", "front_right", "left", "right", "rear"):
    VENDOR_CAMERAS[f"chassis_{_side}"] = VendorCamera(
        f"chassis_{_side}", f"chassis {_side.replace('_', ' ')} camera", f"camera_chassis_{_side}_optical_frame",
        f"/hdas/camera_chassis_{_side}/rgb/compressed", None, None, (1920, 1080))
VENDOR_LIDAR = VendorLidar("lidar", "chassis lidar", "lidar_chassis_left_link", "/hdas/lidar_chassis_left", 20000)


@dataclass(frozen=True)
class SensorConfig:
    """Every sensor's spec (enabled or not) and the node's timing."""

    cameras: dict[str, CameraSpec]
    lidar: LidarSpec
    stale_after_s: float = 1.0
    diagnostics_period_s: float = 1.0


def _camera(vendor: VendorCamera, c: CameraSettings, jpeg_quality: int) -> CameraSpec:
    depth_topic = getattr(c, "depth_topic", None)
    return CameraSpec(vendor.name, vendor.label, c.frame or vendor.frame, c.rgb_topic or vendor.rgb_topic,
                      (depth_topic or vendor.depth_topic) if vendor.depth_topic else None, vendor.depth_encoding,
                      c.width, c.height, c.hfov_deg, c.rate_hz, c.min_depth_m, c.max_depth_m, c.enabled,
                      jpeg_quality if c.jpeg_quality is None else c.jpeg_quality, vendor.vendor_size)


def _lidar(vendor: VendorLidar, li: LidarSettings) -> LidarSpec:
    return LidarSpec(vendor.name, vendor.label, li.frame or vendor.frame, li.topic or vendor.topic, li.rate_hz,
                     li.points_per_scan, li.elevation_deg, li.min_range_m, li.max_range_m, li.range_noise_m,
                     li.enabled, vendor.vendor_points)


def sensor_config(settings: SensorsSettings) -> SensorConfig:
    """The settings over the vendor's tables: one spec per sensor."""
    cameras = {name: _camera(vendor, getattr(settings.cameras, name), settings.jpeg_quality)
               for name, vendor in VENDOR_CAMERAS.items()}
    return SensorConfig(cameras, _lidar(VENDOR_LIDAR, settings.lidar), settings.stale_after_s,
                        settings.diagnostics_period_s)


def parse_sensor_config(params: Optional[Mapping[str, Any]]) -> SensorConfig:
    """The node's parameter namespace (config/sensors.yaml and the launch file's params) -> SensorConfig.

    :raises r1_common.settings.ConfigError: naming the bad or unknown key."""
    return sensor_config(SensorsSettings.from_params(params, where=NODE))


class SensorRig:
    """The scene, the robot body and every enabled sensor's model."""

    def __init__(self, urdf_xml: str, scene: Scene, config: SensorConfig, seed: int = 0):
        self.scene, self.config = scene, config
        self.body = RobotBody(urdf_xml)
        self.cameras: dict[str, PinholeCamera] = {}
        self.specs = {n: s for n, s in config.cameras.items() if s.enabled}
        for name, s in self.specs.items():
            self._check_frame(s.frame, f"cameras/{name}")
            try:
                self.cameras[name] = PinholeCamera(s.width, s.height, s.hfov_deg, s.min_depth_m, s.max_depth_m)
            except ValueError as e:
                raise ConfigError(f"cameras/{name}", str(e)) from e
        self.lidar: LivoxLidar | None = None
        if config.lidar.enabled:
            li = config.lidar
            self._check_frame(li.frame, "lidar")
            try:
                self.lidar = LivoxLidar(li.points_per_scan, li.elevation_deg, li.min_range_m, li.max_range_m,
                                        li.range_noise_m, seed)
            except ValueError as e:
                raise ConfigError("lidar", str(e)) from e
        self._world: Shapes | None = None

    def _check_frame(self, frame: str, who: str) -> None:
        if not self.body.model.existFrame(frame):
            raise ConfigError(f"{who}/frame", f"{frame!r} is not a frame of robot_description")

    def set_state(self, joints: Mapping[str, float], base_pose: tuple[float, float, float]) -> list[str]:
        """The simulator's ground truth: true joint positions by name, true (x, y, yaw) of the base."""
        self._world = None
        return self.body.set_state(joints, base_pose)

    def world(self) -> Shapes:
        """Scene and robot primitives at the current state (built once per state)."""
        if self._world is None:
            self._world = Shapes.concatenate([self.scene.shapes, self.body.shapes()])
        return self._world

    def sensor_pose(self, frame: str) -> pin.SE3:
        return self.body.frame_pose(frame)

    def render_camera(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """RGB (H, W, 3) uint8 and z-depth (H, W) float32 [m] of an enabled camera."""
        spec = self.specs[name]
        return self.cameras[name].render(self.sensor_pose(spec.frame), self.world(), self.scene.floor, self.scene.light)

    def scan_lidar(self) -> np.ndarray:
        """(K, 4) float32 x, y, z, intensity in the lidar frame."""
        if self.lidar is None:
            raise RuntimeError("the lidar is disabled")
        return self.lidar.scan(self.sensor_pose(self.config.lidar.frame), self.world(), self.scene.floor)
