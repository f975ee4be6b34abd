"""Who commands each motor group (hdas.commanders)."""
from __future__ import annotations

from hdas.commanders import Commanders

TOPIC = "/motion_control/control_arm_left"


def test_one_commander_is_no_conflict_two_active_ones_are():
    c = Commanders(active_window=0.5)
    assert not c.heard(TOPIC, "/tracker", 0.0)
    assert not c.heard(TOPIC, "/tracker", 0.002)
    assert c.heard(TOPIC, "/teleop", 0.004)              # the tracker sent 2 ms ago
    assert c.heard(TOPIC, "/tracker", 0.006)
    assert c.active(TOPIC, 0.006) == ["/teleop", "/tracker"]
    assert not c.heard("/motion_control/control_torso", "/teleop", 0.006)   # per topic


def test_a_commander_that_stopped_is_no_longer_active_and_is_forgotten_later():
    c = Commanders(active_window=0.5, forget_after=60.0)
    c.heard(TOPIC, "/teleop", 0.0)
    assert not c.heard(TOPIC, "/tracker", 1.0)           # the teleop stopped 1 s ago: a hand-over, no fight
    assert c.active(TOPIC, 1.0) == ["/tracker"]
    report = c.report(1.0)[TOPIC]
    assert report["/teleop"] == (1, 1.0) and report["/tracker"] == (1, 0.0)
    assert set(c.report(60.5)[TOPIC]) == {"/tracker"}
    assert c.report(100.0)[TOPIC] == {}
