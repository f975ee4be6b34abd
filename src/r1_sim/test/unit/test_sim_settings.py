"""The simulator's settings: what r1_sim.launch loads is accepted, the R1's tables reach the robot, bad values
are refused naming the key, and docs/simulator.md shows the declaration."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from r1_can.config import LAYOUT_KEYS, parse_config
from r1_can.damiao import Register
from r1_common.ros_testing import launch_namespace
from r1_common.settings import ConfigError
from r1_sim.robot import SimRobot
from r1_sim.sim_settings import Battery, Friction, Imu, MotorLoop, Remote, SimSettings

SRC = Path(__file__).resolve().parents[3]
R1_SIM_LAUNCH = SRC / "HDAS" / "launch" / "r1_sim.launch"
SIM_YAML = SRC / "r1_sim" / "config" / "sim.yaml"
DOC = SRC.parent / "docs" / "simulator.md"
URDF = SRC / "r1_description" / "urdf" / "r1_v2_1_0.urdf"


@pytest.mark.parametrize("args, rates", [((), (1000.0, 500.0)), (("light:=true",), (500.0, 200.0)),
                                         (("use_sim_time:=false", "hdas:=false"), (1000.0, 500.0))])
def test_what_r1_sim_launch_loads_is_accepted(args, rates):
    ns = launch_namespace(R1_SIM_LAUNCH, "/r1_sim", *args)
    s = SimSettings.from_namespace(ns)
    assert (s.physics_rate_hz, s.clock_rate_hz) == rates
    assert s.start_pose["left_arm_joint1"] == pytest.approx(-1.5708)
    layout = parse_config(ns, where="r1_sim")     # the rest of the namespace is the CAN layout
    assert set(layout.buses) >= {"left_arm", "right_arm", "torso", "chassis"}
    assert set(ns) - set(SimSettings.to_params(s)) <= set(LAYOUT_KEYS)


def test_sim_yaml_holds_the_r1s_tables_over_the_empty_defaults():
    s = SimSettings.from_namespace(yaml.safe_load(SIM_YAML.read_text()))
    assert set(yaml.safe_load(SIM_YAML.read_text())) == {"start_pose", "friction", "motor_loops"}
    assert s.friction_of("left_arm_joint2") == Friction(0.3, 0.2, 0.02)
    assert s.friction_of("right_gripper_finger_joint1") == Friction(5.0, 1.0, 0.2)
    assert s.friction_of("steer_motor_joint1") == Friction()
    assert s.motor_loop("wheel") == MotorLoop(kp_apr=20.0, kp_asr=25.0, ki_asr=625.0)
    assert s.motor_loop("torso").kp_asr == 150.0
    d = SimSettings()
    assert d.start_pose == {} and d.friction == {} and d.motor_loop("arm") == MotorLoop()
    assert (d.comm_timeout_s, d.max_lag_s, d.max_lag_sim_time_s, d.lockstep) == (2.0, 0.25, 0.01, True)


def test_the_last_matching_friction_prefix_wins():
    s = SimSettings.from_params({"friction": {"arm": {"viscous": 1.0}, "arm_joint1": {"coulomb": 2.0}}})
    assert s.friction_of("left_arm_joint1") == Friction(0.0, 2.0, 0.0)
    assert s.friction_of("left_arm_joint2") == Friction(1.0, 0.0, 0.0)


@pytest.mark.parametrize("params, key", [
    ({"physics_rate_hz": 0.0}, "r1_sim/physics_rate_hz"),
    ({"physics_rate_hzz": 500.0}, "r1_sim/physics_rate_hzz"),
    ({"lockstep": "yes"}, "r1_sim/lockstep"),
    ({"friction": {"torso_joint": {"viscous": -1.0}}}, "r1_sim/friction/torso_joint/viscous"),
    ({"friction": {"torso_joint": {"viscus": 1.0}}}, "r1_sim/friction/torso_joint/viscus"),
    ({"motor_loops": {"wheel": {"ki_asr": "high"}}}, "r1_sim/motor_loops/wheel/ki_asr"),
    ({"motor_loops": {"elbow": {"kp_asr": 1.0}}}, "r1_sim"),
    ({"start_pose": {"torso_joint1": "up"}}, "r1_sim/start_pose/torso_joint1"),
    ({"battery": {"state_of_charge": 1.5}}, "r1_sim/battery/state_of_charge"),
    ({"remote": {"mode": 256}}, "r1_sim/remote/mode"),
])
def test_bad_values_are_refused_naming_the_key(params, key):
    with pytest.raises(ConfigError) as e:
        SimSettings.from_namespace(params)
    assert e.value.key == key


def test_the_robot_takes_the_settings_or_the_namespace_alike():
    ns = launch_namespace(R1_SIM_LAUNCH, "/r1_sim", "light:=true")
    config = parse_config(ns)
    urdf = URDF.read_text()
    ours = {"comm_timeout_s": 1.0, "imu": {"gyro_noise": 0.01}}
    a = SimRobot(config, urdf, {**ns, **ours}, now=0.0)
    b = SimRobot(config, urdf, SimSettings.from_namespace({**ns, **ours}), now=0.0)
    assert a.settings == b.settings and a.params["comm_timeout_s"] == 1.0
    assert a.joint_positions() == b.joint_positions()
    assert a.slot("left_arm_joint1").motor.registers[Register.TIMEOUT] == 20000      # 50 µs units
    assert all(m.gyro_noise == 0.01 for m in a.imu.values())
    with pytest.raises(ConfigError):
        SimRobot(config, urdf, {**ns, "comm_timeout_ss": 1.0}, now=0.0)


@pytest.mark.parametrize("cls", [SimSettings, Friction, MotorLoop, Battery, Remote, Imu], ids=lambda c: c.__name__)
def test_docs_show_the_declared_parameters(cls):
    assert cls.markdown_table() in DOC.read_text(), f"docs/simulator.md: regenerate the table of {cls.__name__}"
