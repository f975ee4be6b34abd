"""`r1_sim_world`: the simulated world as one MJCF file, to open in MuJoCo's viewer or any MJCF tool.

    rosrun r1_sim r1_sim_world --scene room --out /tmp/r1_world.xml
    python3 -m mujoco.viewer --mjcf=/tmp/r1_world.xml

The file is what the simulator builds at start (r1_sim.mjcf.world_xml: the robot from the URDF on its
planar base, in the scene, fingers tied, torso brakes, IMU sensors), at the robot's zero pose; the viewer
simulates it on its own (nothing drives the motors there). ROS-free: the URDF and the scene are files.
For the viewer the file also frames the robot (`viewer_framing`): MuJoCo's free camera starts at the
model's `statistic` centre and extent, which for a closed room put it outside the walls, looking at the
ceiling.
"""
from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import List, Optional

from r1_sim import mjcf

# r1_description's URDF beside this package: in the source tree (src/), or in the install space's share
DEFAULT_URDF = next((p for p in (mjcf.WORLDS_DIR.parents[1] / "r1_description" / "urdf" / "r1_v2_1_0.urdf",)
                     if p.is_file()), Path("r1_v2_1_0.urdf"))
TIES = [(f"{side}_gripper_finger_joint2", f"{side}_gripper_finger_joint1") for side in ("left", "right")]
BRAKES = [f"torso_joint{k}" for k in range(1, 5)]


def viewer_framing(xml: str) -> str:
    """`xml` with the viewer's free camera on the robot: `<statistic center extent>` around it (0.9 m up,
    1.6 m across) and `<visual><global azimuth elevation>` from its front left, each only where the world
    sets none. Changes nothing the physics reads (the simulator does not write these)."""
    root = ET.fromstring(xml)
    if root.find("statistic") is None:
        ET.SubElement(root, "statistic", center="0 0 0.9", extent="1.6")
    visual = root.find("visual")
    if visual is None:
        visual = ET.SubElement(root, "visual")
    glob = visual.find("global")
    if glob is None:
        glob = ET.SubElement(visual, "global")
    glob.attrib.setdefault("azimuth", "150")
    glob.attrib.setdefault("elevation", "-20")
    return ET.tostring(root, encoding="unicode")


def main(argv: Optional[List[str]] = None) -> int:
    """Write the world's MJCF; exit 1 with the reason when the scene or URDF cannot be made into one."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scene", default="room", help="a scene of r1_sim/worlds by name, or an MJCF file's path")
    ap.add_argument("--urdf", default=str(DEFAULT_URDF), help="the robot's URDF")
    ap.add_argument("--out", default="-", help="the MJCF file to write ('-': standard output)")
    args = ap.parse_args(argv)
    try:
        xml = mjcf.world_xml(Path(args.urdf).read_text(), mjcf.scene_path(args.scene).read_text(),
                             ties=TIES, brakes=BRAKES)
        mjcf.load_world(xml)                     # what the simulator would refuse, refused here too
        xml = viewer_framing(xml)
    except (OSError, mjcf.WorldError) as e:
        print(f"r1_sim_world: {e}", file=sys.stderr)
        return 1
    if args.out == "-":
        sys.stdout.write(xml + "\n")
    else:
        Path(args.out).write_text(xml + "\n")
        print(f"r1_sim_world: wrote {args.out} (open it: python3 -m mujoco.viewer --mjcf={args.out})")
    return 0
