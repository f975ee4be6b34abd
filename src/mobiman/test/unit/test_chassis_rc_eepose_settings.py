"""The settings of chassis_control_node, r1_control_manager, r1_eepose_pub_node and feedback_joint_states,
declared once (r1_common.settings): the shipped YAMLs hold only deliberate overrides and are accepted, so
are the parameters the launch and test files put in the nodes' namespaces; bad ones are a ConfigError
naming the key; the docs show each node's generated table (tests/test_settings_docs.py keeps every table equal
to its declaration)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict

import pytest
import roslaunch.config
import yaml
from roslaunch.substitution_args import resolve_args

from mobiman.estimation.eepose import Frames
from mobiman.nodes.chassis import ChassisSettings
from mobiman.nodes.eepose import EePoseSettings
from mobiman.nodes.feedback_joint_states import FeedbackJointStatesSettings
from mobiman.nodes.rc_manager import RcManagerSettings
from mobiman.remote.rc_manager import AxisMap
from r1_common.settings import ConfigError

PKG = Path(__file__).resolve().parents[2]
WS = PKG.parents[1]
NODES = {"chassis_control_node": ChassisSettings, "r1_control_manager": RcManagerSettings,
         "r1_eepose_pub_node": EePoseSettings, "feedback_joint_states": FeedbackJointStatesSettings}


def config(name: str) -> Dict[str, Any]:
    return yaml.safe_load((PKG / "config" / name).read_text()) or {}


# -- docs -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("doc, cls", [("chassis_control.md", ChassisSettings),
                                      ("eepose_and_rc.md", RcManagerSettings),
                                      ("eepose_and_rc.md", EePoseSettings),
                                      ("eepose_and_rc.md", FeedbackJointStatesSettings)])
def test_the_docs_show_the_generated_table_of_each_node(doc, cls):
    m = re.search(rf"<!-- settings: {re.escape(cls.__module__)}\.{cls.__name__} -->\n(.*?)<!-- /settings -->",
                  (WS / "docs" / doc).read_text(), re.S)
    assert m, f"docs/{doc} has no settings table of {cls.__name__}"
    assert m.group(1).strip() == cls.markdown_table()


# -- the YAMLs ------------------------------------------------------------------------------------
def test_the_chassis_yaml_is_accepted_and_overrides_nothing():
    """The R1 runs on the declared defaults; the file stays for a robot that differs."""
    params = config("chassis_control.yaml")
    ChassisSettings.from_params(params, where="chassis_control_node")
    assert params == {}


def test_the_control_manager_yaml_is_accepted_and_holds_only_overrides():
    params = config("r1_control_manager.yaml")
    s = RcManagerSettings.from_params(params, where="r1_control_manager")
    default = RcManagerSettings().to_params()
    assert {k: s.to_params()[k] != default[k] for k in params} == {"gestures": True}
    assert sorted(s.gestures) == ["fold", "stand"]
    assert s.clamped() == (s, [])


def test_the_joint_groups_frames_are_the_declared_ones():
    assert Frames.from_params(config("r1_joint_groups.yaml")["frames"], where="frames") == Frames()


# -- the launch files -----------------------------------------------------------------------------
def nested(flat: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """`/node/a/b: v` parameters of NODES as {node: {a: {b: v}}}."""
    out: Dict[str, Dict[str, Any]] = {}
    for key, value in flat.items():
        node, *path = key.strip("/").split("/")
        if node in NODES and path:
            d = out.setdefault(node, {})
            for part in path[:-1]:
                d = d.setdefault(part, {})
            d[path[-1]] = value
    return out


def launch_namespaces(launch: Path) -> Dict[str, Dict[str, Any]]:
    """The namespaces of NODES as roslaunch sets them from `launch` (a file that includes no other)."""
    return nested({k: p.value for k, p in roslaunch.config.load_config_default([str(launch)], None).params.items()})


def node_tag_namespaces(test: Path) -> Dict[str, Dict[str, Any]]:
    """The namespaces of NODES set inside their own <node> tags of `test` (its includes left out)."""
    flat: Dict[str, Any] = {}
    for node in ET.parse(test).getroot().iter("node"):
        ns = "/" + node.get("name", "")
        for tag in node:
            if tag.tag == "param":
                value = resolve_args(tag.get("value", ""))
                flat[f"{ns}/{tag.get('name')}"] = yaml.safe_load(value) if tag.get("type") != "str" else value
            elif tag.tag == "rosparam" and tag.get("command") == "load":
                loaded = yaml.safe_load(Path(resolve_args(tag.get("file", ""))).read_text()) or {}
                flat.update({f"{ns}/{k}": v for k, v in loaded.items()})
    return nested(flat)


def test_the_chassis_launch_files_parameters_are_accepted():
    """chassis_sim.test and the whole stack (startup_config) include this launch file for these nodes."""
    found = launch_namespaces(PKG / "launch" / "r1_chassis_control.launch")
    assert set(found) == {"chassis_control_node", "r1_control_manager", "r1_eepose_pub_node"}
    for node, params in found.items():
        NODES[node].from_params(params, where=node)


def test_the_eepose_rc_rostests_parameters_are_accepted():
    found = node_tag_namespaces(PKG / "test" / "eepose_rc_sim.test")
    assert set(found) == {"r1_control_manager", "r1_eepose_pub_node"}
    assert found["r1_eepose_pub_node"]["urdfFile"].endswith("r1_v2_1_0.urdf")
    for node, params in found.items():
        NODES[node].from_params(params, where=node)


# -- bad values -----------------------------------------------------------------------------------
@pytest.mark.parametrize("params, key", [
    ({"max_sped": [1.0, 1.0, 1.0]}, "/chassis_control_node/max_sped"),
    ({"max_speed": [1.0, 1.0]}, "/chassis_control_node/max_speed"),
    ({"command_timeout": 0.0}, "/chassis_control_node/command_timeout"),
    ({"steer_joints": "steer_motor_joint1"}, "/chassis_control_node/steer_joints"),
    ({"align_tolerance": 2.0}, "/chassis_control_node/align_tolerance"),
    ({"max_speed": [1.0, 0.0, 1.0]}, "/chassis_control_node"),             # > 0: the message names it
    ({"acc_min": [3.0, 0.3, 0.3]}, "/chassis_control_node"),
    ({"align_deadband": 0.4}, "/chassis_control_node"),
])
def test_a_bad_chassis_parameter_is_refused_with_its_key(params, key):
    with pytest.raises(ConfigError) as e:
        ChassisSettings.from_params(params, where="/chassis_control_node")
    assert e.value.key == key
    assert next(iter(params)) in str(e.value)


@pytest.mark.parametrize("params, key", [
    ({"rate_hz": 0.0}, "/r1_control_manager/rate_hz"),
    ({"dead_band": 0.5}, "/r1_control_manager"),
    ({"mapping": {"linear_y": {"sign": 0}}}, "/r1_control_manager/mapping/linear_y/sign"),
    ({"mapping": {"linear_z": {}}}, "/r1_control_manager/mapping/linear_z"),
    ({"gestures": {"g": {"left": [1, 1], "right": [1, 1], "hold_s": 0.2}}}, "/r1_control_manager/gestures/g/hold_s"),
    ({"gestures": {"g": {"left": [1, 0], "right": [1, 1]}}}, "/r1_control_manager/gestures/g"),
    ({"gestures": {"g": {"left": [1, 1], "right": [1, 1], "torso": {"positions": [1.0], "velocities": [0.0]}}}},
     "/r1_control_manager/gestures/g/torso"),
])
def test_a_bad_control_manager_parameter_is_refused_with_its_key(params, key):
    with pytest.raises(ConfigError) as e:
        RcManagerSettings.from_params(params, where="/r1_control_manager")
    assert e.value.key == key


@pytest.mark.parametrize("cls, params, key", [
    (EePoseSettings, {"joint_states_rate_hz": 0.0}, "/n/joint_states_rate_hz"),
    (EePoseSettings, {"wheel_joints": ["w1", 2]}, "/n/wheel_joints[1]"),
    (EePoseSettings, {"urdf_file": "/x.urdf"}, "/n/urdf_file"),
    (FeedbackJointStatesSettings, {"wheel_radius": 0.0}, "/n/wheel_radius"),
    (FeedbackJointStatesSettings, {"group_topics": "/hdas/feedback_torso"}, "/n/group_topics"),
])
def test_a_bad_pose_estimator_or_merger_parameter_is_refused_with_its_key(cls, params, key):
    with pytest.raises(ConfigError) as e:
        cls.from_params(params, where="/n")
    assert e.value.key == key


def test_a_mapping_given_in_part_keeps_that_components_defaults():
    s = RcManagerSettings.from_params({"mapping": {"linear_y": {"max_speed": 0.3}}})
    assert s.mapping["linear_y"] == AxisMap("left_x", -1.0, 0.3)
    assert s.mapping["linear_x"] == RcManagerSettings().mapping["linear_x"]
