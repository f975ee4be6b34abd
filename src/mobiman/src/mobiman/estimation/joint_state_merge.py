"""Merge the /hdas/feedback_* topics into one joint state for robot_state_publisher.

HDAS publishes per group, with two quirks a URDF consumer must not see: an arm's 7th
entry is the gripper's first finger (the second finger mirrors it in the linkage), and
the chassis feedback carries steer angles as positions but wheel *linear speeds* as
velocities, so wheel angles are integrated here from speed / radius.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from r1_common.settings import Settings, setting

FEEDBACK_MARGIN = 0.5      # beyond a joint's range by more: not merged (r1_common.validation.FEEDBACK_MARGIN)
MAX_WHEEL_SPEED = 10.0     # [m/s] a wheel speed beyond this is no measurement: not integrated


@dataclass(frozen=True)
class WheelSettings(Settings):
    """The wheels' part of a merging node's parameters (its settings derive from this)."""

    wheel_radius: float = setting(0.07, "m; the wheels' radius: the chassis feedback's wheel linear speeds "
                                  "become wheel angles", low=0.001)


class JointStateMerger:
    """Feedback messages in, one joint state out (names sorted; rad, rad/s).

    `wheel_joints`: the wheels in the chassis feedback's order; `wheel_radius` [m].
    `ranges`: joint -> (lower, upper), the joints the merged state may name (the URDF's). An entry
    naming another joint, or not finite, or beyond its range by more than FEEDBACK_MARGIN, is
    ignored (`ignored` counts them): a publisher's made-up names or values never reach
    robot_state_publisher, nor pile up here."""

    def __init__(self, wheel_joints: Sequence[str], wheel_radius: float,
                 ranges: Mapping[str, tuple[float, float]] | None = None):
        self.wheel_joints = list(wheel_joints)
        self.wheel_radius = float(wheel_radius)
        self.ranges = None if ranges is None else dict(ranges)
        self.ignored = 0
        self.positions: dict[str, float] = {}
        self.velocities: dict[str, float] = {}
        self._wheel_angle = [0.0] * len(self.wheel_joints)
        self._wheel_stamp: float | None = None

    def add_group(self, names: Sequence[str], positions: Sequence[float], velocities: Sequence[float]) -> None:
        """An arm or torso feedback message (URDF joint names; gripper finger1 mirrored onto finger2)."""
        for i, (name, p) in enumerate(zip(names, positions)):
            v = velocities[i] if i < len(velocities) else 0.0
            if not self._takes(name, p, v):
                continue
            self.positions[name], self.velocities[name] = float(p), float(v)
            if name.endswith("gripper_finger_joint1"):
                twin = name.replace("joint1", "joint2")
                self.positions[twin], self.velocities[twin] = float(p), float(v)

    def add_chassis(self, names: Sequence[str], steer: Sequence[float], wheel_speeds: Sequence[float],
                    stamp: float) -> None:
        """Chassis feedback: steer angles, wheel linear speeds [m/s] integrated to wheel angles."""
        for name, p in zip(names, steer):
            if self._takes(name, p, 0.0):
                self.positions[name], self.velocities[name] = float(p), 0.0
        n = len(self.wheel_joints)
        speeds = [float(v) for v in wheel_speeds[:n]] + [0.0] * (n - len(wheel_speeds[:n]))
        if not all(abs(v) <= MAX_WHEEL_SPEED for v in speeds):      # (False for NaN too)
            self.ignored += 1
            return
        if self._wheel_stamp is not None:
            dt = max(0.0, min(stamp - self._wheel_stamp, 0.1))     # a gap is not a spin
            for k, v in enumerate(speeds):
                self._wheel_angle[k] = math.remainder(self._wheel_angle[k] + v / self.wheel_radius * dt, math.tau)
        self._wheel_stamp = stamp
        for k, name in enumerate(self.wheel_joints):
            self.positions[name] = self._wheel_angle[k]
            self.velocities[name] = speeds[k] / self.wheel_radius

    def _takes(self, name: str, position: float, velocity: float) -> bool:
        ok = math.isfinite(position) and math.isfinite(velocity)
        if ok and self.ranges is not None:
            lo, hi = self.ranges.get(name, (math.nan, math.nan))
            ok = lo - FEEDBACK_MARGIN <= position <= hi + FEEDBACK_MARGIN     # False for unknown names (NaN)
        self.ignored += not ok
        return ok

    def joint_state(self) -> tuple[list[str], list[float], list[float]]:
        """The merged state: names (sorted), positions, velocities."""
        names = sorted(self.positions)
        return names, [self.positions[n] for n in names], [self.velocities[n] for n in names]
