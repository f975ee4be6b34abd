"""The ROS-free IK benchmark (mobiman.benchmarks.ik*): its chains match pinocchio, its targets are
reproducible, a short run reports."""
from __future__ import annotations

import json

import numpy as np
import pinocchio as pin
import pytest

from mobiman.benchmarks import ik_report, ik_run, ik_solvers, ik_targets


@pytest.fixture(scope="module")
def ref(r1_urdf) -> ik_targets.ArmReference:
    return ik_targets.ArmReference(r1_urdf, "left")


def test_urdf_chain_is_the_arm(r1_urdf):
    joints = ik_targets.urdf_chain(r1_urdf, "torso_link4", "left_gripper_link")
    moving = [j.name for j in joints if j.type != "fixed"]
    assert moving == [f"left_arm_joint{i}" for i in range(1, 7)]
    assert joints[0].name == "left_arm_base_joint" and joints[-1].child == "left_gripper_link"
    with pytest.raises(ValueError):
        ik_targets.urdf_chain(r1_urdf, "left_arm_link3", "right_gripper_link")


@pytest.mark.parametrize("side", ["left", "right"])
def test_kdl_chain_matches_pinocchio_fk(r1_urdf, side):
    import PyKDL
    arm = ik_targets.ArmReference(r1_urdf, side)
    chain = ik_solvers.kdl_chain(ik_targets.urdf_chain(r1_urdf, "torso_link4", f"{side}_gripper_link"))
    assert chain.getNrOfJoints() == 6
    assert isinstance(chain, PyKDL.Chain)
    for q in ik_targets.random_configurations(arm.lower, arm.upper, 50, seed=11):
        T_kdl, T_pin = ik_solvers.kdl_fk(chain, q), arm.fk(q)
        assert np.abs(T_kdl.translation - T_pin.translation).max() < 1e-9
        assert np.abs(T_kdl.rotation - T_pin.rotation).max() < 1e-9


def test_reference_fk_matches_the_published_table(ref):
    # r1_kinematics.md §5 (a): left gripper_link in torso_link4
    T = ref.fk(np.array([0.5, 1.0, -1.5, 0.3, -0.4, 0.8]))
    assert np.allclose(T.translation, [0.182006, 0.800296, 0.271974], atol=2e-6)
    assert np.allclose(pin.rpy.matrixToRpy(T.rotation), [1.30153, 0.08760, 0.34894], atol=2e-5)


def test_cold_targets_are_reproducible(ref):
    qa, Ta = ik_targets.cold_targets(ref, 30, seed=5)
    qb, Tb = ik_targets.cold_targets(ref, 30, seed=5)
    qc, _ = ik_targets.cold_targets(ref, 30, seed=6)
    assert np.array_equal(qa, qb)
    assert all(np.array_equal(a.homogeneous, b.homogeneous) for a, b in zip(Ta, Tb))
    assert not np.allclose(qa, qc)
    assert np.all(qa >= ref.lower) and np.all(qa <= ref.upper)
    # a longer run starts with the same targets (the RNG draws row by row)
    ql, _ = ik_targets.cold_targets(ref, 60, seed=5)
    assert np.array_equal(ql[:30], qa)
    for q, T in zip(qa, Ta):
        assert ref.errors(q, T) == pytest.approx((0.0, 0.0), abs=1e-12)


def test_wrist_reach_bounds_every_reachable_pose(ref):
    straight = ref.fk(np.array([0.0, 3.0844, -2.8346, 0.0, 0.0, 0.0]))    # arm straight forward
    assert ik_targets.wrist_distance(straight) == pytest.approx(ik_targets.WRIST_REACH, abs=1e-4)
    _, targets = ik_targets.cold_targets(ref, 300, seed=3)
    assert max(ik_targets.wrist_distance(T) for T in targets) <= ik_targets.WRIST_REACH + 1e-5


def test_streamed_paths_are_reproducible_and_shaped(ref):
    a, b = ik_targets.streamed_paths(ref), ik_targets.streamed_paths(ref)
    assert [p.name for p in a] == ["circle", "line", "out_of_reach"]
    T0 = ref.fk(ik_targets.Q0_LEFT)
    for pa, pb in zip(a, b):
        assert len(pa.targets) == len(pb.targets) > 100
        assert all(np.array_equal(x.homogeneous, y.homogeneous) for x, y in zip(pa.targets, pb.targets))
        assert np.allclose(pa.targets[0].homogeneous, T0.homogeneous, atol=1e-12)   # starts where q0 is
        steps = [np.linalg.norm(x.translation - y.translation) for x, y in zip(pa.targets, pa.targets[1:])]
        assert max(steps) < 0.21 / ik_targets.RATE_HZ                                       # <= ~0.2 m/s at 100 Hz
    circle, line, far = a
    assert circle.judged.all() and line.judged.all()
    assert np.allclose(circle.targets[-1].translation, T0.translation, atol=1e-3)  # one full turn
    assert far.wrist_distance.max() > ik_targets.WRIST_REACH + 0.09 and 0 < far.judged.sum() < len(far.targets)
    assert circle.wrist_distance.max() < ik_targets.WRIST_REACH - 0.1


def _shorten_paths(monkeypatch, ticks: int) -> None:
    """The benchmark's streamed paths cut to their first `ticks` ticks (a short run)."""
    full = ik_targets.streamed_paths

    def short(ref, *args, **kwargs):
        paths = full(ref, *args, **kwargs)
        for p in paths:
            p.targets, p.judged, p.wrist_distance = p.targets[:ticks], p.judged[:ticks], p.wrist_distance[:ticks]
        return paths
    monkeypatch.setattr(ik_targets, "streamed_paths", short)


def test_a_short_run_reports(r1_urdf, monkeypatch):
    _shorten_paths(monkeypatch, 15)
    # KDL only: importing pink or ikpy (sympy) costs seconds; the benchmark checks their chains itself
    summary, raw = ik_run.run(r1_urdf, targets=4, solvers=("kdl",), log=lambda s: None)
    s = summary["solvers"]["kdl"]
    assert s["cold"]["targets"] == 4 and s["streamed"]["ticks"] == 45
    assert s["paths"]["circle"]["success"] == 1.0       # small warm-started steps: tracked
    assert s["fk_check_max_error"] < 1e-9
    result = dict(summary, date="now", run_seconds=1.0, versions={},
                  machine={"cpus": 2, "platform": "x", "python": "3", "stalled_before": 0.0, "stalled_after": 0.0})
    md = ik_report.markdown(json.loads(json.dumps(result)))
    assert "| KDL NR_JL | 4 |" in md and "Ours against the goals" not in md
    # (the plot is left to the benchmark itself: importing matplotlib alone costs seconds here)


def test_answers_in_self_collision_are_counted_for_every_solver(r1_urdf, monkeypatch):
    """With ours in the run, every solver's answers are checked against ours' capsule model;
    ours never answers inside the body (cold or streamed)."""
    _shorten_paths(monkeypatch, 5)
    summary, _ = ik_run.run(r1_urdf, targets=60, solvers=("ours", "kdl"), log=lambda s: None)
    ours, kdl = summary["solvers"]["ours"], summary["solvers"]["kdl"]
    assert ours["cold"]["targets_in_collision"] > 0          # the set has targets only a colliding posture meets
    assert ours["cold"]["in_collision"] == 0 and ours["streamed"]["in_collision"] == 0
    assert 0 <= kdl["cold"]["in_collision"] <= 60 and "in_collision" in kdl["streamed"]
