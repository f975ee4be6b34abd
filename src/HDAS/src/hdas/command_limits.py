"""What a motor group's command may carry and how fast it may change (ROS-free, I/O-free).

`CommandLimits` holds every bound HDAS puts on a command before it is encoded:

* `clamp`: a command's fields (p_des, v_des, kp, kd, t_ff) to the URDF's joint, velocity and
  effort limits and to what the motor's frame carries, in the group's mode (MIT, or PID =
  Damiao force-position: v_des a speed limit, t_ff a torque-limit ratio, no gains);
* the gripper's commands in their own units (`gripper_from_motor`: the motor's rad, rad/s, N·m;
  `gripper_stroke`: a stroke in mm) turned into joint units, and the chassis's steer angles and
  wheel speeds (`clamp_chassis`);
* `bound_mit`, every MIT cycle: the set-point ramp (`hdas.slew`: a step in a command or a gripper
  stroke target becomes a ramp at the velocity limit), the rate at which the torque a command asks
  for may change (`TORQUE_RAMP_S`), and the torque at the last measured state (the effort limit).

Joint units are the URDF's (rad, m for gripper fingers); motor units are the motor's rad, converted
with each motor's `metres_per_rad` (`ratio`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from hdas.slew import SlewLimiter
from r1_can import damiao

TORQUE_RAMP_S = 0.05      # [s] a new command changes a motor's torque from zero to the effort limit at the fastest
TORQUE_BUCKET_S = 0.005   # [s] of that change that may be spent at once (a /clock step of the simulated robot)

FIELD_NAMES = ("p_des", "v_des", "kp", "kd", "t_ff")
MIT_FIELDS = frozenset(FIELD_NAMES)
PID_FIELDS = frozenset(("p_des", "v_des", "t_ff"))      # force-position: no gains


@dataclass(frozen=True)
class JointLimitArrays:
    """Per-motor limits in joint units, in the group's motor order."""

    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


@dataclass
class Command:
    """A validated, clamped command in joint units."""

    p: np.ndarray
    v: np.ndarray
    kp: np.ndarray
    kd: np.ndarray
    t: np.ndarray
    stamp: float                        # the driver's clock (monotonic)
    robot_stamp: float | None = None    # the robot's clock (ROS time) when the group has one


def at_rest(cmd: Command, here: np.ndarray, hold_kp: np.ndarray, hold_kd: np.ndarray) -> Command:
    """MIT hold after `cmd` went stale: at rest, at its p_des with its gains and feed-forward; a
    motor it drove without stiffness (torque or velocity control, p_des meaning nothing) holds
    `here` (its measured position) with the hold gains instead of pulling to that p_des."""
    stiff = cmd.kp > 0
    return Command(np.where(stiff, cmd.p, here), np.zeros_like(cmd.v), np.where(stiff, cmd.kp, hold_kp),
                   np.where(cmd.kd > 0, cmd.kd, hold_kd), cmd.t, cmd.stamp, cmd.robot_stamp)


class CommandError(ValueError):
    """A command that cannot be used at all (wrong length, non-finite)."""


def check_finite(name: str, values: np.ndarray) -> None:
    if not np.isfinite(values).all():
        raise CommandError(f"{name} has non-finite values {values.tolist()}")


def command_array(values: Sequence[Sequence[float]], count: int, mode: str) -> np.ndarray:
    """The fields (p_des, v_des, kp, kd, t_ff) of a command of `count` motors as one 5 × count array:
    one conversion, one finiteness check. A field the mode does not use (PID: the gains) is zeros
    whatever it holds; a used one of another length than p_des, or non-finite, is a CommandError."""
    needed = PID_FIELDS if mode == "pid" else MIT_FIELDS
    fields = tuple(zip(FIELD_NAMES, values))
    for name, field in fields:
        if name in needed and len(field) != count:
            raise CommandError(f"{name} has {len(field)} entries, p_des has {count}")
    zeros = (0.0,) * count
    arr = np.array([field if name in needed else zeros for name, field in fields], dtype=float)
    if not np.isfinite(arr).all():
        for row, name in enumerate(FIELD_NAMES):
            check_finite(name, arr[row])
    return arr


class CommandLimits:
    """The bounds of one group's commands, for motors with joint `limits`, joint units per motor
    radian `ratio` and the motors' peak torques `tmax` (motor units), all in the group's order."""

    def __init__(self, limits: JointLimitArrays, ratio: np.ndarray, tmax: np.ndarray):
        self.limits = limits
        self.ratio = np.asarray(ratio, dtype=float)
        self.tmax = np.asarray(tmax, dtype=float)
        self.n = len(self.ratio)
        self._bounds_cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        # MIT set-points move toward their targets at most at the URDF velocity limit: a step in a
        # command (a raw command, a stroke target) becomes a ramp; started from the measured position
        self.slew = SlewLimiter(limits.velocity)
        self.last_sent: Command | None = None     # the MIT command sent last cycle (after every bound)
        self._torque_clock: float | None = None
        self._torque_budget = np.zeros(self.n)

    # -- clamping ------------------------------------------------------------------------------
    def bounds(self, mode: str) -> tuple[np.ndarray, np.ndarray]:
        """Per field (p, v, kp, kd, t) and motor, the lowest and highest value a command may carry
        in `mode`: the URDF limits and what the motor's frame can carry (5 × n each)."""
        cached = self._bounds_cache.get(mode)
        if cached is not None:
            return cached
        lim, r, zero = self.limits, self.ratio, np.zeros(self.n)
        if mode == "pid":     # v is a speed limit, t a torque-limit ratio; no gains
            lo = np.array([lim.lower, zero, zero, zero, zero])
            hi = np.array([lim.upper, lim.velocity, zero, zero, np.minimum(1.0, lim.effort * r / self.tmax)])
        else:
            lo = np.array([lim.lower, -lim.velocity, zero, zero, -lim.effort])
            hi = np.array([lim.upper, lim.velocity, damiao.KP_MAX / (r * r), damiao.KD_MAX / (r * r), lim.effort])
        self._bounds_cache[mode] = (lo, hi)
        return lo, hi

    def clamp(self, arr: np.ndarray, idx: slice, mode: str, now: float) -> tuple[Command, list[str]]:
        """Clamp a 5 × k command (p, v, kp, kd, t of motors `idx`) to `bounds(mode)`; returns it as a
        Command stamped `now` and a note per field that changed (PID's ignored gains are not news)."""
        lo, hi = self.bounds(mode)
        out = np.minimum(np.maximum(arr, lo[:, idx]), hi[:, idx])
        notes: list[str] = []
        changed = out != arr
        if changed.any():
            for row, name in enumerate(FIELD_NAMES):
                c = changed[row]
                if c.any() and not (name in ("kp", "kd") and mode == "pid"):
                    notes.append(f"{name} clamped {arr[row][c].round(4).tolist()} -> {out[row][c].round(4).tolist()}")
        return Command(out[0], out[1], out[2], out[3], out[4], now), notes

    def gripper_from_motor(self, p: float, v: float, kp: float, kd: float, t: float,
                           mode: str) -> tuple[float, float, float, float, float]:
        """A gripper command in its motor's units (rad, rad/s, N·m; the last motor) in joint units;
        in PID mode t is a torque-limit ratio, the same in both."""
        r = float(self.ratio[-1])
        return p * r, v * r, kp / (r * r), kd / (r * r), t if mode == "pid" else t / r

    def gripper_stroke(self, stroke_mm: float, mode: str, position_kp: float,
                       position_kd: float) -> tuple[float, float, float, float, float]:
        """A stroke target (gap between the fingers, mm) as a gripper command in joint units: each
        finger moves half the stroke. PID: at the velocity limit with the full torque ratio; MIT: with
        the position gains (`position_kp`, `position_kd` in motor units, N·m/rad)."""
        travel = stroke_mm / 2000.0
        if mode == "pid":
            return travel, float(self.limits.velocity[-1]), 0.0, 0.0, 1.0
        r2 = float(self.ratio[-1]) ** 2
        return travel, 0.0, position_kp / r2, position_kd / r2, 0.0

    def clamp_chassis(self, steer: np.ndarray, speed: np.ndarray, modules: int,
                      radius: float) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Steer angles [rad] to the steering joints' limits and wheel linear speeds [m/s] to the
        wheels' velocity limits times `radius` (steer motors first, then the wheels)."""
        m = modules
        lo, hi = self.limits.lower[:m], self.limits.upper[:m]
        vmax = self.limits.velocity[m:] * radius
        out_s, out_v = np.clip(steer, lo, hi), np.clip(speed, -vmax, vmax)
        notes = [f"{name} clamped {a[a != b].round(4).tolist()} -> {b[a != b].round(4).tolist()}"
                 for name, a, b in (("steer", steer, out_s), ("wheel speed", speed, out_v)) if (a != b).any()]
        return out_s, out_v, notes

    # -- every MIT cycle -------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget the ramp and the last command sent: the next one starts from what the motors do."""
        self.slew.reset()
        self.last_sent = None
        self._torque_clock = None

    def bound_mit(self, cmd: Command, position: np.ndarray, velocity: np.ndarray, clock: float,
                  start_torque: np.ndarray | None = None) -> Command:
        """`cmd` as it may go out this cycle, at the measured `position` and `velocity` and the time
        `clock` (the robot's): ramped, its torque's change rate-bounded, its torque bounded.
        `start_torque` is what the motors push when the first command after a reset goes out
        (motors adopted from a previous driver), zero when None."""
        p, v = self.ramped(cmd, position, clock)
        cmd = self.torque_rate_bounded(replace(cmd, p=p, v=v), position, velocity, clock, start_torque)
        self.slew.position = cmd.p          # a set-point held back by the rate bound ramps on from there
        p, v, t = self.torque_bounded(cmd, position, velocity)
        self.last_sent = replace(cmd, p=p, v=v, t=t)
        return self.last_sent

    def ramped(self, cmd: Command, position: np.ndarray, clock: float) -> tuple[np.ndarray, np.ndarray]:
        """cmd's p and v as they may go out this cycle (MIT): each set-point moves toward its target at
        most at the joint's velocity limit, on the robot's clock (the ramp must hold in the time the
        joints move in: simulated time on the simulated robot). So a step in a command (a raw
        command, a stroke target) becomes a ramp. While a set-point is held back its v_des is the
        ramp's velocity: the motor's damping then follows the ramp instead of resisting it, and a
        stiff joint does not build up a lag that it overshoots the limit to make up (measured: 5 rad/s
        on a shoulder whose set-point ramped at 3 with v_des 0). A motor without stiffness (kp = 0)
        has its set-point follow its measured position, so that a stiff command after it ramps from
        where the joint is."""
        here = np.clip(position, self.limits.lower, self.limits.upper)
        if self.slew.position is None:
            self.slew.reset(here)
        self.slew.follow(cmd.kp <= 0, here)
        p = self.slew.step(cmd.p, clock)
        # (a command whose own v_des already goes the ramp's way keeps it: a planner's speed, below the limit)
        direction = np.sign(cmd.p - p)
        ramping = (p != cmd.p) & (cmd.kp > 0) & (cmd.v * direction <= 0)
        v = np.where(ramping, direction * self.limits.velocity, cmd.v) if ramping.any() else cmd.v
        return p, v

    def torque_rate_bounded(self, cmd: Command, position: np.ndarray, velocity: np.ndarray, clock: float,
                            start_torque: np.ndarray | None = None) -> Command:
        """`cmd` moved from last cycle's command only so far that the torque it asks for at the measured
        state changes by at most effort / TORQUE_RAMP_S a second of the robot's clock (a token bucket
        holding TORQUE_BUCKET_S of it, as `hdas.slew`: simulated time advances in /clock steps). So no
        single frame kicks a joint, whatever changes at once (a feed-forward step, stiffness raised to
        500, v_des at the limit): a light wrist given its 7 N·m effort for one 10 ms cycle gains 10
        rad/s. The blend moves every field (p, v, kp, kd, t) by the same share toward the new command.
        A joint pushed by the world meets the same command, so its stiffness is untouched: only the
        change of command is bounded."""
        prev = self.last_sent
        rate = self.limits.effort / TORQUE_RAMP_S
        if prev is None or self._torque_clock is None:    # enabled, or a new mode: from what the motors do now
            t0 = np.zeros(self.n) if start_torque is None else start_torque
            prev = Command(cmd.p, cmd.v, np.zeros(self.n), np.zeros(self.n), t0, cmd.stamp)
            self._torque_budget = np.zeros(self.n)
            self._torque_clock = clock
        dt = min(max(clock - self._torque_clock, 0.0), 1.0)
        self._torque_clock = clock
        budget = np.minimum(self._torque_budget + rate * dt, rate * TORQUE_BUCKET_S)
        q, w = position, velocity
        law = lambda c: c.kp * (c.p - q) + c.kd * (c.v - w) + c.t
        change = np.abs(law(cmd) - law(prev))
        share = np.where(change > budget, budget / np.maximum(change, 1e-12), 1.0)
        self._torque_budget = budget - share * change
        if np.all(share == 1.0):
            return cmd
        mix = lambda a, b: a + share * (b - a)
        return replace(cmd, p=mix(prev.p, cmd.p), v=mix(prev.v, cmd.v), kp=mix(prev.kp, cmd.kp),
                       kd=mix(prev.kd, cmd.kd), t=mix(prev.t, cmd.t))

    def torque_bounded(self, cmd: Command, position: np.ndarray,
                       velocity: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Move p_des (then v_des, then t_ff) so kp·Δp + kd·Δv + t_ff at the last measured state
        stays within the effort limit; p_des stays within the joint limits."""
        eff = self.limits.effort
        dv = cmd.v - velocity
        tau = cmd.kp * (cmd.p - position) + cmd.kd * dv + cmd.t
        over = np.abs(tau) > eff
        if not over.any():
            return cmd.p, cmd.v, cmd.t
        target = np.sign(tau) * eff
        p, v, t = cmd.p.copy(), cmd.v.copy(), cmd.t.copy()
        with np.errstate(divide="ignore", invalid="ignore"):
            fix_p = over & (cmd.kp > 0)
            p[fix_p] = (position + (target - cmd.kd * dv - cmd.t) / cmd.kp)[fix_p]
            p = np.clip(p, self.limits.lower, self.limits.upper)
            # the clip can undo the bound (a joint at its limit moving toward it): the velocity
            # term takes up what is left, or the feed-forward where there is no damping
            spring = cmd.kp * (p - position)
            tau = spring + cmd.kd * dv + t
            over = np.abs(tau) > eff * (1 + 1e-9)
            target = np.sign(tau) * eff
            fix_v = over & (cmd.kd > 0)
            # v_des stays within the velocity limit too: a v_des beyond it, to make the damping term
            # take up a bound, would drive the joint to it (a wrist at its stop reached 22 rad/s)
            vel = self.limits.velocity
            v[fix_v] = np.clip(velocity + (target - spring - t) / cmd.kd, -vel, vel)[fix_v]
            tau = spring + cmd.kd * (v - velocity) + t
            fix_t = np.abs(tau) > eff * (1 + 1e-9)
            t[fix_t] = (np.sign(tau) * eff - spring - cmd.kd * (v - velocity))[fix_t]
        return p, v, t
