"""Damiao/MIT codec: the reference vectors of can_protocol.md §4.4, round trips, clamping, rejection."""
from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from r1_can import damiao
from r1_can.damiao import (
    MOTOR_PRESETS,
    MOTOR_TORQUES,
    ControlMode,
    MotorLimits,
    MotorTorque,
    Register,
    RegisterCommand,
    Status,
    decode_feedback,
    decode_force_pos,
    decode_mit,
    encode_feedback,
    encode_force_pos,
    encode_mit,
)

DM4310 = MotorLimits(12.5, 30.0, 10.0)

# can_protocol.md §4.4: all five public references agree on these bytes.
VECTORS = [
    ("zero_all", (0.0, 0.0, 0.0, 0.0, 0.0), "7F FF 7F F0 00 00 07 FF", [32767, 2047, 0, 0, 2047]),
    ("typical_positive", (1.0, 2.0, 50.0, 1.0, 3.0), "8A 3C 88 81 99 33 3A 65", [35388, 2184, 409, 819, 2661]),
    ("typical_negative", (-1.0, -2.0, 10.0, 0.5, -3.0), "75 C2 77 70 51 19 95 99", [30146, 1911, 81, 409, 1433]),
]


def fields(frame: bytes) -> list[int]:
    w = int.from_bytes(frame, "big")
    return [w >> 48, w >> 36 & 0xFFF, w >> 24 & 0xFFF, w >> 12 & 0xFFF, w & 0xFFF]


@pytest.mark.parametrize("name,args,expected,ints", VECTORS, ids=[v[0] for v in VECTORS])
def test_mit_reference_vectors(name: str, args: tuple, expected: str, ints: list[int]) -> None:
    frame = encode_mit(*args, DM4310)
    assert frame == bytes.fromhex(expected)
    assert fields(frame) == ints


def test_mit_round_trip_within_one_lsb() -> None:
    rng = np.random.default_rng(1)
    for name, lim in MOTOR_PRESETS.items():
        for _ in range(200):
            p, v, t = rng.uniform(-1, 1, 3) * (lim.pmax, lim.vmax, lim.tmax)
            kp, kd = rng.uniform(0, damiao.KP_MAX), rng.uniform(0, damiao.KD_MAX)
            c = decode_mit(encode_mit(p, v, kp, kd, t, lim), lim)
            assert abs(c.p - p) <= 2 * lim.pmax / 65535, name
            assert abs(c.v - v) <= 2 * lim.vmax / 4095, name
            assert abs(c.tau - t) <= 2 * lim.tmax / 4095, name
            assert abs(c.kp - kp) <= damiao.KP_MAX / 4095 and abs(c.kd - kd) <= damiao.KD_MAX / 4095


def test_mit_clamps_instead_of_wrapping() -> None:
    # DM_CAN would wrap v=35 to about -25 rad/s and t=12 to about -8 N·m (§4.3): we saturate
    frame = encode_mit(20.0, 35.0, 600.0, 6.0, 12.0, DM4310)
    assert fields(frame) == [0xFFFF, 0xFFF, 0xFFF, 0xFFF, 0xFFF]
    frame = encode_mit(-20.0, -35.0, -1.0, -1.0, -12.0, DM4310)
    assert fields(frame) == [0, 0, 0, 0, 0]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("slot", range(5))
def test_mit_rejects_non_finite(bad: float, slot: int) -> None:
    args = [0.0, 0.0, 10.0, 1.0, 0.0]
    args[slot] = bad
    with pytest.raises(ValueError):
        encode_mit(*args, DM4310)


def test_force_pos_layout_and_limits() -> None:
    frame = encode_force_pos(1.5, 2.0, 0.25)
    assert frame[:4] == struct.pack("<f", 1.5)
    assert struct.unpack("<HH", frame[4:]) == (200, 2500)
    c = decode_force_pos(frame)
    assert (c.p, c.v_limit, c.torque_ratio) == (1.5, 2.0, 0.25)
    # ratio above 100 % and negative speed limits are clamped, not wrapped
    assert struct.unpack("<HH", encode_force_pos(0.0, -3.0, 1.7)[4:]) == (0, 10000)
    with pytest.raises(ValueError):
        encode_force_pos(math.nan, 1.0, 0.5)


def test_vel_and_pos_vel_frames() -> None:
    assert damiao.encode_vel(-3.5) == struct.pack("<f", -3.5) + bytes(4)
    assert damiao.decode_vel(damiao.encode_vel(-3.5)) == -3.5
    assert damiao.decode_pos_vel(damiao.encode_pos_vel(0.5, 2.0)) == (0.5, 2.0)
    with pytest.raises(ValueError):
        damiao.encode_vel(math.inf)


def test_command_ids_per_mode() -> None:
    assert [damiao.command_id(5, m) for m in ControlMode] == [0x005, 0x105, 0x205, 0x305]
    assert damiao.mode_of_command_id(0x305) == (ControlMode.FORCE_POS, 5)
    with pytest.raises(ValueError):
        damiao.mode_of_command_id(0x405)


def test_special_frames() -> None:
    assert damiao.ENABLE.hex() == "fffffffffffffffc"
    assert damiao.DISABLE[-1] == 0xFD and damiao.SET_ZERO[-1] == 0xFE and damiao.CLEAR_ERROR[-1] == 0xFB
    assert len(damiao.SPECIAL_FRAMES) == 4


def test_register_frames() -> None:
    write = damiao.encode_register_write(0x102, Register.CTRL_MODE, 4)
    assert write == bytes([0x02, 0x01, 0x55, 10, 4, 0, 0, 0])
    req = damiao.decode_register_request(write)
    assert (req.esc_id, req.command, req.rid, req.value) == (0x102, RegisterCommand.WRITE, 10, 4)
    fwrite = damiao.encode_register_write(3, Register.KP_APR, 2.5)
    assert fwrite[4:] == struct.pack("<f", 2.5)
    assert damiao.encode_status_request(7) == bytes([7, 0, 0xCC, 0, 0, 0, 0, 0])
    assert damiao.encode_register_read(7, Register.PMAX) == bytes([7, 0, 0x33, 21, 0, 0, 0, 0])
    reply = damiao.decode_register_reply(damiao.encode_register_reply(7, RegisterCommand.WRITE, Register.CTRL_MODE, 1))
    assert reply is not None and reply.rid == Register.CTRL_MODE and reply.value == 1
    # a typical feedback frame is not mistaken for a register reply
    assert damiao.decode_register_reply(encode_feedback(1, Status.ENABLED, 0.3, 0.0, 0.0, 30, 30, DM4310)) is None
    with pytest.raises(ValueError):
        damiao.decode_register_request(bytes([1, 0, 0x12, 10, 0, 0, 0, 0]))


def test_feedback_round_trip_and_fields() -> None:
    lim = MOTOR_PRESETS["DM8009"]
    frame = encode_feedback(0x13, Status.OVER_CURRENT, -2.0, 5.0, -20.0, 61, 75, lim)
    assert frame[0] == 0xA3        # status nibble, low nibble of the id
    fb = decode_feedback(frame, lim)
    assert fb.status == Status.OVER_CURRENT and fb.esc_id_low == 3
    assert fb.position == pytest.approx(-2.0, abs=2 * lim.pmax / 65535)
    assert fb.velocity == pytest.approx(5.0, abs=2 * lim.vmax / 4095)
    assert fb.torque == pytest.approx(-20.0, abs=2 * lim.tmax / 4095)
    assert (fb.t_mos, fb.t_rotor) == (61, 75)
    # out-of-range values saturate, temperatures clamp to a byte
    fb = decode_feedback(encode_feedback(1, 1, 99.0, -99.0, 999.0, -5, 300, lim), lim)
    assert fb.position == pytest.approx(lim.pmax) and fb.velocity == pytest.approx(-lim.vmax)
    assert fb.torque == pytest.approx(lim.tmax) and (fb.t_mos, fb.t_rotor) == (0, 255)
    with pytest.raises(ValueError):
        decode_feedback(frame[:6], lim)


def test_presets_match_protocol_table() -> None:
    assert MOTOR_PRESETS["DM4310"] == MotorLimits(12.5, 30, 10)
    assert MOTOR_PRESETS["DM8009"] == MotorLimits(12.5, 45, 54)
    assert MOTOR_PRESETS["DM10010"] == MotorLimits(12.5, 20, 200)
    assert MOTOR_PRESETS["DM4340"].vmax == 10   # the register value of current firmware, not DM_CAN's 8


def test_rated_and_peak_torques_match_the_protocol_table() -> None:
    """docs/protocol.md's table: Damiao's manuals, and the R1 hardware guide for the torso's DM10010."""
    assert {m: (t.rated, t.peak) for m, t in MOTOR_TORQUES.items()} == {
        "DM4310": (3, 7), "DM4310_48V": (3, 7), "DM4340": (9, 27), "DM4340_48V": (9, 27), "DM6006": (4, 11),
        "DM8006": (8, 20), "DM8009": (20, 40), "DM10010L": (40, 120), "DM10010": (100, 200)}


def test_every_model_has_a_rating_its_frames_can_carry() -> None:
    assert set(MOTOR_TORQUES) == set(MOTOR_PRESETS)
    for model, t in MOTOR_TORQUES.items():
        assert 0 < t.rated < t.peak <= MOTOR_PRESETS[model].tmax, model     # TMAX maps the peak
    with pytest.raises(AttributeError):
        MOTOR_TORQUES["DM4310"].peak = 10.0                                    # type: ignore[misc]
    assert MotorTorque(3.0, 7.0) == MOTOR_TORQUES["DM4310"]


def test_feedback_codes_are_float_to_uint_bit_for_bit() -> None:
    """encode_feedback inlines the fixed-point mapping (the simulator's hot path): the same codes."""
    rng = np.random.default_rng(7)
    lim = MotorLimits(12.5, 30.0, 10.0)
    for p, v, t in rng.uniform([-14, -33, -11], [14, 33, 11], size=(5000, 3)):
        f = damiao.encode_feedback(3, 1, p, v, t, 40.4, 50.6, lim)
        assert f[1] << 8 | f[2] == damiao.float_to_uint(p, -12.5, 12.5, 16)
        assert f[3] << 4 | f[4] >> 4 == damiao.float_to_uint(v, -30.0, 30.0, 12)
        assert (f[4] & 0xF) << 8 | f[5] == damiao.float_to_uint(t, -10.0, 10.0, 12)
        assert (f[6], f[7]) == (40, 51)
    with pytest.raises(ValueError):
        damiao.encode_feedback(3, 1, float("nan"), 0.0, 0.0, 40.0, 40.0, lim)
