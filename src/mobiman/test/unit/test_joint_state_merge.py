"""Feedback -> /joint_states merge: gripper mirroring and wheel-angle integration."""
from __future__ import annotations

import math

import pytest

from mobiman.estimation.joint_state_merge import JointStateMerger


def test_arm_gripper_finger_is_mirrored_and_groups_merge() -> None:
    m = JointStateMerger(["w1", "w2", "w3"], 0.07)
    m.add_group(["left_arm_joint1", "left_gripper_finger_joint1"], [0.5, 0.02], [0.1, 0.0])
    m.add_group(["torso_joint1"], [0.3], [])
    names, pos, vel = m.joint_state()
    d = dict(zip(names, pos))
    assert d["left_gripper_finger_joint2"] == d["left_gripper_finger_joint1"] == 0.02
    assert d["left_arm_joint1"] == 0.5 and d["torso_joint1"] == 0.3
    assert dict(zip(names, vel))["torso_joint1"] == 0.0
    assert names == sorted(names)


def test_wheel_angles_integrate_speed_over_radius_and_ignore_gaps() -> None:
    m = JointStateMerger(["w1", "w2", "w3"], 0.07)
    m.add_chassis(["s1", "s2", "s3"], [0.1, 0.2, 0.3], [0.7, 0.0, -0.7], stamp=10.0)
    for k in range(1, 11):
        m.add_chassis(["s1", "s2", "s3"], [0.1, 0.2, 0.3], [0.7, 0.0, -0.7], stamp=10.0 + 0.01 * k)
    d = dict(zip(*m.joint_state()[:2]))
    assert d["w1"] == pytest.approx(1.0, rel=1e-9)            # 0.1 s at 10 rad/s
    assert d["w3"] == pytest.approx(-1.0, rel=1e-9) and d["w2"] == 0.0
    assert d["s2"] == 0.2
    m.add_chassis(["s1", "s2", "s3"], [0.1, 0.2, 0.3], [0.7, 0.0, -0.7], stamp=20.0)   # 10 s gap
    assert dict(zip(*m.joint_state()[:2]))["w1"] == pytest.approx(2.0, rel=1e-9)       # capped at 0.1 s
    assert math.isfinite(dict(zip(*m.joint_state()[:2]))["w1"])


def test_entries_a_publisher_made_up_never_reach_the_merged_state() -> None:
    """Names that are no URDF joint (they would pile up here and reach robot_state_publisher),
    values far beyond a joint's range and wheel speeds no wheel has are ignored and counted."""
    m = JointStateMerger(["w1", "w2", "w3"], 0.07, {"left_arm_joint1": (-2.9, 2.9), "s1": (-1.6, 1.6),
                                                   "w1": (-math.inf, math.inf), "w2": (-math.inf, math.inf),
                                                   "w3": (-math.inf, math.inf)})
    m.add_group(["left_arm_joint1", "evil_joint", "left_arm_joint1"], [0.5, 1.0, 1e308], [0.0, 0.0, 0.0])
    m.add_chassis(["s1", "nope"], [0.1, 0.0], [0.0, 0.0, 0.0], stamp=1.0)
    m.add_chassis(["s1"], [0.1], [1e308, 0.0, 0.0], stamp=1.01)
    m.add_chassis(["s1"], [0.1], [float("nan"), 0.0, 0.0], stamp=1.02)
    names, pos, _ = m.joint_state()
    d = dict(zip(names, pos))
    assert set(d) == {"left_arm_joint1", "s1", "w1", "w2", "w3"}
    assert d["left_arm_joint1"] == 0.5 and all(math.isfinite(x) for x in pos)
    assert m.ignored == 5
