"""ArmIK (RelaxedIK-style arm IK): accuracy, streaming, limits, collisions, gradients, config."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from mobiman.arm.capsules import segment_distance_py
from mobiman.arm.ik import LWA, OTHER_ARM_STILL, ArmIK, IkConfig, IkWeights

PKG = Path(__file__).resolve().parents[2]
URDF = (PKG.parent / "r1_description" / "urdf" / "r1_v2_1_0.urdf").read_text()
START = np.array([0.0, 1.2, -1.6, 0.0, 0.3, 0.0])       # left arm raised in front


@pytest.fixture(scope="module")
def left() -> ArmIK:
    cfg = IkConfig.from_dict(yaml.safe_load((PKG / "config" / "relaxed_ik.yaml").read_text())["solver"])
    return ArmIK(URDF, "left", cfg)


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


def test_the_contact_check_agrees_with_the_capsule_distances(left):
    """`ContactCheck` (coal capsules, C++) says "touching" exactly where the Python capsule
    distances are <= 0, and measures the same clearance, also after the other arm moved."""
    rng = np.random.default_rng(4)
    try:
        for other in (np.zeros(6), np.array([-0.5, 1.0, -1.0, 0.3, 0.2, 0.1])):
            left.set_other_arm(other)
            touching = 0
            for q in rng.uniform(left.lower, left.upper, size=(1500, 6)):
                d = left.min_distance(q)
                assert left._contact.touching(q) == (d <= 0.0), (q, d)
                exact = left._contact.min_distance(q)
                assert exact == pytest.approx(d, abs=1e-6) if d > 0.0 else exact <= 0.0
                touching += d <= 0.0
            assert touching > 30
    finally:
        left.set_other_arm(np.zeros(6))


def test_the_other_arm_is_placed_again_only_when_it_moved(left):
    """set_other_arm runs before every streamed solve in the node: an arm that moved no joint more
    than OTHER_ARM_STILL keeps its placement; one that moved is placed where the full model's FK
    puts it, and the C++ contact check measures against that placement."""
    full, data = left.full, left.full.createData()

    def expected(q_other):
        q = pin.neutral(full)
        for name, v in zip(left._other_names, q_other):
            q[full.joints[full.getJointId(name)].idx_q] = v
        pin.framesForwardKinematics(full, data, q)
        return [(data.oMf[full.getFrameId(c.link)].act(c.a), data.oMf[full.getFrameId(c.link)].act(c.b))
                for c in left._static_capsules + left._other_capsules]

    try:
        left.set_other_arm(np.zeros(6))
        placed = [a.copy() for a, _, _ in left._static]
        left.set_other_arm(np.full(6, 0.5 * OTHER_ARM_STILL))
        assert all(np.array_equal(a, b) for a, (b, _, _) in zip(placed, left._static))
        q_other = np.array([-0.4, 0.9, -1.2, 0.3, 0.2, 0.1])
        left.set_other_arm(q_other)
        for (a, b, _), (ea, eb) in zip(left._static, expected(q_other)):
            np.testing.assert_allclose(a, ea, atol=1e-12)
            np.testing.assert_allclose(b, eb, atol=1e-12)
        assert any(not np.allclose(a, b) for a, (b, _, _) in zip(placed, left._static))
        rng = np.random.default_rng(9)
        for q in rng.uniform(left.lower, left.upper, size=(300, 6)):
            d = left.min_distance(q)
            exact = left._contact.min_distance(q)
            assert exact == pytest.approx(d, abs=1e-6) if d > 0.0 else exact <= 0.0
    finally:
        left.set_other_arm(np.zeros(6))


def test_collision_barrier_gradient_is_the_analytic_one(left):
    """d(distance)/dq from point Jacobians equals finite differences on the capsule distance."""
    m, d = left.model, left.data
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(500):
        q = rng.uniform(left.lower, left.upper)
        pin.computeJointJacobians(m, d, q)
        pin.updateFramePlacements(m, d)
        caps = left._capsules_now()
        hits = [h for h in left._collisions(caps, 0.05) if h[4] is None and h[0] > 0.005]
        hits = [h for h in hits if len([g for g in left._collisions(caps, 0.05) if g[3] == h[3] and g[4] is None]) == 1]
        if not hits:
            continue
        dist, pa, pb, i, _ = hits[0]
        n = (pa - pb) / np.linalg.norm(pa - pb)
        grad = n @ left._point_jacobian(caps.fids[i], caps.origins[i], pa)

        def distance(qq: np.ndarray) -> float:
            pin.framesForwardKinematics(m, d, qq)
            now = left._capsules_now()
            a, b, r = now.a[i], now.b[i], now.r[i]
            # the nearest static capsule (the pair measured above, for a small perturbation)
            return min(segment_distance_py(a.tolist(), b.tolist(), left._static_a[k].tolist(),
                                           left._static_b[k].tolist())[0] - r - left._static_r[k]
                       for k in range(len(left._static_r)))

        eps = 1e-6
        fd = np.array([(distance(q + eps * e) - distance(q - eps * e)) / (2 * eps) for e in np.eye(6)])
        np.testing.assert_allclose(grad, fd, atol=1e-5)
        checked += 1
        if checked == 5:
            break
    assert checked >= 1


def test_singularity_barrier_gradient_is_the_analytic_one(left):
    m, d = left.model, left.data

    def det(q: np.ndarray) -> float:
        pin.computeJointJacobians(m, d, q)
        return float(np.linalg.det(pin.getJointJacobian(m, d, left._wrist_joint, LWA)))

    rng = np.random.default_rng(1)
    threshold = left.config.singularity_threshold
    left.config.singularity_threshold = 1e9            # always active
    try:
        for _ in range(5):
            q = rng.uniform(left.lower, left.upper)
            pin.computeJointJacobians(m, d, q)
            pin.updateFramePlacements(m, d)
            rows, jac = [], []
            left._singularity_rows(q, 1.0, rows, jac)
            analytic = -jac[0][0] * 1e9 * np.sign(det(q))
            fd = np.array([(det(q + 1e-6 * e) - det(q - 1e-6 * e)) / 2e-6 for e in np.eye(6)])
            np.testing.assert_allclose(analytic, fd, atol=1e-8)
    finally:
        left.config.singularity_threshold = threshold


def test_config_from_yaml_and_validation():
    cfg = IkConfig.from_dict(yaml.safe_load((PKG / "config" / "relaxed_ik.yaml").read_text())["solver"])
    assert cfg.max_step == 0.2 and cfg.weights.position > 0
    assert IkConfig.from_dict({}) == IkConfig()
    with pytest.raises(ValueError, match="unknown"):
        IkConfig.from_dict({"max_stepp": 0.1})
    with pytest.raises(ValueError, match="unknown"):
        IkConfig.from_dict({"weights": {"positon": 1.0}})
    with pytest.raises(ValueError):
        IkConfig.from_dict({"weights": {"velocity": -1.0}})
    with pytest.raises(ValueError):
        IkConfig.from_dict({"max_step": 0.0})
    with pytest.raises(ValueError):
        IkConfig.from_dict({"weights": {"position": 0.0}})
    assert isinstance(IkConfig().weights, IkWeights)


def test_bad_side_and_solve_before_reset():
    with pytest.raises(ValueError):
        ArmIK(URDF, "middle")
    ik = ArmIK(URDF, "right")
    with pytest.raises(RuntimeError):
        ik.solve(ik.fk(np.zeros(6)))


def test_segment_distance_is_the_minimum_over_both_segments():
    """Against brute force: the distance is the smallest over a fine grid of both segments'
    points (never above it, and the grid's spacing close), and the closest points lie on them."""
    rng = np.random.default_rng(3)
    grid = np.linspace(0.0, 1.0, 401)
    cases = [tuple(rng.normal(size=(4, 3))) for _ in range(200)]
    p = rng.normal(size=3)
    cases += [(p, p.copy(), *rng.normal(size=(2, 3))),                       # a point and a segment
              (*rng.normal(size=(2, 3)), p, p.copy())]
    d = rng.normal(size=3)
    cases.append((p, p + d, p + np.array([0.0, 0.3, 0.0]), p + np.array([0.0, 0.3, 0.0]) + 2 * d))   # parallel
    for p1, q1, p2, q2 in cases:
        dist, pa, pb = segment_distance_py(p1.tolist(), q1.tolist(), p2.tolist(), q2.tolist())
        s1 = p1 + grid[:, None] * (q1 - p1)
        s2 = p2 + grid[:, None] * (q2 - p2)
        brute = np.min(np.linalg.norm(s1[:, None, :] - s2[None, :, :], axis=2))
        assert dist <= brute + 1e-12
        assert brute - dist < 0.01 * (np.linalg.norm(q1 - p1) + np.linalg.norm(q2 - p2)) + 1e-12
        assert abs(dist - np.linalg.norm(np.subtract(pa, pb))) < 1e-12
        for x, a, b in ((np.array(pa), p1, q1), (np.array(pb), p2, q2)):     # on their segments
            assert abs(np.linalg.norm(x - a) + np.linalg.norm(b - x) - np.linalg.norm(b - a)) < 1e-9


def test_clearance_bound_never_misses_a_pair(left):
    """The temporal-coherence skip is sound: the clearance measured at q_ref, less twice the
    lever-arm bound of the posture change, never exceeds the true smallest distance at q."""
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(150):
        q_ref = rng.uniform(left.lower, left.upper)
        lower = left._contact.min_distance(q_ref)          # the clearance the solver measures
        for scale in (0.01, 0.05, 0.2):
            q = np.clip(q_ref + rng.normal(scale=scale, size=6), left.lower, left.upper)
            bound = lower - 2.0 * float(left._rho @ np.abs(q - q_ref))
            assert left.min_distance(q) >= bound - 1e-9
            checked += 1
    assert checked == 450
    # and it does skip: a tiny step from a clear posture needs no new measurement
    q0 = (left.lower + left.upper) / 2
    lower = left._contact.min_distance(q0)
    assert lower > 0.05                   # mid-range posture: the arm well clear of everything
    left._clear = (q0.copy(), lower)
    assert left._still_clear(q0 + 1e-3, 0.002)
    assert not left._still_clear(q0 + 0.5, 0.002)
    left._clear = None


def test_singular_value_shortcut_never_hides_a_small_one(left):
    """_smallest_singular_value may skip the SVD only when σ_min is surely above the threshold."""
    from mobiman.arm.ik import SR_SIGMA
    rng = np.random.default_rng(5)
    left._sv_ref = None
    a = 2.0 * np.eye(6) + 0.3 * rng.normal(size=(6, 6))     # well conditioned, as a task Jacobian mostly is
    skipped = 0
    for k in range(3000):
        a = a + rng.normal(scale=0.005, size=(6, 6))
        if k % 500 in (250, 300):                # a near-singular stretch, then back
            u, s, vt = np.linalg.svd(a)
            s[-1] = 0.1 * SR_SIGMA if k % 500 == 250 else 3.0 * SR_SIGMA
            a = u @ np.diag(s) @ vt
        true = np.linalg.svd(a, compute_uv=False)[-1]
        got = left._smallest_singular_value(a)
        if got >= SR_SIGMA:
            assert true >= SR_SIGMA - 1e-12
            skipped += got == SR_SIGMA and true != SR_SIGMA
        else:
            assert got == pytest.approx(true, abs=1e-12)
    assert skipped > 1000                        # and it does skip
    left._sv_ref = None


def test_reach_is_the_arms_and_bounds_every_posture(left, right):
    """The reach (r1_kinematics.md §5: max |wrist centre - shoulder| 0.632 m) measured on the
    model; the wrist centre a target asks for is the FK one for every posture, never beyond it."""
    for ik in (left, right):
        assert ik.reach == pytest.approx(0.632, abs=1e-3)
        rng = np.random.default_rng(2)
        for q in rng.uniform(ik.lower, ik.upper, size=(300, 6)):
            d = ik.wrist_distance(ik.fk(q))
            # spherical to 1.3 µm
            assert d == pytest.approx(float(np.linalg.norm(ik._wrist_centre(q) - ik._shoulder)), abs=1e-5)
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
    out = t0.translation - left._shoulder
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
        scale, centre = ArmIK._smoothness_anchor([h3, h2, h1], w)
        rows = np.concatenate([w.velocity * (q - h1), w.acceleration * (q - 2 * h1 + h2),
                               w.jerk * (q - 3 * h1 + 3 * h2 - h3)])
        jac = np.vstack([w.velocity * np.eye(6), w.acceleration * np.eye(6), w.jerk * np.eye(6)])
        np.testing.assert_allclose(scale ** 2 * np.eye(6), jac.T @ jac, atol=1e-12)
        np.testing.assert_allclose(scale * scale * (q - centre), jac.T @ rows, atol=1e-12)
    assert ArmIK._smoothness_anchor([], w) is None


def test_a_hand_inside_the_body_is_known_from_the_target_alone(left):
    """hand_blocked is sound (a posture whose target it flags is in collision: the hand's links
    are fixed to the gripper frame) and useful (it flags most of the random targets that only a
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
            ik._clear = None
            target = ik.fk(q_in)
            for _ in range(5):
                r = ik.solve(target)
                assert ik.min_distance(r.q) > -1e-9
                blocked += r.blocked
            checked += 1
            if checked == 40:
                break
        assert checked == 40 and blocked > 0
