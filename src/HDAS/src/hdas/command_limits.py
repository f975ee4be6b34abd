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
  for may change (`TORQUE_RAMP_S`), and the torque at the last measured state (`torque_window`): the
  effort limit, the speed governor (no push beyond `SPEED_MARGIN` over the velocity limit) and no
  push further past a position limit (`PRESS_BAND_S`).

The motor evaluates the MIT law T = kp (p_des - p) + kd (v_des - v) + t_ff itself, continuously, at
its true state; HDAS sees that state once a cycle, a cycle late. What HDAS bounds at the measured state
therefore holds between cycles only as far as the law's own gains carry it: so where the frame's kd
can carry it, the speed governor is a damping the motor applies (`within_window`).

Joint units are the URDF's (rad, m for gripper fingers); motor units are the motor's rad, converted
with each motor's `metres_per_rad` (`ratio`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from hdas.slew import SlewLimiter
from r1_can import damiao

TORQUE_RAMP_S = 0.05      # [s] a new command changes a motor's torque from zero to the effort limit at the fastest
TORQUE_BUCKET_S = 0.005   # [s] of that change that may be spent at once (a /clock step of the simulated robot)
# The speed governor: a command pushes a joint at most up to (1 + SPEED_MARGIN) x its velocity limit. Where the
# frame's kd can carry effort / that speed (light joints: the fingers, the wrists) the torque it may push with
# falls from the effort at rest to zero there, as damping the motor applies itself between cycles; elsewhere
# (the shoulder, the elbow, the torso: a damping that strong would cut their torque at rest) from the effort
# at (1 + SPEED_MARGIN - SPEED_BAND) x the limit, as HDAS measures the speed each cycle.
SPEED_MARGIN = 0.05
SPEED_BAND = 0.1
# A joint measured past a position limit is pushed further past it with at most the effort, falling to zero
# at the travel of PRESS_BAND_S at its velocity limit beyond the limit (0.5 mm for a finger, 6 mrad for a shoulder).
PRESS_BAND_S = 0.002

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
        # what the MIT frame carries, in joint units
        self.kd_frame = damiao.KD_MAX / (self.ratio * self.ratio)
        self.t_frame = self.tmax / self.ratio
        # the speed governor (SPEED_MARGIN): the torque pushing a joint its way at speed u is at most
        # effort * (v_zero - u) / band, within [0, effort]
        eff, vel = limits.effort, limits.velocity
        self.v_zero = vel * (1.0 + SPEED_MARGIN)
        self.damped = eff / self.v_zero <= self.kd_frame       # the motor can carry the governor as damping
        self.speed_band = np.where(self.damped, self.v_zero, vel * SPEED_BAND)
        self.kd_governor = np.where(self.damped, eff / self.v_zero, self.kd_frame)
        self.press_band = vel * PRESS_BAND_S
        # the same as Python floats: the per-motor loop of every cycle (numpy's per-call cost on 7 values
        # is what the arithmetic costs many times over)
        self._eff, self._vel = eff.tolist(), vel.tolist()
        self._lower, self._upper = limits.lower.tolist(), limits.upper.tolist()
        self._v_zero, self._band = self.v_zero.tolist(), self.speed_band.tolist()
        self._kd_gov = self.kd_governor.tolist()
        self._damp_from = np.where(self.damped, -np.inf, self.v_zero - self.speed_band).tolist()
        self._press, self._t_frame = self.press_band.tolist(), self.t_frame.tolist()
        self._damped = self.damped.tolist()
        self._last_velocity: np.ndarray | None = None      # measured at the last cycle (the heavy joints' gain)

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
        self._last_velocity = None

    def bound_mit(self, cmd: Command, position: np.ndarray, velocity: np.ndarray, clock: float,
                  start_torque: np.ndarray | None = None) -> Command:
        """`cmd` as it may go out this cycle, at the measured `position` and `velocity` and the time
        `clock` (the robot's): ramped, its torque's change rate-bounded, its torque bounded.
        `start_torque` is what the motors push when the first command after a reset goes out
        (motors adopted from a previous driver), zero when None."""
        p, v = self.ramped(cmd, position, clock)
        cmd = self.torque_rate_bounded(replace(cmd, p=p, v=v), position, velocity, clock, start_torque)
        self.slew.position = cmd.p          # a set-point held back by the rate bound ramps on from there
        last, self._last_velocity = self._last_velocity, velocity.copy()
        self.last_sent = self.within_window(cmd, position, velocity, None if last is None else velocity - last)
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

    def torque_window(self, position: np.ndarray, velocity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The torque (joint units) each motor may be asked for at the measured `position` and `velocity`:
        (lowest, highest), with lowest <= 0 <= highest (`_window`)."""
        out = [self._window(j, q, w) for j, (q, w) in enumerate(zip(position.tolist(), velocity.tolist()))]
        return np.array([lo for lo, _ in out]), np.array([hi for _, hi in out])

    def _window(self, j: int, q: float, w: float, gain: float = 0.0) -> tuple[float, float]:
        """Motor j's torque window (lowest, highest) at position q and speed w: within the effort limit;
        pushing the joint its way at speed u at most effort * (v_zero - u) / speed_band, with u taken
        `gain` further when the joint gained that much its way since the last cycle (the speed governor:
        zero from (1 + SPEED_MARGIN) x the velocity limit on); pushing a joint past a position limit
        further past it at most the effort, falling to zero at press_band beyond the limit. Torque toward
        the allowed speeds and positions (braking, restoring) is bounded by the effort alone."""
        eff, v0, band = self._eff[j], self._v_zero[j], self._band[j]
        hi = eff * min(1.0, max(0.0, (v0 - w - max(gain, 0.0)) / band))
        lo = -eff * min(1.0, max(0.0, (v0 + w + min(gain, 0.0)) / band))
        past = q - self._upper[j]
        if past > 0.0:
            hi = min(hi, eff * max(0.0, 1.0 - past / self._press[j]))
        past = self._lower[j] - q
        if past > 0.0:
            lo = max(lo, -eff * max(0.0, 1.0 - past / self._press[j]))
        return lo, hi

    def _fit(self, j: int, p: float, v: float, kp: float, kd: float, t: float, q: float, w: float,
             target: float, tau: float) -> tuple[float, float, float]:
        """Motor j's p, v, t moved so that its law at (q, w) gives `target` instead of `tau` (same sign, or
        zero): p and v toward q and w and t toward zero by the same share, p within the joint limits and v
        within the velocity limit, t taking up what those clips leave."""
        share = target / tau
        p = min(self._upper[j], max(self._lower[j], q + share * (p - q)))
        vel = self._vel[j]
        v = min(vel, max(-vel, w + share * (v - w)))
        t = share * t
        return p, v, t + target - (kp * (p - q) + kd * (v - w) + t)

    def torque_bounded(self, cmd: Command, position: np.ndarray,
                       velocity: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """p_des, v_des and t_ff of `cmd` moved so that the torque kp·Δp + kd·Δv + t_ff at the last measured
        state stays within the effort limit (`_fit`: the law then asks the effort, with the command's
        gains around the joint's state; no p_des beyond the joint limits, no v_des beyond the velocity
        limit, which would drive a joint at its stop to it)."""
        p, v, t = cmd.p.tolist(), cmd.v.tolist(), cmd.t.tolist()
        kp, kd = cmd.kp.tolist(), cmd.kd.tolist()
        for j, (q, w) in enumerate(zip(position.tolist(), velocity.tolist())):
            tau = kp[j] * (p[j] - q) + kd[j] * (v[j] - w) + t[j]
            eff = self._eff[j]
            if abs(tau) > eff:          # (False for a joint without a measured state: NaN)
                p[j], v[j], t[j] = self._fit(j, p[j], v[j], kp[j], kd[j], t[j], q, w, math.copysign(eff, tau), tau)
        return np.array(p), np.array(v), np.array(t)

    def within_window(self, cmd: Command, position: np.ndarray, velocity: np.ndarray,
                      gained: np.ndarray | None = None) -> Command:
        """`cmd` as it may go out at the measured `position` and `velocity`, motor by motor:

        * its torque there within `_window` (`_fit`); where the clips leave a restoring (past a limit) or
          braking (past the speed limit) torque beyond the window with t_ff at the effort, the gains are
          scaled down to meet it. A heavy joint's governor takes the speed it `gained` since the last
          cycle (measured, joint units/s) as gained again by the next: between two of HDAS's cycles only
          the joint's inertia bounds it;
        * the speed governor's damping where the frame carries it (`damped`: the fingers, the wrists):
          kd raised, at most to kd_governor, until the law pushes the joint no faster than v_zero its way
          (kd (v_zero - u) >= |T| at speed u), t_ff keeping the torque at the measured state. So the motor
          itself stops pushing at v_zero between HDAS's cycles: a finger given its effort would gain 2 m/s
          in one 10 ms cycle. Elsewhere kd is raised so only within the speed band, at most to the frame's;
        * t_ff within what the frame carries: the excess moved into v_des, then p_des.

        A motor without a measured state (NaN) keeps its command."""
        P, V, T = cmd.p.tolist(), cmd.v.tolist(), cmd.t.tolist()
        KP, KD = cmd.kp.tolist(), cmd.kd.tolist()
        gains = [0.0] * self.n if gained is None else gained.tolist()
        for j, (q, w) in enumerate(zip(position.tolist(), velocity.tolist())):
            if not (math.isfinite(q) and math.isfinite(w)):
                continue
            p, v, kp, kd, t = P[j], V[j], KP[j], KD[j], T[j]
            tau = kp * (p - q) + kd * (v - w) + t
            gain = gains[j] if math.isfinite(gains[j]) else 0.0
            lo, hi = self._window(j, q, w, 0.0 if self._damped[j] else gain)
            if not lo <= tau <= hi:
                target = hi if tau > hi else lo
                p, v, t = self._fit(j, p, v, kp, kd, t, q, w, target, tau)
                eff = self._eff[j]
                if abs(t) > eff:            # the clips left restoring or braking torque beyond the window
                    t_in = eff if t > 0 else -eff
                    rest = kp * (p - q) + kd * (v - w)
                    scale = min(1.0, max(0.0, (target - t_in) / rest)) if rest != 0.0 else 1.0
                    kp, kd, t = kp * scale, kd * scale, t_in
                tau = kp * (p - q) + kd * (v - w) + t
            if tau != 0.0:
                u = w if tau > 0.0 else -w
                if u > self._damp_from[j]:
                    v0 = self._v_zero[j]
                    k = min(abs(tau) / (v0 - u), self._kd_gov[j]) if u < v0 else self._kd_gov[j]
                    if k > kd:
                        t += (kd - k) * (v - w)
                        kd = k
            tf = self._t_frame[j]
            if abs(t) > tf:
                excess = t - math.copysign(tf, t)
                t -= excess
                if kd > 0.0:
                    vel = self._vel[j]
                    v_new = min(vel, max(-vel, v + excess / kd))
                    excess -= kd * (v_new - v)
                    v = v_new
                if kp > 0.0:
                    p = min(self._upper[j], max(self._lower[j], p + excess / kp))
            P[j], V[j], KP[j], KD[j], T[j] = p, v, kp, kd, t
        return replace(cmd, p=np.array(P), v=np.array(V), kp=np.array(KP), kd=np.array(KD), t=np.array(T))
