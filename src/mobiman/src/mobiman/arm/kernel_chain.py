"""The arm as a chain of 6 revolute joints for the compiled IK passes (numba): forward kinematics,
the hand's Jacobian, the joints' frames, and the singularity barrier on |det J|.

The chain's constants come from the pinocchio model (`ArmChain.from_model`), nothing from the URDF
by hand; pytest holds `forward` to pinocchio's kinematics and Jacobians.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from numba import njit

from mobiman.arm.kernel_linalg import adjugate

# the scratch array of `forward_into` (SCRATCH_ROWS x 3): a 3x3 temporary, then per joint j (0-5) its
# origin and unit axis in the model's root frame, then its frame's rotation (3 rows each)
SCR_ORIGIN, SCR_AXIS, SCR_ROTATION, SCRATCH_ROWS = 3, 9, 15, 33


@njit(cache=True)
def forward_into(q: np.ndarray, chain: np.ndarray, R: np.ndarray, p: np.ndarray, J: np.ndarray,
                 scratch: np.ndarray) -> None:
    """`forward` written into R (3x3), p (3) and J (6x6); the joints' origins, axes and rotations into
    scratch (SCRATCH_ROWS x 3, the SCR_* layout)."""
    T = scratch[0:3]
    for i in range(3):
        p[i] = 0.0
        for k in range(3):
            R[i, k] = 1.0 if i == k else 0.0
    for j in range(6):
        c = chain[j]
        for i in range(3):                       # p += R t_j;  T = R M_j
            r0, r1, r2 = R[i, 0], R[i, 1], R[i, 2]
            p[i] += r0 * c[9] + r1 * c[10] + r2 * c[11]
            for k in range(3):
                T[i, k] = r0 * c[k] + r1 * c[3 + k] + r2 * c[6 + k]
        x, y, z = c[12], c[13], c[14]
        for i in range(3):                       # the joint's own rotation leaves its axis where it is
            scratch[SCR_AXIS + j, i] = T[i, 0] * x + T[i, 1] * y + T[i, 2] * z
            scratch[SCR_ORIGIN + j, i] = p[i]
        co, si = math.cos(q[j]), math.sin(q[j])  # R = T exp(axis q) (Rodrigues)
        t = 1.0 - co
        m00, m01, m02 = t * x * x + co, t * x * y - si * z, t * x * z + si * y
        m10, m11, m12 = t * x * y + si * z, t * y * y + co, t * y * z - si * x
        m20, m21, m22 = t * x * z - si * y, t * y * z + si * x, t * z * z + co
        for i in range(3):
            t0, t1, t2 = T[i, 0], T[i, 1], T[i, 2]
            R[i, 0] = t0 * m00 + t1 * m10 + t2 * m20
            R[i, 1] = t0 * m01 + t1 * m11 + t2 * m21
            R[i, 2] = t0 * m02 + t1 * m12 + t2 * m22
            for k in range(3):
                scratch[SCR_ROTATION + 3 * j + i, k] = R[i, k]
    c = chain[6]                                 # the hand frame on joint 6
    for i in range(3):
        r0, r1, r2 = R[i, 0], R[i, 1], R[i, 2]
        p[i] += r0 * c[9] + r1 * c[10] + r2 * c[11]
        for k in range(3):
            T[i, k] = r0 * c[k] + r1 * c[3 + k] + r2 * c[6 + k]
    for i in range(3):
        for k in range(3):
            R[i, k] = T[i, k]
    for j in range(6):
        wx, wy, wz = scratch[SCR_AXIS + j, 0], scratch[SCR_AXIS + j, 1], scratch[SCR_AXIS + j, 2]
        dx = p[0] - scratch[SCR_ORIGIN + j, 0]
        dy = p[1] - scratch[SCR_ORIGIN + j, 1]
        dz = p[2] - scratch[SCR_ORIGIN + j, 2]
        J[0, j], J[1, j], J[2, j] = wy * dz - wz * dy, wz * dx - wx * dz, wx * dy - wy * dx
        J[3, j], J[4, j], J[5, j] = wx, wy, wz


@njit(cache=True)
def forward(q: np.ndarray, chain: np.ndarray):
    """The hand's rotation, position and 6x6 Jacobian (rows v | w, world-aligned at the hand,
    pinocchio's LOCAL_WORLD_ALIGNED) in the model's root frame.

    chain: 7 x 15 rows of (rotation 3x3 row-major, translation, axis): joint j's placement in
    its parent and its unit axis (rows 0-5), then the hand frame's placement in joint 6 (row 6)."""
    R, p, J = np.empty((3, 3)), np.empty(3), np.empty((6, 6))
    forward_into(q, chain, R, p, J, np.empty((SCRATCH_ROWS, 3)))
    return R, p, J


@njit(cache=True)
def joint_frames(q: np.ndarray, chain: np.ndarray) -> np.ndarray:
    """`forward_into`'s scratch at q: every joint's origin, axis and rotation in the model's root frame."""
    scratch = np.empty((SCRATCH_ROWS, 3))
    forward_into(q, chain, np.empty((3, 3)), np.empty(3), np.empty((6, 6)), scratch)
    return scratch


@njit(cache=True)
def singularity_row(scratch: np.ndarray, weight: float, thr: float, row: np.ndarray) -> float:
    """The barrier weight·(thr − |det J|)/thr on the arm's 6x6 Jacobian (its manipulability: the
    determinant is the same for any point of the hand and in any frame): its value, its gradient
    written into `row`; 0 (row untouched) when |det J| ≥ thr. scratch: `forward_into`'s at q.

    The gradient is Jacobi's formula, ∂det/∂q_k = tr(adj(J) ∂J/∂q_k), on the spatial Jacobian whose
    columns are the joint twists S_j = (v_j, ω_j) = (o_j × ω_j, ω_j): ∂S_j/∂q_k = ad(S_k) S_j for k < j.
    With a_j = (a_v, a_ω) the j-th row of adj(J), triple products turn the double sum into suffix
    sums: ∂det/∂q_k = ω_k · Σ_{j>k} (v_j × a_v + ω_j × a_ω) + v_k · Σ_{j>k} ω_j × a_v."""
    Jw = np.empty((6, 6))
    for j in range(6):
        o, w = scratch[SCR_ORIGIN + j], scratch[SCR_AXIS + j]
        Jw[0, j], Jw[1, j], Jw[2, j] = o[1] * w[2] - o[2] * w[1], o[2] * w[0] - o[0] * w[2], o[0] * w[1] - o[1] * w[0]
        Jw[3, j], Jw[4, j], Jw[5, j] = w[0], w[1], w[2]
    det = np.linalg.det(Jw)
    if abs(det) >= thr:
        return 0.0
    adj = det * np.linalg.inv(Jw) if abs(det) > 1e-9 else adjugate(Jw)
    sx, sy = np.zeros(3), np.zeros(3)
    sign = 1.0 if det >= 0 else -1.0
    for k in range(5, -1, -1):
        v0, v1, v2, w0, w1, w2 = Jw[0, k], Jw[1, k], Jw[2, k], Jw[3, k], Jw[4, k], Jw[5, k]
        row[k] = -weight / thr * sign * (w0 * sx[0] + w1 * sx[1] + w2 * sx[2] + v0 * sy[0] + v1 * sy[1] + v2 * sy[2])
        a0, a1, a2, b0, b1, b2 = adj[k, 0], adj[k, 1], adj[k, 2], adj[k, 3], adj[k, 4], adj[k, 5]
        sx[0] += v1 * a2 - v2 * a1 + w1 * b2 - w2 * b1
        sx[1] += v2 * a0 - v0 * a2 + w2 * b0 - w0 * b2
        sx[2] += v0 * a1 - v1 * a0 + w0 * b1 - w1 * b0
        sy[0] += w1 * a2 - w2 * a1
        sy[1] += w2 * a0 - w0 * a2
        sy[2] += w0 * a1 - w1 * a0
    return weight * (thr - abs(det)) / thr


@dataclass(frozen=True)
class ArmChain:
    """The arm's constants in the layout the compiled passes take."""

    chain: np.ndarray      # 7 x 15 (`forward`)
    bounds: np.ndarray     # 4 x 6: lower, upper, lower + 1e-12, upper - 1e-12 ("on the bound")

    @classmethod
    def from_model(cls, model: pin.Model, hand_frame: int) -> "ArmChain | None":
        """From a pinocchio model of 6 revolute joints in a chain (the hand's frame on the last);
        None for any other model."""
        if model.nq != 6 or model.nv != 6 or list(model.parents) != [0, 0, 1, 2, 3, 4, 5] \
                or model.frames[hand_frame].parentJoint != 6:
            return None
        data = model.createData()
        pin.computeJointJacobians(model, data, np.zeros(6))
        chain = np.zeros((7, 15))
        for j in range(1, 7):
            s = pin.getJointJacobian(model, data, j, pin.LOCAL)[:, j - 1]   # the joint's motion in its frame
            if np.linalg.norm(s[:3]) > 1e-12 or abs(np.linalg.norm(s[3:]) - 1.0) > 1e-12:
                return None                  # not a revolute joint about an axis through its origin
            M = model.jointPlacements[j]
            chain[j - 1] = np.concatenate((M.rotation.reshape(-1), M.translation, s[3:]))
        F = model.frames[hand_frame].placement
        chain[6, :12] = np.concatenate((F.rotation.reshape(-1), F.translation))
        lo, hi = model.lowerPositionLimit, model.upperPositionLimit
        return cls(np.ascontiguousarray(chain), np.ascontiguousarray(np.array([lo, hi, lo + 1e-12, hi - 1e-12])))
