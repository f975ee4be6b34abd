"""PostureLimits and chassis control under it: the base's acceleration the upper body's posture can ride
(joint torques within their share of the effort, the zero-moment point inside the wheels), its share of a
step, braking never below acc_min, and the commanded twist's rate of change chassis control publishes."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import GROUPS, URDF

from mobiman.chassis.control import ChassisController, ChassisLimits, module_positions
from mobiman.chassis.posture_limits import GRAVITY, PostureLimits, SupportPolygon
from mobiman.chassis.swerve import SwerveKinematics, SwerveParams
from mobiman.control.base_motion import BaseMotion
from mobiman.control.upper_body import feedforward_at
from mobiman.model.robot_model import RobotModel, load_group_config

STEER = ["steer_motor_joint1", "steer_motor_joint2", "steer_motor_joint3"]
ARMS_OUT = {"left_arm": [0.0073, 2.3004, -1.0006, -1.5632, -1.2998, 1.5688],
            "right_arm": [-0.0073, 2.3003, -1.0006, 1.5632, 1.2998, -1.5688]}
LEANING = [1.4, -2.2, -0.8, 0.0]       # the demo's pick posture: torso_link4 forward over the table


@pytest.fixture(scope="module")
def planar() -> RobotModel:
    groups, _ = load_group_config(GROUPS)
    return RobotModel(URDF.read_text(), groups, planar_base=True)


@pytest.fixture()
def limits(planar: RobotModel) -> PostureLimits:
    xy = module_positions(URDF.read_text(), STEER, "base_link")
    return PostureLimits(planar, ["torso", "left_arm", "right_arm"], SupportPolygon.of_points(xy))


def stand(limits: PostureLimits, torso, arms) -> PostureLimits:
    limits.set_posture("torso", torso)
    for group, q in arms.items():
        limits.set_posture(group, q)
    limits.update()
    return limits


def test_the_support_polygon_of_the_wheels() -> None:
    poly = SupportPolygon.of_points([(0.2, 0.3), (0.2, -0.3), (-0.3, 0.0)])
    inside = lambda p: bool(np.all(poly.normals @ np.asarray(p) <= poly.offsets + 1e-12))    # noqa: E731
    assert inside((0.0, 0.0)) and inside((0.2, 0.0)) and not inside((0.25, 0.0)) and not inside((-0.1, 0.25))
    with pytest.raises(ValueError):
        SupportPolygon.of_points([(0.0, 0.0), (1.0, 0.0), (2.0, 0.0)])
    with pytest.raises(ValueError):
        SupportPolygon.of_points([(0.0, 0.0), (1.0, 0.0)])


def test_an_upright_posture_rides_the_chassis_limits_and_a_leaning_one_brakes_gentler(limits) -> None:
    up, down = stand(limits, [0.0] * 4, ARMS_OUT).axis_limits(0.0, (2.5, 1.0, 1.0))
    assert up == [2.5, 1.0, 1.0] and down == [2.5, 1.0, 1.0]
    up, down = stand(limits, LEANING, ARMS_OUT).axis_limits(0.0, (2.5, 1.0, 1.0))
    cx, _, h = limits.com
    front = 0.21516 - limits.zmp_margin                       # the front wheels' edge, less the margin
    assert down[0] == pytest.approx((front - cx) * GRAVITY / h, rel=1e-6) and 1.5 < down[0] < 2.4
    assert up[0] == 2.5 and limits.worst() is None


def test_the_share_keeps_every_joint_within_its_torque_budget(limits, planar: RobotModel) -> None:
    """A posture whose torso needs more than torque_share of its motors' peak at the chassis' acceleration:
    the share found gives exactly the budget at the worst joint, checked against RNEA."""
    torso = [0.72, -0.8, -1.41, 0.0]
    stand(limits, torso, ARMS_OUT)
    accel = np.array([-2.5, 0.0, 0.0])
    s = limits.share(accel)
    assert 0.0 < s < 1.0
    q = planar.configuration({"torso": torso, **ARMS_OUT})
    tau = np.concatenate([feedforward_at(planar, q, g, base=BaseMotion(acceleration=tuple(s * accel)))
                          for g in ("torso", "left_arm", "right_arm")])
    budget = limits.torque_share * limits.effort
    zmp = limits.com[:2] - limits.com[2] / GRAVITY * s * accel[:2]
    on_zmp = np.max(limits.support.normals @ zmp - limits.support.offsets + limits.zmp_margin)
    assert np.max(np.abs(tau) - budget) == pytest.approx(0.0, abs=1e-6) or on_zmp == pytest.approx(0.0, abs=1e-9)
    assert np.all(np.abs(tau) <= budget + 1e-6) and on_zmp <= 1e-9


def test_a_posture_already_beyond_only_forbids_making_it_worse(limits) -> None:
    stand(limits, [1.0, 1.0, 0.0, 0.0], ARMS_OUT)            # an extreme lean: past the budget at rest
    assert limits.worst() is not None
    load = limits.A @ np.array([1.0, 0.0, 0.0])
    worse = 1.0 if load[limits.joints.index(limits.worst())] * limits.tau0[limits.joints.index(limits.worst())] > 0 \
        else -1.0
    assert limits.share(np.array([worse * 2.5, 0.0, 0.0])) == 0.0


def chassis(limits: PostureLimits | None) -> ChassisController:
    kin = SwerveKinematics(module_positions(URDF.read_text(), STEER, "base_link"), SwerveParams())
    return ChassisController(kin, ChassisLimits(), command_timeout=0.2, posture=limits)


def run(c: ChassisController, target, seconds: float, t0: float = 0.0, dt: float = 0.005) -> list:
    out, t = [], t0
    angles = np.zeros(3)
    for _ in range(int(round(seconds / dt))):
        t += dt
        c.set_target(target, t)
        cmd = c.step(t, angles)
        angles = cmd.angles
        out.append((t, c.twist, c.acceleration))
    return out


def test_chassis_control_brakes_at_what_the_posture_allows_and_says_what_it_commanded(limits) -> None:
    free_chassis = chassis(None)
    free = run(free_chassis, (1.0, 0.0, 0.0), 1.0) + run(free_chassis, (0.0, 0.0, 0.0), 1.0, t0=1.0)
    c = chassis(stand(limits, LEANING, ARMS_OUT))
    trace = run(c, (1.0, 0.0, 0.0), 1.0)
    assert max(a[0] for _, _, a in trace) == pytest.approx(2.5, rel=1e-6)       # speeding up: the chassis' limit
    trace = run(c, (0.0, 0.0, 0.0), 1.0, t0=1.0)
    braking = -min(a[0] for _, _, a in trace)
    _, down = limits.axis_limits(0.0, (2.5, 1.0, 1.0))
    assert braking == pytest.approx(down[0], rel=1e-3) and braking < 2.4
    assert c.posture_limited > 0 and trace[-1][1] == (0.0, 0.0, 0.0)
    # each step's acceleration is its twist's change
    for (_, v0, _), (_, v1, a) in zip(trace, trace[1:]):
        assert a[0] == pytest.approx((v1[0] - v0[0]) / 0.005, abs=1e-9)
    assert -min(a[0] for _, _, a in free) == pytest.approx(2.5, rel=1e-6)


def test_the_limits_apply_while_the_posture_streams_in_between_updates(limits) -> None:
    """The node sets each group's posture at the feedback's rate and updates the limits at its own pace:
    the last update's limits apply meanwhile (not only right after an update)."""
    c = chassis(stand(limits, LEANING, ARMS_OUT))
    limits.set_posture("torso", LEANING)                   # a feedback message since the update
    assert limits.changed and limits.known
    run(c, (1.0, 0.0, 0.0), 1.0)
    trace = run(c, (0.0, 0.0, 0.0), 1.0, t0=1.0)
    assert -min(a[0] for _, _, a in trace) < 2.4 and c.posture_limited > 0


def test_braking_is_never_slowed_below_acc_min(limits) -> None:
    c = chassis(stand(limits, [1.0, 1.0, 0.0, 0.0], ARMS_OUT))   # a posture already beyond: no share left
    c.twist = (1.0, 0.0, 0.0)
    trace = run(c, (0.0, 0.0, 0.0), 0.1)
    assert -min(a[0] for _, _, a in trace) >= ChassisLimits().acc_min[0] * (1 - 1e-9)


HDAS_TORSO_HOLD = [500.0, 500.0, 500.0, 300.0]      # r1_can's config/r1.yaml: the driver's hold gains
HDAS_ARM_HOLD = [140.0, 200.0, 120.0, 20.0, 20.0, 20.0]


def test_a_torso_the_driver_holds_lets_the_base_accelerate_only_as_far_as_it_bends_within_the_bound(
        limits, planar: RobotModel) -> None:
    """With no controller the straight torso is an inverted pendulum on HDAS's 500 N·m/rad: the base's
    acceleration is what bends it hold_deflection statically, checked against the linearised statics
    (K + ∂g/∂q)·δ = -A·a solved here by finite differences of the gravity torque."""
    stand(limits, [0.0] * 4, ARMS_OUT)
    free, _ = limits.axis_limits(0.0, (2.5, 1.0, 1.0))
    limits.hold("torso", HDAS_TORSO_HOLD)
    assert limits.changed
    limits.update()
    up, down = limits.axis_limits(0.0, (2.5, 1.0, 1.0))
    assert free == [2.5, 1.0, 1.0] and 0.02 < up[0] < 0.3 and 0.02 < down[0] < 0.3
    # the deflection at that acceleration, from the model's statics
    q0 = planar.configuration()
    for g, v in {"torso": [0.0] * 4, **ARMS_OUT}.items():
        planar.set_group(q0, g, np.asarray(v))
    iq = planar.group("torso").idx_q

    def gravity(q):
        return feedforward_at(planar, q, "torso")

    k = np.zeros((4, 4))
    for j in range(4):
        q = q0.copy()
        q[iq[j]] += 1e-5
        k[:, j] = (gravity(q) - gravity(q0)) / 1e-5
    accelerated = feedforward_at(planar, q0, "torso", base=BaseMotion((0.0, 0.0, 0.0), (up[0], 0.0, 0.0)))
    bend = np.linalg.solve(np.diag(HDAS_TORSO_HOLD) + k, -(accelerated - gravity(q0)))
    assert np.max(np.abs(bend)) == pytest.approx(limits.hold_deflection, rel=1e-3)
    # a controller drives it again: the torque budget alone
    limits.hold("torso", None)
    limits.update()
    assert limits.axis_limits(0.0, (2.5, 1.0, 1.0))[0] == [2.5, 1.0, 1.0]


def test_a_posture_that_falls_under_the_driver_s_hold_allows_no_acceleration_but_braking_still_stops(
        limits) -> None:
    stand(limits, LEANING, ARMS_OUT)
    limits.hold("torso", [0.0, 0.0, 0.0, 0.0])           # no stiffness at all: gravity alone decides
    limits.update()
    assert not limits.hold_stable
    assert limits.share((0.5, 0.0, 0.0)) == 0.0 and limits.share((0.0, 0.0, 0.0)) == 1.0
    c = chassis(limits)
    c.twist = (0.5, 0.0, 0.0)
    trace = run(c, (0.0, 0.0, 0.0), 3.0)
    assert trace[-1][1] == (0.0, 0.0, 0.0)                # stopped, at the braking floor
    assert -min(a[0] for _, _, a in trace) == pytest.approx(ChassisLimits().acc_min[0], rel=1e-6)
    assert max(a[0] for _, _, a in run(c, (0.5, 0.0, 0.0), 0.5, t0=3.0)) == 0.0   # and it does not start again


def test_arms_the_driver_holds_bound_the_base_less_than_the_torso(limits) -> None:
    stand(limits, [0.0] * 4, ARMS_OUT)
    for arm in ("left_arm", "right_arm"):
        limits.hold(arm, HDAS_ARM_HOLD)
    limits.update()
    arms_only, _ = limits.axis_limits(0.0, (2.5, 1.0, 1.0))
    limits.hold("torso", HDAS_TORSO_HOLD)
    limits.update()
    everything, _ = limits.axis_limits(0.0, (2.5, 1.0, 1.0))
    assert arms_only[0] > everything[0] and limits.held == ["torso", "left_arm", "right_arm"]


@pytest.mark.parametrize("group, kp", [("head", [1.0]), ("torso", [1.0, 2.0]), ("torso", [1.0, 1.0, -1.0, 1.0]),
                                       ("torso", [1.0, float("nan"), 1.0, 1.0])])
def test_a_bad_hold_is_refused(limits, group, kp) -> None:
    with pytest.raises(ValueError):
        limits.hold(group, kp)
    with pytest.raises(ValueError):
        PostureLimits(limits.model, ["torso"], limits.support, hold_deflection=0.0)
