"""Capsules from the URDF's collision primitives: the arm IK's collision shapes.

A capsule (segment + radius) is the cheapest shape with a smooth distance (the distances are
`mobiman.arm.kernel_capsules`). Cylinders become the capsule on their axis; boxes the capsule on
their longest axis that contains their cross-section.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np
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
