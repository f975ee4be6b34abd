"""hdas.command_limits: clamps at the limits in both modes, the gripper's units, the chassis's
clamp, and the MIT bounds of every cycle (set-point ramp, torque rate, the torque window at the measured
state: effort, speed governor, pressing a limit; the law that goes out)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from hdas.command_limits import (
    PRESS_BAND_S,
    SPEED_MARGIN,
    TORQUE_BUCKET_S,
    TORQUE_RAMP_S,
    Command,
    CommandError,
    CommandLimits,
    JointLimitArrays,
    at_rest,
    command_array,
)
from r1_can import damiao
from r1_can.damiao import MOTOR_PRESETS

# two joints and a gripper (finger travel: 0.04 m per motor rad)
LIMITS = JointLimitArrays(lower=np.array([-1.0, -2.0, 0.0]), upper=np.array([1.0, 2.0, 0.05]),
                          velocity=np.array([2.0, 3.0, 0.1]), effort=np.array([10.0, 20.0, 5.0]))
RATIO = np.array([1.0, 1.0, 0.04])
TMAX = np.array([MOTOR_PRESETS["DM8009"].tmax, MOTOR_PRESETS["DM4340"].tmax, MOTOR_PRESETS["DM4310"].tmax])
HERE = np.zeros(3)


def limits() -> CommandLimits:
    return CommandLimits(LIMITS, RATIO, TMAX)


def command(p, v=0.0, kp=0.0, kd=0.0, t=0.0, stamp: float = 0.0) -> Command:
    def row(x):
        return np.broadcast_to(np.asarray(x, dtype=float), (3,)).copy()
    return Command(row(p), row(v), row(kp), row(kd), row(t), stamp)


def test_mit_clamps_every_field_at_its_limit_and_names_it() -> None:
    beyond = np.array([[5.0, -5.0, 1.0], [9.0, -9.0, 9.0], [1e6, 1e6, 1e6], [1e5, 1e5, 1e5], [-99.0, 99.0, 99.0]])
    cmd, notes = limits().clamp(beyond, slice(0, 3), "mit", now=1.5)
    np.testing.assert_array_equal(cmd.p, [1.0, -2.0, 0.05])
    np.testing.assert_array_equal(cmd.v, [2.0, -3.0, 0.1])
    np.testing.assert_allclose(cmd.kp, damiao.KP_MAX / RATIO ** 2)      # what the frame carries, in joint units
    np.testing.assert_allclose(cmd.kd, damiao.KD_MAX / RATIO ** 2)
    np.testing.assert_array_equal(cmd.t, [-10.0, 20.0, 5.0])
    assert cmd.stamp == 1.5
    assert [n.split()[0] for n in notes] == ["p_des", "v_des", "kp", "kd", "t_ff"]
    assert notes[0] == "p_des clamped [5.0, -5.0, 1.0] -> [1.0, -2.0, 0.05]"


def test_a_command_within_the_limits_is_unchanged_and_silent() -> None:
    inside = np.array([[0.5, -1.0], [1.0, -1.0], [100.0, 10.0], [2.0, 1.0], [-3.0, 4.0]])
    cmd, notes = limits().clamp(inside, slice(0, 2), "mit", now=0.0)
    np.testing.assert_array_equal(np.array([cmd.p, cmd.v, cmd.kp, cmd.kd, cmd.t]), inside)
    assert notes == []


def test_pid_takes_a_speed_limit_and_a_torque_ratio_and_drops_the_gains_quietly() -> None:
    arr = np.array([[0.5, 0.5, 0.01], [-1.0, 9.0, 1.0], [50.0, 50.0, 50.0], [1.0, 1.0, 1.0], [2.0, 0.5, -1.0]])
    cmd, notes = limits().clamp(arr, slice(0, 3), "pid", now=0.0)
    np.testing.assert_array_equal(cmd.v, [0.0, 3.0, 0.1])                # a speed limit: 0 .. velocity
    np.testing.assert_array_equal(cmd.kp, 0.0)
    np.testing.assert_array_equal(cmd.kd, 0.0)
    share = np.minimum(1.0, LIMITS.effort * RATIO / TMAX)                 # the effort limit's share of TMAX
    np.testing.assert_allclose(cmd.t, [share[0], min(0.5, share[1]), 0.0])
    assert not any(n.startswith(("kp", "kd")) for n in notes)
    assert any(n.startswith("v_des") for n in notes) and any(n.startswith("t_ff") for n in notes)


def test_a_gripper_command_is_clamped_against_the_gripper_motor() -> None:
    cmd, notes = limits().clamp(np.array([[0.2], [0.0], [0.0], [0.0], [0.0]]), slice(2, 3), "mit", now=0.0)
    assert cmd.p.tolist() == [0.05] and notes == ["p_des clamped [0.2] -> [0.05]"]


@pytest.mark.parametrize("mode", ["mit", "pid"])
def test_command_array_refuses_a_used_field_of_another_length(mode) -> None:
    with pytest.raises(CommandError, match="v_des has 1 entries, p_des has 2"):
        command_array(([0.0, 0.0], [0.0], [1.0, 1.0], [1.0, 1.0], [0.0, 0.0]), 2, mode)


def test_command_array_ignores_the_gains_in_pid_and_refuses_non_finite_values() -> None:
    arr = command_array(([0.1, 0.2], [1.0, 1.0], [], [7.0], [0.5, 0.5]), 2, "pid")
    np.testing.assert_array_equal(arr, [[0.1, 0.2], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.5, 0.5]])
    with pytest.raises(CommandError, match="t_ff has non-finite values"):
        command_array(([0.0], [0.0], [1.0], [1.0], [math.inf]), 1, "mit")


def test_gripper_units() -> None:
    lim = limits()
    # motor units -> joint units: rad * 0.04 = m; gains / 0.04²; torque / 0.04 (a ratio in PID)
    assert lim.gripper_from_motor(1.0, 2.0, 16.0, 1.6, 0.2, "mit") == pytest.approx((0.04, 0.08, 1e4, 1e3, 5.0))
    assert lim.gripper_from_motor(1.0, 2.0, 16.0, 1.6, 0.2, "pid")[4] == 0.2
    # a stroke of 100 mm: each finger travels 50 mm
    r2 = 0.04 ** 2
    assert lim.gripper_stroke(100.0, "mit", 5.0, 0.2) == pytest.approx((0.05, 0.0, 5.0 / r2, 0.2 / r2, 0.0))
    assert lim.gripper_stroke(40.0, "pid", 5.0, 0.2) == pytest.approx((0.02, 0.1, 0.0, 0.0, 1.0))


def test_chassis_steer_and_wheel_speed_are_clamped() -> None:
    lim = CommandLimits(JointLimitArrays(np.array([-1.0, -math.inf]), np.array([1.0, math.inf]),
                                         np.array([3.0, 20.0]), np.array([10.0, 10.0])), np.ones(2), np.ones(2) * 40)
    steer, speed, notes = lim.clamp_chassis(np.array([2.0]), np.array([-5.0]), modules=1, radius=0.1)
    assert steer.tolist() == [1.0] and speed.tolist() == [-2.0]           # 20 rad/s * 0.1 m
    assert notes == ["steer clamped [2.0] -> [1.0]", "wheel speed clamped [-5.0] -> [-2.0]"]
    assert lim.clamp_chassis(np.array([0.5]), np.array([1.0]), 1, 0.1)[2] == []


def test_a_step_in_the_set_point_becomes_a_ramp_at_the_velocity_limit() -> None:
    lim = limits()
    target = command([1.0, 2.0, 0.05], kp=[50.0, 50.0, 50.0], kd=1.0)
    first = lim.bound_mit(target, HERE, np.zeros(3), clock=0.0)
    assert np.all(first.p <= LIMITS.velocity * 0.01 + 1e-12)              # at most the bucket (10 ms) at once
    np.testing.assert_array_equal(np.sign(first.v), [1.0, 1.0, 1.0])      # v_des the ramp's way while ramping
    p = [first.p]
    for k in range(1, 200):
        p.append(lim.bound_mit(target, HERE, np.zeros(3), clock=0.01 * k).p)
    p = np.array(p)
    speed = np.diff(p, axis=0).max(axis=0) / 0.01
    assert np.all(speed <= LIMITS.velocity * (1 + 1e-9))
    # the torque bound holds it back while the joint does not move (measured position 0) ...
    assert np.all(np.abs(50.0 * (p[-1] - HERE)) <= LIMITS.effort + 1e-6)


def test_the_torque_at_the_measured_state_stays_within_the_effort_limit() -> None:
    lim = limits()
    far = command([1.0, -2.0, 0.05], v=[0.0, 0.0, 0.0], kp=[200.0, 200.0, 200.0], kd=[2.0, 2.0, 2.0])
    position, velocity = np.array([-0.5, 1.0, 0.0]), np.array([0.0, 0.0, 0.0])
    p, v, t = lim.torque_bounded(far, position, velocity)
    tau = far.kp * (p - position) + far.kd * (v - velocity) + t
    np.testing.assert_allclose(np.abs(tau), LIMITS.effort)                # pulls at the effort limit, not at TMAX
    assert np.all((p >= LIMITS.lower) & (p <= LIMITS.upper))


def test_a_joint_at_its_limit_moving_toward_it_has_v_des_take_up_the_bound() -> None:
    lim = limits()
    cmd = command([1.0, 0.0, 0.0], kp=[200.0, 0.0, 0.0], kd=[5.0, 0.0, 0.0])
    position = np.array([0.99, 0.0, 0.0])       # the p_des that would bound it lies beyond the joint limit
    p, v, t = lim.torque_bounded(replace_t(cmd, [40.0, 0.0, 0.0]), position, np.zeros(3))
    tau = 200.0 * (p[0] - 0.99) + 5.0 * v[0] + t[0]
    assert tau == pytest.approx(10.0) and abs(v[0]) <= LIMITS.velocity[0]


def replace_t(cmd: Command, t) -> Command:
    return Command(cmd.p, cmd.v, cmd.kp, cmd.kd, np.asarray(t, dtype=float), cmd.stamp)


def test_the_torque_a_command_asks_for_changes_at_a_bounded_rate() -> None:
    lim = limits()
    push = command(HERE, t=LIMITS.effort)               # a feed-forward step from 0 to the effort limit
    first = lim.bound_mit(push, HERE, np.zeros(3), clock=0.0)
    np.testing.assert_allclose(first.t, 0.0)                              # from what the motors push now
    step = lim.bound_mit(push, HERE, np.zeros(3), clock=0.001)
    np.testing.assert_allclose(step.t, LIMITS.effort / TORQUE_RAMP_S * 0.001)
    t, clock = step.t, 0.001
    while clock < 0.2:
        clock += 0.001
        t_next = lim.bound_mit(push, HERE, np.zeros(3), clock).t
        assert np.all(t_next - t <= LIMITS.effort / TORQUE_RAMP_S * TORQUE_BUCKET_S + 1e-9)
        t = t_next
    np.testing.assert_allclose(t, LIMITS.effort)                          # there within TORQUE_RAMP_S and a bit


def test_adopted_motors_start_from_the_torque_they_push_and_a_reset_starts_afresh() -> None:
    lim = limits()
    held = command(HERE, t=[5.0, 5.0, 1.0])
    assert lim.bound_mit(held, HERE, np.zeros(3), 0.0, start_torque=np.array([5.0, 5.0, 1.0])).t.tolist() == \
        [5.0, 5.0, 1.0]
    lim.reset()
    assert lim.last_sent is None and lim.slew.position is None
    np.testing.assert_allclose(lim.bound_mit(held, HERE, np.zeros(3), 0.0).t, 0.0)


def test_at_rest_keeps_a_stiff_command_and_holds_a_limp_joint_where_it_is() -> None:
    cmd = Command(np.array([0.5, 0.5]), np.array([1.0, 1.0]), np.array([50.0, 0.0]), np.array([0.0, 0.0]),
                  np.array([2.0, 3.0]), 1.0, 2.0)
    rest = at_rest(cmd, np.array([0.1, 0.2]), hold_kp=np.array([7.0, 8.0]), hold_kd=np.array([0.7, 0.8]))
    assert rest.p.tolist() == [0.5, 0.2] and rest.v.tolist() == [0.0, 0.0]
    assert rest.kp.tolist() == [50.0, 8.0] and rest.kd.tolist() == [0.7, 0.8] and rest.t.tolist() == [2.0, 3.0]
    assert (rest.stamp, rest.robot_stamp) == (1.0, 2.0)


# -- the torque window: speed governor, pressing a limit, the law that goes out ----------------------------
def test_the_window_bounds_the_push_a_joints_way_from_near_its_speed_limit_on() -> None:
    """Joint 0 and the gripper are light (their frame carries the governor's damping: the push their way falls
    from the effort at rest to zero at 1.05x the limit), joint 1 heavy (its frame does not: it falls over the
    band from 0.95x to 1.05x). Braking is bounded by the effort alone."""
    lim = limits()
    assert lim.damped.tolist() == [True, False, True]
    vel, eff = LIMITS.velocity, LIMITS.effort
    lo, hi = lim.torque_window(HERE, np.zeros(3))
    np.testing.assert_allclose(lo, -eff)
    np.testing.assert_allclose(hi, eff)
    for share, light, heavy in ((0.5, 0.55 / 1.05, 1.0), (0.9, 0.15 / 1.05, 1.0), (1.0, 0.05 / 1.05, 0.5),
                                (1.05, 0.0, 0.0), (2.0, 0.0, 0.0)):
        lo, hi = lim.torque_window(HERE, share * vel)
        np.testing.assert_allclose(hi, eff * np.array([light, heavy, light]), atol=1e-12, err_msg=str(share))
        np.testing.assert_allclose(lo, -eff)
        lo, hi = lim.torque_window(HERE, -share * vel)           # the same, moving the other way
        np.testing.assert_allclose(lo, -eff * np.array([light, heavy, light]), atol=1e-12, err_msg=str(share))
        np.testing.assert_allclose(hi, eff)


def test_a_joint_past_a_position_limit_is_pushed_no_further_past_it_and_restored_in_full() -> None:
    lim = limits()
    eff, band = LIMITS.effort, LIMITS.velocity * PRESS_BAND_S      # the gripper's: 0.2 mm at 0.1 m/s
    lo, hi = lim.torque_window(LIMITS.upper + band / 2, np.zeros(3))
    np.testing.assert_allclose(hi, eff / 2)
    np.testing.assert_allclose(lo, -eff)
    lo, hi = lim.torque_window(LIMITS.lower - band, np.zeros(3))
    np.testing.assert_allclose(lo, 0.0, atol=1e-12)
    np.testing.assert_allclose(hi, eff)
    lo, hi = lim.torque_window(LIMITS.upper, np.zeros(3))          # at the limit: the full effort (a hold there)
    np.testing.assert_allclose(hi, eff)


def law(c: Command, q: np.ndarray, w: np.ndarray) -> np.ndarray:
    return c.kp * (c.p - q) + c.kd * (c.v - w) + c.t


def test_the_law_sent_to_a_light_joint_stops_pushing_at_the_speed_margin_and_keeps_its_force_at_rest() -> None:
    """A feed-forward at the effort on a light joint at rest (a finger in free air, or stopped by what it grips):
    the motor's own damping, raised, stops the push at 1.05x the limit between HDAS's cycles; at rest the law
    pushes the full effort, and at no speed between more."""
    lim = limits()
    push = command(HERE, t=LIMITS.effort)
    sent = lim.within_window(push, HERE, np.zeros(3))
    v_zero = LIMITS.velocity * (1.0 + SPEED_MARGIN)
    np.testing.assert_allclose(law(sent, HERE, np.zeros(3)), LIMITS.effort)          # the grip's force
    light = lim.damped
    np.testing.assert_allclose(law(sent, HERE, v_zero)[light], 0.0, atol=1e-9)
    for share in np.linspace(0.0, 1.0, 11):
        assert np.all(np.abs(law(sent, HERE, share * v_zero)) <= LIMITS.effort * (1 + 1e-12))
    # at 0.9x the limit the push allowed is what that law gives there
    fast = 0.9 * LIMITS.velocity
    sent = lim.within_window(push, HERE, fast)
    np.testing.assert_allclose(law(sent, HERE, fast)[light], (LIMITS.effort * (v_zero - fast) / v_zero)[light])
    np.testing.assert_allclose(law(sent, HERE, v_zero)[light], 0.0, atol=1e-9)


def test_a_stiff_damper_off_its_speed_is_bounded_without_throwing_p_des_across_the_range() -> None:
    """Regression (issue 28): a finger faster than v_des under kd 2100 N·s/m asks 250 N of damping; the old
    bound moved p_des to the far limit (50 mm from a finger at 6 mm) and t_ff to hundreds of newtons to cancel
    it at the measured state, which a cycle later drove the finger the other way at full effort: fuzzed kd
    flipped the fingers between the limits at 2-4x their speed. p_des and v_des now move toward the measured
    state, t_ff toward zero."""
    lim = limits()
    q, w = np.array([0.0, 0.0, 0.006]), np.array([0.0, 0.0, 0.37 * 0.4])
    cmd = command([0.0, 0.0, 0.0101], v=[0.0, 0.0, 0.1], kp=[0.0, 0.0, 3125.0], kd=[0.0, 0.0, 2100.0])
    sent = lim.within_window(cmd, q, w)
    lo, hi = lim.torque_window(q, w)
    assert lo[2] - 1e-9 <= law(sent, q, w)[2] <= hi[2] + 1e-9
    assert min(q[2], cmd.p[2]) <= sent.p[2] <= max(q[2], cmd.p[2])
    assert min(w[2], cmd.v[2]) <= sent.v[2] <= max(w[2], cmd.v[2])
    assert abs(sent.t[2]) <= LIMITS.effort[2]


def test_every_field_that_goes_out_is_within_its_limit_and_the_frame() -> None:
    """Random commands (clamped as a message would be) at random measured states, past the limits and the speed
    limits included: the sent law's torque at the measured state is within the window, and every field within
    its limit and the frame's range (a t_ff beyond the frame is cut by the encoder, which undid the bound)."""
    lim = limits()
    rng = np.random.default_rng(28)
    lo_f, hi_f = lim.bounds("mit")
    spread, centre = np.array([[2.0], [4.0], [3e4], [3e3], [30.0]]), np.array([[0.0], [0.0], [3e4], [3e3], [0.0]])
    for _ in range(2000):
        raw = rng.uniform(-1, 1, (5, 3)) * spread + centre
        cmd, _ = lim.clamp(raw, slice(0, 3), "mit", 0.0)
        q = rng.uniform(LIMITS.lower - 0.01, LIMITS.upper + 0.01)
        w = rng.uniform(-2.0, 2.0, 3) * LIMITS.velocity
        sent = lim.within_window(cmd, q, w)
        lo, hi = lim.torque_window(q, w)
        tau = law(sent, q, w)
        assert np.all(tau >= lo - 1e-6) and np.all(tau <= hi + 1e-6), (cmd, q, w)
        assert np.all(sent.p >= LIMITS.lower) and np.all(sent.p <= LIMITS.upper)
        assert np.all(np.abs(sent.v) <= LIMITS.velocity)
        assert np.all(sent.kp <= hi_f[2]) and np.all(sent.kd <= hi_f[3] + 1e-9) and np.all(sent.kp >= 0)
        assert np.all(np.abs(sent.t) <= TMAX / RATIO + 1e-9)


def test_a_command_whose_law_stays_within_the_window_goes_out_unchanged() -> None:
    """What tracking within the limits sends: a stiff hold, a move below the speed band, a heavy joint at 0.9x
    its limit with its full effort, a light one damped enough to stop at the margin on its own."""
    lim = limits()
    cases = [
        (command([0.1, -0.2, 0.02], kp=[100.0, 100.0, 3000.0], kd=[2.0, 2.0, 100.0]), [0.09, -0.21, 0.019], [0.0] * 3),
        (command([0.5, 0.5, 0.03], v=[1.0, 1.5, 0.05], kp=[20.0, 20.0, 200.0], kd=[5.0, 5.0, 200.0], t=[1.0, 2.0, 0.5]),
         [0.49, 0.49, 0.029], [1.0, 1.5, 0.05]),
        (command([0.0, 0.0, 0.0], t=[0.0, 20.0, 0.0]), [0.0] * 3, [0.0, 2.7, 0.0]),
    ]
    for cmd, q, w in cases:
        sent = lim.within_window(cmd, np.array(q), np.array(w))
        for name in ("p", "v", "kp", "kd", "t"):
            np.testing.assert_array_equal(getattr(sent, name), getattr(cmd, name), err_msg=name)


def test_a_heavy_joint_gaining_speed_fast_is_governed_a_cycle_ahead() -> None:
    """Between two of HDAS's cycles only a heavy joint's inertia bounds it (its frame cannot carry the governor
    as damping): at 0.8x its limit, having gained 0.2x in the last cycle, it is taken to be at 1.0x."""
    lim = limits()
    vel, eff = LIMITS.velocity, LIMITS.effort
    push = command(HERE, t=eff)
    w = 0.8 * vel
    sent = lim.within_window(push, HERE, w, gained=0.2 * vel)
    np.testing.assert_allclose(law(sent, HERE, w)[1], eff[1] * 0.5)               # as at 1.0x: half the effort
    np.testing.assert_allclose(law(lim.within_window(push, HERE, w), HERE, w)[1], eff[1])
    sent = lim.within_window(push, HERE, w, gained=-0.2 * vel)                     # slowing down: no change
    np.testing.assert_allclose(law(sent, HERE, w)[1], eff[1])
