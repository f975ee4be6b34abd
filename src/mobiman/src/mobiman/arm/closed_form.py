"""Closed-form postures of the R1 arm for a gripper pose: seeds for the cold solve.

The arm is a product of exponentials with joint 2's origin on joint 1's axis (a shoulder where
the two axes meet), joint 3 parallel to joint 2, and a wrist whose three axes (4, 5, 6) almost
meet in one point (0.5 mm apart on the R1). So, as for a PUMA-type arm, a target splits into
three textbook sub-problems (Paden-Kahan, Murray/Li/Sastry ch. 3): joint 3 from the distance
shoulder -> wrist centre, joints 1-2 rotating that vector onto the target's, joints 4-6 from the
remaining rotation: up to 2 x 2 x 2 = 8 postures. The wrist's small offsets make them
approximate (sub-millimetre); the solver polishes a seed to the exact pose in a few steps.

Everything is measured on the pinocchio model at q = 0 (axes, points), nothing is typed in
from the URDF: `ClosedFormArm.from_model` returns None where the model breaks the assumptions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

# The sub-problems work on 3-tuples of floats: numpy's per-call cost on 3 values was most of a solve.
LIMIT_SLACK = 0.02    # [rad] the wrist axes miss each other by 0.5 mm: a posture this near a limit may be inside it


def _dot(a, b) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a, b) -> tuple[float, float, float]:
    return a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]


def rotation_angle(axis, p, q) -> float:
    """Sub-problem 1: the angle about the unit `axis` (through the origin) that turns p toward q."""
    ap, aq = _dot(axis, p), _dot(axis, q)
    pp = (p[0] - axis[0] * ap, p[1] - axis[1] * ap, p[2] - axis[2] * ap)
    qq = (q[0] - axis[0] * aq, q[1] - axis[1] * aq, q[2] - axis[2] * aq)
    return math.atan2(_dot(axis, _cross(pp, qq)), _dot(pp, qq))


def two_rotations(w1, w2, p, q) -> list[tuple[float, float]]:
    """Sub-problem 2: (θ1, θ2) with exp(w1 θ1) exp(w2 θ2) p = q, for unit axes w1, w2 through the
    origin, not parallel. Two answers, or one (the closest) when q cannot be reached exactly."""
    c = _dot(w1, w2)
    den = c * c - 1.0
    w2p, w1q = _dot(w2, p), _dot(w1, q)
    alpha = (c * w2p - w1q) / den
    beta = (c * w1q - w2p) / den
    cross = _cross(w1, w2)
    g2 = (_dot(p, p) - alpha ** 2 - beta ** 2 - 2.0 * alpha * beta * c) / _dot(cross, cross)
    gammas = (math.sqrt(g2), -math.sqrt(g2)) if g2 > 1e-12 else (0.0,)
    out = []
    for g in gammas:
        z = tuple(alpha * w1[i] + beta * w2[i] + g * cross[i] for i in range(3))
        out.append((rotation_angle(w1, z, q), rotation_angle(w2, p, z)))
    return out


def _axis_rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    return pin.exp3(axis * angle)


@dataclass(frozen=True)
class ClosedFormArm:
    """The arm's screw axes and points at q = 0, in the model's world frame."""

    axes: np.ndarray          # 6 x 3 unit axes
    shoulder: np.ndarray      # where axes 1 and 2 meet
    elbow: np.ndarray         # a point on axis 3
    wrist0: np.ndarray        # the wrist centre at q = 0
    wrist_in_ee: np.ndarray   # the wrist centre in the end-effector frame
    ee_rotation0: np.ndarray  # the end effector's rotation at q = 0
    lower: np.ndarray
    upper: np.ndarray
    # derived by __post_init__ (tuples and floats: numpy's per-call cost on 3 values was most of a solve)
    _ax: list[tuple[float, ...]] = field(init=False, repr=False, compare=False)       # the axes as tuples
    _arm: np.ndarray = field(init=False, repr=False, compare=False)                    # shoulder -> elbow
    _forearm: np.ndarray = field(init=False, repr=False, compare=False)                # elbow -> wrist centre
    _const: float = field(init=False, repr=False, compare=False)                       # joint 3's law of cosines
    _r: float = field(init=False, repr=False, compare=False)
    _phi: float = field(init=False, repr=False, compare=False)
    _limits: list[tuple[float, float, float]] = field(init=False, repr=False, compare=False)   # (lo, hi, middle)

    def __post_init__(self) -> None:
        """What joint 3's law of cosines needs, fixed for the arm: |shoulder -> wrist centre|² =
        const + c1 cos q3 + c2 sin q3 (elbow arm A, forearm B split along and across axis 3)."""
        u = self.axes[2]
        A, B = self.elbow - self.shoulder, self.wrist0 - self.elbow
        b_perp = B - u * (u @ B)
        k = A + u * (u @ B)
        c1, c2 = 2.0 * (k @ b_perp), 2.0 * float(np.dot(k, _cross(u, b_perp)))
        for name, value in (("_ax", [tuple(x) for x in self.axes.tolist()]), ("_arm", A), ("_forearm", B),
                            ("_const", float(k @ k + b_perp @ b_perp)), ("_r", math.hypot(c1, c2)),
                            ("_phi", math.atan2(c2, c1)),
                            ("_limits", [(lo, hi, 0.5 * (lo + hi))
                                         for lo, hi in zip(self.lower.tolist(), self.upper.tolist())])):
            object.__setattr__(self, name, value)

    @classmethod
    def from_model(cls, model: pin.Model, ee_frame: int, wrist_in_j5: np.ndarray,
                   tolerance: float = 1e-3) -> "ClosedFormArm | None":
        """Measure the arm on a 6-joint pinocchio model; None if it is not of this kind."""
        if model.nq != 6 or model.nv != 6:
            return None
        data = model.createData()
        q0 = np.zeros(6)
        pin.computeJointJacobians(model, data, q0)
        pin.updateFramePlacements(model, data)
        axes = np.array([pin.getJointJacobian(model, data, j, pin.LOCAL_WORLD_ALIGNED)[3:, j - 1]
                         for j in range(1, 7)])
        if not np.allclose(np.linalg.norm(axes, axis=1), 1.0, atol=1e-9):
            return None
        shoulder = data.oMi[2].translation.copy()
        on_axis1 = np.linalg.norm(_cross(axes[0], shoulder - data.oMi[1].translation))
        parallel23 = np.linalg.norm(_cross(axes[1], axes[2]))
        wrist0 = data.oMi[5].act(wrist_in_j5)
        oMe = data.oMf[ee_frame]
        # the wrist axes pass (nearly) through the wrist centre
        off = max(float(np.linalg.norm(_cross(axes[j], wrist0 - data.oMi[j + 1].translation))) for j in (3, 4, 5))
        if on_axis1 > 1e-6 or parallel23 > 1e-6 or off > tolerance \
                or np.linalg.norm(_cross(axes[0], axes[1])) < 1e-3 or np.linalg.norm(_cross(axes[3], axes[4])) < 1e-3 \
                or abs(axes[4] @ axes[5]) > 1e-6:
            return None
        return cls(axes, shoulder, data.oMi[3].translation.copy(), wrist0, oMe.actInv(wrist0),
                   oMe.rotation.copy(), model.lowerPositionLimit.copy(), model.upperPositionLimit.copy())

    def postures(self, target: pin.SE3) -> list[np.ndarray]:
        """The postures (up to 8) within the joint limits that put the end effector near `target`
        (world frame); the closest approach where it is out of reach.

        A posture outside the limits is left out: it is another branch of the arm, not a seed of
        this one (polishing it clipped to a limit was 10 wasted steps each, the slowest part of a
        cold solve)."""
        a, ax = self.axes, self._ax
        v = (target.act(self.wrist_in_ee) - self.shoulder).tolist()     # the wrist centre from the shoulder
        # joint 3 from |shoulder -> wrist centre| = |v| (law of cosines about axis 3, __post_init__)
        rhs = _dot(v, v) - self._const
        spread = math.acos(max(-1.0, min(1.0, rhs / self._r))) if self._r > 1e-12 else 0.0
        out = []
        r_goal = target.rotation @ self.ee_rotation0.T
        fit = self._fit
        for t3 in {self._phi + spread, self._phi - spread}:
            if (q3 := fit(t3, 2)) is None:          # a branch outside the limits goes no further
                continue
            r3 = _axis_rotation(a[2], q3)
            w = (self._arm + r3 @ self._forearm).tolist()
            for t1, t2 in two_rotations(ax[0], ax[1], w, v):
                if (q1 := fit(t1, 0)) is None or (q2 := fit(t2, 1)) is None:
                    continue
                m = (_axis_rotation(a[0], q1) @ _axis_rotation(a[1], q2) @ r3).T @ r_goal   # = R4 R5 R6
                m6 = (m @ a[5]).tolist()
                for t4, t5 in two_rotations(ax[3], ax[4], ax[5], m6):
                    if (q4 := fit(t4, 3)) is None or (q5 := fit(t5, 4)) is None:
                        continue
                    rest = (_axis_rotation(a[3], q4) @ _axis_rotation(a[4], q5)).T @ m
                    q6 = fit(rotation_angle(ax[5], ax[4], (rest @ a[4]).tolist()), 5)   # axis 5 is across axis 6
                    if q6 is not None:
                        out.append(np.array([q1, q2, q3, q4, q5, q6]))
        return out

    def _fit(self, angle: float, joint: int) -> float | None:
        """The angle turned by 2π into the joint's limits where that fits (nearest the middle);
        None when it is outside them by more than LIMIT_SLACK (within it: clipped, the polish
        that follows is exact)."""
        lo, hi, mid = self._limits[joint]
        angle += 2.0 * math.pi * round((mid - angle) / (2.0 * math.pi))
        if angle < lo - LIMIT_SLACK or angle > hi + LIMIT_SLACK:
            return None
        return min(max(angle, lo), hi)
