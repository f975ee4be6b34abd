"""The simulator's loop without ROS: steps due on the wall clock, catching up and slipping, lockstep waits,
the /clock, ground-truth and real-time schedules, board frames per bus, requests from other threads."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
import yaml

from r1_can.config import parse_config
from r1_sim.lockstep import Lockstep
from r1_sim.robot import SimRobot
from r1_sim.sim_loop import LOCKSTEP_RETRY_S, RTF_REPORT_S, PhysicsPacer, RequestQueue, by_bus
from r1_sim.sim_settings import SimSettings

DT = 1e-3


class FakeRobot:
    """The part of SimRobot the loop uses: a simulated clock advanced by step()."""

    def __init__(self) -> None:
        self.time = 100.0
        self.steps = 0
        self.faults: list = []
        self.remote: list = []

    def step(self, dt: float) -> None:
        self.time += dt
        self.steps += 1

    def inject_fault(self, joint: str, fault: str) -> None:
        if joint != "left_arm_joint1":
            raise KeyError(f"no simulated motor drives joint '{joint}'")
        if fault not in ("none", "no_reply"):
            raise ValueError(f"unknown fault {fault}")
        self.faults.append((joint, fault))

    def set_remote(self, sticks, mode) -> None:
        self.remote.append((list(sticks), mode))


def pacer(sim_clock: bool = False, lockstep: Lockstep | None = None, **settings) -> PhysicsPacer:
    return PhysicsPacer(FakeRobot(), SimSettings(**settings), sim_clock, now=0.0, lockstep=lockstep)


def test_one_step_per_period_of_wall_time():
    p = pacer()
    assert p.advance(0.0).steps == 1                 # the first step is due at the start
    assert p.wait_time(0.0) == pytest.approx(DT)
    assert p.advance(0.0105).steps == 10
    assert p.robot.time == pytest.approx(100.0 + 11 * DT)
    assert p.stats.total == 11 and p.lagged == 0


def test_after_a_pause_it_catches_up_max_lag_then_lets_time_slip():
    p = pacer(max_lag_s=0.25)                       # wall time: catch up 0.25 s at most
    assert p.max_steps == 250
    out = p.advance(1.0)
    assert out.steps == 250 and out.slipped and p.lagged == 1
    assert p.next_tick == 1.0                        # the slipped time is not made up
    assert p.advance(1.0).steps == 1 and not p.advance(1.0005).slipped
    q = pacer(sim_clock=True, max_lag_sim_time_s=0.01)   # simulated time: jitter only
    assert q.advance(1.0).steps == 10 and q.lagged == 1


def test_a_short_lag_is_caught_up_without_a_slip():
    p = pacer(max_lag_s=0.25)
    p.advance(0.0)
    out = p.advance(0.1 + 1e-9)
    assert out.steps == 100 and not out.slipped


def test_lockstep_waits_for_the_driver_then_lets_a_silent_bus_go():
    lock = Lockstep({"left_arm": 100.0}, periods=2.5, timeout=0.5)     # a window of 25 ms
    p = pacer(sim_clock=True, lockstep=lock, max_lag_sim_time_s=1.0)
    p.heard("left_arm")                              # at simulated time 100.0
    out = p.advance(0.1)
    assert out.waited and out.steps == 25 and p.lockstep_waits == 1
    assert p.next_tick == pytest.approx(0.1 + LOCKSTEP_RETRY_S)
    p.heard("left_arm")                              # a frame: the physics runs on
    assert p.advance(0.11).steps >= 1
    p.advance(0.2)                                   # waiting again, since 0.2 s of wall time
    out = p.advance(0.75)                            # silent > 0.5 s: let go, and the steps run
    assert out.let_go == [["left_arm"]] and out.steps > 0 and not out.waited


def test_without_lockstep_the_settings_or_wall_time():
    rates = {"torso": 500.0}
    assert PhysicsPacer.lockstep_for(SimSettings(), rates, sim_clock=False) is None
    assert PhysicsPacer.lockstep_for(SimSettings(lockstep=False), rates, sim_clock=True) is None
    lock = PhysicsPacer.lockstep_for(SimSettings(lockstep_periods=2.0, lockstep_timeout_s=0.3), rates, True)
    assert lock is not None and lock.window == {"torso": pytest.approx(0.004)} and lock.timeout == 0.3


def test_clock_and_ground_truth_schedules():
    p = pacer(clock_rate_hz=500.0, ground_truth_rate_hz=100.0)
    assert p.clock_due() and not p.clock_due()      # once per 2 ms of simulated time
    p.robot.time += 0.0021
    assert p.clock_due()
    assert p.truth_due(0.0) and not p.truth_due(0.005) and p.truth_due(0.0101)
    # after a 5 s pause: it catches up one period at most, not the 500 messages missed
    assert sum(p.truth_due(5.0 + k * 1e-3) for k in range(10)) == 3
    assert not p.truth_due(5.0095) and p.truth_due(5.0101)


def test_real_time_report_on_simulated_time_only():
    p = pacer(sim_clock=True)
    assert p.real_time_report(RTF_REPORT_S - 1) is None
    p.robot.time += 15.0
    factor, window = p.real_time_report(RTF_REPORT_S)
    assert factor == pytest.approx(0.5) and window == RTF_REPORT_S
    assert p.real_time_report(RTF_REPORT_S + 1) is None
    w = pacer(sim_clock=False)
    assert w.real_time_report(100.0) is None


def test_board_frames_are_grouped_per_bus_in_order():
    frames = [("chassis", 0x20, b"a"), ("torso", 0x45, b"b"), ("chassis", 0x20, b"c")]
    assert by_bus(frames) == {"chassis": [(0x20, b"a"), (0x20, b"c")], "torso": [(0x45, b"b")]}
    assert by_bus([]) == {}


def test_requests_from_another_thread_are_applied_by_the_loop():
    robot, requests = FakeRobot(), RequestQueue()
    answers: list = []

    def service() -> None:
        answers.append(requests.inject_fault("left_arm_joint1", "no_reply", timeout=5.0))
        answers.append(requests.inject_fault("tail_joint", "no_reply", timeout=5.0))
        answers.append(requests.inject_fault("left_arm_joint1", "melted", timeout=5.0))
    t = threading.Thread(target=service)
    t.start()
    requests.set_remote([0.5, 0.0, 0.0, -0.5], 2)
    while t.is_alive():
        requests.serve(robot, lambda: robot.time)
        t.join(0.01)
    assert answers[0] == (True, "left_arm_joint1: no_reply", 100.0)
    assert answers[1][0] is False and "tail_joint" in answers[1][1]
    assert answers[2][0] is False and "melted" in answers[2][1]
    assert robot.faults == [("left_arm_joint1", "no_reply")]
    assert robot.remote == [([0.5, 0.0, 0.0, -0.5], 2)]


def test_an_injection_the_loop_does_not_answer_times_out():
    assert RequestQueue().inject_fault("left_arm_joint1", "none", timeout=0.01) == (
        False, "simulator loop did not answer", None)


def test_a_push_from_another_thread_is_applied_by_the_loop_and_a_bad_one_is_refused():
    """/sim/apply_wrench's path, on a SimRobot: the loop pushes the link from the next step for the duration and
    answers the simulated time it starts; a push it refuses is answered why and pushes nothing."""
    src = Path(__file__).resolve().parents[3]
    params: dict = {}
    for name in ("r1_can/config/r1", "r1_can/config/r1_buses_sim", "r1_sim/config/sim"):
        params.update(yaml.safe_load((src / f"{name}.yaml").read_text()))
    params["scene"] = "empty"
    robot = SimRobot(parse_config(params), (src / "r1_description/urdf/r1_v2_1_0.urdf").read_text(), params, now=50.0)
    requests, answers = RequestQueue(), []

    def service() -> None:
        answers.append(requests.apply_wrench("torso_link4", (0.0, 100.0, 0.0), (0.0, 0.0, 10.0), 0.05, timeout=5.0))
        answers.append(requests.apply_wrench("tail_link", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.05, timeout=5.0))
        answers.append(requests.apply_wrench("torso_link4", (0.0, 0.0, 2000.0), (0.0, 0.0, 0.0), 0.05, timeout=5.0))
    t = threading.Thread(target=service)
    t.start()
    pushed, ended = False, None
    while t.is_alive() or ended is None:
        requests.serve(robot, lambda: robot.time)
        robot.step(DT)
        pushed = pushed or bool(robot.world.pushing())
        if pushed and ended is None and not robot.world.pushing():
            ended = robot.time
        t.join(0.001)
    ok, message, start = answers[0]
    assert ok and message == "torso_link4: pushed for 0.05 s" and 50.0 <= start < ended
    assert ended - start == pytest.approx(0.05, abs=DT / 2)          # its duration, from the step it started
    assert answers[1][0] is False and "tail_link" in answers[1][1] and "no link" in answers[1][1]
    assert answers[2][0] is False and "1000 N" in answers[2][1]
    assert not robot.world.data.xfrc_applied.any()
