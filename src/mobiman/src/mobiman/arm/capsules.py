"""Capsules from the URDF's collision primitives, and capsule distances.

A capsule (segment + radius) is the cheapest shape with a smooth distance: the distance of
two capsules is the distance of their segments minus the radii, and its gradient is the
unit vector between the segments' closest points. Cylinders become the capsule on their
axis; boxes the capsule on their longest axis that contains their cross-section.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import coal
import numpy as np
import pinocchio as pin
from scipy.spatial.transform import Rotation


@dataclass(frozen=True)
class Capsule:
    link: str
    a: np.ndarray         # segment end points in the link's frame
    b: np.ndarray
    radius: float


def _origin(element: ET.Element | None) -> tuple[np.ndarray, np.ndarray]:
    if element is None:
        return np.zeros(3), np.eye(3)
    xyz = np.array([float(v) for v in element.get("xyz", "0 0 0").split()])
    rpy = [float(v) for v in element.get("rpy", "0 0 0").split()]
    return xyz, Rotation.from_euler("xyz", rpy).as_matrix()


def capsules_from_urdf(urdf_xml: str, links: set[str] | None = None) -> list[Capsule]:
    """One capsule per cylinder or box collision element of `links` (all links when None)."""
    out: list[Capsule] = []
    for link in ET.fromstring(urdf_xml).iter("link"):
        name = link.get("name", "")
        if links is not None and name not in links:
            continue
        for col in link.iter("collision"):
            xyz, rot = _origin(col.find("origin"))
            geom = col.find("geometry")
            if geom is None:
                continue
            cyl, box = geom.find("cylinder"), geom.find("box")
            if cyl is not None:
                half, radius = float(cyl.get("length", 0)) / 2, float(cyl.get("radius", 0))
                axis = rot[:, 2]
            elif box is not None:
                size = np.array([float(v) for v in box.get("size", "0 0 0").split()])
                k = int(np.argmax(size))
                others = np.delete(size, k)
                radius = float(np.linalg.norm(others) / 2)
                half = max(0.0, size[k] / 2 - radius / 2)
                axis = rot[:, k]
            else:
                continue                        # meshes, spheres: not used by the R1 URDF's arms
            out.append(Capsule(name, xyz - half * axis, xyz + half * axis, radius))
    return out


def segment_distance_py(p1, q1, p2, q2) -> tuple[float, tuple[float, float, float], tuple[float, float, float]]:
    """Closest points of segments p1-q1 and p2-q2 (3-sequences of floats) and their distance:
    (distance, point on 1, point on 2). Ericson, Real-Time Collision Detection 5.1.9.

    On Python floats, not numpy: for one pair of 3-vectors numpy's per-call overhead is most of
    the cost, and the IK runs this on every residual evaluation."""
    p1x, p1y, p1z = p1
    p2x, p2y, p2z = p2
    d1x, d1y, d1z = q1[0] - p1x, q1[1] - p1y, q1[2] - p1z
    d2x, d2y, d2z = q2[0] - p2x, q2[1] - p2y, q2[2] - p2z
    rx, ry, rz = p1x - p2x, p1y - p2y, p1z - p2z
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    f = d2x * rx + d2y * ry + d2z * rz
    eps = 1e-12
    if a <= eps and e <= eps:
        s = t = 0.0
    elif a <= eps:
        s, t = 0.0, min(max(f / e, 0.0), 1.0)
    else:
        c = d1x * rx + d1y * ry + d1z * rz
        if e <= eps:
            s, t = min(max(-c / a, 0.0), 1.0), 0.0
        else:
            b = d1x * d2x + d1y * d2y + d1z * d2z
            denom = a * e - b * b
            s = min(max((b * f - c * e) / denom, 0.0), 1.0) if denom > eps else 0.0
            t = (b * s + f) / e
            if t < 0.0:
                s, t = min(max(-c / a, 0.0), 1.0), 0.0
            elif t > 1.0:
                s, t = min(max((b - c) / a, 0.0), 1.0), 1.0
    ax, ay, az = p1x + s * d1x, p1y + s * d1y, p1z + s * d1z
    bx, by, bz = p2x + t * d2x, p2y + t * d2y, p2z + t * d2z
    return math.sqrt((ax - bx) ** 2 + (ay - by) ** 2 + (az - bz) ** 2), (ax, ay, az), (bx, by, bz)


def segment_pose(a: np.ndarray, b: np.ndarray) -> pin.SE3:
    """The pose of a coal capsule (centred, along its z axis) on the segment a-b."""
    axis = np.asarray(b, float) - np.asarray(a, float)
    length = float(np.linalg.norm(axis))
    rot = np.eye(3)
    if length > 1e-12:
        rot = pin.Quaternion.FromTwoVectors(np.array([0.0, 0.0, 1.0]), axis / length).matrix()
    return pin.SE3(rot, (np.asarray(a, float) + np.asarray(b, float)) / 2)


class ContactCheck:
    """Does any capsule pair touch at q, and how close is the closest pair? The same capsules and
    pairs as the Python distances, as coal capsules in a pinocchio GeometryModel: the whole check
    runs in C++ (~7-11 us; measuring every pair in Python cost ~120 us). The Python distances stay
    for the pairs that need barrier rows (their closest points and gradients).

    `moving`: (capsule, frame id) on the arm's model; `fixed`: (a, b, radius) in the model's
    world frame (the torso, the head, the other arm), movable by `set_fixed_poses`; `self_pairs`:
    index pairs of `moving` that can meet."""

    def __init__(self, model, moving: list[tuple[Capsule, int]], fixed: list[tuple[np.ndarray, np.ndarray, float]],
                 self_pairs: list[tuple[int, int]]):
        self.geometry = pin.GeometryModel()
        for c, fid in moving:
            frame = model.frames[fid]
            length = float(np.linalg.norm(c.b - c.a))          # coal.Capsule(radius, length of the segment)
            self.geometry.addGeometryObject(pin.GeometryObject(
                c.link, frame.parentJoint, fid, frame.placement * segment_pose(c.a, c.b),
                coal.Capsule(c.radius, length)))
        self._fixed = []
        for n, (a, b, r) in enumerate(fixed):
            length = float(np.linalg.norm(np.asarray(b) - np.asarray(a)))
            self._fixed.append(self.geometry.addGeometryObject(pin.GeometryObject(
                f"fixed_{n}", 0, 0, segment_pose(a, b), coal.Capsule(float(r), length))))
        for i in range(len(moving)):
            for k in self._fixed:
                self.geometry.addCollisionPair(pin.CollisionPair(i, k))
        for i, k in self_pairs:
            self.geometry.addCollisionPair(pin.CollisionPair(i, k))
        self.model = model
        self.model_data = model.createData()          # its own: a check leaves the caller's kinematics alone
        self.data = pin.GeometryData(self.geometry)

    def set_fixed_poses(self, indices, poses: list[pin.SE3]) -> None:
        """New capsule poses (`segment_pose`'s, in the world frame) of the fixed capsules at these
        indices (their order in `fixed`): the others stay."""
        objects = self.geometry.geometryObjects
        for n, pose in zip(indices, poses):
            objects[self._fixed[n]].placement = pose

    def min_distance(self, q: np.ndarray) -> float:
        """The smallest distance over all pairs at q (negative: they overlap), exact."""
        best = pin.computeDistances(self.model, self.model_data, self.geometry, self.data, q)
        return float(self.data.distanceResults[best].min_distance)

    def touching(self, q: np.ndarray) -> bool:
        """Any pair in contact at q."""
        return bool(pin.computeCollisions(self.model, self.model_data, self.geometry, self.data, q, True))
