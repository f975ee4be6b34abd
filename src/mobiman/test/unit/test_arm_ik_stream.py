"""Arm pose-control stream (mobiman.arm.stream): checks, pauses, ready pose, reach judgement.

The solver is a stand-in with ArmIK's interface, so these tests pin the node's logic, not IK.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import pytest

from mobiman.arm.stream import (
    ACTIVE,
    MOVING_TO_READY,
    READY_PENDING,
    WAITING_FEEDBACK,
    ArmPoseStream,
    Dropped,
    StreamConfig,
    compose,
    is_base_frame,
    pose_to_se3,
    target_frame,
)


@dataclass
class Result:
    q: np.ndarray
    position_error: float = 0.0
    orientation_error: float = 0.0
    reached: bool = True
    iterations: int = 3
    step_limited: bool = False
    blocked: bool = False


class FakeIK:
    """Moves each joint at most max_step toward `goal` per solve; records resets."""

    joint_names = tuple(f"left_arm_joint{i}" for i in range(1, 7))
    lower = np.full(6, -2.0)
    upper = np.full(6, 2.0)

    def __init__(self, goal=None, max_step=0.2, reachable=True):
        self.q = np.zeros(6)
        self.goal = np.full(6, 0.5) if goal is None else np.asarray(goal, float)
        self.max_step = max_step
        self.reachable = reachable
        self.resets: list[np.ndarray] = []
        self.other = None
        self.targets: list[pin.SE3] = []
        self.result_q = None      # force a result (e.g. NaN)
        self.blocked = False      # report every solve as stopped clear of the body

    def reset(self, q):
        self.q = np.asarray(q, float).copy()
        self.resets.append(self.q.copy())

    def set_other_arm(self, q):
        self.other = np.asarray(q, float)

    def solve(self, target):
        self.targets.append(target)
        d = np.clip(self.goal - self.q, -self.max_step, self.max_step)
        limited = bool(np.any(np.abs(self.goal - self.q) > self.max_step))
        self.q = self.q + d
        at_goal = not limited
        reached = at_goal and self.reachable
        q = self.q.copy() if self.result_q is None else np.asarray(self.result_q, float)
        return Result(q=q, position_error=0.0 if reached else 0.05, orientation_error=0.0 if reached else 0.2,
                      reached=reached and not self.blocked, step_limited=limited, blocked=self.blocked)


POSE = pin.SE3.Identity()


def active_stream(**cfg) -> tuple[ArmPoseStream, FakeIK]:
    ik = FakeIK(**cfg.pop("ik", {}))
    s = ArmPoseStream(ik, StreamConfig(**cfg))
    assert s.on_feedback([0.1] * 7, now=0.0)          # 7 entries: the gripper's is ignored
    assert s.state == ACTIVE
    return s, ik


# -- poses ---------------------------------------------------------------------------------
def test_pose_is_normalized_and_guide_quaternion_accepted() -> None:
    pose, norm = pose_to_se3((0.373, 0.637, 0.303), (0.0, 0.0, -0.028, 1.0))    # the guide's left arm
    assert norm == pytest.approx(np.hypot(0.028, 1.0))
    np.testing.assert_allclose(pose.translation, [0.373, 0.637, 0.303])
    np.testing.assert_allclose(pose.rotation @ pose.rotation.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(pose.rotation) == pytest.approx(1.0)
    # rotation about z by 2*atan2(-0.028, 1)
    angle = 2 * np.arctan2(-0.028, 1.0)
    np.testing.assert_allclose(pose.rotation[:2, :2], [[np.cos(angle), -np.sin(angle)],
                                                        [np.sin(angle), np.cos(angle)]], atol=1e-12)
    scaled, norm = pose_to_se3((0, 0, 0), (0, 0, 1.05, 0))          # near unit: normalized, 180 deg about z
    assert norm == pytest.approx(1.05)
    np.testing.assert_allclose(scaled.rotation, np.diag([-1.0, -1.0, 1.0]), atol=1e-12)


@pytest.mark.parametrize("position, quat, key", [
    ((np.nan, 0, 0), (0, 0, 0, 1), "nonfinite"),
    ((0, 0, np.inf), (0, 0, 0, 1), "nonfinite"),
    ((0, 0, 0), (0, np.nan, 0, 1), "nonfinite"),
    ((0, 0, 0), (0, 0, 0, 0), "zero_quaternion"),
    ((0, 0, 0), (0, 0, 2.0, 0), "quaternion"),               # far from unit: no rotation, not invented
    ((0, 0, 0), (1e308, 1e308, 0, 0), "quaternion"),
    ((0, 0), (0, 0, 0, 1), "shape"),
    ((1e308, 0, 0), (0, 0, 0, 1), "far"),                    # finite but no target (and overflow downstream)
])
def test_bad_poses_are_dropped_with_a_reason(position, quat, key) -> None:
    with pytest.raises(Dropped) as e:
        pose_to_se3(position, quat)
    assert e.value.key == key


def test_empty_frame_is_the_base_frame_and_transforms_compose() -> None:
    assert is_base_frame("", "torso_link4") and is_base_frame("/torso_link4", "torso_link4")
    assert is_base_frame("torso_link4", "torso_link4") and not is_base_frame("base_link", "torso_link4")
    # a pose 0.1 m ahead in a frame that is 1 m up and turned 90 deg about z
    base_from_frame, _ = pose_to_se3((0, 0, 1.0), (0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4)))
    pose, _ = pose_to_se3((0.1, 0, 0), (0, 0, 0, 1))
    out = compose(base_from_frame, pose)
    np.testing.assert_allclose(out.translation, [0.0, 0.1, 1.0], atol=1e-12)
    np.testing.assert_allclose(out.rotation, base_from_frame.rotation, atol=1e-12)


LARGEST_STAMP = 4294967295 + 999999999e-9


def test_target_frame_never_hands_tf2_a_stamp_off_the_clock() -> None:
    """Regression (issue 19): a base_link target stamped 4294967295.999999999 (a legal ROS time)
    aborted the node inside tf2 ("Time is out of dual 32-bit range"). Stamps outside
    [now - 10 s, now + 0.5 s] are looked up at the latest transform instead."""
    now = 1_795_000_000.0
    for stamp in (LARGEST_STAMP, 1.0, now - 60.0, now + 5.0):
        frame, t, note = target_frame("base_link", stamp, now, "torso_link4")
        assert (frame, t) == ("base_link", 0.0) and "latest transform" in note
    assert target_frame("/base_link", now - 1.0, now, "torso_link4") == ("base_link", now - 1.0, None)
    assert target_frame("base_link", 0.0, now, "torso_link4") == ("base_link", 0.0, None)
    assert target_frame("", LARGEST_STAMP, now, "torso_link4") == (None, 0.0, None)      # no lookup at all
    assert target_frame("/torso_link4", 5.0, now, "torso_link4") == (None, 0.0, None)


@pytest.mark.parametrize("frame", ["base link", "x" * 1000, "a\x00b", "map//odom"])
def test_a_malformed_frame_id_is_dropped_before_tf2(frame) -> None:
    with pytest.raises(Dropped) as e:
        target_frame(frame, 0.0, 100.0, "torso_link4")
    assert e.value.key == "frame" and "header.frame_id" in e.value.text


def test_a_target_far_from_the_base_never_reaches_the_solver() -> None:
    s, ik = active_stream()
    with pytest.raises(Dropped) as e:
        s.on_target(pin.SE3(np.eye(3), np.array([0.0, 0.0, 50.0])), 1.0, 1.0)
    assert e.value.key == "far" and ik.targets == []


def test_feedback_beyond_the_joint_ranges_is_refused() -> None:
    """Regression (issue 19): finite 1e308 feedback reached the solver's seeds (numpy overflow
    warnings, an IndexError in the collision check)."""
    s, ik = active_stream()
    resets = len(ik.resets)
    for bad in ([1e308] * 6, [0.0] * 5 + [2.6], [0.0] * 5):
        assert s.on_feedback(bad, now=1.0) is None
        assert s.feedback_error is not None and "feedback position" in s.feedback_error
    assert s.dropped["feedback"] == 3 and len(ik.resets) == resets
    np.testing.assert_array_equal(s.measured, [0.1] * 6)
    s.on_other_arm([1e308] * 6)
    assert s.other_arm is None
    s.on_feedback([0.2] * 6, now=1.0)
    assert s.feedback_error is None


# -- configuration -------------------------------------------------------------------------
def test_config_defaults_and_checks() -> None:
    c = StreamConfig.from_params({})
    np.testing.assert_allclose(c.speed_limits, [1, 1, 1, 1.5, 1.5, 1.5])
    assert c.target_timeout == 0.5 and not c.ready_pose
    c = StreamConfig.from_params({"speed_limits": [2] * 6, "target_timeout": 1.0, "ready_pose": True,
                                  "ready_joints": [0.1] * 6})
    assert c.ready_pose and c.target_timeout == 1.0
    for bad in ({"speed_limits": [1] * 5}, {"speed_limits": [1, 1, 1, 1, 1, 0]}, {"speed_limits": "fast"},
                {"speed_limits": [1, 1, 1, 1, 1, float("nan")]}, {"target_timeout": -1},
                {"ready_pose": True}, {"ready_pose": "yes", "ready_joints": [0] * 6}, {"ready_joints": [0] * 7}):
        with pytest.raises(ValueError):
            StreamConfig.from_params(bad)


# -- the stream ----------------------------------------------------------------------------
def test_nothing_before_feedback_then_reset_at_first_feedback() -> None:
    ik = FakeIK()
    s = ArmPoseStream(ik, StreamConfig())
    with pytest.raises(Dropped) as e:
        s.on_target(POSE, 0.0, 0.0)
    assert e.value.key == "no_feedback" and s.dropped["no_feedback"] == 1 and not ik.targets
    assert s.on_feedback([np.nan] * 6, 0.0) is None and s.state == WAITING_FEEDBACK   # bad feedback ignored
    assert s.on_feedback([0.3] * 6, 0.0)
    np.testing.assert_allclose(ik.resets[-1], 0.3)
    assert s.state == ACTIVE


def test_streamed_solves_warm_start_and_reach() -> None:
    s, ik = active_stream()
    steps = [s.on_target(POSE, 0.1 * k, 0.1 * k) for k in range(5)]
    assert steps[0].restarted and not any(st.restarted for st in steps[1:])
    assert len(ik.resets) == 2                  # first feedback, first target of the stream
    assert steps[0].result.step_limited and steps[-1].result.reached
    np.testing.assert_allclose(steps[-1].q, 0.5)
    assert s.solves == 5 and not steps[-1].out_of_reach
    level, message, values = s.summary(0.4, 0.4)
    assert level == 0 and message == "at target" and values["solves"] == "5"


def test_out_of_reach_when_settled_short_of_the_target() -> None:
    s, _ = active_stream(ik={"reachable": False})
    steps = [s.on_target(POSE, 0.1 * k, 0.1 * k) for k in range(5)]
    # 0.1 -> 0.3 -> 0.5, then settled short of the target
    assert not any(st.out_of_reach for st in steps[:2])      # still moving: converging, not out of reach
    assert all(st.out_of_reach for st in steps[2:])
    level, message, _ = s.summary(0.4, 0.4)
    assert level == 1 and "out of reach" in message


def test_a_solve_held_clear_of_the_body_is_reported() -> None:
    s, ik = active_stream()
    s.on_target(POSE, 0.0, 0.0)
    assert s.summary(0.05, 0.05)[0] == 0
    ik.blocked = True
    s.on_target(POSE, 0.1, 0.1)
    level, message, values = s.summary(0.15, 0.15)
    assert level == 1 and "in its body" in message and values["blocked_by_collision"] == "1"


def test_stale_stream_resets_from_the_measured_joints() -> None:
    s, ik = active_stream(target_timeout=0.5)
    for k in range(5):
        s.on_target(POSE, 0.1 * k, 0.1 * k)
    assert not s.check_stale(0.45, 0.45)
    # old in ROS time only (a wall-paced stream on a simulated clock that jumped): not stale
    assert not s.check_stale(5.0, 0.45)
    # old in wall time only (a stream paced on a slow simulated clock): not stale
    assert not s.check_stale(0.45, 5.0)
    assert s.check_stale(5.0, 5.0) and not s.check_stale(6.0, 6.0)      # said once
    assert s.stale_events == 1
    s.on_feedback([-0.7] * 6, 6.0)              # the arm was moved meanwhile
    step = s.on_target(POSE, 7.0, 7.0)
    assert step.restarted
    np.testing.assert_allclose(ik.resets[-1], -0.7)
    np.testing.assert_allclose(step.q, -0.5)    # continues from the arm, one max_step toward the goal
    assert not s.check_stale(7.1, 7.1) and s.restarts == 2


def test_non_finite_solution_never_leaves() -> None:
    s, ik = active_stream()
    ik.result_q = [0.0, np.nan, 0, 0, 0, 0]
    with pytest.raises(Dropped) as e:
        s.on_target(POSE, 0.0, 0.0)
    assert e.value.key == "solver" and s.solves == 0


def test_other_arm_is_passed_to_the_solver() -> None:
    s, ik = active_stream()
    s.on_other_arm([np.nan] * 6)
    s.on_target(POSE, 0.0, 0.0)
    assert ik.other is None
    s.on_other_arm([0.2] * 7)
    s.on_target(POSE, 0.1, 0.1)
    np.testing.assert_allclose(ik.other, 0.2)


def test_ready_pose_first_then_poses() -> None:
    ik = FakeIK()
    s = ArmPoseStream(ik, StreamConfig(ready_pose=True, ready_joints=np.array([0.3, 0.3, 0.3, 0.3, 0.3, 5.0])))
    assert s.ready_clipped                      # 5.0 beyond the upper limit 2.0
    assert s.take_ready_command(0.0) is None    # no feedback yet
    s.on_feedback([0.0] * 6, 0.0)
    assert s.state == READY_PENDING
    with pytest.raises(Dropped):
        s.on_target(POSE, 0.0, 0.0)
    ready = s.take_ready_command(0.1)
    np.testing.assert_allclose(ready, [0.3, 0.3, 0.3, 0.3, 0.3, 2.0])
    assert s.take_ready_command(0.2) is None and s.state == MOVING_TO_READY      # once
    assert s.on_feedback([0.1] * 6, 1.0) is None and s.state == MOVING_TO_READY
    with pytest.raises(Dropped) as e:
        s.on_target(POSE, 1.0, 1.0)
    assert e.value.key == "ready"
    assert "ready pose" in s.on_feedback([0.29, 0.3, 0.31, 0.3, 0.3, 1.99], 2.0)
    assert s.state == ACTIVE
    np.testing.assert_allclose(ik.resets[-1], [0.29, 0.3, 0.31, 0.3, 0.3, 1.99])
    assert s.on_target(POSE, 2.1, 2.1).restarted


def test_ready_pose_gives_up_after_its_timeout() -> None:
    s = ArmPoseStream(FakeIK(), StreamConfig(ready_pose=True, ready_joints=np.full(6, 0.3), ready_timeout=10.0))
    s.on_feedback([0.0] * 6, 0.0)
    s.take_ready_command(0.0)
    assert s.on_feedback([0.0] * 6, 5.0) is None
    assert "tracker" in s.on_feedback([0.0] * 6, 10.5)
    assert s.state == ACTIVE


def test_summary_counts_drops_and_timings() -> None:
    s, _ = active_stream()
    for k in range(3):
        s.on_target(POSE, 0.1 * k, 0.1 * k)
    s.drop("tf", "no transform")
    s.drop("nonfinite", "nan")
    level, message, values = s.summary(10.0, 10.0)
    assert level == 0 and message.startswith("idle")
    assert values["targets_dropped"] == "2" and "tf: 1" in values["dropped_by_reason"]
    assert float(values["solve_ms_p99"]) >= float(values["solve_ms_median"]) >= 0.0
    fresh = ArmPoseStream(FakeIK(), StreamConfig())
    assert fresh.summary(0.0, 0.0)[:2] == (1, WAITING_FEEDBACK)
