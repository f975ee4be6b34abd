"""mobiman.arm.closed_form: the R1 arm's closed-form postures (cold-solve seeds)."""
import math

import numpy as np
import pinocchio as pin
import pytest

from mobiman.arm.closed_form import ClosedFormArm, rotation_angle, two_rotations
from mobiman.arm.ik import ArmIK


def _unit(v):
    return v / np.linalg.norm(v)


def test_sub_problems_invert_random_rotations():
    rng = np.random.default_rng(0)
    for _ in range(200):
        w1, w2, p = _unit(rng.normal(size=3)), _unit(rng.normal(size=3)), rng.normal(size=3)
        t1, t2 = rng.uniform(-math.pi, math.pi, 2)
        q = pin.exp3(w1 * t1) @ pin.exp3(w2 * t2) @ p
        assert abs(rotation_angle(tuple(w2), tuple(p), tuple(pin.exp3(w2 * t2) @ p)) - t2) < 1e-9 \
            or np.linalg.norm(np.cross(w2, p)) < 1e-6
        answers = two_rotations(tuple(w1), tuple(w2), tuple(p), tuple(q))
        assert 1 <= len(answers) <= 2
        for a1, a2 in answers:      # every answer maps p onto q
            np.testing.assert_allclose(pin.exp3(w1 * a1) @ pin.exp3(w2 * a2) @ p, q, atol=1e-9)
        assert any(abs(math.remainder(a1 - t1, 2 * math.pi)) < 1e-7 and abs(math.remainder(a2 - t2, 2 * math.pi)) < 1e-7
                   for a1, a2 in answers)


@pytest.mark.parametrize("side", ["left", "right"])
def test_the_source_posture_is_among_the_closed_form_ones(r1_urdf, side):
    ik = ArmIK(r1_urdf, side)
    arm = ClosedFormArm.from_model(ik.model, ik.arm.ee, ik.arm.wrist_in_j5)
    assert arm is not None, "the R1 arm is of the closed-form kind"
    rng = np.random.default_rng(1)
    for q in rng.uniform(ik.lower, ik.upper, size=(200, 6)):
        pin.framesForwardKinematics(ik.model, ik.data, q)
        target = ik.data.oMf[ik.arm.ee].copy()
        postures = arm.postures(target)
        assert 1 <= len(postures) <= 8
        assert all(np.all(p >= ik.lower) and np.all(p <= ik.upper) for p in postures)
        nearest = min(postures, key=lambda p: np.max(np.abs(p - q)))
        assert np.max(np.abs(nearest - q)) < 0.05       # approximate: the wrist axes miss each other by 0.5 mm
        pin.framesForwardKinematics(ik.model, ik.data, nearest)
        assert np.linalg.norm(ik.data.oMf[ik.arm.ee].translation - target.translation) < 1e-4


def test_a_wrist_whose_axes_miss_each_other_is_refused(r1_urdf):
    ik = ArmIK(r1_urdf, "left")
    assert ClosedFormArm.from_model(ik.model, ik.arm.ee, ik.arm.wrist_in_j5 + np.array([0.0, 0.0, 0.01])) is None


def test_cold_solves_take_the_closed_form_path(r1_urdf):
    """Reachable, collision-free targets are met from the closed form in a few polish steps
    (all 57 here; 48 while postures outside the limits were polished clipped to them first, 40
    from the seed table alone)."""
    ik = ArmIK(r1_urdf, "left")
    rng = np.random.default_rng(2)
    solved = 0
    for q in rng.uniform(ik.lower, ik.upper, size=(60, 6)):
        if ik.min_distance(q) <= 0.0:
            continue
        r = ik.solve_cold(ik.fk(q))
        assert r.reached
        assert r.iterations <= 10
        solved += 1
    assert solved >= 50
