"""The compiled IK passes (mobiman.arm.kernel*) against pinocchio, numpy, finite differences and known
solutions."""
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from mobiman.arm import kernel as K
from mobiman.arm.ik import ArmIK, IkConfig
from mobiman.arm.kernel_chain import (
    SCR_AXIS,
    SCR_ORIGIN,
    SCR_ROTATION,
    SCRATCH_ROWS,
    ArmChain,
    forward,
    joint_frames,
    singularity_row,
)
from mobiman.arm.kernel_linalg import adjugate, jlog3, log3, smallest_sv_below, spd_solve
from mobiman.arm.solver import CONTACT_MARGIN, SR_SIGMA, smoothness_anchor

PKG = Path(__file__).resolve().parents[2]
URDF = (PKG.parent / "r1_description" / "urdf" / "r1_v2_1_0.urdf").read_text()
LWA = pin.LOCAL_WORLD_ALIGNED


@pytest.fixture(scope="module", params=["left", "right"])
def ik(request) -> ArmIK:
    solver = (yaml.safe_load((PKG / "config" / "relaxed_ik.yaml").read_text()) or {}).get("solver")
    return ArmIK(URDF, request.param, IkConfig.from_params(solver, where="solver"))


def test_forward_kinematics_jacobian_and_joint_frames_match_pinocchio(ik):
    chain, m, d = ik.arm.chain.chain, ik.model, ik.data
    rng = np.random.default_rng(3)
    for _ in range(300):
        q = rng.uniform(ik.lower, ik.upper)
        R, p, J = forward(q, chain)
        pin.computeJointJacobians(m, d, q)
        oMe = pin.updateFramePlacement(m, d, ik.arm.ee)
        np.testing.assert_allclose(R, oMe.rotation, atol=1e-12)
        np.testing.assert_allclose(p, oMe.translation, atol=1e-12)
        np.testing.assert_allclose(J, pin.getFrameJacobian(m, d, ik.arm.ee, LWA), atol=1e-12)
        frames = joint_frames(q, chain)
        for j in range(6):
            np.testing.assert_allclose(frames[SCR_ORIGIN + j], d.oMi[j + 1].translation, atol=1e-12)
            np.testing.assert_allclose(frames[SCR_ROTATION + 3 * j:SCR_ROTATION + 3 * j + 3], d.oMi[j + 1].rotation,
                                       atol=1e-12)
            np.testing.assert_allclose(frames[SCR_AXIS + j], pin.getJointJacobian(m, d, j + 1, LWA)[3:, j],
                                       atol=1e-12)


@pytest.mark.parametrize("angle", [0.0, 1e-9, 1e-6, 1e-4, 5e-3, 1e-2, 0.3, 1.5, 3.0, np.pi - 1e-3,
                                   np.pi - 1e-7, np.pi - 1e-10, np.pi])
def test_log3_and_its_jacobian_match_pinocchio(angle):
    rng = np.random.default_rng(int(angle * 1e6) % 1000)
    for _ in range(20):
        axis = rng.normal(size=3)
        R = pin.exp3(axis / np.linalg.norm(axis) * angle)
        w = log3(R)
        # the rotation vector is exact wherever it is defined (at a half turn ±axis are the same rotation)
        np.testing.assert_allclose(pin.exp3(w), R, atol=1e-12)
        assert abs(np.linalg.norm(w) - angle) < 1e-9
        if angle < np.pi - 1e-3:
            np.testing.assert_allclose(w, pin.log3(R), atol=1e-9)
            np.testing.assert_allclose(jlog3(w), pin.Jlog3(R), atol=1e-9)


def test_the_small_algebra_matches_numpy():
    """spd_solve solves, the adjugate is det·A⁻¹ (and A·adj(A) = det·I for a singular A), and
    smallest_sv_below never hides a singular value below its threshold."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        A = rng.normal(size=(6, 6))
        H = A.T @ A + 1e-3 * np.eye(6)
        b = rng.normal(size=6)
        np.testing.assert_allclose(H @ spd_solve(H, b), b, atol=1e-8)
        np.testing.assert_allclose(adjugate(A), np.linalg.det(A) * np.linalg.inv(A), atol=1e-9)
        u, s, vt = np.linalg.svd(A)
        s[-1] = 0.0
        singular = u @ np.diag(s) @ vt
        np.testing.assert_allclose(singular @ adjugate(singular), np.zeros((6, 6)), atol=1e-9)
    skipped = 0
    for _ in range(2000):
        u, s, vt = np.linalg.svd(rng.normal(size=(6, 6)))
        s[-1] = rng.uniform(0.0, 3.0) * SR_SIGMA
        A = u @ np.diag(s) @ vt
        true = np.linalg.svd(A, compute_uv=False)[-1]
        got = smallest_sv_below(A.T @ A, SR_SIGMA)
        if true >= SR_SIGMA + 1e-9:
            assert got == SR_SIGMA
            skipped += 1
        elif true < SR_SIGMA - 1e-9:
            assert got == pytest.approx(true, abs=1e-7)
    assert skipped > 500


def _rows(ik: ArmIK, q, goal, vector, soft, centre, scale):
    """The objective's rows and Jacobian at q (kernel._evaluate), with the arm's capsules."""
    col, chain = ik.collision, ik.arm.chain
    goal_rt, goal_p = np.ascontiguousarray(goal[:3, :3].T), np.ascontiguousarray(goal[:3, 3])
    size = K.TASK_ROWS + len(col.capsules) * len(col.fixed) + len(col.pairs)
    r, A = np.zeros(size), np.zeros((size, 6))
    n, pe, re = K._evaluate(q, goal_rt, goal_p, chain.chain, chain.bounds, vector, soft, centre, scale, col.capsules,
                            col.fixed, col.pairs, np.empty((SCRATCH_ROWS, 3)), np.empty((3, 3)), np.empty(3),
                            np.empty((6, 6)), r, A)
    return r[:n].copy(), A[:n].copy(), pe, re


def test_the_objectives_jacobian_is_the_derivative_of_its_rows(ik):
    """Every row kind (task, smoothness, joint-limit, collision and singularity barriers): the
    Jacobian the passes step with is the central difference of the rows, at postures near the
    limits, the body and the singularities."""
    w, eps = ik.config.weights, 1e-6
    rng = np.random.default_rng(21)
    soft_vector = ik.passes.vector(w, ik.config.collision_margin)
    task_vector = ik.passes.vector(w, CONTACT_MARGIN)
    kinds, checked = set(), 0
    for n in range(600):
        q = rng.uniform(ik.lower, ik.upper)
        if n % 3 == 0:                                    # a joint within the barrier's margin of a limit
            k = rng.integers(6)
            q[k] = ik.lower[k] + 0.03 if n % 2 else ik.upper[k] - 0.03
        if n % 5 == 0:
            q[4 if n % 2 else 2] = rng.normal(scale=0.02)    # joint 5 (wrist) or 3 (elbow) near straight
        goal = (ik.arm.oMt * ik.fk(np.clip(q + rng.normal(scale=0.3, size=6), ik.lower, ik.upper))).homogeneous
        history = [np.clip(q + 0.05 * rng.normal(size=6), ik.lower, ik.upper) for _ in range(3)]
        scale, centre = smoothness_anchor(history, w)
        soft = n % 2 == 0
        vector = soft_vector if soft else task_vector
        r, A, _, _ = _rows(ik, q, goal, vector, soft, centre, scale)
        fd = np.empty_like(A)
        for j in range(6):
            e = np.zeros(6)
            e[j] = eps
            rp, rm = _rows(ik, q + e, goal, vector, soft, centre, scale)[0], _rows(ik, q - e, goal, vector, soft,
                                                                                  centre, scale)[0]
            if len(rp) != len(r) or len(rm) != len(r):
                break                                     # a barrier switched on or off within eps
            fd[:, j] = (rp - rm) / (2 * eps)
        else:
            np.testing.assert_allclose(A, fd, atol=2e-5 * max(1.0, np.abs(A).max()))
            checked += 1
            kinds.add(("soft" if soft else "task", len(r)))
    assert checked > 550
    assert any(kind == "soft" and rows > 12 for kind, rows in kinds)      # barrier rows were among them
    assert any(kind == "task" and rows > 6 for kind, rows in kinds)       # collision rows in a task pass


def test_the_singularity_barrier_is_the_determinants_derivative(ik):
    """Its value is weight·(thr − |det J|)/thr with pinocchio's Jacobian, its gradient the central
    difference of that, at random postures (always active) and near the wrist's and elbow's singularities."""
    m, d = ik.model, ik.data

    def det(q: np.ndarray) -> float:
        pin.computeJointJacobians(m, d, q)
        return float(np.linalg.det(pin.getJointJacobian(m, d, 6, LWA)))

    rng = np.random.default_rng(4)
    active = 0
    for n in range(400):
        q = rng.uniform(ik.lower, ik.upper)
        thr = 1e9 if n < 20 else ik.config.singularity_threshold
        if n >= 20:
            q[4 if n % 2 else 2] = rng.normal(scale=0.02)
        row = np.zeros(6)
        value = singularity_row(joint_frames(q, ik.arm.chain.chain), 0.5, thr, row)
        if abs(det(q)) >= thr:
            assert value == 0.0
            continue
        active += 1
        assert value == pytest.approx(0.5 * (thr - abs(det(q))) / thr, rel=1e-9, abs=1e-12)
        fd = np.array([(abs(det(q + 1e-6 * e)) - abs(det(q - 1e-6 * e))) / 2e-6 for e in np.eye(6)])
        np.testing.assert_allclose(-row * thr / 0.5, fd, atol=1e-7)
    assert active > 70


def test_the_task_pass_meets_known_solutions(ik):
    """From a seed near a posture, the task pass reaches that posture's pose; its reported errors are
    pinocchio's for its answer, which stays within the limits; targets out of reach end finite."""
    vector = ik.passes.vector(ik.cold.task_weights)
    chain = ik.arm.chain
    none = (np.empty((0, 8)), np.empty((0, 7)), np.empty((0, 2), np.int64))
    rng = np.random.default_rng(11)
    met = 0
    for n in range(300):
        q_star = rng.uniform(ik.lower, ik.upper)
        target = ik.fk(q_star)
        if n % 4 == 0:                                    # out of reach
            target = pin.SE3(target.rotation, target.translation * 2.0)
        seed = np.clip(q_star + rng.normal(scale=0.1, size=6), ik.lower, ik.upper)
        out = K.lm_pass(seed, (ik.arm.oMt * target).homogeneous, chain.chain, chain.bounds, vector, False, seed, 0.0,
                        40, -1, *none)
        q = out[K.OUT_Q:K.OUT_Q + 6]
        assert np.all(q >= ik.lower) and np.all(q <= ik.upper) and np.all(np.isfinite(out))
        pe, re = ik.arm.errors(q, target)
        assert abs(out[K.OUT_POSITION_ERROR] - pe) < 1e-9 and abs(out[K.OUT_ORIENTATION_ERROR] - re) < 1e-9
        if n % 4:
            met += pe < ik.config.position_tolerance and re < ik.config.orientation_tolerance
    assert met >= 220           # of 225: a seed 0.1 rad off can sit across a limit or a singularity


def test_joints_on_a_limit_are_held_there(ik):
    """A target just past a joint's limit: the pass stops that joint on its limit and moves the others
    toward the target."""
    chain, vector = ik.arm.chain, ik.passes.vector(ik.cold.task_weights)
    q_goal = (ik.lower + ik.upper) / 2
    q_goal[2] = ik.upper[2] + 0.15
    start = q_goal.copy()
    start[2] = ik.upper[2]
    start[0] += 0.1
    target = (ik.arm.oMt * ik.fk(q_goal)).homogeneous
    out = K.lm_pass(start, target, chain.chain, chain.bounds, vector, False, start, 0.0, 30, -1, np.empty((0, 8)),
                    np.empty((0, 7)), np.empty((0, 2), np.int64))
    assert out[2] == ik.upper[2]
    assert abs(out[0] - q_goal[0]) < 0.1 and out[K.OUT_POSITION_ERROR] < ik.arm.errors(start, ik.fk(q_goal))[0]


def test_a_model_that_is_not_a_revolute_chain_gets_no_kernel(ik):
    assert ArmChain.from_model(ik.arm.full, ik.arm.full.getFrameId("left_gripper_link")) is None


def test_the_full_objective_pass_never_ends_above_its_start(ik):
    """The accept rule: a soft pass (barriers, smoothness, collision rows) ends at a cost no higher
    than where it started, within the limits."""
    w = ik.config.weights
    vector, chain, col = ik.passes.vector(w, ik.config.collision_margin), ik.arm.chain, ik.collision
    rng = np.random.default_rng(8)
    for _ in range(100):
        q0 = rng.uniform(ik.lower, ik.upper)
        history = [np.clip(q0 + 0.02 * rng.normal(size=6), ik.lower, ik.upper) for _ in range(3)]
        scale, centre = smoothness_anchor(history, w)
        goal = (ik.arm.oMt * ik.fk(rng.uniform(ik.lower, ik.upper))).homogeneous
        out = K.lm_pass(q0, goal, chain.chain, chain.bounds, vector, True, centre, scale, 30, -1, col.capsules,
                        col.fixed, col.pairs)
        q = out[K.OUT_Q:K.OUT_Q + 6]
        assert np.all(q >= ik.lower) and np.all(q <= ik.upper)
        start = _rows(ik, q0, goal, vector, True, centre, scale)[0]
        end = _rows(ik, q, goal, vector, True, centre, scale)[0]
        assert end @ end <= start @ start


def _stream_targets(ik: ArmIK) -> list:
    """A circle around a posture's hand, then a jump out of reach and back, a NaN and a step too big."""
    q0 = np.array([0.3, 1.0, -1.4, 0.2, 0.4, 0.1]) * (1 if ik.side == "left" else np.array([-1, 1, 1, -1, 1, -1]))
    centre = ik.fk(q0)
    targets = []
    for k in range(120):
        a = 2 * np.pi * k / 120
        targets.append(pin.SE3(centre.rotation, centre.translation + 0.08 * np.array([np.cos(a) - 1, np.sin(a), 0])))
    far = pin.SE3(centre.rotation, centre.translation + np.array([0.6, 0.0, 0.0]))
    targets += [far] * 10 + targets[:20]
    bad = pin.SE3(centre.rotation, centre.translation)
    bad.translation = np.array([np.nan, 0.0, 0.0])
    targets += [bad] + targets[20:40] + [ik.fk(q0 + 0.5)] * 5
    return q0, targets


def test_the_compiled_streamed_solve_answers_as_the_general_path(ik):
    """stream_pass is the common streamed solve in one call; ArmIK without it (the general path,
    which uses the compiled task pass too) gives the same answers on every tick."""
    q0, targets = _stream_targets(ik)
    compiled, general = [], []
    try:
        for fast, out in ((True, compiled), (False, general)):
            ik._fast_stream = fast
            ik.set_other_arm(np.zeros(6))
            ik.reset(q0)
            out += [ik.solve(t) for t in targets]
    finally:
        ik._fast_stream = True
    for a, b in zip(compiled, general):
        np.testing.assert_allclose(a.q, b.q, atol=1e-12)
        assert (a.reached, a.step_limited, a.blocked) == (b.reached, b.step_limited, b.blocked)
        if np.isfinite(b.position_error):
            assert abs(a.position_error - b.position_error) < 1e-9
    assert sum(r.reached for r in compiled) > 60 and any(r.step_limited for r in compiled)


def test_the_compiled_streamed_solve_takes_the_common_tick_only(ik):
    q0, targets = _stream_targets(ik)
    ik.set_other_arm(np.zeros(6))
    ik.reset(q0)
    prev = ik.state.previous
    assert ik._solve_compiled(prev, targets[1]) is not None          # a small step: done in one call
    ik.reset(q0)
    assert ik._solve_compiled(prev, targets[120]) is None            # out of reach: the general path
    assert ik._solve_compiled(prev, targets[150]) is None            # NaN: the general path
    assert ik._solve_compiled(prev, targets[-1]) is None             # more than max_step away
