"""The arm IK's Levenberg-Marquardt passes, compiled with numba: a streamed solve's hot loop.

`ArmIK`'s passes (the task alone, or RelaxedIK's full objective) are a damped Gauss-Newton loop
over a 6-joint chain. In Python each iteration is ~60 small numpy and pinocchio calls, and their
per-call cost (~1-3 us each) was most of a solve: 5x the arithmetic. Here the same loop runs as
one compiled function: forward kinematics and the hand's Jacobian as a product of the joints'
placements and rotations (6 revolute joints in a chain), the error as log3 of the rotation, its
Jacobian Jlog3, the smoothness block, the joint-limit and singularity barriers (the latter's
gradient by Jacobi's formula), the singularity-robust damping floor, the active set on the
joint limits and the accept/reject rule, step for step as `ArmIK._lm` (the tests compare the
two, and the kinematics with pinocchio's). `stream_pass` is the common streamed solve whole.

The chain's constants come from the pinocchio model (`ArmChain.from_model`), nothing from the
URDF by hand; a model that is not a chain of 6 revolute joints gets None and ArmIK keeps its
Python loop. The collision barrier is not here: the caller measures the answer's clearance
(capsules in C++, `mobiman.arm.capsules.ContactCheck`, after a temporal-coherence bound) and runs
the Python loop with the collision rows when it is within the margin.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from numba import njit

# settings vector layout (ArmChain.settings)
(S_WP, S_WR, S_LAMBDA0, S_TOL_P, S_TOL_R, S_STALL_RATIO, S_SR_SIGMA, S_SR_DAMPING, S_W_JL, S_JL_MARGIN, S_W_SING,
 S_SING_THR, S_SOFT_PLATEAU) = range(13)
# stream vector layout (ArmChain.stream_constants): torso_link4 in the model's root (4x4, row-major),
# the shoulder (torso_link4), the wrist centre in the hand frame, the reach limit, max_step, and the
# errors a streamed solve must be within
ST_ROOT, ST_SHOULDER, ST_WRIST, ST_REACH, ST_MAX_STEP, ST_REACHED_P, ST_REACHED_R = 0, 16, 19, 22, 23, 24, 25
# stream_pass outcomes: DONE is the whole streamed solve; every other one leaves it to ArmIK.solve
DONE, NONFINITE_TARGET, BEYOND_REACH, NOT_REACHED, BIG_STEP = range(5)
NEAR_PI = 1e-6      # [rad] log3 takes the axis from the symmetric part this close to a half turn


@njit(cache=True)
def _forward_into(q: np.ndarray, chain: np.ndarray, R: np.ndarray, p: np.ndarray, J: np.ndarray,
                  scratch: np.ndarray) -> None:
    """forward(), written into R (3x3), p (3) and J (6x6); scratch: 15 x 3. Plain loops: at 3x3
    numba's matmul is a BLAS call each, several times the arithmetic."""
    T = scratch[0:3]
    origins = scratch[3:9]
    axes = scratch[9:15]
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
            axes[j, i] = T[i, 0] * x + T[i, 1] * y + T[i, 2] * z
            origins[j, i] = p[i]
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
        wx, wy, wz = axes[j, 0], axes[j, 1], axes[j, 2]
        dx, dy, dz = p[0] - origins[j, 0], p[1] - origins[j, 1], p[2] - origins[j, 2]
        J[0, j], J[1, j], J[2, j] = wy * dz - wz * dy, wz * dx - wx * dz, wx * dy - wy * dx
        J[3, j], J[4, j], J[5, j] = wx, wy, wz


@njit(cache=True)
def forward(q: np.ndarray, chain: np.ndarray):
    """The hand's rotation, position and 6x6 Jacobian (rows v | w, world-aligned at the hand,
    pinocchio's LOCAL_WORLD_ALIGNED) in the model's root frame.

    chain: 7 x 15 rows of (rotation 3x3 row-major, translation, axis): joint j's placement in
    its parent and its unit axis (rows 0-5), then the hand frame's placement in joint 6 (row 6)."""
    R, p, J = np.empty((3, 3)), np.empty(3), np.empty((6, 6))
    _forward_into(q, chain, R, p, J, np.empty((15, 3)))
    return R, p, J


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
    x, y, z = w[0], w[1], w[2]
    out = np.empty((3, 3))      # I + W/2 + k W², W = [w]x
    out[0, 0], out[1, 1], out[2, 2] = 1.0 - k * (y * y + z * z), 1.0 - k * (x * x + z * z), 1.0 - k * (x * x + y * y)
    out[0, 1], out[1, 0] = -0.5 * z + k * x * y, 0.5 * z + k * x * y
    out[0, 2], out[2, 0] = 0.5 * y + k * x * z, -0.5 * y + k * x * z
    out[1, 2], out[2, 1] = -0.5 * x + k * y * z, 0.5 * x + k * y * z
    return out


@njit(cache=True)
def _cholesky_solve(H: np.ndarray, b: np.ndarray, x: np.ndarray) -> bool:
    """x = H⁻¹ b for a symmetric positive definite H (Cholesky); False when H is not."""
    n = H.shape[0]
    L = np.zeros((n, n))
    for j in range(n):
        d = H[j, j]
        for k in range(j):
            d -= L[j, k] * L[j, k]
        if not d > 0.0:
            return False
        L[j, j] = math.sqrt(d)
        for i in range(j + 1, n):
            v = H[i, j]
            for k in range(j):
                v -= L[i, k] * L[j, k]
            L[i, j] = v / L[j, j]
    for i in range(n):
        v = b[i]
        for k in range(i):
            v -= L[i, k] * x[k]
        x[i] = v / L[i, i]
    for i in range(n - 1, -1, -1):
        v = x[i]
        for k in range(i + 1, n):
            v -= L[k, i] * x[k]
        x[i] = v / L[i, i]
    return True


@njit(cache=True)
def _spd_solve(H: np.ndarray, b: np.ndarray) -> np.ndarray:
    x = np.empty(b.shape[0])
    if _cholesky_solve(H, b, x):
        return x
    return np.linalg.solve(H, b)


@njit(cache=True)
def _smallest_sv_below(H0: np.ndarray, threshold: float) -> float:
    """σ_min of A for H0 = AᵀA, or `threshold` when σ_min ≥ threshold: then H0 − threshold²·I is
    positive definite (one Cholesky; the eigenvalues only near a singularity)."""
    shifted = H0 - threshold * threshold * np.eye(H0.shape[0])
    if _cholesky_solve(shifted, np.zeros(H0.shape[0]), np.empty(H0.shape[0])):
        return threshold
    return math.sqrt(max(np.linalg.eigvalsh(H0)[0], 0.0))


MAX_ROWS = 19     # task 6, smoothness 6, joint-limit barrier ≤ 6, singularity barrier 1


@njit(cache=True)
def _adjugate(a: np.ndarray) -> np.ndarray:
    """adj(A) (A·adj(A) = det(A)·I), also for a singular A: from the SVD (ArmIK's _adjugate)."""
    u, s, vt = np.linalg.svd(a)
    n = s.shape[0]
    prod = np.ones(n)
    for i in range(n):
        for k in range(n):
            if k != i:
                prod[i] *= s[k]
    scaled = vt.T.copy()
    for i in range(n):
        scaled[:, i] *= prod[i]
    return np.linalg.det(u) * np.linalg.det(vt) * (scaled @ u.T)


@njit(cache=True)
def _singularity_row(scratch: np.ndarray, weight: float, thr: float, row: np.ndarray) -> float:
    """The barrier on |det J| of the arm's spatial Jacobian (ArmIK._singularity_rows): its value,
    its gradient into `row`; 0 (and no row) when |det J| ≥ thr. scratch: _forward_into's, whose
    origins and axes give the spatial columns (o_j × ω_j, ω_j)."""
    origins, axes = scratch[3:9], scratch[9:15]
    Jw = np.empty((6, 6))
    for j in range(6):
        o, w = origins[j], axes[j]
        Jw[0, j], Jw[1, j], Jw[2, j] = o[1] * w[2] - o[2] * w[1], o[2] * w[0] - o[0] * w[2], o[0] * w[1] - o[1] * w[0]
        Jw[3, j], Jw[4, j], Jw[5, j] = w[0], w[1], w[2]
    det = np.linalg.det(Jw)
    if abs(det) >= thr:
        return 0.0
    adj = det * np.linalg.inv(Jw) if abs(det) > 1e-9 else _adjugate(Jw)
    # Jacobi's formula on the twists: ∂det/∂q_k = ω_k · Σ_{j>k} x_j + v_k · Σ_{j>k} y_j with
    # x_j = v_j × a_v + ω_j × a_ω, y_j = ω_j × a_v (a_j = (a_v, a_ω): row j of adj(J))
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


@njit(cache=True)
def _evaluate(q, goal_rt, goal_p, chain, bounds, settings, soft, centre, smooth_scale, scratch, R, p, J, r, A):
    """The objective's rows at q: r[:n] and their Jacobian A[:n] (task, then with `soft` the
    smoothness block, the joint-limit and the singularity barriers). Returns (n, position error,
    orientation error). R, p, J: the hand's pose and Jacobian, written."""
    wp, wr = settings[S_WP], settings[S_WR]
    _forward_into(q, chain, R, p, J, scratch)
    E = np.empty((3, 3))
    for i in range(3):
        for k in range(3):
            E[i, k] = goal_rt[i, 0] * R[0, k] + goal_rt[i, 1] * R[1, k] + goal_rt[i, 2] * R[2, k]
    e_rot = log3(E)
    pe2 = 0.0
    for i in range(3):
        d = p[i] - goal_p[i]
        pe2 += d * d
        r[i] = d * wp
        r[3 + i] = e_rot[i] * wr
    # d(position)/dq = J_v; d(log3(E))/dq = Jlog3(E) Rᵀ J_w
    Jl = jlog3(e_rot)
    M = np.empty((3, 3))
    for i in range(3):
        for k in range(3):
            M[i, k] = Jl[i, 0] * R[k, 0] + Jl[i, 1] * R[k, 1] + Jl[i, 2] * R[k, 2]
    for j in range(6):
        for i in range(3):
            A[i, j] = J[i, j] * wp
            A[3 + i, j] = (M[i, 0] * J[3, j] + M[i, 1] * J[4, j] + M[i, 2] * J[5, j]) * wr
    n = 6
    if soft:
        if smooth_scale > 0.0:
            for k in range(6):
                r[n + k] = smooth_scale * (q[k] - centre[k])
                for j in range(6):
                    A[n + k, j] = smooth_scale if j == k else 0.0
            n += 6
        w_jl, mg = settings[S_W_JL], settings[S_JL_MARGIN]
        if w_jl > 0.0:
            for k in range(6):
                low, high = q[k] - bounds[0, k], bounds[1, k] - q[k]
                if low < mg or high < mg:
                    value, slope = 0.0, 0.0
                    if low < mg:
                        value += (mg - low) / mg
                        slope -= 1.0 / mg
                    if high < mg:
                        value -= (mg - high) / mg
                        slope -= 1.0 / mg
                    r[n] = w_jl * value
                    for j in range(6):
                        A[n, j] = w_jl * slope if j == k else 0.0
                    n += 1
        w_s = settings[S_W_SING]
        if w_s > 0.0:
            value = _singularity_row(scratch, w_s, settings[S_SING_THR], A[n])
            if value != 0.0:
                r[n] = value
                n += 1
    return n, math.sqrt(pe2), math.sqrt(e_rot[0] * e_rot[0] + e_rot[1] * e_rot[1] + e_rot[2] * e_rot[2])


@njit(cache=True)
def lm_pass(q0: np.ndarray, goal: np.ndarray, chain: np.ndarray, bounds: np.ndarray, settings: np.ndarray,
            soft: bool, centre: np.ndarray, smooth_scale: float, iterations: int, stall: int) -> np.ndarray:
    """Box-constrained Levenberg-Marquardt, step for step as ArmIK._lm without collision rows:
    the task alone (soft False) or the full objective (the smoothness block smooth_scale·(q − centre),
    the joint-limit and singularity barriers). goal: the target's 4x4 homogeneous matrix in the
    model's root frame; bounds: rows lower, upper, lower + 1e-12, upper - 1e-12; stall < 0: no
    stall rule. Returns [q (6), position error, orientation error, iterations]."""
    tol_p, tol_r = settings[S_TOL_P], settings[S_TOL_R]
    stall_ratio, sr_sigma, sr_damping = settings[S_STALL_RATIO], settings[S_SR_SIGMA], settings[S_SR_DAMPING]
    plateau = settings[S_SOFT_PLATEAU] if soft else 1e-12
    goal_rt = np.empty((3, 3))
    goal_p = np.empty(3)
    for i in range(3):
        goal_p[i] = goal[i, 3]
        for k in range(3):
            goal_rt[i, k] = goal[k, i]
    lower, upper, lower_eps, upper_eps = bounds[0], bounds[1], bounds[2], bounds[3]
    scratch = np.empty((15, 3))
    q = q0.copy()
    R, p, J, r, A = np.empty((3, 3)), np.empty(3), np.empty((6, 6)), np.empty(MAX_ROWS), np.empty((MAX_ROWS, 6))
    R2, p2, J2, r2, A2 = np.empty((3, 3)), np.empty(3), np.empty((6, 6)), np.empty(MAX_ROWS), np.empty((MAX_ROWS, 6))
    n, pe, re = _evaluate(q, goal_rt, goal_p, chain, bounds, settings, soft, centre, smooth_scale, scratch,
                          R, p, J, r, A)
    cost = 0.0
    for k in range(n):
        cost += r[k] * r[k]
    lam = settings[S_LAMBDA0]
    it, crawling = 0, 0
    fresh = True                 # H0, g and σ_min belong to the current q
    H0, H, g = np.empty((6, 6)), np.empty((6, 6)), np.empty(6)
    sigma = 0.0
    q_new = np.empty(6)
    while it < iterations:
        if pe < tol_p and re < tol_r:
            break
        it += 1
        if fresh:
            for a in range(6):
                v = 0.0
                for k in range(n):
                    v += A[k, a] * r[k]
                g[a] = v
                for b in range(a, 6):
                    v = 0.0
                    for k in range(n):
                        v += A[k, a] * A[k, b]
                    H0[a, b] = v
                    H0[b, a] = v
            # singularity-robust floor on the damping (Nakamura & Hanafusa), from the task rows' σ_min
            T0 = H0
            if n > 6:
                T0 = np.empty((6, 6))
                for a in range(6):
                    for b in range(6):
                        v = 0.0
                        for k in range(6):
                            v += A[k, a] * A[k, b]
                        T0[a, b] = v
            sigma = _smallest_sv_below(T0, sr_sigma)
            fresh = False
        floor = sr_damping * (1.0 - (sigma / sr_sigma) ** 2) if sigma < sr_sigma else 0.0
        damp = max(lam, floor)
        for a in range(6):
            for b in range(6):
                H[a, b] = H0[a, b] + (damp if a == b else 0.0)
        dq = _spd_solve(H, -g)
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
            dq[free] = _spd_solve(Hf, -g[free])
        for k in range(6):
            q_new[k] = min(max(q[k] + dq[k], lower[k]), upper[k])
        n2, pe2, re2 = _evaluate(q_new, goal_rt, goal_p, chain, bounds, settings, soft, centre, smooth_scale,
                                 scratch, R2, p2, J2, r2, A2)
        c2 = 0.0
        for k in range(n2):
            c2 += r2[k] * r2[k]
        if c2 < cost:
            small = cost - c2 < plateau * max(cost, 1e-12)
            crawling = crawling + 1 if c2 > stall_ratio * cost else 0
            q, q_new = q_new, q          # accept: swap the buffers
            R, R2 = R2, R
            p, p2 = p2, p
            J, J2 = J2, J
            r, r2 = r2, r
            A, A2 = A2, A
            n, pe, re, cost = n2, pe2, re2, c2
            fresh = True
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


@njit(cache=True)
def stream_pass(prev: np.ndarray, target: np.ndarray, chain: np.ndarray, bounds: np.ndarray, settings: np.ndarray,
                stream: np.ndarray, q_ref: np.ndarray, rho: np.ndarray, clearance: float, iterations: int,
                stall: int) -> np.ndarray:
    """The common streamed solve in one call: a finite target within reach, met by the task pass
    from the last solution within one step. target: 4x4 in torso_link4; q_ref, rho, clearance: the
    temporal-coherence bound (ArmIK._still_clear). Returns [q (6), position error, orientation
    error, iterations, outcome, clearance left (the bound at q), wrist-centre distance]."""
    out = np.full(12, np.nan)
    for i in range(4):
        for k in range(4):
            if not math.isfinite(target[i, k]):
                out[9] = NONFINITE_TARGET
                return out
    d2 = 0.0
    for i in range(3):
        d = (target[i, 0] * stream[ST_WRIST] + target[i, 1] * stream[ST_WRIST + 1] + target[i, 2] * stream[ST_WRIST + 2]
             + target[i, 3] - stream[ST_SHOULDER + i])
        d2 += d * d
    out[11] = math.sqrt(d2)
    if out[11] > stream[ST_REACH]:
        out[9] = BEYOND_REACH
        return out
    goal = np.zeros((4, 4))
    for i in range(4):
        for k in range(4):
            goal[i, k] = (stream[ST_ROOT + 4 * i] * target[0, k] + stream[ST_ROOT + 4 * i + 1] * target[1, k]
                          + stream[ST_ROOT + 4 * i + 2] * target[2, k] + stream[ST_ROOT + 4 * i + 3] * target[3, k])
    res = lm_pass(prev, goal, chain, bounds, settings, False, prev, 0.0, iterations, stall)
    out[0:9] = res
    if not (res[6] < stream[ST_REACHED_P] and res[7] < stream[ST_REACHED_R]):
        out[9] = NOT_REACHED
        return out
    big, moved = 0.0, 0.0
    for k in range(6):
        big = max(big, abs(res[k] - prev[k]))
        moved += rho[k] * abs(res[k] - q_ref[k])
    if not big <= stream[ST_MAX_STEP]:          # (a NaN fails too)
        out[9] = BIG_STEP
        return out
    out[9] = DONE
    out[10] = clearance - 2.0 * moved
    return out


@dataclass(frozen=True)
class ArmChain:
    """The arm's constants in the layout the compiled passes take."""

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
                 orientation_tolerance: float, stall_ratio: float, sr_sigma: float, sr_damping: float,
                 joint_limit_weight: float = 0.0, joint_limit_margin: float = 0.1, singularity_weight: float = 0.0,
                 singularity_threshold: float = 5e-4, soft_plateau: float = 1e-5) -> np.ndarray:
        """The settings vector of `lm_pass` (S_* order)."""
        return np.array([position_weight, orientation_weight, lambda0, position_tolerance, orientation_tolerance,
                         stall_ratio, sr_sigma, sr_damping, joint_limit_weight, joint_limit_margin, singularity_weight,
                         singularity_threshold, soft_plateau], dtype=float)

    @staticmethod
    def stream_constants(root: np.ndarray, shoulder: np.ndarray, wrist_in_hand: np.ndarray, reach_limit: float,
                         max_step: float, reached_position: float, reached_orientation: float) -> np.ndarray:
        """The stream vector of `stream_pass` (ST_* layout)."""
        return np.concatenate((np.asarray(root, float).reshape(-1), shoulder, wrist_in_hand,
                               [reach_limit, max_step, reached_position, reached_orientation]))


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
    soft = ArmChain.settings(50.0, 10.0, 1e-3, 2e-4, 2e-3, 0.7, 0.5, 0.05, 1.0, 0.1, 0.5, 5e-4)
    goal = np.eye(4)
    goal[:3, :3], goal[:3, 3] = R, p
    out = lm_pass(np.zeros(6), goal, chain, bounds, ArmChain.settings(50.0, 10.0, 1e-3, 2e-4, 2e-3, 0.7, 0.5, 0.05),
                  False, np.zeros(6), 0.0, 30, 4)
    jlog3(log3(R))
    lm_pass(np.zeros(6), goal, chain, bounds, soft, True, np.full(6, 0.1), 0.1, 30, -1)
    _adjugate(np.eye(6))
    stream = ArmChain.stream_constants(np.eye(4), np.zeros(3), np.zeros(3), 10.0, 0.5, 1e-3, 1e-2)
    stream_pass(np.zeros(6), goal, chain, bounds, ArmChain.settings(50.0, 10.0, 1e-3, 2e-4, 2e-3, 0.7, 0.5, 0.05),
                stream, np.zeros(6), np.ones(6), 1.0, 30, 4)
    if not np.all(np.isfinite(out)):
        raise RuntimeError("mobiman.arm.kernel.compile_all: the kernels returned non-finite values")

