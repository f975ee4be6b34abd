"""chassis_control_node: twist targets -> swerve module commands, wheel odometry.

A thin ROS wrapper around `mobiman.chassis.control` and `mobiman.chassis.swerve`, with the stock
node's private params (current_motor_topic_name, chassis_control_topic_name,
motor_command_topic_name, breaking_topic_name) and its hard-coded topics
(/motion_target/chassis_acc_limit, /motion_control/chassis_speed). Beyond the stock node:
wheel odometry on /odom with the odom -> base_footprint transform (the URDF's root).

Each chassis feedback message is one control tick: the command goes out at HDAS's chassis rate and
only while feedback flows (docs/chassis_control.md says why not a timer). Its private parameters are
`ChassisSettings`.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Mapping, Optional

import numpy as np
import rospkg
import rospy
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import AccelStamped, TransformStamped, Twist
from hdas_msg.msg import controller_signal_stamped, motor_control
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool
from tf2_msgs.msg import TFMessage

from mobiman.chassis.control import ChassisController, ChassisInputError, ChassisLimits, module_positions
from mobiman.chassis.posture_limits import PostureLimits, SupportPolygon
from mobiman.chassis.swerve import Odometry2D, SwerveKinematics, SwerveParams
from mobiman.chassis.upper_body_drive import DRIVEN, HELD, LATE, DriveWatch
from mobiman.model.robot_model import RobotModel, load_group_config
from mobiman.nodes.robot_files import robot_description
from r1_common.diagnostics import DiagnosticsPublisher, status
from r1_common.loop_stats import LoopStats
from r1_common.ros_io import DirectPublisher, WallTimer, run_node
from r1_common.settings import ConfigError, setting
from r1_common.throttle import Throttle
from r1_common.validation import (
    FEEDBACK_MARGIN,
    STREAM_MAX_AGE,
    STREAM_MAX_AHEAD,
    InputError,
    data_time,
    finite_vector,
    plausible_positions,
)

NAME = "chassis_control_node"
UPPER_BODY = ("torso", "left_arm", "right_arm")   # the groups whose posture bounds the base's acceleration
HOST_MODE = 5


@dataclass(frozen=True)
class ChassisSettings(SwerveParams, ChassisLimits):
    """The private parameters of chassis_control_node: the limits (`ChassisLimits`), the kinematics
    (`SwerveParams`), then these. Raises ValueError on construction as its bases do."""

    command_timeout: float = setting(0.2, "s; no target for this long: decelerate to zero at the limits",
                                     low=0.01)
    feedback_timeout: float = setting(0.1, "s; no chassis feedback for this long (ROS and wall time): stop "
                                      "commanding (HDAS ramps the wheels to zero)", low=0.01)
    rc_gating: bool = setting(True, "in a remote mode other than 5 (host in control) only the remote-control "
                              "manager's targets pass, as the robot's receiver vetoes host commands")
    rc_manager_node: str = setting("/r1_control_manager", "the node whose targets pass while the remote vetoes")
    rc_timeout: float = setting(0.5, "s; an older /controller message: the remote is reported silent; it still "
                                "gates until it reports mode 5 (losing the link does not hand the robot to the "
                                "host)", low=0.0)
    publish_odom: bool = setting(True, "wheel odometry on `odom_topic` (least squares over the modules, "
                                 "SE(2)-exact integration)")
    odom_topic: str = setting("/odom", "the wheel odometry's topic")
    publish_odom_tf: bool = setting(True, "odom -> base_footprint on /tf with the odometry (false when a "
                                    "localiser publishes it)")
    odom_frame: str = setting("odom", "the odometry's frame")
    odom_child_frame: str = setting("base_footprint", "the frame the odometry moves: the URDF's root, on the "
                                    "floor under base_link (REP 105)")
    base_frame: str = setting("base_link", "the frame the module positions are read in")
    steer_joints: List[str] = setting(["steer_motor_joint1", "steer_motor_joint2", "steer_motor_joint3"],
                                      "the steer joints in the feedback's order (front-left, front-right, rear)")
    robot_description_param: str = setting("robot_description", "the parameter holding the URDF")
    current_motor_topic_name: str = setting("/hdas/feedback_chassis", "the chassis feedback (stock name)")
    chassis_control_topic_name: str = setting("/motion_target/target_speed_chassis",
                                              "the twist target (stock name)")
    motor_command_topic_name: str = setting("/motion_control/control_chassis", "the module commands (stock name)")
    breaking_topic_name: str = setting("/motion_target/brake_mode", "brake mode (stock name)")
    controller_topic: str = setting("/controller", "the remote's signal (its mode gates the targets)")
    acceleration_topic: str = setting("/motion_control/chassis_acceleration",
                                      "geometry_msgs/AccelStamped out: the commanded twist's rate of change each "
                                      "tick, which the upper body's controllers feed forward (empty: not published)")
    posture_limits: bool = setting(True, "the base accelerates at most what the upper body's measured posture "
                                         "can ride: its joints within torque_share of their effort, the "
                                         "zero-moment point zmp_margin inside the wheels (docs/posture.md)")
    torque_share: float = setting(0.8, "share of each upper-body joint's effort (its motor's peak) the base's "
                                       "acceleration may ask for with gravity; the rest is the servos' margin",
                                  low=0.05, high=1.0)
    zmp_margin: float = setting(0.05, "m; the zero-moment point stays this far inside the wheels' polygon",
                                low=0.0, high=0.2)
    posture_rate_hz: float = setting(20.0, "Hz; how often the posture's limits are recomputed (feedback "
                                           "permitting)", low=0.1, high=500.0)
    torso_feedback_topic: str = setting("/hdas/feedback_torso", "sensor_msgs/JointState in: the torso's posture")
    left_arm_feedback_topic: str = setting("/hdas/feedback_arm_left", "sensor_msgs/JointState in: the left arm's "
                                                                      "posture")
    right_arm_feedback_topic: str = setting("/hdas/feedback_arm_right", "sensor_msgs/JointState in: the right "
                                                                        "arm's posture")
    hold_deflection: float = setting(0.03, "rad; an upper-body group no controller commands (HDAS holds it at rest, "
                                           "with no feed-forward) may give way this far to the base's "
                                           "acceleration, statically", low=0.005, high=0.5)
    torso_command_topic: str = setting("/motion_control/control_torso", "hdas_msg/motor_control in (only its "
                                                                        "arrival is read): a controller drives "
                                                                        "the torso")
    left_arm_command_topic: str = setting("/motion_control/control_arm_left", "as torso_command_topic, the left "
                                                                              "arm")
    right_arm_command_topic: str = setting("/motion_control/control_arm_right", "as torso_command_topic, the "
                                                                                "right arm")
    driver_command_timeout: float = setting(0.2, "s; a group's command stream silent this long: the driver holds "
                                                 "it (HDAS's command_timeout)", low=0.01, high=5.0)
    controller_lapse: float = setting(0.05, "s; a group's command stream silent this long: its controller is late, "
                                            "no feed-forward follows the base (HDAS repeats the last command), and "
                                            "the base accelerates as for a group the driver holds; at most "
                                            "driver_command_timeout", low=0.005, high=5.0)
    driver_groups_param: str = setting("/HDAS/groups", "the driver's CAN layout on the parameter server (r1_can's "
                                                       "config/r1.yaml), whose <group>/hold_kp is its hold "
                                                       "stiffness; not found: a held group counts as limp")
    joint_groups_file: str = setting("", "the joint groups (empty: mobiman's config/r1_joint_groups.yaml)")

    def __post_init__(self) -> None:
        SwerveParams.__post_init__(self)
        ChassisLimits.__post_init__(self)
        if len(self.steer_joints) < 2:
            raise ValueError(f"steer_joints must name at least two joints, not {self.steer_joints}")
        if self.controller_lapse > self.driver_command_timeout:
            raise ValueError(f"controller_lapse {self.controller_lapse} s must not exceed driver_command_timeout "
                             f"{self.driver_command_timeout} s")


def yaw_quaternion(yaw: float) -> tuple[float, float, float, float]:
    """The quaternion (x, y, z, w) of a rotation by `yaw` [rad] about +z."""
    return 0.0, 0.0, math.sin(yaw / 2.0), math.cos(yaw / 2.0)


class ChassisControlNode:
    """The node: subscriptions, the control tick on each feedback message, odometry, diagnostics."""

    def __init__(self, params: Optional[Mapping[str, Any]] = None, name: Optional[str] = None) -> None:
        """`params`, `name`: this node's private parameters and name when it is hosted in another process
        (`mobiman.nodes.controller_host`); by default the process's own node. Raises ConfigError naming
        the parameter before it subscribes or publishes anything."""
        where = name or rospy.get_name()
        s = ChassisSettings.from_params(rospy.get_param("~", {}) if params is None else params, where=where)
        urdf = robot_description(s.robot_description_param)
        try:
            xy = module_positions(urdf, s.steer_joints, s.base_frame)
        except (KeyError, ValueError, RuntimeError) as e:
            raise ConfigError(f"{where}/steer_joints", f"the URDF has no steer joints {s.steer_joints} "
                              f"in {s.base_frame}: {e}") from None
        kin = SwerveKinematics(xy, s)
        self.throttle = Throttle(period=5.0)
        self.posture = self._posture_limits(s, urdf, xy) if s.posture_limits else None
        self.posture_period = 1.0 / s.posture_rate_hz
        self.base_frame = s.base_frame
        self._posture_due = -1e9
        self.bad_posture = 0
        # the upper body's command streams (ROS time): driven, late or held; the driver's hold gains once read
        self.drive = DriveWatch(UPPER_BODY, s.controller_lapse, s.driver_command_timeout)
        self.driver_groups_param = s.driver_groups_param
        self.hold_kp: dict[str, np.ndarray] = {}
        self.controller = ChassisController(kin, s, s.command_timeout, posture=self.posture)
        self.n = kin.n
        self.feedback_timeout = s.feedback_timeout
        self.lock = threading.Lock()
        self.measured_angles: np.ndarray | None = None
        self.feedback_stamp = -1e9
        self.feedback_wall = -1e9
        self.stale = False
        self.odom = Odometry2D()
        self.odom_twist = (0.0, 0.0, 0.0)
        self._odom_stamp: float | None = None
        self.rc_mode: int | None = None
        self.rc_stamp = -1e9
        self.rc_timeout = s.rc_timeout     # older: the remote is reported silent (it still gates)
        self.rc_gating = s.rc_gating
        self.rc_manager = s.rc_manager_node
        self.counts = {"ticks": 0, "dropped": 0, "capped": 0, "vetoed": 0, "bad_feedback": 0, "bad_stamps": 0}
        # one tick per feedback message: rate (ROS time), compute (the whole callback: odometry and
        # control), latency = the feedback's stamp -> the motor_control publish
        self.stats = LoopStats()

        self.cmd_pub = DirectPublisher(s.motor_command_topic_name, motor_control, tcp_nodelay=True)
        self.speed_pub = DirectPublisher("/motion_control/chassis_speed", Twist)
        self.odom_frame = s.odom_frame
        # the odometry moves the URDF's root (base_footprint, on the floor under base_link): a
        # transform to base_link would give it a second parent and break the TF tree
        self.odom_child_frame = s.odom_child_frame
        self.odom_pub = DirectPublisher(s.odom_topic, Odometry) if s.publish_odom else None
        # /tf written directly (as /odom), not through tf2_ros.TransformBroadcaster: its queued
        # publisher woke a writer thread per transform, a quarter of this node's CPU at 200 Hz
        self.tf = DirectPublisher("/tf", TFMessage) if s.publish_odom and s.publish_odom_tf else None
        self.acc_pub = DirectPublisher(s.acceleration_topic, AccelStamped, tcp_nodelay=True) \
            if s.acceleration_topic else None

        rospy.Subscriber(s.current_motor_topic_name, JointState, self._on_feedback, queue_size=5, tcp_nodelay=True)
        rospy.Subscriber(s.chassis_control_topic_name, Twist, self._on_target, queue_size=5, tcp_nodelay=True)
        rospy.Subscriber("/motion_target/chassis_acc_limit", Twist, self._on_acc_limit, queue_size=5)
        rospy.Subscriber(s.breaking_topic_name, Bool, self._on_brake, queue_size=5)
        rospy.Subscriber(s.controller_topic, controller_signal_stamped, self._on_controller, queue_size=5)
        if self.posture is not None:
            for group, topic in (("torso", s.torso_feedback_topic), ("left_arm", s.left_arm_feedback_topic),
                                 ("right_arm", s.right_arm_feedback_topic)):
                rospy.Subscriber(topic, JointState, self._on_posture, group, queue_size=1)
            # any type, not decoded: only their arrival says a controller drives the group
            for group, topic in (("torso", s.torso_command_topic), ("left_arm", s.left_arm_command_topic),
                                 ("right_arm", s.right_arm_command_topic)):
                rospy.Subscriber(topic, rospy.AnyMsg, self._on_group_command, group, queue_size=1)
        WallTimer(0.05, self._watch, "watchdog")   # wall time: see r1_common.ros_io.WallTimer
        self._diagnostics = DiagnosticsPublisher(self._diagnostic_statuses, name=NAME)
        rospy.loginfo(f"{NAME}: modules at {np.round(xy, 4).tolist()} m, wheel speed ≤ {kin.max_wheel_speed} m/s; "
                      "one tick per chassis feedback message; waiting for chassis feedback")

    @staticmethod
    def _posture_limits(s: ChassisSettings, urdf: str, xy: np.ndarray) -> PostureLimits:
        """The upper body's limits on the base's acceleration: the robot on a planar base, the wheels' polygon
        at the steer axes. ConfigError for joint groups the URDF does not have."""
        groups_file = s.joint_groups_file or str(Path(rospkg.RosPack().get_path("mobiman"))
                                                 / "config/r1_joint_groups.yaml")
        joint_groups, _ = load_group_config(groups_file)
        try:
            model = RobotModel(urdf, joint_groups, planar_base=True)
            return PostureLimits(model, UPPER_BODY, SupportPolygon.of_points(xy), s.torque_share, s.zmp_margin,
                                 s.hold_deflection)
        except (KeyError, ValueError) as e:
            raise ConfigError("joint_groups_file", f"the upper body's groups do not fit the URDF: {e}") from None

    # -- inputs ----------------------------------------------------------------------------
    def _on_posture(self, msg: JointState, group: str) -> None:
        """A group's measured joints for the posture's limits (checked: finite, within its range's margin)."""
        assert self.posture is not None
        model = self.posture.model
        n = len(model.group(group).joints)
        try:
            q = finite_vector(msg.position[:n], f"{group} feedback position", (n,))
            lim = model.limits(group)
            plausible_positions(q, lim.lower, lim.upper, FEEDBACK_MARGIN, f"{group} feedback position")
        except InputError as e:
            self.bad_posture += 1
            self.throttle(rospy.logerr, f"posture/{group}", f"{NAME}: {group} feedback ignored: {e}")
            return
        with self.lock:
            self.posture.set_posture(group, q)

    def _on_group_command(self, _msg: Any, group: str) -> None:
        with self.lock:
            self.drive.commanded(group, rospy.get_time())

    def _driver_hold_kp(self, group: str) -> np.ndarray:
        """The driver's hold stiffness of `group` from its layout on the parameter server (read once found);
        zeros, with a warning, where it is missing or malformed: a held group then counts as limp."""
        if group in self.hold_kp:
            return self.hold_kp[group]
        assert self.posture is not None
        n = len(self.posture.model.group(group).joints)
        name = f"{self.driver_groups_param}/{group}/hold_kp"
        try:
            kp = finite_vector(rospy.get_param(name), name, (n,))
            if np.any(kp < 0.0):
                raise InputError(name, kp, "has negative values")
        except (KeyError, InputError, TypeError, ValueError) as e:
            self.throttle(rospy.logwarn, f"hold_kp/{group}", f"{NAME}: the driver's hold stiffness of the {group} "
                          f"is unknown ({e}): while it holds it, the base does not accelerate")
            return np.zeros(n)
        self.hold_kp[group] = kp
        return kp

    def _update_holds(self, now: float) -> bool:
        """Which upper-body groups no controller feeds forward now (`mobiman.chassis.upper_body_drive`): the
        posture's limits take the driver's hold stiffness for a group it holds and for one whose controller is
        late. Whether that changed for any group; changes logged (a lapse throttled, its end unsaid)."""
        assert self.posture is not None
        with self.lock:
            changes = self.drive.update(now)
            for c in changes:
                if c.fed_changed:
                    self.posture.hold(c.group, None if c.state == DRIVEN else self._driver_hold_kp(c.group))
            lapses = dict(self.drive.lapses)
        for c in changes:
            if c.state == LATE and c.before == DRIVEN:
                self.throttle(rospy.logwarn, f"late/{c.group}", f"{NAME}: the {c.group}'s controller is late (no "
                              f"command for {c.silent:.3f} s): the base accelerates as if the driver held the "
                              f"{c.group} until it commands again; {lapses[c.group]} lapses so far")
            elif c.state == HELD and c.before is not None:
                rospy.loginfo(f"{NAME}: the {c.group} is held by the driver (no controller commands it): the base "
                              f"accelerates only as far as its hold bends within {self.posture.hold_deflection} rad")
            elif c.state == DRIVEN and c.before != LATE:
                rospy.loginfo(f"{NAME}: the {c.group} is driven by a controller")
        return any(c.fed_changed for c in changes)

    def _vetoed(self, msg: Any) -> bool:
        """The remote is in a mode other than host control: only the remote-control manager drives.

        A remote that goes silent in such a mode keeps the host vetoed (until it reports mode 5):
        an operator who took the robot over by hand does not hand it to a host program by losing
        the radio link. A robot that never heard a remote is not gated."""
        if not self.rc_gating or self.rc_mode is None or self.rc_mode == HOST_MODE:
            return False
        caller = getattr(msg, "_connection_header", {}).get("callerid", "")
        return caller != self.rc_manager

    def _on_target(self, msg: Twist) -> None:
        if self._vetoed(msg):
            self.counts["vetoed"] += 1
            silent = time.monotonic() - self.rc_stamp
            why = (f"the remote controller is in mode {self.rc_mode}" if silent <= self.rc_timeout else
                   f"the remote controller went silent {silent:.1f} s ago in mode {self.rc_mode}")
            self.throttle(rospy.logwarn, "veto", f"{NAME}: target speed ignored: {why}; host commands pass only "
                          f"once it reports mode {HOST_MODE}")
            return
        try:
            with self.lock:
                notes = self.controller.set_target((msg.linear.x, msg.linear.y, msg.angular.z), rospy.get_time())
        except ChassisInputError as e:
            self.counts["dropped"] += 1
            self.throttle(rospy.logerr, "target", f"{NAME}: target speed dropped: {e}")
            return
        if notes:
            self.counts["capped"] += 1
            self.throttle(rospy.logwarn, "cap", f"{NAME}: target speed " + "; ".join(notes))

    def _on_acc_limit(self, msg: Twist) -> None:
        try:
            with self.lock:
                notes = self.controller.set_acceleration_limit((msg.linear.x, msg.linear.y, msg.angular.z))
        except ChassisInputError as e:
            self.counts["dropped"] += 1
            self.throttle(rospy.logerr, "acc", f"{NAME}: acceleration limit dropped: {e}")
            return
        if notes:
            self.throttle(rospy.logwarn, "acc_cap", f"{NAME}: acceleration limit " + "; ".join(notes))
        rospy.loginfo(f"{NAME}: acceleration limits now {self.controller.acc}")

    def _on_brake(self, msg: Bool) -> None:
        with self.lock:
            changed = self.controller.brake != bool(msg.data)
            self.controller.set_brake(msg.data)
        if changed:
            rospy.loginfo(f"{NAME}: brake mode {'on' if msg.data else 'off'}")

    def _on_controller(self, msg: controller_signal_stamped) -> None:
        self.rc_mode, self.rc_stamp = int(msg.data.mode), time.monotonic()

    def _on_feedback(self, msg: JointState) -> None:
        t0 = time.perf_counter()
        try:
            angles, speeds = self.controller.check_feedback(msg.position, msg.velocity)
        except InputError as e:
            self.counts["bad_feedback"] += 1
            self.throttle(rospy.logerr, "feedback", f"{NAME}: chassis feedback ignored: {e}")
            return
        stamp, stamp_note = data_time(msg.header.stamp.to_sec(), rospy.get_time(), STREAM_MAX_AGE, STREAM_MAX_AHEAD)
        if stamp_note:
            self.counts["bad_stamps"] += 1
            self.throttle(rospy.logwarn, "stamp", f"{NAME}: chassis feedback {stamp_note}")
        twist = self.controller.kin.forward(angles, speeds)
        with self.lock:
            self.measured_angles = angles
            self.feedback_stamp, self.feedback_wall = rospy.get_time(), time.monotonic()
            if self._odom_stamp is not None:
                dt = stamp - self._odom_stamp
                if 0.0 < dt <= 0.5:            # a longer gap is lost feedback, not motion
                    self.odom.integrate(twist, dt)
            self._odom_stamp = stamp
            self.odom_twist = twist
            if self.stale:
                self.stale = False
                rospy.loginfo(f"{NAME}: chassis feedback is back; driving again")
        out = Twist()
        out.linear.x, out.linear.y, out.angular.z = twist
        self.speed_pub.publish(out)
        if self.odom_pub is not None:     # the feedback's own stamp when it is kept (exact to the ns)
            self._publish_odom(rospy.Time.from_sec(stamp) if stamp_note or msg.header.stamp.is_zero()
                               else msg.header.stamp, twist)
        sent = self._tick(stamp, angles)
        self.stats.tick(sent, time.perf_counter() - t0,
                        sent - stamp if not msg.header.stamp.is_zero() else float("nan"))

    def _publish_odom(self, stamp: rospy.Time, twist: tuple[float, float, float]) -> None:
        o = self.odom
        q = yaw_quaternion(o.yaw)
        m = Odometry()
        m.header.stamp, m.header.frame_id, m.child_frame_id = stamp, self.odom_frame, self.odom_child_frame
        m.pose.pose.position.x, m.pose.pose.position.y = o.x, o.y
        (m.pose.pose.orientation.x, m.pose.pose.orientation.y, m.pose.pose.orientation.z,
         m.pose.pose.orientation.w) = q
        m.twist.twist.linear.x, m.twist.twist.linear.y, m.twist.twist.angular.z = twist
        for i, var in ((0, 1e-3), (7, 1e-3), (35, 1e-2)):   # x, y, yaw: grows unbounded in truth
            m.pose.covariance[i] = var
        for i, var in ((0, 1e-3), (7, 1e-3), (35, 1e-3)):
            m.twist.covariance[i] = var
        self.odom_pub.publish(m)
        if self.tf is not None:
            t = TransformStamped()
            t.header.stamp, t.header.frame_id, t.child_frame_id = stamp, self.odom_frame, self.odom_child_frame
            t.transform.translation.x, t.transform.translation.y = o.x, o.y
            (t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z,
             t.transform.rotation.w) = q
            self.tf.publish(TFMessage([t]))

    # -- control ---------------------------------------------------------------------------
    def _watch(self, _event: Any) -> None:
        """Feedback is stale when old in ROS time and in wall time (a simulated clock may jump); which groups
        the driver holds."""
        now, wall = rospy.get_time(), time.monotonic()
        if self.posture is not None:
            self._update_holds(now)
        with self.lock:
            if (self.measured_angles is not None and not self.stale
                    and now - self.feedback_stamp > self.feedback_timeout
                    and wall - self.feedback_wall > self.feedback_timeout):
                self.stale = True
                rospy.logwarn(f"{NAME}: no chassis feedback for {self.feedback_timeout} s; not commanding "
                              "(HDAS ramps the wheels to zero)")

    def _tick(self, stamp: float, angles: np.ndarray) -> float:
        """One control step on the feedback's stamp with its measured steering angles; the command's stamp."""
        holds_changed = self.posture is not None and self._update_holds(rospy.get_time())
        with self.lock:
            due = holds_changed or stamp - self._posture_due >= 0.0     # a group's hold changed: at once
            if self.posture is not None and self.posture.changed and due:
                self.posture.update()                  # (at the posture's pace: a few RNEA)
                self._posture_due = stamp + self.posture_period
            cmd = self.controller.step(stamp, angles)
            acceleration = self.controller.acceleration
        out = motor_control()
        out.header.stamp = rospy.Time.now()
        out.name = "chassis"
        out.p_des = cmd.angles.tolist()
        out.v_des = cmd.speeds.tolist()
        out.kp = out.kd = out.t_ff = [0.0] * self.n
        self.cmd_pub.publish(out)
        if self.acc_pub is not None:
            acc = AccelStamped()
            acc.header.stamp, acc.header.frame_id = rospy.Time.from_sec(stamp), self.base_frame
            acc.accel.linear.x, acc.accel.linear.y, acc.accel.angular.z = acceleration
            self.acc_pub.publish(acc)
        self.counts["ticks"] += 1
        return out.header.stamp.to_sec()

    def _diagnostic_statuses(self) -> list[DiagnosticStatus]:
        """The standard loop keys (r1_common.loop_stats), the counters, then the controller's state."""
        now = rospy.get_time()
        with self.lock:
            c = self.controller
            level, text = DiagnosticStatus.OK, "driving"
            if self.measured_angles is None:
                level, text = DiagnosticStatus.WARN, "waiting for chassis feedback"
            elif self.stale:
                level, text = DiagnosticStatus.ERROR, "chassis feedback stale"
            elif c.braking:
                text = "braked"
            elif c.timed_out:
                text = "command stream stopped: decelerated to zero"
            counts = self.counts
            values = {"dropped": counts["dropped"], "clamped": counts["capped"], "errors": counts["bad_feedback"],
                      "target": np.round(c.target, 3).tolist(), "commanded twist": np.round(c.twist, 3).tolist(),
                      "measured twist": np.round(self.odom_twist, 3).tolist(),
                      "acceleration limits": list(c.acc), "brake mode": c.brake,
                      "odometry": [round(self.odom.x, 3), round(self.odom.y, 3), round(self.odom.yaw, 3)],
                      "remote mode": self.rc_mode, **counts}
            held, late = self.drive.in_state(HELD), self.drive.in_state(LATE)
            if self.posture is not None and self.posture.known:
                up, down = self.posture.axis_limits(c.twist[2], c.acc)
                values.update({"posture acceleration limits +": np.round(up, 2).tolist(),
                               "posture acceleration limits -": np.round(down, 2).tolist(),
                               "posture limited steps": c.posture_limited, "bad posture feedback": self.bad_posture,
                               "posture beyond its torque budget at rest": self.posture.worst() or "no",
                               "held by the driver": ", ".join(held) or "none",
                               "controllers late": ", ".join(late) or "none",
                               "controller lapses": sum(self.drive.lapses.values()),
                               **{f"controller lapses {g}": n for g, n in self.drive.lapses.items()}})
                lowered = any(u < a - 1e-6 or d < a - 1e-6 for u, d, a in zip(up, down, c.acc))
                if lowered and level == DiagnosticStatus.OK:
                    text = "driving, acceleration lowered for the upper body's posture"
                    if held:
                        text += f" ({', '.join(held)} held by the driver, without a controller)"
                    if late:
                        text += f" ({', '.join(late)} late: no feed-forward)"
        return [status(f"{NAME}: chassis", "chassis", level, text, self.stats.values(now, values))]


def main() -> None:
    """The process's node (`rosrun mobiman chassis_control_node`): a bad parameter ends it with exit 1."""
    run_node("r1_chassis_control", ChassisControlNode)
