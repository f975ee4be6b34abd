"""The robot's kinematics and dynamics, read from its URDF with pinocchio.

One class, `RobotModel`, answers every kinematic question the motion nodes ask:
where a frame is relative to another, its Jacobian, the gravity torques of a joint
group and the joint limits. It knows nothing of the R1 beyond what the URDF and
the joint-group table (config/r1_joint_groups.yaml) say, so another robot is a
config change. Joint values are passed by group in the order of the group's
table, as on the HDAS topics; continuous joints (the wheels) take an angle.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pinocchio as pin
import yaml

from r1_common.settings import ConfigError


@dataclass(frozen=True)
class JointLimits:
    """Limits of a joint group, one entry per joint, in the group's order.

    Continuous joints have infinite position limits.
    """

    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray

    def clamp(self, q: np.ndarray) -> np.ndarray:
        return np.clip(q, self.lower, self.upper)


@dataclass(frozen=True)
class GroupIndex:
    """Where a group's joints sit in pinocchio's q and v vectors."""

    joints: tuple[str, ...]
    idx_q: np.ndarray          # first q index of each joint
    idx_v: np.ndarray          # v index of each joint
    continuous: np.ndarray     # bool: joint stores (cos, sin) in q
    # the same as slices where the indices are consecutive and no joint is continuous (arms,
    # torso): a slice write is a fraction of a fancy-index one, and this runs on every control tick
    q_slice: slice | None = None
    v_slice: slice | None = None


def load_group_config(path: str | Path, key: str = "joint_groups_file") -> tuple[dict[str, list[str]], dict[str, str]]:
    """Read `joint_groups` (group -> joint names) and `frames` (role -> frame name) from a YAML file like
    config/r1_joint_groups.yaml. Raises ConfigError naming `key`, the parameter that gave the path, when
    the file cannot be read or parsed or its tables are not maps of names."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(key, f"cannot read {path}: {e}") from None
    groups = data.get("joint_groups") if isinstance(data, dict) else None
    frames = data.get("frames", {}) if isinstance(data, dict) else None
    if not isinstance(groups, dict) or not all(isinstance(v, list) and all(isinstance(j, str) for j in v)
                                               for v in groups.values()):
        raise ConfigError(key, f"{path}: `joint_groups` must map each group to a list of joint names")
    if not isinstance(frames, dict) or not all(isinstance(v, str) for v in frames.values()):
        raise ConfigError(key, f"{path}: `frames` must map each role to a frame name")
    return dict(groups), dict(frames)


BASE_TWIST = slice(0, 3)    # a planar base's (vx, vy [m/s], wz [rad/s]) in v, in the base's own axes


class RobotModel:
    """Forward kinematics, Jacobians, gravity and limits of a URDF on a fixed base, or on a planar one.

    With `planar_base`, the URDF's root moves in the floor's plane (pinocchio's planar joint: q holds
    x, y, cos yaw, sin yaw ahead of the URDF's joints, v and a hold the base's twist (vx, vy, wz) and
    its rate of change, in the base's own axes, at `BASE_TWIST`): the dynamics then include what the
    base's motion asks of every joint. Every kinematic answer relative to a robot frame is the same
    as on a fixed base; the base's configuration is the neutral one unless a caller sets it.
    """

    def __init__(self, urdf_xml: str, joint_groups: Mapping[str, Sequence[str]], planar_base: bool = False):
        self.model: pin.Model = (pin.buildModelFromXML(urdf_xml, pin.JointModelPlanar()) if planar_base
                                 else pin.buildModelFromXML(urdf_xml))
        self.planar_base = planar_base
        self.data: pin.Data = self.model.createData()
        self._frame_ids: dict[str, int] = {}
        self._groups = {name: self._index(joints) for name, joints in joint_groups.items()}
        self._q_neutral = pin.neutral(self.model)

    @classmethod
    def from_files(cls, urdf_path: str | Path, group_config: str | Path) -> "RobotModel":
        groups, _ = load_group_config(group_config)
        return cls(Path(urdf_path).read_text(), groups)

    # -- joint bookkeeping -------------------------------------------------------------
    def _index(self, joints: Sequence[str]) -> GroupIndex:
        idx_q, idx_v, cont = [], [], []
        for name in joints:
            if not self.model.existJointName(name):
                raise KeyError(f"joint '{name}' is not in the URDF")
            j = self.model.joints[self.model.getJointId(name)]
            if j.nv != 1:
                raise ValueError(f"joint '{name}' has {j.nv} DOF; groups take 1-DOF joints only")
            idx_q.append(j.idx_q)
            idx_v.append(j.idx_v)
            cont.append(j.nq == 2)
        def run(idx: list[int]) -> slice | None:
            consecutive = bool(idx) and idx == list(range(idx[0], idx[0] + len(idx)))
            return slice(idx[0], idx[0] + len(idx)) if consecutive and not any(cont) else None
        return GroupIndex(tuple(joints), np.array(idx_q), np.array(idx_v), np.array(cont, dtype=bool),
                          run(idx_q), run(idx_v))

    @property
    def joint_names(self) -> tuple[str, ...]:
        """The URDF's joints (fixed ones aside), without pinocchio's universe and planar base."""
        return tuple(self.model.names[2 if self.planar_base else 1:])

    @property
    def groups(self) -> dict[str, tuple[str, ...]]:
        return {name: g.joints for name, g in self._groups.items()}

    def group(self, name: str) -> GroupIndex:
        try:
            return self._groups[name]
        except KeyError:
            raise KeyError(f"unknown joint group '{name}'; known: {sorted(self._groups)}") from None

    def configuration(self, groups: Mapping[str, npt.ArrayLike] | None = None,
                      base: np.ndarray | None = None) -> np.ndarray:
        """Pinocchio configuration with the given group values; others from `base` or zero."""
        q = (self._q_neutral if base is None else base).copy()
        for name, values in (groups or {}).items():
            self.set_group(q, name, values)
        return q

    def set_group(self, q: np.ndarray, group: str, values: npt.ArrayLike) -> None:
        """Write a group's joint values (angles for continuous joints) into q in place."""
        g = self.group(group)
        v = np.asarray(values, dtype=float)
        if v.shape != (len(g.joints),):
            raise ValueError(f"group '{group}' takes {len(g.joints)} values, got shape {v.shape}")
        if g.q_slice is not None:          # the common case (this runs per control tick)
            q[g.q_slice] = v
            return
        if not g.continuous.any():
            q[g.idx_q] = v
            return
        for iq, cont, val in zip(g.idx_q, g.continuous, v):
            if cont:
                q[iq], q[iq + 1] = np.cos(val), np.sin(val)
            else:
                q[iq] = val

    def group_values(self, q: np.ndarray, group: str) -> np.ndarray:
        """A group's joint values from q (angles for continuous joints)."""
        g = self.group(group)
        return np.array([np.arctan2(q[i + 1], q[i]) if c else q[i] for i, c in zip(g.idx_q, g.continuous)])

    def limits(self, group: str) -> JointLimits:
        g = self.group(group)
        m = self.model
        lower = np.where(g.continuous, -np.inf, m.lowerPositionLimit[g.idx_q])
        upper = np.where(g.continuous, np.inf, m.upperPositionLimit[g.idx_q])
        return JointLimits(lower, upper, m.velocityLimit[g.idx_v].copy(), m.effortLimit[g.idx_v].copy())

    # -- kinematics --------------------------------------------------------------------
    def frame_id(self, frame: str) -> int:
        fid = self._frame_ids.get(frame)           # two pinocchio calls with a string cost ~7 µs
        if fid is None:
            if not self.model.existFrame(frame):
                raise KeyError(f"frame '{frame}' is not in the URDF")
            fid = self._frame_ids[frame] = self.model.getFrameId(frame)
        return fid

    def _update(self, q: np.ndarray) -> None:
        pin.framesForwardKinematics(self.model, self.data, q)

    def pose(self, frame: str, q: np.ndarray, reference: str | None = None) -> pin.SE3:
        """Placement of `frame` in `reference` (the URDF root when None)."""
        fid = self.frame_id(frame)
        rid = None if reference is None else self.frame_id(reference)
        self._update(q)
        oMf = self.data.oMf[fid]
        return oMf.copy() if rid is None else self.data.oMf[rid].actInv(oMf)

    def jacobian(self, frame: str, q: np.ndarray, reference: str | None = None,
                 group: str | None = None) -> np.ndarray:
        """6×n Jacobian [v; ω] of `frame` relative to `reference`, in the reference's axes.

        v is the velocity of the frame's origin seen from the reference frame and ω its
        angular velocity, both expressed in the reference's axes (in the root's axes when
        reference is None). Columns are the group's joints (all of v when group is None).
        """
        m, d = self.model, self.data
        pin.computeJointJacobians(m, d, q)
        pin.updateFramePlacements(m, d)
        lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        jf = pin.getFrameJacobian(m, d, self.frame_id(frame), lwa)
        if reference is not None:
            rid = self.frame_id(reference)
            jr = pin.getFrameJacobian(m, d, rid, lwa)
            r = d.oMf[rid].rotation
            p = d.oMf[self.frame_id(frame)].translation - d.oMf[rid].translation
            lin = jf[:3] - jr[:3] - pin.skew(p).T @ jr[3:]   # v_f - v_r - ω_r × p
            ang = jf[3:] - jr[3:]
            jf = np.vstack([r.T @ lin, r.T @ ang])
        return jf if group is None else jf[:, self.group(group).idx_v]

    # -- dynamics ----------------------------------------------------------------------
    def gravity(self, q: np.ndarray, group: str | None = None) -> np.ndarray:
        """Joint torques that hold the robot still against gravity (RNEA with v = a = 0)."""
        tau = pin.computeGeneralizedGravity(self.model, self.data, q)
        return tau.copy() if group is None else self._group_torques(tau, group)

    def inverse_dynamics(self, q: np.ndarray, v: np.ndarray, a: np.ndarray,
                         group: str | None = None) -> np.ndarray:
        """Joint torques for motion (q, v, a) including gravity (RNEA)."""
        tau = pin.rnea(self.model, self.data, q, v, a)
        return tau.copy() if group is None else self._group_torques(tau, group)

    def inertia(self, q: np.ndarray, group: str) -> np.ndarray:
        """The group's block of the joint-space inertia matrix M(q) [kg·m², or kg for a prismatic joint]."""
        m = pin.crba(self.model, self.data, q)        # (the upper triangle only)
        idx = self.group(group).idx_v
        block = m[np.ix_(idx, idx)]
        return np.triu(block) + np.triu(block, 1).T

    def _group_torques(self, tau: np.ndarray, group: str) -> np.ndarray:
        """A group's entries of a full torque vector, copied (pinocchio reuses its Data)."""
        g = self.group(group)
        return tau[g.v_slice].copy() if g.v_slice is not None else tau[g.idx_v]

    @property
    def zero_velocity(self) -> np.ndarray:
        """A zero v (or a) vector; do not write into it."""
        if not hasattr(self, "_zero_v"):
            self._zero_v = np.zeros(self.model.nv)
        return self._zero_v

    def velocity_vector(self, groups: Mapping[str, npt.ArrayLike], base: Sequence[float] | None = None) -> np.ndarray:
        """A full v (or a) vector with the given group values, zero elsewhere; `base`: the planar base's
        (vx, vy, wz) (or their rates), in its own axes. ValueError for a base on a fixed-base model."""
        v = np.zeros(self.model.nv)
        for name, values in groups.items():
            g = self.group(name)
            v[g.v_slice if g.v_slice is not None else g.idx_v] = values
        if base is not None:
            if not self.planar_base:
                raise ValueError("a base twist needs a model with planar_base")
            v[BASE_TWIST] = base
        return v
