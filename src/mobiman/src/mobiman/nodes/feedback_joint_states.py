"""feedback_joint_states: /hdas/feedback_* -> /joint_states for robot_state_publisher (the merge is
mobiman.estimation.joint_state_merge).

Publishes the merged state at `rate_hz` (ROS time) once any feedback came. Reports on /diagnostics at
1 Hz (`feedback_joint_states: joint_states`): the standard loop keys of r1_common.loop_stats, one tick per
/joint_states message; latency is the age of the oldest feedback the message is made of (its header
stamp to the publish, ROS time). Its private parameters are `FeedbackJointStatesSettings`.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional

import rospy
from diagnostic_msgs.msg import DiagnosticStatus
from sensor_msgs.msg import JointState

from mobiman.estimation.joint_state_merge import JointStateMerger, WheelSettings
from r1_common.diagnostics import DiagnosticsPublisher, status
from r1_common.loop_stats import LoopStats
from r1_common.ros_io import run_node
from r1_common.settings import setting
from r1_common.throttle import Throttle

NODE = "feedback_joint_states"


@dataclass(frozen=True)
class FeedbackJointStatesSettings(WheelSettings):
    """The private parameters of feedback_joint_states (`wheel_radius` from `WheelSettings`)."""

    wheel_joints: List[str] = setting(["wheel_motor_joint1", "wheel_motor_joint2", "wheel_motor_joint3"],
                                      "the wheel joints in the chassis feedback's order")
    group_topics: List[str] = setting(["/hdas/feedback_arm_left", "/hdas/feedback_arm_right",
                                       "/hdas/feedback_torso"], "the arm and torso feedback (URDF joint names)")
    chassis_topic: str = setting("/hdas/feedback_chassis", "the chassis feedback (steer angles, wheel speeds)")
    rate_hz: float = setting(50.0, "Hz; the rate of /joint_states (ROS time)", low=1.0, high=1000.0)


class FeedbackJointStates:
    """The node: every feedback message merged, the merged state published at `rate_hz`."""

    def __init__(self, params: Optional[Mapping[str, Any]] = None, name: Optional[str] = None) -> None:
        """`params`, `name`: this node's private parameters and name when it is hosted in another process;
        by default the process's own node. Raises ConfigError naming the parameter before it subscribes or
        publishes anything."""
        where = name or rospy.get_name()
        s = FeedbackJointStatesSettings.from_params(rospy.get_param("~", {}) if params is None else params,
                                                    where=where)
        self.merger = JointStateMerger(s.wheel_joints, s.wheel_radius)
        self.lock = threading.Lock()
        self.throttle = Throttle(period=5.0)
        self.stats = LoopStats()
        self.stamps: Dict[str, float] = {}          # topic -> the latest feedback's stamp
        self.counts = {"errors": 0, "published": 0}
        for topic in s.group_topics:
            rospy.Subscriber(topic, JointState, self._on_group, topic, queue_size=1)
        rospy.Subscriber(s.chassis_topic, JointState, self._on_chassis, s.chassis_topic, queue_size=1)
        self.pub = rospy.Publisher("/joint_states", JointState, queue_size=1)
        self._diagnostics = DiagnosticsPublisher(self._diagnostic_statuses, name=NODE)
        self._timer = rospy.Timer(rospy.Duration(1.0 / s.rate_hz), self._publish)

    def _on_group(self, msg: JointState, topic: str) -> None:
        self._merge(topic, msg, lambda: self.merger.add_group(msg.name, msg.position, msg.velocity))

    def _on_chassis(self, msg: JointState, topic: str) -> None:
        self._merge(topic, msg, lambda: self.merger.add_chassis(msg.name, msg.position, msg.velocity,
                                                                msg.header.stamp.to_sec()))

    def _merge(self, topic: str, msg: JointState, add: Callable[[], None]) -> None:
        try:
            with self.lock:
                add()
                self.stamps[topic] = msg.header.stamp.to_sec() if not msg.header.stamp.is_zero() \
                    else rospy.get_time()
        except Exception as e:      # a malformed message must not end the merge
            self.counts["errors"] += 1
            self.throttle(rospy.logerr, topic, f"{NODE}: {topic} message not merged: {e!r}")

    def _publish(self, _event: Any) -> None:
        t0 = time.perf_counter()
        with self.lock:
            names, positions, velocities = self.merger.joint_state()
            oldest = min(self.stamps.values()) if self.stamps else None
        if not names:
            return
        msg = JointState(name=names, position=positions, velocity=velocities)
        msg.header.stamp = rospy.Time.now()
        self.pub.publish(msg)
        self.counts["published"] += 1
        sent = msg.header.stamp.to_sec()
        self.stats.tick(sent, time.perf_counter() - t0, sent - oldest if oldest is not None else float("nan"))

    def _diagnostic_statuses(self) -> List[DiagnosticStatus]:
        """The standard loop keys (r1_common.loop_stats), then the counters."""
        values = self.stats.values(rospy.get_time(), {"errors": self.counts["errors"],
                                                      "published": self.counts["published"],
                                                      "sources": len(self.stamps)})
        level, message = (DiagnosticStatus.OK, f"{len(self.stamps)} feedback topics merged") if self.stamps else \
            (DiagnosticStatus.WARN, "no feedback yet")
        return [status(f"{NODE}: joint_states", "joint_states", level, message, values)]


def main() -> None:
    """The process's node (`rosrun mobiman feedback_joint_states`): a bad parameter ends it with exit 1."""
    run_node(NODE, FeedbackJointStates)
