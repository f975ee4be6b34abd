"""Vectorised ray casting from one sensor origin against the floor and convex primitives, ROS-free.

Every sensor (camera or lidar) casts all its rays from one point, so culling is one matrix
product: a primitive can only be hit by rays inside the cone around its bounding sphere, and only
those rays are intersected exactly with it (slab test for boxes, quadratic plus caps for cylinders,
quadratic for spheres). Rays are processed in chunks so a full-HD camera does not build
gigabyte-sized (rays x primitives) arrays.

A primitive counts only where a ray enters it (t > `t_min`): a sensor mounted inside or on the
surface of a body (the head camera inside the head's collision box, a chassis camera on the
chassis' face) looks out through it, as the real lens does.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from r1_sim.scene import BOX, CYLINDER, Floor, Shapes

FLOOR = -2       # index of a floor hit
MISS = -1        # index where nothing was hit within max_range
CHUNK = 65536    # rays per chunk


@dataclass
class Hits:
    """What each ray hit: range t along the unit direction, world normal, primitive index."""

    t: np.ndarray         # (N,) range [m]; inf where missed
    normal: np.ndarray    # (N, 3) unit world normal facing the ray; 0 where missed
    index: np.ndarray     # (N,) primitive index, FLOOR, or MISS


def _box(o: np.ndarray, d: np.ndarray, half: np.ndarray, t_min: float) -> np.ndarray:
    """Entry range of rays o + t d (local frame) into an axis-aligned box (slab test, per axis)."""
    t_in = np.full(len(d), -np.inf)
    t_out = np.full(len(d), np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in range(3):
            inv = 1.0 / d[:, k]                  # ±inf for a ray parallel to the slab
            a = (-half[k] - o[k]) * inv
            b = (half[k] - o[k]) * inv
            np.maximum(t_in, np.minimum(a, b), out=t_in)
            np.minimum(t_out, np.maximum(a, b), out=t_out)
    # nan (a parallel ray exactly on a face) compares false: no hit
    return np.where((t_in <= t_out) & (t_in > t_min), t_in, np.inf)


def _cylinder(o: np.ndarray, d: np.ndarray, radius: float, half_length: float, t_min: float) -> np.ndarray:
    """Entry range into a capped cylinder along the local z axis (side quadratic ∩ cap slab)."""
    a = d[:, 0] ** 2 + d[:, 1] ** 2
    b = o[0] * d[:, 0] + o[1] * d[:, 1]
    c = o[0] ** 2 + o[1] ** 2 - radius ** 2
    disc = b * b - a * c
    parallel = a < 1e-12
    with np.errstate(divide="ignore", invalid="ignore"):
        root = np.sqrt(np.maximum(disc, 0.0))
        s0 = np.where(parallel, -np.inf, (-b - root) / a)
        s1 = np.where(parallel, np.inf, (-b + root) / a)
        crosses = np.where(parallel, c <= 0.0, disc >= 0.0)
        inv = 1.0 / d[:, 2]
        z1, z2 = (-half_length - o[2]) * inv, (half_length - o[2]) * inv
    t_in = np.maximum(s0, np.minimum(z1, z2))
    t_out = np.minimum(s1, np.maximum(z1, z2))
    return np.where(crosses & (t_in <= t_out) & (t_in > t_min), t_in, np.inf)


def _sphere(o: np.ndarray, d: np.ndarray, radius: float, t_min: float) -> np.ndarray:
    """Entry range into a sphere centred at the local origin (d unit)."""
    b = d @ o
    disc = b * b - (o @ o - radius ** 2)
    t = -b - np.sqrt(np.maximum(disc, 0.0))
    return np.where((disc >= 0.0) & (t > t_min), t, np.inf)


def local_normal(kind: int, size: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Outward unit normals at points p (N, 3) on a primitive's surface, in its frame.

    Computed once per winning ray after the search (from the hit point, not per candidate).
    """
    n = np.zeros_like(p)
    rows = np.arange(len(p))
    if kind == BOX:
        axis = np.argmax(np.abs(p) / size, axis=1)
        n[rows, axis] = np.sign(p[rows, axis])
    elif kind == CYLINDER:
        r_xy = np.hypot(p[:, 0], p[:, 1])
        side = np.abs(r_xy - size[0]) < np.abs(np.abs(p[:, 2]) - size[2])
        safe = np.where(r_xy > 0, r_xy, 1.0)
        n[:, 0] = np.where(side, p[:, 0] / safe, 0.0)
        n[:, 1] = np.where(side, p[:, 1] / safe, 0.0)
        n[:, 2] = np.where(side, 0.0, np.sign(p[:, 2]))
    else:
        n = p / np.linalg.norm(p, axis=1, keepdims=True)
    return n


def contains(shapes: Shapes, p_local: np.ndarray, tol: float) -> np.ndarray:
    """(M,) whether each primitive contains its point p_local[m] (in its own frame), within tol."""
    size = shapes.size + tol
    box = np.all(np.abs(p_local) <= size, axis=1)
    cyl = (np.hypot(p_local[:, 0], p_local[:, 1]) <= size[:, 0]) & (np.abs(p_local[:, 2]) <= size[:, 2])
    sph = np.linalg.norm(p_local, axis=1) <= size[:, 0]
    return np.where(shapes.kind == BOX, box, np.where(shapes.kind == CYLINDER, cyl, sph))


def cast(origin: np.ndarray, directions: np.ndarray, shapes: Shapes, floor: Floor | None,
         max_range: float = np.inf, t_min: float = 1e-4) -> Hits:
    """First entry hit of each ray origin + t·direction (directions (N, 3), unit) up to max_range."""
    origin = np.asarray(origin, dtype=float)
    directions = np.asarray(directions, dtype=float)
    n_rays = len(directions)
    t_best = np.full(n_rays, float(max_range))
    index = np.full(n_rays, MISS, dtype=np.int64)
    normal = np.zeros((n_rays, 3))

    if floor is not None and origin[2] > floor.height:
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(directions[:, 2] < 0.0, (floor.height - origin[2]) / directions[:, 2], np.inf)
        better = (t > t_min) & (t < t_best)
        t_best[better], index[better] = t[better], FLOOR
        normal[better] = (0.0, 0.0, 1.0)

    if len(shapes):
        rel = shapes.position - origin                       # (M, 3)
        dist = np.linalg.norm(rel, axis=1)
        radius = shapes.bounding_radius
        inside = dist <= radius
        with np.errstate(divide="ignore", invalid="ignore"):
            axis = np.where(inside[:, None], 0.0, rel / np.where(dist > 0, dist, 1.0)[:, None])
            cos_cone = np.where(inside, -2.0, np.sqrt(np.clip(1.0 - (radius / dist) ** 2, 0.0, 1.0)))
        # each primitive's rays in its own frame: o_l = Rᵀ(origin - p), d_l = Rᵀ d (row-vector d @ R)
        o_local = np.einsum("mji,mj->mi", shapes.rotation, -rel)
        # a primitive containing the origin (the sensor's own housing) can have no entry hit
        reachable = (dist - radius < max_range) & ~contains(shapes, o_local, t_min)
        for start in range(0, n_rays, CHUNK):
            d = directions[start:start + CHUNK]
            candidate = (axis @ d.T) >= (cos_cone - 1e-9)[:, None]      # (M, chunk) cone test
            for m in np.flatnonzero(reachable):
                ids = np.flatnonzero(candidate[m])
                if not len(ids):
                    continue
                dl = d[ids] @ shapes.rotation[m]
                kind, size = shapes.kind[m], shapes.size[m]
                if kind == BOX:
                    t = _box(o_local[m], dl, size, t_min)
                elif kind == CYLINDER:
                    t = _cylinder(o_local[m], dl, size[0], size[2], t_min)
                else:
                    t = _sphere(o_local[m], dl, size[0], t_min)
                gids = ids + start
                better = t < t_best[gids]
                t_best[gids[better]], index[gids[better]] = t[better], m
        for m in np.unique(index[index >= 0]):
            rays = np.flatnonzero(index == m)
            R = shapes.rotation[m]
            p_local = o_local[m] + (directions[rays] @ R) * t_best[rays, None]
            normal[rays] = local_normal(shapes.kind[m], shapes.size[m], p_local) @ R.T

    t_best[index == MISS] = np.inf
    return Hits(t_best, normal, index)
