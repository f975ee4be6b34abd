"""Physics of the simulated R1 (r1_sim.physics) against independent computations.

Reference quantities (gravity torques, energies, frame placements) come from a
separate pinocchio model of the whole URDF, never from the simulator's own model,
so a wrong joint mapping or reduction shows up.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from scipy.spatial.transform import Rotation

from r1_sim.physics import BatteryModel, ImuModel, SwerveChassisSim, UpperBodySim

URDF = Path(__file__).resolve().parents[3] / "r1_description" / "urdf" / "r1_v2_1_0.urdf"
DT = 1e-3
G = 9.81

TORSO = [f"torso_joint{i}" for i in range(1, 5)]
BODY = (TORSO + [f"left_arm_joint{i}" for i in range(1, 7)]
        + ["left_gripper_finger_joint1", "left_gripper_finger_joint2"]
        + [f"right_arm_joint{i}" for i in range(1, 7)]
        + ["right_gripper_finger_joint1", "right_gripper_finger_joint2"])
# arms raised sideways, elbows bent: gravity loads the shoulders and the torso
RAISED = {"left_arm_joint2": 1.0, "left_arm_joint3": -1.0, "right_arm_joint2": 1.0, "right_arm_joint3": -1.0}
R1_XY = np.array([[0.21516, 0.28], [0.21516, -0.28], [-0.28084, 0.0]])
R = 0.07


@pytest.fixture(scope="module")
def urdf_xml() -> str:
    return URDF.read_text()


class FullModel:
    """The whole URDF in pinocchio (chassis joints at 0): the reference for the tests."""

    def __init__(self, xml: str):
        self.model = pin.buildModelFromXML(xml)
        self.data = self.model.createData()

    def q(self, names: list[str], q: np.ndarray) -> np.ndarray:
        out = pin.neutral(self.model)
        for name, x in zip(names, q):
            joint = self.model.joints[self.model.getJointId(name)]
            if joint.nq == 2:                                      # continuous: (cos, sin)
                out[joint.idx_q:joint.idx_q + 2] = math.cos(x), math.sin(x)
            else:
                out[joint.idx_q] = x
        return out

    def v(self, names: list[str], v: np.ndarray) -> np.ndarray:
        out = np.zeros(self.model.nv)
        for name, x in zip(names, v):
            out[self.model.joints[self.model.getJointId(name)].idx_v] = x
        return out

    def gravity(self, names: list[str], q: np.ndarray) -> np.ndarray:
        g = pin.computeGeneralizedGravity(self.model, self.data, self.q(names, q))
        return np.array([g[self.model.joints[self.model.getJointId(n)].idx_v] for n in names])

    def energy(self, names: list[str], q: np.ndarray, v: np.ndarray) -> tuple[float, float]:
        qf, vf = self.q(names, q), self.v(names, v)
        return (pin.computeKineticEnergy(self.model, self.data, qf, vf),
                pin.computePotentialEnergy(self.model, self.data, qf))

    def rotation(self, names: list[str], q: np.ndarray, frame: str) -> np.ndarray:
        pin.framesForwardKinematics(self.model, self.data, self.q(names, q))
        return self.data.oMf[self.model.getFrameId(frame)].rotation.copy()


@pytest.fixture(scope="module")
def full(urdf_xml: str) -> FullModel:
    return FullModel(urdf_xml)


def make_body(xml: str, joints: list[str] = BODY, viscous: float | np.ndarray = 0.0,
              coulomb: float | np.ndarray = 0.0, armature: float | np.ndarray = 0.0,
              pose: dict[str, float] | None = None, v: np.ndarray | None = None) -> UpperBodySim:
    n = len(joints)
    sim = UpperBodySim(xml, joints, np.broadcast_to(viscous, n).astype(float),
                       np.broadcast_to(coulomb, n).astype(float), np.broadcast_to(armature, n).astype(float))
    q = np.array([(pose or {}).get(j, 0.0) for j in joints])
    sim.set_state(q, np.zeros(n) if v is None else v)
    return sim


# -- UpperBodySim ---------------------------------------------------------------------------
def test_reduced_model_keeps_exactly_the_body_joints(urdf_xml):
    sim = make_body(urdf_xml)
    assert sim.model.nv == len(BODY)
    assert sorted(sim.model.names[1:]) == sorted(BODY)
    with pytest.raises(ValueError):
        UpperBodySim(urdf_xml, ["no_such_joint"], np.zeros(1), np.zeros(1), np.zeros(1))


def test_state_round_trips_in_caller_order(urdf_xml):
    joints = list(reversed(BODY))
    sim = make_body(urdf_xml, joints)
    q = np.linspace(-0.01, 0.02, len(joints)) + 0.02   # inside every limit (fingers 0..0.05)
    v = np.arange(len(joints), dtype=float)
    sim.set_state(q, v)
    np.testing.assert_array_equal(sim.positions, q)
    np.testing.assert_array_equal(sim.velocities, v)
    sim.positions[0] = 99.0                      # a copy, not the state
    assert sim.positions[0] == q[0]


def test_unsupported_arm_falls_under_gravity(urdf_xml, full):
    sim = make_body(urdf_xml, pose=RAISED)
    q0 = sim.positions
    g = full.gravity(BODY, q0)
    j = BODY.index("left_arm_joint1")
    assert abs(g[j]) > 0.3                         # the pose really loads the shoulder
    for _ in range(300):
        sim.step(np.zeros(len(BODY)), DT)
    dq = sim.positions - q0
    assert abs(dq[j]) > 0.05
    # it falls the way gravity pulls: the potential energy goes down
    assert full.energy(BODY, sim.positions, np.zeros(len(BODY)))[1] < full.energy(BODY, q0, np.zeros(len(BODY)))[1]


def test_gravity_compensation_holds_pose_in_any_joint_order(urdf_xml, full):
    joints = BODY[::2] + BODY[1::2]                  # not pinocchio's order
    pose = {**RAISED, "torso_joint1": 0.3, "torso_joint2": -0.5, "left_arm_joint1": -0.7, "right_arm_joint5": 0.4}
    sim = make_body(urdf_xml, joints, pose=pose)
    q0 = sim.positions
    for _ in range(1000):
        sim.step(full.gravity(joints, sim.positions), DT)
    assert np.max(np.abs(sim.positions - q0)) < 1e-3
    # and the same torques in the wrong order do not hold it
    sim.set_state(q0, np.zeros(len(joints)))
    for _ in range(200):
        sim.step(full.gravity(joints, sim.positions)[::-1], DT)
    assert np.max(np.abs(sim.positions - q0)) > 1e-2


def test_free_swing_conserves_energy(urdf_xml, full):
    joints = ["left_arm_joint1", "left_arm_joint2", "left_arm_joint3"]   # the rest locked at 0
    sim = make_body(urdf_xml, joints, pose=RAISED)
    e0 = sum(full.energy(joints, sim.positions, sim.velocities))
    drift, kinetic = 0.0, 0.0
    for _ in range(500):
        sim.step(np.zeros(3), DT)
        q = sim.positions
        assert np.all(q > sim.lower_limits) and np.all(q < sim.upper_limits)   # no stop hit
        k, u = full.energy(joints, q, sim.velocities)
        drift, kinetic = max(drift, abs(k + u - e0)), max(kinetic, k)
    assert kinetic > 0.5                           # a real swing
    assert drift < 0.05 * kinetic


def test_braked_torso_holds_while_arms_fall(urdf_xml):
    sim = make_body(urdf_xml, pose=RAISED)
    q0 = sim.positions
    torso = np.array([j in TORSO for j in BODY])
    sim.set_brakes(torso)
    tau = np.where(torso, 500.0, 0.0)
    for _ in range(300):
        sim.step(tau, DT)
    np.testing.assert_array_equal(sim.positions[torso], q0[torso])
    np.testing.assert_array_equal(sim.velocities[torso], 0.0)
    assert abs(sim.positions[BODY.index("left_arm_joint1")] - q0[BODY.index("left_arm_joint1")]) > 0.05
    # a joint moving when its brake engages stops dead
    sim.set_brakes(np.zeros(len(BODY), dtype=bool))
    moving = np.where(torso, 0.5, 0.0)
    sim.set_state(q0, moving)
    sim.set_brakes(torso)
    sim.step(np.zeros(len(BODY)), DT)
    np.testing.assert_array_equal(sim.positions[torso], q0[torso])
    np.testing.assert_array_equal(sim.velocities[torso], 0.0)
    # released, the same torque moves the torso
    sim.set_brakes(np.zeros(len(BODY), dtype=bool))
    for _ in range(50):
        sim.step(tau, DT)
    assert np.max(np.abs(sim.positions[torso] - q0[torso])) > 1e-2


@pytest.mark.parametrize("joint, start, push", [("left_arm_joint2", 0.2, -30.0),   # lower stop 0
                                                ("left_arm_joint3", -0.2, 20.0)])  # upper stop 0
def test_hard_stop_is_inelastic_and_releases(urdf_xml, joint, start, push):
    sim = make_body(urdf_xml, pose={joint: start})
    sim.set_brakes(np.array([j in TORSO for j in BODY]))
    k = BODY.index(joint)
    limit = sim.lower_limits[k] if push < 0 else sim.upper_limits[k]
    tau = np.zeros(len(BODY))
    tau[k] = push
    for _ in range(400):
        sim.step(tau, DT)
        beyond = (limit - sim.positions[k]) if push < 0 else (sim.positions[k] - limit)
        assert beyond <= 1e-9
        if abs(sim.positions[k] - limit) < 1e-12:
            assert sim.velocities[k] * np.sign(push) <= 0.0     # no velocity left into the stop
    assert sim.positions[k] == pytest.approx(limit, abs=1e-9)
    assert sim.velocities[k] * np.sign(push) <= 0.0         # nothing left into the stop
    assert sim.velocities[k] == 0.0
    tau[k] = -push
    for _ in range(50):
        sim.step(tau, DT)
    assert abs(sim.positions[k] - limit) > 1e-2               # not glued to the stop


def test_gripper_viscous_friction_is_stable_and_exact(urdf_xml, full):
    joints = ["left_gripper_finger_joint1"]
    sim = make_body(urdf_xml, joints, viscous=5.0, armature=0.2, pose={joints[0]: 0.01}, v=np.array([0.2]))
    m = pin.crba(sim.model, sim.model.createData(), pin.neutral(sim.model))[0, 0]    # finger + armature
    assert m == pytest.approx(0.2 + 0.027, rel=1e-6)
    vs = []
    for _ in range(100):
        sim.step(full.gravity(joints, sim.positions), DT)
        vs.append(sim.velocities[0])
    vs = np.array(vs)
    assert np.all(vs > 0) and np.all(np.diff(vs) < 0)
    assert vs[-1] == pytest.approx(0.2 * math.exp(-5.0 / m * 0.1), rel=0.05)


def test_heavy_damping_on_a_light_joint_does_not_blow_up(urdf_xml, full):
    # 5 N·m·s/rad on a wrist of ~1e-4 kg·m²: explicit Euler would diverge at 1 kHz
    joints = ["left_arm_joint6"]
    sim = make_body(urdf_xml, joints, viscous=5.0, v=np.array([3.0]))
    m = pin.crba(sim.model, sim.model.createData(), pin.neutral(sim.model))[0, 0]
    assert DT * 5.0 / m > 2.0
    last = 3.0
    for _ in range(50):
        sim.step(full.gravity(joints, sim.positions), DT)
        v = sim.velocities[0]
        assert 0.0 <= v <= last
        last = v
    assert last < 1e-6


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_coulomb_friction_sticks_below_and_slides_above(urdf_xml, full, sign):
    joints = ["left_gripper_finger_joint1"]
    c, m = 1.0, 0.2 + 0.027
    sim = make_body(urdf_xml, joints, coulomb=c, armature=0.2, pose={joints[0]: 0.025})
    for _ in range(1000):
        sim.step(full.gravity(joints, sim.positions) + sign * 0.9 * c, DT)
    assert abs(sim.positions[0] - 0.025) < 1e-4
    assert sim.velocities[0] == 0.0
    # above the breakaway force it slides, kinetic friction c opposing the motion
    for _ in range(50):
        sim.step(full.gravity(joints, sim.positions) + sign * 1.2 * c, DT)
    assert sim.velocities[0] == pytest.approx(sign * 0.2 * c / m * 0.05, rel=1e-6)
    assert (sim.positions[0] - 0.025) * sign > 5e-4


def test_coulomb_friction_stops_a_sliding_joint_without_chatter(urdf_xml, full):
    joints = ["left_gripper_finger_joint1"]
    c, m = 1.0, 0.2 + 0.027
    sim = make_body(urdf_xml, joints, coulomb=c, armature=0.2, pose={joints[0]: 0.02}, v=np.array([0.1]))
    vs = []
    for _ in range(200):
        sim.step(full.gravity(joints, sim.positions), DT)
        vs.append(sim.velocities[0])
    vs = np.array(vs)
    stop = int(np.argmax(vs == 0.0))
    assert vs[stop] == 0.0 and np.all(vs[stop:] == 0.0)         # stays stopped, never reverses
    assert np.all(vs >= 0.0)
    assert stop * DT == pytest.approx(0.1 * m / c, abs=2 * DT)    # decelerates at c/m


def test_coulomb_friction_holds_the_whole_body_coupled(urdf_xml, full):
    q0 = np.array([RAISED.get(j, 0.0) for j in BODY]) + np.array([0.01 if "finger" in j else 0.0 for j in BODY])
    g = full.gravity(BODY, q0)
    sim = make_body(urdf_xml, coulomb=1.2 * np.abs(g) + 0.05, armature=0.01,
                    pose=dict(zip(BODY, q0)))
    for _ in range(1000):
        sim.step(np.zeros(len(BODY)), DT)
    assert np.max(np.abs(sim.positions - q0)) < 1e-4
    # the shoulder with too little friction slides, the others keep holding what they can
    k = BODY.index("left_arm_joint1")
    weak = 1.2 * np.abs(g) + 0.05
    weak[k] = 0.5 * abs(g[k])
    sim = make_body(urdf_xml, coulomb=weak, armature=0.01, pose=dict(zip(BODY, q0)))
    for _ in range(300):
        sim.step(np.zeros(len(BODY)), DT)
    assert abs(sim.positions[k] - q0[k]) > 0.01


def test_frame_motion_at_rest_gives_the_urdf_transform_and_gravity(urdf_xml, full):
    pose = {"torso_joint1": 0.3, "torso_joint4": 0.5}
    sim = make_body(urdf_xml, pose=pose)
    for _ in range(5):
        sim.step(full.gravity(BODY, sim.positions), DT)
    rot, omega, acc = sim.frame_motion("imu_torso_link")
    np.testing.assert_allclose(rot, full.rotation(BODY, sim.positions, "imu_torso_link"), atol=1e-9)
    # torso_joint1 pitches about y, torso_joint4 yaws about the torso's z: imu = Ry(0.3) Rz(0.5)
    expected = Rotation.from_euler("YZ", [0.3, 0.5]).as_matrix()
    np.testing.assert_allclose(rot, expected, atol=1e-9)
    np.testing.assert_allclose(omega, 0.0, atol=1e-9)
    np.testing.assert_allclose(acc, 0.0, atol=1e-6)
    _, _, f = ImuModel().measure(rot, omega, acc)
    np.testing.assert_allclose(f, expected.T @ [0, 0, G], atol=1e-6)
    assert f[0] == pytest.approx(-G * math.sin(0.3) * math.cos(0.5), abs=1e-6)
    # level torso: identity, the sensor reads +g on its z
    sim = make_body(urdf_xml)
    sim.set_brakes(np.array([j in TORSO for j in BODY]))
    sim.step(np.zeros(len(BODY)), DT)
    rot, omega, acc = sim.frame_motion("imu_torso_link")
    np.testing.assert_allclose(rot, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(ImuModel().measure(rot, omega, acc)[2], [0, 0, G], atol=1e-9)


def test_frame_position_matches_the_full_model(urdf_xml, full):
    pose = {"torso_joint1": 0.3, "torso_joint2": -0.4, "torso_joint4": 0.5}
    sim = make_body(urdf_xml, pose=pose)
    q = full.q(BODY, sim.positions)
    pin.framesForwardKinematics(full.model, full.data, q)
    for frame in ("imu_torso_link", "left_gripper_link"):
        expected = full.data.oMf[full.model.getFrameId(frame)].translation
        np.testing.assert_allclose(sim.frame_position(frame), expected, atol=1e-9)
    with pytest.raises(KeyError):
        sim.frame_position("no_such_frame")


def test_frame_motion_follows_the_joint_motion(urdf_xml):
    # torso pitched, torso_joint4 spinning: the rate is about the sensor's own z, not the world's
    sim = make_body(urdf_xml, pose={"torso_joint1": 0.3},
                    v=np.array([1.0 if j == "torso_joint4" else 0.0 for j in BODY]))
    _, omega, _ = sim.frame_motion("imu_torso_link")
    np.testing.assert_allclose(omega, [0, 0, 1.0], atol=1e-12)
    # accelerate torso_joint1 alone: the IMU (1.0 m above its axis... ) feels a tangential acceleration
    sim = make_body(urdf_xml, joints=["torso_joint1"])
    sim.step(np.array([200.0]), DT)
    a = sim.velocities[0] / DT                     # from rest
    assert a > 0
    assert sim.accelerations[0] == pytest.approx(a, rel=1e-12)
    _, omega, acc = sim.frame_motion("imu_torso_link")
    h = 0.4 + 0.3 + 0.09962 + 0.1                  # torso_joint1 axis to imu_torso_link, straight up
    w = sim.velocities[0]
    np.testing.assert_allclose(acc, [a * h, 0.0, -w * w * h], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(omega, [0, w, 0], atol=1e-12)
    with pytest.raises(KeyError):
        sim.frame_motion("no_such_frame")


def test_continuous_joint_spins_freely(urdf_xml, full):
    joints = ["left_arm_joint1", "wheel_motor_joint1"]
    sim = make_body(urdf_xml, joints, armature=0.01)
    assert sim.lower_limits[1] == -np.inf and sim.upper_limits[1] == np.inf
    assert sim.lower_limits[0] == pytest.approx(-2.8798)
    for _ in range(1000):
        sim.step(full.gravity(joints, sim.positions) + np.array([0.0, 0.2]), DT)
    iw = 0.0015854 + 0.01                         # wheel about its axis + armature
    assert sim.velocities[1] == pytest.approx(0.2 / iw, rel=1e-3)
    assert sim.positions[1] == pytest.approx(0.5 * 0.2 / iw, rel=1e-2)    # far past any ±π
    assert abs(sim.positions[0]) < 1e-6
    rot, omega, _ = sim.frame_motion("wheel_motor_link1")
    np.testing.assert_allclose(rot, full.rotation(joints, sim.positions, "wheel_motor_link1"), atol=1e-9)
    np.testing.assert_allclose(rot, Rotation.from_euler("y", sim.positions[1]).as_matrix(), atol=1e-9)
    np.testing.assert_allclose(omega, [0, sim.velocities[1], 0], atol=1e-9)


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


def test_base_acceleration_includes_the_centripetal_term():
    ch = SwerveChassisSim(R1_XY, R)
    vx, wz = 0.5, 0.5
    ang, speed = module_command((vx, 0.0, wz))
    drive(ch, ang, speed, 1.5)
    assert ch.base_twist() == pytest.approx((vx, 0.0, wz), abs=1e-4)
    ax, ay = ch.base_acceleration()
    assert ax == pytest.approx(0.0, abs=1e-3)
    assert ay == pytest.approx(wz * vx, abs=1e-3)         # towards the centre of the turn
    # and the linear part while speeding up straight
    ch = SwerveChassisSim(R1_XY, R, wheel_viscous=0.0)
    ch.step(np.zeros(3), np.full(3, 0.3), DT)
    ch.step(np.zeros(3), np.full(3, 0.3), DT)
    ax, ay = ch.base_acceleration()
    assert ax == pytest.approx(0.3 / ch.wheel_inertia * R, rel=1e-9) and ay == pytest.approx(0.0, abs=1e-12)


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
    rpy, gyro, acc = ImuModel().measure(np.eye(3), np.zeros(3), np.zeros(3))
    np.testing.assert_allclose(rpy, 0.0, atol=1e-12)
    np.testing.assert_allclose(gyro, 0.0)
    np.testing.assert_allclose(acc, [0, 0, G])


def test_imu_rolled_ninety_degrees_sees_gravity_on_y():
    rot = Rotation.from_euler("x", 90, degrees=True).as_matrix()   # sensor y points up
    rpy, _, acc = ImuModel().measure(rot, np.zeros(3), np.zeros(3))
    np.testing.assert_allclose(rpy, [math.pi / 2, 0, 0], atol=1e-12)
    np.testing.assert_allclose(acc, [0, G, 0], atol=1e-12)


def test_imu_rpy_convention_motion_and_noise():
    rot = Rotation.from_euler("xyz", [0.1, -0.2, 0.3]).as_matrix()
    w, a = np.array([0.1, 0.2, 0.3]), np.array([1.0, 0.0, 0.0])
    rpy, gyro, acc = ImuModel().measure(rot, w, a)
    np.testing.assert_allclose(rpy, [0.1, -0.2, 0.3], atol=1e-12)
    np.testing.assert_allclose(gyro, w)
    np.testing.assert_allclose(acc, a + rot.T @ [0, 0, G])
    imu = ImuModel(gyro_noise=0.01, acc_noise=0.1, seed=3)
    samples = np.array([np.concatenate(imu.measure(np.eye(3), np.zeros(3), np.zeros(3))[1:]) for _ in range(2000)])
    np.testing.assert_allclose(samples.std(axis=0), [0.01] * 3 + [0.1] * 3, rtol=0.1)
    np.testing.assert_allclose(samples.mean(axis=0), [0, 0, 0, 0, 0, G], atol=0.01)
    again = ImuModel(gyro_noise=0.01, acc_noise=0.1, seed=3).measure(np.eye(3), np.zeros(3), np.zeros(3))
    np.testing.assert_array_equal(again[1], samples[0, :3])
