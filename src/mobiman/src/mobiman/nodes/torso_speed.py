"""torso_speed_control: the guide's torso speed control (躯干速度控制), a thin ROS wrapper.

Speed commands (Twist: linear.x = v_x, linear.z = v_z of torso_link3 in base_link axes) and
joint targets (JointState, as the joint tracker takes them) go into
`mobiman.torso.speed_control.TorsoSpeedController`; each torso feedback message is one tick of it and
one hdas_msg/motor_control (MIT: p_des, v_des from the controller, kp, kd from the config,
t_ff = RNEA gravity of the upper body, arms at their measured posture, plus M(q)·q̈ of the
command). No feedback, no
output; stale feedback, no output until it is back. Must not run with the joint tracker's torso
output (use r1_jointTrackerdemo_disable_torso.launch).
"""
from __future__ import annotations

import math
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
import rospkg
import rospy
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped, Twist
from hdas_msg.msg import motor_control
from sensor_msgs.msg import JointState

from mobiman.model.robot_model import RobotModel, load_group_config
from mobiman.torso.speed_control import CommandError, TorsoSpeedConfig, TorsoSpeedController
from mobiman.tracker.joint_tracker import (
    Posture,
    TargetError,
    clamp_effort,
    feedforward_at,
    friction_feedforward,
    read_target,
)
from r1_common.diagnostics import DiagnosticsPublisher, status
from r1_common.loop_stats import LoopStats
from r1_common.ros_io import DirectPublisher, QuietPublisher, WallTimer, run_node
from r1_common.settings import ConfigError
from r1_common.throttle import Throttle
from r1_common.validation import FEEDBACK_MARGIN, InputError, plausible_positions


class TorsoSpeedNode:
    def __init__(self, params: dict[str, Any] | None = None, name: str | None = None) -> None:
        """`params`, `name`: this node's private parameters and name when it is hosted in another process
        (`mobiman.nodes.controller_host`); by default the process's own node. ConfigError for a
        configuration it cannot use (naming the key)."""
        self.name = name or rospy.get_name()
        self.throttle = Throttle(period=5.0)
        cfg = TorsoSpeedConfig.from_params(rospy.get_param("~", {}) if params is None else params)
        self.gravity_at_plan = cfg.gravity_at == "planned"
        self.inertial = cfg.inertial_feedforward
        groups_file = cfg.joint_groups_file or str(
            Path(rospkg.RosPack().get_path("mobiman")) / "config/r1_joint_groups.yaml")
        joint_groups, _ = load_group_config(groups_file)
        urdf = rospy.get_param(cfg.robot_description_param, "")
        if not urdf:
            raise ConfigError(cfg.robot_description_param, "no robot description (URDF) on the parameter server")
        self.model = RobotModel(urdf, joint_groups)
        self.core = TorsoSpeedController(self.model, cfg)
        self.clock = self.core.clock                   # the feedback's freshness (and the core's ticks)
        self.torso_joints = list(joint_groups["torso"])
        self.urdf_joints = frozenset(self.model.model.names[1:])
        self.effort = self.model.limits("torso").effort.copy()     # t_ff stays within the URDF's torque limits
        self.torque_clamped = 0
        self.kp, self.kd = np.array(cfg.kp, float), np.array(cfg.kd, float)
        self.friction_coulomb = np.array(cfg.friction_coulomb, float)
        self.friction_viscous = np.array(cfg.friction_viscous, float)
        self.friction_smoothing = cfg.friction_smoothing
        self.lock = threading.Lock()                   # the core and the pinocchio data
        self.posture = Posture(self.model)             # the measured upper body, for gravity (under lock)
        self.bad_feedback, self.bad_stamps = 0, 0
        # one tick per feedback message: rate (ROS time), compute, latency = the feedback's stamp ->
        # the motor_control publish
        self.stats = LoopStats()
        self.last_state: np.ndarray | None = None      # measured (x, z, pitch)

        self.out = DirectPublisher(cfg.command_topic, motor_control, tcp_nodelay=True)
        self.state_pub = QuietPublisher(f"{self.name}/torso_link3", PoseStamped, queue_size=1)   # ~torso_link3
        rospy.Subscriber(cfg.speed_topic, Twist, self._on_speed, queue_size=10, tcp_nodelay=True)
        rospy.Subscriber(cfg.target_topic, JointState, self._on_target, queue_size=10, tcp_nodelay=True)
        rospy.Subscriber(cfg.feedback_topic, JointState, self._on_feedback, queue_size=1, tcp_nodelay=True)
        for group, topic in (("left_arm", cfg.left_arm_feedback_topic), ("right_arm", cfg.right_arm_feedback_topic)):
            # the arms' posture shapes the torso's gravity load
            rospy.Subscriber(topic, JointState, self._on_arm_feedback, group, queue_size=1)
        WallTimer(0.02, self._watch, "watchdog")   # wall time: see r1_common.ros_io.WallTimer
        self._diagnostics = DiagnosticsPublisher(self._diagnostic_statuses, name=self.name)
        rospy.loginfo(f"{self.name}: speed limit {cfg.max_speed} m/s, acceleration {cfg.max_acceleration} m/s², "
                      f"workspace x {list(cfg.workspace_x)} z {list(cfg.workspace_z)}, command timeout "
                      f"{cfg.command_timeout} s, gravity at the {cfg.gravity_at} torso posture; waiting for feedback")

    # -- inputs ----------------------------------------------------------------------------
    def _on_speed(self, msg: Twist) -> None:
        try:
            with self.lock:
                notes = self.core.set_speed(msg.linear.x, msg.linear.z, rospy.get_time())
        except CommandError as e:
            self.throttle(rospy.logerr, "bad_speed", f"{self.name}: speed command dropped: {e}")
            return
        if notes:
            self.throttle(rospy.logwarn, "clamp_speed", f"{self.name}: speed command: " + "; ".join(notes))

    def _on_target(self, msg: JointState) -> None:
        try:
            position, velocity, unknown_names = read_target(msg.name, msg.position, msg.velocity, self.torso_joints,
                                                            self.urdf_joints)
            if unknown_names:
                self.throttle(rospy.logwarn, "names", f"{self.name}: target names {list(msg.name)} are no URDF "
                              "joints: taken by index, as the vendor's node does")
            if len(position) != 4:
                raise TargetError(f"target position has {len(position)} entries; the torso takes 4")
        except TargetError as e:
            with self.lock:
                self.core.stats["dropped"] += 1       # refused here, before the core counts its own
            self.throttle(rospy.logerr, "bad_target", f"{self.name}: joint target dropped: {e}")
            return
        try:
            with self.lock:
                notes = self.core.set_target(position, velocity)
        except TargetError as e:
            self.throttle(rospy.logerr, "bad_target", f"{self.name}: joint target dropped: {e}")
            return
        if notes:
            self.throttle(rospy.logwarn, "clamp_target", f"{self.name}: joint target: " + "; ".join(notes))

    def _on_arm_feedback(self, msg: JointState, group: str) -> None:
        try:
            with self.lock:
                self.posture.set(group, msg.position)
        except ValueError as e:
            self.throttle(rospy.logerr, f"{group}/feedback", f"{self.name}: {group} feedback ignored: {e}")

    def _on_feedback(self, msg: JointState) -> None:
        """One tick: the feedback message drives the controller and the output."""
        t0 = time.perf_counter()
        try:
            if len(msg.position) != 4 or not all(map(math.isfinite, msg.position)):   # (as the tracker checks)
                raise InputError("feedback position", msg.position, "needs 4 finite entries")
            q = plausible_positions(np.array(msg.position, float), self.core.lower, self.core.upper, FEEDBACK_MARGIN,
                                    "feedback position", self.core.names)
        except InputError as e:
            self.bad_feedback += 1
            self.throttle(rospy.logerr, "feedback", f"{self.name}: torso feedback ignored: {e}")
            return
        received = rospy.get_time()
        with self.lock:
            arrival = self.clock.receive(msg.header.stamp.to_sec(), received)
            now = arrival.time
            if arrival.stamp_note:
                self.bad_stamps += 1
                self.throttle(rospy.logwarn, "stamp", f"{self.name}: torso feedback {arrival.stamp_note}")
            if arrival.back:
                self.throttle(rospy.loginfo, "back", f"{self.name}: torso feedback is back; publishing again")
            first = not self.core.started
            cmd = self.core.step(now, q)
            events, self.core.events = self.core.events, []
            self.posture.set("torso", q)
            q_dyn = self.posture.with_group("torso", cmd.position) if self.gravity_at_plan else self.posture.q
            t_ff = feedforward_at(self.model, q_dyn, "torso", cmd.acceleration if self.inertial else None,
                                  self.inertial)
            t_ff += friction_feedforward(cmd.velocity, self.friction_coulomb, self.friction_viscous,
                                         self.friction_smoothing)
            t_ff, beyond = clamp_effort(t_ff, self.effort)
            if beyond:
                self.torque_clamped += 1
            pose = self.core.frame_pose(q)
            state = self.core.state_of(pose)
        if first:
            rospy.loginfo(f"{self.name}: torso feedback arrived; holding {np.round(q, 3).tolist()}")
        for e in events:
            self.throttle(rospy.logwarn, e.split(" ")[0], f"{self.name}: {e}")
        if beyond:
            self.throttle(rospy.logwarn, "torque", f"{self.name}: feed-forward torque beyond the effort limits "
                          f"{self.effort.tolist()} N·m: clamped (the motors cannot hold this posture)")
        out = motor_control()
        out.header.stamp = rospy.Time.now()
        out.name = "torso"
        out.p_des, out.v_des = cmd.position.tolist(), cmd.velocity.tolist()
        out.kp, out.kd, out.t_ff = self.kp.tolist(), self.kd.tolist(), t_ff.tolist()
        self.out.publish(out)
        self._publish_state(rospy.Time.from_sec(now) if arrival.stamp_note or msg.header.stamp.is_zero()
                            else msg.header.stamp, pose)
        self.last_state = state
        sent = out.header.stamp.to_sec()
        self.stats.tick(sent, time.perf_counter() - t0, sent - now if not msg.header.stamp.is_zero() else float("nan"))

    def _publish_state(self, stamp: rospy.Time, pose: pin.SE3) -> None:
        if self.state_pub.get_num_connections() == 0:    # a debugging topic: not built for nobody
            return
        m = PoseStamped()
        m.header.stamp, m.header.frame_id = stamp, self.core.cfg.base_frame
        m.pose.position.x, m.pose.position.y, m.pose.position.z = pose.translation.tolist()
        qx, qy, qz, qw = pin.Quaternion(pose.rotation).coeffs().tolist()
        m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z, m.pose.orientation.w = qx, qy, qz, qw
        self.state_pub.publish(m)

    # -- supervision -----------------------------------------------------------------------
    def _watch(self, _event: Any) -> None:
        """Feedback is stale when old in ROS time *and* in wall time (mobiman.tracker.feedback_clock)."""
        now = rospy.get_time()
        with self.lock:
            went_stale = self.core.started and self.clock.check_stale(now)
        if went_stale:
            self.throttle(rospy.logwarn, "stale", f"{self.name}: torso feedback stale for "
                          f"{self.clock.age(now):.3f} s (> {self.clock.timeout} s): not publishing until "
                          f"it is back (HDAS holds the last command); {self.clock.stale_events} times so far")

    def _diagnostic_statuses(self) -> list[DiagnosticStatus]:
        """The standard loop keys (r1_common.loop_stats), the counters (dropped and clamped are the
        controller's), then its state."""
        now = rospy.get_time()
        with self.lock:
            stats, mode, v = dict(self.core.stats), self.core.mode, self.core.cartesian_velocity
            started, stale = self.core.started, self.clock.stale
        state = "waiting for feedback" if not started else ("feedback stale" if stale else mode)
        level = DiagnosticStatus.WARN if stale or not started else DiagnosticStatus.OK
        values = {"dropped": stats["dropped"], "clamped": stats["clamped"], "errors": self.bad_feedback,
                  "cartesian_velocity": np.round(v, 4).tolist(),
                  "torso_link3_x_z_pitch": [] if self.last_state is None else np.round(self.last_state, 4).tolist(),
                  "stale_feedback_events": self.clock.stale_events, "bad_feedback": self.bad_feedback,
                  "bad_stamps": self.bad_stamps,
                  "torque_clamped": self.torque_clamped, **stats}
        return [status(f"{self.name}: torso speed control", "torso", level, state, self.stats.values(now, values))]


def main() -> None:
    run_node("torso_speed_control", TorsoSpeedNode)
