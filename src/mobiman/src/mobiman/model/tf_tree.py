"""The robot's TF tree from the URDF and joint positions, ROS-free: robot_state_publisher's job.

The pose estimator publishes it from the joint state it merges and checks itself, instead of ROS's
robot_state_publisher, which reads /joint_states, a topic anyone may publish on (docs/safety.md).

`TfTree(urdf)` reads every joint's parent and child links, origin and axis. `fixed()` gives the
transforms of the fixed joints (published once, latched, on /tf_static); `moving(positions)` those of
the revolute, continuous and prismatic joints at the given positions (joints without a position are
left out, as robot_state_publisher does). A transform is (parent, child, translation xyz, rotation
quaternion xyzw) of the child link's frame in the parent link's frame.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Mapping, Tuple

import numpy as np
from scipy.spatial.transform import Rotation

Transform = Tuple[str, str, Tuple[float, float, float], Tuple[float, float, float, float]]   # (3.8: typing's)
MOVING = ("revolute", "continuous", "prismatic")


@dataclass(frozen=True)
class UrdfJoint:
    name: str
    kind: str
    parent: str
    child: str
    xyz: tuple[float, float, float]           # origin translation
    quat: tuple[float, float, float, float]   # origin rotation (x, y, z, w)
    axis: tuple[float, float, float]          # unit axis, in the joint's (child's) frame


def _vector3(element: ET.Element | None, attribute: str, default: str, what: str) -> tuple[float, float, float]:
    """The three numbers of an element's attribute (xyz, rpy; `default` where the element or the
    attribute is missing); ValueError naming `what` for another count."""
    text = element.get(attribute) if element is not None else None
    values = [float(x) for x in (text or default).split()]
    if len(values) != 3:
        raise ValueError(f"{what}: expected 3 numbers, got {text!r}")
    return values[0], values[1], values[2]


def _link(joint: ET.Element, tag: str) -> str:
    """The link a joint's <parent> or <child> names; ValueError when it names none."""
    el = joint.find(tag)
    link = el.get("link") if el is not None else None
    if link is None:
        raise ValueError(f"joint {joint.get('name')}: no {tag} link")
    return link


def _multiply(a: tuple[float, ...], b: tuple[float, ...]) -> tuple[float, float, float, float]:
    """Hamilton product of quaternions (x, y, z, w)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)


class TfTree:
    """Every joint of a URDF as a transform between its parent and child links.

    Raises xml.etree.ElementTree.ParseError on XML it cannot parse, ValueError on a moving joint with a
    zero axis and on a joint without a name, a parent or child link, or three numbers in an xyz, rpy
    or axis (what the URDF format asks)."""

    def __init__(self, urdf_xml: str):
        joints = []
        for j in ET.fromstring(urdf_xml).iter("joint"):
            kind, name = j.get("type", ""), j.get("name")
            if kind in ("floating", "planar"):
                continue                      # (robot_state_publisher leaves them out too)
            if name is None:
                raise ValueError("a joint without a name")
            origin, axis_el = j.find("origin"), j.find("axis")
            xyz = _vector3(origin, "xyz", "0 0 0", f"joint {name} origin xyz")
            rpy = _vector3(origin, "rpy", "0 0 0", f"joint {name} origin rpy")
            axis = np.array(_vector3(axis_el, "xyz", "1 0 0", f"joint {name} axis"))
            norm = float(np.linalg.norm(axis))
            if kind in MOVING and not norm > 0:
                raise ValueError(f"joint {name}: zero axis")
            qx, qy, qz, qw = (float(x) for x in Rotation.from_euler("xyz", rpy).as_quat())   # URDF rpy: fixed axes
            unit = axis / (norm if norm > 0 else 1.0)
            joints.append(UrdfJoint(name, kind, _link(j, "parent"), _link(j, "child"), xyz, (qx, qy, qz, qw),
                                    (float(unit[0]), float(unit[1]), float(unit[2]))))
        self.joints = joints
        self.moving_joints = [j for j in joints if j.kind in MOVING]
        self._rotations = {j.name: Rotation.from_quat(j.quat).as_matrix() for j in self.moving_joints}

    def fixed(self) -> list[Transform]:
        """The fixed joints' transforms."""
        return [(j.parent, j.child, j.xyz, j.quat) for j in self.joints if j.kind == "fixed"]

    def moving(self, positions: Mapping[str, float]) -> list[Transform]:
        """The moving joints' transforms at `positions` (joint name -> rad or m); finite values only."""
        out = []
        for j in self.moving_joints:
            q = positions.get(j.name)
            if q is None or not math.isfinite(q):
                continue
            ax, ay, az = j.axis
            if j.kind == "prismatic":
                shift = self._rotations[j.name] @ np.array((ax * q, ay * q, az * q))
                xyz = (j.xyz[0] + float(shift[0]), j.xyz[1] + float(shift[1]), j.xyz[2] + float(shift[2]))
                out.append((j.parent, j.child, xyz, j.quat))
            else:
                s = math.sin(q / 2.0)
                out.append((j.parent, j.child, j.xyz, _multiply(j.quat, (ax * s, ay * s, az * s, math.cos(q / 2.0)))))
        return out
