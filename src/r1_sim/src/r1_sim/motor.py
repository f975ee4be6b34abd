"""A simulated Damiao motor: the behaviour of one joint motor as seen from its CAN id.

It answers the frames of `r1_can.damiao` as the firmware does (one reply per frame
it accepts, on its MST_ID) and produces the torque the physics applies:

* disabled -> no torque; enabled -> the law of its control mode:
  MIT  tau = kp (p_des - p) + kd (v_des - v) + t_ff,
  FORCE_POS / POS_VEL: position P loop (KP_APR) into a speed PI loop (KP_ASR, KI_ASR)
  with the frame's speed limit and torque-limit ratio, VEL: the speed PI loop;
  every output saturates at the motor's peak torque (or at TMAX, should a register write make
  that the smaller);
* for the physics (`drive`, `redrive`): the law over one step as f - d v, v the joint's velocity at the
  step's end, so that the physics integrates the law's damping (the MIT frame's kd, the speed loop's
  KP_ASR) implicitly: the motor runs its loop at tens of kHz, continuously, and one explicit evaluation
  a physics step is unstable once d x step / the joint's inertia exceeds 2 (a finger's kd above
  0.72 N·m·s/rad, 0.45 kN·s/m at the finger, at 500 Hz). A step over which the law saturates at the
  peak is taken saturated (`redrive`), so the torque applied never exceeds it;
* command frames on another mode's id are ignored (no reply), as the firmware;
* special frames: enable, disable, set zero (only while disabled), clear error;
* registers: read/write through 0x7FF (CTRL_MODE only while disabled), status request;
* watchdog: enabled and silent longer than TIMEOUT (register 9, 50 µs units) -> COMM_LOST;
* faults latch a status (8..E) and cut the torque until cleared; over-temperature
  and under-voltage re-latch while their cause is present;
* a first-order thermal model of the winding and of the MOS stage, each heated by the torque
  squared: the winding calibrated to the motor's rated torque (held for good it settles
  WINDING_RISE_AT_RATED_C above ambient, below the trip), the MOS stage to its peak (sized for the
  peak current, it settles below its own trip even at the peak held for good). Held at the peak,
  the winding trips after -WINDING_TIME_CONSTANT_S * ln(1 - trip rise / (rise at rated * (peak /
  rated)^2)): 20 s at peak = 3 rated, 52 s at peak = 2 rated (`winding_trip_time`).
"""
from __future__ import annotations

import math

from r1_can import damiao
from r1_can.damiao import ControlMode, MotorLimits, MotorTorque, Register, RegisterCommand, Status

AMBIENT_C = 30.0
MOS_LIMIT_C = 120.0       # Damiao's driver over-temperature protection
ROTOR_LIMIT_C = 100.0     # Damiao's recommended ceiling for the winding's protection (register OT_VALUE)
WINDING_RISE_AT_RATED_C = 50.0    # [°C] above ambient, the rated torque held for good
WINDING_TIME_CONSTANT_S = 120.0
MOS_RISE_AT_PEAK_C = 70.0         # [°C] above ambient, the peak torque held for good
MOS_TIME_CONSTANT_S = 60.0
TIMEOUT_UNIT_S = 50e-6
# register ids as plain ints: the per-step laws look them up ~50,000 times a second
_TIMEOUT, _KP_APR, _KP_ASR, _KI_ASR = (int(r) for r in (Register.TIMEOUT, Register.KP_APR, Register.KP_ASR,
                                                        Register.KI_ASR))
FAULTS = ("none", "no_reply", "over_temperature", "over_current", "under_voltage", "overload")


class SimMotor:
    """One simulated motor; `handle` takes frames, `torque` gives its output at a joint state.

    `torque` is the model's rated and peak torque [N·m] (damiao.MOTOR_TORQUES; the layout's
    `MotorSpec.torque`); None: a peak at TMAX and a rating of half that. Raises ValueError unless
    0 < rated <= peak."""

    def __init__(self, esc_id: int, mst_id: int, limits: MotorLimits, timeout: int = 0,
                 kp_apr: float = 20.0, kp_asr: float = 5.0, ki_asr: float | None = None,
                 mode: ControlMode = ControlMode.MIT, torque: MotorTorque | None = None):
        self.esc_id, self.mst_id = esc_id, mst_id
        self.limits = limits
        if torque is None:
            torque = MotorTorque(0.5 * limits.tmax, limits.tmax)
        if not 0.0 < torque.rated <= torque.peak:
            raise ValueError(f"need 0 < rated <= peak torque, got {torque}")
        self.rating = torque
        # the thermal model's per-step constants: °C/s per (N·m)² and 1/s
        self._winding_gain = WINDING_RISE_AT_RATED_C / (WINDING_TIME_CONSTANT_S * torque.rated ** 2)
        self._mos_gain = MOS_RISE_AT_PEAK_C / (MOS_TIME_CONSTANT_S * torque.peak ** 2)
        self.mode = ControlMode(mode)
        self.enabled = False
        self.error: Status | None = None
        self.registers: dict[int, float | int] = {
            Register.MST_ID: mst_id, Register.ESC_ID: esc_id, Register.TIMEOUT: timeout,
            Register.CTRL_MODE: int(self.mode), Register.PMAX: limits.pmax, Register.VMAX: limits.vmax,
            Register.TMAX: limits.tmax, Register.KP_APR: kp_apr, Register.KP_ASR: kp_asr,
            Register.KI_ASR: kp_asr * 10.0 if ki_asr is None else ki_asr, Register.KI_APR: 0.0,
            Register.ACC: 20.0, Register.DEC: 20.0, Register.MAX_SPD: limits.vmax, Register.SUB_VER: 0x0410,
        }
        self.zero_offset = 0.0           # physical angle of the motor's zero
        self.position = 0.0              # physical joint-side angle of the rotor [rad]
        self.velocity = 0.0
        self.last_torque = 0.0
        self.t_mos = AMBIENT_C
        self.t_rotor = AMBIENT_C
        self.last_frame = -math.inf
        self.frames = 0
        self.fault = "none"
        self._target: tuple = (0.0, 0.0, 0.0, 0.0, 0.0)   # mode-specific command
        self._integral = 0.0
        self._last_step = -math.inf
        # the law over the step `drive` gave: tau(v) = clamp(a - b v, ±limit), and the region taken (f, d)
        self._a = self._b = self._limit = self._f = self._d = 0.0
        self._driven = False

    # -- frames --------------------------------------------------------------------------
    def handle(self, arbitration_id: int, data: bytes, now: float) -> bytes | None:
        """A frame addressed to this motor; returns its reply (None: it does not answer)."""
        if self.fault == "no_reply" or len(data) != 8:
            return None
        if arbitration_id == damiao.REGISTER_ID:
            return self._register(data, now)
        # damiao.mode_of_command_id without its exception: every frame passes here
        mode = damiao.MODE_OF_OFFSET.get(arbitration_id & 0x700)
        if mode is None:
            return None                      # not a command id
        special = damiao.SPECIAL_FRAMES.get(bytes(data))
        if special is not None and mode == ControlMode.MIT:
            self._special(special)
            self.last_frame = now
            return self.feedback()
        if mode != self.mode:
            return None                      # the firmware listens on its own mode's id only
        self.last_frame = now
        self.frames += 1
        if mode == ControlMode.MIT:
            self._target = damiao.decode_mit_values(data, self.limits)
        elif mode == ControlMode.FORCE_POS:
            fp = damiao.decode_force_pos(data)
            if math.isfinite(fp.p):
                self._target = (fp.p, fp.v_limit, fp.torque_ratio)
        elif mode == ControlMode.POS_VEL:
            p, v = damiao.decode_pos_vel(data)
            if math.isfinite(p) and math.isfinite(v):
                self._target = (p, abs(v), 1.0)
        else:
            v = damiao.decode_vel(data)
            if math.isfinite(v):
                self._target = (v,)
        return self.feedback()

    def _special(self, what: str) -> None:
        if what == "enable":
            if self.error is None:
                if not self.enabled:
                    self._integral = 0.0
                    self._target = self._hold_target()
                self.enabled = True
        elif what == "disable":
            self.enabled = False
        elif what == "set_zero":
            if not self.enabled:
                self.zero_offset = self.position
        elif what == "clear_error":
            self.error = None
            self._latch_conditions()
            if self.error is None:
                self.enabled = False

    def _hold_target(self) -> tuple:
        """What an enabled motor does before its first command: nothing (zero gains, zero torque)."""
        p = self.position - self.zero_offset
        if self.mode == ControlMode.MIT:
            return (p, 0.0, 0.0, 0.0, 0.0)
        if self.mode == ControlMode.VEL:
            return (0.0,)
        return (p, 0.0, 0.0)

    def _register(self, data: bytes, now: float) -> bytes | None:
        try:
            req = damiao.decode_register_request(data)
        except ValueError:
            return None
        self.last_frame = now
        if req.command == RegisterCommand.STATUS:
            return self.feedback()
        if req.command == RegisterCommand.STORE:
            return None
        if req.rid not in self.registers:
            return None
        if req.command == RegisterCommand.WRITE and not math.isfinite(req.value):
            pass                     # a non-finite value is not stored (the reply carries the old one)
        elif req.command == RegisterCommand.WRITE:
            if req.rid == Register.CTRL_MODE:
                if not self.enabled and int(req.value) in ControlMode._value2member_map_:
                    self.mode = ControlMode(int(req.value))
                    self.registers[Register.CTRL_MODE] = int(self.mode)
                    self._target = self._hold_target()
            elif req.rid in (Register.PMAX, Register.VMAX, Register.TMAX):
                if not self.enabled and req.value > 0:
                    self.registers[req.rid] = float(req.value)
                    self.limits = MotorLimits(float(self.registers[Register.PMAX]),
                                              float(self.registers[Register.VMAX]),
                                              float(self.registers[Register.TMAX]))
            elif req.rid not in (Register.MST_ID, Register.ESC_ID, Register.SUB_VER):
                self.registers[req.rid] = req.value
        value = self.registers[req.rid]
        return damiao.encode_register_reply(self.esc_id, req.command, req.rid, value)

    def feedback(self) -> bytes:
        status = self.error if self.error is not None else (Status.ENABLED if self.enabled else Status.DISABLED)
        p = self.position - self.zero_offset
        return damiao.encode_feedback(self.esc_id, int(status), p, self.velocity, self.last_torque,
                                      self.t_mos, self.t_rotor, self.limits)

    # -- physics side ----------------------------------------------------------------------
    def set_state(self, position: float, velocity: float, now: float, dt: float = 0.0) -> None:
        """Where the joint is now; advances the watchdog and the thermal model by dt. After a `drive`, the
        end of that step: `last_torque` becomes the torque the step applied, f - d · velocity.

        Runs for every motor at every physics step: kept to plain attribute arithmetic."""
        self.position, self.velocity = float(position), float(velocity)
        if self._driven:       # the step `drive` gave: the torque it applied, at the joint's end velocity
            self._driven = False
            self.last_torque = self._f - self._d * self.velocity
        if dt > 0.0:
            # I²R heating, first order (the module docstring has the calibration)
            t2 = self.last_torque * self.last_torque
            self.t_rotor += dt * (self._winding_gain * t2 - (self.t_rotor - AMBIENT_C) / WINDING_TIME_CONSTANT_S)
            self.t_mos += dt * (self._mos_gain * t2 - (self.t_mos - AMBIENT_C) / MOS_TIME_CONSTANT_S)
        if self.error is not None:
            return
        if self.enabled:
            timeout = int(self.registers[_TIMEOUT]) * TIMEOUT_UNIT_S
            if timeout > 0 and now - self.last_frame > timeout:
                self.error = Status.COMM_LOST
                return
        if self.fault != "none" or self.t_rotor > ROTOR_LIMIT_C or self.t_mos > MOS_LIMIT_C:
            self._latch_conditions()

    def _latch_conditions(self) -> None:
        if self.error is not None:
            return
        if self.fault == "under_voltage":
            self.error = Status.UNDER_VOLTAGE
        elif self.fault == "over_temperature" or self.t_rotor > ROTOR_LIMIT_C:
            self.error = Status.ROTOR_OVER_TEMP
        elif self.t_mos > MOS_LIMIT_C:
            self.error = Status.MOS_OVER_TEMP

    @property
    def powered(self) -> bool:
        """Producing torque: enabled and no fault (a faulted Damiao motor drops its output)."""
        return self.enabled and self.error is None

    def torque(self, position: float, velocity: float, now: float) -> float:
        """Output torque at the joint state (physical angle) at simulated time `now`."""
        if not self.enabled or self.error is not None:
            self.last_torque = 0.0
            return 0.0
        dt = min(max(now - self._last_step, 0.0), 0.01) if math.isfinite(self._last_step) else 1e-3
        self._last_step = now
        p = position - self.zero_offset
        tmax = self.limits.tmax
        limit = self.rating.peak            # what the motor gives, or TMAX if that is smaller
        if tmax < limit:
            limit = tmax
        mode = self.mode
        if mode == ControlMode.MIT:
            p_des, v_des, kp, kd, t_ff = self._target
            tau = kp * (p_des - p) + kd * (v_des - velocity) + t_ff
        elif mode == ControlMode.VEL:
            tau = self._speed_loop(self._target[0], velocity, limit, dt)
        else:
            p_des, v_limit, ratio = self._target
            v_ref = float(self.registers[_KP_APR]) * (p_des - p)
            v_ref = max(-v_limit, min(v_limit, v_ref))
            if ratio * tmax < limit:        # the frame's torque limit is a ratio of TMAX
                limit = ratio * tmax
            tau = self._speed_loop(v_ref, velocity, limit, dt)
        tau = max(-limit, min(limit, tau))
        self.last_torque = tau
        return tau

    def output(self, now: float) -> float:
        """`torque` at the state the last `set_state` gave."""
        return self.torque(self.position, self.velocity, now)

    def drive(self, now: float) -> tuple[float, float]:
        """The law over the next physics step, from the state the last `set_state` gave, for a physics that
        integrates damping implicitly: (f [N·m], d [N·m·s/rad] >= 0) such that the motor applies f - d · v
        over the step, v the joint's velocity at the step's end (motor units: a gripper's linkage is the
        caller's).

        The law is affine in the velocity until it saturates: tau(v) = clamp(a - b v, ±limit), b the MIT
        frame's kd or the speed loop's KP_ASR, the limit the peak torque (or TMAX, or force-position's
        ratio of it, as `torque`); the rest (the position terms, v_des, t_ff, the speed loop's integral) is
        taken at the step's start. Where the law at the start velocity is within the limit, (f, d) =
        (a, b); where it is saturated, (±limit, 0); unpowered, (0, 0). The step's end may show the other
        region (`redrive`). `set_state` then records the torque applied as `last_torque`. Called in place
        of `torque`/`output`, once a step: the speed loop's integral advances here."""
        if not self.enabled or self.error is not None:
            self._a = self._b = self._limit = self._f = self._d = 0.0
            self._driven = True
            self.last_torque = 0.0
            return 0.0, 0.0
        dt = min(max(now - self._last_step, 0.0), 0.01) if math.isfinite(self._last_step) else 1e-3
        self._last_step = now
        p = self.position - self.zero_offset
        velocity = self.velocity
        tmax = self.limits.tmax
        limit = self.rating.peak            # what the motor gives, or TMAX if that is smaller
        if tmax < limit:
            limit = tmax
        mode = self.mode
        if mode == ControlMode.MIT:
            p_des, v_des, kp, kd, t_ff = self._target
            a = kp * (p_des - p) + kd * v_des + t_ff
            b = kd
        else:
            if mode == ControlMode.VEL:
                v_ref = self._target[0]
            else:
                p_des, v_limit, ratio = self._target
                v_ref = float(self.registers[_KP_APR]) * (p_des - p)
                v_ref = max(-v_limit, min(v_limit, v_ref))
                if ratio * tmax < limit:    # the frame's torque limit is a ratio of TMAX
                    limit = ratio * tmax
            b = float(self.registers[_KP_ASR])
            self._integral += float(self.registers[Register.KI_ASR]) * (v_ref - velocity) * dt
            self._integral = max(-limit, min(limit, self._integral))
            a = b * v_ref + self._integral
        if limit <= 0.0:                    # a zero torque ratio: no torque whatever the speed
            a = b = limit = 0.0
        tau = a - b * velocity
        if tau > limit:
            f, d, tau = limit, 0.0, limit
        elif tau < -limit:
            f, d, tau = -limit, 0.0, -limit
        else:
            f, d = a, b
        self._a, self._b, self._limit, self._f, self._d = a, b, limit, f, d
        self._driven = True
        self.last_torque = tau
        return f, d

    def redrive(self, velocity: float) -> tuple[float, float] | None:
        """After a step driven by `drive` that ended at `velocity` [rad/s]: None when the law there is in the
        region the step took (within the peak, or saturated on the same side), else (f, d) of the next region
        towards it, to take the step again with: saturated at the start and within the peak (or beyond on the
        other side) at the end, the step is within the peak; within it at the start and beyond at the end,
        saturated on that side (one joint's implicit step with saturation, whose solution lies where the law
        and the step agree: at most two steps more)."""
        b = self._b
        if b == 0.0:
            return None                      # the law does not depend on the velocity: always consistent
        tau = self._a - b * velocity
        limit = self._limit
        if self._d == 0.0:                   # saturated: at +limit or -limit
            if (tau >= limit) if self._f > 0.0 else (tau <= -limit):
                return None
            f, d = self._a, b
        elif tau > limit:
            f, d = limit, 0.0
        elif tau < -limit:
            f, d = -limit, 0.0
        else:
            return None
        self._f, self._d = f, d
        return f, d

    def _speed_loop(self, v_ref: float, velocity: float, limit: float, dt: float) -> float:
        """PI speed loop with the integral clamped to the torque limit (anti-windup)."""
        err = v_ref - velocity
        self._integral += float(self.registers[Register.KI_ASR]) * err * dt
        self._integral = max(-limit, min(limit, self._integral))
        return float(self.registers[_KP_ASR]) * err + self._integral

    # -- faults ------------------------------------------------------------------------------
    def inject(self, fault: str) -> None:
        """Simulate a fault; 'none' removes the cause (a latched status still needs clear-error)."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault '{fault}' (known: {', '.join(FAULTS)})")
        self.fault = fault if fault in ("no_reply", "over_temperature", "under_voltage") else "none"
        if fault == "over_current":
            self.error = Status.OVER_CURRENT
        elif fault == "overload":
            self.error = Status.OVERLOAD
        elif fault == "over_temperature":
            self.t_rotor = max(self.t_rotor, ROTOR_LIMIT_C + 5.0)
            self.error = Status.ROTOR_OVER_TEMP
        elif fault == "under_voltage":
            self.error = Status.UNDER_VOLTAGE
        elif fault == "none":
            self.t_rotor = min(self.t_rotor, AMBIENT_C + 20.0)
            self.t_mos = min(self.t_mos, AMBIENT_C + 20.0)


def winding_trip_time(torque: float, rating: MotorTorque) -> float:
    """Seconds the winding of a motor rated `rating`, starting at ambient, takes to trip holding
    `torque` [N·m] (the thermal model's closed form); math.inf when it settles below the trip."""
    final_rise = WINDING_RISE_AT_RATED_C * (torque / rating.rated) ** 2
    trip_rise = ROTOR_LIMIT_C - AMBIENT_C
    if final_rise <= trip_rise:
        return math.inf
    return -WINDING_TIME_CONSTANT_S * math.log(1.0 - trip_rise / final_rise)
