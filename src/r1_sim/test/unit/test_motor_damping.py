"""The simulated motors' damping at the physics rate (issue 28): the MIT law's kd (and the speed loop's KP_ASR)
integrated implicitly by the world (SimMotor.drive, MujocoWorld.step's damping), the law's saturation at the
peak kept (SimMotor.redrive, MujocoWorld.redo).

The real motor runs its law at tens of kHz; applied once a physics step, explicitly, a damping is unstable
once kd x step / the joint's inertia exceeds 2 (a finger's kd above 0.72 N·m·s/rad at the motor, 0.45 kN·s/m
at the finger, at 500 Hz). Here, through CAN frames to SimRobot alone (no driver): a finger and a wrist given
the frame's largest kd stay within what their law asks and within their range at the light profile's 500 Hz
and the stock 1 kHz, and the ordinary gains move the robot as the explicit step did.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest
import yaml

from r1_can import damiao
from r1_can.config import parse_config
from r1_sim.robot import SimRobot, Slot

SRC = Path(__file__).resolve().parents[3]
URDF = (SRC / "r1_description/urdf/r1_v2_1_0.urdf").read_text()
LIMITS: Dict[str, Dict[str, float]] = {}         # joint -> its URDF limits (lower, upper, velocity, effort)
for _joint in ET.fromstring(URDF).iter("joint"):
    _limit = _joint.find("limit")
    if _limit is not None:
        LIMITS[str(_joint.get("name"))] = {k: float(v) for k, v in _limit.attrib.items()}
RATES = [500.0, 1000.0]           # physics [Hz]: the light profile's, the stock one
BUS_HZ = 100.0                    # commands a second (the light profile's arm bus)
FINGER = "left_gripper_finger_joint1"
FINGERS = [FINGER, "left_gripper_finger_joint2"]
WRIST = "left_arm_joint6"         # the wrist's roll: the smallest inertia of the arm's joints
R = 0.04                          # the gripper's metres per motor radian (r1.yaml)
KD_MAX = damiao.KD_MAX            # the MIT frame's largest kd [N·m·s/rad]
ARM_KP, ARM_KD = [140, 200, 120, 20, 20, 20], [5, 5, 5, 1, 1, 0.4]     # the joint tracker's (joint_tracker.yaml)
TORSO_KP, TORSO_KD = [500, 500, 400, 200], [5, 5, 5, 3]
GRIPPER_HOLD = (5.0, 0.2)         # hold_kp, hold_kd in motor units (r1.yaml)


def limit(joint: str, key: str) -> float:
    return LIMITS[joint][key]


def make_robot(hz: float, start: Optional[Dict[str, float]] = None) -> SimRobot:
    params: dict = {}
    for name in ("r1_can/config/r1", "r1_can/config/r1_buses_sim", "r1_sim/config/sim"):
        params.update(yaml.safe_load((SRC / f"{name}.yaml").read_text()))
    params.update({"scene": "empty", "physics_rate_hz": hz})
    params["start_pose"] = {**params["start_pose"], **(start or {})}
    return SimRobot(parse_config(params), URDF, params, now=0.0)


class Rig:
    """A SimRobot at `hz` driven through MIT frames at BUS_HZ: `commands` joint -> (p, v, kp, kd, t) in motor
    units (a gripper's motor radians), each motor enabled; the true positions of `watched` at every step."""

    def __init__(self, hz: float, start: Optional[Dict[str, float]] = None):
        self.robot = make_robot(hz, start)
        self.dt = 1.0 / hz
        self.frames: Dict[str, Tuple[str, int, bytes]] = {}

    def command(self, joint: str, p: float, v: float, kp: float, kd: float, t: float) -> None:
        slot = self.robot.slot(joint)
        if joint not in self.frames:
            list(self.robot.handle(slot.bus, slot.spec.esc_id, damiao.ENABLE))
        self.frames[joint] = (slot.bus, slot.spec.esc_id, damiao.encode_mit(p, v, kp, kd, t, slot.spec.limits))

    def hold_arm(self, side: str = "left") -> None:
        """The arm's joints held where they are with the tracker's gains."""
        here = self.robot.joint_positions()
        for k in range(6):
            joint = f"{side}_arm_joint{k + 1}"
            self.command(joint, here[joint], 0.0, ARM_KP[k], ARM_KD[k], 0.0)

    def run(self, seconds: float, watched: Sequence[str]) -> np.ndarray:
        index = [self.robot.body_joints.index(j) for j in watched]
        every = int(round(1.0 / (BUS_HZ * self.dt)))
        out = []
        for k in range(int(round(seconds / self.dt))):
            if k % every == 0:
                for bus, esc, data in self.frames.values():
                    list(self.robot.handle(bus, esc, data))
            self.robot.step(self.dt)
            out.append(self.robot.world.positions[index])
        return np.array(out)


def speed(q: np.ndarray, dt: float) -> np.ndarray:
    """|Δq| / Δt at every step, per column."""
    return np.abs(np.diff(q, axis=0)) / dt


def reversals(q: np.ndarray) -> int:
    """How often the motion turns back (a chattering joint turns back every step or two)."""
    dq = np.diff(q)
    dq = dq[np.abs(dq) > 1e-9]
    return int(np.sum(np.diff(np.sign(dq)) != 0))


# -- a finger given the frame's largest kd ------------------------------------------------------------------
@pytest.mark.parametrize("hz", RATES)
@pytest.mark.parametrize("closing", [True, False])
def test_a_finger_given_the_largest_kd_runs_at_its_v_des_and_no_faster(hz: float, closing: bool) -> None:
    """kd 5 (3.1 kN·s/m at the finger) and v_des at the finger's limit, no stiffness: the finger runs at its
    limit, smoothly (no turning back), across its range."""
    v_lim = limit(FINGER, "velocity")
    start = 0.05 if closing else 0.0
    rig = Rig(hz, {f: start for f in FINGERS})
    rig.hold_arm()
    sign = -1.0 if closing else 1.0
    rig.command(FINGER, 0.0, sign * v_lim / R, 0.0, KD_MAX, 0.0)
    q = rig.run(0.18, [FINGER])[:, 0]                 # 45 mm at the limit: short of the far stop
    s = speed(q[:, None], rig.dt)[:, 0]
    assert s.max() <= 1.005 * v_lim, f"{s.max() / v_lim:.3f}x the limit"
    assert s[-20:].min() >= 0.95 * v_lim              # at its v_des
    assert reversals(q) == 0
    assert 0.0 <= q.min() and q.max() <= 0.05


@pytest.mark.parametrize("hz", RATES)
@pytest.mark.parametrize("closing", [True, False])
def test_a_finger_given_the_largest_kd_and_the_far_end_of_its_range_arrives_there_and_no_further(
        hz: float, closing: bool) -> None:
    """kd 5 with p_des at the far end of the range and the stiffness that starts the finger at its limit
    (kp (p_des - p) / kd = the limit): it slows as it nears, as the law asks, and stops at the end without
    passing it."""
    v_lim = limit(FINGER, "velocity")
    start, end = (0.05, 0.0) if closing else (0.0, 0.05)
    rig = Rig(hz, {f: start for f in FINGERS})
    rig.hold_arm()
    kp = KD_MAX * (v_lim / R) / (abs(end - start) / R)
    rig.command(FINGER, end / R, 0.0, kp, KD_MAX, 0.0)
    q = rig.run(1.5, [FINGER])[:, 0]
    assert speed(q[:, None], rig.dt).max() <= 1.005 * v_lim
    assert reversals(q) == 0
    assert -0.0001 <= q.min() and q.max() <= 0.0501   # [m]: not past the end
    assert abs(q[-1] - end) < 0.0005


@pytest.mark.parametrize("hz", RATES)
def test_a_finger_given_the_frames_largest_kd_and_v_des_is_never_faster_than_its_law_asks(hz: float) -> None:
    """kd 5 and v_des at the frame's largest (30 rad/s: 1.2 m/s at the finger, 4.8x its limit): what the law
    asks, no faster, and without turning back."""
    rig = Rig(hz, {f: 0.05 for f in FINGERS})
    rig.hold_arm()
    v_des = damiao.MOTOR_PRESETS["DM4310"].vmax
    rig.command(FINGER, 0.0, -v_des, 0.0, KD_MAX, 0.0)
    q = rig.run(0.03, [FINGER])[:, 0]                 # 36 mm at 1.2 m/s
    s = speed(q[:, None], rig.dt)[:, 0]
    assert s.max() <= 1.001 * v_des * R
    assert reversals(q) == 0 and q.min() >= 0.0


@pytest.mark.parametrize("hz", RATES)
def test_a_finger_in_force_position_mode_runs_at_its_speed_limit(hz: float) -> None:
    """Damiao's force-position mode to the far end at the finger's limit: its speed loop's KP_ASR (sim.yaml:
    1 N·m·s/rad, 0.63 kN·s/m at the finger) is a damper too."""
    rig = Rig(hz, {f: 0.05 for f in FINGERS})
    slot = rig.robot.slot(FINGER)
    esc = slot.spec.esc_id
    list(rig.robot.handle(slot.bus, damiao.REGISTER_ID, damiao.encode_register_write(
        esc, damiao.Register.CTRL_MODE, int(damiao.ControlMode.FORCE_POS))))
    list(rig.robot.handle(slot.bus, esc, damiao.ENABLE))
    v_lim = limit(FINGER, "velocity")
    rig.frames[FINGER] = (slot.bus, damiao.command_id(esc, damiao.ControlMode.FORCE_POS),
                          damiao.encode_force_pos(0.0, v_lim / R, 1.0))
    q = rig.run(0.5, [FINGER])[:, 0]
    assert speed(q[:, None], rig.dt).max() <= 1.005 * v_lim
    assert reversals(q) == 0
    assert -0.0001 <= q.min() and abs(q[-1]) < 0.0002


# -- a wrist given the frame's largest kd ------------------------------------------------------------------
@pytest.mark.parametrize("hz", RATES)
def test_a_wrist_given_the_largest_kd_runs_at_its_v_des_and_stops_at_the_far_end_of_its_range(hz: float) -> None:
    v_lim, upper = limit(WRIST, "velocity"), limit(WRIST, "upper")
    rig = Rig(hz)
    rig.hold_arm()
    rig.command(WRIST, 0.0, v_lim, 0.0, KD_MAX, 0.0)
    q = rig.run(0.4, [WRIST])[:, 0]                   # 2 rad at the limit: short of the stop
    s = speed(q[:, None], rig.dt)[:, 0]
    assert s.max() <= 1.005 * v_lim and s[-20:].min() >= 0.95 * v_lim
    assert reversals(q) == 0
    kp = KD_MAX * v_lim / (upper - q[-1])             # then the far end of the range, from where it is
    rig.command(WRIST, upper, 0.0, kp, KD_MAX, 0.0)
    q = rig.run(1.5, [WRIST])[:, 0]
    assert speed(q[:, None], rig.dt).max() <= 1.005 * v_lim
    assert reversals(q) == 0
    assert q.max() <= upper + 0.001 and abs(q[-1] - upper) < 0.01


# -- the law's saturation ----------------------------------------------------------------------------------
@pytest.mark.parametrize("hz", RATES)
def test_a_stiff_damper_pushed_beyond_its_motors_peak_gives_the_peak_and_no_more(hz: float) -> None:
    """The arm hanging, held with the tracker's gains (the shoulder's kd 5), its hand pushed forward with 150 N:
    beyond the first shoulder motor's peak, which it gives (a step over which the law saturates is taken
    saturated), and never more (the posture tests' bar)."""
    rig = Rig(hz)
    rig.hold_arm()
    rig.run(0.2, [])
    shoulder = rig.robot.slot("left_arm_joint1").motor
    peak = shoulder.rating.peak
    rig.robot.apply_wrench("left_gripper_link", (150.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.5)
    torques = []
    every = int(round(1.0 / (BUS_HZ * rig.dt)))
    for k in range(int(round(0.8 / rig.dt))):
        if k % every == 0:
            for bus, esc, data in rig.frames.values():
                list(rig.robot.handle(bus, esc, data))
        rig.robot.step(rig.dt)
        torques.append(abs(shoulder.last_torque))
    assert max(torques) <= peak * (1 + 1e-12)
    assert max(torques) == pytest.approx(peak)
    assert rig.robot.redone_steps > 0


# -- the ordinary gains: the motion of the explicit step --------------------------------------------------
def explicit_step(robot: SimRobot, dt: float) -> None:
    """The simulator's step as it was: every body motor's law evaluated once at the step's start
    (SimMotor.output) and applied as it is (no chassis motor is driven here: the chassis stands)."""
    robot.time += dt
    now = robot.time
    tau = [0.0] * len(robot.body_joints)
    brakes = [False] * len(robot.body_joints)          # an unpowered torso motor's brake
    for s in robot.slots:
        if s.kind == "body" and robot.config.groups[s.group].kind == "torso":
            brakes[s.index] = not s.motor.powered
    robot.world.set_brakes(brakes)
    for s in robot.slots:
        if s.kind == "body":
            tau[s.index] = s.motor.output(now)
        elif s.kind == "gripper":
            tau[s.index] = tau[s.index2] = s.motor.output(now) / (2 * s.spec.metres_per_rad)
    chassis = robot.chassis                            # unpowered: it stays where it is
    assert chassis is not None
    chassis.step([0.0] * 3, [0.0] * 3, dt)
    steer_q, steer_v, wheel_q, wheel_v = chassis.module_state()
    robot.world.step(tau, chassis.base_twist(), steer_q + wheel_q, steer_v + wheel_v)
    q, v = robot.world.positions.tolist(), robot.world.velocities.tolist()
    for s in robot.slots:
        if s.kind == "body":
            s.motor.set_state(q[s.index], v[s.index], now, dt)
        elif s.kind == "gripper":
            r = s.spec.metres_per_rad
            s.motor.set_state(0.5 * (q[s.index] + q[s.index2]) / r, 0.5 * (v[s.index] + v[s.index2]) / r, now, dt)


def tracked_move(hz: float, explicit: bool, damped: bool = True) -> np.ndarray:
    """Both arms, their grippers and the torso following a 1 s smooth move (0.3 rad a joint, 20 mm a
    finger, 0.1 rad a torso joint) with the tracker's gains (without kd: `damped` False) and the grippers'
    hold gains, commanded at BUS_HZ, then holding; every body joint's true position at every step."""
    robot = make_robot(hz)
    here = robot.joint_positions()
    moves: List[Tuple[Slot, float, float, float, float]] = []   # (motor, kp, kd, travel, joint units a motor unit)
    for side, sign in (("left", 1.0), ("right", -1.0)):
        for k in range(6):
            moves.append((robot.slot(f"{side}_arm_joint{k + 1}"), ARM_KP[k], ARM_KD[k], sign * 0.3, 1.0))
        moves.append((robot.slot(f"{side}_gripper_finger_joint1"), *GRIPPER_HOLD, 0.02, R))
    for k in range(4):
        moves.append((robot.slot(f"torso_joint{k + 1}"), TORSO_KP[k], TORSO_KD[k], 0.1, 1.0))
    for slot, *_ in moves:
        list(robot.handle(slot.bus, slot.spec.esc_id, damiao.ENABLE))
    dt = 1.0 / hz
    every = int(round(1.0 / (BUS_HZ * dt)))
    out = []
    for k in range(int(round(2.0 * hz))):
        if k % every == 0:
            x = min(k * dt, 1.0)
            along, speed_along = 3 * x * x - 2 * x ** 3, 6 * x - 6 * x * x
            for slot, kp, kd, amp, unit in moves:
                p0 = here[slot.spec.joint] / unit
                data = damiao.encode_mit(p0 + amp / unit * along, amp / unit * speed_along, kp,
                                         kd if damped else 0.0, 0.0, slot.spec.limits)
                list(robot.handle(slot.bus, slot.spec.esc_id, data))
        if explicit:
            explicit_step(robot, dt)
        else:
            robot.step(dt)
        out.append(robot.world.positions)
    return np.array(out)


def test_the_ordinary_gains_move_the_robot_as_the_explicit_step_did() -> None:
    """The tracker's arm and torso gains and the gripper's hold gains: every joint within 0.5 mrad (m, for a
    finger) of the explicit step's path at 500 Hz, 0.25 at 1 kHz, the difference halving with the step: the
    two steps differ by the damping's first-order term, not in what they integrate."""
    worst = {}
    for hz in RATES:
        diff = np.abs(tracked_move(hz, explicit=False) - tracked_move(hz, explicit=True)).max(axis=0)
        worst[hz] = diff.max()
        assert diff.max() <= (0.5e-3 if hz == 500.0 else 0.25e-3), (hz, diff.round(6))
    assert 1.5 <= worst[500.0] / worst[1000.0] <= 2.5, worst


def test_without_damping_the_motion_is_the_explicit_steps_bit_for_bit() -> None:
    """kd 0: the law's damping is all the change touches."""
    assert np.array_equal(tracked_move(500.0, explicit=False, damped=False),
                          tracked_move(500.0, explicit=True, damped=False))
