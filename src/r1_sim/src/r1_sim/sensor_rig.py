"""The R1's cameras and lidar on the simulated robot: configuration and rendering, ROS-free.

`parse_sensor_config` turns the node's parameters (config/sensors.yaml) into sensor specs; the
vendor's facts (topic names, frames, depth encodings: the guide and r1_sdk_facts.md §6) live in
`VENDOR_CAMERAS`/`VENDOR_LIDAR`, and the YAML sets only what a machine can afford (sizes, rates,
on/off). `SensorRig` holds the scene and the robot body and renders any sensor at the state last
given to `set_state` (the simulator's ground truth), so the node, the benchmark and the tests all
render through the same code.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

import numpy as np
import pinocchio as pin

from r1_sim.body import RobotBody
from r1_sim.camera import PinholeCamera
from r1_sim.lidar import LivoxLidar
from r1_sim.scene import Scene, Shapes


class ConfigError(ValueError):
    """Sensor parameters that cannot work (unknown sensor, bad size, frame not in the URDF)."""


@dataclass(frozen=True)
class CameraSpec:
    name: str
    label: str                 # for logs and diagnostics: "head camera"
    frame: str                 # URDF optical frame (z forward), header.frame_id
    rgb_topic: str
    depth_topic: str | None
    depth_encoding: str | None  # "16UC1" (mm) or "32FC1" (m)
    width: int
    height: int
    hfov_deg: float
    rate_hz: float
    min_depth_m: float
    max_depth_m: float
    enabled: bool = True
    jpeg_quality: int = 80
    vendor_size: tuple[int, int] = (0, 0)   # the real driver's published size (the benchmark renders it too)


@dataclass(frozen=True)
class LidarSpec:
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
    vendor_points: int = 20000              # MID360: 200,000 points/s at 10 Hz


# The vendor's topics and frames. Field of view: ZED 2 110° horizontal; RealSense D405 87°
# (the wrist cameras' colour stream); chassis cameras 118° (assumed: a wide automotive camera;
# the vendor does not document it). Defaults of the tunables are the small ones of sensors.yaml.
VENDOR_CAMERAS: dict[str, CameraSpec] = {
    "head": CameraSpec("head", "head camera", "zed_link", "/hdas/camera_head/left_raw/image_raw_color/compressed",
                       "/hdas/camera_head/depth/depth_registered", "32FC1", 160, 90, 110.0, 2.0, 0.3, 15.0,
                       vendor_size=(640, 360)),
    "wrist_left": CameraSpec("wrist_left", "left wrist camera", "left_realsense_link",
                             "/hdas/camera_wrist_left/color/image_raw/compressed",
                             "/hdas/camera_wrist_left/aligned_depth_to_color/image_raw", "16UC1",
                             128, 96, 87.0, 2.0, 0.07, 10.0, vendor_size=(640, 480)),
    "wrist_right": CameraSpec("wrist_right", "right wrist camera", "right_realsense_link",
                              "/hdas/camera_wrist_right/color/image_raw/compressed",
                              "/hdas/camera_wrist_right/aligned_depth_to_color/image_raw", "16UC1",
                              128, 96, 87.0, 2.0, 0.07, 10.0, vendor_size=(640, 480)),
}
for _side in ("front_left", "front_right", "left", "right", "rear"):
    VENDOR_CAMERAS[f"chassis_{_side}"] = CameraSpec(
        f"chassis_{_side}", f"chassis {_side.replace('_', ' ')} camera", f"camera_chassis_{_side}_optical_frame",
        f"/hdas/camera_chassis_{_side}/rgb/compressed", None, None, 128, 72, 118.0, 1.0, 0.05, 20.0,
        vendor_size=(1920, 1080))
VENDOR_LIDAR = LidarSpec("lidar", "chassis lidar", "lidar_chassis_left_link", "/hdas/lidar_chassis_left", 10.0, 1500,
                         (-7.0, 52.0), 0.1, 40.0)


@dataclass(frozen=True)
class SensorConfig:
    cameras: dict[str, CameraSpec]
    lidar: LidarSpec
    stale_after_s: float = 1.0
    diagnostics_period_s: float = 1.0


def _number(section: Mapping[str, Any], key: str, default: float, where: str, positive: bool = True) -> float:
    try:
        value = float(section.get(key, default))
    except (TypeError, ValueError):
        raise ConfigError(f"{where}.{key}: not a number: {section.get(key)!r}") from None
    if not np.isfinite(value) or (positive and value <= 0) or value < 0:
        raise ConfigError(f"{where}.{key}: must be {'positive' if positive else 'non-negative'}, got {value}")
    return value


def parse_sensor_config(params: Mapping[str, Any]) -> SensorConfig:
    """Node parameters (sensors.yaml) over the vendor table -> SensorConfig."""
    cams_in = params.get("cameras") or {}
    if not isinstance(cams_in, Mapping):
        raise ConfigError("cameras: expected a mapping of camera name -> settings")
    unknown = set(cams_in) - set(VENDOR_CAMERAS)
    if unknown:
        raise ConfigError(f"cameras: unknown {sorted(unknown)} (known: {sorted(VENDOR_CAMERAS)})")
    quality = int(_number(params, "jpeg_quality", 80, "jpeg_quality"))
    cameras = {}
    for name, base in VENDOR_CAMERAS.items():
        c = cams_in.get(name) or {}
        where = f"cameras.{name}"
        spec = replace(
            base, enabled=bool(c.get("enabled", base.enabled)),
            frame=str(c.get("frame", base.frame)), rgb_topic=str(c.get("rgb_topic", base.rgb_topic)),
            depth_topic=c.get("depth_topic", base.depth_topic) if base.depth_topic else None,
            width=int(_number(c, "width", base.width, where)), height=int(_number(c, "height", base.height, where)),
            hfov_deg=_number(c, "hfov_deg", base.hfov_deg, where), rate_hz=_number(c, "rate_hz", base.rate_hz, where),
            min_depth_m=_number(c, "min_depth_m", base.min_depth_m, where, positive=False),
            max_depth_m=_number(c, "max_depth_m", base.max_depth_m, where),
            jpeg_quality=int(_number(c, "jpeg_quality", quality, where)))
        if not 1 <= spec.jpeg_quality <= 100:
            raise ConfigError(f"{where}.jpeg_quality: 1..100, got {spec.jpeg_quality}")
        cameras[name] = spec
    li = params.get("lidar") or {}
    b = VENDOR_LIDAR
    elevation = li.get("elevation_deg", b.elevation_deg)
    try:
        elevation = (float(elevation[0]), float(elevation[1]))
    except (TypeError, ValueError, IndexError, KeyError):
        raise ConfigError(f"lidar.elevation_deg: expected [low, high] in degrees, got {elevation!r}") from None
    lidar = replace(b, enabled=bool(li.get("enabled", b.enabled)), frame=str(li.get("frame", b.frame)),
                    topic=str(li.get("topic", b.topic)), rate_hz=_number(li, "rate_hz", b.rate_hz, "lidar"),
                    points_per_scan=int(_number(li, "points_per_scan", b.points_per_scan, "lidar")),
                    elevation_deg=elevation,
                    min_range_m=_number(li, "min_range_m", b.min_range_m, "lidar", positive=False),
                    max_range_m=_number(li, "max_range_m", b.max_range_m, "lidar"),
                    range_noise_m=_number(li, "range_noise_m", b.range_noise_m, "lidar", positive=False))
    return SensorConfig(cameras, lidar, _number(params, "stale_after_s", 1.0, "stale_after_s"),
                        _number(params, "diagnostics_period_s", 1.0, "diagnostics_period_s"))


class SensorRig:
    """The scene, the robot body and every enabled sensor's model."""

    def __init__(self, urdf_xml: str, scene: Scene, config: SensorConfig, seed: int = 0):
        self.scene, self.config = scene, config
        self.body = RobotBody(urdf_xml)
        self.cameras: dict[str, PinholeCamera] = {}
        self.specs = {n: s for n, s in config.cameras.items() if s.enabled}
        for name, s in self.specs.items():
            self._check_frame(s.frame, name)
            try:
                self.cameras[name] = PinholeCamera(s.width, s.height, s.hfov_deg, s.min_depth_m, s.max_depth_m)
            except ValueError as e:
                raise ConfigError(f"cameras.{name}: {e}") from e
        self.lidar: LivoxLidar | None = None
        if config.lidar.enabled:
            li = config.lidar
            self._check_frame(li.frame, "lidar")
            try:
                self.lidar = LivoxLidar(li.points_per_scan, li.elevation_deg, li.min_range_m, li.max_range_m,
                                        li.range_noise_m, seed)
            except ValueError as e:
                raise ConfigError(f"lidar: {e}") from e
        self._world: Shapes | None = None

    def _check_frame(self, frame: str, who: str) -> None:
        if not self.body.model.existFrame(frame):
            raise ConfigError(f"{who}: frame {frame!r} is not in robot_description")

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
