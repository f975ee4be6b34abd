"""ArmIK (RelaxedIK-style arm IK): accuracy, streaming, limits, collisions, reach.

The collision model's own tests are test_arm_collision.py, the compiled passes' test_arm_ik_kernel.py, the
settings' test_arm_ik_settings.py."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from mobiman.arm.ik import ArmIK, IkConfig, IkWeights
from mobiman.arm.solver import smoothness_anchor

PKG = Path(__file__).resolve().parents[2]
URDF = (PKG.parent / "r1_description" / "urdf" / "r1_v2_1_0.urdf").read_text()
RELAXED_IK = yaml.safe_load((PKG / "config" / "relaxed_ik.yaml").read_text()) or {}
START = np.array([0.0, 1.2, -1.6, 0.0, 0.3, 0.0])       # left arm raised in front


@pytest.fixture(scope="module")
def left() -> ArmIK:
    return ArmIK(URDF, "left", IkConfig.from_params(RELAXED_IK.get("solver"), where="solver"))


@pytest.fixture(scope="module")
def right() -> ArmIK:
    return ArmIK(URDF, "right")


def collision_free_configs(ik: ArmIK, n: int, seed: int) -> list[np.ndarray]:
    rng, out = np.random.default_rng(seed), []
    while len(out) < n:
        q = rng.uniform(ik.lower, ik.upper)
        if ik.min_distance(q) > 0.0:
            out.append(q)
    return out


def test_fk_matches_the_reference_table(left, right):
    # ../shared/reference/r1_kinematics.md §5 (a)
    np.testing.assert_allclose(left.fk(np.zeros(6)).translation, [0.086181, 0.337700, 0.302850], atol=2e-6)
    np.testing.assert_allclose(right.fk(np.zeros(6)).translation, [0.086182, -0.337703, 0.302850], atol=2e-6)
    q = np.array([0.5, 1.0, -1.5, 0.3, -0.4, 0.8])
    np.testing.assert_allclose(left.fk(q).translation, [0.182006, 0.800296, 0.271974], atol=2e-6)
    np.testing.assert_allclose(right.fk(q).translation, [0.182011, -0.800297, 0.333729], atol=2e-6)


def test_cold_solves_meet_2000_reachable_targets(left):
    configs = collision_free_configs(left, 2000, seed=7)
    results = [left.solve_cold(left.fk(q)) for q in configs]
    reached = sum(r.reached for r in results)
    assert reached / len(results) >= 0.995, f"{reached} of {len(results)} reached"
    for r, q in zip(results, configs):
        assert np.all(np.isfinite(r.q))
        assert np.all(r.q >= left.lower) and np.all(r.q <= left.upper)
        if r.reached:   # the reported errors are the true ones
            pose, goal = left.fk(r.q), left.fk(q)
            assert np.linalg.norm(pose.translation - goal.translation) < 1e-3
            assert np.linalg.norm(pin.log3(goal.rotation.T @ pose.rotation)) < 1e-2


def test_right_arm_cold_solves(right):
    configs = collision_free_configs(right, 100, seed=3)
    reached = sum(right.solve_cold(right.fk(q)).reached for q in configs)
    assert reached >= 99


def stream(ik: ArmIK, targets: list[pin.SE3], start: np.ndarray = START):
    ik.reset(start)
    prev, out = start.copy(), []
    for t in targets:
        r = ik.solve(t)
        assert np.all(np.isfinite(r.q)), "NaN left the solver"
        assert np.all(r.q >= ik.lower) and np.all(r.q <= ik.upper), "joint limit"
        assert np.max(np.abs(r.q - prev)) <= ik.config.max_step + 1e-9, "jump above max_step"
        prev = r.q
        out.append(r)
    return out


def test_streamed_circle_and_line_are_followed_without_jumps(left):
    t0 = left.fk(START)
    rot = t0.rotation
    circle = [pin.SE3(rot, t0.translation + 0.1 * np.array([0.0, np.cos(a) - 1, np.sin(a)]))
              for a in np.linspace(0, 2 * np.pi, 629)]
    line = [pin.SE3(rot, t0.translation + np.array([0.0, 0.0, -0.2 * s])) for s in np.linspace(0, 1, 300)]
    for name, path in (("circle", circle), ("line", line)):
        res = stream(left, path)
        reached = sum(r.reached for r in res)
        # ticks not met are the few of a reconfiguration past a wrist singularity (step-limited)
        assert reached >= 0.9 * len(res), f"{name}: {reached} of {len(res)} reached"
        assert res[-1].reached, f"{name}: end not reached"


def test_target_out_of_reach_and_back(left):
    t0 = left.fk(START)
    s = np.concatenate([np.linspace(0, 1, 150), np.linspace(1, 0, 150)])
    path = [pin.SE3(t0.rotation, t0.translation + np.array([0.6 * x, 0.0, 0.0])) for x in s]
    res = stream(left, path)
    far = res[149]
    assert not far.reached and far.position_error > 0.05       # 0.6 m further out is beyond the reach
    best = left.solve_cold(path[149])
    assert far.position_error < best.position_error + 0.02, "not approached as closely as possible"
    assert res[-1].reached, "back in reach, not reached again"


def test_non_finite_target_keeps_the_previous_solution(left):
    left.reset(START)
    bad = pin.SE3(np.eye(3), np.array([np.nan, 0.0, 0.0]))
    r = left.solve(bad)
    np.testing.assert_array_equal(r.q, START)
    assert not r.reached
    assert np.all(np.isfinite(left.solve_cold(bad).q))


@pytest.mark.filterwarnings("error")         # numpy's overflow warnings too
@pytest.mark.parametrize("translation", [[1e308, 0.0, 0.0], [0.3, 0.2, 1e308], [1e200] * 3, [2e4, 0.0, 0.0]])
def test_a_huge_finite_target_keeps_the_previous_solution(left, translation):
    """Regression (issue 19): finite 1e308 coordinates overflowed in the solver (numpy warnings, an
    IndexError in the collision check); such a pose is no target."""
    left.reset(START)
    r = left.solve(pin.SE3(np.eye(3), np.array(translation)))
    np.testing.assert_array_equal(r.q, START)
    assert not r.reached and r.position_error == np.inf


def test_self_collision_is_avoided(left):
    # the hand into the torso: the solver must stop short of touching it
    target = pin.SE3(np.eye(3), np.array([0.05, 0.05, 0.2]))
    cold = left.solve_cold(target)
    assert left.min_distance(cold.q) > 0.0
    t0 = left.fk(START)
    path = [pin.SE3(t0.rotation, (1 - s) * t0.translation + s * target.translation) for s in np.linspace(0, 1, 200)]
    res = stream(left, path + [path[-1]] * 50)
    assert min(left.min_distance(r.q) for r in res) > 0.0


def test_cold_answers_are_never_in_collision(left):
    """Targets whose own posture collides: met by another, clear posture, else the closest clear
    approach; never an answer inside the body (the least-penetrating answer was returned when
    none was clear: met, but in collision)."""
    rng = np.random.default_rng(7)
    targets = [left.fk(q) for q in rng.uniform(left.lower, left.upper, size=(400, 6)) if left.min_distance(q) <= 0.0]
    assert len(targets) > 20
    for target in targets:
        r = left.solve_cold(target)
        assert left.min_distance(r.q) > 0.0
        assert r.iterations <= left.config.max_iterations_cold + left.config.max_iterations


def test_bad_side_and_solve_before_reset():
    with pytest.raises(ValueError):
        ArmIK(URDF, "middle")
    ik = ArmIK(URDF, "right")
    with pytest.raises(RuntimeError):
        ik.solve(ik.fk(np.zeros(6)))


def test_reach_is_the_arms_and_bounds_every_posture(left, right):
    """The reach (r1_kinematics.md §5: max |wrist centre - shoulder| 0.632 m) measured on the
    model; the wrist centre a target asks for is the FK one for every posture, never beyond it."""
    for ik in (left, right):
        assert ik.reach == pytest.approx(0.632, abs=1e-3)
        shoulder = ik.wrist_reach.shoulder
        rng = np.random.default_rng(2)
        for q in rng.uniform(ik.lower, ik.upper, size=(300, 6)):
            d = ik.wrist_distance(ik.fk(q))
            # spherical to 1.3 µm
            assert d == pytest.approx(float(np.linalg.norm(ik.arm.wrist_centre(q) - shoulder)), abs=1e-5)
            assert d <= ik.reach + 1e-5
            assert not ik.beyond_reach(ik.fk(q))
    straight = left.fk(np.array([0.0, 3.0844, -2.8346, 0.0, 0.0, 0.0]))      # arm straight forward
    assert left.wrist_distance(straight) == pytest.approx(left.reach, abs=2e-3)
    further = pin.SE3(straight.rotation, straight.translation + np.array([0.01, 0.0, 0.0]))
    assert left.beyond_reach(further)


def test_a_target_out_of_reach_costs_no_search(left):
    """Streaming past the reach: no posture can meet the target, so no solve searches for one
    (a cold search there cost tens of solves' time) and every solve stays within its iterations."""
    q0 = np.array([0.9, 2.2, -1.2, -0.4, -1.0, 0.0])
    t0 = left.fk(q0)
    out = t0.translation - left.wrist_reach.shoulder
    out /= np.linalg.norm(out)
    left.reset(q0)
    beyond = 0
    for s in np.linspace(0.0, 0.35, 120):
        target = pin.SE3(t0.rotation, t0.translation + s * out)
        r = left.solve(target)
        if left.beyond_reach(target):
            beyond += 1
            assert r.iterations <= left.config.max_iterations
            assert not r.reached and np.all(np.isfinite(r.q))
    assert beyond > 20


def test_smoothness_block_equals_relaxed_iks_three_terms():
    """The one folded block has the Gauss-Newton matrix and gradient of the velocity,
    acceleration and jerk rows it replaces (so the same steps)."""
    rng = np.random.default_rng(4)
    w = IkWeights()
    for _ in range(20):
        q, h1, h2, h3 = rng.normal(size=(4, 6))
        scale, centre = smoothness_anchor([h3, h2, h1], w)
        rows = np.concatenate([w.velocity * (q - h1), w.acceleration * (q - 2 * h1 + h2),
                               w.jerk * (q - 3 * h1 + 3 * h2 - h3)])
        jac = np.vstack([w.velocity * np.eye(6), w.acceleration * np.eye(6), w.jerk * np.eye(6)])
        np.testing.assert_allclose(scale ** 2 * np.eye(6), jac.T @ jac, atol=1e-12)
        np.testing.assert_allclose(scale * scale * (q - centre), jac.T @ rows, atol=1e-12)
    assert smoothness_anchor([], w) is None


def test_streamed_answers_never_enter_the_body(left, right):
    """Targets met only in collision, streamed from a clear posture nearby: the soft barrier alone
    let 12 of 40 such streams into the body (a recovery's straight way too); every answer is clear."""
    for ik in (left, right):
        rng = np.random.default_rng(8)
        free = (ik.lower + ik.upper) / 2
        assert ik.min_distance(free) > 0.05
        checked = blocked = 0
        for _ in range(2000):
            q_in = rng.uniform(ik.lower, ik.upper)
            if ik.min_distance(q_in) >= 0.0:
                continue
            # the first posture 1 cm clear on the way from the colliding one to the middle of the ranges
            ways = [q_in + t * (free - q_in) for t in np.linspace(0.0, 1.0, 41)]
            q0 = next(q for q in ways if ik.min_distance(q) > 0.01)
            ik.reset(q0)
            ik.collision.bound = None
            target = ik.fk(q_in)
            for _ in range(5):
                r = ik.solve(target)
                assert ik.min_distance(r.q) > -1e-9
                blocked += r.blocked
            checked += 1
            if checked == 40:
                break
        assert checked == 40 and blocked > 0
