"""The arm pose node's settings, declared once (mobiman.nodes.arm_ik.ArmIkSettings, the solver's
mobiman.arm.config.IkConfig): what the launch files load is accepted, bad values are refused naming the
key, and docs/arm_ik.md shows the declaration's tables."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from mobiman.arm.config import IkConfig, IkWeights
from mobiman.nodes.arm_ik import ArmIkNode, ArmIkSettings
from r1_common.settings import ConfigError

PKG = Path(__file__).resolve().parents[2]
DOC = (PKG.parents[1] / "docs" / "arm_ik.md").read_text()
LAUNCH_FILES = [PKG / "launch" / f"r1_{side}_arm_relaxed_ik_mit.launch" for side in ("left", "right")]


def _launch_params(path: Path) -> dict:
    """The node's namespace as the launch file fills it with its arguments' defaults: the loaded YAML,
    then its <param> and <rosparam> tags (values typed as roslaunch types them)."""
    root = ET.parse(path).getroot()
    args = {a.get("name"): a.get("default", a.get("value")) for a in root.iter("arg")}

    def subst(text: str) -> str:
        return re.sub(r"\$\(arg (\w+)\)", lambda m: str(args[m.group(1)]), text)

    groups = [g for g in root.iter("group") if g.get("ns", "").endswith("_arm_relaxed_ik")]
    assert len(groups) == 1, f"{path.name}: the node's namespace group"
    params: dict = {}
    for tag in groups[0]:
        if tag.tag == "rosparam" and tag.get("command") == "load":
            loaded = Path(subst(tag.get("file")).replace("$(find mobiman)", str(PKG)))
            params.update(yaml.safe_load(loaded.read_text()) or {})
        elif tag.tag == "rosparam":
            params[tag.get("param")] = yaml.safe_load(subst(tag.text or ""))
        elif tag.tag == "param":
            params[tag.get("name")] = yaml.safe_load(subst(tag.get("value")))
    return params


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_what_the_launch_files_load_is_accepted(path):
    params = _launch_params(path)
    assert set(params) >= {"side", "ready_pose", "ready_joints"}
    cfg = ArmIkSettings.from_params(params, where="r1_arm_relaxed_ik")
    assert cfg.side in path.name and cfg.ready_pose is False and len(cfg.ready_joints) == 6
    assert cfg.solver == IkConfig()          # relaxed_ik.yaml overrides nothing today


def test_the_yaml_holds_only_overrides():
    """A value equal to its declared default does not belong in config/relaxed_ik.yaml."""
    loaded = yaml.safe_load((PKG / "config" / "relaxed_ik.yaml").read_text()) or {}
    defaults = ArmIkSettings(side="left").to_params()
    for key, value in loaded.items():
        if key == "solver":
            for k, v in value.items():
                assert v != defaults["solver"][k], f"solver/{k}: the default"
        else:
            assert value != defaults[key], f"{key}: the default"


@pytest.mark.parametrize("params, key", [
    ({"side": "middle"}, "node/side"),
    ({"side": "left", "speed_limits": [1.0] * 5}, "node/speed_limits"),
    ({"side": "left", "target_timeout": "fast"}, "node/target_timeout"),
    ({"side": "left", "solver": {"max_stepp": 0.1}}, "node/solver/max_stepp"),
    ({"side": "left", "solver": {"weights": {"positon": 1.0}}}, "node/solver/weights/positon"),
    ({"side": "left", "solver": {"weights": {"velocity": -1.0}}}, "node/solver/weights/velocity"),
    ({"side": "left", "solver": {"max_iterations": 0}}, "node/solver/max_iterations"),
    ({"side": "left", "tf_wait": 1.0}, "node/tf_wait"),
])
def test_a_bad_value_is_refused_naming_its_key(params, key):
    with pytest.raises(ConfigError) as e:
        ArmIkSettings.from_params(params, where="node")
    assert e.value.key == key


@pytest.mark.parametrize("params, words", [
    ({}, "side must be left or right"),
    ({"side": "left", "ready_pose": True}, "ready_joints is not set"),
    ({"side": "left", "speed_limits": [1, 1, 1, 1, 1, 0]}, "speed_limits must be > 0"),
    ({"side": "left", "solver": {"max_step": 0.0}}, "max_step must be > 0"),
    ({"side": "left", "solver": {"weights": {"position": 0.0}}}, "position and orientation weights must be > 0"),
])
def test_checks_across_a_value_are_refused_too(params, words):
    with pytest.raises(ConfigError, match=words):
        ArmIkSettings.from_params(params, where="node")


def test_the_solver_section_alone():
    assert IkConfig.from_params({}) == IkConfig() and isinstance(IkConfig().weights, IkWeights)
    cfg = IkConfig.from_params({"max_step": 0.1, "weights": {"collision": 0}})
    assert cfg.max_step == 0.1 and cfg.weights.collision == 0.0 and cfg.weights.position == 50.0


def test_the_node_raises_config_error_never_system_exit():
    with pytest.raises(ConfigError) as e:
        ArmIkNode(params={"side": "middle"}, name="/r1_left_arm_relaxed_ik")
    assert e.value.key == "/r1_left_arm_relaxed_ik/side"


@pytest.mark.parametrize("cls", [ArmIkSettings, IkConfig, IkWeights], ids=lambda c: c.__name__)
def test_the_docs_show_the_declared_table(cls):
    """docs/arm_ik.md holds each table as `markdown_table()` renders it (regenerate it there when a
    declaration changes)."""
    assert cls.markdown_table() in DOC, f"docs/arm_ik.md: {cls.__name__}'s table differs from its declaration"
