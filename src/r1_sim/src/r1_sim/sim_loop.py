"""The simulator node's loop, ROS-free: physics paced on the wall clock, and requests handed to it.

`PhysicsPacer` decides how many physics steps of a `SimRobot` are due at a wall time and runs them:
one step per `1 / physics_rate_hz` of wall time; after a pause of the process it catches up at most
`max_lag` (SimSettings: `max_lag_s` on wall time, `max_lag_sim_time_s` on simulated time), then lets
simulated time slip; in lockstep (r1_sim.lockstep) it waits for the driver's frames. It also says
when /clock, the ground truth and the real-time report are due. `RequestQueue` carries fault
injections, pushes and remote-controller states from ROS callbacks (other threads) into the loop, which
applies them between steps. `by_bus` groups the boards' frames per bus. Times are seconds: `now` is
the wall clock (time.monotonic), `robot.time` the simulated clock.
"""
from __future__ import annotations

import collections
import math
import queue
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, Iterable, List, Optional, Sequence, Tuple

from r1_common.loop_stats import LoopStats
from r1_sim.lockstep import Lockstep
from r1_sim.robot import SimRobot
from r1_sim.sim_settings import SimSettings

LOCKSTEP_RETRY_S = 0.002     # [s] wall time before a waiting physics looks again (a driver frame wakes it sooner)
RTF_REPORT_S = 30.0          # [s] wall time between the reports of simulated time's speed (simulated time only)


@dataclass
class Advance:
    """What one `PhysicsPacer.advance` did."""

    steps: int = 0                                   # physics steps run
    waited: bool = False                             # lockstep: stopped to wait for the driver
    let_go: List[List[str]] = field(default_factory=list)   # lockstep: buses let go (silent too long), per event
    slipped: bool = False                            # too far behind: simulated time let slip


class PhysicsPacer:
    """Runs a SimRobot's physics steps as the wall clock makes them due (see the module's docstring)."""

    def __init__(self, robot: SimRobot, settings: SimSettings, sim_clock: bool, now: float,
                 lockstep: Optional[Lockstep] = None, wall: Callable[[], float] = time.monotonic,
                 cpu: Callable[[], float] = time.perf_counter):
        """`sim_clock`: ROS time is the simulated clock (/use_sim_time); `now`: the wall time of the start;
        `wall`/`cpu`: the clocks of the step statistics (wall time of each step, its compute time)."""
        self.robot, self.sim_clock, self.lockstep = robot, sim_clock, lockstep
        self.dt = 1.0 / settings.physics_rate_hz
        self.max_lag = settings.max_lag_sim_time_s if sim_clock else settings.max_lag_s
        self.max_steps = max(1, int(math.ceil(self.max_lag / self.dt)))    # per advance
        self.clock_period = 1.0 / settings.clock_rate_hz          # simulated time
        self.truth_period = 1.0 / settings.ground_truth_rate_hz   # wall time
        self.next_tick = self.next_truth = now
        self.lagged = 0                 # times simulated time slipped
        self.lockstep_waits = 0         # times the physics stopped to wait for the driver
        self.stats = LoopStats()        # one tick per step, on the wall clock
        self._last_clock = -math.inf
        self._rtf_since = (now, robot.time)
        self._wall, self._cpu = wall, cpu

    @classmethod
    def lockstep_for(cls, settings: SimSettings, bus_rates_hz: Dict[str, float], sim_clock: bool) -> Optional[Lockstep]:
        """The lockstep the settings ask for: on simulated time only, None otherwise."""
        if not (sim_clock and settings.lockstep):
            return None
        return Lockstep(bus_rates_hz, settings.lockstep_periods, settings.lockstep_timeout_s)

    def heard(self, bus: str) -> None:
        """The driver sent a frame on `bus` (lockstep)."""
        if self.lockstep is not None:
            self.lockstep.heard(bus, self.robot.time)

    def wait_time(self, now: float) -> float:
        """Seconds until the next step is due (0: due now)."""
        return max(0.0, self.next_tick - now)

    def advance(self, now: float) -> Advance:
        """Run the steps due at wall time `now`: at most `max_steps`, fewer while lockstep waits."""
        out = Advance()
        lockstep = self.lockstep
        while now >= self.next_tick and out.steps < self.max_steps:
            if lockstep is not None and lockstep.waiting_for(self.robot.time, now):
                self.next_tick = now + LOCKSTEP_RETRY_S
                self.lockstep_waits += 1
                out.waited = True
                break
            if lockstep is not None and lockstep.let_go:
                out.let_go.append(list(lockstep.let_go))
            t0 = self._cpu()
            self.robot.step(self.dt)
            self.stats.tick(self._wall(), self._cpu() - t0)
            self.next_tick += self.dt
            out.steps += 1
        if now - self.next_tick > self.max_lag:       # far behind (machine busy): let simulated time slip
            self.lagged += 1
            self.next_tick = now
            out.slipped = True
        return out

    def real_time_report(self, now: float) -> Optional[Tuple[float, float]]:
        """On simulated time, every RTF_REPORT_S of wall time: (simulated / wall time over the window,
        the window [s]); None otherwise."""
        since, sim_since = self._rtf_since
        if not self.sim_clock or now - since < RTF_REPORT_S:
            return None
        self._rtf_since = (now, self.robot.time)
        return (self.robot.time - sim_since) / (now - since), now - since

    def clock_due(self) -> bool:
        """A /clock message is due (every `clock_period` of simulated time); call only when publishing it."""
        if self.robot.time - self._last_clock >= self.clock_period:
            self._last_clock = self.robot.time
            return True
        return False

    def truth_due(self, now: float) -> bool:
        """Ground truth is due (every `truth_period` of wall time, no burst after a pause)."""
        if now >= self.next_truth:
            self.next_truth = max(self.next_truth + self.truth_period, now - self.truth_period)
            return True
        return False


def by_bus(frames: Iterable[Tuple[str, int, bytes]]) -> Dict[str, List[Tuple[int, bytes]]]:
    """(bus, id, data) frames -> {bus: [(id, data), ...]}, in order (a board's frames go out in one packet)."""
    out: Dict[str, List[Tuple[int, bytes]]] = {}
    for bus, can_id, data in frames:
        out.setdefault(bus, []).append((can_id, data))
    return out


class RequestQueue:
    """Fault injections, pushes and remote-controller states from other threads, applied by the loop (`serve`)."""

    FAULT_TIMEOUT_S = 2.0       # [s] wall time an injection or a push waits for the loop's answer

    def __init__(self) -> None:
        # deque's append and popleft are atomic: other threads append, the loop pops
        self._pending: Deque[Tuple[Any, ...]] = collections.deque()

    def inject_fault(self, joint: str, fault: str, timeout: float = FAULT_TIMEOUT_S) -> Tuple[bool, str, Any]:
        """Ask the loop to inject `fault` into the motor of `joint` and wait for it: (ok, message, stamp of
        the simulated time it took effect); (False, why, None) if the loop did not answer within `timeout`."""
        answer: "queue.Queue[Tuple[bool, str, Any]]" = queue.Queue(maxsize=1)
        self._pending.append(("fault", joint, fault, answer))
        try:
            return answer.get(timeout=timeout)
        except queue.Empty:
            return False, "simulator loop did not answer", None

    def apply_wrench(self, link: str, force: Sequence[float], torque: Sequence[float], duration: float,
                     timeout: float = FAULT_TIMEOUT_S) -> Tuple[bool, str, Any]:
        """Ask the loop to push `link` (SimRobot.apply_wrench) and wait for it: (ok, message, stamp of the
        simulated time the push starts); (False, why, stamp) for a push refused; (False, why, None) if the loop
        did not answer within `timeout`."""
        answer: "queue.Queue[Tuple[bool, str, Any]]" = queue.Queue(maxsize=1)
        self._pending.append(("wrench", link, (tuple(force), tuple(torque), duration), answer))
        try:
            return answer.get(timeout=timeout)
        except queue.Empty:
            return False, "simulator loop did not answer", None

    def set_remote(self, sticks: Sequence[float], mode: int) -> None:
        """Set the remote controller (SimRobot.set_remote) at the loop's next pass."""
        self._pending.append(("remote", list(sticks), mode, None))

    def serve(self, robot: SimRobot, stamp: Callable[[], Any]) -> None:
        """Apply every pending request to `robot`; an injection or a push is answered with `stamp()`.
        Called on every pass of the loop: nothing pending costs one length check (no lock)."""
        pending = self._pending
        while pending:
            kind, a, b, answer = pending.popleft()
            if kind == "fault":
                try:
                    robot.inject_fault(a, b)
                    answer.put((True, f"{a}: {b}", stamp()))
                except (KeyError, ValueError) as e:
                    answer.put((False, str(e), stamp()))
            elif kind == "wrench":
                force, torque, duration = b
                try:
                    robot.apply_wrench(a, force, torque, duration)
                    answer.put((True, f"{a}: pushed for {float(duration):g} s", stamp()))
                except ValueError as e:
                    answer.put((False, str(e), stamp()))
            else:
                robot.set_remote(a, b)
