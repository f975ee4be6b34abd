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


def _floats(text: str | None, default: str) -> tuple[float, ...]:
    return tuple(float(x) for x in (text or default).split())


def _multiply(a: tuple[float, ...], b: tuple[float, ...]) -> tuple[float, float, float, float]:
    """Hamilton product of quaternions (x, y, z, w)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)


class TfTree:
    """Every joint of a URDF as a transform between its parent and child links.

    Raises xml.etree.ElementTree.ParseError on XML it cannot parse, ValueError on a moving joint with a
    zero axis."""

    def __init__(self, urdf_xml: str):
        joints = []
        for j in ET.fromstring(urdf_xml).iter("joint"):
            kind = j.get("type", "")
            if kind in ("floating", "planar"):
                continue                      # (robot_state_publisher leaves them out too)
            origin = j.find("origin")
            xyz = _floats(origin.get("xyz") if origin is not None else None, "0 0 0")
            rpy = _floats(origin.get("rpy") if origin is not None else None, "0 0 0")
            axis_el = j.find("axis")
            axis = np.array(_floats(axis_el.get("xyz") if axis_el is not None else None, "1 0 0"))
            norm = float(np.linalg.norm(axis))
            if kind in MOVING and not norm > 0:
                raise ValueError(f"joint {j.get('name')}: zero axis")
            quat = Rotation.from_euler("xyz", rpy).as_quat()      # URDF rpy: fixed axes x, y, z
            joints.append(UrdfJoint(j.get("name"), kind, j.find("parent").get("link"), j.find("child").get("link"),
                                    tuple(xyz), tuple(float(x) for x in quat),
                                    tuple(float(x) for x in axis / (norm if norm > 0 else 1.0))))
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
