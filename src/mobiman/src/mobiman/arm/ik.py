"""Arm pose IK in the RelaxedIK family, on pinocchio: a pose stream in, smooth joint targets out.

One `ArmIK` per arm solves for the 6 arm joints that put `{left,right}_gripper_link` at a pose given
relative to `torso_link4`. It puts together the pieces, each in its module:

* `mobiman.arm.model.ArmModel`: the arm's pinocchio model, limits, compiled chain; `Reach`;
* `mobiman.arm.collision.CollisionModel`: the capsules against the body, the other arm and itself;
* `mobiman.arm.solver`: the Levenberg-Marquardt passes (compiled, `mobiman.arm.kernel`) and results;
* `mobiman.arm.seeds`: closed-form, previous and table seeds; `mobiman.arm.cold`: the cold solve;
* `mobiman.arm.stream_state.StreamState`: what a stream keeps between targets.

The objective is RelaxedIK's as weighted least squares (position, orientation; smoothness against the
history; joint-limit, self-collision and singularity barriers). Each streamed solve meets the task
first from the last solution; only where the task cannot be met does the full objective decide how to
approach the target. No joint moves more than `max_step` per solve; a cold solve (no history) starts
from the closed-form postures. A non-finite result never leaves: the previous solution is kept.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
import pinocchio as pin

from mobiman.arm import kernel as K
from mobiman.arm.closed_form import ClosedFormArm
from mobiman.arm.cold import ColdSolver
from mobiman.arm.collision import OTHER_ARM_STILL, CollisionModel
from mobiman.arm.config import IkConfig, IkWeights
from mobiman.arm.model import REACH_SLACK, ArmModel, Reach, finite_pose
from mobiman.arm.seeds import SeedTable
from mobiman.arm.solver import (
    CONTACT_MARGIN,
    REACHED_ORIENTATION,
    REACHED_POSITION,
    STALL_STEPS,
    IkResult,
    Passes,
    PassSettings,
    reached,
    result_at,
    solve_pass,
    stream_step,
)
from mobiman.arm.stream_state import StreamState

__all__ = ["ArmIK", "IkConfig", "IkResult", "IkWeights", "OTHER_ARM_STILL"]

RECOVERY_COOLDOWN = 10          # streamed solves between two searches for another posture
FAR_POSITION, FAR_ORIENTATION = 0.005, 0.05   # [m], [rad] a stream this far off its target is out of reach
REACH_EDGE = 0.01               # [m] this close to the reach every posture has its elbow straight


class ArmIK:
    """RelaxedIK-style IK of one R1 arm (see the module docstring). `seed`: the RNG seed of the random
    seed table (and, + 1, of the reach's check). Raises ValueError for a side other than left/right or
    a URDF whose arm is not a chain of 6 revolute joints."""

    def __init__(self, urdf_xml: str, side: str, config: Optional[IkConfig] = None, seed: int = 0):
        self.config = config or IkConfig()
        self.arm = ArmModel(urdf_xml, side)
        self.collision = CollisionModel(urdf_xml, self.arm)
        self.passes = Passes(self.arm, self.collision, self.config)
        self.table = SeedTable(self.arm, np.random.default_rng(seed))
        closed_form = ClosedFormArm.from_model(self.arm.model, self.arm.ee, self.arm.wrist_in_j5)
        self.cold = ColdSolver(self.arm, self.collision, self.passes, self.table, closed_form, self.config)
        self.wrist_reach = Reach.measure(self.arm, self.table.q, np.random.default_rng(seed + 1))
        self.reach = self.wrist_reach.limit      # [m] the largest shoulder - wrist-centre distance
        self.state = StreamState()
        reach = self.wrist_reach
        self._stream_constants = K.stream_constants(
            self.arm.oMt.homogeneous, reach.shoulder, reach.wrist_offset, reach.limit + REACH_SLACK,
            self.config.max_step, REACHED_POSITION, REACHED_ORIENTATION)
        self._fast_stream = True       # the common tick in one compiled call (off: the general path only)
        # numba loads the compiled passes (or compiles them, a minute, on a first start after a build
        # that skipped scripts/setup) on their first call: here, not on the first target
        mid = self.arm.mid
        solve_pass(self.arm, self.collision, mid, self.fk(mid),
                   PassSettings(self.passes.vector(self.config.weights, CONTACT_MARGIN), 1, True, (0.1, mid)))
        stream_step(self.arm, self.passes.vector(self.config.weights), self._stream_constants, mid, self.fk(mid),
                    (mid, 0.0), self.collision.rho, 1, -1)
        self.collision.min_distance(mid)
        self.collision.hand_blocked(self.fk(mid))

    # -- the arm ---------------------------------------------------------------------------------
    side = property(lambda self: self.arm.side)
    joint_names = property(lambda self: self.arm.joint_names)
    lower = property(lambda self: self.arm.lower)
    upper = property(lambda self: self.arm.upper)
    model = property(lambda self: self.arm.model)
    data = property(lambda self: self.arm.data)

    def fk(self, q: np.ndarray) -> pin.SE3:
        """{side}_gripper_link relative to torso_link4."""
        return self.arm.fk(q)

    def wrist_distance(self, target: pin.SE3) -> float:
        """How far from the shoulder the wrist centre must be for the gripper to be at `target` [m]."""
        return self.wrist_reach.wrist_distance(target)

    def beyond_reach(self, target: pin.SE3) -> bool:
        """No posture meets `target`: its wrist centre is out of the arm's reach (plus a slack)."""
        return self.wrist_reach.beyond(self.wrist_reach.wrist_distance(target))

    # -- collisions ------------------------------------------------------------------------------
    def set_other_arm(self, q_other: np.ndarray) -> None:
        """The other arm's measured joints, for its capsules (`CollisionModel.set_other_arm`)."""
        self.collision.set_other_arm(q_other)

    def min_distance(self, q: np.ndarray) -> float:
        """Smallest capsule distance of the arm at q [m] (negative: penetration)."""
        return self.collision.min_distance(q)

    def hand_blocked(self, target: pin.SE3) -> bool:
        """The hand at `target` is inside the torso, the head or the other arm (every posture collides)."""
        return self.collision.hand_blocked(target)

    # -- solves ----------------------------------------------------------------------------------
    def reset(self, q: np.ndarray) -> None:
        """Start the stream's history at q (the measured joints; clipped to the limits)."""
        self.state.reset(np.clip(np.asarray(q, float), self.lower, self.upper))

    def solve_cold(self, target: pin.SE3, seed: Optional[np.ndarray] = None) -> IkResult:
        """One-shot solve without history (`mobiman.arm.cold`): the first collision-free posture that
        meets the target, else the closest clear approach (never a posture in collision)."""
        return self.cold.solve(target, seed)

    def solve(self, target: pin.SE3) -> IkResult:
        """Streamed solve from the last solution: no joint moves more than max_step. Raises
        RuntimeError before `reset`."""
        st, cfg = self.state, self.config
        if not st.started:
            raise RuntimeError("ArmIK.solve: call reset(q) with the measured joints first")
        prev = st.previous
        if not finite_pose(target):
            return result_at(self.arm, prev, target, 0)
        if self._fast_stream and st.goal is None and st.far is None:
            fast = self._solve_compiled(prev, target)
            if fast is not None:
                return fast
        # the task first (warm start: the nearest solution); the RelaxedIK objective decides only
        # where the task cannot be met: how to approach an unreachable target
        start = prev if st.goal is None else st.goal
        wrist_distance = self.wrist_reach.wrist_distance(target)
        if st.goal is None and (self.wrist_reach.beyond(wrist_distance) or st.still_far(target)):
            # out of reach, or well short of it a moment ago with the target hardly moved: the task
            # alone would fail after all its iterations; only the full objective decides
            q, pe, re, it = prev, math.inf, math.inf, 0
        else:
            q, pe, re, it = self.passes.task(start, target, cfg.max_iterations, stall=STALL_STEPS)
        solved = q                     # pe and re are this q's errors (a recovery below replaces q)
        st.far = None
        if not reached(pe, re):
            q, pe, re, it2 = self.passes.soft(prev, target, cfg.max_iterations, st.history)
            solved = q
            it += it2
            if pe > FAR_POSITION or re > FAR_ORIENTATION:
                st.far = target
            st.goal = None
            # (not at the edge of the reach, where every posture has its elbow straight, nor for a
            # hand inside the body: a search that fails costs tens of solves' time)
            if st.cooldown <= 0 and wrist_distance < self.reach - REACH_EDGE and not self.hand_blocked(target):
                # stuck on a branch that cannot reach (e.g. past a wrist singularity, at a joint limit):
                # if another posture meets the target, travel there at max_step per solve
                cold = self.solve_cold(target, seed=prev)
                it += cold.iterations
                if cold.reached:
                    st.goal, q = cold.q.copy(), cold.q.copy()
                else:
                    st.cooldown = RECOVERY_COOLDOWN
            st.cooldown -= 1
        elif st.goal is not None:
            st.goal = q.copy()
        if st.goal is not None and np.max(np.abs(st.goal - prev)) <= cfg.max_step:
            st.goal = None
        limited = False
        step = q - prev
        if not math.isfinite(q.sum()):          # (a NaN or an infinity makes the sum one)
            q, step = prev.copy(), np.zeros(6)
        big = float(np.abs(step).max())
        if big > cfg.max_step:
            q, limited = prev + step * (cfg.max_step / big), True
        blocked = False
        if cfg.weights.collision > 0 and not self.collision.still_clear(q, 0.0) and \
                not self.collision.clear_at(q) and self.collision.clear_at(prev):
            # the barrier is soft and a recovery travels in a straight line: neither may take the arm
            # into the body. Stop at the last clear posture on the way (from a clear one).
            q, blocked, st.goal = self.collision.last_clear(prev, q), True, None
        st.push(q)
        if q is solved and math.isfinite(pe + re):    # the solver's own errors: no second FK
            return IkResult(q.copy(), pe, re, reached(pe, re), it, False)
        result = result_at(self.arm, q, target, it, limited)
        result.blocked = blocked
        return result

    def _solve_compiled(self, prev: np.ndarray, target: pin.SE3) -> Optional[IkResult]:
        """Most streamed solves in one compiled call (`solver.stream_step`): the target met from the
        last solution within one step, clear of the body. None: the general path decides (out of
        reach, a bad target, a step too big, near the body)."""
        w = self.config.weights
        bound = self.collision.bound if self.collision.bound is not None else (prev, -np.inf)
        step = stream_step(self.arm, self.passes.vector(w), self._stream_constants, prev, target, bound,
                           self.collision.rho, self.config.max_iterations, STALL_STEPS)
        if not step.done:
            return None
        r = step.result
        assert r is not None, "stream_step: a DONE outcome comes with its pass"
        # the kernel's temporal-coherence bound at q; where it cannot rule a contact out, measure
        if w.collision > 0 and not step.clearance > CONTACT_MARGIN and \
                self.collision.measured_within(r.q, CONTACT_MARGIN):
            return None
        self.state.push(r.q)
        return IkResult(r.q.copy(), r.position_error, r.orientation_error, True, r.iterations, False)
