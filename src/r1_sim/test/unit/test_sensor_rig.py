"""The sensors on the simulated R1: robot body placement, arm in view, lidar on the walls, config.

Poses are checked against a separate pinocchio model of the URDF and the scene's wall planes are
taken from config/scene.yaml, so a wrong frame, base transform or joint mapping shows up.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from r1_sim.raycast import cast
from r1_sim.scene import Shapes, load_scene
from r1_sim.sensor_rig import VENDOR_CAMERAS, ConfigError, SensorRig, parse_sensor_config

PKG = Path(__file__).resolve().parents[2]
URDF = PKG.parent / "r1_description" / "urdf" / "r1_v2_1_0.urdf"
START = yaml.safe_load((PKG / "config" / "sim.yaml").read_text())["start_pose"]
# left arm reaching in front of the head camera (found by sampling; the gripper ~0.49 m ahead)
ARM_IN_VIEW = {"left_arm_joint1": -0.2, "left_arm_joint2": 2.6, "left_arm_joint3": -1.2,
               "left_arm_joint4": 0.4, "left_arm_joint5": 1.2, "left_arm_joint6": -1.7}


@pytest.fixture(scope="module")
def urdf() -> str:
    return URDF.read_text()


@pytest.fixture(scope="module")
def scene():
    return load_scene(PKG / "config" / "scene.yaml")


@pytest.fixture()
def rig(urdf, scene) -> SensorRig:
    r = SensorRig(urdf, scene, parse_sensor_config(yaml.safe_load((PKG / "config" / "sensors.yaml").read_text())))
    r.set_state(START, (0.0, 0.0, 0.0))
    return r


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


def test_sensor_frames_follow_the_joints_and_the_base(urdf, rig):
    joints = {**START, "torso_joint1": 0.3, "torso_joint2": -0.4, "torso_joint4": 0.5, "left_arm_joint2": 0.7}
    base = (1.2, -0.7, 2.5)
    rig.set_state(joints, base)
    for frame in ("zed_link", "left_realsense_link", "right_realsense_link", "lidar_chassis_left_link",
                  "camera_chassis_rear_optical_frame"):
        got, want = rig.sensor_pose(frame), reference_pose(urdf, joints, base, frame)
        assert np.allclose(got.homogeneous, want.homogeneous, atol=1e-9), frame


def test_head_camera_looking_straight_down_sees_its_trunk_and_the_room_floor_at_its_height(rig, scene):
    pose = rig.sensor_pose("zed_link")
    down = np.array([[0.0, 0.0, -1.0]])
    # the room alone: the floor, at the camera's height
    hits = cast(pose.translation, down, scene.shapes, scene.floor)
    assert hits.t[0] == pytest.approx(pose.translation[2], abs=1e-9)
    # with the robot: the top of torso_link4's trunk box (0.37 m above the link, URDF collision),
    # the head box it sits in is looked through
    world = rig.world()
    hits = cast(pose.translation, down, world, scene.floor)
    assert world.names[hits.index[0]] == "torso_link4_0"
    trunk_top = rig.sensor_pose("torso_link4").translation[2] + 0.37
    assert hits.t[0] == pytest.approx(pose.translation[2] - trunk_top, abs=1e-9)


def test_moving_the_left_arm_into_the_head_camera_changes_exactly_the_arm_pixels(rig):
    cam = rig.cameras["head"]
    _, depth_rest = rig.render_camera("head")
    world = rig.world()
    hits_rest = cam.cast(rig.sensor_pose("zed_link"), world, rig.scene.floor)
    rig.set_state({**START, **ARM_IN_VIEW}, (0.0, 0.0, 0.0))
    rgb_arm, depth_arm = rig.render_camera("head")
    world_arm = rig.world()
    pose = rig.sensor_pose("zed_link")
    hits_arm = cam.cast(pose, world_arm, rig.scene.floor)

    def left_arm(hits, names):
        return np.array([i >= 0 and names[i].startswith("left_") for i in hits.index]).reshape(depth_arm.shape)

    changed = ~np.isclose(depth_rest, depth_arm, equal_nan=True)
    arm_now = left_arm(hits_arm, world_arm.names)
    assert arm_now.sum() > 0.02 * arm_now.size, "the arm should cover a visible part of the image"
    # every changed pixel sees the left arm now or saw it before, and the arm now is in front
    assert np.array_equal(changed, arm_now | left_arm(hits_rest, world.names))
    assert np.all(depth_arm[arm_now] < depth_rest[arm_now])
    # the gripper's origin projects onto (or next to) arm pixels
    u, v = cam.project(pose.actInv(rig.sensor_pose("left_gripper_link").translation)[None])[0]
    r, c = int(v), int(u)
    assert arm_now[max(r - 3, 0):r + 4, max(c - 3, 0):c + 4].any()
    # the right half of the image far from the arm is untouched
    cols = np.flatnonzero(arm_now.any(axis=0))
    assert not changed[:, cols.max() + 2:].any()


def test_lidar_points_on_the_left_wall_lie_on_its_plane(rig):
    base = (0.4, -0.3, 0.5)
    rig.set_state(START, base)
    pose = rig.sensor_pose("lidar_chassis_left_link")
    pts = np.concatenate([rig.scan_lidar() for _ in range(3)])
    assert pts.dtype == np.float32 and pts.shape[1] == 4
    world = pts[:, :3].astype(float) @ pose.rotation.T + pose.translation
    r = np.linalg.norm(pts[:, :3], axis=1)
    assert r.min() >= 0.1 - 1e-5 and r.max() <= 40.0
    # walls: inner faces y = 2.5 (left) and x = 3 (front), config/scene.yaml
    on_left = (world[:, 1] > 2.3) & (np.abs(world[:, 0]) < 2.8) & (world[:, 2] > 0.05) & (world[:, 2] < 2.45)
    assert on_left.sum() > 30
    np.testing.assert_allclose(world[on_left, 1], 2.5, atol=2e-5)
    np.testing.assert_allclose(pts[on_left, 3], 90.0)            # the wall's reflectivity
    # the nearest wall hit is the left wall at the lidar's perpendicular distance (or farther)
    assert world[on_left, 1].min() == pytest.approx(2.5, abs=2e-5)
    # elevation within the MID360's field
    el = np.degrees(np.arcsin(pts[:, 2] / r))
    assert el.min() >= -7.0 - 1e-3 and el.max() <= 52.0 + 1e-3


def test_lidar_scans_do_not_repeat_and_cover_all_azimuths(rig):
    a, b = rig.lidar.next_directions(), rig.lidar.next_directions()
    assert not np.allclose(a, b)
    az = np.degrees(np.arctan2(a[:, 1], a[:, 0]))
    assert np.histogram(az, bins=12, range=(-180, 180))[0].min() > 0.5 * len(a) / 12


def test_lidar_sees_the_robot_itself_when_its_body_is_in_the_beam(rig, scene):
    """A beam from the lidar to the torso hits the torso (the robot is part of the world)."""
    pose = rig.sensor_pose("lidar_chassis_left_link")
    torso = rig.sensor_pose("torso_link1").translation + [0, 0, 0.3]
    d = (torso - pose.translation) / np.linalg.norm(torso - pose.translation)
    hits = cast(pose.translation, d[None], rig.world(), scene.floor)
    assert rig.world().names[hits.index[0]].startswith("torso_link")


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


def test_config_switches_and_errors(urdf, scene):
    cfg = parse_sensor_config({"cameras": {"head": {"enabled": False, "width": 32, "height": 24}},
                               "lidar": {"enabled": False}})
    rig = SensorRig(urdf, scene, cfg)
    assert "head" not in rig.specs and "wrist_left" in rig.specs and rig.lidar is None
    assert cfg.cameras["head"].width == 32
    for bad in ({"cameras": {"tail": {}}}, {"cameras": {"head": {"width": -1}}},
                {"cameras": {"head": {"rate_hz": "x"}}},
                {"lidar": {"elevation_deg": 5}}, {"cameras": {"head": {"jpeg_quality": 101}}}):
        with pytest.raises(ConfigError):
            parse_sensor_config(bad)
    with pytest.raises(ConfigError):
        SensorRig(urdf, scene, parse_sensor_config({"cameras": {"head": {"frame": "no_such_link"}}}))
    with pytest.raises(ConfigError):
        SensorRig(urdf, scene, parse_sensor_config({"lidar": {"elevation_deg": [10, -10]}}))


def test_unknown_joints_are_reported_not_fatal(rig):
    assert rig.set_state({**START, "tail_joint": 1.0}, (0, 0, 0)) == ["tail_joint"]
    rig.render_camera("chassis_rear")


def test_shapes_of_the_body_are_the_urdf_collision_primitives(rig):
    world = rig.body.shapes()
    assert len(world) == 32 and "left_gripper_link_0" in world.names
    i = world.names.index("base_link_0")
    np.testing.assert_allclose(world.size[i], [0.33, 0.22, 0.10])
    # base_link box centre (−0.03, 0, 0.19) in base_link, base_link 0.0415 above the footprint
    np.testing.assert_allclose(world.position[i], [-0.03, 0.0, 0.19 + 0.0415], atol=1e-6)
    np.testing.assert_allclose(world.colour[i], [0.25, 0.25, 0.28])      # URDF material "base"
    assert isinstance(Shapes.concatenate([world, world]), Shapes)
