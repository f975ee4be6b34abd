"""Capsule distances for the arm IK (numba): the self-collision clearance, the contact check, the
collision barrier's rows and the hand-at-a-target check, all from one segment distance.

A capsule (segment + radius) has the cheapest smooth distance: the distance of two capsules is the
distance of their segments minus the radii, and its gradient is the unit vector between the
segments' closest points. Layouts (float64 arrays, built by `mobiman.arm.collision`):

* moving capsules, n x 8: the joint (0-5) whose frame carries it, its end points a, b in that frame, radius;
* fixed capsules, m x 7: end points a, b in the model's root frame, radius (the torso, the head, the other arm);
* self pairs, p x 2 (int64): indices of two moving capsules that can meet.

Every pair is moving x fixed or a self pair. A pair is measured only when the bounding spheres of
its capsules come closer than what is asked (a lower bound on its distance).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from mobiman.arm.kernel_chain import SCR_AXIS, SCR_ORIGIN, SCR_ROTATION

CAP_JOINT, CAP_A, CAP_B, CAP_RADIUS = 0, 1, 4, 7      # moving capsule columns
FIX_A, FIX_B, FIX_RADIUS = 0, 3, 6                     # fixed capsule columns


@njit(cache=True)
def segment_distance(p1: np.ndarray, q1: np.ndarray, p2: np.ndarray, q2: np.ndarray, pa: np.ndarray,
                     pb: np.ndarray) -> float:
    """The distance of segments p1-q1 and p2-q2 (3-vectors); their closest points written into pa
    (on the first) and pb (on the second). Ericson, Real-Time Collision Detection 5.1.9."""
    d1x, d1y, d1z = q1[0] - p1[0], q1[1] - p1[1], q1[2] - p1[2]
    d2x, d2y, d2z = q2[0] - p2[0], q2[1] - p2[1], q2[2] - p2[2]
    rx, ry, rz = p1[0] - p2[0], p1[1] - p2[1], p1[2] - p2[2]
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    f = d2x * rx + d2y * ry + d2z * rz
    eps = 1e-12
    if a <= eps and e <= eps:
        s = t = 0.0
    elif a <= eps:
        s, t = 0.0, min(max(f / e, 0.0), 1.0)
    else:
        c = d1x * rx + d1y * ry + d1z * rz
        if e <= eps:
            s, t = min(max(-c / a, 0.0), 1.0), 0.0
        else:
            b = d1x * d2x + d1y * d2y + d1z * d2z
            denom = a * e - b * b
            s = min(max((b * f - c * e) / denom, 0.0), 1.0) if denom > eps else 0.0
            t = (b * s + f) / e
            if t < 0.0:
                s, t = min(max(-c / a, 0.0), 1.0), 0.0
            elif t > 1.0:
                s, t = min(max((b - c) / a, 0.0), 1.0), 1.0
    pa[0], pa[1], pa[2] = p1[0] + s * d1x, p1[1] + s * d1y, p1[2] + s * d1z
    pb[0], pb[1], pb[2] = p2[0] + t * d2x, p2[1] + t * d2y, p2[2] + t * d2z
    dx, dy, dz = pa[0] - pb[0], pa[1] - pb[1], pa[2] - pb[2]
    return math.sqrt(dx * dx + dy * dy + dz * dz)


@njit(cache=True)
def place_capsules(scratch: np.ndarray, capsules: np.ndarray) -> np.ndarray:
    """The moving capsules in the model's root frame at the posture whose joint frames are in
    `scratch` (`mobiman.arm.kernel_chain.forward_into`'s): n x 7 rows (a, b, radius)."""
    n = capsules.shape[0]
    out = np.empty((n, 7))
    for i in range(n):
        j = int(capsules[i, CAP_JOINT])
        for row in range(3):
            R0 = scratch[SCR_ROTATION + 3 * j + row, 0]
            R1 = scratch[SCR_ROTATION + 3 * j + row, 1]
            R2 = scratch[SCR_ROTATION + 3 * j + row, 2]
            o = scratch[SCR_ORIGIN + j, row]
            out[i, row] = R0 * capsules[i, CAP_A] + R1 * capsules[i, CAP_A + 1] + R2 * capsules[i, CAP_A + 2] + o
            out[i, 3 + row] = R0 * capsules[i, CAP_B] + R1 * capsules[i, CAP_B + 1] + R2 * capsules[i, CAP_B + 2] + o
        out[i, 6] = capsules[i, CAP_RADIUS]
    return out


@njit(cache=True)
def _spheres(caps: np.ndarray) -> np.ndarray:
    """Bounding spheres of capsules given as rows (a, b, radius): n x 4 rows (centre, radius)."""
    n = caps.shape[0]
    out = np.empty((n, 4))
    for i in range(n):
        h2 = 0.0
        for k in range(3):
            out[i, k] = 0.5 * (caps[i, k] + caps[i, 3 + k])
            d = caps[i, 3 + k] - caps[i, k]
            h2 += d * d
        out[i, 3] = 0.5 * math.sqrt(h2) + caps[i, 6]
    return out


@njit(cache=True)
def _gap(s1: np.ndarray, s2: np.ndarray) -> float:
    dx, dy, dz = s1[0] - s2[0], s1[1] - s2[1], s1[2] - s2[2]
    return math.sqrt(dx * dx + dy * dy + dz * dz) - s1[3] - s2[3]


@njit(cache=True)
def clearance(scratch: np.ndarray, capsules: np.ndarray, fixed: np.ndarray, pairs: np.ndarray,
              stop_at: float) -> float:
    """The smallest capsule distance over every pair [m] (negative: they overlap), at the posture of
    `scratch`; returns as soon as a pair is at or below `stop_at` (-inf: never), with that pair's
    distance. inf when there is no pair."""
    world = place_capsules(scratch, capsules)
    moving, still = _spheres(world), _spheres(fixed)
    pa, pb = np.empty(3), np.empty(3)
    best = math.inf
    for i in range(world.shape[0]):
        for k in range(fixed.shape[0]):
            if _gap(moving[i], still[k]) >= best:
                continue
            d = segment_distance(world[i, 0:3], world[i, 3:6], fixed[k, 0:3], fixed[k, 3:6], pa, pb) \
                - world[i, 6] - fixed[k, FIX_RADIUS]
            if d < best:
                best = d
                if best <= stop_at:
                    return best
    for n in range(pairs.shape[0]):
        i, k = pairs[n, 0], pairs[n, 1]
        if _gap(moving[i], moving[k]) >= best:
            continue
        d = segment_distance(world[i, 0:3], world[i, 3:6], world[k, 0:3], world[k, 3:6], pa, pb) \
            - world[i, 6] - world[k, 6]
        if d < best:
            best = d
            if best <= stop_at:
                return best
    return best


@njit(cache=True)
def _add_point_gradient(scratch: np.ndarray, joint: int, point: np.ndarray, normal: np.ndarray, sign: float,
                        grad: np.ndarray) -> None:
    """grad += sign · nᵀ J_p: the point's linear Jacobian (world axes) for a point fixed to joint
    `joint`'s frame, whose column j ≤ joint is ω_j × (p − o_j)."""
    for j in range(joint + 1):
        w0, w1, w2 = scratch[SCR_AXIS + j, 0], scratch[SCR_AXIS + j, 1], scratch[SCR_AXIS + j, 2]
        d0 = point[0] - scratch[SCR_ORIGIN + j, 0]
        d1 = point[1] - scratch[SCR_ORIGIN + j, 1]
        d2 = point[2] - scratch[SCR_ORIGIN + j, 2]
        grad[j] += sign * (normal[0] * (w1 * d2 - w2 * d1) + normal[1] * (w2 * d0 - w0 * d2)
                           + normal[2] * (w0 * d1 - w1 * d0))


@njit(cache=True)
def _barrier_row(scratch: np.ndarray, d: float, pa: np.ndarray, pb: np.ndarray, joint_a: int, joint_b: int,
                 weight: float, margin: float, r: np.ndarray, A: np.ndarray, n: int) -> None:
    """Row n: weight·(margin − d)/margin and its gradient, −weight/margin · ∂d/∂q with
    ∂d/∂q = nᵀ(J_pa − J_pb) (joint_b < 0: pb is fixed)."""
    normal = np.empty(3)
    length = 0.0
    for k in range(3):
        normal[k] = pa[k] - pb[k]
        length += normal[k] * normal[k]
    length = max(math.sqrt(length), 1e-9)
    for k in range(3):
        normal[k] /= length
    grad = np.zeros(6)
    _add_point_gradient(scratch, joint_a, pa, normal, 1.0, grad)
    if joint_b >= 0:
        _add_point_gradient(scratch, joint_b, pb, normal, -1.0, grad)
    r[n] = weight * (margin - d) / margin
    for j in range(6):
        A[n, j] = -weight / margin * grad[j]


@njit(cache=True)
def collision_rows(scratch: np.ndarray, capsules: np.ndarray, fixed: np.ndarray, pairs: np.ndarray, weight: float,
                   margin: float, r: np.ndarray, A: np.ndarray, n: int) -> int:
    """The self-collision barrier at the posture of `scratch`: one row per pair closer than
    `margin` [m], written from row n on into r and A (its Jacobian, 6 columns). Returns the next
    free row. r and A need room for n + every pair."""
    world = place_capsules(scratch, capsules)
    moving, still = _spheres(world), _spheres(fixed)
    pa, pb = np.empty(3), np.empty(3)
    for i in range(world.shape[0]):
        joint = int(capsules[i, CAP_JOINT])
        for k in range(fixed.shape[0]):
            if _gap(moving[i], still[k]) >= margin:
                continue
            d = segment_distance(world[i, 0:3], world[i, 3:6], fixed[k, 0:3], fixed[k, 3:6], pa, pb) \
                - world[i, 6] - fixed[k, FIX_RADIUS]
            if d < margin:
                _barrier_row(scratch, d, pa, pb, joint, -1, weight, margin, r, A, n)
                n += 1
    for m in range(pairs.shape[0]):
        i, k = pairs[m, 0], pairs[m, 1]
        if _gap(moving[i], moving[k]) >= margin:
            continue
        d = segment_distance(world[i, 0:3], world[i, 3:6], world[k, 0:3], world[k, 3:6], pa, pb) \
            - world[i, 6] - world[k, 6]
        if d < margin:
            _barrier_row(scratch, d, pa, pb, int(capsules[i, CAP_JOINT]), int(capsules[k, CAP_JOINT]), weight,
                         margin, r, A, n)
            n += 1
    return n


@njit(cache=True)
def hand_touching(rotation: np.ndarray, position: np.ndarray, hand: np.ndarray, fixed: np.ndarray) -> bool:
    """Some capsule of the hand (rows a, b, radius in the hand's frame), with the hand's frame at
    (rotation, position) in the model's root frame, overlaps a fixed capsule."""
    placed = np.empty((hand.shape[0], 7))
    for i in range(hand.shape[0]):
        for row in range(3):
            R0, R1, R2 = rotation[row, 0], rotation[row, 1], rotation[row, 2]
            placed[i, row] = R0 * hand[i, 0] + R1 * hand[i, 1] + R2 * hand[i, 2] + position[row]
            placed[i, 3 + row] = R0 * hand[i, 3] + R1 * hand[i, 4] + R2 * hand[i, 5] + position[row]
        placed[i, 6] = hand[i, 6]
    spheres, still = _spheres(placed), _spheres(fixed)
    pa, pb = np.empty(3), np.empty(3)
    for i in range(placed.shape[0]):
        for k in range(fixed.shape[0]):
            if _gap(spheres[i], still[k]) >= 0.0:
                continue
            d = segment_distance(placed[i, 0:3], placed[i, 3:6], fixed[k, 0:3], fixed[k, 3:6], pa, pb)
            if d < placed[i, 6] + fixed[k, FIX_RADIUS]:
                return True
    return False
