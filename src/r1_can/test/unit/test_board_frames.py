"""Board frames (IMU, BMS, remote receiver): round trips, resolution, malformed frames refused."""
from __future__ import annotations

import math

import pytest

from r1_can import board_frames as bf


def test_imu_sample_round_trip() -> None:
    frames = bf.encode_imu(7, (0.1, -0.2, 3.1), (0.01, -1.5, 2.0), (0.3, -0.4, 9.81))
    assert len(frames) == 3 and all(len(f) == 8 for f in frames)
    assembler = bf.ImuAssembler()
    assert assembler.add(frames[0]) is None
    assert assembler.add(frames[1]) is None
    r = assembler.add(frames[2])
    assert r is not None and r.seq == 7
    assert r.rpy == pytest.approx((0.1, -0.2, 3.1), abs=bf.ANGLE_LSB)
    assert r.gyro == pytest.approx((0.01, -1.5, 2.0), abs=bf.GYRO_LSB)
    assert r.acc == pytest.approx((0.3, -0.4, 9.81), abs=bf.ACC_LSB)


def test_imu_pages_of_different_samples_are_not_mixed() -> None:
    a = bf.encode_imu(1, (0, 0, 0), (0, 0, 0), (0, 0, 0))
    b = bf.encode_imu(2, (1, 1, 1), (1, 1, 1), (1, 1, 1))
    assembler = bf.ImuAssembler()
    assembler.add(a[0])
    assembler.add(a[1])          # sample 1 loses its third page
    assert assembler.add(b[0]) is None
    assert assembler.add(b[1]) is None
    r = assembler.add(b[2])
    assert r is not None and r.seq == 2 and r.rpy == pytest.approx((1, 1, 1), abs=1e-3)


def test_imu_yaw_near_pi_and_saturation() -> None:
    frames = bf.encode_imu(0, (0, 0, math.pi), (100.0, 0, 0), (0, 0, -50.0))
    r = None
    asm = bf.ImuAssembler()
    for f in frames:
        r = asm.add(f)
    assert r.rpy[2] == pytest.approx(math.pi, abs=1e-4)
    assert r.gyro[0] == pytest.approx(32.767) and r.acc[2] == pytest.approx(-32.767)
    with pytest.raises(ValueError):
        bf.encode_imu(0, (math.nan, 0, 0), (0, 0, 0), (0, 0, 0))
    with pytest.raises(ValueError):
        asm.add(bytes([9, 0, 0, 0, 0, 0, 0, 0]))


def test_bms_round_trip() -> None:
    r = bf.decode_bms(bf.encode_bms(bf.BmsReport(51.23, -3.5, 87.5, 31.0, 2)))
    assert (r.voltage, r.current, r.state_of_charge, r.temperature, r.flags) == (51.23, -3.5, 87.5, 31.0, 2)
    with pytest.raises(ValueError):
        bf.decode_bms(b"\x00" * 5)


def test_remote_round_trip_and_scaling() -> None:
    raw = (bf.stick_to_raw(1.0), bf.stick_to_raw(-1.0), bf.stick_to_raw(0.0), bf.stick_to_raw(0.5))
    assert raw == (1684, 364, 1024, 1354)
    r = bf.decode_remote(bf.encode_remote(bf.RemoteReport(raw, 5, True)))
    assert r.raw == raw and r.mode == 5 and r.link_ok
    assert r.sticks == pytest.approx((1.0, -1.0, 0.0, 0.5))
    assert bf.stick_to_raw(math.nan) == bf.STICK_CENTRE and bf.stick_to_raw(3.0) == bf.STICK_MAX
    assert bf.raw_to_stick(4095) == 1.0


def test_rpy_to_quaternion_is_scipys_fixed_axis_xyz() -> None:
    import numpy as np
    from scipy.spatial.transform import Rotation
    rng = np.random.default_rng(4)
    for rpy in rng.uniform(-np.pi, np.pi, size=(500, 3)):
        q = np.array(bf.rpy_to_quaternion(*rpy))
        ref = Rotation.from_euler("xyz", rpy).as_quat()
        assert abs(abs(q @ ref) - 1.0) < 1e-12          # the same rotation (q and -q are)
        assert abs(np.linalg.norm(q) - 1.0) < 1e-12
