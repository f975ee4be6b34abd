"""Motor groups against simulated Damiao motors, frame by frame: start-up chain, function frames
and their refusals, clamping, torque bound, command timeout, faults and the error bits."""
from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np
import pytest
import yaml

from hdas.errors import ARM_TABLE, TORSO_TABLE, Condition
from hdas.motor_group import ChassisGroup, CommandError, Function, MotorGroup, SequencerState
from hdas.urdf_limits import limit_arrays, read_limits
from r1_can import damiao
from r1_can.config import parse_config
from r1_can.damiao import ControlMode
from r1_sim.motor import SimMotor

ROOT = Path(__file__).resolve().parents[3]
CONFIG = yaml.safe_load((ROOT / "r1_can/config/r1.yaml").read_text())
CONFIG.update(yaml.safe_load((ROOT / "r1_can/config/r1_buses_sim.yaml").read_text()))
SPEC = parse_config(CONFIG)
LIMITS = read_limits((ROOT / "r1_description/urdf/r1_v2_1_0.urdf").read_text())
DT = 0.002


class Rig:
    """A group wired to its simulated motors with the joints standing still at `start`."""

    def __init__(self, group_name: str, start: list[float] | None = None, enable_on_start: bool = True):
        spec = SPEC.groups[group_name]
        limits = limit_arrays(LIMITS, [m.joint for m in spec.motors])
        cls = ChassisGroup if spec.kind == "chassis" else MotorGroup
        self.group = cls(spec, limits, command_timeout=0.2, reply_timeout=0.05, enable_on_start=enable_on_start)
        self.motors = {m.esc_id: SimMotor(m.esc_id, m.mst_id, m.limits, timeout=2000) for m in spec.motors}
        self.spec = spec
        self.now = 0.0
        self.sent: list[tuple[int, bytes]] = []
        start = start if start is not None else [0.0] * len(spec.motors)
        for m, q in zip(spec.motors, start):
            self.motors[m.esc_id].set_state(q / m.metres_per_rad, 0.0, 0.0)

    def motor(self, joint: str) -> SimMotor:
        return next(self.motors[m.esc_id] for m in self.spec.motors if m.joint == joint)

    def cycle(self, n: int = 1) -> None:
        for _ in range(n):
            self.now += DT
            self.sent = self.group.frames(self.now)
            for arbitration_id, data in self.sent:
                esc = data[0] | data[1] << 8 if arbitration_id == damiao.REGISTER_ID else arbitration_id & 0xFF
                motor = self.motors.get(esc)
                reply = motor.handle(arbitration_id, data, self.now) if motor else None
                if reply is not None:
                    assert self.group.on_frame(motor.mst_id, reply, self.now)
            for motor in self.motors.values():
                motor.set_state(motor.position, motor.velocity, self.now, DT)

    def run_request(self, function: Function, cycles: int = 200):
        req = self.group.request(function, self.now)
        for _ in range(cycles):
            if req.done.is_set():
                break
            self.cycle()
        assert req.done.is_set()
        return req

    def mit_commands(self) -> list[damiao.MitCommand]:
        by_esc = {m.esc_id: m for m in self.spec.motors}
        return [damiao.decode_mit(data, by_esc[i].limits) for i, data in self.sent]


ARM_START = [-1.5708, 0.0, -2.8346, 0.0, 0.0, 0.0, 0.02]


def started_arm() -> Rig:
    rig = Rig("left_arm", ARM_START)
    rig.cycle(100)
    assert rig.group.want_enabled and rig.group.sequencer.state is SequencerState.ENABLED
    return rig


def test_start_up_chain_enables_in_mit_and_holds_where_it_is() -> None:
    rig = started_arm()
    assert all(m.enabled and m.mode == ControlMode.MIT for m in rig.motors.values())
    assert [i for i, _ in rig.sent] == [1, 2, 3, 4, 5, 6, 7]
    cmds = rig.mit_commands()
    for c, q, m in zip(cmds, ARM_START, rig.spec.motors):
        assert c.p * m.metres_per_rad == pytest.approx(q, abs=2e-3)
        assert c.v == pytest.approx(0.0, abs=0.02)
    assert [round(c.kp) for c in cmds[:6]] == [140, 200, 120, 20, 20, 20]
    # the guide's kd 10 and 50 exceed what a Damiao MIT frame carries (0..5): saturated at 5
    assert [round(c.kd, 1) for c in cmds[:6]] == [5.0, 5.0, 5.0, 1.0, 1.0, 0.4]


def test_no_commands_but_disable_frames_until_every_motor_answered() -> None:
    rig = Rig("left_arm", ARM_START)
    for m in rig.motors.values():        # a driver before this one left them enabled
        m.enabled = True
    rig.motor("left_arm_joint4").inject("no_reply")
    rig.cycle(30)
    assert {data for _, data in rig.sent} == {damiao.DISABLE}
    silent = rig.motor("left_arm_joint4")
    assert not any(m.enabled for m in rig.motors.values() if m is not silent)
    conds = rig.group.conditions(rig.now)
    assert Condition.DISCONNECTED in conds[3]


def left_running(rig: Rig, mode: ControlMode = ControlMode.MIT, torques: list[float] | None = None) -> None:
    """The rig's motors as a driver that died left them: enabled, in `mode`, pushing `torques`."""
    for k, m in enumerate(rig.spec.motors):
        motor = rig.motors[m.esc_id]
        motor.enabled, motor.mode, motor.last_frame = True, mode, 0.0       # (its watchdog: commands until now)
        motor.registers[damiao.Register.CTRL_MODE] = int(mode)
        motor.last_torque = 0.0 if torques is None else torques[k] * m.metres_per_rad   # joint -> motor units


def test_motors_left_running_are_adopted_where_they_are_with_the_torque_they_apply() -> None:
    """A restarted HDAS (kill -9, respawn) finds the arm enabled, holding against gravity: it takes it
    over without a disable (the arm would fall) and holds it with the torque it applies (a hold without
    it would sag by gravity / hold_kp, 0.05-0.1 rad at the shoulder)."""
    rig = Rig("left_arm", ARM_START)
    torques = [0.0, 12.0, 5.0, 0.5, 0.3, 0.0, 20.0]           # gravity load; a grip of 20 N
    left_running(rig, torques=torques)
    sent = []
    for _ in range(60):
        rig.cycle()
        sent += [data for _, data in rig.sent]
    assert damiao.DISABLE not in sent and damiao.ENABLE not in sent
    assert all(m.enabled for m in rig.motors.values())
    assert rig.group.want_enabled and rig.group.mode == "mit"
    assert any("adopted" in e for e in rig.group.take_events())
    cmds = measured_torques(rig)
    np.testing.assert_allclose(cmds, torques, atol=0.2)        # the hold pushes what the motors pushed
    for c, q, m in zip(rig.mit_commands(), ARM_START, rig.spec.motors):
        assert c.p * m.metres_per_rad == pytest.approx(q, abs=2e-3)


@pytest.mark.parametrize("how", ["wrong mode", "a fault", "one disabled"])
def test_motors_not_all_running_in_the_boot_mode_are_started_afresh(how) -> None:
    rig = Rig("left_arm", ARM_START)
    left_running(rig, ControlMode.FORCE_POS if how == "wrong mode" else ControlMode.MIT)
    if how == "a fault":
        rig.motor("left_arm_joint2").inject("over_current")
    if how == "one disabled":
        rig.motor("left_arm_joint6").enabled = False
    sent = []
    for _ in range(700):
        rig.cycle()
        sent += [data for _, data in rig.sent]
    assert damiao.DISABLE in sent
    events = rig.group.take_events()
    assert any("not adopting" in e for e in events)
    if how != "a fault":            # (a latched fault needs clear-error first, command 4)
        assert rig.group.want_enabled and all(m.enabled and m.mode == ControlMode.MIT for m in rig.motors.values())


def test_the_service_does_not_take_adopt() -> None:
    from hdas.motor_group import SERVICE_FUNCTIONS
    assert Function.ADOPT not in SERVICE_FUNCTIONS and {int(f) for f in SERVICE_FUNCTIONS} == {1, 2, 3, 4, 5, 6}


def test_adopted_wheels_ramp_down_from_the_speed_they_turn_at() -> None:
    rig = Rig("chassis")
    modes = [ControlMode.FORCE_POS] * 3 + [ControlMode.VEL] * 3
    for m, mode in zip(rig.spec.motors, modes):
        motor = rig.motors[m.esc_id]
        motor.enabled, motor.mode, motor.last_frame = True, mode, 0.0
        motor.registers[damiao.Register.CTRL_MODE] = int(mode)
    radius = rig.group.radius
    for m in rig.spec.motors[3:]:
        rig.motors[m.esc_id].set_state(0.0, 1.0 / radius, 0.0)          # 1 m/s
    speeds = []
    for _ in range(100):
        rig.cycle()
        frames = [d for i, d in rig.sent if i & 0x700 == 0x200]
        if frames:
            speeds.append(struct.unpack("<f", frames[0][:4])[0] * radius)
    assert any("adopted" in e for e in rig.group.take_events())
    assert speeds[0] == pytest.approx(1.0, abs=0.02)              # not a stop from 1 m/s in one frame
    assert np.all(np.diff(speeds) >= -2.5 * DT - 1e-6) and speeds[-1] < 0.7


def test_mode_change_refused_while_enabled_then_done_disabled() -> None:
    rig = started_arm()
    req = rig.group.request(Function.PID, rig.now)
    assert req.done.is_set() and not req.success and "disabled first" in req.message
    assert rig.run_request(Function.DISABLE).success
    assert all(not m.enabled for m in rig.motors.values())
    assert rig.run_request(Function.PID).success
    assert all(m.mode == ControlMode.FORCE_POS for m in rig.motors.values())
    assert rig.run_request(Function.ENABLE).success
    rig.cycle(2)
    assert {i & 0x700 for i, _ in rig.sent} == {0x300}
    # PID commands: p, speed limit, torque ratio within the joint's effort share
    rig.group.set_command([0.1] * 6, [10.0] * 6, [], [], [2.0] * 6, rig.now)
    rig.cycle()
    for (_, data), m in zip(rig.sent[:6], rig.spec.motors):
        c = damiao.decode_force_pos(data)
        lim = LIMITS[m.joint]
        assert c.v_limit <= lim.velocity + 1e-6
        assert c.torque_ratio <= min(1.0, lim.effort / m.limits.tmax) + 1e-4


def test_a_register_echo_after_the_mode_change_completed_is_not_feedback() -> None:
    """A motor answers each CTRL_MODE write with an echo on its feedback id; one that arrives after
    the mode change completed (a duplicate write's, on a busy bus) read as feedback is a position
    near -PMAX (a 0x55 echo: -12.4676 rad). Seen on the simulated robot's start-up: the torso and
    arms' feedback jumped there and back for about a second and torso speed control re-seeded to
    its joint limits. Echoes within REGISTER_REPLY_WINDOW of a write are consumed."""
    rig = started_arm()
    assert rig.run_request(Function.DISABLE).success
    assert rig.run_request(Function.MIT).success
    before = rig.group.snapshot()[0].copy()
    for m in rig.spec.motors:                  # late echoes of the last writes
        echo = rig.motors[m.esc_id].handle(damiao.REGISTER_ID, damiao.encode_register_write(
            m.esc_id, damiao.Register.CTRL_MODE, int(ControlMode.MIT)), rig.now)
        assert echo is not None and echo[2] == 0x55
        assert rig.group.on_frame(m.mst_id, echo, rig.now + 0.01)
    np.testing.assert_array_equal(rig.group.snapshot()[0], before)
    assert rig.run_request(Function.ENABLE).success
    rig.cycle(5)
    np.testing.assert_allclose(rig.group.snapshot()[0], ARM_START, atol=5e-3)


def test_calibrate_refused_while_enabled_and_zeroes_when_disabled() -> None:
    rig = started_arm()
    assert not rig.group.request(Function.CALIBRATE, rig.now).success
    rig.run_request(Function.DISABLE)
    assert rig.run_request(Function.CALIBRATE).success
    rig.cycle(3)
    p, _, _ = rig.group.snapshot()
    assert np.allclose(p, 0.0, atol=1e-3)


def test_calibrate_queued_behind_an_enable_is_refused_when_it_would_start() -> None:
    rig = started_arm()
    rig.run_request(Function.DISABLE)
    enable = rig.group.request(Function.ENABLE, rig.now)
    calibrate = rig.group.request(Function.CALIBRATE, rig.now)     # accepted: disabled when queued
    rig.cycle(200)
    assert enable.success
    assert calibrate.done.is_set() and not calibrate.success and "disabled first" in calibrate.message
    assert all(abs(m.zero_offset) < 1e-9 for m in rig.motors.values())


def test_a_request_waiting_for_a_silent_motor_can_be_withdrawn() -> None:
    rig = Rig("left_arm", ARM_START, enable_on_start=False)
    rig.motor("left_arm_joint4").inject("no_reply")
    enable = rig.group.request(Function.ENABLE, rig.now)
    rig.cycle(50)
    assert not enable.done.is_set()                    # waits for every motor to answer
    assert rig.group.cancel(enable, "gave up")
    assert enable.done.is_set() and not enable.success and enable.message == "gave up"
    rig.motor("left_arm_joint4").inject("none")        # the motor answers later: nothing runs
    rig.cycle(100)
    assert not any(m.enabled for m in rig.motors.values())
    assert not rig.group.cancel(enable, "again")


def test_unknown_request_never_hangs() -> None:
    rig = started_arm()
    for m in rig.motors.values():
        m.inject("no_reply")
    req = rig.run_request(Function.DISABLE, cycles=1000)
    assert not req.success and "not confirmed" in req.message


@pytest.mark.parametrize("bad", [
    dict(p=[0.0] * 5),                                        # wrong length
    dict(p=[0.0, math.nan, 0, 0, 0, 0]),                      # NaN position
    dict(t=[0.0, 0, 0, math.inf, 0, 0]),                      # inf torque
    dict(kp=[1.0] * 4),                                       # gains shorter than positions
])
def test_malformed_commands_are_refused(bad: dict) -> None:
    rig = started_arm()
    args = dict(p=[0.0] * 6, v=[0.0] * 6, kp=[10.0] * 6, kd=[1.0] * 6, t=[0.0] * 6)
    args.update(bad)
    before = rig.group._command
    with pytest.raises(CommandError):
        rig.group.set_command(args["p"], args["v"], args["kp"], args["kd"], args["t"], rig.now)
    assert rig.group._command is before


def test_commands_are_clamped_to_urdf_limits() -> None:
    rig = started_arm()
    lim = [LIMITS[f"left_arm_joint{k}"] for k in range(1, 7)]
    notes = rig.group.set_command([10.0] * 6, [50.0] * 6, [0.0] * 6, [0.0] * 6, [-100.0] * 6, rig.now)
    assert any("p_des" in n for n in notes) and any("t_ff" in n for n in notes)
    rig.cycle()
    for c, joint in zip(rig.mit_commands()[:6], lim):
        assert c.p <= joint.upper + 1e-3
        assert abs(c.v) <= joint.velocity + 0.05
        assert c.tau >= -joint.effort - 0.05


def test_mit_torque_at_measured_state_is_bounded_by_effort_limit() -> None:
    rig = started_arm()
    # a huge step with stiff gains would ask for far more than the effort limit
    rig.group.set_command([0.5, 1.0, -1.0, 1.0, 1.0, 1.0], [0.0] * 6, [400.0] * 6, [2.0] * 6, [0.0] * 6, rig.now)
    rig.cycle()
    for c, m, q in zip(rig.mit_commands()[:6], rig.spec.motors, ARM_START):
        tau = c.kp * (c.p - q) + c.kd * c.v + c.tau
        assert abs(tau) <= LIMITS[m.joint].effort * 1.02 + 0.1, m.joint


def measured_torques(rig: Rig) -> np.ndarray:
    """The MIT law of each frame sent, at the state the group measured last (joint units)."""
    g = rig.group
    out = []
    for c, m, q, w in zip(rig.mit_commands(), rig.spec.motors, g.position, g.velocity):
        r = m.metres_per_rad
        out.append((c.kp * (c.p - q / r) + c.kd * (c.v - w / r) + c.tau) / r)
    return np.array(out)


def test_a_torque_step_is_ramped_over_torque_ramp_s() -> None:
    """A feed-forward step to the effort limit (a raw command, a fuzzer's) is no single kick: the
    torque sent rises at most effort / 50 ms (with 10 ms of it at once)."""
    rig = started_arm()
    effort = np.array([LIMITS[m.joint].effort for m in rig.spec.motors[:6]])
    rig.group.set_command(ARM_START[:6], [0.0] * 6, [0.0] * 6, [0.0] * 6, effort.tolist(), rig.now)
    taus = []
    for _ in range(40):
        rig.cycle()
        taus.append([c.tau / m.metres_per_rad for c, m in zip(rig.mit_commands()[:6], rig.spec.motors)])
    taus = np.array(taus)
    assert np.all(np.abs(taus[0]) <= effort * (0.01 + DT) / 0.05 * 1.02 + 0.05)
    assert np.all(np.diff(taus, axis=0) <= effort * DT / 0.05 * 1.02 + 0.05)
    np.testing.assert_allclose(taus[-1], effort, rtol=0.02)


def test_a_new_command_changes_the_torque_at_most_at_the_ramp_rate() -> None:
    """Stiffness raised to 500, v_des at the limit and the full feed-forward in one message (a fuzzer's,
    a buggy program's) reach the motor as a torque that changes by at most effort * dt / 50 ms a
    cycle (and 5 ms of it at once): one such frame would give a light wrist 10 rad/s in 10 ms."""
    rig = started_arm()
    sent_positions(rig, 50, follow=True)
    before = measured_torques(rig)[:6]
    effort = np.array([LIMITS[m.joint].effort for m in rig.spec.motors[:6]])
    here = np.array(ARM_START[:6]) + 0.05
    rig.group.set_command(here.tolist(), [3.0, 3.0, 3.0, 5.0, 5.0, 5.0], [500.0] * 6, [5.0] * 6, effort.tolist(),
                          rig.now)
    rig.cycle()
    after = measured_torques(rig)[:6]
    assert np.all(np.abs(after - before) <= effort * (DT + 0.005) / 0.05 * 1.05 + 0.05)   # a cycle + the bucket


def test_a_push_from_the_world_is_met_with_the_full_stiffness() -> None:
    """Only a change of command is rate-bounded: a joint pushed off its set-point meets the command's
    own stiffness at once (the set-point is not moved toward it)."""
    rig = started_arm()
    target = list(ARM_START[:6])
    for _ in range(60):
        rig.group.set_command(target, [0.0] * 6, [100.0] * 6, [2.0] * 6, [0.0] * 6, rig.now)
        sent_positions(rig, 1, follow=True)
    motor = rig.motor("left_arm_joint1")
    motor.set_state(motor.position + 0.05, 0.0, rig.now)           # pushed by 0.05 rad
    rig.group.set_command(target, [0.0] * 6, [100.0] * 6, [2.0] * 6, [0.0] * 6, rig.now)
    rig.cycle(2)
    c = rig.mit_commands()[0]
    assert c.p == pytest.approx(ARM_START[0], abs=2e-3) and c.kp == pytest.approx(100.0, abs=0.5)
    assert measured_torques(rig)[0] == pytest.approx(-5.0, abs=0.3)    # kp * 0.05 back toward the set-point


def test_a_joint_at_its_stop_gets_no_v_des_beyond_its_velocity_limit() -> None:
    """Regression (issue 19): pushing a joint at its position limit further, the torque bound could not
    move p_des (clipped to the limit) and moved v_des instead, without bound: a fuzzed command drove a
    wrist at its stop to 22 rad/s. v_des stays within the limit; the feed-forward takes the rest."""
    start = list(ARM_START)
    start[3] = 2.8798                                   # joint 4 at its upper limit
    rig = Rig("left_arm", start)
    rig.cycle(100)
    velocity = np.array([LIMITS[m.joint].velocity for m in rig.spec.motors])
    for _ in range(60):
        rig.group.set_command([p + 3.0 for p in start[:6]], [5.0] * 6, [500.0] * 6, [0.01] * 6, [0.0] * 6, rig.now)
        rig.cycle()
        cmds = rig.mit_commands()
        assert all(abs(c.v * m.metres_per_rad) <= v + 0.02 for c, m, v in zip(cmds, rig.spec.motors, velocity))
    for tau, m in zip(measured_torques(rig)[:6], rig.spec.motors):
        assert abs(tau) <= LIMITS[m.joint].effort * 1.02 + 0.1, m.joint


def test_silent_command_stream_holds_last_target() -> None:
    rig = started_arm()
    target = [-1.4, 0.1, -2.7, 0.2, 0.1, 0.0]
    rig.group.set_command(target, [0.5] * 6, [20.0] * 6, [1.0] * 6, [0.0] * 6, rig.now)   # within effort limits
    sent_positions(rig, 150, follow=True)        # 0.3 s > command_timeout (the joints follow their set-points)
    cmds = rig.mit_commands()[:6]
    assert [c.p for c in cmds] == pytest.approx(target, abs=2e-3)
    assert all(abs(c.v) < 0.02 for c in cmds)
    assert any("holding position" in e for e in rig.group.take_events())


def test_a_late_stream_holds_its_median_feed_forward_not_its_last_tick() -> None:
    """Issue 28: a controller starved of CPU went silent for 0.3 s right after a one-tick feed-forward (the
    base's acceleration pulse, 65 N·m at torso_joint1), and HDAS held it the whole time: the torso leaned
    0.13 rad. Live (within command_lapse) a command is sent as it came; late, its feed-forward is the
    median of the stream's last 0.1 s; stale, the hold keeps that median."""
    rig = started_arm()
    effort = np.array([LIMITS[m.joint].effort for m in rig.spec.motors[:6]])
    steady, spike = 0.05 * effort, 0.3 * effort

    def sent_tau() -> np.ndarray:
        return np.array([c.tau / m.metres_per_rad for c, m in zip(rig.mit_commands()[:6], rig.spec.motors)])

    for k in range(20):                                   # 0.2 s of a 100 Hz stream, its last command a spike
        rig.group.set_command(ARM_START[:6], [0.0] * 6, [20.0] * 6, [1.0] * 6,
                              (spike if k == 19 else steady).tolist(), rig.now)
        sent_positions(rig, 5 if k < 19 else 20, follow=True)
    np.testing.assert_allclose(sent_tau(), spike, rtol=0.02)     # 40 ms after it: live, sent as it came
    sent_positions(rig, 30, follow=True)                           # 100 ms after it: late
    np.testing.assert_allclose(sent_tau(), steady, rtol=0.02)
    assert not rig.group._timed_out
    sent_positions(rig, 100, follow=True)                          # 300 ms: stale, held
    assert rig.group._timed_out
    np.testing.assert_allclose(sent_tau(), steady, rtol=0.02)
    rig.group.set_command(ARM_START[:6], [0.0] * 6, [20.0] * 6, [1.0] * 6, spike.tolist(), rig.now)
    sent_positions(rig, 20, follow=True)                           # the stream is back: live again
    np.testing.assert_allclose(sent_tau(), spike, rtol=0.02)


def test_injected_fault_shows_and_clears_with_command_4() -> None:
    rig = started_arm()
    rig.motor("left_arm_joint2").inject("over_current")
    rig.cycle(3)
    conds = rig.group.conditions(rig.now)
    assert conds[1] == {Condition.OVER_CURRENT}
    code = ARM_TABLE.code(conds[1])
    assert ARM_TABLE.describe(code) == ["OVER_CURRENT"]
    req = rig.run_request(Function.CLEAR_ERRORS)
    assert req.success, req.message
    rig.cycle(3)
    assert rig.group.conditions(rig.now)[1] == set()
    assert rig.motor("left_arm_joint2").enabled          # it was enabled before: re-enabled


def test_silent_motor_reports_receive_timeout() -> None:
    rig = started_arm()
    rig.motor("left_arm_joint5").inject("no_reply")
    rig.cycle(40)
    assert Condition.RECEIVE_TIMEOUT in rig.group.conditions(rig.now)[4]


def test_a_pause_of_the_driver_is_not_a_silent_motor() -> None:
    # the whole machine stalls (no cycles run) far longer than reply_timeout: on resume
    # the motors answer the next frames, and no RECEIVE_TIMEOUT is reported meanwhile
    rig = started_arm()
    rig.now += 0.5
    assert all(Condition.RECEIVE_TIMEOUT not in c for c in rig.group.conditions(rig.now))
    rig.cycle(1)
    assert all(c == set() for c in rig.group.conditions(rig.now))
    # a motor that stays silent over several cycles is still reported
    rig.motor("left_arm_joint5").inject("no_reply")
    rig.now += 0.5
    rig.cycle(3)
    assert Condition.RECEIVE_TIMEOUT in rig.group.conditions(rig.now)[4]


def test_replies_waiting_behind_a_busy_driver_are_no_silent_motors() -> None:
    """Cycles ran but their replies wait unread (the driver's receive path is behind: a busy machine).
    Every motor's last reply is as old as the others': no RECEIVE_TIMEOUT (the fuzz test saw storms of
    them, cleared 20 ms later, when a status check ran meanwhile). The whole group silent for
    GROUP_SILENCE (a bus down) is reported."""
    rig = started_arm()
    for _ in range(5):                   # frames go out, no reply is read
        rig.now += DT * 8
        rig.group.frames(rig.now)
    assert rig.now - rig.group.stamp.max() > 0.05
    assert all(Condition.RECEIVE_TIMEOUT not in c for c in rig.group.conditions(rig.now))
    rig.now += 0.25
    rig.group.frames(rig.now)
    assert all(Condition.RECEIVE_TIMEOUT in c for c in rig.group.conditions(rig.now))


def test_a_pause_of_the_driver_does_not_fail_a_request() -> None:
    rig = started_arm()
    req = rig.group.request(Function.DISABLE, rig.now)
    rig.group.frames(rig.now)            # the request starts; its frames are lost in a stall
    rig.now += 2.0                       # past REQUEST_TIMEOUT, but only one cycle ran
    rig.cycle(5)
    assert req.done.is_set() and req.success, req.message
    # a motor that never confirms still fails the request, once enough cycles were run
    rig.motor("left_arm_joint3").inject("no_reply")
    req = rig.run_request(Function.ENABLE, cycles=2000)
    assert not req.success and "left_arm_joint3" in req.message


def test_error_bits_follow_the_stock_tables() -> None:
    assert ARM_TABLE.code({Condition.DISABLED}) == 1
    assert ARM_TABLE.code({Condition.RECEIVE_TIMEOUT, Condition.POSITION_EXCEEDED}) == (1 << 4) | (1 << 5)
    assert ARM_TABLE.describe(1 << 13 | 1 << 14) == ["COMMUNICATION_LOSS", "OVERLOAD"]
    assert TORSO_TABLE.describe(TORSO_TABLE.code({Condition.COMM_LOST})) == ["CAN_COMMUNICATION_LOST"]
    assert TORSO_TABLE.describe(TORSO_TABLE.code({Condition.ROTOR_OVER_TEMP})) == ["COIL_TEMPERATURE"]
    # every motor status nibble has a bit in both tables
    from hdas.errors import STATUS_CONDITION
    for status, cond in STATUS_CONDITION.items():
        assert cond in ARM_TABLE.bits and cond in TORSO_TABLE.bits, status


def test_gripper_stroke_command_in_mm() -> None:
    rig = started_arm()
    rig.group.set_gripper_stroke(60.0, rig.now)           # 60 mm gap: 30 mm per finger
    rig.cycle(100)                                        # (ramped: 10 mm at 0.25 m/s take 40 ms)
    m = rig.spec.gripper
    c = damiao.decode_mit(rig.sent[6][1], m.limits)
    assert c.p * m.metres_per_rad == pytest.approx(0.03, abs=1e-4)
    assert c.kp == pytest.approx(5.0, abs=0.2)             # config gains are motor units
    with pytest.raises(CommandError):
        rig.group.set_gripper_stroke(math.nan, rig.now)


def sent_positions(rig: Rig, cycles: int, follow: bool = False) -> np.ndarray:
    """The MIT p_des sent to each motor over `cycles` cycles, in joint units; `follow`: each motor
    is at its set-point (and its speed) after each cycle, a perfect servo (a motor that stays put is
    a blocked joint, and the torque bound then holds the set-point back)."""
    out, last = [], None
    for _ in range(cycles):
        rig.cycle()
        cmds = rig.mit_commands()
        out.append([c.p * m.metres_per_rad for c, m in zip(cmds, rig.spec.motors)])
        if follow:
            for c, m in zip(cmds, rig.spec.motors):
                motor = rig.motors[m.esc_id]
                speed = 0.0 if last is None else (c.p - last[m.esc_id]) / DT
                motor.set_state(c.p + motor.zero_offset, speed, rig.now)
            last = {m.esc_id: c.p for c, m in zip(cmds, rig.spec.motors)}
    return np.array(out)


def test_a_stroke_step_becomes_a_ramp_at_the_finger_speed_limit() -> None:
    """Regression (issue 19): a stroke step 0 -> 100 mm went out as one set-point step and the fingers
    moved at 0.43 m/s, 1.7x the URDF's 0.25 m/s. The set-point now ramps at the limit."""
    rig = started_arm()
    rig.group.set_gripper_stroke(0.0, rig.now)
    sent_positions(rig, 50)
    rig.group.set_gripper_stroke(100.0, rig.now)
    p = sent_positions(rig, 150, follow=True)[:, 6]
    speed = np.diff(p) / DT
    assert p[-1] == pytest.approx(0.05, abs=1e-4)            # there, in the end
    assert speed.max() <= 0.25 * 1.02                        # (the frame's 16-bit rounding)
    # a ramp, not a step: 50 mm at 0.25 m/s take 0.2 s, less the bucket's 10 ms at once, plus the
    # torque's own ramp-in at the start (a new command changes the torque over 50 ms at the fastest)
    assert 0.18 <= np.argmax(p > 0.0499) * DT <= 0.25


def test_raw_joint_steps_ramp_at_each_joints_velocity_limit() -> None:
    """A raw motor_control step (any publisher) moves each set-point at most at its URDF velocity:
    over any stretch of T seconds at most velocity * (T + 10 ms)."""
    rig = started_arm()
    here = np.array(ARM_START[:6])
    target = np.clip(here + [1.0, 1.0, 1.0, 2.0, -2.0, 2.0], rig.group.limits.lower[:6], rig.group.limits.upper[:6])
    p = []
    for _ in range(400):                # a live stream (a command stream that stops is held instead)
        # gains low enough that the torque bound leaves the ramp alone (a bound pulls p_des back
        # toward the joint, never ahead of the ramp)
        rig.group.set_command(target, [0.0] * 6, [3.0] * 6, [0.0] * 6, [0.0] * 6, rig.now)
        p.append(sent_positions(rig, 1, follow=True)[0, :6])
    p = np.array(p)
    velocity = rig.group.limits.velocity[:6]
    np.testing.assert_allclose(p[-1], target, atol=2e-3)
    for window in (1, 10, 100):
        travel = np.abs(p[window:] - p[:-window]).max(axis=0)
        assert np.all(travel <= velocity * (window * DT + 0.01) * 1.01 + 1e-3), window


def test_while_a_set_point_ramps_its_v_des_is_the_ramps_velocity() -> None:
    """The motor's damping then follows the ramp instead of resisting it (with v_des 0 a stiff
    shoulder lagged and then overshot the limit to catch up: 5 rad/s for a 3 rad/s ramp)."""
    rig = started_arm()
    target = list(ARM_START[:6])
    target[0] += 0.5                    # joint 1 up, joint 5 down: the others stay
    target[4] -= 0.5
    rig.group.set_command(target, [0.0] * 6, [3.0] * 6, [0.0] * 6, [0.0] * 6, rig.now)
    rig.cycle()
    v = [c.v for c in rig.mit_commands()[:6]]
    assert v == pytest.approx([3.0, 0.0, 0.0, 0.0, -5.0, 0.0], abs=0.02)
    for _ in range(150):
        rig.group.set_command(target, [0.0] * 6, [3.0] * 6, [0.0] * 6, [0.0] * 6, rig.now)
        sent_positions(rig, 1, follow=True)
    assert [c.v for c in rig.mit_commands()[:6]] == pytest.approx([0.0] * 6, abs=0.02)   # there: the command's


def test_a_joint_without_stiffness_ramps_from_where_it_is() -> None:
    """kp = 0 (torque control) makes p_des meaningless: the set-point follows the joint, so a stiff
    command afterwards starts its ramp at the joint, not at an old set-point."""
    rig = started_arm()
    rig.group.set_command([0.5] * 6, [0.0] * 6, [0.0] * 6, [1.0] * 6, [0.0] * 6, rig.now)
    sent_positions(rig, 20)
    rig.motor("left_arm_joint1").set_state(-1.0, 0.0, rig.now)     # moved by hand meanwhile
    rig.cycle(2)
    rig.group.set_command([-0.9] + ARM_START[1:6], [0.0] * 6, [100.0] * 6, [2.0] * 6, [0.0] * 6, rig.now)
    first = sent_positions(rig, 1)[0, 0]
    assert -1.0 < first <= -1.0 + 3.0 * 0.01 + 2e-3        # from the joint, one bucket (10 ms at 3 rad/s)


def test_torso_starts_and_reports_on_torso_table() -> None:
    rig = Rig("torso", [0.0, 0.0, 0.0, 0.0])
    rig.cycle(100)
    assert all(m.enabled for m in rig.motors.values())
    assert rig.group.table is TORSO_TABLE


def test_chassis_modes_and_wheel_ramp_on_timeout() -> None:
    rig = Rig("chassis")
    rig.cycle(100)
    modes = [m.mode for m in rig.motors.values()]
    assert modes == [ControlMode.FORCE_POS] * 3 + [ControlMode.VEL] * 3
    assert all(m.enabled for m in rig.motors.values())
    rig.group.set_command([0.3, 0.3, 0.3], [1.0, 1.0, 1.0], [], [], [], rig.now)
    rig.cycle(300)                  # 0.6 s: ramps up at 2.5 m/s², then the stream stops at 0.2 s
    speeds = []
    for _ in range(200):
        rig.cycle()
        wheel_frames = [d for i, d in rig.sent if i & 0x700 == 0x200]
        speeds.append(damiao.decode_vel(wheel_frames[0]) * rig.group.radius)
    assert speeds[-1] == 0.0
    assert all(b <= a + 1e-9 for a, b in zip(speeds, speeds[1:]))         # monotonic ramp down
    assert max(a - b for a, b in zip(speeds, speeds[1:])) <= 2.5 * DT + 1e-6
    steer = [damiao.decode_force_pos(d) for i, d in rig.sent if i & 0x700 == 0x300]
    assert [c.p for c in steer] == pytest.approx([0.3] * 3)        # modules keep their angle
    assert all(c.v_limit <= LIMITS["steer_motor_joint1"].velocity + 1e-3 for c in steer)


def test_a_steering_speed_above_the_urdf_limit_is_capped() -> None:
    spec = SPEC.groups["chassis"]
    fast = type(spec)(**{**vars(spec), "params": {**spec.params, "steer_speed_limit": 6.0}})
    group = ChassisGroup(fast, limit_arrays(LIMITS, [m.joint for m in spec.motors]), 0.2, 0.05)
    assert group.steer_speed.tolist() == pytest.approx([LIMITS["steer_motor_joint1"].velocity] * 3)
    assert any("capped" in e for e in group.take_events())


def test_chassis_refuses_malformed_and_clamps_speed() -> None:
    rig = Rig("chassis")
    rig.cycle(100)
    with pytest.raises(CommandError):
        rig.group.set_command([0.0, 0.0], [1.0, 1.0, 1.0], [], [], [], rig.now)
    with pytest.raises(CommandError):
        rig.group.set_command([0.0, 0.0, math.nan], [1.0, 1.0, 1.0], [], [], [], rig.now)
    notes = rig.group.set_command([3.0, 0.0, 0.0], [9.0, 0.0, 0.0], [], [], [], rig.now)
    assert len(notes) == 2
    rig.cycle(2000)
    steer = damiao.decode_force_pos(rig.sent[0][1]).p
    assert steer <= LIMITS["steer_motor_joint1"].upper + 1e-6
    wheel = damiao.decode_vel(rig.sent[1][1])
    assert wheel <= LIMITS["wheel_motor_joint1"].velocity + 1e-4



def test_command_goes_stale_only_when_old_in_the_robots_clock_too() -> None:
    """On simulated time running slower than real time, a controller that ticks on the robot's
    clock sends commands far apart in wall time: a slow stream, not a stopped one. The wheel
    ramp runs on the robot's clock too."""
    rig = Rig("chassis")
    robot = [50.0]
    rig.group.robot_clock = lambda: robot[0]

    def cycles(n: int, robot_dt: float) -> list[float]:
        out = []
        for _ in range(n):
            robot[0] += robot_dt
            rig.cycle()
            wheel = [d for i, d in rig.sent if i & 0x700 == 0x200]
            if wheel:
                out.append(damiao.decode_vel(wheel[0]) * rig.group.radius)
        return out

    cycles(100, DT)                    # start-up: enabled
    rig.group.set_command([0.0] * 3, [0.5] * 3, [], [], [], rig.now)
    up = cycles(400, DT / 10)          # 0.8 s of wall time, 0.08 s of robot time: still streaming
    assert not rig.group._timed_out
    assert up[-1] == pytest.approx(0.08 * 2.5, abs=2.5 * DT / 10 + 1e-6)   # ramped on robot time
    cycles(150, DT)                    # 0.3 s of robot time more: now old in both clocks
    assert rig.group._timed_out


def test_sent_stamp_is_the_live_commands_arrival_and_none_for_a_hold() -> None:
    """The bus's latency key: age of the command a cycle sends (r1_can.bus, docs/diagnostics.md)."""
    rig = started_arm()
    assert rig.group.sent_stamp is None                     # holding where it started
    arrival = rig.now
    rig.group.set_command([-1.4, 0.1, -2.7, 0.2, 0.1, 0.0], [0.0] * 6, [20.0] * 6, [1.0] * 6, [0.0] * 6, arrival)
    rig.cycle(3)
    assert rig.group.sent_stamp == arrival                  # the same command, 3 cycles old
    rig.cycle(150)                                          # stale: a hold
    assert rig.group.sent_stamp is None
    chassis = Rig("chassis")
    chassis.cycle(100)
    assert chassis.group.sent_stamp is None
    chassis.group.set_command([0.0] * 3, [0.1] * 3, [], [], [], chassis.now)
    chassis.cycle()
    assert chassis.group.sent_stamp == pytest.approx(chassis.now - DT)
    chassis.cycle(150)                                      # timed out: the wheels ramp to zero
    assert chassis.group.sent_stamp is None


# -- holds and re-enables that stay where the joints are ---------------------------------------------
def test_a_stopped_torque_stream_holds_where_the_joints_are() -> None:
    rig = started_arm()
    # torque mode: no stiffness, p_des unused (0); a hold must not pull the arm to p_des = 0
    rig.group.set_command([0.0] * 6, [0.0] * 6, [0.0] * 6, [0.0] * 6, [1.0, 2.0, 1.0, 0.0, 0.0, 0.0], rig.now)
    rig.cycle(150)                       # 0.3 s > command_timeout
    cmds = rig.mit_commands()[:6]
    assert [c.p for c in cmds] == pytest.approx(ARM_START[:6], abs=2e-3)
    assert all(c.kp > 0 and abs(c.v) < 0.02 for c in cmds)
    assert any("holding position" in e for e in rig.group.take_events())


def test_re_enable_holds_where_the_joints_are_not_at_the_old_target() -> None:
    rig = started_arm()
    rig.group.set_command([-1.4, 0.1, -2.7, 0.2, 0.1, 0.0], [0.0] * 6, [20.0] * 6, [1.0] * 6, [0.0] * 6, rig.now)
    rig.cycle()
    assert rig.run_request(Function.DISABLE).success
    moved = [-1.0, 0.3, -2.0, 0.5, 0.4, 0.3]           # moved by hand while off
    for m, q in zip(rig.spec.motors, moved):
        rig.motors[m.esc_id].set_state(q / m.metres_per_rad, 0.0, rig.now)
    rig.cycle(5)
    assert rig.run_request(Function.ENABLE).success
    rig.cycle()
    assert [c.p for c in rig.mit_commands()[:6]] == pytest.approx(moved, abs=2e-3)


def test_a_joint_clipped_at_its_limit_still_gets_at_most_its_effort() -> None:
    rig = started_arm()
    j = 1                                 # left_arm_joint2 near its upper limit, moving up fast
    upper = rig.group.limits.upper[j]
    rig.group.position[j], rig.group.velocity[j] = upper - 0.01, 3.0
    p = list(ARM_START[:6])
    p[j] = upper
    rig.group.set_command(p, [0.0] * 6, [100.0] * 6, [5.0] * 6, [0.0, -40.0, 0.0, 0.0, 0.0, 0.0], rig.now)
    frames = rig.group.frames(rig.now)
    m = rig.spec.motors[j]
    c = damiao.decode_mit(frames[j][1], m.limits)
    tau = c.kp * (c.p - (upper - 0.01)) + c.kd * (c.v - 3.0) + c.tau
    assert abs(tau) <= LIMITS[m.joint].effort * 1.01 + 0.1


def test_a_stopped_gripper_stream_holds_and_a_stroke_target_stays() -> None:
    rig = started_arm()
    rig.group.set_gripper_motor_command(0.0, 2.0, 0.0, 1.0, 0.5, rig.now)   # velocity mode, motor units
    rig.cycle(40)                                       # (a new command's torque ramps in over 50 ms)
    m = rig.spec.gripper
    assert damiao.decode_mit(rig.sent[6][1], m.limits).v == pytest.approx(2.0, abs=0.02)
    rig.cycle(110)
    c = damiao.decode_mit(rig.sent[6][1], m.limits)
    assert abs(c.v) < 0.02 and c.kp > 0
    assert any("gripper holding" in e for e in rig.group.take_events())
    rig.group.set_gripper_stroke(60.0, rig.now)          # a target, not a stream: kept
    rig.cycle(500)
    c = damiao.decode_mit(rig.sent[6][1], m.limits)
    assert c.p * m.metres_per_rad == pytest.approx(0.03, abs=1e-4)
    assert not any("gripper holding" in e for e in rig.group.take_events())


def test_gripper_torque_ratio_in_pid_mode_is_a_ratio() -> None:
    rig = started_arm()
    assert rig.run_request(Function.DISABLE).success
    assert rig.run_request(Function.PID).success
    assert rig.run_request(Function.ENABLE).success
    rig.group.set_gripper_motor_command(0.5, 2.0, 0.0, 0.0, 0.05, rig.now)
    rig.cycle()
    assert damiao.decode_force_pos(rig.sent[6][1]).torque_ratio == pytest.approx(0.05, abs=1e-3)
