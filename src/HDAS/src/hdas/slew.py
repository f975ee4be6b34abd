"""A position set-point's speed limit, per joint, on the clock of the robot (ROS-free).

HDAS sends every motor a set-point each cycle. In MIT mode a set-point that jumps (a raw command
stepping by a radian, a gripper stroke target stepping 0 -> 100 mm) makes the motor pull at up to its
effort limit and the joint runs faster than its velocity limit. `SlewLimiter` moves each set-point
toward its target at most at the joint's velocity limit instead, so a step becomes a ramp.

The limit is a token bucket per joint: each cycle adds velocity * dt of allowed travel (up to
`bucket_s` worth of it) and a move spends it. Over any interval T a set-point therefore moves at most
velocity * (T + bucket_s), however the cycles fall on the clock. A plain per-cycle limit (velocity *
dt) would stall every cycle whose clock did not advance: on the simulated robot the ROS clock moves
in /clock steps as long as a bus cycle, so about every other cycle reads dt = 0 there.
"""
from __future__ import annotations

import numpy as np

BUCKET_S = 0.01   # [s] travel at the limit that may be spent at once (0.03 rad on an arm joint)


class SlewLimiter:
    """Set-points that follow their targets at no more than `rates` (units per second, > 0)."""

    def __init__(self, rates: np.ndarray, bucket_s: float = BUCKET_S):
        self.rates = np.asarray(rates, dtype=float)
        if not (np.all(np.isfinite(self.rates)) and np.all(self.rates > 0) and bucket_s > 0):
            raise ValueError(f"rates must be finite and positive, got {self.rates.tolist()}; bucket_s {bucket_s}")
        self.capacity = self.rates * bucket_s
        self.position: np.ndarray | None = None     # the set-points sent last
        self._budget = self.capacity.copy()
        self._last: float | None = None
        self.limited = 0                           # cycles on which a set-point was held back

    def reset(self, position: np.ndarray | None = None) -> None:
        """Start again from `position` (None: from the first target), with a full bucket."""
        self.position = None if position is None else np.asarray(position, dtype=float).copy()
        self._budget = self.capacity.copy()
        self._last = None

    def step(self, target: np.ndarray, now: float) -> np.ndarray:
        """The set-points for this cycle at time `now` [s]: `target`, or as far toward it as allowed."""
        target = np.asarray(target, dtype=float)
        if self.position is None:
            self.position, self._last = target.copy(), now
            return self.position.copy()
        dt = 0.0 if self._last is None else min(max(now - self._last, 0.0), 1.0)
        self._last = now
        self._budget = np.minimum(self._budget + self.rates * dt, self.capacity)
        move = np.clip(target - self.position, -self._budget, self._budget)
        if np.any(move != target - self.position):
            self.limited += 1
        self._budget -= np.abs(move)
        position = self.position + move
        self.position = position
        return position.copy()

    def follow(self, mask: np.ndarray, position: np.ndarray) -> None:
        """Set-points under `mask` are at `position` now (motors whose set-point means nothing, kp = 0)."""
        if self.position is not None:
            self.position = np.where(mask, position, self.position)
