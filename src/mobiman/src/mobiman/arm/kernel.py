"""The arm IK's Levenberg-Marquardt passes, compiled with numba: the solver's one loop.

A pass is a damped Gauss-Newton loop over the arm's 6 joints on RelaxedIK's objective written as
weighted least squares: the task (position and orientation rows, the error as log3 of the rotation,
its Jacobian Jlog3), and with `soft` the smoothness block, the joint-limit and the singularity
barriers; with a collision weight in the settings, the self-collision barrier (capsule pairs within
the margin). The singularity-robust damping floor, the active set on the joint limits and the
accept/reject rule are part of the loop. `stream_pass` is the common streamed solve whole.

The vectors the passes take and give are laid out here, once: the settings (S_*), the stream's
constants (ST_*), the outputs (OUT_*) and the stream outcomes. `mobiman.arm.solver` reads the
outputs into named results; nothing else indexes them.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from mobiman.arm.kernel_capsules import clearance, collision_rows, hand_touching, segment_distance
from mobiman.arm.kernel_chain import SCRATCH_ROWS, forward, forward_into, joint_frames, singularity_row
from mobiman.arm.kernel_linalg import adjugate, jlog3, log3, smallest_sv_below, spd_solve

# settings vector layout (`settings_vector`)
(S_WP, S_WR, S_LAMBDA0, S_TOL_P, S_TOL_R, S_STALL_RATIO, S_SR_SIGMA, S_SR_DAMPING, S_W_JL, S_JL_MARGIN, S_W_SING,
 S_SING_THR, S_SOFT_PLATEAU, S_W_COLL, S_COLL_MARGIN) = range(15)
# stream vector layout (`stream_constants`): torso_link4 in the model's root (4x4, row-major), the
# shoulder (torso_link4), the wrist centre in the hand frame, the reach limit, max_step, and the errors
# a streamed solve must be within
ST_ROOT, ST_SHOULDER, ST_WRIST, ST_REACH, ST_MAX_STEP, ST_REACHED_P, ST_REACHED_R = 0, 16, 19, 22, 23, 24, 25
# output vector layout: lm_pass gives q (6), its position and orientation errors and the iterations
# (LM_OUT entries); stream_pass adds its outcome, the clearance bound at q and the target's
# wrist-centre distance from the shoulder (STREAM_OUT entries; NaN where it stopped before them)
OUT_Q, OUT_POSITION_ERROR, OUT_ORIENTATION_ERROR, OUT_ITERATIONS = 0, 6, 7, 8
OUT_OUTCOME, OUT_CLEARANCE, OUT_WRIST_DISTANCE = 9, 10, 11
LM_OUT, STREAM_OUT = 9, 12
# stream_pass outcomes: DONE is the whole streamed solve; every other one leaves it to the caller
DONE, NONFINITE_TARGET, BEYOND_REACH, NOT_REACHED, BIG_STEP = range(5)
TASK_ROWS = 19     # task 6, smoothness 6, joint-limit barrier ≤ 6, singularity barrier 1 (collision rows apart)


def settings_vector(position_weight: float, orientation_weight: float, lambda0: float, position_tolerance: float,
                    orientation_tolerance: float, stall_ratio: float, sr_sigma: float, sr_damping: float,
                    joint_limit_weight: float = 0.0, joint_limit_margin: float = 0.1, singularity_weight: float = 0.0,
                    singularity_threshold: float = 5e-4, soft_plateau: float = 1e-5, collision_weight: float = 0.0,
                    collision_margin: float = 0.03) -> np.ndarray:
    """The settings vector of `lm_pass` (S_* order). The barriers' weights apply to a soft pass
    (joint limit, singularity) or to any pass (collision, within collision_margin [m]); 0 turns one off."""
    return np.array([position_weight, orientation_weight, lambda0, position_tolerance, orientation_tolerance,
                     stall_ratio, sr_sigma, sr_damping, joint_limit_weight, joint_limit_margin, singularity_weight,
                     singularity_threshold, soft_plateau, collision_weight, collision_margin], dtype=float)


def stream_constants(root: np.ndarray, shoulder: np.ndarray, wrist_in_hand: np.ndarray, reach_limit: float,
                     max_step: float, reached_position: float, reached_orientation: float) -> np.ndarray:
    """The stream vector of `stream_pass` (ST_* layout)."""
    return np.concatenate((np.asarray(root, float).reshape(-1), shoulder, wrist_in_hand,
                           np.array([reach_limit, max_step, reached_position, reached_orientation], float)))


@njit(cache=True)
def _evaluate(q, goal_rt, goal_p, chain, bounds, settings, soft, centre, smooth_scale, capsules, fixed, pairs,
              scratch, R, p, J, r, A):
    """The objective's rows at q: r[:n] and their Jacobian A[:n] (task; with `soft` the smoothness
    block and the joint-limit barrier; with a collision weight the collision barrier; with `soft` the
    singularity barrier). Returns (n, position error, orientation error). R, p, J: the hand's pose
    and Jacobian, written."""
    wp, wr = settings[S_WP], settings[S_WR]
    forward_into(q, chain, R, p, J, scratch)
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
    if settings[S_W_COLL] > 0.0:
        n = collision_rows(scratch, capsules, fixed, pairs, settings[S_W_COLL], settings[S_COLL_MARGIN], r, A, n)
    if soft:
        w_s = settings[S_W_SING]
        if w_s > 0.0:
            value = singularity_row(scratch, w_s, settings[S_SING_THR], A[n])
            if value != 0.0:
                r[n] = value
                n += 1
    return n, math.sqrt(pe2), math.sqrt(e_rot[0] * e_rot[0] + e_rot[1] * e_rot[1] + e_rot[2] * e_rot[2])


@njit(cache=True)
def lm_pass(q0: np.ndarray, goal: np.ndarray, chain: np.ndarray, bounds: np.ndarray, settings: np.ndarray,
            soft: bool, centre: np.ndarray, smooth_scale: float, iterations: int, stall: int, capsules: np.ndarray,
            fixed: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Box-constrained Levenberg-Marquardt from q0 toward `goal` (the target's 4x4 homogeneous matrix
    in the model's root frame): the task alone (soft False) or the full objective (the smoothness
    block smooth_scale·(q − centre), the joint-limit and singularity barriers); the collision barrier
    on the capsules (`mobiman.arm.kernel_capsules` layouts) when settings[S_W_COLL] > 0.

    Stops once the errors are within the tolerances, on a plateau (a step gaining less than
    S_SOFT_PLATEAU of the cost, 1e-12 for the task alone), when the damping grows past 1e6, after
    `stall` steps in a row that were rejected or kept more than S_STALL_RATIO of the cost (stall < 0:
    no such rule), or after `iterations`. bounds: `ArmChain.bounds`. Returns the OUT_* vector
    (LM_OUT entries). Raises numpy.linalg.LinAlgError on a singular system."""
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
    rows = TASK_ROWS
    if settings[S_W_COLL] > 0.0:
        rows += capsules.shape[0] * fixed.shape[0] + pairs.shape[0]
    scratch = np.empty((SCRATCH_ROWS, 3))
    q = q0.copy()
    R, p, J, r, A = np.empty((3, 3)), np.empty(3), np.empty((6, 6)), np.empty(rows), np.empty((rows, 6))
    R2, p2, J2, r2, A2 = np.empty((3, 3)), np.empty(3), np.empty((6, 6)), np.empty(rows), np.empty((rows, 6))
    n, pe, re = _evaluate(q, goal_rt, goal_p, chain, bounds, settings, soft, centre, smooth_scale, capsules, fixed,
                          pairs, scratch, R, p, J, r, A)
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
            # singularity-robust floor on the damping (Nakamura & Hanafusa), from the task rows' σ_min:
            # near a singular posture the task's weakest direction is damped instead of spinning the wrist
            T0 = H0
            if n > 6:
                T0 = np.empty((6, 6))
                for a in range(6):
                    for b in range(6):
                        v = 0.0
                        for k in range(6):
                            v += A[k, a] * A[k, b]
                        T0[a, b] = v
            sigma = smallest_sv_below(T0, sr_sigma)
            fresh = False
        floor = sr_damping * (1.0 - (sigma / sr_sigma) ** 2) if sigma < sr_sigma else 0.0
        damp = max(lam, floor)
        for a in range(6):
            for b in range(6):
                H[a, b] = H0[a, b] + (damp if a == b else 0.0)
        dq = spd_solve(H, -g)
        # joints on a bound that the step pushes outward are held there (active set), and the step is
        # solved again for the others: clipping alone stalls the solver
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
            dq[free] = spd_solve(Hf, -g[free])
        for k in range(6):
            q_new[k] = min(max(q[k] + dq[k], lower[k]), upper[k])
        n2, pe2, re2 = _evaluate(q_new, goal_rt, goal_p, chain, bounds, settings, soft, centre, smooth_scale,
                                 capsules, fixed, pairs, scratch, R2, p2, J2, r2, A2)
        c2 = 0.0
        for k in range(n2):
            c2 += r2[k] * r2[k]
        if c2 < cost:
            # a plateau ends the search: the task alone converges to zero (the tolerances stop it), the
            # full objective to its floor, where 1e-5 of the cost is far below any error
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
    out = np.empty(LM_OUT)
    out[OUT_Q:OUT_Q + 6] = q
    out[OUT_POSITION_ERROR], out[OUT_ORIENTATION_ERROR], out[OUT_ITERATIONS] = pe, re, it
    return out


@njit(cache=True)
def stream_pass(prev: np.ndarray, target: np.ndarray, chain: np.ndarray, bounds: np.ndarray, settings: np.ndarray,
                stream: np.ndarray, q_ref: np.ndarray, rho: np.ndarray, clearance_ref: float, iterations: int,
                stall: int) -> np.ndarray:
    """The common streamed solve in one call: a finite target (4x4 in torso_link4) within reach, met
    by the task pass (settings without a collision weight) from the last solution `prev` within one
    max_step. q_ref, rho, clearance_ref: the temporal-coherence bound (`CollisionModel.still_clear`):
    the clearance measured at q_ref and the lever arms. Returns the OUT_* vector (STREAM_OUT entries)."""
    out = np.full(STREAM_OUT, np.nan)
    for i in range(4):
        for k in range(4):
            if not math.isfinite(target[i, k]):
                out[OUT_OUTCOME] = NONFINITE_TARGET
                return out
    d2 = 0.0
    for i in range(3):
        d = (target[i, 0] * stream[ST_WRIST] + target[i, 1] * stream[ST_WRIST + 1] + target[i, 2] * stream[ST_WRIST + 2]
             + target[i, 3] - stream[ST_SHOULDER + i])
        d2 += d * d
    out[OUT_WRIST_DISTANCE] = math.sqrt(d2)
    if out[OUT_WRIST_DISTANCE] > stream[ST_REACH]:
        out[OUT_OUTCOME] = BEYOND_REACH
        return out
    goal = np.zeros((4, 4))
    for i in range(4):
        for k in range(4):
            goal[i, k] = (stream[ST_ROOT + 4 * i] * target[0, k] + stream[ST_ROOT + 4 * i + 1] * target[1, k]
                          + stream[ST_ROOT + 4 * i + 2] * target[2, k] + stream[ST_ROOT + 4 * i + 3] * target[3, k])
    no_capsules, no_fixed, no_pairs = np.empty((0, 8)), np.empty((0, 7)), np.empty((0, 2), np.int64)
    res = lm_pass(prev, goal, chain, bounds, settings, False, prev, 0.0, iterations, stall, no_capsules, no_fixed,
                  no_pairs)
    out[0:LM_OUT] = res
    if not (res[OUT_POSITION_ERROR] < stream[ST_REACHED_P] and res[OUT_ORIENTATION_ERROR] < stream[ST_REACHED_R]):
        out[OUT_OUTCOME] = NOT_REACHED
        return out
    big, moved = 0.0, 0.0
    for k in range(6):
        big = max(big, abs(res[OUT_Q + k] - prev[k]))
        moved += rho[k] * abs(res[OUT_Q + k] - q_ref[k])
    if not big <= stream[ST_MAX_STEP]:          # (a NaN fails too)
        out[OUT_OUTCOME] = BIG_STEP
        return out
    out[OUT_OUTCOME] = DONE
    out[OUT_CLEARANCE] = clearance_ref - 2.0 * moved
    return out


def compile_all() -> None:
    """Compile (or load from numba's cache) every kernel: the set-up runs this once after a build, so
    that no node pays the compile time at its start. Raises RuntimeError if a kernel returns non-finite
    values on a small made-up chain."""
    chain = np.zeros((7, 15))
    for j in range(7):
        chain[j, 0:9] = np.eye(3).reshape(-1)
        chain[j, 9:12] = (0.0, 0.0, 0.1)
        chain[j, 12 + j % 3] = 1.0 if j < 6 else 0.0
    bounds = np.array([[-3.0] * 6, [3.0] * 6, [-3.0 + 1e-12] * 6, [3.0 - 1e-12] * 6])
    R, p, _ = forward(np.full(6, 0.3), chain)
    goal = np.eye(4)
    goal[:3, :3], goal[:3, 3] = R, p
    capsules = np.array([[5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.05, 0.02]])
    fixed = np.array([[0.3, 0.0, 0.0, 0.3, 0.0, 0.2, 0.05]])
    pairs = np.zeros((1, 2), np.int64)
    task = settings_vector(50.0, 10.0, 1e-3, 2e-4, 2e-3, 0.7, 0.5, 0.05)
    soft = settings_vector(50.0, 10.0, 1e-3, 2e-4, 2e-3, 0.7, 0.5, 0.05, 1.0, 0.1, 0.5, 5e-4, 1e-5, 5.0, 0.03)
    out = lm_pass(np.zeros(6), goal, chain, bounds, task, False, np.zeros(6), 0.0, 30, 4, capsules, fixed, pairs)
    lm_pass(np.zeros(6), goal, chain, bounds, soft, True, np.full(6, 0.1), 0.1, 30, -1, capsules, fixed, pairs)
    jlog3(log3(R))
    adjugate(np.eye(6))
    frames = joint_frames(np.zeros(6), chain)
    clearance(frames, capsules, fixed, pairs, -math.inf)
    hand_touching(np.eye(3), np.zeros(3), fixed, fixed)
    segment_distance(np.zeros(3), np.ones(3), np.ones(3), np.zeros(3), np.empty(3), np.empty(3))
    stream = stream_constants(np.eye(4), np.zeros(3), np.zeros(3), 10.0, 0.5, 1e-3, 1e-2)
    stream_pass(np.zeros(6), goal, chain, bounds, task, stream, np.zeros(6), np.ones(6), 1.0, 30, 4)
    if not np.all(np.isfinite(out)):
        raise RuntimeError("mobiman.arm.kernel.compile_all: the kernels returned non-finite values")
