"""The R1's cameras and lidar on the simulated robot: configuration and rendering, ROS-free.

`sensor_config` resolves the node's settings (`r1_sim.sensor_settings.SensorsSettings`: sizes, rates,
on/off) over the vendor's facts (topic names, frames, depth encodings: the guide and r1_sdk_facts.md
§6), which live in `VENDOR_CAMERAS`/`VENDOR_LIDAR`, into one spec per sensor. `SensorRig` holds the
world as one MuJoCo model (`r1_sim.mjcf`: the robot from its URDF on its planar base, in a scene of
`r1_sim/worlds`, a camera mounted on each enabled camera's optical frame) and renders any sensor at
the state last given to `set_state` / `set_objects` (the simulator's ground truth), so the node, the
benchmark and the tests all render through the same code:

* cameras: `r1_sim.offscreen.OffscreenCamera` (OSMesa without a display: MUJOCO_GL=osmesa, which
  r1_sim's package sets unless the environment chose), one per distinct resolution; RGB, and z-depth
  from the depth buffer of the same pass (what RealSense and ZED publish: along the optical axis, not
  the range);
* lidar: `mujoco.mj_multiRay` from the lidar frame along the Livox pattern of `r1_sim.lidar`
  (without bounding volumes: 3.2.3's culling by them is wrong, `cast_rays` says how; it culls by
  azimuth sector instead, `sector_cover`);
  intensity = the hit geom's `user` value (the scene's reflectivity, 0..255), 60 where it has none
  and on the robot (the robot's reflectivity before MuJoCo, which the URDF does not carry).

`close()` frees the renderers' GL contexts (the node, the benchmark and the tests call it).
"""
from __future__ import annotations

import copy
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import mujoco
import numpy as np

from r1_common.settings import ConfigError
from r1_sim import mjcf
from r1_sim.lidar import LivoxLidar
from r1_sim.offscreen import OffscreenCamera, gl_backend
from r1_sim.sensor_settings import NODE, CameraSettings, LidarSettings, SensorsSettings

__all__ = ["ConfigError", "CameraSpec", "LidarSpec", "ObjectPose", "SensorConfig", "SensorRig", "VENDOR_CAMERAS",
           "VENDOR_LIDAR", "VendorCamera", "VendorLidar", "ROBOT_REFLECTIVITY", "DEFAULT_REFLECTIVITY",
           "parse_sensor_config", "ray_sectors", "scene_xml", "sector_cover", "sensor_config", "vfov_deg"]

ROBOT_REFLECTIVITY = 60.0     # Livox scale: the robot's surfaces (the ray caster's value; the URDF has none)
DEFAULT_REFLECTIVITY = 60.0   # a scene geom whose `user` value is 0 or missing
RAY_SECTORS = 16             # azimuth sectors `cast_rays` culls the geoms by (one mj_multiRay call each)
RAY_SECTOR_MIN_RAYS = 1000   # fewer rays than this: one call, no culling (about as fast: measured 500-1,000)
_GROUP_0_ONLY = np.array([1, 0, 0, 0, 0, 0], dtype=np.uint8)   # mj_multiRay's geomgroup: culled geoms are in 1
NEAR_CLIP_M = 0.005           # [m] the renderers' near plane (nearer surfaces are not drawn)
FAR_CLIP_M = 100.0            # [m] their far plane: beyond the farthest valid depth of any camera
ObjectPose = Tuple[Sequence[float], Sequence[float]]   # position (x, y, z) [m], quaternion (w, x, y, z)


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


def vfov_deg(width: int, height: int, hfov_deg: float) -> float:
    """Vertical field of view of a pinhole camera with square pixels (MuJoCo's `fovy`)."""
    return math.degrees(2.0 * math.atan(math.tan(math.radians(hfov_deg) / 2.0) * height / width))


def scene_xml(scene: str) -> str:
    """The MJCF text of a scene: a name of r1_sim/worlds (`room`, `empty`) or a path to an MJCF file.

    :raises ConfigError: (key `scene`) no such scene, or not readable."""
    try:
        return mjcf.scene_path(scene).read_text()
    except (mjcf.WorldError, OSError) as e:
        raise ConfigError("scene", str(e)) from e


def ray_sectors(directions: np.ndarray, sectors: int) -> np.ndarray:
    """The azimuth sector (0 .. sectors - 1) of each of the (N, 3) `directions`: sector k holds the
    azimuths [-pi + k w, -pi + (k + 1) w), w = 2 pi / sectors (a vertical direction's azimuth is 0)."""
    width = 2.0 * math.pi / sectors
    return np.minimum(((np.arctan2(directions[:, 1], directions[:, 0]) + math.pi) / width).astype(int), sectors - 1)


def sector_cover(origin: np.ndarray, centres: np.ndarray, radii: np.ndarray, cullable: np.ndarray,
                 sectors: int) -> np.ndarray:
    """(sectors, G) bool: which geoms a ray from `origin` whose azimuth lies in each sector (`ray_sectors`)
    may hit, w = 2 pi / sectors wide. A geom is the sphere
    of radius `radii` [m] around `centres` (G, 3) (MuJoCo's geom_rbound around geom_xpos). A ray that
    hits it passes, seen from above, within that radius of the centre, so its azimuth is within
    asin(r / rho) of the centre's, rho the horizontal distance: the geom is in the sectors that
    interval meets (widened by 1e-6 rad against rounding). A geom with rho <= r, radius 0 (MuJoCo's for
    planes) or not `cullable` is in every sector; so are vertical rays' geoms, whose azimuth is 0."""
    d = centres[:, :2] - origin[:2]
    rho = np.hypot(d[:, 0], d[:, 1])
    everywhere = ~cullable | (radii <= 0.0) | (rho <= radii)
    half = np.arcsin(np.clip(radii / np.where(everywhere, 1.0, rho), 0.0, 1.0)) + 1e-6
    phi = np.arctan2(d[:, 1], d[:, 0])
    width = 2.0 * math.pi / sectors
    mid = -math.pi + (np.arange(sectors) + 0.5) * width
    gap = np.abs((mid[:, None] - phi[None, :] + math.pi) % (2.0 * math.pi) - math.pi)   # sector mid to centre
    return everywhere[None, :] | (gap <= half[None, :] + 0.5 * width)


class SensorRig:
    """The world (robot + scene) as one MuJoCo model with every enabled camera mounted, and the lidar."""

    def __init__(self, urdf_xml: str, scene: str, config: SensorConfig, seed: int = 0):
        """`scene`: the scene's MJCF text (`scene_xml`).

        :raises ConfigError: a sensor frame that is not a link of the URDF, bad sensor settings, a
        world MuJoCo cannot build (key `scene`)."""
        self.config = config
        self.specs = {n: s for n, s in config.cameras.items() if s.enabled}
        try:
            links = {link.get("name") for link in ET.fromstring(urdf_xml).iter("link")}
        except ET.ParseError as e:
            raise ConfigError("robot_description", f"not XML: {e}") from None
        for name, s in self.specs.items():
            if s.frame not in links:
                raise ConfigError(f"cameras/{name}/frame", f"{s.frame!r} is not a frame of robot_description")
            if not 0.0 <= s.min_depth_m < s.max_depth_m:
                raise ConfigError(f"cameras/{name}", "need 0 <= min_depth_m < max_depth_m")
        self.lidar: Optional[LivoxLidar] = None
        if config.lidar.enabled:
            li = config.lidar
            if li.frame not in links:
                raise ConfigError("lidar/frame", f"{li.frame!r} is not a frame of robot_description")
            try:
                self.lidar = LivoxLidar(li.points_per_scan, li.elevation_deg, li.min_range_m, li.max_range_m,
                                        li.range_noise_m, seed)
            except ValueError as e:
                raise ConfigError("lidar", str(e)) from e
        mounts = [mjcf.CameraMount(n, s.frame, vfov_deg(s.width, s.height, s.hfov_deg)) for n, s in self.specs.items()]
        try:
            self.model = mjcf.load_world(mjcf.world_xml(urdf_xml, scene, cameras=mounts))
        except mjcf.WorldError as e:
            raise ConfigError("scene", str(e)) from e
        m = self.model
        self.data = mujoco.MjData(m)
        self._joints = {mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j): int(m.jnt_qposadr[j])
                        for j in range(m.njnt) if m.jnt_type[j] in (mujoco.mjtJoint.mjJNT_HINGE,
                                                                     mujoco.mjtJoint.mjJNT_SLIDE)}
        self._base = [self._joints.pop(j) for j in mjcf.BASE_JOINTS]
        self.objects = {mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, int(m.jnt_bodyid[j])): int(m.jnt_qposadr[j])
                        for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE}
        # lidar intensity per geom: the scene's `user` value, the robot's own reflectivity on the robot
        robot_root = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "base_footprint")
        on_robot = np.array([self._under(int(m.geom_bodyid[g]), robot_root) for g in range(m.ngeom)], dtype=bool)
        user = m.geom_user[:, 0].astype(float) if m.nuser_geom > 0 else np.zeros(m.ngeom)
        self.reflectivity = np.where(on_robot, ROBOT_REFLECTIVITY, np.where(user > 0, user, DEFAULT_REFLECTIVITY))
        self._lidar_body = (mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, config.lidar.frame)
                            if self.lidar is not None else -1)
        # the model `cast_rays` gives mj_multiRay: a copy without bounding volumes (its culling by them is
        # wrong in MuJoCo 3.2.3); the same geoms, laid out as the rig's, so it reads the rig's data
        self._ray_model = copy.copy(m)
        self._ray_model.body_bvhadr[:] = -1
        # cast_rays culls geoms per azimuth sector through the copy's geom groups: all in group 0, which
        # its calls leave out only where culled (1); planes and height fields MuJoCo always tests
        self._ray_model.geom_group[:] = 0
        self._ray_cullable = ~np.isin(m.geom_type, (mujoco.mjtGeom.mjGEOM_PLANE, mujoco.mjtGeom.mjGEOM_HFIELD))
        # renderers: the offscreen buffer fits the largest camera; no multisampling (4x the cost on OSMesa);
        # the clipping planes in metres (MuJoCo's are in units of the model's extent)
        extent = float(m.stat.extent)
        m.vis.map.znear = NEAR_CLIP_M / extent
        m.vis.map.zfar = max(FAR_CLIP_M, 2.0 * max([s.max_depth_m for s in self.specs.values()] + [0.0])) / extent
        self._far = float(m.vis.map.zfar) * extent
        m.vis.quality.offsamples = 0
        if self.specs:
            m.vis.global_.offwidth = max([m.vis.global_.offwidth] + [s.width for s in self.specs.values()])
            m.vis.global_.offheight = max([m.vis.global_.offheight] + [s.height for s in self.specs.values()])
        self._renderers: Dict[Tuple[int, int], OffscreenCamera] = {}
        self._camera_ids = {name: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_CAMERA, name) for name in self.specs}
        if self.specs:
            gl_backend()
        try:
            for s in self.specs.values():
                if (s.width, s.height) not in self._renderers:
                    self._renderers[(s.width, s.height)] = OffscreenCamera(m, s.width, s.height)
        except Exception:
            self.close()
            raise
        self._dirty = True
        mujoco.mj_kinematics(m, self.data)     # the scene's own object poses until set_objects says otherwise
        self._dirty = True

    @staticmethod
    def _parent_chain(model: Any, body: int) -> List[int]:
        chain = [body]
        while body > 0:
            body = int(model.body_parentid[body])
            chain.append(body)
        return chain

    def _under(self, body: int, root: int) -> bool:
        return root >= 0 and root in self._parent_chain(self.model, body)

    def close(self) -> None:
        """Free the renderers (their GL contexts). The rig renders no camera afterwards."""
        for r in self._renderers.values():
            r.close()
        self._renderers.clear()

    def __enter__(self) -> "SensorRig":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- state -------------------------------------------------------------------------------------
    def set_state(self, joints: Mapping[str, float], base_pose: Tuple[float, float, float]) -> List[str]:
        """The simulator's ground truth: true joint positions by URDF name, true (x, y, yaw) of the base.
        Returns the names that are no joint of the model (ignored)."""
        unknown = []
        qpos = self.data.qpos
        for name, value in joints.items():
            adr = self._joints.get(name)
            if adr is None:
                unknown.append(name)
            else:
                qpos[adr] = value
        for adr, value in zip(self._base, base_pose):
            qpos[adr] = value
        self._dirty = True
        return unknown

    def set_objects(self, poses: Mapping[str, ObjectPose]) -> List[str]:
        """Poses of the scene's free bodies by body name (position, quaternion w x y z, checked by
        `r1_sim.object_states`); the others stay where they are. Returns the names that are no object."""
        unknown = []
        for name, (pos, quat) in poses.items():
            adr = self.objects.get(name)
            if adr is None:
                unknown.append(name)
            else:
                self.data.qpos[adr:adr + 3] = pos
                self.data.qpos[adr + 3:adr + 7] = quat
        self._dirty = True
        return unknown

    def _update(self) -> None:
        if self._dirty:
            mujoco.mj_kinematics(self.model, self.data)
            mujoco.mj_camlight(self.model, self.data)
            self._dirty = False

    def frame_pose(self, frame: str) -> Tuple[np.ndarray, np.ndarray]:
        """(position (3,), rotation (3, 3) world <- frame) of a URDF frame at the current state."""
        self._update()
        b = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, frame)
        if b < 0:
            raise KeyError(f"no frame {frame!r}")
        return self.data.xpos[b].copy(), self.data.xmat[b].reshape(3, 3).copy()

    def object_pose(self, name: str) -> Tuple[np.ndarray, np.ndarray]:
        """(position, quaternion w x y z) of a scene object now."""
        adr = self.objects[name]
        return self.data.qpos[adr:adr + 3].copy(), self.data.qpos[adr + 3:adr + 7].copy()

    # -- sensors -----------------------------------------------------------------------------------
    def render_camera(self, name: str, rgb: bool = True, depth: bool = True
                      ) -> Tuple[Optional[np.ndarray], Optional[np.ndarray]]:
        """RGB (H, W, 3) uint8 and z-depth (H, W) float32 [m] of an enabled camera (None for what is
        not asked). Depth: NaN where nothing was hit, −inf nearer than min_depth, +inf beyond max_depth
        (the ZED SDK's conventions; `r1_sim.encoding` turns them into 16UC1's 0)."""
        spec = self.specs[name]
        r = self._renderers.get((spec.width, spec.height))
        if r is None:
            raise RuntimeError("the rig is closed")
        self._update()
        image, raw = r.render(self.data, self._camera_ids[name], rgb=rgb, depth=depth)
        z = None
        if raw is not None:
            z = np.where(raw >= self._far * (1.0 - 1e-4), np.nan, raw)
            with np.errstate(invalid="ignore"):
                z = np.where(z < spec.min_depth_m, -np.inf, z)
                z = np.where(z > spec.max_depth_m, np.inf, z).astype(np.float32)
        return image, z

    def cast_rays(self, origin: np.ndarray, directions: np.ndarray, exclude_body: int = -1
                  ) -> Tuple[np.ndarray, np.ndarray]:
        """(distance [m], geom id) of rays from `origin` along unit `directions` (N, 3) in the world;
        distance −1 and geom −1 where nothing is hit. The nearest visible geom of any group, static or
        not, but those of `exclude_body`: what `mj_ray` gives for each ray, bit for bit."""
        self._update()
        origin = np.asarray(origin, dtype=float)
        vec = np.ascontiguousarray(directions, dtype=float).reshape(-1, 3)
        n = len(vec)
        geomid = np.empty(n, dtype=np.int32)
        dist = np.empty(n)
        # mj_multiRay on the rig's model without bounding volumes (`_ray_model`): MuJoCo 3.2.3's
        # mj_multiRay culls a geom by the angles its bounding box's corners span from the origin, which
        # misses large geoms near it (the floor under the lidar, the walls, the table: 9 % of a scan in
        # the room), and a body by a sphere it places unrotated. Without bounding volumes it tests every
        # geom in the order mj_ray does (one mj_ray call per ray gives the same at 3x the cost: the
        # binding's per-call overhead). Instead of its culling, one call per azimuth sector, each leaving
        # out the geoms whose bounding sphere no ray of the sector can reach (`sector_cover`): the same
        # hits, a third of the geom tests at the lidar's 20,000 beams (docs/sensors.md)
        model = self._ray_model
        if n < RAY_SECTOR_MIN_RAYS:
            mujoco.mj_multiRay(model, self.data, origin, vec.reshape(-1), None, 1, exclude_body, geomid, dist, n,
                               mujoco.mjMAXVAL)
            return dist, geomid
        sector = ray_sectors(vec, RAY_SECTORS)
        order = np.argsort(sector, kind="stable")
        ends = np.cumsum(np.bincount(sector, minlength=RAY_SECTORS))
        cover = sector_cover(origin, self.data.geom_xpos, model.geom_rbound, self._ray_cullable, RAY_SECTORS)
        sorted_vec = vec[order]
        hit, far = np.empty_like(geomid), np.empty_like(dist)        # in sector order
        start = 0
        try:
            for k, end in enumerate(ends.tolist()):
                if end > start:
                    model.geom_group[:] = ~cover[k]         # culled: group 1, which this call leaves out
                    mujoco.mj_multiRay(model, self.data, origin, sorted_vec[start:end].reshape(-1), _GROUP_0_ONLY,
                                       1, exclude_body, hit[start:end], far[start:end], end - start,
                                       mujoco.mjMAXVAL)
                start = end
        finally:
            model.geom_group[:] = 0
        geomid[order], dist[order] = hit, far
        return dist, geomid

    def scan_lidar(self, directions: Optional[np.ndarray] = None) -> np.ndarray:
        """(K, 4) float32 x, y, z, intensity in the lidar frame (the next scan of the Livox pattern, or the
        given unit `directions` in the lidar frame). Returns nearer than min_range or beyond max_range
        are dropped, as nothing hit."""
        if self.lidar is None:
            raise RuntimeError("the lidar is disabled")
        d = self.lidar.next_directions() if directions is None else np.asarray(directions, dtype=float)
        pos, rot = self.frame_pose(self.config.lidar.frame)
        t, geom = self.cast_rays(pos, d @ rot.T, self._lidar_body)
        li = self.lidar
        if li.range_noise_m > 0:
            t = np.where(geom >= 0, t + li._rng.normal(0.0, li.range_noise_m, len(t)), t)
        keep = (geom >= 0) & (t >= li.min_range) & (t <= li.max_range)
        out = np.empty((int(keep.sum()), 4), dtype=np.float32)
        out[:, :3] = d[keep] * t[keep, None]
        out[:, 3] = self.reflectivity[geom[keep]]
        return out
