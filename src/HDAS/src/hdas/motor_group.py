"""A group of motors on one bus that HDAS drives together (an arm, the torso, the chassis).

ROS-free and I/O-free: the node hands it commands (`set_command`) and received
frames (`on_frame`) and asks it each cycle for the frames to send (`frames`).
It owns every safety rule of the driver, so they hold whoever publishes:

* commands are validated (length, finite) and clamped to the URDF's joint,
  velocity and torque limits before they are encoded; in MIT mode the torque
  the motor will produce at the last measured state is bounded too
  (`hdas.command_limits.CommandLimits`);
* every cycle sends something to every motor (the command, a hold, or a status
  request while disabled), so feedback keeps flowing and no motor watchdog fires
  (`hdas.group_codec.GroupCodec` encodes the frames, decodes the replies and says
  what is wrong with each motor);
* a command stream silent for `command_timeout` makes the group hold its last
  position with zero velocity (the chassis ramps its wheels to zero instead);
  one late by `command_lapse` already has its feed-forward replaced by the median
  of the stream's last `LAPSE_WINDOW` (a controller starved of CPU must not have a
  one-tick torque, such as a base's acceleration pulse, held for its whole lapse);
* function frames (enable, disable, calibrate, clear errors, MIT/PID mode) run
  as confirmed sequences: a mode change only while disabled, calibration only
  while disabled, and each answers whether every motor confirmed it
  (`hdas.function_frames.FunctionSequencer`, a state machine).

`MotorGroup` composes those three and keeps the commands: the latest, the
gripper's, and the hold when there is none or it went stale.

Joint units are the URDF's (rad, m for gripper fingers, m/s for wheel speed);
motor units are the motor's rad, converted with each motor's `metres_per_rad`.
"""
from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import replace
from typing import Callable, Sequence

import numpy as np

from hdas.command_limits import (
    Command,
    CommandError,
    CommandLimits,
    JointLimitArrays,
    at_rest,
    check_finite,
    command_array,
)
from hdas.errors import TABLES, Condition
from hdas.function_frames import SERVICE_FUNCTIONS, Function, FunctionSequencer, Request, SequencerState
from hdas.group_codec import Frame, GroupCodec
from r1_can.config import GroupSpec
from r1_can.damiao import ControlMode

__all__ = ["SERVICE_FUNCTIONS", "ChassisGroup", "Command", "CommandError", "Frame", "Function",
           "JointLimitArrays", "MotorGroup", "Request", "SequencerState"]

LAPSE_WINDOW = 0.1   # [s] of a stream's commands whose median feed-forward a late command holds


class MotorGroup:
    """Arms and torso: joints (+ an optional gripper motor last) in MIT or PID (force-position) mode."""

    def __init__(self, spec: GroupSpec, limits: JointLimitArrays, command_timeout: float = 0.2,
                 reply_timeout: float = 0.05, enable_on_start: bool = True, command_lapse: float = 0.05):
        """`command_timeout` [s]: a stream silent this long is held; `command_lapse` [s] (≤ it): one silent this
        long is late, its feed-forward the median of its last LAPSE_WINDOW; `reply_timeout` [s]: a motor
        silent this long after the others answered is RECEIVE_TIMEOUT."""
        self.spec = spec
        self.name = spec.name
        self.table = TABLES[spec.kind]
        self.limits = limits
        self.command_timeout = command_timeout
        self.command_lapse = min(command_lapse, command_timeout)
        self.reply_timeout = reply_timeout
        self.motors = spec.motors
        n = len(self.motors)
        self.n = n
        self.n_joints = n - (1 if spec.gripper else 0)
        self.ratio = np.array([m.metres_per_rad for m in self.motors])
        self.tmax = np.array([m.limits.tmax for m in self.motors])
        self._lock = threading.Lock()
        self.events: list[str] = []   # human-readable happenings for the node to log
        self.codec = GroupCodec(self.motors, limits, reply_timeout)
        self.command_limits = CommandLimits(limits, self.ratio, self.tmax)
        self.sequencer = FunctionSequencer(self.name, self.motors, self.codec, spec.boot_mode, self.motor_modes,
                                           enable_on_start, reply_timeout, forget=self._forget_commands,
                                           adopt=self._adopt, emit=self._event)
        self._command: Command | None = None
        self._gripper: Command | None = None
        self._gripper_streamed = False   # the gripper's command came from a stream (motor_control): it goes stale
        self._hold: Command | None = None
        self._timed_out = False
        self._recent_t: deque[tuple[float, np.ndarray]] = deque()   # (arrival, t_ff) of the joints' commands
        self._steady_of: tuple[Command, Command] | None = None       # a late command and its steady version
        self.sent_stamp: float | None = None     # arrival (driver clock) of the live command last sent
        self._adopted_torque: np.ndarray | None = None    # what adopted motors pushed: the hold keeps it
        # The robot's clock (ROS time; simulated time on the simulated robot), set by the node.
        # A command goes stale only when old in both clocks: on simulated time running slower
        # than real time a controller ticking on the robot's clock is not a silent one.
        self.robot_clock: Callable[[], float] | None = None

    # -- what the parts hold ---------------------------------------------------------------
    mode = property(lambda self: self.sequencer.mode, doc='"mit" or "pid": the motors\' control mode')
    want_enabled = property(lambda self: self.sequencer.want_enabled, doc="the group is meant to be enabled")
    position = property(lambda self: self.codec.position, doc="measured, joint units (NaN until answered)")
    velocity = property(lambda self: self.codec.velocity)
    effort = property(lambda self: self.codec.effort)
    status = property(lambda self: self.codec.status, doc="each motor's last status (-1: no reply yet)")
    stamp = property(lambda self: self.codec.stamp, doc="when each motor last answered (driver clock)")

    def _event(self, text: str) -> None:
        self.events.append(text)

    def _robot_now(self) -> float | None:
        return self.robot_clock() if self.robot_clock is not None else None

    def _stale(self, cmd: Command, now: float, timeout: float | None = None) -> bool:
        """The command is older than `timeout` (None: command_timeout) in the driver's clock and the robot's."""
        timeout = self.command_timeout if timeout is None else timeout
        if now - cmd.stamp <= timeout:
            return False
        robot_now = self._robot_now()
        return robot_now is None or cmd.robot_stamp is None or robot_now - cmd.robot_stamp > timeout

    def _steady(self, cmd: Command) -> Command:
        """`cmd` (the joints' latest, late) with the median feed-forward of the stream's last LAPSE_WINDOW
        before it, per joint: what the stream held, not its last tick. MIT only (PID's t is a torque ratio)."""
        if self.mode != "mit" or len(self._recent_t) < 2:
            return cmd
        if self._steady_of is None or self._steady_of[0] is not cmd:
            t = np.median(np.array([t for _, t in self._recent_t]), axis=0)
            self._steady_of = (cmd, replace(cmd, t=t))
        return self._steady_of[1]

    def motor_modes(self, mode: str) -> list[ControlMode]:
        return [ControlMode.FORCE_POS if mode == "pid" else ControlMode.MIT] * self.n

    # -- commands --------------------------------------------------------------------------
    def set_command(self, p: Sequence[float], v: Sequence[float], kp: Sequence[float], kd: Sequence[float],
                    t: Sequence[float], now: float) -> list[str]:
        """Take a motor_control command (6 joints, or 7 with the gripper); returns what was clamped.

        Raises CommandError for a command that cannot be used at all.
        """
        n, nj = self.n, self.n_joints
        accepted = (nj, n) if self.spec.gripper else (n,)
        count = len(p)
        if count not in accepted:
            raise CommandError(f"p_des has {count} entries; {self.name} takes "
                               f"{' or '.join(map(str, sorted(set(accepted))))}")
        # checked, clamped and stored under the lock: a mode change completing in the bus loop
        # meanwhile would leave a command clamped for the other mode's fields
        with self._lock:
            arr = command_array((p, v, kp, kd, t), count, self.mode)
            cmd, notes = self.command_limits.clamp(arr, slice(0, count), self.mode, now)
            joints = Command(cmd.p[:nj], cmd.v[:nj], cmd.kp[:nj], cmd.kd[:nj], cmd.t[:nj], now, self._robot_now())
            self._command = joints
            recent = self._recent_t
            recent.append((now, joints.t))
            while recent[0][0] < now - LAPSE_WINDOW:
                recent.popleft()
            if count == n:
                self._gripper = Command(cmd.p[nj:], cmd.v[nj:], cmd.kp[nj:], cmd.kd[nj:], cmd.t[nj:], now,
                                        joints.robot_stamp)
                self._gripper_streamed = True
            self._resumed()
        return notes

    def _resumed(self) -> None:
        if self._timed_out:
            self._timed_out = False
            self._event(f"{self.name}: command stream resumed")

    def set_gripper_motor_command(self, p: float, v: float, kp: float, kd: float, t: float, now: float) -> list[str]:
        """control_gripper_*: one entry in the gripper motor's own units (rad, rad/s, N·m)."""
        if not self.spec.gripper:
            raise CommandError(f"{self.name} has no gripper")
        check_finite("gripper command", np.array([p, v, kp, kd, t], dtype=float))
        with self._lock:
            notes = self._set_gripper(*self.command_limits.gripper_from_motor(p, v, kp, kd, t, self.mode), now)
            self._gripper_streamed = True
            return notes

    def set_gripper_stroke(self, stroke_mm: float, now: float) -> list[str]:
        """position_control_gripper_*: the stroke (gap between the fingers) in mm, 0..100."""
        if not self.spec.gripper:
            raise CommandError(f"{self.name} has no gripper")
        if not math.isfinite(stroke_mm):
            raise CommandError(f"gripper stroke {stroke_mm} is not finite")
        g = self.spec.params        # config gains are in motor units (N·m/rad), commands in joint units
        with self._lock:
            return self._set_gripper(*self.command_limits.gripper_stroke(stroke_mm, self.mode, g["position_kp"],
                                                                         g["position_kd"]), now)

    def _set_gripper(self, p: float, v: float, kp: float, kd: float, t: float, now: float) -> list[str]:
        """Clamp and store a gripper command (joint units). Under self._lock."""
        i = slice(self.n - 1, self.n)
        cmd, notes = self.command_limits.clamp(np.array([[p], [v], [kp], [kd], [t]], dtype=float), i, self.mode, now)
        self._gripper = replace(cmd, robot_stamp=self._robot_now())
        self._gripper_streamed = False      # a stroke is a target, kept until replaced
        return notes

    # -- function frames -------------------------------------------------------------------
    def request(self, function: Function, now: float) -> Request:
        """Queue a function frame; wait on `request.done`. Refusals finish at once."""
        with self._lock:
            return self.sequencer.request(function)

    def cancel(self, req: Request, why: str) -> bool:
        """Withdraw a request (and its follow-ups) that has not started; True when it was withdrawn."""
        with self._lock:
            return self.sequencer.cancel(req, why)

    def _forget_commands(self) -> None:
        """Drop the commands and the hold: the group holds where it is until a new command comes."""
        self._command = self._gripper = self._hold = None
        self._recent_t.clear()
        self._adopted_torque = None
        self._gripper_streamed = False
        self.command_limits.reset()

    def _adopt(self) -> None:
        """Take over motors that run a previous driver's last command: hold them where they are with
        the torque they apply now (their gravity load, a grip), so nothing sags or lets go."""
        self._forget_commands()
        self._adopted_torque = np.clip(self.codec.effort, -self.limits.effort, self.limits.effort)

    # -- the cycle -------------------------------------------------------------------------
    def frames(self, now: float) -> list[Frame]:
        """Everything to send to this group's motors in this cycle."""
        with self._lock:
            self.sent_stamp = None
            self.codec.sent()
            frames = self.sequencer.cycle(now)
            return self._command_frames(now) if frames is None else frames

    def _active_command(self, now: float) -> Command:
        """The command to send: the latest, or a hold when there is none or it went stale."""
        cmd = self._command
        if cmd is not None and self._stale(cmd, now):
            if not self._timed_out:
                self._timed_out = True
                self._event(f"{self.name}: no command for {self.command_timeout:.2f} s, holding position")
            self._hold = self._hold_from(self._steady(cmd))
            self._command = None
            cmd = None
        if cmd is None:
            if self._hold is None:
                self._hold = self._hold_here(now)
            cmd = self._hold
        return cmd

    def _here(self, part: slice) -> np.ndarray:
        """The measured position of motors `part`, within their joint limits."""
        return np.clip(self.codec.position[part], self.limits.lower[part], self.limits.upper[part])

    def _hold_from(self, cmd: Command) -> Command:
        """Stay at the last commanded position, at rest, with the last gains and feed-forward."""
        nj = self.n_joints
        if self.mode == "pid":
            return Command(cmd.p, self.limits.velocity[:nj] * 0.2, cmd.kp, cmd.kd, cmd.t, cmd.stamp, cmd.robot_stamp)
        return at_rest(cmd, self._here(slice(0, nj)), np.asarray(self.spec.hold_kp, float),
                       np.asarray(self.spec.hold_kd, float))

    def _hold_here(self, now: float) -> Command:
        nj = self.n_joints
        p = self._here(slice(0, nj))
        if self.mode == "pid":
            ratio = np.minimum(1.0, self.limits.effort[:nj] / self.tmax[:nj])
            return Command(p, self.limits.velocity[:nj] * 0.2, np.zeros(nj), np.zeros(nj), ratio, now)
        t = np.zeros(nj) if self._adopted_torque is None else self._adopted_torque[:nj]
        return Command(p, np.zeros(nj), np.array(self.spec.hold_kp), np.array(self.spec.hold_kd), t, now)

    def _gripper_command(self, now: float) -> Command:
        i = self.n - 1
        g = self._gripper
        r2 = self.ratio[i] ** 2
        if g is not None and self._gripper_streamed and self.mode == "mit" and self._stale(g, now):
            # a streamed gripper command (7th arm entry, control_gripper_*) that stopped: hold at rest
            # (where it is when it had no stiffness), as the joints do; a stroke target stays
            self._gripper = at_rest(g, self._here(slice(i, None)), np.array([self.spec.params["hold_kp"] / r2]),
                                    np.array([self.spec.params["hold_kd"] / r2]))
            self._gripper_streamed = False
            self._event(f"{self.name}: no gripper command for {self.command_timeout:.2f} s, gripper holding")
        if self._gripper is None:
            p = np.array([float(self._here(slice(i, None))[0])])
            if self.mode == "pid":
                self._gripper = Command(p, self.limits.velocity[i:] * 0.5, np.zeros(1), np.zeros(1),
                                        np.ones(1) * min(1.0, self.limits.effort[i] * self.ratio[i] / self.tmax[i]),
                                        now)
            else:
                t = np.zeros(1) if self._adopted_torque is None else self._adopted_torque[i:]
                self._gripper = Command(p, np.zeros(1), np.array([self.spec.params["hold_kp"] / r2]),
                                        np.array([self.spec.params["hold_kd"] / r2]), t, now)
        return self._gripper

    def _command_frames(self, now: float) -> list[Frame]:
        cmd = self._active_command(now)
        if cmd is self._command:        # a live command, not a hold
            self.sent_stamp = cmd.stamp
            if self._stale(cmd, now, self.command_lapse):
                cmd = self._steady(cmd)
        if self.spec.gripper:
            g = self._gripper_command(now)
            cat = lambda a, b: np.concatenate([a, b])
            cmd = Command(cat(cmd.p, g.p), cat(cmd.v, g.v), cat(cmd.kp, g.kp), cat(cmd.kd, g.kd), cat(cmd.t, g.t),
                          cmd.stamp)
        if self.mode == "pid":
            return self.codec.encode_pid(cmd)
        robot_now = self._robot_now()
        sent = self.command_limits.bound_mit(cmd, self.codec.position, self.codec.velocity,
                                             now if robot_now is None else robot_now, self._adopted_torque)
        return self.codec.encode_mit(sent)

    # -- feedback --------------------------------------------------------------------------
    def on_frame(self, arbitration_id: int, data: bytes, now: float) -> bool:
        """A received frame; returns False when it is not one of this group's motors."""
        i = self.codec.index(arbitration_id)
        if i is None:
            return False
        with self._lock:
            if not self.sequencer.takes_reply(i, data, now):
                self.codec.decode(i, data, now)
        return True

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions, velocities and efforts in joint units (NaN position until a motor answered)."""
        with self._lock:
            return self.codec.snapshot()

    @property
    def ready(self) -> bool:
        return self.codec.ready

    def conditions(self, now: float) -> list[set[Condition]]:
        """What is wrong with each motor now (and position jumps since the last call)."""
        with self._lock:
            return self.codec.conditions(now)

    def take_events(self) -> list[str]:
        with self._lock:
            events, self.events = self.events, []
        return events


class ChassisGroup(MotorGroup):
    """Three steer motors (force-position) and three wheel motors (velocity mode).

    Commands and feedback speak the guide's units: steer angles [rad] and wheel
    linear speeds [m/s] (wheel rad/s times the wheel radius).
    """

    def __init__(self, spec: GroupSpec, limits: JointLimitArrays, command_timeout: float = 0.2,
                 reply_timeout: float = 0.05, enable_on_start: bool = True, command_lapse: float = 0.05):
        super().__init__(spec, limits, command_timeout, reply_timeout, enable_on_start, command_lapse)
        self.modules = len(self.motors) // 2
        self.radius = spec.params["wheel_radius"]
        # the steering's speed limit in its force-position frames, at most the URDF's
        wanted = float(spec.params.get("steer_speed_limit", 3.0))
        self.steer_speed = np.minimum(wanted, limits.velocity[:self.modules])
        if np.any(self.steer_speed < wanted):
            self._event(f"{self.name}: steer_speed_limit {wanted} rad/s is above the URDF's steering "
                        f"velocity limits; capped to {self.steer_speed.tolist()}")
        self.steer_ratio = spec.params.get("steer_torque_ratio", 0.8)
        self.wheel_acc = spec.params.get("wheel_acceleration_limit", 2.5)
        self._steer_target: np.ndarray | None = None
        self._wheel_target = np.zeros(self.modules)     # m/s as commanded
        self._wheel_sent = np.zeros(self.modules)       # m/s after the stop ramp
        self._last_cycle: float | None = None

    def motor_modes(self, mode: str) -> list[ControlMode]:
        return [ControlMode.FORCE_POS] * self.modules + [ControlMode.VEL] * self.modules

    def _adopt(self) -> None:
        """Adopted modules keep their steering and ramp their wheels down from the speed they turn at."""
        super()._adopt()
        m = self.modules
        self._steer_target = self._here(slice(0, m))
        self._wheel_sent = self.codec.velocity[m:] * self.radius
        self._wheel_target = np.zeros(m)

    def set_command(self, p: Sequence[float], v: Sequence[float], kp: Sequence[float], kd: Sequence[float],
                    t: Sequence[float], now: float) -> list[str]:
        """control_chassis: p_des = steer angles [fl, fr, rear], v_des = wheel linear speeds [m/s]."""
        m = self.modules
        steer, speed = np.asarray(p, dtype=float), np.asarray(v, dtype=float)
        if steer.size != m or speed.size != m:
            raise CommandError(f"chassis takes {m} steer angles in p_des and {m} wheel speeds in v_des, "
                               f"got {steer.size} and {speed.size}")
        check_finite("p_des", steer)
        check_finite("v_des", speed)
        out_s, out_v, notes = self.command_limits.clamp_chassis(steer, speed, m, self.radius)
        with self._lock:
            self._steer_target, self._wheel_target = out_s, out_v
            self._command = Command(out_s, out_v, np.zeros(m), np.zeros(m), np.zeros(m), now, self._robot_now())
            self._resumed()
        return notes

    def _command_frames(self, now: float) -> list[Frame]:
        m = self.modules
        robot_now = self._robot_now()
        clock = now if robot_now is None else robot_now     # the wheel ramp runs on the robot's time
        dt = 0.0 if self._last_cycle is None else min(max(clock - self._last_cycle, 0.0), 0.1)
        self._last_cycle = clock
        if self._steer_target is None:
            self._steer_target = self._here(slice(0, m))
        if self._command is not None and self._stale(self._command, now):
            if not self._timed_out:
                self._timed_out = True
                self._event(f"{self.name}: no command for {self.command_timeout:.2f} s, wheels ramp to zero")
            self._wheel_target = np.zeros(m)
        if self._command is not None and not self._timed_out:
            self.sent_stamp = self._command.stamp
        step = self.wheel_acc * dt
        self._wheel_sent = self._wheel_sent + np.clip(self._wheel_target - self._wheel_sent, -step, step)
        ratio = min(self.steer_ratio, 1.0)
        limits = [min(ratio, self.limits.effort[j] / self.motors[j].limits.tmax) for j in range(m)]
        return self.codec.encode_swerve(self._steer_target, self.steer_speed, limits, self._wheel_sent / self.radius)

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Steer angles, wheel linear speeds [m/s], and six zero efforts (the guide's layout)."""
        m = self.modules
        with self._lock:
            return self.codec.position[:m].copy(), self.codec.velocity[m:] * self.radius, np.zeros(2 * m)
