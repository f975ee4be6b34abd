"""TorsoSpeedController's states: every transition of TRANSITIONS happens for its stated cause, no other
does, and the mode the node reports follows the state."""
from __future__ import annotations

import numpy as np
import pytest

from mobiman.model.robot_model import RobotModel
from mobiman.torso.speed_control import TRANSITIONS, TorsoSpeedController, TorsoState

S = TorsoState
DT = 0.002
BENT = [1.0, -2.0, -1.0, 0.0]


class Recording(TorsoSpeedController):
    """Records each change of state; the torso follows the command perfectly, or is pushed (`push`)."""

    def __init__(self, model: RobotModel) -> None:
        super().__init__(model)
        self.seen: list[tuple[TorsoState, TorsoState]] = []
        self.t = 0.0

    def _enter(self, new: TorsoState) -> None:
        if new is not self.state:
            self.seen.append((self.state, new))
        super()._enter(new)

    def tick(self, seconds: float = DT, speed=None, push: bool = False) -> None:
        for _ in range(max(1, int(round(seconds / DT)))):
            if speed is not None:
                self.set_speed(*speed, self.t)
            self.t += DT
            self.step(self.t, self.position + self.ahead() if push else self.position)

    def ahead(self) -> np.ndarray:
        """0.15 rad (beyond resync_error) ahead of the moving command: pushed (pulled back, never re-seeded)."""
        moving = np.abs(self.velocity) > 1e-9
        return 0.15 * (np.sign(self.velocity) * moving if moving.any() else np.array([1.0, 0.0, 0.0, 0.0]))

    def until(self, state: TorsoState, speed=None, limit: float = 10.0) -> None:
        for _ in range(int(limit / 0.01)):
            if self.state is state:
                return
            self.tick(0.01, speed)
        raise AssertionError(f"never {state}: {self.state}")


@pytest.fixture
def ctrl(r1: RobotModel) -> Recording:
    c = Recording(r1)
    assert c.state is S.WAITING and not c.started
    c.step(0.0, BENT)
    return c


def test_speed_commands_then_silence(ctrl: Recording) -> None:
    ctrl.tick(0.5, (0.0, 0.1))
    assert ctrl.state is S.SPEED and ctrl.mode == "speed"
    ctrl.tick(0.3)                                          # silent for more than command_timeout
    assert ctrl.state is S.STOPPING and ctrl.stats["timeouts"] == 1
    ctrl.tick(0.02, (0.0, 0.1))                             # back before it stopped
    assert ctrl.state is S.SPEED
    ctrl.tick(0.3)
    ctrl.until(S.HOLDING)
    assert np.max(np.abs(ctrl.cartesian_velocity)) == 0.0
    assert ctrl.seen == [(S.WAITING, S.HOLDING), (S.HOLDING, S.SPEED), (S.SPEED, S.STOPPING),
                         (S.STOPPING, S.SPEED), (S.SPEED, S.STOPPING), (S.STOPPING, S.HOLDING)]


def test_a_joint_target_from_rest_and_its_end(ctrl: Recording) -> None:
    ctrl.set_target([0.8, -1.6, -0.8, 0.0])
    assert ctrl.state is S.BRAKING and ctrl.mode == "braking for target"
    ctrl.tick()
    assert ctrl.state is S.JOINT_TARGET and ctrl.mode == "joint target"
    ctrl.until(S.HOLDING)
    np.testing.assert_array_equal(ctrl.position, [0.8, -1.6, -0.8, 0.0])
    assert ctrl.seen[1:] == [(S.HOLDING, S.BRAKING), (S.BRAKING, S.JOINT_TARGET), (S.JOINT_TARGET, S.HOLDING)]


def test_targets_while_moving_brake_first_and_speed_wins_back(ctrl: Recording) -> None:
    ctrl.tick(0.5, (0.1, 0.0))
    ctrl.set_target([0.8, -1.6, -0.8, 0.0])                 # moving: brake first
    ctrl.tick(0.05)
    assert ctrl.state is S.BRAKING and np.any(ctrl.cartesian_velocity)
    ctrl.set_speed(0.0, 0.0, ctrl.t)                        # a zero command does not cancel it
    assert ctrl.state is S.BRAKING
    ctrl.set_speed(0.0, 0.1, ctrl.t)                        # a non-zero one does
    assert ctrl.state is S.SPEED
    ctrl.tick(0.3)                                          # silent: stopping ...
    assert ctrl.state is S.STOPPING
    ctrl.set_target([0.8, -1.6, -0.8, 0.0])                 # ... and a target then brakes too
    ctrl.until(S.JOINT_TARGET)
    ctrl.tick(0.3)
    ctrl.tick(0.02, (0.05, 0.0))                            # a speed command takes the move over
    assert ctrl.state is S.SPEED
    assert ctrl.seen[1:] == [(S.HOLDING, S.SPEED), (S.SPEED, S.BRAKING), (S.BRAKING, S.SPEED),
                             (S.SPEED, S.STOPPING), (S.STOPPING, S.BRAKING), (S.BRAKING, S.JOINT_TARGET),
                             (S.JOINT_TARGET, S.SPEED)]


def test_re_seeds(ctrl: Recording) -> None:
    ctrl.tick(0.5, (0.0, 0.1))
    ctrl.tick(push=True, speed=(0.0, 0.1))                  # a push re-seeds nothing: it is pulled back
    assert ctrl.stats["resyncs"] == 0 and ctrl.state is S.SPEED
    ctrl.guard.motors([False] * 4)
    ctrl.tick(speed=(0.0, 0.1))                             # motors off in speed control: re-seeded, and the
    assert ctrl.stats["resyncs"] == 1 and ctrl.state is S.SPEED   # stream goes on from there
    ctrl.guard.motors([True] * 4)
    ctrl.tick(speed=(0.0, 0.1))                             # on again: once more
    assert ctrl.stats["resyncs"] == 2 and ctrl.state is S.SPEED
    ctrl.tick(0.3)
    assert ctrl.state is S.STOPPING
    ctrl.guard.motors([False] * 4)
    ctrl.tick()                                             # off while stopping: held where it is
    ctrl.set_target([0.8, -1.6, -0.8, 0.0])
    assert ctrl.state is S.BRAKING
    ctrl.tick()                                             # off while braking: the target is dropped
    assert ctrl.state is S.HOLDING and ctrl.stats["resyncs"] == 3     # (one episode, counted once)
    assert ctrl.seen[1:] == [(S.HOLDING, S.SPEED), (S.SPEED, S.HOLDING), (S.HOLDING, S.SPEED),
                             (S.SPEED, S.HOLDING), (S.HOLDING, S.SPEED), (S.SPEED, S.STOPPING),
                             (S.STOPPING, S.HOLDING), (S.HOLDING, S.BRAKING), (S.BRAKING, S.HOLDING)]


def test_a_target_the_trajectory_refuses_is_dropped_at_rest(ctrl: Recording) -> None:
    ctrl.set_target([0.8, -1.6, -0.8, 0.0])
    ctrl._pending = (np.array([0.8, -1.6, -0.8]), None)     # what set_target's checks would have refused
    ctrl.tick()
    assert ctrl.state is S.HOLDING and "dropped by the trajectory" in ctrl.events[-1]
    assert ctrl.seen[-1] == (S.BRAKING, S.HOLDING)


def test_every_transition_is_reachable_and_no_other_is_taken(r1: RobotModel) -> None:
    seen = set()
    for scenario in (test_speed_commands_then_silence, test_a_joint_target_from_rest_and_its_end,
                     test_targets_while_moving_brake_first_and_speed_wins_back, test_re_seeds,
                     test_a_target_the_trajectory_refuses_is_dropped_at_rest):
        c = Recording(r1)
        c.step(0.0, BENT)
        scenario(c)
        seen |= set(c.seen)
    joint_start = Recording(r1)                              # start() by the caller during a move
    joint_start.step(0.0, BENT)
    joint_start.set_target([0.8, -1.6, -0.8, 0.0])
    joint_start.tick(0.1)
    joint_start.start(joint_start.position)
    seen |= set(joint_start.seen)
    assert seen == set(TRANSITIONS)
    with pytest.raises(RuntimeError, match="no transition HOLDING -> JOINT_TARGET"):
        joint_start._enter(S.JOINT_TARGET)
