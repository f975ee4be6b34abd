"""What the upper body's controllers hear of the world beside their own feedback (rospy): the base's
motion and the driver's word on which motors hold their joints.

Both the joint tracker and torso speed control use these, so that the two read the same topics the
same way (`mobiman.control`: the base's motion goes into the feed-forward, the motors' power into the
set-point's re-plan rule).
"""
from __future__ import annotations

import threading
from typing import Callable, List, Optional, Sequence

import rospy
from geometry_msgs.msg import AccelStamped, Twist
from hdas_msg.msg import feedback_status

from hdas.errors import TABLES
from mobiman.control.base_motion import BaseMotion, BaseMotionInput
from mobiman.control.setpoint import powered_joints
from r1_common.throttle import Throttle
from r1_common.validation import InputError


class BaseMotionTopics:
    """The base's commanded acceleration (geometry_msgs/AccelStamped: linear x, y [m/s²], angular z
    [rad/s²]) and measured twist (geometry_msgs/Twist) into a `BaseMotionInput`; thread-safe. A topic
    given as "" is not read (that part stays zero). Bad messages are dropped with a throttled error."""

    def __init__(self, acceleration_topic: str, twist_topic: str, timeout: float, name: str, throttle: Throttle):
        self.input = BaseMotionInput(timeout)
        self.lock = threading.Lock()
        self.name, self.throttle = name, throttle
        self.dropped = 0
        if acceleration_topic:
            rospy.Subscriber(acceleration_topic, AccelStamped, self._on_acceleration, queue_size=5, tcp_nodelay=True)
        if twist_topic:
            rospy.Subscriber(twist_topic, Twist, self._on_twist, queue_size=5, tcp_nodelay=True)

    def _on_acceleration(self, msg: AccelStamped) -> None:
        a, stamp = msg.accel, msg.header.stamp.to_sec()
        note = self._take(lambda values, now: self.input.set_acceleration(values, now, stamp),
                          (a.linear.x, a.linear.y, a.angular.z), "acceleration")
        if note:
            self.throttle(rospy.logwarn, "base_acceleration_stamp", f"{self.name}: base acceleration {note}")

    def _on_twist(self, msg: Twist) -> None:
        self._take(self.input.set_twist, (msg.linear.x, msg.linear.y, msg.angular.z), "twist")

    def _take(self, setter: Callable[[Sequence[float], float], Optional[str]], values: Sequence[float],
              what: str) -> Optional[str]:
        """`setter(values, now)`'s note; None when it refused them (counted, logged)."""
        try:
            with self.lock:
                return setter(values, rospy.get_time())
        except InputError as e:
            self.dropped += 1
            self.throttle(rospy.logerr, f"base_{what}", f"{self.name}: base {what} dropped: {e}")
            return None

    def at(self, now: float) -> BaseMotion:
        """The base's motion at ROS time `now` (zero for a stream older than the timeout)."""
        with self.lock:
            return self.input.at(now)


class MotorPowerTopic:
    """A group's hdas_msg/feedback_status: which of its `joints` the driver reports holding (not disabled,
    silent or faulted: hdas.errors.UNPOWERED, in the board's table `kind`), handed to `take` as a mask.
    Entries for other joints are ignored; a message naming none of the group's joints is dropped."""

    def __init__(self, topic: str, kind: str, joints: Sequence[str], take: Callable[[List[bool]], None], name: str,
                 throttle: Throttle):
        self.joints, self.take, self.name, self.throttle = list(joints), take, name, throttle
        self.mask = TABLES[kind].unpowered_mask
        self.ignored = 0
        rospy.Subscriber(topic, feedback_status, self._on_status, queue_size=5)

    def _on_status(self, msg: feedback_status) -> None:
        powered = powered_joints([(e.name, e.error_code) for e in msg.errors], self.joints, self.mask)
        if powered is None:
            self.ignored += 1
            self.throttle(rospy.logwarn, "status", f"{self.name}: a feedback_status naming none of "
                          f"{self.joints} ignored")
            return
        self.take(powered)
