"""The objects' ground truth (/sim/objects, r1_sim/ObjectStates) checked before it reaches the world, ROS-free.

The simulator publishes the pose of every free body of its scene (frame sim_world); `r1_sim_sensors`
moves the same bodies in its own model before rendering. A message is used whole or not at all: names,
poses and twists of equal lengths, no name twice, every pose finite, within MAX_DISTANCE of the origin,
its orientation a unit quaternion (within r1_common.validation's tolerance, then normalised). Names that
are no object of the sensors' scene are left out and reported (another world, or a typo), not refused.
"""
from __future__ import annotations

from typing import Collection, Dict, List, Sequence, Tuple

import numpy as np

from r1_common.validation import InputError, finite_vector, unit_quaternion

__all__ = ["MAX_DISTANCE", "object_poses"]

MAX_DISTANCE = 1e4     # [m] from the world's origin: beyond it no object's position
Poses = Dict[str, Tuple[np.ndarray, np.ndarray]]


def object_poses(names: Sequence[str], positions: Sequence[Sequence[float]],
                 orientations_xyzw: Sequence[Sequence[float]], twist_count: int,
                 known: Collection[str]) -> Tuple[Poses, List[str]]:
    """One ObjectStates message -> ({name: (position (3,), quaternion w x y z (4,))} of the `known`
    objects, [names not known]).

    :raises InputError: naming the field and its value: lengths that differ, a name twice, a position
    that is not finite or too far, an orientation that is no rotation."""
    n = len(names)
    if len(positions) != n or len(orientations_xyzw) != n or twist_count != n:
        raise InputError("objects", [n, len(positions), twist_count],
                         "(names, poses, twists) differ in length")
    poses: Poses = {}
    unknown: List[str] = []
    seen = set()
    for k, name in enumerate(names):
        if name in seen:
            raise InputError(f"name[{k}]", name, "appears twice")
        seen.add(name)
        p = finite_vector(positions[k], f"pose[{k}].position ({name})", (3,))
        if np.any(np.abs(p) > MAX_DISTANCE):
            raise InputError(f"pose[{k}].position ({name})", p, f"lies beyond {MAX_DISTANCE:g} m")
        q, _ = unit_quaternion(orientations_xyzw[k], f"pose[{k}].orientation ({name})")
        if name in known:
            poses[name] = (p, np.array([q[3], q[0], q[1], q[2]]))
        else:
            unknown.append(name)
    return poses, unknown
