"""The scripted demo's waits: one that times out says how much of the stack's clock passed, and a torso
move that never arrives says where the torso is, what its motors push and where the base stands (a CI
run once timed out on the torso with nothing more to go on)."""
from __future__ import annotations

import math
from typing import Any

import pytest
import rospy
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState

from mobiman.demo.pick import PICK_TORSO
from mobiman.demo.scripted import Demo, DemoConfig


class Held:
    """A received message as the demo's subscribers hold it (`get()` returns the latest)."""

    def __init__(self, msg: Any):
        self.msg = msg

    def get(self) -> Any:
        return self.msg


def odometry(x: float, y: float, yaw: float) -> Odometry:
    m = Odometry()
    m.pose.pose.position.x, m.pose.pose.position.y = x, y
    m.pose.pose.orientation.z, m.pose.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    return m


@pytest.fixture
def demo() -> Demo:
    rospy.rostime.set_rostime_initialized(True)        # the stack's clock: wall time, no /clock here
    d = Demo.__new__(Demo)                             # no node: only the waits and the reports
    d.cfg = DemoConfig(wall_timeout=0.2)
    d.log = lambda line: None
    d.torso_fb = Held(JointState(position=[1.2, -2.0, -0.8, 0.0], effort=[99.64, 20.0, 10.0, 0.0]))
    d.truth = Held(odometry(0.3, -0.1, math.radians(10.0)))
    d.odom = Held(odometry(0.0, 0.0, 0.0))
    return d


def test_a_torso_move_that_never_arrives_says_where_the_torso_and_the_base_are(demo) -> None:
    with pytest.raises(TimeoutError) as e:
        demo._until(lambda: False, "torso lean", detail=lambda: demo._torso_report(PICK_TORSO))
    msg = str(e.value)
    assert msg.startswith("torso lean: not within 0.2 s of wall time (0.")
    assert "s of the stack's clock); torso at [1.2, -2.0, -0.8, 0.0] ([-0.2, 0.2, 0.0, 0.0] off the target)" in msg
    assert "efforts [99.6, 20.0, 10.0, 0.0] N·m" in msg
    assert msg.endswith("base at x 0.300 m, y -0.100 m, yaw 10.0 deg (ground truth)")


def test_off_the_simulator_the_base_is_from_odometry_and_missing_efforts_are_said(demo) -> None:
    demo.truth = Held(None)
    demo.torso_fb = Held(JointState(position=list(PICK_TORSO)))
    report = demo._torso_report(PICK_TORSO)
    assert "[0.0, 0.0, 0.0, 0.0] off the target" in report
    assert "efforts [nan, nan, nan, nan]" in report
    assert report.endswith("(odometry)")


def test_a_wait_that_is_met_returns_without_a_report(demo) -> None:
    asked = []
    demo._until(lambda: True, "nothing", detail=lambda: asked.append(1) or "")
    assert asked == []
