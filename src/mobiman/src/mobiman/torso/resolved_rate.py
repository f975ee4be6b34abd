"""The pieces of torso speed control's resolved-rate tick, free of ROS and of the controller's state.

The workspace box (braking before a face, pulling back from outside), the damped least-squares
inverse near the singular straight posture and the bend that leaves it, and the scale factors
that keep the joints within their acceleration and position limits. `TorsoSpeedController`
(mobiman.torso.speed_control) strings them together.
"""
from __future__ import annotations

import math
from typing import Tuple

import numpy as np

from mobiman.torso.config import TorsoSpeedConfig

INSIDE_TOL = 1e-6        # [m] rounding allowance on the workspace faces (q = 0 sits on z = 0.7)
BRAKE_SHARE = 0.9        # braking curves plan with this share of the acceleration limit: the rest lets the
                         # rate limiter absorb FK curvature and coupling between the axes without a jump


def stop_speed(distance, accel: float, dt: float):
    """Highest speed from which steps of dt, slowing by accel·dt each, stop within `distance`.

    The discrete form of sqrt(2·a·d): with v_max(d) the braking sequence v, v - a·dt, ... covers
    exactly d, so a rate limiter at a·dt follows it without lagging into the face.
    """
    step = accel * dt
    return step * (np.sqrt(0.25 + 2.0 * np.maximum(distance, 0.0) / (step * dt)) - 0.5)


def toward(x: np.ndarray, target, step) -> np.ndarray:
    return x + np.clip(target - x, -step, step)


def bounds(cfg: TorsoSpeedConfig) -> Tuple[np.ndarray, np.ndarray]:
    return (np.array([cfg.workspace_x[0], cfg.workspace_z[0]]), np.array([cfg.workspace_x[1], cfg.workspace_z[1]]))


def box_target(cfg: TorsoSpeedConfig, target: np.ndarray, p: np.ndarray, dt: float,
               pull_back: bool) -> Tuple[np.ndarray, bool]:
    """Target velocity inside the box: toward a face at most the speed that stops on it within the
    acceleration limit (stop_speed); outside, pulled back in at workspace_gain (while commanded)."""
    lo, hi = bounds(cfg)
    a, out = BRAKE_SHARE * cfg.max_acceleration, target.copy()
    for i in range(2):
        if p[i] > hi[i] + INSIDE_TOL:
            out[i] = -min(cfg.workspace_gain * (p[i] - hi[i]), cfg.max_speed) if pull_back else 0.0
        elif p[i] < lo[i] - INSIDE_TOL:
            out[i] = min(cfg.workspace_gain * (lo[i] - p[i]), cfg.max_speed) if pull_back else 0.0
        else:
            out[i] = np.clip(out[i], -stop_speed(p[i] - lo[i], a, dt), stop_speed(hi[i] - p[i], a, dt))
    return out, bool(np.any(out != target))


def box_cap(cfg: TorsoSpeedConfig, v: np.ndarray, p: np.ndarray, dt: float) -> Tuple[np.ndarray, bool]:
    """Hard cap after the rate limit: no component carries the point past a face in this step."""
    lo, hi = bounds(cfg)
    out = v.copy()
    for i in range(2):
        if lo[i] - INSIDE_TOL <= p[i] <= hi[i] + INSIDE_TOL:
            out[i] = np.clip(out[i], -max(p[i] - lo[i], 0.0) / dt, max(hi[i] - p[i], 0.0) / dt)
        elif p[i] > hi[i]:
            out[i] = min(out[i], 0.0)
        else:
            out[i] = max(out[i], 0.0)
    return out, bool(np.any(out != v))


def dls(cfg: TorsoSpeedConfig, jac: np.ndarray) -> Tuple[np.ndarray, float, bool]:
    """Damped least-squares inverse of the task Jacobian, its smallest singular value, and whether it was damped.

    The damping grows as the smallest singular value falls below singular_threshold (the straight
    posture, q2 -> 0), from 0 to `damping` at the singularity, so q̇ stays bounded.
    """
    u, s, vt = np.linalg.svd(jac)
    eps, smin = cfg.singular_threshold, float(s[-1])
    lam2 = cfg.damping ** 2 * (1.0 - (smin / eps) ** 2) if smin < eps else 0.0
    return (vt.T * (s / (s ** 2 + lam2))) @ u.T, smin, lam2 > 0.0


def escape(cfg: TorsoSpeedConfig, q: np.ndarray, p: np.ndarray, v: np.ndarray, smin: float) -> np.ndarray:
    """Joint-2 bend (q̇ of joints 1-3) for leaving the straight posture inward.

    Exactly straight, the radial direction (along the line from torso_joint1) cannot move at
    all, whatever the damping; an inward command then bends joint 2 at up to escape_rate,
    toward the side it is already bent to (bend_sign when exactly straight), fading out as
    the smallest singular value reaches singular_threshold. The task compensates the bend's
    side effects (the caller solves for the rest).
    """
    kick = np.zeros(3)
    radius = float(np.linalg.norm(p))
    if smin >= cfg.singular_threshold or cfg.escape_rate <= 0.0 or radius < 1e-9:
        return kick
    inward = -float(v @ p) / radius
    if inward > 0.0:
        bend = math.copysign(1.0, q[1]) if abs(q[1]) > 1e-6 else cfg.bend_sign
        kick[1] = bend * cfg.escape_rate * min(1.0, inward / cfg.max_speed) * (1.0 - smin / cfg.singular_threshold)
    return kick


def acceleration_scale(qd_v: np.ndarray, qd_rest: np.ndarray, qd_prev: np.ndarray, delta: float) -> float:
    """Largest s in [0, 1] with |s·qd_v + qd_rest - qd_prev| ≤ delta (joint_acceleration·dt) per joint.

    qd_v is the joint velocity of this tick's Cartesian velocity change, qd_rest that of the rest:
    a change that would make the joints accelerate too hard is taken in part (near the straight
    posture a small Cartesian change is a large joint one). When no s complies, the one with the
    least excess is taken: a stop that needs more than the joint limit (s above 1) gets all of it.
    """
    lo, hi = 0.0, 1.0
    for a, b, prev in zip(qd_v, qd_rest, qd_prev):
        if abs(a) > 1e-12:
            low, high = sorted(((prev - delta - b) / a, (prev + delta - b) / a))
            lo, hi = max(lo, low), min(hi, high)
    if lo <= hi:
        return hi
    candidates = np.clip([0.0, 1.0, lo, hi], 0.0, 1.0)
    excess = [float(np.max(np.abs(c * qd_v + qd_rest - qd_prev))) for c in candidates]
    return float(candidates[int(np.argmin(excess))])


def joint_limit_scale(cfg: TorsoSpeedConfig, qd: np.ndarray, q: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                      dt: float) -> float:
    """Largest factor ≤ 1 for qd such that no joint moving toward a limit (less the margin) would
    fail to stop before it at joint_acceleration, nor cross it within this step."""
    m, a = cfg.joint_limit_margin, BRAKE_SHARE * cfg.joint_acceleration
    room = np.where(qd > 0, upper - m - q, q - (lower + m))
    room = np.maximum(room, 0.0)
    allowed = np.minimum(stop_speed(room, a, dt), room / dt)
    speed = np.abs(qd)
    moving = speed > 1e-12
    if not np.any(moving):
        return 1.0
    return float(min(1.0, np.min(allowed[moving] / speed[moving])))
