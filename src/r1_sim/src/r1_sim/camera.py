"""Pinhole camera: RGB and depth images of a scene by ray casting, ROS-free.

Optical frame convention (REP 103, the frames of the URDF): z forward, x right, y down. Pixel
(u, v) (column, row) looks through its centre, (u + 0.5, v + 0.5) in continuous image
coordinates, with square pixels: fx = fy = (width / 2) / tan(hfov / 2), principal point at the
image centre. Depth is z-depth along the optical axis (what RealSense and ZED publish), not the
range along the ray.

Shading is Lambert with one directional light, a headlight (light from the camera, so walls the sun
misses still show their shape) and an ambient term, on per-object colours and a checkered floor:
enough for an image to change visibly when the robot or an arm moves, and cheap.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from r1_sim.raycast import FLOOR, MISS, Hits, cast
from r1_sim.scene import Floor, Light, Shapes


@dataclass
class PinholeCamera:
    """Image size, horizontal field of view and the range within which depth is valid."""

    width: int
    height: int
    hfov_deg: float
    min_depth: float = 0.1
    max_depth: float = 10.0
    _rays: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.width < 1 or self.height < 1:
            raise ValueError(f"image size must be positive, got {self.width}x{self.height}")
        if not 1.0 <= self.hfov_deg < 179.0:
            raise ValueError(f"hfov_deg must be in [1, 179), got {self.hfov_deg}")
        if not 0.0 <= self.min_depth < self.max_depth:
            raise ValueError("need 0 <= min_depth < max_depth")
        f = self.fx
        u, v = np.meshgrid(np.arange(self.width) + 0.5, np.arange(self.height) + 0.5)
        rays = np.stack([(u - self.width / 2) / f, (v - self.height / 2) / f, np.ones_like(u)], axis=-1).reshape(-1, 3)
        self._rays = rays / np.linalg.norm(rays, axis=1, keepdims=True)

    @property
    def fx(self) -> float:
        return (self.width / 2.0) / math.tan(math.radians(self.hfov_deg) / 2.0)

    @property
    def vfov_deg(self) -> float:
        return math.degrees(2.0 * math.atan((self.height / 2.0) / self.fx))

    @property
    def rays(self) -> np.ndarray:
        """(H·W, 3) unit ray directions in the optical frame, row-major."""
        return self._rays

    def project(self, points_optical: np.ndarray) -> np.ndarray:
        """(N, 3) points in the optical frame -> (N, 2) continuous pixel coordinates (u, v)."""
        p = np.atleast_2d(points_optical)
        return np.stack([self.fx * p[:, 0] / p[:, 2] + self.width / 2,
                         self.fx * p[:, 1] / p[:, 2] + self.height / 2], axis=1)

    def cast(self, pose: pin.SE3, shapes: Shapes, floor: Floor | None) -> Hits:
        """Hits of every pixel's ray from the camera at `pose` (world <- optical frame)."""
        return cast(pose.translation, self._rays @ pose.rotation.T, shapes, floor)

    def depth(self, hits: Hits) -> np.ndarray:
        """(H, W) float32 z-depth [m]; NaN where nothing was hit, −inf nearer than min_depth,
        +inf beyond max_depth (the ZED SDK's conventions)."""
        z = hits.t * self._rays[:, 2]
        z = np.where(hits.index == MISS, np.nan, z)
        z = np.where(z < self.min_depth, -np.inf, z)
        z = np.where(z > self.max_depth, np.inf, z)
        return z.reshape(self.height, self.width).astype(np.float32)

    def rgb(self, hits: Hits, pose: pin.SE3, shapes: Shapes, floor: Floor | None, light: Light) -> np.ndarray:
        """(H, W, 3) uint8 image, Lambert-shaded."""
        n = len(hits.t)
        albedo = np.empty((n, 3))
        albedo[:] = light.background
        obj = hits.index >= 0
        albedo[obj] = shapes.colour[hits.index[obj]]
        on_floor = hits.index == FLOOR
        if floor is not None and on_floor.any():
            dirs = self._rays[on_floor] @ pose.rotation.T
            xy = pose.translation[:2] + dirs[:, :2] * hits.t[on_floor, None]
            albedo[on_floor] = floor.colour_at(xy)
        lit = np.clip(-(hits.normal @ light.direction), 0.0, 1.0)
        facing = np.abs(np.einsum("ij,ij->i", hits.normal, self._rays @ pose.rotation.T))
        diffuse = (1.0 - light.headlight) * lit + light.headlight * facing
        shade = np.where(hits.index == MISS, 1.0, light.ambient + (1.0 - light.ambient) * diffuse)
        img = np.clip(albedo * shade[:, None] * 255.0 + 0.5, 0, 255).astype(np.uint8)
        return img.reshape(self.height, self.width, 3)

    def render(self, pose: pin.SE3, shapes: Shapes, floor: Floor | None, light: Light) -> tuple[np.ndarray, np.ndarray]:
        """RGB (H, W, 3) uint8 and z-depth (H, W) float32 [m] from `pose` (world <- optical)."""
        hits = self.cast(pose, shapes, floor)
        return self.rgb(hits, pose, shapes, floor, light), self.depth(hits)
