"""r1_eepose_pub_node (node `fk_calculator`): feedback -> poses, and the merged /joint_states.

A thin ROS wrapper around `mobiman.estimation.eepose`: every /hdas/feedback_torso message gives one
/motion_control/pose_floating_base (torso_link4 in base_link), every arm feedback message one
/motion_control/pose_ee_arm_{left,right} (gripper_link in torso_link4), stamped with the
feedback's stamp. Bad feedback is dropped with a throttled log. A node that falls behind computes
only the newest feedback rospy kept for it (queue_size) and counts the messages it never got from
the gaps in their sequence numbers (`missed_feedback`). It also merges all feedback into /joint_states
(`mobiman.estimation.joint_state_merge`) at a fixed rate and, with `publish_tf`, publishes the robot's
TF from that checked state (`mobiman.model.tf_tree`: the fixed joints once on /tf_static, the moving
ones on /tf at the same rate) in place of ROS's robot_state_publisher; it reports on /diagnostics at
1 Hz. Its private parameters are `EePoseSettings`.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Mapping, Optional

import numpy as np
import rospy
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped, TransformStamped
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

from mobiman.estimation.eepose import FeedbackError, Frames, PoseEstimator, group_positions, se3_to_pose
from mobiman.estimation.joint_state_merge import JointStateMerger, WheelSettings
from mobiman.model.robot_model import RobotModel
from mobiman.model.tf_tree import TfTree, Transform
from mobiman.nodes.robot_files import joint_groups, robot_description
from r1_common.diagnostics import DiagnosticsPublisher, status
from r1_common.loop_stats import LoopStats
from r1_common.ros_io import DirectPublisher, QuietPublisher, WallTimer, run_node
from r1_common.sequence import SequenceGaps
from r1_common.settings import ConfigError, setting
from r1_common.throttle import Throttle
from r1_common.validation import STREAM_MAX_AGE, STREAM_MAX_AHEAD, data_time

NODE = "fk_calculator"


@dataclass(frozen=True)
class EePoseSettings(WheelSettings):
    """The private parameters of r1_eepose_pub_node (`wheel_radius` from `WheelSettings`)."""

    urdfFile: str = setting("", "the stock param: a URDF path; empty or unreadable: the `robot_description_param` "
                            "parameter")
    robot_description_param: str = setting("robot_description", "the parameter holding the URDF")
    joint_groups_file: str = setting("", "joint groups and frames; empty: mobiman's config/r1_joint_groups.yaml")
    feedback_timeout: float = setting(0.5, "s; a pose stream without feedback this long (ROS and wall time) is "
                                      "reported stale", low=0.0)
    torso_feedback_topic: str = setting("/hdas/feedback_torso", "the torso's feedback")
    left_arm_feedback_topic: str = setting("/hdas/feedback_arm_left", "the left arm's feedback")
    right_arm_feedback_topic: str = setting("/hdas/feedback_arm_right", "the right arm's feedback")
    floating_base_pose_topic: str = setting("/motion_control/pose_floating_base", "torso_link4 in base_link")
    left_ee_pose_topic: str = setting("/motion_control/pose_ee_arm_left", "the left gripper in torso_link4")
    right_ee_pose_topic: str = setting("/motion_control/pose_ee_arm_right", "the right gripper in torso_link4")
    publish_joint_states: bool = setting(True, "merge all feedback into `joint_states_topic`")
    joint_states_topic: str = setting("/joint_states", "the merged joint state")
    joint_states_rate_hz: float = setting(50.0, "Hz; the merged joint state's rate (wall time)", low=1.0,
                                          high=1000.0)
    chassis_feedback_topic: str = setting("/hdas/feedback_chassis", "the chassis feedback (for /joint_states)")
    wheel_joints: Optional[List[str]] = setting(None, "the wheel joints in the chassis feedback's order; null: "
                                                "the joint groups' `chassis_wheels`")
    publish_tf: bool = setting(False, "the robot's TF from the merged joint state (/tf, /tf_static), in place of "
                               "robot_state_publisher (the whole stack sets it)")


@dataclass
class Stream:
    """One feedback topic turned into one pose topic."""

    name: str                 # torso, left, right
    group: str                # joint group of the feedback
    extra: int                # entries allowed after the group's joints (the arm's gripper)
    pub: rospy.Publisher
    frame_id: str
    ranges: tuple[np.ndarray, np.ndarray]     # the group's joint ranges: feedback far beyond them is refused
    published: int = 0
    dropped: int = 0
    # feedback this node never got (fell behind: rospy kept the newest of its queue): seq gaps
    gaps: SequenceGaps = field(default_factory=SequenceGaps)
    last_ros: float = -1e9
    last_wall: float = -1e9
    last_error: str = ""
    # one tick per pose published: rate (ROS time), compute, latency = feedback stamp -> pose publish
    stats: LoopStats = field(default_factory=LoopStats)


class EePoseNode:
    """The node: a pose per feedback message, the merged /joint_states (and TF), diagnostics."""

    def __init__(self, params: Optional[Mapping[str, Any]] = None, name: Optional[str] = None) -> None:
        """`params`, `name`: this node's private parameters and name when it is hosted in another process
        (`mobiman.nodes.controller_host`); by default the process's own node. Raises ConfigError naming
        the parameter before it subscribes or publishes anything."""
        where = name or rospy.get_name()
        s = EePoseSettings.from_params(rospy.get_param("~", {}) if params is None else params, where=where)
        groups_key = f"{where}/joint_groups_file"
        self.joint_groups, frame_table = joint_groups(s.joint_groups_file, groups_key)
        try:
            frames = Frames.from_params(frame_table, where="frames")
        except ConfigError as e:
            raise ConfigError(groups_key, f"the joint groups file's {e}") from None
        urdf = self._urdf_xml = self._urdf(s)
        try:
            self.estimator = PoseEstimator(RobotModel(urdf, self.joint_groups), frames)
            limits = {group: self.estimator.model.limits(group) for group in ("torso", "left_arm", "right_arm")}
        except (KeyError, ValueError) as e:
            raise ConfigError(groups_key, f"the URDF and the joint groups file do not fit: {e}") from None
        try:
            self.tf_tree = TfTree(urdf) if s.publish_joint_states and s.publish_tf else None
        except ValueError as e:
            raise ConfigError(f"{where}/publish_tf", f"the URDF's TF tree cannot be read: {e}") from None
        self.feedback_timeout = s.feedback_timeout
        self.throttle = Throttle(period=5.0)
        # all state before the first subscription: a callback can come at once (hosted in a process
        # that already reads the topic, mobiman.nodes.controller_host)
        self.merger: JointStateMerger | None = None
        self.merger_lock = threading.Lock()
        self.chassis_dropped = 0
        self.bad_stamps = 0          # feedback stamped off the clock (taken as received)
        # one tick per /joint_states message; latency = the oldest merged feedback's stamp -> the publish
        self.joint_states_stats = LoopStats()
        self.merged_stamps: dict[str, float] = {}   # source -> its latest feedback's stamp (ROS time)
        self.streams: dict[str, Stream] = {}
        spec = (("torso", "torso", 0, s.torso_feedback_topic, s.floating_base_pose_topic, frames.base),
                ("left", "left_arm", 1, s.left_arm_feedback_topic, s.left_ee_pose_topic, frames.floating_base),
                ("right", "right_arm", 1, s.right_arm_feedback_topic, s.right_ee_pose_topic, frames.floating_base))
        for stream, group, extra, in_topic, out_topic, frame_id in spec:
            lim = limits[group]
            st = Stream(stream, group, extra, DirectPublisher(out_topic, PoseStamped, tcp_nodelay=True), frame_id,
                        (lim.lower, lim.upper))
            self.streams[stream] = st
            rospy.Subscriber(in_topic, JointState, self._on_feedback, st, queue_size=10, tcp_nodelay=True)
            rospy.loginfo(f"{NODE}: sub topic is : {in_topic}, pub topic is : {st.pub.resolved_name} "
                          f"({frames.ee(stream) if extra else frames.floating_base} in {frame_id})")
        if s.publish_joint_states:
            self._start_joint_states(s)
        self._diagnostics = DiagnosticsPublisher(self._diagnostic_statuses, name=NODE)

    @staticmethod
    def _urdf(s: EePoseSettings) -> str:
        """The URDF at the stock param `urdfFile` (a path) when it can be read, else on the parameter server
        at `robot_description_param`; ConfigError naming that parameter when neither has it."""
        if s.urdfFile:
            try:
                return Path(s.urdfFile).read_text()
            except OSError as e:
                rospy.logwarn(f"{NODE}: urdfFile {s.urdfFile!r} cannot be read ({e.strerror}); using the "
                              f"{s.robot_description_param} param instead")
        return robot_description(s.robot_description_param)

    # -- poses -------------------------------------------------------------------------------
    def _on_feedback(self, msg: JointState, s: Stream) -> None:
        t0 = time.perf_counter()
        s.gaps.observe(msg.header.seq)
        try:
            q = group_positions(self.joint_groups[s.group], msg.name, msg.position, s.extra, s.ranges)
            if not (all(map(math.isfinite, msg.position)) and all(map(math.isfinite, msg.velocity))):
                raise FeedbackError("non-finite position or velocity")
        except FeedbackError as e:
            s.dropped += 1
            s.last_error = str(e)
            self.throttle(rospy.logerr, f"{s.name}/bad", f"{NODE}: {s.name} feedback dropped: {e}")
            return
        stamp, header_stamp = self._stamp(msg, s.name)
        if self.merger is not None and msg.name:
            with self.merger_lock:
                self.merger.add_group(msg.name, msg.position, msg.velocity)
                self.merged_stamps[s.name] = stamp
        m = self.estimator.torso_pose(q) if s.name == "torso" else self.estimator.arm_pose(s.name, q)
        (x, y, z), (qx, qy, qz, qw) = se3_to_pose(m)
        out = PoseStamped()
        out.header.stamp = header_stamp
        out.header.frame_id = s.frame_id
        out.pose.position.x, out.pose.position.y, out.pose.position.z = x, y, z
        out.pose.orientation.x, out.pose.orientation.y, out.pose.orientation.z, out.pose.orientation.w = qx, qy, qz, qw
        s.pub.publish(out)
        s.published += 1
        s.last_ros, s.last_wall = rospy.get_time(), time.monotonic()
        s.stats.tick(s.last_ros, time.perf_counter() - t0,
                     s.last_ros - stamp if not msg.header.stamp.is_zero() else float("nan"))

    def _stamp(self, msg: JointState, source: str) -> tuple[float, rospy.Time]:
        """The feedback's time: its stamp, or now when unstamped or stamped off the clock (said, counted);
        as seconds and as the stamp to pass on (the message's own when it is kept: exact to the ns)."""
        stamp, note = data_time(msg.header.stamp.to_sec(), rospy.get_time(), STREAM_MAX_AGE, STREAM_MAX_AHEAD)
        if note:
            self.bad_stamps += 1
            self.throttle(rospy.logwarn, f"{source}/stamp", f"{NODE}: {source} feedback {note}")
        kept = note is None and not msg.header.stamp.is_zero()
        return stamp, (msg.header.stamp if kept else rospy.Time.from_sec(stamp))

    # -- /joint_states -----------------------------------------------------------------------
    def _start_joint_states(self, s: EePoseSettings) -> None:
        wheels = s.wheel_joints if s.wheel_joints is not None else self.joint_groups.get("chassis_wheels", [])
        model = self.estimator.model.model
        ranges = {name: (float(model.lowerPositionLimit[j.idx_q]), float(model.upperPositionLimit[j.idx_q]))
                  for name, j in zip(model.names[1:], model.joints[1:]) if j.nq == 1}
        for name in wheels:                 # continuous: any angle
            ranges[name] = (-math.inf, math.inf)
        self.merger = JointStateMerger(wheels, s.wheel_radius, ranges)
        self.joint_states_pub = QuietPublisher(s.joint_states_topic, JointState, queue_size=1)
        # the robot's TF from this merged state (robot_state_publisher's job, from checked values only)
        if self.tf_tree is not None:
            self.tf_pub = DirectPublisher("/tf", TFMessage)
            self.tf_static_pub = QuietPublisher("/tf_static", TFMessage, queue_size=1, latch=True)
            self.tf_static_pub.publish(TFMessage([self._transform(t, rospy.Time.now()) for t in self.tf_tree.fixed()]))
        rospy.Subscriber(s.chassis_feedback_topic, JointState, self._on_chassis, queue_size=1)
        WallTimer(1.0 / s.joint_states_rate_hz, self._publish_joint_states, "joint_states")   # ros_io.WallTimer

    def _on_chassis(self, msg: JointState) -> None:
        n = len(self.merger.wheel_joints)
        if len(msg.position) < n or len(msg.velocity) < n or not (
                all(map(math.isfinite, msg.position)) and all(map(math.isfinite, msg.velocity))):
            self.chassis_dropped += 1
            self.throttle(rospy.logerr, "chassis/bad", f"{NODE}: chassis feedback with {len(msg.position)} "
                          f"positions, {len(msg.velocity)} velocities or non-finite values ignored")
            return
        stamp, _ = self._stamp(msg, "chassis")
        with self.merger_lock:
            self.merger.add_chassis(msg.name, msg.position, msg.velocity, stamp)
            self.merged_stamps["chassis"] = stamp

    @staticmethod
    def _transform(t: Transform, stamp: rospy.Time) -> TransformStamped:
        parent, child, (x, y, z), (qx, qy, qz, qw) = t
        out = TransformStamped()
        out.header.stamp, out.header.frame_id, out.child_frame_id = stamp, parent, child
        out.transform.translation.x, out.transform.translation.y, out.transform.translation.z = x, y, z
        r = out.transform.rotation
        r.x, r.y, r.z, r.w = qx, qy, qz, qw
        return out

    def _publish_joint_states(self, _event: Any) -> None:
        t0 = time.perf_counter()
        with self.merger_lock:
            names, positions, velocities = self.merger.joint_state()
            oldest = min(self.merged_stamps.values()) if self.merged_stamps else None
        if names:
            msg = JointState(name=names, position=positions, velocity=velocities)
            msg.header.stamp = rospy.Time.now()
            self.joint_states_pub.publish(msg)
            if self.tf_tree is not None:
                moving = self.tf_tree.moving(dict(zip(names, positions)))
                self.tf_pub.publish(TFMessage([self._transform(t, msg.header.stamp) for t in moving]))
            sent = msg.header.stamp.to_sec()
            self.joint_states_stats.tick(sent, time.perf_counter() - t0,
                                         sent - oldest if oldest is not None else float("nan"))

    # -- supervision -------------------------------------------------------------------------
    def _diagnostic_statuses(self) -> list[DiagnosticStatus]:
        """Per pose stream and for /joint_states: the standard loop keys (r1_common.loop_stats), the
        counters, then the stream's own values."""
        now, wall = rospy.get_time(), time.monotonic()
        out = []
        for s in self.streams.values():
            # stale in ROS time *and* wall time: a simulated clock that jumps is not a silent driver
            stale = now - s.last_ros > self.feedback_timeout and wall - s.last_wall > self.feedback_timeout
            message = "no feedback yet" if s.published == 0 else ("feedback stale" if stale else "publishing")
            values = {"dropped": s.dropped, "missed_feedback": s.gaps.missed, "published": s.published,
                      "last_error": s.last_error,
                      "pose_topic": s.pub.resolved_name, "frame_id": s.frame_id}
            if s.published:
                values["last_pose_age_s"] = f"{now - s.last_ros:.3f}"
            out.append(status(f"{NODE}: {s.name}", s.group, DiagnosticStatus.WARN if stale else DiagnosticStatus.OK,
                              message, s.stats.values(now, values)))
        if self.merger is not None:
            values = {"dropped": self.chassis_dropped, "chassis_dropped": self.chassis_dropped,
                      "entries_ignored": self.merger.ignored, "bad_stamps": self.bad_stamps}
            out.append(status(f"{NODE}: joint_states", "joint_states", DiagnosticStatus.OK,
                              f"{len(self.merger.positions)} joints", self.joint_states_stats.values(now, values)))
        return out


def main() -> None:
    """The process's node (`rosrun mobiman r1_eepose_pub_node`): a bad parameter ends it with exit 1."""
    run_node(NODE, EePoseNode)
