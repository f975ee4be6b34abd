"""HDAS configuration: the shipped files parse, and mistakes are refused with the key named."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from r1_can.config import ConfigError, parse_config

CONFIG = Path(__file__).resolve().parents[3] / "r1_can/config"     # the robot's CAN layout


def load(buses: str = "r1_buses_sim.yaml") -> dict:
    d = yaml.safe_load((CONFIG / "r1.yaml").read_text())
    d.update(yaml.safe_load((CONFIG / buses).read_text()))
    return d


@pytest.mark.parametrize("buses", ["r1_buses_sim.yaml", "r1_buses_robot.yaml"])
def test_shipped_config_parses(buses: str) -> None:
    cfg = parse_config(load(buses))
    assert set(cfg.buses) == {"left_arm", "right_arm", "torso", "chassis"}
    arm = cfg.groups["left_arm"]
    assert [m.esc_id for m in arm.motors] == [1, 2, 3, 4, 5, 6, 7]
    assert arm.gripper is not None and arm.gripper.joint == "left_gripper_finger_joint1"
    assert len(cfg.groups["torso"].motors) == 4
    assert len(cfg.groups["chassis"].motors) == 6
    assert cfg.boards["imu_chassis"].can_id == 0x20 and cfg.boards["imu_torso"].can_id == 0x45
    assert cfg.boards["bms"].can_id == 0x21 and cfg.boards["remote"].can_id == 0x32


def test_motor_torque_ranges_cover_urdf_efforts() -> None:
    from hdas.urdf_limits import read_limits

    urdf = (Path(__file__).resolve().parents[3] / "r1_description/urdf/r1_v2_1_0.urdf").read_text()
    limits = read_limits(urdf)
    for group in parse_config(load()).groups.values():
        for m in group.motors:
            assert m.limits.tmax >= limits[m.joint].effort * m.metres_per_rad, m.joint
            assert m.limits.vmax * m.metres_per_rad >= limits[m.joint].velocity or m.joint.startswith("wheel"), m.joint


def test_bus_load_budget() -> None:
    cfg = parse_config(load())
    # 7 motors x (command + reply) x 500 Hz on an arm bus
    assert cfg.frames_per_second("left_arm") == 7000
    assert cfg.bus_load("left_arm") == pytest.approx(7000 * 125 / 1e6)
    # 6 motors at 200 Hz + IMU (3 frames at 100 Hz) + BMS 2 Hz + remote 50 Hz
    assert cfg.frames_per_second("chassis") == 2400 + 300 + 2 + 50


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d["groups"]["left_arm"].update(bus="can9"), "bus 'can9' is not defined"),
    (lambda d: d["groups"]["left_arm"]["joints"][2].update(model="DM9999"), "unknown motor model 'DM9999'"),
    (lambda d: d["groups"]["left_arm"]["joints"][2].update(esc_id=1), "id 0x1 used by"),
    (lambda d: d["groups"]["torso"]["joints"][0].update(mst_id=0x45), "collides"),
    (lambda d: d["groups"]["left_arm"].update(hold_kp=[1, 2]), "hold_kp: needs 6 values"),
    (lambda d: d["groups"]["left_arm"].update(kind="leg"), "kind 'leg'"),
    (lambda d: d["groups"]["left_arm"].update(boot_mode="servo"), "boot_mode"),
    (lambda d: d["buses"]["torso"].update(rate_hz=0), "rate_hz and bitrate must be > 0"),
    (lambda d: d["groups"]["chassis"]["wheels"].pop(), "3 steer motors but 2 wheels"),
    (lambda d: d["groups"]["torso"]["joints"][0].pop("esc_id"), r"groups/torso/joints\[0\]/esc_id: missing"),
    (lambda d: d["boards"]["bms"].update(kind="camera"), "kind 'camera'"),
    (lambda d: d.pop("buses"), "^buses: missing"),
])
def test_bad_config_is_refused_with_the_key_named(mutate, message: str) -> None:
    d = copy.deepcopy(load())
    mutate(d)
    with pytest.raises(ConfigError, match=message):
        parse_config(d)


@pytest.mark.parametrize("limit, why", [
    ('<limit lower="-1" upper="1" effort="10"/>', "velocity limit missing"),
    ('<limit lower="-1" upper="1" effort="10" velocity="0"/>', "velocity limit missing, zero"),
    ('<limit lower="-1" upper="1" effort="-5" velocity="2"/>', "effort limit missing, zero or negative"),
    ('<limit lower="1" upper="-1" effort="10" velocity="2"/>', "not below upper"),
])
def test_unusable_urdf_limits_of_a_motor_joint_are_refused(limit: str, why: str) -> None:
    from hdas.urdf_limits import limit_arrays, read_limits

    urdf = (f'<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="revolute">'
            f'<parent link="a"/><child link="b"/><axis xyz="0 0 1"/>{limit}</joint></robot>')
    with pytest.raises(ValueError, match=why):
        limit_arrays(read_limits(urdf), ["j"])
    with pytest.raises(ValueError, match="not in robot_description"):
        limit_arrays(read_limits(urdf), ["k"])


def test_a_joint_without_a_name_is_left_out_of_the_limits() -> None:
    from hdas.urdf_limits import read_limits

    limit = '<limit lower="-1" upper="1" effort="10" velocity="2"/>'
    urdf = (f'<robot name="r"><link name="a"/><link name="b"/><link name="c"/>'
            f'<joint name="j" type="revolute"><parent link="a"/><child link="b"/>{limit}</joint>'
            f'<joint type="revolute"><parent link="b"/><child link="c"/>{limit}</joint></robot>')
    assert list(read_limits(urdf)) == ["j"]
