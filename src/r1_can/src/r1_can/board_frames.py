"""CAN framing of the R1's sensor boards: IMUs, battery (BMS) and remote-controller receiver.

The vendor does not publish these layouts (its boards speak CAN-FD to an MCU), so
this module defines one, documented in `docs/protocol.md`, used by the driver to
decode and by the simulator to encode. Everything is fixed-point in 8-byte classic
frames; a board-level protocol can replace this module without touching the node.

* IMU (chassis 0x20, torso 0x45): three frames per sample on the board's id,
  byte 0 = page (1 attitude, 2 gyro, 3 acceleration), byte 1 = sample counter,
  bytes 2-7 = x, y, z as int16 LE. Attitude: roll, pitch, yaw in π/32767 rad;
  gyro: 0.001 rad/s; acceleration (specific force, gravity included): 0.001 m/s².
* BMS (0x21): u16 voltage 0.01 V | i16 current 0.01 A (positive = discharge) |
  u16 state of charge 0.01 % | i8 temperature °C | u8 flags, all LE.
* Remote receiver (0x32): four 12-bit stick channels big-endian in bytes 0-5
  (right x, right y, left x, left y as in DBUS; 364..1684, centre 1024), byte 6 mode
  (the switch position: 2 = chassis by remote, 5 = host computer), byte 7 bit 0 = link ok.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Iterable

ANGLE_LSB = math.pi / 32767.0
GYRO_LSB = 0.001
ACC_LSB = 0.001
IMU_PAGES = (1, 2, 3)

STICK_CENTRE = 1024
STICK_SPAN = 660            # 364..1684
STICK_MIN, STICK_MAX = STICK_CENTRE - STICK_SPAN, STICK_CENTRE + STICK_SPAN


def _int16(x: float, lsb: float) -> int:
    if not math.isfinite(x):
        raise ValueError(f"non-finite board value {x}")
    return int(max(-32767, min(32767, round(x / lsb))))


# -- IMU -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ImuReport:
    seq: int
    rpy: tuple[float, float, float]     # rad
    gyro: tuple[float, float, float]    # rad/s, body frame
    acc: tuple[float, float, float]     # m/s², body frame, gravity included


def encode_imu(seq: int, rpy: Iterable[float], gyro: Iterable[float], acc: Iterable[float]) -> list[bytes]:
    """The three frames of one IMU sample."""
    out = []
    for page, values, lsb in ((1, rpy, ANGLE_LSB), (2, gyro, GYRO_LSB), (3, acc, ACC_LSB)):
        out.append(struct.pack("<BB3h", page, seq & 0xFF, *(_int16(float(x), lsb) for x in values)))
    return out


class ImuAssembler:
    """Collects the three pages of a sample; yields a report when a sample is complete."""

    def __init__(self) -> None:
        self._seq = -1
        self._pages: dict[int, tuple[float, float, float]] = {}

    def add(self, data: bytes) -> ImuReport | None:
        if len(data) != 8 or data[0] not in IMU_PAGES:
            raise ValueError(f"not an IMU frame: {bytes(data).hex(' ')}")
        page, seq = data[0], data[1]
        if seq != self._seq:
            self._seq, self._pages = seq, {}
        lsb = (ANGLE_LSB, GYRO_LSB, ACC_LSB)[page - 1]
        self._pages[page] = tuple(x * lsb for x in struct.unpack_from("<3h", data, 2))  # type: ignore[assignment]
        if len(self._pages) < 3:
            return None
        report = ImuReport(seq, self._pages[1], self._pages[2], self._pages[3])
        self._pages = {}
        self._seq = -1
        return report


# -- battery -------------------------------------------------------------------------------
@dataclass(frozen=True)
class BmsReport:
    voltage: float        # V
    current: float        # A, positive = discharging
    state_of_charge: float  # %
    temperature: float    # °C
    flags: int = 0


def encode_bms(r: BmsReport) -> bytes:
    for name in ("voltage", "current", "state_of_charge", "temperature"):
        if not math.isfinite(getattr(r, name)):
            raise ValueError(f"non-finite BMS {name}")
    return struct.pack("<HhHbB", int(min(max(round(r.voltage * 100), 0), 65535)),
                       int(min(max(round(r.current * 100), -32768), 32767)),
                       int(min(max(round(r.state_of_charge * 100), 0), 10000)),
                       int(min(max(round(r.temperature), -128), 127)), r.flags & 0xFF)


def decode_bms(data: bytes) -> BmsReport:
    if len(data) != 8:
        raise ValueError(f"BMS frame must be 8 bytes, got {len(data)}")
    v, i, soc, t, flags = struct.unpack("<HhHbB", data)
    return BmsReport(v / 100.0, i / 100.0, soc / 100.0, float(t), flags)


# -- remote controller ---------------------------------------------------------------------
@dataclass(frozen=True)
class RemoteReport:
    raw: tuple[int, int, int, int]   # right x, right y, left x, left y (12-bit DBUS units)
    mode: int
    link_ok: bool

    @property
    def sticks(self) -> tuple[float, float, float, float]:
        """The four channels scaled to [-1, 1]."""
        return tuple(raw_to_stick(x) for x in self.raw)  # type: ignore[return-value]


def stick_to_raw(x: float) -> int:
    """[-1, 1] -> 364..1684 (NaN -> centre)."""
    if not math.isfinite(x):
        return STICK_CENTRE
    return int(round(STICK_CENTRE + max(-1.0, min(1.0, x)) * STICK_SPAN))


def raw_to_stick(raw: int) -> float:
    return max(-1.0, min(1.0, (raw - STICK_CENTRE) / STICK_SPAN))


def encode_remote(r: RemoteReport) -> bytes:
    a, b, c, d = (int(min(max(x, 0), 0xFFF)) for x in r.raw)
    word = a << 36 | b << 24 | c << 12 | d
    return word.to_bytes(6, "big") + bytes([r.mode & 0xFF, 1 if r.link_ok else 0])


def decode_remote(data: bytes) -> RemoteReport:
    if len(data) != 8:
        raise ValueError(f"remote frame must be 8 bytes, got {len(data)}")
    word = int.from_bytes(data[:6], "big")
    raw = (word >> 36 & 0xFFF, word >> 24 & 0xFFF, word >> 12 & 0xFFF, word & 0xFFF)
    return RemoteReport(raw, data[6], bool(data[7] & 1))


def rpy_to_quaternion(roll: float, pitch: float, yaw: float) -> tuple[float, float, float, float]:
    """(x, y, z, w) of the rotation Rz(yaw)·Ry(pitch)·Rx(roll): ROS's fixed-axis roll, pitch, yaw
    (tf2's setRPY; scipy's from_euler("xyz"), which costs ~90 µs a call against ~1 µs here)."""
    cr, sr = math.cos(roll * 0.5), math.sin(roll * 0.5)
    cp, sp = math.cos(pitch * 0.5), math.sin(pitch * 0.5)
    cy, sy = math.cos(yaw * 0.5), math.sin(yaw * 0.5)
    return (sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy, cr * cp * cy + sr * sp * sy)
