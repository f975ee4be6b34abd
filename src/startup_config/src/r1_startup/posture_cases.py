"""The posture's disturbance cases (issue 28, item 5) on the closed loop of `r1_startup.posture_rig`, ROS-free.

For a controller of the torso (`speed`: torso speed control, `joint`: the joint tracker) and a posture of
the upper body (the torso straight, crouched at the guide's joint target or leaning forward as the
demo's pick does; the arms down as the robot starts, or reached out in front), the robot first reaches
the posture, then meets each disturbance in turn, at rest and held before each:

* the base at the chassis' acceleration limits: driving forward to 1 m/s and stopping (+x then −x at
  2.5 m/s²), sideways to 0.5 m/s and back to rest (±y at 1 m/s²), turning to 1 rad/s and stopping (±yaw
  at 1 rad/s²);
* a push for 0.3 s at a link's centre of mass: 50 N forward and backward at torso_link4 (a firm shove at the
  shoulders), 5 N along each axis at the right gripper (the wrists hold with the guide's kp 20 N·m/rad:
  0.05 rad is 1 N·m there);
* a payload: a mass added to the right gripper (the controllers do not know it), then the drives again.

Each case's figures (`CaseResult`) are judged (`CaseResult.judge`, the issue's "done when"): no upper-body
joint further than 0.05 rad from where it was held, each back within 0.01 rad within 1 s after the
disturbance ends, none at a joint limit, no motor torque beyond its effort, and no set-point re-planned.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from r1_startup.posture_rig import PostureRig, Sample

TORSO = {"straight": (0.0, 0.0, 0.0, 0.0), "crouched": (1.0, -2.0, -1.0, 0.0), "leaning": (1.4, -2.2, -0.8, 0.0)}
ARMS: Dict[str, Optional[Dict[str, Tuple[float, ...]]]] = {
    "down": None,                       # as the robot starts (sim.yaml)
    "out": {"left_arm": (0.0073, 2.3004, -1.0006, -1.5632, -1.2998, 1.5688),      # grippers 0.55 m ahead of
            "right_arm": (-0.0073, 2.3003, -1.0006, 1.5632, 1.2998, -1.5688)}}    # torso_link4, 0.25 m apart
DRIVES = {"x": (1.0, 0.0, 0.0), "y": (0.0, 0.5, 0.0), "yaw": (0.0, 0.0, 1.0)}
CHASSIS_LIMITS = (2.5, 1.0, 1.0)        # the chassis' default acceleration limits (m/s², m/s², rad/s²)
PUSHES = {"torso +x": ("torso_link4", (50.0, 0.0, 0.0)), "torso -x": ("torso_link4", (-50.0, 0.0, 0.0)),
          **{f"gripper {s}{a}": ("right_gripper_link", tuple(float(s + "5") if i == k else 0.0 for i in range(3)))
             for k, a in enumerate("xyz") for s in "+-"}}
PUSH_SECONDS = 0.3
UPPER = [f"torso_joint{k}" for k in range(1, 5)] + [f"{s}_arm_joint{k}" for s in ("left", "right")
                                                     for k in range(1, 7)]
MAX_DEVIATION = 0.05      # [rad] from where the joint was held
SETTLE_TOLERANCE = 0.01   # [rad] back within this ...
SETTLE_TIME = 1.0         # [s] ... this long after the disturbance ends
LIMIT_TOLERANCE = 0.005   # [rad] a joint held this near a limit rests on its stop (not judged for reaching it)


@dataclass
class CaseResult:
    """One disturbance's figures: the largest deviation [rad] of an upper-body joint from where it was held
    (and which), how long after the disturbance ended every joint was back within SETTLE_TOLERANCE for good
    [s], the least distance to its limit of a joint not held at one [rad], the largest motor torque over its
    effort, the base's measured acceleration along the drive's axis, speeding up and slowing down [m/s² or
    rad/s²], the set-points re-planned, and whether it passed the criteria (`judge`; why not)."""

    controller: str
    torso: str
    arms: str
    case: str
    deviation: float
    worst_joint: str
    settle: float
    limit_margin: float
    torque_ratio: float
    base_acceleration: List[float] = field(default_factory=list)
    resyncs: int = 0
    passed: bool = True
    failures: List[str] = field(default_factory=list)

    def judge(self) -> "CaseResult":
        f = []
        if self.deviation > MAX_DEVIATION:
            f.append(f"{self.worst_joint} {self.deviation:.3f} rad from where it was held (> {MAX_DEVIATION})")
        if self.settle > SETTLE_TIME:
            f.append(f"not back within {SETTLE_TOLERANCE} rad {SETTLE_TIME} s after the disturbance "
                     f"({self.settle:.2f} s)")
        if self.limit_margin <= 0.0:
            f.append("a joint reached its limit")
        if self.torque_ratio > 1.0 + 1e-6:
            f.append(f"a motor torque {self.torque_ratio:.2f} x its effort")
        if self.resyncs:
            f.append(f"{self.resyncs} set-points re-planned from the measured position")
        self.failures, self.passed = f, not f
        return self

    def as_dict(self) -> dict:
        return asdict(self)


def judge_motion(samples: Sequence[Tuple[float, Dict[str, float]]], held: Dict[str, float], end: float,
                 limits: Dict[str, Tuple[float, float]]) -> Tuple[float, str, float, float]:
    """From (time [s], joint positions by name) samples of a case, the positions `held` before it, the time its
    disturbance `end`ed and the joints' `limits`: (the largest deviation of an UPPER joint [rad], which joint,
    how long after `end` every one was back within SETTLE_TOLERANCE for good [s] (inf: not within the
    samples), the least distance to its limit of a joint not held at one [rad])."""
    deviation = {j: max(abs(q[j] - held[j]) for _, q in samples) for j in UPPER}
    worst = max(deviation, key=deviation.get)   # type: ignore[arg-type]
    last_out = end
    for t, q in samples:
        if t >= end and any(abs(q[j] - held[j]) > SETTLE_TOLERANCE for j in UPPER):
            last_out = t
    settle = last_out - end if last_out < samples[-1][0] else math.inf
    # the least distance to a limit of the joints not held at one (the hanging arms rest on joint 2's stop)
    free = {j: lh for j, lh in limits.items() if min(held[j] - lh[0], lh[1] - held[j]) > LIMIT_TOLERANCE}
    margin = min(min(q[j] - lo, hi - q[j]) for _, q in samples for j, (lo, hi) in free.items())
    return deviation[worst], worst, settle, margin


def _resyncs(rig: PostureRig) -> int:
    total = sum(c.counters["resyncs"] for c in rig.tracked.values())
    return total + (rig.torso.controller.stats["resyncs"] if rig.torso is not None else 0)


def _ramp(t: np.ndarray, v: np.ndarray, top: float) -> float:
    """The mean acceleration of a ramp from 10 % to 90 % of `top` (a speed reached from rest; nan if not)."""
    lo, hi = np.flatnonzero(v >= 0.1 * top), np.flatnonzero(v >= 0.9 * top)
    if not lo.size or not hi.size or hi[0] <= lo[0]:
        return math.nan
    return float(0.8 * top / (t[hi[0]] - t[lo[0]]))


def _base_acceleration(samples: Sequence[Sample], axis: int) -> List[float]:
    """The base's true speeding up and slowing down along `axis` [m/s², rad/s²]: each ramp's mean from 10 %
    to 90 % of the top speed it reached (as the chassis rostest judges a ramp)."""
    t = np.array([s.t for s in samples])
    v = np.abs(np.array([s.base[axis] for s in samples]))
    if len(v) < 3 or v.max() <= 0.0:
        return [math.nan, math.nan]
    top = float(v.max())
    peak = int(np.argmax(v))
    return [_ramp(t[:peak + 1], v[:peak + 1], top), _ramp(t[peak:], v[peak:][::-1], top)]


class PostureRun:
    """One controller in one posture on a fresh rig; `drive`, `push`, `payload` add CaseResults."""

    def __init__(self, controller: str, torso: str, arms: str, profile: str = "light", **rig_options):
        self.rig = PostureRig(profile=profile, torso=controller, **rig_options)
        self.controller, self.torso, self.arms = controller, torso, arms
        self.results: List[CaseResult] = []
        rig = self.rig
        rig.run(0.3)
        rig.joint_target("torso", TORSO[torso], [0.8] * 4)
        for group, q in (ARMS[arms] or {}).items():
            rig.joint_target(group, q, [1.5] * 6)
        self._settle()
        limits = rig.model
        self._limits = {j: (float(lo), float(hi)) for g in ("torso", "left_arm", "right_arm")
                        for j, lo, hi in zip(limits.group(g).joints, limits.limits(g).lower, limits.limits(g).upper)}

    def _settle(self, least: float = 3.5, most: float = 30.0) -> None:
        """Run at least `least` [s], then until every plan has arrived and every joint is still (at most `most`)."""
        rig = self.rig
        rig.run(least)
        while rig.now < most:
            arrived = all(c.tracker.at_target or c.tracker.target is None for c in rig.tracked.values())
            if rig.torso is not None:
                arrived = arrived and rig.torso.controller.mode == "speed"
            still = all(np.all(np.abs(g.snapshot()[1][:g.n_joints]) < 0.02) for n, g in rig.groups.items()
                        if n != "chassis")
            if arrived and still:
                break
            rig.run(0.1)
        rig.run(0.5)

    def _case(self, case: str, disturb, axis: Optional[int] = None) -> CaseResult:
        """Rest 0.3 s, hold the posture as the reference, run `disturb` (returns when the disturbance has
        ended), then 1.5 s more; the figures of it all."""
        rig = self.rig
        rig.run(0.3, lambda r: r.drive((0.0, 0.0, 0.0)))
        held = rig.positions()
        rig.samples.clear()
        rig.max_motor_ratio.clear()
        resyncs = _resyncs(rig)
        disturb()
        end = rig.now
        rig.run(1.5, lambda r: r.drive((0.0, 0.0, 0.0)))
        samples = rig.samples
        deviation, worst, settle, margin = judge_motion([(s.t, s.q) for s in samples], held, end, self._limits)
        result = CaseResult(self.controller, self.torso, self.arms, case, deviation, worst, settle, margin,
                            max(rig.max_motor_ratio.values(), default=0.0),
                            _base_acceleration(samples, axis) if axis is not None else [],
                            _resyncs(rig) - resyncs).judge()
        self.results.append(result)
        return result

    def drive(self, name: str, label: str = "") -> CaseResult:
        """Up to DRIVES[name] at the chassis' limit, 0.3 s there, and back to rest at it."""
        twist = DRIVES[name]
        axis = int(np.argmax(np.abs(twist)))
        ramp = abs(twist[axis]) / CHASSIS_LIMITS[axis]

        def disturb() -> None:
            self.rig.run(ramp + 0.3, lambda r: r.drive(twist))
            self.rig.run(ramp * 1.5 + 0.05, lambda r: r.drive((0.0, 0.0, 0.0)))     # (a lowered brake is slower)
        return self._case(f"{label}drive {name}", disturb, axis)

    def push(self, name: str) -> CaseResult:
        """One of PUSHES."""
        return self.push_at(*PUSHES[name], f"push {name}")

    def push_at(self, link: str, force: Tuple[float, float, float], case: str) -> CaseResult:
        """A force [N] in the world's axes at a link's centre of mass for PUSH_SECONDS."""
        def disturb() -> None:
            self.rig.push(link, force, PUSH_SECONDS)
            self.rig.run(PUSH_SECONDS)
        return self._case(case, disturb)

    def add_payload(self, mass: float, link: str = "right_gripper_link") -> None:
        """A mass [kg] the controllers do not know, fixed at `link` (its inertia about its centre: a 5 cm
        sphere's); the robot settles under it before the next case."""
        world = self.rig.robot.world
        body = world.model.body(link).id
        world.model.body_mass[body] += mass
        world.model.body_inertia[body] += 0.4 * mass * 0.05 ** 2
        import mujoco
        mujoco.mj_setConst(world.model, world.data)
        self._settle(least=1.5)


def posture_cases(controller: str, torso: str, arms: str, profile: str = "light", pushes: bool = True,
                  payload: float = 0.0, **rig_options) -> List[CaseResult]:
    """Every drive, the pushes (with `pushes`) and, with a `payload` [kg], the drives again holding it."""
    run = PostureRun(controller, torso, arms, profile, **rig_options)
    for name in DRIVES:
        run.drive(name)
    if pushes:
        for name in PUSHES:
            run.push(name)
    if payload > 0.0:
        run.add_payload(payload)
        for name in DRIVES:
            run.drive(name, f"{payload:g} kg payload, ")
    return run.results
