"""MujocoWorld and r1_sim.mjcf: the robot's bodies in MuJoCo, held to what the motors and boards need."""
from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np
import pytest

from r1_sim import mjcf
from r1_sim.mujoco_world import MujocoWorld, describe_contacts

SRC = Path(__file__).resolve().parents[3]
URDF = (SRC / "r1_description/urdf/r1_v2_1_0.urdf").read_text()
TORSO = [f"torso_joint{k}" for k in range(1, 5)]
ARM = [f"left_arm_joint{k}" for k in range(1, 7)]
FINGERS = ["left_gripper_finger_joint1", "left_gripper_finger_joint2"]
CHASSIS = [f"steer_motor_joint{k}" for k in range(1, 4)] + [f"wheel_motor_joint{k}" for k in range(1, 4)]
DT = 1e-3
HANGING = {"left_arm_joint1": -1.5708, "left_arm_joint3": -2.8919, "left_arm_joint5": 0.0657,
           "right_arm_joint1": 1.5708, "right_arm_joint3": -2.8827, "right_arm_joint5": -0.0657}
RIGHT_ARM = [f"right_arm_joint{k}" for k in range(1, 7)]
G = 9.81


def world(scene: str = "empty", joints=TORSO + ARM + FINGERS + RIGHT_ARM, damping: float = 20.0) -> MujocoWorld:
    """A world whose arms hang at rest (sim.yaml's start pose: no gravity torque), unpowered but damped as
    if their motors held them (free arms swing into their stops at every turn and jolt the base)."""
    n = len(joints)
    w = MujocoWorld(URDF, mjcf.scene_path(scene).read_text(), joints, np.full(n, damping), np.zeros(n),
                    np.full(n, 0.01), DT, ties=[(FINGERS[1], FINGERS[0])], brakes=TORSO,
                    imus=["imu_torso_link", "imu_chassis_link"], chassis=CHASSIS)
    q = np.zeros(n)
    for j, value in HANGING.items():
        if j in joints:
            q[list(joints).index(j)] = value
    w.set_state(q, np.zeros(n))
    return w


def run(w: MujocoWorld, seconds: float, tau=None, twist=(0.0, 0.0, 0.0)) -> None:
    tau = np.zeros(len(w.joints)) if tau is None else tau
    for _ in range(int(round(seconds / DT))):
        w.step(tau, twist, np.zeros(6), np.zeros(6))


def crouched(w: MujocoWorld) -> np.ndarray:
    q = np.zeros(len(w.joints))
    q[:4] = [1.0, -2.0, -1.0, 0.0]
    w.set_state(q, np.zeros(len(q)))
    return q


def test_engaged_brakes_hold_the_torso_under_gravity_and_released_ones_let_it_fall() -> None:
    w = world()
    q = crouched(w)
    w.set_brakes([True] * 4 + [False] * (len(w.joints) - 4))
    run(w, 2.0)
    assert np.max(np.abs(w.positions[:4] - q[:4])) < 1e-3      # a stiff spring's sag, not a creep
    w.set_brakes([False] * len(w.joints))
    run(w, 0.5)
    assert np.max(np.abs(w.positions[:4] - q[:4])) > 0.05


def test_a_brake_engages_where_the_joint_is_then() -> None:
    w = world()
    crouched(w)
    run(w, 0.2)                          # the torso sags, unbraked
    here = w.positions[:4].copy()
    w.set_brakes([True] * 4 + [False] * (len(w.joints) - 4))
    run(w, 1.0)
    assert np.max(np.abs(w.positions[:4] - here)) < 2e-3


def test_joint_stops_hold_a_joint_driven_into_them() -> None:
    w = world()
    tau = np.zeros(len(w.joints))
    i = w.joints.index(FINGERS[0])
    tau[i] = -50.0                       # close hard, both fingers (the tie)
    tau[i + 1] = -50.0
    run(w, 0.5, tau)
    assert w.positions[i] == pytest.approx(w.lower_limits[i], abs=1e-3)     # 50 N into a stiff spring
    assert w.positions[i + 1] == pytest.approx(w.positions[i], abs=1e-5)


def ramp(w: MujocoWorld, twist, seconds: float, now=(0.0, 0.0, 0.0), accel=(1.0, 1.0, 2.0)) -> tuple:
    """Drive for `seconds`, the modules' twist ramping from `now` to `twist` at `accel` (as chassis control
    ramps it); the twist reached."""
    cur, goal, step = np.array(now, float), np.array(twist, float), np.array(accel) * DT
    for _ in range(int(round(seconds / DT))):
        cur = cur + np.clip(goal - cur, -step, step)
        w.step(np.zeros(len(w.joints)), tuple(cur), np.zeros(6), np.zeros(6))
    return tuple(cur)


def test_the_base_follows_its_modules_and_stops_with_them() -> None:
    w = world()
    now = ramp(w, (0.3, 0.0, 0.0), 2.0)             # 0.3 s ramp at 1 m/s², then 1.7 s at 0.3 m/s
    x, y, yaw = w.base_pose()
    assert x == pytest.approx(0.3 * 1.7 + 0.045, abs=0.005)
    assert abs(y) < 0.002 and abs(yaw) < 0.002
    assert w.base_twist()[0] == pytest.approx(0.3, abs=0.005)
    ramp(w, (0.0, 0.0, 0.0), 0.35, now)
    assert abs(w.base_twist()[0]) < 0.01
    assert not w.traction.slipping


def test_the_base_turns_and_drives_in_its_own_frame() -> None:
    w = world()
    now = ramp(w, (0.0, 0.0, math.pi / 4), 2.0)
    now = ramp(w, (0.0, 0.0, 0.0), 0.5, now)        # 0.39 s ramps: pi/4 * (2 - 0.39) + 2 * 0.154 rad
    assert w.base_pose()[2] == pytest.approx(math.pi / 4 * (2.0 - 0.3927) + 2 * 0.1542, abs=0.01)
    yaw0 = w.base_pose()[2]
    x0, y0, _ = w.base_pose()
    now = ramp(w, (0.5, 0.0, 0.0), 1.5)
    ramp(w, (0.0, 0.0, 0.0), 0.5, now)              # 1.25 m ahead, along the heading
    x, y, _ = w.base_pose()
    assert math.hypot(x - x0, y - y0) == pytest.approx(0.5 * 1.5, abs=0.01)
    assert math.atan2(y - y0, x - x0) == pytest.approx(yaw0, abs=0.01)


def test_a_standing_base_is_held_where_it_is_whatever_pushes_it() -> None:
    w = world()
    now = ramp(w, (0.4, 0.0, 0.0), 1.0)
    ramp(w, (0.0, 0.0, 0.0), 0.5, now)              # the loose arms swing on at the stop
    here = np.array(w.base_pose())
    ramp(w, (0.0, 0.0, 0.0), 2.0)
    np.testing.assert_allclose(w.base_pose(), here, atol=1e-3)


def test_the_floors_grip_bounds_the_bases_acceleration_and_the_wheels_slip() -> None:
    w = world()
    w.set_brakes([True] * len(w.joints))
    speeds = []
    for _ in range(300):                              # asks for 5 m/s at once
        w.step(np.zeros(len(w.joints)), (5.0, 0.0, 0.0), np.zeros(6), np.zeros(6))
        speeds.append(w.base_twist()[0])
        assert w.traction.slipping or len(speeds) < 2
    # at most mu g (0.8 g): the wheels slip beyond it (measured 0.85 mu g: the grip's force is not always
    # all used, the servo's damping acts on the step's end velocity)
    assert 0.75 * 0.8 * G <= speeds[-1] / 0.3 <= 1.02 * 0.8 * G
    # what slipped is lost: stopping the modules stops the base where it is, it does not run on to
    # where the wheels' turns would have taken it
    w.step(np.zeros(len(w.joints)), (0.0, 0.0, 0.0), np.zeros(6), np.zeros(6))
    for _ in range(1500):
        w.step(np.zeros(len(w.joints)), (0.0, 0.0, 0.0), np.zeros(6), np.zeros(6))
    assert w.base_pose()[0] < 0.5 * 5.0 * 0.3


def test_an_imu_at_rest_feels_gravity_and_a_turning_base_turns_its_gyro() -> None:
    w = world()
    _, gyro, acc = w.imu("imu_chassis_link")
    np.testing.assert_allclose(acc, [0.0, 0.0, G], atol=0.05)
    np.testing.assert_allclose(gyro, 0.0, atol=1e-6)
    ramp(w, (0.0, 0.0, 0.4), 0.7)                   # 0.2 s ramp, then 0.5 s at 0.4 rad/s
    rot, gyro, _ = w.imu("imu_chassis_link")
    assert gyro[2] == pytest.approx(0.4, abs=0.01)
    assert math.atan2(rot[1, 0], rot[0, 0]) == pytest.approx(0.04 + 0.2, abs=0.01)
    with pytest.raises(KeyError):
        w.imu("no_such_frame")


def test_the_rooms_objects_rest_on_the_table_and_are_reported() -> None:
    w = world("room")
    before = {o.name: o for o in w.objects()}
    assert set(before) == {"red_box", "green_can", "blue_ball"}
    run(w, 1.0)
    for o in w.objects():
        assert o.position[2] == pytest.approx(before[o.name].position[2], abs=0.01)   # on the table top
        assert o.position[2] > 0.74
        assert np.linalg.norm(o.linear) < 0.01
        assert np.linalg.norm(o.quaternion) == pytest.approx(1.0, abs=1e-9)


def test_robot_contacts_name_the_link_and_what_it_touches_not_the_objects_on_the_table() -> None:
    w = world("room")
    run(w, 0.2)
    assert w.robot_contacts() == []          # the objects touch the table, the robot touches nothing
    m, d = w.model, w.data
    can = m.joint(m.body("green_can").jntadr[0])
    d.qpos[can.qposadr[0]:can.qposadr[0] + 3] = d.xpos[m.body("left_arm_link6").id]     # into the hand
    mujoco.mj_forward(m, d)
    touching = w.robot_contacts()
    assert ("left_arm_link6", "green_can") in touching
    assert {other for _, other in touching} == {"green_can"} and touching == sorted(set(touching))
    assert describe_contacts(touching).startswith("green_can (left_arm_link")
    assert describe_contacts([("b", "table"), ("a", "table"), ("c", "floor")]) == "floor (c); table (a, b)"
    d.qpos[can.qposadr[0]:can.qposadr[0] + 3] = (5.0, 5.0, 0.2)     # away, on the floor
    mujoco.mj_forward(m, d)
    assert w.robot_contacts() == [] and describe_contacts([]) == ""


def test_the_empty_world_has_no_objects() -> None:
    assert world("empty").objects() == []


def test_scenes_by_name_or_path_and_clear_errors() -> None:
    assert mjcf.scene_path("room") == mjcf.WORLDS_DIR / "room.xml"
    assert mjcf.scene_path(str(mjcf.WORLDS_DIR / "empty.xml")).name == "empty.xml"
    with pytest.raises(mjcf.WorldError, match="scenes here: .*room"):
        mjcf.scene_path("no_such_scene")
    with pytest.raises(mjcf.WorldError, match="expected <mujoco>"):
        mjcf.world_xml(URDF, "<robot/>")
    with pytest.raises(mjcf.WorldError, match="not XML"):
        mjcf.world_xml(URDF, "<mujoco>")
    with pytest.raises(mjcf.WorldError, match="no joint"):
        mjcf.world_xml(URDF, "<mujoco/>", brakes=["no_such_joint"])
    with pytest.raises(mjcf.WorldError):
        mjcf.load_world(mjcf.world_xml(URDF, "<mujoco><worldbody><geom type='box'/></worldbody></mujoco>"))


def test_friction_arrays_must_match_the_joints() -> None:
    with pytest.raises(ValueError, match="entries"):
        MujocoWorld(URDF, mjcf.scene_path("empty").read_text(), TORSO, np.zeros(3), np.zeros(4), np.zeros(4), DT)


# -- the bodies against a separate pinocchio model of the URDF --------------------------------------------
RAISED = {"left_arm_joint2": 1.0, "left_arm_joint3": -1.0, "right_arm_joint2": 1.0, "right_arm_joint3": -1.0}


def pinocchio_gravity(joints, q) -> np.ndarray:
    """Gravity torques of the fixed-base URDF at q (the chassis joints at 0), by pinocchio."""
    import pinocchio as pin
    model = pin.buildModelFromXML(URDF)
    data = model.createData()
    full = pin.neutral(model)
    for name, x in zip(joints, q):
        full[model.joints[model.getJointId(name)].idx_q] = x
    g = pin.computeGeneralizedGravity(model, data, full)
    return np.array([g[model.joints[model.getJointId(n)].idx_v] for n in joints])


def test_the_urdf_reaches_mujoco_as_pinocchio_reads_it() -> None:
    """Masses, joints, axes and frames: at a loaded pose (arms raised sideways, torso bent) MuJoCo's gravity
    torques are pinocchio's, and those torques applied hold the robot still (no acceleration)."""
    import mujoco
    joints = TORSO + ARM + FINGERS + RIGHT_ARM + [f.replace("left", "right") for f in FINGERS]
    w = world(joints=joints, damping=0.0)
    q = np.zeros(len(joints))
    q[:4] = [0.5, -0.8, 0.3, 0.2]
    for j, value in RAISED.items():
        q[joints.index(j)] = value
    w.set_state(q, np.zeros(len(q)))
    g = pinocchio_gravity(joints, q)
    assert np.max(np.abs(g)) > 5.0                               # a real load
    np.testing.assert_allclose(w.data.qfrc_bias[w._dadr], g, atol=1e-6)
    w.data.qfrc_applied[w._dadr] = g
    mujoco.mj_forward(w.model, w.data)
    # (the chassis and base joints, free here, couple in a little: 0.01 rad/s² at most)
    np.testing.assert_allclose(w.data.qacc[w._dadr], 0.0, atol=0.02)
    w.data.qfrc_applied[w._dadr] = 0.0
    mujoco.mj_forward(w.model, w.data)
    assert np.max(np.abs(w.data.qacc[w._dadr])) > 1.0            # unheld, it falls


def test_coulomb_friction_holds_below_its_torque_and_lets_go_above() -> None:
    joints = TORSO + ARM + RIGHT_ARM
    n = len(joints)
    coulomb = np.zeros(n)
    wrist = joints.index("left_arm_joint6")               # its axis along the forearm: no gravity on it
    coulomb[wrist] = 0.5
    w = MujocoWorld(URDF, mjcf.scene_path("empty").read_text(), joints, np.zeros(n), coulomb, np.full(n, 0.01),
                    DT, brakes=TORSO)
    q = np.zeros(n)
    for j, value in HANGING.items():
        q[joints.index(j)] = value
    w.set_state(q, np.zeros(n))
    w.set_brakes([True] * 4 + [False] * (n - 4))
    hold = pinocchio_gravity(joints, q)
    for torque, moves in ((0.3, False), (0.45, False), (0.8, True)):
        w.set_state(q, np.zeros(n))
        tau = hold.copy()
        tau[wrist] += torque
        run(w, 0.5, tau)
        turned = w.positions[wrist] - q[wrist]
        assert (turned > 0.5) if moves else (abs(turned) < 0.005), (torque, turned)


# -- pushes (apply_wrench) and ground truth -----------------------------------------------------------------
FLOATING_BOX = """<mujoco><worldbody><geom name="floor" type="plane" size="5 5 0.5"/>
  <body name="crate" pos="2 0 3"><freejoint/><geom type="box" size="0.1 0.2 0.3" mass="2"/></body>
</worldbody></mujoco>"""


def test_a_push_on_a_free_body_accelerates_it_as_f_equals_m_a_for_its_duration_only() -> None:
    n = len(TORSO)
    w = MujocoWorld(URDF, FLOATING_BOX, TORSO, np.zeros(n), np.zeros(n), np.zeros(n), DT, brakes=TORSO)
    w.set_brakes([True] * n)
    izz = 2.0 * (0.2 ** 2 + 0.4 ** 2) / 12.0                      # the box's inertia about z
    start = w.apply_wrench("crate", (10.0, 0.0, 0.0), (0.0, 0.0, 0.5), 0.25)
    assert start == pytest.approx(w.time) and w.pushing() == ["crate"]
    run(w, 0.25)                                                   # in the air: gravity and the push alone
    crate = w.objects()[0]
    assert w.pushing() == []
    assert crate.linear[0] == pytest.approx(10.0 / 2.0 * 0.25, rel=1e-6)       # Δv = F T / m
    assert crate.linear[2] == pytest.approx(-G * 0.25, rel=1e-3)
    assert crate.angular[2] == pytest.approx(0.5 / izz * 0.25, rel=1e-6)      # Δω = τ T / I
    run(w, 0.1)                                                    # the push has ended: nothing more
    after = w.objects()[0]
    assert after.linear[0] == pytest.approx(crate.linear[0], rel=1e-9)
    assert after.angular[2] == pytest.approx(crate.angular[2], rel=1e-9)


def test_a_push_on_the_robot_moves_its_base_while_it_lasts() -> None:
    """torso_link4 pushed sideways, the torso on its brakes: below the wheels' grip the base gives as a stiff
    spring and comes back once the push ends; beyond it the base slides (at most F - grip accelerates it), then
    the grip stops it again."""
    w = world("empty")
    w.set_brakes([j in TORSO for j in w.joints])
    run(w, 0.3)
    grip, mass = w.traction.force_limit, w.traction.inertia[0]
    for force, slides in ((0.25 * grip, False), (1000.0, True)):
        y0 = w.base_pose()[1]
        w.apply_wrench("torso_link4", (0.0, force, 0.0), (0.0, 0.0, 0.0), 0.3)
        run(w, 0.3)
        moved, speed = w.base_pose()[1] - y0, w.base_twist()[1]
        assert w.pushing() == []
        if slides:
            assert 0.5 * (force - grip) / mass * 0.3 < speed <= (force - grip) / mass * 0.3
        else:
            assert 0.0 < moved < 1e-3 and abs(speed) < 1e-3
        run(w, 0.3)
        assert abs(w.base_twist()[1]) < 1e-3                      # held again
        if not slides:
            assert abs(w.base_pose()[1] - y0) < 1e-5


def test_a_push_replaces_the_one_on_its_link_and_bad_pushes_are_refused() -> None:
    w = world("empty")
    w.apply_wrench("right_gripper_link", (0.0, 0.0, 5.0), (0.0, 0.0, 0.0), 1.0)
    w.apply_wrench("right_gripper_link", (0.0, 0.0, -5.0), (0.0, 0.0, 0.0), 0.01)     # replaces it
    assert w.pushing() == ["right_gripper_link"]
    run(w, 0.01)
    assert w.pushing() == [] and not w.data.xfrc_applied.any()
    for link, force, torque, duration, why in (
            ("no_such_link", (0, 0, 0), (0, 0, 0), 1.0, "no link"),
            ("", (0, 0, 0), (0, 0, 0), 1.0, "no link"),
            ("floor", (0, 0, 0), (0, 0, 0), 1.0, "no link"),                 # a world geom, not a body
            ("torso_link4", (float("nan"), 0, 0), (0, 0, 0), 1.0, "finite"),
            ("torso_link4", (0, 0, 0), (0, float("inf"), 0), 1.0, "finite"),
            ("torso_link4", (800, 800, 0), (0, 0, 0), 1.0, "beyond the cap, 1000 N"),
            ("torso_link4", (0, 0, 0), (0, 0, 301), 1.0, "beyond the cap, 300 N·m"),
            ("torso_link4", (0, 0), (0, 0, 0), 1.0, "3 numbers"),
            ("torso_link4", (0, 0, 0), "abc", 1.0, "3 numbers"),
            ("torso_link4", (0, 0, 0), (0, 0, 0), 0.0, "more than 0"),
            ("torso_link4", (0, 0, 0), (0, 0, 0), -1.0, "more than 0"),
            ("torso_link4", (0, 0, 0), (0, 0, 0), 10.5, "at most 10 s"),
            ("torso_link4", (0, 0, 0), (0, 0, 0), float("nan"), "more than 0"),
            ("torso_link4", (0, 0, 0), (0, 0, 0), "soon", "number of seconds")):
        with pytest.raises(ValueError, match=why):
            w.apply_wrench(link, force, torque, duration)
    assert w.pushing() == [] and not w.data.xfrc_applied.any()


def test_base_link_stands_on_its_wheels_above_the_floor() -> None:
    w = world("empty")
    run(w, 0.1)
    assert w.base_height() == pytest.approx(0.0415, abs=1e-9)     # the wheel axle's 0.0285 + the 0.070 radius


def test_the_motors_damping_pushes_a_joint_with_its_velocity_at_the_end_of_the_step() -> None:
    """`step`'s damping is integrated implicitly: joint i is pushed by tau[i] - damping[i] · v[i], v[i] its velocity
    at the step's end (the same step given that push as a torque ends at the same velocity), and it is stable
    at a damping where one explicit step would not be (the wrist's roll: an inertia of ~0.007 kg·m²).

    Without constraints: MuJoCo's solver finds the forces of the stops, ties and contacts on the undamped
    inertia, so where one acts with the damping the two steps differ by its share (docs/simulator.md)."""
    w = world()
    w.model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    n, zeros = len(w.joints), np.zeros(6)
    i = w.joints.index("left_arm_joint6")
    run(w, 0.05)
    v0 = w.velocities
    v0[i] = 2.0
    w.set_state(w.positions, v0)
    spec = int(mujoco.mjtState.mjSTATE_INTEGRATION)
    start = np.empty(mujoco.mj_stateSize(w.model, spec))
    mujoco.mj_getState(w.model, w.data, start, spec)
    tau = np.zeros(n)
    tau[i] = 1.0
    damping = [0.0] * n
    damping[i] = 50.0                    # 50 · 1 ms / 0.007 kg·m²: 7, where an explicit step needs < 2
    w.step(tau, (0.0, 0.0, 0.0), zeros, zeros, damping)
    v1 = w.velocities[i]
    assert 1.0 / 50.0 < v1 < 2.0                             # towards tau / damping, not past it
    mujoco.mj_setState(w.model, w.data, start, spec)
    pushed = tau.copy()
    pushed[i] = tau[i] - damping[i] * v1
    w.step(pushed, (0.0, 0.0, 0.0), zeros, zeros, [0.0] * n)
    assert w.velocities[i] == pytest.approx(v1, rel=1e-12)


def test_redo_takes_the_last_step_again_from_where_it_started_pushes_included() -> None:
    w = world()
    n, zeros = len(w.joints), np.zeros(6)
    i = w.joints.index("left_arm_joint4")
    run(w, 0.05)
    tau, damping = np.zeros(n), [0.0] * n
    tau[i], damping[i] = 0.5, 2.0
    w.apply_wrench("left_gripper_link", (20.0, 0.0, 0.0), (0.0, 0.0, 0.0), DT)    # for this one step
    w.step(tau, (0.0, 0.0, 0.0), zeros, zeros, damping)
    q1, v1, t1 = w.positions, w.velocities, w.time
    assert w.pushing() == []
    other = tau.copy()
    other[i] = -0.5
    w.redo(other, [0.0] * n)
    assert w.time == t1 and w.pushing() == [] and w.velocities[i] < v1[i]
    w.redo(tau, damping)                                      # the first step again, bit for bit
    assert np.array_equal(w.positions, q1) and np.array_equal(w.velocities, v1)
    assert not w.data.xfrc_applied.any()                      # the push is over
