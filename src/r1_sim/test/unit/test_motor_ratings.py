"""The motors' rated and peak torque (r1_can.damiao.MOTOR_TORQUES) against the URDF's efforts, and the
simulated robot's motors built with them (docs/protocol.md, docs/simulator.md)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from r1_can.config import MotorSpec, parse_config
from r1_can.damiao import MotorTorque
from r1_sim.robot import SimRobot

SRC = Path(__file__).resolve().parents[3]
URDF = SRC / "r1_description/urdf/r1_v2_1_0.urdf"


def layout() -> dict:
    out: dict = {}
    for p in ("r1_can/config/r1", "r1_can/config/r1_buses_sim", "r1_sim/config/sim"):
        out.update(yaml.safe_load((SRC / f"{p}.yaml").read_text()))
    return out


def efforts() -> dict[str, float]:
    """joint -> the URDF's effort limit (N·m, or N for the prismatic fingers)."""
    return {j.get("name"): float(j.find("limit").get("effort"))
            for j in ET.fromstring(URDF.read_text()).iter("joint") if j.find("limit") is not None}


def motors() -> dict[str, MotorSpec]:
    return {m.joint: m for g in parse_config(layout()).groups.values() for m in g.motors}


def test_every_arm_torso_and_wheel_joints_effort_is_its_motors_peak() -> None:
    effort = efforts()
    checked = [m for m in motors().values() if m.joint.startswith(("left_arm", "right_arm", "torso", "wheel"))]
    assert len(checked) == 12 + 4 + 3
    assert {m.joint: effort[m.joint] for m in checked} == {m.joint: m.torque.peak for m in checked}


def test_the_steering_effort_is_the_vendors_not_its_motors_peak() -> None:
    """Documented, not changed: the vendor URDF gives the steering joints 44 N·m, the DM8009 the layout
    names peaks at 40 (its TMAX is 54); the steering runs in force-position mode at 0.8 of TMAX."""
    effort, spec = efforts(), motors()
    for k in (1, 2, 3):
        joint = f"steer_motor_joint{k}"
        assert (spec[joint].model, effort[joint], spec[joint].torque.peak) == ("DM8009", 44.0, 40.0)


def test_what_the_gripper_motors_peak_gives_each_finger() -> None:
    """The finger joints' URDF effort is 100 N. The gripper's DM4310 (7 N·m peak, 3 rated) through the
    layout's linkage (metres_per_rad 0.04) pushes 175 N (75 N rated) on the two fingers together, the
    simulator giving each half: 87.5 N a finger at the peak, under the URDF's 100."""
    effort, spec = efforts(), motors()
    for side in ("left", "right"):
        m = spec[f"{side}_gripper_finger_joint1"]
        assert (m.model, m.metres_per_rad, m.torque) == ("DM4310", 0.04, MotorTorque(3.0, 7.0))
        assert m.torque.peak / m.metres_per_rad == pytest.approx(175.0)
        per_finger = m.torque.peak / m.metres_per_rad / 2
        assert per_finger == pytest.approx(87.5) and per_finger < effort[m.joint] == 100.0
        assert m.torque.rated / m.metres_per_rad == pytest.approx(75.0)


def test_the_simulated_robots_motors_have_their_models_rating() -> None:
    params = dict(layout(), scene="empty")
    robot = SimRobot(parse_config(params), URDF.read_text(), params, now=0.0)
    assert all(s.motor.rating == s.spec.torque for s in robot.slots)
    assert robot.slot("torso_joint2").motor.rating == MotorTorque(100.0, 200.0)
