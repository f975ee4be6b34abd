"""The function-frame sequencer of a motor group: a state machine (ROS-free, I/O-free).

The function-frame services (`hdas_msg/FunctionFrame`: 1 enable, 2 disable, 3 calibrate, 4 clear
errors, 5 MIT, 6 PID) and the driver's own start (`Function.ADOPT`: take over motors a previous
driver left running, else disable, mode, enable) run as confirmed sequences: each sends its frames
to every motor of the group, again every RESEND_PERIOD, until every motor confirms it (its status,
its position, the echo of a register write), or fails after REQUEST_TIMEOUT and REQUEST_MIN_CYCLES.

`FunctionSequencer.state` is one of `SequencerState`: idle (DISABLED, ENABLED), WAITING (a request
queued that starts once every motor has answered), or one running function (ADOPTING, ENABLING,
...). Each transition is one method: `request` (queue one; refused with a reason when the group's
state does not allow it), `cancel` (withdraw one that has not started), and, driven by `cycle`
once a bus cycle, `_start`, `_succeed`, `_fail` and `_decline` (ADOPT gives way to its follow-up).
`TRANSITIONS` lists the moves the machine may make; any other is a bug and raises.

The sequencer is not thread-safe: its group calls it under the group's lock.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import Callable, Sequence

import numpy as np

from hdas.group_codec import MISSED_REPLIES, Frame, GroupCodec
from r1_can import damiao
from r1_can.config import MotorSpec
from r1_can.damiao import ControlMode, Status

REQUEST_TIMEOUT = 1.0     # [s] a function frame not confirmed by then fails
REQUEST_MIN_CYCLES = 50   # ...and at least this many cycles run for it (a stalled machine is no refusal)
RESEND_PERIOD = 0.05      # [s] special frames are repeated until confirmed
REGISTER_REPLY_WINDOW = 0.5   # [s] after a register write to a motor, its echo may still come (consumed, not feedback)


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
MODE_FUNCTIONS = frozenset((Function.MIT, Function.PID))
NEEDS_DISABLED = frozenset((Function.MIT, Function.PID, Function.CALIBRATE))
REGISTER_FUNCTIONS = frozenset((Function.MIT, Function.PID, Function.ADOPT))   # register writes/reads: echoes


class SequencerState(Enum):
    """Where a group's function frames are."""

    DISABLED = "disabled"                # idle, motors off: status requests every cycle
    ENABLED = "enabled"                  # idle, motors on: the group's commands every cycle
    WAITING = "waiting"                  # a request queued; it starts once every motor has answered
    ADOPTING = "adopting"                # reading the motors' mode to take them over as they run
    ENABLING = "enabling"
    DISABLING = "disabling"
    CALIBRATING = "calibrating"
    CLEARING_ERRORS = "clearing errors"
    SETTING_MODE = "setting the mode"


RUNNING = {Function.ADOPT: SequencerState.ADOPTING, Function.ENABLE: SequencerState.ENABLING,
           Function.DISABLE: SequencerState.DISABLING, Function.CALIBRATE: SequencerState.CALIBRATING,
           Function.CLEAR_ERRORS: SequencerState.CLEARING_ERRORS, Function.MIT: SequencerState.SETTING_MODE,
           Function.PID: SequencerState.SETTING_MODE}
_IDLE = frozenset((SequencerState.DISABLED, SequencerState.ENABLED))
_RUNNING = frozenset(RUNNING.values())
# state -> the states it may move to (staying is no move)
TRANSITIONS: dict[SequencerState, frozenset[SequencerState]] = {
    SequencerState.DISABLED: frozenset({SequencerState.WAITING}),                       # request
    SequencerState.ENABLED: frozenset({SequencerState.WAITING}),                        # request
    SequencerState.WAITING: _IDLE | _RUNNING,       # start; cancel, refused or declined before starting
    **{s: _IDLE | {SequencerState.WAITING} for s in _RUNNING},   # succeed, fail, decline (then a follow-up)
}


@dataclass
class Request:
    """A function frame in progress; `done` is set with `success` and `message`."""

    function: Function
    deadline: float = 0.0               # 0 until it starts
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


class FunctionSequencer:
    """The function frames of one group `name` of `motors`, whose feedback `codec` decodes.

    It owns the group's control mode (`mode`, "mit" or "pid"; `boot_mode` at start) and whether the
    group is meant to be enabled (`want_enabled`). `motor_modes(mode)` gives each motor's control
    mode for a group mode (the chassis: force-position steering, velocity wheels). With `start`
    the group begins with ADOPT, followed (when it declines) by disable, the boot mode and enable.
    The group is told through `forget` (drop its commands: a new zero, a new mode, enabled afresh),
    `adopt` (motors taken over as they run: hold them with what they push) and `emit` (a line
    for the log)."""

    def __init__(self, name: str, motors: Sequence[MotorSpec], codec: GroupCodec, boot_mode: str,
                 motor_modes: Callable[[str], list[ControlMode]], start: bool, reply_timeout: float = 0.05,
                 forget: Callable[[], None] = lambda: None, adopt: Callable[[], None] = lambda: None,
                 emit: Callable[[str], None] = lambda _text: None):
        self.name = name
        self.motors = tuple(motors)
        self.n = len(self.motors)
        self.codec = codec
        self.motor_modes = motor_modes
        self.reply_timeout = reply_timeout
        self._forget, self._adopt, self._emit = forget, adopt, emit
        self.mode = "pid" if boot_mode == "pid" else "mit"
        self.target_mode = self.mode
        self.want_enabled = False
        self.mode_echo = np.zeros(self.n, dtype=bool)
        # until when each motor's register echoes are expected: an echo shares the feedback's id, and
        # decoded as feedback it reads as a position near -PMAX (a 0x55 echo: -12.4676 rad)
        self.register_until = np.full(self.n, -np.inf)
        self.queue: list[Request] = []
        self.state = SequencerState.DISABLED
        if start:
            # motors all enabled in the boot mode (a driver before this one died, and they run its last
            # command) are adopted where they are; otherwise disable, mode, enable
            mode = Function.PID if self.mode == "pid" else Function.MIT
            chain = Request(Function.DISABLE, then=Request(mode, then=Request(Function.ENABLE)))
            self.queue.append(Request(Function.ADOPT, then=chain))
            self._enter(SequencerState.WAITING)

    # -- the state -----------------------------------------------------------------------------
    def _enter(self, state: SequencerState) -> None:
        if state is not self.state and state not in TRANSITIONS[self.state]:
            raise RuntimeError(f"{self.name}: function frames cannot go from {self.state.value} to {state.value}")
        self.state = state

    def _settled(self) -> SequencerState:
        """The state the queue and the enable flag stand for."""
        if not self.queue:
            return SequencerState.ENABLED if self.want_enabled else SequencerState.DISABLED
        head = self.queue[0]
        return SequencerState.WAITING if head.deadline == 0.0 else RUNNING[head.function]

    def refusal(self, function: Function) -> str:
        """Why `function` cannot run in the group's state now ("" when it can)."""
        if function in NEEDS_DISABLED:
            enabled = [self.motors[i].joint for i in range(self.n) if self.codec.status[i] == Status.ENABLED]
            if self.want_enabled or enabled:
                what = "a mode change" if function != Function.CALIBRATE else "calibration"
                return (f"{self.name}: {what} needs the motors disabled first (command 2, then "
                        f"{int(function)}, then 1); enabled: {', '.join(enabled) or 'group'}")
        return ""

    # -- transitions the caller asks for -------------------------------------------------------
    def request(self, function: Function) -> Request:
        """Queue a function frame; wait on `request.done`. A refusal finishes it at once, with the reason."""
        req = Request(Function(function))
        if req.function not in SERVICE_FUNCTIONS:
            req.finish(False, f"{self.name}: {req.function.name.lower()} is the driver's own start, not a request")
            return req
        refusal = self.refusal(req.function)
        if refusal:
            req.finish(False, refusal)
            return req
        if req.function == Function.CLEAR_ERRORS and self.want_enabled:
            req.then = Request(Function.ENABLE)
        self.queue.append(req)
        if self.state in _IDLE:
            self._enter(SequencerState.WAITING)
        return req

    def cancel(self, req: Request, why: str) -> bool:
        """Withdraw a request (and its follow-ups) that has not started; True when it was withdrawn.

        A request starts only once every motor of the group has answered: one queued while a
        motor is silent would otherwise run whenever it answers, long after its caller gave up."""
        mine = [r for r in self.queue if r is req or r.root is req]
        if not mine or mine[0].deadline != 0.0:
            return False                     # done, or running (it finishes within its timeout)
        self.queue = [r for r in self.queue if r not in mine]
        req.finish(False, why)
        self._enter(self._settled())
        return True

    # -- a bus cycle ---------------------------------------------------------------------------
    def cycle(self, now: float) -> list[Frame] | None:
        """The frames of this cycle, or None when the group's commands go out (enabled, nothing to do)."""
        answered = self.codec.ready
        if self.queue and self.queue[0].function == Function.ADOPT and not answered:
            req = self.queue[0]
            req.waiting_since = now if req.waiting_since is None else req.waiting_since
            req.cycles += 1
            if now - req.waiting_since > self.reply_timeout and req.cycles >= MISSED_REPLIES:
                self._decline(req, "a motor has not answered")
        if self.queue and answered:
            frames = self._run(self.queue[0], now)
            if frames:
                return frames
        if self.want_enabled and answered and not self.queue:
            return None
        if self.queue and self.queue[0].function == Function.DISABLE:
            # a motor has not answered yet (the start-up chain waits for it): the others are
            # disabled meanwhile, a driver before this one may have left them running its last
            # command; a motor answers a disable frame with its feedback, as a status request
            return self.codec.disable_frames()
        return self.codec.status_requests()

    def takes_reply(self, i: int, data: bytes, now: float) -> bool:
        """Motor `i`'s frame is the echo of a register request (consumed here, never feedback)."""
        if now > self.register_until[i]:
            return False
        reply = damiao.decode_register_reply(data)
        if reply is None or reply.esc_id != self.motors[i].esc_id:
            return False
        # a register echo, also one that comes after its request completed
        if reply.rid == damiao.Register.CTRL_MODE and self.queue and self.queue[0].function in REGISTER_FUNCTIONS:
            want = self.motor_modes(self.target_mode)[i]
            self.mode_echo[i] = int(reply.value) == int(want)
        return True

    def _run(self, req: Request, now: float) -> list[Frame]:
        """Frames for the request in progress, and its completion when every motor confirmed."""
        if req.deadline == 0.0:
            # checked again when it starts: an enable queued before it may have run meanwhile
            refusal = self.refusal(req.function)
            if refusal:
                self._fail(req, refusal)
                return []
            if req.function == Function.ADOPT and not np.all(self.codec.status == Status.ENABLED):
                self._decline(req, "not every motor is enabled and free of faults")
                return []
            req.deadline = now + REQUEST_TIMEOUT
            self._start(req)
        req.cycles += 1
        missing = self._unconfirmed(req)
        if not missing:
            self._succeed(req)
            return []
        if now > req.deadline and req.cycles >= REQUEST_MIN_CYCLES:
            joints = ", ".join(f"{self.motors[i].joint} (status {self.codec.status_name(i)})" for i in missing)
            if req.function == Function.ADOPT:
                self._decline(req, f"the control mode of {joints} is not {self.target_mode}")
            else:
                self._fail(req, f"{self.name}: {req.function.name.lower()} not confirmed by {joints}")
            return []
        if now - req.last_sent < RESEND_PERIOD:
            return self.codec.status_requests()
        req.last_sent = now
        if req.function in REGISTER_FUNCTIONS:
            self.register_until[:] = now + REGISTER_REPLY_WINDOW
        return [self._frame(req.function, i) for i in range(self.n)]

    def _frame(self, function: Function, i: int) -> Frame:
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
        mode = self.motor_modes(self.target_mode)[i]
        return damiao.REGISTER_ID, damiao.encode_register_write(esc, damiao.Register.CTRL_MODE, int(mode))

    def _unconfirmed(self, req: Request) -> list[int]:
        f, s = req.function, self.codec.status
        if f == Function.ENABLE:
            ok = s == Status.ENABLED
        elif f == Function.DISABLE:
            ok = s == Status.DISABLED
        elif f == Function.CALIBRATE:
            ok = np.abs(self.codec.position / self.codec.ratio) < 1e-2
        elif f == Function.CLEAR_ERRORS:
            ok = (s == Status.ENABLED) | (s == Status.DISABLED)
        else:
            ok = self.mode_echo
        return [int(i) for i in np.flatnonzero(~ok)]

    # -- transitions the cycle makes -------------------------------------------------------------
    def _start(self, req: Request) -> None:
        """WAITING -> the request's running state."""
        f = req.function
        if f == Function.ENABLE:
            self.want_enabled = True
            # hold where the arm is when it comes alive: a command from before (the arm may have been
            # moved by hand while off, or re-zeroed) would swing it back at full effort
            self._forget()
        elif f == Function.DISABLE:
            self.want_enabled = False
        elif f in MODE_FUNCTIONS:
            self.mode_echo[:] = False
            self.target_mode = "pid" if f == Function.PID else "mit"
        elif f == Function.ADOPT:
            self.mode_echo[:] = False
            self.target_mode = self.mode
        self._enter(RUNNING[f])

    def _succeed(self, req: Request) -> None:
        """Every motor confirmed: the group takes the new state; a follow-up waits next (the caller
        waits for the whole chain), else the caller is answered."""
        message = f"{self.name}: {req.function.name.lower()} done"
        if req.function == Function.ADOPT:
            self.mode = self.target_mode
            self.want_enabled = True
            self._adopt()
            req.then = None
            message = (f"{self.name}: adopted its motors, enabled in {self.mode} mode (a driver before this one "
                       f"left them running): holding where they are with the torque they apply")
        self.queue.pop(0)
        if req.function in NEEDS_DISABLED:
            if req.function != Function.CALIBRATE:
                self.mode = self.target_mode
            self._forget()          # they meant another mode, or the old zero
        self._emit(message)
        if req.then is not None:
            self._follow(req, req.then)
        else:
            req.finish(True, message)
        self._enter(self._settled())

    def _fail(self, req: Request, message: str) -> None:
        """Not confirmed in time, or refused when it would start: the caller is answered."""
        self.queue.pop(0)
        if req.function == Function.ENABLE:
            self.want_enabled = False
        self._emit(message)
        req.finish(False, message)
        self._enter(self._settled())

    def _decline(self, req: Request, why: str) -> None:
        """ADOPT gives way to its follow-up (disable, mode, enable): the motors are started afresh."""
        self.queue.pop(0)
        self._emit(f"{self.name}: not adopting the motors as they are ({why}): starting them")
        if req.then is not None:
            self._follow(req, req.then)
        else:
            req.finish(False, why)
        self._enter(self._settled())

    def _follow(self, req: Request, follow: Request) -> None:
        follow.done = req.done          # the caller waits for the whole chain
        follow.root = req.root or req
        self.queue.insert(0, follow)
