"""Torso speed control (the guide's 躯干速度控制), free of ROS.

A Cartesian velocity (v_x, v_z) of `torso_link3`'s origin, in base_link axes, becomes torso joint
positions and velocities by resolved-rate control: each tick solves the 3-row task (x, z, trunk
pitch) for joints 1-3 by damped least squares on the pinocchio Jacobian (RobotModel), with the
pitch held at the value latched when speed control took over; joint 4 (yaw) is held. The joint
positions are integrated from the command, not re-read from the motors every tick, so gravity
sag does not accumulate into drift. Around it: a speed clamp and a Cartesian acceleration limit
(so a step command, a stop or a silent stream is smooth), the workspace box of the guide, the
URDF joint limits, a joint speed cap and, for joint targets, the joint tracker's Ruckig
trajectory. The command never follows a torso a load pushed away from it: it starts again from the
measured position only when the motors were not holding the joints (`mobiman.control.setpoint`), and
waits while the joints lag it and do not keep pace. Positions x, z are those of torso_link3's origin
relative to torso_joint1's origin (a point fixed in base_link), in base_link axes: the guide's
workspace coordinates.

The controller is in one `TorsoState` at a time; `TRANSITIONS` lists every change of state and its
cause, and `_enter` (the only place the state changes) refuses any other. The resolved-rate pieces
are in mobiman.torso.resolved_rate, the settings in mobiman.torso.config.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from mobiman.control.setpoint import SetpointGuard
from mobiman.model.robot_model import RobotModel
from mobiman.torso import resolved_rate as rr
from mobiman.torso.config import TorsoSpeedConfig
from mobiman.tracker.feedback_clock import FeedbackClock
from mobiman.tracker.joint_tracker import JointTrajectoryTracker, TargetError, TrackerLimits

__all__ = ["CommandError", "TorsoCommand", "TorsoSpeedConfig", "TorsoSpeedController", "TorsoState", "TRANSITIONS"]

PITCH_DEADBAND = 1e-9     # [rad] pitch errors below this are round-off, not a posture to correct


class CommandError(ValueError):
    """A speed command that must be dropped (non-finite values)."""


class TorsoState(Enum):
    WAITING = "waiting for feedback"      # not started: no output
    HOLDING = "holding"                   # speed control with no speed stream: at rest (pitch held)
    SPEED = "speed control"               # speed commands arrive (within command_timeout)
    STOPPING = "stopping"                 # the speed stream fell silent: decelerating to rest
    BRAKING = "braking for target"        # a joint target waits for speed control to reach rest
    JOINT_TARGET = "joint target"         # a Ruckig move to a joint target


S = TorsoState
# Every change of state and its cause: the state machine in one place (`_enter` refuses any other).
TRANSITIONS: Dict[Tuple[TorsoState, TorsoState], str] = {
    (S.WAITING, S.HOLDING): "the first feedback (start): hold the measured position",
    (S.HOLDING, S.SPEED): "speed commands arrive",
    (S.SPEED, S.STOPPING): "no speed command for command_timeout: decelerate to zero",
    (S.STOPPING, S.SPEED): "speed commands arrive again",
    (S.STOPPING, S.HOLDING): "at rest; or a re-seed (motors off, or far after stale feedback)",
    (S.SPEED, S.HOLDING): "re-seeded from the measurement (motors off, or far after stale feedback) or start(): "
                          "at rest there",
    (S.HOLDING, S.BRAKING): "a joint target (the move starts on the next tick)",
    (S.SPEED, S.BRAKING): "a joint target: speed control brakes to rest first",
    (S.STOPPING, S.BRAKING): "a joint target: speed control brakes to rest first",
    (S.BRAKING, S.SPEED): "a non-zero speed command: the target is dropped (the latest input wins)",
    (S.BRAKING, S.JOINT_TARGET): "at rest: the Ruckig move starts from there",
    (S.BRAKING, S.HOLDING): "at rest, but the trajectory refused the target; or a re-seed (the target is dropped)",
    (S.JOINT_TARGET, S.SPEED): "a non-zero speed command takes the move over from its state (on the next tick)",
    (S.JOINT_TARGET, S.HOLDING): "the target is reached: hold there, the pitch latched; or start()",
}
MODES = {S.JOINT_TARGET: "joint target", S.BRAKING: "braking for target"}   # TorsoCommand.mode; else "speed"


@dataclass(frozen=True)
class TorsoCommand:
    """One tick's output: joint set-points for the motors (MIT p_des, v_des) and what produced them."""

    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray   # of the command over the last step (for an inertial feed-forward)
    mode: str          # "speed" (incl. holding, stopping), "braking for target" or "joint target"


def _finite(values: Sequence[float] | np.ndarray, n: int, what: str) -> np.ndarray:
    v = np.asarray(values, dtype=float).ravel()
    if v.shape != (n,):
        raise TargetError(f"{what} has {v.shape[0]} entries, expected {n}")
    if not np.all(np.isfinite(v)):
        raise TargetError(f"{what} has non-finite entries: {v.tolist()}")
    return v


class TorsoSpeedController:
    """Resolved-rate torso control with joint-target moves; the feedback drives `step`.

    Inputs win by recency: a joint target stops speed control (braking at the acceleration limit
    first, then a Ruckig move from rest); a non-zero speed command takes a joint-target move over
    from its current state (zero speed commands do not cancel a move). Thread-unsafe: the caller
    serialises calls.
    """

    def __init__(self, model: RobotModel, config: Optional[TorsoSpeedConfig] = None):
        config = TorsoSpeedConfig() if config is None else config
        self.model, self.cfg = model, config
        names = model.groups[config.group]
        if len(names) != 4:
            raise ValueError(f"group {config.group} has {len(names)} joints; the torso has 4")
        self.names = tuple(names)
        lim = model.limits(config.group)
        self.lower, self.upper = lim.lower.copy(), lim.upper.copy()
        self._q_full = model.configuration()
        self.origin = model.pose(config.origin_frame, self._q_full, config.base_frame).translation[[0, 2]].copy()
        cap = np.full(4, config.joint_speed_cap)
        self.tracker = JointTrajectoryTracker(self.names, TrackerLimits(self.lower, self.upper, cap),
                                              1.0 / config.trajectory_rate_hz)
        # the feedback's freshness (for the node) and the ticks' time: max_step, Ruckig steps
        self.clock = FeedbackClock(config.feedback_timeout, config.trajectory_rate_hz, max_step=config.max_step)
        self._state = S.WAITING
        self._q = np.zeros(4)             # commanded (integrated) joint positions
        self._qd = np.zeros(4)            # commanded joint velocities
        self._qdd = np.zeros(4)           # and their change over the last step
        self._v = np.zeros(2)             # Cartesian velocity state (after rate limit and limits)
        self._residual = np.zeros(4)      # joint velocity of a taken-over move, decaying
        self._last_residual = np.zeros(4)   # the part of the last q̇ that was residual
        self._pitch_ref = 0.0
        self._cmd = np.zeros(2)
        self._cmd_time: Optional[float] = None
        self._timed_out = True
        self._takeover = False        # a speed command came during a joint-target move: taken over next tick
        # when the command may start again from the measured position, and when it waits for the joints
        self.guard = SetpointGuard(4, config.resync_error, config.max_following_error)
        self._last_why: Optional[str] = None
        self._pending: Optional[Tuple[np.ndarray, Optional[np.ndarray]]] = None
        self._last_target: Optional[Tuple[np.ndarray, Optional[np.ndarray]]] = None
        self.events: List[str] = []   # warnings for the caller to log (drained by it)
        self.stats = dict(ticks=0, commands=0, clamped=0, dropped=0, targets=0, workspace_limited=0,
                          joint_limited=0, speed_capped=0, acceleration_limited=0, damped=0, resyncs=0,
                          timeouts=0, paused=0)

    # -- state ---------------------------------------------------------------------------------
    @property
    def state(self) -> TorsoState:
        return self._state

    def _enter(self, new: TorsoState) -> None:
        """The one place the state changes; only the changes in TRANSITIONS."""
        if new is not self._state and (self._state, new) not in TRANSITIONS:
            raise RuntimeError(f"torso speed control: no transition {self._state.name} -> {new.name}")
        self._state = new

    @property
    def started(self) -> bool:
        return self._state is not S.WAITING

    @property
    def mode(self) -> str:
        return MODES.get(self._state, "speed")

    @property
    def position(self) -> np.ndarray:
        return self._q.copy()

    @property
    def velocity(self) -> np.ndarray:
        return self._qd.copy()

    @property
    def cartesian_velocity(self) -> np.ndarray:
        """The (v_x, v_z) state of speed control (zero during joint-target moves)."""
        return self._v.copy()

    @property
    def pitch_reference(self) -> float:
        return self._pitch_ref

    def frame_pose(self, q: Sequence[float] | np.ndarray) -> Any:
        """Placement (pinocchio SE3) of the controlled frame in base_link for torso joints q."""
        x = self.model.configuration({self.cfg.group: q}, base=self._q_full)
        return self.model.pose(self.cfg.frame, x, self.cfg.base_frame)

    def state_of(self, pose: Any) -> np.ndarray:
        """(x, z, pitch) of a frame_pose: x, z in workspace coordinates (relative to torso_joint1)."""
        r = pose.rotation
        return np.array([*(pose.translation[[0, 2]] - self.origin), math.atan2(r[0, 2], r[2, 2])])

    def task_state(self, q: Sequence[float] | np.ndarray) -> np.ndarray:
        """(x, z, pitch) of the controlled frame for torso joints q, x and z in workspace coordinates."""
        return self.state_of(self.frame_pose(q))

    def _task_jacobian(self, q: np.ndarray) -> np.ndarray:
        """The 3×3 task Jacobian at torso joints q (rows x, z, pitch; columns joints 1-3)."""
        x = self.model.configuration({self.cfg.group: q}, base=self._q_full)
        jac = self.model.jacobian(self.cfg.frame, x, reference=self.cfg.base_frame, group=self.cfg.group)
        return jac[[0, 2, 4]][:, :3]

    def _at_rest(self) -> bool:
        """Speed control's motion has ended: its Cartesian velocity and a taken-over move's residual are zero."""
        return not np.any(self._v) and not np.any(self._residual)

    # -- inputs --------------------------------------------------------------------------------
    def start(self, q_measured: Sequence[float] | np.ndarray) -> None:
        """Hold the measured position (clipped into the joint limits: a joint on its stop reads just past it)."""
        q = np.clip(_finite(q_measured, 4, "start position"), self.lower, self.upper)
        self._q, self._qd, self._v, self._residual = q, np.zeros(4), np.zeros(2), np.zeros(4)
        self._qdd, self._last_residual = np.zeros(4), np.zeros(4)
        self._pitch_ref = float(self.task_state(q)[2])
        self._pending, self._takeover = None, False
        self._enter(S.HOLDING)

    def set_speed(self, vx: float, vz: float, now: float) -> List[str]:
        """Accept a speed command at time `now` (the clock of `step`); returns notes on clamping.

        CommandError for non-finite values (the previous command goes on, or times out).
        """
        v = np.array([vx, vz], dtype=float)
        if not np.all(np.isfinite(v)):
            self.stats["dropped"] += 1
            raise CommandError(f"speed command ({vx}, {vz}) is not finite")
        lim = self.cfg.max_speed
        clipped = np.clip(v, -lim, lim)
        notes = [f"v_{a} {b:.4g} clamped to {c:.4g} m/s" for a, b, c in zip("xz", v, clipped) if b != c]
        self.stats["commands"] += 1
        self.stats["clamped"] += bool(notes)
        self._cmd, self._cmd_time, self._timed_out = clipped, float(now), False
        moving = bool(np.any(clipped != 0.0))
        if self._state in (S.HOLDING, S.STOPPING) or (self._state is S.BRAKING and moving):
            self._pending = None                     # the latest input wins
            self._enter(S.SPEED)
        elif self._state is S.JOINT_TARGET and moving:
            self._takeover = True
        return notes

    def set_target(self, position: Sequence[float], velocity: Optional[Sequence[float]] = None) -> List[str]:
        """Accept a joint target (4 positions, optional per-joint speed limits); returns clamp notes.

        TargetError for a wrong length, non-finite values or no feedback yet (as the joint
        tracker: a target from before the robot was there is not kept): the previous input goes on.
        """
        if not self.started:
            self.stats["dropped"] += 1
            raise TargetError("not started: no torso feedback yet")
        try:
            q = _finite(position, 4, "torso target position")
            speed = None if velocity is None or len(velocity) == 0 else _finite(velocity, 4, "torso target velocity")
        except TargetError:
            self.stats["dropped"] += 1
            raise
        goal = np.clip(q, self.lower, self.upper)
        notes = [f"{n} target {a:.4g} clamped to {b:.4g}" for n, a, b in zip(self.names, q, goal) if a != b]
        if speed is not None:
            cap = self.cfg.joint_speed_cap
            notes += [f"{n} speed {s:.4g} capped to {cap:.4g}" for n, s in zip(self.names, speed) if s > cap]
        self.stats["targets"] += 1
        self.stats["clamped"] += bool(notes)
        self._pending = (goal, speed)
        self._cmd_time, self._takeover = None, False   # speed control ends (braking first when moving)
        if self._state is not S.JOINT_TARGET:          # (a move re-plans from its state on the next tick)
            self._enter(S.BRAKING)
        return notes

    # -- the tick ------------------------------------------------------------------------------
    def step(self, now: float, q_measured: Sequence[float] | np.ndarray,
             v_measured: Optional[Sequence[float] | np.ndarray] = None, age: float = 0.0) -> TorsoCommand:
        """Advance to time `now` (feedback stamp) with the measured joints (and velocities, for the gate: None
        when unknown; `age` [s]: the feedback's, whose lag beyond the usual the gate allows); returns the
        set-points."""
        q_meas = np.clip(_finite(q_measured, 4, "measured position"), self.lower, self.upper)
        v_meas = None if v_measured is None else np.asarray(v_measured, dtype=float)
        if v_meas is not None and (v_meas.shape != (4,) or not np.isfinite(v_meas).all()):
            v_meas = None
        if not self.started:
            self.start(q_meas)
        elapsed = self.clock.elapsed(now)
        dt = 0.0 if elapsed is None else elapsed          # first tick, or the clock went back: no motion
        self.stats["ticks"] += 1
        why = self.guard.resync(q_meas, self._q)
        if why is not None:           # the motors were not holding the joints: start again from where they are
            self._resync(q_meas, why, news=why != self._last_why)
        self._last_why = why
        if self._state is S.JOINT_TARGET and self._takeover:
            self._take_over()
        if self._state is S.JOINT_TARGET:
            self._joint_tick(dt, q_meas, v_meas, age)
        else:
            if dt > 0.0 and not self.guard.gate(1, q_meas, v_meas, self._q, self._qd, age):
                dt = 0.0              # the joints lag the moving command and do not keep pace: it waits
                self.stats["paused"] += 1
            self._speed_tick(dt, now)
        return TorsoCommand(self._q.copy(), self._qd.copy(), self._qdd.copy(), self.mode)

    def _resync(self, q_meas: np.ndarray, why: str, news: bool = True) -> None:
        """Start again from the measured position (the motors were off, or unknown after stale feedback);
        `news`: a new reason, counted and said (the same one tick after tick is not)."""
        if news:
            error = np.abs(q_meas - self._q)
            worst = int(np.argmax(error))
            self.stats["resyncs"] += 1
            self.events.append(f"command re-seeded from the measured position: {why}; {self.names[worst]} was "
                               f"{error[worst]:.3f} rad from it")
        if self._state is S.JOINT_TARGET:
            self.tracker.reset(q_meas)
            if self._last_target is not None:
                self.tracker.set_target(*self._last_target)
            self._q, self._qd, self._qdd = q_meas.copy(), np.zeros(4), np.zeros(4)
        else:
            self.start(q_meas)

    def _joint_tick(self, dt: float, q_meas: np.ndarray, v_meas: Optional[np.ndarray], age: float) -> None:
        trk = self.tracker
        if self._pending is not None:             # a new target during a move: Ruckig continues from its state
            pending, self._pending = self._pending, None
            if self._give_tracker(pending):
                self._last_target = pending
        steps = self.clock.ticks(dt)
        allowed = self.guard.gate(steps, q_meas, v_meas, trk.position, trk.velocity, age)
        if allowed < steps:                       # the joints lag and do not keep pace: the plan's clock waits
            steps = 0
            self.stats["paused"] += 1
        for _ in range(steps):
            trk.advance()
        if trk.last_error:
            self.events.append(f"joint-target trajectory: {trk.last_error}")
        self._q, self._qd, self._qdd = trk.position, trk.velocity, trk.acceleration
        if trk.at_target:                          # back to speed control, holding here
            target = trk.target
            assert target is not None, "at_target means the tracker has a target"
            self._v, self._residual, self._last_residual = np.zeros(2), np.zeros(4), np.zeros(4)
            self._q, self._qd, self._qdd = target, np.zeros(4), np.zeros(4)
            self._pitch_ref = float(self.task_state(self._q)[2])
            self._enter(S.HOLDING)

    def _take_over(self) -> None:
        """A speed command during a joint-target move: start from its state without a velocity jump.

        The Cartesian velocity state starts at the move's (x, z) velocity; the part of the joint
        velocity speed control would not produce (pitch rate, yaw) decays at joint_acceleration.
        """
        self._takeover = False
        q, qd = self.tracker.position, self.tracker.velocity
        jac = self._task_jacobian(q)
        v = jac[:2] @ qd[:3]
        self._q, self._v = q, v
        self._residual = qd - np.append(self._dls(jac)[0] @ np.array([*v, 0.0]), 0.0)
        self._last_residual = self._residual.copy()
        self._pitch_ref = float(self.task_state(q)[2])
        self._enter(S.SPEED)

    def _speed_tick(self, dt: float, now: float) -> None:
        cfg = self.cfg
        live = self._cmd_time is not None and now - self._cmd_time <= cfg.command_timeout
        if self._cmd_time is not None and not live and not self._timed_out:
            self._timed_out = True
            self.stats["timeouts"] += 1
            self.events.append(f"speed commands silent for more than {cfg.command_timeout} s: "
                               "decelerating to zero and holding")
        if self._state is S.SPEED and not live:
            self._enter(S.STOPPING)
        elif self._state is S.HOLDING and live:      # (after a start or a re-seed with the stream on)
            self._enter(S.SPEED)
        if self._state is S.BRAKING and self._at_rest():
            self._start_joint_target()
            return
        if dt <= 0.0:           # a repeated stamp: the same command again
            return
        self._speed_motion(dt, live)
        if self._state is S.STOPPING and self._at_rest():
            self._enter(S.HOLDING)

    def _speed_motion(self, dt: float, live: bool) -> None:
        """One step of resolved-rate control: the commanded (or braking) Cartesian velocity and the held pitch."""
        cfg = self.cfg
        state = self.task_state(self._q)
        p, pitch = state[:2], float(state[2])
        target = self._cmd.copy() if live and self._state is not S.BRAKING else np.zeros(2)
        target, limited = rr.box_target(cfg, target, p, dt, pull_back=live)
        if np.any(self._residual):
            self._pitch_ref = pitch               # a taken-over move's pitch rate: latch where it ends
        pitch_error = math.remainder(self._pitch_ref - pitch, 2 * math.pi)
        if abs(pitch_error) < PITCH_DEADBAND:
            pitch_error = 0.0                     # round-off: it would keep the joints creeping at 1e-16 rad/s
        if not (pitch_error or target.any() or self._v.any() or self._residual.any() or self._qd.any()):
            # at rest with nothing to do (most ticks of an idle torso): every term below is zero
            # and the command stays where it is (measured: 350 -> ~100 µs per tick). A command into
            # a face still counts as workspace-limited; `damped` counts ticks whose motion was damped
            if limited:
                self.stats["workspace_limited"] += 1
            self._qdd = np.zeros(4)
            return
        jac = self._task_jacobian(self._q)
        v_full = rr.toward(self._v, target, cfg.max_acceleration * dt)
        v_full, capped = rr.box_cap(cfg, v_full, p, dt)
        if limited or capped:
            self.stats["workspace_limited"] += 1
        w = cfg.pitch_gain * pitch_error
        pinv, smin = self._dls(jac)
        kick = rr.escape(cfg, self._q, p, v_full, smin)
        qd_rest = np.append(pinv @ (np.array([0.0, 0.0, w]) - jac @ kick) + kick, 0.0) + self._residual
        dv = v_full - self._v
        # the joint acceleration limit applies to speed control's own motion: a taken-over move's
        # residual decays at its own rate beside it
        share = rr.acceleration_scale(np.append(pinv[:, :2] @ dv, 0.0),
                                      np.append(pinv[:, :2] @ self._v, 0.0) + qd_rest - self._residual,
                                      self._qd - self._last_residual, cfg.joint_acceleration * dt)
        v = v_full
        if share < 1.0:
            self.stats["acceleration_limited"] += 1
            v, _ = rr.box_cap(cfg, self._v + share * dv, p, dt)
        qd = np.append(pinv[:, :2] @ v, 0.0) + qd_rest
        peak = float(np.max(np.abs(qd)))
        scale = 1.0
        if peak > cfg.joint_speed_cap:
            scale = cfg.joint_speed_cap / peak
            self.stats["speed_capped"] += 1
        joint_scale = rr.joint_limit_scale(cfg, qd * scale, self._q, self.lower, self.upper, dt)
        if joint_scale < 1.0:
            self.stats["joint_limited"] += 1
        scale *= joint_scale
        qd = qd * scale
        self._v = v * scale
        self._last_residual = self._residual * scale
        self._residual = rr.toward(self._residual, 0.0, cfg.joint_acceleration * dt)
        self._q = np.clip(self._q + qd * dt, self.lower, self.upper)
        self._qd, self._qdd = qd, (qd - self._qd) / dt

    def _dls(self, jac: np.ndarray) -> Tuple[np.ndarray, float]:
        pinv, smin, damped = rr.dls(self.cfg, jac)
        if damped:
            self.stats["damped"] += 1
        return pinv, smin

    def _start_joint_target(self) -> None:
        pending, self._pending = self._pending, None
        assert pending is not None, "BRAKING is entered with a pending target, left when it is dropped"
        self.tracker.reset(self._q)
        if self._give_tracker(pending):
            self._last_target = pending
            self._qd, self._qdd = np.zeros(4), np.zeros(4)
            self.clock.restart_ticks()
            self._enter(S.JOINT_TARGET)
        else:
            self._enter(S.HOLDING)

    def _give_tracker(self, target: Tuple[np.ndarray, Optional[np.ndarray]]) -> bool:
        """Hand a pending target to the trajectory; False (dropped, counted, said) if it refuses it.

        set_target checked it as the trajectory does, so this is a last guard: a target must never
        stay pending to be refused again on every tick."""
        try:
            self.tracker.set_target(*target)
        except TargetError as e:
            self.stats["dropped"] += 1
            self.events.append(f"joint target dropped by the trajectory: {e}")
            return False
        return True
