"""The arm pose-control stream, ROS-free: pose targets in, checked joint targets out.

`ArmPoseStream` is what `r1_arm_relaxed_ik_node` (mobiman.nodes.arm_ik) does between its
topics, without rospy: it checks each pose target, keeps the solver's history in step with
the measured arm (at the first feedback, after a paused stream), runs one streamed solve per
target, judges the result (reached, still converging, out of reach) and never hands out a
non-finite joint target. The solver is anything with the `mobiman.arm.ik.ArmIK` interface
(`reset`, `solve`, `set_other_arm`, `lower`, `upper`, `joint_names`), so the logic is tested
with a stand-in.

Clocks: the caller passes ROS time (simulated time on the simulated robot) and wall time
(monotonic). A target stream is stale only when its last target is older than
`target_timeout` in *both*: a stream paced on simulated time that runs at a fifth of real
time is not taken for a stopped one, nor is a wall-paced stream (`rostopic pub -r 10`) on a
simulated clock that jumps ahead.
"""
from __future__ import annotations

import math
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Tuple

import numpy as np
import pinocchio as pin

from r1_common.settings import Settings, setting
from r1_common.validation import (
    FEEDBACK_MARGIN,
    InputError,
    data_time,
    finite_vector,
    plausible_positions,
    show,
    unit_quaternion,
)
from r1_common.validation import frame_id as valid_frame_id

N_JOINTS = 6
DEFAULT_SPEED_LIMITS = (1.0, 1.0, 1.0, 1.5, 1.5, 1.5)    # [rad/s] the guide's example speeds


class Dropped(Exception):
    """A target that is not solved: `key` names the reason (counted, logs throttled per key)."""

    def __init__(self, key: str, text: str):
        super().__init__(text)
        self.key = key
        self.text = text


# -- poses ---------------------------------------------------------------------------------
MAX_COORDINATE = 1e4          # [m] a pose coordinate beyond this is no target in any frame (and would overflow)
MAX_TARGET_DISTANCE = 10.0    # [m] from the base frame's origin: beyond it no arm target (reach < 1 m)
TF_MAX_AGE = 10.0             # [s] a target older than this is looked up at the latest transform (tf2's cache)
TF_MAX_AHEAD = 0.5            # [s] likewise one stamped ahead of the clock by more


def pose_to_se3(position: Sequence[float], orientation_xyzw: Sequence[float]) -> tuple[pin.SE3, float]:
    """A pose from position (x, y, z) and quaternion (x, y, z, w); the quaternion is normalized.

    Returns the pose and the quaternion's norm before normalizing (for a warning when it is not 1).
    Raises Dropped on non-finite values, a coordinate beyond MAX_COORDINATE, or a quaternion that is
    not a rotation (zero, or its norm more than 0.1 from 1): every check before pinocchio sees it.
    """
    try:
        p = finite_vector(position, "pose.position", (3,))
        if np.any(np.abs(p) > MAX_COORDINATE):
            raise Dropped("far", f"pose.position {show(p)} lies beyond {MAX_COORDINATE:g} m: dropped")
        (x, y, z, w), norm = unit_quaternion(orientation_xyzw, "pose.orientation")
    except InputError as e:
        key = ("shape" if "entries" in e.why else "nonfinite" if "finite" in e.why
               else "zero_quaternion" if e.why.startswith("has norm 0,") else "quaternion")
        raise Dropped(key, f"target dropped: {e}") from None
    return pin.SE3(pin.Quaternion(w, x, y, z).toRotationMatrix(), p), norm


def is_base_frame(frame_id: str, base_frame: str) -> bool:
    """An empty frame_id means the base frame (the guide's examples leave it empty)."""
    f = frame_id.strip().lstrip("/")
    return f == "" or f == base_frame.lstrip("/")


def target_frame(frame_id: str, stamp: float, now: float, base_frame: str) -> tuple[str | None, float, str | None]:
    """Where a target's pose must be looked up: (frame, time, note).

    frame is None for the base frame (no lookup). time is the stamp when it lies within
    [now - TF_MAX_AGE, now + TF_MAX_AHEAD], else 0.0 (the latest transform), with a note: no other
    stamp ever reaches tf2 (4294967295.999999999 aborted the process there). Raises Dropped for a
    frame id that cannot name a frame."""
    try:
        frame = valid_frame_id(frame_id)
    except InputError as e:
        raise Dropped("frame", f"target dropped: {e}") from None
    if is_base_frame(frame, base_frame):
        return None, 0.0, None
    if stamp == 0.0:
        return frame, 0.0, None
    t, note = data_time(stamp, now, TF_MAX_AGE, TF_MAX_AHEAD)
    if note is not None:
        return frame, 0.0, note.replace("taken as received now", "looked up at the latest transform")
    return frame, t, None


def compose(base_from_frame: pin.SE3, pose_in_frame: pin.SE3) -> pin.SE3:
    """A pose given in another frame, expressed in the base frame (tf2's transform of a pose)."""
    return base_from_frame * pose_in_frame


def format_pose(pose: pin.SE3) -> str:
    x, y, z = pose.translation
    return f"({x:.3f}, {y:.3f}, {z:.3f})"


# -- configuration -------------------------------------------------------------------------
Joints6 = Tuple[float, float, float, float, float, float]


@dataclass(frozen=True)
class StreamConfig(Settings):
    """The stream's parameters (top level of the arm pose node's private parameters; the node adds
    its own, `mobiman.nodes.arm_ik.ArmIkSettings`)."""

    speed_limits: Joints6 = setting(DEFAULT_SPEED_LIMITS, "rad/s per joint (> 0), sent with every joint target "
                                    "(the tracker caps them at 3, 3, 3, 5, 5, 5)", low=0.0)
    target_timeout: float = setting(0.5, "s (> 0); a stream without a target for this long, in ROS time and in "
                                    "wall time, is paused", low=0.0)
    ready_pose: bool = setting(False, "at start, send `ready_joints` to the tracker and accept poses only once "
                               "the arm is there (the launch files' argument)")
    ready_joints: Optional[Joints6] = setting(None, "rad; the ready pose (the launch files' argument; needed with "
                                              "`ready_pose`), clipped to the joint limits")
    ready_tolerance: float = setting(0.05, "rad (> 0); the ready pose is reached when every joint is this close",
                                     low=0.0)
    ready_timeout: float = setting(60.0, "s, ROS time (> 0); then poses are accepted anyway, with a warning (is "
                                   "the tracker running?)", low=0.0)
    settle_step: float = setting(1e-3, "rad (> 0); a solve that moves no joint more than this, short of the "
                                 "target and not step-limited, means out of reach", low=0.0)

    def __post_init__(self) -> None:
        for key in ("target_timeout", "ready_tolerance", "ready_timeout", "settle_step"):
            if not getattr(self, key) > 0:
                raise ValueError(f"{key} must be > 0, not {getattr(self, key)!r}")
        if not all(v > 0 for v in self.speed_limits):
            raise ValueError(f"speed_limits must be > 0, not {list(self.speed_limits)!r}")
        if self.ready_pose and self.ready_joints is None:
            raise ValueError("ready_pose is true but ready_joints is not set (6 joint values)")


# -- the stream ----------------------------------------------------------------------------
@dataclass
class Step:
    """One solved target: what the node publishes."""

    q: np.ndarray                  # 6 joint targets, finite
    result: Any                    # the solver's IkResult
    out_of_reach: bool             # settled short of the target
    restarted: bool                # the history was reset to the measured joints first
    solve_time: float              # [s]


WAITING_FEEDBACK = "waiting for feedback"
READY_PENDING = "ready pose pending"
MOVING_TO_READY = "moving to the ready pose"
ACTIVE = "active"


class ArmPoseStream:
    """State of one arm's pose control: feedback, ready pose, stream freshness, solves, statistics."""

    def __init__(self, ik: Any, config: StreamConfig):
        self.ik = ik
        self.cfg = config
        self.state = WAITING_FEEDBACK
        self.measured: np.ndarray | None = None
        self.other_arm: np.ndarray | None = None
        self.ready_joints: np.ndarray | None = None
        self.ready_clipped = False
        if config.ready_joints is not None:
            ready = np.clip(config.ready_joints, ik.lower, ik.upper)
            self.ready_joints, self.ready_clipped = ready, not np.allclose(ready, config.ready_joints)
        self._ready_since: float | None = None
        self.last_target_ros: float | None = None
        self.last_target_wall: float | None = None
        self.stale = False
        self.previous_q: np.ndarray | None = None
        # statistics
        self.solves = 0
        self.restarts = 0
        self.stale_events = 0
        self.blocked = 0                # solves stopped clear of the body short of a colliding solution
        self.dropped: Counter[str] = Counter()
        self.solve_times: deque[float] = deque(maxlen=1000)
        self.last_result: Any = None
        self.last_target: pin.SE3 | None = None
        self.out_of_reach = False
        self.feedback_error: str | None = None    # why the last feedback was refused (None: it was taken)

    # -- feedback -------------------------------------------------------------------------
    def on_feedback(self, position: Sequence[float], now: float) -> str | None:
        """The arm's measured joints (first 6 of the feedback). Returns a note to log, if any."""
        q = self.check_feedback(position)
        if q is None:
            return None
        self.measured = q
        if self.state == WAITING_FEEDBACK:
            self.ik.reset(q)
            self.previous_q = q.copy()
            if self.cfg.ready_pose:
                self.state, self._ready_since = READY_PENDING, now
                return (f"feedback arrived at {np.round(q, 3).tolist()}; "
                        f"ready pose {np.round(self._ready_pose(), 3).tolist()} next")
            self.state = ACTIVE
            return f"feedback arrived at {np.round(q, 3).tolist()}; accepting poses"
        if self.state in (READY_PENDING, MOVING_TO_READY):
            assert self._ready_since is not None, "both states are entered with the time they began"
            if self.state == MOVING_TO_READY and np.max(np.abs(q - self._ready_pose())) <= self.cfg.ready_tolerance:
                self._activate(q)
                return "at the ready pose; accepting poses"
            if now - self._ready_since > self.cfg.ready_timeout:
                self._activate(q)
                return (f"not at the ready pose after {self.cfg.ready_timeout:.0f} s ({self.state}; is the joint "
                        f"tracker running?): accepting poses from {np.round(q, 3).tolist()}")
        return None

    def check_feedback(self, position: Sequence[float]) -> np.ndarray | None:
        """The measured joints (first 6 of the feedback), or None (counted, reason in `feedback_error`)
        when they are missing, not finite or beyond the joints' ranges by more than FEEDBACK_MARGIN."""
        try:
            q = finite_vector(position[:N_JOINTS], "feedback position", (N_JOINTS,))
            self.feedback_error = None
            return plausible_positions(q, self.ik.lower, self.ik.upper, FEEDBACK_MARGIN, "feedback position",
                                       self.ik.joint_names)
        except InputError as e:
            self.dropped["feedback"] += 1
            self.feedback_error = str(e)
            return None

    def _activate(self, q: np.ndarray) -> None:
        self.state = ACTIVE
        self.ik.reset(q)
        self.previous_q = q.copy()
        self.last_target_ros = self.last_target_wall = None     # the next target starts a stream

    def take_ready_command(self, now: float) -> np.ndarray | None:
        """The ready pose's joint target, once, when it is due (the caller publishes it)."""
        if self.state != READY_PENDING:
            return None
        self.state, self._ready_since = MOVING_TO_READY, now
        return self._ready_pose().copy()

    def _ready_pose(self) -> np.ndarray:
        """The ready pose's joints, there whenever cfg.ready_pose is (StreamConfig refuses it without them)."""
        assert self.ready_joints is not None, "StreamConfig: ready_pose needs ready_joints"
        return self.ready_joints

    def on_other_arm(self, position: Sequence[float]) -> None:
        q = np.asarray(position[:N_JOINTS], dtype=float)
        # its joints' ranges are not this solver's: a reading a motor can give (±2π) is taken
        if q.shape == (N_JOINTS,) and np.all(np.isfinite(q)) and np.all(np.abs(q) <= 2 * math.pi):
            self.other_arm = q

    # -- targets --------------------------------------------------------------------------
    def is_stale(self, now_ros: float, now_wall: float) -> bool:
        """No target within target_timeout, in ROS time and in wall time (or none yet)."""
        if self.last_target_ros is None or self.last_target_wall is None:
            return True
        t = self.cfg.target_timeout
        return now_ros - self.last_target_ros > t and now_wall - self.last_target_wall > t

    def check_stale(self, now_ros: float, now_wall: float) -> bool:
        """True once, when a running stream has just gone stale (the caller says so)."""
        if self.last_target_ros is None or self.stale or not self.is_stale(now_ros, now_wall):
            return False
        self.stale = True
        self.stale_events += 1
        return True

    def drop(self, key: str, text: str) -> Dropped:
        self.dropped[key] += 1
        return Dropped(key, text)

    def on_target(self, target: pin.SE3, now_ros: float, now_wall: float) -> Step:
        """One streamed solve toward `target` (in the base frame). Raises Dropped."""
        if self.state == WAITING_FEEDBACK:
            raise self.drop("no_feedback", "target dropped: no arm feedback yet")
        if self.state != ACTIVE:
            raise self.drop("ready", f"target dropped: {self.state} first")
        distance = float(np.linalg.norm(target.translation))
        if not distance <= MAX_TARGET_DISTANCE:
            raise self.drop("far", f"target {format_pose(target)} is {distance:.3g} m from the base frame's origin "
                                   f"(an arm target lies within {MAX_TARGET_DISTANCE:g} m): dropped")
        restarted = self.is_stale(now_ros, now_wall)
        if restarted:
            # a new stream (the first, or after a pause): continue from where the arm is,
            # not from the last solution
            assert self.measured is not None, "ACTIVE is entered from a feedback"
            self.ik.reset(self.measured)
            self.previous_q = self.measured.copy()
            self.restarts += 1
        self.stale = False
        self.last_target_ros, self.last_target_wall = now_ros, now_wall
        if self.other_arm is not None:
            self.ik.set_other_arm(self.other_arm)
        t0 = time.perf_counter()
        result = self.ik.solve(target)
        dt = time.perf_counter() - t0
        q = np.asarray(result.q, dtype=float)
        if q.shape != (N_JOINTS,) or not np.all(np.isfinite(q)):
            raise self.drop("solver", f"solver returned {q.tolist()}: not published")
        moved = np.inf if self.previous_q is None else float(np.max(np.abs(q - self.previous_q)))
        out_of_reach = (not result.reached) and (not result.step_limited) and moved <= self.cfg.settle_step
        self.previous_q = q.copy()
        self.solves += 1
        self.blocked += bool(result.blocked)
        self.solve_times.append(dt)
        self.last_result, self.last_target, self.out_of_reach = result, target, out_of_reach
        return Step(q=q, result=result, out_of_reach=out_of_reach, restarted=restarted, solve_time=dt)

    # -- reporting ------------------------------------------------------------------------
    def summary(self, now_ros: float, now_wall: float) -> tuple[int, str, dict[str, str]]:
        """(level 0 OK / 1 WARN, message, key-values) for a diagnostics status."""
        times = np.array(self.solve_times) * 1e3 if self.solve_times else np.zeros(1)
        r = self.last_result
        values = {
            "state": self.state,
            "solves": str(self.solves),
            "solve_ms_median": f"{np.median(times):.2f}",
            "solve_ms_p99": f"{np.percentile(times, 99):.2f}",
            "targets_dropped": str(sum(v for k, v in self.dropped.items() if k != "feedback")),
            "dropped_by_reason": ", ".join(f"{k}: {v}" for k, v in sorted(self.dropped.items())) or "none",
            "stream_restarts": str(self.restarts),
            "stale_events": str(self.stale_events),
            "blocked_by_collision": str(self.blocked),
            "last_target": format_pose(self.last_target) if self.last_target is not None else "none",
            "position_error_m": f"{r.position_error:.5f}" if r is not None else "",
            "orientation_error_rad": f"{r.orientation_error:.5f}" if r is not None else "",
            "reached": str(bool(r.reached)) if r is not None else "",
        }
        if self.state != ACTIVE:
            return 1, self.state, values
        if self.is_stale(now_ros, now_wall):
            return 0, "idle (no target stream)", values
        if r is not None and r.blocked:
            return 1, (f"target met only with the arm in its body: holding clear, "
                       f"{r.position_error * 1e3:.1f} mm, {r.orientation_error:.3f} rad from it"), values
        if self.out_of_reach:
            return 1, (f"target out of reach: best pose {r.position_error * 1e3:.1f} mm, "
                       f"{r.orientation_error:.3f} rad from it"), values
        return 0, "at target" if r is not None and r.reached else "following", values
