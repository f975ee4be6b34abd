"""r1_arm_relaxed_ik_node: one arm's pose control (the guide's 手臂姿态控制), a thin ROS wrapper.

End-effector pose targets (`{side}_gripper_link` in `torso_link4`) stream in on
/motion_target/target_pose_arm_{side} (and the guide's table name
/motion_target/pose_target_arm_{side}); each valid target is one streamed solve of
`mobiman.arm.ik.ArmIK`, and the joint targets go to the joint tracker on
/motion_target/target_joint_state_arm_{side} with per-joint speed limits. The logic between
the topics (checks, stream pauses, ready pose, statistics) is `mobiman.arm.stream`
(ROS-free); this module reads params, resolves frames with tf2 and publishes.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, List, Optional

import numpy as np
import pinocchio as pin
import rospy
import tf2_ros
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from tf2_msgs.msg import TFMessage

from mobiman.arm.config import IkConfig
from mobiman.arm.stream import (
    READY_PENDING,
    TF_MAX_AGE,
    TF_MAX_AHEAD,
    ArmPoseStream,
    Dropped,
    StreamConfig,
    compose,
    format_pose,
    pose_to_se3,
    target_frame,
)
from r1_common.diagnostics import DiagnosticsPublisher, status
from r1_common.loop_stats import LoopStats
from r1_common.ros_io import QuietPublisher, WallTimer, run_node
from r1_common.settings import ConfigError, setting
from r1_common.throttle import Throttle
from r1_common.validation import InputError, data_time, transform

SIDES = ("left", "right")


@dataclass(frozen=True)
class ArmIkSettings(StreamConfig):
    """The arm pose node's private parameters: the stream's (`StreamConfig`), the solver's section and
    the node's own. A topic left unset is the side's default named in its meaning."""

    side: str = setting("", "`left` or `right`: the arm (set by the launch files)", choices=SIDES)
    solver: IkConfig = setting(IkConfig(), "the solver's section (`mobiman.arm.config.IkConfig`, below)")
    base_frame: str = setting("torso_link4", "the frame of targets with an empty `frame_id` and of the solver")
    tf_wait_s: float = setting(1.0, "s, ROS time; the first target in another frame starts the node's `/tf` "
                               "listener and waits up to this long for the transform", low=0.0)
    robot_description_param: str = setting("robot_description", "the parameter that holds the URDF")
    pose_topics: Optional[List[str]] = setting(None, "pose targets in; unset: `/motion_target/target_pose_arm_{side}` "
                                               "and `/motion_target/pose_target_arm_{side}`")
    feedback_topic: Optional[str] = setting(None, "the arm's joints in; unset: `/hdas/feedback_arm_{side}`")
    other_feedback_topic: Optional[str] = setting(None, "the other arm's joints in; unset: "
                                                  "`/hdas/feedback_arm_{other side}`")
    joint_target_topic: Optional[str] = setting(None, "joint targets out; unset: "
                                                "`/motion_target/target_joint_state_arm_{side}`")
    error_topic: Optional[str] = setting(None, "the solve's residual out; unset: `/motion_target/ik_error_arm_{side}`")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.side not in SIDES:
            raise ValueError(f"side must be left or right, not {self.side!r} (the launch files set it)")


class CheckedTransformListener:
    """tf2_ros.TransformListener's job, with every transform checked first (r1_common.validation.transform):
    anyone can publish on /tf, and tf2 stores what it is given, NaNs and stamps that later abort a
    lookup included. Refused transforms are counted and logged (throttled)."""

    def __init__(self, buffer: tf2_ros.Buffer, name: str, throttle: Throttle):
        self.buffer, self.name, self.throttle = buffer, name, throttle
        self.refused = 0
        self.last_time = rospy.Time.now()
        self.subs = [rospy.Subscriber("/tf", TFMessage, self._on_tf, False, queue_size=10),
                     rospy.Subscriber("/tf_static", TFMessage, self._on_tf, True, queue_size=10)]

    def _on_tf(self, msg: TFMessage, static: bool) -> None:
        now = rospy.Time.now()
        if not static and now < self.last_time - rospy.Duration(1.0):      # the clock went back: as tf2_ros
            self.buffer.clear()
        self.last_time = now
        who = msg._connection_header.get("callerid", "default_authority")
        for t in msg.transforms:
            tr, rot = t.transform.translation, t.transform.rotation
            try:
                t.header.frame_id, t.child_frame_id = transform(
                    (tr.x, tr.y, tr.z), (rot.x, rot.y, rot.z, rot.w), t.header.stamp.to_sec(), t.header.frame_id,
                    t.child_frame_id, now.to_sec(), static)
            except InputError as e:
                self.refused += 1
                self.throttle(rospy.logwarn, "tf", f"{self.name}: transform from {who} refused: {e}")
                continue
            (self.buffer.set_transform_static if static else self.buffer.set_transform)(t, who)


class ArmIkNode:
    def __init__(self, params: dict[str, Any] | None = None, name: str | None = None) -> None:
        """`params`, `name`: this node's private parameters and name when it is hosted in another process
        (`mobiman.nodes.controller_host`); by default the process's own node."""
        self.name = name or rospy.get_name()
        self.throttle = Throttle(period=5.0)
        cfg = ArmIkSettings.from_params(rospy.get_param("~") if params is None else params, where=self.name)
        side = self.side = cfg.side
        other = "right" if side == "left" else "left"
        urdf = rospy.get_param(cfg.robot_description_param, "")
        if not urdf:
            raise ConfigError(f"{self.name}/robot_description_param",
                              f"no URDF on the parameter server at {cfg.robot_description_param!r}")
        from mobiman.arm.ik import ArmIK  # the solver core (pinocchio)
        t0 = time.monotonic()
        try:
            ik = ArmIK(urdf, side=side, config=cfg.solver)
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"{self.name}/robot_description_param",
                              f"the URDF does not fit the solver: {e.__class__.__name__}: {e}") from None
        if time.monotonic() - t0 > 5.0:
            rospy.logwarn(f"{self.name}: the IK solver took {time.monotonic() - t0:.0f} s to start: numba compiled "
                          f"its passes (no cache for this build; scripts/setup compiles them once)")
        self.joint_names = list(ik.joint_names)
        self.core = ArmPoseStream(ik, cfg)
        self.speed_limits = [float(v) for v in cfg.speed_limits]
        self.base_frame = cfg.base_frame.lstrip("/")
        self.lock = threading.Lock()
        self.tf_buffer = tf2_ros.Buffer(rospy.Duration(10.0))
        # started by the first target in another frame (_lookup): /tf reaches every subscriber at
        # its full rate (the chassis odometry at 200 Hz, robot_state_publisher at 50 Hz), and a
        # node that only gets targets in its base frame, as in the guide, need not pay for it
        self.tf_listener: CheckedTransformListener | None = None
        self.tf_start_lock = threading.Lock()
        self.tf_wait = cfg.tf_wait_s
        self.out = QuietPublisher(cfg.joint_target_topic or f"/motion_target/target_joint_state_arm_{side}",
                                  JointState, queue_size=1, tcp_nodelay=True)
        self.err_pub = QuietPublisher(cfg.error_topic or f"/motion_target/ik_error_arm_{side}",
                                      Float64MultiArray, queue_size=1)
        # one tick per joint target published for a pose: rate (ROS time), compute = the solve,
        # latency = the pose's stamp (its arrival when unstamped) -> the joint target's publish
        self.stats = LoopStats()
        self.normalized = 0        # targets whose quaternion was normalised (counted as clamped)
        self.nan_out = 0           # non-finite solutions not published
        pose_topics = cfg.pose_topics or [f"/motion_target/target_pose_arm_{side}",
                                          f"/motion_target/pose_target_arm_{side}"]
        for topic in pose_topics:
            rospy.Subscriber(topic, PoseStamped, self._on_pose, queue_size=1, tcp_nodelay=True)
        rospy.Subscriber(cfg.feedback_topic or f"/hdas/feedback_arm_{side}", JointState, self._on_feedback,
                         queue_size=1, tcp_nodelay=True)
        rospy.Subscriber(cfg.other_feedback_topic or f"/hdas/feedback_arm_{other}", JointState,
                         self._on_other_feedback, queue_size=1)
        WallTimer(0.05, self._watch, "watchdog")   # wall time: see r1_common.ros_io.WallTimer
        self._diagnostics = DiagnosticsPublisher(self._diagnostic_statuses, name=self.name)
        if self.core.ready_clipped:
            rospy.logwarn(f"{self.name}: ready_joints clipped to the joint limits: {self.core.ready_joints.tolist()}")
        rospy.loginfo(f"{self.name}: {side} arm, poses on {', '.join(pose_topics)} ({self.base_frame} when "
                      f"frame_id is empty) -> {self.out.resolved_name}; speed limits {self.speed_limits}; "
                      f"target_timeout {cfg.target_timeout} s; ready pose "
                      f"{'on' if cfg.ready_pose else 'off'}; waiting for feedback")

    # -- inputs ------------------------------------------------------------------------------
    def _on_feedback(self, msg: JointState) -> None:
        with self.lock:
            note = self.core.on_feedback(msg.position, rospy.get_time())
            ready = None
            if self.core.state == READY_PENDING and self.out.get_num_connections() > 0:
                ready = self.core.take_ready_command(rospy.get_time())
            refused = self.core.feedback_error
        if note:
            rospy.loginfo(f"{self.name}: {note}")
        if refused:
            self.throttle(rospy.logerr, "feedback", f"{self.name}: feedback ignored: {refused}")
        if ready is not None:
            self._publish_joints(ready)
            rospy.loginfo(f"{self.name}: ready pose {np.round(ready, 3).tolist()} sent to the joint tracker; "
                          "poses are accepted once the arm is there")

    def _on_other_feedback(self, msg: JointState) -> None:
        with self.lock:
            self.core.on_other_arm(msg.position)

    def _on_pose(self, msg: PoseStamped) -> None:
        arrival = rospy.get_time()
        try:
            target, since = self._target_in_base(msg, arrival)
            with self.lock:
                step = self.core.on_target(target, rospy.get_time(), time.monotonic())
                sent = self._publish_step(step)
            if sent is not None:
                self.stats.tick(sent, step.solve_time, sent - since)
        except Dropped as e:
            self.throttle(rospy.logwarn, e.key, f"{self.name}: {e.text}")
            return
        except Exception as e:      # never die on an input: log it and go on
            with self.lock:
                self.core.dropped["error"] += 1
            self.throttle(rospy.logerr, "error", f"{self.name}: target dropped, {type(e).__name__}: {e}")
            return
        r = step.result
        if step.restarted:
            self.throttle(rospy.loginfo, "restart", f"{self.name}: target stream started at {format_pose(target)}: "
                          f"solving from the measured joints {np.round(self.core.measured, 3).tolist()}")
        if step.out_of_reach:
            self.throttle(rospy.logwarn, "reach", f"{self.name}: target {format_pose(target)} out of reach: the "
                          f"best pose is {r.position_error * 1e3:.1f} mm and {r.orientation_error:.3f} rad from it")

    def _publish_step(self, step: Any) -> float | None:
        """Publish the joint target and the residual; the target's stamp [s] (None: not published)."""
        r = step.result
        sent = self._publish_joints(step.q)
        self.err_pub.publish(Float64MultiArray(data=[float(r.position_error), float(r.orientation_error),
                                                     1.0 if r.reached else 0.0]))
        return sent

    def _target_in_base(self, msg: PoseStamped, now: float) -> tuple[pin.SE3, float]:
        """The target in the base frame (empty frame_id = base frame, others through tf2) and the
        time it stands for (its stamp, or its arrival when unstamped or stamped off the clock).
        Everything is checked in the core (arm_ik_stream) before tf2 or pinocchio sees it."""
        o, q = msg.pose.position, msg.pose.orientation
        stamp = msg.header.stamp.to_sec()
        with self.lock:
            try:
                pose, norm = pose_to_se3((o.x, o.y, o.z), (q.x, q.y, q.z, q.w))
                frame, lookup_time, note = target_frame(msg.header.frame_id, stamp, now, self.base_frame)
            except Dropped as e:
                raise self.core.drop(e.key, e.text) from None
        since, stamp_note = data_time(stamp, now, TF_MAX_AGE, TF_MAX_AHEAD)
        if abs(norm - 1.0) > 0.01:
            self.normalized += 1
            self.throttle(rospy.logwarn, "norm", f"{self.name}: quaternion of norm {norm:.4f} normalized")
        if stamp_note:
            self.throttle(rospy.logwarn, "stamp", f"{self.name}: target {note or stamp_note}")
        if frame is None:
            return pose, since
        base_from_frame = self._lookup(frame, lookup_time)
        if base_from_frame is None:
            with self.lock:
                raise self.core.drop("tf", f"target in frame '{frame}' dropped: no transform {self.base_frame} <- "
                                           f"{frame} (send it in {self.base_frame} or with an empty frame_id)")
        return compose(base_from_frame, pose), since

    def _lookup(self, frame: str, stamp: float) -> pin.SE3 | None:
        """base <- frame at `stamp` (checked by arm_ik_stream.target_frame; 0: the latest), else the
        latest; None when tf2 has none (or what it has is not a pose)."""
        with self.tf_start_lock:     # both pose topics' threads may bring the first such target
            if self.tf_listener is None:
                self.tf_listener = CheckedTransformListener(self.tf_buffer, self.name, self.throttle)
                rospy.loginfo(f"{self.name}: a target in frame '{frame}': listening to /tf from now on (waiting "
                              f"up to {self.tf_wait:g} s for the first transform)")
                try:
                    self.tf_buffer.can_transform(self.base_frame, frame, rospy.Time(0),
                                                 rospy.Duration(self.tf_wait))
                except tf2_ros.TransformException:
                    pass                              # a bad frame name: the lookup below says so
        for t in ((0.0,) if stamp == 0.0 else (stamp, 0.0)):
            try:
                tf = self.tf_buffer.lookup_transform(self.base_frame, frame, rospy.Time.from_sec(t)).transform
            except tf2_ros.TransformException:
                continue
            try:
                pose, _ = pose_to_se3((tf.translation.x, tf.translation.y, tf.translation.z),
                                      (tf.rotation.x, tf.rotation.y, tf.rotation.z, tf.rotation.w))
            except Dropped:
                return None       # a transform someone published with NaNs or a non-rotation
            return pose
        return None

    # -- outputs -----------------------------------------------------------------------------
    def _publish_joints(self, q: np.ndarray) -> float | None:
        q = np.asarray(q, dtype=float)
        if q.shape != (6,) or not np.all(np.isfinite(q)):     # never a NaN out
            self.nan_out += 1
            self.throttle(rospy.logerr, "nan_out", f"{self.name}: non-finite joint target {q.tolist()} not published")
            return None
        msg = JointState(name=self.joint_names, position=q.tolist(), velocity=self.speed_limits)
        msg.header.stamp = rospy.Time.now()
        self.out.publish(msg)
        return msg.header.stamp.to_sec()

    def _watch(self, _event: Any) -> None:
        with self.lock:
            went_stale = self.core.check_stale(rospy.get_time(), time.monotonic())
            events = self.core.stale_events
        if went_stale:
            self.throttle(rospy.loginfo, "stale", f"{self.name}: no target for {self.core.cfg.target_timeout} s: "
                          f"stopped publishing; the next target continues from the measured joints "
                          f"({events} pauses so far)")

    def _diagnostic_statuses(self) -> list[DiagnosticStatus]:
        """The standard loop keys (r1_common.loop_stats), the counters, then the stream's own summary."""
        now = rospy.get_time()
        with self.lock:
            level, message, summary = self.core.summary(now, time.monotonic())
            dropped = self.core.dropped
            errors = dropped["error"] + dropped["solver"] + self.nan_out
        refused = self.tf_listener.refused if self.tf_listener is not None else 0
        values = self.stats.values(now, {"dropped": summary["targets_dropped"], "clamped": self.normalized,
                                         "errors": errors, **summary, "transforms_refused": refused})
        return [status(f"{self.name}: {self.side} arm pose control", f"{self.side}_arm",
                       DiagnosticStatus.WARN if level else DiagnosticStatus.OK, message, values)]


def main() -> None:
    run_node("r1_arm_relaxed_ik", ArmIkNode)
