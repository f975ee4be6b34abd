"""Torso speed control's settings (`torso_speed_control`), declared once (r1_common.settings), free of ROS.

One declaration for the whole node: the controller's limits and gains (read by `TorsoSpeedController`),
the MIT output's gains and feed-forward, the feedback timeout and the topics (read by the node). Loaded
from the node's private namespace (config/torso_speed_control.yaml); unknown keys are refused.
docs/torso_speed_control.md shows the table `markdown_table()` makes of it (tests/test_settings_docs.py
keeps them equal).
"""
from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass
from typing import Any, Iterable, List, Mapping, Optional, Tuple

from mobiman.tracker.settings import MAX_FOLLOWING_ERROR
from r1_common.settings import ConfigError, Settings, setting

_POSITIVE = ("max_speed", "max_acceleration", "damping", "singular_threshold", "joint_speed_cap",
             "joint_acceleration", "resync_error", "command_timeout", "max_step", "trajectory_rate_hz",
             "feedback_timeout", "friction_smoothing", "base_timeout", "damping_phase")


@dataclass(frozen=True)
class TorsoSpeedConfig(Settings):
    """Limits, gains, output and topics of torso speed control (one YAML key each). Positions x, z are those
    of torso_link3's origin relative to torso_joint1's origin (a point fixed in base_link), in base_link axes."""

    # -- Cartesian speed
    max_speed: float = setting(0.2, "m/s; v_x and v_z are each clamped to ± this (> 0)")
    max_acceleration: float = setting(0.5, "m/s²; per component: a step command, a stop or a silent stream "
                                           "ramps at this (> 0)")
    command_timeout: float = setting(0.2, "s; speed stream silent this long: decelerate to zero and hold (> 0)")
    workspace_x: Tuple[float, float] = setting((-0.1, 0.2), "m; [low, high] of x, the guide's box (YAML: "
                                                             "`workspace: {x: [low, high]}`)")
    workspace_z: Tuple[float, float] = setting((0.1, 0.7), "m; [low, high] of z (YAML: `workspace: {z: ...}`)")
    workspace_gain: float = setting(2.0, "1/s; pull-back speed per metre outside the box (at most max_speed)",
                                    low=0.0)
    # -- the task: x, z and the trunk pitch, solved for joints 1-3 (joint 4, yaw, held)
    pitch_gain: float = setting(2.0, "1/s; proportional correction of drift from the latched pitch", low=0.0)
    damping: float = setting(0.03, "largest damped-least-squares λ, at the straight (singular) posture (> 0)")
    singular_threshold: float = setting(0.04, "damping starts when the task Jacobian's smallest singular value "
                                              "falls below this (q2 within about ±0.29 rad; > 0)")
    escape_rate: float = setting(0.5, "rad/s; joint-2 bend that leaves the exactly straight posture for an "
                                      "inward command (0: off)", low=0.0)
    bend_sign: float = setting(-1.0, "direction of that bend from exactly straight (the vendor's postures: -1)",
                               choices=(-1.0, 1.0))
    # -- joints
    joint_speed_cap: float = setting(1.5, "rad/s; whole q̇ scaled down to this; also the joint-target speed cap "
                                          "(> 0)")
    joint_acceleration: float = setting(4.0, "rad/s²; speeding up waits for the joints beyond this; braking "
                                             "before a joint limit (> 0)")
    joint_limit_margin: float = setting(0.005, "rad; speed control stops this far inside the URDF limits", low=0.0)
    resync_error: float = setting(0.1, "rad; after stale feedback, a torso this far from the command is re-seeded "
                                       "from the measurement (a load never re-seeds it; > 0)")
    max_step: float = setting(0.05, "s; longest time step integrated at once (a stall advances at most this; > 0)")
    trajectory_rate_hz: float = setting(500.0, "Hz; Ruckig step of joint-target moves (> 0)")
    max_following_error: float = setting(MAX_FOLLOWING_ERROR, "rad; the command waits for joints lagging it more "
                                                              "that do not keep pace (0: off), as the joint "
                                                              "tracker's plan", low=0.0)
    feedback_timeout: float = setting(0.05, "s; feedback older than this in ROS and wall time: no output (> 0)")
    # -- MIT output
    kp: List[float] = setting([500.0, 500.0, 400.0, 200.0], "N·m/rad; MIT stiffness (the tracker's torso gains)",
                              low=0.0)
    kd: List[float] = setting([5.0, 5.0, 5.0, 3.0], "N·m·s/rad; MIT damping", low=0.0)
    gravity_at: str = setting("planned", "the torso's own joints in the gravity feed-forward: at the commanded "
                                         "(planned) or the measured posture", choices=("planned", "measured"))
    inertial_feedforward: float = setting(1.0, "gain of M(q)·q̈_command added to t_ff (0: gravity only)", low=0.0)
    friction_coulomb: List[float] = setting([0.0] * 4, "N·m; Coulomb friction cancelled at the commanded "
                                                       "velocity, coulomb·tanh(q̇/friction_smoothing)", low=0.0)
    friction_viscous: List[float] = setting([0.0] * 4, "N·m·s/rad; viscous friction cancelled, viscous·q̇",
                                            low=0.0)
    friction_smoothing: float = setting(0.02, "rad/s; how fast the Coulomb term builds up (> 0)")
    damping_ratio: float = setting(0.6, "damping ratio given through t_ff to each slow servo mode the loop can "
                                        "reach, beyond the MIT frame's kd (0: none; mobiman.control.servo)", low=0.0)
    damping_phase: float = setting(0.6, "rad; a servo mode is damped in full while its ω·delay is at most half "
                                        "this, not at all from this (> 0)")
    gravity_feedback: float = setting(1.0, "share of the torso's own gravity taken at the measured posture while "
                                           "the loop is fast (0: at the command only)", low=0.0, high=1.0)
    feedback_delay: Tuple[float, float] = setting((0.03, 0.08), "s; [full, none]: gravity_feedback applies in "
                                                                "full up to the first loop delay (feedback age + "
                                                                "period), not at all from the second")
    base_feedforward: float = setting(1.0, "gain of the base's commanded acceleration in t_ff (0: the base taken "
                                           "as still)", low=0.0)
    base_timeout: float = setting(0.1, "s; a base stream older than this counts as zero (> 0)")
    # -- topics and model
    speed_topic: str = setting("/motion_target/target_speed_torso", "geometry_msgs/Twist in: linear.x = v_x, "
                                                                     "linear.z = v_z")
    target_topic: str = setting("/motion_target/target_joint_state_torso", "sensor_msgs/JointState in: joint "
                                                                            "targets (4 positions, speeds)")
    feedback_topic: str = setting("/hdas/feedback_torso", "sensor_msgs/JointState in: each message is a tick")
    command_topic: str = setting("/motion_control/control_torso", "hdas_msg/motor_control out (MIT)")
    left_arm_feedback_topic: str = setting("/hdas/feedback_arm_left", "the arms' postures, for gravity")
    right_arm_feedback_topic: str = setting("/hdas/feedback_arm_right", "likewise, the right arm")
    status_topic: str = setting("/hdas/feedback_status_torso", "hdas_msg/feedback_status in: the driver's error "
                                                               "bits; joints reported off re-seed the command "
                                                               "(empty: not read)")
    base_acceleration_topic: str = setting("/motion_control/chassis_acceleration",
                                           "geometry_msgs/AccelStamped in: the base's commanded acceleration "
                                           "(chassis control; empty: not read)")
    base_twist_topic: str = setting("/motion_control/chassis_speed", "geometry_msgs/Twist in: the base's measured "
                                                                     "twist (turn rate; empty: not read)")
    joint_groups_file: str = setting("", "the joint groups (empty: mobiman's config/r1_joint_groups.yaml)")
    robot_description_param: str = setting("robot_description", "parameter holding the URDF")
    frame: str = setting("torso_link3", "the controlled frame")
    origin_frame: str = setting("torso_link1", "its origin is torso_joint1's, fixed in base_link")
    base_frame: str = setting("base_link", "the axes of the speeds and the workspace")
    group: str = setting("torso", "the joint group")

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):       # constructed directly (tests, tools): the types from_params makes
            v = getattr(self, f.name)
            if f.name in ("workspace_x", "workspace_z", "feedback_delay"):
                lo, hi = (float(x) for x in v)
                if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                    raise ValueError(f"{f.name} must be [low, high] with low < high, got {v}")
                if f.name == "feedback_delay" and lo < 0.0:
                    raise ValueError(f"feedback_delay must be [full, none] with 0 <= full < none, got {v}")
                object.__setattr__(self, f.name, (lo, hi))
            elif hints[f.name] is float:
                if not math.isfinite(float(v)):
                    raise ValueError(f"{f.name} must be finite, got {v}")
                object.__setattr__(self, f.name, float(v))
        for name in _POSITIVE:
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("workspace_gain", "pitch_gain", "escape_rate", "joint_limit_margin", "max_following_error",
                     "damping_ratio"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
        if self.bend_sign not in (-1.0, 1.0):
            raise ValueError(f"bend_sign must be -1 or 1, got {self.bend_sign}")
        for name in ("kp", "kd", "friction_coulomb", "friction_viscous"):
            if len(getattr(self, name)) != 4:
                raise ValueError(f"{name} needs 4 entries (the torso's joints), got {getattr(self, name)}")

    @classmethod
    def from_params(cls, params: Optional[Mapping[str, Any]], where: str = "",
                    ignore: Iterable[str] = (), base: Optional["TorsoSpeedConfig"] = None) -> "TorsoSpeedConfig":
        """From the node's parameters; the workspace as `workspace: {x: [lo, hi], z: [lo, hi]}` (the YAML's
        form) or as the flat keys workspace_x, workspace_z. ConfigError naming the key."""
        p = dict(params or {})
        ws = p.pop("workspace", None)
        if ws is not None:
            key = f"{where}/workspace" if where else "workspace"
            if not isinstance(ws, Mapping) or not set(ws) <= {"x", "z"}:
                raise ConfigError(key, f"must be a map of x and z to [low, high], not {ws!r}")
            for axis, value in ws.items():
                if f"workspace_{axis}" in p:
                    raise ConfigError(f"{key}/{axis}", f"given twice (also as workspace_{axis})")
                p[f"workspace_{axis}"] = value
        return super().from_params(p, where, ignore, base)

