"""The arm IK solver's settings: the `solver` section of the arm pose nodes' parameters
(config/relaxed_ik.yaml), declared once (r1_common.settings: defaults, ranges, the docs' table).

The objective's weights scale its residual rows (w · error); a barrier's weight 0 turns it off.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from r1_common.settings import Settings, setting


@dataclass(frozen=True)
class IkWeights(Settings):
    """Weights of the objective's rows (RelaxedIK's terms)."""

    position: float = setting(50.0, "1/m; the position rows: w · (p − p*) (> 0)", low=0.0)
    orientation: float = setting(10.0, "1/rad; the orientation rows: w · log3(R*ᵀR) (> 0)", low=0.0)
    velocity: float = setting(0.02, "smoothness against the last solution: w · (q − q₋₁)", low=0.0)
    acceleration: float = setting(0.01, "smoothness: w · (q − 2q₋₁ + q₋₂)", low=0.0)
    jerk: float = setting(0.005, "smoothness: w · (q − 3q₋₁ + 3q₋₂ − q₋₃)", low=0.0)
    joint_limit: float = setting(1.0, "barrier within `joint_limit_margin` of a joint limit", low=0.0)
    collision: float = setting(5.0, "barrier on capsule pairs closer than `collision_margin`", low=0.0)
    singularity: float = setting(0.5, "barrier where abs(det J) is below `singularity_threshold`", low=0.0)

    def __post_init__(self) -> None:
        if not (self.position > 0 and self.orientation > 0):
            raise ValueError("the position and orientation weights must be > 0")


@dataclass(frozen=True)
class IkConfig(Settings):
    """The solver's settings (`mobiman.arm.ik.ArmIK`)."""

    weights: IkWeights = setting(IkWeights(), "the objective's weights")
    joint_limit_margin: float = setting(0.1, "rad; the joint-limit barrier's reach (> 0)", low=0.0)
    collision_margin: float = setting(0.03, "m; the collision barrier's reach in streamed motion (> 0)", low=0.0)
    singularity_threshold: float = setting(
        5e-4, "abs(det J) below which the singularity barrier acts (over the joint ranges: median 0.008, "
        "5th percentile 0.0003) (> 0)", low=0.0)
    max_step: float = setting(0.2, "rad; no joint moves more than this per streamed solve (> 0)", low=0.0)
    max_iterations: int = setting(30, "iterations of a streamed solve's pass", low=1)
    max_iterations_cold: int = setting(60, "iterations per seed of a cold solve", low=1)
    position_tolerance: float = setting(2e-4, "m; a pass has converged below both tolerances (> 0)", low=0.0)
    orientation_tolerance: float = setting(2e-3, "rad; see position_tolerance (> 0)", low=0.0)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not value > 0:
                raise ValueError(f"{f.name} must be > 0, not {value!r}")
