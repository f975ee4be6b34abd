"""GroupController, the tracker node's per-group tick without ROS: feedback in, command out (start-up hold,
targets reached within the limits, stale feedback, the following-error wait, the resync, bad feedback,
early commands, the gripper entry, stalls); FeedbackClock, the clock it shares with torso speed control;
build_groups from the settings."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from mobiman.control.upper_body import UpperBody
from mobiman.model.robot_model import RobotModel, load_group_config
from mobiman.tracker.feedback_clock import FeedbackClock
from mobiman.tracker.group import Feedback, GroupController, build_groups
from mobiman.tracker.joint_tracker import JointTrajectoryTracker
from mobiman.tracker.settings import JointTrackerSettings
from r1_common.settings import ConfigError

CONFIG = Path(__file__).resolve().parents[2] / "config"
DT = 0.002
LEFT_HOME = [-1.2, 0.3, -2.0, 0.1, 0.2, -0.1]


class Wall:
    """A wall clock the test moves."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def params(**over) -> dict:
    p = yaml.safe_load((CONFIG / "joint_tracker.yaml").read_text())
    p.update(over)
    return p


def build(r1: RobotModel, wall: Wall, **over) -> dict[str, GroupController]:
    groups, _ = load_group_config(CONFIG / "r1_joint_groups.yaml")
    controllers, _ = build_groups(JointTrackerSettings.from_params(params(**over)), r1, groups, UpperBody(r1), wall)
    return controllers


class Arm:
    """The left arm's controller fed at 500 Hz by ideal motors (each feedback reads the last p_des), or
    by joints that stay where the test puts them (`hold`)."""

    def __init__(self, r1: RobotModel, **over) -> None:
        self.wall = Wall()
        self.ctrl = build(r1, self.wall, **over)["left_arm"]
        self.t, self.q, self.v = 10.0, list(LEFT_HOME), [0.0] * 6
        self.hold = False
        self.commands: list = []

    def tick(self, n: int = 1):
        cmd = None
        for _ in range(n):
            self.t += DT
            self.wall.t += DT
            cmd = self.ctrl.update(Feedback(self.q + [0.01], self.v + [0.0], self.t), self.t)
            assert cmd is not None
            self.commands.append(cmd)
            if not self.hold:
                self.q, self.v = list(cmd.p_des[:6]), list(cmd.v_des[:6])
        return cmd


@pytest.fixture
def arm(r1: RobotModel) -> Arm:
    return Arm(r1)


def test_start_up_holds_the_measured_position_and_drops_earlier_targets(arm: Arm) -> None:
    assert arm.ctrl.state == "waiting for feedback"
    assert arm.ctrl.target([], [0.0] * 6, []) is None
    assert arm.ctrl.counters["dropped"] == 1 and "not started" in arm.ctrl.events[-1].text
    cmd = arm.tick()
    np.testing.assert_allclose(cmd.p_des, LEFT_HOME)
    assert cmd.v_des == [0.0] * 6 and cmd.kp == [140, 200, 120, 20, 20, 20] and len(cmd.t_ff) == 6
    assert any("holding" in e.text for e in arm.ctrl.events)
    cmd = arm.tick(50)
    np.testing.assert_allclose(cmd.p_des, LEFT_HOME)
    assert arm.ctrl.counters["ticks"] == 51


def test_a_target_is_reached_within_the_speed_limits(arm: Arm) -> None:
    arm.tick()
    goal = np.array(LEFT_HOME) + [2.5, 1.5, 1.0, -1.0, 0.5, 1.5]
    speed = [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]
    arm.ctrl.target([], list(goal), speed)
    for _ in range(5000):
        arm.tick()
        if arm.ctrl.state == "at target":
            break
    v = np.array([c.v_des for c in arm.commands])
    assert np.all(np.abs(v) <= np.array(speed) * (1 + 1e-9))
    assert np.max(np.abs(v) / speed) > 0.99                 # the limit is used (by the joint that sets the pace)
    np.testing.assert_allclose(arm.commands[-1].p_des, goal, atol=1e-9)
    assert arm.ctrl.state == "at target" and arm.ctrl.counters["paused"] == 0


def test_stale_feedback_gives_no_command_until_it_is_back(arm: Arm) -> None:
    arm.tick(10)
    assert not arm.ctrl.watch(arm.t + 0.04)                 # within feedback_timeout
    arm.wall.t += 1.0
    assert not arm.ctrl.watch(arm.t + 0.01)                 # old in wall time only: not stale
    arm.wall.t -= 1.0
    assert not arm.ctrl.watch(arm.t + 1.0)                  # old in ROS time only (a simulated clock jumped)
    arm.wall.t += 0.1
    assert arm.ctrl.watch(arm.t + 0.1)                      # old in both
    assert arm.ctrl.state == "feedback stale" and arm.ctrl.clock.stale_events == 1
    assert arm.ctrl.events[-1].key == "stale" and "not publishing" in arm.ctrl.events[-1].text
    assert not arm.ctrl.watch(arm.t + 0.2)                  # said once per episode
    goal = list(np.array(LEFT_HOME) + 0.2)
    assert arm.ctrl.target([], goal, []) is None            # taken, but nothing is sent while stale
    np.testing.assert_array_equal(arm.ctrl.tracker.target, goal)
    arm.t += 0.1
    cmd = arm.tick()                                        # feedback is back: a command again
    assert arm.ctrl.state == "moving" and np.any(np.array(cmd.v_des) != 0.0)
    assert any(e.key == "back" for e in arm.ctrl.events)


def test_the_plan_waits_for_joints_lagging_more_than_the_following_error(arm: Arm) -> None:
    arm.tick()
    arm.hold = True                                         # the joints do not follow
    arm.ctrl.target([], list(np.array(LEFT_HOME) + 1.0), [])
    arm.tick(400)                                           # (the plan would be 0.38 rad ahead by now)
    lead = np.max(np.array(arm.commands[-1].p_des) - LEFT_HOME)
    assert arm.ctrl.counters["paused"] > 200
    assert 0.02 <= lead < 0.021                             # at most one tick past the threshold
    arm.hold = False                                        # the joints catch up: the plan goes on
    arm.q = list(arm.commands[-1].p_des)
    arm.tick(100)
    assert np.max(np.array(arm.commands[-1].p_des) - LEFT_HOME) > lead + 0.02


def test_no_following_error_wait_when_it_is_off(r1: RobotModel) -> None:
    arm = Arm(r1, max_following_error=0.0)
    arm.tick()
    arm.hold = True
    arm.ctrl.target([], list(np.array(LEFT_HOME) + 1.0), [])
    arm.tick(200)                                           # (0.4 s: less than resync_error ahead)
    assert arm.ctrl.counters["paused"] == 0 and np.max(np.array(arm.commands[-1].p_des) - LEFT_HOME) > 0.04


def test_a_joint_pushed_far_from_the_plan_is_commanded_back_never_re_planned(arm: Arm) -> None:
    arm.tick(5)
    arm.hold = True
    arm.q = list(np.array(LEFT_HOME) + [0.0, 0.6, 0.0, 0.0, 0.0, 0.0])    # a load pushed it 0.6 rad away
    for v in ([0.0, 0.5, 0.0, 0.0, 0.0, 0.0], [0.0] * 6):                 # moving, then at rest there
        arm.v = v
        cmd = arm.tick(50)
        np.testing.assert_allclose(cmd.p_des, LEFT_HOME, atol=1e-12)     # the set-point stays: back it goes
    assert arm.ctrl.counters["resyncs"] == 0


def test_joints_reported_off_re_plan_from_where_they_are_until_the_motors_hold_again(arm: Arm) -> None:
    arm.tick(5)
    goal = list(np.array(LEFT_HOME) + [0.0, 0.0, 0.5, 0.0, 0.0, 0.0])
    arm.ctrl.target([], goal, [])
    arm.hold = True
    arm.q = list(np.array(LEFT_HOME) + [0.0, 0.3, 0.0, 0.0, 0.0, 0.0])    # the arm fell while its motors were off
    arm.ctrl.motors([True, False, True, True, True, True])
    for _ in range(3):                                                    # while off: from where it is, each tick
        cmd = arm.tick()
        assert abs(cmd.p_des[1] - arm.q[1]) < 1e-6 and arm.ctrl.state.startswith("motors off")
    assert arm.ctrl.counters["resyncs"] == 1                              # (one episode, said once)
    arm.q[1] += 0.05
    arm.ctrl.motors([True] * 6)                                           # on again: once more, then it holds
    cmd = arm.tick()
    assert abs(cmd.p_des[1] - arm.q[1]) < 1e-6 and arm.ctrl.counters["resyncs"] == 2
    np.testing.assert_array_equal(arm.ctrl.tracker.target, goal)          # the target goes on from there
    arm.q[1] += 0.3                                                       # now a push: the plan does not follow
    cmd = arm.tick(20)
    assert abs(cmd.p_des[1] - arm.q[1]) > 0.25 and arm.ctrl.counters["resyncs"] == 2
    with pytest.raises(ValueError):
        arm.ctrl.motors([True] * 5)


def test_after_stale_feedback_a_joint_far_from_the_plan_re_plans_and_a_near_one_does_not(arm: Arm) -> None:
    arm.tick(10)
    arm.hold = True

    def gap() -> None:
        arm.wall.t += 0.1
        assert arm.ctrl.watch(arm.t + 0.1)
        arm.t += 0.1
    gap()
    arm.q = list(np.array(LEFT_HOME) + [0.0, 0.0, 0.0, 0.0, 0.0, 0.1])   # within resync_error: held
    cmd = arm.tick()
    np.testing.assert_allclose(cmd.p_des, LEFT_HOME, atol=1e-12)
    gap()
    arm.q = list(np.array(LEFT_HOME) + [0.0, 0.0, 0.0, 0.0, 0.0, 0.4])   # beyond it: the motors may have been off
    cmd = arm.tick()
    np.testing.assert_allclose(cmd.p_des, arm.q, atol=1e-12)
    assert arm.ctrl.counters["resyncs"] == 1 and "after a gap" in [e for e in arm.ctrl.events
                                                                   if e.key == "resync"][-1].text


def test_a_joint_offset_by_a_steady_load_but_keeping_pace_does_not_stop_the_plan(arm: Arm) -> None:
    arm.tick()
    arm.ctrl.target([], list(np.array(LEFT_HOME) + [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]), [])
    arm.hold = True
    for _ in range(2000):                                 # the joint follows the plan 0.05 rad behind
        arm.tick()
        arm.q = list(np.array(arm.commands[-1].p_des) - [0.0, 0.0, 0.0, 0.05, 0.0, 0.0])
        arm.v = list(arm.commands[-1].v_des)
    assert arm.ctrl.counters["paused"] == 0 and arm.ctrl.state == "at target"


def test_a_joint_read_past_its_stop_is_held_at_the_limit(arm: Arm) -> None:
    arm.q = list(LEFT_HOME)
    arm.q[1] = -0.0005                                     # joint 2's lower limit is 0
    cmd = arm.tick()
    assert cmd.p_des[1] == 0.0


@pytest.mark.parametrize("position", [[0.0] * 5, [float("nan")] + [0.0] * 5, [0.0, 5.0, 0.0, 0.0, 0.0, 0.0]])
def test_bad_feedback_gives_no_command(arm: Arm, position) -> None:
    assert arm.ctrl.update(Feedback(position, [0.0] * 6, 1.0), 1.0) is None
    assert arm.ctrl.counters["bad_feedback"] == 1 and arm.ctrl.events[-1].key == "feedback"
    assert arm.ctrl.state == "waiting for feedback"


def test_a_stamp_off_the_clock_is_taken_as_received(arm: Arm) -> None:
    arm.tick()
    cmd = arm.ctrl.update(Feedback(LEFT_HOME, [0.0] * 6, 1e9), arm.t + DT)
    assert cmd is not None and cmd.stamp == arm.t + DT
    assert arm.ctrl.counters["bad_stamps"] == 1 and arm.ctrl.events[-1].key == "stamp"


def test_a_target_is_answered_at_once_borrowing_one_tick_per_feedback_period(arm: Arm) -> None:
    arm.tick(2)
    goal = list(np.array(LEFT_HOME) + [0.0, 0.0, 0.0, 0.1, 0.0, 0.0])
    early = arm.ctrl.target([], goal, [3.0] * 6)
    assert early is not None and early.stamp is None and early.v_des[3] > 0.0
    assert arm.ctrl.target([], list(np.array(goal) + 0.05), [3.0] * 6) is None    # one per feedback period
    same = arm.tick()                                       # the borrowed tick: the same set-point
    np.testing.assert_allclose(same.p_des, early.p_des, atol=1e-12)
    on = arm.tick()
    assert on.v_des[3] > early.v_des[3]
    assert arm.ctrl.counters["early_commands"] == 1


def test_early_commands_can_be_off(r1: RobotModel) -> None:
    arm = Arm(r1, react_to_targets=False)
    arm.tick(2)
    assert arm.ctrl.target([], list(np.array(LEFT_HOME) + 0.1), []) is None
    assert arm.tick().v_des != [0.0] * 6


def test_the_gripper_entry_comes_with_a_7_entry_target_and_goes_with_a_6_entry_one(r1: RobotModel) -> None:
    arms = build(r1, Wall())
    arm, torso = arms["left_arm"], arms["torso"]
    cmd = arm.update(Feedback(LEFT_HOME + [0.01], [0.0] * 7, 1.0), 1.0)
    assert len(cmd.p_des) == 6
    cmd = arm.target([], LEFT_HOME + [0.5], [])                # beyond the finger's travel: clamped
    assert len(cmd.p_des) == 7 and cmd.p_des[6] == arm.gripper_range[1] and cmd.kp[6] == 20.0
    assert "clamped" in arm.events[-1].text
    arm.update(Feedback(LEFT_HOME + [0.01], [0.0] * 7, 1.002), 1.002)
    arm.target([], LEFT_HOME, [])
    assert len(arm.update(Feedback(LEFT_HOME + [0.01], [0.0] * 7, 1.004), 1.004).p_des) == 6
    torso.update(Feedback([0.0] * 4, [0.0] * 4, 1.0), 1.0)
    assert torso.target([], [0.0] * 5, []) is None and "no gripper" in torso.events[-1].text


def test_a_stall_advances_the_plan_by_at_most_the_feedback_timeout(arm: Arm) -> None:
    arm.tick()
    goal = list(np.array(LEFT_HOME) + 1.0)
    arm.ctrl.target([], goal, [])
    arm.tick()
    twin = JointTrajectoryTracker(arm.ctrl.tracker.names, arm.ctrl.tracker.limits, DT)
    twin.reset(LEFT_HOME)
    twin.set_target(goal)
    twin.advance()                                          # the early command (the tick after it repeats it)
    arm.t += 1.0                                            # a second without feedback (no following error:
    cmd = arm.tick()                                        # the ideal motors are where the plan was)
    for _ in range(25):                                     # feedback_timeout 0.05 s = 25 ticks, not 500
        twin.advance()
    np.testing.assert_allclose(cmd.p_des, twin.position, atol=1e-12)


def test_pid_mode_sends_the_speed_limit_and_the_torque_ratio(r1: RobotModel) -> None:
    arm = Arm(r1, output_mode="pid")
    arm.tick()
    arm.ctrl.target([], list(np.array(LEFT_HOME) + 0.3), [1.0, 1.0, 1.0, 2.0, 0.0, 9.0])
    cmd = arm.tick()
    assert cmd.v_des == [1.0, 1.0, 1.0, 2.0, 5.0, 5.0] and cmd.kp == [0.0] * 6 and cmd.t_ff == [0.8] * 6


def test_names_that_are_no_urdf_joints_are_read_by_index_with_a_warning(arm: Arm) -> None:
    arm.tick()
    arm.ctrl.target([f"j{i}" for i in range(6)], list(np.array(LEFT_HOME) + 0.1), [])
    assert any(e.key == "names" for e in arm.ctrl.events)
    np.testing.assert_allclose(arm.ctrl.tracker.target, np.array(LEFT_HOME) + 0.1)
    assert arm.ctrl.target([f"right_arm_joint{i}" for i in range(1, 7)], LEFT_HOME, []) is None
    assert arm.ctrl.counters["dropped"] == 1


# -- build_groups -------------------------------------------------------------------------------
def test_the_groups_of_the_config_and_of_its_variants(r1: RobotModel) -> None:
    assert set(build(r1, Wall())) == {"torso", "left_arm", "right_arm"}
    assert set(build(r1, Wall(), disable_torso=True)) == {"left_arm", "right_arm"}
    fast = yaml.safe_load((CONFIG / "joint_tracker_fast.yaml").read_text())
    arms = build(r1, Wall(), **fast)
    assert arms["torso"].tracker.limits.fast and arms["left_arm"].guard.max_following_error == 0.0
    built = build(r1, Wall())
    assert built["torso"].gravity_at_plan and built["left_arm"].gravity_at_plan      # (fed back while the loop is fast)
    assert built["torso"].servo.settings.gravity_feedback == built["left_arm"].servo.settings.gravity_feedback == 1.0


@pytest.mark.parametrize("change, key", [
    (lambda p: p["groups"]["left_arm"].update(kp=[1.0] * 5), "groups/left_arm/kp"),
    (lambda p: p["groups"]["torso"].update(torque_ratio=[1.0] * 6), "groups/torso/torque_ratio"),
    (lambda p: p["groups"].pop("right_arm"), "groups/right_arm"),
    (lambda p: p["groups"]["torso"].update(gripper={"kp": 1.0, "kd": 0.1}), "groups/torso/gripper"),
    (lambda p: p.update(fast=True), "fast_limits/"),
    (lambda p: p["groups"].update(head=p["groups"]["torso"]), "groups/head"),
])
def test_a_group_that_does_not_fit_is_a_config_error_naming_the_key(r1: RobotModel, change, key) -> None:
    p = params()
    change(p)
    groups, _ = load_group_config(CONFIG / "r1_joint_groups.yaml")
    with pytest.raises(ConfigError) as e:
        build_groups(JointTrackerSettings.from_params(p), r1, groups, UpperBody(r1))
    assert e.value.key.startswith(key)


def test_a_speed_cap_above_the_urdf_is_capped_with_a_note(r1: RobotModel) -> None:
    p = params()
    p["groups"]["left_arm"]["velocity_cap"] = [30.0] * 6
    groups, _ = load_group_config(CONFIG / "r1_joint_groups.yaml")
    controllers, notes = build_groups(JointTrackerSettings.from_params(p), r1, groups, UpperBody(r1))
    assert np.all(controllers["left_arm"].tracker.limits.velocity_cap == r1.limits("left_arm").velocity)
    assert len(notes) == 1 and "capped" in notes[0]


# -- FeedbackClock ------------------------------------------------------------------------------
def test_the_clock_turns_robot_time_into_whole_ticks_and_carries_the_rest() -> None:
    c = FeedbackClock(timeout=0.05, rate_hz=500.0)
    assert c.ticks_due(1.0) == 1                            # the first tick
    assert c.ticks_due(1.003) == 1 and c.ticks_due(1.004) == 1 and c.ticks_due(1.004) == 0
    c.borrow()
    assert c.ticks_due(1.006) == 0 and c.ticks_due(1.008) == 1
    assert c.ticks_due(2.0) == 25                           # a stall: at most max_step (the timeout)
    assert c.ticks_due(1.5) == 1                            # the clock went back: start over


def test_the_clock_with_its_own_max_step_gives_the_elapsed_time() -> None:
    c = FeedbackClock(timeout=0.05, rate_hz=500.0, max_step=0.02)
    assert c.elapsed(1.0) is None and c.elapsed(1.01) == pytest.approx(0.01) and c.elapsed(2.0) == 0.02
    assert c.max_ticks == 10
    with pytest.raises(ValueError):
        FeedbackClock(timeout=0.0, rate_hz=500.0)


def test_the_clock_is_stale_when_old_in_ros_and_wall_time() -> None:
    wall = Wall()
    c = FeedbackClock(timeout=0.05, rate_hz=500.0, wall=wall)
    assert not c.check_stale(1000.0) and not c.has_feedback      # no feedback yet: nothing to be stale
    at, note, back = c.receive(0.0, 5.0)
    assert (at, note, back) == (5.0, None, False)
    wall.t += 0.06
    assert not c.check_stale(5.01) and c.check_stale(5.06) and c.stale and c.stale_events == 1
    assert c.age(5.06) == pytest.approx(0.06)
    at, note, back = c.receive(5.07, 5.07)
    assert back and not c.stale and at == 5.07
    assert c.receive(500.0, 5.08).stamp_note                # a stamp off the clock: taken as received
