"""When a controller's set-point may start again from where the joints are, free of ROS.

A joint pushed away from its plan by gravity, inertia or contact is commanded back (within its torque
limit): its set-point never follows it. Re-planning from the measured position is for joints whose
motors were not holding them: reported off by the driver (disabled, faulted, silent: its
`feedback_status`), or unknown while the feedback stream was stale. `SetpointGuard` keeps that rule
for one group, the same for the joint tracker's groups and torso speed control:

* `motors(powered)`: the driver's word, per joint. While a joint is unpowered the set-point follows
  the measured position on every tick (nothing holds it: the torso lies on its brakes, an arm hangs);
  when every joint is powered again, once more, so that the motors start from where they are;
* `feedback_back()`: the feedback was stale and is back: the next tick re-plans if a joint is then
  further than `resync_error` from the plan (the motors may have been off meanwhile; if they held,
  the joints are where the plan is and nothing changes);
* `gate(...)`: how many ticks a moving plan may advance: none while a joint lags it by more than
  `max_following_error` (beyond the lag late feedback explains) in its direction of motion *and*
  does not keep pace with it (stale commands, a stalled driver: the plan's clock waits, so the joint
  is not yanked to a plan that ran on without it). A joint held back by a steady load moves at the
  plan's pace, offset: the plan goes on.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["CATCH_UP", "KEEP_PACE", "USUAL_AGE", "SetpointGuard", "powered_joints"]

KEEP_PACE = 0.5     # a joint moving at less than this share of its plan's speed does not keep pace
# ... and one faster than its plan catches up: the plan waits for it then too, so that it closes the lag
# toward a still set-point instead of outrunning a plan at the joint's speed limit (an elbow caught up at
# 1.09x its limit on a starved machine when the plan went on)
CATCH_UP = 1.0
# [s] feedback this old is the loop as the gate's threshold was measured with (max_following_error): only
# an age beyond it adds to the lag allowed (a starved machine's); the usual lag, caught up, overran the
# elbow's speed limit by 9 % when it was allowed too
USUAL_AGE = 0.02


class SetpointGuard:
    """The re-plan rule and the plan's gate of one group of `n` joints. Thread-unsafe: the caller serialises."""

    def __init__(self, n: int, resync_error: float, max_following_error: float):
        """`resync_error` [rad]: after stale feedback, a joint this far from the plan re-plans it;
        `max_following_error` [rad]: the gate's lag (0: no gate)."""
        if n <= 0 or resync_error < 0.0 or max_following_error < 0.0:
            raise ValueError(f"n {n}, resync_error {resync_error}, max_following_error {max_following_error}")
        self.n, self.resync_error, self.max_following_error = n, float(resync_error), float(max_following_error)
        self.powered = np.ones(n, dtype=bool)     # the driver's last word (none yet: powered)
        self._was_off = False                     # some joint was unpowered since the last re-plan
        self._gap = False                         # the feedback was stale and is back

    @property
    def off(self) -> bool:
        """Some joint is reported unpowered now."""
        return not bool(self.powered.all())

    def motors(self, powered: Sequence[bool]) -> None:
        """The driver's report: which joints' motors hold them (ValueError for another count)."""
        mask = np.asarray(powered, dtype=bool)
        if mask.shape != (self.n,):
            raise ValueError(f"powered has {mask.shape} entries, the group {self.n}")
        self.powered = mask
        if not mask.all():
            self._was_off = True

    def feedback_back(self) -> None:
        """The feedback stream was stale and is back."""
        self._gap = True

    def resync(self, measured: np.ndarray, planned: np.ndarray) -> Optional[str]:
        """Why the set-point must start again from `measured` on this tick, or None (the usual case: hold
        the plan, whatever pushed the joints)."""
        if self.off:
            self._gap = False
            return "motors off (" + ", ".join(str(i) for i in np.flatnonzero(~self.powered)) + ")"
        if self._was_off:
            self._was_off = self._gap = False
            return "motors on again"
        if self._gap:
            self._gap = False
            far = float(np.max(np.abs(measured - planned)))
            if far > self.resync_error:
                return f"feedback back after a gap, {far:.3f} rad from the plan"
        return None

    def gate(self, steps: int, measured: np.ndarray, measured_velocity: Optional[np.ndarray], planned: np.ndarray,
             planned_velocity: np.ndarray, age: float = 0.0) -> int:
        """The ticks the plan may take now (`steps`, or 0 while a joint lags the moving plan by more than
        max_following_error, plus what feedback older than USUAL_AGE explains (|v_plan|·(`age` [s] −
        USUAL_AGE): the set-point the joint follows is that much older), in its direction of motion, and
        does not keep pace: moves at less than KEEP_PACE of its speed, or catches up faster than CATCH_UP
        times it; without a measured velocity, the lag alone decides)."""
        if not steps or self.max_following_error <= 0.0:
            return steps
        direction = np.sign(planned_velocity)
        late = age - USUAL_AGE if age == age and age > USUAL_AGE else 0.0
        allowed = self.max_following_error + np.abs(planned_velocity) * late
        behind = (planned - measured) * direction > allowed
        if not behind.any():
            return steps
        if measured_velocity is not None:
            pace = measured_velocity * direction
            speed = np.abs(planned_velocity)
            behind &= (pace < KEEP_PACE * speed) | (pace > CATCH_UP * speed)
        return 0 if behind.any() else steps


def powered_joints(codes: Sequence[Tuple[str, int]], joints: Sequence[str], unpowered_mask: int
                   ) -> Optional[List[bool]]:
    """Which of `joints` a driver's status report says are held: (joint, error bits) pairs, a joint whose
    bits meet `unpowered_mask` is not (the board's table: hdas.errors.ErrorTable.unpowered_mask). A joint
    the report does not name is taken as held; None when it names none of them (not this group's)."""
    by_name = {name: int(code) for name, code in codes}
    if not any(j in by_name for j in joints):
        return None
    return [not (by_name.get(j, 0) & unpowered_mask) for j in joints]
