"""Several motion-control nodes in one process (`rosrun mobiman controller_host`), as nodelets do for C++ nodes.

rospy reads each topic once per process and hands every message to all the subscribers it has there,
so nodes that read the same topics (HDAS's feedback, `/clock`) get each message once when hosted
together (docs/stack.md). Each hosted node keeps its name, its parameters (read from that node's
namespace, where the launch files put them), its topics and its diagnostics; the nodes share one
process, one interpreter lock and its scheduling.

`~modules` lists the nodes: `kind:name` strings, e.g. `joint_tracker:/r1_jointTracker_demo_node`, started in
that order. A hosted node class takes `(params=, name=)` and raises r1_common.settings.ConfigError, before
it subscribes or publishes anything, when its configuration cannot be used: the host then logs that node's
failure (fatal, naming the node and the parameter) and runs the others, as separate processes would. The
host exits 1 when `~modules` is unusable or no node could be started.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

import rospy

from r1_common.ros_io import run_node
from r1_common.settings import ConfigError

NAME = "controller_host"

# kind -> (module, class)
KINDS: Dict[str, Tuple[str, str]] = {
    "joint_tracker": ("mobiman.nodes.joint_tracker", "JointTrackerNode"),
    "torso_speed": ("mobiman.nodes.torso_speed", "TorsoSpeedNode"),
    "chassis": ("mobiman.nodes.chassis", "ChassisControlNode"),
    "rc_manager": ("mobiman.nodes.rc_manager", "RcManagerNode"),
    "eepose": ("mobiman.nodes.eepose", "EePoseNode"),
    "arm_ik": ("mobiman.nodes.arm_ik", "ArmIkNode"),
}


def parse_modules(entries: Any) -> List[Tuple[str, str]]:
    """`kind:name` strings as (kind, resolved name), in their order. Raises ConfigError (key `modules`)
    unless `entries` is a non-empty list of known kinds with distinct names."""
    if not isinstance(entries, list) or not entries:
        raise ConfigError("modules", f"must be a non-empty list of 'kind:name', got {entries!r}")
    out, seen = [], set()
    for entry in entries:
        kind, sep, name = str(entry).partition(":")
        if not sep or not name:
            raise ConfigError("modules", f"module {entry!r} is not 'kind:name'")
        if kind not in KINDS:
            raise ConfigError("modules", f"unknown kind {kind!r} in {entry!r} (known: {', '.join(KINDS)})")
        name = rospy.names.resolve_name(name)
        if name in seen:
            raise ConfigError("modules", f"{name} listed twice")
        seen.add(name)
        out.append((kind, name))
    return out


def node_class(kind: str) -> Callable[..., Any]:
    """The node class of `kind` (one of KINDS), imported on first use."""
    module, cls = KINDS[kind]
    return getattr(importlib.import_module(module), cls)  # type: ignore[no-any-return]


@dataclass
class Hosted:
    """A node the host started."""

    kind: str
    name: str
    node: Any


def start_nodes(modules: Sequence[Tuple[str, str]], params_of: Callable[[str], Any],
                make: Callable[[str], Callable[..., Any]] = node_class,
                log_fatal: Callable[[str], None] = rospy.logfatal,
                log_info: Callable[[str], None] = rospy.loginfo) -> List[Hosted]:
    """Start each (kind, name) of `modules` in order: `make(kind)(params=params_of(name), name=name)`.

    A node whose parameters are not a namespace or whose construction raises ConfigError is not started:
    one `log_fatal` line names it and the parameter, and the others start. Any other exception ends the
    host (a bug, not a configuration). Returns the nodes that started."""
    hosted = []
    for kind, name in modules:
        params = params_of(name)
        try:
            if not isinstance(params, Mapping):
                raise ConfigError(name, f"the parameters must be a namespace (a dict), not {params!r}")
            node = make(kind)(params=params, name=name)
        except ConfigError as e:
            log_fatal(f"{NAME}: {name} ({kind}) not started: bad configuration: {e}")
            continue
        hosted.append(Hosted(kind, name, node))
        log_info(f"{NAME}: {name} ({kind}) started")
    return hosted


def host() -> List[Hosted]:
    """The hosted nodes of this process's `~modules`; ConfigError when none could be started."""
    modules = parse_modules(rospy.get_param("~modules", []))
    hosted = start_nodes(modules, lambda name: rospy.get_param(name, {}))
    if not hosted:
        raise ConfigError("modules", f"none of the {len(modules)} nodes could be started")
    rospy.loginfo(f"{NAME}: {len(hosted)} of {len(modules)} nodes in one process: "
                  f"{', '.join(h.name for h in hosted)}")
    return hosted


def main() -> None:
    """The process (`rosrun mobiman controller_host`, node `mobiman_controllers`): exit 1 when `~modules` is
    unusable or no node could be started."""
    run_node("mobiman_controllers", host)
