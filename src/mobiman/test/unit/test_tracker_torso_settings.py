"""The settings of r1_jointTracker_demo_node and torso_speed_control, declared once (r1_common.settings):
the shipped YAMLs and the parameters the launch and test files set are accepted, bad ones are a
ConfigError naming the key, the two nodes share one following-error default, the docs' tables are
generated from the declarations, and no node or core exits the process itself."""
from __future__ import annotations

import importlib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from mobiman.torso.config import TorsoSpeedConfig
from mobiman.tracker.settings import MAX_FOLLOWING_ERROR, JointTrackerSettings
from r1_common.settings import ConfigError

PKG = Path(__file__).resolve().parents[2]
WS = PKG.parents[1]
CONFIG = PKG / "config"
TRACKER = "r1_jointTracker_demo_node"


def load(name: str) -> dict:
    return yaml.safe_load((CONFIG / name).read_text())


def test_the_tracker_yaml_and_its_variants_are_accepted() -> None:
    s = JointTrackerSettings.from_params(load("joint_tracker.yaml"))
    assert s.output_mode == "mit" and s.realtime_priority == 40 and s.max_following_error == 0.02
    assert set(s.groups) == {"torso", "left_arm", "right_arm"} and s.groups["torso"].gravity_at == "planned"
    assert s.groups["left_arm"].gripper.kp == 20.0 and s.groups["torso"].gripper is None
    fast = JointTrackerSettings.from_params({**load("joint_tracker.yaml"), **load("joint_tracker_fast.yaml"),
                                             "disable_torso": True, "output_mode": "pid"})
    assert fast.fast and fast.max_following_error == 0.0 and fast.fast_limits["torso"].velocity == [1.0] * 4
    assert fast.disable_torso and fast.output_mode == "pid"


def test_the_torso_yaml_is_accepted() -> None:
    c = TorsoSpeedConfig.from_params(load("torso_speed_control.yaml"))
    assert c.workspace_x == (-0.1, 0.2) and c.workspace_z == (0.1, 0.7) and c.bend_sign == -1.0
    assert c.friction_coulomb == [1.0] * 4 and c.kp == [500.0, 500.0, 400.0, 200.0] and c.gravity_at == "planned"
    assert c.trajectory_rate_hz == 500.0 and isinstance(c.trajectory_rate_hz, float)


def launch_params(node_type: str, ns: str) -> set[str]:
    """Names of the <param>s the launch and test files give the node (in its namespace or inside it)."""
    names = set()
    for path in sorted(PKG.glob("launch/*.launch")) + sorted(PKG.glob("test/*.test")):
        root = ET.parse(path).getroot()
        for el in root.iter():
            if (el.tag == "group" and el.get("ns") == ns) or (el.tag == "node" and el.get("type") == node_type):
                names |= {p.get("name") for p in el.findall("param")}
    return names


def test_every_parameter_the_launch_and_test_files_set_is_declared() -> None:
    tracker = launch_params(TRACKER, TRACKER)
    assert {"disable_torso", "output_mode", "feedback_timeout"} <= tracker
    JointTrackerSettings.from_params({**load("joint_tracker.yaml"), "disable_torso": True, "output_mode": "mit",
                                      "feedback_timeout": 30.0})
    assert tracker <= set(JointTrackerSettings.__dataclass_fields__)
    torso = launch_params("torso_speed_control_node", "torso_speed_control")
    assert torso <= set(TorsoSpeedConfig.__dataclass_fields__)


@pytest.mark.parametrize("change, key", [
    ({"output_mode": "torque"}, "output_mode"),
    ({"feedback_timeout": 0.0}, ""),
    ({"nominal_rate_hz": "fast"}, "nominal_rate_hz"),
    ({"realtime_priority": 200}, "realtime_priority"),
    ({"max_following_error": -0.1}, "max_following_error"),
    ({"frequency": 5}, "frequency"),
    ({"fast_limits": {"torso": {"velocity": [1.0] * 4, "accel": [1.0] * 4}}}, "fast_limits/torso/accel"),
])
def test_bad_tracker_settings_are_config_errors_naming_the_key(change, key) -> None:
    with pytest.raises(ConfigError) as e:
        JointTrackerSettings.from_params({**load("joint_tracker.yaml"), **change})
    assert e.value.key == key
    if not key:
        assert "feedback_timeout" in str(e.value)


@pytest.mark.parametrize("group_change, key", [
    ({"gravity_at": "both"}, "groups/left_arm/gravity_at"),
    ({"kp": "stiff"}, "groups/left_arm/kp"),
    ({"command_topic": ""}, "groups/left_arm"),
    ({"gain": 1.0}, "groups/left_arm/gain"),
    ({"gripper": {"kp": -1.0, "kd": 0.5}}, "groups/left_arm/gripper/kp"),
])
def test_bad_group_settings_are_config_errors_naming_the_key(group_change, key) -> None:
    p = load("joint_tracker.yaml")
    p["groups"]["left_arm"].update(group_change)
    with pytest.raises(ConfigError) as e:
        JointTrackerSettings.from_params(p)
    assert e.value.key == key


@pytest.mark.parametrize("change, key", [
    ({"max_speed": 0.0}, ""),
    ({"kp": [1.0, 2.0]}, ""),
    ({"gravity_at": "nowhere"}, "gravity_at"),
    ({"bend_sign": 0}, "bend_sign"),
    ({"workspace": {"y": [0.0, 1.0]}}, "workspace"),
    ({"workspace": {"x": [0.3, 0.1]}}, ""),
    ({"workspace_x": [0.0, 0.1]}, "workspace/x"),           # given twice
    ({"speed_limit": 0.1}, "speed_limit"),
    ({"friction_viscous": [-1.0] * 4}, "friction_viscous[0]"),
])
def test_bad_torso_settings_are_config_errors_naming_the_key(change, key) -> None:
    with pytest.raises(ConfigError) as e:
        TorsoSpeedConfig.from_params({**load("torso_speed_control.yaml"), **change})
    assert e.value.key == key


def test_the_workspace_may_be_given_flat() -> None:
    c = TorsoSpeedConfig.from_params({"workspace_x": [-0.05, 0.1]})
    assert c.workspace_x == (-0.05, 0.1) and c.workspace_z == (0.1, 0.7)


def test_one_following_error_for_both_nodes() -> None:
    """Declared once: the tracker's default (it was 0.05 in the node, 0.02 in its YAML), torso speed
    control's joint-target moves, and both YAMLs; fast mode turns it off."""
    assert MAX_FOLLOWING_ERROR == 0.02
    assert JointTrackerSettings().max_following_error == TorsoSpeedConfig().max_following_error == MAX_FOLLOWING_ERROR
    assert load("joint_tracker.yaml")["max_following_error"] == MAX_FOLLOWING_ERROR
    assert load("torso_speed_control.yaml")["max_following_error"] == MAX_FOLLOWING_ERROR
    assert load("joint_tracker_fast.yaml")["max_following_error"] == 0.0


@pytest.mark.parametrize("doc, classes", [
    ("joint_tracker.md", ["mobiman.tracker.settings.JointTrackerSettings", "mobiman.tracker.settings.GroupSettings",
                          "mobiman.tracker.settings.GripperSettings", "mobiman.tracker.settings.FastLimits"]),
    ("torso_speed_control.md", ["mobiman.torso.config.TorsoSpeedConfig"]),
])
def test_the_docs_show_the_declarations(doc: str, classes: list) -> None:
    """Each declaration has its generated table in the node's doc (tests/test_settings_docs.py keeps each equal)."""
    text = (WS / "docs" / doc).read_text()
    for path in classes:
        assert f"<!-- settings: {path} -->" in text, f"docs/{doc} lacks the table of {path}"
    module, _, name = classes[0].rpartition(".")
    table = getattr(importlib.import_module(module), name).markdown_table()
    assert table in text


def test_no_node_or_core_exits_the_process_itself() -> None:
    """ConfigError, ended by r1_common.ros_io.run_node (so the nodes can be hosted by controller_host)."""
    src = PKG / "src" / "mobiman"
    files = [src / "nodes" / "joint_tracker.py", src / "nodes" / "torso_speed.py",
             *sorted((src / "tracker").glob("*.py")), *sorted((src / "torso").glob("*.py"))]
    offenders = [f.name for f in files if "SystemExit" in f.read_text()]
    assert offenders == []
    for node in ("joint_tracker.py", "torso_speed.py"):
        assert "run_node(" in (src / "nodes" / node).read_text()
