"""The joint tracker node's settings (`r1_jointTracker_demo_node`), declared once (r1_common.settings).

Loaded from the node's private namespace: config/joint_tracker.yaml, joint_tracker_fast.yaml for the
fast variants, and the launch file's `disable_torso`, `output_mode`. Entry counts per group depend on
the joint groups and are checked when the groups are built (mobiman.tracker.group.build_groups).
docs/joint_tracker.md shows the tables `markdown_table()` makes of these (tests/test_settings_docs.py keeps them equal).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional

from r1_common.settings import Settings, setting

# 0.02 rad, not 0.05: a joint lagging by less is pulled back onto the plan by its PD faster than the plan
# moves; measured on the simulated robot with 0.05, the elbow moved at 1.12x its limit over 0.1 s while
# catching up a 0.05 rad lag, with 0.02 every joint stayed within its limit (docs/joint_tracker.md).
MAX_FOLLOWING_ERROR = 0.02


@dataclass(frozen=True)
class GripperSettings(Settings):
    kp: float = setting(20.0, "N/m; the gripper's stiffness in the 7th command entry", low=0.0)
    kd: float = setting(0.5, "N·s/m; its damping", low=0.0)


@dataclass(frozen=True)
class GroupSettings(Settings):
    """One tracked group: `groups/<group>` (torso, left_arm, right_arm)."""

    target_topic: str = setting("", "sensor_msgs/JointState in: the group's targets (required)")
    feedback_topic: str = setting("", "sensor_msgs/JointState in: the group's HDAS feedback; each message is a "
                                      "tick (required)")
    command_topic: str = setting("", "hdas_msg/motor_control out (required)")
    velocity_cap: List[float] = setting([], "rad/s; per joint, a target's speed limits are capped to it "
                                            "(and it to the URDF's velocity limits); required", low=0.0)
    kp: List[float] = setting([], "N·m/rad; MIT stiffness per joint (required)", low=0.0)
    kd: List[float] = setting([], "N·m·s/rad; MIT damping per joint (required; the MIT frame carries 0..5)",
                              low=0.0)
    torque_ratio: Optional[List[float]] = setting(None, "pid mode: t_ff per joint, clipped to 0..1 (null: 1)")
    gripper: Optional[GripperSettings] = setting(None, "a 7th command entry when a target carries 7 positions "
                                                       "(arms only; null: a 7-entry target is dropped)")
    gravity_at: str = setting("measured", "the group's own joints in the gravity feed-forward: at the measured "
                                          "or the planned position", choices=("measured", "planned"))
    status_topic: str = setting("", "hdas_msg/feedback_status in: the driver's error bits of the group's joints; "
                                    "a joint reported off re-plans from where it is (empty: not read)")
    damping_ratio: float = setting(0.0, "damping ratio given through t_ff to each of the group's slow servo modes "
                                        "the loop can reach, beyond the MIT frame's kd (0: none; "
                                        "mobiman.control.servo)", low=0.0)
    gravity_feedback: float = setting(0.0, "share of the group's own gravity taken at the measured posture while "
                                           "the loop is fast (with gravity_at: planned; 0: at the plan only)",
                                      low=0.0, high=1.0)
    friction_coulomb: Optional[List[float]] = setting(None, "N·m; per joint, Coulomb friction cancelled at the "
                                                            "planned velocity (null: none)", low=0.0)
    friction_viscous: Optional[List[float]] = setting(None, "N·m·s/rad; per joint, viscous friction cancelled at "
                                                            "the planned velocity (null: none)", low=0.0)

    def __post_init__(self) -> None:
        for key in ("target_topic", "feedback_topic", "command_topic"):
            if not getattr(self, key):
                raise ValueError(f"{key}: required (a topic name)")
        for key in ("velocity_cap", "kp", "kd"):
            if not getattr(self, key):
                raise ValueError(f"{key}: required (one entry per joint)")


@dataclass(frozen=True)
class FastLimits(Settings):
    """Fast mode's fixed limits of one group: `fast_limits/<group>`."""

    velocity: List[float] = setting([], "rad/s; per joint (capped to the URDF's velocity limits)", low=0.0)
    acceleration: List[float] = setting([], "rad/s²; per joint", low=0.0)


@dataclass(frozen=True)
class JointTrackerSettings(Settings):
    output_mode: str = setting("mit", "mit: trajectory + gains + gravity feed-forward; pid: the Damiao "
                                      "force-position mode (speed limit and torque ratio)", choices=("mit", "pid"))
    feedback_timeout: float = setting(0.05, "s; feedback older than this in ROS and wall time is stale: "
                                            "no output; a longer gap advances the plan only this much (> 0)")
    nominal_rate_hz: float = setting(500.0, "Hz; Ruckig's step; each feedback message is a tick (> 0)")
    realtime_priority: int = setting(0, "SCHED_FIFO priority of the node's threads (0: normal scheduling; "
                                        "not permitted: a warning)", low=0, high=99)
    react_to_targets: bool = setting(True, "a new target's first tick is sent at once, borrowed from the plan's "
                                           "clock (at most one per feedback period)")
    max_following_error: float = setting(MAX_FOLLOWING_ERROR, "rad; the plan's clock waits while a joint lags it "
                                                              "by more, in its direction of motion (0: off)", low=0.0)
    resync_error: float = setting(0.3, "rad; after stale feedback, a joint this far from the plan re-plans from "
                                       "the measured position (a load never re-plans it)", low=0.0)
    inertial_feedforward: float = setting(1.0, "gain of M(q)·a_planned added to t_ff (0: gravity only)", low=0.0)
    base_feedforward: float = setting(1.0, "gain of the base's commanded acceleration in t_ff (0: the base taken "
                                           "as still)", low=0.0)
    base_acceleration_topic: str = setting("/motion_control/chassis_acceleration",
                                           "geometry_msgs/AccelStamped in: the base's commanded acceleration "
                                           "(chassis control; empty: not read)")
    base_twist_topic: str = setting("/motion_control/chassis_speed", "geometry_msgs/Twist in: the base's measured "
                                                                     "twist (turn rate; empty: not read)")
    base_timeout: float = setting(0.1, "s; a base stream older than this counts as zero (> 0)")
    friction_smoothing: float = setting(0.02, "rad/s; how fast the Coulomb feed-forward builds up (> 0)")
    damping_phase: float = setting(0.6, "rad; a servo mode is damped in full while its ω·delay is at most half "
                                        "this, not at all from this (> 0)")
    feedback_delay: List[float] = setting([0.03, 0.08], "s; [full, none]: gravity_feedback applies in full up to "
                                                        "the first loop delay (feedback age + period), not at all "
                                                        "from the second")
    disable_torso: bool = setting(False, "no torso output (torso speed control commands it)")
    fast: bool = setting(False, "fixed limits (fast_limits), no jerk limit, targets' speeds ignored")
    fast_limits: Dict[str, FastLimits] = setting({}, "per group: fast mode's limits (needed with fast)")
    groups: Dict[str, GroupSettings] = setting({}, "per group (torso, left_arm, right_arm): topics, caps, gains")
    joint_groups_file: str = setting("", "the joint groups (empty: mobiman's config/r1_joint_groups.yaml)")
    robot_description_param: str = setting("robot_description", "parameter holding the URDF")

    def __post_init__(self) -> None:
        for key in ("feedback_timeout", "nominal_rate_hz", "base_timeout", "friction_smoothing", "damping_phase"):
            if not getattr(self, key) > 0:
                raise ValueError(f"{key}: must be > 0, not {getattr(self, key)}")
        if len(self.feedback_delay) != 2 or not 0.0 <= self.feedback_delay[0] < self.feedback_delay[1]:
            raise ValueError(f"feedback_delay: needs [full, none] with 0 <= full < none, not {self.feedback_delay}")

