"""Arm pose IK in the RelaxedIK family, on pinocchio: a pose stream in, smooth joint targets out.

One `ArmIK` per arm solves for the 6 arm joints that put `{left,right}_gripper_link` at a
pose given relative to `torso_link4` (the guide's convention; the torso's own joints do not
matter for a pose in that frame).

The objective is RelaxedIK's, written as weighted least squares so that a damped
Gauss-Newton (Levenberg-Marquardt) solver with analytic Jacobians from pinocchio solves it
in a few iterations:

    position error (w_pos), orientation error (w_rot)            the task
    q - q[-1], q - 2q[-1] + q[-2], jerk against the history       smoothness (velocity, acceleration, jerk)
    joint-limit barrier                                           active within a margin of a limit
    self-collision barrier                                        capsule pairs closer than a margin
    singularity barrier                                           manipulability below a threshold

The smoothness terms are small: they break ties and shape the approach to unreachable
targets, but a reachable target is still met (they are weighted against a history that the
solver refreshes each solve). Box bounds are the joint limits (projected steps). Each
streamed solve starts from the last solution and no joint moves more than `max_step` per
solve; a cold solve (no history) starts from the closed-form spherical-wrist seeds and the
mid-range posture. A non-finite result never leaves: the previous solution is kept.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

import numpy as np
import pinocchio as pin
from scipy.linalg import lapack
from scipy.spatial import cKDTree

from mobiman.arm.capsules import ContactCheck, capsules_from_urdf, segment_distance_py, segment_pose
from mobiman.arm.closed_form import ClosedFormArm
from mobiman.arm.kernel import DONE, ArmChain, lm_pass, stream_pass

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
REACHED_POSITION = 1e-3       # [m]   the bar for "reached"
REACHED_ORIENTATION = 1e-2    # [rad]
CONTACT_MARGIN = 0.002        # [m] clearance kept by task-only passes
RECOVERY_COOLDOWN = 10          # streamed solves between two searches for another posture
FAR_POSITION, FAR_ORIENTATION = 0.005, 0.05   # [m], [rad] a stream this far off its target is out of reach
STALL_RATIO, STALL_STEPS = 0.7, 4   # a streamed task pass crawling this slowly gives up
COLLIDING_ANSWERS = 4           # table seeds that meet the target only in collision: it asks for one
SOFT_PLATEAU = 1e-5            # the full objective stops when a step gains less than this share of its cost
CLOSED_FORM_POLISH = 10         # LM iterations that take a closed-form posture onto the exact pose
APPROACH_ITERATIONS = 3         # steps with the collision rows from the last clear posture toward a blocked target
REACH_SLACK = 0.002             # [m] a wrist centre this far beyond the reach is surely out of it
REACH_EDGE = 0.01               # [m] this close to the reach every posture has its elbow straight
OTHER_ARM_STILL = 1e-4         # [rad] the other arm is placed again once a joint moved more than this
FAR_TARGET_STEP = 0.01          # [m] and [rad]: a target that moved less than this is still out of reach
SR_SIGMA, SR_DAMPING = 0.5, 0.05   # singularity-robust damping below this singular value of the weighted task Jacobian


@dataclass
class IkWeights:
    position: float = 50.0
    orientation: float = 10.0
    velocity: float = 0.02
    acceleration: float = 0.01
    jerk: float = 0.005
    joint_limit: float = 1.0
    collision: float = 5.0
    singularity: float = 0.5


@dataclass
class IkConfig:
    weights: IkWeights = field(default_factory=IkWeights)
    joint_limit_margin: float = 0.1
    collision_margin: float = 0.03
    singularity_threshold: float = 5e-4
    max_step: float = 0.2
    max_iterations: int = 30
    max_iterations_cold: int = 60
    position_tolerance: float = 2e-4
    orientation_tolerance: float = 2e-3

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "IkConfig":
        """From the `solver` section of config/relaxed_ik.yaml; unknown keys and bad values raise ValueError."""
        d = dict(d or {})
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown IK solver parameters {sorted(unknown)}; known: {sorted(known)}")
        w = dict(d.pop("weights", {}) or {})
        wknown = {f.name for f in fields(IkWeights)}
        if set(w) - wknown:
            raise ValueError(f"unknown IK weights {sorted(set(w) - wknown)}; known: {sorted(wknown)}")
        weights = IkWeights(**{k: float(v) for k, v in w.items()})
        if any(not np.isfinite(v) or v < 0 for v in vars(weights).values()):
            raise ValueError("IK weights must be finite and >= 0")
        cfg = cls(weights=weights, **{k: (int(v) if k.startswith("max_iter") else float(v)) for k, v in d.items()})
        if weights.position <= 0 or weights.orientation <= 0:
            raise ValueError("the position and orientation weights must be > 0")
        for k in ("joint_limit_margin", "collision_margin", "singularity_threshold", "max_step",
                  "position_tolerance", "orientation_tolerance"):
            if not getattr(cfg, k) > 0:
                raise ValueError(f"IK parameter {k} must be > 0")
        if cfg.max_iterations < 1 or cfg.max_iterations_cold < 1:
            raise ValueError("IK iteration limits must be >= 1")
        return cfg


@dataclass
class IkResult:
    q: np.ndarray
    position_error: float        # [m]
    orientation_error: float     # [rad]
    reached: bool                # within 1 mm and 0.01 rad
    iterations: int
    step_limited: bool = False   # the solution moved further than max_step: this is a step toward it
    blocked: bool = False        # (streamed) the solution is in collision: this is the last clear posture toward it


@dataclass(frozen=True)
class WorldCapsules:
    """The arm's moving capsules in world axes: endpoints a, b (n×3), radii, frame ids, frame origins."""

    a: np.ndarray
    b: np.ndarray
    r: np.ndarray
    fids: list[int]
    origins: np.ndarray


class ArmIK:
    """RelaxedIK-style IK of one R1 arm (see the module docstring)."""

    MOVING_LINKS = ("arm_link2", "arm_link3", "arm_link4", "arm_link5", "arm_link6", "realsense_link",
                    "gripper_finger_link1", "gripper_finger_link2")
    # pairs inside one arm that can meet: the wrist and hand against the shoulder and upper arm
    SELF_PAIRS = (("arm_link5", "arm_link2"), ("arm_link6", "arm_link2"), ("realsense_link", "arm_link2"),
                  ("gripper_finger_link1", "arm_link2"), ("gripper_finger_link2", "arm_link2"),
                  ("arm_link6", "arm_link3"), ("realsense_link", "arm_link3"),
                  ("gripper_finger_link1", "arm_link3"), ("gripper_finger_link2", "arm_link3"))
    BODY_LINKS = ("torso_link4", "zed_link")
    # links fixed to the gripper frame: where they are follows from the target pose alone
    HAND_LINKS = ("arm_link6", "realsense_link", "gripper_finger_link1", "gripper_finger_link2")
    TABLE_SIZE = 4000
    COLD_SEEDS = 8

    def __init__(self, urdf_xml: str, side: str, config: IkConfig | None = None, seed: int = 0):
        if side not in ("left", "right"):
            raise ValueError(f"side must be left or right, not {side!r}")
        self.side, self.config = side, config or IkConfig()
        other = "right" if side == "left" else "left"
        self.full = pin.buildModelFromXML(urdf_xml)
        self.full_data = self.full.createData()
        self.joint_names = tuple(f"{side}_arm_joint{i}" for i in range(1, 7))
        self._other_names = tuple(f"{other}_arm_joint{i}" for i in range(1, 7))
        keep = set(self.joint_names)
        lock = [j for j in range(1, self.full.njoints) if self.full.names[j] not in keep]
        self.model = pin.buildReducedModel(self.full, lock, pin.neutral(self.full))
        self.data = self.model.createData()
        if tuple(self.model.names[1:]) != self.joint_names:
            raise ValueError(f"unexpected arm joints in the URDF: {list(self.model.names[1:])}")
        self.lower = self.model.lowerPositionLimit.copy()
        self.upper = self.model.upperPositionLimit.copy()
        self._lower_eps, self._upper_eps = self.lower + 1e-12, self.upper - 1e-12   # "on the bound"
        self._ee = self.model.getFrameId(f"{side}_gripper_link")
        self._wrist_joint = self.model.getJointId(f"{side}_arm_joint6")
        pin.framesForwardKinematics(self.model, self.data, pin.neutral(self.model))
        self._oMt = self.data.oMf[self.model.getFrameId("torso_link4")].copy()   # torso fixed in this model
        self._Rt = self._oMt.rotation.copy()
        # collision model: own links move; torso, head and the other arm are static here
        names = {f"{side}_{n}" for n in self.MOVING_LINKS}
        self._moving = [(c, self.model.getFrameId(c.link)) for c in capsules_from_urdf(urdf_xml, names)]
        self._mov_fids = [fid for _, fid in self._moving]
        self._mov_a = np.array([c.a for c, _ in self._moving])[:, :, None]     # local endpoints, n×3×1
        self._mov_b = np.array([c.b for c, _ in self._moving])[:, :, None]
        self._mov_r = np.array([c.radius for c, _ in self._moving])
        self._rho = self._lever_arms()
        self._clear: tuple[np.ndarray, float] | None = None   # (q, lower bound on every pair's distance)
        self._static_capsules = capsules_from_urdf(urdf_xml, set(self.BODY_LINKS))
        self._other_capsules = capsules_from_urdf(urdf_xml, {f"{other}_{n}" for n in self.MOVING_LINKS})
        # what placing the other arm needs, looked up once: its joints' places in q, its capsules'
        # frames and their capsule poses there (coal's, `segment_pose`); the body's capsules never move
        self._other_idx_q = [self.full.joints[self.full.getJointId(n)].idx_q for n in self._other_names]
        self._other_fids = [self.full.getFrameId(c.link) for c in self._other_capsules]
        self._other_local = [segment_pose(c.a, c.b) for c in self._other_capsules]
        self._q_full0 = pin.neutral(self.full)
        pin.framesForwardKinematics(self.full, self.full_data, self._q_full0)
        body = [(c, self.full_data.oMf[self.full.getFrameId(c.link)]) for c in self._static_capsules]
        self._body_segs = [(m.act(c.a), m.act(c.b), c.radius) for c, m in body]
        self._other_q: np.ndarray | None = None      # where the other arm was last placed
        self._self_pairs = [(i, k) for i, (ci, _) in enumerate(self._moving) for k, (ck, _) in enumerate(self._moving)
                            if (_unprefixed(ci.link, f"{side}_"), _unprefixed(ck.link, f"{side}_")) in self.SELF_PAIRS]
        self._self_i = np.array([i for i, _ in self._self_pairs], dtype=int)
        self._self_k = np.array([k for _, k in self._self_pairs], dtype=int)
        self._contact: ContactCheck | None = None
        self.set_other_arm(np.zeros(6))
        self._history: list[np.ndarray] = []
        self._damping, self._lambda0 = np.eye(6), 1e-3
        self._eye6 = np.eye(6)
        # the task rows' weights, per (position, orientation)
        self._task_scale: dict[tuple[float, float], np.ndarray] = {}
        self._task_weights = IkWeights(**{**vars(self.config.weights), "collision": 0.0})   # cold passes
        self._q_key: tuple | None = None       # _q_terms' cache: (q, weights, soft) and its value
        self._sv_ref: tuple[np.ndarray, float] | None = None   # last decomposed task Jacobian, its σ_min
        self._far: pin.SE3 | None = None      # the last target the stream ended well short of
        self._q_value: tuple = ()
        self._goal: np.ndarray | None = None     # a posture the stream travels to (recovery)
        self._cooldown = 0
        self._build_seed_table(np.random.default_rng(seed))
        self._wrist_in_j5 = self._axes_meeting_point()
        self._closed_form = ClosedFormArm.from_model(self.model, self._ee, self._wrist_in_j5)   # cold seeds
        self._chain = ArmChain.from_model(self.model, self._ee)      # the compiled passes (None: Python's loop)
        self._kernel_settings: dict[tuple[float, ...], np.ndarray] = {}
        self._shoulder, self._wrist_offset, self.reach = self._reach_geometry(np.random.default_rng(seed + 1))
        self._stream = None if self._chain is None else ArmChain.stream_constants(
            self._oMt.homogeneous, self._shoulder, self._wrist_offset, self.reach + REACH_SLACK, self.config.max_step,
            REACHED_POSITION, REACHED_ORIENTATION)
        if self._chain is not None:
            # numba loads the compiled passes (or compiles them, ~30 s, on a first start after a build
            # that skipped scripts/setup) on their first call: here, not on the first target
            mid = (self.lower + self.upper) / 2
            goal, settings = (self._oMt * self.fk(mid)).homogeneous, self._settings(self.config.weights)
            lm_pass(mid, goal, self._chain.chain, self._chain.bounds, settings, True, mid, 0.0, 1, -1)
            stream_pass(mid, self.fk(mid).homogeneous, self._chain.chain, self._chain.bounds, settings, self._stream,
                        mid, self._rho, 0.0, 1, -1)
        self._hand = self._hand_capsules()

    # -- kinematics ------------------------------------------------------------------------
    def fk(self, q: np.ndarray) -> pin.SE3:
        """{side}_gripper_link relative to torso_link4."""
        pin.framesForwardKinematics(self.model, self.data, np.asarray(q, float))
        return self._oMt.actInv(self.data.oMf[self._ee])

    def _wrist_centre(self, q: np.ndarray) -> np.ndarray:
        """Where the axes of joints 4-6 meet, in torso_link4."""
        pin.forwardKinematics(self.model, self.data, np.asarray(q, float))
        return self._oMt.actInv(self.data.oMi[5].act(self._wrist_in_j5))

    def _axes_meeting_point(self) -> np.ndarray:
        """The point nearest to the axes of joints 4, 5 and 6 (least squares), in joint 5's frame."""
        m, d = self.model, self.data
        q = (self.lower + self.upper) / 2
        pin.computeJointJacobians(m, d, q)
        lhs, rhs = np.zeros((3, 3)), np.zeros(3)
        for j in (4, 5, 6):
            axis = pin.getJointJacobian(m, d, j, pin.LOCAL_WORLD_ALIGNED)[3:, j - 1]
            proj = np.eye(3) - np.outer(axis, axis) / (axis @ axis)
            lhs += proj
            rhs += proj @ d.oMi[j].translation
        return d.oMi[5].actInv(np.linalg.solve(lhs, rhs))

    def _reach_geometry(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
        """The shoulder point, the wrist centre in the gripper frame, and the reach (max distance
        between the two), all measured on the model: what `beyond_reach` needs.

        The spherical wrist makes the wrist centre a fixed point of the gripper frame, and joint 2's
        origin lies on joint 1's axis, so no posture puts a target's wrist centre further from that
        shoulder point than the reach. Where the model breaks either assumption the check is off
        (reach = inf)."""
        qs = rng.uniform(self.lower, self.upper, size=(200, 6))
        shoulders, offsets = [], []
        for q in qs:
            wc = self._wrist_centre(q)
            shoulders.append(self._oMt.actInv(self.data.oMi[2].translation))
            offsets.append(self.fk(q).actInv(wc))
        shoulder, offset = shoulders[0], offsets[0]
        if np.ptp(np.array(shoulders), axis=0).max() > 1e-6 or np.ptp(np.array(offsets), axis=0).max() > 1e-4:
            return shoulder, offset, math.inf

        def minus_distance(q: np.ndarray) -> float:
            return -float(np.linalg.norm(self._wrist_centre(q) - shoulder))

        dists = [-minus_distance(q) for q in self._table_q]
        from scipy.optimize import minimize  # only here: the rest of the solver does without it
        best = minimize(minus_distance, self._table_q[int(np.argmax(dists))], method="L-BFGS-B",
                        bounds=list(zip(self.lower, self.upper)))
        return shoulder, offset, max(max(dists), -float(best.fun))

    def _hand_capsules(self) -> list[tuple[np.ndarray, np.ndarray, float]]:
        """The hand's capsules (HAND_LINKS) in the gripper frame: endpoints a, b and radius."""
        pin.framesForwardKinematics(self.model, self.data, pin.neutral(self.model))
        oMe = self.data.oMf[self._ee]
        hand = {f"{self.side}_{n}" for n in self.HAND_LINKS}
        out = []
        for c, fid in self._moving:
            if c.link in hand:
                eMf = oMe.actInv(self.data.oMf[fid])
                out.append((eMf.act(c.a), eMf.act(c.b), c.radius))
        return out

    def hand_blocked(self, target: pin.SE3) -> bool:
        """The hand at `target` is inside the torso, the head or the other arm. The hand's links
        are fixed to the gripper frame, so such a target collides in every posture. (Bounding
        spheres first: only pairs whose spheres overlap are measured.)"""
        oMe = self._oMt * target
        rot, pos = oMe.rotation, oMe.translation
        for a, b, radius in self._hand:
            wa, wb = rot @ a + pos, rot @ b + pos
            mid, half = (wa + wb) * 0.5, float(np.linalg.norm(wb - wa)) * 0.5
            gap = np.linalg.norm(self._static_mid - mid, axis=1) - self._static_reach - (half + radius)
            for k in np.nonzero(gap < 0.0)[0].tolist():
                dist = segment_distance_py(wa.tolist(), wb.tolist(), self._static_al[k], self._static_bl[k])[0]
                if dist < radius + self._static_rl[k]:
                    return True
        return False

    def wrist_distance(self, target: pin.SE3) -> float:
        """How far from the shoulder the wrist centre must be for the gripper to be at `target`."""
        d = target.rotation @ self._wrist_offset + target.translation - self._shoulder
        return math.sqrt(d @ d)

    def beyond_reach(self, target: pin.SE3) -> bool:
        """No posture meets `target`: its wrist centre is out of the arm's reach (plus a slack)."""
        return self._beyond(self.wrist_distance(target))

    def _beyond(self, wrist_distance: float) -> bool:
        return wrist_distance > self.reach + REACH_SLACK

    def set_other_arm(self, q_other: np.ndarray) -> None:
        """The other arm's joints, for its capsules in the self-collision model.

        A node calls this before every solve with the measured joints: an arm that moved no joint
        more than OTHER_ARM_STILL since it was last placed is left where it is (its capsules are
        then off by at most Σρ·1e-4 rad ≈ 0.34 mm, under the 2 mm contact margin); placing it
        again measures the collision model anew (~50 µs, and the next solve's clearance)."""
        q_other = np.asarray(q_other, float)
        if self._other_q is not None and float(np.abs(q_other - self._other_q).max()) <= OTHER_ARM_STILL:
            return
        self._other_q = q_other.copy()
        self._q_key = self._clear = None       # the collision rows and the clearance change with it
        q_full = self._q_full0.copy()
        q_full[self._other_idx_q] = q_other
        pin.forwardKinematics(self.full, self.full_data, q_full)
        poses, segs = [], list(self._body_segs)
        for c, fid, local in zip(self._other_capsules, self._other_fids, self._other_local):
            m = pin.updateFramePlacement(self.full, self.full_data, fid)
            poses.append(m * local)
            segs.append((m.act(c.a), m.act(c.b), c.radius))
        self._static = segs
        if self._contact is None:
            self._contact = ContactCheck(self.model, self._moving, segs, self._self_pairs)
        else:
            body = len(self._body_segs)
            self._contact.set_fixed_poses(range(body, body + len(poses)), poses)
        self._static_a = np.array([s[0] for s in segs])
        self._static_b = np.array([s[1] for s in segs])
        self._static_r = np.array([s[2] for s in segs])
        self._static_mid = (self._static_a + self._static_b) / 2
        self._static_reach = np.linalg.norm(self._static_b - self._static_a, axis=1) / 2 + self._static_r
        self._static_al, self._static_bl = self._static_a.tolist(), self._static_b.tolist()
        self._static_rl = self._static_r.tolist()

    def _capsules_now(self) -> "WorldCapsules":
        """Moving capsules in world axes after FK, as arrays (this runs on every residual)."""
        oMf = self.data.oMf
        frames = [oMf[f] for f in self._mov_fids]
        rot = np.array([m.rotation for m in frames])
        origin = np.array([m.translation for m in frames])
        return WorldCapsules((rot @ self._mov_a)[:, :, 0] + origin, (rot @ self._mov_b)[:, :, 0] + origin,
                             self._mov_r, self._mov_fids, origin)

    def _lever_arms(self) -> np.ndarray:
        """ρ_j: how far any capsule end point can be from joint j's origin, in any posture.

        A point at distance r from a joint's axis moves at most r·|Δq_j| when the joint turns, so
        a posture change Δq moves every capsule point by at most Σ ρ_j |Δq_j| (the triangle
        inequality along the chain bounds r by the link offsets out to the point)."""
        m = self.model
        link = [0.0] + [float(np.linalg.norm(m.jointPlacements[j].translation)) for j in range(1, m.njoints)]
        rho = np.zeros(m.njoints - 1)
        for c, fid in self._moving:
            frame = m.frames[fid]
            reach = max(np.linalg.norm(frame.placement.act(c.a)), np.linalg.norm(frame.placement.act(c.b)))
            parent = frame.parentJoint
            for j in range(1, parent + 1):     # joints j ≤ parent carry this capsule
                rho[j - 1] = max(rho[j - 1], sum(link[j + 1:parent + 1]) + reach)
        return rho

    def min_distance(self, q: np.ndarray, horizon: float = np.inf) -> float:
        """Smallest capsule distance (negative: penetration) of the arm at q; pairs further apart
        than `horizon` are not measured (inf when none is closer)."""
        pin.framesForwardKinematics(self.model, self.data, np.asarray(q, float))
        return min((d for d, *_ in self._collisions(self._capsules_now(), horizon)), default=np.inf)

    def _clear_at(self, q: np.ndarray) -> bool:
        """No capsule pair touches at q (`ContactCheck`: the same capsules and pairs, in C++)."""
        return not self._contact.touching(q)

    def _collisions(self, caps: "WorldCapsules", margin: float):
        """(distance, point on i, point on j or None, i, j or None) for pairs closer than margin."""
        return self._scan(caps, margin)[0]

    def _scan(self, caps: "WorldCapsules", margin: float):
        """Pairs closer than `margin` (as `_collisions`), and a lower bound on every pair's distance.

        Broad phase: bounding spheres of all pairs at once (numpy); narrow phase: segment
        distances of the pairs whose spheres come within `margin` (Python floats: for one pair
        numpy's per-call overhead would be most of the cost). The bound is the smallest measured
        distance, or the smallest sphere gap of the pairs not measured."""
        a, b, r = caps.a, caps.b, caps.r
        mid = (a + b) * 0.5
        half = b - a
        reach = np.sqrt(np.einsum("ij,ij->i", half, half)) * 0.5 + r
        diff = mid[:, None, :] - self._static_mid[None, :, :]
        gap = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff)) - reach[:, None] - self._static_reach[None, :]
        al, bl, rl = a.tolist(), b.tolist(), r.tolist()
        lower = np.inf
        pairs: list[tuple[int, list, list, float, int | None]] = []   # (i, other's a, b, radius, k or None)
        near = gap < margin
        if not near.all():
            lower = float(gap[~near].min())
        if near.any():
            ii, kk = np.nonzero(near)
            pairs += [(i, self._static_al[k], self._static_bl[k], self._static_rl[k], None)
                      for i, k in zip(ii.tolist(), kk.tolist())]
        if self._self_pairs:
            si, sk = self._self_i, self._self_k
            sd = mid[si] - mid[sk]
            sgap = np.sqrt(np.einsum("ij,ij->i", sd, sd)) - reach[si] - reach[sk]
            close = sgap < margin
            if not close.all():
                lower = min(lower, float(sgap[~close].min()))
            if close.any():
                pairs += [(int(si[n]), al[sk[n]], bl[sk[n]], rl[sk[n]], int(sk[n])) for n in np.nonzero(close)[0]]
        out = []
        for i, other_a, other_b, other_r, k in pairs:
            dist, pa, pb = segment_distance_py(al[i], bl[i], other_a, other_b)
            dist -= rl[i] + other_r
            lower = min(lower, dist)
            if dist < margin:
                out.append((dist, np.array(pa), np.array(pb), i, k))
        return out, lower

    # -- the objective -----------------------------------------------------------------------
    def _in_root(self, target: pin.SE3, weights: IkWeights) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The target (in torso_link4) in the model's root axes, as (Rᵀ, p), with the task rows'
        weights (position ×3, orientation ×3): what `_residuals` takes.

        The position residual is then a rotation (the torso's, fixed) of the one in torso_link4
        axes, and the orientation residual is the same: the same cost, gradient and steps,
        without turning every evaluation's pose and Jacobian into torso_link4 axes."""
        goal = self._oMt * target
        key = (weights.position, weights.orientation)
        scale = self._task_scale.get(key)
        if scale is None:
            scale = self._task_scale[key] = np.array((weights.position,) * 3 + (weights.orientation,) * 3)
        return goal.rotation.T, goal.translation, scale

    def _residuals(self, q: np.ndarray, goal: tuple[np.ndarray, np.ndarray], weights: IkWeights,
                   smooth: tuple[float, np.ndarray] | None, soft: bool
                   ) -> tuple[np.ndarray, float, float, float, tuple]:
        """Weighted residuals r(q), the task's position/orientation errors, the min distance, and
        what `_jacobian` needs for their Jacobian (a step that meets the tolerances or is rejected
        never needs it). `goal` is `_in_root(target)`; `smooth` is `_smoothness_anchor`'s (scale,
        centre): the smoothness terms as one block of rows."""
        J, R, p, extra_rows, extra_jac, min_d = self._q_terms(q, weights, soft)
        E = goal[0] @ R
        dp = p - goal[1]
        e_rot = pin.log3(E)
        pos_err, rot_err = math.sqrt(dp @ dp), math.sqrt(e_rot @ e_rot)
        parts = (E, R, J, goal[2], extra_jac, smooth if soft else None)
        r = np.concatenate((dp, e_rot)) * goal[2]
        if not (soft and smooth) and not extra_rows:     # the task alone (most solves): no stacking
            return r, pos_err, rot_err, min_d, parts
        rows = [r]
        if soft and smooth:
            scale, centre = smooth
            rows.append(scale * (q - centre))
        return np.concatenate(rows + extra_rows), pos_err, rot_err, min_d, parts

    def _jacobian(self, parts: tuple) -> np.ndarray:
        """The Jacobian of `_residuals`' r from its `parts`."""
        E, R, J, scale, extra_jac, smooth = parts
        A = J.copy()                     # d(position)/dq, then d(log3(E))/dq below
        A[3:] = pin.Jlog3(E) @ R.T @ J[3:]
        A *= scale[:, None]
        if not smooth and not extra_jac:
            return A
        jac = [A]
        if smooth:
            jac.append(smooth[0] * self._eye6)
        return np.vstack(jac + extra_jac)

    @staticmethod
    def _smoothness_anchor(history: list[np.ndarray], weights: IkWeights) -> tuple[float, np.ndarray] | None:
        """RelaxedIK's velocity, acceleration and jerk terms against the history, as one block.

        Each term is w_i·(q − c_i) with c_i fixed during a solve (h1; 2h1 − h2; 3h1 − 3h2 + h3 for
        the last solutions h1, h2, h3). Their squared sum is W·|q − c̄|² plus a constant, with
        W = Σ w_i² and c̄ = Σ w_i² c_i / W: the same gradient and Gauss-Newton matrix from 6 rows
        instead of 18, computed once per solve instead of on every evaluation."""
        h = history
        terms = [(w, c) for w, c, n in ((weights.velocity, lambda: h[-1], 1),
                                        (weights.acceleration, lambda: 2 * h[-1] - h[-2], 2),
                                        (weights.jerk, lambda: 3 * h[-1] - 3 * h[-2] + h[-3], 3))
                 if w > 0 and len(h) >= n]
        total = sum(w * w for w, _ in terms)
        if total <= 0:
            return None
        centre = sum(w * w * c() for w, c in terms) / total
        return math.sqrt(total), centre

    def _q_terms(self, q: np.ndarray, weights: IkWeights, soft: bool):
        """Everything of the objective that depends on q alone: the hand's pose and Jacobian in
        the model's root axes, the joint-limit, collision and singularity rows. Cached for the last q:
        a streamed solve starts where the previous one ended, at the same q with a new target,
        so half of a stream's evaluations need only the target's rows."""
        key = self._q_key
        qb = q.tobytes()
        if key is not None and key[1] is weights and key[2] == soft and key[0] == qb:
            return self._q_value
        m, d, cfg = self.model, self.data, self.config
        pin.computeJointJacobians(m, d, q)
        oMe = pin.updateFramePlacement(m, d, self._ee)      # the hand's frame only; the capsules' below when measured
        J = pin.getFrameJacobian(m, d, self._ee, LWA)
        # in the model's root axes (`_in_root`)
        rows: list[np.ndarray] = []
        jac: list[np.ndarray] = []
        if soft and weights.joint_limit > 0:
            mg = cfg.joint_limit_margin
            low, high = q - self.lower, self.upper - q
            near = (low < mg) | (high < mg)
            if near.any():
                r = np.where(low < mg, (mg - low) / mg, 0.0) - np.where(high < mg, (mg - high) / mg, 0.0)
                jl = np.diag(np.where(low < mg, -1.0 / mg, 0.0) + np.where(high < mg, -1.0 / mg, 0.0))
                rows.append(weights.joint_limit * r[near])
                jac.append(weights.joint_limit * jl[near])
        min_d = np.inf
        # the configured clearance shapes streamed motion; a task-only pass (reaching a
        # target the soft terms held off) only keeps the capsules from touching
        mg = cfg.collision_margin if soft else CONTACT_MARGIN
        if weights.collision > 0 and not self._still_clear(q, mg):
            # the exact clearance in C++ first; the pairs within the margin, which need rows, in Python
            self._clear = (q.copy(), self._contact.min_distance(q))
            hits = []
            if self._clear[1] < mg:
                pin.updateFramePlacements(m, d)
                caps = self._capsules_now()
                hits = self._collisions(caps, mg)
            for dist, pa, pb, i, k in hits:
                min_d = min(min_d, dist)
                dv = pa - pb
                n = dv / max(math.sqrt(dv @ dv), 1e-9)
                grad = n @ self._point_jacobian(caps.fids[i], caps.origins[i], pa)
                if k is not None:
                    grad = grad - n @ self._point_jacobian(caps.fids[k], caps.origins[k], pb)
                rows.append(np.array([weights.collision * (mg - dist) / mg]))
                jac.append((-weights.collision / mg * grad)[None, :])
        if soft and weights.singularity > 0:
            self._singularity_rows(q, weights.singularity, rows, jac)
        h = oMe.homogeneous                      # a copy: oMe and its arrays are views into self.data
        value = (J, h[:3, :3], h[:3, 3], rows, jac, min_d)
        self._q_key, self._q_value = (qb, weights, soft), value
        return value

    def _smallest_singular_value(self, a6: np.ndarray) -> float:
        """σ_min of the weighted task Jacobian, or a value ≥ SR_SIGMA when it is surely above it.

        Weyl: |σ_min(A) − σ_min(B)| ≤ ‖A − B‖₂ ≤ ‖A − B‖_F, so next to the last decomposed
        Jacobian (a stream moves little per solve) an SVD is needed only near the threshold."""
        ref = self._sv_ref
        if ref is not None:
            d = a6 - ref[0]
            if ref[1] - math.sqrt(float(np.vdot(d, d))) >= SR_SIGMA:
                return SR_SIGMA
        sigma = _smallest_sv(a6)
        self._sv_ref = (a6.copy(), sigma)
        return sigma

    def _still_far(self, target: pin.SE3) -> bool:
        """The last solve ended well short of its target, and this target is near that one."""
        far = self._far
        if far is None:
            return False
        d = target.translation - far.translation
        turn = pin.log3(far.rotation.T @ target.rotation)
        return math.sqrt(d @ d) < FAR_TARGET_STEP and math.sqrt(turn @ turn) < FAR_TARGET_STEP

    def _still_clear(self, q: np.ndarray, margin: float) -> bool:
        """True when no capsule pair can be within `margin` at q: the clearance bound measured at
        an earlier posture, less twice the furthest any capsule point can have moved since (both
        capsules of a pair may move). Temporal coherence: a stream moves little per solve, so the
        capsules are measured again only every few solves while they are well apart."""
        if self._clear is None:
            return False
        q_ref, lower = self._clear
        return lower - self._moved(q, q_ref) > margin

    def _moved(self, q: np.ndarray, q_ref: np.ndarray) -> float:
        """Bound on how much closer any capsule pair can have come between q_ref and q [m]."""
        return 2.0 * float(self._rho @ np.abs(q - q_ref))

    def _point_jacobian(self, fid: int, origin: np.ndarray, point: np.ndarray) -> np.ndarray:
        """3×6 linear Jacobian (world axes) of a point fixed to frame fid."""
        Jf = pin.getFrameJacobian(self.model, self.data, fid, LWA)
        return Jf[:3] - pin.skew(point - origin) @ Jf[3:]

    def _singularity_rows(self, q: np.ndarray, weight: float, rows: list, jac: list) -> None:
        """Barrier on |det J| of the arm's 6×6 Jacobian (its manipulability; the determinant does
        not depend on the point or the frame it is taken in: both changes are unimodular).

        The gradient is analytic (Jacobi's formula, ∂det/∂q_k = tr(adj(J) ∂J/∂q_k)) on the spatial
        (WORLD) Jacobian, whose columns are the joint twists S_j = (v_j, ω_j): ∂S_j/∂q_k = ad(S_k) S_j
        = (ω_k × v_j + v_k × ω_j, ω_k × ω_j) for k < j and 0 otherwise. With a_j the j-th row of
        adj(J) split as (a_v, a_ω), scalar triple products turn the sum over j into suffix sums:
        ∂det/∂q_k = ω_k · Σ_{j>k} (v_j × a_v + ω_j × a_ω) + v_k · Σ_{j>k} ω_j × a_v."""
        J = pin.getJointJacobian(self.model, self.data, self._wrist_joint, pin.WORLD)
        det = float(np.linalg.det(J))
        thr = self.config.singularity_threshold
        if abs(det) >= thr:
            return
        jt = J.T                                           # per joint (rows): v_j | ω_j
        # adj(J) = det(J)·J⁻¹ (one LU) unless J is singular to round-off, where it comes from the SVD
        adj = det * np.linalg.inv(J) if abs(det) > 1e-9 else _adjugate(J)
        # the three cross products in one call: v_j × a_v, ω_j × a_ω, ω_j × a_v
        c = _cross(np.concatenate((jt[:, :3], jt[:, 3:], jt[:, 3:])),
                   np.concatenate((adj[:, :3], adj[:, 3:], adj[:, :3])))
        xy = np.concatenate((c[:6] + c[6:12], c[12:]), axis=1)    # per joint: x_j | y_j
        grad = np.einsum("kc,kc->k", jt[:, _WV], _STRICT_UPPER_6 @ xy)   # suffix sums over j > k
        sign = 1.0 if det >= 0 else -1.0
        rows.append(np.array([weight * (thr - abs(det)) / thr]))
        jac.append((-weight / thr * sign * grad)[None, :])

    # -- solvers ---------------------------------------------------------------------------------
    def _lm(self, q: np.ndarray, target: pin.SE3, history: list[np.ndarray], iterations: int,
            soft: bool = True, weights: IkWeights | None = None,
            stall: int | None = None) -> tuple[np.ndarray, float, float, int, float]:
        """Box-constrained Levenberg-Marquardt on the objective; stops once the task is met.

        `stall`: give up after this many steps in a row that were rejected or left more than
        STALL_RATIO of the cost (crawling along a singular direction toward a target at the edge
        of the reach converges linearly: the caller's next stage decides faster)."""
        cfg, w = self.config, weights or self.config.weights
        smooth = self._smoothness_anchor(history, w) if soft else None
        goal = self._in_root(target, w)
        r, pe, re, md, parts = self._residuals(q, goal, w, smooth, soft)
        A = None                       # the Jacobian at q, once a step from q is needed
        cost, lam, it, crawling = r @ r, self._lambda0, 0, 0
        while it < iterations:
            if pe < cfg.position_tolerance and re < cfg.orientation_tolerance:
                break
            it += 1
            if A is None:
                A = self._jacobian(parts)
            H = A.T @ A
            g = A.T @ r
            # singularity-robust floor on the damping (Nakamura & Hanafusa): near a singular
            # posture the task's weakest direction is damped instead of spinning the wrist
            sigma = self._smallest_singular_value(A[:6])
            floor = SR_DAMPING * (1.0 - (sigma / SR_SIGMA) ** 2) if sigma < SR_SIGMA else 0.0
            damp = max(lam, floor)
            H.flat[::7] += damp                      # + damp·I (self._damping), in place
            dq = _spd_solve(H, -g)
            # joints on a bound that the step pushes outward are held there (active set),
            # and the step is solved again for the others: clipping alone stalls the solver
            on_bound = (q <= self._lower_eps) | (q >= self._upper_eps)
            if on_bound.any():
                held = (q <= self._lower_eps) & (dq < 0) | (q >= self._upper_eps) & (dq > 0)
                if held.any() and not held.all():
                    free = ~held
                    dq = np.zeros(6)
                    dq[free] = _spd_solve((H + (lam - damp) * self._damping)[np.ix_(free, free)], -g[free])
            q_new = np.minimum(np.maximum(q + dq, self.lower), self.upper)   # np.clip's wrapper costs more
            r2, pe2, re2, md2, parts2 = self._residuals(q_new, goal, w, smooth, soft)
            c2 = r2 @ r2
            if c2 < cost:
                # a plateau ends the search: the task alone converges to zero (the tolerances stop it),
                # the full objective to its floor, where 1e-5 of the cost is far below any error (and
                # the next streamed solve goes on from here)
                small = cost - c2 < (SOFT_PLATEAU if soft else 1e-12) * max(cost, 1e-12)
                crawling = crawling + 1 if c2 > STALL_RATIO * cost else 0
                q, r, pe, re, md, parts, cost, A = q_new, r2, pe2, re2, md2, parts2, c2, None
                lam = max(lam / 5, 1e-9)
                if small or (stall is not None and crawling >= stall):
                    break
            else:
                lam *= 8
                crawling += 1
                if lam > 1e6 or (stall is not None and crawling >= stall):
                    break
        return q, pe, re, it, md

    def _task(self, q: np.ndarray, target: pin.SE3, iterations: int, weights: IkWeights | None = None,
              stall: int | None = None) -> tuple[np.ndarray, float, float, int]:
        """The task alone from q (`_lm(soft=False)`); answers kept CONTACT_MARGIN clear."""
        return self._pass(q, target, iterations, False, weights, stall)

    def _soft(self, q: np.ndarray, target: pin.SE3, iterations: int) -> tuple[np.ndarray, float, float, int]:
        """The full objective from q against the stream's history (`_lm(soft=True)`)."""
        return self._pass(q, target, iterations, True)

    def _pass(self, q: np.ndarray, target: pin.SE3, iterations: int, soft: bool, weights: IkWeights | None = None,
              stall: int | None = None) -> tuple[np.ndarray, float, float, int]:
        """One Levenberg-Marquardt pass from q, compiled (`mobiman.arm.kernel.lm_pass`).

        The collision barrier is the Python loop's: with a collision weight, an answer within the
        margin (CONTACT_MARGIN for the task, `collision_margin` for the full objective; temporal
        coherence first, then the capsules in C++) is solved again by `_lm` with the collision
        rows, as is everything where the model has no compiled chain or the system is singular.
        Returns (q, position error, orientation error, iterations)."""
        w = weights or self.config.weights
        history = self._history if soft else []

        def python() -> tuple[np.ndarray, float, float, int]:
            return self._lm(q.copy(), target, history, iterations, soft=soft, weights=weights, stall=stall)[:4]

        if self._chain is None:
            return python()
        smooth = self._smoothness_anchor(history, w) if soft else None
        scale, centre = smooth if smooth is not None else (0.0, q)
        try:
            out = lm_pass(q, (self._oMt * target).homogeneous, self._chain.chain, self._chain.bounds, self._settings(w),
                          soft, centre, scale, iterations, -1 if stall is None else stall)
        except (np.linalg.LinAlgError, ZeroDivisionError):     # a singular system: the Python loop's fallbacks
            return python()
        q_new = out[:6]
        if w.collision > 0 and self._within(q_new, self.config.collision_margin if soft else CONTACT_MARGIN):
            return python()
        return q_new, float(out[6]), float(out[7]), int(out[8])

    def _within(self, q: np.ndarray, margin: float) -> bool:
        """Some capsule pair is within `margin` at q: the temporal-coherence bound cannot rule it
        out, and the exact clearance confirms it."""
        return not self._still_clear(q, margin) and self._measured_within(q, margin)

    def _measured_within(self, q: np.ndarray, margin: float) -> bool:
        """The exact clearance at q (C++; kept as the temporal-coherence bound's new reference) is
        below `margin`."""
        self._clear = (q.copy(), self._contact.min_distance(q))
        return self._clear[1] < margin

    def _settings(self, w: IkWeights) -> np.ndarray:
        """The compiled passes' settings vector for these weights (cached)."""
        key = (w.position, w.orientation, w.joint_limit, w.singularity)
        settings = self._kernel_settings.get(key)
        if settings is None:
            cfg = self.config
            settings = self._kernel_settings[key] = ArmChain.settings(
                w.position, w.orientation, self._lambda0, cfg.position_tolerance, cfg.orientation_tolerance,
                STALL_RATIO, SR_SIGMA, SR_DAMPING, w.joint_limit, cfg.joint_limit_margin, w.singularity,
                cfg.singularity_threshold, SOFT_PLATEAU)
        return settings

    def _solve_compiled(self, prev: np.ndarray, target: pin.SE3) -> IkResult | None:
        """Most streamed solves in one compiled call (`stream_pass`): the target met from the last
        solution within one step, clear of the body. None: the general path decides (out of reach,
        a bad target, a step too big, near the body)."""
        w = self.config.weights
        q_ref, lower = self._clear if self._clear is not None else (prev, -np.inf)
        try:
            out = stream_pass(prev, target.homogeneous, self._chain.chain, self._chain.bounds, self._settings(w),
                              self._stream, q_ref, self._rho, lower, self.config.max_iterations, STALL_STEPS)
        except (np.linalg.LinAlgError, ZeroDivisionError):
            return None
        if out[9] != DONE:
            return None
        q = out[:6].copy()
        # the kernel's temporal-coherence bound at q (out[10]); where it cannot rule a contact out, measure
        if w.collision > 0 and not out[10] > CONTACT_MARGIN and self._measured_within(q, CONTACT_MARGIN):
            return None
        h = self._history
        self._history = [h[-2], h[-1], q]
        pe, re = float(out[6]), float(out[7])
        return IkResult(q.copy(), pe, re, True, int(out[8]), False)

    def reset(self, q: np.ndarray) -> None:
        """Start the stream's history at q (the measured joints)."""
        q = np.clip(np.asarray(q, float), self.lower, self.upper)
        self._history = [q.copy(), q.copy(), q.copy()]
        self._goal, self._cooldown, self._far = None, 0, None

    def solve(self, target: pin.SE3) -> IkResult:
        """Streamed solve: from the last solution, no joint moves more than max_step."""
        if not self._history:
            raise RuntimeError("ArmIK.solve: call reset(q) with the measured joints first")
        prev = self._history[-1]
        if not _finite_pose(target):
            return self._result(prev, target, 0)
        if self._stream is not None and self._goal is None and self._far is None:
            fast = self._solve_compiled(prev, target)
            if fast is not None:
                return fast
        # the task first (warm start: the nearest solution); the RelaxedIK objective decides
        # only where the task cannot be met: how to approach an unreachable target
        start = prev if self._goal is None else self._goal
        wrist_distance = self.wrist_distance(target)
        if self._goal is None and (self._beyond(wrist_distance) or self._still_far(target)):
            # out of reach, or well short of it a moment ago with the target hardly moved: the
            # task alone would fail after all its iterations; only the full objective decides
            q, pe, re, it = prev, np.inf, np.inf, 0
        else:
            q, pe, re, it = self._task(start, target, self.config.max_iterations, stall=STALL_STEPS)
        solved = q                     # pe and re are this q's errors (a recovery below replaces q)
        self._far = None
        if not (pe < REACHED_POSITION and re < REACHED_ORIENTATION):
            q, pe, re, it2 = self._soft(prev, target, self.config.max_iterations)
            solved = q
            it += it2
            if pe > FAR_POSITION or re > FAR_ORIENTATION:
                self._far = target
            self._goal = None
            # (not at the edge of the reach, where every posture has its elbow straight, nor for
            # a hand inside the body: a search that fails costs tens of solves' time)
            if (self._cooldown <= 0 and wrist_distance < self.reach - REACH_EDGE
                    and not self.hand_blocked(target)):
                # stuck on a branch that cannot reach (e.g. past a wrist singularity, at a joint
                # limit): if another posture meets the target, travel there at max_step per solve
                cold = self.solve_cold(target, seed=prev)
                it += cold.iterations
                if cold.reached:
                    self._goal, q = cold.q.copy(), cold.q.copy()
                else:
                    self._cooldown = RECOVERY_COOLDOWN
            self._cooldown -= 1
        elif self._goal is not None:
            self._goal = q.copy()
        if self._goal is not None and np.max(np.abs(self._goal - prev)) <= self.config.max_step:
            self._goal = None
        limited = False
        step = q - prev
        if not math.isfinite(q.sum()):          # (a NaN or an infinity makes the sum one)
            q, step = prev.copy(), np.zeros(6)
        big = float(np.abs(step).max())
        if big > self.config.max_step:
            q, limited = prev + step * (self.config.max_step / big), True
        blocked = False
        if self.config.weights.collision > 0 and not self._still_clear(q, 0.0) and not self._clear_at(q) \
                and self._clear_at(prev):
            # the barrier is soft and a recovery travels in a straight line: neither may take the
            # arm into the body. Stop at the last clear posture on the way (from a clear one).
            q, blocked, self._goal = self._last_clear(prev, q), True, None
        self._history = self._history[-2:] + [q.copy()]
        if q is solved and math.isfinite(pe + re):    # the solver's own errors: no second FK
            return IkResult(q.copy(), pe, re, pe < REACHED_POSITION and re < REACHED_ORIENTATION, it, False)
        result = self._result(q, target, it, limited)
        result.blocked = blocked
        return result

    def solve_cold(self, target: pin.SE3, seed: np.ndarray | None = None) -> IkResult:
        """One-shot solve without history: the first collision-free posture that meets the target,
        else the closest clear approach (never a posture in collision).

        The arm's closed-form postures come first: they are every posture that meets the target
        (up to 8, within a fraction of a millimetre: the wrist axes miss each other by 0.5 mm),
        polished by a few task-only steps, nearest `seed` (else the middle of the ranges) first.
        When each of them collides, no posture meets the target clear of the body. Only when none
        meets it at all (out of reach, or the model not of that kind) do seeds from a table of
        postures near the target follow. Each seed is solved for the task alone; the capsules are
        measured on its answer only (a posture in between is never commanded)."""
        if not _finite_pose(target):
            q0 = np.clip(seed, self.lower, self.upper) if seed is not None else (self.lower + self.upper) / 2
            return self._result(q0, target, 0)
        seeds = [] if seed is None else [np.clip(np.asarray(seed, float), self.lower, self.upper)]
        task = self._task_weights
        postures = self._closed_form_seeds(target, seeds[0] if seeds else None)
        if self.hand_blocked(target):
            # the hand itself would be inside the body: every posture near the target collides
            return self._clear_approach(target, seeds, postures, 0)
        total, in_collision = 0, []
        for c in postures:
            q, pe, re, it = self._task(c, target, CLOSED_FORM_POLISH, weights=task)
            total += it
            if pe < REACHED_POSITION and re < REACHED_ORIENTATION:
                if self._clear_at(q):
                    return self._result(q, target, total)
                in_collision.append(q)
        if in_collision:
            return self._clear_approach(target, seeds, in_collision, total)
        # the closed form meets nothing: seeds from the table
        seeds += list(self._table_seeds(target, self.COLD_SEEDS))
        best, n = None, 0
        while n < len(seeds) and n < 2 * self.COLD_SEEDS and len(in_collision) < COLLIDING_ANSWERS:
            s = seeds[n]
            n += 1
            q, pe, re, it = self._task(s, target, self.config.max_iterations_cold, weights=task)
            total += it
            score = pe + 0.1 * re
            if best is None or score < best[0]:
                best = (score, q)
                # the spherical wrist's other solution, (q4 ± π, -q5, q6 ± π), if within the limits
                flip = q.copy()
                flip[3] -= np.pi * np.sign(flip[3] or 1.0)
                flip[4] = -flip[4]
                flip[5] -= np.pi * np.sign(flip[5] or 1.0)
                if np.all(flip >= self.lower) and np.all(flip <= self.upper):
                    seeds.insert(n, flip)
            if pe < REACHED_POSITION and re < REACHED_ORIENTATION:
                q2, pe2, re2, it2 = self._task(q, target, 20, weights=task)   # tighten
                total += it2
                q = q2 if pe2 <= pe else q
                if self._clear_at(q):
                    return self._result(q, target, total)
                in_collision.append(q)
        if not in_collision and self._clear_at(best[1]):
            return self._result(best[1], target, total)      # out of reach: the best approach
        return self._clear_approach(target, seeds, in_collision or [best[1]], total)

    def _clear_approach(self, target: pin.SE3, seeds: list[np.ndarray], goals: list[np.ndarray],
                        iterations: int) -> IkResult:
        """The closest clear approach to a target met only in collision (`goals`: postures at or
        near it, in collision, e.g. the closed-form ones).

        From a clear posture near the target, the last clear posture on the way to the nearest
        goal (bisection), then a few steps of the task with the collision rows toward the target
        where they stay clear. (The collision rows alone from the clear posture took 30 steps,
        with the capsules measured on every one, ~10 ms, and ended further away.)"""
        anchor = self._clear_anchor(target, seeds)
        if not goals:         # nothing near the target to aim at: where the task alone ends
            q, _, _, it = self._task(anchor, target, self.config.max_iterations_cold, weights=self._task_weights,
                                     stall=STALL_STEPS)
            iterations += it
            goals = [q]
        goal = min(goals, key=lambda g: float(np.abs(g - anchor).sum()))
        best = self._last_clear(anchor, goal)
        q, pe, re, it, _ = self._lm(best.copy(), target, [], APPROACH_ITERATIONS, soft=False)
        result = self._result(best, target, iterations + it)
        if self._clear_at(q) and pe + 0.1 * re < result.position_error + 0.1 * result.orientation_error:
            return IkResult(q.copy(), pe, re, pe < REACHED_POSITION and re < REACHED_ORIENTATION, result.iterations)
        return result

    def _clear_anchor(self, target: pin.SE3, seeds: list[np.ndarray]) -> np.ndarray:
        """A clear posture near the target: `seeds` first, then the table's nearest postures,
        then the middle of the ranges (the first clear one; the last resort even if it is not)."""
        for q in [*seeds, *self._table_seeds(target, 8 * self.COLD_SEEDS)]:
            if self._clear_at(q):
                return q
        return (self.lower + self.upper) / 2

    def _last_clear(self, clear: np.ndarray, blocked: np.ndarray, halvings: int = 8) -> np.ndarray:
        """The last clear posture on the straight joint-space way from `clear` (clear) to
        `blocked` (in collision), to 1/2^halvings of the way."""
        if self._clear_at(blocked):
            return blocked.copy()
        lo, hi = 0.0, 1.0
        for _ in range(halvings):
            mid = 0.5 * (lo + hi)
            if self._clear_at(clear + mid * (blocked - clear)):
                lo = mid
            else:
                hi = mid
        return clear + lo * (blocked - clear)

    def _result(self, q: np.ndarray, target: pin.SE3, iterations: int, limited: bool = False) -> IkResult:
        pose = self.fk(q)
        if _finite_pose(target):
            pe = float(np.linalg.norm(pose.translation - target.translation))
            re = float(np.linalg.norm(pin.log3(target.rotation.T @ pose.rotation)))
        else:
            pe = re = float("inf")
        # the clearance is not part of a result: `min_distance(q)` measures it when someone asks
        # (it cost as much as the solve itself, on every solve)
        return IkResult(q.copy(), pe, re, pe < REACHED_POSITION and re < REACHED_ORIENTATION, iterations, limited)

    # -- seeds -----------------------------------------------------------------------------------
    def _features(self, pose: pin.SE3) -> np.ndarray:
        return np.concatenate([pose.translation, 0.15 * pose.rotation[:, :2].ravel()])

    def _build_seed_table(self, rng: np.random.Generator) -> None:
        """Random postures and their poses, for cold seeds (a KD-tree on pose). A seed in
        collision is pushed out by the collision barrier."""
        qs = rng.uniform(self.lower, self.upper, size=(self.TABLE_SIZE, 6))
        feats = [self._features(self.fk(q)) for q in qs]
        self._table_q = np.array(qs)
        self._table = cKDTree(np.array(feats))

    def _closed_form_seeds(self, target: pin.SE3, near: np.ndarray | None) -> list[np.ndarray]:
        """The arm's closed-form postures for the target (`mobiman.arm.closed_form`), nearest to
        `near` (else the middle of the joint ranges) first; none where the model is not of that kind."""
        if self._closed_form is None:
            return []
        ref = (self.lower + self.upper) / 2 if near is None else near
        return sorted(self._closed_form.postures(self._oMt * target), key=lambda q: float(np.abs(q - ref).sum()))

    def _table_seeds(self, target: pin.SE3, k: int) -> np.ndarray:
        _, idx = self._table.query(self._features(target), k=k)
        return self._table_q[np.atleast_1d(idx)]


_STRICT_UPPER_6 = np.triu(np.ones((6, 6)), 1)      # (U @ x)[k] = Σ_{j>k} x[j]
_WV = [3, 4, 5, 0, 1, 2]                             # a Jacobian row v | ω reordered to ω | v


# LAPACK directly for the 6×6 systems of every iteration: numpy.linalg's per-call checks and
# error-state handling cost several times the arithmetic at this size
_POSV, _GESDD = lapack.get_lapack_funcs(("posv", "gesdd"), (np.zeros((6, 6)),))


def _spd_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with a·x = b for a symmetric positive definite a (the damped normal equations are)."""
    _, x, info = _POSV(a, b)
    return x if info == 0 else np.linalg.solve(a, b)


def _smallest_sv(a: np.ndarray) -> float:
    """The smallest singular value of a."""
    _, s, _, info = _GESDD(a, compute_uv=0)
    return float(s[-1]) if info == 0 else float(np.linalg.svd(a, compute_uv=False)[-1])


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a × b over the last axis (size 3), broadcasting the others: np.cross without its per-call
    axis handling, which cost more than the products for these small grids."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def _adjugate(a: np.ndarray) -> np.ndarray:
    """adj(A) (A·adj(A) = det(A)·I), defined also for a singular A: from the SVD."""
    u, s, vt = np.linalg.svd(a)
    prod = np.prod(s) / np.where(s > 0.0, s, 1.0)          # product of the other singular values
    if np.any(s <= 0.0):                                    # exactly singular: the products directly
        prod = np.array([np.prod(np.delete(s, i)) for i in range(len(s))])
    return np.linalg.det(u) * np.linalg.det(vt) * (vt.T * prod) @ u.T


MAX_TARGET_COORDINATE = 1e4     # [m] beyond this a pose is no target (and its products overflow)


def _unprefixed(text: str, prefix: str) -> str:
    """`text` without `prefix` (str.removeprefix, which Python 3.8 lacks)."""
    return text[len(prefix):] if text.startswith(prefix) else text


def _finite_pose(pose: pin.SE3) -> bool:
    """Finite, with a translation within MAX_TARGET_COORDINATE (entry by entry: no sum that overflows)."""
    m = pose.homogeneous
    return bool(np.isfinite(m).all() and np.abs(m[:3, 3]).max() <= MAX_TARGET_COORDINATE)
