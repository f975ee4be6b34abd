"""The fuzz test's message generator (r1_startup.fuzz): every message it makes can be published."""
from __future__ import annotations

import math
from collections import Counter
from io import BytesIO

import pytest
from geometry_msgs.msg import PoseStamped, TransformStamped, Twist
from hdas_msg.msg import controller_signal_stamped, motor_control
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float32
from tf2_msgs.msg import TFMessage

from r1_startup.fuzz import CATEGORIES, LARGEST_STAMP, MessageFuzzer, fields_of

TEMPLATES = [
    JointState(name=["left_arm_joint1", "left_arm_joint2"], position=[0.1, 0.2], velocity=[1.0, 1.0]),
    motor_control(p_des=[0.0] * 6, v_des=[0.0] * 6, kp=[100.0] * 6, kd=[2.0] * 6, t_ff=[0.0] * 6),
    PoseStamped(), Twist(), Float32(60.0), Bool(True), controller_signal_stamped(), Odometry(),
    TFMessage(transforms=[TransformStamped()]),
]


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t._type)
def test_every_message_serialises_and_every_category_comes(template):
    fuzz = MessageFuzzer(type(template), template, seed=7)
    seen = Counter()
    for _ in range(400):
        category, msg = next(fuzz)
        seen[category] += 1
        msg.serialize(BytesIO())          # what a publisher does: raises on a value the type cannot carry
    assert set(seen) == set(CATEGORIES)


def test_the_same_seed_gives_the_same_messages():
    a = MessageFuzzer(JointState, TEMPLATES[0], seed=3)
    b = MessageFuzzer(JointState, TEMPLATES[0], seed=3)
    for _ in range(50):
        (ca, ma), (cb, mb) = next(a), next(b)
        assert ca == cb and repr(ma) == repr(mb)


def test_the_categories_do_what_they_say():
    template = TEMPLATES[0]
    made = {}
    fuzz = MessageFuzzer(JointState, template, seed=1)
    for _ in range(500):
        category, msg = next(fuzz)
        made.setdefault(category, []).append(msg)
    assert any(math.isnan(x) or math.isinf(x) for m in made["nonfinite"] for x in m.position + m.velocity)
    assert any(abs(x) == 1e308 for m in made["huge"] for x in m.position + m.velocity + m.effort)
    assert any(len(m.position) == 1000 for m in made["length"] + [template]) or any(
        len(m.name) == 1000 or len(m.velocity) == 1000 or len(m.effort) == 1000 for m in made["length"])
    assert any((m.header.stamp.secs, m.header.stamp.nsecs) == LARGEST_STAMP for m in made["stamp"])
    assert any(len(set(m.name)) < len(m.name) or "no_such_joint" in m.name for m in made["names"])
    assert all(m == template for m in made["valid"])


def test_fields_are_found_through_nested_messages():
    paths = {f.path for f in fields_of(Odometry())}
    assert ("header", "stamp") in paths and ("pose", "pose", "orientation", "w") in paths
    assert ("pose", "covariance") in paths


def test_the_limit_checker_judges_finite_values_ranges_commands_and_strokes():
    from r1_startup.fuzz import LimitChecker
    c = LimitChecker({"j1": (-1.0, 1.0), "j2": (0.0, 2.0)}, {"/motion_control/x": ["j1", "j2"]},
                     frozenset({"/hdas/feedback_gripper_left"}))
    assert c.check("/hdas/a", JointState(name=["j1", "j2"], position=[0.5, 2.01])) == []
    bad = c.check("/hdas/a", JointState(name=["j1", "j2"], position=[1.5, float("nan")]))
    assert len(bad) == 2 and "j1 at 1.5 beyond" in bad[1] and "non-finite position[1]" in bad[0]
    assert c.check("/motion_control/x", motor_control(p_des=[0.0, 3.0]))[0].startswith("/motion_control/x: p_des of j2")
    assert c.check("/hdas/feedback_gripper_left", JointState(name=["f"], position=[60.0])) == []
    assert c.check("/hdas/feedback_gripper_left", JointState(name=["f"], position=[150.0]))


def test_the_speed_checker_takes_finite_differences():
    from r1_startup.fuzz import SpeedChecker
    s = SpeedChecker({"j1": 3.0}, tolerance=1.1)
    assert s.sample(0.0, ["j1"], [0.0]) == []
    assert s.sample(0.01, ["j1"], [0.03]) == []                   # 3 rad/s: at the limit
    assert s.sample(0.02, ["j1"], [0.07])                          # 4 rad/s
    assert s.fastest["j1"] == pytest.approx(4.0 / 3.0)
    assert s.sample(0.02, ["j1"], [5.0]) == []                     # the same stamp: no speed


def test_the_checkers_take_a_joints_own_tolerance():
    """The fingers' bar is closer than the others' (docs/safety.md, section 7)."""
    from r1_startup.fuzz import LimitChecker, SpeedChecker
    c = LimitChecker({"j1": (-1.0, 1.0), "f": (0.0, 0.05)}, {}, tolerances={"f": 0.001})
    assert c.check("/sim/joint_states", JointState(name=["j1", "f"], position=[1.015, 0.0509])) == []
    bad = c.check("/sim/joint_states", JointState(name=["j1", "f"], position=[1.015, -0.0011]))
    assert len(bad) == 1 and "f at -0.0011" in bad[0]
    s = SpeedChecker({"j1": 3.0, "f": 0.25}, tolerance=1.35, tolerances={"f": 1.1})
    assert s.sample(0.0, ["j1", "f"], [0.0, 0.0]) == []
    assert s.sample(0.01, ["j1", "f"], [0.04, 0.0027]) == []          # 1.33x and 1.08x
    late = s.sample(0.02, ["j1", "f"], [0.08, 0.0056])                # 1.33x and 1.16x
    assert len(late) == 1 and late[0].startswith("f at")
