"""mobiman.control: the base's motion as the controllers see it, the upper body's dynamics on the moving
base (against pinocchio on a free-flyer and against the physics of an accelerating frame), the servo's
t_ff (modal damping, gravity feedback fading with the loop's delay, friction, the effort clamp) and the
set-point's re-plan rule (powered_joints, SetpointGuard)."""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
import scipy.linalg
from conftest import GROUPS, URDF

from hdas.errors import TABLES, Condition
from mobiman.control.base_motion import STILL, BaseMotion, BaseMotionInput
from mobiman.control.servo import MitServo, ModalDamping, ServoSettings, clamp_effort
from mobiman.control.setpoint import SetpointGuard, powered_joints
from mobiman.control.upper_body import UpperBody, feedforward_at
from mobiman.model.robot_model import RobotModel, load_group_config
from r1_common.validation import InputError

ARMS_DOWN = {"left_arm": [-1.5708, 0.0, -2.8919, 0.0, 0.0657, 0.0],
             "right_arm": [1.5708, 0.0, -2.8827, 0.0, -0.0657, 0.0]}
CROUCHED = [1.0, -2.0, -1.0, 0.0]


@pytest.fixture(scope="module")
def planar() -> RobotModel:
    groups, _ = load_group_config(GROUPS)
    return RobotModel(URDF.read_text(), groups, planar_base=True)


# -- the base's motion ------------------------------------------------------------------------------
def test_base_motion_is_the_latest_of_each_stream_and_zero_once_stale() -> None:
    b = BaseMotionInput(timeout=0.1)
    assert b.at(0.0) == STILL
    b.set_acceleration((2.5, 0.0, -1.0), 10.0)
    b.set_twist((0.5, 0.1, 0.2), 10.05)
    assert b.at(10.06) == BaseMotion((0.5, 0.1, 0.2), (2.5, 0.0, -1.0))
    assert b.at(10.12) == BaseMotion((0.5, 0.1, 0.2), (0.0, 0.0, 0.0))     # the acceleration is stale
    assert b.at(9.0) == STILL                                               # the clock went back
    assert b.at(10.2).still


def test_a_base_acceleration_counts_from_its_stamp_not_from_its_late_arrival() -> None:
    """A controller starved of CPU reads its queue late: the chassis' braking, commanded 0.2 s ago and over
    since, must not come in as a fresh feed-forward (it pushed a straight torso 0.1 rad)."""
    b = BaseMotionInput(timeout=0.1)
    assert b.set_acceleration((-2.4, 0.0, 0.0), 10.2, stamp=10.0) is None
    assert b.at(10.2).acceleration == (0.0, 0.0, 0.0)                      # commanded 0.2 s ago: stale
    b.set_acceleration((-2.4, 0.0, 0.0), 10.25, stamp=10.2)
    assert b.at(10.25).acceleration == (-2.4, 0.0, 0.0)                    # 0.05 s late: still holds
    assert b.at(10.31).acceleration == (0.0, 0.0, 0.0)                     # until 0.1 s after its stamp
    b.set_acceleration((1.0, 0.0, 0.0), 11.0, stamp=11.03)                 # a publisher's clock a bit ahead
    assert b.at(11.09).acceleration == (1.0, 0.0, 0.0)
    assert b.at(11.11).acceleration == (0.0, 0.0, 0.0)                     # counted from its arrival
    b.set_acceleration((1.0, 0.0, 0.0), 12.0)                              # unstamped: from its arrival
    assert b.at(12.05).acceleration == (1.0, 0.0, 0.0)
    note = b.set_acceleration((1.0, 0.0, 0.0), 13.0, stamp=4294967295.0)   # another clock's: as received
    assert note is not None and "taken as received" in note
    assert b.at(13.05).acceleration == (1.0, 0.0, 0.0)


@pytest.mark.parametrize("bad", [(float("nan"), 0.0, 0.0), (0.0, float("inf"), 0.0), (5.5, 0.0, 0.0),
                                 (0.0, 0.0, -6.0), (1.0, 2.0)])
def test_a_base_acceleration_beyond_the_base_or_not_finite_is_refused_and_counts_as_zero(bad) -> None:
    b = BaseMotionInput()
    b.set_acceleration((1.0, 0.0, 0.0), 0.0)
    with pytest.raises(InputError):
        b.set_acceleration(bad, 0.01)
    assert b.at(0.02).acceleration == (0.0, 0.0, 0.0)
    b.set_acceleration((1.0, 0.0, 0.0), 0.03)
    assert b.at(0.04).acceleration == (1.0, 0.0, 0.0)
    with pytest.raises(InputError):
        b.set_twist((3.5, 0.0, 0.0), 0.0)
    with pytest.raises(ValueError):
        BaseMotionInput(timeout=0.0)


# -- the upper body's dynamics on the moving base -----------------------------------------------------
def test_riding_the_base_takes_what_the_issue_measured(planar: RobotModel) -> None:
    q = planar.configuration({"torso": [0.0] * 4, **ARMS_DOWN})
    g = feedforward_at(planar, q, "torso")
    ride = feedforward_at(planar, q, "torso", base=BaseMotion(acceleration=(2.5, 0.0, 0.0)))
    np.testing.assert_allclose((ride - g)[:2], [64.0, 30.5], atol=0.5)    # straight up: 64 and 31 N·m
    q = planar.configuration({"torso": CROUCHED, **ARMS_DOWN})
    crouched = feedforward_at(planar, q, "torso", base=BaseMotion(acceleration=(2.5, 0.0, 0.0)))
    assert feedforward_at(planar, q, "torso")[1] == pytest.approx(70.7, abs=0.5)
    assert crouched[1] == pytest.approx(91.3, abs=0.5)                     # crouched: 71 -> 92 N·m


def test_a_linear_acceleration_is_gravity_tilted_the_other_way(planar: RobotModel) -> None:
    """In the base's frame an acceleration a is a fictitious force -m·a: RNEA with the base accelerating
    equals RNEA with gravity (-a_x, -a_y, -9.81) on a still base (a fixed-base model, pinocchio's own)."""
    fixed = pin.buildModelFromXML(URDF.read_text())
    data = fixed.createData()
    rng = np.random.default_rng(3)
    for _ in range(5):
        torso = rng.uniform(-0.5, 0.5, 4)
        q = planar.configuration({"torso": torso, **ARMS_DOWN})
        a = rng.uniform(-2.5, 2.5, 2)
        got = feedforward_at(planar, q, "left_arm", base=BaseMotion(acceleration=(a[0], a[1], 0.0)))
        fixed.gravity.linear = np.array([-a[0], -a[1], -9.81])
        qf = pin.neutral(fixed)
        qf[:] = q[4:]                                          # the same joints, without the planar base
        tau = pin.rnea(fixed, data, qf, np.zeros(fixed.nv), np.zeros(fixed.nv))
        idx = [fixed.joints[fixed.getJointId(j)].idx_v for j in planar.groups["left_arm"]]
        np.testing.assert_allclose(got, tau[idx], atol=1e-9)


def test_a_turning_base_asks_what_a_free_flyer_turning_the_same_way_asks(planar: RobotModel) -> None:
    urdf = URDF.read_text()
    ff = pin.buildModelFromXML(urdf, pin.JointModelFreeFlyer())
    data = ff.createData()
    q = planar.configuration({"torso": CROUCHED, **ARMS_DOWN})
    motion = BaseMotion(twist=(0.4, -0.2, 1.5), acceleration=(1.0, 0.5, -0.8))
    got = feedforward_at(planar, q, "torso", base=motion)
    qf = pin.neutral(ff)
    qf[7:] = q[4:]
    v = np.zeros(ff.nv)
    v[[0, 1, 5]] = motion.twist                                  # body-frame twist: vx, vy, wz
    a = np.zeros(ff.nv)
    a[[0, 1, 5]] = motion.acceleration
    tau = pin.rnea(ff, data, qf, v, a)
    idx = [ff.joints[ff.getJointId(j)].idx_v for j in planar.groups["torso"]]
    np.testing.assert_allclose(got, tau[idx], atol=1e-9)


def test_a_fixed_base_model_takes_no_base_motion(r1: RobotModel) -> None:
    with pytest.raises(ValueError):
        feedforward_at(r1, r1.configuration(), "torso", base=BaseMotion(acceleration=(1.0, 0.0, 0.0)))
    body = UpperBody(r1)
    body.set_base(BaseMotion(acceleration=(1.0, 0.0, 0.0)))       # ignored: the model has no moving base
    np.testing.assert_allclose(body.feedforward("torso", None, None), r1.gravity(r1.configuration(), "torso"))


def test_the_upper_body_blends_planned_and_measured_gravity_and_gives_the_groups_inertia(planar) -> None:
    body = UpperBody(planar)
    body.set("torso", CROUCHED)
    planned = np.array(CROUCHED) + [0.1, 0.0, 0.0, 0.0]
    at_plan = body.feedforward("torso", planned, None)
    here = body.feedforward("torso", None, None)
    np.testing.assert_allclose(body.feedforward("torso", planned, None, measured_share=0.25),
                               0.75 * at_plan + 0.25 * here, atol=1e-9)
    np.testing.assert_allclose(body.feedforward("torso", planned, None, measured_share=1.0), here)
    m = body.inertia("torso", None)
    full = pin.crba(planar.model, planar.data, planar.configuration({"torso": CROUCHED}))
    idx = planar.group("torso").idx_v
    np.testing.assert_allclose(m, np.triu(full)[np.ix_(idx, idx)] + np.triu(full, 1)[np.ix_(idx, idx)].T)
    assert np.all(np.linalg.eigvalsh(m) > 0.0)
    body.set_base(BaseMotion(acceleration=(2.5, 0.0, 0.0)))
    q = planar.configuration({"torso": CROUCHED})
    np.testing.assert_allclose(body.feedforward("torso", None, None),
                               feedforward_at(planar, q, "torso", base=BaseMotion(acceleration=(2.5, 0.0, 0.0))))
    off = UpperBody(planar, base_gain=0.0)
    off.set("torso", CROUCHED)
    off.set_base(BaseMotion(acceleration=(2.5, 0.0, 0.0)))
    np.testing.assert_allclose(off.feedforward("torso", None, None), here)


# -- the servo ----------------------------------------------------------------------------------------
def test_modal_damping_gives_each_slow_mode_its_ratio_and_the_fast_ones_none() -> None:
    m = np.array([[21.85, 11.74, -4.72, 0.0], [11.74, 6.87, -3.27, 0.0], [-4.72, -3.27, 2.19, 0.0],
                  [0.0, 0.0, 0.0, 0.82]])                      # the straight torso's inertia, arms down
    kp = [500.0, 500.0, 400.0, 200.0]
    damping = ModalDamping(kp, ratio=0.6, max_phase=0.6)
    for delay, damped in ((0.002, [True] * 4), (0.015, [True, True, True, False])):
        d = damping.matrix(m, delay)
        w2, phi = scipy.linalg.eigh(np.diag(kp), m)
        omega = np.sqrt(w2)
        zeta = np.diag(phi.T @ d @ phi) / (2.0 * omega)         # each mode's damping ratio
        for z, w, on in zip(zeta, omega, damped):
            if on and w * delay <= 0.3:
                assert z == pytest.approx(0.6, abs=1e-9)
            elif not on:
                assert z == pytest.approx(0.0, abs=1e-9), f"{w:.0f} rad/s damped at {delay} s"
        off = phi.T @ d @ phi - np.diag(np.diag(phi.T @ d @ phi))
        assert np.max(np.abs(off)) < 1e-9                       # the modes stay uncoupled
    assert np.allclose(damping.weights(float("nan")), 1.0)


def test_the_servo_adds_friction_damping_and_gravity_feedback_as_far_as_the_delay_allows() -> None:
    settings = ServoSettings(damping_ratio=0.5, gravity_feedback=1.0, friction_coulomb=(1.0, 1.0),
                             friction_viscous=(2.0, 2.0), delay_full=0.03, delay_none=0.08)
    servo = MitServo(settings, kp=[100.0, 100.0], effort=[50.0, 50.0])
    assert servo.share(0.01) == 1.0 and servo.share(0.055) == pytest.approx(0.5) and servo.share(0.1) == 0.0
    assert servo.share(float("nan")) == 1.0
    ff = np.array([1.0, -2.0])
    t, clamped = servo.t_ff(ff, np.zeros(2), np.zeros(2), 0.01, np.eye(2))
    np.testing.assert_allclose(t, ff) and not clamped          # at rest and still: the feed-forward alone
    t, _ = servo.t_ff(ff, np.array([0.5, 0.0]), np.array([0.5, 0.0]), 0.01, np.eye(2))
    assert t[0] == pytest.approx(1.0 + math.tanh(0.5 / 0.02) + 1.0)     # friction at the planned velocity
    t, _ = servo.t_ff(ff, np.zeros(2), np.array([-1.0, 0.0]), 0.01, np.eye(2))
    assert t[0] == pytest.approx(1.0 + 2 * 0.5 * 10.0)                  # pushed: damping 2ζω·m = 10 resists
    t, clamped = servo.t_ff(np.array([80.0, 0.0]), np.zeros(2), None, 0.01, None)
    assert t[0] == 50.0 and clamped
    assert clamp_effort(np.array([1.0]), np.array([2.0])) == (pytest.approx([1.0]), False)
    with pytest.raises(ValueError):
        MitServo(settings, kp=[1.0], effort=[1.0, 1.0])
    with pytest.raises(ValueError):
        ServoSettings(gravity_feedback=1.5)


# -- the set-point's rule -----------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["arm", "torso"])
def test_a_silent_motor_is_not_off_but_a_disabled_or_comm_lost_one_is(kind: str) -> None:
    """A motor whose replies stopped (a stalled machine, a noisy bus) may still hold: its set-point stays
    (taken as off, the torso's yielded a few mrad at each stall). Its own report when it answers again
    (disabled, COMM_LOST from its watchdog) is what re-plans."""
    table = TABLES[kind]
    joints = ["a", "b"]
    silent = table.code({Condition.RECEIVE_TIMEOUT})
    assert powered_joints([("a", silent), ("b", 0)], joints, table.unpowered_mask) == [True, True]
    for off in (Condition.DISABLED, Condition.COMM_LOST, Condition.DISCONNECTED):
        code = table.code({off, Condition.RECEIVE_TIMEOUT})
        assert powered_joints([("a", code)], joints, table.unpowered_mask) == [False, True]


def test_powered_joints_from_a_status_report() -> None:
    mask = 0b1
    joints = ["a", "b", "c"]
    assert powered_joints([("a", 0), ("b", 1), ("c", 2)], joints, mask) == [True, False, True]
    assert powered_joints([("b", 1)], joints, mask) == [True, False, True]     # not named: held
    assert powered_joints([("x", 1)], joints, mask) is None                   # another group's


def test_the_guard_re_plans_only_for_motors_off_or_far_after_a_gap() -> None:
    guard = SetpointGuard(2, resync_error=0.1, max_following_error=0.02)
    plan, far = np.zeros(2), np.array([0.5, 0.0])
    assert guard.resync(far, plan) is None                      # a push: held
    guard.motors([True, False])
    assert "motors off" in guard.resync(far, plan) and guard.off
    assert "motors off" in guard.resync(far, plan)              # every tick while off
    guard.motors([True, True])
    assert guard.resync(far, plan) == "motors on again"         # once more when on
    assert guard.resync(far, plan) is None
    guard.feedback_back()
    assert guard.resync(np.array([0.05, 0.0]), plan) is None     # near after a gap: held
    guard.feedback_back()
    assert "after a gap" in guard.resync(far, plan)
    with pytest.raises(ValueError):
        guard.motors([True])


def test_the_gate_waits_for_a_joint_that_lags_and_does_not_keep_pace_or_catches_up() -> None:
    guard = SetpointGuard(1, 0.1, 0.02)
    plan, speed = np.array([1.0]), np.array([0.5])
    assert guard.gate(3, np.array([0.95]), np.array([0.0]), plan, speed) == 0     # behind and stopped
    assert guard.gate(3, np.array([0.95]), np.array([0.45]), plan, speed) == 3    # behind, keeping pace
    assert guard.gate(3, np.array([0.95]), np.array([0.5]), plan, speed) == 3     # ... at the plan's speed
    # behind and catching up faster than the plan: it waits, so the joint closes the lag on a still set-point
    # rather than outrunning a plan at its speed limit
    assert guard.gate(3, np.array([0.95]), np.array([0.55]), plan, speed) == 0
    assert guard.gate(3, np.array([0.99]), np.array([0.9]), plan, speed) == 3     # within the lag allowed
    assert guard.gate(3, np.array([0.95]), None, plan, speed) == 0                # no velocity: the lag decides
    assert guard.gate(3, np.array([1.05]), np.array([0.0]), plan, speed) == 3     # ahead
    assert SetpointGuard(1, 0.1, 0.0).gate(3, np.array([0.0]), None, plan, speed) == 3   # off
    # a lag late feedback explains (the set-point the joint follows is that much older) is no lag; the
    # usual age is what the threshold was set with
    assert guard.gate(3, np.array([0.95]), np.array([0.0]), plan, speed, age=0.12) == 3
    assert guard.gate(3, np.array([0.90]), np.array([0.0]), plan, speed, age=0.12) == 0
    assert guard.gate(3, np.array([0.97]), np.array([0.0]), plan, speed, age=0.02) == 0
