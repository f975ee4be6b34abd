"""Torso speed control's tick, free of ROS: a feedback message in, an MIT command out.

`TorsoLoop.update(feedback, t)` is what `torso_speed_control` does with each torso feedback message,
as `mobiman.tracker.group.GroupController.update` is for the joint tracker's groups: check the
feedback, take its time (`FeedbackClock`), step `TorsoSpeedController` (which keeps the command and
its `SetpointGuard`), and make the command: p_des, v_des from the controller, kp, kd from the config,
t_ff from the upper body's dynamics on the moving base and the servo's friction and damping
(`mobiman.control`). Speed commands and joint targets go to `controller` directly.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence

import numpy as np

from mobiman.control.servo import MitServo, ServoSettings
from mobiman.control.upper_body import UpperBody
from mobiman.model.robot_model import RobotModel
from mobiman.torso.config import TorsoSpeedConfig
from mobiman.torso.speed_control import TorsoSpeedController
from mobiman.tracker.group import Event, Feedback, GroupCommand
from r1_common.validation import FEEDBACK_MARGIN, InputError, plausible_positions

__all__ = ["TorsoLoop"]


class TorsoLoop:
    """One torso speed control loop (see the module). Thread-unsafe: the caller serialises (the upper body
    has its own lock)."""

    def __init__(self, model: RobotModel, config: TorsoSpeedConfig, body: Optional[UpperBody] = None):
        """`model`: the robot (planar_base for the base's motion in t_ff); `body`: the measured upper body and
        base shared with other controllers of the process (None: its own, from the config's gains)."""
        self.cfg = config
        self.controller = TorsoSpeedController(model, config)
        self.clock = self.controller.clock
        self.body = body if body is not None else UpperBody(model, config.inertial_feedforward,
                                                           config.base_feedforward)
        self.effort = model.limits(config.group).effort.copy()   # the motors' peak: t_ff stays within it
        self.servo = MitServo(ServoSettings(config.damping_ratio, config.damping_phase, config.gravity_feedback,
                                            tuple(config.friction_coulomb), tuple(config.friction_viscous),
                                            config.friction_smoothing, *config.feedback_delay),
                              config.kp, self.effort)
        self.kp, self.kd = list(map(float, config.kp)), list(map(float, config.kd))
        self.gravity_at_plan = config.gravity_at == "planned"
        self.measured: Optional[np.ndarray] = None   # the last measured joints
        self.delay = 0.0                             # the loop's delay at the last tick [s]
        self.events: List[Event] = []                # for the caller to log (and clear)
        self.counters: Dict[str, int] = dict(bad_feedback=0, bad_stamps=0, torque_clamped=0)

    def _say(self, level: str, key: Optional[str], text: str) -> None:
        self.events.append(Event(level, key, text))

    def motors(self, powered: Sequence[bool]) -> None:
        """The driver's report of which torso joints' motors hold them (ValueError for another count than 4)."""
        self.controller.guard.motors(powered)

    def update(self, feedback: Feedback, t: float) -> Optional[GroupCommand]:
        """One tick at ROS time `t` for a torso feedback message; None: the feedback was refused (said)."""
        ctrl = self.controller
        position = feedback.position
        try:
            if len(position) != 4 or not all(map(math.isfinite, position)):
                raise InputError("feedback position", position, "needs 4 finite entries")
            q = plausible_positions(np.array(position, float), ctrl.lower, ctrl.upper, FEEDBACK_MARGIN,
                                    "feedback position", ctrl.names)
        except InputError as e:
            self.counters["bad_feedback"] += 1
            self._say("error", "feedback", f"torso feedback ignored: {e}")
            return None
        velocity = None
        if len(feedback.velocity) >= 4:
            v = np.array(feedback.velocity[:4], float)
            velocity = v if np.isfinite(v).all() else None
        arrival = self.clock.receive(feedback.stamp, t)
        if arrival.stamp_note:
            self.counters["bad_stamps"] += 1
            self._say("warn", "stamp", f"torso feedback {arrival.stamp_note}")
        if arrival.back:
            ctrl.guard.feedback_back()
            self._say("info", "back", "torso feedback is back; publishing again")
        if not ctrl.started:
            self._say("info", None, f"torso feedback arrived; holding {np.round(q, 3).tolist()}")
        age = max(t - arrival.time, 0.0)
        self.delay = age + self.clock.period
        cmd = ctrl.step(arrival.time, q, velocity, age)
        for text in ctrl.events:
            self._say("warn", text.split(" ")[0], text)
        ctrl.events = []
        self.measured = q
        self.body.set(ctrl.cfg.group, q)
        planned = cmd.position if self.gravity_at_plan else None
        ff = self.body.feedforward(ctrl.cfg.group, planned, cmd.acceleration, self.servo.share(self.delay))
        inertia = self.body.inertia(ctrl.cfg.group, planned) if self.servo.modal is not None else None
        t_ff, beyond = self.servo.t_ff(ff, cmd.velocity, velocity, self.delay, inertia)
        if beyond:
            self.counters["torque_clamped"] += 1
            self._say("warn", "torque", f"feed-forward torque beyond the effort limits {self.effort.tolist()} N·m: "
                                        "clamped (the motors cannot hold this posture or acceleration)")
        return GroupCommand(cmd.position.tolist(), cmd.velocity.tolist(), list(self.kp), list(self.kd),
                            t_ff.tolist(), stamp=arrival.time)
