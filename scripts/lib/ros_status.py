"""Print what is running on the ROS master: nodes, topics with types, and TF coverage.

Used by scripts/run once the stack is launched. With --wait-tf it first waits
until every link of robot_description has a transform to the root link, and
fails (exit 1) if that does not happen in time.
"""
from __future__ import annotations

import argparse
import sys
import time
import xml.etree.ElementTree as ET

import rosgraph
import rospy
import tf2_ros


def wait_for_master(timeout: float) -> rosgraph.Master:
    master = rosgraph.Master("/r1_status")
    deadline = time.monotonic() + timeout
    while True:
        try:
            master.getPid()
            return master
        except Exception:
            if time.monotonic() > deadline:
                raise SystemExit(f"no ROS master at {rosgraph.get_master_uri()} after {timeout:.0f} s") from None
            time.sleep(0.3)


def wait_for_tf(timeout: float) -> tuple[int, list[str]]:
    """Seconds-bounded check that every URDF link has a TF to the root; returns (n_links, missing)."""
    deadline = time.monotonic() + timeout
    while not rospy.has_param("/robot_description") and time.monotonic() < deadline:
        time.sleep(0.2)
    urdf = ET.fromstring(rospy.get_param("/robot_description"))
    links = [link.get("name") for link in urdf.iter("link")]
    children = {j.find("child").get("link") for j in urdf.iter("joint")}
    root = next(link for link in links if link not in children)
    buf = tf2_ros.Buffer()
    tf2_ros.TransformListener(buf)
    missing = links
    while missing and time.monotonic() < deadline:
        missing = [link for link in missing if not buf.can_transform(root, link, rospy.Time(0))]
        time.sleep(0.2)
    return len(links), missing


def hosted_nodes(nodes: list[str]) -> dict[str, list[str]]:
    """The nodes each `mobiman controller_host` runs in its process (its `~modules`, `kind:name`), by host."""
    out = {}
    for n in nodes:
        modules = rospy.get_param(f"{n}/modules", None)
        if isinstance(modules, list):
            names = [str(m).split(":", 1)[-1] for m in modules]
            out[n] = sorted(m if m.startswith("/") else "/" + m for m in names)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--wait-tf", type=float, default=0.0, metavar="SECONDS")
    args = ap.parse_args()
    master = wait_for_master(max(args.wait_tf, 10.0))
    rospy.init_node("r1_status", anonymous=True, disable_signals=True)
    n_links, missing = wait_for_tf(args.wait_tf) if args.wait_tf else (0, [])
    state = master.getSystemState()
    nodes = sorted({n for _, ns in state[0] + state[1] for n in ns} - {rospy.get_name()})
    types = dict(master.getTopicTypes())
    print(f"ROS master {rosgraph.get_master_uri()}")
    hosted = hosted_nodes(nodes)
    print(f"nodes ({len(nodes)}{f', {len(hosted)} of them hosting others' if hosted else ''}):")
    for n in nodes:
        print(f"  {n}")
        for h in hosted.get(n, []):
            print(f"  {h} (hosted in {n})")
    print("published topics:")
    for topic, pubs in sorted(state[0]):
        pubs = [p for p in pubs if p != rospy.get_name()]
        if pubs:
            print(f"  {topic:<28} {types.get(topic, '?'):<32} from {', '.join(pubs)}")
    if args.wait_tf:
        if missing:
            print(f"TF: {len(missing)} of {n_links} links have no transform: {', '.join(missing)}")
            return 1
        print(f"TF: all {n_links} links of robot_description have a transform")
    return 0


if __name__ == "__main__":
    sys.exit(main())
