"""hdas.group_codec: replies decoded into joint units, the frames of a cycle encoded, and the
error conditions of each motor (never answered, silent, beyond a limit, a jump, a fault)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from hdas.command_limits import Command, JointLimitArrays
from hdas.errors import Condition
from hdas.group_codec import GROUP_SILENCE, MISSED_REPLIES, GroupCodec
from r1_can import damiao
from r1_can.config import MotorSpec
from r1_can.damiao import MOTOR_PRESETS, ControlMode, Status

MOTORS = (MotorSpec("joint1", 0x01, 0x11, "DM4340", MOTOR_PRESETS["DM4340"]),
          MotorSpec("finger", 0x02, 0x12, "DM4310", MOTOR_PRESETS["DM4310"], metres_per_rad=0.04))
LIMITS = JointLimitArrays(np.array([-1.0, 0.0]), np.array([1.0, 0.05]), np.array([2.0, 0.1]), np.array([20.0, 5.0]))


def reply(codec: GroupCodec, i: int, now: float, p: float = 0.0, v: float = 0.0, tau: float = 0.0,
          status: Status = Status.ENABLED) -> None:
    """Motor i answers with joint position p, velocity v and torque tau (joint units)."""
    m, r = MOTORS[i], codec.ratio[i]
    codec.decode(i, damiao.encode_feedback(m.esc_id, int(status), p / r, v / r, tau * r, 40, 45, m.limits), now)


def test_a_reply_is_decoded_into_joint_units() -> None:
    codec = GroupCodec(MOTORS, LIMITS)
    assert codec.index(0x12) == 1 and codec.index(0x02) is None      # answers on its mst id
    assert not codec.ready and math.isnan(codec.position[1])
    codec.sent()
    reply(codec, 1, now=0.5, p=0.02, v=0.04, tau=2.0)
    assert codec.position[1] == pytest.approx(0.02, abs=1e-5)          # finger travel [m]
    assert codec.velocity[1] == pytest.approx(0.04, abs=0.005)
    assert codec.effort[1] == pytest.approx(2.0, abs=0.15)             # N at the finger (12-bit torque)
    assert (codec.t_mos[1], codec.t_rotor[1], codec.stamp[1]) == (40, 45, 0.5)
    assert codec.status[1] == Status.ENABLED and codec.unanswered.tolist() == [1, 0]
    assert codec.status_name(1) == "ENABLED" and codec.status_name(0) == "no reply"
    reply(codec, 0, now=0.5)
    assert codec.ready


def test_conditions_of_silent_motors() -> None:
    codec = GroupCodec(MOTORS, LIMITS, reply_timeout=0.05)
    assert codec.conditions(0.0) == [{Condition.DISCONNECTED}, {Condition.DISCONNECTED}]
    reply(codec, 0, 0.0)
    reply(codec, 1, 0.0)
    assert codec.conditions(0.0) == [set(), set()]
    now = 0.0
    for _ in range(MISSED_REPLIES):                  # motor 1 stops answering, motor 0 goes on
        now += 0.03
        codec.sent()
        reply(codec, 0, now)
    assert codec.conditions(now) == [set(), {Condition.RECEIVE_TIMEOUT}]
    # a stall of the driver delays every reply alike: no silent motor until the whole group is silent
    codec = GroupCodec(MOTORS, LIMITS, reply_timeout=0.05)
    reply(codec, 0, 0.0)
    reply(codec, 1, 0.0)
    for _ in range(MISSED_REPLIES):
        codec.sent()
    assert codec.conditions(GROUP_SILENCE - 0.01) == [set(), set()]
    assert codec.conditions(GROUP_SILENCE + 0.01) == [{Condition.RECEIVE_TIMEOUT}] * 2


def test_conditions_of_the_motors_state() -> None:
    codec = GroupCodec(MOTORS, LIMITS)
    reply(codec, 0, 0.0, p=1.1, v=2.5, tau=22.0)                      # beyond every limit
    reply(codec, 1, 0.0, status=Status.OVER_CURRENT)
    c = codec.conditions(0.0)
    assert c[0] == {Condition.POSITION_EXCEEDED, Condition.VELOCITY_EXCEEDED, Condition.TORQUE_EXCEEDED}
    assert c[1] == {Condition.OVER_CURRENT}
    reply(codec, 0, 0.0, p=1.015, v=2.3, tau=20.9)                     # within the tolerances
    assert codec.conditions(0.0)[0] == set()
    reply(codec, 1, 0.0, status=Status.DISABLED)
    assert codec.conditions(0.0)[1] == {Condition.DISABLED}


def test_a_position_jump_is_reported_once() -> None:
    codec = GroupCodec(MOTORS, LIMITS)
    reply(codec, 0, 0.0, p=0.0)
    reply(codec, 0, 0.002, p=0.7)                                     # 0.7 rad in 2 ms
    assert Condition.POSITION_JUMP in codec.conditions(0.002)[0]
    assert Condition.POSITION_JUMP not in codec.conditions(0.004)[0]
    reply(codec, 0, 0.5, p=0.0)                                       # after a pause: no jump
    assert Condition.POSITION_JUMP not in codec.conditions(0.5)[0]


def test_mit_and_force_position_frames_carry_the_command_in_motor_units() -> None:
    codec = GroupCodec(MOTORS, LIMITS)
    cmd = Command(np.array([0.5, 0.02]), np.array([1.0, 0.04]), np.array([100.0, 1600.0]), np.array([2.0, 160.0]),
                  np.array([3.0, 4.0]), 0.0)
    (id0, f0), (id1, f1) = codec.encode_mit(cmd)
    assert (id0, id1) == (0x01, 0x02)
    finger = damiao.decode_mit(f1, MOTORS[1].limits)
    assert finger.p == pytest.approx(0.5, abs=1e-3) and finger.v == pytest.approx(1.0, abs=0.02)
    assert finger.kp == pytest.approx(1600 * 0.04 ** 2, abs=0.13)     # (12-bit gains: 500 / 4095 a step)
    assert finger.kd == pytest.approx(160 * 0.04 ** 2, abs=0.002)
    assert finger.tau == pytest.approx(4.0 * 0.04, abs=0.01)
    assert damiao.decode_mit(f0, MOTORS[0].limits).p == pytest.approx(0.5, abs=1e-3)
    pid = codec.encode_pid(Command(np.array([0.5, 0.02]), np.array([1.0, 0.04]), np.zeros(2), np.zeros(2),
                                   np.array([0.3, 1.0]), 0.0))
    assert [i for i, _ in pid] == [damiao.command_id(m.esc_id, ControlMode.FORCE_POS) for m in MOTORS]
    c = damiao.decode_force_pos(pid[1][1])
    assert (c.p, c.v_limit, c.torque_ratio) == pytest.approx((0.5, 1.0, 1.0), abs=1e-3)


def test_status_requests_disable_frames_and_swerve_frames() -> None:
    codec = GroupCodec(MOTORS, LIMITS)
    assert codec.status_requests() == [(damiao.REGISTER_ID, damiao.encode_status_request(m.esc_id)) for m in MOTORS]
    assert codec.disable_frames() == [(0x01, damiao.DISABLE), (0x02, damiao.DISABLE)]
    frames = codec.encode_swerve(np.array([0.3]), np.array([3.0]), [0.8], np.array([-10.0]))   # steer 1, wheel 2
    assert [i for i, _ in frames] == [damiao.command_id(0x01, ControlMode.FORCE_POS),
                                      damiao.command_id(0x02, ControlMode.VEL)]
    steer = damiao.decode_force_pos(frames[0][1])
    assert (steer.p, steer.v_limit, steer.torque_ratio) == pytest.approx((0.3, 3.0, 0.8), abs=1e-3)
    assert damiao.decode_vel(frames[1][1]) == pytest.approx(-10.0)
