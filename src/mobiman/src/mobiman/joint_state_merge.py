"""Merge the /hdas/feedback_* topics into one joint state for robot_state_publisher.

HDAS publishes per group, with two quirks a URDF consumer must not see: an arm's 7th
entry is the gripper's first finger (the second finger mirrors it in the linkage), and
the chassis feedback carries steer angles as positions but wheel *linear speeds* as
velocities, so wheel angles are integrated here from speed / radius.
"""
from __future__ import annotations

from typing import Sequence


class JointStateMerger:
    def __init__(self, wheel_joints: Sequence[str], wheel_radius: float):
        self.wheel_joints = list(wheel_joints)
        self.wheel_radius = float(wheel_radius)
        self.positions: dict[str, float] = {}
        self.velocities: dict[str, float] = {}
        self._wheel_angle = [0.0] * len(self.wheel_joints)
        self._wheel_stamp: float | None = None

    def add_group(self, names: Sequence[str], positions: Sequence[float], velocities: Sequence[float]) -> None:
        """An arm or torso feedback message (URDF joint names; gripper finger1 mirrored onto finger2)."""
        for i, (name, p) in enumerate(zip(names, positions)):
            v = velocities[i] if i < len(velocities) else 0.0
            self.positions[name], self.velocities[name] = float(p), float(v)
            if name.endswith("gripper_finger_joint1"):
                twin = name.replace("joint1", "joint2")
                self.positions[twin], self.velocities[twin] = float(p), float(v)

    def add_chassis(self, names: Sequence[str], steer: Sequence[float], wheel_speeds: Sequence[float],
                    stamp: float) -> None:
        """Chassis feedback: steer angles, wheel linear speeds [m/s] integrated to wheel angles."""
        for name, p in zip(names, steer):
            self.positions[name], self.velocities[name] = float(p), 0.0
        if self._wheel_stamp is not None:
            dt = max(0.0, min(stamp - self._wheel_stamp, 0.1))     # a gap is not a spin
            for k, v in enumerate(wheel_speeds[:len(self.wheel_joints)]):
                self._wheel_angle[k] += float(v) / self.wheel_radius * dt
        self._wheel_stamp = stamp
        for k, name in enumerate(self.wheel_joints):
            self.positions[name] = self._wheel_angle[k]
            self.velocities[name] = float(wheel_speeds[k]) / self.wheel_radius if k < len(wheel_speeds) else 0.0

    def joint_state(self) -> tuple[list[str], list[float], list[float]]:
        names = sorted(self.positions)
        return names, [self.positions[n] for n in names], [self.velocities[n] for n in names]
