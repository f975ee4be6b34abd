"""The cold solve: one target without a stream's history (`ArmIK.solve_cold`).

It answers with the first collision-free posture that meets the target, else the closest clear
approach; never with a posture in collision. The arm's closed-form postures come first: they are
every posture that meets the target (up to 8, within a fraction of a millimetre: the wrist axes miss
each other by 0.5 mm), polished by a few task-only steps, nearest the seed (else the middle of the
ranges) first. When each of them collides, no posture meets the target clear of the body. Only when
none meets it at all (out of reach, or the model not of that kind) do seeds from the table of
postures near the target follow. Each seed is solved for the task alone; the capsules are measured
on its answer only (a posture in between is never commanded).
"""
from __future__ import annotations

from dataclasses import replace
from typing import List, Optional

import numpy as np
import pinocchio as pin

from mobiman.arm.closed_form import ClosedFormArm
from mobiman.arm.collision import CollisionModel
from mobiman.arm.config import IkConfig
from mobiman.arm.model import ArmModel, finite_pose
from mobiman.arm.seeds import SeedTable, closed_form_seeds, previous_seed, wrist_flip
from mobiman.arm.solver import STALL_STEPS, IkResult, Passes, reached, result_at

COLD_SEEDS = 8                  # table seeds per cold solve (and twice that many tries at most)
COLLIDING_ANSWERS = 4           # table seeds that meet the target only in collision: it asks for one
CLOSED_FORM_POLISH = 10         # iterations that take a closed-form posture onto the exact pose
TIGHTEN = 20                    # iterations that tighten a table seed's answer
APPROACH_ITERATIONS = 3         # steps with the collision rows from the last clear posture toward a blocked target


class ColdSolver:
    """Cold solves of one arm (see the module docstring)."""

    def __init__(self, arm: ArmModel, collision: CollisionModel, passes: Passes, table: SeedTable,
                 closed_form: Optional[ClosedFormArm], config: IkConfig):
        self.arm, self.collision, self.passes, self.table = arm, collision, passes, table
        self.closed_form, self.config = closed_form, config
        self.task_weights = replace(config.weights, collision=0.0)    # seeds' passes: the capsules on answers only

    def solve(self, target: pin.SE3, seed: Optional[np.ndarray] = None) -> IkResult:
        """The answer for `target` (torso_link4), from the closed form nearest `seed` first."""
        arm, clear_at = self.arm, self.collision.clear_at
        if not finite_pose(target):
            return result_at(arm, previous_seed(arm, seed) if seed is not None else arm.mid, target, 0)
        seeds = [] if seed is None else [previous_seed(arm, seed)]
        postures = closed_form_seeds(self.closed_form, arm, target, seeds[0] if seeds else None)
        if self.collision.hand_blocked(target):
            # the hand itself would be inside the body: every posture near the target collides
            return self._clear_approach(target, seeds, postures, 0)
        total, in_collision = 0, []
        for c in postures:
            r = self.passes.task(c, target, CLOSED_FORM_POLISH, weights=self.task_weights)
            total += r.iterations
            if r.reached:
                if clear_at(r.q):
                    return result_at(arm, r.q, target, total)
                in_collision.append(r.q)
        if in_collision:
            return self._clear_approach(target, seeds, in_collision, total)
        # the closed form meets nothing: seeds from the table
        seeds += list(self.table.near(target, COLD_SEEDS))
        best, n = None, 0
        while n < len(seeds) and n < 2 * COLD_SEEDS and len(in_collision) < COLLIDING_ANSWERS:
            s = seeds[n]
            n += 1
            r = self.passes.task(s, target, self.config.max_iterations_cold, weights=self.task_weights)
            total += r.iterations
            q = r.q
            score = r.position_error + 0.1 * r.orientation_error
            if best is None or score < best[0]:
                best = (score, q)
                flip = wrist_flip(q, arm.lower, arm.upper)
                if flip is not None:
                    seeds.insert(n, flip)
            if r.reached:
                tight = self.passes.task(q, target, TIGHTEN, weights=self.task_weights)
                total += tight.iterations
                q = tight.q if tight.position_error <= r.position_error else q
                if clear_at(q):
                    return result_at(arm, q, target, total)
                in_collision.append(q)
        assert best is not None, "the table gives COLD_SEEDS seeds: one was tried at least"
        if not in_collision and clear_at(best[1]):
            return result_at(arm, best[1], target, total)      # out of reach: the best approach
        return self._clear_approach(target, seeds, in_collision or [best[1]], total)

    def _clear_approach(self, target: pin.SE3, seeds: List[np.ndarray], goals: List[np.ndarray],
                        iterations: int) -> IkResult:
        """The closest clear approach to a target met only in collision (`goals`: postures at or near
        it, in collision, e.g. the closed-form ones).

        From a clear posture near the target, the last clear posture on the way to the nearest goal
        (bisection), then a few steps of the task with the collision rows toward the target where
        they stay clear."""
        anchor = self._clear_anchor(target, seeds)
        if not goals:         # nothing near the target to aim at: where the task alone ends
            r = self.passes.task(anchor, target, self.config.max_iterations_cold, weights=self.task_weights,
                                 stall=STALL_STEPS)
            iterations += r.iterations
            goals = [r.q]
        goal = min(goals, key=lambda g: float(np.abs(g - anchor).sum()))
        best = self.collision.last_clear(anchor, goal)
        r = self.passes.approach(best.copy(), target, APPROACH_ITERATIONS)
        result = result_at(self.arm, best, target, iterations + r.iterations)
        if self.collision.clear_at(r.q) and \
                r.position_error + 0.1 * r.orientation_error < result.position_error + 0.1 * result.orientation_error:
            return IkResult(r.q.copy(), r.position_error, r.orientation_error,
                            reached(r.position_error, r.orientation_error), result.iterations)
        return result

    def _clear_anchor(self, target: pin.SE3, seeds: List[np.ndarray]) -> np.ndarray:
        """A clear posture near the target: `seeds` first, then the table's nearest postures, then the
        middle of the ranges (the first clear one; the last resort even if it is not)."""
        for q in [*seeds, *self.table.near(target, 8 * COLD_SEEDS)]:
            if self.collision.clear_at(q):
                return q
        return self.arm.mid.copy()
