"""The compiled IK passes (mobiman.arm.kernel) against pinocchio and ArmIK's Python loop."""
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from mobiman.arm import kernel as K
from mobiman.arm.ik import LWA, SOFT_PLATEAU, SR_DAMPING, SR_SIGMA, STALL_RATIO, STALL_STEPS, ArmIK, IkConfig, IkWeights

PKG = Path(__file__).resolve().parents[2]
URDF = (PKG.parent / "r1_description" / "urdf" / "r1_v2_1_0.urdf").read_text()


@pytest.fixture(scope="module", params=["left", "right"])
def ik(request) -> ArmIK:
    cfg = IkConfig.from_dict(yaml.safe_load((PKG / "config" / "relaxed_ik.yaml").read_text())["solver"])
    return ArmIK(URDF, request.param, cfg)


def settings(ik: ArmIK) -> np.ndarray:
    w, cfg = ik.config.weights, ik.config
    return K.ArmChain.settings(w.position, w.orientation, 1e-3, cfg.position_tolerance, cfg.orientation_tolerance,
                               STALL_RATIO, SR_SIGMA, SR_DAMPING)


def test_forward_kinematics_and_jacobian_match_pinocchio(ik):
    chain = K.ArmChain.from_model(ik.model, ik._ee)
    assert chain is not None
    rng = np.random.default_rng(3)
    for _ in range(300):
        q = rng.uniform(ik.lower, ik.upper)
        R, p, J = K.forward(q, chain.chain)
        pin.computeJointJacobians(ik.model, ik.data, q)
        oMe = pin.updateFramePlacement(ik.model, ik.data, ik._ee)
        np.testing.assert_allclose(R, oMe.rotation, atol=1e-12)
        np.testing.assert_allclose(p, oMe.translation, atol=1e-12)
        np.testing.assert_allclose(J, pin.getFrameJacobian(ik.model, ik.data, ik._ee, LWA), atol=1e-12)


@pytest.mark.parametrize("angle", [0.0, 1e-9, 1e-6, 1e-4, 5e-3, 1e-2, 0.3, 1.5, 3.0, np.pi - 1e-3,
                                   np.pi - 1e-7, np.pi - 1e-10, np.pi])
def test_log3_and_its_jacobian_match_pinocchio(angle):
    rng = np.random.default_rng(int(angle * 1e6) % 1000)
    for _ in range(20):
        axis = rng.normal(size=3)
        R = pin.exp3(axis / np.linalg.norm(axis) * angle)
        w = K.log3(R)
        # the rotation vector is exact wherever it is defined (at a half turn ±axis are the same rotation)
        np.testing.assert_allclose(pin.exp3(w), R, atol=1e-12)
        assert abs(np.linalg.norm(w) - angle) < 1e-9
        if angle < np.pi - 1e-3:
            np.testing.assert_allclose(w, pin.log3(R), atol=1e-9)
            np.testing.assert_allclose(K.jlog3(w), pin.Jlog3(R), atol=1e-9)


def test_the_task_pass_takes_the_python_loops_steps(ik):
    """Same objective, same steps: the compiled pass ends where ArmIK._lm(soft=False) ends."""
    chain, s = K.ArmChain.from_model(ik.model, ik._ee), settings(ik)
    rng = np.random.default_rng(11)
    task = ik._task_weights
    far_apart, same_iterations = 0, 0
    for n in range(300):
        target = ik.fk(rng.uniform(ik.lower, ik.upper))
        seed = rng.uniform(ik.lower, ik.upper)
        stall = STALL_STEPS if n % 2 else None
        q, pe, re, it, _ = ik._lm(seed.copy(), target, [], 40, soft=False, weights=task, stall=stall)
        out = K.lm_pass(seed, (ik._oMt * target).homogeneous, chain.chain, chain.bounds, s, False, seed, 0.0, 40,
                        -1 if stall is None else stall)
        far_apart += np.abs(out[:6] - q).max() > 1e-6
        same_iterations += int(out[8]) == it
        assert np.all(out[:6] >= ik.lower) and np.all(out[:6] <= ik.upper)
        # its errors are those of its own answer
        pose = ik.fk(out[:6])
        assert abs(out[6] - np.linalg.norm(pose.translation - target.translation)) < 1e-9
        assert abs(out[7] - np.linalg.norm(pin.log3(target.rotation.T @ pose.rotation))) < 1e-9
    # LAPACK's Cholesky (Python) and LU (compiled) round differently: a step or two in 300 may land
    # on the other side of a tolerance, never anywhere else
    assert far_apart <= 3
    assert same_iterations >= 290


def test_joints_on_a_limit_are_held_there(ik):
    """A target just past a joint's limit: the pass stops that joint on its limit and moves the others."""
    chain, s = K.ArmChain.from_model(ik.model, ik._ee), settings(ik)
    q_goal = (ik.lower + ik.upper) / 2
    q_goal[2] = ik.upper[2] + 0.15
    start = q_goal.copy()
    start[2] = ik.upper[2]
    start[0] += 0.1
    out = K.lm_pass(start, (ik._oMt * ik.fk(q_goal)).homogeneous, chain.chain, chain.bounds, s, False, start, 0.0,
                    30, -1)
    assert out[2] == ik.upper[2]
    q, *_ = ik._lm(start.copy(), ik.fk(q_goal), [], 30, soft=False, weights=ik._task_weights)
    np.testing.assert_allclose(out[:6], q, atol=1e-6)


def test_a_model_that_is_not_a_revolute_chain_gets_no_kernel(ik):
    assert K.ArmChain.from_model(ik.full, ik.full.getFrameId("left_gripper_link")) is None


def test_without_the_kernel_arm_ik_answers_the_same(ik):
    """ArmIK falls back to its Python loop where the model has no compiled chain: same answers."""
    rng = np.random.default_rng(5)
    targets = [ik.fk(rng.uniform(ik.lower, ik.upper)) for _ in range(40)]
    compiled = [ik.solve_cold(t) for t in targets]
    saved = ik._chain
    try:
        ik._chain = None
        python = [ik.solve_cold(t) for t in targets]
    finally:
        ik._chain = saved
    assert sum(a.reached == b.reached for a, b in zip(compiled, python)) >= 39
    assert sum(np.abs(a.q - b.q).max() < 1e-6 for a, b in zip(compiled, python)) >= 38


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
    saved = ik._stream
    try:
        for stream, out in ((saved, compiled), (None, general)):
            ik._stream = stream
            ik.set_other_arm(np.zeros(6))
            ik.reset(q0)
            out += [ik.solve(t) for t in targets]
    finally:
        ik._stream = saved
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
    prev = ik._history[-1]
    assert ik._solve_compiled(prev, targets[1]) is not None          # a small step: done in one call
    ik.reset(q0)
    assert ik._solve_compiled(prev, targets[120]) is None            # out of reach: the general path
    assert ik._solve_compiled(prev, targets[150]) is None            # NaN: the general path
    assert ik._solve_compiled(prev, targets[-1]) is None             # more than max_step away


def _soft_settings(ik: ArmIK, w) -> np.ndarray:
    cfg = ik.config
    return K.ArmChain.settings(w.position, w.orientation, 1e-3, cfg.position_tolerance, cfg.orientation_tolerance,
                               STALL_RATIO, SR_SIGMA, SR_DAMPING, w.joint_limit, cfg.joint_limit_margin, w.singularity,
                               cfg.singularity_threshold, SOFT_PLATEAU)


def test_the_singularity_barrier_matches_the_python_one(ik):
    """Value and gradient of the |det J| barrier, at postures near the wrist's and the elbow's singularities."""
    rng = np.random.default_rng(4)
    chain = K.ArmChain.from_model(ik.model, ik._ee)
    thr, weight, active = ik.config.singularity_threshold, 0.5, 0
    for n in range(400):
        q = rng.uniform(ik.lower, ik.upper)
        q[4 if n % 2 else 2] = rng.normal(scale=0.02)          # joint 5 (wrist) or joint 3 (elbow) near straight
        rows, jac = [], []
        pin.computeJointJacobians(ik.model, ik.data, q)
        ik._singularity_rows(q, weight, rows, jac)
        scratch, row = np.empty((15, 3)), np.zeros(6)
        K._forward_into(q, chain.chain, np.empty((3, 3)), np.empty(3), np.empty((6, 6)), scratch)
        value = K._singularity_row(scratch, weight, thr, row)
        if not rows:
            assert value == 0.0
            continue
        active += 1
        assert abs(value - rows[0][0]) < 1e-9
        np.testing.assert_allclose(row, jac[0][0], atol=1e-9 * max(1.0, np.abs(jac[0][0]).max()))
    assert active > 50


def test_the_full_objective_pass_takes_the_python_loops_steps(ik):
    """Smoothness, joint-limit and singularity terms: lm_pass(soft) ends where ArmIK._lm(soft) ends
    (without the collision barrier, which stays in Python), on reachable and unreachable targets,
    from postures near the limits."""
    w = IkWeights(**{**vars(ik.config.weights), "collision": 0.0})
    s, chain = _soft_settings(ik, w), K.ArmChain.from_model(ik.model, ik._ee)
    rng = np.random.default_rng(21)
    apart, limits_active = 0, 0
    for n in range(300):
        q0 = rng.uniform(ik.lower, ik.upper)
        if n % 3 == 0:                                    # a joint within the barrier's margin of a limit
            k = rng.integers(6)
            q0[k] = ik.lower[k] + 0.03 if n % 2 else ik.upper[k] - 0.03
            limits_active += 1
        history = [q0 - 0.02 * rng.normal(size=6) for _ in range(2)] + [q0]
        history = [np.clip(h, ik.lower, ik.upper) for h in history]
        pose = ik.fk(np.clip(q0 + rng.normal(scale=0.3, size=6), ik.lower, ik.upper))
        if n % 4 == 0:                                    # out of reach
            pose = pin.SE3(pose.rotation, pose.translation * 2.0)
        q, pe, re, it, _ = ik._lm(q0.copy(), pose, history, 30, soft=True, weights=w)
        scale, centre = ik._smoothness_anchor(history, w)
        out = K.lm_pass(q0, (ik._oMt * pose).homogeneous, chain.chain, chain.bounds, s, True, centre, scale, 30, -1)
        apart += np.abs(out[:6] - q).max() > 1e-6
        assert np.all(out[:6] >= ik.lower) and np.all(out[:6] <= ik.upper)
    assert apart <= 3 and limits_active == 100
