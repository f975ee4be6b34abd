"""r1_jointTracker_demo_node: joint targets -> motor commands, one Ruckig tracker per group.

The ROS plumbing around `mobiman.tracker.group.GroupController` (one per group: torso, both arms):
each feedback message of a group is one tick of its controller (so the output runs at the feedback
rate, 500 Hz on the R1), and what the controller returns is published as one hdas_msg/motor_control;
None publishes nothing (no feedback, no output). A new target is answered at once when the
controller returns a command for it (`react_to_targets`). The settings are declared in
`mobiman.tracker.settings`; docs/joint_tracker.md describes the behaviour.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import rospkg
import rospy
from diagnostic_msgs.msg import DiagnosticStatus
from hdas_msg.msg import motor_control
from sensor_msgs.msg import JointState

from mobiman.control.upper_body import UpperBody
from mobiman.model.robot_model import RobotModel, load_group_config
from mobiman.nodes.world_inputs import BaseMotionTopics, MotorPowerTopic
from mobiman.tracker.group import GROUPS, Feedback, GroupCommand, GroupController, build_groups
from mobiman.tracker.settings import JointTrackerSettings
from r1_common.diagnostics import DiagnosticsPublisher, status
from r1_common.loop_stats import LoopStats
from r1_common.realtime import policy_name, request_fifo
from r1_common.ros_io import DirectPublisher, WallTimer, run_node
from r1_common.settings import ConfigError
from r1_common.throttle import Throttle

NAME = "r1_jointTracker_demo_node"
LOG = {"info": rospy.loginfo, "warn": rospy.logwarn, "error": rospy.logerr}
OTHER_FEEDBACK = {"torso": "/hdas/feedback_torso"}   # a group not tracked still shapes the others' gravity


@dataclass
class Group:
    """A group's controller and what the node keeps beside it: its publisher, its lock, its loop statistics."""

    ctrl: GroupController
    pub: DirectPublisher
    # one tick per feedback message: rate (ROS time), compute, latency = feedback stamp -> command
    stats: LoopStats = field(default_factory=LoopStats)
    # serialises the controller's calls; commands are published under it, so they leave in the order
    # they were computed
    lock: threading.Lock = field(default_factory=threading.Lock)


class JointTrackerNode:
    def __init__(self, params: dict[str, Any] | None = None, name: str | None = None) -> None:
        """`params`, `name`: this node's private parameters and name when it is hosted in another process
        (`mobiman.nodes.controller_host`); by default the process's own node. ConfigError for a
        configuration it cannot use (naming the key)."""
        self.throttle = Throttle(period=5.0)
        s = JointTrackerSettings.from_params(rospy.get_param("~", {}) if params is None else params)
        self.settings = s
        self.scheduling = "SCHED_OTHER"
        groups_file = s.joint_groups_file or str(
            Path(rospkg.RosPack().get_path("mobiman")) / "config/r1_joint_groups.yaml")
        joint_groups, _ = load_group_config(groups_file)
        urdf = rospy.get_param(s.robot_description_param, "")
        if not urdf:
            raise ConfigError(s.robot_description_param, "no robot description (URDF) on the parameter server")
        self.model = RobotModel(urdf, joint_groups, planar_base=True)
        # the measured upper body and the base's motion, for the feed-forward
        self.body = UpperBody(self.model, s.inertial_feedforward, s.base_feedforward)
        self.base = BaseMotionTopics(s.base_acceleration_topic, s.base_twist_topic, s.base_timeout, NAME,
                                     self.throttle)
        controllers, notes = build_groups(s, self.model, joint_groups, self.body)
        for note in notes:
            rospy.logwarn(f"{NAME}: {note}")
        self.groups: dict[str, Group] = {
            name: Group(ctrl, DirectPublisher(s.groups[name].command_topic, motor_control, tcp_nodelay=True))
            for name, ctrl in controllers.items()}
        for name, g in self.groups.items():
            cfg = s.groups[name]
            rospy.Subscriber(cfg.target_topic, JointState, self._on_target, g, queue_size=10, tcp_nodelay=True)
            rospy.Subscriber(cfg.feedback_topic, JointState, self._on_feedback, g, queue_size=1, tcp_nodelay=True)
            if cfg.status_topic:        # the driver's word on the motors: joints reported off re-plan
                MotorPowerTopic(cfg.status_topic, "torso" if name == "torso" else "arm", joint_groups[name],
                                lambda powered, g=g: self._on_power(powered, g), NAME, self.throttle)
        # other groups' feedback still shapes gravity (e.g. the torso with disable_torso)
        for name in GROUPS:
            if name not in self.groups and name in OTHER_FEEDBACK:
                rospy.Subscriber(OTHER_FEEDBACK[name], JointState, self._on_other_feedback, name, queue_size=1)
        WallTimer(0.02, self._watch, "watchdog")   # wall time: see r1_common.ros_io.WallTimer
        self._diagnostics = DiagnosticsPublisher(self._diagnostic_statuses, name=NAME)
        rospy.loginfo("%s: %s, %s output%s; waiting for feedback", NAME, ", ".join(self.groups), s.output_mode,
                      ", fast (fixed limits)" if s.fast else "")

    # -- inputs ----------------------------------------------------------------------------
    def _on_target(self, msg: JointState, g: Group) -> None:
        with g.lock:
            cmd = g.ctrl.target(msg.name, msg.position, msg.velocity)
            if cmd is not None:
                g.pub.publish(self._message(g, cmd))
        self._log(g)

    def _on_power(self, powered: list[bool], g: Group) -> None:
        with g.lock:
            g.ctrl.motors(powered)

    def _on_feedback(self, msg: JointState, g: Group) -> None:
        """One tick: the feedback message drives the trajectory and the output."""
        t0 = time.perf_counter()
        feedback = Feedback(msg.position, msg.velocity, msg.header.stamp.to_sec())
        now = rospy.get_time()
        self.body.set_base(self.base.at(now))
        with g.lock:
            cmd = g.ctrl.update(feedback, now)
            out = None if cmd is None else self._message(g, cmd)
            if out is not None:
                g.pub.publish(out)
        self._log(g)
        if out is None:
            return
        sent = out.header.stamp.to_sec()
        g.stats.tick(sent, time.perf_counter() - t0,
                     sent - cmd.stamp if not msg.header.stamp.is_zero() else float("nan"))

    def _on_other_feedback(self, msg: JointState, name: str) -> None:
        try:
            self.body.set(name, msg.position)
        except ValueError as e:
            self.throttle(rospy.logerr, f"{name}/feedback", f"{NAME}: {name} feedback ignored: {e}")

    @staticmethod
    def _message(g: Group, cmd: GroupCommand) -> motor_control:
        out = motor_control()
        out.header.stamp = rospy.Time.now()
        out.name = g.ctrl.name
        out.p_des, out.v_des, out.kp, out.kd, out.t_ff = cmd.p_des, cmd.v_des, cmd.kp, cmd.kd, cmd.t_ff
        return out

    def _log(self, g: Group) -> None:
        """The controller's events, throttled per group and key."""
        if not g.ctrl.events:
            return
        with g.lock:
            events, g.ctrl.events = g.ctrl.events, []
        for level, key, text in events:
            if key is None:
                LOG[level](f"{NAME}: {text}")
            else:
                self.throttle(LOG[level], f"{g.ctrl.name}/{key}", f"{NAME}: {text}")

    # -- supervision -----------------------------------------------------------------------
    def _watch(self, _event: Any) -> None:
        """The controllers' watchdog (mobiman.tracker.feedback_clock: stale when old in ROS time *and*
        in wall time)."""
        now = rospy.get_time()
        for g in self.groups.values():
            with g.lock:
                g.ctrl.watch(now)
            self._log(g)

    def _diagnostic_statuses(self) -> list[DiagnosticStatus]:
        """Per group: the standard loop keys (r1_common.loop_stats; a tick is one feedback message, its
        latency the feedback's stamp to the motor_control publish, in ROS time), the counters."""
        now = rospy.get_time()
        out = []
        for g in self.groups.values():
            with g.lock:
                c, state, stale = dict(g.ctrl.counters), g.ctrl.state, g.ctrl.clock.stale
                started, stale_events, ruckig_error = (g.ctrl.tracker.started, g.ctrl.clock.stale_events,
                                                       g.ctrl.tracker.last_error)
                off, delay = g.ctrl.guard.off, g.ctrl.delay
            level = DiagnosticStatus.WARN if stale or not started or off else DiagnosticStatus.OK
            values = g.stats.values(now, {
                "dropped": c["dropped"], "clamped": c["clamped"], "errors": c["bad_feedback"] + c["ruckig_errors"],
                "ticks": c["ticks"], "early_commands": c["early_commands"], "torque_clamped": c["torque_clamped"],
                "scheduling": self.scheduling, "targets_dropped": c["dropped"], "targets_clamped": c["clamped"],
                "bad_feedback": c["bad_feedback"], "bad_stamps": c["bad_stamps"],
                "ruckig_error_ticks": c["ruckig_errors"], "stale_feedback_events": stale_events,
                "resyncs": c["resyncs"], "following_error_pauses": c["paused"], "ruckig_error": ruckig_error or "",
                "motors_off": off, "loop_delay_ms": round(delay * 1e3, 1),
                "base_acceleration": list(np.round(self.body.base.acceleration, 3)), "base_dropped": self.base.dropped})
            out.append(status(f"{NAME}: {g.ctrl.name}", g.ctrl.name, level, state, values))
        return out


def _start() -> JointTrackerNode:
    node = JointTrackerNode()
    # after the node's threads exist: every one of them is moved (docs/joint_tracker.md "Scheduling")
    why_not = request_fifo(node.settings.realtime_priority)
    if why_not:
        rospy.logwarn(f"{NAME}: {why_not}")
    node.scheduling = policy_name()
    rospy.loginfo(f"{NAME}: scheduling {node.scheduling}")
    return node


def main() -> None:
    run_node(NAME, _start)
