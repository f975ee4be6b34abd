"""torso_speed_control: the guide's torso speed control (躯干速度控制), a thin ROS wrapper.

Speed commands (Twist: linear.x = v_x, linear.z = v_z of torso_link3 in base_link axes) and
joint targets (JointState, as the joint tracker takes them) go into
`mobiman.torso.speed_control.TorsoSpeedController`; each torso feedback message is one tick of
`mobiman.torso.loop.TorsoLoop` and one hdas_msg/motor_control (MIT: p_des, v_des from the controller,
kp, kd from the config, t_ff from the upper body's dynamics on the moving base and the servo's
damping, `mobiman.control`). The arms' feedback, the base's motion (chassis control's commanded
acceleration, the measured twist) and the driver's torso status (motors off: the command re-seeds)
come from their topics. No feedback, no output; stale feedback, no output until it is back. Must not
run with the joint tracker's torso output (use r1_jointTrackerdemo_disable_torso.launch).
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, List

import numpy as np
import pinocchio as pin
import rospkg
import rospy
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped, Twist
from hdas_msg.msg import motor_control
from sensor_msgs.msg import JointState

from mobiman.model.robot_model import RobotModel, load_group_config
from mobiman.nodes.world_inputs import BaseMotionTopics, MotorPowerTopic
from mobiman.torso.loop import TorsoLoop
from mobiman.torso.speed_control import CommandError, TorsoSpeedConfig
from mobiman.tracker.group import Feedback
from mobiman.tracker.joint_tracker import TargetError, read_target
from r1_common.diagnostics import DiagnosticsPublisher, status
from r1_common.loop_stats import LoopStats
from r1_common.ros_io import DirectPublisher, QuietPublisher, WallTimer, run_node
from r1_common.settings import ConfigError
from r1_common.throttle import Throttle

LOG = {"info": rospy.loginfo, "warn": rospy.logwarn, "error": rospy.logerr}


class TorsoSpeedNode:
    def __init__(self, params: dict[str, Any] | None = None, name: str | None = None) -> None:
        """`params`, `name`: this node's private parameters and name when it is hosted in another process
        (`mobiman.nodes.controller_host`); by default the process's own node. ConfigError for a
        configuration it cannot use (naming the key)."""
        self.name = name or rospy.get_name()
        self.throttle = Throttle(period=5.0)
        cfg = TorsoSpeedConfig.from_params(rospy.get_param("~", {}) if params is None else params)
        groups_file = cfg.joint_groups_file or str(
            Path(rospkg.RosPack().get_path("mobiman")) / "config/r1_joint_groups.yaml")
        joint_groups, _ = load_group_config(groups_file)
        urdf = rospy.get_param(cfg.robot_description_param, "")
        if not urdf:
            raise ConfigError(cfg.robot_description_param, "no robot description (URDF) on the parameter server")
        self.model = RobotModel(urdf, joint_groups, planar_base=True)
        self.loop = TorsoLoop(self.model, cfg)
        self.core = self.loop.controller
        self.clock = self.loop.clock                   # the feedback's freshness (and the core's ticks)
        self.torso_joints = list(joint_groups["torso"])
        self.urdf_joints = frozenset(self.model.joint_names)
        self.lock = threading.Lock()                   # the loop, the controller and the pinocchio data
        # one tick per feedback message: rate (ROS time), compute, latency = the feedback's stamp ->
        # the motor_control publish
        self.stats = LoopStats()
        self.last_state: np.ndarray | None = None      # measured (x, z, pitch)

        self.out = DirectPublisher(cfg.command_topic, motor_control, tcp_nodelay=True)
        self.state_pub = QuietPublisher(f"{self.name}/torso_link3", PoseStamped, queue_size=1)   # ~torso_link3
        self.base = BaseMotionTopics(cfg.base_acceleration_topic, cfg.base_twist_topic, cfg.base_timeout, self.name,
                                     self.throttle)
        self.power = MotorPowerTopic(cfg.status_topic, "torso", self.torso_joints, self._on_power, self.name,
                                     self.throttle) if cfg.status_topic else None
        rospy.Subscriber(cfg.speed_topic, Twist, self._on_speed, queue_size=10, tcp_nodelay=True)
        rospy.Subscriber(cfg.target_topic, JointState, self._on_target, queue_size=10, tcp_nodelay=True)
        rospy.Subscriber(cfg.feedback_topic, JointState, self._on_feedback, queue_size=1, tcp_nodelay=True)
        for group, topic in (("left_arm", cfg.left_arm_feedback_topic), ("right_arm", cfg.right_arm_feedback_topic)):
            # the arms' posture shapes the torso's load
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
            self.loop.body.set(group, msg.position)
        except ValueError as e:
            self.throttle(rospy.logerr, f"{group}/feedback", f"{self.name}: {group} feedback ignored: {e}")

    def _on_power(self, powered: List[bool]) -> None:
        with self.lock:
            self.loop.motors(powered)

    def _on_feedback(self, msg: JointState) -> None:
        """One tick: the feedback message drives the controller and the output."""
        t0 = time.perf_counter()
        received = rospy.get_time()
        self.loop.body.set_base(self.base.at(received))
        with self.lock:
            cmd = self.loop.update(Feedback(msg.position, msg.velocity, msg.header.stamp.to_sec()), received)
            events, self.loop.events = self.loop.events, []
            if cmd is not None:
                pose = self.core.frame_pose(self.loop.measured)
                state = self.core.state_of(pose)
        for level, key, text in events:
            if key is None:
                LOG[level](f"{self.name}: {text}")
            else:
                self.throttle(LOG[level], key, f"{self.name}: {text}")
        if cmd is None:
            return
        out = motor_control()
        out.header.stamp = rospy.Time.now()
        out.name = "torso"
        out.p_des, out.v_des, out.kp, out.kd, out.t_ff = cmd.p_des, cmd.v_des, cmd.kp, cmd.kd, cmd.t_ff
        self.out.publish(out)
        assert cmd.stamp is not None, "a tick's command carries its feedback's time"
        taken = not msg.header.stamp.is_zero() and msg.header.stamp.to_sec() == cmd.stamp   # (else: off the clock)
        self._publish_state(msg.header.stamp if taken else rospy.Time.from_sec(cmd.stamp), pose)
        self.last_state = state
        sent = out.header.stamp.to_sec()
        self.stats.tick(sent, time.perf_counter() - t0,
                        sent - cmd.stamp if not msg.header.stamp.is_zero() else float("nan"))

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
            counters, off = dict(self.loop.counters), self.core.guard.off
            delay, base = self.loop.delay, self.loop.body.base
        state = "waiting for feedback" if not started else ("feedback stale" if stale else
                                                            ("motors off" if off else mode))
        level = DiagnosticStatus.WARN if stale or not started or off else DiagnosticStatus.OK
        values = {"dropped": stats["dropped"], "clamped": stats["clamped"], "errors": counters["bad_feedback"],
                  "cartesian_velocity": np.round(v, 4).tolist(),
                  "torso_link3_x_z_pitch": [] if self.last_state is None else np.round(self.last_state, 4).tolist(),
                  "stale_feedback_events": self.clock.stale_events, "bad_feedback": counters["bad_feedback"],
                  "bad_stamps": counters["bad_stamps"], "torque_clamped": counters["torque_clamped"],
                  "loop_delay_ms": round(delay * 1e3, 1), "base_acceleration": list(np.round(base.acceleration, 3)),
                  "base_dropped": self.base.dropped, **stats}
        return [status(f"{self.name}: torso speed control", "torso", level, state, self.stats.values(now, values))]


def main() -> None:
    run_node("torso_speed_control", TorsoSpeedNode)
