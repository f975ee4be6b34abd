"""r1_can.config: the robot's CAN layout (config/r1.yaml + a bus file) parses, keeps to its keys,
and a bad one is refused with a ConfigError whose key names the bad entry."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from r1_can.config import LAYOUT_KEYS, layout_of, parse_config
from r1_can.damiao import MOTOR_TORQUES, MotorTorque
from r1_common.settings import ConfigError

CONFIG = Path(__file__).resolve().parents[2] / "config"


def layout(buses: str = "r1_buses_sim.yaml") -> dict:
    d = yaml.safe_load((CONFIG / "r1.yaml").read_text())
    d.update(yaml.safe_load((CONFIG / buses).read_text()))
    return d


@pytest.mark.parametrize("buses", ["r1_buses_robot.yaml", "r1_buses_sim.yaml", "r1_buses_sim_light.yaml"])
def test_the_shipped_layout_parses_and_has_only_layout_keys(buses: str) -> None:
    d = layout(buses)
    assert set(d) == set(LAYOUT_KEYS)
    cfg = parse_config(d)
    assert set(cfg.buses) == set(cfg.groups) == {"left_arm", "right_arm", "torso", "chassis"}
    assert cfg.buses["left_arm"].rate_hz in (100, 500)


def test_each_motor_has_its_models_rated_and_peak_torque() -> None:
    cfg = parse_config(layout())
    motors = {m.joint: m for g in cfg.groups.values() for m in g.motors}
    assert all(m.torque == MOTOR_TORQUES[m.model] for m in motors.values())
    assert motors["torso_joint2"].torque == MotorTorque(100.0, 200.0)      # the R1 hardware guide's
    assert motors["left_arm_joint1"].torque == MotorTorque(20.0, 40.0)


def test_other_keys_of_a_namespace_are_not_the_layouts() -> None:
    d = dict(layout(), command_timeout=0.2, anything="else")
    assert set(layout_of(d)) == set(LAYOUT_KEYS)
    assert parse_config(d) == parse_config(layout())          # not read


@pytest.mark.parametrize("mutate, key, message", [
    (lambda d: d["groups"]["torso"]["joints"][0].pop("esc_id"), "groups/torso/joints[0]/esc_id", "missing"),
    (lambda d: d["groups"]["left_arm"]["joints"][2].update(esc_id="one"), "groups/left_arm/joints[2]/esc_id",
     "must be an integer, not 'one'"),
    (lambda d: d["groups"]["left_arm"]["gripper"].update(model="DM1"), "groups/left_arm/gripper/model",
     "unknown motor model 'DM1'"),
    (lambda d: d["groups"]["chassis"]["wheels"][1].update(mst_id=0x300), "groups/chassis/wheels[1]/mst_id",
     "0x300 outside 0x01..0xFF"),
    (lambda d: d["groups"]["right_arm"]["joints"][1].update(esc_id=3), "groups/right_arm/joints[2]/esc_id",
     "on bus 'right_arm' id 0x3 used by right_arm/right_arm_joint2 esc_id and right_arm/right_arm_joint3 esc_id"),
    (lambda d: d["groups"]["torso"].update(hold_kd=[1, 2, "x", 4]), "groups/torso/hold_kd[2]", "must be a number"),
    (lambda d: d["groups"]["torso"].update(joints={"a": 1}), "groups/torso/joints", "must be a list"),
    (lambda d: d["buses"]["chassis"].update(bitrate=0), "buses/chassis/bitrate", "0 is not > 0"),
    (lambda d: d["boards"]["imu_torso"].update(bus="can7"), "boards/imu_torso/bus", "bus 'can7' is not defined"),
    (lambda d: d["boards"]["bms"].update(can_id=0x14), "boards/bms/can_id", "collides with chassis/wheel_motor_joint1"),
    (lambda d: d.update(groups=[]), "groups", "must be a map"),
])
def test_a_bad_layout_names_the_key(mutate, key: str, message: str) -> None:
    d = copy.deepcopy(layout())
    mutate(d)
    with pytest.raises(ConfigError) as e:
        parse_config(d)
    assert e.value.key == key and message in str(e.value)
    with pytest.raises(ConfigError) as e:
        parse_config(d, where="/HDAS")
    assert e.value.key == f"/HDAS/{key}" and str(e.value).startswith(f"/HDAS/{key}: ")


def test_its_config_error_is_the_nodes() -> None:
    from r1_can import config
    assert config.ConfigError is ConfigError and issubclass(ConfigError, ValueError)
