"""The simulator's ground truth as the node publishes it (r1_sim.node): /sim/odom is base_link's true pose."""
from __future__ import annotations

from pathlib import Path

import pytest
import rospy
import yaml

from r1_can.config import parse_config
from r1_sim.node import odometry
from r1_sim.robot import SimRobot

SRC = Path(__file__).resolve().parents[3]


def test_sim_odom_is_base_link_above_the_floor() -> None:
    """Issue 28: /sim/odom named base_link as its child frame and put it on the floor (z = 0); the simulator
    stands it on its wheels, 0.0415 m up (the wheel axle 0.0285 m + the 0.070 m radius)."""
    params: dict = {}
    for name in ("r1_can/config/r1", "r1_can/config/r1_buses_sim", "r1_sim/config/sim"):
        params.update(yaml.safe_load((SRC / f"{name}.yaml").read_text()))
    params["scene"] = "empty"
    robot = SimRobot(parse_config(params), (SRC / "r1_description/urdf/r1_v2_1_0.urdf").read_text(), params, now=0.0)
    for _ in range(100):
        robot.step(1e-3)
    msg = odometry(robot, rospy.Time(12, 5))
    assert (msg.header.frame_id, msg.child_frame_id, msg.header.stamp) == ("sim_world", "base_link", rospy.Time(12, 5))
    p, q = msg.pose.pose.position, msg.pose.pose.orientation
    assert p.z == pytest.approx(0.0415, abs=1e-9)
    m, d = robot.world.model, robot.world.data
    assert (p.x, p.y, p.z) == pytest.approx(tuple(d.xpos[m.body("base_link").id]), abs=1e-9)
    assert (q.x, q.y, q.z, q.w) == pytest.approx((0.0, 0.0, 0.0, 1.0), abs=1e-9)
