"""The IK benchmark's targets and judge (ROS-free): the arm's chain read from the URDF, the reference
kinematics every answer is judged by, the cold targets and the streamed paths.

Cold targets are FK of random joint configurations, uniform within the joint limits (fixed RNG seed),
left arm. Streamed paths are sampled at RATE_HZ from q0: a circle, a straight line (with a turn of the
gripper) out and back, and a line that leaves the workspace and comes back. Success: position error
< POS_TOL and orientation error < ROT_TOL by the reference FK (pinocchio on the URDF, gripper_link in
torso_link4).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

BASE_FRAME = "torso_link4"
POS_TOL = 1e-3          # [m]   success thresholds
ROT_TOL = 1e-2          # [rad]
RATE_HZ = 100.0         # streamed paths are sampled at this rate

# Left-arm geometry (docs: /work/shared/reference/r1_kinematics.md §5; checked by the unit test):
SHOULDER_LEFT = np.array([-0.000338, 0.247934, 0.30285])   # J1 ∩ J2 in torso_link4
WRIST_REACH = 0.349852 + 0.282404                         # max |wrist centre - shoulder| (elbow straight)
WRIST_TO_GRIPPER = 0.162149                               # wrist centre -> gripper_link along gripper x
REACH_MARGIN = 0.02     # [m] a streamed tick is judged when its wrist centre is this far inside the reach


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
