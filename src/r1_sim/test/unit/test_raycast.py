"""Ray casting and the camera model against closed-form geometry.

Expected depths come from plane and box equations written out here, never from the ray caster's
own code paths, so a wrong slab sign, normal or optical-frame convention shows up.
"""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
from scipy.spatial.transform import Rotation

from r1_sim.camera import PinholeCamera
from r1_sim.raycast import FLOOR, MISS, cast
from r1_sim.scene import Floor, SceneError, Shapes, scene_from_dict

# optical frame (z forward, x right, y down) of a camera looking along world +x, level
LOOK_X = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


def shapes(*objects: dict) -> Shapes:
    return scene_from_dict({"objects": list(objects)}).shapes


def test_ray_straight_down_hits_the_floor_at_the_origin_height():
    floor = Floor(height=0.0)
    hits = cast(np.array([0.3, -1.2, 1.618]), np.array([[0.0, 0.0, -1.0]]), Shapes.empty(), floor)
    assert hits.index[0] == FLOOR
    assert hits.t[0] == pytest.approx(1.618, abs=1e-12)
    np.testing.assert_allclose(hits.normal[0], [0, 0, 1])


def test_a_ray_up_or_level_misses_an_empty_world():
    hits = cast(np.zeros(3) + [0, 0, 1], np.array([[0, 0, 1.0], [1.0, 0, 0]]), Shapes.empty(), Floor())
    assert list(hits.index) == [MISS, MISS]
    assert np.all(np.isinf(hits.t))


@pytest.mark.parametrize("obj, expected_t, expected_normal", [
    ({"shape": "box", "size": [0.4, 1.0, 1.0], "xyz": [2.2, 0, 1]}, 2.0, [-1, 0, 0]),
    ({"shape": "cylinder", "radius": 0.3, "length": 2.0, "xyz": [2.3, 0, 1]}, 2.0, [-1, 0, 0]),
    ({"shape": "sphere", "radius": 0.5, "xyz": [2.5, 0, 1]}, 2.0, [-1, 0, 0]),
    # a cylinder lying along y (rolled 90° about x): its side faces the ray
    ({"shape": "cylinder", "radius": 0.25, "length": 1.0, "rpy": [math.pi / 2, 0, 0], "xyz": [2.25, 0, 1]},
     2.0, [-1, 0, 0]),
    # a cylinder lying along x (pitched 90°): the ray meets its cap
    ({"shape": "cylinder", "radius": 0.25, "length": 1.0, "rpy": [0, math.pi / 2, 0], "xyz": [2.5, 0, 1]},
     2.0, [-1, 0, 0]),
])
def test_each_primitive_is_hit_at_its_surface_with_the_outward_normal(obj, expected_t, expected_normal):
    hits = cast(np.array([0.0, 0.0, 1.0]), np.array([[1.0, 0.0, 0.0]]), shapes(obj), None)
    assert hits.index[0] == 0
    assert hits.t[0] == pytest.approx(expected_t, abs=1e-9)
    np.testing.assert_allclose(hits.normal[0], expected_normal, atol=1e-9)


def test_the_nearest_of_two_objects_wins_whatever_their_order():
    near = {"shape": "box", "size": [0.2, 0.2, 0.2], "xyz": [1.1, 0, 1]}
    far = {"shape": "sphere", "radius": 0.5, "xyz": [3.0, 0, 1]}
    for objs, idx in (((near, far), 0), ((far, near), 1)):
        hits = cast(np.array([0.0, 0.0, 1.0]), np.array([[1.0, 0, 0]]), shapes(*objs), Floor())
        assert hits.index[0] == idx and hits.t[0] == pytest.approx(1.0)


def test_a_sensor_inside_a_body_looks_out_through_it():
    """The head camera sits inside the head's collision box: it must see the world, not the box."""
    housing = {"shape": "box", "size": [0.2, 0.2, 0.2], "xyz": [0, 0, 1]}
    wall = {"shape": "box", "size": [0.1, 4, 4], "xyz": [3.05, 0, 1]}
    hits = cast(np.array([0.05, 0.0, 1.0]), np.array([[1.0, 0, 0]]), shapes(housing, wall), None)
    assert hits.index[0] == 1 and hits.t[0] == pytest.approx(2.95)


def test_max_range_drops_farther_hits():
    wall = {"shape": "box", "size": [0.1, 4, 4], "xyz": [5.05, 0, 0]}
    hits = cast(np.zeros(3), np.array([[1.0, 0, 0]]), shapes(wall), None, max_range=4.0)
    assert hits.index[0] == MISS


def test_chunked_casting_equals_one_pass(monkeypatch):
    import r1_sim.raycast as rc
    rng = np.random.default_rng(3)
    d = rng.normal(size=(5000, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    world = shapes({"shape": "box", "size": [1, 2, 3], "xyz": [2, 0, 0], "rpy": [0.1, 0.2, 0.3]},
                   {"shape": "cylinder", "radius": 0.5, "length": 1, "xyz": [-2, 1, 0]},
                   {"shape": "sphere", "radius": 1, "xyz": [0, -3, 0]})
    one = cast(np.zeros(3), d, world, Floor(height=-1.0))
    monkeypatch.setattr(rc, "CHUNK", 777)
    many = cast(np.zeros(3), d, world, Floor(height=-1.0))
    np.testing.assert_array_equal(one.index, many.index)
    np.testing.assert_allclose(one.t, many.t)


def test_a_box_at_a_known_distance_gives_that_depth_over_its_projection():
    cam = PinholeCamera(80, 60, 90.0, min_depth=0.1, max_depth=10.0)
    box = shapes({"shape": "box", "size": [0.2, 0.6, 0.4], "xyz": [2.1, 0.0, 1.0]})   # face at x = 2.0
    pose = pin.SE3(LOOK_X, np.array([0.0, 0.0, 1.0]))
    depth = cam.depth(cam.cast(pose, box, None))
    hit = np.isfinite(depth)
    assert np.allclose(depth[hit], 2.0, atol=1e-9)           # z-depth is constant on a fronto-parallel face
    # its projection: half-width 0.3 at z 2 -> 0.15 fx pixels, fx = 40 (90° over 80 px)
    fx = 40.0
    cols = np.flatnonzero(hit.any(axis=0))
    rows = np.flatnonzero(hit.any(axis=1))
    assert cols[0] == pytest.approx(40 - 0.15 * fx, abs=1) and cols[-1] + 1 == pytest.approx(40 + 0.15 * fx, abs=1)
    assert rows[0] == pytest.approx(30 - 0.1 * fx, abs=1) and rows[-1] + 1 == pytest.approx(30 + 0.1 * fx, abs=1)
    assert np.isnan(depth[0, 0])                                 # nothing else in this world


def test_depth_of_a_tilted_camera_facing_a_wall_is_the_analytic_plane_distance():
    cam = PinholeCamera(64, 48, 70.0, min_depth=0.05, max_depth=20.0)
    wall = shapes({"shape": "box", "size": [0.1, 40, 40], "xyz": [3.05, 0, 0]})       # plane x = 3
    R = Rotation.from_euler("zy", [0.35, 0.2]).as_matrix() @ LOOK_X                     # yawed, pitched down
    origin = np.array([0.4, -0.2, 1.1])
    pose = pin.SE3(R, origin)
    depth = cam.depth(cam.cast(pose, wall, None))
    rays_world = cam.rays @ R.T
    t = (3.0 - origin[0]) / rays_world[:, 0]                   # ray/plane, written out
    expected = (t * cam.rays[:, 2]).reshape(cam.height, cam.width)
    np.testing.assert_allclose(depth, expected, rtol=1e-6)
    assert depth.min() > 2.0 and depth.max() < 5.0


def test_depth_outside_the_valid_range_is_marked():
    cam = PinholeCamera(8, 6, 60.0, min_depth=1.0, max_depth=2.5)
    pose = pin.SE3(LOOK_X, np.zeros(3))
    near = cam.depth(cam.cast(pose, shapes({"shape": "box", "size": [0.1, 9, 9], "xyz": [0.55, 0, 0]}), None))
    far = cam.depth(cam.cast(pose, shapes({"shape": "box", "size": [0.1, 9, 9], "xyz": [3.05, 0, 0]}), None))
    assert np.all(near == -np.inf) and np.all(far == np.inf)


def test_camera_rays_follow_the_optical_convention():
    cam = PinholeCamera(4, 2, 90.0)
    rays = cam.rays.reshape(2, 4, 3)
    assert np.all(rays[..., 2] > 0)                           # z forward
    assert rays[0, 0, 0] < 0 and rays[0, -1, 0] > 0           # x right: first column looks left
    assert rays[0, 0, 1] < 0 and rays[-1, 0, 1] > 0           # y down: first row looks up
    assert cam.vfov_deg == pytest.approx(math.degrees(2 * math.atan(0.5)))
    np.testing.assert_allclose(cam.project(np.array([[0.0, 0.0, 1.0]])), [[2.0, 1.0]])


def test_rgb_shades_by_colour_floor_checker_and_background():
    scene = scene_from_dict({"objects": [{"shape": "box", "size": [0.1, 1, 1], "xyz": [2.05, 0, 1.0],
                                          "colour": [1.0, 0.0, 0.0]}],
                             "floor": {"colours": [[1, 1, 1], [0, 0, 0]], "checker_m": 0.5}})
    cam = PinholeCamera(60, 60, 100.0)
    pose = pin.SE3(LOOK_X, np.array([0.0, 0.0, 1.0]))
    hits = cam.cast(pose, scene.shapes, scene.floor)
    img = cam.rgb(hits, pose, scene.shapes, scene.floor, scene.light).reshape(-1, 3).astype(int)
    red = img[hits.index == 0]
    assert len(red) and np.all(red[:, 1:] == 0) and np.all(red[:, 0] > 0)
    floor = img[hits.index == FLOOR]
    assert floor.max() > 150 and floor.min() < 5               # both checker colours visible
    assert np.all(np.abs(img[hits.index == MISS] - np.array(scene.light.background) * 255) <= 0.5)


def test_scene_errors_are_reported():
    with pytest.raises(SceneError):
        scene_from_dict({"objects": [{"shape": "cone"}]})
    with pytest.raises(SceneError):
        scene_from_dict({"objects": [{"shape": "box", "size": [1, -1, 1]}]})
    with pytest.raises(SceneError):
        scene_from_dict({"objects": [{"shape": "sphere", "radius": 0.1, "xyz": [0, "a", 0]}]})
    with pytest.raises(ValueError):
        PinholeCamera(0, 10, 90.0)
