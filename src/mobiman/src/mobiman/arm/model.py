"""One R1 arm as the IK sees it: the pinocchio model of its 6-joint chain, its limits and frames, the
compiled chain constants, and its reach.

`ArmModel(urdf_xml, side)` reduces the robot to `{side}_arm_joint1..6` (every other joint locked at
zero): poses are of `{side}_gripper_link` relative to `torso_link4`, which is fixed in that model
(the torso's own joints do not change a pose in its last link).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from mobiman.arm.kernel_chain import ArmChain

REACH_SLACK = 0.002             # [m] a wrist centre this far beyond the reach is surely out of it
MAX_TARGET_COORDINATE = 1e4     # [m] beyond this a pose is no target (and its products overflow)


def finite_pose(pose: pin.SE3) -> bool:
    """Finite, with a translation within MAX_TARGET_COORDINATE (entry by entry: no sum that overflows)."""
    m = pose.homogeneous
    return bool(np.isfinite(m).all() and np.abs(m[:3, 3]).max() <= MAX_TARGET_COORDINATE)


class ArmModel:
    """The arm's kinematic model: `model`/`data` (pinocchio, the arm's 6 joints), `full`/`full_data`
    (the whole robot, for the other arm's placement), `lower`/`upper` [rad], the hand frame `ee`,
    torso_link4 in the model's root `oMt`, and the compiled chain `chain`.

    Raises ValueError for a side other than left/right or a URDF whose arm is not a chain of 6
    revolute joints named `{side}_arm_joint1..6`."""

    def __init__(self, urdf_xml: str, side: str):
        if side not in ("left", "right"):
            raise ValueError(f"side must be left or right, not {side!r}")
        self.side = side
        other = "right" if side == "left" else "left"
        self.full = pin.buildModelFromXML(urdf_xml)
        self.full_data = self.full.createData()
        self.joint_names = tuple(f"{side}_arm_joint{i}" for i in range(1, 7))
        self.other_names = tuple(f"{other}_arm_joint{i}" for i in range(1, 7))
        keep = set(self.joint_names)
        lock = [j for j in range(1, self.full.njoints) if self.full.names[j] not in keep]
        self.model = pin.buildReducedModel(self.full, lock, pin.neutral(self.full))
        self.data = self.model.createData()
        if tuple(self.model.names[1:]) != self.joint_names:
            raise ValueError(f"unexpected arm joints in the URDF: {list(self.model.names[1:])}")
        self.lower = self.model.lowerPositionLimit.copy()
        self.upper = self.model.upperPositionLimit.copy()
        self.mid = (self.lower + self.upper) / 2
        self.ee = self.model.getFrameId(f"{side}_gripper_link")
        pin.framesForwardKinematics(self.model, self.data, pin.neutral(self.model))
        self.oMt = self.data.oMf[self.model.getFrameId("torso_link4")].copy()   # torso fixed in this model
        chain = ArmChain.from_model(self.model, self.ee)
        if chain is None:
            raise ValueError(f"the {side} arm in the URDF is not a chain of 6 revolute joints")
        self.chain = chain
        self.wrist_in_j5 = self._axes_meeting_point()

    def fk(self, q: np.ndarray) -> pin.SE3:
        """{side}_gripper_link relative to torso_link4."""
        pin.framesForwardKinematics(self.model, self.data, np.asarray(q, float))
        return self.oMt.actInv(self.data.oMf[self.ee])

    def errors(self, q: np.ndarray, target: pin.SE3) -> tuple[float, float]:
        """Position [m] and orientation [rad] error of the hand at q against `target` (torso_link4);
        inf for a target that `finite_pose` refuses."""
        if not finite_pose(target):
            return math.inf, math.inf
        pose = self.fk(q)
        return (float(np.linalg.norm(pose.translation - target.translation)),
                float(np.linalg.norm(pin.log3(target.rotation.T @ pose.rotation))))

    def wrist_centre(self, q: np.ndarray) -> np.ndarray:
        """Where the axes of joints 4-6 meet, in torso_link4."""
        pin.forwardKinematics(self.model, self.data, np.asarray(q, float))
        return self.oMt.actInv(self.data.oMi[5].act(self.wrist_in_j5))

    def _axes_meeting_point(self) -> np.ndarray:
        """The point nearest to the axes of joints 4, 5 and 6 (least squares), in joint 5's frame."""
        m, d = self.model, self.data
        pin.computeJointJacobians(m, d, self.mid)
        lhs, rhs = np.zeros((3, 3)), np.zeros(3)
        for j in (4, 5, 6):
            axis = pin.getJointJacobian(m, d, j, pin.LOCAL_WORLD_ALIGNED)[3:, j - 1]
            proj = np.eye(3) - np.outer(axis, axis) / (axis @ axis)
            lhs += proj
            rhs += proj @ d.oMi[j].translation
        return d.oMi[5].actInv(np.linalg.solve(lhs, rhs))


@dataclass(frozen=True)
class Reach:
    """How far the arm reaches: the shoulder point and the wrist centre in the gripper frame
    (torso_link4; m), and the largest distance between the two (`limit`, inf where the model is not
    of the kind that has one)."""

    shoulder: np.ndarray
    wrist_offset: np.ndarray
    limit: float

    def wrist_distance(self, target: pin.SE3) -> float:
        """How far from the shoulder the wrist centre must be for the gripper to be at `target` [m]."""
        d = target.rotation @ self.wrist_offset + target.translation - self.shoulder
        return math.sqrt(d @ d)

    def beyond(self, wrist_distance: float) -> bool:
        """No posture puts the wrist centre that far from the shoulder (the reach plus a slack)."""
        return wrist_distance > self.limit + REACH_SLACK

    @classmethod
    def measure(cls, arm: ArmModel, candidates: np.ndarray, rng: np.random.Generator) -> "Reach":
        """Measured on the model: the spherical wrist makes the wrist centre a fixed point of the
        gripper frame, and joint 2's origin lies on joint 1's axis, so no posture puts a target's
        wrist centre further from that shoulder point than the reach: the largest distance over
        `candidates` (postures), polished by L-BFGS-B. Where the model breaks either assumption
        (checked on 200 random postures from `rng`) the limit is inf."""
        qs = rng.uniform(arm.lower, arm.upper, size=(200, 6))
        shoulders, offsets = [], []
        for q in qs:
            wc = arm.wrist_centre(q)
            shoulders.append(arm.oMt.actInv(arm.data.oMi[2].translation))
            offsets.append(arm.fk(q).actInv(wc))
        shoulder, offset = shoulders[0], offsets[0]
        if np.ptp(np.array(shoulders), axis=0).max() > 1e-6 or np.ptp(np.array(offsets), axis=0).max() > 1e-4:
            return cls(shoulder, offset, math.inf)

        def minus_distance(q: np.ndarray) -> float:
            return -float(np.linalg.norm(arm.wrist_centre(q) - shoulder))

        dists = [-minus_distance(q) for q in candidates]
        from scipy.optimize import minimize  # only here: the rest of the solver does without it
        best = minimize(minus_distance, candidates[int(np.argmax(dists))], method="L-BFGS-B",
                        bounds=list(zip(arm.lower, arm.upper)))
        return cls(shoulder, offset, max(max(dists), -float(best.fun)))
