"""The base's motion as the upper body's controllers see it, free of ROS.

What the wheels do reaches every joint above them: the base's acceleration and its turn rate are
terms of the upper body's inverse dynamics (`mobiman.control.upper_body`). `BaseMotionInput` keeps
the latest of two streams and says what holds at a given time:

* the **commanded acceleration** of the base's twist, from chassis control
  (`/motion_control/chassis_acceleration`): the feed-forward, known before the base moves (the
  wheels follow it within a few tens of milliseconds), exact and free of noise, where the chassis
  IMU measures it late and through the robot's vibrations (docs/posture.md compares them);
* the **measured twist** of the base (`/motion_control/chassis_speed`, the wheels' odometry): the
  turn rate's centrifugal and Coriolis terms.

A stream silent for longer than `timeout` counts as zero (no feed-forward from a stale command). The
commanded acceleration counts from its own stamp (the chassis tick that commanded it), not from its
arrival: a controller starved of CPU reads its queue late, and an acceleration the base finished
0.2 s ago, taken as new, pushed a straight torso 0.1 rad (docs/posture.md, "A controller's lapse").
Values beyond what the base can do are refused (InputError), so a bad message never becomes a torque.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from r1_common.validation import STREAM_MAX_AGE, STREAM_MAX_AHEAD, InputError, data_time

Triple = Tuple[float, float, float]

# Twice what the R1's chassis commands at most: a value beyond it is a bad message, not a motion (a step
# of the commanded twist while a module turns, a program's garbage), and brings no feed-forward.
MAX_LINEAR_ACCELERATION = 5.0     # [m/s²] (the chassis' limit is 2.5)
MAX_ANGULAR_ACCELERATION = 5.0    # [rad/s²] (1.0)
MAX_LINEAR_SPEED = 3.0            # [m/s] (1.5)
MAX_ANGULAR_SPEED = 6.0           # [rad/s] (3.0)


@dataclass(frozen=True)
class BaseMotion:
    """The base's twist (vx, vy [m/s], wz [rad/s]) and its rate of change (ax, ay [m/s²], alpha [rad/s²]),
    both in the base's own axes (the derivative of the body-frame twist, as the chassis controller ramps it)."""

    twist: Triple = (0.0, 0.0, 0.0)
    acceleration: Triple = (0.0, 0.0, 0.0)

    @property
    def still(self) -> bool:
        return not any(self.twist) and not any(self.acceleration)


STILL = BaseMotion()


def _checked(values: Sequence[float], linear: float, angular: float, what: str) -> Triple:
    """Three finite values within (±linear, ±linear, ±angular); InputError otherwise."""
    v = tuple(float(x) for x in values)
    if len(v) != 3 or not all(math.isfinite(x) for x in v):
        raise InputError(what, list(values), "needs three finite values (x, y, yaw)")
    if abs(v[0]) > linear or abs(v[1]) > linear or abs(v[2]) > angular:
        raise InputError(what, list(values), f"is beyond what the base can do (±{linear:g}, ±{angular:g})")
    return v[0], v[1], v[2]


class BaseMotionInput:
    """The latest commanded acceleration and measured twist of the base, each with its arrival time.
    Thread-unsafe: the caller serialises."""

    def __init__(self, timeout: float = 0.1):
        """`timeout` [s]: a stream older than this (the caller's clock) counts as zero."""
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0, not {timeout}")
        self.timeout = float(timeout)
        self._acceleration: Triple = (0.0, 0.0, 0.0)
        self._acceleration_at = -math.inf
        self._twist: Triple = (0.0, 0.0, 0.0)
        self._twist_at = -math.inf

    def set_acceleration(self, acceleration: Sequence[float], now: float, stamp: float = 0.0) -> Optional[str]:
        """The commanded acceleration (ax, ay, alpha), received at time `now`, commanded at `stamp` (its
        message's header; 0: unstamped, taken as `now`). It counts from the earlier of the two; a stamp from
        another clock (r1_common.validation.data_time) is taken as `now`, and the note saying so returned.
        InputError for a bad value: dropped, and the stream counts as zero until a good one (no feed-forward
        rather than a stale one)."""
        try:
            self._acceleration = _checked(acceleration, MAX_LINEAR_ACCELERATION, MAX_ANGULAR_ACCELERATION,
                                          "base acceleration")
        except InputError:
            self._acceleration_at = -math.inf
            raise
        at, note = data_time(float(stamp), float(now), STREAM_MAX_AGE, STREAM_MAX_AHEAD)
        self._acceleration_at = min(at, float(now))
        return note

    def set_twist(self, twist: Sequence[float], now: float) -> None:
        """The measured twist (vx, vy, wz) at time `now`. InputError for a bad one: dropped, and the stream
        counts as zero until a good one."""
        try:
            self._twist = _checked(twist, MAX_LINEAR_SPEED, MAX_ANGULAR_SPEED, "base twist")
        except InputError:
            self._twist_at = -math.inf
            raise
        self._twist_at = float(now)

    def at(self, now: float) -> BaseMotion:
        """What holds at time `now`: each stream's latest value, or zero when it is older than the timeout
        (or from the future: a clock that went back)."""
        fresh = lambda at: 0.0 <= now - at <= self.timeout    # noqa: E731
        return BaseMotion(self._twist if fresh(self._twist_at) else (0.0, 0.0, 0.0),
                          self._acceleration if fresh(self._acceleration_at) else (0.0, 0.0, 0.0))
