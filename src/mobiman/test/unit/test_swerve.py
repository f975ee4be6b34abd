"""Swerve kinematics and the chassis controller (mobiman.chassis.swerve, mobiman.chassis.control)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mobiman.chassis.control import ChassisController, ChassisInputError, ChassisLimits, module_positions
from mobiman.chassis.swerve import Odometry2D, SwerveKinematics, SwerveParams, limit_twist, wrap_pi
from r1_common.validation import InputError

R1_XY = np.array([[0.21516, 0.28], [0.21516, -0.28], [-0.28084, 0.0]])
HALF_PI = math.pi / 2


@pytest.fixture
def kin() -> SwerveKinematics:
    return SwerveKinematics(R1_XY, SwerveParams(max_wheel_speed=2.1))


def test_module_positions_come_from_the_urdf(r1_urdf):
    xy = module_positions(r1_urdf, ["steer_motor_joint1", "steer_motor_joint2", "steer_motor_joint3"], "base_link")
    np.testing.assert_allclose(xy, R1_XY, atol=1e-6)


def test_inverse_then_forward_round_trips():
    # no clamping at the steering limits (max_clamp_error 0): every module points exactly
    kin = SwerveKinematics(R1_XY, SwerveParams(max_wheel_speed=2.1, max_clamp_error=0.0))
    rng = np.random.default_rng(1)
    for _ in range(500):
        twist = rng.uniform([-1.5, -1.5, -3.0], [1.5, 1.5, 3.0])
        current = rng.uniform(-HALF_PI, HALF_PI, 3)
        cmd = kin.inverse(twist, current)
        scale = min(1.0, 2.1 / np.hypot(*kin.module_velocities(twist).T).max())
        np.testing.assert_allclose(kin.forward(cmd.angles, cmd.speeds), twist * scale, atol=1e-9)
        assert np.all(np.abs(cmd.angles) <= HALF_PI + 1e-12)


def test_forward_is_least_squares_over_inconsistent_modules(kin):
    # one module misreads: the fit is the least-squares twist, not any module's own
    cmd = kin.inverse((0.5, 0.0, 0.0), np.zeros(3))
    speeds = cmd.speeds.copy()
    speeds[2] += 0.3
    vx, vy, wz = kin.forward(cmd.angles, speeds)
    u = np.zeros(6)
    u[0::2] = speeds * np.cos(cmd.angles)
    u[1::2] = speeds * np.sin(cmd.angles)
    expected, *_ = np.linalg.lstsq(kin.G, u, rcond=None)
    np.testing.assert_allclose((vx, vy, wz), expected, atol=1e-12)


def test_pure_motions_give_the_expected_module_angles(kin):
    cmd = kin.inverse((0.5, 0.0, 0.0), np.zeros(3))
    np.testing.assert_allclose(cmd.angles, 0.0, atol=1e-12)
    np.testing.assert_allclose(cmd.speeds, 0.5)
    # pure sideways: ±90°, the sign chosen by the current angle, wheels signed to match
    cmd = kin.inverse((0.0, 0.4, 0.0), np.full(3, 0.3))
    np.testing.assert_allclose(cmd.angles, HALF_PI)
    np.testing.assert_allclose(cmd.speeds, 0.4)
    cmd = kin.inverse((0.0, 0.4, 0.0), np.full(3, -0.3))
    np.testing.assert_allclose(cmd.angles, -HALF_PI)
    np.testing.assert_allclose(cmd.speeds, -0.4)
    # pure yaw: every wheel perpendicular to its position vector, speed ω·r
    cmd = kin.inverse((0.0, 0.0, 1.0), np.zeros(3))
    for (x, y), a, s in zip(R1_XY, cmd.angles, cmd.speeds):
        assert abs(math.cos(a) * x + math.sin(a) * y) < 1e-9
        assert abs(abs(s) - math.hypot(x, y)) < 1e-9


def test_optimize_turns_at_most_90_degrees_unless_the_range_forbids(kin):
    """Every (current, heading) pair: within ±90° of steering; a turn over 90° only when the
    nearer representation lies beyond the range by more than max_clamp_error; always the
    commanded motion direction or, clamped, within max_clamp_error of it."""
    rng = np.random.default_rng(2)
    long_turns = 0
    for _ in range(20000):
        current = rng.uniform(-HALF_PI, HALF_PI)
        heading = rng.uniform(-math.pi, math.pi)
        angle, speed = kin.optimize(heading, 1.0, current)
        assert abs(angle) <= HALF_PI + 1e-12
        assert abs(abs(speed) - 1.0) < 1e-12
        moved = angle if speed > 0 else wrap_pi(angle + math.pi)    # direction the module rolls
        miss = abs(wrap_pi(moved - heading))
        turn = abs(angle - current)
        near = min(wrap_pi(heading - current), wrap_pi(heading + math.pi - current), key=abs) + current
        if abs(near) <= HALF_PI + kin.max_clamp_error:
            assert turn <= HALF_PI + 1e-9
            assert miss <= kin.max_clamp_error + 1e-9
        else:
            long_turns += 1
            assert miss < 1e-9
    assert 0 < long_turns < 20000 * 0.25


def test_desaturation_keeps_the_direction_of_motion(kin):
    twist = np.array([1.5, 1.0, 3.0])          # needs more than 2.1 m/s at a wheel
    assert np.hypot(*kin.module_velocities(twist).T).max() > 2.1
    cmd = kin.inverse(twist, np.zeros(3))
    assert np.abs(cmd.speeds).max() == pytest.approx(2.1)
    achieved = np.array(kin.forward(cmd.angles, cmd.speeds))
    ratio = achieved / twist
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-9)     # one common factor
    assert 0 < ratio[0] < 1


def test_zero_command_keeps_the_module_angles(kin):
    current = np.array([0.4, -1.2, 0.9])
    cmd = kin.inverse((0.0, 0.0, 0.0), current)
    np.testing.assert_allclose(cmd.angles, current)
    np.testing.assert_allclose(cmd.speeds, 0.0)


def test_alignment_scaling_drives_only_what_points_right(kin):
    e0, e1 = kin.align_tolerance, kin.align_deadband
    mid = (e0 + e1) / 2
    measured = np.array([0.8 * e1, mid, math.pi / 3])    # within the deadband, between, beyond
    cmd = kin.inverse((0.5, 0.0, 0.0), np.zeros(3), measured_angles=measured)
    share = (math.cos(mid) - math.cos(e0)) / (math.cos(e1) - math.cos(e0))
    np.testing.assert_allclose(cmd.speeds, [0.5, 0.5 * share, 0.0], atol=1e-12)
    # e1 = 0, e0 = pi/2 is plain cosine scaling
    cosine = SwerveKinematics(R1_XY, SwerveParams(max_wheel_speed=2.1, align_tolerance=HALF_PI,
                                                  align_deadband=0.0))
    cmd = cosine.inverse((0.5, 0.0, 0.0), np.zeros(3), measured_angles=np.array([0.0, math.pi / 3, HALF_PI]))
    np.testing.assert_allclose(cmd.speeds, [0.5, 0.25, 0.0], atol=1e-12)


def test_a_sideways_start_barely_moves_forward_while_the_modules_turn(kin):
    # modules turning 0 -> 90 deg at the steering's URDF speed (3.14 rad/s), the command sideways:
    # the forward distance the wheels push while turning stays within 3 mm
    dt, x, angle = 0.002, 0.0, 0.0
    while angle < HALF_PI:
        cmd = kin.inverse((0.0, 0.3, 0.0), np.full(3, angle), measured_angles=np.full(3, angle))
        x += float(np.mean(cmd.speeds * np.cos(angle))) * dt
        angle += 3.1416 * dt
    assert abs(x) < 0.003


def test_brake_angles_lock_every_rigid_motion(kin):
    angles = kin.brake_angles()
    assert np.all(np.abs(angles) <= HALF_PI)
    # rolling constraints: a wheel can only move along its heading. Locked = no nonzero twist
    # whose every module velocity is parallel to its wheel (the sideways components all zero).
    side = np.array([[-math.sin(a), math.cos(a)] for a in angles])
    rows = np.array([side[i] @ kin.G[2 * i:2 * i + 2] for i in range(3)])
    assert np.linalg.matrix_rank(rows, tol=1e-6) == 3
    assert np.linalg.svd(rows, compute_uv=False).min() > 0.05
    # and the straight-ahead pose is not locked (it rolls along x)
    straight = np.array([[0.0, 1.0]] * 3)
    rows0 = np.array([straight[i] @ kin.G[2 * i:2 * i + 2] for i in range(3)])
    assert np.linalg.matrix_rank(rows0, tol=1e-6) < 3


def test_twist_acceleration_limit_is_one_straight_line():
    acc = (2.5, 1.0, 1.0)
    twist, target, dt = (0.0, 0.0, 0.0), (1.0, 1.0, 0.0), 0.02
    path = [twist]
    for _ in range(200):
        twist = limit_twist(twist, target, acc, dt)
        path.append(twist)
    path = np.array(path)
    # y is the binding axis (1.0 m/s²): both axes reach the target together, on the diagonal
    np.testing.assert_allclose(path[:, 0], path[:, 1], atol=1e-12)
    steps = np.diff(path, axis=0)
    assert np.all(np.abs(steps[:, 0]) <= 2.5 * dt + 1e-12) and np.all(np.abs(steps[:, 1]) <= 1.0 * dt + 1e-12)
    first = int(np.argmax(path[:, 1] >= 1.0 - 1e-12))
    assert first * dt == pytest.approx(1.0, abs=dt + 1e-9)     # 1 m/s at 1 m/s² takes 1 s


def test_odometry_integrates_arcs_exactly():
    odo = Odometry2D()
    for _ in range(1000):                       # a full circle of radius 1 m in 2π s
        odo.integrate((1.0, 0.0, 1.0), 2 * math.pi / 1000)
    assert math.hypot(odo.x, odo.y) < 1e-9
    assert odo.distance == pytest.approx(2 * math.pi, rel=1e-6)


# -- the controller -------------------------------------------------------------------------------

def controller(timeout: float = 0.2) -> ChassisController:
    return ChassisController(SwerveKinematics(R1_XY, SwerveParams(max_wheel_speed=2.1)), ChassisLimits(), timeout)


def run(c: ChassisController, t0: float, seconds: float, dt: float = 0.02, measured=None) -> tuple[float, list]:
    """Step for `seconds`; the modules measured where commanded (ideal steering) unless given."""
    out, t = [], t0
    while t < t0 + seconds - 1e-9:
        t += dt
        if measured is not None:
            here = measured
        else:
            here = c._angles if c._angles is not None else np.zeros(3)
        cmd = c.step(t, here)
        out.append((t, c.twist, cmd))
    return t, out


def test_controller_ramps_vx_at_its_limit_and_caps_targets():
    c = controller()
    notes = c.set_target((2.0, 0.0, -5.0), 0.0)
    assert c.target == (1.5, 0.0, -3.0) and len(notes) == 2
    c.set_target((0.5, 0.0, 0.0), 0.0)
    c.step(0.0, np.zeros(3))                              # the loop was running before the target
    t, out = run(c, 0.0, 0.3, measured=np.zeros(3))
    first = next(t for t, tw, _ in out if tw[0] >= 0.5 - 1e-9)
    assert first == pytest.approx(0.5 / 2.5, abs=0.021)


def test_controller_rejects_non_finite_input():
    c = controller()
    with pytest.raises(ChassisInputError):
        c.set_target((float("nan"), 0.0, 0.0), 0.0)
    with pytest.raises(ChassisInputError):
        c.set_acceleration_limit((1.0, float("inf"), 1.0))
    assert c.target == (0.0, 0.0, 0.0)


def test_acceleration_limit_input_is_capped_at_the_maxima():
    c = controller()
    notes = c.set_acceleration_limit((5.0, 0.5, -1.0))
    assert c.acc == (2.5, 0.5, 1.0) and len(notes) == 2


def test_an_acceleration_limit_near_zero_is_raised_so_a_stop_still_comes():
    """A limit of 1e-9 m/s² would let a stopped stream coast on for years: it is raised to acc_min."""
    c = controller()
    notes = c.set_acceleration_limit((1e-9, 0.5, 1e-300))
    assert c.acc == (0.3, 0.5, 0.3) and len(notes) == 2 and "raised to 0.300" in notes[0]
    with pytest.raises(ValueError, match="acc_min"):
        ChassisLimits.from_params({"acc_min": [3.0, 0.3, 0.3]})


@pytest.mark.parametrize("position, velocity, field", [
    ([0.0, 0.0], [0.0, 0.0, 0.0], "feedback position"),
    ([0.0, float("nan"), 0.0], [0.0] * 3, "feedback position"),
    ([0.0, 0.0, 1e308], [0.0] * 3, "feedback position"),         # far beyond the steering range
    ([0.0] * 3, [0.0, 0.0, 5.0], "feedback velocity"),            # more than twice the wheel limit
    ([0.0] * 3, [0.0, 1e308, 0.0], "feedback velocity"),
])
def test_chassis_feedback_a_module_cannot_give_is_refused(position, velocity, field):
    with pytest.raises(InputError, match=field):
        controller().check_feedback(position, velocity)


def test_chassis_feedback_is_read_from_the_first_entries():
    angles, speeds = controller().check_feedback([0.1, 0.2, -0.3, 9.0], [0.5, 0.5, 0.5, 9.0])
    assert angles.tolist() == [0.1, 0.2, -0.3] and speeds.tolist() == [0.5] * 3


def test_timeout_decelerates_within_the_limits():
    c = controller(timeout=0.2)
    c.set_target((1.0, 0.0, 0.0), 0.0)
    t, _ = run(c, 0.0, 0.2)                               # keep the stream alive to full speed
    c.set_target((1.0, 0.0, 0.0), t)
    t, _ = run(c, t, 0.2)
    for _ in range(3):
        c.set_target((1.0, 0.0, 0.0), t)
        last = t
        t, _ = run(c, t, 0.1)
    assert c.twist[0] == pytest.approx(1.0)
    _, out = run(c, t, 1.0)                               # the stream stopped at `last`
    vx = np.array([tw[0] for _, tw, _ in out])
    assert c.timed_out and vx[-1] == 0.0
    assert np.all(np.diff(vx) >= -2.5 * 0.02 - 1e-12)    # never harder than the limit
    t_zero = out[int(np.argmax(vx == 0.0))][0]
    assert t_zero - last == pytest.approx(0.2 + 1.0 / 2.5, abs=0.03)


def test_brake_mode_locks_at_standstill_and_releases_on_command():
    c = controller()
    c.set_target((0.3, 0.0, 0.0), 0.0)
    t, _ = run(c, 0.0, 0.1)
    c.set_brake(True)
    t, out = run(c, t, 0.05)
    assert not c.braking                                 # still moving: no lock while driving
    c.set_target((0.0, 0.0, 0.0), t)
    t, out = run(c, t, 0.3)
    assert c.braking
    np.testing.assert_allclose(out[-1][2].angles, c.kin.brake_angles())
    np.testing.assert_allclose(out[-1][2].speeds, 0.0)
    c.set_target((0.0, 0.2, 0.0), t)                     # a new command releases the lock
    t, out = run(c, t, 0.2)
    assert not c.braking and np.all(np.abs(np.abs(out[-1][2].angles) - HALF_PI) < 1e-9)
    c.set_target((0.0, 0.0, 0.0), t)
    c.set_brake(False)                                   # brake off: modules keep their angles
    t, out = run(c, t, 0.5)
    assert not c.braking and np.all(np.abs(np.abs(out[-1][2].angles) - HALF_PI) < 1e-9)


def test_a_turning_module_holds_the_twist_back_and_the_wheels_then_ramp():
    """From rest, sideways: the modules turn 90 deg at the steering's URDF speed; the wheels do not
    jump when they point right (the twist waited for them) and the base barely moves forward."""
    c = controller()
    c.set_target((0.0, 0.3, 0.0), 0.0)
    dt, rate, t = 0.005, 3.1416, 0.0
    measured = np.zeros(3)
    x, speeds = 0.0, []
    for _ in range(400):                                  # 2 s
        t += dt
        cmd = c.step(t, measured)
        speeds.append(cmd.speeds.copy())
        x += float(np.mean(cmd.speeds * np.cos(measured))) * dt
        measured = measured + np.clip(cmd.angles - measured, -rate * dt, rate * dt)
        c.set_target((0.0, 0.3, 0.0), t)
    speeds = np.abs(np.array(speeds))
    assert speeds[-1] == pytest.approx([0.3] * 3, abs=1e-6)
    # the y acceleration limit is 1 m/s^2; the alignment share rising adds at most a little
    assert np.max(np.diff(speeds, axis=0)) <= 1.0 * dt * 1.5
    assert abs(x) < 0.003


def test_a_small_steady_steering_error_does_not_slow_the_ramp():
    """The steering holds its angle only to within its servo's error: below the deadband the
    twist ramps at the limit (the twist waiting for the modules would slow it otherwise)."""
    c = controller()
    c.set_target((0.5, 0.0, 0.0), 0.0)
    t, out = run(c, 0.0, 0.1, dt=0.005, measured=np.array([0.03, -0.03, 0.02]))
    assert out[-1][1][0] == pytest.approx(2.5 * (0.1 - 0.005), rel=1e-6)     # the first step has no dt
