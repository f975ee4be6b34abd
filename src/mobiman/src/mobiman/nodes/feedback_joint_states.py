"""feedback_joint_states: /hdas/feedback_* -> /joint_states for robot_state_publisher (the merge is
mobiman.estimation.joint_state_merge).

Reports on /diagnostics at 1 Hz (`feedback_joint_states: joint_states`): the standard loop keys of
r1_common.loop_stats, one tick per /joint_states message; latency is the age of the oldest feedback the
message is made of (its header stamp to the publish, ROS time).
"""
from __future__ import annotations

import threading
import time

import rospy
from diagnostic_msgs.msg import DiagnosticStatus
from sensor_msgs.msg import JointState

from mobiman.estimation.joint_state_merge import JointStateMerger
from r1_common.diagnostics import DiagnosticsPublisher, status
from r1_common.loop_stats import LoopStats
from r1_common.ros_io import stop_within
from r1_common.throttle import Throttle

NODE = "feedback_joint_states"
GROUP_TOPICS = ["/hdas/feedback_arm_left", "/hdas/feedback_arm_right", "/hdas/feedback_torso"]


def main() -> None:
    rospy.init_node(NODE)
    stop_within()   # gone within seconds of a SIGINT, whatever hangs
    merger = JointStateMerger(rospy.get_param("~wheel_joints", ["wheel_motor_joint1", "wheel_motor_joint2",
                                                                "wheel_motor_joint3"]),
                              rospy.get_param("~wheel_radius", 0.07))
    lock = threading.Lock()
    throttle = Throttle(period=5.0)
    stats = LoopStats()
    stamps: dict[str, float] = {}          # topic -> the latest feedback's stamp
    counts = {"errors": 0, "published": 0}

    def merged(topic: str, msg: JointState, add) -> None:
        try:
            with lock:
                add()
                stamps[topic] = msg.header.stamp.to_sec() if not msg.header.stamp.is_zero() else rospy.get_time()
        except Exception as e:      # a malformed message must not end the merge
            counts["errors"] += 1
            throttle(rospy.logerr, topic, f"{NODE}: {topic} message not merged: {e!r}")

    def subscribe(topic: str, chassis: bool) -> None:
        def on_msg(msg: JointState) -> None:
            if chassis:
                merged(topic, msg, lambda: merger.add_chassis(msg.name, msg.position, msg.velocity,
                                                              msg.header.stamp.to_sec()))
            else:
                merged(topic, msg, lambda: merger.add_group(msg.name, msg.position, msg.velocity))
        rospy.Subscriber(topic, JointState, on_msg, queue_size=1)

    for topic in rospy.get_param("~group_topics", GROUP_TOPICS):
        subscribe(topic, False)
    subscribe(rospy.get_param("~chassis_topic", "/hdas/feedback_chassis"), True)
    pub = rospy.Publisher("/joint_states", JointState, queue_size=1)

    def diagnostics() -> list:
        values = stats.values(rospy.get_time(), {"errors": counts["errors"], "published": counts["published"],
                                                 "sources": len(stamps)})
        level, message = (DiagnosticStatus.OK, f"{len(stamps)} feedback topics merged") if stamps else \
            (DiagnosticStatus.WARN, "no feedback yet")
        return [status(f"{NODE}: joint_states", "joint_states", level, message, values)]

    _diag = DiagnosticsPublisher(diagnostics, name=NODE)   # noqa: F841 (its thread publishes)
    rate = rospy.Rate(rospy.get_param("~rate_hz", 50.0))
    while not rospy.is_shutdown():
        t0 = time.perf_counter()
        with lock:
            names, positions, velocities = merger.joint_state()
            oldest = min(stamps.values()) if stamps else None
        if names:
            msg = JointState(name=names, position=positions, velocity=velocities)
            msg.header.stamp = rospy.Time.now()
            pub.publish(msg)
            counts["published"] += 1
            sent = msg.header.stamp.to_sec()
            stats.tick(sent, time.perf_counter() - t0, sent - oldest if oldest is not None else float("nan"))
        try:
            rate.sleep()
        except rospy.ROSInterruptException:
            break

