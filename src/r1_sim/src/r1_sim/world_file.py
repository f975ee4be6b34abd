"""`r1_sim_world`: the simulated world as one MJCF file, to open in MuJoCo's viewer or any MJCF tool.

    rosrun r1_sim r1_sim_world --scene room --out /tmp/r1_world.xml
    python3 -m mujoco.viewer --mjcf=/tmp/r1_world.xml

The file is what the simulator builds at start (r1_sim.mjcf.world_xml: the robot from the URDF on its
planar base, in the scene, fingers tied, torso brakes, IMU sensors), at the robot's zero pose; the viewer
simulates it on its own (nothing drives the motors there). ROS-free: the URDF and the scene are files.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional

from r1_sim import mjcf

# r1_description's URDF beside this package: in the source tree (src/), or in the install space's share
DEFAULT_URDF = next((p for p in (mjcf.WORLDS_DIR.parents[1] / "r1_description" / "urdf" / "r1_v2_1_0.urdf",)
                     if p.is_file()), Path("r1_v2_1_0.urdf"))
TIES = [(f"{side}_gripper_finger_joint2", f"{side}_gripper_finger_joint1") for side in ("left", "right")]
BRAKES = [f"torso_joint{k}" for k in range(1, 5)]


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
    except (OSError, mjcf.WorldError) as e:
        print(f"r1_sim_world: {e}", file=sys.stderr)
        return 1
    if args.out == "-":
        sys.stdout.write(xml + "\n")
    else:
        Path(args.out).write_text(xml + "\n")
        print(f"r1_sim_world: wrote {args.out} (open it: python3 -m mujoco.viewer --mjcf={args.out})")
    return 0
