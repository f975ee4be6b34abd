"""The solvers the IK benchmark compares, behind one adapter (`Solver`): ours (`mobiman.arm.ik.ArmIK`)
and the peers, with the settings in `PEER_SETTINGS` (each library's usual defaults):

* KDL `ChainIkSolverPos_NR_JL` (Debian's python3-pykdl), chain built here from the URDF XML;
* pink (pin-pink): differential-IK QP steps (daqp) iterated until converged or a budget;
* ikpy: `Chain.inverse_kinematics_frame`, scipy least_squares (its default), chain built here.

Each answers cold (no history; peers from the mid-range seed, ours with its own cold strategy) and
streamed (warm-started from its previous answer; ours `reset(q0)` then `solve` per tick).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pinocchio as pin

from mobiman.benchmarks.ik_targets import BASE_FRAME, ArmReference, ChainJoint, arm_frames, urdf_chain

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
        cfg = IkConfig.from_params(config, where="solver") if config is not None else IkConfig()
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
