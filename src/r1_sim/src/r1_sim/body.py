"""The robot's own body as the sensors see it: URDF collision primitives placed by pinocchio, ROS-free.

Why the collision model: the URDF's collision geometry is boxes and cylinders only (no meshes),
exactly what `r1_sim.raycast` intersects, and it is what the self-collision checks use, so the
cameras see the same arm the planners avoid. Colours come from the URDF's visual materials (the
visual and collision elements share their names, `<link>_<k>`).

`RobotBody.set_state` takes the simulator's ground truth (true joint positions by name, true planar
base pose in the world) and everything else (sensor frame poses, primitive placements) follows
from one forward-kinematics pass.
"""
from __future__ import annotations

import math
from typing import Mapping

import numpy as np
import pinocchio as pin

from r1_sim.scene import BOX, CYLINDER, SPHERE, Shapes

ROBOT_REFLECTIVITY = 60.0


def planar_pose(x: float, y: float, yaw: float) -> pin.SE3:
    """World <- root (base_footprint) for a base on the floor at (x, y) heading yaw."""
    return pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, yaw), np.array([x, y, 0.0]))


class RobotBody:
    """Pinocchio model + collision geometry of the URDF, placed at a joint state and base pose."""

    def __init__(self, urdf_xml: str):
        self.model = pin.buildModelFromXML(urdf_xml)
        self.data = self.model.createData()
        self.geom = pin.buildGeomFromUrdfString(self.model, urdf_xml, pin.GeometryType.COLLISION)
        self.geom_data = pin.GeometryData(self.geom)
        visual = pin.buildGeomFromUrdfString(self.model, urdf_xml, pin.GeometryType.VISUAL)
        colours = {g.name: np.asarray(g.meshColor[:3], dtype=float) for g in visual.geometryObjects}
        kinds, sizes, cols, names = [], [], [], []
        for g in self.geom.geometryObjects:
            shape = g.geometry
            kind_name = type(shape).__name__
            if kind_name == "Box":
                kinds.append(BOX)
                sizes.append(np.asarray(shape.halfSide, dtype=float))
            elif kind_name == "Cylinder":
                kinds.append(CYLINDER)
                sizes.append(np.array([shape.radius, shape.radius, shape.halfLength]))
            elif kind_name == "Sphere":
                kinds.append(SPHERE)
                sizes.append(np.full(3, shape.radius))
            else:
                raise ValueError(f"collision geometry {g.name}: {kind_name} is not a box, cylinder or sphere")
            cols.append(colours.get(g.name, np.array([0.7, 0.7, 0.7])))
            names.append(g.name)
        n = len(kinds)
        self._shapes = Shapes(np.array(kinds, dtype=int), np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 3)),
                              np.array(sizes).reshape(n, 3), np.array(cols).reshape(n, 3),
                              np.full(n, ROBOT_REFLECTIVITY), names)
        self.q = pin.neutral(self.model)
        self.base = pin.SE3.Identity()
        self._dirty = True

    def set_state(self, positions: Mapping[str, float], base_pose: tuple[float, float, float]) -> list[str]:
        """True joint positions (by name; others keep their value) and planar base pose.

        Returns the names that are not joints of the model (ignored), so a caller can report them.
        """
        unknown = []
        for name, value in positions.items():
            if not self.model.existJointName(name):
                unknown.append(name)
                continue
            joint = self.model.joints[self.model.getJointId(name)]
            if joint.nq == 1:
                self.q[joint.idx_q] = value
            elif joint.nq == 2:              # continuous joint: (cos, sin)
                self.q[joint.idx_q:joint.idx_q + 2] = (math.cos(value), math.sin(value))
        self.base = planar_pose(*base_pose)
        self._dirty = True
        return unknown

    def _update(self) -> None:
        if self._dirty:
            pin.forwardKinematics(self.model, self.data, self.q)
            pin.updateGeometryPlacements(self.model, self.data, self.geom, self.geom_data)
            self._dirty = False

    def frame_pose(self, frame: str) -> pin.SE3:
        """World pose of a URDF frame (link) at the current state."""
        if not self.model.existFrame(frame):
            raise KeyError(f"frame {frame!r} is not in the URDF")
        self._update()
        fid = self.model.getFrameId(frame)
        return self.base * pin.updateFramePlacement(self.model, self.data, fid)

    def shapes(self) -> Shapes:
        """The collision primitives placed in the world at the current state."""
        self._update()
        s = self._shapes
        R0, p0 = self.base.rotation, self.base.translation
        for i, M in enumerate(self.geom_data.oMg):
            s.rotation[i] = R0 @ M.rotation
            s.position[i] = R0 @ M.translation + p0
        return s
