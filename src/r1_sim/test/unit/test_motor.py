"""Simulated Damiao motor: states, control laws, registers, watchdog, faults, all through real frames."""
from __future__ import annotations

import math
import struct

import pytest

from r1_can import damiao
from r1_can.damiao import MOTOR_PRESETS, MOTOR_TORQUES, ControlMode, MotorTorque, Register, RegisterCommand, Status
from r1_sim.motor import AMBIENT_C, ROTOR_LIMIT_C, WINDING_RISE_AT_RATED_C, SimMotor, winding_trip_time

LIM = damiao.MOTOR_PRESETS["DM4310"]
RATING = MOTOR_TORQUES["DM4310"]
ESC, MST = 0x03, 0x13


def status(reply: bytes) -> int:
    return damiao.decode_feedback(reply, LIM).status


def make(timeout_s: float = 0.0) -> SimMotor:
    m = SimMotor(ESC, MST, LIM, timeout=int(round(timeout_s / 50e-6)), kp_apr=20.0, kp_asr=2.0, torque=RATING)
    m.set_state(0.5, 0.0, 0.0)
    return m


def test_disabled_motor_answers_but_gives_no_torque() -> None:
    m = make()
    reply = m.handle(ESC, damiao.encode_mit(0.0, 0.0, 50.0, 1.0, 2.0, LIM), 0.0)
    assert status(reply) == Status.DISABLED
    assert damiao.decode_feedback(reply, LIM).position == pytest.approx(0.5, abs=1e-3)
    assert m.torque(0.5, 0.0, 0.0) == 0.0


def test_mit_law_and_saturation() -> None:
    m = make()
    assert status(m.handle(ESC, damiao.ENABLE, 0.0)) == Status.ENABLED
    assert m.torque(0.5, 0.0, 0.0) == 0.0            # enabled without a command: no jump
    frame = damiao.encode_mit(1.0, 0.0, 4.0, 0.5, 1.0, LIM)
    m.handle(ESC, frame, 0.0)
    c = damiao.decode_mit(frame, LIM)      # what the motor received, with its quantisation
    assert m.torque(0.5, 0.2, 0.001) == pytest.approx(c.kp * (c.p - 0.5) + c.kd * (c.v - 0.2) + c.tau)
    assert c.kp * (c.p - 0.5) + c.kd * (c.v - 0.2) + c.tau == pytest.approx(2.9, abs=0.1)
    m.handle(ESC, damiao.encode_mit(5.0, 0.0, 100.0, 0.0, 0.0, LIM), 0.0)
    assert m.torque(0.5, 0.0, 0.002) == RATING.peak            # saturation at the peak torque, below TMAX
    assert RATING.peak < LIM.tmax


def test_other_modes_id_is_ignored_until_mode_switch() -> None:
    m = make()
    frame = damiao.encode_force_pos(1.0, 2.0, 0.5)
    assert m.handle(damiao.command_id(ESC, ControlMode.FORCE_POS), frame, 0.0) is None
    # CTRL_MODE is refused while enabled: the echo keeps the old mode
    m.handle(ESC, damiao.ENABLE, 0.0)
    echo = m.handle(damiao.REGISTER_ID, damiao.encode_register_write(ESC, Register.CTRL_MODE, 4), 0.0)
    assert damiao.decode_register_reply(echo).value == ControlMode.MIT
    m.handle(ESC, damiao.DISABLE, 0.0)
    echo = m.handle(damiao.REGISTER_ID, damiao.encode_register_write(ESC, Register.CTRL_MODE, 4), 0.0)
    reply = damiao.decode_register_reply(echo)
    assert (reply.command, reply.rid, reply.value) == (RegisterCommand.WRITE, Register.CTRL_MODE, 4)
    assert m.handle(ESC, damiao.encode_mit(0, 0, 0, 0, 0, LIM), 0.0) is None       # MIT id now ignored
    m.handle(ESC, damiao.ENABLE, 0.0)
    assert status(m.handle(damiao.command_id(ESC, ControlMode.FORCE_POS), frame, 0.0)) == Status.ENABLED


def test_force_position_respects_speed_and_torque_limits() -> None:
    m = make()
    m.handle(damiao.REGISTER_ID, damiao.encode_register_write(ESC, Register.CTRL_MODE, 4), 0.0)
    m.handle(ESC, damiao.ENABLE, 0.0)
    m.handle(damiao.command_id(ESC, ControlMode.FORCE_POS), damiao.encode_force_pos(2.0, 1.0, 0.3), 0.0)
    # far from target, at the speed limit: no more push
    assert m.torque(0.5, 1.0, 0.001) == pytest.approx(0.0, abs=0.05)
    # stalled far from the target: torque grows to, and stops at, 30 % of TMAX
    for k in range(2000):
        t = m.torque(0.5, 0.0, 0.002 + k * 1e-3)
    assert t == pytest.approx(0.3 * LIM.tmax)


def test_velocity_mode_pushes_towards_speed() -> None:
    m = make()
    m.handle(damiao.REGISTER_ID, damiao.encode_register_write(ESC, Register.CTRL_MODE, 3), 0.0)
    m.handle(ESC, damiao.ENABLE, 0.0)
    m.handle(damiao.command_id(ESC, ControlMode.VEL), damiao.encode_vel(3.0), 0.0)
    assert m.torque(0.5, 1.0, 0.001) > 0
    assert m.torque(0.5, 5.0, 0.002) < 0


def test_set_zero_only_while_disabled() -> None:
    m = make()
    m.handle(ESC, damiao.ENABLE, 0.0)
    m.handle(ESC, damiao.SET_ZERO, 0.0)
    assert damiao.decode_feedback(m.feedback(), LIM).position == pytest.approx(0.5, abs=1e-3)
    m.handle(ESC, damiao.DISABLE, 0.0)
    m.handle(ESC, damiao.SET_ZERO, 0.0)
    assert damiao.decode_feedback(m.feedback(), LIM).position == pytest.approx(0.0, abs=1e-3)


def test_watchdog_latches_comm_lost_and_clear_error_recovers() -> None:
    m = make(timeout_s=0.1)
    m.handle(ESC, damiao.ENABLE, 0.0)
    m.set_state(0.5, 0.0, 0.05)
    assert m.error is None
    m.set_state(0.5, 0.0, 0.2)
    assert status(m.feedback()) == Status.COMM_LOST
    assert m.torque(0.5, 0.0, 0.2) == 0.0
    assert status(m.handle(ESC, damiao.ENABLE, 0.25)) == Status.COMM_LOST      # enable alone does not clear
    assert status(m.handle(ESC, damiao.CLEAR_ERROR, 0.25)) == Status.DISABLED
    assert status(m.handle(ESC, damiao.ENABLE, 0.25)) == Status.ENABLED


@pytest.mark.parametrize("fault,code", [("over_current", Status.OVER_CURRENT), ("overload", Status.OVERLOAD)])
def test_latched_faults_clear_with_clear_error(fault: str, code: Status) -> None:
    m = make()
    m.handle(ESC, damiao.ENABLE, 0.0)
    m.inject(fault)
    assert status(m.handle(damiao.REGISTER_ID, damiao.encode_status_request(ESC), 0.0)) == code
    assert status(m.handle(ESC, damiao.CLEAR_ERROR, 0.0)) == Status.DISABLED


@pytest.mark.parametrize("fault,code", [("over_temperature", Status.ROTOR_OVER_TEMP),
                                        ("under_voltage", Status.UNDER_VOLTAGE)])
def test_persistent_faults_relatch_until_cause_removed(fault: str, code: Status) -> None:
    m = make()
    m.inject(fault)
    assert status(m.handle(ESC, damiao.CLEAR_ERROR, 0.0)) == code
    m.inject("none")
    assert status(m.handle(ESC, damiao.CLEAR_ERROR, 0.0)) == Status.DISABLED


def test_no_reply_fault_silences_the_motor() -> None:
    m = make()
    m.inject("no_reply")
    assert m.handle(ESC, damiao.ENABLE, 0.0) is None
    m.inject("none")
    assert m.handle(ESC, damiao.ENABLE, 0.0) is not None
    with pytest.raises(ValueError):
        m.inject("gremlins")


@pytest.mark.parametrize("model", sorted(MOTOR_TORQUES))
def test_every_mode_saturates_at_the_models_peak_torque(model: str) -> None:
    lim, rating = MOTOR_PRESETS[model], MOTOR_TORQUES[model]
    m = SimMotor(ESC, MST, lim, torque=rating)
    m.set_state(0.0, 0.0, 0.0)
    m.handle(ESC, damiao.ENABLE, 0.0)
    for sign in (1.0, -1.0):
        m.handle(ESC, damiao.encode_mit(0.0, 0.0, 0.0, 0.0, sign * lim.tmax, lim), 0.0)
        assert m.torque(0.0, 0.0, 0.001) == sign * rating.peak
    m.handle(ESC, damiao.DISABLE, 0.0)
    m.handle(damiao.REGISTER_ID, damiao.encode_register_write(ESC, Register.CTRL_MODE, 4), 0.0)
    m.handle(ESC, damiao.ENABLE, 0.0)
    m.handle(damiao.command_id(ESC, ControlMode.FORCE_POS), damiao.encode_force_pos(5.0, 10.0, 1.0), 0.0)
    for k in range(3000):             # stalled far from the target: the speed loop winds up to the peak
        t = m.torque(0.0, 0.0, 0.002 + k * 1e-3)
    assert t == pytest.approx(rating.peak)


def test_a_smaller_tmax_written_to_the_motor_caps_its_output() -> None:
    m = make()
    m.handle(damiao.REGISTER_ID, damiao.encode_register_write(ESC, Register.TMAX, 5.0), 0.0)
    small = damiao.MotorLimits(LIM.pmax, LIM.vmax, 5.0)
    m.handle(ESC, damiao.ENABLE, 0.0)
    m.handle(ESC, damiao.encode_mit(0.0, 0.0, 0.0, 0.0, 5.0, small), 0.0)
    assert m.torque(0.5, 0.0, 0.001) == 5.0 < RATING.peak


def test_without_a_rating_the_peak_is_tmax() -> None:
    m = SimMotor(ESC, MST, LIM)
    assert m.rating == MotorTorque(0.5 * LIM.tmax, LIM.tmax)
    with pytest.raises(ValueError):
        SimMotor(ESC, MST, LIM, torque=MotorTorque(8.0, 7.0))


def hold(model: str, torque: float, seconds: float, dt: float = 0.05) -> tuple[SimMotor, float]:
    """A motor of `model` holding `torque` [N·m] at a standstill for up to `seconds` of simulated time,
    stepped as the simulator does; (the motor, the time its winding tripped or `seconds`)."""
    lim = MOTOR_PRESETS[model]
    m = SimMotor(ESC, MST, lim, torque=MOTOR_TORQUES[model])
    m.set_state(0.0, 0.0, 0.0)
    m.handle(ESC, damiao.ENABLE, 0.0)
    frame = damiao.encode_mit(0.0, 0.0, 0.0, 0.0, torque, lim)
    t = 0.0
    while t < seconds:
        m.handle(ESC, frame, t)
        m.torque(0.0, 0.0, t)
        t += dt
        m.set_state(0.0, 0.0, t, dt)
        if m.error is not None:
            break
    return m, t


@pytest.mark.parametrize("model", sorted(MOTOR_TORQUES))
def test_the_rated_torque_held_for_half_an_hour_stays_below_the_trip(model: str) -> None:
    m, t = hold(model, MOTOR_TORQUES[model].rated, 1800.0)
    assert m.error is None and t >= 1800.0
    assert m.t_rotor == pytest.approx(AMBIENT_C + WINDING_RISE_AT_RATED_C, abs=0.5)   # settled
    assert m.t_rotor < ROTOR_LIMIT_C - 15.0


def test_the_crouched_torso_holds_for_good() -> None:
    """The crouched torso holds ~71 N·m at torso_joint2 for as long as the user wants."""
    m, t = hold("DM10010", 71.0, 3600.0, dt=0.1)
    assert m.error is None and m.t_rotor < AMBIENT_C + 30.0


@pytest.mark.parametrize("model", sorted(MOTOR_TORQUES))
def test_the_peak_held_trips_the_winding_after_tens_of_seconds(model: str) -> None:
    rating = MOTOR_TORQUES[model]
    expected = winding_trip_time(rating.peak, rating)
    assert 15.0 < expected < 60.0
    m, t = hold(model, MOTOR_TORQUES[model].peak, 120.0, dt=0.01)
    assert m.error == Status.ROTOR_OVER_TEMP
    assert t == pytest.approx(expected, rel=0.02)
    assert damiao.decode_feedback(m.feedback(), MOTOR_PRESETS[model]).t_rotor >= ROTOR_LIMIT_C
    assert status(m.handle(ESC, damiao.CLEAR_ERROR, t)) == Status.ROTOR_OVER_TEMP    # hot: it re-latches
    assert m.torque(0.0, 0.0, t) == 0.0


def test_the_trip_time_closed_form() -> None:
    assert winding_trip_time(RATING.rated, RATING) == math.inf
    assert winding_trip_time(0.0, RATING) == math.inf
    assert winding_trip_time(2 * RATING.peak, RATING) < winding_trip_time(RATING.peak, RATING)


def test_non_finite_register_writes_are_not_stored() -> None:
    m = make()
    before = m.registers[Register.KP_ASR]
    def write(rid, value):     # raw bytes: our encoder refuses non-finite values, another driver may not
        frame = damiao.encode_register_write(ESC, rid, 1.0)
        return m.handle(damiao.REGISTER_ID, frame[:4] + struct.pack("<f", value), 0.0)

    for bad in (float("nan"), float("inf")):
        assert damiao.decode_register_reply(write(Register.KP_ASR, bad)).value == before
    write(Register.PMAX, float("inf"))
    assert m.limits == LIM
    m.feedback()                       # still encodes


# -- the law as the physics integrates it (drive, redrive) ---------------------------------------------------
def test_drive_splits_the_mit_law_into_a_torque_and_the_damping_the_physics_integrates() -> None:
    m = make()
    m.handle(ESC, damiao.ENABLE, 0.0)
    frame = damiao.encode_mit(1.0, 0.3, 4.0, 0.5, 1.0, LIM)
    m.handle(ESC, frame, 0.0)
    c = damiao.decode_mit(frame, LIM)
    m.set_state(0.5, 0.2, 0.0)
    f, d = m.drive(0.001)
    assert (f, d) == pytest.approx((c.kp * (c.p - 0.5) + c.kd * c.v + c.tau, c.kd))
    assert m.last_torque == pytest.approx(m.torque(0.5, 0.2, 0.001))       # the law at the step's start
    m.set_state(0.51, 0.8, 0.001, 0.001)                                      # the step ended at 0.8 rad/s
    assert m.last_torque == pytest.approx(f - d * 0.8)                       # what it applied
    assert m.redrive(0.8) is None


def test_drive_saturated_gives_the_peak_without_damping_and_redrive_moves_one_region_at_a_time() -> None:
    m = make()
    m.handle(ESC, damiao.ENABLE, 0.0)
    frame = damiao.encode_mit(0.5, -20.0, 0.0, 5.0, 0.0, LIM)              # kd 5 toward -20 rad/s, from rest
    m.handle(ESC, frame, 0.0)
    c = damiao.decode_mit(frame, LIM)
    f, d = m.drive(0.001)
    assert (f, d) == (-RATING.peak, 0.0)
    # the step, saturated, ended far past where the law would still push: the step is within the peak
    assert m.redrive(-30.0) == pytest.approx((c.kp * (c.p - 0.5) + c.kd * c.v + c.tau, c.kd))
    # within the peak, it ended where the law pushes beyond it the other way: saturated there
    assert m.redrive(-30.0) == (RATING.peak, 0.0)
    assert m.redrive(-30.0) is None
    m.set_state(0.5, -30.0, 0.001, 0.001)
    assert m.last_torque == RATING.peak
    # a law without damping never changes its region
    m.handle(ESC, damiao.encode_mit(0.5, 0.0, 0.0, 0.0, 100.0, LIM), 0.0)
    assert m.drive(0.002) == (RATING.peak, 0.0) and m.redrive(100.0) is None


def test_drive_of_force_position_takes_the_speed_loops_gain_as_damping() -> None:
    m = make()
    m.handle(damiao.REGISTER_ID, damiao.encode_register_write(ESC, Register.CTRL_MODE, 4), 0.0)
    m.handle(ESC, damiao.ENABLE, 0.0)
    m.handle(damiao.command_id(ESC, ControlMode.FORCE_POS), damiao.encode_force_pos(0.6, 1.0, 0.5), 0.0)
    m.set_state(0.5, 0.1, 0.0)
    f, d = m.drive(0.001)
    kp_asr, ki_asr = m.registers[Register.KP_ASR], m.registers[Register.KI_ASR]
    v_ref = min(1.0, m.registers[Register.KP_APR] * 0.1)                     # the position loop, capped at 1 rad/s
    assert d == kp_asr                                                       # the integral: its first 1 ms
    assert f - d * 0.1 == pytest.approx(kp_asr * (v_ref - 0.1) + ki_asr * (v_ref - 0.1) * 1e-3)
    m.handle(damiao.command_id(ESC, ControlMode.FORCE_POS), damiao.encode_force_pos(0.6, 1.0, 0.0), 0.0)
    assert m.drive(0.002) == (0.0, 0.0) and m.redrive(5.0) is None            # a zero torque ratio: no torque


def test_an_unpowered_motor_drives_nothing() -> None:
    m = make()
    assert m.drive(0.001) == (0.0, 0.0) and m.redrive(3.0) is None
    m.set_state(0.5, 3.0, 0.001, 0.001)
    assert m.last_torque == 0.0
