"""How hard the base may accelerate with the upper body as it stands, free of ROS.

The base's acceleration reaches every joint above it (mobiman.control.upper_body): at 2.5 m/s² the torso
standing straight needs 64 N·m at torso_joint1 beyond gravity, crouched 92 N·m at torso_joint2 in all.
And the whole robot's centre of mass, high above three wheels, shifts its zero-moment point (the point
the wheels' forces must straddle) by h·a/g: braking hard with the torso leaned forward puts it past the
front wheels. `PostureLimits` keeps, for the measured posture,

* the upper body's joint torques at rest τ₀ (gravity, and the centrifugal load of the base's turn) and
  per unit of base acceleration (ax, ay [m/s²], alpha [rad/s²]) A, so that a base acceleration a asks
  τ₀ + A·a of the joints: within `torque_share` of each joint's effort (its motor's peak: the rest is
  the servos' margin for what is not fed forward);
* the robot's mass and centre of mass: the zero-moment point of an acceleration a, c − (h/g)·a_c (the
  centre of mass's own acceleration a_c = a + alpha × c + omega × (omega × c)), within the wheels'
  support polygon shrunk by `zmp_margin`;

* for a group no controller drives (`hold`: the driver holds it at rest with its hold gains, with no
  feed-forward that follows the base), its joints' deflection under the acceleration, S⁻¹·A·a, S = K_hold +
  ∂τ_gravity/∂q the hold's stiffness net of gravity's (the straight torso under HDAS's 500 N·m/rad is an
  inverted pendulum of 72 N·m/rad, its softest mode: 2.5 m/s² would fold it 1 rad), within
  `hold_deflection`; a posture gravity alone topples under that hold (S not positive definite) allows no
  acceleration at all (the chassis' braking floor still stops the base);

and answers, for one control step, the largest share of the acceleration the chassis asks for that keeps
them all (`share`), and for the diagnostics, each axis's limits alone (`axis_limits`). The joints' own
accelerations, a payload the model does not know, the floor's slope are not in it: the margins are for those.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pinocchio as pin

from mobiman.model.robot_model import BASE_TWIST, RobotModel

__all__ = ["PostureLimits", "SupportPolygon"]

GRAVITY = 9.81


@dataclass(frozen=True)
class SupportPolygon:
    """A convex polygon in the base frame's (x, y) [m], as half-planes n·p ≤ d (n unit outward normals)."""

    normals: np.ndarray     # k × 2
    offsets: np.ndarray     # k

    @classmethod
    def of_points(cls, points: Sequence[Sequence[float]] | np.ndarray) -> "SupportPolygon":
        """The convex hull of the wheels' contact points (at least three, not on one line; ValueError otherwise)."""
        p = np.asarray(points, dtype=float).reshape(-1, 2)
        if len(p) < 3:
            raise ValueError(f"a support polygon needs three points or more, got {len(p)}")
        centre = p.mean(axis=0)
        order = np.argsort(np.arctan2(p[:, 1] - centre[1], p[:, 0] - centre[0]))
        hull = p[order]
        normals, offsets = [], []
        for a, b in zip(hull, np.roll(hull, -1, axis=0)):
            edge = b - a
            n = np.array([edge[1], -edge[0]])
            length = float(np.linalg.norm(n))
            if length < 1e-9:
                raise ValueError("support points coincide")
            n /= length
            normals.append(n)
            offsets.append(float(n @ a))
        out = cls(np.array(normals), np.array(offsets))
        if np.any(out.normals @ centre > out.offsets - 1e-6):
            raise ValueError("the support points lie on one line")
        return out


class PostureLimits:
    """The base's acceleration limits for the upper body's measured posture (see the module).
    Thread-unsafe: the caller serialises."""

    def __init__(self, model: RobotModel, groups: Sequence[str], support: SupportPolygon,
                 torque_share: float = 0.8, zmp_margin: float = 0.05, hold_deflection: float = 0.03):
        """`model`: the robot on a planar base; `groups`: the joint groups whose torques are budgeted
        (torso, arms); `support`: the wheels' polygon; `torque_share` (0..1] of each joint's effort;
        `zmp_margin` [m] inside the polygon; `hold_deflection` [rad] > 0, the most a joint the driver holds
        may give way to the base's acceleration (statically: the hold's own damping lets it overshoot that
        by about a third). ValueError for a fixed-base model or values out of range."""
        if not model.planar_base:
            raise ValueError("the posture's acceleration limits need a model with planar_base")
        if not (0.0 < torque_share <= 1.0 and zmp_margin >= 0.0 and hold_deflection > 0.0):
            raise ValueError(f"torque_share {torque_share} must be in (0, 1], zmp_margin {zmp_margin} >= 0, "
                             f"hold_deflection {hold_deflection} > 0")
        self.model, self.groups, self.support = model, list(groups), support
        self.torque_share, self.zmp_margin = float(torque_share), float(zmp_margin)
        self.hold_deflection = float(hold_deflection)
        self._hold_kp: Dict[str, np.ndarray] = {}   # group -> the driver's hold stiffness, while it holds it
        self._slices: Dict[str, slice] = {}
        start = 0
        for g in self.groups:
            n = len(model.group(g).joints)
            self._slices[g] = slice(start, start + n)
            start += n
        self._idx = np.concatenate([model.group(g).idx_v for g in self.groups])
        self.effort = np.concatenate([model.limits(g).effort for g in self.groups])
        self.joints: List[str] = [j for g in self.groups for j in model.group(g).joints]
        self._q = model.configuration()
        self._posture: Dict[str, np.ndarray] = {}
        self.mass = float(sum(i.mass for i in model.model.inertias))
        self.tau0 = np.zeros(len(self.joints))      # at rest
        self.tau_w2 = np.zeros(len(self.joints))    # per (rad/s)² of the base's turn rate
        self.A = np.zeros((len(self.joints), 3))    # per unit of base acceleration
        self.com = np.zeros(3)
        # the held joints' deflection per unit of base acceleration and per (rad/s)² of turn; stable: the hold
        # stiffness net of gravity's is positive definite
        self.held: List[str] = []
        self.D = np.zeros((0, 3))
        self.d_w2 = np.zeros(0)
        self.hold_stable = True
        self.known = False      # updated for a measured posture at least once: the limits apply
        self.changed = False    # the posture changed since the last update

    def set_posture(self, group: str, q: Sequence[float] | np.ndarray) -> None:
        """A group's measured joints (checked by the caller: finite, plausible)."""
        values = np.asarray(q, dtype=float)[:len(self.model.group(group).joints)]
        self.model.set_group(self._q, group, values)
        self._posture[group] = values
        self.changed = True

    def hold(self, group: str, kp: Optional[Sequence[float]]) -> None:
        """The driver holds `group` at rest with stiffness `kp` [N·m/rad a joint, >= 0] (no controller streams
        its commands); None: a controller drives it again. ValueError for an unknown group or a bad kp."""
        if group not in self._slices:
            raise ValueError(f"{group!r} is not one of {self.groups}")
        if kp is None:
            changed = self._hold_kp.pop(group, None) is not None
        else:
            k = np.asarray(kp, dtype=float).ravel()
            n = self._slices[group].stop - self._slices[group].start
            if k.shape != (n,) or not np.all(np.isfinite(k)) or np.any(k < 0.0):
                raise ValueError(f"{group} hold stiffness {kp!r}: {n} finite values >= 0 expected")
            changed = group not in self._hold_kp or not np.array_equal(self._hold_kp[group], k)
            self._hold_kp[group] = k
        if changed:
            self.changed = True

    def update(self) -> None:
        """The torques and the centre of mass at the posture set (a few RNEA: at a posture's pace, not per tick)."""
        m, q = self.model, self._q
        zero = np.zeros(m.model.nv)
        self.tau0 = pin.rnea(m.model, m.data, q, zero, zero)[self._idx].copy()
        for k in range(3):
            a = zero.copy()
            a[BASE_TWIST.start + k] = 1.0
            self.A[:, k] = pin.rnea(m.model, m.data, q, zero, a)[self._idx] - self.tau0
        v = zero.copy()
        v[BASE_TWIST.start + 2] = 1.0
        self.tau_w2 = pin.rnea(m.model, m.data, q, v, zero)[self._idx] - self.tau0
        self.com = pin.centerOfMass(m.model, m.data, q).copy()
        self._update_held(q)
        self.known, self.changed = True, False

    def _update_held(self, q: np.ndarray) -> None:
        """The held joints' deflection per unit of base acceleration (`D`) and of turn rate squared, through the
        hold's stiffness net of gravity's at the posture; `hold_stable` False where that is not positive definite."""
        self.held = [g for g in self.groups if g in self._hold_kp]
        if not self.held:
            self.D, self.d_w2, self.hold_stable = np.zeros((0, 3)), np.zeros(0), True
            return
        rows = np.concatenate([np.arange(self._slices[g].start, self._slices[g].stop) for g in self.held])
        kp = np.concatenate([self._hold_kp[g] for g in self.held])
        m = self.model
        dg = pin.computeGeneralizedGravityDerivatives(m.model, m.data, q)
        cols = self._idx[rows]
        stiffness = np.diag(kp) + dg[np.ix_(cols, cols)]
        stiffness = 0.5 * (stiffness + stiffness.T)          # gravity's part is a Hessian: symmetric up to rounding
        softest = float(np.linalg.eigvalsh(stiffness)[0])
        self.hold_stable = softest > 1e-6 * max(1.0, float(kp.max()))
        if self.hold_stable:
            self.D = np.linalg.solve(stiffness, -self.A[rows])
            self.d_w2 = np.linalg.solve(stiffness, -self.tau_w2[rows])
        else:
            self.D, self.d_w2 = np.zeros((len(rows), 3)), np.zeros(len(rows))

    # -- the constraints, each f0 + s·f1 ≤ b for a share s of the step's acceleration ------------------
    def _constraints(self, acceleration: np.ndarray, turn_rate: float) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(f0, f1, b) of every constraint for the base acceleration `acceleration` taken whole (s = 1)."""
        budget = self.torque_share * self.effort
        tau = self.tau0 + self.tau_w2 * turn_rate * turn_rate
        load = self.A @ acceleration
        # |tau + s·load| <= budget, both signs
        f0 = [tau, -tau]
        f1 = [load, -load]
        b = [budget, budget]
        # zero-moment point: c_xy - (h/g)·a_c,xy inside the polygon shrunk by the margin
        cx, cy, h = self.com
        w2 = turn_rate * turn_rate
        centrifugal = np.array([-w2 * cx, -w2 * cy])
        ax, ay, alpha = acceleration
        a_c = np.array([ax - alpha * cy, ay + alpha * cx])
        k = h / GRAVITY
        n = self.support.normals
        f0.append(n @ (np.array([cx, cy]) - k * centrifugal))
        f1.append(-(n @ (k * a_c)))
        b.append(self.support.offsets - self.zmp_margin)
        # the held joints' deflection from where they rest: |d_w2·w² + s·D·a| <= hold_deflection
        if self.held:
            limit = np.full(len(self.d_w2), self.hold_deflection)
            if self.hold_stable:
                bend, per = self.d_w2 * w2, self.D @ acceleration
            else:       # no room: any acceleration is too much
                bend, per = limit, np.full(len(limit), float(np.abs(acceleration).sum()))
            f0 += [bend, -bend]
            f1 += [per, -per]
            b += [limit, limit]
        return np.concatenate(f0), np.concatenate(f1), np.concatenate(b)

    def share(self, acceleration: Sequence[float] | np.ndarray, turn_rate: float = 0.0) -> float:
        """The largest s in [0, 1] such that s·`acceleration` (ax, ay [m/s²], alpha [rad/s²]) keeps every
        constraint that holds at rest; one already broken at rest only forbids making it worse."""
        f0, f1, b = self._constraints(np.asarray(acceleration, dtype=float), float(turn_rate))
        s = 1.0
        grows = f1 > 1e-12
        room = np.maximum(b[grows] - f0[grows], 0.0)
        if room.size:
            s = min(s, float(np.min(room / f1[grows])))
        return max(0.0, s)

    def axis_limits(self, turn_rate: float = 0.0, ceiling: Sequence[float] = (math.inf,) * 3
                    ) -> Tuple[List[float], List[float]]:
        """Per axis (x, y, yaw) the largest positive and negative acceleration alone the posture allows
        (at most `ceiling`), for the diagnostics."""
        positive: List[float] = []
        negative: List[float] = []
        for k in range(3):
            unit = np.zeros(3)
            unit[k] = 1.0
            for sign, out in ((1.0, positive), (-1.0, negative)):
                top = ceiling[k]
                s = self.share(sign * top * unit, turn_rate) if math.isfinite(top) else self._unbounded(sign * unit,
                                                                                                       turn_rate)
                out.append(s * top if math.isfinite(top) else s)
        return positive, negative

    def _unbounded(self, direction: np.ndarray, turn_rate: float) -> float:
        f0, f1, b = self._constraints(direction, turn_rate)
        grows = f1 > 1e-12
        return float(np.min(np.maximum(b[grows] - f0[grows], 0.0) / f1[grows])) if grows.any() else math.inf

    def worst(self) -> Optional[str]:
        """The joint nearest its torque budget at rest, when beyond it (the posture alone is too heavy)."""
        over = np.abs(self.tau0) - self.torque_share * self.effort
        i = int(np.argmax(over))
        return self.joints[i] if over[i] > 0.0 else None
