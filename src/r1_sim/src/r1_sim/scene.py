"""The world the simulated sensors see: a floor and convex primitives, ROS-free.

Everything a ray can hit is one of four analytic shapes (box, capped cylinder, sphere, and the
floor plane), because the robot's own collision model (URDF) is made of the same primitives and
because exact ray/primitive intersections need no mesh library, are vectorised in numpy and
give exact depths the tests can compare with closed-form distances.

`Shapes` holds many primitives as stacked arrays (one row each), so the ray caster can cull and
transform them in bulk; the static room (`load_scene`) and the robot's body (`r1_sim.body`) are
each one `Shapes`, concatenated per render.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import yaml
from scipy.spatial.transform import Rotation

BOX, CYLINDER, SPHERE = 0, 1, 2
KINDS = {"box": BOX, "cylinder": CYLINDER, "sphere": SPHERE}


class SceneError(ValueError):
    """A scene file that cannot describe a world (unknown shape, bad size, ...)."""


@dataclass
class Shapes:
    """M primitives as arrays; each in its own frame (R, p) given in the world.

    size: box half extents (x, y, z); cylinder (radius, radius, half length) along its z axis;
    sphere (radius, radius, radius). colour in [0, 1] RGB, reflectivity 0..255 (Livox scale).
    """

    kind: np.ndarray                       # (M,) int
    rotation: np.ndarray                   # (M, 3, 3) world <- shape
    position: np.ndarray                   # (M, 3)
    size: np.ndarray                       # (M, 3)
    colour: np.ndarray                     # (M, 3)
    reflectivity: np.ndarray               # (M,)
    names: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.kind)

    @staticmethod
    def empty() -> "Shapes":
        return Shapes(np.zeros(0, int), np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros((0, 3)),
                      np.zeros((0, 3)), np.zeros(0), [])

    @property
    def bounding_radius(self) -> np.ndarray:
        """Radius of a sphere around each primitive's centre (the ray caster's cull test)."""
        r = np.linalg.norm(self.size, axis=1)
        cyl = self.kind == CYLINDER
        r[cyl] = np.hypot(self.size[cyl, 0], self.size[cyl, 2])
        sph = self.kind == SPHERE
        r[sph] = self.size[sph, 0]
        return r

    @staticmethod
    def concatenate(parts: Sequence["Shapes"]) -> "Shapes":
        parts = [p for p in parts if len(p)]
        if not parts:
            return Shapes.empty()
        return Shapes(np.concatenate([p.kind for p in parts]), np.concatenate([p.rotation for p in parts]),
                      np.concatenate([p.position for p in parts]), np.concatenate([p.size for p in parts]),
                      np.concatenate([p.colour for p in parts]), np.concatenate([p.reflectivity for p in parts]),
                      [n for p in parts for n in p.names])


@dataclass
class Floor:
    """The plane z = height, seen from above, with a checker so motion over it is visible."""

    height: float = 0.0
    colours: tuple[tuple[float, float, float], tuple[float, float, float]] = ((0.62, 0.60, 0.56), (0.42, 0.40, 0.38))
    checker_m: float = 0.5
    reflectivity: float = 40.0

    def colour_at(self, xy: np.ndarray) -> np.ndarray:
        """(N, 2) world points on the floor -> (N, 3) colours of their checker squares."""
        cell = np.floor(xy / self.checker_m).astype(np.int64).sum(axis=1) & 1
        return np.asarray(self.colours, dtype=float)[cell]


@dataclass
class Light:
    """A directional light, a headlight and an ambient term for Lambert shading."""

    direction: np.ndarray = field(
        default_factory=lambda: np.array([-0.3, 0.2, -1.0]) / np.linalg.norm([-0.3, 0.2, -1.0]))
    ambient: float = 0.35
    headlight: float = 0.4            # share of the diffuse light coming from the camera
    background: tuple[float, float, float] = (0.70, 0.80, 0.92)


@dataclass
class Scene:
    """A static world: floor, light and fixed primitives (walls, furniture, objects)."""

    floor: Floor
    light: Light
    shapes: Shapes


def _vec(value: Any, n: int, what: str) -> np.ndarray:
    try:
        a = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise SceneError(f"{what}: expected {n} numbers, got {value!r}") from None
    if a.shape != (n,) or not np.all(np.isfinite(a)):
        raise SceneError(f"{what}: expected {n} finite numbers, got {value!r}")
    return a


def shape_from_spec(spec: Mapping[str, Any],
                    index: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, str]:
    """One YAML object -> (kind, R, p, size, colour, reflectivity, name)."""
    name = str(spec.get("name", f"object{index}"))
    kind_name = spec.get("shape")
    if kind_name not in KINDS:
        raise SceneError(f"{name}: shape must be one of {sorted(KINDS)}, got {kind_name!r}")
    kind = KINDS[kind_name]
    if kind == BOX:
        size = _vec(spec.get("size"), 3, f"{name}.size") / 2.0
    elif kind == CYLINDER:
        r, length = _vec(spec.get("radius"), 1, f"{name}.radius")[0], _vec(spec.get("length"), 1, f"{name}.length")[0]
        size = np.array([r, r, length / 2.0])
    else:
        r = _vec(spec.get("radius"), 1, f"{name}.radius")[0]
        size = np.array([r, r, r])
    if not np.all(np.isfinite(size)) or np.any(size <= 0):
        raise SceneError(f"{name}: sizes must be positive")
    p = _vec(spec.get("xyz", [0, 0, 0]), 3, f"{name}.xyz")
    R = Rotation.from_euler("xyz", _vec(spec.get("rpy", [0, 0, 0]), 3, f"{name}.rpy")).as_matrix()
    colour = _vec(spec.get("colour", [0.7, 0.7, 0.7]), 3, f"{name}.colour")
    refl = float(spec.get("reflectivity", 100.0))
    return kind, R, p, size, np.clip(colour, 0.0, 1.0), refl, name


def scene_from_dict(data: Mapping[str, Any]) -> Scene:
    """A scene from its YAML structure (see config/scene.yaml).

    :raises SceneError: naming the bad entry (unknown shape, sizes not positive, not numbers, ...)."""
    f = data.get("floor") or {}
    colours = [_vec(c, 3, "floor.colours") for c in f.get("colours", Floor().colours)]
    checker_m = float(f.get("checker_m", 0.5))
    if len(colours) != 2 or checker_m <= 0:
        raise SceneError("floor: two colours and a positive checker_m")
    (r0, g0, b0), (r1, g1, b1) = (c.tolist() for c in colours)
    floor = Floor(height=float(f.get("height", 0.0)), colours=((r0, g0, b0), (r1, g1, b1)), checker_m=checker_m,
                  reflectivity=float(f.get("reflectivity", 40.0)))
    li = data.get("light") or {}
    direction = _vec(li.get("direction", Light().direction), 3, "light.direction")
    if np.linalg.norm(direction) == 0:
        raise SceneError("light.direction must not be zero")
    light = Light(direction / np.linalg.norm(direction), float(li.get("ambient", 0.35)),
                  float(li.get("headlight", 0.4)),
                  tuple(_vec(li.get("background", Light().background), 3, "light.background")))
    if not (0.0 <= light.ambient <= 1.0 and 0.0 <= light.headlight <= 1.0):
        raise SceneError("light: ambient and headlight in [0, 1]")
    rows = [shape_from_spec(o, i) for i, o in enumerate(data.get("objects") or [])]
    if rows:
        kind, R, p, size, colour, refl, names = zip(*rows)
        shapes = Shapes(np.array(kind), np.stack(R), np.stack(p), np.stack(size), np.stack(colour),
                        np.array(refl, dtype=float), list(names))
    else:
        shapes = Shapes.empty()
    return Scene(floor, light, shapes)


def load_scene(path: str | Path) -> Scene:
    """Read a scene YAML file."""
    with open(path) as f:
        return scene_from_dict(yaml.safe_load(f) or {})
