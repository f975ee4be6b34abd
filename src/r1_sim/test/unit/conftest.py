"""Shared by r1_sim's unit tests: what a launch file puts in a node's namespace, read by roslaunch's own loader."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict

import pytest
import roslaunch.config
import roslaunch.xmlloader

SRC = Path(__file__).resolve().parents[3]


def namespace_of(launch: Path, node_ns: str, *args: str) -> Dict[str, Any]:
    """The private parameters of node `node_ns` (e.g. "/r1_sim") that `launch` sets with `args`, as the
    nested dict rospy.get_param("~") returns (roslaunch flattens the maps it loads)."""
    config = roslaunch.config.ROSLaunchConfig()
    roslaunch.xmlloader.XmlLoader().load(str(launch), config, argv=list(args), verbose=False)
    assert not config.config_errors, config.config_errors
    out: Dict[str, Any] = {}
    prefix = node_ns.rstrip("/") + "/"
    for key, param in config.params.items():
        if not key.startswith(prefix):
            continue
        *path, leaf = key[len(prefix):].split("/")
        d = out
        for part in path:
            d = d.setdefault(part, {})
        d[leaf] = param.value
    return out


@pytest.fixture()
def launch_namespace() -> Callable[..., Dict[str, Any]]:
    """namespace_of(launch, node_ns, *args) as a fixture."""
    return namespace_of
