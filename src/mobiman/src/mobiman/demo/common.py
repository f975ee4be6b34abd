"""What the scripted demo's steps share: an outcome and its table, the latest message of a topic, planar
poses and pose errors."""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import rospy
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from scipy.spatial.transform import Rotation

__all__ = ["Latest", "Outcome", "in_frame", "planar", "pose_error", "table"]


@dataclass
class Outcome:
    """One measured result of the demo against what was asked."""

    step: str
    quantity: str
    measured: float
    expected: float
    tolerance: float
    unit: str

    @property
    def ok(self) -> bool:
        return math.isfinite(self.measured) and abs(self.measured - self.expected) <= self.tolerance


class Latest:
    """The latest message of a topic (thread-safe); None before the first."""

    def __init__(self, topic: str, cls: type):
        self.msg: Any = None
        self._lock = threading.Lock()
        self.sub = rospy.Subscriber(topic, cls, self._cb, queue_size=1)

    def _cb(self, msg: Any) -> None:
        with self._lock:
            self.msg = msg

    def get(self) -> Any:
        with self._lock:
            return self.msg


def planar(m: Odometry) -> np.ndarray:
    q = m.pose.pose.orientation
    yaw = math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))
    return np.array([m.pose.pose.position.x, m.pose.pose.position.y, yaw])


def in_frame(origin: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """`pose` (x, y, yaw) in the frame of `origin`."""
    c, s = math.cos(origin[2]), math.sin(origin[2])
    d = pose[:2] - origin[:2]
    dyaw = math.atan2(math.sin(pose[2] - origin[2]), math.cos(pose[2] - origin[2]))
    return np.array([c * d[0] + s * d[1], -s * d[0] + c * d[1], dyaw])


def pose_error(msg: PoseStamped, target: Sequence[float]) -> tuple[float, float]:
    p, o = msg.pose.position, msg.pose.orientation
    dp = float(np.linalg.norm(np.array([p.x, p.y, p.z]) - np.asarray(target[:3])))
    r = Rotation.from_quat([o.x, o.y, o.z, o.w]).inv() * Rotation.from_quat(target[3:])
    return dp, float(np.linalg.norm(r.as_rotvec()))


def table(outcomes: Sequence[Outcome]) -> str:
    rows = [("step", "quantity", "measured", "expected", "tolerance", "ok")]
    for o in outcomes:
        rows.append((o.step, o.quantity, f"{o.measured:.4f} {o.unit}", f"{o.expected:.4f} {o.unit}",
                     f"±{o.tolerance:.4f}", "yes" if o.ok else "NO"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
