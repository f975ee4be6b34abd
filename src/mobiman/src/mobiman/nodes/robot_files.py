"""What a node reads besides its parameters: the URDF and the joint-group table.

Both raise ConfigError naming the parameter to fix, so that a node reports a missing file the way it
reports a bad parameter (r1_common.ros_io.run_node, mobiman.nodes.controller_host).
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

import rospkg
import rospy

from mobiman.model.robot_model import load_group_config
from r1_common.settings import ConfigError


def joint_groups(path: str, key: str) -> Tuple[Dict[str, List[str]], Dict[str, str]]:
    """`joint_groups` and `frames` of the table at `path` (a node's `joint_groups_file`; empty: mobiman's
    config/r1_joint_groups.yaml). Raises ConfigError naming `key` when it cannot be read."""
    return load_group_config(path or Path(rospkg.RosPack().get_path("mobiman")) / "config/r1_joint_groups.yaml", key)


def robot_description(param: str) -> str:
    """The URDF (XML) on the parameter server at `param` (resolved in the caller's namespace). Raises
    ConfigError naming `param` when it is missing or empty."""
    urdf = rospy.get_param(param, "")
    if not urdf or not isinstance(urdf, str):
        raise ConfigError(param, "no URDF on the parameter server")
    return urdf
