"""Pose estimation from joint feedback: the torso's top in the base, the grippers in the torso's top.

The stock `r1_eepose_pub_node` (node `fk_calculator`) turns each HDAS feedback message into
a pose: the torso's joints give `torso_link4` in `base_link` (the "floating base" the arms
ride on), each arm's joints give its `gripper_link` in `torso_link4`. The arm poses depend on
the arm's own six joints only, which is why targets and feedback share that frame
(docs/architecture.md): a pose read back here is the pose the arm pose control reaches.

ROS-free: the kinematics is `RobotModel.pose` on the full URDF; frame names come from the
`frames:` table of config/r1_joint_groups.yaml.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pinocchio as pin

from mobiman.model.robot_model import RobotModel
from r1_common.settings import Settings, setting
from r1_common.validation import FEEDBACK_MARGIN, InputError, plausible_positions, show

ARM_GROUPS = {"left": "left_arm", "right": "right_arm"}


class FeedbackError(ValueError):
    """A feedback message that cannot give a pose (wrong length, missing joint, non-finite value)."""


@dataclass(frozen=True)
class Frames(Settings):
    """The frames the poses are of and in (config/r1_joint_groups.yaml `frames:`)."""

    base: str = setting("base_link", "the robot's base: the torso's pose is in it")
    floating_base: str = setting("torso_link4", "the torso's top: the arms' poses are in it")
    left_ee: str = setting("left_gripper_link", "the left arm's end effector")
    right_ee: str = setting("right_gripper_link", "the right arm's end effector")

    def ee(self, side: str) -> str:
        """The end-effector frame of `side` ("left" or "right")."""
        return self.left_ee if side == "left" else self.right_ee


def group_positions(joints: Sequence[str], names: Sequence[str], positions: Sequence[float],
                    extra: int = 0, ranges: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """A group's joint positions from a feedback message, in the group's order.

    Named messages (HDAS names its entries with URDF joint names) are read by name, so an
    extra entry (the arm's gripper, `extra` = 1) or another order does no harm; unnamed
    ones must carry the group's joints first, with at most `extra` entries after them.
    With `ranges` (lower, upper), a position beyond its joint's range by more than
    FEEDBACK_MARGIN is a FeedbackError too (no motor reports that).
    """
    n = len(joints)
    if names:
        if len(names) != len(positions):
            raise FeedbackError(f"{len(names)} names but {len(positions)} positions")
        index = {name: i for i, name in enumerate(names)}
        missing = [j for j in joints if j not in index]
        if missing:
            raise FeedbackError(f"joints {missing} missing (names {show(names)})")
        q = np.array([positions[index[j]] for j in joints], dtype=float)
    else:
        if not n <= len(positions) <= n + extra:
            want = f"{n}" if extra == 0 else f"{n} to {n + extra}"
            raise FeedbackError(f"{len(positions)} positions, expected {want}")
        q = np.asarray(positions[:n], dtype=float)
    if not all(map(math.isfinite, q.tolist())):
        raise FeedbackError(f"non-finite position in {show(q)}")
    if ranges is not None:
        try:
            plausible_positions(q, ranges[0], ranges[1], FEEDBACK_MARGIN, "position", joints)
        except InputError as e:
            raise FeedbackError(str(e)) from None
    return q


class PoseEstimator:
    """Poses of the floating base and the grippers from group joint values (thread-safe).

    `model` must have the groups torso, left_arm and right_arm; raises KeyError on construction when it
    lacks one of `frames`."""

    def __init__(self, model: RobotModel, frames: Frames = Frames()):
        self.model = model
        self.frames = frames
        for f in (frames.base, frames.floating_base, frames.left_ee, frames.right_ee):
            model.frame_id(f)                           # KeyError now, not at the first message
        self._q0 = model.configuration()
        self._lock = threading.Lock()                   # one pinocchio Data, several feedback threads

    def torso_pose(self, q_torso: Sequence[float]) -> pin.SE3:
        """`floating_base` (torso_link4) in `base` (base_link) for the torso's joints."""
        with self._lock:
            q = self._q0.copy()
            self.model.set_group(q, "torso", q_torso)
            return self.model.pose(self.frames.floating_base, q, self.frames.base)

    def arm_pose(self, side: str, q_arm: Sequence[float]) -> pin.SE3:
        """`{side}_ee` (gripper_link) in `floating_base` for the arm's six joints."""
        if side not in ARM_GROUPS:
            raise ValueError(f"side must be left or right, not {side!r}")
        with self._lock:
            q = self._q0.copy()
            self.model.set_group(q, ARM_GROUPS[side], q_arm)
            return self.model.pose(self.frames.ee(side), q, self.frames.floating_base)


def se3_to_pose(m: pin.SE3) -> tuple[tuple[float, float, float], tuple[float, float, float, float]]:
    """(position xyz, quaternion xyzw) of a placement, the quaternion with w >= 0."""
    quat = pin.Quaternion(m.rotation)
    quat.normalize()
    xyzw = np.array([quat.x, quat.y, quat.z, quat.w])
    if xyzw[3] < 0:
        xyzw = -xyzw
    t = m.translation
    return (float(t[0]), float(t[1]), float(t[2])), tuple(float(v) for v in xyzw)  # type: ignore[return-value]
