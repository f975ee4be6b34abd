"""JointTrajectoryTracker against its limits, retargeting, validation and the HDAS command helpers;
gravity_feedforward against an independent pinocchio model."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
import pytest
import ruckig

from mobiman.model.robot_model import RobotModel
from mobiman.tracker.joint_tracker import (
    JointTrajectoryTracker,
    MitGains,
    TargetError,
    TrackerLimits,
    gravity_feedforward,
    mit_command,
    pid_command,
)

DT = 0.002
SLACK = 1.01                      # 1 % on every limit check
CAP = {"left_arm": [3, 3, 3, 5, 5, 5], "torso": [1.5] * 4}


def make_limits(r1: RobotModel, group: str, **kw) -> TrackerLimits:
    lim = r1.limits(group)
    return TrackerLimits(lim.lower, lim.upper, np.array(CAP[group], dtype=float), **kw)


def make_tracker(r1: RobotModel, group: str = "left_arm", **kw) -> JointTrajectoryTracker:
    return JointTrajectoryTracker(r1.groups[group], make_limits(r1, group, **kw), DT)


def middle(tracker: JointTrajectoryTracker) -> np.ndarray:
    return (tracker.limits.lower + tracker.limits.upper) / 2


@dataclass
class Trace:
    """Every step's state and the limits the tracker reported for it, starting with the state before."""

    p: list = field(default_factory=list)
    v: list = field(default_factory=list)
    a: list = field(default_factory=list)
    v_lim: list = field(default_factory=list)
    a_lim: list = field(default_factory=list)
    j_lim: list = field(default_factory=list)

    def record(self, t: JointTrajectoryTracker) -> None:
        for name, value in (("p", t.position), ("v", t.velocity), ("a", t.acceleration),
                            ("v_lim", t.velocity_limits()), ("a_lim", t.acceleration_limits()),
                            ("j_lim", t.jerk_limits())):
            getattr(self, name).append(value)

    def run(self, t: JointTrajectoryTracker, steps: int | None = None, until_done: int = 0) -> None:
        """`steps` steps, or until at_target (at most `until_done` steps)."""
        if not self.p:
            self.record(t)
        for _ in range(steps if steps is not None else until_done):
            t.step()
            assert t.last_error is None
            self.record(t)
            if steps is None and t.at_target:
                return
        assert steps is not None, "trajectory did not finish"

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: np.array(v) for k, v in self.__dict__.items()}


def assert_within_limits(trace: Trace, lower: np.ndarray, upper: np.ndarray, velocity: bool = True) -> None:
    """Sampled |v|, |a| and finite-difference jerk within the active limits + 1 %, positions in range.

    A step may switch limits, so its differences are bounded by the larger of the limits before and after.
    """
    x = trace.arrays()
    a_bound = np.maximum(x["a_lim"][1:], x["a_lim"][:-1])
    j_bound = np.maximum(x["j_lim"][1:], x["j_lim"][:-1])
    if velocity:
        assert np.all(np.abs(x["v"]) <= x["v_lim"] * SLACK)
    assert np.all(np.abs(x["a"][1:]) <= a_bound * SLACK)
    assert np.all(np.abs(np.diff(x["v"], axis=0)) <= a_bound * DT * SLACK)       # no velocity jump
    assert np.all(np.abs(np.diff(x["a"], axis=0)) / DT <= j_bound * SLACK)       # jerk
    assert np.all(x["p"] >= lower - 1e-9) and np.all(x["p"] <= upper + 1e-9)


# -- 1. limits ------------------------------------------------------------------------------
@pytest.mark.parametrize("group", ["left_arm", "torso"])
def test_random_targets_respect_velocity_acceleration_jerk_and_position_limits(r1: RobotModel, group: str) -> None:
    rng = np.random.default_rng(11)
    t = make_tracker(r1, group)
    lim, cap = t.limits, np.array(CAP[group], dtype=float)
    t.reset(middle(t))
    span = (lim.upper - lim.lower) / 2
    for k in range(6):
        goal = np.clip(t.position + rng.uniform(-0.6, 0.6, cap.size) * span, lim.lower, lim.upper)
        speed = [None, [], np.zeros(cap.size)][k] if k < 3 else rng.uniform(0.4, 1.0, cap.size) * cap
        if k >= 3:
            speed[rng.integers(cap.size)] = 0.0     # one joint at the cap
        assert t.set_target(goal, speed) == []
        expected_v = cap if k < 3 else np.where(speed > 0, speed, cap)
        assert np.allclose(t.velocity_limits(), expected_v)
        assert np.allclose(t.acceleration_limits(), 1.5 * expected_v)
        assert np.allclose(t.jerk_limits(), 1.5 * expected_v)
        trace = Trace()
        trace.run(t, until_done=20000)
        assert_within_limits(trace, lim.lower, lim.upper)
        assert np.allclose(t.position, goal, atol=1e-9)
        # the jerk limit is actually used (the checks above are not vacuous)
        assert np.max(np.abs(np.diff(trace.arrays()["a"], axis=0)) / DT / t.jerk_limits()) > 0.99


# -- 2. retargeting -------------------------------------------------------------------------
def moving_tracker(r1: RobotModel, steps: int) -> tuple[JointTrajectoryTracker, Trace]:
    t = make_tracker(r1)
    start = middle(t)
    t.reset(start)
    t.set_target(start + np.array([1.5, 1.0, -1.0, 1.5, 0.8, -1.5]))
    trace = Trace()
    trace.run(t, steps=steps)
    assert np.all(np.abs(t.velocity) > 0.1)
    return t, trace


@pytest.mark.parametrize("offset,speed", [
    (np.array([2.0, 1.4, -1.4, 2.5, 1.5, -2.5]), None),      # further, same direction
    (np.array([-1.0, -0.5, 0.5, -1.0, -0.5, 1.0]), None),    # back where it came from
    (np.array([-1.0, -0.5, 0.5, -1.0, -0.5, 1.0]), [0.3] * 6),  # back, and much slower than it moves now
    (np.array([1.5, 1.0, -1.0, 1.5, 0.8, -1.5]), [0.5, 0.5, 0.5, 0.5, 0.5, 0.5]),  # same target, slower
])
def test_retargeting_mid_motion_is_continuous(r1: RobotModel, offset, speed) -> None:
    t, trace = moving_tracker(r1, steps=400)
    old_a, old_j = t.acceleration_limits(), t.jerk_limits()
    goal = middle(t) + offset
    if speed is not None:
        assert np.any(np.abs(t.velocity) > speed[0])        # the brake case is exercised
    t.set_target(goal, speed)
    trace.run(t, until_done=40000)
    assert_within_limits(trace, t.limits.lower, t.limits.upper, velocity=False)
    x = trace.arrays()
    # never beyond what the previous or the new target allowed, whatever the tracker reports
    new_v = np.array(CAP["left_arm"], float) if speed is None else np.array(speed, float)
    assert np.all(np.abs(x["a"]) <= np.maximum(old_a, 1.5 * new_v) * SLACK)
    assert np.all(np.abs(np.diff(x["a"], axis=0)) / DT <= np.maximum(old_j, 1.5 * new_v) * SLACK)
    # once braked, the new speed limit holds, and the new a/j limits are in force at the end
    braked = np.all(np.abs(x["v"]) <= new_v * SLACK, axis=1)
    first = int(np.argmax(braked[400:])) + 400
    assert np.all(braked[first:])
    assert np.allclose(t.acceleration_limits(), 1.5 * new_v) and np.allclose(t.jerk_limits(), 1.5 * new_v)
    assert np.allclose(t.position, goal, atol=1e-9) and t.at_target


def test_slowing_down_while_braking_hard_stays_near_the_old_path(r1: RobotModel) -> None:
    """Lowering the speed while decelerating hard: braking with the new (tiny) a and j limits would
    swing about 80 rad past the goal and take minutes; the tracker brakes with the old ones instead."""
    t = make_tracker(r1)
    start = middle(t)
    t.reset(start)
    old_goal = start + np.array([1.5, 0, 0, 0, 0, 0])
    t.set_target(old_goal)
    trace = Trace()
    for _ in range(2000):
        trace.run(t, steps=1)
        if t.acceleration[0] < -2.0 and t.velocity[0] > 0.5:      # peak deceleration is 2.25 here
            break
    else:
        pytest.fail("never decelerated hard")
    new_goal = start + np.array([1.0, 0, 0, 0, 0, 0])
    switch = len(trace.p)
    t.set_target(new_goal, [0.2] * 6)
    trace.run(t, until_done=int(20 / DT))
    assert_within_limits(trace, t.limits.lower, t.limits.upper, velocity=False)
    p = np.array(trace.p)[switch:, 0]
    assert new_goal[0] - 1e-9 <= p.min() and p.max() <= old_goal[0]
    assert np.allclose(t.position, new_goal, atol=1e-9)


# -- 3. clamping ----------------------------------------------------------------------------
def test_targets_beyond_the_joint_limits_end_at_the_limit(r1: RobotModel) -> None:
    t = make_tracker(r1)
    t.reset(middle(t))
    goal = middle(t)
    goal[1] = 4.0                       # joint2 upper limit 3.2289
    goal[4] = -2.0                      # joint5 lower limit -1.6581
    notes = t.set_target(goal)
    assert len(notes) == 2
    assert "left_arm_joint2" in notes[0] and "4" in notes[0] and "3.229" in notes[0]
    assert "left_arm_joint5" in notes[1] and "-1.658" in notes[1]
    trace = Trace()
    trace.run(t, until_done=20000)
    assert_within_limits(trace, t.limits.lower, t.limits.upper)
    assert t.position[1] == pytest.approx(t.limits.upper[1], abs=1e-9)
    assert t.position[4] == pytest.approx(t.limits.lower[4], abs=1e-9)
    assert np.array_equal(t.target[[1, 4]], [t.limits.upper[1], t.limits.lower[4]])


def test_speed_limits_are_capped_and_zero_or_missing_means_the_cap(r1: RobotModel) -> None:
    t = make_tracker(r1)
    cap = np.array(CAP["left_arm"], float)
    t.reset(middle(t))
    notes = t.set_target(middle(t), [10.0, 0.0, -1.0, 1.0, 5.0, 7.5])
    assert len(notes) == 2 and "left_arm_joint1" in notes[0] and "capped" in notes[0]
    assert "left_arm_joint6" in notes[1]
    assert np.array_equal(t.velocity_limits(), [3.0, 3.0, 3.0, 1.0, 5.0, 5.0])
    for empty in (None, [], np.array([])):
        assert t.set_target(middle(t), empty) == []
        assert np.array_equal(t.velocity_limits(), cap)
    # an HDAS arm target carries the gripper as a 7th entry, ignored here
    assert t.set_target(list(middle(t)) + [99.0], [1.0] * 6 + [50.0]) == []
    assert np.array_equal(t.target, middle(t)) and np.array_equal(t.velocity_limits(), np.ones(6))


# -- 4. rejection ---------------------------------------------------------------------------
@pytest.mark.parametrize("position,velocity", [
    ([0.1] * 5, None), ([0.1] * 8, None), ([0.1] * 5 + [np.nan], None), ([np.inf] + [0.1] * 5, None),
    ([0.1] * 6, [1.0] * 5 + [np.nan]), ([0.1] * 6, [np.inf] * 6), ([0.1] * 6, [-np.inf] + [1.0] * 5),
    ([0.1] * 6, [1.0] * 4),
])
def test_bad_targets_are_rejected_and_change_nothing(r1: RobotModel, position, velocity) -> None:
    t, twin = make_tracker(r1), make_tracker(r1)
    for x in (t, twin):
        x.reset(middle(x))
        x.set_target(middle(x) + 0.5, [1.0, 2.0, 1.0, 2.0, 1.0, 2.0])
        for _ in range(100):
            x.step()
    before = (t.position, t.velocity, t.acceleration, t.target, t.velocity_limits(), t.acceleration_limits())
    with pytest.raises(TargetError):
        t.set_target(position, velocity)
    after = (t.position, t.velocity, t.acceleration, t.target, t.velocity_limits(), t.acceleration_limits())
    assert all(np.array_equal(b, a) for b, a in zip(before, after))
    for _ in range(300):                # keeps following the previous target, step for step
        assert all(np.array_equal(p, q) for p, q in zip(t.step(), twin.step()))


def test_huge_finite_targets_are_clamped_and_capped_not_refused(r1: RobotModel) -> None:
    """Regression (issue 19): the finiteness check summed the vector, and six finite 1e308 overflowed
    into inf: a legal target was refused. Every entry is finite, so it is clamped and capped."""
    t = make_tracker(r1)
    t.reset(middle(t))
    notes = t.set_target([1e308] * 6, [1e308] * 6)
    assert np.array_equal(t.target, t.limits.upper)
    assert np.array_equal(t.velocity_limits(), t.limits.velocity_cap)
    assert len(notes) == 12
    for _ in range(50):
        p, v, a = t.step()
        assert np.all(np.isfinite(p)) and t.last_error is None


# -- 5. start-up ----------------------------------------------------------------------------
def test_start_up_holds_the_measured_position_until_a_target_arrives(r1: RobotModel) -> None:
    t = make_tracker(r1)
    assert not t.started
    with pytest.raises(TargetError, match="not started"):
        t.set_target(middle(t))
    with pytest.raises(RuntimeError):
        t.step()
    measured = np.array([0.123456789, 1.1, -0.7, 0.2, -0.3, 2.0])
    t.reset(list(measured) + [0.04])    # with the gripper entry of the feedback
    assert t.started and t.target is None and not t.at_target
    for _ in range(50):
        p, v, a = t.step()
        assert np.array_equal(p, measured) and np.array_equal(v, np.zeros(6)) and np.array_equal(a, np.zeros(6))


def test_reset_clears_the_target(r1: RobotModel) -> None:
    t = make_tracker(r1)
    t.reset(middle(t))
    t.set_target(middle(t) + 0.3)
    for _ in range(50):
        t.step()
    here = t.position
    t.reset(here)
    assert t.target is None
    assert np.array_equal(t.step()[0], here) and np.array_equal(t.velocity, np.zeros(6))


# -- 6. the stream stops --------------------------------------------------------------------
def test_the_trajectory_ends_at_the_last_target_and_stays(r1: RobotModel) -> None:
    t = make_tracker(r1)
    start = middle(t)
    t.reset(start)
    trace = Trace()
    for k in range(100):                # a 100 Hz stream of a moving target for 1 s, then silence
        last = start + 0.4 * np.sin(2 * np.pi * 0.5 * k * 0.01) * np.ones(6)
        t.set_target(last, [2.0] * 6)
        trace.run(t, steps=5)
    trace.run(t, until_done=20000)
    assert np.allclose(t.position, last, atol=1e-9)
    for _ in range(500):
        p, v, a = t.step()
        assert t.at_target and np.allclose(p, last, atol=1e-9) and np.all(v == 0) and np.all(a == 0)
    assert_within_limits(trace, t.limits.lower, t.limits.upper)


# -- 7. fast mode ---------------------------------------------------------------------------
def test_fast_mode_uses_the_fixed_limits_whatever_the_target_asks(r1: RobotModel) -> None:
    fixed_v, fixed_a = np.array([1.0, 1.2, 1.4, 2.0, 2.0, 2.0]), np.array([4.0, 4.0, 4.0, 8.0, 8.0, 8.0])
    traces = []
    for speed in ([0.1] * 6, [10.0] * 6, None):
        t = make_tracker(r1, fixed_velocity=fixed_v, fixed_acceleration=fixed_a)
        t.reset(middle(t))
        goal = middle(t) + np.array([1.0, -0.8, 0.8, 1.5, -0.5, 1.0])
        assert t.set_target(goal, speed) == []
        assert np.array_equal(t.velocity_limits(), fixed_v) and np.all(np.isinf(t.jerk_limits()))
        trace = Trace()
        trace.run(t, until_done=20000)
        x = trace.arrays()
        assert np.all(np.abs(x["v"]) <= fixed_v * SLACK) and np.all(np.abs(x["a"]) <= fixed_a * SLACK)
        assert np.max(np.abs(x["v"]) / fixed_v) > 0.99    # the fixed speed is reached
        assert np.allclose(t.position, goal, atol=1e-9)
        traces.append(x["p"])
    assert all(p.shape == traces[0].shape and np.allclose(p, traces[0]) for p in traces)
    # no jerk limit: the acceleration steps to its limit in the first step
    assert np.max(np.abs(np.diff(x["a"], axis=0))) == pytest.approx(np.max(fixed_a), rel=1e-6)


def test_fast_mode_needs_both_fixed_limits(r1: RobotModel) -> None:
    with pytest.raises(ValueError):
        make_limits(r1, "left_arm", fixed_velocity=np.ones(6))


# -- Ruckig failure -------------------------------------------------------------------------
class FailingOtg:
    def __init__(self, how: str):
        self.how = how

    def update(self, inp, out):
        if self.how == "raise":
            raise ruckig.RuckigError("[ruckig] synthetic failure")
        return ruckig.Result.ErrorInvalidInput


@pytest.mark.parametrize("how", ["raise", "result"])
def test_a_ruckig_error_holds_the_last_position_at_rest(r1: RobotModel, how: str) -> None:
    t = make_tracker(r1)
    t.reset(middle(t))
    t.set_target(middle(t) + 0.5)
    for _ in range(200):
        t.step()
    here, otg = t.position, t._otg
    t._otg = FailingOtg(how)
    p, v, a = t.step()
    assert np.array_equal(p, here) and np.all(v == 0) and np.all(a == 0) and not t.at_target
    assert t.last_error and ("synthetic" in t.last_error if how == "raise" else "ErrorInvalidInput" in t.last_error)
    t._otg = otg                        # recovers from rest on the next step
    t.step()
    assert t.last_error is None and np.all(np.isfinite(t.position))


# -- 8. gravity feed-forward ----------------------------------------------------------------
@pytest.fixture(scope="module")
def independent(r1_urdf: str) -> tuple[pin.Model, pin.Data]:
    model = pin.buildModelFromXML(r1_urdf)
    return model, model.createData()


def q_of(model: pin.Model, values: dict[str, np.ndarray], groups: dict[str, tuple[str, ...]]) -> np.ndarray:
    q = pin.neutral(model)
    for group, vals in values.items():
        for name, val in zip(groups[group], vals):
            q[model.joints[model.getJointId(name)].idx_q] = val
    return q


def idx_v(model: pin.Model, names) -> list[int]:
    return [model.joints[model.getJointId(n)].idx_v for n in names]


def test_gravity_feedforward_equals_rnea_of_the_whole_upper_body(r1: RobotModel, independent) -> None:
    model, data = independent
    rng = np.random.default_rng(5)
    zero = np.zeros(model.nv)
    for _ in range(10):
        fb = {g: rng.uniform(r1.limits(g).lower, r1.limits(g).upper) for g in ("torso", "left_arm", "right_arm")}
        tau = pin.rnea(model, data, q_of(model, fb, r1.groups), zero, zero)
        for group in fb:
            expected = tau[idx_v(model, r1.groups[group])]
            assert np.allclose(gravity_feedforward(r1, fb, group), expected, rtol=0, atol=1e-9)
        # HDAS arm feedback with the gripper as a 7th entry gives the same
        with_gripper = dict(fb, left_arm=list(fb["left_arm"]) + [0.03])
        assert np.allclose(gravity_feedforward(r1, with_gripper, "left_arm"),
                           gravity_feedforward(r1, fb, "left_arm"), atol=1e-12)


def test_torso_posture_changes_the_arm_gravity_load(r1: RobotModel, independent) -> None:
    model, data = independent
    arm = np.array([0.3, 1.2, -1.0, 0.4, 0.5, -0.2])
    upright = gravity_feedforward(r1, {"left_arm": arm}, "left_arm")          # torso missing: neutral
    # torso_link4 pitches by q1 + q2 - q3 and q4 turns about the vertical: neither changes the arm's load here
    crouched = gravity_feedforward(r1, {"torso": [1.0, -2.0, -1.0, 0.5], "left_arm": arm}, "left_arm")
    assert np.allclose(crouched, upright, atol=1e-9)
    bent_fb = {"torso": [0.6, -0.2, 0.1, 0.3], "left_arm": arm}
    bent = gravity_feedforward(r1, bent_fb, "left_arm")
    zero = np.zeros(model.nv)
    names = r1.groups["left_arm"]
    assert np.allclose(upright, pin.rnea(model, data, q_of(model, {"left_arm": arm}, r1.groups), zero, zero)[
        idx_v(model, names)], atol=1e-9)
    assert np.allclose(bent, pin.rnea(model, data, q_of(model, bent_fb, r1.groups), zero, zero)[
        idx_v(model, names)], atol=1e-9)
    assert np.max(np.abs(bent - upright)) > 0.5


@pytest.mark.parametrize("group", ["left_arm", "right_arm", "torso"])
def test_inertial_term_is_the_group_block_of_the_mass_matrix(r1: RobotModel, independent, group: str) -> None:
    """t_ff = g(q)[group] + gain * M(q)[group, group] @ a, checked with pinocchio's CRBA and with RNEA."""
    model, data = independent
    rng = np.random.default_rng(3)
    zero = np.zeros(model.nv)
    for _ in range(5):
        fb = {g: rng.uniform(r1.limits(g).lower, r1.limits(g).upper) for g in ("torso", "left_arm", "right_arm")}
        q = q_of(model, fb, r1.groups)
        a = rng.uniform(-3, 3, len(r1.groups[group]))
        idx = idx_v(model, r1.groups[group])
        mass = pin.crba(model, data, q)
        mass = np.triu(mass) + np.triu(mass, 1).T
        g = pin.rnea(model, data, q, zero, zero)[idx]
        a_full = np.zeros(model.nv)
        a_full[idx] = a
        via_rnea = pin.rnea(model, data, q, zero, a_full)[idx] - g
        assert np.allclose(mass[np.ix_(idx, idx)] @ a, via_rnea, atol=1e-9)
        for gain in (1.0, 0.4):
            got = gravity_feedforward(r1, fb, group, acceleration=a, inertial_gain=gain)
            assert np.allclose(got, g + gain * mass[np.ix_(idx, idx)] @ a, rtol=0, atol=1e-9)
        assert np.allclose(gravity_feedforward(r1, fb, group, acceleration=a), g, atol=1e-9)   # gain 0


# -- 9. HDAS command fields -----------------------------------------------------------------
def test_mit_and_pid_commands(r1: RobotModel) -> None:
    t = make_tracker(r1)
    t.reset(middle(t))
    t.set_target(middle(t) + 0.4, [1.0, 2.0, 3.0, 0.5, 0.0, 9.0])
    for _ in range(100):
        t.step()
    gains = MitGains(kp=[50, 60, 70, 20, 20, 10], kd=[2, 2, 2, 1, 1, 0.5])
    t_ff = np.array([0.1, -2.0, 3.0, 0.0, 0.2, -0.1])
    p, v, kp, kd, tff = mit_command(t, gains, t_ff)
    assert all(isinstance(x, list) and len(x) == 6 for x in (p, v, kp, kd, tff))
    assert p == t.position.tolist() and v == t.velocity.tolist() and np.any(np.array(v) != 0)
    assert kp == [50, 60, 70, 20, 20, 10] and kd == [2, 2, 2, 1, 1, 0.5] and tff == t_ff.tolist()
    p, v, kp, kd, tff = pid_command(t, [0.5, 1.5, -0.2, 1.0, 0.0, 0.3])
    assert all(isinstance(x, list) and len(x) == 6 for x in (p, v, kp, kd, tff))
    assert p == t.position.tolist() and v == [1.0, 2.0, 3.0, 0.5, 5.0, 5.0]
    assert kp == [0.0] * 6 and kd == [0.0] * 6 and tff == [0.5, 1.0, 0.0, 1.0, 0.0, 0.3]
    with pytest.raises(ValueError):
        mit_command(t, MitGains(kp=[1] * 5, kd=[1] * 6), t_ff)
    with pytest.raises(ValueError):
        pid_command(t, [0.5] * 7)


def test_friction_feedforward_cancels_coulomb_and_viscous_continuously():
    from mobiman.control.servo import friction_feedforward
    coulomb, viscous = [1.0, 0.5], [2.0, 0.0]
    assert np.allclose(friction_feedforward([0.0, 0.0], coulomb, viscous), 0.0)        # at rest: nothing
    fast = friction_feedforward([0.5, -0.5], coulomb, viscous, smoothing=0.02)
    assert np.allclose(fast, [1.0 + 1.0, -0.5], atol=1e-6)                          # full Coulomb + viscous
    v = np.linspace(-0.01, 0.01, 201)                                                 # continuous through 0
    tau = np.array([friction_feedforward([x, x], coulomb, viscous)[0] for x in v])
    assert np.max(np.abs(np.diff(tau))) < 0.01
    with pytest.raises(ValueError):
        friction_feedforward([0.1], [1.0], [0.0], smoothing=0.0)


@pytest.mark.parametrize("gain", [1.0, 0.5])
def test_inertial_feedforward_is_gravity_plus_the_mass_matrix_times_the_acceleration(r1: RobotModel, gain):
    from mobiman.control.upper_body import Posture, feedforward_at
    model = r1
    rng = np.random.default_rng(4)
    posture = Posture(model)
    for name in ("torso", "left_arm", "right_arm"):
        lim = model.limits(name)
        posture.set(name, rng.uniform(lim.lower, lim.upper))
    a = rng.normal(size=6)
    idx = model.group("left_arm").idx_v
    M = pin.crba(model.model, model.model.createData(), posture.q)
    M = np.triu(M) + np.triu(M, 1).T
    expected = model.gravity(posture.q, "left_arm") + gain * M[np.ix_(idx, idx)] @ a
    np.testing.assert_allclose(feedforward_at(model, posture.q, "left_arm", a, gain), expected, atol=1e-9)
    with pytest.raises(ValueError):
        posture.set("left_arm", [0.0, float("nan"), 0, 0, 0, 0])


# -- target names and torque limits ------------------------------------------------------------
from mobiman.control.servo import clamp_effort  # noqa: E402
from mobiman.tracker.joint_tracker import reorder, target_order  # noqa: E402

LEFT = [f"left_arm_joint{i}" for i in range(1, 7)]
URDF_JOINTS = frozenset(LEFT + [f"right_arm_joint{i}" for i in range(1, 7)] + ["left_gripper_finger_joint1"])


def test_unnamed_and_vendor_style_names_are_read_by_index():
    assert target_order([], LEFT, URDF_JOINTS) is None
    assert target_order([""] * 6, LEFT, URDF_JOINTS) is None
    assert target_order([f"joint{i}" for i in range(6)], LEFT, URDF_JOINTS) is None


def test_urdf_names_are_read_by_name_in_any_order():
    order = target_order(LEFT[::-1], LEFT, URDF_JOINTS)
    assert reorder([6.0, 5.0, 4.0, 3.0, 2.0, 1.0], order, "p") == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert reorder([], order, "v") == []                       # an empty field stays empty
    grip = "left_gripper_finger_joint1"
    order = target_order([grip] + LEFT, LEFT, URDF_JOINTS, grip)
    assert reorder([0.03, 1, 2, 3, 4, 5, 6], order, "p") == [1, 2, 3, 4, 5, 6, 0.03]   # gripper last


@pytest.mark.parametrize("names, why", [
    ([f"right_arm_joint{i}" for i in range(1, 7)], "another group"),
    (LEFT[:5], "lacks"),
    (LEFT[:5] + ["joint6"], "mix"),
    (LEFT + [LEFT[0]], "twice"),
    (LEFT + ["left_gripper_finger_joint1"], "another group"),    # no gripper configured for this group
])
def test_wrong_names_are_refused(names, why):
    with pytest.raises(TargetError, match=why):
        target_order(names, LEFT, URDF_JOINTS)


def test_named_fields_shorter_than_the_names_are_refused():
    with pytest.raises(TargetError, match="entries"):
        reorder([1.0, 2.0], target_order(LEFT[::-1], LEFT, URDF_JOINTS), "target position")


def test_feed_forward_torque_is_clamped_to_the_effort_limit():
    effort = np.array([100.0, 100.0, 40.0])
    t, beyond = clamp_effort(np.array([-200.9, 50.0, 40.0]), effort)
    np.testing.assert_array_equal(t, [-100.0, 50.0, 40.0])
    assert beyond
    t, beyond = clamp_effort(np.array([1.0, -2.0, 3.0]), effort)
    np.testing.assert_array_equal(t, [1.0, -2.0, 3.0])
    assert not beyond
