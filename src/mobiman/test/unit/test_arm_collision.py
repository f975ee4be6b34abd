"""The arm IK's collision model (mobiman.arm.collision, mobiman.arm.kernel_capsules): the compiled
capsule distances against coal's (C++, an independent implementation), the barrier's gradient
against finite differences, the segment distance against brute force, the temporal-coherence bound."""
from __future__ import annotations

import math
from pathlib import Path

import coal
import numpy as np
import pinocchio as pin
import pytest

from mobiman.arm import kernel_capsules as KC
from mobiman.arm.capsules import capsules_from_urdf
from mobiman.arm.collision import BODY_LINKS, MOVING_LINKS, CollisionModel
from mobiman.arm.ik import OTHER_ARM_STILL, ArmIK
from mobiman.arm.kernel_chain import joint_frames

PKG = Path(__file__).resolve().parents[2]
URDF = (PKG.parent / "r1_description" / "urdf" / "r1_v2_1_0.urdf").read_text()


@pytest.fixture(scope="module")
def left() -> ArmIK:
    return ArmIK(URDF, "left")


def _capsule_pose(a: np.ndarray, b: np.ndarray) -> pin.SE3:
    """The pose of a coal capsule (centred, along its z axis) on the segment a-b."""
    axis = b - a
    length = float(np.linalg.norm(axis))
    rot = np.eye(3) if length < 1e-12 else pin.Quaternion.FromTwoVectors(np.array([0.0, 0.0, 1.0]),
                                                                          axis / length).matrix()
    return pin.SE3(rot, (a + b) / 2)


class CoalCheck:
    """The collision model's capsules and pairs as coal capsules in a pinocchio GeometryModel."""

    def __init__(self, col: CollisionModel):
        model = col.arm.model
        self.geometry = pin.GeometryModel()
        for link, row in zip(col.links, col.capsules):
            a, b = row[KC.CAP_A:KC.CAP_A + 3], row[KC.CAP_B:KC.CAP_B + 3]
            self.geometry.addGeometryObject(pin.GeometryObject(
                link, int(row[KC.CAP_JOINT]) + 1, model.getFrameId(link), _capsule_pose(a, b),
                coal.Capsule(float(row[KC.CAP_RADIUS]), float(np.linalg.norm(b - a)))))
        n = len(col.links)
        for k, row in enumerate(col.fixed):
            a, b = row[0:3], row[3:6]
            self.geometry.addGeometryObject(pin.GeometryObject(
                f"fixed_{k}", 0, 0, _capsule_pose(a, b), coal.Capsule(float(row[6]), float(np.linalg.norm(b - a)))))
        for i in range(n):
            for k in range(len(col.fixed)):
                self.geometry.addCollisionPair(pin.CollisionPair(i, n + k))
        for i, k in col.pairs:
            self.geometry.addCollisionPair(pin.CollisionPair(int(i), int(k)))
        self.model, self.data, self.gdata = model, model.createData(), pin.GeometryData(self.geometry)

    def min_distance(self, q: np.ndarray) -> float:
        best = pin.computeDistances(self.model, self.data, self.geometry, self.gdata, q)
        return float(self.gdata.distanceResults[best].min_distance)

    def touching(self, q: np.ndarray) -> bool:
        return bool(pin.computeCollisions(self.model, self.data, self.geometry, self.gdata, q, True))


def test_the_distances_agree_with_coal(left):
    """The compiled clearance is coal's on 3,000 random postures (with the other arm in two places),
    and "touching" exactly where it is <= 0."""
    rng = np.random.default_rng(4)
    col = left.collision
    try:
        for other in (np.zeros(6), np.array([-0.5, 1.0, -1.0, 0.3, 0.2, 0.1])):
            left.set_other_arm(other)
            coal_check = CoalCheck(col)
            touching = 0
            for q in rng.uniform(left.lower, left.upper, size=(1500, 6)):
                d = left.min_distance(q)
                assert coal_check.touching(q) == (d <= 0.0), (q, d)
                assert col.clear_at(q) == (d > 0.0)
                exact = coal_check.min_distance(q)
                assert exact == pytest.approx(d, abs=1e-6) if d > 0.0 else exact <= 0.0
                touching += d <= 0.0
            assert touching > 30
    finally:
        left.set_other_arm(np.zeros(6))


def test_the_other_arm_is_placed_again_only_when_it_moved(left):
    """set_other_arm runs before every streamed solve in the node: an arm that moved no joint more
    than OTHER_ARM_STILL keeps its placement; one that moved is placed where the full model's FK puts
    it, and the distances measure against that placement."""
    arm, col = left.arm, left.collision
    full, data = arm.full, arm.full.createData()
    other = "right" if arm.side == "left" else "left"
    fixed_capsules = capsules_from_urdf(URDF, set(BODY_LINKS)) + capsules_from_urdf(
        URDF, {f"{other}_{n}" for n in MOVING_LINKS})

    def expected(q_other):
        q = pin.neutral(full)
        for name, v in zip(arm.other_names, q_other):
            q[full.joints[full.getJointId(name)].idx_q] = v
        pin.framesForwardKinematics(full, data, q)
        return [(data.oMf[full.getFrameId(c.link)].act(c.a), data.oMf[full.getFrameId(c.link)].act(c.b))
                for c in fixed_capsules]

    try:
        left.set_other_arm(np.zeros(6))
        placed = col.fixed.copy()
        left.set_other_arm(np.full(6, 0.5 * OTHER_ARM_STILL))
        np.testing.assert_array_equal(col.fixed, placed)
        q_other = np.array([-0.4, 0.9, -1.2, 0.3, 0.2, 0.1])
        left.set_other_arm(q_other)
        assert len(col.fixed) == len(fixed_capsules)
        for row, (ea, eb) in zip(col.fixed, expected(q_other)):
            np.testing.assert_allclose(row[0:3], ea, atol=1e-12)
            np.testing.assert_allclose(row[3:6], eb, atol=1e-12)
        assert not np.allclose(col.fixed, placed)
        coal_check = CoalCheck(col)
        rng = np.random.default_rng(9)
        for q in rng.uniform(left.lower, left.upper, size=(300, 6)):
            d = left.min_distance(q)
            exact = coal_check.min_distance(q)
            assert exact == pytest.approx(d, abs=1e-6) if d > 0.0 else exact <= 0.0
    finally:
        left.set_other_arm(np.zeros(6))


def _rows(col: CollisionModel, q: np.ndarray, capsules, fixed, pairs, margin: float):
    r, A = np.zeros(64), np.zeros((64, 6))
    n = KC.collision_rows(joint_frames(q, col.arm.chain.chain), capsules, fixed, pairs, 1.0, margin, r, A, 0)
    return r[:n], A[:n]


def test_the_collision_barrier_gradient_is_the_distance_derivative(left):
    """Each barrier row is (margin − d)/margin and its gradient −∂d/∂q/margin: against central
    differences of the compiled clearance of that one pair, for arm-body pairs and self pairs."""
    col, margin, eps = left.collision, 0.1, 1e-6
    rng = np.random.default_rng(0)
    no_pairs = np.empty((0, 2), np.int64)
    checked = {"fixed": 0, "self": 0}
    for _ in range(20000):
        if min(checked.values()) >= 10:
            break
        q = rng.uniform(left.lower, left.upper)
        i = int(rng.integers(len(col.capsules)))
        if rng.random() < 0.5:
            k = int(rng.integers(len(col.fixed)))
            kind, caps, fixed, pairs = "fixed", col.capsules[i:i + 1], col.fixed[k:k + 1], no_pairs
        else:
            a, b = col.pairs[rng.integers(len(col.pairs))]
            kind, caps, fixed, pairs = "self", col.capsules[[a, b]], np.empty((0, 7)), np.array([[0, 1]], np.int64)
        caps, fixed = np.ascontiguousarray(caps), np.ascontiguousarray(fixed)
        r, A = _rows(col, q, caps, fixed, pairs, margin)
        if len(r) != 1 or checked[kind] >= 10:
            continue

        def distance(qq: np.ndarray) -> float:
            return KC.clearance(joint_frames(qq, col.arm.chain.chain), caps, fixed, pairs, -math.inf)

        d = distance(q)
        if d < 0.005:             # touching or nearly: the closest points may jump
            continue
        assert r[0] == pytest.approx((margin - d) / margin, abs=1e-12)
        fd = np.array([(distance(q + eps * e) - distance(q - eps * e)) / (2 * eps) for e in np.eye(6)])
        np.testing.assert_allclose(-A[0] * margin, fd, atol=1e-5)
        checked[kind] += 1
    assert checked == {"fixed": 10, "self": 10}


def test_segment_distance_is_the_minimum_over_both_segments():
    """Against brute force: the distance is the smallest over a fine grid of both segments' points
    (never above it, and the grid's spacing close), and the closest points lie on them."""
    rng = np.random.default_rng(3)
    grid = np.linspace(0.0, 1.0, 401)
    cases = [tuple(rng.normal(size=(4, 3))) for _ in range(200)]
    p = rng.normal(size=3)
    cases += [(p, p.copy(), *rng.normal(size=(2, 3))),                       # a point and a segment
              (*rng.normal(size=(2, 3)), p, p.copy())]
    d = rng.normal(size=3)
    cases.append((p, p + d, p + np.array([0.0, 0.3, 0.0]), p + np.array([0.0, 0.3, 0.0]) + 2 * d))   # parallel
    for p1, q1, p2, q2 in cases:
        pa, pb = np.empty(3), np.empty(3)
        dist = KC.segment_distance(p1, q1, p2, q2, pa, pb)
        s1 = p1 + grid[:, None] * (q1 - p1)
        s2 = p2 + grid[:, None] * (q2 - p2)
        brute = np.min(np.linalg.norm(s1[:, None, :] - s2[None, :, :], axis=2))
        assert dist <= brute + 1e-12
        assert brute - dist < 0.01 * (np.linalg.norm(q1 - p1) + np.linalg.norm(q2 - p2)) + 1e-12
        assert abs(dist - np.linalg.norm(pa - pb)) < 1e-12
        for x, a, b in ((pa, p1, q1), (pb, p2, q2)):     # on their segments
            assert abs(np.linalg.norm(x - a) + np.linalg.norm(b - x) - np.linalg.norm(b - a)) < 1e-9


def test_clearance_bound_never_misses_a_pair(left):
    """The temporal-coherence skip is sound: the clearance measured at q_ref, less twice the
    lever-arm bound of the posture change, never exceeds the true smallest distance at q."""
    col = left.collision
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(150):
        q_ref = rng.uniform(left.lower, left.upper)
        lower = col.min_distance(q_ref)
        for scale in (0.01, 0.05, 0.2):
            q = np.clip(q_ref + rng.normal(scale=scale, size=6), left.lower, left.upper)
            bound = lower - 2.0 * float(col.rho @ np.abs(q - q_ref))
            assert left.min_distance(q) >= bound - 1e-9
            checked += 1
    assert checked == 450
    # and it does skip: a tiny step from a clear posture needs no new measurement
    q0 = (left.lower + left.upper) / 2
    assert not col.measured_within(q0, 0.05)            # mid-range posture: the arm well clear of everything
    assert col.still_clear(q0 + 1e-3, 0.002)
    assert not col.still_clear(q0 + 0.5, 0.002)
    col.bound = None
    assert not col.still_clear(q0, 0.002)


def test_a_hand_inside_the_body_is_known_from_the_target_alone(left):
    """hand_blocked is sound (a posture whose target it flags is in collision: the hand's links are
    fixed to the gripper frame) and useful (it flags most of the random targets that only a
    colliding posture meets); a cold solve of such a target gives up at once, clear of the body."""
    rng = np.random.default_rng(12)
    flagged = colliding = 0
    for q in rng.uniform(left.lower, left.upper, size=(1500, 6)):
        blocked = left.hand_blocked(left.fk(q))
        d = left.min_distance(q)
        if blocked:
            flagged += 1
            assert d <= 0.0
        colliding += d <= 0.0
    assert colliding > 50 and flagged > colliding / 2
    inside = pin.SE3(np.eye(3), np.array([0.05, 0.05, 0.2]))            # the hand into the torso
    assert left.hand_blocked(inside)
    r = left.solve_cold(inside)
    # the first seed, then the approach: no search over the other seeds
    assert not r.reached and r.iterations <= left.config.max_iterations_cold + left.config.max_iterations
    assert left.min_distance(r.q) > 0.0
