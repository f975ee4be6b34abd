"""The IK solver's passes as functions with named results: one Levenberg-Marquardt pass
(`solve_pass`), the streamed tick in one call (`stream_step`), and the rule that takes the collision
barrier in (`Passes`).

The objective is RelaxedIK's written as weighted least squares (`mobiman.arm.kernel`): position and
orientation (the task); velocity, acceleration and jerk against the stream's last solutions folded
into one block (`smoothness_anchor`); barriers on the joint limits, the singularity and self-collision.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np
import pinocchio as pin

from mobiman.arm import kernel as K
from mobiman.arm.collision import CollisionModel
from mobiman.arm.config import IkConfig, IkWeights
from mobiman.arm.model import ArmModel

LAMBDA0 = 1e-3                  # the damping a pass starts with
REACHED_POSITION = 1e-3         # [m]   the bar for "reached"
REACHED_ORIENTATION = 1e-2      # [rad]
CONTACT_MARGIN = 0.002          # [m] clearance kept by task-only passes
STALL_RATIO, STALL_STEPS = 0.7, 4   # a streamed task pass crawling this slowly gives up
SOFT_PLATEAU = 1e-5             # the full objective stops when a step gains less than this share of its cost
SR_SIGMA, SR_DAMPING = 0.5, 0.05    # singularity-robust damping below this singular value of the weighted task Jacobian

_NO_CAPSULES, _NO_FIXED, _NO_PAIRS = np.empty((0, 8)), np.empty((0, 7)), np.empty((0, 2), np.int64)


def reached(position_error: float, orientation_error: float) -> bool:
    """Within REACHED_POSITION [m] and REACHED_ORIENTATION [rad]."""
    return position_error < REACHED_POSITION and orientation_error < REACHED_ORIENTATION


class PassResult(NamedTuple):
    """Where a pass ended: q [rad], its position [m] and orientation [rad] errors, the iterations."""

    q: np.ndarray
    position_error: float
    orientation_error: float
    iterations: int

    @property
    def reached(self) -> bool:
        return reached(self.position_error, self.orientation_error)

    @classmethod
    def from_kernel(cls, out: np.ndarray) -> "PassResult":
        return cls(out[K.OUT_Q:K.OUT_Q + 6].copy(), float(out[K.OUT_POSITION_ERROR]),
                   float(out[K.OUT_ORIENTATION_ERROR]), int(out[K.OUT_ITERATIONS]))


class StreamStepResult(NamedTuple):
    """`stream_step`'s answer: the pass (None when it stopped before one), its outcome (kernel.DONE
    or the reason the caller decides), the clearance bound at q [m] and the target's wrist-centre
    distance from the shoulder [m] (NaN where not reached)."""

    result: Optional[PassResult]
    outcome: int
    clearance: float
    wrist_distance: float

    @property
    def done(self) -> bool:
        return self.outcome == K.DONE


@dataclass
class IkResult:
    """A solve's answer."""

    q: np.ndarray
    position_error: float        # [m]
    orientation_error: float     # [rad]
    reached: bool                # within 1 mm and 0.01 rad
    iterations: int
    step_limited: bool = False   # the solution moved further than max_step: this is a step toward it
    blocked: bool = False        # (streamed) the solution is in collision: this is the last clear posture toward it


def result_at(arm: ArmModel, q: np.ndarray, target: pin.SE3, iterations: int, limited: bool = False) -> IkResult:
    """The IkResult of posture q for `target`, its errors measured by forward kinematics."""
    pe, re = arm.errors(q, target)
    return IkResult(np.array(q, float), pe, re, reached(pe, re), iterations, limited)


def smoothness_anchor(history: List[np.ndarray], weights: IkWeights) -> Optional[Tuple[float, np.ndarray]]:
    """RelaxedIK's velocity, acceleration and jerk terms against the history (oldest first), as one
    block scale·(q − centre): (scale, centre), None when no term applies.

    Each term is w_i·(q − c_i) with c_i fixed during a solve (h1; 2h1 − h2; 3h1 − 3h2 + h3 for the
    last solutions h1, h2, h3). Their squared sum is W·|q − c̄|² plus a constant, with W = Σ w_i² and
    c̄ = Σ w_i² c_i / W: the same gradient and Gauss-Newton matrix from 6 rows instead of 18."""
    h = history
    terms = [(w, c) for w, c, n in ((weights.velocity, lambda: h[-1], 1),
                                    (weights.acceleration, lambda: 2 * h[-1] - h[-2], 2),
                                    (weights.jerk, lambda: 3 * h[-1] - 3 * h[-2] + h[-3], 3))
             if w > 0 and len(h) >= n]
    total = sum(w * w for w, _ in terms)
    if total <= 0:
        return None
    centre = sum(w * w * c() for w, c in terms) / total
    return math.sqrt(total), centre


class PassSettings(NamedTuple):
    """What one pass is asked: the kernel's settings vector (`Passes.vector`), the iteration budget,
    the full objective or the task alone (`soft`), the smoothness block (`smoothness_anchor`) and
    the stall rule (give up after this many crawling steps; None: never)."""

    vector: np.ndarray
    iterations: int
    soft: bool = False
    smooth: Optional[Tuple[float, np.ndarray]] = None
    stall: Optional[int] = None


def solve_pass(arm: ArmModel, collision: Optional[CollisionModel], q0: np.ndarray, target: pin.SE3,
               settings: PassSettings) -> PassResult:
    """One Levenberg-Marquardt pass from q0 toward `target` (torso_link4), compiled
    (`mobiman.arm.kernel.lm_pass`); the collision barrier's rows with `collision` and a collision
    weight in `settings.vector`. A singular system (LinAlgError, never seen on the R1) ends the pass
    where it started: q0, its errors, 0 iterations."""
    q0 = np.ascontiguousarray(q0, dtype=float)
    scale, centre = settings.smooth if settings.smooth is not None else (0.0, q0)
    if collision is None:
        capsules, fixed, pairs = _NO_CAPSULES, _NO_FIXED, _NO_PAIRS
    else:
        capsules, fixed, pairs = collision.capsules, collision.fixed, collision.pairs
    try:
        out = K.lm_pass(q0, (arm.oMt * target).homogeneous, arm.chain.chain, arm.chain.bounds, settings.vector,
                        settings.soft, np.ascontiguousarray(centre, dtype=float), float(scale), settings.iterations,
                        -1 if settings.stall is None else settings.stall, capsules, fixed, pairs)
    except (np.linalg.LinAlgError, ZeroDivisionError):
        pe, re = arm.errors(q0, target)
        return PassResult(q0.copy(), pe, re, 0)
    return PassResult.from_kernel(out)


def stream_step(arm: ArmModel, vector: np.ndarray, constants: np.ndarray, prev: np.ndarray, target: pin.SE3,
                bound: Tuple[np.ndarray, float], rho: np.ndarray, iterations: int, stall: int) -> StreamStepResult:
    """The common streamed tick in one compiled call (`mobiman.arm.kernel.stream_pass`): the task
    pass from `prev` (vector: without a collision weight), judged against the stream's `constants`
    (`kernel.stream_constants`: reach, max_step, the reached bar). bound: (q_ref, clearance) of the
    temporal-coherence bound, with the lever arms rho."""
    q_ref, lower = bound
    try:
        out = K.stream_pass(prev, target.homogeneous, arm.chain.chain, arm.chain.bounds, vector, constants, q_ref,
                            rho, lower, iterations, stall)
    except (np.linalg.LinAlgError, ZeroDivisionError):
        return StreamStepResult(None, K.NOT_REACHED, math.nan, math.nan)
    outcome = int(out[K.OUT_OUTCOME])
    result = PassResult.from_kernel(out) if outcome in (K.DONE, K.NOT_REACHED, K.BIG_STEP) else None
    return StreamStepResult(result, outcome, float(out[K.OUT_CLEARANCE]), float(out[K.OUT_WRIST_DISTANCE]))


class Passes:
    """The solver's passes for one arm and its config, with the rule for the collision barrier: a
    pass runs without it, and an answer within the margin (CONTACT_MARGIN for the task, the config's
    `collision_margin` for the full objective; the temporal-coherence bound first, then the exact
    clearance) is solved again from the same start with the collision rows."""

    def __init__(self, arm: ArmModel, collision: CollisionModel, config: IkConfig):
        self.arm, self.collision, self.config = arm, collision, config
        self._vectors: Dict[tuple, np.ndarray] = {}

    def vector(self, w: IkWeights, collision_margin: Optional[float] = None) -> np.ndarray:
        """The kernel's settings vector for these weights; with the collision rows (w.collision
        within collision_margin [m]) when a margin is given. Cached."""
        key = (w.position, w.orientation, w.joint_limit, w.singularity,
               None if collision_margin is None else (w.collision, collision_margin))
        vector = self._vectors.get(key)
        if vector is None:
            cfg = self.config
            vector = self._vectors[key] = K.settings_vector(
                w.position, w.orientation, LAMBDA0, cfg.position_tolerance, cfg.orientation_tolerance, STALL_RATIO,
                SR_SIGMA, SR_DAMPING, w.joint_limit, cfg.joint_limit_margin, w.singularity, cfg.singularity_threshold,
                SOFT_PLATEAU, 0.0 if collision_margin is None else w.collision,
                cfg.collision_margin if collision_margin is None else collision_margin)
        return vector

    def task(self, q: np.ndarray, target: pin.SE3, iterations: int, weights: Optional[IkWeights] = None,
             stall: Optional[int] = None) -> PassResult:
        """The task alone from q (the config's weights unless `weights`); answers kept CONTACT_MARGIN clear."""
        return self._run(q, target, iterations, False, weights or self.config.weights, stall, None)

    def soft(self, q: np.ndarray, target: pin.SE3, iterations: int, history: List[np.ndarray]) -> PassResult:
        """The full objective from q against the stream's `history` (oldest first)."""
        w = self.config.weights
        return self._run(q, target, iterations, True, w, None, smoothness_anchor(history, w))

    def approach(self, q: np.ndarray, target: pin.SE3, iterations: int) -> PassResult:
        """The task with the collision rows (CONTACT_MARGIN) from the start: steps toward a target
        from a clear posture near the body."""
        w = self.config.weights
        return solve_pass(self.arm, self.collision, q, target,
                          PassSettings(self.vector(w, CONTACT_MARGIN), iterations))

    def _run(self, q: np.ndarray, target: pin.SE3, iterations: int, soft: bool, w: IkWeights, stall: Optional[int],
             smooth: Optional[Tuple[float, np.ndarray]]) -> PassResult:
        first = solve_pass(self.arm, None, q, target, PassSettings(self.vector(w), iterations, soft, smooth, stall))
        margin = self.config.collision_margin if soft else CONTACT_MARGIN
        if w.collision > 0 and self.collision.within(first.q, margin):
            return solve_pass(self.arm, self.collision, q, target,
                              PassSettings(self.vector(w, margin), iterations, soft, smooth, stall))
        return first
