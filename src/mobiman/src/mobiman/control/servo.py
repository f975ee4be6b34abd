"""The MIT command around a plan, free of ROS: the controller's share of what the motors do each tick.

The motors run the MIT law themselves, T = kp·(p_des − p) + kd·(v_des − v) + t_ff, at their own rate.
Around the plan's position and velocity (p_des, v_des), the controller's part is t_ff:

* the **feed-forward** the plan and the world ask for (`mobiman.control.upper_body`: gravity, the
  plan's acceleration, the base's motion), its gravity taken at the *measured* posture as far as the
  loop is fast enough (`gravity_share`): the torso is an inverted pendulum, and gravity at the plan
  leaves its posture's stiffness at kp + dG/dq, 81 N·m/rad at the weakest (a push leaned it back
  slowly, over seconds); at the measured posture it is kp. Fed back late, the same term pumps energy
  in (it oscillated and fell at ~100 ms of delay), so it fades out between `delay_full` and
  `delay_none` of the loop's delay (feedback age plus a feedback period);
* **friction** at the planned velocity (`friction_feedforward`);
* **damping** of the servo's slow modes (`ModalDamping`): the MIT frame carries kd ≤ 5 N·m·s/rad,
  a damping ratio of 0.04 for the upper body's lean about torso_joint1 (a push rang for seconds). The
  servo's modes (M⁻¹·kp at the planned posture, the arms' inertia included) that the loop can reach
  within its delay get `damping_ratio` each, through t_ff on the measured velocity; the fast ones
  (13 Hz for the torso's joint-2/3 mode) are left to the motors' own kd, since damping delayed by a
  good part of their period would drive them instead. Per mode: full damping up to ω·delay =
  max_phase / 2, none from max_phase;
* everything within ±effort (the URDF's limit, the motors' peak): `clamp_effort`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np
import scipy.linalg

__all__ = ["ModalDamping", "MitServo", "ServoSettings", "clamp_effort", "friction_feedforward"]


def clamp_effort(t_ff: np.ndarray, effort: np.ndarray) -> Tuple[np.ndarray, bool]:
    """The feed-forward torque within ±effort (the URDF's limit); True when it was beyond it."""
    if all(-e <= t <= e for t, e in zip(t_ff.tolist(), effort.tolist())):   # the usual case, ~4x faster
        return t_ff, False                                                    # than numpy on 6 values
    return np.clip(t_ff, -effort, effort), True


def friction_feedforward(velocity: Sequence[float] | np.ndarray, coulomb: Sequence[float] | np.ndarray,
                         viscous: Sequence[float] | np.ndarray, smoothing: float = 0.02) -> np.ndarray:
    """Torque that cancels a joint friction model at the commanded velocity.

    coulomb·tanh(v/smoothing) + viscous·v: the tanh makes the Coulomb part continuous through zero
    velocity (`smoothing` [rad/s] sets how fast it builds up), so a joint at rest gets nothing and a
    reversal does not kick. Without it a stiff-but-finite servo lags by friction/kp on every move.
    ValueError for a smoothing ≤ 0.
    """
    v = np.asarray(velocity, dtype=float)
    if smoothing <= 0:
        raise ValueError(f"smoothing must be positive, got {smoothing}")
    return np.asarray(coulomb, float) * np.tanh(v / smoothing) + np.asarray(viscous, float) * v


@dataclass(frozen=True)
class ServoSettings:
    """The controller's share of one group's MIT command.

    `damping_ratio`: of each slow mode (0: no damping through t_ff); `max_phase` [rad]: a mode is damped
    in full while ω·delay ≤ max_phase / 2, not at all from max_phase; `gravity_feedback` (0..1): the
    share of the group's own gravity taken at the measured posture when the loop is fast; `delay_full`,
    `delay_none` [s]: the loop delay up to which that applies in full, from which not at all;
    `friction_coulomb` [N·m], `friction_viscous` [N·m·s/rad], `friction_smoothing` [rad/s]: per joint,
    the friction model cancelled at the planned velocity (empty: none)."""

    damping_ratio: float = 0.0
    max_phase: float = 0.6
    gravity_feedback: float = 0.0
    friction_coulomb: Tuple[float, ...] = ()
    friction_viscous: Tuple[float, ...] = ()
    friction_smoothing: float = 0.02
    delay_full: float = 0.03
    delay_none: float = 0.08

    def __post_init__(self) -> None:
        if len(self.friction_coulomb) != len(self.friction_viscous):
            raise ValueError("friction_coulomb and friction_viscous need the same entries")
        if min(self.friction_coulomb + self.friction_viscous, default=0.0) < 0.0:
            raise ValueError("friction must be >= 0")
        if not (self.damping_ratio >= 0.0 and self.max_phase > 0.0 and 0.0 <= self.gravity_feedback <= 1.0):
            raise ValueError(f"damping_ratio {self.damping_ratio} (>= 0), max_phase {self.max_phase} (> 0), "
                             f"gravity_feedback {self.gravity_feedback} (0..1)")
        if not (0.0 <= self.delay_full < self.delay_none and self.friction_smoothing > 0.0):
            raise ValueError(f"needs 0 <= delay_full < delay_none and smoothing > 0, not {self.delay_full}, "
                             f"{self.delay_none}, {self.friction_smoothing}")

    @property
    def feedback(self) -> bool:
        """Anything measured goes into t_ff (damping, gravity at the measured posture)."""
        return self.damping_ratio > 0.0 or self.gravity_feedback > 0.0


class ModalDamping:
    """The damping matrix D [N·m·s/rad] of a group's slow servo modes; −D·(v − v_plan) goes into t_ff.

    The modes are those of the servo's stiffness `kp` on the group's inertia M (K·φ = ω²·M·φ, φ
    normalised to φᵀMφ = 1); D = Σ w_k·2ζ·ω_k·(Mφ_k)(Mφ_k)ᵀ gives mode k the damping ratio w_k·ζ and
    the others none, w_k fading from 1 to 0 as ω_k·delay goes from max_phase / 2 to max_phase. The
    eigen-decomposition is kept until the inertia changes by more than `refresh` (relative)."""

    def __init__(self, kp: Sequence[float] | np.ndarray, ratio: float, max_phase: float, refresh: float = 0.02):
        self.kp = np.diag(np.asarray(kp, dtype=float))
        if np.any(np.diag(self.kp) <= 0.0):
            raise ValueError(f"modal damping needs kp > 0 on every joint, not {list(kp)}")
        self.ratio, self.max_phase, self.refresh = float(ratio), float(max_phase), float(refresh)
        self._inertia: Optional[np.ndarray] = None
        self._omega = np.zeros(0)
        self._shapes = np.zeros((0, 0))      # columns M·φ_k

    def modes(self, inertia: np.ndarray) -> np.ndarray:
        """The modes' angular frequencies [rad/s] at this inertia (recomputed when it changed enough)."""
        m = self._inertia
        if m is None or np.linalg.norm(inertia - m) > self.refresh * np.linalg.norm(m):
            w2, phi = scipy.linalg.eigh(self.kp, inertia)
            self._inertia = inertia.copy()
            self._omega = np.sqrt(np.maximum(w2, 0.0))
            self._shapes = inertia @ phi
        return self._omega

    def weights(self, delay: float) -> np.ndarray:
        """Each mode's share of the damping at a loop delay [s] (a NaN delay: taken as none)."""
        phase = self._omega * (delay if delay == delay else 0.0)
        return np.clip(2.0 - 2.0 * phase / self.max_phase, 0.0, 1.0)

    def matrix(self, inertia: np.ndarray, delay: float) -> np.ndarray:
        """D at the group's inertia matrix (n × n, symmetric positive definite) and the loop's delay [s]."""
        omega = self.modes(inertia)
        gains = self.weights(delay) * 2.0 * self.ratio * omega
        shapes = self._shapes
        return (shapes * gains) @ shapes.T


class MitServo:
    """One group's t_ff (see the module): feed-forward + friction + slow-mode damping, within ±effort."""

    def __init__(self, settings: ServoSettings, kp: Sequence[float] | np.ndarray, effort: Sequence[float] | np.ndarray):
        """`kp` [N·m/rad]: the MIT stiffness the motors run (the modes'); `effort` [N·m]: the joints' torque
        limits. ValueError for lengths that differ, or friction lists of another length."""
        self.settings = settings
        self.effort = np.asarray(effort, dtype=float)
        n = self.effort.shape[0]
        if len(kp) != n or (settings.friction_coulomb and len(settings.friction_coulomb) != n):
            raise ValueError(f"kp ({len(kp)}), friction ({len(settings.friction_coulomb)}) and effort ({n}) "
                             "need one entry per joint")
        self.coulomb = np.asarray(settings.friction_coulomb or (0.0,) * n, float)
        self.viscous = np.asarray(settings.friction_viscous or (0.0,) * n, float)
        self._friction = bool(self.coulomb.any() or self.viscous.any())
        self.modal = ModalDamping(kp, settings.damping_ratio, settings.max_phase) \
            if settings.damping_ratio > 0.0 else None

    def share(self, delay: float) -> float:
        """The share of gravity_feedback that applies at a loop delay [s] (1 up to delay_full, 0 from
        delay_none; a NaN delay, an unstamped feedback, taken as on time)."""
        s = self.settings
        if not delay > s.delay_full:
            return s.gravity_feedback
        return s.gravity_feedback * max(0.0, (s.delay_none - delay) / (s.delay_none - s.delay_full))

    def t_ff(self, feedforward: np.ndarray, planned_velocity: np.ndarray, measured_velocity: Optional[np.ndarray],
             delay: float, inertia: Optional[np.ndarray] = None) -> Tuple[np.ndarray, bool]:
        """t_ff [N·m] for a tick: `feedforward` (the caller blends its gravity by `share`) + friction at
        `planned_velocity` + the slow modes' damping of (planned − `measured_velocity`) at the group's
        `inertia` and the loop `delay` [s] (no measured velocity or inertia: no damping); returns it within
        ±effort and whether it had to be clamped."""
        t = feedforward
        if self._friction:
            t = t + friction_feedforward(planned_velocity, self.coulomb, self.viscous, self.settings.friction_smoothing)
        if self.modal is not None and measured_velocity is not None and inertia is not None:
            t = t + self.modal.matrix(inertia, delay) @ (planned_velocity - measured_velocity)
        return clamp_effort(np.asarray(t, dtype=float), self.effort)
