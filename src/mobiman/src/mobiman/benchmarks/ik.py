"""The arm IK benchmark (issue 5), ROS-free: our `ArmIK` against public solvers on the same targets.

`scripts/benchmark ik` (`rosrun mobiman benchmark_ik`) calls `main`. Every solver answers the
same targets in one run, interleaved target by target so that a load spike on a shared machine
hits all of them alike:

* cold: FK of random joint configurations, uniform within the joint limits (fixed RNG seed),
  left arm; each solve starts without history, peers from the mid-range seed, ours with its
  own cold strategy (`ArmIK.solve_cold`);
* streamed: three paths sampled at 100 Hz, each tick warm-started from the previous answer
  (ours: `reset(q0)` then `solve` per tick): a circle, a straight line (with a turn of the
  gripper) out and back, and a line that leaves the workspace and comes back.

Every answer is judged by the same reference FK (pinocchio on the URDF, gripper_link in
torso_link4): success = position error < 1 mm and orientation error < 0.01 rad. Ticks of the
out-of-reach path beyond the reach margin are not judged; their error and joint jumps are
reported.

Peers (settings in `PEER_SETTINGS`, chosen as each library's usual defaults):
* KDL `ChainIkSolverPos_NR_JL` (Debian's python3-pykdl), chain built here from the URDF XML;
* pink (pin-pink): differential-IK QP steps (daqp) iterated until converged or a budget;
* ikpy: `Chain.inverse_kinematics_frame`, scipy least_squares (its default), chain built here.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pinocchio as pin

from r1_common.benchtools import stall_fraction

BASE_FRAME = "torso_link4"
POS_TOL = 1e-3          # [m]   success thresholds
ROT_TOL = 1e-2          # [rad]
RATE_HZ = 100.0         # streamed paths are sampled at this rate
GOALS = {"cold_success": 0.995, "streamed_success": 1.0, "streamed_median_ms": 0.2, "streamed_p99_ms": 1.0,
         "cold_median_ms": 2.0}

# Left-arm geometry (docs: /work/shared/reference/r1_kinematics.md §5; checked by the unit test):
SHOULDER_LEFT = np.array([-0.000338, 0.247934, 0.30285])   # J1 ∩ J2 in torso_link4
WRIST_REACH = 0.349852 + 0.282404                         # max |wrist centre - shoulder| (elbow straight)
WRIST_TO_GRIPPER = 0.162149                               # wrist centre -> gripper_link along gripper x
REACH_MARGIN = 0.02     # [m] a streamed tick is judged when its wrist centre is this far inside the reach

PEER_SETTINGS = {
    "kdl": {"solver": "ChainIkSolverPos_NR_JL", "maxiter": 500, "eps": 1e-5,
            "velocity_solver": "ChainIkSolverVel_pinv (eps 1e-5, maxiter 150)",
            "cold_seed": "mid-range", "streamed_seed": "previous answer"},
    "pink": {"qp_solver": "daqp", "task": "FrameTask(position_cost=1, orientation_cost=1, gain=1, lm_damping=0)",
             "limits": "ConfigurationLimit(config_limit_gain=0.5)", "damping": 1e-12, "dt": 1.0,
             "stop": "|e_pos| < 1e-5 m and |e_rot| < 1e-5 rad (converged), max |dq| < 1e-6 rad (stalled)",
             "max_iterations": 50,
             "cold_seed": "mid-range", "streamed_seed": "previous answer"},
    "ikpy": {"optimizer": "least_squares (scipy trf, finite-difference Jacobian)", "orientation_mode": "all",
             "tol": "scipy defaults (ftol = xtol = gtol = 1e-8)", "cold_seed": "mid-range",
             "streamed_seed": "previous answer"},
}


# -- the chain, read from the URDF ----------------------------------------------------------------
@dataclass(frozen=True)
class ChainJoint:
    """One URDF joint on the path root -> tip."""

    name: str
    type: str                      # revolute, continuous, prismatic, fixed
    xyz: tuple[float, float, float]
    rpy: tuple[float, float, float]
    axis: tuple[float, float, float]
    lower: float
    upper: float
    child: str


def _floats(text: str | None, default: str) -> tuple[float, float, float]:
    return tuple(float(v) for v in (text or default).split())  # type: ignore[return-value]


def urdf_chain(urdf_xml: str, root: str, tip: str) -> list[ChainJoint]:
    """The joints from link `root` to link `tip`, in order, parsed from the URDF XML."""
    robot = ET.fromstring(urdf_xml)
    by_child = {j.find("child").get("link"): j for j in robot.findall("joint")}
    chain, link = [], tip
    while link != root:
        if link not in by_child:
            raise ValueError(f"link '{tip}' is not below '{root}' in the URDF")
        j = by_child[link]
        origin, axis, limit = j.find("origin"), j.find("axis"), j.find("limit")
        jtype = j.get("type")
        lower = float(limit.get("lower", "-inf")) if limit is not None and jtype != "continuous" else -np.inf
        upper = float(limit.get("upper", "inf")) if limit is not None and jtype != "continuous" else np.inf
        chain.append(ChainJoint(
            name=j.get("name"), type=jtype,
            xyz=_floats(origin.get("xyz") if origin is not None else None, "0 0 0"),
            rpy=_floats(origin.get("rpy") if origin is not None else None, "0 0 0"),
            axis=_floats(axis.get("xyz") if axis is not None else None, "1 0 0"),
            lower=lower, upper=upper, child=link))
        link = j.find("parent").get("link")
    return chain[::-1]


def arm_frames(side: str) -> tuple[list[str], str]:
    return [f"{side}_arm_joint{i}" for i in range(1, 7)], f"{side}_gripper_link"


# -- reference kinematics (pinocchio) ---------------------------------------------------------------
class ArmReference:
    """Pinocchio model of one arm (all other joints locked at zero): the judge of every answer."""

    def __init__(self, urdf_xml: str, side: str = "left"):
        self.side = side
        self.joint_names, self.tip = arm_frames(side)
        full = pin.buildModelFromXML(urdf_xml)
        lock = [j for j in range(1, full.njoints) if full.names[j] not in self.joint_names]
        self.model: pin.Model = pin.buildReducedModel(full, lock, pin.neutral(full))
        if [self.model.names[j] for j in range(1, self.model.njoints)] != self.joint_names:
            raise ValueError("arm joints are not in chain order in the reduced model")
        self.data = self.model.createData()
        self.ee = self.model.getFrameId(self.tip)
        self.base = self.model.getFrameId(BASE_FRAME)
        self.lower = self.model.lowerPositionLimit.copy()
        self.upper = self.model.upperPositionLimit.copy()
        self.mid = 0.5 * (self.lower + self.upper)
        pin.framesForwardKinematics(self.model, self.data, self.mid)
        self.world_base = self.data.oMf[self.base].copy()   # torso_link4 in the model's root (constant)

    def fk(self, q: np.ndarray) -> pin.SE3:
        """gripper_link in torso_link4."""
        pin.framesForwardKinematics(self.model, self.data, np.asarray(q, dtype=float))
        return self.world_base.actInv(self.data.oMf[self.ee])

    def errors(self, q: np.ndarray, target: pin.SE3) -> tuple[float, float]:
        """Position [m] and orientation [rad] error of q against target (nan for a non-finite q)."""
        q = np.asarray(q, dtype=float)
        if not np.all(np.isfinite(q)):
            return float("nan"), float("nan")
        T = self.fk(q)
        return (float(np.linalg.norm(T.translation - target.translation)),
                float(np.linalg.norm(pin.log3(target.rotation.T @ T.rotation))))


def wrist_distance(target: pin.SE3, shoulder: np.ndarray = SHOULDER_LEFT) -> float:
    """Distance of the wrist centre that `target` asks for from the shoulder point."""
    wc = target.translation - WRIST_TO_GRIPPER * target.rotation[:, 0]
    return float(np.linalg.norm(wc - shoulder))


# -- targets ---------------------------------------------------------------------------------------------
def random_configurations(lower: np.ndarray, upper: np.ndarray, n: int, seed: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lower, upper, size=(n, len(lower)))


def cold_targets(ref: ArmReference, n: int, seed: int = 5) -> tuple[np.ndarray, list[pin.SE3]]:
    """n reachable poses: FK of configurations uniform within the joint limits (reproducible)."""
    qs = random_configurations(ref.lower, ref.upper, n, seed)
    return qs, [ref.fk(q).copy() for q in qs]


# A posture with the gripper in front of the chest pointing forward, 0.44 m from the shoulder
# (wrist centre), wrist well away from its singularity (q5 = -1): the start of every path.
Q0_LEFT = np.array([0.9, 2.2, -1.2, -0.4, -1.0, 0.0])


@dataclass
class StreamPath:
    name: str
    description: str
    q0: np.ndarray
    targets: list[pin.SE3]
    judged: np.ndarray            # bool per tick: within reach (success is counted)
    wrist_distance: np.ndarray    # per tick [m]


def _interp_pose(a: pin.SE3, b: pin.SE3, s: float) -> pin.SE3:
    """Straight line in position, geodesic in rotation."""
    R = a.rotation @ pin.exp3(s * pin.log3(a.rotation.T @ b.rotation))
    return pin.SE3(R, (1 - s) * a.translation + s * b.translation)


def streamed_paths(ref: ArmReference, q0: np.ndarray = Q0_LEFT, rate: float = RATE_HZ) -> list[StreamPath]:
    """The three streamed paths, all starting at FK(q0) (left arm)."""
    T0 = ref.fk(q0).copy()
    p0, R0 = T0.translation.copy(), T0.rotation.copy()
    dt = 1.0 / rate
    paths = []

    # circle: radius 0.1 m in the y-z plane of torso_link4 (a plane facing the robot), 1 rad/s, one turn
    r, w = 0.10, 1.0
    ey, ez = np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0])
    centre = p0 - r * ey
    n = int(round(2 * np.pi / w * rate)) + 1
    circle = [pin.SE3(R0, centre + r * (np.cos(w * k * dt) * ey + np.sin(w * k * dt) * ez)) for k in range(n)]
    paths.append(StreamPath("circle", f"radius {r} m in the y-z plane, {w} rad/s ({r * w} m/s), one turn",
                            q0, circle, np.ones(n, bool), np.array([wrist_distance(T) for T in circle])))

    # line: 0.23 m up and outward while the gripper turns 0.5 rad about torso z, out and back at 0.1 m/s
    end = pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, 0.5) @ R0, p0 + np.array([0.05, 0.10, 0.20]))
    length = float(np.linalg.norm(end.translation - p0))
    n_half = int(round(length / 0.10 * rate))
    s = np.r_[np.linspace(0, 1, n_half + 1), np.linspace(1, 0, n_half + 1)[1:]]
    line = [_interp_pose(T0, end, float(si)) for si in s]
    paths.append(StreamPath("line", f"straight {length:.2f} m out and back at 0.1 m/s, gripper turning 0.5 rad "
                            "about torso z on the way", q0, line, np.ones(len(line), bool),
                            np.array([wrist_distance(T) for T in line])))

    # out of reach: along the shoulder -> wrist-centre ray to 0.1 m beyond the reach and back, 0.2 m/s
    d0 = wrist_distance(T0)
    u = T0.translation - WRIST_TO_GRIPPER * R0[:, 0] - SHOULDER_LEFT
    u /= np.linalg.norm(u)
    travel = WRIST_REACH + 0.10 - d0
    n_half = int(round(travel / 0.20 * rate))
    s = np.r_[np.linspace(0, travel, n_half + 1), np.linspace(travel, 0, n_half + 1)[1:]]
    far = [pin.SE3(R0, p0 + si * u) for si in s]
    wd = np.array([wrist_distance(T) for T in far])
    paths.append(StreamPath("out_of_reach", f"radially out from the shoulder to 0.10 m beyond the reach and back "
                            f"at 0.2 m/s (fixed orientation); judged while the wrist centre is {REACH_MARGIN} m "
                            "inside the reach", q0, far, wd <= WRIST_REACH - REACH_MARGIN, wd))
    return paths


# -- solvers ---------------------------------------------------------------------------------------------
class Solver:
    """Adapter: one IK solver, cold and streamed. Answers are joint vectors in arm order."""

    name = "?"
    label = "?"
    settings: dict = {}

    def solve_cold(self, target: pin.SE3) -> np.ndarray:
        raise NotImplementedError

    def fk(self, q: np.ndarray) -> pin.SE3:
        """The solver's own forward kinematics (gripper_link in torso_link4)."""
        raise NotImplementedError

    def reset(self, q: np.ndarray) -> None:
        self._q = np.array(q, dtype=float)

    def solve_stream(self, target: pin.SE3) -> np.ndarray:
        q = self._solve_from(target, self._q)
        if np.all(np.isfinite(q)):
            self._q = q
        return q

    def _solve_from(self, target: pin.SE3, seed: np.ndarray) -> np.ndarray:
        raise NotImplementedError


def kdl_chain(joints: Sequence[ChainJoint]):
    """A PyKDL.Chain of the URDF joints (as kdl_parser builds it: one segment per joint)."""
    import PyKDL as kdl
    chain = kdl.Chain()
    for j in joints:
        frame = kdl.Frame(kdl.Rotation.RPY(*j.rpy), kdl.Vector(*j.xyz))
        if j.type in ("revolute", "continuous"):
            joint = kdl.Joint(j.name, frame.p, frame.M * kdl.Vector(*j.axis), kdl.Joint.RotAxis)
        elif j.type == "prismatic":
            joint = kdl.Joint(j.name, frame.p, frame.M * kdl.Vector(*j.axis), kdl.Joint.TransAxis)
        elif j.type == "fixed":
            joint = kdl.Joint(j.name, kdl.Joint.Fixed)
        else:
            raise ValueError(f"joint type '{j.type}' of '{j.name}' is not supported")
        chain.addSegment(kdl.Segment(j.child, joint, frame))
    return chain


def _jnt(q: Sequence[float]):
    import PyKDL as kdl
    a = kdl.JntArray(len(q))
    for i, v in enumerate(q):
        a[i] = float(v)
    return a


def kdl_frame(T: pin.SE3):
    import PyKDL as kdl
    R, p = T.rotation, T.translation
    return kdl.Frame(kdl.Rotation(*(float(v) for v in R.reshape(-1))), kdl.Vector(*(float(v) for v in p)))


def kdl_fk(chain, q: Sequence[float]) -> pin.SE3:
    import PyKDL as kdl
    f = kdl.Frame()
    kdl.ChainFkSolverPos_recursive(chain).JntToCart(_jnt(q), f)
    R = np.array([[f.M[i, j] for j in range(3)] for i in range(3)])
    return pin.SE3(R, np.array([f.p[0], f.p[1], f.p[2]]))


class KdlSolver(Solver):
    name, label = "kdl", "KDL NR_JL"

    def __init__(self, urdf_xml: str, side: str = "left", maxiter: int = 500, eps: float = 1e-5):
        import PyKDL as kdl
        joints = urdf_chain(urdf_xml, BASE_FRAME, arm_frames(side)[1])
        self.chain = kdl_chain(joints)
        moving = [j for j in joints if j.type != "fixed"]
        self.lower = np.array([j.lower for j in moving])
        self.upper = np.array([j.upper for j in moving])
        self.mid = 0.5 * (self.lower + self.upper)
        self._fk = kdl.ChainFkSolverPos_recursive(self.chain)
        self._vik = kdl.ChainIkSolverVel_pinv(self.chain, 1e-5, 150)
        self._ik = kdl.ChainIkSolverPos_NR_JL(self.chain, _jnt(self.lower), _jnt(self.upper), self._fk, self._vik,
                                              maxiter, eps)
        self._out = kdl.JntArray(len(moving))
        self.settings = dict(PEER_SETTINGS["kdl"], maxiter=maxiter, eps=eps)

    def fk(self, q):
        return kdl_fk(self.chain, q)

    def _solve_from(self, target, seed):
        self._ik.CartToJnt(_jnt(seed), kdl_frame(target), self._out)
        return np.array([self._out[i] for i in range(self._out.rows())])

    def solve_cold(self, target):
        return self._solve_from(target, self.mid)


class PinkSolver(Solver):
    name, label = "pink", "pink (daqp)"

    def __init__(self, ref: ArmReference, qp_solver: str = "daqp", max_iterations: int = 50, stop: float = 1e-5):
        import pink
        from pink.limits import ConfigurationLimit
        self.ref, self.qp_solver, self.max_iterations, self.stop = ref, qp_solver, max_iterations, stop
        self.model = ref.model
        self.data = self.model.createData()
        self.task = pink.tasks.FrameTask(ref.tip, position_cost=1.0, orientation_cost=1.0)
        self.limits = [ConfigurationLimit(self.model, config_limit_gain=0.5)]
        self._pink = pink
        self.settings = dict(PEER_SETTINGS["pink"], qp_solver=qp_solver, max_iterations=max_iterations)

    def fk(self, q):
        cfg = self._pink.Configuration(self.model, self.data, np.asarray(q, dtype=float), copy_data=False)
        return self.ref.world_base.actInv(cfg.get_transform_frame_to_world(self.ref.tip))

    def _solve_from(self, target, seed):
        pink = self._pink
        q = np.clip(np.asarray(seed, dtype=float), self.model.lowerPositionLimit, self.model.upperPositionLimit)
        cfg = pink.Configuration(self.model, self.data, q, copy_data=False)
        self.task.set_target(self.ref.world_base * target)
        for _ in range(self.max_iterations):
            e = self.task.compute_error(cfg)
            if np.linalg.norm(e[:3]) < self.stop and np.linalg.norm(e[3:]) < self.stop:
                break
            try:
                v = pink.solve_ik(cfg, [self.task], 1.0, solver=self.qp_solver, damping=1e-12, limits=self.limits,
                                  safety_break=False)
            except Exception:                       # NoSolutionFound: keep the best so far
                break
            cfg.integrate_inplace(v, 1.0)
            if np.max(np.abs(v)) < 1e-6:            # stalled (a limit or a local minimum)
                break
        return np.array(cfg.q, dtype=float)

    def solve_cold(self, target):
        return self._solve_from(target, self.ref.mid)


class IkpySolver(Solver):
    name, label = "ikpy", "ikpy"

    def __init__(self, urdf_xml: str, side: str = "left", symbolic: bool = True):
        """symbolic: ikpy's default (sympy-compiled link matrices): slow to build, faster to solve."""
        import warnings

        from ikpy.chain import Chain
        from ikpy.link import OriginLink, URDFLink
        joints = urdf_chain(urdf_xml, BASE_FRAME, arm_frames(side)[1])
        links = [OriginLink()]
        for j in joints:
            moving = j.type != "fixed"
            links.append(URDFLink(j.name, np.array(j.xyz), np.array(j.rpy),
                                  rotation=np.array(j.axis) if moving else None,
                                  bounds=(j.lower, j.upper) if moving else None,
                                  joint_type="revolute" if moving else "fixed", use_symbolic_matrix=symbolic))
        mask = [False] + [j.type != "fixed" for j in joints]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.chain = Chain(links, active_links_mask=mask, name=f"{side}_arm")
        self.mask = np.array(mask)
        moving = [j for j in joints if j.type != "fixed"]
        self.mid = 0.5 * (np.array([j.lower for j in moving]) + np.array([j.upper for j in moving]))
        self.settings = dict(PEER_SETTINGS["ikpy"])

    def full(self, q: np.ndarray) -> np.ndarray:
        x = np.zeros(len(self.mask))
        x[self.mask] = q
        return x

    def fk(self, q: np.ndarray) -> pin.SE3:
        M = self.chain.forward_kinematics(self.full(q))
        return pin.SE3(M[:3, :3], M[:3, 3])

    def _solve_from(self, target, seed):
        x = self.chain.inverse_kinematics_frame(target.homogeneous, initial_position=self.full(seed),
                                                orientation_mode="all")
        return np.asarray(x, dtype=float)[self.mask]

    def solve_cold(self, target):
        return self._solve_from(target, self.mid)


class OursSolver(Solver):
    name, label = "ours", "ours (ArmIK)"

    def __init__(self, urdf_xml: str, side: str = "left", config: dict | None = None):
        from mobiman.arm.ik import ArmIK, IkConfig
        cfg = IkConfig.from_dict(config) if config is not None else IkConfig()
        self.ik = ArmIK(urdf_xml, side=side, config=cfg)
        self.settings = {"config": config if config is not None else "IkConfig() defaults",
                         "cold": "ArmIK.solve_cold(target) (its own seeds)",
                         "streamed": "ArmIK.reset(q0), then per tick ArmIK.set_other_arm(its joints, here still) "
                                     "and ArmIK.solve(target), as the node does"}
        self._other = np.zeros(6)

    def fk(self, q):
        return self.ik.fk(np.asarray(q, dtype=float))

    def solve_cold(self, target):
        return np.asarray(self.ik.solve_cold(target).q, dtype=float)

    def reset(self, q):
        self.ik.reset(np.asarray(q, dtype=float))

    def solve_stream(self, target):
        self.ik.set_other_arm(self._other)      # the node places the other arm before every solve
        return np.asarray(self.ik.solve(target).q, dtype=float)


# -- measuring -------------------------------------------------------------------------------------------
def _stats(x: np.ndarray, scale: float = 1.0, digits: int = 6) -> dict:
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return {"median": None, "p99": None, "max": None}
    return {"median": round(float(np.median(x)) * scale, digits), "p99": round(float(np.percentile(x, 99)) * scale,
                                                                               digits),
            "max": round(float(np.max(x)) * scale, digits)}


@dataclass
class Record:
    """Raw per-solve figures of one solver on one target set."""

    pos: list[float] = field(default_factory=list)
    rot: list[float] = field(default_factory=list)
    time: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    q: list[np.ndarray] = field(default_factory=list)

    def add(self, ref: ArmReference, target: pin.SE3, q: np.ndarray, dt: float, cpu: float) -> None:
        e = ref.errors(q, target)
        self.pos.append(e[0])
        self.rot.append(e[1])
        self.time.append(dt)
        self.cpu.append(cpu)
        self.q.append(np.asarray(q, dtype=float))

    def arrays(self):
        return np.array(self.pos), np.array(self.rot), np.array(self.time)


def _success(pos: np.ndarray, rot: np.ndarray) -> np.ndarray:
    return np.isfinite(pos) & (pos < POS_TOL) & (rot < ROT_TOL)


def summarize_cold(rec: Record, ref: ArmReference) -> dict:
    pos, rot, t = rec.arrays()
    q = np.array(rec.q)
    outside = np.sum(np.any((q < ref.lower - 1e-6) | (q > ref.upper + 1e-6), axis=1)) if len(q) else 0
    return {"targets": len(pos), "success": round(float(np.mean(_success(pos, rot))), 5),
            "position_error_m": _stats(pos, 1.0, 9), "orientation_error_rad": _stats(rot, 1.0, 8),
            "time_ms": _stats(t, 1e3, 4), "cpu_ms": _stats(np.array(rec.cpu), 1e3, 4),
            "cpu_total_s": round(float(np.sum(rec.cpu)), 2),
            "nan": int(np.sum(~np.isfinite(pos))), "outside_limits": int(outside)}


def summarize_path(rec: Record, path: StreamPath, ref: ArmReference) -> dict:
    pos, rot, t = rec.arrays()
    q = np.array([path.q0] + rec.q)
    jumps = np.max(np.abs(np.diff(q, axis=0)), axis=1)
    judged = path.judged
    out = {"ticks": len(pos), "judged_ticks": int(judged.sum()),
           "success": round(float(np.mean(_success(pos[judged], rot[judged]))), 5) if judged.any() else None,
           "position_error_m": _stats(pos[judged], 1.0, 9), "orientation_error_rad": _stats(rot[judged], 1.0, 8),
           "time_ms": _stats(t, 1e3, 4), "cpu_ms": _stats(np.array(rec.cpu), 1e3, 4),
           "max_joint_jump_rad": round(float(np.nanmax(jumps)), 5), "nan": int(np.sum(~np.isfinite(pos)))}
    if (~judged).any():
        # beyond the reach margin: the least position error a fixed orientation allows is wd - reach
        lower_bound = np.maximum(path.wrist_distance[~judged] - WRIST_REACH, 0.0)
        out["unjudged"] = {"ticks": int((~judged).sum()),
                           "position_error_m": _stats(pos[~judged], 1.0, 6),
                           "excess_over_geometric_bound_m": _stats(pos[~judged] - lower_bound, 1.0, 6),
                           "orientation_error_rad": _stats(rot[~judged], 1.0, 6),
                           "max_joint_jump_rad": round(float(np.nanmax(jumps[~judged])), 5)}
    return out


def summarize_streamed(recs: dict[str, Record], paths: list[StreamPath]) -> dict:
    pos = np.concatenate([np.array(recs[p.name].pos)[p.judged] for p in paths])
    rot = np.concatenate([np.array(recs[p.name].rot)[p.judged] for p in paths])
    t = np.concatenate([np.array(recs[p.name].time) for p in paths])
    cpu = np.concatenate([np.array(recs[p.name].cpu) for p in paths])
    jumps, nan = [], 0
    for p in paths:
        q = np.array([p.q0] + recs[p.name].q)
        jumps.append(np.nanmax(np.abs(np.diff(q, axis=0))))
        nan += int(np.sum(~np.isfinite(np.array(recs[p.name].pos))))
    return {"ticks": len(t), "judged_ticks": len(pos), "success": round(float(np.mean(_success(pos, rot))), 5),
            "position_error_m": _stats(pos, 1.0, 9), "orientation_error_rad": _stats(rot, 1.0, 8),
            "time_ms": _stats(t, 1e3, 4), "cpu_ms": _stats(cpu, 1e3, 4), "cpu_total_s": round(float(np.sum(cpu)), 2),
            "max_joint_jump_rad": round(float(np.nanmax(jumps)), 5), "nan": nan}


def make_solvers(urdf_xml: str, ref: ArmReference, names: Sequence[str], ours_config: dict | None) -> list[Solver]:
    makers: dict[str, Callable[[], Solver]] = {
        "ours": lambda: OursSolver(urdf_xml, ref.side, ours_config),
        "kdl": lambda: KdlSolver(urdf_xml, ref.side),
        "pink": lambda: PinkSolver(ref),
        "ikpy": lambda: IkpySolver(urdf_xml, ref.side),
    }
    unknown = set(names) - set(makers)
    if unknown:
        raise ValueError(f"unknown solvers {sorted(unknown)} (known: {sorted(makers)})")
    return [makers[n]() for n in names]


def run(urdf_xml: str, targets: int = 2000, seed: int = 5, solvers: Sequence[str] = ("ours", "kdl", "pink", "ikpy"),
        ours_config: dict | None = None, ikpy_every: int = 4,
        log: Callable[[str], None] = print) -> tuple[dict, dict]:
    """Measure every solver on the same targets. Returns (summary, raw series for the plot).

    ikpy (some 50 ms a cold solve) answers every `ikpy_every`-th cold target only, to keep the
    run short; every other solver answers all of them, and every solver every streamed tick.
    """
    every = {"ikpy": max(1, int(ikpy_every))}
    ref = ArmReference(urdf_xml, "left")
    peers = make_solvers(urdf_xml, ref, solvers, ours_config)
    cold_q, cold = cold_targets(ref, targets, seed)
    paths = streamed_paths(ref)

    # each solver's own FK against the judge's (chains built here from the URDF must match)
    fk_check = {}
    for s in peers:
        fk_check[s.name] = max(float(np.abs(s.fk(q).homogeneous - ref.fk(q).homogeneous).max())
                               for q in random_configurations(ref.lower, ref.upper, 20, seed=99))
        if fk_check[s.name] > 1e-9:
            log(f"  WARNING: {s.name}'s FK differs from pinocchio's by {fk_check[s.name]:.2e}")

    # warm-up (imports, first-call caches): a few solves each, not measured
    for s in peers:
        for T in cold[:3]:
            s.solve_cold(T)

    cold_rec = {s.name: Record() for s in peers}
    t_start = time.monotonic()
    for k, T in enumerate(cold):
        for s in peers:
            if k % every.get(s.name, 1):
                continue
            c0, t0 = time.thread_time(), time.perf_counter()
            q = s.solve_cold(T)
            t1, c1 = time.perf_counter(), time.thread_time()
            cold_rec[s.name].add(ref, T, q, t1 - t0, c1 - c0)
        if (k + 1) % max(1, len(cold) // 10) == 0:
            log(f"  cold {k + 1}/{len(cold)} ({time.monotonic() - t_start:.0f} s)")

    stream_rec = {s.name: {p.name: Record() for p in paths} for s in peers}
    for p in paths:
        for s in peers:
            s.reset(p.q0)
        for T in p.targets:
            for s in peers:
                c0, t0 = time.thread_time(), time.perf_counter()
                q = s.solve_stream(T)
                t1, c1 = time.perf_counter(), time.thread_time()
                stream_rec[s.name][p.name].add(ref, T, q, t1 - t0, c1 - c0)
        log(f"  streamed {p.name}: {len(p.targets)} ticks ({time.monotonic() - t_start:.0f} s)")

    summary = {"solvers": {}, "targets": {
        "cold": {"count": targets, "seed": seed, "arm": "left", "ikpy_every": every["ikpy"],
                 "how": "FK of joint configurations uniform within the joint limits"},
        "streamed": {p.name: {"ticks": len(p.targets), "judged_ticks": int(p.judged.sum()),
                              "rate_hz": RATE_HZ, "description": p.description} for p in paths},
        "q0": Q0_LEFT.tolist(), "start_pose_xyz": ref.fk(Q0_LEFT).translation.round(4).tolist()}}
    for s in peers:
        summary["solvers"][s.name] = {
            "label": s.label, "settings": s.settings, "fk_check_max_error": fk_check[s.name],
            "cold": summarize_cold(cold_rec[s.name], ref),
            "streamed": summarize_streamed(stream_rec[s.name], paths),
            "paths": {p.name: summarize_path(stream_rec[s.name][p.name], p, ref) for p in paths}}
    ours = next((s for s in peers if s.name == "ours"), None)
    if ours is not None and hasattr(ours.ik, "min_distance"):
        # context for ours, which keeps clear of self-collision: targets whose own configuration
        # is in collision by its capsule model (torso, head, the other arm at zero)
        hit = np.array([ours.ik.min_distance(q) <= 0.0 for q in cold_q])
        c = summary["solvers"]["ours"]["cold"]
        pos, rot, _ = cold_rec["ours"].arrays()
        c["targets_in_collision"] = int(hit.sum())
        c["success_collision_free"] = round(float(np.mean(_success(pos[~hit], rot[~hit]))), 5) if (~hit).any() else None
        clear = np.array([ours.ik.min_distance(q) > 0.0 for q in cold_rec["ours"].q])
        # by another, clear posture
        c["met_in_collision"] = int(np.sum(_success(pos[hit], rot[hit]) & clear[hit])) if hit.any() else 0
        # every solver's answers in self-collision, by the same capsule model (the peers have none)
        for s in peers:
            sv = summary["solvers"][s.name]
            sv["cold"]["in_collision"] = int(sum(ours.ik.min_distance(q) <= 0.0 for q in cold_rec[s.name].q))
            sv["streamed"]["in_collision"] = int(sum(ours.ik.min_distance(q) <= 0.0
                                                     for r in stream_rec[s.name].values() for q in r.q))
    raw = {"cold": {n: r.arrays() + (np.array(r.cpu),) for n, r in cold_rec.items()},
           "streamed": {n: {p: r.arrays() + (np.array(r.cpu),) for p, r in d.items()} for n, d in stream_rec.items()},
           "paths": paths}
    return summary, raw


# -- reporting -------------------------------------------------------------------------------------------
def _versus(ours: dict, peer: dict) -> str:
    """Where ours is ahead of one peer, cold and streamed: success, then median and p99 CPU time."""
    parts = []
    for mode in ("cold", "streamed"):
        o, p = ours[mode], peer[mode]
        cells = [("success", o["success"] >= p["success"])]
        for stat in ("median", "p99"):
            ov, pv = o["cpu_ms"][stat], p["cpu_ms"][stat]
            cells.append((stat, ov is not None and pv is not None and ov < pv))
        behind = [name for name, ahead in cells if not ahead]
        parts.append(f"{mode} {'ahead' if not behind else 'behind on ' + ', '.join(behind)}")
    return f"{peer['label']}: " + ", ".join(parts)


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.2f} %"


def _ms(x) -> str:
    return "–" if x is None else (f"{x:.3f}" if x < 10 else f"{x:.1f}")


def _mm(s: dict) -> str:
    return "–" if s["median"] is None else f"{1e3 * s['median']:.3g} / {1e3 * s['p99']:.3g} / {1e3 * s['max']:.3g}"


def _mrad(s: dict) -> str:
    return "–" if s["median"] is None else f"{1e3 * s['median']:.3g} / {1e3 * s['p99']:.3g} / {1e3 * s['max']:.3g}"


def _accuracy_and_time_cells(d: dict) -> str:
    """success | position error | orientation error | wall time | CPU time, for one table row."""
    return (f"{_pct(d['success'])} | {_mm(d['position_error_m'])} | {_mrad(d['orientation_error_rad'])} | "
            f"{_ms(d['time_ms']['median'])} / {_ms(d['time_ms']['p99'])} | "
            f"{_ms(d['cpu_ms']['median'])} / {_ms(d['cpu_ms']['p99'])}")


def markdown(result: dict) -> str:
    sv = result["solvers"]
    tg = result["targets"]
    m = result["machine"]
    every = tg["cold"].get("ikpy_every", 1)
    lines = [
        f"# Arm IK benchmark ({result['date']})", "",
        f"Machine: {m['cpus']} CPUs, {m['platform']}, Python {m['python']}. A sleeping probe found it stalled "
        f"{100 * m['stalled_before']:.0f} % of the time before the run and {100 * m['stalled_after']:.0f} % after "
        "(shared VM): wall-clock times include those stalls, so the thread CPU time of each solve is given too "
        "(on a starved VM it still counts part of them: read p99s as upper bounds). "
        f"Run time {result['run_seconds']:.0f} s. Command: `scripts/benchmark ik` (`rosrun mobiman benchmark_ik`).", "",
        f"Targets, the same for every solver and interleaved target by target: {tg['cold']['count']} cold targets, FK "
        f"of random left-arm configurations uniform within the joint limits (seed {tg['cold']['seed']})"
        + (f"; ikpy answers every {every}th of them only (it is slow; `--ikpy-every 1` for all)" if every > 1 and
           "ikpy" in sv else "")
        + f". Streamed paths at {RATE_HZ:g} Hz from q0 = {tg['q0']} (gripper at {tg['start_pose_xyz']} m in "
        "torso_link4), each tick warm-started from the previous answer:", ""]
    for name, p in tg["streamed"].items():
        lines.append(f"- `{name}`: {p['ticks']} ticks, {p['description']} ({p['judged_ticks']} judged)")
    lines += ["", f"Success: position error < {POS_TOL * 1e3:g} mm and orientation error < {ROT_TOL:g} rad, judged by "
              "pinocchio FK. Errors as median / p99 / max; times as median / p99.", "",
              "**Cold** (no history; peers from the mid-range seed, ours `solve_cold`)", "",
              "| solver | targets | success | pos. error [mm] | rot. error [mrad] | wall time [ms] | CPU time [ms] "
              "| NaN | outside limits | in self-collision |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in sv.values():
        c = s["cold"]
        lines.append(f"| {s['label']} | {c['targets']} | {_accuracy_and_time_cells(c)} | {c['nan']} | "
                     f"{c['outside_limits']} | {c.get('in_collision', '–')} |")
    c = sv.get("ours", {}).get("cold", {})
    if "targets_in_collision" in c:
        lines += ["", f"{c['targets_in_collision']} of the {c['targets']} cold targets come from configurations in "
                  "self-collision by our solver's capsule model (which it keeps clear of); ours on the others: "
                  f"{_pct(c['success_collision_free'])}; of the {c['targets_in_collision']}, ours meets "
                  f"{c.get('met_in_collision', 0)} with another posture, clear of itself, and answers the others "
                  "with the closest clear approach. \"In self-collision\": answers inside the arm, the torso, the head "
                  "or the other arm (at zero) by the same capsule model."]
    lines += ["", "**Streamed** (all three paths; success and errors over the judged ticks, times and jumps over all)",
              "",
              "| solver | judged ticks | success | pos. error [mm] | rot. error [mrad] | wall time [ms] "
              "| CPU time [ms] | max joint jump per tick [rad] | NaN | in self-collision |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in sv.values():
        st = s["streamed"]
        lines.append(f"| {s['label']} | {st['judged_ticks']} | {_accuracy_and_time_cells(st)} | "
                     f"{st['max_joint_jump_rad']:.3f} | {st['nan']} | {st.get('in_collision', '–')} |")
    lines += ["", f"Goals (ours): cold success ≥ {100 * GOALS['cold_success']:g} %, cold median < "
              f"{GOALS['cold_median_ms']:g} ms; "
              f"streamed success {100 * GOALS['streamed_success']:g} %, streamed median "
              f"< {GOALS['streamed_median_ms']:g} ms, p99 < {GOALS['streamed_p99_ms']:g} ms.", ""]
    if "ours" in sv:
        o = sv["ours"]

        def met(ok: bool) -> str:
            return "met" if ok else "**not met**"

        def t(d: dict, key: str, stat: str) -> float:
            v = d[key][stat]
            return 1e9 if v is None else v
        lines += ["Ours against the goals: "
                  f"cold success {met(o['cold']['success'] >= GOALS['cold_success'])} on all targets"
                  + (f" ({met(o['cold']['success_collision_free'] >= GOALS['cold_success'])} on the collision-free "
                     "ones: the others ask for the arm inside itself, which it refuses by design)"
                     if o["cold"].get("success_collision_free") is not None else "") + "; "
                  f"cold median {met(t(o['cold'], 'time_ms', 'median') < GOALS['cold_median_ms'])} wall, "
                  f"{met(t(o['cold'], 'cpu_ms', 'median') < GOALS['cold_median_ms'])} CPU; "
                  f"streamed success {met(o['streamed']['success'] >= GOALS['streamed_success'])}; "
                  f"streamed median {met(t(o['streamed'], 'time_ms', 'median') < GOALS['streamed_median_ms'])} wall, "
                  f"{met(t(o['streamed'], 'cpu_ms', 'median') < GOALS['streamed_median_ms'])} CPU; "
                  f"streamed p99 {met(t(o['streamed'], 'time_ms', 'p99') < GOALS['streamed_p99_ms'])} wall, "
                  f"{met(t(o['streamed'], 'cpu_ms', 'p99') < GOALS['streamed_p99_ms'])} CPU.", ""]
    if "ours" in sv and len(sv) > 1:
        lines += ["Ours against each peer (ahead: at least as successful, and faster; median / p99 CPU time): "
                  + "; ".join(_versus(sv["ours"], s) for n, s in sv.items() if n != "ours") + ".", ""]
    lines += ["**Per path**: success on the judged ticks; CPU time median / p99 [ms]; max joint jump per tick [rad]. "
              "Beyond the reach margin of `out_of_reach`: position error median / max [mm], its excess over the "
              "bound a kept orientation allows (wrist-centre distance − reach) max [mm] "
              "(negative: orientation given up "
              "for position), max joint jump [rad].", "",
              "| solver | " + " | ".join(tg["streamed"]) + " | beyond reach |",
              "|---|" + "---:|" * (len(tg["streamed"]) + 1)]
    for s in sv.values():
        cells = []
        for p in s["paths"].values():
            cells.append(f"{_pct(p['success'])}; {_ms(p['cpu_ms']['median'])} / {_ms(p['cpu_ms']['p99'])}; "
                         f"{p['max_joint_jump_rad']:.3f}")
        far = s["paths"].get("out_of_reach", {}).get("unjudged")
        beyond = "–" if not far else (f"{1e3 * far['position_error_m']['median']:.1f} / "
                                      f"{1e3 * far['position_error_m']['max']:.1f}; "
                                      f"{1e3 * far['excess_over_geometric_bound_m']['max']:.1f}; "
                                      f"{far['max_joint_jump_rad']:.3f}")
        lines.append(f"| {s['label']} | " + " | ".join(cells) + f" | {beyond} |")
    lines += ["", "Settings:", ""]
    for name, s in sv.items():
        st = s["settings"]
        if name == "ours" and isinstance(st.get("config"), dict):
            st = dict(st, config="config/relaxed_ik.yaml `solver`")
        lines.append(f"- {s['label']}: " + "; ".join(f"{k} {v}" for k, v in st.items()))
    lines += ["", "Each solver's own FK against pinocchio's (max |ΔT| over 20 random q): " + ", ".join(
        f"{s['label']} {s['fk_check_max_error']:.1e}" for s in sv.values() if "fk_check_max_error" in s) + "."]
    lines += ["", "Versions: " + ", ".join(f"{k} {v}" for k, v in result.get("versions", {}).items()), "",
              "![solve times and streamed errors](arm_ik.png)", ""]
    return "\n".join(lines)


def plot(summary: dict, raw: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(summary["solvers"])
    labels = {n: summary["solvers"][n]["label"] for n in names}
    paths = raw["paths"]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))

    colors = {n: f"C{i}" for i, n in enumerate(names)}

    def cdf(ax, data, title, xlabel, thr=None, dashed=None):
        for n in names:
            for d, style, lab in ((data, "-", labels[n]), (dashed, "--", None)):
                if d is None:
                    continue
                x = np.sort(np.asarray(d[n], dtype=float))
                x = x[np.isfinite(x)]
                if len(x):
                    ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=lab, color=colors[n],
                            linestyle=style, linewidth=1.2 if style == "-" else 0.8)
        if thr is not None:
            ax.axvline(thr, color="k", linestyle=":", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction of solves")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")

    cdf(axes[0, 0], {n: raw["cold"][n][3] * 1e3 for n in names}, "cold solve time: CPU (solid), wall (dashed)",
        "ms", GOALS["cold_median_ms"], {n: raw["cold"][n][2] * 1e3 for n in names})
    cdf(axes[0, 1], {n: np.concatenate([raw["streamed"][n][p.name][3] for p in paths]) * 1e3 for n in names},
        "streamed solve time, all paths: CPU (solid), wall (dashed)", "ms", GOALS["streamed_p99_ms"],
        {n: np.concatenate([raw["streamed"][n][p.name][2] for p in paths]) * 1e3 for n in names})
    cdf(axes[0, 2], {n: np.maximum(raw["cold"][n][0], 1e-12) for n in names}, "cold position error", "m", POS_TOL)
    for ax, p in zip(axes[1], paths):
        t = np.arange(len(p.targets)) / RATE_HZ
        for n in names:
            ax.semilogy(t, np.maximum(raw["streamed"][n][p.name][0], 1e-12), label=labels[n], linewidth=1,
                        color=colors[n])
        ax.axhline(POS_TOL, color="k", linestyle=":", linewidth=0.8)
        if (~p.judged).any():
            ax.fill_between(t, 1e-12, 10, where=~p.judged, color="grey", alpha=0.2, label="beyond reach margin")
        ax.set_ylim(1e-10, 1)
        ax.set_title(f"streamed '{p.name}': position error")
        ax.set_xlabel("time [s] (100 Hz ticks)")
        ax.set_ylabel("m")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle("R1 left arm IK: our ArmIK against KDL, pink and ikpy on the same targets")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: Sequence[str], urdf_path: Path, ours_config_path: Path | None, default_out: Path) -> int:
    p = argparse.ArgumentParser(description="The arm IK benchmark: ours against KDL, pink and ikpy "
                                            "(writes <out>/arm_ik.{json,md,png}).")
    p.add_argument("--targets", type=int, default=2000, help="number of cold targets (default 2000)")
    p.add_argument("--seed", type=int, default=5, help="RNG seed of the cold targets")
    p.add_argument("--ikpy-every", type=int, default=4,
                   help="ikpy answers every K-th cold target only (default 4: it is slow); 1 for all")
    p.add_argument("--solvers", default="ours,kdl,pink,ikpy", help="comma-separated subset of ours,kdl,pink,ikpy")
    p.add_argument("--out", default=None, help=f"output directory (default {default_out})")
    args = p.parse_args(list(argv))
    out = Path(args.out) if args.out else default_out
    out.mkdir(parents=True, exist_ok=True)
    names = [s.strip() for s in args.solvers.split(",") if s.strip()]
    ours_config = None
    if "ours" in names and ours_config_path is not None:
        import yaml
        ours_config = yaml.safe_load(Path(ours_config_path).read_text())["solver"]
    urdf_xml = Path(urdf_path).read_text()
    print(f"benchmark_ik: {args.targets} cold targets + 3 streamed paths, solvers {', '.join(names)}")
    stalled_before = stall_fraction(3.0)
    t0 = time.monotonic()
    summary, raw = run(urdf_xml, args.targets, args.seed, names, ours_config, args.ikpy_every)
    run_seconds = time.monotonic() - t0
    stalled_after = stall_fraction(3.0)
    result = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "run_seconds": round(run_seconds, 1),
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                          "stalled_before": round(stalled_before, 3), "stalled_after": round(stalled_after, 3)},
              "urdf": Path(urdf_path).name, "success": {"position_m": POS_TOL, "orientation_rad": ROT_TOL},
              "goals": GOALS, "versions": versions(names), **summary}
    (out / "arm_ik.json").write_text(json.dumps(result, indent=1) + "\n")
    md = markdown(result)
    (out / "arm_ik.md").write_text(md)
    plot(summary, raw, out / "arm_ik.png")
    print(md)
    return 0


def versions(names: Sequence[str]) -> dict:
    from importlib import metadata
    v = {"pin": metadata.version("pin"), "numpy": np.__version__}
    for dist, key in (("pin-pink", "pink"), ("qpsolvers", "pink"), ("daqp", "pink"), ("ikpy", "ikpy"),
                      ("scipy", "ikpy")):
        if key in names:
            try:
                v[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                v[dist] = None
    if "kdl" in names:
        v["python3-pykdl"] = _dpkg_version("python3-pykdl")
    return v


def _dpkg_version(pkg: str) -> str | None:
    import subprocess
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


if __name__ == "__main__":     # python -m mobiman.benchmarks.ik (no ROS): paths from the source tree
    _src = Path(__file__).resolve().parents[3]
    sys.exit(main(sys.argv[1:], _src / "r1_description/urdf/r1_v2_1_0.urdf", _src / "mobiman/config/relaxed_ik.yaml",
                  _src.parent / "docs/benchmarks"))
