"""The sensors on the simulated R1, rendered by MuJoCo: frames, depth, colour, objects, the arm in view, the lidar.

Expected values are computed here, independently of the renderer: sensor frames from a separate pinocchio
model of the URDF, depths and ranges from the room's planes (worlds/room.xml: inner walls at x = ±3,
y = ±2.5, table top at 0.74 m), pixel positions by projecting known points with the pinhole model
(square pixels, principal point at the centre), so a wrong frame, base transform, field of view, depth
conversion or joint mapping shows up.
"""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest
import yaml

from r1_sim.sensor_rig import (
    DEFAULT_REFLECTIVITY,
    ROBOT_REFLECTIVITY,
    VENDOR_CAMERAS,
    ConfigError,
    SensorRig,
    parse_sensor_config,
    ray_sectors,
    scene_xml,
    sector_cover,
    vfov_deg,
)

PKG = Path(__file__).resolve().parents[2]
URDF = PKG.parent / "r1_description" / "urdf" / "r1_v2_1_0.urdf"
START = yaml.safe_load((PKG / "config" / "sim.yaml").read_text())["start_pose"]
# left arm reaching in front of the head camera (found by sampling; the gripper ~0.49 m ahead)
ARM_IN_VIEW = {"left_arm_joint1": -0.2, "left_arm_joint2": 2.6, "left_arm_joint3": -1.2,
               "left_arm_joint4": 0.4, "left_arm_joint5": 1.2, "left_arm_joint6": -1.7}
TABLE_TOP, FRONT_WALL, LEFT_WALL = 0.74, 3.0, 2.5
RED_BOX = np.array([1.0, 0.2, 0.79])      # its centre, room.xml (half size 0.05)
IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


@pytest.fixture(scope="module")
def urdf() -> str:
    return URDF.read_text()


@pytest.fixture()
def rig(urdf):
    r = SensorRig(urdf, scene_xml("room"), parse_sensor_config(yaml.safe_load((PKG / "config" / "sensors.yaml")
                                                                               .read_text())))
    r.set_state(START, (0.0, 0.0, 0.0))
    yield r
    r.close()


def reference_pose(urdf: str, joints: dict, base: tuple, frame: str) -> pin.SE3:
    """World pose of a frame from our own pinocchio model: planar base * FK."""
    model = pin.buildModelFromXML(urdf)
    data = model.createData()
    q = pin.neutral(model)
    for name, v in joints.items():
        j = model.joints[model.getJointId(name)]
        q[j.idx_q] = v
    pin.framesForwardKinematics(model, data, q)
    x, y, yaw = base
    world = pin.SE3(pin.rpy.rpyToMatrix(0, 0, yaw), np.array([x, y, 0.0]))
    return world * data.oMf[model.getFrameId(frame)]


def pixel_of(rig: SensorRig, camera: str, point) -> tuple[int, int]:
    """(row, column) of the pixel a world point projects into (pinhole, square pixels)."""
    spec = rig.specs[camera]
    pos, rot = rig.frame_pose(spec.frame)
    p = rot.T @ (np.asarray(point, dtype=float) - pos)
    f = (spec.width / 2) / math.tan(math.radians(spec.hfov_deg) / 2)
    return int(f * p[1] / p[2] + spec.height / 2), int(f * p[0] / p[2] + spec.width / 2)


def pixel_ray(rig: SensorRig, camera: str, row: int, col: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(origin, unit direction in the world, z of the unit direction in the optical frame) of a pixel's centre."""
    spec = rig.specs[camera]
    pos, rot = rig.frame_pose(spec.frame)
    f = (spec.width / 2) / math.tan(math.radians(spec.hfov_deg) / 2)
    d = np.array([(col + 0.5 - spec.width / 2) / f, (row + 0.5 - spec.height / 2) / f, 1.0])
    d /= np.linalg.norm(d)
    return pos, rot @ d, d[2]


def test_sensor_frames_follow_the_joints_and_the_base(urdf, rig):
    joints = {**START, "torso_joint1": 0.3, "torso_joint2": -0.4, "torso_joint4": 0.5, "left_arm_joint2": 0.7}
    base = (1.2, -0.7, 2.5)
    rig.set_state(joints, base)
    for frame in ("zed_link", "left_realsense_link", "right_realsense_link", "lidar_chassis_left_link",
                  "camera_chassis_rear_optical_frame"):
        (pos, rot), want = rig.frame_pose(frame), reference_pose(urdf, joints, base, frame)
        np.testing.assert_allclose(pos, want.translation, atol=1e-6, err_msg=frame)
        np.testing.assert_allclose(rot, want.rotation, atol=1e-5, err_msg=frame)


def test_the_cameras_field_of_view_is_the_settings():
    assert vfov_deg(160, 90, 110.0) == pytest.approx(math.degrees(2 * math.atan(math.tan(math.radians(55)) * 90 / 160)))
    assert vfov_deg(100, 100, 90.0) == pytest.approx(90.0)


@pytest.mark.parametrize("target, plane", [((1.3, -0.35, TABLE_TOP), (2, TABLE_TOP)),      # the table's top
                                           ((FRONT_WALL, 0.6, 1.6), (0, FRONT_WALL)),       # the front wall
                                           ((2.0, -1.2, 0.0), (2, 0.0))],                  # the floor
                         ids=["table", "front wall", "floor"])
def test_a_head_depth_pixel_is_the_distance_to_the_plane_it_sees(rig, target, plane):
    row, col = pixel_of(rig, "head", target)
    _, depth = rig.render_camera("head")
    origin, direction, dz = pixel_ray(rig, "head", row, col)
    axis, value = plane
    t = (value - origin[axis]) / direction[axis]          # range along the pixel's ray to the plane
    assert depth.dtype == np.float32 and depth.shape == (90, 160)
    assert depth[row, col] == pytest.approx(t * dz, abs=0.01)


def test_depth_marks_nothing_hit_too_near_and_too_far(urdf):
    cfg = parse_sensor_config({"cameras": {"head": {"max_depth_m": 2.0}}})
    with SensorRig(urdf, scene_xml("empty"), cfg) as rig:       # a floor and the sky
        rig.set_state(START, (0.0, 0.0, 0.0))
        _, depth = rig.render_camera("head")
        assert np.isnan(depth[0]).all()                        # the top row sees the sky
        assert np.isposinf(depth[-1]).any() or np.isposinf(depth[45]).any()   # floor farther than 2 m
        # the wrist cameras see their fingers nearer than 0.07 m
        _, wrist = rig.render_camera("wrist_left")
        assert np.isneginf(wrist).any()
        finite = wrist[np.isfinite(wrist)]
        assert finite.min() >= 0.07 and finite.max() <= 10.0


def test_the_red_box_is_red_where_it_should_be(rig):
    row, col = pixel_of(rig, "head", RED_BOX + [0, 0, 0.05])    # its top face's centre
    rgb, _ = rig.render_camera("head", depth=False)
    r, g, b = (int(c) for c in rgb[row, col])
    assert r > 120 and r > 2 * g and r > 2 * b, (r, g, b)
    # and nowhere far from it
    c = rgb.astype(int)
    red = (c[..., 0] > 2 * c[..., 1]) & (c[..., 0] > 2 * c[..., 2]) & (c[..., 0] > 80)
    rows, cols = np.nonzero(red)
    assert len(rows) >= 4 and np.abs(rows - row).max() <= 8 and np.abs(cols - col).max() <= 8


def test_a_moved_object_moves_in_the_image(rig):
    old = pixel_of(rig, "head", RED_BOX + [0, 0, 0.05])
    moved = np.array([1.25, -0.35, 0.79])
    assert rig.set_objects({"red_box": (moved, IDENTITY)}) == []
    np.testing.assert_allclose(rig.object_pose("red_box")[0], moved)
    rgb, depth = rig.render_camera("head")
    new = pixel_of(rig, "head", moved + [0, 0, 0.05])
    assert abs(new[1] - old[1]) > 10                           # it moved across the image

    def reddish(p):
        r, g, b = (int(c) for c in rgb[p])
        return r > 2 * g and r > 2 * b
    assert reddish(new) and not reddish(old)
    # where the box was, the table top is seen again at the table's depth
    origin, direction, dz = pixel_ray(rig, "head", *old)
    assert depth[old] == pytest.approx((TABLE_TOP - origin[2]) / direction[2] * dz, abs=0.01)
    assert rig.set_objects({"no_such_thing": (moved, IDENTITY)}) == ["no_such_thing"]


def test_lidar_ranges_to_the_four_walls(rig):
    rig.set_state(START, (0.4, -0.3, 0.0))
    pos, rot = rig.frame_pose("lidar_chassis_left_link")     # at the robot's front left corner
    up = math.radians(10.0)      # over the table's legs and the robot's own body, under the table's top
    world_dirs = np.array([[math.cos(up) * c, math.cos(up) * s, math.sin(up)]
                           for c, s in ((1, 0), (0, 1), (-1, 0), (0, -1))])
    pts = rig.scan_lidar(world_dirs @ rot)                     # the same directions in the lidar frame
    assert pts.shape == (4, 4)
    ranges = np.linalg.norm(pts[:, :3], axis=1)
    want = [(FRONT_WALL - pos[0]) / world_dirs[0, 0], (LEFT_WALL - pos[1]) / world_dirs[1, 1],
            (-FRONT_WALL - pos[0]) / world_dirs[2, 0], (-LEFT_WALL - pos[1]) / world_dirs[3, 1]]
    np.testing.assert_allclose(ranges, want, atol=0.02)
    np.testing.assert_allclose(pts[:, 3], 90.0)                # the walls' reflectivity (room.xml)


def test_lidar_scan_on_the_left_wall_lies_on_its_plane(rig):
    base = (0.4, -0.3, 0.5)
    rig.set_state(START, base)
    pos, rot = rig.frame_pose("lidar_chassis_left_link")
    pts = np.concatenate([rig.scan_lidar() for _ in range(3)])
    assert pts.dtype == np.float32 and pts.shape[1] == 4
    world = pts[:, :3].astype(float) @ rot.T + pos
    r = np.linalg.norm(pts[:, :3], axis=1)
    assert r.min() >= 0.1 - 1e-5 and r.max() <= 40.0
    on_left = (world[:, 1] > 2.3) & (np.abs(world[:, 0]) < 2.8) & (world[:, 2] > 0.05) & (world[:, 2] < 2.45)
    assert on_left.sum() > 30
    np.testing.assert_allclose(world[on_left, 1], LEFT_WALL, atol=0.02)
    np.testing.assert_allclose(pts[on_left, 3], 90.0)
    el = np.degrees(np.arcsin(pts[:, 2] / r))
    assert el.min() >= -7.0 - 1e-3 and el.max() <= 52.0 + 1e-3


def test_lidar_sees_the_robot_itself_with_the_robots_reflectivity(rig):
    pos, rot = rig.frame_pose("lidar_chassis_left_link")
    torso = rig.frame_pose("torso_link1")[0] + [0, 0, 0.3]
    d = (torso - pos) / np.linalg.norm(torso - pos)
    pts = rig.scan_lidar((rot.T @ d)[None])
    assert len(pts) == 1 and np.linalg.norm(pts[0, :3]) < np.linalg.norm(torso - pos) + 0.3
    assert pts[0, 3] == ROBOT_REFLECTIVITY
    m = rig.model
    floor = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    assert rig.reflectivity[floor] == 40.0                     # room.xml's user value
    assert DEFAULT_REFLECTIVITY == 60.0


def test_every_beam_of_a_scan_in_the_closed_room_returns(rig):
    """A closed room: every beam hits something (MuJoCo 3.2.3's mj_multiRay with its culling missed 9 % of
    them)."""
    pos, rot = rig.frame_pose("lidar_chassis_left_link")
    dist, geom = rig.cast_rays(pos, rig.lidar.next_directions() @ rot.T, rig._lidar_body)
    assert (geom >= 0).all() and (dist > 0).all()


def test_cast_rays_is_mj_ray_bit_for_bit_wherever_the_robot_stands(rig):
    """A scan's rays through mj_multiRay, one call per azimuth sector with the geoms it cannot reach left
    out, give for every ray the distance and geom mj_ray gives (MuJoCo 3.2.3's mj_multiRay with its own
    culling gets it wrong: the floor under the lidar, walls near it)."""
    rng = np.random.default_rng(3)
    # a pose beside a wall and one by the table first: where the culling went wrong
    for base in [(-2.6, 2.1, 0.5), (0.3, 0.0, 0.0)] + [(rng.uniform(-2.5, 0.3), rng.uniform(-2.0, 2.0),
                                                        rng.uniform(-3.1, 3.1)) for _ in range(6)]:
        rig.set_state(START, base)
        pos, rot = rig.frame_pose("lidar_chassis_left_link")
        vec = rig.lidar.next_directions() @ rot.T
        dist, geom = rig.cast_rays(pos, vec, rig._lidar_body)
        one = np.zeros((1, 1), dtype=np.int32)
        for k in range(len(vec)):
            d = mujoco.mj_ray(rig.model, rig.data, pos, vec[k], None, 1, rig._lidar_body, one[0])
            assert (dist[k], geom[k]) == (d, one[0, 0]), (base, k)
        assert (geom >= 0).all()


def test_cast_rays_says_minus_one_where_nothing_is_hit_in_one_call_or_by_sectors(urdf):
    cfg = parse_sensor_config(yaml.safe_load((PKG / "config" / "sensors.yaml").read_text()))
    with SensorRig(urdf, scene_xml("empty"), replace(cfg, cameras={})) as rig:     # a floor and the sky
        rig.set_state(START, (0.0, 0.0, 0.0))
        for n in (10, 5000):
            up = np.random.default_rng(n).normal(0.0, 0.05, (n, 3)) + [0.0, 0.0, 1.0]
            up /= np.linalg.norm(up, axis=1, keepdims=True)
            down = -up
            dist, geom = rig.cast_rays(np.array([4.0, 4.0, 1.0]), np.vstack([up, down]))
            assert (geom[:n] == -1).all() and (dist[:n] == -1.0).all(), n
            assert (geom[n:] == 0).all() and np.allclose(dist[n:], 1.0 / -down[:, 2]), n    # the floor plane


def test_a_sector_holds_every_geom_one_of_its_rays_can_hit():
    """sector_cover, the culling of cast_rays: whatever ray meets a sphere, the sphere is in the ray's
    sector; spheres far to one side are in few sectors, those around the origin and planes in all."""
    rng = np.random.default_rng(7)
    sectors = 16
    origin = np.array([0.3, -0.2, 0.35])
    centres = origin + rng.uniform(-3.0, 3.0, (200, 3))
    radii = rng.uniform(0.0, 1.0, 200)
    cullable = rng.uniform(size=200) > 0.05
    cover = sector_cover(origin, centres, radii, cullable, sectors)
    rays = rng.normal(size=(20000, 3))
    rays /= np.linalg.norm(rays, axis=1, keepdims=True)
    sector = ray_sectors(rays, sectors)
    t = np.clip((centres - origin) @ rays.T, 0.0, None)                       # (G, N): nearest point on each ray
    miss = np.linalg.norm(origin[None, None, :] + t[:, :, None] * rays[None] - centres[:, None, :], axis=2)
    hits = miss <= radii[:, None]
    assert hits.sum() > 1000
    g, r = np.nonzero(hits)
    assert cover[sector[r], g].all()
    assert cover[:, ~cullable | (radii == 0.0)].all()
    near = np.hypot(*(centres[:, :2] - origin[:2]).T) <= radii
    assert cover[:, near].all()
    # a 0.5 m sphere 2 m straight ahead: the two sectors either side of azimuth 0 only
    one = sector_cover(origin, origin[None] + [[2.0, 0.0, 0.0]], np.array([0.5]), np.array([True]), sectors)
    assert np.flatnonzero(one[:, 0]).tolist() == [7, 8]
    assert cover.mean() < 0.5                                                 # it culls


def test_lidar_scans_do_not_repeat_and_cover_all_azimuths(rig):
    a, b = rig.lidar.next_directions(), rig.lidar.next_directions()
    assert not np.allclose(a, b)
    az = np.degrees(np.arctan2(a[:, 1], a[:, 0]))
    assert np.histogram(az, bins=12, range=(-180, 180))[0].min() > 0.5 * len(a) / 12


def test_the_left_arm_appears_in_the_head_camera(rig):
    _, depth_rest = rig.render_camera("head")
    rig.set_state({**START, **ARM_IN_VIEW}, (0.0, 0.0, 0.0))
    _, depth_arm = rig.render_camera("head")
    gripper = rig.frame_pose("left_gripper_link")[0]
    row, col = pixel_of(rig, "head", gripper)
    assert 0 <= row < 90 and 0 <= col < 160
    near = depth_arm < depth_rest - 0.05
    assert near.sum() > 0.02 * near.size, "the arm should cover a visible part of the image"
    assert near[max(row - 3, 0):row + 4, max(col - 3, 0):col + 4].any()
    # the nearer pixels are the left arm's: a ray through one of them hits a body of the left arm
    rows, cols = np.nonzero(near)
    k = len(rows) // 2
    origin, direction, _ = pixel_ray(rig, "head", rows[k], cols[k])
    head = int(rig.model.body_parentid[mujoco.mj_name2id(rig.model, mujoco.mjtObj.mjOBJ_BODY, "zed_link")])
    _, geom = rig.cast_rays(origin, direction[None], head)    # the ray starts inside the head's box
    body = mujoco.mj_id2name(rig.model, mujoco.mjtObj.mjOBJ_BODY, int(rig.model.geom_bodyid[geom[0]]))
    assert body.startswith("left_"), body
    # the right part of the image, far from the arm, is untouched
    assert not (np.abs(np.nan_to_num(depth_arm - depth_rest)) > 1e-3)[:, cols.max() + 2:].any()


def test_vendor_topics_and_frames_are_the_guides():
    topics = ({s.rgb_topic for s in VENDOR_CAMERAS.values()}
              | {s.depth_topic for s in VENDOR_CAMERAS.values() if s.depth_topic})
    assert topics == {
        *(f"/hdas/camera_chassis_{s}/rgb/compressed" for s in ("front_left", "front_right", "left", "right", "rear")),
        "/hdas/camera_wrist_left/color/image_raw/compressed", "/hdas/camera_wrist_right/color/image_raw/compressed",
        "/hdas/camera_head/left_raw/image_raw_color/compressed",
        "/hdas/camera_wrist_left/aligned_depth_to_color/image_raw",
        "/hdas/camera_wrist_right/aligned_depth_to_color/image_raw",
        "/hdas/camera_head/depth/depth_registered"}
    assert VENDOR_CAMERAS["head"].depth_encoding == "32FC1" and VENDOR_CAMERAS["head"].frame == "zed_link"
    assert VENDOR_CAMERAS["wrist_left"].depth_encoding == "16UC1"
    assert VENDOR_CAMERAS["wrist_right"].frame == "right_realsense_link"
    assert VENDOR_CAMERAS["chassis_rear"].frame == "camera_chassis_rear_optical_frame"


def test_config_switches_errors_and_renderers(urdf):
    cfg = parse_sensor_config({"cameras": {"head": {"enabled": False, "width": 32, "height": 24},
                                           "wrist_right": {"width": 200, "height": 150}},
                               "lidar": {"enabled": False}})
    with SensorRig(urdf, scene_xml("room"), cfg) as rig:
        assert "head" not in rig.specs and "wrist_left" in rig.specs and rig.lidar is None
        assert sorted(rig._renderers) == [(128, 72), (128, 96), (200, 150)]     # one per resolution
        assert rig.model.vis.global_.offwidth >= 200 and rig.model.vis.global_.offheight >= 150
        rgb, depth = rig.render_camera("wrist_right")
        assert rgb.shape == (150, 200, 3) and depth.shape == (150, 200)
        with pytest.raises(RuntimeError):
            rig.scan_lidar()
    with pytest.raises(RuntimeError):
        rig.render_camera("wrist_right")                       # closed
    with pytest.raises(ConfigError) as e:
        SensorRig(urdf, scene_xml("room"), parse_sensor_config({"cameras": {"head": {"frame": "no_such_link"}}}))
    assert e.value.key == "cameras/head/frame"
    with pytest.raises(ConfigError) as e:
        SensorRig(urdf, scene_xml("room"), parse_sensor_config({"lidar": {"frame": "no_such_link"}}))
    assert e.value.key == "lidar/frame"
    for bad in ("no_such_world", "/nonexistent/room.xml"):
        with pytest.raises(ConfigError) as e:
            scene_xml(bad)
        assert e.value.key == "scene"
    with pytest.raises(ConfigError) as e:
        SensorRig(urdf, "<mujoco><worldbody><geom type='nonsense'/></worldbody></mujoco>", parse_sensor_config({}))
    assert e.value.key == "scene"


def test_unknown_joints_are_reported_not_fatal(rig):
    assert rig.set_state({**START, "tail_joint": 1.0}, (0, 0, 0)) == ["tail_joint"]
    rgb, depth = rig.render_camera("chassis_rear", depth=False)
    assert rgb.shape == (72, 128, 3) and depth is None


def test_the_rooms_objects_are_the_free_bodies(rig):
    assert set(rig.objects) == {"red_box", "green_can", "blue_ball"}
    np.testing.assert_allclose(rig.object_pose("red_box")[0], RED_BOX)
