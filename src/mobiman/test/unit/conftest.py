"""Fixtures: the R1 model built from the committed URDF and joint-group table."""
from __future__ import annotations

from pathlib import Path

import pytest

from mobiman.model.robot_model import RobotModel, load_group_config

SRC = Path(__file__).resolve().parents[3]
URDF = SRC / "r1_description" / "urdf" / "r1_v2_1_0.urdf"
FLOATING_URDF = SRC / "r1_description" / "urdf" / "r1_v2_1_0_floating.urdf"
GROUPS = SRC / "mobiman" / "config" / "r1_joint_groups.yaml"


@pytest.fixture(scope="session")
def r1() -> RobotModel:
    return RobotModel.from_files(URDF, GROUPS)


@pytest.fixture(scope="session")
def floating() -> RobotModel:
    groups, _ = load_group_config(GROUPS)
    arms_only = {k: v for k, v in groups.items() if k in ("left_arm", "right_arm", "left_gripper", "right_gripper")}
    return RobotModel(FLOATING_URDF.read_text(), arms_only)


@pytest.fixture(scope="session")
def r1_urdf() -> str:
    return URDF.read_text()
