"""The simulated sensors' settings (`r1_sim_sensors`, private parameters of `/r1_sim_sensors`), ROS-free.

`SensorsSettings` declares what a machine can afford (sizes, rates, on/off) and where the node reads
its inputs; the vendor's facts (topics, frames, depth encodings) are `r1_sim.sensor_rig`'s tables,
which `frame`/`rgb_topic`/`depth_topic`/`topic` override when set. Each kind of camera is its own
class because its defaults differ (a nested section is read over its class's defaults): the head's
ZED 2, the wrists' RealSense, the chassis cameras.

The defaults are small so the whole stack fits a 2-core machine: every sensor together costs about a
fifth of a core at real time (docs/benchmarks/sensors_sim.md), where the vendor's drivers publish
640×360 (head), 640×480 (wrists) and 1920×1080 (chassis) at 15 fps and 20,000 lidar points at 10 Hz.
Rates are in ROS time (simulated time under r1_sim.launch). docs/sensors.md shows the tables.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from r1_common.settings import Settings, setting

NODE = "r1_sim_sensors"
MIN_RATE_HZ = 0.01       # [Hz] a sensor slower than this is better disabled


@dataclass(frozen=True)
class CameraSettings(Settings):
    """A colour camera (JPEG); the defaults are the chassis cameras' (signal_camera)."""

    enabled: bool = setting(True, "render and publish this camera")
    width: int = setting(128, "px; image width", low=1)
    height: int = setting(72, "px; image height", low=1)
    # the chassis cameras' lens is not documented by the vendor: 118° is an assumption (a wide automotive camera)
    hfov_deg: float = setting(118.0, "°; horizontal field of view", low=1.0, high=178.0)
    rate_hz: float = setting(1.0, "Hz of ROS time; frames per second", low=MIN_RATE_HZ)
    min_depth_m: float = setting(0.05, "m; nearest valid depth", low=0.0)
    max_depth_m: float = setting(20.0, "m; farthest valid depth", low=0.01)
    jpeg_quality: Optional[int] = setting(None, "JPEG quality (null: the node's `jpeg_quality`)",
                                          low=1, high=100)
    frame: Optional[str] = setting(None, "URDF optical frame, header.frame_id (null: the vendor's)")
    rgb_topic: Optional[str] = setting(None, "topic of the JPEG image (null: the vendor's)")

    def __post_init__(self) -> None:
        if not self.min_depth_m < self.max_depth_m:
            raise ValueError(f"min_depth_m {self.min_depth_m:g} must be below max_depth_m {self.max_depth_m:g}")


@dataclass(frozen=True)
class DepthCameraSettings(CameraSettings):
    """A colour + depth camera; the defaults are the wrists' RealSense (D405: 87° colour field of view)."""

    width: int = setting(128, "px; image width", low=1)
    height: int = setting(96, "px; image height", low=1)
    hfov_deg: float = setting(87.0, "°; horizontal field of view", low=1.0, high=178.0)
    rate_hz: float = setting(2.0, "Hz of ROS time; frames per second", low=MIN_RATE_HZ)
    min_depth_m: float = setting(0.07, "m; nearest valid depth", low=0.0)
    max_depth_m: float = setting(10.0, "m; farthest valid depth", low=0.01)
    depth_topic: Optional[str] = setting(None, "topic of the depth image (null: the vendor's)")


@dataclass(frozen=True)
class HeadCameraSettings(DepthCameraSettings):
    """The head's ZED 2 (110° field of view; depth range of the vendor's zed2.launch)."""

    width: int = setting(160, "px; image width", low=1)
    height: int = setting(90, "px; image height", low=1)
    hfov_deg: float = setting(110.0, "°; horizontal field of view", low=1.0, high=178.0)
    min_depth_m: float = setting(0.3, "m; nearest valid depth", low=0.0)
    max_depth_m: float = setting(15.0, "m; farthest valid depth", low=0.01)


@dataclass(frozen=True)
class CamerasSettings(Settings):
    """The vendor's eight cameras by name."""

    head: HeadCameraSettings = setting(HeadCameraSettings(), "ZED 2: colour + depth `32FC1` [m]")
    wrist_left: DepthCameraSettings = setting(DepthCameraSettings(), "RealSense: colour + depth `16UC1` [mm]")
    wrist_right: DepthCameraSettings = setting(DepthCameraSettings(), "RealSense: colour + depth `16UC1` [mm]")
    chassis_front_left: CameraSettings = setting(CameraSettings(), "signal_camera: colour only")
    chassis_front_right: CameraSettings = setting(CameraSettings(), "signal_camera: colour only")
    chassis_left: CameraSettings = setting(CameraSettings(), "signal_camera: colour only")
    chassis_right: CameraSettings = setting(CameraSettings(), "signal_camera: colour only")
    chassis_rear: CameraSettings = setting(CameraSettings(), "signal_camera: colour only")


@dataclass(frozen=True)
class LidarSettings(Settings):
    """The chassis lidar, Livox MID360 style (360° around, a band of elevations, ranges 0.1-40 m)."""

    enabled: bool = setting(True, "render and publish the lidar")
    rate_hz: float = setting(10.0, "Hz of ROS time; scans per second", low=MIN_RATE_HZ)
    points_per_scan: int = setting(1500, "beams per scan (the MID360 sends ~20,000)", low=1)
    elevation_deg: Tuple[float, float] = setting((-7.0, 52.0), "°; lowest and highest beam", low=-90.0, high=90.0)
    min_range_m: float = setting(0.1, "m; nearer returns are dropped (the MID360's blind zone)", low=0.0)
    max_range_m: float = setting(40.0, "m; farther returns are dropped", low=0.01)
    range_noise_m: float = setting(0.0, "m; 1-σ range noise (the MID360's spec: 0.02 m at 10 m)", low=0.0)
    frame: Optional[str] = setting(None, "URDF frame of the cloud, header.frame_id (null: the vendor's)")
    topic: Optional[str] = setting(None, "topic of the PointCloud2 (null: the vendor's)")

    def __post_init__(self) -> None:
        if not self.elevation_deg[0] < self.elevation_deg[1]:
            raise ValueError(f"elevation_deg must rise from the lowest to the highest beam, not {self.elevation_deg}")
        if not self.min_range_m < self.max_range_m:
            raise ValueError(f"min_range_m {self.min_range_m:g} must be below max_range_m {self.max_range_m:g}")


@dataclass(frozen=True)
class SensorsSettings(Settings):
    """Everything `r1_sim_sensors` reads from its private namespace."""

    render_without_subscribers: bool = setting(False, "render sensors nobody subscribes to (costs CPU)")
    stale_after_s: float = setting(1.0, "s of ROS time; ground truth older than this stops publishing", low=0.01)
    diagnostics_period_s: float = setting(1.0, "s of ROS time; /diagnostics period", low=0.01)
    jpeg_quality: int = setting(80, "JPEG quality of every camera that does not set its own",
                                low=1, high=100)
    cameras: CamerasSettings = setting(CamerasSettings(), "per camera")
    lidar: LidarSettings = setting(LidarSettings(), "the chassis lidar")
    scene: str = setting("room", "the world the sensors see: a scene of r1_sim/worlds (`room`, `empty`) or a path "
                                 "to an MJCF file (the simulator's own, so the objects of /sim/objects are in it)")
    urdf_file: str = setting("", "robot model read when robot_description is not set "
                                 "(empty: r1_description's urdf/r1_v2_1_0.urdf)")
    joint_states_topic: str = setting("/sim/joint_states", "ground truth: every simulated joint's position")
    odom_topic: str = setting("/sim/odom", "ground truth: the base's pose in `sim_world`")
    objects_topic: str = setting("/sim/objects", "ground truth: the scene's objects' poses in `sim_world` "
                                                 "(r1_sim/ObjectStates; until it arrives: where the scene puts them)")
