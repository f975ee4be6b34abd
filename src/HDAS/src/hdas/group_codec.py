"""One motor group's side of the cycle on the bus (ROS-free, I/O-free): the frames that carry a
cycle's commands, the motors' replies decoded into joint units, and the error conditions.

`GroupCodec` owns the group's feedback (position, velocity, effort, temperatures, status, when
each motor last answered, cycles since). It encodes in joint units, converting with each motor's
`metres_per_rad` (`ratio`): MIT frames, force-position frames (PID), the chassis's steer and wheel
frames, status requests and disable frames. `conditions` says what is wrong with each motor now
(`hdas.errors` turns conditions into the stock error bits).
"""
from __future__ import annotations

import math
from typing import Sequence, Tuple

import numpy as np

from hdas.command_limits import Command, JointLimitArrays
from hdas.errors import STATUS_CONDITION, Condition
from r1_can import damiao
from r1_can.config import MotorSpec
from r1_can.damiao import ControlMode, Status

Frame = Tuple[int, bytes]     # (typing's names: a module-level alias runs on Python 3.8)

MISSED_REPLIES = 3         # unanswered cycles (with reply_timeout elapsed) before RECEIVE_TIMEOUT
GROUP_SILENCE = 0.25      # [s] every motor of a group silent this long: RECEIVE_TIMEOUT (a bus down)
POSITION_TOLERANCE = 0.02  # [rad] beyond a limit before POS_EXCEED is reported
VELOCITY_MARGIN = 1.2     # VEL_EXCEED above this multiple of the velocity limit
JUMP_THRESHOLD = 0.5      # [rad] between two replies is a position jump


class GroupCodec:
    """Frames and feedback of `motors` (a group's, in its order) with joint `limits`."""

    def __init__(self, motors: Sequence[MotorSpec], limits: JointLimitArrays, reply_timeout: float = 0.05):
        self.motors = tuple(motors)
        n = len(self.motors)
        self.n = n
        self.limits = limits
        self.reply_timeout = reply_timeout
        self.ratio = np.array([m.metres_per_rad for m in self.motors])
        self._by_mst = {m.mst_id: i for i, m in enumerate(self.motors)}
        self._wraps = ~np.isfinite(limits.lower)    # continuous joints (wheels): no jump detection
        # feedback, joint units
        self.position = np.full(n, np.nan)
        self.velocity = np.zeros(n)
        self.effort = np.zeros(n)
        self.t_mos = np.zeros(n)
        self.t_rotor = np.zeros(n)
        self.status = np.full(n, -1, dtype=int)
        self.stamp = np.full(n, -math.inf)
        self.unanswered = np.zeros(n, dtype=int)    # cycles sent since each motor last answered
        self._jumped = np.zeros(n, dtype=bool)

    # -- decoding ----------------------------------------------------------------------------
    def index(self, arbitration_id: int) -> int | None:
        """The group's motor that answers on `arbitration_id`, None when none does."""
        return self._by_mst.get(arbitration_id)

    def decode(self, i: int, data: bytes, now: float) -> None:
        """Motor `i`'s feedback frame, received at `now`."""
        fb = damiao.decode_feedback(data, self.motors[i].limits)
        r = self.ratio[i]
        p = fb.position * r
        old = self.position[i]
        if (not self._wraps[i] and not math.isnan(old) and abs(p - old) > JUMP_THRESHOLD * r
                and now - self.stamp[i] < 0.1):
            self._jumped[i] = True
        self.position[i] = p
        self.velocity[i] = fb.velocity * r
        self.effort[i] = fb.torque / r
        self.t_mos[i], self.t_rotor[i] = fb.t_mos, fb.t_rotor
        self.status[i] = int(fb.status)
        self.stamp[i] = now
        self.unanswered[i] = 0

    def sent(self) -> None:
        """A cycle's frames went out: one more cycle each motor has to answer."""
        self.unanswered += 1

    @property
    def ready(self) -> bool:
        """Every motor has answered at least once."""
        return not np.isnan(self.position).any()

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions, velocities and efforts in joint units (NaN position until a motor answered)."""
        return self.position.copy(), self.velocity.copy(), self.effort.copy()

    def status_name(self, i: int) -> str:
        s = int(self.status[i])
        if s < 0:
            return "no reply"
        try:
            return Status(s).name
        except ValueError:
            return hex(s)

    # -- error conditions --------------------------------------------------------------------
    def conditions(self, now: float) -> list[set[Condition]]:
        """What is wrong with each motor now (and position jumps since the last call)."""
        out = []
        lim = self.limits
        # The newest reply of the group: a motor is silent when the others answered since, later than
        # reply_timeout after its own last reply. A stall of this process (a busy machine: its replies
        # wait in the socket) delays every motor's alike and is no silent motor; the whole group
        # silent (a bus down) is reported once it lasts GROUP_SILENCE.
        answered = self.stamp[np.isfinite(self.stamp)]
        newest = float(answered.max()) if answered.size else -math.inf
        group_silent = now - newest > max(GROUP_SILENCE, self.reply_timeout)
        for i in range(self.n):
            c: set[Condition] = set()
            if self.stamp[i] == -math.inf:
                c.add(Condition.DISCONNECTED)
            elif self.unanswered[i] >= MISSED_REPLIES and (
                    newest - self.stamp[i] > self.reply_timeout or group_silent):
                c.add(Condition.RECEIVE_TIMEOUT)
            else:
                try:
                    cond = STATUS_CONDITION.get(Status(int(self.status[i])))
                except ValueError:
                    cond = None
                if cond is not None:
                    c.add(cond)
                p = self.position[i]
                tol = POSITION_TOLERANCE * self.ratio[i]
                if p < lim.lower[i] - tol or p > lim.upper[i] + tol:
                    c.add(Condition.POSITION_EXCEEDED)
                if abs(self.velocity[i]) > VELOCITY_MARGIN * lim.velocity[i]:
                    c.add(Condition.VELOCITY_EXCEEDED)
                if abs(self.effort[i]) > lim.effort[i] * 1.05:
                    c.add(Condition.TORQUE_EXCEEDED)
            if self._jumped[i]:
                c.add(Condition.POSITION_JUMP)
                self._jumped[i] = False
            out.append(c)
        return out

    # -- encoding ----------------------------------------------------------------------------
    def status_requests(self) -> list[Frame]:
        """A status request to every motor: it answers with its feedback, enabled or not."""
        return [(damiao.REGISTER_ID, damiao.encode_status_request(m.esc_id)) for m in self.motors]

    def disable_frames(self) -> list[Frame]:
        """A disable frame to every motor (answered with its feedback, as a status request)."""
        return [(m.esc_id, damiao.DISABLE) for m in self.motors]

    def encode_mit(self, cmd: Command) -> list[Frame]:
        """MIT frames of a command in joint units (one entry per motor)."""
        r = self.ratio
        r2 = r * r
        encode = damiao.encode_mit
        return [(m.esc_id, encode(pi, vi, kpi, kdi, ti, m.limits)) for m, pi, vi, kpi, kdi, ti in
                zip(self.motors, (cmd.p / r).tolist(), (cmd.v / r).tolist(), (cmd.kp * r2).tolist(),
                    (cmd.kd * r2).tolist(), (cmd.t * r).tolist())]

    def encode_pid(self, cmd: Command) -> list[Frame]:
        """Force-position frames: p_des target, v_des speed limit, t_ff torque-limit ratio."""
        return [(damiao.command_id(m.esc_id, ControlMode.FORCE_POS), damiao.encode_force_pos(p / ri, v / ri, t))
                for m, p, v, t, ri in zip(self.motors, cmd.p, cmd.v, cmd.t, self.ratio)]

    def encode_swerve(self, steer: np.ndarray, steer_speed: np.ndarray, torque_ratio: Sequence[float],
                      wheel_rad_s: np.ndarray) -> list[Frame]:
        """The chassis: per module, its steer motor's force-position frame (angle, speed limit, torque
        ratio) and its wheel motor's velocity frame; steer motors first in the group, then the wheels."""
        m = len(steer)
        frames: list[Frame] = []
        for j in range(m):
            s, w = self.motors[j], self.motors[m + j]
            frames.append((damiao.command_id(s.esc_id, ControlMode.FORCE_POS),
                           damiao.encode_force_pos(float(steer[j]), float(steer_speed[j]), float(torque_ratio[j]))))
            frames.append((damiao.command_id(w.esc_id, ControlMode.VEL), damiao.encode_vel(float(wheel_rad_s[j]))))
        return frames
