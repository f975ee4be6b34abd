"""r1_jointTracker_demo_node: joint targets -> motor commands, one Ruckig tracker per group.

A thin ROS wrapper around `mobiman.tracker.joint_tracker`: each feedback message of a group is
one tick of that group (so the output runs at the feedback rate, 500 Hz on the R1):
step its trajectory on the feedback's stamps, add gravity feed-forward at the measured
configuration of the whole upper body (a group's own joints at the plan with
`gravity_at: planned`), publish one hdas_msg/motor_control. No feedback, no output.

A new target does not wait for the next feedback (`react_to_targets`, default on): the
command of the next tick is computed and sent at once, its tick borrowed from the plan's
clock (the next feedback then advances one tick less), at most once per feedback message.
So the motors see a new target within the tracker's own compute time, not after up to one
feedback period (or a stalled driver's gap), and the plan never runs ahead of robot time by
more than one tick.
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
from hdas_msg.msg import motor_control
from sensor_msgs.msg import JointState

from mobiman.model.robot_model import RobotModel, load_group_config
from mobiman.tracker.joint_tracker import (
    JointTrajectoryTracker,
    MitGains,
    Posture,
    TargetError,
    TrackerLimits,
    clamp_effort,
    feedforward_at,
    mit_command,
    pid_command,
    read_target,
)
from r1_common.diagnostics import DiagnosticsPublisher, status
from r1_common.loop_stats import LoopStats
from r1_common.realtime import policy_name, request_fifo
from r1_common.ros_io import DirectPublisher, WallTimer, stop_within
from r1_common.throttle import Throttle
from r1_common.validation import (
    FEEDBACK_MARGIN,
    STREAM_MAX_AGE,
    STREAM_MAX_AHEAD,
    InputError,
    data_time,
    plausible_positions,
)

GROUPS = ("torso", "left_arm", "right_arm")


@dataclass
class Group:
    """One tracked group and what the node keeps about it."""

    name: str
    tracker: JointTrajectoryTracker
    pub: rospy.Publisher
    gains: MitGains
    torque_ratio: np.ndarray
    gripper_gains: tuple[float, float] | None
    effort: np.ndarray                 # the URDF's torque limits: t_ff stays within them
    gripper_joint: str | None = None   # the arm's 7th entry (URDF finger joint) and its range [m]
    gripper_range: tuple[float, float] = (0.0, 0.0)
    gravity_at_plan: bool = False      # the group's own joints at the planned, not measured, position
    gripper_target: float | None = None
    here: np.ndarray | None = None     # the last measured joints, clipped to the limits
    feedback_stamp: float = -1e9       # ROS time of the last feedback
    feedback_wall: float = -1e9        # and wall time (monotonic)
    stale: bool = False
    last_tick: float | None = None
    clock_debt: float = 0.0            # robot time not yet turned into trajectory ticks [s]
    early: bool = False                # a target's tick was sent ahead of this feedback period
    early_commands: int = 0            # commands sent on a target's arrival (react_to_targets)
    last_target: tuple[list[float], list[float]] | None = None
    resyncs: int = 0
    paused: int = 0                    # ticks the plan waited for the joints (following error)
    stale_count: int = 0
    ticks: int = 0
    dropped: int = 0
    clamped: int = 0
    torque_clamped: int = 0            # commands whose feed-forward torque was beyond the effort limit
    bad_feedback: int = 0              # feedback messages ignored (wrong length, non-finite, out of range)
    bad_stamps: int = 0                # feedback stamped off the clock (taken as received)
    ruckig_errors: int = 0             # ticks on which Ruckig failed (the plan held at rest)
    # one tick per feedback message: rate (ROS time), compute, latency = feedback stamp -> command
    stats: LoopStats = field(default_factory=LoopStats)
    lock: threading.Lock = field(default_factory=threading.Lock)


class JointTrackerNode:
    def __init__(self, params: dict[str, Any] | None = None, name: str | None = None) -> None:
        """`params`, `name`: this node's private parameters and name when it is hosted in another process
        (`mobiman.nodes.controller_host`); by default the process's own node."""
        self.throttle = Throttle(period=5.0)
        p: dict[str, Any] = rospy.get_param("~") if params is None else params
        self.mode = str(p.get("output_mode", "mit"))
        if self.mode not in ("mit", "pid"):
            raise SystemExit(f"r1_jointTracker_demo_node: output_mode must be mit or pid, not {self.mode!r}")
        self.feedback_timeout = float(p.get("feedback_timeout", 0.05))
        self.inertial = float(p.get("inertial_feedforward", 1.0))
        rate = float(p.get("nominal_rate_hz", 500))
        if not (rate > 0 and self.feedback_timeout > 0):
            raise SystemExit(f"r1_jointTracker_demo_node: nominal_rate_hz ({rate}) and feedback_timeout "
                             f"({self.feedback_timeout}) must be > 0")
        dt = 1.0 / rate
        # A gap between feedback messages up to feedback_timeout is normal operation and advances
        # the plan in full; a longer one is a stall, and the plan then advances only this much.
        self.max_catch_up = max(1, int(round(self.feedback_timeout / dt)))
        self.resync_error = float(p.get("resync_error", 0.3))
        self.max_following_error = float(p.get("max_following_error", 0.05))
        self.react_to_targets = bool(p.get("react_to_targets", True))
        self.scheduling = "SCHED_OTHER"
        groups_file = p.get("joint_groups_file") or str(
            Path(rospkg.RosPack().get_path("mobiman")) / "config/r1_joint_groups.yaml")
        joint_groups, _ = load_group_config(groups_file)
        urdf = rospy.get_param(p.get("robot_description_param", "robot_description"), "")
        if not urdf:
            raise SystemExit("r1_jointTracker_demo_node: no robot_description on the parameter server")
        self.model = RobotModel(urdf, joint_groups)
        self.urdf_joints = frozenset(self.model.model.names[1:])
        self.model_lock = threading.Lock()   # one pinocchio Data, three feedback threads
        self.posture = Posture(self.model)    # the measured upper body, for gravity (under model_lock)
        enabled = [g for g in GROUPS if not (g == "torso" and p.get("disable_torso", False))]
        fast = bool(p.get("fast", False))
        self.groups: dict[str, Group] = {}
        for name in enabled:
            try:
                self.groups[name] = self._group(name, p, joint_groups, dt, fast)
            except (KeyError, TypeError, ValueError) as e:
                raise SystemExit(f"r1_jointTracker_demo_node: groups/{name} in the config: "
                                 f"{e.__class__.__name__}: {e}") from None
        for name, g in self.groups.items():
            cfg = p["groups"][name]
            rospy.Subscriber(cfg["target_topic"], JointState, self._on_target, g, queue_size=10, tcp_nodelay=True)
            rospy.Subscriber(cfg["feedback_topic"], JointState, self._on_feedback, g, queue_size=1, tcp_nodelay=True)
        # other groups' feedback still shapes gravity (e.g. the torso with disable_torso)
        for name in GROUPS:
            if name not in self.groups:
                topic = {"torso": "/hdas/feedback_torso"}.get(name)
                if topic:
                    rospy.Subscriber(topic, JointState, self._on_other_feedback, name, queue_size=1)
        WallTimer(0.02, self._watch, "watchdog")   # wall time: see r1_common.ros_io.WallTimer
        self._diagnostics = DiagnosticsPublisher(self._diagnostic_statuses, name="r1_jointTracker_demo_node")
        rospy.loginfo("r1_jointTracker_demo_node: %s, %s output%s; waiting for feedback", ", ".join(self.groups),
                      self.mode, ", fast (fixed limits)" if fast else "")

    # -- inputs ----------------------------------------------------------------------------
    def _on_target(self, msg: JointState, g: Group) -> None:
        n = len(g.tracker.names)
        try:
            position, velocity, unknown_names = read_target(msg.name, msg.position, msg.velocity, g.tracker.names,
                                                            self.urdf_joints, g.gripper_joint)
            if unknown_names:
                self.throttle(rospy.logwarn, f"{g.name}/names", f"r1_jointTracker_demo_node: {g.name} target "
                              f"names {list(msg.name)} are no URDF joints: taken by index, as the vendor's node does")
            if len(position) == n + 1 and g.gripper_gains is None:
                raise TargetError(f"target position has {n + 1} entries; {g.name} takes {n} (no gripper)")
            grip = float(position[n]) if len(position) == n + 1 else None
            if grip is not None and not np.isfinite(grip):
                raise TargetError(f"gripper target {grip} is not finite")
            with g.lock:
                notes = g.tracker.set_target(position, velocity)
                g.last_target = (list(position[:n]), list(velocity))
                if grip is not None:
                    lo, hi = g.gripper_range
                    g.gripper_target = min(max(grip, lo), hi)
                    if g.gripper_target != grip:
                        notes.append(f"gripper target {grip:.4g} clamped to {g.gripper_target:.4g} m")
                else:
                    g.gripper_target = None
        except TargetError as e:
            g.dropped += 1
            self.throttle(rospy.logerr, f"{g.name}/bad", f"r1_jointTracker_demo_node: {g.name} target dropped: {e}")
            return
        if notes:
            g.clamped += 1
            self.throttle(rospy.logwarn, f"{g.name}/clamp", f"r1_jointTracker_demo_node: {g.name} target: "
                          + "; ".join(notes))
        if self.react_to_targets:
            self._tick_early(g)

    def _tick_early(self, g: Group) -> None:
        """Send the next tick's command now, on a target's arrival, borrowing that tick from the
        plan's clock; once per feedback period, and only while the feedback is live."""
        with g.lock:
            if not g.tracker.started or g.stale or g.early or g.here is None:
                return
            steps = self._gate(g, 1, g.here)
            if not steps:
                return
            g.early = True
            g.clock_debt -= g.tracker.dt
            g.tracker.advance()
            if g.tracker.last_error:
                g.ruckig_errors += 1
            # published under the lock: a feedback tick computed after this one cannot go out before it
            g.pub.publish(self._command(g))
            g.early_commands += 1

    def _on_other_feedback(self, msg: JointState, name: str) -> None:
        try:
            with self.model_lock:
                self.posture.set(name, msg.position)
        except ValueError as e:
            self.throttle(rospy.logerr, f"{name}/feedback", f"r1_jointTracker_demo_node: {name} feedback ignored: {e}")
            return

    def _on_feedback(self, msg: JointState, g: Group) -> None:
        """One tick: the feedback message drives the trajectory and the output."""
        t0 = time.perf_counter()
        n = len(g.tracker.names)
        # checked on the message's own tuple: numpy's isfinite/all on 6 values cost more than
        # the rest of the check and the conversion
        position = msg.position[:n]
        lim = g.tracker.limits
        try:
            if len(position) != n or not all(map(math.isfinite, position)):
                raise InputError("feedback position", msg.position, f"needs {n} finite entries")
            q = plausible_positions(np.array(position, float), lim.lower, lim.upper, FEEDBACK_MARGIN,
                                    "feedback position", g.tracker.names)
        except InputError as e:
            g.bad_feedback += 1
            self.throttle(rospy.logerr, f"{g.name}/feedback", f"r1_jointTracker_demo_node: {g.name} feedback "
                          f"ignored: {e}")
            return
        now = rospy.get_time()
        stamp, stamp_note = data_time(msg.header.stamp.to_sec(), now, STREAM_MAX_AGE, STREAM_MAX_AHEAD)
        if stamp_note:
            g.bad_stamps += 1
            self.throttle(rospy.logwarn, f"{g.name}/stamp", f"r1_jointTracker_demo_node: {g.name} feedback "
                          f"{stamp_note}")
        with self.model_lock:
            self.posture.set(g.name, q)
        with g.lock:
            g.feedback_stamp, g.feedback_wall = now, time.monotonic()
            if g.stale:
                g.stale = False
                self.throttle(rospy.loginfo, f"{g.name}/back",
                              f"r1_jointTracker_demo_node: {g.name} feedback is back; publishing again")
            here = np.clip(q, lim.lower, lim.upper)      # a joint resting on its hard stop reads just past it
            g.here = here
            if not g.tracker.started:
                g.tracker.reset(here)    # hold where the robot is: no jump to zero or a stale target
                rospy.loginfo(f"r1_jointTracker_demo_node: {g.name} feedback arrived; "
                              f"holding {np.round(q, 3).tolist()}")
            elif np.max(np.abs(q - g.tracker.position)) > self.resync_error and self._at_rest(msg, n):
                self._resync(g, q, here)     # far from the plan and not moving: not a lag, the motors are off
            g.early = False
            steps = self._gate(g, self._ticks_due(g, stamp), here)
            for _ in range(steps):
                g.tracker.advance()
            if steps and g.tracker.last_error:
                g.ruckig_errors += 1
            out = self._command(g)
            g.pub.publish(out)      # under the lock: commands leave in the order they were computed
        g.ticks += 1
        sent = out.header.stamp.to_sec()
        g.stats.tick(sent, time.perf_counter() - t0, sent - stamp if not msg.header.stamp.is_zero() else float("nan"))

    def _gate(self, g: Group, steps: int, here: np.ndarray) -> int:
        """The ticks the plan may take now: none while the joints lag the moving plan by more than
        max_following_error (stale commands, a stall, a block: its clock waits for them). Only a
        lag in the direction of motion counts: a joint ahead of the plan is pulled back by the plan
        moving on, not by it waiting. Under g.lock."""
        if steps and self.max_following_error > 0.0:
            behind = (g.tracker.position - here) * np.sign(g.tracker.velocity)
            if np.max(behind) > self.max_following_error:
                g.paused += 1
                return 0
        return steps

    def _command(self, g: Group) -> motor_control:
        """The motor_control for the plan's current state (MIT: gravity and inertial feed-forward;
        PID: the speed limit and torque ratio), the gripper appended when it has a target. Under g.lock."""
        if self.mode == "mit":
            with self.model_lock:
                q_dyn = self.posture.with_group(g.name, g.tracker.position) if g.gravity_at_plan \
                    else self.posture.q
                t_ff = feedforward_at(self.model, q_dyn, g.name, g.tracker.acceleration if self.inertial else None,
                                      self.inertial)
            t_ff, beyond = clamp_effort(t_ff, g.effort)
            if beyond:
                g.torque_clamped += 1
                self.throttle(rospy.logwarn, f"{g.name}/torque", f"r1_jointTracker_demo_node: {g.name} feed-forward "
                              f"torque beyond the effort limits {g.effort.tolist()} N·m: clamped (the motors cannot "
                              f"hold this posture or acceleration)")
            fields = mit_command(g.tracker, g.gains, t_ff)
        else:
            fields = pid_command(g.tracker, g.torque_ratio)
        out = motor_control()
        out.header.stamp = rospy.Time.now()
        out.name = g.name
        out.p_des, out.v_des, out.kp, out.kd, out.t_ff = (list(f) for f in fields)
        # Ruckig does not enforce position limits: a braking joint may pass one by a hair
        out.p_des = np.clip(out.p_des, g.tracker.limits.lower, g.tracker.limits.upper).tolist()
        if g.gripper_target is not None:
            kp, kd = g.gripper_gains
            for lst, x in zip((out.p_des, out.v_des, out.kp, out.kd, out.t_ff), (g.gripper_target, 0.0, kp, kd, 0.0)):
                lst.append(x)
        return out

    def _group(self, name: str, p: dict[str, Any], joint_groups: dict[str, list[str]], dt: float,
               fast: bool) -> Group:
        """One group from its config (KeyError, TypeError, ValueError on a bad one), its speed caps
        at most the URDF's velocity limits."""
        cfg, n = p["groups"][name], len(joint_groups[name])
        limits = self.model.limits(name)
        for key in ("kp", "kd", "velocity_cap", "torque_ratio"):
            if key in cfg and np.shape(cfg[key]) != (n,):
                raise ValueError(f"{key} needs {n} entries, got {cfg[key]}")
        if fast and name not in p.get("fast_limits", {}):
            raise KeyError(f"fast mode needs fast_limits/{name} (velocity, acceleration)")
        fixed = p["fast_limits"][name] if fast else None

        def capped(what: str, values: Any) -> np.ndarray:
            cap = np.array(values, float)
            if cap.shape != (n,):
                raise ValueError(f"{what} needs {n} entries, got {cap.tolist()}")
            if np.any(cap > limits.velocity):
                rospy.logwarn(f"r1_jointTracker_demo_node: {name} {what} {cap.tolist()} is above the URDF's "
                              f"velocity limits {limits.velocity.tolist()}; capped to them")
            return np.minimum(cap, limits.velocity)

        tracker_limits = TrackerLimits(
            lower=limits.lower, upper=limits.upper, velocity_cap=capped("velocity_cap", cfg["velocity_cap"]),
            fixed_velocity=capped("fast_limits velocity", fixed["velocity"]) if fixed else None,
            fixed_acceleration=np.array(fixed["acceleration"], float) if fixed else None)
        grip = cfg.get("gripper")
        gripper_joint, gripper_range = None, (0.0, 0.0)
        if grip:
            side = name[:-len("_arm")] if name.endswith("_arm") else name   # (3.8 has no removesuffix)
            gripper_joint = joint_groups[f"{side}_gripper"][0]
            g_lim = self.model.limits(f"{side}_gripper")
            gripper_range = (float(g_lim.lower[0]), float(g_lim.upper[0]))
        return Group(
            name, JointTrajectoryTracker(joint_groups[name], tracker_limits, dt),
            DirectPublisher(cfg["command_topic"], motor_control, tcp_nodelay=True),
            MitGains(np.array(cfg["kp"], float), np.array(cfg["kd"], float)),
            np.array(cfg.get("torque_ratio", [1.0] * n), float),
            (float(grip["kp"]), float(grip["kd"])) if grip else None,
            limits.effort.copy(), gripper_joint, gripper_range, self._gravity_at(name, cfg))

    @staticmethod
    def _gravity_at(name: str, cfg: dict[str, Any]) -> bool:
        where = str(cfg.get("gravity_at", "measured"))
        if where not in ("measured", "planned"):
            raise SystemExit(f"r1_jointTracker_demo_node: groups/{name}/gravity_at must be measured or planned, "
                             f"not {where!r}")
        return where == "planned"

    def _ticks_due(self, g: Group, now: float) -> int:
        """Trajectory ticks for the robot time since the last feedback (its header stamp).

        The trajectory keeps the robot's clock: HDAS stamps each feedback message, and on the
        simulated robot that stamp is simulated time (/clock), so a busy machine slows the
        plan together with the physics. A gap longer than feedback_timeout (lost feedback,
        a stalled driver) advances the plan only by feedback_timeout instead of jumping it ahead.
        """
        if g.last_tick is None or now < g.last_tick:     # first tick, or the clock went back
            g.last_tick, g.clock_debt = now, 0.0
            return 1
        g.clock_debt += now - g.last_tick
        g.last_tick = now
        steps = int(g.clock_debt / g.tracker.dt + 1e-9)
        g.clock_debt -= steps * g.tracker.dt
        if steps > self.max_catch_up:
            steps, g.clock_debt = self.max_catch_up, 0.0
        return steps

    @staticmethod
    def _at_rest(msg: JointState, n: int) -> bool:
        v = np.asarray(msg.velocity[:n], float)
        return len(v) == n and bool(np.all(np.abs(v) < 0.05))

    def _resync(self, g: Group, q: np.ndarray, here: np.ndarray) -> None:
        """The robot is far from the plan (motors off after a fault, blocked, pushed): plan again
        from where it is, so that re-enabled motors are never yanked toward a stale set-point."""
        err = np.abs(q - g.tracker.position)
        worst = int(np.argmax(err))
        g.resyncs += 1
        g.tracker.reset(here)
        if g.last_target is not None:
            try:
                g.tracker.set_target(*g.last_target)
            except TargetError:
                pass
        self.throttle(rospy.logwarn, f"{g.name}/resync",
                      f"r1_jointTracker_demo_node: {g.name} is {err[worst]:.2f} rad from its trajectory at "
                      f"{g.tracker.names[worst]} (> {self.resync_error} rad) and not moving: motors off or blocked?; "
                      f"re-planned from the measured position ({g.resyncs} times so far)")

    # -- supervision -----------------------------------------------------------------------
    def _watch(self, _event: Any) -> None:
        """Feedback is stale when it is old in ROS time *and* in wall time: on simulated time a
        clock that jumps ahead (a simulator catching up after the machine stalled) is not a
        silent driver, and on the robot the two clocks are the same."""
        now, wall = rospy.get_time(), time.monotonic()
        for g in self.groups.values():
            if (g.tracker.started and not g.stale and now - g.feedback_stamp > self.feedback_timeout
                    and wall - g.feedback_wall > self.feedback_timeout):
                g.stale = True
                g.stale_count += 1
                self.throttle(rospy.logwarn, f"{g.name}/stale",
                              f"r1_jointTracker_demo_node: {g.name} feedback stale for {now - g.feedback_stamp:.3f} s "
                              f"(> {self.feedback_timeout} s): not publishing until it is back (HDAS holds the "
                              f"last command); {g.stale_count} times so far")

    def _diagnostic_statuses(self) -> list[DiagnosticStatus]:
        """Per group: the standard loop keys (r1_common.loop_stats; a tick is one feedback message, its
        latency the feedback's stamp to the motor_control publish, in ROS time), the counters."""
        now = rospy.get_time()
        out = []
        for g in self.groups.values():
            state = "waiting for feedback" if not g.tracker.started else ("feedback stale" if g.stale else
                                                                          ("at target" if g.tracker.at_target
                                                                           else "moving"))
            level = DiagnosticStatus.WARN if g.stale or not g.tracker.started else DiagnosticStatus.OK
            values = g.stats.values(now, {
                "dropped": g.dropped, "clamped": g.clamped, "errors": g.bad_feedback + g.ruckig_errors,
                "ticks": g.ticks, "early_commands": g.early_commands, "torque_clamped": g.torque_clamped,
                "scheduling": self.scheduling, "targets_dropped": g.dropped, "targets_clamped": g.clamped,
                "bad_feedback": g.bad_feedback, "bad_stamps": g.bad_stamps, "ruckig_error_ticks": g.ruckig_errors,
                "stale_feedback_events": g.stale_count, "resyncs": g.resyncs, "following_error_pauses": g.paused,
                "ruckig_error": g.tracker.last_error or ""})
            out.append(status(f"r1_jointTracker_demo_node: {g.name}", g.name, level, state, values))
        return out


def main() -> None:
    rospy.init_node("r1_jointTracker_demo_node")
    stop_within()   # gone within seconds of a SIGINT, whatever hangs
    node = JointTrackerNode()
    # after the node's threads exist: every one of them is moved (docs/joint_tracker.md "Scheduling")
    why_not = request_fifo(int(rospy.get_param("~realtime_priority", 0)))
    if why_not:
        rospy.logwarn(f"r1_jointTracker_demo_node: {why_not}")
    node.scheduling = policy_name()
    rospy.loginfo(f"r1_jointTracker_demo_node: scheduling {node.scheduling}")
    rospy.spin()
