"""r1_sim_sensors: the vendor's camera and lidar topics rendered from the simulator's ground truth.

A thin ROS wrapper around `r1_sim.sensor_rig` (MuJoCo): it keeps the latest /sim/joint_states,
/sim/odom and /sim/objects (true joint positions, true planar base pose and the scene's objects' poses
in `sim_world`), and on ROS time (simulated
time under r1_sim.launch, so the sensors slow down with the physics on a busy machine) renders each
sensor at its rate and publishes the guide's topics, stamped with the ground truth's stamp and
framed in the sensor's URDF frame. Sensors nobody subscribes to are not rendered (unless
`~render_without_subscribers`), so a running stack pays only for the images someone looks at.

Nothing is rendered before ground truth arrives; ground truth older than `stale_after_s` (ROS
time) stops publishing with a throttled warning; bad messages are dropped with a throttled log;
a failing render is logged and skipped. /diagnostics (1 Hz): one status per sensor with
`r1_common.loop_stats` keys (rate, render+encode wall time, latency from the ground-truth stamp), and
one for the ground truth.

Settings: r1_sim.sensor_settings.SensorsSettings (docs/sensors.md). The script sets MUJOCO_GL=osmesa
(offscreen rendering without a display) and asks for one BLAS thread (r1_common.blas_threads) before
anything loads MuJoCo or numpy, unless the environment set them.
The renderers' GL contexts are freed when the node stops.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import rospkg
import rospy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from nav_msgs.msg import Odometry
from sensor_msgs.msg import CompressedImage, Image, JointState, PointCloud2, PointField
from std_msgs.msg import Header

from r1_common.loop_stats import LoopStats
from r1_common.ros_io import QuietPublisher, run_node
from r1_common.settings import ConfigError
from r1_common.throttle import Throttle
from r1_common.validation import SHOWN, STREAM_MAX_AHEAD, InputError, data_time, finite_vector, show, unit_quaternion
from r1_sim.encoding import (
    CLOUD_FIELDS,
    CLOUD_POINT_STEP,
    FLOAT32,
    RawImage,
    cloud_data,
    depth_16uc1,
    depth_32fc1,
    jpeg,
)
from r1_sim.msg import ObjectStates
from r1_sim.object_states import object_poses
from r1_sim.sensor_rig import SensorRig, scene_xml, sensor_config
from r1_sim.sensor_settings import NODE, SensorsSettings

MAX_JOINT_VALUE = 1e9       # [rad] wheel angles wind up unbounded; beyond this a value is no joint's
MAX_BASE_DISTANCE = 1e4     # [m] from the world origin: beyond it no base pose


@dataclass
class Truth:
    """One consistent ground-truth sample."""

    stamp: rospy.Time
    joints: dict
    base: tuple
    objects: Optional[dict] = None     # {name: (position, quaternion w x y z)}; None: none received yet


def yaw_of(q) -> float:
    """Heading of a quaternion (the base moves in the plane)."""
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


def image_msg(raw: RawImage, header) -> Image:
    return Image(header=header, height=raw.height, width=raw.width, encoding=raw.encoding,
                 is_bigendian=raw.is_bigendian, step=raw.step, data=raw.data)


def cloud_msg(points: np.ndarray, header) -> PointCloud2:
    n = len(points)
    return PointCloud2(header=header, height=1, width=n,
                       fields=[PointField(name=k, offset=o, datatype=FLOAT32, count=1) for k, o in CLOUD_FIELDS],
                       is_bigendian=False, point_step=CLOUD_POINT_STEP, row_step=CLOUD_POINT_STEP * n,
                       data=cloud_data(points), is_dense=True)


class SensorsNode:
    """The node: reads its settings and the robot, subscribes to the ground truth, renders in `spin()`."""

    def __init__(self) -> None:
        """:raises r1_common.settings.ConfigError: bad settings, an unreadable scene or URDF file, a sensor
        frame that is not in the robot's model."""
        self.settings = settings = SensorsSettings.from_params(rospy.get_param("~", {}), where=NODE)
        self.config = sensor_config(settings)
        urdf = self._description(settings.urdf_file)
        self.rig = SensorRig(urdf, scene_xml(settings.scene), self.config)
        self.render_idle = settings.render_without_subscribers
        self.throttle = Throttle(5.0)
        self.lock = threading.Lock()
        self.joints: Optional[JointState] = None
        self.odom: Optional[tuple] = None        # (stamp, (x, y, yaw))
        self.objects: Optional[tuple] = None     # (stamp, {name: (position, quaternion w x y z)})
        self.unknown_objects: list[str] = []
        self.bad_messages = 0
        self.unknown_joints: list[str] = []
        self.state_stamp = None
        self.stale = True
        self.stats: dict[str, LoopStats] = {}
        self.pubs: dict[str, dict] = {}
        self.period: dict[str, float] = {}
        for name, spec in self.rig.specs.items():
            pubs = {"rgb": QuietPublisher(spec.rgb_topic, CompressedImage, queue_size=2)}
            if spec.depth_topic:
                pubs["depth"] = QuietPublisher(spec.depth_topic, Image, queue_size=2)
            self.pubs[name], self.period[name] = pubs, 1.0 / spec.rate_hz
            self.stats[name] = LoopStats()
        if self.rig.lidar is not None:
            li = self.config.lidar
            self.pubs["lidar"] = {"cloud": QuietPublisher(li.topic, PointCloud2, queue_size=2)}
            self.period["lidar"], self.stats["lidar"] = 1.0 / li.rate_hz, LoopStats()
        self.diag_pub = QuietPublisher("/diagnostics", DiagnosticArray, queue_size=2)
        rospy.Subscriber(settings.joint_states_topic, JointState, self._on_joints, queue_size=1, tcp_nodelay=True)
        rospy.Subscriber(settings.odom_topic, Odometry, self._on_odom, queue_size=1, tcp_nodelay=True)
        rospy.Subscriber(settings.objects_topic, ObjectStates, self._on_objects, queue_size=1, tcp_nodelay=True)
        rospy.loginfo(f"{NODE}: {len(self.rig.specs)} cameras ({', '.join(self.rig.specs) or 'none'}), lidar "
                      f"{'on' if self.rig.lidar else 'off'}, scene {settings.scene!r} "
                      f"(objects: {', '.join(self.rig.objects) or 'none'}); waiting for ground truth")

    @staticmethod
    def _description(urdf_file: str) -> str:
        """robot_description if set (the simulator's), else the URDF file `urdf_file` (empty: r1_description's).

        :raises r1_common.settings.ConfigError: the file cannot be read."""
        urdf = rospy.get_param("robot_description", None)
        if urdf:
            return urdf
        path = urdf_file or rospkg.RosPack().get_path("r1_description") + "/urdf/r1_v2_1_0.urdf"
        rospy.loginfo(f"{NODE}: no robot_description set: using {path}")
        try:
            with open(path) as f:
                return f.read()
        except OSError as e:
            raise ConfigError("urdf_file", f"{path}: {e}") from e

    # -- input -------------------------------------------------------------------------------------
    def _bad(self, key: str, text: str) -> None:
        with self.lock:
            self.bad_messages += 1
        self.throttle(rospy.logwarn, key, f"{NODE}: {text}: message dropped")

    def _stamp(self, msg: Any) -> rospy.Time:
        """The message's stamp, or now when unstamped or stamped ahead of the clock. An old stamp is
        kept: the ground truth's age decides whether the sensors publish (stale: they stop)."""
        t, note = data_time(msg.header.stamp.to_sec(), rospy.get_time(), math.inf, STREAM_MAX_AHEAD)
        if note:
            self.throttle(rospy.logwarn, "stamp", f"{NODE}: ground truth {note}")
            return rospy.Time.from_sec(t)
        return msg.header.stamp if not msg.header.stamp.is_zero() else rospy.Time.from_sec(t)

    def _on_joints(self, msg: JointState) -> None:
        if len(msg.name) != len(msg.position):
            return self._bad("joints_len", f"joint_states with {len(msg.name)} names and {len(msg.position)} positions")
        if not all(math.isfinite(p) and abs(p) <= MAX_JOINT_VALUE for p in msg.position):
            return self._bad("joints_value", f"joint_states with a position that is no joint's: {show(msg.position)}")
        msg.header.stamp = self._stamp(msg)
        with self.lock:
            self.joints = msg

    def _on_odom(self, msg: Odometry) -> None:
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        try:
            xy = finite_vector((p.x, p.y), "odometry position", (2,))
            if np.any(np.abs(xy) > MAX_BASE_DISTANCE):
                raise InputError("odometry position", xy, f"is beyond {MAX_BASE_DISTANCE:g} m")
            unit_quaternion((q.x, q.y, q.z, q.w), "odometry orientation")
        except InputError as e:
            return self._bad("odom", str(e))
        stamp = self._stamp(msg)
        with self.lock:
            self.odom = (stamp, (p.x, p.y, yaw_of(q)))

    def _on_objects(self, msg: ObjectStates) -> None:
        try:
            poses, unknown = object_poses(
                msg.name, [(p.position.x, p.position.y, p.position.z) for p in msg.pose],
                [(p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w) for p in msg.pose],
                len(msg.twist), self.rig.objects)
        except InputError as e:
            return self._bad("objects", f"objects: {e}")
        if unknown:
            with self.lock:
                self.unknown_objects = sorted(set(self.unknown_objects) | set(unknown))[:SHOWN]
            self.throttle(rospy.logwarn, "unknown_objects",
                          f"{NODE}: objects not in the scene ignored: {show(unknown)}")
        stamp = self._stamp(msg)
        with self.lock:
            self.objects = (stamp, poses)

    def truth(self) -> Optional[Truth]:
        """The latest joints and base pose; its stamp is the older of the two."""
        with self.lock:
            if self.joints is None or self.odom is None:
                return None
            j, (odom_stamp, base) = self.joints, self.odom
            objects = self.objects[1] if self.objects is not None else None
        stamp = min(j.header.stamp, odom_stamp)
        return Truth(stamp, dict(zip(j.name, j.position)), base, objects)

    # -- output ------------------------------------------------------------------------------------
    def _subscribed(self, name: str) -> dict:
        return {k: self.render_idle or p.get_num_connections() > 0 for k, p in self.pubs[name].items()}

    def render(self, name: str, truth: Truth) -> bool:
        """Render and publish one sensor at the current state; False if nobody listens."""
        wanted = self._subscribed(name)
        if not any(wanted.values()):
            return False
        t0 = time.perf_counter()
        header = Header(stamp=truth.stamp)
        if name == "lidar":
            header.frame_id = self.config.lidar.frame
            msg = cloud_msg(self.rig.scan_lidar(), header)
            self.pubs[name]["cloud"].publish(msg)
        else:
            spec = self.rig.specs[name]
            header.frame_id = spec.frame
            rgb, depth = self.rig.render_camera(name, rgb=wanted["rgb"], depth=bool(wanted.get("depth")))
            if rgb is not None:
                self.pubs[name]["rgb"].publish(CompressedImage(header=header, format="jpeg",
                                                               data=jpeg(rgb, spec.jpeg_quality)))
            if depth is not None:
                raw = depth_16uc1(depth) if spec.depth_encoding == "16UC1" else depth_32fc1(depth)
                self.pubs[name]["depth"].publish(image_msg(raw, header))
        now = rospy.get_time()
        self.stats[name].tick(now, compute_s=time.perf_counter() - t0, latency_s=now - truth.stamp.to_sec())
        return True

    def diagnostics(self, now: float, truth: Optional[Truth]) -> None:
        arr = DiagnosticArray()
        arr.header.stamp = rospy.Time.from_sec(now) if now > 0 else rospy.Time.now()
        age = now - truth.stamp.to_sec() if truth else float("nan")
        with self.lock:
            bad, unknown, unknown_objects = self.bad_messages, list(self.unknown_joints), list(self.unknown_objects)
        gt = DiagnosticStatus(name=f"{NODE}: ground truth", hardware_id="r1_sim")
        gt.level = DiagnosticStatus.OK if truth and not self.stale else DiagnosticStatus.WARN
        gt.message = ("no ground truth yet" if truth is None else
                      f"stale ({age:.1f} s old): not publishing" if self.stale else "ok")
        gt.values = [KeyValue("age_s", f"{age:.3f}"), KeyValue("bad_messages", str(bad)),
                     KeyValue("unknown_joints", ",".join(unknown) or "none"),
                     KeyValue("unknown_objects", ",".join(unknown_objects) or "none"),
                     KeyValue("objects", "received" if self.objects is not None else "none yet: the scene's poses")]
        arr.status.append(gt)
        for name, stats in self.stats.items():
            if name == "lidar":
                li = self.config.lidar
                label, topics, frame = li.label, li.topic, li.frame
                extra = {"points_per_scan": li.points_per_scan}
            else:
                s = self.rig.specs[name]
                label, frame = s.label, s.frame
                topics = s.rgb_topic + (f" {s.depth_topic}" if s.depth_topic else "")
                extra = {"width": s.width, "height": s.height}
            listened = any(self._subscribed(name).values())
            st = DiagnosticStatus(name=f"{NODE}: {label}", hardware_id="r1_sim")
            st.level = DiagnosticStatus.OK if not self.stale else DiagnosticStatus.WARN
            st.message = ("ground truth stale" if self.stale else
                          "rendering" if listened else "idle (no subscribers)")
            values = stats.values(now, {"rate_target_hz": f"{1.0 / self.period[name]:g}", "frames": stats.total,
                                        "frame_id": frame, "topics": topics, **extra})
            st.values = [KeyValue(k, v) for k, v in values.items()]
            arr.status.append(st)
        self.diag_pub.publish(arr)

    # -- loop --------------------------------------------------------------------------------------
    def spin(self) -> None:
        names = list(self.period)
        due: dict[str, float] = {}
        last_stamp: dict[str, object] = {n: None for n in names}
        next_diag = 0.0
        while not rospy.is_shutdown():
            now = rospy.get_time()
            truth = self.truth()
            if now >= next_diag:
                next_diag = now + self.config.diagnostics_period_s
                self.diagnostics(now, truth)
            if truth is None:
                self.throttle(rospy.loginfo, "wait", f"{NODE}: waiting for ground truth (/sim/joint_states, /sim/odom)")
            elif now - truth.stamp.to_sec() > self.config.stale_after_s:
                self.stale = True
                self.throttle(rospy.logwarn, "stale", f"{NODE}: ground truth {now - truth.stamp.to_sec():.1f} s old "
                                                      f"(> {self.config.stale_after_s:g} s): not publishing")
            else:
                self.stale = False
                if not due:     # first ground truth: stagger the sensors over their periods
                    due = {n: now + k / len(names) * self.period[n] for k, n in enumerate(names)}
                self._render_due(now, truth, due, last_stamp)
            wake = min([next_diag] + list(due.values())) - rospy.get_time()
            try:
                rospy.sleep(min(max(wake, 0.002), 0.05))
            except rospy.ROSTimeMovedBackwardsException:
                due, next_diag = {}, 0.0     # the simulator restarted: start the schedule again
            except rospy.ROSInterruptException:
                break

    def _render_due(self, now: float, truth: Truth, due: dict, last_stamp: dict) -> None:
        state_set = False
        for name in due:
            if now < due[name] or last_stamp[name] == truth.stamp:
                continue
            due[name] = (due[name] + self.period[name] if due[name] + self.period[name] > now
                         else now + self.period[name])
            try:
                if not state_set:
                    unknown = self.rig.set_state(truth.joints, truth.base)
                    if unknown:
                        with self.lock:      # a few names kept to show (a publisher may send thousands)
                            self.unknown_joints = sorted(set(self.unknown_joints) | set(unknown))[:SHOWN]
                        self.throttle(rospy.logwarn, "unknown",
                                      f"{NODE}: joints not in robot_description ignored: {show(unknown)}")
                    if truth.objects:
                        self.rig.set_objects(truth.objects)
                    state_set = True
                if self.render(name, truth):
                    last_stamp[name] = truth.stamp
            except Exception as e:   # noqa: BLE001 - the node must outlive one bad frame
                self.throttle(rospy.logerr, f"render_{name}",
                              f"{NODE}: rendering {name} failed: {type(e).__name__}: {e}")


def main() -> None:
    """The node's process: a bad configuration ends it with one fatal line (r1_common.ros_io.run_node)."""
    run_node(NODE, _run)


def _run() -> None:
    node = SensorsNode()
    try:
        node.spin()          # returns when ROS shuts down
    finally:
        node.rig.close()     # the renderers' GL contexts
