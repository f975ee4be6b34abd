"""Damiao / MIT motor CAN codec: every frame HDAS and the simulated motors exchange.

Pure functions over bytes, no I/O, so the driver, the simulator and any other tool
share one definition of the wire format (`docs/protocol.md`). Rules taken from
`can_protocol.md`:

* float -> uint is `int((x - lo) * (2**n - 1) / (hi - lo))` in float64, which
  truncates, after clamping to [lo, hi]; uint -> float is `u * (hi - lo) / (2**n - 1) + lo`;
* non-finite input raises ValueError (C references turn NaN into the range minimum);
* feedback is routed by arbitration id (the motor's MST_ID), not by the id nibble.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from enum import IntEnum

KP_MAX = 500.0
KD_MAX = 5.0
REGISTER_ID = 0x7FF

ENABLE = bytes([0xFF] * 7 + [0xFC])
DISABLE = bytes([0xFF] * 7 + [0xFD])
SET_ZERO = bytes([0xFF] * 7 + [0xFE])
CLEAR_ERROR = bytes([0xFF] * 7 + [0xFB])
SPECIAL_FRAMES = {ENABLE: "enable", DISABLE: "disable", SET_ZERO: "set_zero", CLEAR_ERROR: "clear_error"}


@dataclass(frozen=True)
class MotorLimits:
    """Mapping ranges of a motor (its registers PMAX, VMAX, TMAX): ±pmax rad, ±vmax rad/s, ±tmax N·m."""

    pmax: float
    vmax: float
    tmax: float


# Factory ranges per model (can_protocol.md §2.5; DM4340 as jia-xie / Galaxea A1Z: VMAX 10).
MOTOR_PRESETS: dict[str, MotorLimits] = {
    "DM4310": MotorLimits(12.5, 30.0, 10.0),
    "DM4310_48V": MotorLimits(12.5, 50.0, 10.0),
    "DM4340": MotorLimits(12.5, 10.0, 28.0),
    "DM4340_48V": MotorLimits(12.5, 10.0, 28.0),
    "DM6006": MotorLimits(12.5, 45.0, 20.0),
    "DM8006": MotorLimits(12.5, 45.0, 40.0),
    "DM8009": MotorLimits(12.5, 45.0, 54.0),
    "DM10010L": MotorLimits(12.5, 25.0, 200.0),
    "DM10010": MotorLimits(12.5, 20.0, 200.0),
}


@dataclass(frozen=True)
class MotorTorque:
    """What a motor gives at its output shaft: `rated` N·m held for good (its continuous rating),
    `peak` N·m for a short while (its thermal protection ends it). TMAX is neither: it is only the
    range the frames map torque onto (`MotorLimits`)."""

    rated: float
    peak: float


# Rated and peak torque per model, the same keys as MOTOR_PRESETS (docs/protocol.md has the table and
# its sources). Damiao's manuals and selection table, for the variants the R1's figures match: the
# DM-J4310-2EC V1.1 (V1.2: 3.5/12.5), the DM-J4340(P)-2EC V1.0 (V1.1: 12/40), the DM-J8009(P)-2EC,
# the DM-J8006-2EC V1.1; the A1 arm's rated torques (20, 20, 9, 3, 3, 3) and the URDF's arm efforts
# (40, 40, 27, 7, 7, 7) are these ratings and peaks.
MOTOR_TORQUES: dict[str, MotorTorque] = {
    "DM4310": MotorTorque(3.0, 7.0),
    "DM4310_48V": MotorTorque(3.0, 7.0),
    "DM4340": MotorTorque(9.0, 27.0),
    "DM4340_48V": MotorTorque(9.0, 27.0),
    "DM6006": MotorTorque(4.0, 11.0),
    "DM8006": MotorTorque(8.0, 20.0),
    "DM8009": MotorTorque(20.0, 40.0),
    "DM10010L": MotorTorque(40.0, 120.0),
    # The R1's torso motor as Galaxea rates it (R1 hardware guide: 100 rated, 200 max). Damiao rates
    # its DM-J10010-2EC 40/150 (the DM-J10010L 40/120): the layout names DM10010 for the 200 N·m TMAX
    # range the torso's figures fit, not for a rating Damiao publishes.
    "DM10010": MotorTorque(100.0, 200.0),
}


class ControlMode(IntEnum):
    """Register CTRL_MODE values; each mode listens on its own id offset."""

    MIT = 1
    POS_VEL = 2
    VEL = 3
    FORCE_POS = 4


_MODE_OFFSET = {ControlMode.MIT: 0x000, ControlMode.POS_VEL: 0x100, ControlMode.VEL: 0x200,
                ControlMode.FORCE_POS: 0x300}
MODE_OF_OFFSET = {offset: mode for mode, offset in _MODE_OFFSET.items()}   # id & 0x700 -> mode


class Status(IntEnum):
    """High nibble of feedback byte 0."""

    DISABLED = 0x0
    ENABLED = 0x1
    OVER_VOLTAGE = 0x8
    UNDER_VOLTAGE = 0x9
    OVER_CURRENT = 0xA
    MOS_OVER_TEMP = 0xB
    ROTOR_OVER_TEMP = 0xC
    COMM_LOST = 0xD
    OVERLOAD = 0xE


class Register(IntEnum):
    """Register ids (RID) read and written through REGISTER_ID."""

    UV_VALUE = 0
    KT_VALUE = 1
    OT_VALUE = 2
    OC_VALUE = 3
    ACC = 4
    DEC = 5
    MAX_SPD = 6
    MST_ID = 7
    ESC_ID = 8
    TIMEOUT = 9
    CTRL_MODE = 10
    PMAX = 21
    VMAX = 22
    TMAX = 23
    KP_ASR = 25
    KI_ASR = 26
    KP_APR = 27
    KI_APR = 28
    OV_VALUE = 29
    CAN_BR = 35
    SUB_VER = 36


INTEGER_REGISTERS = frozenset({7, 8, 9, 10, 13, 14, 15, 16, 35, 36})


class RegisterCommand(IntEnum):
    """Byte 2 of a register frame."""

    READ = 0x33
    WRITE = 0x55
    STORE = 0xAA
    STATUS = 0xCC


def command_id(esc_id: int, mode: ControlMode) -> int:
    """Arbitration id of a command frame to motor `esc_id` in `mode`."""
    return _MODE_OFFSET[ControlMode(mode)] + esc_id


def mode_of_command_id(arbitration_id: int) -> tuple[ControlMode, int]:
    """(mode, esc_id) of a command id; inverse of `command_id`."""
    mode = MODE_OF_OFFSET.get(arbitration_id & 0x700)
    if mode is None:
        raise ValueError(f"{arbitration_id:#x} is not a motor command id")
    return mode, arbitration_id & 0xFF


# -- fixed-point mapping -------------------------------------------------------------------
def _finite(name: str, x: float) -> float:
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    return x


def float_to_uint(x: float, lo: float, hi: float, bits: int) -> int:
    """Clamp to [lo, hi] and map to an unsigned `bits`-bit code (truncating)."""
    x = min(max(x, lo), hi)
    return int((x - lo) * ((1 << bits) - 1) / (hi - lo))


def uint_to_float(u: int, lo: float, hi: float, bits: int) -> float:
    return u * (hi - lo) / ((1 << bits) - 1) + lo


# -- MIT -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class MitCommand:
    p: float
    v: float
    kp: float
    kd: float
    tau: float


def encode_mit(p: float, v: float, kp: float, kd: float, tau: float, limits: MotorLimits) -> bytes:
    """8-byte MIT frame: p u16 | v u12 | kp u12 | kd u12 | t u12, big-endian bit packing."""
    p, v, kp, kd, tau = float(p), float(v), float(kp), float(kd), float(tau)
    isfinite = math.isfinite
    if not (isfinite(p) and isfinite(v) and isfinite(kp) and isfinite(kd) and isfinite(tau)):
        for name, x in (("p", p), ("v", v), ("kp", kp), ("kd", kd), ("tau", tau)):
            _finite(name, x)
    # float_to_uint inlined (this runs for every motor on every cycle); x - (-m) and m - (-m) are
    # x + m and 2m exactly in floating point, so the codes are float_to_uint's bit for bit
    pm, vm, tm = limits.pmax, limits.vmax, limits.tmax
    pu = int((min(max(p, -pm), pm) + pm) * 65535 / (2 * pm))
    vu = int((min(max(v, -vm), vm) + vm) * 4095 / (2 * vm))
    kpu = int(min(max(kp, 0.0), KP_MAX) * 4095 / KP_MAX)
    kdu = int(min(max(kd, 0.0), KD_MAX) * 4095 / KD_MAX)
    tu = int((min(max(tau, -tm), tm) + tm) * 4095 / (2 * tm))
    word = pu << 48 | vu << 36 | kpu << 24 | kdu << 12 | tu
    return word.to_bytes(8, "big")


def decode_mit(data: bytes, limits: MotorLimits) -> MitCommand:
    """What a motor with `limits` reads from an MIT frame."""
    return MitCommand(*decode_mit_values(data, limits))


def decode_mit_values(data: bytes, limits: MotorLimits) -> tuple[float, float, float, float, float]:
    """`decode_mit` as a plain tuple (p, v, kp, kd, tau): the simulated motors read ~10,000 frames a
    second, where building the frozen dataclass was a third of the decode. Raises ValueError on a
    frame that is not 8 bytes."""
    if len(data) != 8:
        raise ValueError(f"MIT frame must be 8 bytes, got {len(data)}")
    word = int.from_bytes(data, "big")
    # uint_to_float inlined: u * (hi - lo) / (2^bits - 1) + lo, the same operations in the same order
    pm, vm, tm = limits.pmax, limits.vmax, limits.tmax
    return ((word >> 48) * (pm - -pm) / 65535 + -pm,
            (word >> 36 & 0xFFF) * (vm - -vm) / 4095 + -vm,
            (word >> 24 & 0xFFF) * (KP_MAX - 0.0) / 4095 + 0.0,
            (word >> 12 & 0xFFF) * (KD_MAX - 0.0) / 4095 + 0.0,
            (word & 0xFFF) * (tm - -tm) / 4095 + -tm)


# -- force-position ("PID servo"), position-velocity, velocity -------------------------------
@dataclass(frozen=True)
class ForcePosCommand:
    p: float
    v_limit: float
    torque_ratio: float


def encode_force_pos(p: float, v_limit: float, torque_ratio: float) -> bytes:
    """Target angle (float32 LE), speed limit (u16, rad/s × 100), torque limit (u16, ratio of TMAX × 10000)."""
    p, v_limit, torque_ratio = _finite("p", p), _finite("v_limit", v_limit), _finite("torque_ratio", torque_ratio)
    vu = int(min(max(v_limit, 0.0), 100.0) * 100.0)
    ru = int(min(max(torque_ratio, 0.0), 1.0) * 10000.0)
    return struct.pack("<fHH", p, vu, ru)


def decode_force_pos(data: bytes) -> ForcePosCommand:
    if len(data) != 8:
        raise ValueError(f"force-position frame must be 8 bytes, got {len(data)}")
    p, vu, ru = struct.unpack("<fHH", data)
    return ForcePosCommand(p, min(vu, 10000) / 100.0, min(ru, 10000) / 10000.0)


def encode_pos_vel(p: float, v_limit: float) -> bytes:
    """Target angle and trapezoid speed limit, two float32 LE."""
    return struct.pack("<ff", _finite("p", p), abs(_finite("v_limit", v_limit)))


def decode_pos_vel(data: bytes) -> tuple[float, float]:
    if len(data) != 8:
        raise ValueError(f"position-velocity frame must be 8 bytes, got {len(data)}")
    return struct.unpack("<ff", data)


def encode_vel(v: float) -> bytes:
    """Target speed (float32 LE, rad/s), four zero bytes."""
    return struct.pack("<f4x", _finite("v", v))


def decode_vel(data: bytes) -> float:
    if len(data) < 4:
        raise ValueError(f"velocity frame needs 4 bytes, got {len(data)}")
    return struct.unpack_from("<f", data)[0]


# -- registers -----------------------------------------------------------------------------
@dataclass(frozen=True)
class RegisterFrame:
    """A register request (host -> 0x7FF) or reply (motor -> MST_ID)."""

    esc_id: int
    command: int
    rid: int
    value: float | int
    raw: bytes


def _register_value_bytes(rid: int, value: float | int) -> bytes:
    if rid in INTEGER_REGISTERS:
        return struct.pack("<I", int(value) & 0xFFFFFFFF)
    return struct.pack("<f", _finite("register value", value))


def _register_frame(esc_id: int, command: int, rid: int, payload: bytes) -> bytes:
    return bytes([esc_id & 0xFF, esc_id >> 8 & 0xFF, command, rid]) + payload


def encode_register_write(esc_id: int, rid: int, value: float | int) -> bytes:
    return _register_frame(esc_id, RegisterCommand.WRITE, rid, _register_value_bytes(rid, value))


def encode_register_read(esc_id: int, rid: int) -> bytes:
    return _register_frame(esc_id, RegisterCommand.READ, rid, bytes(4))


def encode_status_request(esc_id: int) -> bytes:
    """Ask for one feedback frame without commanding motion."""
    return _register_frame(esc_id, RegisterCommand.STATUS, 0, bytes(4))


def encode_store(esc_id: int) -> bytes:
    """Store all registers to flash (motor must be disabled)."""
    return _register_frame(esc_id, RegisterCommand.STORE, 1, bytes(4))


def encode_register_reply(esc_id: int, command: int, rid: int, value: float | int) -> bytes:
    return _register_frame(esc_id, command, rid, _register_value_bytes(rid, value))


def _decode_register(data: bytes) -> RegisterFrame:
    rid = data[3]
    raw = bytes(data[4:8])
    value: float | int = struct.unpack("<I", raw)[0] if rid in INTEGER_REGISTERS else struct.unpack("<f", raw)[0]
    return RegisterFrame(data[0] | data[1] << 8, data[2], rid, value, raw)


def decode_register_request(data: bytes) -> RegisterFrame:
    """A frame sent to REGISTER_ID; raises ValueError when it is not one."""
    if len(data) != 8 or data[2] not in tuple(RegisterCommand):
        raise ValueError(f"not a register request: {bytes(data).hex(' ')}")
    return _decode_register(data)


def decode_register_reply(data: bytes) -> RegisterFrame | None:
    """A register read/write echo on MST_ID, or None when the frame looks like feedback.

    Replies and feedback share the MST_ID, so callers should only ask while they have a
    register request outstanding (a feedback frame can match this pattern by chance).
    """
    if len(data) != 8 or data[1] > 0x07 or data[2] not in (RegisterCommand.READ, RegisterCommand.WRITE):
        return None
    if data[3] not in Register._value2member_map_:
        return None
    return _decode_register(data)


# -- feedback ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Feedback:
    status: int          # a Status value, or another nibble the motor sent
    esc_id_low: int
    position: float      # rad
    velocity: float      # rad/s
    torque: float        # N·m
    t_mos: int           # °C
    t_rotor: int         # °C


def encode_feedback(esc_id: int, status: int, p: float, v: float, tau: float, t_mos: float, t_rotor: float,
                    limits: MotorLimits) -> bytes:
    """A motor's reply frame (the simulator's side of `decode_feedback`)."""
    p, v, tau = float(p), float(v), float(tau)
    isfinite = math.isfinite
    if not (isfinite(p) and isfinite(v) and isfinite(tau)):
        for name, x in (("p", p), ("v", v), ("tau", tau)):
            _finite(name, x)
    # float_to_uint inlined, as in encode_mit (the simulator answers ~10,000 frames a second)
    pm, vm, tm = limits.pmax, limits.vmax, limits.tmax
    pu = int((min(max(p, -pm), pm) + pm) * 65535 / (2 * pm))
    vu = int((min(max(v, -vm), vm) + vm) * 4095 / (2 * vm))
    tu = int((min(max(tau, -tm), tm) + tm) * 4095 / (2 * tm))
    # _byte inlined for both temperatures
    mos, rotor = round(t_mos), round(t_rotor)
    mos = 0 if mos < 0 else (255 if mos > 255 else int(mos))
    rotor = 0 if rotor < 0 else (255 if rotor > 255 else int(rotor))
    return bytes(((status & 0xF) << 4 | (esc_id & 0xF), pu >> 8, pu & 0xFF, vu >> 4,
                  (vu & 0xF) << 4 | tu >> 8, tu & 0xFF, mos, rotor))


def _byte(t: float) -> int:
    """A temperature [°C] as the frame's unsigned byte (rounded, clamped to 0..255)."""
    return int(min(max(round(t), 0), 255))


def decode_feedback(data: bytes, limits: MotorLimits) -> Feedback:
    """Decode a motor's 8-byte feedback frame (raises ValueError on a short frame)."""
    if len(data) != 8:
        raise ValueError(f"feedback frame must be 8 bytes, got {len(data)}")
    pu = data[1] << 8 | data[2]
    vu = data[3] << 4 | data[4] >> 4
    tu = (data[4] & 0xF) << 8 | data[5]
    return Feedback(data[0] >> 4, data[0] & 0xF,
                    uint_to_float(pu, -limits.pmax, limits.pmax, 16),
                    uint_to_float(vu, -limits.vmax, limits.vmax, 12),
                    uint_to_float(tu, -limits.tmax, limits.tmax, 12),
                    data[6], data[7])
