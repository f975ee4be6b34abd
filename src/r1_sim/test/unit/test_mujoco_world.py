"""MujocoWorld and r1_sim.mjcf: the robot's bodies in MuJoCo, held to what the motors and boards need."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from r1_sim import mjcf
from r1_sim.mujoco_world import MujocoWorld

SRC = Path(__file__).resolve().parents[3]
URDF = (SRC / "r1_description/urdf/r1_v2_1_0.urdf").read_text()
TORSO = [f"torso_joint{k}" for k in range(1, 5)]
ARM = [f"left_arm_joint{k}" for k in range(1, 7)]
FINGERS = ["left_gripper_finger_joint1", "left_gripper_finger_joint2"]
CHASSIS = [f"steer_motor_joint{k}" for k in range(1, 4)] + [f"wheel_motor_joint{k}" for k in range(1, 4)]
DT = 1e-3
G = 9.81


def world(scene: str = "empty", joints=TORSO + ARM + FINGERS, damping: float = 0.5) -> MujocoWorld:
    n = len(joints)
    return MujocoWorld(URDF, mjcf.scene_path(scene).read_text(), joints, np.full(n, damping), np.zeros(n),
                       np.full(n, 0.01), DT, ties=[(FINGERS[1], FINGERS[0])], brakes=TORSO,
                       imus=["imu_torso_link", "imu_chassis_link"], chassis=CHASSIS)


def run(w: MujocoWorld, seconds: float, tau=None, twist=(0.0, 0.0, 0.0)) -> None:
    tau = np.zeros(len(w.joints)) if tau is None else tau
    for _ in range(int(round(seconds / DT))):
        w.step(tau, twist, np.zeros(6), np.zeros(6))


def crouched(w: MujocoWorld) -> np.ndarray:
    q = np.zeros(len(w.joints))
    q[:4] = [1.0, -2.0, -1.0, 0.0]
    w.set_state(q, np.zeros(len(q)))
    return q


def test_engaged_brakes_hold_the_torso_under_gravity_and_released_ones_let_it_fall() -> None:
    w = world()
    q = crouched(w)
    w.set_brakes([True] * 4 + [False] * (len(w.joints) - 4))
    run(w, 2.0)
    assert np.max(np.abs(w.positions[:4] - q[:4])) < 1e-3      # a stiff spring's sag, not a creep
    w.set_brakes([False] * len(w.joints))
    run(w, 0.5)
    assert np.max(np.abs(w.positions[:4] - q[:4])) > 0.05


def test_a_brake_engages_where_the_joint_is_then() -> None:
    w = world()
    crouched(w)
    run(w, 0.2)                          # the torso sags, unbraked
    here = w.positions[:4].copy()
    w.set_brakes([True] * 4 + [False] * (len(w.joints) - 4))
    run(w, 1.0)
    assert np.max(np.abs(w.positions[:4] - here)) < 2e-3


def test_joint_stops_hold_a_joint_driven_into_them() -> None:
    w = world()
    tau = np.zeros(len(w.joints))
    i = w.joints.index(FINGERS[0])
    tau[i] = -50.0                       # close hard, both fingers (the tie)
    tau[i + 1] = -50.0
    run(w, 0.5, tau)
    assert w.positions[i] == pytest.approx(w.lower_limits[i], abs=1e-3)     # 50 N into a stiff spring
    assert w.positions[i + 1] == pytest.approx(w.positions[i], abs=1e-5)


def test_the_base_follows_the_modules_twist_and_stops_with_it() -> None:
    w = world()
    run(w, 2.0, twist=(0.3, 0.0, 0.0))
    x, y, yaw = w.base_pose()
    # a step of the twist (the modules ramp theirs): ~40 ms to reach it at the floor's grip, then on it;
    # sideways, the unpowered arms' swing pushes the base a few millimetres (the servos hold speed, not place)
    assert x == pytest.approx(0.6, abs=0.02) and abs(y) < 0.01 and abs(yaw) < 0.01
    assert w.base_twist()[0] == pytest.approx(0.3, abs=0.01)
    run(w, 0.05)
    assert abs(w.base_twist()[0]) < 0.01


def test_the_base_turns_and_drives_in_its_own_frame() -> None:
    w = world()
    run(w, 1.0, twist=(0.0, 0.0, math.pi / 2))
    assert w.base_pose()[2] == pytest.approx(math.pi / 2, abs=0.04)
    run(w, 1.0, twist=(0.5, 0.0, 0.0))    # facing +y now: forward is the world's +y
    x, y, _ = w.base_pose()
    assert y == pytest.approx(0.5, abs=0.03) and abs(x) < 0.03


def test_the_floors_grip_bounds_the_bases_acceleration() -> None:
    w = world()
    w.set_brakes([True] * len(w.joints))
    run(w, 0.3, twist=(5.0, 0.0, 0.0))               # asks for 5 m/s at once
    # mu g (0.8 g): the wheels slip beyond it (the unpowered arms swing back, a few per cent either way)
    assert w.base_twist()[0] / 0.3 == pytest.approx(0.8 * G, rel=0.1)


def test_an_imu_at_rest_feels_gravity_and_a_turning_base_turns_its_gyro() -> None:
    w = world()
    _, gyro, acc = w.imu("imu_chassis_link")
    np.testing.assert_allclose(acc, [0.0, 0.0, G], atol=0.05)
    np.testing.assert_allclose(gyro, 0.0, atol=1e-6)
    run(w, 0.5, twist=(0.0, 0.0, 0.4))
    rot, gyro, _ = w.imu("imu_chassis_link")
    assert gyro[2] == pytest.approx(0.4, abs=0.01)
    assert math.atan2(rot[1, 0], rot[0, 0]) == pytest.approx(0.2, abs=0.02)
    with pytest.raises(KeyError):
        w.imu("no_such_frame")


def test_the_rooms_objects_rest_on_the_table_and_are_reported() -> None:
    w = world("room")
    before = {o.name: o for o in w.objects()}
    assert set(before) == {"red_box", "green_can", "blue_ball"}
    run(w, 1.0)
    for o in w.objects():
        assert o.position[2] == pytest.approx(before[o.name].position[2], abs=0.01)   # on the table top
        assert o.position[2] > 0.74
        assert np.linalg.norm(o.linear) < 0.01
        assert np.linalg.norm(o.quaternion) == pytest.approx(1.0, abs=1e-9)


def test_the_empty_world_has_no_objects() -> None:
    assert world("empty").objects() == []


def test_scenes_by_name_or_path_and_clear_errors() -> None:
    assert mjcf.scene_path("room") == mjcf.WORLDS_DIR / "room.xml"
    assert mjcf.scene_path(str(mjcf.WORLDS_DIR / "empty.xml")).name == "empty.xml"
    with pytest.raises(mjcf.WorldError, match="scenes here: .*room"):
        mjcf.scene_path("no_such_scene")
    with pytest.raises(mjcf.WorldError, match="expected <mujoco>"):
        mjcf.world_xml(URDF, "<robot/>")
    with pytest.raises(mjcf.WorldError, match="not XML"):
        mjcf.world_xml(URDF, "<mujoco>")
    with pytest.raises(mjcf.WorldError, match="no joint"):
        mjcf.world_xml(URDF, "<mujoco/>", brakes=["no_such_joint"])
    with pytest.raises(mjcf.WorldError):
        mjcf.load_world(mjcf.world_xml(URDF, "<mujoco><worldbody><geom type='box'/></worldbody></mujoco>"))


def test_friction_arrays_must_match_the_joints() -> None:
    with pytest.raises(ValueError, match="entries"):
        MujocoWorld(URDF, mjcf.scene_path("empty").read_text(), TORSO, np.zeros(3), np.zeros(4), np.zeros(4), DT)
