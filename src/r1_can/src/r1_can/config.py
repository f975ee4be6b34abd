"""HDAS configuration: buses, motor groups and boards, read from ROS params (YAML).

`parse_config` turns the plain dict of `config/r1.yaml` + a bus file into
checked dataclasses and refuses a bad file with a message that names the key,
so a typo stops the driver at start instead of sending frames to the wrong id.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from r1_can.damiao import MOTOR_PRESETS, MotorLimits

GROUP_KINDS = ("arm", "torso", "chassis")
BOARD_KINDS = ("imu", "bms", "remote")
FRAME_BITS = 125  # an 8-byte standard frame with typical bit stuffing, interframe space included


class ConfigError(ValueError):
    """The HDAS configuration is inconsistent; the message says where."""


@dataclass(frozen=True)
class MotorSpec:
    joint: str                # URDF joint it drives
    esc_id: int               # the motor's receive id
    mst_id: int               # the id it answers on
    model: str
    limits: MotorLimits
    metres_per_rad: float = 1.0   # joint units per motor radian (grippers: finger travel)


@dataclass(frozen=True)
class BusSpec:
    name: str
    interface: str
    channel: str
    bitrate: int
    rate_hz: float
    options: dict = field(default_factory=dict)   # passed on to can.Bus (e.g. namespace, fd)


@dataclass(frozen=True)
class GroupSpec:
    name: str
    kind: str
    bus: str
    motors: tuple[MotorSpec, ...]        # arm: 6 joints (+ gripper last); torso: 4; chassis: 3 steer + 3 wheels
    gripper: MotorSpec | None
    boot_mode: str
    hold_kp: tuple[float, ...]
    hold_kd: tuple[float, ...]
    params: dict = field(default_factory=dict)   # kind-specific extras (chassis, gripper gains)


@dataclass(frozen=True)
class BoardSpec:
    name: str
    kind: str
    bus: str
    can_id: int
    rate_hz: float
    frame_id: str = ""


@dataclass(frozen=True)
class RobotConfig:
    buses: dict[str, BusSpec]
    groups: dict[str, GroupSpec]
    boards: dict[str, BoardSpec]
    command_timeout: float
    status_rate: float
    reply_timeout: float
    enable_on_start: bool

    def frames_per_second(self, bus: str) -> float:
        """Expected traffic on a bus: a command and a reply per motor per cycle, plus board frames."""
        rate = self.buses[bus].rate_hz
        n = sum(len(g.motors) for g in self.groups.values() if g.bus == bus)
        boards = sum(b.rate_hz * (3 if b.kind == "imu" else 1) for b in self.boards.values() if b.bus == bus)
        return 2 * n * rate + boards

    def bus_load(self, bus: str) -> float:
        """Fraction of the bus's bit rate the expected traffic uses."""
        return self.frames_per_second(bus) * FRAME_BITS / self.buses[bus].bitrate


def _need(d: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in d:
        raise ConfigError(f"{where}: missing '{key}'")
    return d[key]


def _motor(d: Mapping[str, Any], where: str) -> MotorSpec:
    model = str(_need(d, "model", where))
    if model not in MOTOR_PRESETS:
        raise ConfigError(f"{where}: unknown motor model '{model}' (known: {', '.join(sorted(MOTOR_PRESETS))})")
    esc, mst = int(_need(d, "esc_id", where)), int(_need(d, "mst_id", where))
    for name, value in (("esc_id", esc), ("mst_id", mst)):
        if not 0 < value < 0x100:
            raise ConfigError(f"{where}: {name} {value:#x} outside 0x01..0xFF")
    ratio = float(d.get("metres_per_rad", 1.0))
    if ratio <= 0:
        raise ConfigError(f"{where}: metres_per_rad must be > 0")
    return MotorSpec(str(_need(d, "joint", where)), esc, mst, model, MOTOR_PRESETS[model], ratio)


def _gains(values: Any, n: int, where: str) -> tuple[float, ...]:
    gains = tuple(float(v) for v in values)
    if len(gains) != n:
        raise ConfigError(f"{where}: needs {n} values, has {len(gains)}")
    return gains


def _group(name: str, d: Mapping[str, Any], buses: Mapping[str, BusSpec]) -> GroupSpec:
    where = f"groups/{name}"
    kind = str(_need(d, "kind", where))
    if kind not in GROUP_KINDS:
        raise ConfigError(f"{where}: kind '{kind}' is not one of {GROUP_KINDS}")
    bus = str(_need(d, "bus", where))
    if bus not in buses:
        raise ConfigError(f"{where}: bus '{bus}' is not defined under 'buses'")
    if kind == "chassis":
        steer = [_motor(m, f"{where}/steer[{i}]") for i, m in enumerate(_need(d, "steer", where))]
        wheels = [_motor(m, f"{where}/wheels[{i}]") for i, m in enumerate(_need(d, "wheels", where))]
        if len(steer) != len(wheels):
            raise ConfigError(f"{where}: {len(steer)} steer motors but {len(wheels)} wheels")
        params = {k: float(d[k]) for k in ("wheel_radius", "steer_speed_limit", "steer_torque_ratio",
                                           "wheel_acceleration_limit") if k in d}
        if "wheel_radius" not in params:
            raise ConfigError(f"{where}: missing 'wheel_radius'")
        return GroupSpec(name, kind, bus, tuple(steer + wheels), None, "chassis", (), (), params)
    joints = [_motor(m, f"{where}/joints[{i}]") for i, m in enumerate(_need(d, "joints", where))]
    gripper = _motor(d["gripper"], f"{where}/gripper") if d.get("gripper") else None
    motors = tuple(joints + ([gripper] if gripper else []))
    boot_mode = str(d.get("boot_mode", "mit"))
    if boot_mode not in ("mit", "pid"):
        raise ConfigError(f"{where}: boot_mode must be 'mit' or 'pid'")
    params = {}
    if gripper:
        params = {k: float(d["gripper"].get(k, v)) for k, v in
                  (("hold_kp", 5.0), ("hold_kd", 0.2), ("position_kp", 5.0), ("position_kd", 0.2))}
    return GroupSpec(name, kind, bus, motors, gripper, boot_mode,
                     _gains(_need(d, "hold_kp", where), len(joints), f"{where}/hold_kp"),
                     _gains(_need(d, "hold_kd", where), len(joints), f"{where}/hold_kd"), params)


def parse_config(d: Mapping[str, Any]) -> RobotConfig:
    """Check and convert the HDAS parameter tree; raises ConfigError naming the bad key."""
    buses: dict[str, BusSpec] = {}
    for name, b in dict(_need(d, "buses", "config")).items():
        where = f"buses/{name}"
        rate, bitrate = float(_need(b, "rate_hz", where)), int(b.get("bitrate", 1_000_000))
        if rate <= 0 or bitrate <= 0:
            raise ConfigError(f"{where}: rate_hz and bitrate must be > 0")
        options = {k: v for k, v in b.items() if k not in ("interface", "channel", "bitrate", "rate_hz")}
        buses[name] = BusSpec(name, str(_need(b, "interface", where)), str(_need(b, "channel", where)),
                              bitrate, rate, options)
    groups = {name: _group(name, g, buses) for name, g in dict(_need(d, "groups", "config")).items()}
    boards: dict[str, BoardSpec] = {}
    for name, b in dict(d.get("boards", {})).items():
        where = f"boards/{name}"
        kind = str(_need(b, "kind", where))
        if kind not in BOARD_KINDS:
            raise ConfigError(f"{where}: kind '{kind}' is not one of {BOARD_KINDS}")
        if str(_need(b, "bus", where)) not in buses:
            raise ConfigError(f"{where}: bus '{b['bus']}' is not defined under 'buses'")
        rate = float(b.get("rate_hz", 1.0))
        if not 0 < rate < math.inf:
            raise ConfigError(f"{where}: rate_hz must be > 0, got {rate}")
        boards[name] = BoardSpec(name, kind, str(b["bus"]), int(_need(b, "can_id", where)), rate,
                                 str(b.get("frame_id", "")))
    _check_ids(buses, groups, boards)
    return RobotConfig(buses, groups, boards, float(d.get("command_timeout", 0.2)), float(d.get("status_rate", 1.0)),
                       float(d.get("reply_timeout", 0.05)), bool(d.get("enable_on_start", True)))


def _check_ids(buses: Mapping[str, BusSpec], groups: Mapping[str, GroupSpec],
               boards: Mapping[str, BoardSpec]) -> None:
    """On one bus no two devices may share an id, and no motor may answer on a board's id."""
    for bus in buses:
        seen: dict[int, str] = {}
        joints: set[str] = set()
        for g in groups.values():
            if g.bus != bus:
                continue
            for m in g.motors:
                for kind, value in (("esc_id", m.esc_id), ("mst_id", m.mst_id)):
                    owner = f"{g.name}/{m.joint} {kind}"
                    if value in seen:
                        raise ConfigError(f"bus '{bus}': id {value:#x} used by {seen[value]} and {owner}")
                    seen[value] = owner
                if m.joint in joints:
                    raise ConfigError(f"bus '{bus}': joint '{m.joint}' driven twice")
                joints.add(m.joint)
        for b in boards.values():
            if b.bus == bus and b.can_id in seen:
                raise ConfigError(f"bus '{bus}': board {b.name} id {b.can_id:#x} collides with {seen[b.can_id]}")
