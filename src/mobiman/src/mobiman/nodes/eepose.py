"""r1_eepose_pub_node (node `fk_calculator`): feedback -> poses, and the merged /joint_states.

A thin ROS wrapper around `mobiman.estimation.eepose`: every /hdas/feedback_torso message gives one
/motion_control/pose_floating_base (torso_link4 in base_link), every arm feedback message one
/motion_control/pose_ee_arm_{left,right} (gripper_link in torso_link4), stamped with the
feedback's stamp. Bad feedback is dropped with a throttled log. A node that falls behind (a
busy machine) computes only the newest feedback rospy kept for it (queue_size) and counts the
messages it never got from the gaps in their sequence numbers (`missed_feedback`). It also merges all feedback
into /joint_states (`mobiman.estimation.joint_state_merge`) at a fixed rate and, with `~publish_tf` (the
whole stack sets it), publishes the robot's TF from that checked state (`mobiman.model.tf_tree`: the fixed
joints once on /tf_static, the moving ones on /tf at the same rate) in place of ROS's
robot_state_publisher, which a /joint_states message from anyone can abort; it reports on
/diagnostics at 1 Hz.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import rospkg
import rospy
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped, TransformStamped
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

from mobiman.estimation.eepose import FeedbackError, Frames, PoseEstimator, group_positions, se3_to_pose
from mobiman.estimation.joint_state_merge import JointStateMerger
from mobiman.model.robot_model import RobotModel, load_group_config
from mobiman.model.tf_tree import TfTree, Transform
from r1_common.diagnostics import DiagnosticsPublisher, status
from r1_common.loop_stats import LoopStats
from r1_common.ros_io import DirectPublisher, QuietPublisher, WallTimer, stop_within
from r1_common.sequence import SequenceGaps
from r1_common.throttle import Throttle
from r1_common.validation import STREAM_MAX_AGE, STREAM_MAX_AHEAD, data_time

NODE = "fk_calculator"


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
    def __init__(self, params: dict[str, Any] | None = None, name: str | None = None) -> None:
        """`params`, `name`: this node's private parameters and name when it is hosted in another process
        (`mobiman.nodes.controller_host`); by default the process's own node."""
        self.throttle = Throttle(period=5.0)
        p: dict[str, Any] = rospy.get_param("~") if params is None else params
        groups_file = p.get("joint_groups_file") or str(
            Path(rospkg.RosPack().get_path("mobiman")) / "config/r1_joint_groups.yaml")
        joint_groups, frame_table = load_group_config(groups_file)
        self.joint_groups = joint_groups
        urdf = self._urdf_xml = self._urdf(p)
        try:
            self.estimator = PoseEstimator(RobotModel(urdf, joint_groups), Frames.from_table(frame_table))
        except (KeyError, ValueError) as e:
            raise SystemExit(f"{NODE}: the URDF does not fit {groups_file}: {e}") from None
        frames = self.estimator.frames
        self.feedback_timeout = float(p.get("feedback_timeout", 0.5))
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
        spec = (("torso", "torso", 0, "torso_feedback_topic", "/hdas/feedback_torso", "floating_base_pose_topic",
                 "/motion_control/pose_floating_base", frames.base),
                ("left", "left_arm", 1, "left_arm_feedback_topic", "/hdas/feedback_arm_left", "left_ee_pose_topic",
                 "/motion_control/pose_ee_arm_left", frames.floating_base),
                ("right", "right_arm", 1, "right_arm_feedback_topic", "/hdas/feedback_arm_right",
                 "right_ee_pose_topic", "/motion_control/pose_ee_arm_right", frames.floating_base))
        for name, group, extra, in_param, in_default, out_param, out_default, frame_id in spec:
            lim = self.estimator.model.limits(group)
            s = Stream(name, group, extra, DirectPublisher(p.get(out_param, out_default), PoseStamped,
                                                            tcp_nodelay=True), frame_id, (lim.lower, lim.upper))
            self.streams[name] = s
            rospy.Subscriber(p.get(in_param, in_default), JointState, self._on_feedback, s, queue_size=10,
                             tcp_nodelay=True)
            rospy.loginfo(f"{NODE}: sub topic is : {p.get(in_param, in_default)}, pub topic is : "
                          f"{s.pub.resolved_name} ({self.estimator.frames.ee(name) if extra else frames.floating_base}"
                          f" in {frame_id})")
        if bool(p.get("publish_joint_states", True)):
            self._start_joint_states(p)
        self._diagnostics = DiagnosticsPublisher(self._diagnostic_statuses, name=NODE)

    @staticmethod
    def _urdf(p: dict[str, Any]) -> str:
        """The stock param `urdfFile` (a path) when it can be read, else the robot_description param."""
        path = str(p.get("urdfFile", "") or "")
        if path:
            try:
                return Path(path).read_text()
            except OSError as e:
                rospy.logwarn(f"{NODE}: urdfFile {path!r} cannot be read ({e.strerror}); using the "
                              f"robot_description param instead")
        urdf = rospy.get_param(p.get("robot_description_param", "robot_description"), "")
        if not urdf:
            raise SystemExit(f"{NODE}: no readable urdfFile and no robot_description on the parameter server")
        return urdf

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
    def _start_joint_states(self, p: dict[str, Any]) -> None:
        wheels = list(p.get("wheel_joints", self.joint_groups.get("chassis_wheels", [])))
        model = self.estimator.model.model
        ranges = {name: (float(model.lowerPositionLimit[j.idx_q]), float(model.upperPositionLimit[j.idx_q]))
                  for name, j in zip(model.names[1:], model.joints[1:]) if j.nq == 1}
        for name in wheels:                 # continuous: any angle
            ranges[name] = (-math.inf, math.inf)
        self.merger = JointStateMerger(wheels, float(p.get("wheel_radius", 0.07)), ranges)
        self.joint_states_pub = QuietPublisher(p.get("joint_states_topic", "/joint_states"), JointState,
                                                queue_size=1)
        # the robot's TF from this merged state (robot_state_publisher's job, from checked values only)
        self.tf_tree = TfTree(self._urdf_xml) if bool(p.get("publish_tf", False)) else None
        if self.tf_tree is not None:
            self.tf_pub = DirectPublisher("/tf", TFMessage)
            self.tf_static_pub = QuietPublisher("/tf_static", TFMessage, queue_size=1, latch=True)
            self.tf_static_pub.publish(TFMessage([self._transform(t, rospy.Time.now()) for t in self.tf_tree.fixed()]))
        rospy.Subscriber(p.get("chassis_feedback_topic", "/hdas/feedback_chassis"), JointState, self._on_chassis,
                         queue_size=1)
        rate = float(p.get("joint_states_rate_hz", 50.0))
        if not 0.0 < rate <= 1000.0:
            rospy.logwarn(f"{NODE}: joint_states_rate_hz {rate} out of (0, 1000]; using 50")
            rate = 50.0
        WallTimer(1.0 / rate, self._publish_joint_states, "joint_states")   # wall time: r1_common.ros_io.WallTimer

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
    rospy.init_node(NODE)
    stop_within()   # gone within seconds of a SIGINT, whatever hangs
    EePoseNode()
    rospy.spin()
