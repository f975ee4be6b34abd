"""The simulator node's settings (`r1_sim_node`, private parameters of `/r1_sim`), ROS-free.

`SimSettings` declares every parameter the simulator reads: the loop (physics, /clock and ground-truth
rates, catch-up, lockstep) and the simulated robot (`r1_sim.robot.SimRobot`: start pose, friction,
motor loop gains, comm watchdog, battery, remote, IMU noise). The node's namespace also holds the
robot's CAN layout (r1_can/config/r1.yaml + a bus file, read by `r1_can.config.parse_config`), so that
the simulator answers exactly the ids the driver speaks to; its top-level keys are
`r1_can.config.LAYOUT_KEYS`, passed to `from_params` as `ignore=`. docs/simulator.md shows
`SimSettings.markdown_table()` and the tables of its sections.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional

from r1_can.config import LAYOUT_KEYS
from r1_common.settings import Settings, setting

__all__ = ["MOTOR_KINDS", "NODE", "Battery", "Friction", "Imu", "MotorLoop", "Remote", "SimSettings"]

NODE = "r1_sim"

MOTOR_KINDS = ("arm", "torso", "gripper", "steer", "wheel")


@dataclass(frozen=True)
class Friction(Settings):
    """Friction and reflected rotor inertia of the joints whose name contains a prefix."""

    viscous: float = setting(0.0, "N·m·s/rad; viscous friction", low=0.0)
    coulomb: float = setting(0.0, "N·m; Coulomb (stick-slip) friction", low=0.0)
    armature: float = setting(0.0, "kg·m²; reflected rotor inertia added to the joint", low=0.0)


@dataclass(frozen=True)
class MotorLoop(Settings):
    """A Damiao motor's internal loop gains (registers KP_APR, KP_ASR, KI_ASR)."""

    kp_apr: float = setting(20.0, "1/s; position loop gain (force-position mode)", low=0.0)
    kp_asr: float = setting(5.0, "N·m per rad/s; speed loop proportional gain", low=0.0)
    ki_asr: Optional[float] = setting(None, "N·m per rad; speed loop integral gain (null: 10 × kp_asr)", low=0.0)


@dataclass(frozen=True)
class Battery(Settings):
    """The battery pack at start (r1_sim.physics.BatteryModel)."""

    capacity_ah: float = setting(30.0, "A·h; capacity", low=0.1)
    state_of_charge: float = setting(0.9, "fraction 0..1; charge at start", low=0.0, high=1.0)


@dataclass(frozen=True)
class Remote(Settings):
    """The remote controller's receiver at start (/sim/remote changes it)."""

    mode: int = setting(5, "switch mode at start: 5 = host computer in control; 255 = receiver off (no frames)",
                        low=0, high=255)


@dataclass(frozen=True)
class Imu(Settings):
    """White noise on every IMU board's readings."""

    gyro_noise: float = setting(0.0, "rad/s; 1-σ noise of the rate gyro", low=0.0)
    acc_noise: float = setting(0.0, "m/s²; 1-σ noise of the accelerometer", low=0.0)


@dataclass(frozen=True)
class SimSettings(Settings):
    """Everything `r1_sim_node` reads from its private namespace, the CAN layout apart.

    config/sim.yaml holds the R1's tables (start pose, friction, motor loop gains) over the empty
    defaults; a YAML loaded after it changes single entries (rosparam merges the maps)."""

    scene: str = setting("room", "the world around the robot: a scene of r1_sim/worlds by name (`room`: walls, a "
                                 "table, three objects to grasp; `empty`: a floor) or the path of an MJCF file "
                                 "(docs/simulator.md, \"Scenes\")")
    physics_rate_hz: float = setting(1000.0, "Hz; physics steps per second of simulated time "
                                             "(r1_sim.launch: 1000, light 500)", low=1.0)
    clock_rate_hz: float = setting(500.0, "Hz of simulated time; /clock messages when /use_sim_time is set "
                                          "(r1_sim.launch: 500, light 200)", low=1.0)
    ground_truth_rate_hz: float = setting(100.0, "Hz of wall time; /sim/joint_states and /sim/odom", low=0.1)
    # After a pause of the simulator's process (a busy machine) the physics catches up with the wall clock
    # up to a lag, then lets time slip; while it catches up the buses are not served, which the
    # controllers see as a communication gap of that length.
    max_lag_s: float = setting(0.25, "s; on wall time (/use_sim_time false): how far the physics catches up "
                                     "with the wall clock after a pause before it lets time slip", low=0.0)
    # On simulated time every node keeps the physics' clock, so there is nothing to catch up with
    # (measured with 0.25 s here on a starved 2-core machine: bursts of 0.25 s every few tenths of a
    # second, and a streamed sine followed with ~1 s of lag).
    max_lag_sim_time_s: float = setting(0.01, "s; the same on simulated time: absorbs scheduling jitter only",
                                        low=0.0)
    lockstep: bool = setting(True, "on simulated time: the physics waits for the driver's frames on each bus "
                                   "(r1_sim.lockstep)")
    # Below one period the physics would wait for a frame the driver is not yet due to send.
    lockstep_periods: float = setting(2.5, "command periods of a bus (its rate_hz) the physics may run past "
                                           "the driver's last frame on it", low=1.0)
    lockstep_timeout_s: float = setting(0.5, "s of wall time; a bus silent this long is let go until it speaks "
                                             "again (a stopped driver does not freeze the simulation)", low=0.01)
    # 2 s rather than the 0.1 s a real robot might use: on a shared 2-core VM the driver process alone can
    # be descheduled for over a second while the simulator runs (and catches up, max_lag_s).
    comm_timeout_s: float = setting(2.0, "s of simulated time; motor comm watchdog (Damiao TIMEOUT register): "
                                         "silent longer → COMM_LOST, torque off, torso brakes on (0: off)", low=0.0)
    start_pose: Dict[str, float] = setting({}, "rad (m for a gripper finger); joint → position at start "
                                               "(joints not named: 0)")
    friction: Dict[str, Friction] = setting({}, "joint-name prefix → friction of every joint whose name "
                                                "contains it (the last matching prefix wins; none: frictionless)")
    motor_loops: Dict[str, MotorLoop] = setting({}, "motor kind (`arm`, `torso`, `gripper`, `steer`, `wheel`) "
                                                    "→ its loop gains (a kind not named: the defaults)")
    battery: Battery = setting(Battery(), "the battery pack")
    remote: Remote = setting(Remote(), "the remote controller")
    imu: Imu = setting(Imu(), "IMU noise")

    def __post_init__(self) -> None:
        unknown = sorted(set(self.motor_loops) - set(MOTOR_KINDS))
        if unknown:
            raise ValueError(f"motor_loops/{unknown[0]}: not a motor kind (kinds: {', '.join(MOTOR_KINDS)})")

    @classmethod
    def from_namespace(cls, params: Optional[Mapping[str, Any]]) -> "SimSettings":
        """The settings from the node's whole namespace, the CAN layout's keys (LAYOUT_KEYS) left out.

        :raises r1_common.settings.ConfigError: naming the bad or unknown key."""
        return cls.from_params(params, where=NODE, ignore=LAYOUT_KEYS)

    def motor_loop(self, kind: str) -> MotorLoop:
        """The loop gains of a motor kind (MOTOR_KINDS)."""
        return self.motor_loops.get(kind, MotorLoop())

    def friction_of(self, joint: str) -> Friction:
        """Friction of a joint: the last prefix of `friction` its name contains, else none."""
        match = Friction()
        for prefix, values in self.friction.items():
            if prefix in joint:
                match = values
        return match
