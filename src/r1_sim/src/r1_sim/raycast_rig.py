"""The sensors' former renderer, a numpy ray caster over the YAML scene, kept for the side-by-side benchmark only.

`RaycastRig` is the `SensorRig` of before MuJoCo (r1_sim.raycast, r1_sim.scene, r1_sim.body); the
benchmark measures it beside `r1_sim.sensor_rig.SensorRig` at the same sizes. Removed once measured.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pinocchio as pin

from r1_common.settings import ConfigError
from r1_sim.body import RobotBody
from r1_sim.camera import PinholeCamera
from r1_sim.lidar import LivoxLidar
from r1_sim.scene import Scene, Shapes
from r1_sim.sensor_rig import SensorConfig

__all__ = ["RaycastRig"]


class RaycastRig:
    """The ray caster before MuJoCo: the YAML scene, the robot's collision primitives, each enabled sensor."""

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
