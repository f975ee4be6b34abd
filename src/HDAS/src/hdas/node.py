"""The HDAS ROS node: CAN buses <-> /hdas/* feedback, /motion_control/* commands, function frames.

A thin wrapper: the motor groups (`hdas.motor_group`) hold the control and
safety logic, the boards (`hdas.boards`) turn board frames into messages, the
buses (`r1_can.bus`) move frames. This file reads params (the node's settings,
`hdas.settings.HdasSettings`, and the robot's CAN layout, `r1_can.config`), wires
topics and services to them and publishes at the rates of the stock driver.

A configuration it cannot use (a bad or unknown parameter, a bad layout, no robot_description, a
motor joint without usable URDF limits) raises ConfigError naming the parameter, and a bus that
cannot be opened BusOpenError: `main` ends the process with one fatal line and exit status 1.
"""
from __future__ import annotations

import math
import sys
import threading
import time
from typing import Any, Callable

import numpy as np
import rospy
from diagnostic_msgs.msg import DiagnosticStatus
from hdas_msg.msg import feedback_status, feedback_status_detail, motor_control
from hdas_msg.srv import FunctionFrame, FunctionFrameRequest, FunctionFrameResponse
from sensor_msgs.msg import JointState
from std_msgs.msg import Float32

from hdas.boards import Board, make_board
from hdas.commanders import Commanders
from hdas.motor_group import SERVICE_FUNCTIONS, ChassisGroup, CommandError, Function, MotorGroup
from hdas.settings import NODE, HdasSettings
from hdas.urdf_limits import limit_arrays, read_limits
from r1_can.bus import BusLoop, DriverBus, open_bus
from r1_can.config import FRAME_BITS, RobotConfig, layout_of, parse_config
from r1_common.diagnostics import DiagnosticsPublisher, status
from r1_common.ros_io import DirectPublisher, QuietPublisher, WallTimer, run_node
from r1_common.settings import ConfigError
from r1_common.throttle import Throttle

# group -> (feedback, command, status, service) topic params
GROUP_TOPICS = {
    "left_arm": ("left_arm_feedback_topic", "left_arm_joint_control_topic", "left_arm_error_topic_name",
                 "function_frame_service_left_arm_name"),
    "right_arm": ("right_arm_feedback_topic", "right_arm_joint_control_topic", "right_arm_error_topic_name",
                  "function_frame_service_right_arm_name"),
    "torso": ("torso_feedback_topic_name", "torso_control_command_topic_name", "torso_error_topic_name",
              "function_frame_service_torso_name"),
    "chassis": ("chassis_feedback_topic_name", "chassis_control_command_topic_name", "chassis_error_topic_name",
                None),
}
GRIPPER_TOPICS = {
    "left_arm": ("left_gripper_feedback_topic", "left_gripper_joint_control_topic",
                 "left_gripper_position_control_topic", "left_gripper_error_topic_name"),
    "right_arm": ("right_gripper_feedback_topic", "right_gripper_joint_control_topic",
                  "right_gripper_position_control_topic", "right_gripper_error_topic_name"),
}
BOARD_TOPICS = {"imu_chassis": "chassis_imu_feedback_topic_name", "imu_torso": "torso_imu_feedback_topic_name",
                "bms": "bms_feedback_topic_name", "remote": "controller_topic_name"}
SERVICE_WAIT = 10.0  # [s] a function frame's answer (the request itself gives up after 1 s and 50 cycles)
STATUS_CHECK_PERIOD = 0.02   # [s] error bits are evaluated this often; a change is published at once


class BusOpenError(RuntimeError):
    """A bus of the layout cannot be opened (its interface is down or missing, the simulator is not running)."""


class HdasNode:
    def __init__(self) -> None:
        """Raises ConfigError naming the parameter, BusOpenError naming the bus."""
        self.throttle = Throttle()
        self.commanders = Commanders()      # who sends on each command topic (two at once fight)
        params = rospy.get_param("~", {})
        where = rospy.get_name()
        # the namespace holds the node's settings and the robot's CAN layout (LAYOUT_KEYS): each read apart
        self.settings = s = HdasSettings.from_namespace(params, where=where)
        self.topics = s.topics()
        self.config: RobotConfig = parse_config(layout_of(params), where=where)
        urdf = rospy.get_param(s.robot_description_param, "")
        if not urdf:
            raise ConfigError(s.robot_description_param, "not on the parameter server (joint limits come from "
                                                         "the URDF)")
        limits = read_limits(urdf)
        cfg = self.config
        self.groups: dict[str, MotorGroup] = {}
        for name, spec in cfg.groups.items():
            cls = ChassisGroup if spec.kind == "chassis" else MotorGroup
            try:
                joint_limits = limit_arrays(limits, [m.joint for m in spec.motors])
            except ValueError as e:
                raise ConfigError(s.robot_description_param, f"group {name}: {e}") from None
            self.groups[name] = cls(spec, joint_limits, s.command_timeout, s.reply_timeout, s.enable_on_start,
                                    s.command_lapse)
            if rospy.get_param("/use_sim_time", False):
                # simulated time may run far slower than real time: a controller ticking on it
                # is slow, not silent (see MotorGroup._stale); on the robot the clocks agree
                self.groups[name].robot_clock = rospy.get_time
        # commands dropped (unusable) and clamped (changed to fit the limits), per group
        self.counts = {name: {"dropped": 0, "clamped": 0} for name in self.groups}
        self.buses: dict[str, DriverBus] = {}
        self.bus_streams: dict[str, list[DirectPublisher]] = {}     # bus -> its feedback topics' publishers
        self.bus_loop: BusLoop | None = None
        for name, spec in cfg.buses.items():
            load = cfg.bus_load(name)
            text = (f"HDAS: bus {name} ({spec.interface} {spec.channel}, {spec.rate_hz:g} Hz): expected load "
                    f"{cfg.frames_per_second(name):.0f} frames/s = {100 * load:.0f} % of {spec.bitrate / 1e6:g} Mbit/s")
            (rospy.logwarn if load > 0.8 else rospy.loginfo)(text + (" (above 80 %)" if load > 0.8 else ""))
            try:
                bus = open_bus(spec)
            except Exception as e:
                raise BusOpenError(f"cannot open bus {name} ({spec.interface} {spec.channel}): {e}") from e
            self.buses[name] = DriverBus(spec, bus, self._bus_error)
        self._wire_groups()
        self._wire_boards()
        self._status_pubs_and_timer()

    # -- wiring ------------------------------------------------------------------------------
    def _pub(self, param: str, cls: type, queue: int = 10) -> rospy.Publisher:
        return QuietPublisher(self.topics[param], cls, queue_size=queue)

    def _stream_pub(self, param: str, cls: type, bus: str) -> rospy.Publisher:
        """A feedback stream at the bus rate, written in the bus loop's publish (r1_common.ros_io.DirectPublisher);
        its skipped messages and disconnected subscribers are reported with the bus."""
        pub = DirectPublisher(self.topics[param], cls, tcp_nodelay=True)
        self.bus_streams.setdefault(bus, []).append(pub)
        return pub

    def _wire_groups(self) -> None:
        for name, group in self.groups.items():
            fb_param, cmd_param, _, srv_param = GROUP_TOPICS.get(name, (None, None, None, None))
            bus = self.buses[group.spec.bus]
            bus.add_source(group.frames)
            bus.add_sink(group.on_frame)
            bus.add_command_stamp(lambda g=group: g.sent_stamp)
            if fb_param:
                bus.after_send(self._feedback_publisher(group, self._stream_pub(fb_param, JointState, group.spec.bus)))
            if cmd_param:
                rospy.Subscriber(self.topics[cmd_param], motor_control, self._command_cb(group), queue_size=1,
                                 tcp_nodelay=True)
            if srv_param:
                rospy.Service(self.topics[srv_param], FunctionFrame, self._service_cb(group))
            if group.spec.gripper and name in GRIPPER_TOPICS:
                fb, motor_cmd, stroke_cmd, _ = GRIPPER_TOPICS[name]
                bus.after_send(self._gripper_publisher(group, self._stream_pub(fb, JointState, group.spec.bus)))
                rospy.Subscriber(self.topics[motor_cmd], motor_control, self._gripper_motor_cb(group), queue_size=1)
                rospy.Subscriber(self.topics[stroke_cmd], Float32, self._gripper_stroke_cb(group), queue_size=1)

    def _wire_boards(self) -> None:
        self.boards: list[Board] = []
        for name, spec in self.config.boards.items():
            param = BOARD_TOPICS.get(name)
            topic = self.topics[param] if param else f"/hdas/{name}"
            board = make_board(spec, topic)
            self.boards.append(board)
            self.buses[spec.bus].add_sink(board.on_frame)

    def _feedback_publisher(self, group: MotorGroup, pub: rospy.Publisher) -> Callable[[float], None]:
        if isinstance(group, ChassisGroup):
            names = [m.joint for m in group.motors[:group.modules]]
        else:
            names = [m.joint for m in group.motors]
        msg = JointState(name=names)

        def publish(now: float) -> None:
            if not group.ready or pub.get_num_connections() == 0:    # nobody listening: not built
                return
            p, v, e = group.snapshot()
            msg.header.stamp = rospy.Time.now()
            msg.position, msg.velocity, msg.effort = p.tolist(), v.tolist(), e.tolist()
            pub.publish(msg)
        return publish

    def _gripper_publisher(self, group: MotorGroup, pub: rospy.Publisher) -> Callable[[float], None]:
        msg = JointState(name=[group.spec.gripper.joint])

        def publish(now: float) -> None:
            if not group.ready or pub.get_num_connections() == 0:
                return
            p, _, _ = group.snapshot()
            msg.header.stamp = rospy.Time.now()
            # stroke (finger gap) in mm, as the guide; a gap is never below closed or above open
            msg.position = [float(np.clip(p[-1], 0.0, group.limits.upper[-1])) * 2000.0]
            pub.publish(msg)
        return publish

    # -- commands and services -------------------------------------------------------------
    def _heard(self, topic: str, msg: Any) -> None:
        """Note which node sent a command on `topic`; warn (throttled) while another one is active too."""
        caller = getattr(msg, "_connection_header", {}).get("callerid", "unknown")
        now = time.monotonic()
        if self.commanders.heard(topic, caller, now):
            nodes = self.commanders.active(topic, now)
            self.throttle(rospy.logwarn, f"commanders{topic}", f"HDAS: {topic} is commanded by {len(nodes)} nodes at "
                          f"once: {', '.join(nodes)}; each command undoes the other's (stop all but one)")

    def _command_cb(self, group: MotorGroup) -> Callable[[motor_control], None]:
        topic = self.topics[GROUP_TOPICS[group.name][1]]

        def callback(msg: motor_control) -> None:
            self._heard(topic, msg)
            try:
                notes = group.set_command(msg.p_des, msg.v_des, msg.kp, msg.kd, msg.t_ff, time.monotonic())
            except CommandError as e:
                self.counts[group.name]["dropped"] += 1
                self.throttle(rospy.logerr, f"{group.name}/bad", f"HDAS: {group.name} command dropped: {e}")
                return
            self.counts[group.name]["clamped"] += bool(notes)
            for note in notes:
                self.throttle(rospy.logwarn, f"{group.name}/{note.split()[0]}", f"HDAS: {group.name} command {note}")
        return callback

    def _gripper_motor_cb(self, group: MotorGroup) -> Callable[[motor_control], None]:
        topic = self.topics[GRIPPER_TOPICS[group.name][1]]

        def callback(msg: motor_control) -> None:
            self._heard(topic, msg)
            try:
                fields = [msg.p_des, msg.v_des, msg.kp, msg.kd, msg.t_ff]
                if any(len(f) != 1 for f in fields):
                    raise CommandError(f"gripper commands take 1 entry per field, got {[len(f) for f in fields]}")
                notes = group.set_gripper_motor_command(*(f[0] for f in fields), time.monotonic())
            except CommandError as e:
                self.counts[group.name]["dropped"] += 1
                self.throttle(rospy.logerr, f"{group.name}/gripper", f"HDAS: {group.name} gripper command dropped: {e}")
                return
            self.counts[group.name]["clamped"] += bool(notes)
            for note in notes:
                self.throttle(rospy.logwarn, f"{group.name}/gripper-clamp", f"HDAS: {group.name} gripper {note}")
        return callback

    def _gripper_stroke_cb(self, group: MotorGroup) -> Callable[[Float32], None]:
        topic = self.topics[GRIPPER_TOPICS[group.name][2]]

        def callback(msg: Float32) -> None:
            self._heard(topic, msg)
            try:
                notes = group.set_gripper_stroke(msg.data, time.monotonic())
            except CommandError as e:
                self.counts[group.name]["dropped"] += 1
                self.throttle(rospy.logerr, f"{group.name}/stroke", f"HDAS: {group.name} gripper stroke dropped: {e}")
                return
            self.counts[group.name]["clamped"] += bool(notes)
            for note in notes:
                self.throttle(rospy.logwarn, f"{group.name}/stroke-clamp", f"HDAS: {group.name} gripper stroke {note}")
        return callback

    def _service_cb(self, group: MotorGroup) -> Callable[[FunctionFrameRequest], FunctionFrameResponse]:
        def callback(req: FunctionFrameRequest) -> FunctionFrameResponse:
            try:
                function = Function(req.command)
                if function not in SERVICE_FUNCTIONS:
                    raise ValueError(function)
            except ValueError:
                return FunctionFrameResponse(False, f"unknown command {req.command}: 1 enable, 2 disable, "
                                                    "3 calibrate, 4 clear errors, 5 MIT, 6 PID")
            pending = group.request(function, time.monotonic())
            if not pending.done.wait(SERVICE_WAIT):
                name = function.name.lower()
                if group.cancel(pending, f"{group.name}: {name} cancelled: not started within {SERVICE_WAIT:.0f} s "
                                         f"(a motor of the group has not answered)"):
                    rospy.logwarn(f"HDAS: {pending.message}")
                    return FunctionFrameResponse(False, pending.message)
                return FunctionFrameResponse(False, f"{group.name}: {name} still running after {SERVICE_WAIT:.0f} s")
            (rospy.loginfo if pending.success else rospy.logwarn)(f"HDAS: {pending.message}")
            return FunctionFrameResponse(pending.success, pending.message)
        return callback

    # -- status ----------------------------------------------------------------------------
    def _status_pubs_and_timer(self) -> None:
        self._status_pubs = []
        for name, group in self.groups.items():
            status_param = GROUP_TOPICS.get(name, (None, None, None, None))[2]
            joints = slice(0, group.n_joints)
            if status_param:
                self._status_pubs.append((group, joints, self._pub(status_param, feedback_status, 2)))
            if group.spec.gripper and name in GRIPPER_TOPICS:
                gripper = slice(group.n - 1, group.n)
                self._status_pubs.append((group, gripper, self._pub(GRIPPER_TOPICS[name][3], feedback_status, 2)))
        self._last_counts: dict[str, tuple[float, int, int, int]] = {}
        self._bus_statuses: list[DiagnosticStatus] = []
        # per status topic: the codes published last and when (monotonic)
        self._published: dict[int, tuple[list[int], float]] = {}
        # per group, joint -> (code, descriptions) of every joint whose code is not 0 (for /diagnostics)
        self.joint_errors: dict[str, dict[str, tuple[int, list[str]]]] = {g: {} for g in self.groups}
        self._status_lock = threading.Lock()
        # wall time: a rospy.Timer on the simulated clock wakes on every /clock message (r1_common.ros_io)
        WallTimer(STATUS_CHECK_PERIOD, self._check_status, "status")
        self._diagnostics = DiagnosticsPublisher(self._diagnostic_statuses, name="HDAS")   # 1 Hz of wall time

    def _check_status(self, _event: Any) -> None:
        """Every STATUS_CHECK_PERIOD: each joint's error bits. A status topic is published when a code
        in it changed (a fault within a period of its cause) and at the stock cadence (status_rate)
        otherwise; a change also publishes /diagnostics at once."""
        now = time.monotonic()
        period = 1.0 / self.settings.status_rate
        conditions = {g.name: g.conditions(now) for g in self.groups.values()}
        changed = []
        with self._status_lock:
            for group, part, pub in self._status_pubs:
                motors = group.motors[part]
                codes = [group.table.code(c) for c in conditions[group.name][part]]
                last = self._published.get(id(pub))
                if last is not None and codes == last[0] and now - last[1] < period:
                    continue
                msg = feedback_status()
                msg.header.stamp = rospy.Time.now()
                msg.name_id = group.name if part.start == 0 else f"{group.name}_gripper"
                errors = self.joint_errors[group.name]
                for motor, code in zip(motors, codes):
                    words = group.table.describe(code)
                    msg.errors.append(feedback_status_detail(motor.joint, code, words))
                    if code:
                        errors[motor.joint] = (code, words)
                    else:
                        errors.pop(motor.joint, None)
                pub.publish(msg)
                if last is not None and codes != last[0]:
                    changed += [(c, f"{m.joint} {hex(c)} {' '.join(group.table.describe(c)) or 'ok'}")
                                for m, c, old in zip(motors, codes, last[0]) if c != old]
                self._published[id(pub)] = (codes, now)
        if changed:
            log = rospy.logwarn if any(c for c, _ in changed) else rospy.loginfo     # a recovery is news, no alarm
            log(f"HDAS: error bits changed: {'; '.join(text for _, text in changed)}")
            self._diagnostics.publish_now()
        for group in self.groups.values():
            for event in group.take_events():
                rospy.loginfo(f"HDAS: {event}")

    def _commander_status(self, now: float) -> DiagnosticStatus:
        """Every node heard on each command topic in the last minute, with its message count and the
        age of its last; WARN while a topic has more than one active commander."""
        report = self.commanders.report(now)
        crowded = [t for t in report if len(self.commanders.active(t, now)) > 1]
        values = {topic: ", ".join(f"{n} ({count} msgs, last {age:.1f} s ago)"
                                   for n, (count, age) in sorted(nodes.items()))
                  for topic, nodes in sorted(report.items()) if nodes}
        if crowded:
            return status("HDAS: commanders", "motion_control", DiagnosticStatus.WARN,
                          f"more than one node commands {', '.join(crowded)}", values)
        return status("HDAS: commanders", "motion_control", DiagnosticStatus.OK, "one commander per topic", values)

    def _joint_statuses(self) -> list[DiagnosticStatus]:
        """Per group: each joint in error by name with its code and decoded bits (ERROR; WARN when
        the only bit is the motor's being disabled)."""
        out = []
        with self._status_lock:
            for name in self.groups:
                errors = dict(self.joint_errors[name])
                level, message = DiagnosticStatus.OK, "no joint in error"
                if errors:
                    only_disabled = all(words == ["MOTOR_DISABLE"] for _, words in errors.values())
                    level = DiagnosticStatus.WARN if only_disabled else DiagnosticStatus.ERROR
                    message = "in error: " + ", ".join(f"{j} ({' '.join(w)})" for j, (_, w) in errors.items())
                values = {"joints_in_error": len(errors),
                          **{j: f"{hex(code)} {' '.join(words)}" for j, (code, words) in errors.items()}}
                out.append(status(f"HDAS: joints {name}", name, level, message, values))
        return out

    def _diagnostic_statuses(self) -> list[DiagnosticStatus]:
        """Per bus: the standard loop keys of its cycle (r1_common.loop_stats, on the driver's monotonic
        clock; latency = age of the command sent, from the motor_control message's arrival to its
        frames going out), frames/s each way, load, and the counters (the benchmark and r1_monitor
        read it). Published early (a fault): the bus statuses of the last full period again, so no
        rate is measured over a few milliseconds."""
        now = time.monotonic()
        last = min((c[0] for c in self._last_counts.values()), default=-math.inf)
        if now - last < 0.5 and self._bus_statuses:
            return self._bus_statuses + self._joint_statuses() + [self._commander_status(now)]
        out = []
        for name, bus in self.buses.items():
            t0, cycles0, sent0, received0 = self._last_counts.get(name, (now, bus.cycles, bus.frames_sent,
                                                                           bus.frames_received))
            self._last_counts[name] = (now, bus.cycles, bus.frames_sent, bus.frames_received)
            dt = now - t0
            if dt <= 0:
                continue
            rate = (bus.cycles - cycles0) / dt
            sent, received = (bus.frames_sent - sent0) / dt, (bus.frames_received - received0) / dt
            load = (sent + received) * FRAME_BITS / bus.spec.bitrate
            errors = bus.send_errors + bus.handler_errors
            on_bus = [g.name for g in self.groups.values() if g.spec.bus == name]
            dropped = sum(self.counts[g]["dropped"] for g in on_bus)
            clamped = sum(self.counts[g]["clamped"] for g in on_bus)
            level = DiagnosticStatus.OK
            message = "ok"
            if rate < 0.9 * bus.spec.rate_hz:
                level, message = DiagnosticStatus.WARN, f"cycle {rate:.0f} Hz of {bus.spec.rate_hz:g} Hz"
            if errors:
                level, message = DiagnosticStatus.WARN, f"{errors} errors"
            streams = self.bus_streams.get(name, [])
            skipped, cut = sum(p.skipped for p in streams), sum(p.disconnected for p in streams)
            if cut:
                level, message = DiagnosticStatus.WARN, f"{cut} feedback subscribers disconnected (not reading)"
            values = bus.stats.values(now, {
                "cycle_hz": f"{rate:.1f}", "target_hz": f"{bus.spec.rate_hz:g}",
                "frames_sent_per_s": f"{sent:.0f}", "frames_received_per_s": f"{received:.0f}",
                "load_percent": f"{100 * load:.1f}", "dropped": dropped, "clamped": clamped, "errors": errors,
                "send_errors": bus.send_errors, "handler_errors": bus.handler_errors,
                "unknown_frames": bus.unknown_frames, "overruns": bus.overruns,
                "feedback_skipped": skipped, "feedback_subscribers_disconnected": cut})
            out.append(status(f"HDAS: bus {name}", bus.spec.channel, level, message, values))
        self._bus_statuses = out
        return out + self._joint_statuses() + [self._commander_status(now)]

    def _bus_error(self, text: str) -> None:
        self.throttle(rospy.logerr, text.split(":")[0], f"HDAS: {text}")

    # -- life cycle ------------------------------------------------------------------------
    def start(self) -> None:
        self.bus_loop = BusLoop()
        for bus in self.buses.values():
            self.bus_loop.add(bus)
        self.bus_loop.start()
        rospy.loginfo("HDAS: running %s on %s", ", ".join(self.groups), ", ".join(self.buses))

    def stop(self) -> None:
        if self.bus_loop is not None:
            self.bus_loop.stop()


def start_node() -> HdasNode:
    """The node, started: its buses cycling. A bus that cannot be opened ends the process (one fatal line,
    exit status 1, as a bad configuration does in run_node)."""
    try:
        node = HdasNode()
    except BusOpenError as e:
        rospy.logfatal(f"{rospy.get_name()}: {e}")
        sys.exit(1)
    node.start()
    rospy.on_shutdown(node.stop)
    return node


def main() -> None:
    run_node(NODE, start_node)
