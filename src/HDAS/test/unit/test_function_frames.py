"""hdas.function_frames: the function-frame state machine, transition by transition: what each
state sends, what confirms a request, what is refused and why, time-outs, chains and withdrawals."""
from __future__ import annotations

import numpy as np
import pytest

from hdas.command_limits import JointLimitArrays
from hdas.function_frames import (
    REQUEST_MIN_CYCLES,
    REQUEST_TIMEOUT,
    RESEND_PERIOD,
    TRANSITIONS,
    Function,
    FunctionSequencer,
    SequencerState,
)
from hdas.group_codec import GroupCodec
from r1_can import damiao
from r1_can.config import MotorSpec
from r1_can.damiao import MOTOR_PRESETS, ControlMode, Register, Status

S = SequencerState
MOTORS = tuple(MotorSpec(f"joint{k}", k, 0x10 + k, "DM4310", MOTOR_PRESETS["DM4310"]) for k in (1, 2))
LIMITS = JointLimitArrays(np.array([-1.0, -1.0]), np.array([1.0, 1.0]), np.array([2.0, 2.0]), np.array([5.0, 5.0]))
DT = 0.002


class Group:
    """A sequencer with its codec, and what it told its group."""

    def __init__(self, start: bool = False, boot_mode: str = "mit"):
        self.codec = GroupCodec(MOTORS, LIMITS)
        self.forgotten = self.adopted = 0
        self.log: list[str] = []
        self.seq = FunctionSequencer("arm", MOTORS, self.codec, boot_mode, self.modes, start,
                                     forget=self._forget, adopt=self._adopt, emit=self.log.append)
        self.now = 0.0

    def modes(self, mode: str) -> list[ControlMode]:
        return [ControlMode.FORCE_POS if mode == "pid" else ControlMode.MIT] * 2

    def _forget(self) -> None:
        self.forgotten += 1

    def _adopt(self) -> None:
        self.adopted += 1

    def answer(self, status: Status, position: float = 0.3) -> None:
        self.codec.status[:] = int(status)
        self.codec.position[:] = position

    def cycle(self, n: int = 1):
        for _ in range(n):
            self.now += DT
            frames = self.seq.cycle(self.now)
        return frames

    def echo(self, mode: ControlMode) -> None:
        """Each motor echoes a CTRL_MODE register access with `mode`."""
        for i, m in enumerate(MOTORS):
            data = damiao.encode_register_reply(m.esc_id, damiao.RegisterCommand.WRITE, Register.CTRL_MODE, int(mode))
            assert self.seq.takes_reply(i, data, self.now)


def test_idle_states_send_status_requests_or_leave_the_cycle_to_the_commands() -> None:
    g = Group()
    assert g.seq.state is S.DISABLED and g.seq.mode == "mit" and not g.seq.want_enabled
    assert g.cycle() == g.codec.status_requests()
    assert Group(boot_mode="pid").seq.mode == "pid"


def test_enable_waits_for_every_motor_then_runs_until_confirmed() -> None:
    g = Group()
    req = g.seq.request(Function.ENABLE)
    assert g.seq.state is S.WAITING and not req.done.is_set()
    assert g.cycle(5) == g.codec.status_requests()           # a motor has not answered: it waits
    g.answer(Status.DISABLED)
    assert g.cycle() == [(m.esc_id, damiao.ENABLE) for m in MOTORS]
    assert g.seq.state is S.ENABLING and g.seq.want_enabled and g.forgotten == 1    # holds where it is
    assert g.cycle() == g.codec.status_requests()           # resent only every RESEND_PERIOD
    g.cycle(int(RESEND_PERIOD / DT))
    g.answer(Status.ENABLED)
    assert g.cycle() is None                                 # confirmed: the group's commands go out
    assert g.seq.state is S.ENABLED and req.success and req.message == "arm: enable done"
    assert g.log == ["arm: enable done"]


def test_disable_from_enabled() -> None:
    g = Group()
    g.answer(Status.DISABLED)
    g.seq.request(Function.ENABLE)
    g.cycle()
    g.answer(Status.ENABLED)
    g.cycle()
    req = g.seq.request(Function.DISABLE)
    assert g.seq.state is S.WAITING
    assert g.cycle() == [(m.esc_id, damiao.DISABLE) for m in MOTORS]
    assert g.seq.state is S.DISABLING and not g.seq.want_enabled
    g.answer(Status.DISABLED)
    g.cycle()
    assert g.seq.state is S.DISABLED and req.success


@pytest.mark.parametrize("function", [Function.MIT, Function.PID, Function.CALIBRATE])
def test_mode_change_and_calibration_are_refused_with_the_reason_unless_disabled(function) -> None:
    g = Group()
    g.answer(Status.ENABLED)                                 # motors enabled (by someone before us)
    req = g.seq.request(function)
    assert req.done.is_set() and not req.success
    assert "needs the motors disabled first (command 2" in req.message and "joint1, joint2" in req.message
    assert g.seq.state is S.DISABLED and not g.seq.queue


def test_adopt_is_no_request() -> None:
    g = Group()
    req = g.seq.request(Function.ADOPT)
    assert req.done.is_set() and not req.success and "driver's own start" in req.message
    assert g.seq.state is S.DISABLED


def test_a_mode_change_writes_the_register_and_completes_on_the_echoes() -> None:
    g = Group()
    g.answer(Status.DISABLED)
    req = g.seq.request(Function.PID)
    frames = g.cycle()
    assert g.seq.state is S.SETTING_MODE and g.seq.target_mode == "pid" and g.seq.mode == "mit"
    assert frames == [(damiao.REGISTER_ID, damiao.encode_register_write(m.esc_id, Register.CTRL_MODE,
                                                                        int(ControlMode.FORCE_POS))) for m in MOTORS]
    g.echo(ControlMode.MIT)                                  # the old mode: no confirmation
    g.cycle()
    assert g.seq.state is S.SETTING_MODE
    g.echo(ControlMode.FORCE_POS)
    g.cycle()
    assert g.seq.state is S.DISABLED and g.seq.mode == "pid" and req.success and g.forgotten == 1
    # a late echo within the window is still consumed, never read as feedback
    g.echo(ControlMode.FORCE_POS)


def test_calibration_completes_when_every_motor_reads_zero() -> None:
    g = Group()
    g.answer(Status.DISABLED, position=0.4)
    req = g.seq.request(Function.CALIBRATE)
    assert g.cycle() == [(m.esc_id, damiao.SET_ZERO) for m in MOTORS] and g.seq.state is S.CALIBRATING
    g.answer(Status.DISABLED, position=0.0)
    g.cycle()
    assert req.success and g.seq.state is S.DISABLED and g.forgotten == 1 and g.seq.mode == "mit"


def test_clear_errors_while_enabled_enables_again_and_answers_for_both() -> None:
    g = Group()
    g.answer(Status.DISABLED)
    g.seq.request(Function.ENABLE)
    g.cycle()
    g.answer(Status.ENABLED)
    g.cycle()
    g.answer(Status.OVER_CURRENT)                            # a fault while enabled
    req = g.seq.request(Function.CLEAR_ERRORS)
    assert g.cycle() == [(m.esc_id, damiao.CLEAR_ERROR) for m in MOTORS]
    assert g.seq.state is S.CLEARING_ERRORS
    g.answer(Status.DISABLED)                                # cleared: the motors come back disabled
    g.cycle()
    assert g.seq.state is S.WAITING and not req.done.is_set()     # the follow-up enable is next
    assert g.cycle() == [(m.esc_id, damiao.ENABLE) for m in MOTORS] and g.seq.state is S.ENABLING
    g.answer(Status.ENABLED)
    g.cycle()
    assert g.seq.state is S.ENABLED and req.success and req.message == "arm: enable done"


def test_a_request_not_confirmed_in_time_fails_naming_the_motors() -> None:
    g = Group()
    g.answer(Status.DISABLED)
    req = g.seq.request(Function.ENABLE)
    g.cycle()
    g.codec.status[1] = int(Status.ENABLED)                   # joint1 never confirms
    cycles = 1
    while not req.done.is_set():
        g.cycle()
        cycles += 1
    assert cycles >= REQUEST_MIN_CYCLES and g.now > REQUEST_TIMEOUT
    assert not req.success and req.message == "arm: enable not confirmed by joint1 (status DISABLED)"
    assert g.seq.state is S.DISABLED and not g.seq.want_enabled


def test_a_stalled_machine_is_no_time_out() -> None:
    g = Group()
    g.answer(Status.DISABLED)
    req = g.seq.request(Function.ENABLE)
    g.cycle()
    g.now += 5 * REQUEST_TIMEOUT                             # no cycle ran for seconds
    g.cycle()
    assert not req.done.is_set() and g.seq.state is S.ENABLING


def test_only_a_request_that_has_not_started_can_be_withdrawn() -> None:
    g = Group()
    waiting = g.seq.request(Function.ENABLE)
    g.cycle(10)
    assert g.seq.cancel(waiting, "gave up") and waiting.message == "gave up" and not waiting.success
    assert g.seq.state is S.DISABLED and not g.seq.queue
    g.answer(Status.DISABLED)
    g.cycle(10)
    assert g.seq.state is S.DISABLED                         # nothing runs when the motor answers later
    running = g.seq.request(Function.ENABLE)
    g.cycle()
    assert not g.seq.cancel(running, "too late") and g.seq.state is S.ENABLING


def test_a_calibration_queued_behind_an_enable_is_refused_when_it_would_start() -> None:
    g = Group()
    g.answer(Status.DISABLED)
    enable = g.seq.request(Function.ENABLE)
    calibrate = g.seq.request(Function.CALIBRATE)            # accepted: disabled when queued
    g.cycle()
    g.answer(Status.ENABLED)
    g.cycle(2)
    assert enable.success and calibrate.done.is_set() and not calibrate.success
    assert "calibration needs the motors disabled first" in calibrate.message and g.seq.state is S.ENABLED


def test_start_adopts_motors_left_running_in_the_boot_mode() -> None:
    g = Group(start=True)
    assert g.seq.state is S.WAITING and g.seq.queue[0].function == Function.ADOPT
    g.answer(Status.ENABLED)
    frames = g.cycle()
    assert frames == [(damiao.REGISTER_ID, damiao.encode_register_read(m.esc_id, Register.CTRL_MODE)) for m in MOTORS]
    assert g.seq.state is S.ADOPTING
    g.echo(ControlMode.MIT)
    assert g.cycle() is None
    assert g.seq.state is S.ENABLED and g.adopted == 1 and g.seq.want_enabled and "adopted" in g.log[-1]


def test_start_otherwise_disables_sets_the_boot_mode_and_enables() -> None:
    g = Group(start=True)
    assert g.cycle(3) == g.codec.status_requests()
    g.cycle(30)                                              # a motor silent: ADOPT gives way
    assert g.seq.state is S.WAITING and g.seq.queue[0].function == Function.DISABLE
    assert "not adopting the motors as they are (a motor has not answered)" in g.log[-1]
    assert g.cycle() == g.codec.disable_frames()             # the others are disabled meanwhile
    g.answer(Status.ENABLED)                                 # it answers: they run, not in the boot mode
    seen = []
    for _ in range(100):
        g.cycle()
        seen.append(g.seq.state)
        if g.seq.state is S.DISABLING:
            g.answer(Status.DISABLED)
        if g.seq.state is S.SETTING_MODE:
            g.echo(ControlMode.MIT)
        if g.seq.state is S.ENABLING:
            g.answer(Status.ENABLED)
    order = [s for k, s in enumerate(seen) if k == 0 or s is not seen[k - 1]]
    assert order == [S.DISABLING, S.WAITING, S.SETTING_MODE, S.WAITING, S.ENABLING, S.ENABLED]
    assert g.seq.state is S.ENABLED and g.adopted == 0


def test_every_move_the_machine_made_is_a_listed_transition_and_others_raise() -> None:
    g = Group()
    with pytest.raises(RuntimeError, match="from disabled to enabling"):
        g.seq._enter(S.ENABLING)
    for state, targets in TRANSITIONS.items():
        assert state not in targets or state is S.WAITING
    assert set(TRANSITIONS) == set(S)
