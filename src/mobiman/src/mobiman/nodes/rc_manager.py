"""r1_control_manager: the remote controller -> chassis Twist and gesture presets, a thin ROS wrapper.

Reads /controller (hdas_msg/controller_signal_stamped), runs `mobiman.remote.rc_manager` at `rate_hz`
and publishes what it decides: a Twist on the chassis topic (or nothing while the host is in
control), joint targets for the joint tracker when a stick gesture fired. Diagnostics at 1 Hz.
Its private parameters are `RcManagerSettings`.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import rospy
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import Twist
from hdas_msg.msg import controller_signal_stamped
from sensor_msgs.msg import JointState

from mobiman.nodes.robot_files import joint_groups
from mobiman.remote.rc_manager import RcConfig, RcManager, Sticks
from r1_common.diagnostics import DiagnosticsPublisher, status
from r1_common.loop_stats import LoopStats
from r1_common.ros_io import QuietPublisher, WallTimer, run_node
from r1_common.settings import setting
from r1_common.throttle import Throttle
from r1_common.validation import STREAM_MAX_AGE, STREAM_MAX_AHEAD, data_time

NODE = "r1_control_manager"


@dataclass(frozen=True)
class RcManagerSettings(RcConfig):
    """The private parameters of r1_control_manager: the manager's (`RcConfig`), then these. Raises
    ValueError on construction as RcConfig does."""

    rate_hz: float = setting(20.0, "Hz; the loop (wall time, the remote's own clock)", low=1.0, high=200.0)
    sub_controller_topic: str = setting("/controller", "the remote's signal (stock name)")
    chassis_control_topic: str = setting("/motion_target/target_speed_chassis", "the Twist out (stock name)")
    torso_control_topic: str = setting("/motion_target/target_joint_state_torso", "a gesture's torso target "
                                       "(stock name)")
    left_arm_control_topic: str = setting("/motion_target/target_joint_state_arm_left",
                                          "a gesture's left arm target")
    right_arm_control_topic: str = setting("/motion_target/target_joint_state_arm_right",
                                           "a gesture's right arm target")
    joint_groups_file: str = setting("", "the joint names on the targets; empty: mobiman's "
                                     "config/r1_joint_groups.yaml")


class RcManagerNode:
    """The node: /controller in, the core's decisions out at `rate_hz`, diagnostics."""

    def __init__(self, params: Optional[Mapping[str, Any]] = None, name: Optional[str] = None) -> None:
        """`params`, `name`: this node's private parameters and name when it is hosted in another process
        (`mobiman.nodes.controller_host`); by default the process's own node. Raises ConfigError naming
        the parameter before it subscribes or publishes anything."""
        where = name or rospy.get_name()
        s = RcManagerSettings.from_params(rospy.get_param("~", {}) if params is None else params, where=where)
        cfg, notes = s.clamped()
        self.joint_names, _ = joint_groups(s.joint_groups_file, f"{where}/joint_groups_file")
        for note in notes:
            rospy.logwarn(f"{NODE}: {note}")
        self.throttle = Throttle(period=5.0)
        self.core = RcManager(cfg)
        self.lock = threading.Lock()
        self.last_ros = self.last_wall = None
        self.sample_stamp: float | None = None     # the last sample's header stamp (arrival when unstamped)
        # one tick per loop step: rate (ROS time), compute, latency = the stick sample's stamp -> the
        # Twist or joint targets published from it (n/a while nothing is published: host mode)
        self.stats = LoopStats()
        self.received = self.dropped = self.twists = 0
        self.last_twist = None
        self.chassis_pub = QuietPublisher(s.chassis_control_topic, Twist, queue_size=1)
        self.target_pubs = {
            "torso": QuietPublisher(s.torso_control_topic, JointState, queue_size=3),
            "left_arm": QuietPublisher(s.left_arm_control_topic, JointState, queue_size=3),
            "right_arm": QuietPublisher(s.right_arm_control_topic, JointState, queue_size=3)}
        rospy.Subscriber(s.sub_controller_topic, controller_signal_stamped, self._on_controller, queue_size=10)
        WallTimer(1.0 / s.rate_hz, self._tick, "tick")   # wall time, as the remote's own clock: ros_io.WallTimer
        self._diagnostics = DiagnosticsPublisher(self._diagnostic_statuses, name=NODE)
        rospy.loginfo(f"{NODE}: {s.sub_controller_topic} -> {self.chassis_pub.resolved_name} at {s.rate_hz:g} Hz "
                      f"(mode {cfg.drive_mode}: remote drives, mode {cfg.host_mode}: silent); gestures "
                      f"{', '.join(cfg.gestures) or 'none'}")

    def _on_controller(self, msg: controller_signal_stamped) -> None:
        d = msg.data
        sig = Sticks(d.left_x_axis, d.left_y_axis, d.right_x_axis, d.right_y_axis, int(d.mode))
        with self.lock:
            try:
                self.core.on_signal(sig, time.monotonic())     # gesture holds: the operator's (wall) time
            except ValueError as e:
                self.dropped += 1
                self.throttle(rospy.logerr, "bad", f"{NODE}: /controller sample dropped: {e}")
                return
            self.received += 1
            self.last_ros, self.last_wall = rospy.get_time(), time.monotonic()
            # the stamp only measures latency here; one off the clock is taken as the arrival
            self.sample_stamp, _ = data_time(msg.header.stamp.to_sec(), self.last_ros, STREAM_MAX_AGE,
                                             STREAM_MAX_AHEAD)

    def _age(self) -> float | None:
        """Age of the last sample; old only when old in ROS time *and* wall time (a simulated
        clock that jumps, or a stall of this process, is not a silent receiver)."""
        if self.last_ros is None:
            return None
        return min(rospy.get_time() - self.last_ros, time.monotonic() - self.last_wall)

    def _tick(self, _event: Any) -> None:
        t0 = time.perf_counter()
        with self.lock:
            out = self.core.step(time.monotonic(), self._age())
            sample = self.sample_stamp
        if out.twist is not None:
            t = Twist()
            t.linear.x, t.linear.y, t.angular.z = out.twist.linear_x, out.twist.linear_y, out.twist.angular_z
            self.chassis_pub.publish(t)
            self.twists += 1
            self.last_twist = out.twist
        for target in out.targets:
            names = list(self.joint_names.get(target.group, []))
            msg = JointState(name=names if len(names) == len(target.positions) else [],
                             position=list(target.positions), velocity=list(target.velocities))
            msg.header.stamp = rospy.Time.now()
            self.target_pubs[target.group].publish(msg)
        now = rospy.get_time()
        published = out.twist is not None or bool(out.targets)
        self.stats.tick(now, time.perf_counter() - t0,
                        now - sample if published and sample is not None else float("nan"))
        if out.targets:
            rospy.loginfo(f"{NODE}: gesture: targets sent to " + ", ".join(
                f"{t.group} {list(t.positions)}" for t in out.targets))

    def _diagnostic_statuses(self) -> list[DiagnosticStatus]:
        """The standard loop keys (r1_common.loop_stats), the counters, then the manager's state."""
        with self.lock:
            state, sig, fired, age = self.core.state, self.core.signal, self.core.fired_count, self._age()
        level = DiagnosticStatus.OK if state in ("remote drives", "host in control") or state.startswith("gesture") \
            else DiagnosticStatus.WARN
        tw = self.last_twist
        values = {"dropped": self.dropped, "mode": "" if sig is None else sig.mode,
                  "signal_age_s": "" if age is None else f"{age:.3f}", "received": self.received,
                  "twists_published": self.twists, "gestures_fired": fired,
                  "last_twist": "" if tw is None else f"{tw.linear_x:.3f} {tw.linear_y:.3f} {tw.angular_z:.3f}"}
        return [status(f"{NODE}: remote", "remote", level, state, self.stats.values(rospy.get_time(), values))]


def main() -> None:
    """The process's node (`rosrun mobiman r1_control_manager`): a bad parameter ends it with exit 1."""
    run_node(NODE, RcManagerNode)
