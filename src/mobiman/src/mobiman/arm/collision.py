"""The arm's self-collision model: capsules from the URDF's collision cylinders and boxes
(`mobiman.arm.capsules`), in the layouts of the compiled distances (`mobiman.arm.kernel_capsules`).

The arm's own links 2-6 and fingers move; the torso's last link, the head and the other arm are fixed
for a solve (the other arm where `set_other_arm` last placed it); the hand can also meet its own
shoulder and upper arm (`SELF_PAIRS`). `CollisionModel` answers: how clear is the arm at q
(`min_distance`), does it touch (`clear_at`), would the hand alone at a target touch (`hand_blocked`),
where is the last clear posture on a way into the body (`last_clear`); and it keeps the
temporal-coherence bound that spares most measurements in a stream (`still_clear`).
"""
from __future__ import annotations

import math
from typing import Optional, Tuple

import numpy as np
import pinocchio as pin

from mobiman.arm.capsules import capsules_from_urdf
from mobiman.arm.kernel_capsules import clearance, hand_touching
from mobiman.arm.kernel_chain import joint_frames
from mobiman.arm.model import ArmModel

MOVING_LINKS = ("arm_link2", "arm_link3", "arm_link4", "arm_link5", "arm_link6", "realsense_link",
                "gripper_finger_link1", "gripper_finger_link2")
# pairs inside one arm that can meet: the wrist and hand against the shoulder and upper arm
SELF_PAIRS = (("arm_link5", "arm_link2"), ("arm_link6", "arm_link2"), ("realsense_link", "arm_link2"),
              ("gripper_finger_link1", "arm_link2"), ("gripper_finger_link2", "arm_link2"),
              ("arm_link6", "arm_link3"), ("realsense_link", "arm_link3"),
              ("gripper_finger_link1", "arm_link3"), ("gripper_finger_link2", "arm_link3"))
BODY_LINKS = ("torso_link4", "zed_link")
# links fixed to the gripper frame: where they are follows from the target pose alone
HAND_LINKS = ("arm_link6", "realsense_link", "gripper_finger_link1", "gripper_finger_link2")
OTHER_ARM_STILL = 1e-4         # [rad] the other arm is placed again once a joint moved more than this


def _unprefixed(text: str, prefix: str) -> str:
    """`text` without `prefix` (str.removeprefix, which Python 3.8 lacks)."""
    return text[len(prefix):] if text.startswith(prefix) else text


class CollisionModel:
    """The capsules of one arm against its body, the other arm and itself.

    Arrays (the kernel layouts): `capsules` (moving, n x 8, in their joints' frames), `fixed`
    (m x 7, the model's root frame: the body first, then the other arm), `pairs` (self pairs,
    p x 2), `hand` (the hand's capsules in the gripper frame, rows a, b, radius); `links` names the
    moving capsules' links, `rho` [m] the lever arms of the temporal-coherence bound."""

    def __init__(self, urdf_xml: str, arm: ArmModel):
        self.arm = arm
        side, other = arm.side, ("right" if arm.side == "left" else "left")
        model = arm.model
        moving = capsules_from_urdf(urdf_xml, {f"{side}_{n}" for n in MOVING_LINKS})
        self.links = tuple(c.link for c in moving)
        rows, frames = [], []
        for c in moving:
            frame = model.frames[model.getFrameId(c.link)]
            frames.append(frame)
            a, b = frame.placement.act(c.a), frame.placement.act(c.b)    # in the joint's frame
            rows.append([frame.parentJoint - 1, *a, *b, c.radius])
        self.capsules = np.ascontiguousarray(np.array(rows, dtype=float).reshape(-1, 8))
        self.pairs = np.array([(i, k) for i, ci in enumerate(self.links) for k, ck in enumerate(self.links)
                               if (_unprefixed(ci, f"{side}_"), _unprefixed(ck, f"{side}_")) in SELF_PAIRS],
                              dtype=np.int64).reshape(-1, 2)
        self.rho = self._lever_arms(moving, frames)
        # the body's capsules never move; the other arm's are placed from its joints (`set_other_arm`)
        full, full_data = arm.full, arm.full_data
        pin.framesForwardKinematics(full, full_data, pin.neutral(full))
        body = []
        for c in capsules_from_urdf(urdf_xml, set(BODY_LINKS)):
            m = full_data.oMf[full.getFrameId(c.link)]
            body.append([*m.act(c.a), *m.act(c.b), c.radius])
        self._n_body = len(body)
        self._other = capsules_from_urdf(urdf_xml, {f"{other}_{n}" for n in MOVING_LINKS})
        self._other_fids = [full.getFrameId(c.link) for c in self._other]
        self._other_idx_q = [full.joints[full.getJointId(n)].idx_q for n in arm.other_names]
        self._q_full0 = pin.neutral(full)
        self.fixed = np.zeros((len(body) + len(self._other), 7))
        self.fixed[:len(body)] = np.array(body, dtype=float).reshape(-1, 7)
        self._other_q: Optional[np.ndarray] = None     # where the other arm was last placed
        # the temporal-coherence bound: (posture, a lower bound on every pair's distance there)
        self.bound: Optional[Tuple[np.ndarray, float]] = None
        self.set_other_arm(np.zeros(6))
        self.hand = self._hand_capsules(moving)

    def _lever_arms(self, moving, frames) -> np.ndarray:
        """ρ_j: how far any capsule end point can be from joint j's origin, in any posture [m].

        A point at distance r from a joint's axis moves at most r·|Δq_j| when the joint turns, so a
        posture change Δq moves every capsule point by at most Σ ρ_j |Δq_j| (the triangle inequality
        along the chain bounds r by the link offsets out to the point)."""
        m = self.arm.model
        link = [0.0] + [float(np.linalg.norm(m.jointPlacements[j].translation)) for j in range(1, m.njoints)]
        rho = np.zeros(m.njoints - 1)
        for c, frame in zip(moving, frames):
            reach = max(float(np.linalg.norm(frame.placement.act(c.a))),
                        float(np.linalg.norm(frame.placement.act(c.b))))
            parent = frame.parentJoint
            for j in range(1, parent + 1):     # joints j ≤ parent carry this capsule
                rho[j - 1] = max(rho[j - 1], sum(link[j + 1:parent + 1]) + reach)
        return rho

    def _hand_capsules(self, moving) -> np.ndarray:
        """The hand's capsules (HAND_LINKS) in the gripper frame: rows a, b, radius."""
        arm = self.arm
        pin.framesForwardKinematics(arm.model, arm.data, pin.neutral(arm.model))
        oMe = arm.data.oMf[arm.ee]
        hand = {f"{arm.side}_{n}" for n in HAND_LINKS}
        rows = []
        for c in moving:
            if c.link in hand:
                eMf = oMe.actInv(arm.data.oMf[arm.model.getFrameId(c.link)])
                rows.append([*eMf.act(c.a), *eMf.act(c.b), c.radius])
        return np.ascontiguousarray(np.array(rows, dtype=float).reshape(-1, 7))

    def set_other_arm(self, q_other: np.ndarray) -> None:
        """The other arm's joints [rad], for its capsules. An arm that moved no joint more than
        OTHER_ARM_STILL since it was last placed is left where it is (its capsules are then off by at
        most Σρ·1e-4 rad ≈ 0.34 mm, under the 2 mm contact margin); placing it again forgets the
        temporal-coherence bound."""
        q_other = np.asarray(q_other, float)
        if self._other_q is not None and float(np.abs(q_other - self._other_q).max()) <= OTHER_ARM_STILL:
            return
        self._other_q = q_other.copy()
        self.bound = None
        full, data = self.arm.full, self.arm.full_data
        q_full = self._q_full0.copy()
        q_full[self._other_idx_q] = q_other
        pin.forwardKinematics(full, data, q_full)
        for n, (c, fid) in enumerate(zip(self._other, self._other_fids)):
            m = pin.updateFramePlacement(full, data, fid)
            self.fixed[self._n_body + n, 0:3] = m.act(c.a)
            self.fixed[self._n_body + n, 3:6] = m.act(c.b)
            self.fixed[self._n_body + n, 6] = c.radius

    def min_distance(self, q: np.ndarray) -> float:
        """The smallest capsule distance of the arm at q [m] (negative: penetration), every pair measured."""
        return clearance(joint_frames(np.asarray(q, float), self.arm.chain.chain), self.capsules, self.fixed,
                         self.pairs, -math.inf)

    def clear_at(self, q: np.ndarray) -> bool:
        """No capsule pair touches at q (stops at the first that does)."""
        return clearance(joint_frames(np.asarray(q, float), self.arm.chain.chain), self.capsules, self.fixed,
                         self.pairs, 0.0) > 0.0

    def hand_blocked(self, target: pin.SE3) -> bool:
        """The hand at `target` (torso_link4) is inside the torso, the head or the other arm. The
        hand's links are fixed to the gripper frame, so such a target collides in every posture."""
        oMe = self.arm.oMt * target
        # (C order: pinocchio's rotations are Fortran-ordered, a second compiled variant of the kernel)
        return bool(hand_touching(np.ascontiguousarray(oMe.rotation), oMe.translation, self.hand, self.fixed))

    def last_clear(self, clear: np.ndarray, blocked: np.ndarray, halvings: int = 8) -> np.ndarray:
        """The last clear posture on the straight joint-space way from `clear` (clear) to `blocked`
        (in collision), to 1/2^halvings of the way; `blocked` itself when it is clear."""
        if self.clear_at(blocked):
            return blocked.copy()
        lo, hi = 0.0, 1.0
        for _ in range(halvings):
            mid = 0.5 * (lo + hi)
            if self.clear_at(clear + mid * (blocked - clear)):
                lo = mid
            else:
                hi = mid
        return clear + lo * (blocked - clear)

    # -- temporal coherence ---------------------------------------------------------------------
    def still_clear(self, q: np.ndarray, margin: float) -> bool:
        """No capsule pair can be within `margin` [m] at q: the clearance measured at an earlier
        posture, less twice the furthest any capsule point can have moved since (both capsules of a
        pair may move). A stream moves little per solve, so the capsules are measured again only
        every few solves while they are well apart."""
        if self.bound is None:
            return False
        q_ref, lower = self.bound
        return lower - 2.0 * float(self.rho @ np.abs(q - q_ref)) > margin

    def measured_within(self, q: np.ndarray, margin: float) -> bool:
        """The exact clearance at q (kept as the bound's new reference) is below `margin` [m]."""
        self.bound = (np.array(q, float), self.min_distance(q))
        return self.bound[1] < margin

    def within(self, q: np.ndarray, margin: float) -> bool:
        """Some capsule pair is within `margin` [m] at q: the bound cannot rule it out and the exact
        clearance confirms it."""
        return not self.still_clear(q, margin) and self.measured_within(q, margin)
