"""What the streamed solve keeps between two targets of one stream (`ArmIK.solve`).

* `history`: the last three solutions, oldest first (the smoothness terms' anchor, and the start of
  the next solve);
* `goal`: a posture the stream travels to at max_step per solve (a recovery onto another branch);
* `cooldown`: streamed solves left before the next search for such a posture may run;
* `far`: the last target the stream ended well short of (a target near it is not tried by the task
  alone again).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np
import pinocchio as pin

FAR_TARGET_STEP = 0.01          # [m] and [rad]: a target that moved less than this is still out of reach


@dataclass
class StreamState:
    history: List[np.ndarray] = field(default_factory=list)
    goal: Optional[np.ndarray] = None
    cooldown: int = 0
    far: Optional[pin.SE3] = None

    @property
    def started(self) -> bool:
        return bool(self.history)

    @property
    def previous(self) -> np.ndarray:
        """The last solution."""
        return self.history[-1]

    def reset(self, q: np.ndarray) -> None:
        """A new stream from posture q (already within the limits): history q, q, q; nothing pending."""
        self.history = [q.copy(), q.copy(), q.copy()]
        self.goal, self.cooldown, self.far = None, 0, None

    def push(self, q: np.ndarray) -> None:
        """q is the stream's new solution."""
        self.history = self.history[-2:] + [q.copy()]

    def still_far(self, target: pin.SE3) -> bool:
        """The last solve ended well short of its target, and `target` is within FAR_TARGET_STEP of it."""
        far = self.far
        if far is None:
            return False
        d = target.translation - far.translation
        turn = pin.log3(far.rotation.T @ target.rotation)
        return math.sqrt(d @ d) < FAR_TARGET_STEP and math.sqrt(turn @ turn) < FAR_TARGET_STEP
