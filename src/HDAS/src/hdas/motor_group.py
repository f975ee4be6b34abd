"""A group of motors on one bus that HDAS drives together (an arm, the torso, the chassis).

ROS-free and I/O-free: the node hands it commands (`set_command`) and received
frames (`on_frame`) and asks it each cycle for the frames to send (`frames`).
It owns every safety rule of the driver, so they hold whoever publishes:

* commands are validated (length, finite) and clamped to the URDF's joint,
  velocity and torque limits before they are encoded; in MIT mode the torque
  the motor will produce at the last measured state is bounded too;
* every cycle sends something to every motor (the command, a hold, or a status
  request while disabled), so feedback keeps flowing and no motor watchdog fires;
* a command stream silent for `command_timeout` makes the group hold its last
  position with zero velocity (the chassis ramps its wheels to zero instead);
* function frames (enable, disable, calibrate, clear errors, MIT/PID mode) run
  as confirmed sequences: a mode change only while disabled, calibration only
  while disabled, and each answers whether every motor confirmed it.

Joint units are the URDF's (rad, m for gripper fingers, m/s for wheel speed);
motor units are the motor's rad, converted with each motor's `metres_per_rad`.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Callable, Sequence, Tuple

import numpy as np

from hdas.errors import STATUS_CONDITION, TABLES, Condition
from hdas.slew import SlewLimiter
from r1_can import damiao
from r1_can.config import GroupSpec
from r1_can.damiao import ControlMode, Status

Frame = Tuple[int, bytes]     # (typing's names: a module-level alias runs on Python 3.8)

MISSED_REPLIES = 3         # unanswered cycles (with reply_timeout elapsed) before RECEIVE_TIMEOUT
GROUP_SILENCE = 0.25      # [s] every motor of a group silent this long: RECEIVE_TIMEOUT (a bus down)
REQUEST_TIMEOUT = 1.0     # [s] a function frame not confirmed by then fails
REQUEST_MIN_CYCLES = 50   # ...and at least this many cycles run for it (a stalled machine is no refusal)
RESEND_PERIOD = 0.05      # [s] special frames are repeated until confirmed
POSITION_TOLERANCE = 0.02  # [rad] beyond a limit before POS_EXCEED is reported
VELOCITY_MARGIN = 1.2     # VEL_EXCEED above this multiple of the velocity limit
REGISTER_REPLY_WINDOW = 0.5   # [s] after a register write to a motor, its echo may still come (consumed, not feedback)
JUMP_THRESHOLD = 0.5      # [rad] between two replies is a position jump
TORQUE_RAMP_S = 0.05      # [s] a new command changes a motor's torque from zero to the effort limit at the fastest
TORQUE_BUCKET_S = 0.005   # [s] of that change that may be spent at once (a /clock step of the simulated robot)


class Function(IntEnum):
    """hdas_msg/FunctionFrame commands (1-6), and ADOPT, the driver's own first step at start."""

    ENABLE = 1
    DISABLE = 2
    CALIBRATE = 3
    CLEAR_ERRORS = 4
    MIT = 5
    PID = 6
    ADOPT = 100         # not a service command: take over motors a previous driver left running


SERVICE_FUNCTIONS = frozenset(f for f in Function if f != Function.ADOPT)


@dataclass
class Request:
    """A function frame in progress; `done` is set with `success` and `message`."""

    function: Function
    deadline: float = 0.0
    cycles: int = 0                     # cycles run for it: a stalled machine does not time it out
    last_sent: float = -math.inf
    done: threading.Event = field(default_factory=threading.Event)
    success: bool = False
    message: str = ""
    then: "Request | None" = None       # follow-up run after success (clear errors -> enable)
    root: "Request | None" = None       # the request the caller waits on, when this is a follow-up
    waiting_since: float | None = None  # ADOPT: when it began to wait for every motor's first answer

    def finish(self, success: bool, message: str) -> None:
        for r in (self, self.root) if self.root is not None else (self,):
            r.success, r.message = success, message
        self.done.set()


@dataclass(frozen=True)
class JointLimitArrays:
    """Per-motor limits in joint units, in the group's motor order."""

    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


@dataclass
class Command:
    """A validated, clamped command in joint units."""

    p: np.ndarray
    v: np.ndarray
    kp: np.ndarray
    kd: np.ndarray
    t: np.ndarray
    stamp: float                        # the driver's clock (monotonic)
    robot_stamp: float | None = None    # the robot's clock (ROS time) when the group has one


def _at_rest(cmd: Command, here: np.ndarray, hold_kp: np.ndarray, hold_kd: np.ndarray) -> Command:
    """MIT hold after `cmd` went stale: at rest, at its p_des with its gains and feed-forward; a
    motor it drove without stiffness (torque or velocity control, p_des meaning nothing) holds
    `here` (its measured position) with the hold gains instead of pulling to that p_des."""
    stiff = cmd.kp > 0
    return Command(np.where(stiff, cmd.p, here), np.zeros_like(cmd.v), np.where(stiff, cmd.kp, hold_kp),
                   np.where(cmd.kd > 0, cmd.kd, hold_kd), cmd.t, cmd.stamp, cmd.robot_stamp)


class CommandError(ValueError):
    """A command that cannot be used at all (wrong length, non-finite)."""


def _finite(name: str, values: np.ndarray) -> None:
    if not np.isfinite(values).all():
        raise CommandError(f"{name} has non-finite values {values.tolist()}")


_FIELD_NAMES = ("p_des", "v_des", "kp", "kd", "t_ff")
_MIT_FIELDS = frozenset(_FIELD_NAMES)
_PID_FIELDS = frozenset(("p_des", "v_des", "t_ff"))


class MotorGroup:
    """Arms and torso: joints (+ an optional gripper motor last) in MIT or PID (force-position) mode."""

    def __init__(self, spec: GroupSpec, limits: JointLimitArrays, command_timeout: float = 0.2,
                 reply_timeout: float = 0.05, enable_on_start: bool = True):
        self.spec = spec
        self.name = spec.name
        self.table = TABLES[spec.kind]
        self.limits = limits
        self.command_timeout = command_timeout
        self.reply_timeout = reply_timeout
        self.motors = spec.motors
        n = len(self.motors)
        self.n = n
        self.n_joints = n - (1 if spec.gripper else 0)
        self.ratio = np.array([m.metres_per_rad for m in self.motors])
        self.tmax = np.array([m.limits.tmax for m in self.motors])
        self._bounds_cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._by_mst = {m.mst_id: i for i, m in enumerate(self.motors)}
        self._lock = threading.Lock()
        # feedback, joint units
        self.position = np.full(n, np.nan)
        self.velocity = np.zeros(n)
        self.effort = np.zeros(n)
        self.t_mos = np.zeros(n)
        self.t_rotor = np.zeros(n)
        self.status = np.full(n, -1, dtype=int)
        self.stamp = np.full(n, -math.inf)
        self.unanswered = np.zeros(n, dtype=int)    # cycles sent since each motor last answered
        self._jumped = np.zeros(n, dtype=bool)
        self._mode_echo = np.zeros(n, dtype=bool)
        # until when each motor's register echoes are expected: an echo shares the feedback's id, and
        # decoded as feedback it reads as a position near -PMAX (a 0x55 echo: -12.4676 rad)
        self._register_until = np.full(n, -np.inf)
        # control state
        self.mode = "pid" if spec.boot_mode == "pid" else "mit"
        self._target_mode = self.mode
        self._wraps = ~np.isfinite(limits.lower)    # continuous joints (wheels): no jump detection
        self.want_enabled = False
        self._command: Command | None = None
        self._gripper: Command | None = None
        self._gripper_streamed = False   # the gripper's command came from a stream (motor_control): it goes stale
        self._hold: Command | None = None
        # MIT set-points move toward their targets at most at the URDF velocity limit: a step in a
        # command (a raw command, a stroke target) becomes a ramp; started from the measured position
        self._slew = SlewLimiter(limits.velocity)
        self._last_sent: Command | None = None     # the MIT command sent last cycle (after every bound)
        self._torque_clock: float | None = None
        self._torque_budget = np.zeros(n)
        self._timed_out = False
        self.sent_stamp: float | None = None     # arrival (driver clock) of the live command last sent
        self._requests: list[Request] = []
        # at start: motors all enabled in the boot mode (a driver before this one died, and they
        # run its last command) are adopted where they are; otherwise disable, mode, enable
        self._adopted_torque: np.ndarray | None = None    # what they pushed when adopted: the hold keeps it
        if enable_on_start:
            start = Request(Function.DISABLE)
            start.then = Request(Function.PID if self.mode == "pid" else Function.MIT, then=Request(Function.ENABLE))
            self._requests.append(Request(Function.ADOPT, then=start))
        self.events: list[str] = []   # human-readable happenings for the node to log
        # The robot's clock (ROS time; simulated time on the simulated robot), set by the node.
        # A command goes stale only when old in both clocks: on simulated time running slower
        # than real time a controller ticking on the robot's clock is not a silent one.
        self.robot_clock: Callable[[], float] | None = None

    def _robot_now(self) -> float | None:
        return self.robot_clock() if self.robot_clock is not None else None

    def _stale(self, cmd: Command, now: float) -> bool:
        """The command is older than command_timeout in the driver's clock and the robot's."""
        if now - cmd.stamp <= self.command_timeout:
            return False
        robot_now = self._robot_now()
        return robot_now is None or cmd.robot_stamp is None or robot_now - cmd.robot_stamp > self.command_timeout

    # -- motor modes ---------------------------------------------------------------------
    def motor_modes(self, mode: str) -> list[ControlMode]:
        return [ControlMode.FORCE_POS if mode == "pid" else ControlMode.MIT] * self.n

    # -- commands --------------------------------------------------------------------------
    def set_command(self, p: Sequence[float], v: Sequence[float], kp: Sequence[float], kd: Sequence[float],
                    t: Sequence[float], now: float) -> list[str]:
        """Take a motor_control command (6 joints, or 7 with the gripper); returns what was clamped.

        Raises CommandError for a command that cannot be used at all.
        """
        n, nj = self.n, self.n_joints
        fields = (("p_des", p), ("v_des", v), ("kp", kp), ("kd", kd), ("t_ff", t))
        accepted = (nj, n) if self.spec.gripper else (n,)
        count = len(p)
        if count not in accepted:
            raise CommandError(f"p_des has {count} entries; {self.name} takes "
                               f"{' or '.join(map(str, sorted(set(accepted))))}")
        # checked, clamped and stored under the lock: a mode change completing in the bus loop
        # meanwhile would leave a command clamped for the other mode's fields
        with self._lock:
            needed = _PID_FIELDS if self.mode == "pid" else _MIT_FIELDS
            for k, values in fields:
                if k in needed and len(values) != count:
                    raise CommandError(f"{k} has {len(values)} entries, p_des has {count}")
            # one 5×count array: one conversion, one finiteness check, one clamp for the whole command
            zeros = (0.0,) * count
            arr = np.array([values if k in needed else zeros for k, values in fields], dtype=float)
            if not np.isfinite(arr).all():
                for row, (k, _) in enumerate(fields):
                    _finite(k, arr[row])
            cmd, notes = self._clamp(arr, slice(0, count), now)
            joints = Command(cmd.p[:nj], cmd.v[:nj], cmd.kp[:nj], cmd.kd[:nj], cmd.t[:nj], now, self._robot_now())
            self._command = joints
            if count == n:
                self._gripper = Command(cmd.p[nj:], cmd.v[nj:], cmd.kp[nj:], cmd.kd[nj:], cmd.t[nj:], now,
                                        joints.robot_stamp)
                self._gripper_streamed = True
            if self._timed_out:
                self._timed_out = False
                self.events.append(f"{self.name}: command stream resumed")
        return notes

    def set_gripper_motor_command(self, p: float, v: float, kp: float, kd: float, t: float, now: float) -> list[str]:
        """control_gripper_*: one entry in the gripper motor's own units (rad, rad/s, N·m)."""
        if not self.spec.gripper:
            raise CommandError(f"{self.name} has no gripper")
        raw = np.array([p, v, kp, kd, t], dtype=float)
        _finite("gripper command", raw)
        r = self.ratio[-1]
        with self._lock:
            # motor -> joint units; in PID mode t is a torque-limit ratio, the same in both
            joint = (p * r, v * r, kp / (r * r), kd / (r * r), t if self.mode == "pid" else t / r)
            notes = self._set_gripper(*joint, now)
            self._gripper_streamed = True
            return notes

    def set_gripper_stroke(self, stroke_mm: float, now: float) -> list[str]:
        """position_control_gripper_*: the stroke (gap between the fingers) in mm, 0..100."""
        if not self.spec.gripper:
            raise CommandError(f"{self.name} has no gripper")
        if not math.isfinite(stroke_mm):
            raise CommandError(f"gripper stroke {stroke_mm} is not finite")
        travel = stroke_mm / 2000.0          # each finger moves half the stroke, m
        with self._lock:
            if self.mode == "pid":
                i = self.n - 1
                return self._set_gripper(travel, float(self.limits.velocity[i]), 0.0, 0.0, 1.0, now)
            r2 = self.ratio[-1] ** 2          # config gains are in motor units (N·m/rad), commands in joint units
            return self._set_gripper(travel, 0.0, self.spec.params["position_kp"] / r2,
                                     self.spec.params["position_kd"] / r2, 0.0, now)

    def _set_gripper(self, p: float, v: float, kp: float, kd: float, t: float, now: float) -> list[str]:
        """Clamp and store a gripper command (joint units). Under self._lock."""
        i = slice(self.n - 1, self.n)
        cmd, notes = self._clamp(np.array([[p], [v], [kp], [kd], [t]], dtype=float), i, now)
        self._gripper = replace(cmd, robot_stamp=self._robot_now())
        self._gripper_streamed = False      # a stroke is a target, kept until replaced
        return notes

    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per field (p, v, kp, kd, t) and motor, the lowest and highest value a command may carry
        in the current mode: the URDF limits and what the motor's frame can carry (5 × n each)."""
        cached = self._bounds_cache.get(self.mode)
        if cached is not None:
            return cached
        lim, r, zero = self.limits, self.ratio, np.zeros(self.n)
        if self.mode == "pid":     # v is a speed limit, t a torque-limit ratio; no gains
            lo = np.array([lim.lower, zero, zero, zero, zero])
            hi = np.array([lim.upper, lim.velocity, zero, zero, np.minimum(1.0, lim.effort * r / self.tmax)])
        else:
            lo = np.array([lim.lower, -lim.velocity, zero, zero, -lim.effort])
            hi = np.array([lim.upper, lim.velocity, damiao.KP_MAX / (r * r), damiao.KD_MAX / (r * r), lim.effort])
        self._bounds_cache[self.mode] = (lo, hi)
        return lo, hi

    def _clamp(self, arr: np.ndarray, idx: slice, now: float) -> tuple[Command, list[str]]:
        """Clamp a 5 × k command (p, v, kp, kd, t of motors `idx`) to `_bounds`; report what changed."""
        lo, hi = self._bounds()
        out = np.minimum(np.maximum(arr, lo[:, idx]), hi[:, idx])
        notes: list[str] = []
        changed = out != arr
        if changed.any():
            for row, name in enumerate(_FIELD_NAMES):
                c = changed[row]
                if c.any() and not (name in ("kp", "kd") and self.mode == "pid"):
                    notes.append(f"{name} clamped {arr[row][c].round(4).tolist()} -> {out[row][c].round(4).tolist()}")
        return Command(out[0], out[1], out[2], out[3], out[4], now), notes

    # -- function frames -------------------------------------------------------------------
    def request(self, function: Function, now: float) -> Request:
        """Queue a function frame; wait on `request.done`. Refusals finish at once."""
        req = Request(Function(function))
        with self._lock:
            refusal = self._refusal(req.function)
            if refusal:
                req.finish(False, refusal)
                return req
            if req.function == Function.CLEAR_ERRORS and self.want_enabled:
                req.then = Request(Function.ENABLE)
            self._requests.append(req)
        return req

    def cancel(self, req: Request, why: str) -> bool:
        """Withdraw a request (and its follow-ups) that has not started; True when it was withdrawn.

        A request starts only once every motor of the group has answered: one queued while a
        motor is silent would otherwise run whenever it answers, long after its caller gave up."""
        with self._lock:
            mine = [r for r in self._requests if r is req or r.root is req]
            if not mine or mine[0].deadline != 0.0:
                return False                     # done, or running (it finishes within its timeout)
            self._requests = [r for r in self._requests if r not in mine]
            req.finish(False, why)
            return True

    def _refusal(self, function: Function) -> str:
        if function in (Function.MIT, Function.PID, Function.CALIBRATE):
            enabled = [self.motors[i].joint for i in range(self.n) if self.status[i] == Status.ENABLED]
            if self.want_enabled or enabled:
                what = "a mode change" if function != Function.CALIBRATE else "calibration"
                return (f"{self.name}: {what} needs the motors disabled first (command 2, then "
                        f"{int(function)}, then 1); enabled: {', '.join(enabled) or 'group'}")
        return ""

    def _run_request(self, req: Request, now: float) -> list[Frame]:
        """Frames for the request in progress, and its completion when every motor confirmed."""
        if req.deadline == 0.0:
            # checked again when it starts: an enable queued before it may have run meanwhile
            refusal = self._refusal(req.function)
            if refusal:
                self._complete(req, False, refusal)
                return []
            if req.function == Function.ADOPT and not np.all(self.status == Status.ENABLED):
                self._decline(req, "not every motor is enabled and free of faults")
                return []
            req.deadline = now + REQUEST_TIMEOUT
            self._start(req)
        req.cycles += 1
        missing = self._unconfirmed(req)
        if not missing:
            self._complete(req, True, f"{self.name}: {req.function.name.lower()} done")
            return []
        if now > req.deadline and req.cycles >= REQUEST_MIN_CYCLES:
            joints = ", ".join(f"{self.motors[i].joint} (status {self._status_name(i)})" for i in missing)
            if req.function == Function.ADOPT:
                self._decline(req, f"the control mode of {joints} is not {self._target_mode}")
            else:
                self._complete(req, False, f"{self.name}: {req.function.name.lower()} not confirmed by {joints}")
            return []
        if now - req.last_sent < RESEND_PERIOD:
            return [(damiao.REGISTER_ID, damiao.encode_status_request(m.esc_id)) for m in self.motors]
        req.last_sent = now
        if req.function in (Function.MIT, Function.PID, Function.ADOPT):   # register writes/reads: echoes follow
            self._register_until[:] = now + REGISTER_REPLY_WINDOW
        return [self._request_frame(req.function, i) for i in range(self.n)]

    def _start(self, req: Request) -> None:
        f = req.function
        if f == Function.ENABLE:
            self.want_enabled = True
            # hold where the arm is when it comes alive: a command from before (the arm may have been
            # moved by hand while off, or re-zeroed) would swing it back at full effort
            self._forget_commands()
        elif f == Function.DISABLE:
            self.want_enabled = False
        elif f in (Function.MIT, Function.PID):
            self._mode_echo[:] = False
            self._target_mode = "pid" if f == Function.PID else "mit"
        elif f == Function.ADOPT:
            self._mode_echo[:] = False
            self._target_mode = self.mode

    def _forget_commands(self) -> None:
        """Drop the commands and the hold: the group holds where it is until a new command comes."""
        self._command = self._gripper = self._hold = None
        self._adopted_torque = None
        self._gripper_streamed = False
        self._slew.reset()
        self._last_sent = self._torque_clock = None

    def _request_frame(self, function: Function, i: int) -> Frame:
        esc = self.motors[i].esc_id
        if function == Function.ENABLE:
            return esc, damiao.ENABLE
        if function == Function.DISABLE:
            return esc, damiao.DISABLE
        if function == Function.CALIBRATE:
            return esc, damiao.SET_ZERO
        if function == Function.CLEAR_ERRORS:
            return esc, damiao.CLEAR_ERROR
        if function == Function.ADOPT:
            return damiao.REGISTER_ID, damiao.encode_register_read(esc, damiao.Register.CTRL_MODE)
        mode = self.motor_modes(self._target_mode)[i]
        return damiao.REGISTER_ID, damiao.encode_register_write(esc, damiao.Register.CTRL_MODE, int(mode))

    def _unconfirmed(self, req: Request) -> list[int]:
        f, s = req.function, self.status
        if f == Function.ENABLE:
            ok = s == Status.ENABLED
        elif f == Function.DISABLE:
            ok = s == Status.DISABLED
        elif f == Function.CALIBRATE:
            ok = np.abs(self.position / self.ratio) < 1e-2
        elif f == Function.CLEAR_ERRORS:
            ok = (s == Status.ENABLED) | (s == Status.DISABLED)
        else:
            ok = self._mode_echo
        return [int(i) for i in np.flatnonzero(~ok)]

    def _decline(self, req: Request, why: str) -> None:
        """ADOPT gives way to its follow-up (disable, mode, enable): the motors are started afresh."""
        self._requests.pop(0)
        self.events.append(f"{self.name}: not adopting the motors as they are ({why}): starting them")
        follow = req.then
        if follow is not None:
            follow.done = req.done
            follow.root = req.root or req
            self._requests.insert(0, follow)
        else:
            req.finish(False, why)

    def _adopt(self) -> None:
        """Take over motors that run a previous driver's last command: hold them where they are with
        the torque they apply now (their gravity load, a grip), so nothing sags or lets go."""
        self.mode = self._target_mode
        self.want_enabled = True
        self._forget_commands()
        self._adopted_torque = np.clip(self.effort, -self.limits.effort, self.limits.effort)

    def _complete(self, req: Request, success: bool, message: str) -> None:
        if success and req.function == Function.ADOPT:
            self._adopt()
            req.then = None
            message = (f"{self.name}: adopted its motors, enabled in {self.mode} mode (a driver before this one "
                       f"left them running): holding where they are with the torque they apply")
        self._requests.pop(0)
        if success and req.function in (Function.MIT, Function.PID, Function.CALIBRATE):
            if req.function != Function.CALIBRATE:
                self.mode = self._target_mode
            self._forget_commands()          # they meant another mode, or the old zero
        if success and req.then is not None:
            follow = req.then
            follow.done = req.done          # the caller waits for the whole chain
            follow.root = req.root or req
            self._requests.insert(0, follow)
            self.events.append(message)
            return
        if not success and req.function == Function.ENABLE:
            self.want_enabled = False
        self.events.append(message)
        req.finish(success, message)

    def _status_name(self, i: int) -> str:
        s = int(self.status[i])
        if s < 0:
            return "no reply"
        try:
            return Status(s).name
        except ValueError:
            return hex(s)

    # -- the cycle -------------------------------------------------------------------------
    def frames(self, now: float) -> list[Frame]:
        """Everything to send to this group's motors in this cycle."""
        with self._lock:
            self.sent_stamp = None
            self.unanswered += 1
            if self._requests and self._requests[0].function == Function.ADOPT and np.isnan(self.position).any():
                req = self._requests[0]
                req.waiting_since = now if req.waiting_since is None else req.waiting_since
                req.cycles += 1
                if now - req.waiting_since > self.reply_timeout and req.cycles >= MISSED_REPLIES:
                    self._decline(req, "a motor has not answered")
            if self._requests and not np.isnan(self.position).any():
                frames = self._run_request(self._requests[0], now)
                if frames:
                    return frames
            if self.want_enabled and not np.isnan(self.position).any() and not self._requests:
                return self._command_frames(now)
            if self._requests and self._requests[0].function == Function.DISABLE:
                # a motor has not answered yet (the start-up chain waits for it): the others are
                # disabled meanwhile, a driver before this one may have left them running its last
                # command; a motor answers a disable frame with its feedback, as a status request
                return [(m.esc_id, damiao.DISABLE) for m in self.motors]
            return [(damiao.REGISTER_ID, damiao.encode_status_request(m.esc_id)) for m in self.motors]

    def _active_command(self, now: float) -> Command:
        """The command to send: the latest, or a hold when there is none or it went stale."""
        cmd = self._command
        if cmd is not None and self._stale(cmd, now):
            if not self._timed_out:
                self._timed_out = True
                self.events.append(f"{self.name}: no command for {self.command_timeout:.2f} s, holding position")
            self._hold = self._hold_from(cmd)
            self._command = None
            cmd = None
        if cmd is None:
            if self._hold is None:
                self._hold = self._hold_here(now)
            cmd = self._hold
        return cmd

    def _hold_from(self, cmd: Command) -> Command:
        """Stay at the last commanded position, at rest, with the last gains and feed-forward."""
        if self.mode == "pid":
            return Command(cmd.p, self.limits.velocity[:self.n_joints] * 0.2, cmd.kp, cmd.kd, cmd.t, cmd.stamp,
                           cmd.robot_stamp)
        nj = self.n_joints
        here = np.clip(self.position[:nj], self.limits.lower[:nj], self.limits.upper[:nj])
        return _at_rest(cmd, here, np.asarray(self.spec.hold_kp, float), np.asarray(self.spec.hold_kd, float))

    def _hold_here(self, now: float) -> Command:
        nj = self.n_joints
        p = np.clip(self.position[:nj], self.limits.lower[:nj], self.limits.upper[:nj])
        if self.mode == "pid":
            ratio = np.minimum(1.0, self.limits.effort[:nj] / self.tmax[:nj])
            return Command(p, self.limits.velocity[:nj] * 0.2, np.zeros(nj), np.zeros(nj), ratio, now)
        t = np.zeros(nj) if self._adopted_torque is None else self._adopted_torque[:nj]
        return Command(p, np.zeros(nj), np.array(self.spec.hold_kp), np.array(self.spec.hold_kd), t, now)

    def _gripper_command(self, now: float) -> Command:
        i = self.n - 1
        g = self._gripper
        if g is not None and self._gripper_streamed and self.mode == "mit" and self._stale(g, now):
            # a streamed gripper command (7th arm entry, control_gripper_*) that stopped: hold at rest
            # (where it is when it had no stiffness), as the joints do; a stroke target stays
            here = np.clip(self.position[i:], self.limits.lower[i:], self.limits.upper[i:])
            r2 = self.ratio[i] ** 2
            self._gripper = _at_rest(g, here, np.array([self.spec.params["hold_kp"] / r2]),
                                     np.array([self.spec.params["hold_kd"] / r2]))
            self._gripper_streamed = False
            self.events.append(f"{self.name}: no gripper command for {self.command_timeout:.2f} s, gripper holding")
        if self._gripper is None:
            p = float(np.clip(self.position[i], self.limits.lower[i], self.limits.upper[i]))
            if self.mode == "pid":
                self._gripper = Command(np.array([p]), self.limits.velocity[i:] * 0.5, np.zeros(1), np.zeros(1),
                                        np.ones(1) * min(1.0, self.limits.effort[i] * self.ratio[i] / self.tmax[i]),
                                        now)
            else:
                g, r2 = self.spec.params, self.ratio[i] ** 2
                t = np.zeros(1) if self._adopted_torque is None else self._adopted_torque[i:]
                self._gripper = Command(np.array([p]), np.zeros(1), np.array([g["hold_kp"] / r2]),
                                        np.array([g["hold_kd"] / r2]), t, now)
        return self._gripper

    def _command_frames(self, now: float) -> list[Frame]:
        cmd = self._active_command(now)
        if cmd is self._command:        # a live command, not a hold
            self.sent_stamp = cmd.stamp
        if self.spec.gripper:
            g = self._gripper_command(now)
            cmd = Command(*(np.concatenate([a, b]) for a, b in ((cmd.p, g.p), (cmd.v, g.v), (cmd.kp, g.kp),
                                                                  (cmd.kd, g.kd), (cmd.t, g.t))), cmd.stamp)
        r = self.ratio
        if self.mode == "pid":
            return [(damiao.command_id(m.esc_id, ControlMode.FORCE_POS),
                     damiao.encode_force_pos(p / ri, v / ri, t))
                    for m, p, v, t, ri in zip(self.motors, cmd.p, cmd.v, cmd.t, r)]
        robot_now = self._robot_now()
        p, v = self._ramped(cmd, now)
        cmd = self._torque_rate_bounded(replace(cmd, p=p, v=v), now if robot_now is None else robot_now)
        self._slew.position = cmd.p          # a set-point held back by the rate bound ramps on from there
        p, v, t = self._torque_bounded(cmd)
        self._last_sent = replace(cmd, p=p, v=v, t=t)
        r2 = r * r
        encode = damiao.encode_mit
        return [(m.esc_id, encode(pi, vi, kpi, kdi, ti, m.limits)) for m, pi, vi, kpi, kdi, ti in
                zip(self.motors, (p / r).tolist(), (v / r).tolist(), (cmd.kp * r2).tolist(), (cmd.kd * r2).tolist(),
                    (t * r).tolist())]

    def _ramped(self, cmd: Command, now: float) -> tuple[np.ndarray, np.ndarray]:
        """cmd's p and v as they may go out this cycle (MIT): each set-point moves toward its target at
        most at the joint's velocity limit, on the robot's clock (the ramp must hold in the time the
        joints move in: simulated time on the simulated robot). So a step in a command (a raw
        command, a stroke target) becomes a ramp. While a set-point is held back its v_des is the
        ramp's velocity: the motor's damping then follows the ramp instead of resisting it, and a
        stiff joint does not build up a lag that it overshoots the limit to make up (measured: 5 rad/s
        on a shoulder whose set-point ramped at 3 with v_des 0). A motor without stiffness (kp = 0)
        has its set-point follow its measured position, so that a stiff command after it ramps from
        where the joint is."""
        here = np.clip(self.position, self.limits.lower, self.limits.upper)
        robot_now = self._robot_now()
        if self._slew.position is None:
            self._slew.reset(here)
        self._slew.follow(cmd.kp <= 0, here)
        p = self._slew.step(cmd.p, now if robot_now is None else robot_now)
        # (a command whose own v_des already goes the ramp's way keeps it: a planner's speed, below the limit)
        direction = np.sign(cmd.p - p)
        ramping = (p != cmd.p) & (cmd.kp > 0) & (cmd.v * direction <= 0)
        v = np.where(ramping, direction * self.limits.velocity, cmd.v) if ramping.any() else cmd.v
        return p, v

    def _torque_rate_bounded(self, cmd: Command, clock: float) -> Command:
        """`cmd` moved from last cycle's command only so far that the torque it asks for at the measured
        state changes by at most effort / TORQUE_RAMP_S a second of the robot's clock (a token bucket
        holding TORQUE_BUCKET_S of it, as `hdas.slew`: simulated time advances in /clock steps). So no
        single frame kicks a joint, whatever changes at once (a feed-forward step, stiffness raised to
        500, v_des at the limit): a light wrist given its 7 N·m effort for one 10 ms cycle gains 10
        rad/s. The blend moves every field (p, v, kp, kd, t) by the same share toward the new command.
        A joint pushed by the world meets the same command, so its stiffness is untouched: only the
        change of command is bounded."""
        prev = self._last_sent
        rate = self.limits.effort / TORQUE_RAMP_S
        if prev is None or self._torque_clock is None:    # enabled, or a new mode: from what the motors do now
            t0 = np.zeros(self.n) if self._adopted_torque is None else self._adopted_torque
            prev = Command(cmd.p, cmd.v, np.zeros(self.n), np.zeros(self.n), t0, cmd.stamp)
            self._torque_budget = np.zeros(self.n)
            self._torque_clock = clock
        dt = min(max(clock - self._torque_clock, 0.0), 1.0)
        self._torque_clock = clock
        budget = np.minimum(self._torque_budget + rate * dt, rate * TORQUE_BUCKET_S)
        q, w = self.position, self.velocity
        law = lambda c: c.kp * (c.p - q) + c.kd * (c.v - w) + c.t
        change = np.abs(law(cmd) - law(prev))
        share = np.where(change > budget, budget / np.maximum(change, 1e-12), 1.0)
        self._torque_budget = budget - share * change
        if np.all(share == 1.0):
            return cmd
        mix = lambda a, b: a + share * (b - a)
        return replace(cmd, p=mix(prev.p, cmd.p), v=mix(prev.v, cmd.v), kp=mix(prev.kp, cmd.kp),
                       kd=mix(prev.kd, cmd.kd), t=mix(prev.t, cmd.t))

    def _torque_bounded(self, cmd: Command) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Move p_des (then v_des, then t_ff) so kp·Δp + kd·Δv + t_ff at the last measured state
        stays within the effort limit; p_des stays within the joint limits."""
        eff = self.limits.effort
        dv = cmd.v - self.velocity
        tau = cmd.kp * (cmd.p - self.position) + cmd.kd * dv + cmd.t
        over = np.abs(tau) > eff
        if not over.any():
            return cmd.p, cmd.v, cmd.t
        target = np.sign(tau) * eff
        p, v, t = cmd.p.copy(), cmd.v.copy(), cmd.t.copy()
        with np.errstate(divide="ignore", invalid="ignore"):
            fix_p = over & (cmd.kp > 0)
            p[fix_p] = (self.position + (target - cmd.kd * dv - cmd.t) / cmd.kp)[fix_p]
            p = np.clip(p, self.limits.lower, self.limits.upper)
            # the clip can undo the bound (a joint at its limit moving toward it): the velocity
            # term takes up what is left, or the feed-forward where there is no damping
            spring = cmd.kp * (p - self.position)
            tau = spring + cmd.kd * dv + t
            over = np.abs(tau) > eff * (1 + 1e-9)
            target = np.sign(tau) * eff
            fix_v = over & (cmd.kd > 0)
            # v_des stays within the velocity limit too: a v_des beyond it, to make the damping term
            # take up a bound, would drive the joint to it (a wrist at its stop reached 22 rad/s)
            vel = self.limits.velocity
            v[fix_v] = np.clip(self.velocity + (target - spring - t) / cmd.kd, -vel, vel)[fix_v]
            tau = spring + cmd.kd * (v - self.velocity) + t
            fix_t = np.abs(tau) > eff * (1 + 1e-9)
            t[fix_t] = (np.sign(tau) * eff - spring - cmd.kd * (v - self.velocity))[fix_t]
        return p, v, t

    # -- feedback --------------------------------------------------------------------------
    def on_frame(self, arbitration_id: int, data: bytes, now: float) -> bool:
        """A received frame; returns False when it is not one of this group's motors."""
        i = self._by_mst.get(arbitration_id)
        if i is None:
            return False
        with self._lock:
            if now <= self._register_until[i]:
                reply = damiao.decode_register_reply(data)
                if reply is not None and reply.esc_id == self.motors[i].esc_id:
                    # a register echo, also one that comes after its request completed: never feedback
                    if (reply.rid == damiao.Register.CTRL_MODE and self._requests
                            and self._requests[0].function in (Function.MIT, Function.PID, Function.ADOPT)):
                        want = self.motor_modes(self._target_mode)[i]
                        self._mode_echo[i] = int(reply.value) == int(want)
                    return True
            fb = damiao.decode_feedback(data, self.motors[i].limits)
            r = self.ratio[i]
            p = fb.position * r
            old = self.position[i]
            if (not self._wraps[i] and not math.isnan(old) and abs(p - old) > JUMP_THRESHOLD * r
                    and now - self.stamp[i] < 0.1):
                self._jumped[i] = True
            self.position[i] = p
            self.velocity[i] = fb.velocity * r
            self.effort[i] = fb.torque / r
            self.t_mos[i], self.t_rotor[i] = fb.t_mos, fb.t_rotor
            self.status[i] = int(fb.status)
            self.stamp[i] = now
            self.unanswered[i] = 0
        return True

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions, velocities and efforts in joint units (NaN position until a motor answered)."""
        with self._lock:
            return self.position.copy(), self.velocity.copy(), self.effort.copy()

    @property
    def ready(self) -> bool:
        return not np.isnan(self.position).any()

    def conditions(self, now: float) -> list[set[Condition]]:
        """What is wrong with each motor now (and position jumps since the last call)."""
        with self._lock:
            out = []
            lim = self.limits
            # The newest reply of the group: a motor is silent when the others answered since, later than
            # reply_timeout after its own last reply. A stall of this process (a busy machine: its replies
            # wait in the socket) delays every motor's alike and is no silent motor; the whole group
            # silent (a bus down) is reported once it lasts GROUP_SILENCE.
            answered = self.stamp[np.isfinite(self.stamp)]
            newest = float(answered.max()) if answered.size else -math.inf
            group_silent = now - newest > max(GROUP_SILENCE, self.reply_timeout)
            for i in range(self.n):
                c: set[Condition] = set()
                if self.stamp[i] == -math.inf:
                    c.add(Condition.DISCONNECTED)
                elif self.unanswered[i] >= MISSED_REPLIES and (
                        newest - self.stamp[i] > self.reply_timeout or group_silent):
                    c.add(Condition.RECEIVE_TIMEOUT)
                else:
                    try:
                        cond = STATUS_CONDITION.get(Status(int(self.status[i])))
                    except ValueError:
                        cond = None
                    if cond is not None:
                        c.add(cond)
                    p = self.position[i]
                    tol = POSITION_TOLERANCE * self.ratio[i]
                    if p < lim.lower[i] - tol or p > lim.upper[i] + tol:
                        c.add(Condition.POSITION_EXCEEDED)
                    if abs(self.velocity[i]) > VELOCITY_MARGIN * lim.velocity[i]:
                        c.add(Condition.VELOCITY_EXCEEDED)
                    if abs(self.effort[i]) > lim.effort[i] * 1.05:
                        c.add(Condition.TORQUE_EXCEEDED)
                if self._jumped[i]:
                    c.add(Condition.POSITION_JUMP)
                    self._jumped[i] = False
                out.append(c)
            return out

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
                 reply_timeout: float = 0.05, enable_on_start: bool = True):
        super().__init__(spec, limits, command_timeout, reply_timeout, enable_on_start)
        self.modules = len(self.motors) // 2
        self.radius = spec.params["wheel_radius"]
        # the steering's speed limit in its force-position frames, at most the URDF's
        wanted = float(spec.params.get("steer_speed_limit", 3.0))
        self.steer_speed = np.minimum(wanted, limits.velocity[:self.modules])
        if np.any(self.steer_speed < wanted):
            self.events.append(f"{self.name}: steer_speed_limit {wanted} rad/s is above the URDF's steering "
                               f"velocity limits; capped to {self.steer_speed.tolist()}")
        self.steer_ratio = spec.params.get("steer_torque_ratio", 0.8)
        self.wheel_acc = spec.params.get("wheel_acceleration_limit", 2.5)
        self._steer_target: np.ndarray | None = None
        self._wheel_target = np.zeros(self.modules)     # m/s as commanded
        self._wheel_sent = np.zeros(self.modules)       # m/s after the stop ramp
        self._last_cycle: float | None = None
        if enable_on_start:
            start = Request(Function.DISABLE)
            start.then = Request(Function.MIT, then=Request(Function.ENABLE))
            self._requests = [Request(Function.ADOPT, then=start)]

    def motor_modes(self, mode: str) -> list[ControlMode]:
        return [ControlMode.FORCE_POS] * self.modules + [ControlMode.VEL] * self.modules

    def _adopt(self) -> None:
        """Adopted modules keep their steering and ramp their wheels down from the speed they turn at."""
        super()._adopt()
        m = self.modules
        self._steer_target = np.clip(self.position[:m], self.limits.lower[:m], self.limits.upper[:m])
        self._wheel_sent = self.velocity[m:] * self.radius
        self._wheel_target = np.zeros(m)

    def set_command(self, p: Sequence[float], v: Sequence[float], kp: Sequence[float], kd: Sequence[float],
                    t: Sequence[float], now: float) -> list[str]:
        """control_chassis: p_des = steer angles [fl, fr, rear], v_des = wheel linear speeds [m/s]."""
        m = self.modules
        steer, speed = np.asarray(p, dtype=float), np.asarray(v, dtype=float)
        if steer.size != m or speed.size != m:
            raise CommandError(f"chassis takes {m} steer angles in p_des and {m} wheel speeds in v_des, "
                               f"got {steer.size} and {speed.size}")
        _finite("p_des", steer)
        _finite("v_des", speed)
        lo, hi = self.limits.lower[:m], self.limits.upper[:m]
        vmax = self.limits.velocity[m:] * self.radius
        out_s, out_v = np.clip(steer, lo, hi), np.clip(speed, -vmax, vmax)
        notes = [f"{name} clamped {a[a != b].round(4).tolist()} -> {b[a != b].round(4).tolist()}"
                 for name, a, b in (("steer", steer, out_s), ("wheel speed", speed, out_v)) if (a != b).any()]
        with self._lock:
            self._steer_target, self._wheel_target = out_s, out_v
            self._command = Command(out_s, out_v, np.zeros(m), np.zeros(m), np.zeros(m), now, self._robot_now())
            if self._timed_out:
                self._timed_out = False
                self.events.append(f"{self.name}: command stream resumed")
        return notes

    def _command_frames(self, now: float) -> list[Frame]:
        m = self.modules
        robot_now = self._robot_now()
        clock = now if robot_now is None else robot_now     # the wheel ramp runs on the robot's time
        dt = 0.0 if self._last_cycle is None else min(max(clock - self._last_cycle, 0.0), 0.1)
        self._last_cycle = clock
        if self._steer_target is None:
            self._steer_target = np.clip(self.position[:m], self.limits.lower[:m], self.limits.upper[:m])
        if self._command is not None and self._stale(self._command, now):
            if not self._timed_out:
                self._timed_out = True
                self.events.append(f"{self.name}: no command for {self.command_timeout:.2f} s, wheels ramp to zero")
            self._wheel_target = np.zeros(m)
        if self._command is not None and not self._timed_out:
            self.sent_stamp = self._command.stamp
        step = self.wheel_acc * dt
        self._wheel_sent = self._wheel_sent + np.clip(self._wheel_target - self._wheel_sent, -step, step)
        ratio = min(self.steer_ratio, 1.0)
        frames = []
        for j in range(m):
            steer, wheel = self.motors[j], self.motors[m + j]
            limit = min(ratio, self.limits.effort[j] / steer.limits.tmax)
            frames.append((damiao.command_id(steer.esc_id, ControlMode.FORCE_POS),
                           damiao.encode_force_pos(float(self._steer_target[j]), float(self.steer_speed[j]), limit)))
            frames.append((damiao.command_id(wheel.esc_id, ControlMode.VEL),
                           damiao.encode_vel(float(self._wheel_sent[j]) / self.radius)))
        return frames

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Steer angles, wheel linear speeds [m/s], and six zero efforts (the guide's layout)."""
        m = self.modules
        with self._lock:
            return self.position[:m].copy(), self.velocity[m:] * self.radius, np.zeros(2 * m)
