"""The simulated R1's swerve modules, battery and IMU boards (r1_sim.physics) against independent computations.

(The bodies are MuJoCo's: test_mujoco_world.py holds them to a separate pinocchio model of the URDF.)
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from r1_sim.physics import BatteryModel, ImuModel, SwerveChassisSim

DT = 1e-3
G = 9.81

R1_XY = np.array([[0.21516, 0.28], [0.21516, -0.28], [-0.28084, 0.0]])
R = 0.07


# -- SwerveChassisSim ------------------------------------------------------------------------
def drive(chassis: SwerveChassisSim, angles, speeds, seconds: float) -> None:
    """Steer PD and wheel speed P (+ rolling-resistance feed-forward) loops, as the motors would."""
    angles, speeds = np.asarray(angles, float), np.asarray(speeds, float)
    for _ in range(int(round(seconds / DT))):
        steer = 80.0 * (angles - chassis.steer_angles) - 4.0 * chassis.steer_rates
        wheel = 40.0 * (speeds - chassis.wheel_speeds) + chassis.wheel_viscous * speeds
        chassis.step(steer, wheel, DT)


def module_command(twist):
    """Steering angles (within ±π/2) and wheel speeds that realise a base twist."""
    vx, vy, wz = twist
    u = np.stack([vx - wz * R1_XY[:, 1], vy + wz * R1_XY[:, 0]], axis=1)
    ang = np.arctan2(u[:, 1], u[:, 0])
    speed = np.hypot(u[:, 0], u[:, 1]) / R
    flip = np.abs(ang) > math.pi / 2
    ang[flip] -= np.sign(ang[flip]) * math.pi
    speed[flip] *= -1
    return ang, speed


def test_positive_wheel_speed_at_zero_steer_drives_forward():
    ch = SwerveChassisSim(R1_XY, R)
    drive(ch, [0, 0, 0], [5.0] * 3, 0.5)
    vx, vy, wz = ch.base_twist()
    assert vx == pytest.approx(5.0 * R, rel=1e-3)
    assert vy == pytest.approx(0.0, abs=1e-9) and wz == pytest.approx(0.0, abs=1e-9)


def test_steering_to_plus_half_pi_drives_left():
    ch = SwerveChassisSim(R1_XY, R)
    drive(ch, [math.pi / 2] * 3, [4.0] * 3, 1.0)
    np.testing.assert_allclose(ch.steer_angles, math.pi / 2, atol=1e-9)
    vx, vy, wz = ch.base_twist()
    assert vy == pytest.approx(4.0 * R, rel=1e-3)
    assert abs(vx) < 1e-6 and abs(wz) < 1e-6


def test_tangent_modules_turn_in_place():
    ch = SwerveChassisSim()                          # the R1 defaults
    ang, speed = module_command((0.0, 0.0, 0.8))
    drive(ch, ang, speed, 1.0)
    vx, vy, wz = ch.base_twist()
    assert wz == pytest.approx(0.8, rel=1e-3)
    assert abs(vx) < 1e-4 and abs(vy) < 1e-4
    ch.set_pose(0.0, 0.0, 0.0)
    drive(ch, ang, speed, 1.0)
    x, y, yaw = ch.base_pose()
    assert yaw == pytest.approx(0.8, abs=1e-3)
    assert math.hypot(x, y) < 1e-3


def test_pose_integrates_straight_and_curved_paths():
    ch = SwerveChassisSim(R1_XY, R)
    drive(ch, [0, 0, 0], [0.5 / R] * 3, 0.5)
    ch.set_pose(0.0, 0.0, 0.0)
    drive(ch, [0, 0, 0], [0.5 / R] * 3, 1.0)
    x, y, yaw = ch.base_pose()
    assert x == pytest.approx(0.5, abs=1e-3) and abs(y) < 1e-9 and abs(yaw) < 1e-9
    # constant twist (vx, 0, wz) from a rotated start: an arc of radius vx/wz
    vx, wz, yaw0 = 0.5, 0.5, 0.7
    ang, speed = module_command((vx, 0.0, wz))
    drive(ch, ang, speed, 1.0)
    ch.set_pose(1.0, 2.0, yaw0)
    drive(ch, ang, speed, 2.0)
    x, y, yaw = ch.base_pose()
    rho, th = vx / wz, wz * 2.0
    lx, ly = rho * math.sin(th), rho * (1 - math.cos(th))
    # the twist has settled, so the integration of the pose along the arc is exact
    assert x == pytest.approx(1.0 + math.cos(yaw0) * lx - math.sin(yaw0) * ly, abs=1e-6)
    assert y == pytest.approx(2.0 + math.sin(yaw0) * lx + math.cos(yaw0) * ly, abs=1e-6)
    assert yaw == pytest.approx(yaw0 + th, abs=1e-6)


def test_steering_hard_stops_at_half_pi():
    for sign in (1.0, -1.0):
        ch = SwerveChassisSim(R1_XY, R)
        for _ in range(1000):
            ch.step(np.full(3, sign * 20.0), np.zeros(3), DT)
            assert np.all(np.abs(ch.steer_angles) <= math.pi / 2 + 1e-12)
        np.testing.assert_array_equal(ch.steer_angles, sign * math.pi / 2)
        np.testing.assert_array_equal(ch.steer_rates, 0.0)
        ch.step(np.full(3, -sign * 20.0), np.zeros(3), DT)
        assert np.all(np.abs(ch.steer_angles) < math.pi / 2)       # leaves the stop
    ch = SwerveChassisSim(R1_XY, R, steer_limit=1.0)
    for _ in range(500):
        ch.step(np.full(3, 20.0), np.zeros(3), DT)
    np.testing.assert_array_equal(ch.steer_angles, 1.0)


def test_wheel_inertia_is_a_third_of_the_mass_reflected():
    ch = SwerveChassisSim(R1_XY, R, mass=60.0, wheel_viscous=0.0)
    ch.step(np.zeros(3), np.full(3, 1.0), DT)
    inertia = DT * 1.0 / ch.wheel_speeds[0]
    assert 20.0 * R ** 2 < inertia < 20.0 * R ** 2 + 0.01
    ch = SwerveChassisSim(R1_XY, R, wheel_inertia=0.5, wheel_viscous=0.0)
    ch.step(np.zeros(3), np.full(3, 1.0), DT)
    assert ch.wheel_speeds[0] == pytest.approx(DT / 0.5)
    # rolling resistance slows a coasting wheel down
    ch = SwerveChassisSim(R1_XY, R)
    drive(ch, [0, 0, 0], [5.0] * 3, 0.3)
    before = ch.wheel_speeds.copy()
    for _ in range(200):
        ch.step(np.zeros(3), np.zeros(3), DT)
    assert np.all(ch.wheel_speeds < before) and np.all(ch.wheel_speeds > 0)


# -- BatteryModel ----------------------------------------------------------------------------
@pytest.mark.parametrize("soc", [0.1, 0.3, 0.5, 0.8, 1.0])
@pytest.mark.parametrize("power", [0.0, 1000.0])
def test_battery_voltage_inside_the_robot_window(soc, power):
    b = BatteryModel(capacity_ah=30.0, state_of_charge=soc)
    b.step(power, DT)
    assert 42.0 <= b.voltage <= 60.0


def test_battery_voltage_falls_with_load_and_discharge():
    volts = []
    for power in (0.0, 500.0, 2000.0):
        b = BatteryModel(capacity_ah=30.0, state_of_charge=0.8)
        b.step(power, DT)
        volts.append(b.voltage)
        assert b.current == pytest.approx((power + b.idle_power) / b.voltage)
        assert b.voltage == pytest.approx(b.open_circuit_voltage() - b.current * b.internal_resistance)
    assert volts[0] > volts[1] > volts[2]
    socs = np.linspace(0, 1, 21)
    ocv = [BatteryModel(30.0, s).open_circuit_voltage() for s in socs]
    assert np.all(np.diff(ocv) > 0)
    assert ocv[0] == pytest.approx(13 * 3.3) and ocv[-1] == pytest.approx(13 * 4.2)


def test_battery_charge_falls_by_the_drawn_amp_hours():
    b = BatteryModel(capacity_ah=30.0, state_of_charge=0.9, idle_power=80.0)
    ah, dt = 0.0, 0.1
    for _ in range(36000):                               # one hour at 520 W in all
        b.step(440.0, dt)
        ah += b.current * dt / 3600.0
    assert 30.0 * (0.9 - b.state_of_charge) == pytest.approx(ah, rel=1e-9)
    assert ah == pytest.approx(520.0 / 50.0, rel=0.1)      # about 520 W at ~50 V for an hour
    small = BatteryModel(capacity_ah=0.01, state_of_charge=0.05)
    for _ in range(100):
        small.step(1000.0, 1.0)
    assert small.state_of_charge == 0.0


# -- ImuModel --------------------------------------------------------------------------------
def test_imu_level_at_rest_reads_gravity_up():
    rpy, gyro, acc = ImuModel().report(np.eye(3), np.zeros(3), np.array([0.0, 0.0, G]))
    np.testing.assert_allclose(rpy, 0.0, atol=1e-12)
    np.testing.assert_allclose(gyro, 0.0)
    np.testing.assert_allclose(acc, [0, 0, G])


def test_imu_rolled_ninety_degrees_sees_gravity_on_y():
    rot = Rotation.from_euler("x", 90, degrees=True).as_matrix()   # sensor y points up
    rpy, _, acc = ImuModel().report(rot, np.zeros(3), rot.T @ [0, 0, G])
    np.testing.assert_allclose(rpy, [math.pi / 2, 0, 0], atol=1e-12)
    np.testing.assert_allclose(acc, [0, G, 0], atol=1e-12)


def test_imu_rpy_convention_motion_and_noise():
    rot = Rotation.from_euler("xyz", [0.1, -0.2, 0.3]).as_matrix()
    w, a = np.array([0.1, 0.2, 0.3]), np.array([1.0, 0.0, 0.0])
    rpy, gyro, acc = ImuModel().report(rot, w, a)
    np.testing.assert_allclose(rpy, [0.1, -0.2, 0.3], atol=1e-12)
    np.testing.assert_allclose(gyro, w)
    np.testing.assert_allclose(acc, a)
    imu = ImuModel(gyro_noise=0.01, acc_noise=0.1, seed=3)
    up = np.array([0.0, 0.0, G])
    samples = np.array([np.concatenate(imu.report(np.eye(3), np.zeros(3), up)[1:]) for _ in range(2000)])
    np.testing.assert_allclose(samples.std(axis=0), [0.01] * 3 + [0.1] * 3, rtol=0.1)
    np.testing.assert_allclose(samples.mean(axis=0), [0, 0, 0, 0, 0, G], atol=0.01)
    again = ImuModel(gyro_noise=0.01, acc_noise=0.1, seed=3).report(np.eye(3), np.zeros(3), up)
    np.testing.assert_array_equal(again[1], samples[0, :3])
