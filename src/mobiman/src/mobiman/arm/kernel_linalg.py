"""Small dense algebra for the compiled IK passes (numba): SO(3)'s log and its Jacobian, the damped
normal equations' solve, the smallest singular value test and the adjugate.

Plain loops where the size is 3 or 6: numba's matmul at that size is a BLAS call each, several times
the arithmetic. Every function here is the only implementation of its step in the arm IK (the Python
side calls these too, e.g. the tests hold them to pinocchio's and numpy's).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

NEAR_PI = 1e-6      # [rad] log3 takes the axis from the symmetric part this close to a half turn


@njit(cache=True)
def log3(R: np.ndarray) -> np.ndarray:
    """The rotation vector of the rotation matrix R (pinocchio's log3), robust near 0 and near a
    half turn (where either axis sign is the same rotation)."""
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
    (pinocchio's Jlog3), 3x3."""
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
def cholesky_solve(H: np.ndarray, b: np.ndarray, x: np.ndarray) -> bool:
    """x = H⁻¹ b (written into x) for a symmetric positive definite H (Cholesky); False, x
    unspecified, when H is not positive definite."""
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
def spd_solve(H: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with H·x = b for a symmetric positive definite H (the damped normal equations are): Cholesky,
    LU where H is not positive definite to round-off. Raises numpy.linalg.LinAlgError for a singular H."""
    x = np.empty(b.shape[0])
    if cholesky_solve(H, b, x):
        return x
    return np.linalg.solve(H, b)


@njit(cache=True)
def smallest_sv_below(H0: np.ndarray, threshold: float) -> float:
    """σ_min of A for H0 = AᵀA, or `threshold` when σ_min ≥ threshold: then H0 − threshold²·I is
    positive definite (one Cholesky; the eigenvalues only near a singularity)."""
    shifted = H0 - threshold * threshold * np.eye(H0.shape[0])
    if cholesky_solve(shifted, np.zeros(H0.shape[0]), np.empty(H0.shape[0])):
        return threshold
    return math.sqrt(max(np.linalg.eigvalsh(H0)[0], 0.0))


@njit(cache=True)
def adjugate(a: np.ndarray) -> np.ndarray:
    """adj(A) (A·adj(A) = det(A)·I) of a square A, also for a singular A: from the SVD, the product of
    the other singular values for each one."""
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
