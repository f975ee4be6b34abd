"""The arm IK's task-only pass, compiled with numba: the streamed solve's hot loop.

`ArmIK`'s task pass (position and orientation only, box bounds = joint limits) is a damped
Gauss-Newton loop over a 6-joint chain. In Python each iteration is ~60 small numpy and
pinocchio calls, and their per-call cost (~1-3 us each) was most of a streamed solve: 5x
the arithmetic. Here the same loop runs as one compiled function: forward kinematics and the
hand's Jacobian as a product of the joints' placements and rotations (6 revolute joints in a
chain), the error as log3 of the rotation, its Jacobian Jlog3, the singularity-robust damping
floor, the active set on the joint limits and the accept/reject rule, step for step as
`ArmIK._lm(soft=False)` (the tests compare the two and the kinematics with pinocchio's).

The chain's constants come from the pinocchio model (`ArmChain.from_model`), nothing from
the URDF by hand; a model that is not a chain of 6 revolute joints gets None and ArmIK keeps
its Python loop. The collision rows are not here: the caller measures the answer's clearance
(capsules in C++, `mobiman.capsules.ContactCheck`) and runs the Python loop with the rows
when it is too close.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from numba import njit

# settings vector layout (ArmChain.settings)
S_WP, S_WR, S_LAMBDA0, S_TOL_P, S_TOL_R, S_STALL_RATIO, S_SR_SIGMA, S_SR_DAMPING = range(8)
NEAR_PI = 1e-6      # [rad] log3 takes the axis from the symmetric part this close to a half turn


@njit(cache=True)
def _rot(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation by `angle` about the unit `axis` (Rodrigues)."""
    x, y, z = axis[0], axis[1], axis[2]
    c, s = math.cos(angle), math.sin(angle)
    t = 1.0 - c
    r = np.empty((3, 3))
    r[0, 0], r[0, 1], r[0, 2] = t * x * x + c, t * x * y - s * z, t * x * z + s * y
    r[1, 0], r[1, 1], r[1, 2] = t * x * y + s * z, t * y * y + c, t * y * z - s * x
    r[2, 0], r[2, 1], r[2, 2] = t * x * z - s * y, t * y * z + s * x, t * z * z + c
    return r


@njit(cache=True)
def forward(q: np.ndarray, chain: np.ndarray):
    """The hand's rotation, position and 6x6 Jacobian (rows v | w, world-aligned at the hand,
    pinocchio's LOCAL_WORLD_ALIGNED) in the model's root frame.

    chain: 7 x 15 rows of (rotation 3x3 row-major, translation, axis): joint j's placement in
    its parent and its unit axis (rows 0-5), then the hand frame's placement in joint 6 (row 6)."""
    R = np.eye(3)
    p = np.zeros(3)
    origins = np.empty((6, 3))
    axes = np.empty((6, 3))
    for j in range(6):
        placement = chain[j, 0:9].reshape(3, 3)
        p = p + R @ chain[j, 9:12]
        R = R @ placement
        axis = chain[j, 12:15]
        axes[j] = R @ axis                   # the joint's own rotation leaves its axis where it is
        origins[j] = p
        R = R @ _rot(axis, q[j])
    p_hand = p + R @ chain[6, 9:12]
    R_hand = R @ chain[6, 0:9].reshape(3, 3)
    J = np.empty((6, 6))
    for j in range(6):
        w = axes[j]
        d = p_hand - origins[j]
        J[0, j] = w[1] * d[2] - w[2] * d[1]
        J[1, j] = w[2] * d[0] - w[0] * d[2]
        J[2, j] = w[0] * d[1] - w[1] * d[0]
        J[3, j], J[4, j], J[5, j] = w[0], w[1], w[2]
    return R_hand, p_hand, J


@njit(cache=True)
def log3(R: np.ndarray) -> np.ndarray:
    """The rotation vector of R (pinocchio's log3), robust near 0 and near a half turn."""
    c = min(1.0, max(-1.0, 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)))
    v = np.empty(3)
    v[0], v[1], v[2] = 0.5 * (R[2, 1] - R[1, 2]), 0.5 * (R[0, 2] - R[2, 0]), 0.5 * (R[1, 0] - R[0, 1])
    s = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    theta = math.atan2(s, c)
    if theta < 1e-4:
        return v * (1.0 + theta * theta / 6.0)          # theta / sin(theta)
    if math.pi - theta > NEAR_PI and s > 1e-4:
        return v * (theta / s)
    # near a half turn sin(theta) carries no axis: (R + Rᵀ)/2 - cI = (1 - c) a aᵀ
    i = 0
    for k in range(1, 3):
        if R[k, k] > R[i, i]:
            i = k
    a = np.empty(3)
    for k in range(3):
        a[k] = 0.5 * (R[k, i] + R[i, k]) - (c if k == i else 0.0)
    a /= math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
    if a[0] * v[0] + a[1] * v[1] + a[2] * v[2] < 0.0:
        a = -a
    return a * theta


@njit(cache=True)
def jlog3(w: np.ndarray) -> np.ndarray:
    """d log3(R exp(ω)) / dω at ω = 0 for R = exp(w): the inverse right Jacobian of SO(3)
    (pinocchio's Jlog3)."""
    theta2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    theta = math.sqrt(theta2)
    if theta < 1e-2:            # the closed form below cancels to ~1e-16 / theta² there
        k = 1.0 / 12.0 + theta2 * (1.0 / 720.0 + theta2 / 30240.0)
    else:
        k = 1.0 / theta2 - (1.0 + math.cos(theta)) / (2.0 * theta * math.sin(theta))
    W = np.zeros((3, 3))
    W[0, 1], W[0, 2], W[1, 2] = -w[2], w[1], -w[0]
    W[1, 0], W[2, 0], W[2, 1] = w[2], -w[1], w[0]
    return np.eye(3) + 0.5 * W + k * (W @ W)


@njit(cache=True)
def _residuals(q, goal_rt, goal_p, chain, wp, wr):
    R, p, J = forward(q, chain)
    E = goal_rt @ R
    e_rot = log3(E)
    r = np.empty(6)
    dp = p - goal_p
    r[0:3] = dp * wp
    r[3:6] = e_rot * wr
    pe = math.sqrt(dp[0] * dp[0] + dp[1] * dp[1] + dp[2] * dp[2])
    re = math.sqrt(e_rot[0] * e_rot[0] + e_rot[1] * e_rot[1] + e_rot[2] * e_rot[2])
    return r, pe, re, e_rot, R, J


@njit(cache=True)
def task_pass(q0: np.ndarray, goal: np.ndarray, chain: np.ndarray, bounds: np.ndarray,
              settings: np.ndarray, iterations: int, stall: int) -> np.ndarray:
    """Box-constrained Levenberg-Marquardt on the task alone, as ArmIK._lm(soft=False) without
    collision rows. goal: the target's 4x4 homogeneous matrix in the model's root frame;
    bounds: rows lower, upper, lower + 1e-12, upper - 1e-12; stall < 0: no stall rule.
    Returns [q (6), position error, orientation error, iterations]."""
    wp, wr = settings[S_WP], settings[S_WR]
    tol_p, tol_r = settings[S_TOL_P], settings[S_TOL_R]
    stall_ratio, sr_sigma, sr_damping = settings[S_STALL_RATIO], settings[S_SR_SIGMA], settings[S_SR_DAMPING]
    goal_rt = np.ascontiguousarray(goal[0:3, 0:3].T)
    goal_p = goal[0:3, 3].copy()
    lower, upper, lower_eps, upper_eps = bounds[0], bounds[1], bounds[2], bounds[3]
    q = q0.copy()
    r, pe, re, e_rot, R, J = _residuals(q, goal_rt, goal_p, chain, wp, wr)
    cost = r @ r
    lam = settings[S_LAMBDA0]
    it, crawling = 0, 0
    have_a = False
    A = np.empty((6, 6))
    while it < iterations:
        if pe < tol_p and re < tol_r:
            break
        it += 1
        if not have_a:
            A[0:3] = J[0:3] * wp
            A[3:6] = (jlog3(e_rot) @ R.T @ J[3:6]) * wr
            have_a = True
        H0 = A.T @ A
        g = A.T @ r
        sigma = math.sqrt(max(np.linalg.eigvalsh(H0)[0], 0.0))
        floor = sr_damping * (1.0 - (sigma / sr_sigma) ** 2) if sigma < sr_sigma else 0.0
        damp = max(lam, floor)
        H = H0 + damp * np.eye(6)
        dq = np.linalg.solve(H, -g)
        # joints on a bound that the step pushes outward are held there (active set)
        n_held, on_bound = 0, False
        held = np.zeros(6, np.bool_)
        for k in range(6):
            low, high = q[k] <= lower_eps[k], q[k] >= upper_eps[k]
            on_bound = on_bound or low or high
            held[k] = (low and dq[k] < 0.0) or (high and dq[k] > 0.0)
            n_held += held[k]
        if on_bound and 0 < n_held < 6:
            free = np.nonzero(~held)[0]
            Hf = (H0 + lam * np.eye(6))[free][:, free]
            dq = np.zeros(6)
            dq[free] = np.linalg.solve(Hf, -g[free])
        q_new = np.minimum(np.maximum(q + dq, lower), upper)
        r2, pe2, re2, e2, R2, J2 = _residuals(q_new, goal_rt, goal_p, chain, wp, wr)
        c2 = r2 @ r2
        if c2 < cost:
            small = cost - c2 < 1e-12 * max(cost, 1e-12)
            crawling = crawling + 1 if c2 > stall_ratio * cost else 0
            q, r, pe, re, e_rot, R, J, cost = q_new, r2, pe2, re2, e2, R2, J2, c2
            have_a = False
            lam = max(lam / 5.0, 1e-9)
            if small or (stall >= 0 and crawling >= stall):
                break
        else:
            lam *= 8.0
            crawling += 1
            if lam > 1e6 or (stall >= 0 and crawling >= stall):
                break
    out = np.empty(9)
    out[0:6] = q
    out[6], out[7], out[8] = pe, re, it
    return out


@dataclass(frozen=True)
class ArmChain:
    """The arm's constants in the layout `task_pass` takes."""

    chain: np.ndarray      # 7 x 15
    bounds: np.ndarray     # 4 x 6

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

    @staticmethod
    def settings(position_weight: float, orientation_weight: float, lambda0: float, position_tolerance: float,
                 orientation_tolerance: float, stall_ratio: float, sr_sigma: float, sr_damping: float) -> np.ndarray:
        """The settings vector of `task_pass` (S_* order)."""
        return np.array([position_weight, orientation_weight, lambda0, position_tolerance, orientation_tolerance,
                         stall_ratio, sr_sigma, sr_damping], dtype=float)


def compile_all() -> None:
    """Compile (or load from numba's cache) every kernel: the set-up runs this once after a build,
    so that no node pays the compile time (~20 s) at its start."""
    chain = np.zeros((7, 15))
    for j in range(7):
        chain[j, 0:9] = np.eye(3).reshape(-1)
        chain[j, 9:12] = (0.0, 0.0, 0.1)
        chain[j, 12 + j % 3] = 1.0 if j < 6 else 0.0
    bounds = np.array([[-3.0] * 6, [3.0] * 6, [-3.0 + 1e-12] * 6, [3.0 - 1e-12] * 6])
    R, p, _ = forward(np.full(6, 0.3), chain)
    goal = np.eye(4)
    goal[:3, :3], goal[:3, 3] = R, p
    out = task_pass(np.zeros(6), goal, chain, bounds, ArmChain.settings(50.0, 10.0, 1e-3, 2e-4, 2e-3, 0.7, 0.5, 0.05),
                    30, 4)
    jlog3(log3(R))
    if not np.all(np.isfinite(out)):
        raise RuntimeError("arm_task_kernel.compile_all: the kernels returned non-finite values")

