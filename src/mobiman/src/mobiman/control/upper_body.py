"""The upper body's dynamics on the moving base, free of ROS: what the joints must give.

The torque a joint needs to hold its plan is the inverse dynamics (RNEA) of the whole robot at the
measured posture of every group: gravity, the group's own planned acceleration (M·q̈), and, with a
model on a planar base (`RobotModel(planar_base=True)`), what the base's motion asks of it: the
fictitious forces of its acceleration, and of its turn rate (centrifugal and Coriolis). Riding the
base's 2.5 m/s² with the torso straight up takes 64 N·m at torso_joint1 (docs/posture.md).

`Posture` keeps the measured configuration one group at a time (checked once, on arrival),
`feedforward_at` is one RNEA at such a configuration, and `UpperBody` holds both with the base's
motion for the controllers that share them (thread-safe).
"""
from __future__ import annotations

import math
import threading
from typing import Optional, Sequence

import numpy as np

from mobiman.control.base_motion import STILL, BaseMotion
from mobiman.model.robot_model import RobotModel
from r1_common.validation import FEEDBACK_MARGIN, plausible_positions, show

__all__ = ["Posture", "UpperBody", "feedforward_at", "group_vector"]


def group_vector(values: Sequence[float] | np.ndarray, n: int, what: str, error: type[Exception] = ValueError
                 ) -> np.ndarray:
    """n finite values; an extra (n+1)-th entry, the gripper on HDAS arm topics, is dropped. `error`
    (ValueError by default) for another length or a non-finite entry."""
    v = values if type(values) is np.ndarray and values.dtype == np.float64 and values.ndim == 1 \
        else np.asarray(values, dtype=float).ravel()          # (this runs several times per control tick)
    if v.shape[0] not in (n, n + 1):
        raise error(f"{what} has {v.shape[0]} entries, expected {n} (or {n + 1} with a gripper)")
    v = v[:n]
    if not all(map(math.isfinite, v.tolist())):   # entry by entry: a sum of finite 1e308s overflows into inf
        raise error(f"{what} has non-finite entries: {show(v)}")
    return v


def feedforward_at(model: RobotModel, q: np.ndarray, group: str,
                   acceleration: Sequence[float] | np.ndarray | None = None, inertial_gain: float = 0.0,
                   base: BaseMotion = STILL) -> np.ndarray:
    """The torques [N·m] `group` needs at the pinocchio configuration q (a `Posture`'s): gravity, plus
    inertial_gain · M·q̈ of the group's planned `acceleration` (the other groups' plans are not known:
    zero), plus, on a planar-base model, what the base's motion `base` asks (its twist and its rate of
    change, in its own axes). One RNEA; the joints' own velocities (Coriolis) are left out.

    ValueError for an acceleration of the wrong length or not finite, or a moving base on a model
    without planar_base."""
    group_acc = None if acceleration is None or inertial_gain == 0.0 else \
        inertial_gain * group_vector(acceleration, len(model.group(group).joints), f"{group} acceleration")
    if base.still or not model.planar_base:
        if not base.still:
            raise ValueError("the base's motion needs a model with planar_base")
        if group_acc is None:
            return model.gravity(q, group)
        return model.inverse_dynamics(q, model.zero_velocity, model.velocity_vector({group: group_acc}), group)
    v = model.velocity_vector({}, base=base.twist)
    a = model.velocity_vector({} if group_acc is None else {group: group_acc}, base=base.acceleration)
    return model.inverse_dynamics(q, v, a, group)


class Posture:
    """The upper body's configuration for the dynamics, one group at a time as its feedback arrives.

    A group's values are checked once, when they arrive (`set`), and written into one pinocchio
    configuration: a control tick then costs one RNEA, not a check and a rebuild of every group
    (that was most of a 16-joint tick). Thread-unsafe: the caller serialises, as it does for the
    model's data."""

    def __init__(self, model: RobotModel):
        self.model = model
        self.q = model.configuration()
        self._ranges: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def set(self, group: str, values: Sequence[float] | np.ndarray) -> None:
        """A group's measured joints (n, or n + 1 with a gripper entry); ValueError if not finite or
        beyond the joints' ranges by more than FEEDBACK_MARGIN (r1_common.validation.InputError)."""
        q = group_vector(values, len(self.model.group(group).joints), f"{group} feedback")
        if group not in self._ranges:
            lim = self.model.limits(group)
            self._ranges[group] = (lim.lower, lim.upper)
        lower, upper = self._ranges[group]
        plausible_positions(q, lower, upper, FEEDBACK_MARGIN, f"{group} feedback", self.model.group(group).joints)
        self.model.set_group(self.q, group, q)

    def with_group(self, group: str, values: Sequence[float] | np.ndarray) -> np.ndarray:
        """A copy of the configuration with one group replaced (e.g. by its planned position)."""
        q = self.q.copy()
        self.model.set_group(q, group, group_vector(values, len(self.model.group(group).joints), f"{group} position"))
        return q


class UpperBody:
    """The robot model, the measured upper body and the base's motion, shared by the controllers of
    one process (for their feed-forward); thread-safe.

    `inertial_gain` scales each group's own planned M·q̈; `base_gain` the base's acceleration (0: the
    base is taken as still, its turn rate too). A model without planar_base takes no base motion."""

    def __init__(self, model: RobotModel, inertial_gain: float = 1.0, base_gain: float = 1.0) -> None:
        if not (inertial_gain >= 0.0 and base_gain >= 0.0):
            raise ValueError(f"gains must be >= 0, not {inertial_gain}, {base_gain}")
        self.model, self.inertial, self.base_gain = model, float(inertial_gain), float(base_gain)
        self.posture = Posture(model)
        self.base: BaseMotion = STILL
        self.lock = threading.Lock()          # one pinocchio Data, one feedback thread per group

    def set(self, group: str, values: Sequence[float] | np.ndarray) -> None:
        """A group's measured joints; ValueError (InputError) for implausible ones."""
        with self.lock:
            self.posture.set(group, values)

    def set_base(self, motion: BaseMotion) -> None:
        """The base's motion now (mobiman.control.base_motion.BaseMotionInput.at); ignored without planar_base."""
        if self.model.planar_base and self.base_gain > 0.0:
            if self.base_gain != 1.0:
                ax, ay, alpha = (self.base_gain * x for x in motion.acceleration)
                motion = BaseMotion(motion.twist, (ax, ay, alpha))
            self.base = motion

    def feedforward(self, group: str, planned: Optional[np.ndarray], acceleration: Optional[np.ndarray],
                    measured_share: float = 0.0) -> np.ndarray:
        """`feedforward_at` for `group`, its own joints at `planned` (None: measured), its planned
        `acceleration` (None: none), the other groups measured, the base as last set; with a
        `measured_share` s in (0, 1], (1 − s)·that + s·the same at the group's measured posture."""
        with self.lock:
            if planned is None or measured_share >= 1.0:
                return feedforward_at(self.model, self.posture.q, group, acceleration, self.inertial, self.base)
            tau = feedforward_at(self.model, self.posture.with_group(group, planned), group, acceleration,
                                 self.inertial, self.base)
            if measured_share > 0.0:
                here = feedforward_at(self.model, self.posture.q, group, acceleration, self.inertial, self.base)
                tau = tau + measured_share * (here - tau)
            return tau

    def inertia(self, group: str, planned: Optional[np.ndarray]) -> np.ndarray:
        """The joint-space inertia matrix of `group` [kg·m²] (its rows and columns of M(q), the other
        groups' inertia included), its own joints at `planned` (None: measured)."""
        with self.lock:
            q = self.posture.q if planned is None else self.posture.with_group(group, planned)
            return self.model.inertia(q, group)
