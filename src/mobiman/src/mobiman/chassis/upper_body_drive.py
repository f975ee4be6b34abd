"""Which upper-body groups a controller drives now, free of ROS.

The base may accelerate only as far as what holds each upper-body group carries
(`mobiman.chassis.posture_limits`). A controller that commands a group feeds the base's acceleration
forward; the driver (HDAS) holding a group on its own does not. Between the two lies a controller that
is late: starved of CPU, it is silent, and HDAS repeats its last command, whose feed-forward follows the
base no more (docs/posture.md, "A controller's lapse"). `DriveWatch` tells the three apart from when
each group's command stream last arrived:

* `DRIVEN`: a command within `lapse` [s];
* `LATE`: silent for more than `lapse`, at most `timeout` (the driver's command timeout);
* `HELD`: silent for more than `timeout`, or never commanded.

Only `DRIVEN` feeds the base forward: chassis control takes the driver's hold for the other two.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

__all__ = ["DRIVEN", "HELD", "LATE", "DriveChange", "DriveWatch"]

DRIVEN, LATE, HELD = "driven", "late", "held"


@dataclass(frozen=True)
class DriveChange:
    """A group's state changed from `before` (None: the first) to `state`, its stream silent `silent` [s]."""

    group: str
    state: str
    before: Optional[str]
    silent: float

    @property
    def fed_changed(self) -> bool:
        """Whether the group's being fed forward changed (or is known for the first time)."""
        return self.before is None or (self.state == DRIVEN) != (self.before == DRIVEN)


class DriveWatch:
    """The drive state of each of `groups` (see the module). Thread-unsafe: the caller serialises."""

    def __init__(self, groups: Sequence[str], lapse: float, timeout: float):
        """`lapse` [s] > 0: silent this long, a group's controller is late; `timeout` [s] >= lapse: silent this
        long, the driver holds it. ValueError otherwise."""
        if not 0.0 < lapse <= timeout:
            raise ValueError(f"need 0 < lapse ({lapse} s) <= timeout ({timeout} s)")
        self.lapse, self.timeout = float(lapse), float(timeout)
        self._commanded: Dict[str, float] = {g: -math.inf for g in groups}
        self.states: Dict[str, str] = {}                 # once known
        self.lapses: Dict[str, int] = {g: 0 for g in groups}   # times a driven group's controller went late

    def commanded(self, group: str, now: float) -> None:
        """A command for `group` arrived at time `now` [s] (KeyError for a group not watched)."""
        if group not in self._commanded:
            raise KeyError(group)
        self._commanded[group] = float(now)

    def update(self, now: float) -> List[DriveChange]:
        """Each group's state at time `now` [s]; the changes since the last call (a lapse counted)."""
        changes = []
        for group, at in self._commanded.items():
            silent = now - at
            state = HELD if silent > self.timeout else (LATE if silent > self.lapse else DRIVEN)
            before = self.states.get(group)
            if state == before:
                continue
            self.states[group] = state
            if state == LATE and before == DRIVEN:
                self.lapses[group] += 1
            changes.append(DriveChange(group, state, before, silent))
        return changes

    def in_state(self, state: str) -> List[str]:
        """The groups in `state` now (as of the last update)."""
        return [g for g, s in self.states.items() if s == state]
