"""The node graph of a running stack, drawn as one picture (docs/architecture.md).

`edges_from_state` turns the master's system state into node -> node edges labelled with the topics
between them (ROS-free, pytest); `draw` lays the nodes out in the stack's layers (your program ->
pose control -> controllers -> driver -> CAN -> motors, estimators and sensors below) and writes a
PNG. `python -m r1_startup.node_graph OUT.png` draws the stack on the current master, so the
picture is what runs, not what someone remembers.
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from typing import Iterable, Sequence

USER = "your program\n(r1_demo, teleop, planner)"
IGNORED_TOPICS = {"/rosout", "/rosout_agg", "/clock", "/diagnostics", "/tf", "/tf_static"}
# (column, row) of each node in the picture; unknown nodes go to an extra column.
LAYOUT = {
    USER: (0, 2.5),
    "/r1_left_arm_relaxed_ik": (1, 0), "/r1_right_arm_relaxed_ik": (1, 1), "/r1_control_manager": (1, 4),
    "/r1_jointTracker_demo_node": (2, 0.5), "/torso_speed_control": (2, 2.2), "/chassis_control_node": (2, 3.6),
    "/HDAS": (3, 2), "/r1_sim": (4, 2),
    "/r1_eepose_pub_node": (2, 5.2), "/robot_state_publisher": (3, 5.2), "/r1_sim_sensors": (4, 4.2),
}


def edges_from_state(publishers: Iterable[tuple[str, Sequence[str]]],
                     subscribers: Iterable[tuple[str, Sequence[str]]],
                     ignore: Iterable[str] = (), user_prefixes: Sequence[str] = ("/motion_target/",)
                     ) -> dict[tuple[str, str], list[str]]:
    """(publisher node, subscriber node) -> sorted topics, from the master's getSystemState lists.

    Topics under `user_prefixes` that a node subscribes to come from USER as well (they are the
    stack's inputs, whoever publishes them at the moment).
    """
    skip = set(IGNORED_TOPICS) | set(ignore)
    pubs = {t: [n for n in ns if n not in skip] for t, ns in publishers if t not in IGNORED_TOPICS}
    edges: dict[tuple[str, str], set[str]] = defaultdict(set)
    for topic, subs in subscribers:
        if topic in IGNORED_TOPICS:
            continue
        for s in subs:
            if s in skip:
                continue
            sources = [p for p in pubs.get(topic, []) if p != s]
            if topic.startswith(tuple(user_prefixes)):
                sources = [p for p in sources if p in LAYOUT] + [USER]
            for p in sources:
                edges[(p, s)].add(topic)
    return {k: sorted(v) for k, v in edges.items()}


def _short(topic: str) -> str:
    for prefix in ("/motion_target/", "/motion_control/", "/hdas/"):
        if topic.startswith(prefix):
            return topic[len(prefix):]
    return topic.lstrip("/")


def draw(edges: dict[tuple[str, str], list[str]], path: str, title: str = "") -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    nodes = sorted({n for e in edges for n in e} | {"/HDAS", "/r1_sim"})
    extra = [n for n in nodes if n not in LAYOUT]
    pos = {n: LAYOUT[n] for n in nodes if n in LAYOUT}
    for i, n in enumerate(extra):
        pos[n] = (5, i)
    xy = {n: (c * 3.4, -r * 1.3) for n, (c, r) in pos.items()}
    fig, ax = plt.subplots(figsize=(19, 10))
    colours = {"/motion_target/": "tab:blue", "/motion_control/control": "tab:green", "/hdas/": "tab:orange"}
    for (a, b), topics in edges.items():
        if a not in xy or b not in xy:
            continue
        colour = next((c for p, c in colours.items() if topics[0].startswith(p)), "tab:gray")
        rad = 0.12 if xy[a][0] > xy[b][0] else -0.08
        ax.add_patch(FancyArrowPatch(xy[a], xy[b], arrowstyle="-|>", mutation_scale=14, color=colour, lw=1.2,
                                     alpha=0.75, connectionstyle=f"arc3,rad={rad}", shrinkA=42, shrinkB=42))
        mx, my = (xy[a][0] + xy[b][0]) / 2, (xy[a][1] + xy[b][1]) / 2 + (0.18 if rad > 0 else -0.1)
        label = "\n".join(_short(t) for t in topics[:4]) + (f"\n+{len(topics) - 4} more" if len(topics) > 4 else "")
        ax.text(mx, my, label, fontsize=6.5, color=colour, ha="center", va="center",
                bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.8))
    # the CAN buses are not ROS topics: drawn by hand between the driver and the motors
    if "/HDAS" in xy and "/r1_sim" in xy:
        ax.add_patch(FancyArrowPatch(xy["/HDAS"], xy["/r1_sim"], arrowstyle="<|-|>", mutation_scale=16,
                                     color="black", lw=2.5, shrinkA=42, shrinkB=42))
        ax.text((xy["/HDAS"][0] + xy["/r1_sim"][0]) / 2, xy["/HDAS"][1] + 0.25,
                "CAN: 4 buses\n(socketcan on the robot,\nr1sim in simulation)", ha="center", fontsize=8)
    for n, (x, y) in xy.items():
        label = n.lstrip("/").replace("_", "_\u200b")
        if n == "/r1_sim":
            label = "r1_sim\n(simulated motors,\nboards, physics)"
        ax.add_patch(FancyBboxPatch((x - 1.15, y - 0.38), 2.3, 0.76, boxstyle="round,pad=0.05",
                                    fc="#f4f4f4" if n != USER else "#e8f0ff", ec="black", lw=1))
        ax.text(x, y, label, ha="center", va="center", fontsize=8.5, wrap=True)
    for col, name in enumerate(["inputs", "pose control, remote", "controllers", "driver", "robot"]):
        ax.text(col * 3.4, 0.9, name, ha="center", fontsize=11, weight="bold", color="dimgray")
    ax.set_xlim(-1.6, max(x for x, _ in xy.values()) + 1.6)
    ax.set_ylim(min(y for _, y in xy.values()) - 0.9, 1.3)
    ax.axis("off")
    ax.set_title(title or "R1 stack: nodes and the topics between them (blue: targets, green: motor "
                 "commands, orange: feedback)", fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Draw the node graph of the stack on the current ROS master.")
    ap.add_argument("out", help="PNG file")
    ap.add_argument("--ignore", nargs="*", default=[], help="nodes to leave out (e.g. a test node)")
    args = ap.parse_args(argv)
    import rosgraph
    pubs, subs, _ = rosgraph.Master("/r1_node_graph").getSystemState()
    ignore = set(args.ignore) | {"/r1_node_graph", "/rosout"}
    ignore |= {n for _, ns in list(pubs) + list(subs) for n in ns if n.startswith(("/r1_wait_stack", "/r1_status",
                                                                                   "/r1_monitor", "/rostopic"))}
    draw(edges_from_state(pubs, subs, ignore), args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
