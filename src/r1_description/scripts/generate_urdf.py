#!/usr/bin/env python3
"""Write the R1 URDFs of this package from the vendor's kinematic facts.

The numbers (joint origins, axes, limits, masses, inertias) come from the facts
file of URDF r1_v2_1_0 (`shared/reference/r1_kinematics.yaml`); what the vendor
file lacks is added here and documented in docs/description.md:

* realistic speed limits (arms {3,3,3,5,5,5} rad/s, torso 1.5 rad/s; the
  vendor's 20.9/7.5/25.1 rad/s are placeholders),
* the torso joints' effort at what their motors give at peak, 200 N·m (the R1 hardware
  guide: 100 N·m rated, 200 N·m max; the vendor file's 100 is the rated figure, where
  every arm joint's effort is its motor's peak),
* simple collision primitives (cylinders read as capsules by the self-collision
  check, boxes) instead of meshes,
* frames for the chassis and torso IMUs, the chassis lidar, the five chassis
  cameras (+ optical frames), and base_footprint on the floor as the root link.

Run: generate_urdf.py FACTS_YAML OUT_DIR. The generated files are committed;
this script is how they were made and how to remake them after a fact changes.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Iterable

import numpy as np
import yaml

VARIANT = "r1_v2_1_0"
# Realistic joint speed limits [rad/s] (reference README: the vendor's are placeholders).
SPEED_OVERRIDE = {
    **{f"{s}_arm_joint{i}": v for s in ("left", "right") for i, v in zip(range(1, 7), (3, 3, 3, 5, 5, 5))},
    **{f"torso_joint{i}": 1.5 for i in range(1, 5)},
}
# The torque the motors give at peak [N·m], where the vendor file states another figure: the torso's
# 100 N·m is its motors' rated torque (the R1 hardware guide: 100 rated, 200 max), the arms' 40/27/7 their
# motors' peak. `effort` is the most a command may ask for (HDAS's clamp, the controllers' feed-forward):
# the peak, for as long as the motor's thermal protection allows (docs/description.md).
EFFORT_OVERRIDE = {f"torso_joint{i}": 200.0 for i in range(1, 5)}
WHEEL_RADIUS = 0.070      # from the wheel mesh (facts §3); the URDF itself does not state it
WHEEL_WIDTH = 0.047
FLOOR_Z = -0.0415         # wheel axle z 0.0285 minus the radius
WHEEL_EFFORT, WHEEL_SPEED = 20.0, 30.0   # [N·m], [rad/s] ≈ 2.1 m/s at the rim; chassis cap is 1.5 m/s

# The fingers' pads: closed (q = 0), the two pads meet at y = 0 of gripper_link (facts §2, from the meshes),
# so a finger's box has its inner face there: |y| of the finger joints' origins inward of the finger frame,
# and the stroke (the gap between the pads) is twice a finger's travel. Pad thickness: ours.
FINGER_PAD_Y = 0.013453   # [m] |y| of the *_gripper_finger_joint origins in gripper_link
FINGER_THICKNESS = 0.012  # [m]
# Collision/visual primitives per link, in the link frame (left side; right mirrors y).
#   ("cyl", a, b, r): cylinder from point a to point b (a capsule for self-collision)
#   ("box", centre, size)
ARM_SHAPES = {
    "arm_base_link": [("cyl", (0, 0, 0), (0, 0.045, 0), 0.045)],
    "arm_link1": [("cyl", (0, 0, 0), (0, 0.1061, 0), 0.045)],
    "arm_link2": [("cyl", (0, 0, 0), (-0.34928, 0.02, 0), 0.040)],
    "arm_link3": [("cyl", (0, 0, 0), (0.02735, 0.069767, 0), 0.040)],
    "arm_link4": [("cyl", (0, 0, 0), (0.2463, 0, 0), 0.035)],
    "arm_link5": [("cyl", (0, 0, 0), (0.058249, 0, 0), 0.035)],
    "arm_link6": [("cyl", (0, 0, 0), (0.045, 0, 0), 0.035)],
    "gripper_link": [("box", (-0.03, 0, 0), (0.07, 0.09, 0.05))],
    "gripper_finger_link1": [("box", (0.003, FINGER_THICKNESS / 2 - FINGER_PAD_Y, 0), (0.077, FINGER_THICKNESS, 0.02))],
    "gripper_finger_link2": [("box", (0.003, FINGER_PAD_Y - FINGER_THICKNESS / 2, 0), (0.077, FINGER_THICKNESS, 0.02))],
}
BODY_SHAPES = {
    "base_link": [("box", (-0.03, 0, 0.19), (0.66, 0.44, 0.20))],
    "torso_link1": [("cyl", (0, 0, 0), (0, 0, 0.4), 0.07)],
    "torso_link2": [("cyl", (0, 0, 0), (0, 0, 0.3), 0.065)],
    "torso_link3": [("cyl", (0, 0, 0), (0, 0, 0.09962), 0.07)],
    "torso_link4": [("box", (0, 0, 0.2), (0.16, 0.15, 0.34)), ("box", (0.03, 0, 0.47), (0.10, 0.20, 0.08))],
    **{f"steer_motor_link{i}": [("cyl", (0, 0, -0.06), (0, 0, 0.03), 0.04)] for i in (1, 2, 3)},
    **{f"wheel_motor_link{i}": [("cyl", (0, -WHEEL_WIDTH / 2, 0), (0, WHEEL_WIDTH / 2, 0), WHEEL_RADIUS)]
       for i in (1, 2, 3)},
}
COLOURS = {"base": (0.25, 0.25, 0.28, 1), "torso": (0.85, 0.85, 0.88, 1), "arm": (0.75, 0.75, 0.78, 1),
           "grip": (0.2, 0.2, 0.2, 1), "wheel": (0.1, 0.1, 0.1, 1)}
# Sensor frames the vendor URDF lacks: (name, parent, xyz, rpy); documented in docs/description.md.
OPT = (-math.pi / 2, 0.0, -math.pi / 2)   # body (x forward) -> optical (z forward, x right, y down)
EXTRA_FRAMES = [
    ("imu_chassis_link", "base_link", (0.0, 0.0, 0.15), (0, 0, 0)),
    ("imu_torso_link", "torso_link4", (0.0, 0.0, 0.10), (0, 0, 0)),
    ("lidar_chassis_left_link", "base_link", (0.27, 0.20, 0.30), (0, 0, math.pi / 4)),
    ("camera_chassis_front_left_link", "base_link", (0.30, 0.12, 0.26), (0, 0, 0.5)),
    ("camera_chassis_front_right_link", "base_link", (0.30, -0.12, 0.26), (0, 0, -0.5)),
    ("camera_chassis_left_link", "base_link", (0.0, 0.23, 0.26), (0, 0, math.pi / 2)),
    ("camera_chassis_right_link", "base_link", (0.0, -0.23, 0.26), (0, 0, -math.pi / 2)),
    ("camera_chassis_rear_link", "base_link", (-0.37, 0.0, 0.26), (0, 0, math.pi)),
] + [(f"camera_chassis_{n}_optical_frame", f"camera_chassis_{n}_link", (0, 0, 0), OPT)
     for n in ("front_left", "front_right", "left", "right", "rear")]


def f(x: float) -> str:
    return f"{x:.8g}"


def vec(v: Iterable[float]) -> str:
    return " ".join(f(x) for x in v)


def cylinder_pose(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, tuple[float, float, float], float]:
    """Origin and rpy that turn a URDF cylinder (along its z) into the segment a-b."""
    d = b - a
    length = float(np.linalg.norm(d))
    u = d / length
    pitch = math.atan2(math.hypot(u[0], u[1]), u[2])
    yaw = math.atan2(u[1], u[0]) if abs(math.sin(pitch)) > 1e-12 else 0.0
    return (a + b) / 2, (0.0, pitch, yaw), length


def shape_xml(kind_tag: str, shape: tuple, colour: str | None) -> str:
    material = f'<material name="{colour}"/>' if colour else ""
    if shape[0] == "cyl":
        _, a, b, r = shape
        centre, rpy, length = cylinder_pose(np.array(a, float), np.array(b, float))
        geom = f'<cylinder radius="{f(r)}" length="{f(length)}"/>'
    else:
        _, centre, size = shape
        rpy = (0.0, 0.0, 0.0)
        geom = f'<box size="{vec(size)}"/>'
    return (f'    <{kind_tag}><origin xyz="{vec(centre)}" rpy="{vec(rpy)}"/>'
            f"<geometry>{geom}</geometry>{material}</{kind_tag}>\n")


def mirror(shape: tuple) -> tuple:
    flip = lambda p: (p[0], -p[1], p[2])  # noqa: E731
    if shape[0] == "cyl":
        return ("cyl", flip(shape[1]), flip(shape[2]), shape[3])
    return ("box", flip(shape[1]), shape[2])


def shapes_of(link: str) -> tuple[list, str]:
    if link in BODY_SHAPES:
        colour = "wheel" if "wheel" in link else "base" if ("base" in link or "steer" in link) else "torso"
        return BODY_SHAPES[link], colour
    for side in ("left_", "right_"):
        if link.startswith(side) and link[len(side):] in ARM_SHAPES:
            shapes = ARM_SHAPES[link[len(side):]]
            # The right gripper's finger1 sits on -y like the left's finger2 (facts §2): mirror all.
            shapes = [mirror(s) for s in shapes] if side == "right_" else shapes
            return shapes, "grip" if "gripper" in link else "arm"
    return [], ""


def link_xml(link: dict | None, name: str) -> str:
    out = f'  <link name="{name}">\n'
    if link is not None:
        i = link["inertia"]
        out += (f'    <inertial><origin xyz="{vec(link["com_xyz"])}" rpy="0 0 0"/><mass value="{f(link["mass"])}"/>'
                f'<inertia ixx="{f(i["ixx"])}" ixy="{f(i["ixy"])}" ixz="{f(i["ixz"])}" iyy="{f(i["iyy"])}" '
                f'iyz="{f(i["iyz"])}" izz="{f(i["izz"])}"/></inertial>\n')
    shapes, colour = shapes_of(name)
    for s in shapes:
        out += shape_xml("visual", s, colour)
    for s in shapes:
        out += shape_xml("collision", s, None)
    return out + "  </link>\n"


def joint_xml(j: dict) -> str:
    kind = j["type"]
    out = (f'  <joint name="{j["name"]}" type="{kind}">\n'
           f'    <origin xyz="{vec(j["origin_xyz"])}" rpy="{vec(j["origin_rpy"])}"/>\n'
           f'    <parent link="{j["parent"]}"/>\n    <child link="{j["child"]}"/>\n')
    if kind != "fixed":
        out += f'    <axis xyz="{vec(j["axis"])}"/>\n'
    lim = j.get("limit")
    if kind == "continuous":
        out += f'    <limit effort="{f(WHEEL_EFFORT)}" velocity="{f(WHEEL_SPEED)}"/>\n'
    elif lim:
        vel = SPEED_OVERRIDE.get(j["name"], lim["velocity"])
        effort = EFFORT_OVERRIDE.get(j["name"], lim["effort"])
        out += (f'    <limit lower="{f(lim["lower"])}" upper="{f(lim["upper"])}" '
                f'effort="{f(effort)}" velocity="{f(vel)}"/>\n')
    return out + "  </joint>\n"


def build(facts: dict, root: str) -> str:
    groups = facts["variants"][VARIANT]["groups"]
    links = {link["name"]: link for g in groups.values() for link in g["links"]}
    joints = {j["name"]: j for g in groups.values() for j in g["joints"]}
    order = facts["variants"][VARIANT]["joint_order_in_file"]
    extra = [{"name": n.replace("_link", "").replace("_frame", "") + "_joint", "type": "fixed", "parent": p,
              "child": n, "origin_xyz": xyz, "origin_rpy": rpy} for n, p, xyz, rpy in EXTRA_FRAMES]
    # base_footprint (on the floor, REP 105) is the root, so base_link's inertia is not on the
    # root link (KDL cannot use an inertia there and robot_state_publisher warns).
    footprint = {"name": "base_footprint_joint", "type": "fixed", "parent": "base_footprint",
                 "child": "base_link", "origin_xyz": (0, 0, -FLOOR_Z), "origin_rpy": (0, 0, 0)}
    all_joints = [footprint] + [joints[n] for n in order] + extra
    if root != "base_footprint":  # floating variant: the subtree below `root` only
        keep, frontier = set(), {root}
        while frontier:
            nxt = {j["child"] for j in all_joints if j["parent"] in frontier}
            keep |= nxt
            frontier = nxt
        all_joints = [j for j in all_joints if j["child"] in keep]
    names = [root] + [j["child"] for j in all_joints]
    out = ['<?xml version="1.0"?>\n',
           f"<!-- Galaxea R1 ({VARIANT} kinematics{'' if root == 'base_footprint' else ', floating at ' + root}).\n"
           "     Generated by r1_description/scripts/generate_urdf.py from the vendor's kinematic facts;\n"
           "     see docs/description.md for what was added (speed limits, collision primitives, sensor frames). -->\n",
           '<robot name="r1">\n']
    for c, rgba in COLOURS.items():
        out.append(f'  <material name="{c}"><color rgba="{vec(rgba)}"/></material>\n')
    for n in names:
        out.append(link_xml(links.get(n), n))
    for j in all_joints:
        out.append(joint_xml(j))
    out.append("</robot>\n")
    return "".join(out)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__)
        return 2
    facts = yaml.safe_load(Path(argv[1]).read_text())
    out_dir = Path(argv[2])
    (out_dir / f"{VARIANT}.urdf").write_text(build(facts, "base_footprint"))
    (out_dir / f"{VARIANT}_floating.urdf").write_text(build(facts, "torso_link4"))
    print(f"wrote {VARIANT}.urdf and {VARIANT}_floating.urdf to {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
