"""The HDAS node's private parameters, declared once (ROS-free).

HDAS's namespace holds two things: the robot's CAN layout (`r1_can/config/r1.yaml` + a bus file,
top-level keys `r1_can.config.LAYOUT_KEYS`, read by `r1_can.config.parse_config`) and the node's own
settings below (`HdasSettings`: the driver's timings and the stock topic and service names). Each
side refuses what it does not know: `HdasSettings.from_params(..., ignore=LAYOUT_KEYS)`.
docs/hdas.md shows `HdasSettings.markdown_table()`; a unit test keeps it equal to the declaration.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple

from r1_can.config import LAYOUT_KEYS
from r1_common.settings import Settings, setting

NODE = "HDAS"


def _topic(default: str, what: str) -> Any:
    return setting(default, f"{what} (the stock name)")


@dataclass(frozen=True)
class HdasSettings(Settings):
    """The private parameters of HDAS beside the CAN layout."""

    command_timeout: float = setting(0.2, "s; a command stream silent this long: arms and torso hold, the wheels "
                                     "ramp to 0", low=0.001)
    command_lapse: float = setting(0.05, "s; an arm's or the torso's command stream silent this long is late: "
                                   "its feed-forward becomes the median of the stream's last 0.1 s (a one-tick "
                                   "torque is not held through a controller's lapse); at most command_timeout",
                                   low=0.001)
    reply_timeout: float = setting(0.05, "s; a motor silent this long after the others answered is "
                                   "RECEIVE_TIMEOUT", low=0.001)
    status_rate: float = setting(1.0, "Hz; /hdas/feedback_status_* while no error code changes (a change is "
                                 "published at once)", low=0.01)
    enable_on_start: bool = setting(True, "start every group enabled in its boot mode, holding where it is (motors "
                                    "a previous driver left running are adopted), as the stock robot")
    robot_description_param: str = setting("robot_description", "the parameter holding the URDF (joint limits)")
    r1_t: bool = setting(False, "the stock launch file's R1-T switch; this driver drives the R1 either way")
    left_arm_feedback_topic: str = _topic("/hdas/feedback_arm_left", "left arm's joint feedback")
    right_arm_feedback_topic: str = _topic("/hdas/feedback_arm_right", "right arm's joint feedback")
    left_gripper_feedback_topic: str = _topic("/hdas/feedback_gripper_left", "left gripper's stroke")
    right_gripper_feedback_topic: str = _topic("/hdas/feedback_gripper_right", "right gripper's stroke")
    torso_feedback_topic_name: str = _topic("/hdas/feedback_torso", "torso's joint feedback")
    chassis_feedback_topic_name: str = _topic("/hdas/feedback_chassis", "chassis's steer angles and wheel speeds")
    left_arm_joint_control_topic: str = _topic("/motion_control/control_arm_left", "left arm's commands")
    right_arm_joint_control_topic: str = _topic("/motion_control/control_arm_right", "right arm's commands")
    left_gripper_joint_control_topic: str = _topic("/motion_control/control_gripper_left",
                                                   "left gripper motor's commands")
    right_gripper_joint_control_topic: str = _topic("/motion_control/control_gripper_right",
                                                    "right gripper motor's commands")
    left_gripper_position_control_topic: str = _topic("/motion_control/position_control_gripper_left",
                                                      "left gripper's stroke target")
    right_gripper_position_control_topic: str = _topic("/motion_control/position_control_gripper_right",
                                                       "right gripper's stroke target")
    torso_control_command_topic_name: str = _topic("/motion_control/control_torso", "torso's commands")
    chassis_control_command_topic_name: str = _topic("/motion_control/control_chassis", "chassis's commands")
    left_arm_error_topic_name: str = _topic("/hdas/feedback_status_arm_left", "left arm's error codes")
    right_arm_error_topic_name: str = _topic("/hdas/feedback_status_arm_right", "right arm's error codes")
    left_gripper_error_topic_name: str = _topic("/hdas/feedback_status_gripper_left", "left gripper's error code")
    right_gripper_error_topic_name: str = _topic("/hdas/feedback_status_gripper_right",
                                                 "right gripper's error code")
    torso_error_topic_name: str = _topic("/hdas/feedback_status_torso", "torso's error codes")
    chassis_error_topic_name: str = _topic("/hdas/feedback_status_chassis", "chassis's error codes")
    chassis_imu_feedback_topic_name: str = _topic("/hdas/imu_chassis", "chassis IMU")
    torso_imu_feedback_topic_name: str = _topic("/hdas/imu_torso", "torso IMU")
    bms_feedback_topic_name: str = _topic("/hdas/bms", "battery")
    controller_topic_name: str = _topic("/controller", "remote controller")
    function_frame_service_left_arm_name: str = _topic("/hdas/function_frame_left_arm",
                                                       "left arm's function-frame service")
    function_frame_service_right_arm_name: str = _topic("/hdas/function_frame_right_arm",
                                                        "right arm's function-frame service")
    function_frame_service_torso_name: str = _topic("/hdas/function_frame_torso", "torso's function-frame service")

    @classmethod
    def from_namespace(cls, params: Optional[Mapping[str, Any]], where: str = NODE) -> "HdasSettings":
        """The settings from the node's whole namespace, the CAN layout's keys (LAYOUT_KEYS) left out.

        :raises r1_common.settings.ConfigError: naming the bad or unknown key."""
        return cls.from_params(params, where=where, ignore=LAYOUT_KEYS)

    def topics(self) -> dict[str, str]:
        """Topic and service param -> name (TOPIC_PARAMS)."""
        return {k: getattr(self, k) for k in TOPIC_PARAMS}


# the params of the topic and service names, in declaration order
TOPIC_PARAMS: Tuple[str, ...] = tuple(f.name for f in dataclasses.fields(HdasSettings)
                                      if f.name.endswith(("_topic", "_name")))
