"""The stock HDAS error bit tables, and how our motors' states map onto them.

`feedback_status_detail.error_code` is a bitmask; bit i set adds the table's
i-th name to `error_description` (r1_sdk_facts.md §3). Arms, grippers and the
chassis use the arm (ACU) table, the torso the TCU table. The driver raises
abstract conditions (a `Condition` set per joint) and each table says which bit
they set, so a new board table is one more mapping, not new logic.
"""
from __future__ import annotations

from enum import Enum
from typing import Iterable

from r1_can.damiao import Status


class Condition(Enum):
    """What can be wrong with one joint, whatever the board's bit layout."""

    DISABLED = "disabled"
    DISCONNECTED = "disconnected"          # never answered
    RECEIVE_TIMEOUT = "receive_timeout"    # answered before, silent now
    POSITION_JUMP = "position_jump"
    POSITION_EXCEEDED = "position_exceeded"
    VELOCITY_EXCEEDED = "velocity_exceeded"
    TORQUE_EXCEEDED = "torque_exceeded"
    OVER_VOLTAGE = "over_voltage"
    UNDER_VOLTAGE = "under_voltage"
    OVER_CURRENT = "over_current"
    MOS_OVER_TEMP = "mos_over_temp"
    ROTOR_OVER_TEMP = "rotor_over_temp"
    COMM_LOST = "comm_lost"                # the motor's own watchdog fired
    OVERLOAD = "overload"


# The motor's status nibble as a condition (ENABLED is no condition).
STATUS_CONDITION = {
    Status.DISABLED: Condition.DISABLED,
    Status.OVER_VOLTAGE: Condition.OVER_VOLTAGE,
    Status.UNDER_VOLTAGE: Condition.UNDER_VOLTAGE,
    Status.OVER_CURRENT: Condition.OVER_CURRENT,
    Status.MOS_OVER_TEMP: Condition.MOS_OVER_TEMP,
    Status.ROTOR_OVER_TEMP: Condition.ROTOR_OVER_TEMP,
    Status.COMM_LOST: Condition.COMM_LOST,
    Status.OVERLOAD: Condition.OVERLOAD,
}


# The conditions of a motor that is not producing its commanded torque: switched off, never heard, or
# faulted (a faulted Damiao motor drops its output until its error is cleared). A controller re-plans
# from the measured position only for joints in one of these (mobiman.control.setpoint).
# Silent (RECEIVE_TIMEOUT: it answered before, not now) is not among them: a motor whose replies stop
# either still holds (a starved driver or simulator, a noisy bus) or its own watchdog switched it off,
# which it reports when it answers again (COMM_LOST, disabled), and that report re-plans. Taken as off,
# a machine's stalls re-seeded the torso's set-point from where the base's acceleration had pushed it,
# a few mrad each time (issue 28).
UNPOWERED = frozenset({
    Condition.DISABLED, Condition.DISCONNECTED, Condition.OVER_VOLTAGE, Condition.UNDER_VOLTAGE,
    Condition.OVER_CURRENT, Condition.MOS_OVER_TEMP, Condition.ROTOR_OVER_TEMP, Condition.COMM_LOST,
    Condition.OVERLOAD})


class ErrorTable:
    """A board's bit names and which bit each condition sets."""

    def __init__(self, names: list[str], bits: dict[Condition, int]):
        self.names = names
        self.bits = bits

    def code(self, conditions: Iterable[Condition]) -> int:
        code = 0
        for c in conditions:
            code |= 1 << self.bits[c]
        return code

    def describe(self, code: int) -> list[str]:
        return [name for i, name in enumerate(self.names) if code >> i & 1]

    @property
    def unpowered_mask(self) -> int:
        """The bits of an error code that say the motor is not producing its torque (UNPOWERED)."""
        return self.code(c for c in UNPOWERED if c in self.bits)


ARM_TABLE = ErrorTable(
    ["MOTOR_DISABLE", "DISCONNECT", "POS_JUMP", "TOR_JUMP", "RECEIVE_TIMEOUT", "POS_EXCEED", "VEL_EXCEED",
     "TOR_EXCEED", "OVER_VOLTAGE", "UNDER_VOLTAGE", "OVER_CURRENT", "MOS_OVER_TEMP", "MOTOR_OVER_TEMP",
     "COMMUNICATION_LOSS", "OVERLOAD"],
    {Condition.DISABLED: 0, Condition.DISCONNECTED: 1, Condition.POSITION_JUMP: 2, Condition.RECEIVE_TIMEOUT: 4,
     Condition.POSITION_EXCEEDED: 5, Condition.VELOCITY_EXCEEDED: 6, Condition.TORQUE_EXCEEDED: 7,
     Condition.OVER_VOLTAGE: 8, Condition.UNDER_VOLTAGE: 9, Condition.OVER_CURRENT: 10,
     Condition.MOS_OVER_TEMP: 11, Condition.ROTOR_OVER_TEMP: 12, Condition.COMM_LOST: 13, Condition.OVERLOAD: 14},
)

TORSO_TABLE = ErrorTable(
    ["MOTOR_DISABLE", "DISCONNECT", "POS_JUMP", "RECEIVE_TIMEOUT", "POS_EXCEED", "BUS_OVERVOLTAGE",
     "BUS_UNDERVOLTAGE", "ENCODER_ELECTRICAL_ANGLE_FAULT", "DRV_DRIVER_MALFUNCTION", "BUS_OVERCURRENT",
     "A_PHASE_OVERCURRENT", "B_PHASE_OVERCURRENT", "C_PHASE_OVERCURRENT", "BOARD_OVER_TEMPERATURE",
     "COIL_TEMPERATURE", "ENCODER_FAILED", "CURRENT_SENSOR_MALFUNCTION", "BLOCKAGE_PROTECTION",
     "MOTOR_ANGLE_OVER_LIMIT", "MOTOR_VEL_OVER_LIMIT", "CAN_COMMUNICATION_LOST",
     "ENCODER_FRAME_HEADER_VERIFICATION_FAILED", "ENCODER_MULTI_TURN_FAULT", "ENCODER_MULTI_TURN_INTERFACE_FAULT",
     "ENCODER_EXTERNAL_INPUT_FAULT", "ENCODER_READING_FAULT", "ENCODER_ERR_OFFS", "ENCODER_ERR_CFG",
     "ILLEGAL_FIRMWARE", "GATE_DRIVER_INITIALIZATION_FAILED"],
    {Condition.DISABLED: 0, Condition.DISCONNECTED: 1, Condition.POSITION_JUMP: 2, Condition.RECEIVE_TIMEOUT: 3,
     Condition.POSITION_EXCEEDED: 4, Condition.OVER_VOLTAGE: 5, Condition.UNDER_VOLTAGE: 6,
     Condition.OVER_CURRENT: 9, Condition.MOS_OVER_TEMP: 13, Condition.ROTOR_OVER_TEMP: 14,
     Condition.OVERLOAD: 17, Condition.VELOCITY_EXCEEDED: 19, Condition.TORQUE_EXCEEDED: 17,
     Condition.COMM_LOST: 20},
)

TABLES = {"arm": ARM_TABLE, "torso": TORSO_TABLE, "chassis": ARM_TABLE}
