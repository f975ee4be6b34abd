"""Pose estimator core: torso_link4 in base_link, grippers in torso_link4, feedback parsing."""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
from conftest import GROUPS

from mobiman.estimation.eepose import FeedbackError, Frames, PoseEstimator, group_positions, se3_to_pose
from mobiman.model.robot_model import load_group_config

# r1_kinematics.md §4: torso_link4 in base_link (xyz, pitch about y)
TORSO_TABLE = [
    ((0.0, 0.0, 0.0, 0.0), (-0.032845, 0.0, 1.10062), 0.0),
    ((0.5, -1.0, -0.5, 0.0), (0.0151, 0.0, 1.0149), 0.0),
    ((1.0, -2.0, -1.0, 0.0), (0.0513, 0.0, 0.7788), 0.0),
    ((1.8326, -2.7925, -0.9599, 0.0), (0.1078, 0.0, 0.4692), 0.0),
    ((0.3, 0.0, 0.0, 0.0), (0.2035, 0.0, 1.0649), 0.3),
    ((0.3, 0.0, 0.3, 0.0), (0.174, 0.0, 1.0694), 0.0),
]

# r1_kinematics.md §5 (a): gripper_link in torso_link4, the same q on both arms (xyz, rpy)
ARM_TABLE = [
    ((0.5, 1.0, -1.5, 0.3, -0.4, 0.8), (0.182006, 0.800296, 0.271974), (1.30153, 0.08760, 0.34894),
     (0.182011, -0.800297, 0.333729), (1.30153, -0.08760, -0.34894)),
    ((-1.0, 2.0, -2.5, -1.0, 1.2, -0.5), (0.329215, 0.666199, 0.664968), (-1.28657, -0.31719, -0.57230),
     (0.329217, -0.666197, -0.059273), (-1.28657, 0.31719, 0.57230)),
    ((0.0, 0.0, 0.0, 0.0, 0.0, 0.0), (0.086181, 0.337700, 0.302850), (0.0, 0.0, 0.0),
     (0.086182, -0.337703, 0.302850), (0.0, 0.0, 0.0)),
]


@pytest.fixture(scope="module")
def est(r1) -> PoseEstimator:
    return PoseEstimator(r1, Frames.from_params(load_group_config(GROUPS)[1]))


def test_frames_come_from_the_group_table(est) -> None:
    f = est.frames
    assert (f.base, f.floating_base, f.left_ee, f.right_ee) == \
        ("base_link", "torso_link4", "left_gripper_link", "right_gripper_link")
    with pytest.raises(KeyError):
        PoseEstimator(est.model, Frames(left_ee="no_such_link"))


@pytest.mark.parametrize("q, xyz, pitch", TORSO_TABLE)
def test_torso_link4_in_base_at_the_reference_poses(est, q, xyz, pitch) -> None:
    m = est.torso_pose(q)
    np.testing.assert_allclose(m.translation, xyz, atol=6e-4)      # the table has 4 decimals
    np.testing.assert_allclose(pin.rpy.matrixToRpy(m.rotation), (0.0, pitch, 0.0), atol=1e-4)


def test_torso_yaw_turns_torso_link4_about_z(est) -> None:
    m = est.torso_pose((0.0, 0.0, 0.0, 0.7))
    np.testing.assert_allclose(m.translation, (-0.032845, 0.0, 1.10062), atol=1e-5)
    np.testing.assert_allclose(pin.rpy.matrixToRpy(m.rotation), (0.0, 0.0, 0.7), atol=1e-9)


@pytest.mark.parametrize("q, lxyz, lrpy, rxyz, rrpy", ARM_TABLE)
def test_grippers_in_torso_link4_at_the_reference_poses(est, q, lxyz, lrpy, rxyz, rrpy) -> None:
    for side, xyz, rpy in (("left", lxyz, lrpy), ("right", rxyz, rrpy)):
        m = est.arm_pose(side, q)
        np.testing.assert_allclose(m.translation, xyz, atol=2e-6, err_msg=side)
        np.testing.assert_allclose(pin.rpy.matrixToRpy(m.rotation), rpy, atol=2e-5, err_msg=side)


def test_arm_pose_is_full_model_fk_and_ignores_torso_and_other_arm(est, r1, floating) -> None:
    """Independent paths: the fixed-base model with every other joint random, and the floating
    URDF rooted at torso_link4 (no torso at all)."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        q_full = r1.configuration({g: rng.uniform(np.maximum(r1.limits(g).lower, -3.0),
                                                  np.minimum(r1.limits(g).upper, 3.0))
                                   for g in r1.groups})
        fq = floating.configuration()
        for side in ("left", "right"):
            q_arm = r1.group_values(q_full, f"{side}_arm")
            expected = r1.pose(f"{side}_gripper_link", q_full, "torso_link4")
            got = est.arm_pose(side, q_arm)
            np.testing.assert_allclose(got.homogeneous, expected.homogeneous, atol=1e-12)
            floating.set_group(fq, f"{side}_arm", q_arm)
            root = floating.pose(f"{side}_gripper_link", fq)
            np.testing.assert_allclose(got.homogeneous, root.homogeneous, atol=1e-9)
        q_torso = r1.group_values(q_full, "torso")
        np.testing.assert_allclose(est.torso_pose(q_torso).homogeneous,
                                   r1.pose("torso_link4", q_full, "base_link").homogeneous, atol=1e-12)


def test_se3_to_pose_round_trips_with_positive_w(est) -> None:
    m = est.arm_pose("left", (-1.0, 2.0, -2.5, -1.0, 1.2, -0.5))
    (x, y, z), (qx, qy, qz, qw) = se3_to_pose(m)
    assert qw >= 0.0 and math.isclose(qx * qx + qy * qy + qz * qz + qw * qw, 1.0, rel_tol=1e-12)
    back = pin.SE3(pin.Quaternion(qw, qx, qy, qz).toRotationMatrix(), np.array([x, y, z]))
    np.testing.assert_allclose(back.homogeneous, m.homogeneous, atol=1e-12)
    # a rotation of π about x: w = 0 edge, still a unit quaternion
    flip = pin.SE3(pin.rpy.rpyToMatrix(math.pi, 0.0, 0.0), np.zeros(3))
    assert math.isclose(np.linalg.norm(se3_to_pose(flip)[1]), 1.0, rel_tol=1e-12)


ARM = [f"left_arm_joint{i}" for i in range(1, 7)]


def test_arm_feedback_read_by_name_gripper_ignored() -> None:
    names = ARM + ["left_gripper_finger_joint1"]
    pos = [0.1, 0.2, -0.3, 0.4, 0.5, 0.6, 0.03]
    np.testing.assert_array_equal(group_positions(ARM, names, pos, extra=1), pos[:6])
    # another order: by name, not by index
    order = [6, 5, 4, 3, 2, 1, 0]
    got = group_positions(ARM, [names[i] for i in order], [pos[i] for i in order], extra=1)
    np.testing.assert_array_equal(got, pos[:6])


def test_unnamed_feedback_takes_the_first_entries() -> None:
    np.testing.assert_array_equal(group_positions(ARM, [], [1, 2, 3, 4, 5, 6, 7], extra=1), [1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(group_positions(ARM, [], [1, 2, 3, 4, 5, 6], extra=1), [1, 2, 3, 4, 5, 6])


@pytest.mark.parametrize("names, pos, extra, why", [
    ([], [1, 2, 3, 4, 5], 1, "positions"),                          # too short
    ([], [1, 2, 3, 4, 5, 6, 7, 8], 1, "positions"),                 # too long
    ([], [1, 2, 3, 4, 5, 6, 7], 0, "positions"),                    # the torso takes no extra entry
    (ARM[:5] + ["left_gripper_finger_joint1"], [0.0] * 6, 1, "missing"),
    (ARM, [0.0] * 5, 1, "names"),                                   # names and positions disagree
    (ARM, [0.0, float("nan"), 0, 0, 0, 0], 1, "non-finite"),
    ([], [0.0, 0, 0, float("inf"), 0, 0], 1, "non-finite"),
])
def test_bad_feedback_raises(names, pos, extra, why) -> None:
    with pytest.raises(FeedbackError, match=why):
        group_positions(ARM, names, pos, extra)


def test_bad_side_and_bad_length(est) -> None:
    with pytest.raises(ValueError):
        est.arm_pose("middle", [0.0] * 6)
    with pytest.raises(ValueError):
        est.torso_pose([0.0] * 3)
