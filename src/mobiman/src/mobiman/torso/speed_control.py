"""Torso speed control (the guide's 躯干速度控制), free of ROS.

A Cartesian velocity (v_x, v_z) of `torso_link3`'s origin, in base_link axes, becomes torso joint
positions and velocities by resolved-rate control: each tick solves the 3-row task (x, z, trunk
pitch) for joints 1-3 by damped least squares on the pinocchio Jacobian (RobotModel), with the
pitch held at the value latched when speed control took over; joint 4 (yaw) is held. The joint
positions are integrated from the command, not re-read from the motors every tick, so gravity
sag does not accumulate into drift. Around it: a speed clamp and a Cartesian acceleration limit
(so a step command, a stop or a silent stream is smooth), the workspace box of the guide, the
URDF joint limits, a joint speed cap and, for joint targets, the joint tracker's Ruckig
trajectory. Positions x, z are those of torso_link3's origin relative to torso_joint1's origin
(a point fixed in base_link), in base_link axes: the guide's workspace coordinates.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Mapping, Sequence

import numpy as np

from mobiman.model.robot_model import RobotModel
from mobiman.tracker.joint_tracker import JointTrajectoryTracker, TargetError, TrackerLimits

PITCH_DEADBAND = 1e-9     # [rad] pitch errors below this are round-off, not a posture to correct
_INSIDE_TOL = 1e-6        # [m] rounding allowance on the workspace faces (q = 0 sits on z = 0.7)
_BRAKE_SHARE = 0.9        # braking curves plan with this share of the acceleration limit: the rest lets the
                          # rate limiter absorb FK curvature and coupling between the axes without a jump


class CommandError(ValueError):
    """A speed command that must be dropped (non-finite values)."""


@dataclass(frozen=True)
class TorsoSpeedConfig:
    """Limits and gains of the torso speed controller (one YAML key each, see config/torso_speed_control.yaml)."""

    max_speed: float = 0.2                  # [m/s] per Cartesian component
    max_acceleration: float = 0.5           # [m/s²] per Cartesian component
    workspace_x: tuple[float, float] = (-0.1, 0.2)   # [m] torso_link3 relative to torso_joint1, base axes
    workspace_z: tuple[float, float] = (0.1, 0.7)
    workspace_gain: float = 2.0             # [1/s] pull-back speed per metre outside the box
    pitch_gain: float = 2.0                 # [1/s] correction of pitch drift
    damping: float = 0.03                   # largest DLS damping λ (at the singular straight posture)
    singular_threshold: float = 0.04        # damping starts when the task's smallest singular value is below this
    escape_rate: float = 0.5                # [rad/s] joint-2 bend that leaves the straight posture (0: off)
    bend_sign: float = -1.0                 # bend direction of joint 2 from exactly straight (the vendor's postures: −)
    joint_speed_cap: float = 1.5            # [rad/s] whole q̇ scaled down to this
    joint_acceleration: float = 4.0         # [rad/s²] speed control's joint acceleration limit (braking at limits too)
    joint_limit_margin: float = 0.005       # [rad] speed control stops this far inside the URDF limits
    resync_error: float = 0.1               # [rad] command re-seeded from the measurement beyond this
    command_timeout: float = 0.2            # [s] silent speed stream -> decelerate to zero and hold
    max_step: float = 0.05                  # [s] longest time step integrated at once (a stall is not a jump)
    trajectory_rate_hz: float = 500.0       # Ruckig step of joint-target moves
    max_following_error: float = 0.02       # [rad] joint-target plan waits for joints lagging more (0: off)
    frame: str = "torso_link3"
    origin_frame: str = "torso_link1"       # its origin is torso_joint1's, fixed in base_link
    base_frame: str = "base_link"
    group: str = "torso"

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name.startswith("workspace_") and f.name != "workspace_gain":
                lo, hi = (float(x) for x in v)
                if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                    raise ValueError(f"{f.name} must be [low, high] with low < high, got {v}")
                object.__setattr__(self, f.name, (lo, hi))
            elif isinstance(f.default, float):
                object.__setattr__(self, f.name, float(v))
                if not math.isfinite(float(v)):
                    raise ValueError(f"{f.name} must be finite, got {v}")
        positive = ("max_speed", "max_acceleration", "damping", "singular_threshold", "joint_speed_cap",
                    "joint_acceleration", "resync_error", "command_timeout", "max_step", "trajectory_rate_hz")
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("workspace_gain", "pitch_gain", "escape_rate", "joint_limit_margin", "max_following_error"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
        if self.bend_sign not in (-1.0, 1.0):
            raise ValueError(f"bend_sign must be -1 or 1, got {self.bend_sign}")

    @classmethod
    def from_params(cls, p: Mapping[str, Any]) -> "TorsoSpeedConfig":
        """From a param dict; `workspace: {x: [lo, hi], z: [lo, hi]}` or flat keys; unknown keys ignored."""
        kw = {f.name: p[f.name] for f in fields(cls) if f.name in p}
        ws = p.get("workspace") or {}
        for axis in ("x", "z"):
            if axis in ws:
                kw[f"workspace_{axis}"] = tuple(ws[axis])
        return cls(**kw)


@dataclass(frozen=True)
class TorsoCommand:
    """One tick's output: joint set-points for the motors (MIT p_des, v_des) and what produced them."""

    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray   # of the command over the last step (for an inertial feed-forward)
    mode: str          # "speed" (incl. holding, stopping), "braking for target" or "joint target"


def _finite(values: Sequence[float], n: int, what: str) -> np.ndarray:
    v = np.asarray(values, dtype=float).ravel()
    if v.shape != (n,):
        raise TargetError(f"{what} has {v.shape[0]} entries, expected {n}")
    if not np.all(np.isfinite(v)):
        raise TargetError(f"{what} has non-finite entries: {v.tolist()}")
    return v


def _stop_speed(distance: np.ndarray | float, accel: float, dt: float) -> np.ndarray | float:
    """Highest speed from which steps of dt, slowing by accel·dt each, stop within `distance`.

    The discrete form of sqrt(2·a·d): with v_max(d) the braking sequence v, v - a·dt, ... covers
    exactly d, so a rate limiter at a·dt follows it without lagging into the face.
    """
    step = accel * dt
    return step * (np.sqrt(0.25 + 2.0 * np.maximum(distance, 0.0) / (step * dt)) - 0.5)


def _toward(x: np.ndarray, target: np.ndarray | float, step: np.ndarray | float) -> np.ndarray:
    return x + np.clip(target - x, -step, step)


class TorsoSpeedController:
    """Resolved-rate torso control with joint-target moves; the feedback drives `step`.

    Inputs win by recency: a joint target stops speed control (braking at the acceleration limit
    first, then a Ruckig move from rest); a non-zero speed command takes a joint-target move over
    from its current state (zero speed commands do not cancel a move). Thread-unsafe: the caller
    serialises calls.
    """

    def __init__(self, model: RobotModel, config: TorsoSpeedConfig = TorsoSpeedConfig()):
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
        self._started = False
        self._mode = "speed"
        self._q = np.zeros(4)             # commanded (integrated) joint positions
        self._qd = np.zeros(4)            # commanded joint velocities
        self._qdd = np.zeros(4)           # and their change over the last step
        self._v = np.zeros(2)             # Cartesian velocity state (after rate limit and limits)
        self._residual = np.zeros(4)      # joint velocity of a taken-over move, decaying
        self._last_residual = np.zeros(4)   # the part of the last q̇ that was residual
        self._pitch_ref = 0.0
        self._cmd = np.zeros(2)
        self._cmd_time: float | None = None
        self._timed_out = True
        self._takeover = False
        self._tethered = False        # the command is held within resync_error of a lagging torso
        self._pending: tuple[np.ndarray, np.ndarray | None] | None = None
        self._last_target: tuple[np.ndarray, np.ndarray | None] | None = None
        self._last_time: float | None = None
        self._clock_debt = 0.0
        self.events: list[str] = []       # warnings for the caller to log (drained by it)
        self.stats = dict(ticks=0, commands=0, clamped=0, dropped=0, targets=0, workspace_limited=0,
                          joint_limited=0, speed_capped=0, acceleration_limited=0, damped=0, resyncs=0, tethered=0,
                          timeouts=0, paused=0)

    # -- state ---------------------------------------------------------------------------------
    @property
    def started(self) -> bool:
        return self._started

    @property
    def mode(self) -> str:
        if self._mode == "joint":
            return "joint target"
        if self._pending is not None:
            return "braking for target"
        return "speed"

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

    def frame_pose(self, q: Sequence[float]) -> Any:
        """Placement (pinocchio SE3) of the controlled frame in base_link for torso joints q."""
        x = self.model.configuration({self.cfg.group: q}, base=self._q_full)
        return self.model.pose(self.cfg.frame, x, self.cfg.base_frame)

    def state_of(self, pose: Any) -> np.ndarray:
        """(x, z, pitch) of a frame_pose: x, z in workspace coordinates (relative to torso_joint1)."""
        r = pose.rotation
        return np.array([*(pose.translation[[0, 2]] - self.origin), math.atan2(r[0, 2], r[2, 2])])

    def task_state(self, q: Sequence[float]) -> np.ndarray:
        """(x, z, pitch) of the controlled frame for torso joints q, x and z in workspace coordinates."""
        return self.state_of(self.frame_pose(q))

    def _task_jacobian(self, q: np.ndarray) -> np.ndarray:
        """The 3×3 task Jacobian at torso joints q (rows x, z, pitch; columns joints 1-3)."""
        x = self.model.configuration({self.cfg.group: q}, base=self._q_full)
        jac = self.model.jacobian(self.cfg.frame, x, reference=self.cfg.base_frame, group=self.cfg.group)
        return jac[[0, 2, 4]][:, :3]

    # -- inputs --------------------------------------------------------------------------------
    def start(self, q_measured: Sequence[float]) -> None:
        """Hold the measured position (clipped into the joint limits: a joint on its stop reads just past it)."""
        q = np.clip(_finite(q_measured, 4, "start position"), self.lower, self.upper)
        self._q, self._qd, self._v, self._residual = q, np.zeros(4), np.zeros(2), np.zeros(4)
        self._qdd, self._last_residual = np.zeros(4), np.zeros(4)
        self._pitch_ref = float(self.task_state(q)[2])
        self._mode, self._pending, self._takeover = "speed", None, False
        self._started = True

    def set_speed(self, vx: float, vz: float, now: float) -> list[str]:
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
        if np.any(clipped != 0.0):
            self._pending = None                     # the latest input wins
            self._takeover = self._mode == "joint"
        return notes

    def set_target(self, position: Sequence[float], velocity: Sequence[float] | None = None) -> list[str]:
        """Accept a joint target (4 positions, optional per-joint speed limits); returns clamp notes.

        TargetError for a wrong length, non-finite values or no feedback yet (as the joint
        tracker: a target from before the robot was there is not kept): the previous input goes on.
        """
        if not self._started:
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
        return notes

    # -- the tick ------------------------------------------------------------------------------
    def step(self, now: float, q_measured: Sequence[float]) -> TorsoCommand:
        """Advance to time `now` (feedback stamp) with the measured joints; returns the set-points."""
        q_meas = np.clip(_finite(q_measured, 4, "measured position"), self.lower, self.upper)
        if not self._started:
            self.start(q_meas)
        dt = self._advance_clock(now)
        self.stats["ticks"] += 1
        error = np.abs(q_meas - self._q)
        if np.max(error) > self.cfg.resync_error:
            if self._lagging(q_meas, error):
                self._tether(q_meas, error)
            else:
                self._resync(q_meas, error)
        else:
            self._tethered = False
        if self._mode == "joint" and self._takeover:
            self._take_over()
        if self._mode == "joint":
            self._joint_tick(dt, q_meas)
        else:
            self._speed_tick(dt, now)
        return TorsoCommand(self._q.copy(), self._qd.copy(), self._qdd.copy(), self.mode)

    def _advance_clock(self, now: float) -> float:
        if self._last_time is None or now < self._last_time:      # first tick, or the clock went back
            self._last_time = now
            return 0.0
        dt = min(now - self._last_time, self.cfg.max_step)
        self._last_time = now
        return dt

    def _lagging(self, q_meas: np.ndarray, error: np.ndarray) -> bool:
        """Speed control is moving the command and every joint beyond resync_error is behind it
        (the torso is slow: a busy machine, a stalled driver), not pushed off it nor blocked at rest."""
        if self._mode != "speed" or not np.any(self._qd):
            return False
        far = error > self.cfg.resync_error
        return bool(np.all((self._q[far] - q_meas[far]) * np.sign(self._qd[far]) > 0.0))

    def _tether(self, q_meas: np.ndarray, error: np.ndarray) -> None:
        """A torso behind a moving speed command: the command is held within resync_error of it
        (the spring's pull stays bounded) and goes on from there once the torso catches up. A
        re-seed would throw away the whole lead and the pitch held so far."""
        r = self.cfg.resync_error
        self._q = np.clip(np.clip(self._q, q_meas - r, q_meas + r), self.lower, self.upper)
        if not self._tethered:
            worst = int(np.argmax(error))
            self.stats["tethered"] += 1
            self.events.append(f"{self.names[worst]} is {error[worst]:.3f} rad behind the moving command "
                               f"(> {r} rad): the command waits within {r} rad of it")
            self._tethered = True

    def _resync(self, q_meas: np.ndarray, error: np.ndarray) -> None:
        worst = int(np.argmax(error))
        self.stats["resyncs"] += 1
        self.events.append(f"{self.names[worst]} is {error[worst]:.3f} rad from the command (> "
                           f"{self.cfg.resync_error} rad): command re-seeded from the measured position")
        if self._mode == "joint":
            self.tracker.reset(q_meas)
            if self._last_target is not None:
                self.tracker.set_target(*self._last_target)
            self._q, self._qd, self._qdd = q_meas.copy(), np.zeros(4), np.zeros(4)
        else:
            self.start(q_meas)

    def _joint_tick(self, dt: float, q_meas: np.ndarray) -> None:
        trk = self.tracker
        if self._pending is not None:             # a new target during a move: Ruckig continues from its state
            pending, self._pending = self._pending, None
            if self._give_tracker(pending):
                self._last_target = pending
        self._clock_debt += dt
        steps = int(self._clock_debt * self.cfg.trajectory_rate_hz + 1e-9)
        self._clock_debt -= steps / self.cfg.trajectory_rate_hz
        if steps and self.cfg.max_following_error > 0.0:
            behind = (trk.position - q_meas) * np.sign(trk.velocity)
            if np.max(behind) > self.cfg.max_following_error:     # the joints lag: the plan's clock waits
                steps = 0
                self.stats["paused"] += 1
        for _ in range(steps):
            trk.advance()
        if trk.last_error:
            self.events.append(f"joint-target trajectory: {trk.last_error}")
        self._q, self._qd, self._qdd = trk.position, trk.velocity, trk.acceleration
        if trk.at_target:                          # back to speed control, holding here
            self._mode, self._v, self._residual, self._last_residual = "speed", np.zeros(2), np.zeros(4), np.zeros(4)
            self._q, self._qd, self._qdd = trk.target, np.zeros(4), np.zeros(4)
            self._pitch_ref = float(self.task_state(self._q)[2])

    def _take_over(self) -> None:
        """A speed command during a joint-target move: start from its state without a velocity jump.

        The Cartesian velocity state starts at the move's (x, z) velocity; the part of the joint
        velocity speed control would not produce (pitch rate, yaw) decays at joint_acceleration.
        """
        self._takeover, self._mode = False, "speed"
        q, qd = self.tracker.position, self.tracker.velocity
        jac = self._task_jacobian(q)
        v = jac[:2] @ qd[:3]
        self._q, self._v = q, v
        self._residual = qd - np.append(self._dls(jac)[0] @ np.array([*v, 0.0]), 0.0)
        self._last_residual = self._residual.copy()
        self._pitch_ref = float(self.task_state(q)[2])

    def _speed_tick(self, dt: float, now: float) -> None:
        cfg = self.cfg
        live = self._cmd_time is not None and now - self._cmd_time <= cfg.command_timeout
        if self._cmd_time is not None and not live and not self._timed_out:
            self._timed_out = True
            self.stats["timeouts"] += 1
            self.events.append(f"speed commands silent for more than {cfg.command_timeout} s: "
                               "decelerating to zero and holding")
        if self._pending is not None and not np.any(self._v) and not np.any(self._residual):
            self._start_joint_target()
            return
        if dt <= 0.0:           # a repeated stamp: the same command again
            return
        state = self.task_state(self._q)
        p, pitch = state[:2], float(state[2])
        target = self._cmd.copy() if live and self._pending is None else np.zeros(2)
        target, limited = self._box_target(target, p, dt, pull_back=live)
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
        v_full = _toward(self._v, target, cfg.max_acceleration * dt)
        v_full, capped = self._box_cap(v_full, p, dt)
        if limited or capped:
            self.stats["workspace_limited"] += 1
        w = cfg.pitch_gain * pitch_error
        pinv, smin = self._dls(jac)
        kick = self._escape(self._q, p, v_full, smin)
        qd_rest = np.append(pinv @ (np.array([0.0, 0.0, w]) - jac @ kick) + kick, 0.0) + self._residual
        dv = v_full - self._v
        # the joint acceleration limit applies to speed control's own motion: a taken-over move's
        # residual decays at its own rate beside it
        share = self._acceleration_scale(np.append(pinv[:, :2] @ dv, 0.0),
                                         np.append(pinv[:, :2] @ self._v, 0.0) + qd_rest - self._residual,
                                         self._qd - self._last_residual, dt)
        v = v_full
        if share < 1.0:
            self.stats["acceleration_limited"] += 1
            v, _ = self._box_cap(self._v + share * dv, p, dt)
        qd = np.append(pinv[:, :2] @ v, 0.0) + qd_rest
        peak = float(np.max(np.abs(qd)))
        scale = 1.0
        if peak > cfg.joint_speed_cap:
            scale = cfg.joint_speed_cap / peak
            self.stats["speed_capped"] += 1
        joint_scale = self._joint_limit_scale(qd * scale, dt)
        if joint_scale < 1.0:
            self.stats["joint_limited"] += 1
        scale *= joint_scale
        qd = qd * scale
        self._v = v * scale
        self._last_residual = self._residual * scale
        self._residual = _toward(self._residual, 0.0, cfg.joint_acceleration * dt)
        self._q = np.clip(self._q + qd * dt, self.lower, self.upper)
        self._qd, self._qdd = qd, (qd - self._qd) / dt

    def _start_joint_target(self) -> None:
        pending, self._pending = self._pending, None
        self.tracker.reset(self._q)
        if self._give_tracker(pending):
            self._last_target = pending
            self._mode, self._qd, self._qdd, self._clock_debt = "joint", np.zeros(4), np.zeros(4), 0.0

    def _give_tracker(self, target: tuple[np.ndarray, np.ndarray | None]) -> bool:
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

    # -- the pieces ----------------------------------------------------------------------------
    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return (np.array([self.cfg.workspace_x[0], self.cfg.workspace_z[0]]),
                np.array([self.cfg.workspace_x[1], self.cfg.workspace_z[1]]))

    def _box_target(self, target: np.ndarray, p: np.ndarray, dt: float, pull_back: bool) -> tuple[np.ndarray, bool]:
        """Target velocity inside the box: toward a face at most the speed that stops on it within the
        acceleration limit (_stop_speed); outside, pulled back in at workspace_gain (while commanded)."""
        lo, hi = self._bounds()
        a, out = _BRAKE_SHARE * self.cfg.max_acceleration, target.copy()
        for i in range(2):
            if p[i] > hi[i] + _INSIDE_TOL:
                out[i] = -min(self.cfg.workspace_gain * (p[i] - hi[i]), self.cfg.max_speed) if pull_back else 0.0
            elif p[i] < lo[i] - _INSIDE_TOL:
                out[i] = min(self.cfg.workspace_gain * (lo[i] - p[i]), self.cfg.max_speed) if pull_back else 0.0
            else:
                out[i] = np.clip(out[i], -_stop_speed(p[i] - lo[i], a, dt), _stop_speed(hi[i] - p[i], a, dt))
        return out, bool(np.any(out != target))

    def _box_cap(self, v: np.ndarray, p: np.ndarray, dt: float) -> tuple[np.ndarray, bool]:
        """Hard cap after the rate limit: no component carries the point past a face in this step."""
        lo, hi = self._bounds()
        out = v.copy()
        for i in range(2):
            if lo[i] - _INSIDE_TOL <= p[i] <= hi[i] + _INSIDE_TOL:
                out[i] = np.clip(out[i], -max(p[i] - lo[i], 0.0) / dt, max(hi[i] - p[i], 0.0) / dt)
            elif p[i] > hi[i]:
                out[i] = min(out[i], 0.0)
            else:
                out[i] = max(out[i], 0.0)
        return out, bool(np.any(out != v))

    def _dls(self, jac: np.ndarray) -> tuple[np.ndarray, float]:
        """Damped least-squares inverse of the task Jacobian and its smallest singular value.

        The damping grows as the smallest singular value falls below singular_threshold (the
        straight posture, q2 -> 0), from 0 to `damping` at the singularity, so q̇ stays bounded.
        """
        u, s, vt = np.linalg.svd(jac)
        eps, smin = self.cfg.singular_threshold, float(s[-1])
        lam2 = self.cfg.damping ** 2 * (1.0 - (smin / eps) ** 2) if smin < eps else 0.0
        if lam2 > 0.0:
            self.stats["damped"] += 1
        return (vt.T * (s / (s ** 2 + lam2))) @ u.T, smin

    def _escape(self, q: np.ndarray, p: np.ndarray, v: np.ndarray, smin: float) -> np.ndarray:
        """Joint-2 bend (q̇ of joints 1-3) for leaving the straight posture inward.

        Exactly straight, the radial direction (along the line from torso_joint1) cannot move at
        all, whatever the damping; an inward command then bends joint 2 at up to escape_rate,
        toward the side it is already bent to (bend_sign when exactly straight), fading out as
        the smallest singular value reaches singular_threshold. The task compensates the bend's
        side effects (the caller solves for the rest).
        """
        cfg, kick = self.cfg, np.zeros(3)
        radius = float(np.linalg.norm(p))
        if smin >= cfg.singular_threshold or cfg.escape_rate <= 0.0 or radius < 1e-9:
            return kick
        inward = -float(v @ p) / radius
        if inward > 0.0:
            bend = math.copysign(1.0, q[1]) if abs(q[1]) > 1e-6 else cfg.bend_sign
            kick[1] = bend * cfg.escape_rate * min(1.0, inward / cfg.max_speed) * (1.0 - smin / cfg.singular_threshold)
        return kick

    def _acceleration_scale(self, qd_v: np.ndarray, qd_rest: np.ndarray, qd_prev: np.ndarray, dt: float) -> float:
        """Largest s in [0, 1] with |s·qd_v + qd_rest - qd_prev| ≤ joint_acceleration·dt per joint.

        qd_v is the joint velocity of this tick's Cartesian velocity change, qd_rest that of the rest:
        a change that would make the joints accelerate too hard is taken in part (near the straight
        posture a small Cartesian change is a large joint one). When no s complies, the one with the
        least excess is taken: a stop that needs more than the joint limit (s above 1) gets all of it.
        """
        delta = self.cfg.joint_acceleration * dt
        lo, hi = 0.0, 1.0
        for a, b, prev in zip(qd_v, qd_rest, qd_prev):
            if abs(a) > 1e-12:
                low, high = sorted(((prev - delta - b) / a, (prev + delta - b) / a))
                lo, hi = max(lo, low), min(hi, high)
        if lo <= hi:
            return hi
        candidates = np.clip([0.0, 1.0, lo, hi], 0.0, 1.0)
        excess = [float(np.max(np.abs(c * qd_v + qd_rest - qd_prev))) for c in candidates]
        return float(candidates[int(np.argmin(excess))])

    def _joint_limit_scale(self, qd: np.ndarray, dt: float) -> float:
        """Largest factor ≤ 1 for qd such that no joint moving toward a limit (less the margin) would
        fail to stop before it at joint_acceleration, nor cross it within this step."""
        m, a = self.cfg.joint_limit_margin, _BRAKE_SHARE * self.cfg.joint_acceleration
        room = np.where(qd > 0, self.upper - m - self._q, self._q - (self.lower + m))
        room = np.maximum(room, 0.0)
        allowed = np.minimum(_stop_speed(room, a, dt), room / dt)
        speed = np.abs(qd)
        moving = speed > 1e-12
        if not np.any(moving):
            return 1.0
        return float(min(1.0, np.min(allowed[moving] / speed[moving])))
