"""The clock of a feedback-driven control loop (the joint tracker's groups, torso speed control), free of ROS.

Each feedback message is one tick of the loop, and the loop keeps the robot's time: the feedback's
header stamp (simulated time on the simulated robot), not the wall clock. Three things follow, the
same for every such loop, and kept here once:

- **freshness**: feedback is stale when its last arrival is older than `timeout` in the receiver's
  ROS time *and* in wall time (a simulated clock that jumps ahead is not a silent driver; on the
  robot the two clocks are the same); the loop publishes nothing while it is stale;
- **the tick's time**: a stamp off the clock (r1_common.validation.data_time) is taken as received;
  a tick advances by the time between stamps, at most `max_step` (a stall is not a jump), none on
  the first tick or when the clock went back;
- **the nominal rate**: that time becomes whole trajectory ticks of 1/rate_hz, the fraction carried
  to the next feedback (`ticks`); a tick sent ahead of its feedback is borrowed from that debt.
"""
from __future__ import annotations

import time
from typing import Callable, NamedTuple, Optional

from r1_common.validation import STREAM_MAX_AGE, STREAM_MAX_AHEAD, data_time

_NEVER = -1e9


class Arrival(NamedTuple):
    """What `FeedbackClock.receive` makes of a feedback message's stamp."""

    time: float                 # the robot time the message stands for (its stamp, or `now` if off the clock)
    stamp_note: Optional[str]   # why the stamp was not taken (None: it was, or there was none)
    back: bool                  # the feedback had been stale: it is back


class FeedbackClock:
    """Freshness, tick time and nominal rate of one feedback-driven loop. Thread-unsafe: the caller serialises."""

    def __init__(self, timeout: float, rate_hz: float, max_step: Optional[float] = None,
                 wall: Callable[[], float] = time.monotonic) -> None:
        """`timeout` [s]: stale after this; `rate_hz`: the nominal tick (the trajectory's step);
        `max_step` [s]: the most one feedback advances the loop (default `timeout`: a gap up to it is
        normal operation, a longer one a stall); `wall`: the wall clock (monotonic)."""
        max_step = timeout if max_step is None else max_step
        if not (timeout > 0 and rate_hz > 0 and max_step > 0):
            raise ValueError(f"timeout ({timeout}), rate_hz ({rate_hz}) and max_step ({max_step}) must be > 0")
        self.timeout, self.rate_hz, self.max_step = float(timeout), float(rate_hz), float(max_step)
        self.dt = 1.0 / self.rate_hz
        self.max_ticks = max(1, int(round(self.max_step / self.dt)))   # ticks one feedback may advance
        self._wall = wall
        self.last_ros = self.last_wall = _NEVER   # the last arrival, in ROS time and in wall time
        self.stale = False
        self.stale_events = 0
        self._last_tick: Optional[float] = None
        self._debt = 0.0                          # robot time not yet turned into ticks [s]
        self.period = self.dt                     # robot time between the last two ticks [s] (nominal at first)

    # -- freshness -----------------------------------------------------------------------------
    @property
    def has_feedback(self) -> bool:
        return self.last_ros > _NEVER

    def receive(self, stamp: float, now: float) -> Arrival:
        """A feedback message arrived at ROS time `now` with header stamp `stamp` (0: none)."""
        at, note = data_time(stamp, now, STREAM_MAX_AGE, STREAM_MAX_AHEAD)
        self.last_ros, self.last_wall = now, self._wall()
        back, self.stale = self.stale, False
        return Arrival(at, note, back)

    def age(self, now: float) -> float:
        """ROS time since the last arrival."""
        return now - self.last_ros

    def check_stale(self, now: float) -> bool:
        """The watchdog: True when the feedback has just become stale (old in ROS *and* wall time)."""
        if (self.has_feedback and not self.stale and now - self.last_ros > self.timeout
                and self._wall() - self.last_wall > self.timeout):
            self.stale = True
            self.stale_events += 1
            return True
        return False

    # -- the tick's time -------------------------------------------------------------------------
    def elapsed(self, t: float) -> Optional[float]:
        """Robot time since the previous tick, at most max_step; None on the first tick or when the
        clock went back (the loop starts over from `t`)."""
        last, self._last_tick = self._last_tick, t
        if last is None or t < last:
            return None
        step = min(t - last, self.max_step)
        if step > 0.0:
            self.period = step
        return step

    def ticks(self, elapsed: float) -> int:
        """Whole nominal ticks for `elapsed` robot time; the fraction is carried over (at most
        max_ticks: then the debt is dropped)."""
        self._debt += elapsed
        steps = int(self._debt * self.rate_hz + 1e-9)
        self._debt -= steps * self.dt
        if steps > self.max_ticks:
            steps, self._debt = self.max_ticks, 0.0
        return steps

    def ticks_due(self, t: float) -> int:
        """`elapsed` then `ticks` for a tick at robot time `t`: one on the first tick (or after the clock went back)."""
        elapsed = self.elapsed(t)
        if elapsed is None:
            self._debt = 0.0
            return 1
        return self.ticks(elapsed)

    def borrow(self) -> None:
        """A tick taken ahead of its feedback: the next feedback advances one tick less."""
        self._debt -= self.dt

    def restart_ticks(self) -> None:
        """Forget the carried fraction (a new trajectory starts on this tick)."""
        self._debt = 0.0
