"""Where the IK's passes start: the closed-form postures for a target, the stream's previous solution,
and postures from a table of random ones near the target's pose.

* closed form (`closed_form_seeds`): every posture that meets the target, up to 8
  (`mobiman.arm.closed_form`), nearest a reference posture first;
* previous: the caller's (the stream's last solution, or a cold solve's `seed`), clipped to the limits;
* random (`SeedTable`): TABLE_SIZE postures uniform within the limits (a fixed RNG), looked up by
  their hand pose in a KD-tree; `wrist_flip` gives the spherical wrist's other solution of one.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np
import pinocchio as pin
from scipy.spatial import cKDTree

from mobiman.arm.closed_form import ClosedFormArm
from mobiman.arm.model import ArmModel

TABLE_SIZE = 4000


class SeedTable:
    """Random postures within the limits and their hand poses: `q` (TABLE_SIZE x 6)."""

    def __init__(self, arm: ArmModel, rng: np.random.Generator, size: int = TABLE_SIZE):
        self.q = rng.uniform(arm.lower, arm.upper, size=(size, 6))
        self._tree = cKDTree(np.array([self.features(arm.fk(q)) for q in self.q]))

    @staticmethod
    def features(pose: pin.SE3) -> np.ndarray:
        """A pose as a point for the KD-tree: the position [m] and two rotation columns scaled by 0.15 m."""
        return np.concatenate([pose.translation, 0.15 * pose.rotation[:, :2].ravel()])

    def near(self, target: pin.SE3, k: int) -> np.ndarray:
        """The k postures whose hand poses are nearest `target` (torso_link4), nearest first (k x 6)."""
        _, idx = self._tree.query(self.features(target), k=k)
        return self.q[np.atleast_1d(idx)]


def closed_form_seeds(closed_form: Optional[ClosedFormArm], arm: ArmModel, target: pin.SE3,
                      near: Optional[np.ndarray]) -> List[np.ndarray]:
    """The arm's closed-form postures for `target` (torso_link4), nearest to `near` (else the middle
    of the joint ranges) first, by the sum of joint differences; none without a closed form."""
    if closed_form is None:
        return []
    ref = arm.mid if near is None else near
    return sorted(closed_form.postures(arm.oMt * target), key=lambda q: float(np.abs(q - ref).sum()))


def previous_seed(arm: ArmModel, q: np.ndarray) -> np.ndarray:
    """A previous posture as a seed: clipped to the joint limits."""
    return np.clip(np.asarray(q, float), arm.lower, arm.upper)


def wrist_flip(q: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> Optional[np.ndarray]:
    """The spherical wrist's other solution of q, (q4 ± π, −q5, q6 ± π) (the hand at the same pose),
    or None when it is outside the limits."""
    flip = q.copy()
    flip[3] -= np.pi * np.sign(flip[3] or 1.0)
    flip[4] = -flip[4]
    flip[5] -= np.pi * np.sign(flip[5] or 1.0)
    if np.all(flip >= lower) and np.all(flip <= upper):
        return flip
    return None
