"""The robot's CAN layout: buses, motor groups and boards, read from ROS params (YAML).

`parse_config` turns the plain dict of `config/r1.yaml` (which motor of which model sits on which
bus under which CAN ids, for which URDF joint; the boards) + a bus file (`config/r1_buses_*.yaml`:
interface, channel, bit rate, cycle rate) into checked dataclasses and refuses a bad file with a
`ConfigError` (r1_common.settings) whose `key` names the bad key (e.g. `groups/torso/joints[0]/esc_id`),
so a typo stops the driver at start instead of sending frames to the wrong id. Both files are loaded
into the namespace of each node that speaks the protocol (HDAS, the simulated robot) beside that
node's own settings: `LAYOUT_KEYS` are the layout's top-level keys, the rest of the namespace is
the node's (its `Settings.from_params(..., ignore=LAYOUT_KEYS)`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from r1_can.damiao import MOTOR_PRESETS, MOTOR_TORQUES, MotorLimits, MotorTorque
from r1_common.settings import ConfigError

__all__ = ["BOARD_KINDS", "FRAME_BITS", "GROUP_KINDS", "LAYOUT_KEYS", "BoardSpec", "BusSpec", "ConfigError",
           "GroupSpec", "MotorSpec", "RobotConfig", "layout_of", "parse_config"]

GROUP_KINDS = ("arm", "torso", "chassis")
BOARD_KINDS = ("imu", "bms", "remote")
FRAME_BITS = 125  # an 8-byte standard frame with typical bit stuffing, interframe space included
# The layout's top-level keys: `robot` (its name), `groups` and `boards` (config/r1.yaml), `buses` (the bus file)
LAYOUT_KEYS = ("robot", "buses", "groups", "boards")


@dataclass(frozen=True)
class MotorSpec:
    joint: str                # URDF joint it drives
    esc_id: int               # the motor's receive id
    mst_id: int               # the id it answers on
    model: str
    limits: MotorLimits
    metres_per_rad: float = 1.0   # joint units per motor radian (grippers: finger travel)

    @property
    def torque(self) -> MotorTorque:
        """The model's rated and peak torque [N·m at the motor's shaft] (damiao.MOTOR_TORQUES)."""
        return MOTOR_TORQUES[self.model]


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

    def frames_per_second(self, bus: str) -> float:
        """Expected traffic on a bus: a command and a reply per motor per cycle, plus board frames."""
        rate = self.buses[bus].rate_hz
        n = sum(len(g.motors) for g in self.groups.values() if g.bus == bus)
        boards = sum(b.rate_hz * (3 if b.kind == "imu" else 1) for b in self.boards.values() if b.bus == bus)
        return 2 * n * rate + boards

    def bus_load(self, bus: str) -> float:
        """Fraction of the bus's bit rate the expected traffic uses."""
        return self.frames_per_second(bus) * FRAME_BITS / self.buses[bus].bitrate


def _key(where: str, key: str) -> str:
    return f"{where}/{key}" if where else key


def _need(d: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in d:
        raise ConfigError(_key(where, key), "missing")
    return d[key]


def _section(value: Any, key: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(key, f"must be a map, not {value!r}")
    return value


def _items(value: Any, key: str) -> Sequence[Any]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise ConfigError(key, f"must be a list, not {value!r}")
    return value


def _number(value: Any, key: str, kind: type = float) -> Any:
    try:
        return kind(value)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(key, f"must be {'an integer' if kind is int else 'a number'}, not {value!r}") from None


def _motor(d: Any, where: str) -> MotorSpec:
    d = _section(d, where)
    model = str(_need(d, "model", where))
    if model not in MOTOR_PRESETS:
        raise ConfigError(_key(where, "model"),
                          f"unknown motor model '{model}' (known: {', '.join(sorted(MOTOR_PRESETS))})")
    ids = {}
    for name in ("esc_id", "mst_id"):
        value = ids[name] = _number(_need(d, name, where), _key(where, name), int)
        if not 0 < value < 0x100:
            raise ConfigError(_key(where, name), f"{value:#x} outside 0x01..0xFF")
    ratio = _number(d.get("metres_per_rad", 1.0), _key(where, "metres_per_rad"))
    if not ratio > 0:
        raise ConfigError(_key(where, "metres_per_rad"), f"must be > 0, not {ratio}")
    return MotorSpec(str(_need(d, "joint", where)), ids["esc_id"], ids["mst_id"], model, MOTOR_PRESETS[model], ratio)


def _gains(values: Any, n: int, key: str) -> tuple[float, ...]:
    gains = tuple(_number(v, f"{key}[{i}]") for i, v in enumerate(_items(values, key)))
    if len(gains) != n:
        raise ConfigError(key, f"needs {n} values, has {len(gains)}")
    return gains


def _group(name: str, d: Any, buses: Mapping[str, BusSpec], where: str) -> GroupSpec:
    d = _section(d, where)
    kind = str(_need(d, "kind", where))
    if kind not in GROUP_KINDS:
        raise ConfigError(_key(where, "kind"), f"kind '{kind}' is not one of {GROUP_KINDS}")
    bus = str(_need(d, "bus", where))
    if bus not in buses:
        raise ConfigError(_key(where, "bus"), f"bus '{bus}' is not defined under 'buses'")
    if kind == "chassis":
        parts = {part: [_motor(m, f"{where}/{part}[{i}]")
                        for i, m in enumerate(_items(_need(d, part, where), _key(where, part)))]
                 for part in ("steer", "wheels")}
        steer, wheels = parts["steer"], parts["wheels"]
        if len(steer) != len(wheels):
            raise ConfigError(_key(where, "wheels"), f"{len(steer)} steer motors but {len(wheels)} wheels")
        params = {k: _number(d[k], _key(where, k)) for k in ("wheel_radius", "steer_speed_limit",
                                                             "steer_torque_ratio", "wheel_acceleration_limit")
                  if k in d}
        if "wheel_radius" not in params:
            raise ConfigError(_key(where, "wheel_radius"), "missing")
        return GroupSpec(name, kind, bus, tuple(steer + wheels), None, "chassis", (), (), params)
    joints = [_motor(m, f"{where}/joints[{i}]")
              for i, m in enumerate(_items(_need(d, "joints", where), _key(where, "joints")))]
    gripper = _motor(d["gripper"], _key(where, "gripper")) if d.get("gripper") else None
    motors = tuple(joints + ([gripper] if gripper else []))
    boot_mode = str(d.get("boot_mode", "mit"))
    if boot_mode not in ("mit", "pid"):
        raise ConfigError(_key(where, "boot_mode"), f"must be 'mit' or 'pid', not '{boot_mode}'")
    params = {}
    if gripper:
        params = {k: _number(d["gripper"].get(k, v), f"{where}/gripper/{k}") for k, v in
                  (("hold_kp", 5.0), ("hold_kd", 0.2), ("position_kp", 5.0), ("position_kd", 0.2))}
    return GroupSpec(name, kind, bus, motors, gripper, boot_mode,
                     _gains(_need(d, "hold_kp", where), len(joints), _key(where, "hold_kp")),
                     _gains(_need(d, "hold_kd", where), len(joints), _key(where, "hold_kd")), params)


def layout_of(params: Mapping[str, Any]) -> dict[str, Any]:
    """The layout's part (LAYOUT_KEYS) of a node's parameter namespace."""
    return {k: params[k] for k in LAYOUT_KEYS if k in params}


def parse_config(d: Mapping[str, Any], where: str = "") -> RobotConfig:
    """Check and convert the layout (LAYOUT_KEYS of `d`; other keys are not the layout's and are not
    read); raises ConfigError whose key names the bad one, prefixed with `where` (a node's name)."""
    top = where.rstrip("/")
    d = _section(d, top)
    buses: dict[str, BusSpec] = {}
    for name, b in _section(_need(d, "buses", top), _key(top, "buses")).items():
        here = f"{_key(top, 'buses')}/{name}"
        b = _section(b, here)
        rate = _number(_need(b, "rate_hz", here), _key(here, "rate_hz"))
        bitrate = _number(b.get("bitrate", 1_000_000), _key(here, "bitrate"), int)
        for key, value in (("rate_hz", rate), ("bitrate", bitrate)):
            if not value > 0:
                raise ConfigError(_key(here, key), f"{value} is not > 0 (rate_hz and bitrate must be > 0)")
        options = {k: v for k, v in b.items() if k not in ("interface", "channel", "bitrate", "rate_hz")}
        buses[name] = BusSpec(name, str(_need(b, "interface", here)), str(_need(b, "channel", here)),
                              bitrate, rate, options)
    groups_key = _key(top, "groups")
    groups = {name: _group(name, g, buses, f"{groups_key}/{name}")
              for name, g in _section(_need(d, "groups", top), groups_key).items()}
    boards: dict[str, BoardSpec] = {}
    boards_key = _key(top, "boards")
    for name, b in _section(d.get("boards", {}), boards_key).items():
        here = f"{boards_key}/{name}"
        b = _section(b, here)
        kind = str(_need(b, "kind", here))
        if kind not in BOARD_KINDS:
            raise ConfigError(_key(here, "kind"), f"kind '{kind}' is not one of {BOARD_KINDS}")
        bus = str(_need(b, "bus", here))
        if bus not in buses:
            raise ConfigError(_key(here, "bus"), f"bus '{bus}' is not defined under 'buses'")
        rate = _number(b.get("rate_hz", 1.0), _key(here, "rate_hz"))
        if not 0 < rate < math.inf:
            raise ConfigError(_key(here, "rate_hz"), f"must be > 0, got {rate}")
        boards[name] = BoardSpec(name, kind, bus, _number(_need(b, "can_id", here), _key(here, "can_id"), int), rate,
                                 str(b.get("frame_id", "")))
    _check_ids(buses, groups, boards, top)
    return RobotConfig(buses, groups, boards)


def _motor_key(g: GroupSpec, i: int) -> str:
    """Where motor i of group g is written in the layout."""
    if g.kind == "chassis":
        m = len(g.motors) // 2
        return f"groups/{g.name}/steer[{i}]" if i < m else f"groups/{g.name}/wheels[{i - m}]"
    if g.gripper is not None and i == len(g.motors) - 1:
        return f"groups/{g.name}/gripper"
    return f"groups/{g.name}/joints[{i}]"


def _check_ids(buses: Mapping[str, BusSpec], groups: Mapping[str, GroupSpec],
               boards: Mapping[str, BoardSpec], top: str = "") -> None:
    """On one bus no two devices may share an id, and no motor may answer on a board's id."""
    for bus in buses:
        seen: dict[int, str] = {}
        joints: set[str] = set()
        for g in groups.values():
            if g.bus != bus:
                continue
            for i, m in enumerate(g.motors):
                for kind, value in (("esc_id", m.esc_id), ("mst_id", m.mst_id)):
                    owner = f"{g.name}/{m.joint} {kind}"
                    if value in seen:
                        raise ConfigError(_key(top, f"{_motor_key(g, i)}/{kind}"),
                                          f"on bus '{bus}' id {value:#x} used by {seen[value]} and {owner}")
                    seen[value] = owner
                if m.joint in joints:
                    raise ConfigError(_key(top, f"{_motor_key(g, i)}/joint"),
                                      f"on bus '{bus}' joint '{m.joint}' driven twice")
                joints.add(m.joint)
        for b in boards.values():
            if b.bus == bus and b.can_id in seen:
                raise ConfigError(_key(top, f"boards/{b.name}/can_id"),
                                  f"on bus '{bus}' board {b.name} id {b.can_id:#x} collides with {seen[b.can_id]}")
