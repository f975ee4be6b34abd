"""Several motion-control nodes in one process (`rosrun mobiman controller_host`), as nodelets do for C++ nodes.

rospy reads each topic once per process and hands every message to all the subscribers it has
there. The controllers all read HDAS's 500 Hz feedback and `/clock`: as separate processes each
message is delivered, woken on and deserialised five times (`docs/stack.md`, "Where the CPU goes").
Hosted together they get it once. Each hosted node keeps its name, its parameters (read from that
node's namespace, where the vendor's launch files put them), its topics and its diagnostics; what
changes is that the nodes share one process, one interpreter lock and its scheduling.

`~modules` lists the nodes: `kind:name` strings, e.g. `joint_tracker:/r1_jointTracker_demo_node`.
"""
from __future__ import annotations

import importlib

import rospy

from r1_common.ros_io import stop_within

# kind -> (module, class)
KINDS: dict[str, tuple[str, str]] = {
    "joint_tracker": ("mobiman.nodes.joint_tracker", "JointTrackerNode"),
    "torso_speed": ("mobiman.nodes.torso_speed", "TorsoSpeedNode"),
    "chassis": ("mobiman.nodes.chassis", "ChassisControlNode"),
    "rc_manager": ("mobiman.nodes.rc_manager", "RcManagerNode"),
    "eepose": ("mobiman.nodes.eepose", "EePoseNode"),
    "arm_ik": ("mobiman.nodes.arm_ik", "ArmIkNode"),
}


def parse_modules(entries: list[str]) -> list[tuple[str, str]]:
    """`kind:name` strings as (kind, resolved name); SystemExit with the reason for a bad list."""
    if not isinstance(entries, list) or not entries:
        raise SystemExit(f"controller_host: ~modules must be a non-empty list of 'kind:name', got {entries!r}")
    out, seen = [], set()
    for entry in entries:
        kind, sep, name = str(entry).partition(":")
        if not sep or not name:
            raise SystemExit(f"controller_host: module {entry!r} is not 'kind:name'")
        if kind not in KINDS:
            raise SystemExit(f"controller_host: unknown kind {kind!r} in {entry!r} (known: {', '.join(KINDS)})")
        name = rospy.names.resolve_name(name)
        if name in seen:
            raise SystemExit(f"controller_host: {name} listed twice")
        seen.add(name)
        out.append((kind, name))
    return out


def main() -> None:
    rospy.init_node("mobiman_controllers")
    stop_within()   # gone within seconds of a SIGINT, whatever hangs
    modules = parse_modules(rospy.get_param("~modules", []))
    hosted = []
    for kind, name in modules:
        module, cls = KINDS[kind]
        params = rospy.get_param(name, {})
        if not isinstance(params, dict):
            raise SystemExit(f"controller_host: the parameters of {name} are not a namespace: {params!r}")
        hosted.append(getattr(importlib.import_module(module), cls)(params=params, name=name))
        rospy.loginfo(f"controller_host: {name} ({kind}) started")
    rospy.loginfo(f"controller_host: {len(hosted)} nodes in one process: {', '.join(n for _, n in modules)}")
    rospy.spin()
