"""Malformed and random messages of any ROS type, for the stack's fuzz test (ROS-free: genpy only).

`MessageFuzzer(cls, template, seed)` walks a message type's fields (genpy's `__slots__` and
`_slot_types`, nested messages and arrays included) and yields, message after message, one of:

* ``valid``: the template as it is (the last real message seen on the topic, or a plausible one);
* ``nonfinite``: a float (or an array element) NaN, +inf or -inf;
* ``huge``: a float the largest its type holds (±1e308; ±3.4e38 for float32), or 1e9;
* ``length``: a variable array emptied, shortened, lengthened or made 1,000 entries long;
* ``stamp``: a header stamp of 0, the largest ROS time (4294967295.999999999), 1 s, or a random one;
* ``frame``: a frame id empty, "/", unknown, with a space, a NUL, 300 characters or non-ASCII;
* ``names``: a name array with an unknown name, a name twice, or empty names;
* ``quaternion``: an orientation zero, scaled by 2 or 1e-4, or NaN;
* ``random``: every number replaced by a random one (floats within ±10, integers within their type);
* ``extreme``: integers at the ends of their type (0, the largest, the smallest).

Mutations stay within what the type can carry (a uint8 cannot be -1; a float32 cannot be 1e308):
what the fuzz test sends is what any program could publish.
"""
from __future__ import annotations

import copy
import functools
import math
import random
from dataclasses import dataclass
from typing import Any, Callable, Iterator, List, Optional, Tuple

CATEGORIES = ("valid", "nonfinite", "huge", "length", "stamp", "frame", "names", "quaternion", "random",
              "extreme")
FLOATS = {"float64": 1e308, "float32": 3.4e38}
INTS = {"int8": (-2 ** 7, 2 ** 7 - 1), "uint8": (0, 2 ** 8 - 1), "int16": (-2 ** 15, 2 ** 15 - 1),
        "uint16": (0, 2 ** 16 - 1), "int32": (-2 ** 31, 2 ** 31 - 1), "uint32": (0, 2 ** 32 - 1),
        "int64": (-2 ** 63, 2 ** 63 - 1), "uint64": (0, 2 ** 64 - 1), "char": (0, 255), "byte": (-128, 127)}
LARGEST_STAMP = (4294967295, 999999999)
BAD_FRAMES = ("", "/", "no_such_frame", "base link", "a\x00b", "x" * 300, "bäse_link", "/map/../odom", "//")
BAD_NAMES = ("no_such_joint", "", " ", "left_arm_joint1 ", "x" * 300)


@dataclass(frozen=True)
class Field:
    """A path to a primitive field (or array) of a message, with its ROS type."""

    path: tuple[str, ...]
    kind: str            # base type, e.g. float64, string, time, uint8
    array: bool          # a variable-length array (fixed arrays are `fixed` > 0)
    fixed: int = 0


def _base(slot_type: str) -> tuple[str, bool, int]:
    if slot_type.endswith("]"):
        base, size = slot_type[:-1].split("[")
        return base, size == "", int(size) if size else 0
    return slot_type, False, 0


def fields_of(msg: Any, prefix: tuple[str, ...] = ()) -> list[Field]:
    """Every primitive field of `msg` (nested messages walked; arrays of messages: their first element)."""
    out = []
    for name, slot_type in zip(msg.__slots__, msg._slot_types):
        base, array, fixed = _base(slot_type)
        value = getattr(msg, name)
        if base in FLOATS or base in INTS or base in ("string", "bool", "time", "duration"):
            out.append(Field(prefix + (name,), base, array, fixed))
        elif array or fixed:
            out.append(Field(prefix + (name,), base, array, fixed))    # an array of messages
            if value:
                out += fields_of(value[0], prefix + (name, "0"))
        else:
            out += fields_of(value, prefix + (name,))
    return out


def _get(msg: Any, path: tuple[str, ...]) -> Any:
    for p in path:
        msg = msg[int(p)] if p.isdigit() else getattr(msg, p)
    return msg


def _set(msg: Any, path: tuple[str, ...], value: Any) -> None:
    parent = _get(msg, path[:-1])
    if path[-1].isdigit():
        parent[int(path[-1])] = value
    else:
        setattr(parent, path[-1], value)


def _messages(msg: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every (path, nested message) of `msg`, itself included."""
    yield prefix, msg
    for name, slot_type in zip(msg.__slots__, msg._slot_types):
        base, array, fixed = _base(slot_type)
        if "/" in base or base == "Header":
            value = getattr(msg, name)
            items: List[Tuple[Optional[int], Any]] = list(enumerate(value)) if (array or fixed) else [(None, value)]
            for i, item in items:
                if hasattr(item, "__slots__"):
                    yield from _messages(item, prefix + ((name,) if i is None else (name, str(i))))


class MessageFuzzer:
    """Messages of `cls`, each a mutation of `template` of one category (seeded, reproducible)."""

    def __init__(self, cls: type, template: Any | None = None, seed: int = 0, categories=CATEGORIES):
        self.cls = cls
        self.template = template if template is not None else cls()
        self.rng = random.Random(seed)
        self.fields = fields_of(self.template)
        self.categories = list(categories)

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return self

    def __next__(self) -> tuple[str, Any]:
        category = self.rng.choice(self.categories)
        msg = copy.deepcopy(self.template)
        getattr(self, f"_{category}")(msg)
        return category, msg

    # -- the categories --------------------------------------------------------------------------
    def _valid(self, msg: Any) -> None:
        pass

    def _floats(self) -> list[Field]:
        return [f for f in self.fields if f.kind in FLOATS]

    def _put_float(self, msg: Any, value_of) -> None:
        floats = self._floats()
        if not floats:
            return self._random(msg)
        f = self.rng.choice(floats)
        if f.array or f.fixed:
            values = list(_get(msg, f.path))
            if not values:
                values = [0.0] * (f.fixed or self.rng.randint(1, 8))
            i = self.rng.randrange(len(values))
            values[i] = value_of(f.kind)
            _set(msg, f.path, values)
        else:
            _set(msg, f.path, value_of(f.kind))

    def _nonfinite(self, msg: Any) -> None:
        self._put_float(msg, lambda kind: self.rng.choice((math.nan, math.inf, -math.inf)))

    def _huge(self, msg: Any) -> None:
        self._put_float(msg, lambda kind: self.rng.choice((FLOATS[kind], -FLOATS[kind], 1e9, -1e9)))

    def _length(self, msg: Any) -> None:
        arrays = [f for f in self.fields if f.array]
        if not arrays:
            return self._nonfinite(msg)
        f = self.rng.choice(arrays)
        values = list(_get(msg, f.path))
        size = self.rng.choice((0, max(0, len(values) - 1), len(values) + 1, 1000))
        fill = values[-1] if values else self._default(f)
        if fill is None:                    # an array of messages, empty in the template
            size = 0
        _set(msg, f.path, (values + [copy.deepcopy(fill) for _ in range(max(0, size - len(values)))])[:size])

    def _default(self, f: Field) -> Any:
        if f.kind in FLOATS:
            return 0.0
        if f.kind in INTS:
            return 0
        if f.kind == "string":
            return ""
        if f.kind == "bool":
            return False
        return None

    def _stamp(self, msg: Any) -> None:
        stamps = [f for f in self.fields if f.kind == "time" and not f.array]
        if not stamps:
            return self._random(msg)
        f = self.rng.choice(stamps)
        secs, nsecs = self.rng.choice((LARGEST_STAMP, (0, 0), (1, 0), (self.rng.randint(0, 2 ** 32 - 1),
                                                                        self.rng.randint(0, 999999999))))
        t = _get(msg, f.path)
        t.secs, t.nsecs = secs, nsecs

    def _frame(self, msg: Any) -> None:
        frames = [f for f in self.fields if f.kind == "string" and not f.array
                  and ("frame_id" in f.path[-1] or f.path[-1] == "child_frame_id")]
        if not frames:
            return self._names(msg)
        _set(msg, self.rng.choice(frames).path, self.rng.choice(BAD_FRAMES))

    def _names(self, msg: Any) -> None:
        names = [f for f in self.fields if f.kind == "string" and f.array]
        if not names:
            strings = [f for f in self.fields if f.kind == "string" and not f.array]
            if not strings:
                return self._random(msg)
            _set(msg, self.rng.choice(strings).path, self.rng.choice(BAD_NAMES + BAD_FRAMES))
            return
        f = self.rng.choice(names)
        values = list(_get(msg, f.path)) or ["x"]
        how = self.rng.randrange(3)
        if how == 0:
            values[self.rng.randrange(len(values))] = self.rng.choice(BAD_NAMES)
        elif how == 1:
            values[-1] = values[0]
        else:
            values = [""] * len(values)
        _set(msg, f.path, values)

    def _quaternion(self, msg: Any) -> None:
        quats = [(p, m) for p, m in _messages(msg) if getattr(m, "_type", "") == "geometry_msgs/Quaternion"]
        if not quats:
            return self._huge(msg)
        _, q = self.rng.choice(quats)
        how = self.rng.randrange(4)
        if how == 0:
            q.x = q.y = q.z = q.w = 0.0
        elif how in (1, 2):
            s = 2.0 if how == 1 else 1e-4
            q.x, q.y, q.z, q.w = q.x * s, q.y * s, q.z * s, (q.w or 1.0) * s
        else:
            q.w = math.nan

    def _random(self, msg: Any) -> None:
        for f in self.fields:
            value: Callable[[], Any]
            if f.kind in FLOATS:
                value = lambda: self.rng.uniform(-10.0, 10.0)
            elif f.kind in INTS:
                value = functools.partial(self.rng.randint, *INTS[f.kind])
            elif f.kind == "bool":
                value = lambda: self.rng.random() < 0.5
            else:
                continue
            try:
                current = _get(msg, f.path)
            except (IndexError, AttributeError):
                continue
            if f.array or f.fixed:
                if isinstance(current, (bytes, str)):
                    continue
                _set(msg, f.path, [value() for _ in current])
            else:
                _set(msg, f.path, value())

    def _extreme(self, msg: Any) -> None:
        ints = [f for f in self.fields if f.kind in INTS and not (f.array or f.fixed)]
        if not ints:
            return self._huge(msg)
        f = self.rng.choice(ints)
        lo, hi = INTS[f.kind]
        _set(msg, f.path, self.rng.choice((lo, hi, 0)))


# -- judging what the stack publishes meanwhile --------------------------------------------------
POSITION_TOLERANCE = 0.02     # [rad, m] beyond a joint's range (HDAS reports POS_EXCEED from here)


def non_finite(msg: Any) -> list[str]:
    """The paths of every float field (or array element) of `msg` that is NaN or infinite."""
    out = []
    for f in fields_of(msg):
        if f.kind not in FLOATS:
            continue
        try:
            value = _get(msg, f.path)
        except (IndexError, AttributeError):
            continue
        values = value if (f.array or f.fixed) else [value]
        bad = [i for i, x in enumerate(values) if not math.isfinite(x)]
        if bad:
            out.append(".".join(f.path) + (f"[{bad[0]}]" if (f.array or f.fixed) else ""))
    return out


class LimitChecker:
    """What may appear on the driver's, the controllers' and the simulator's topics, whoever asks what:
    finite values, and positions within the URDF's ranges.

    `ranges`: joint -> (lower, upper); `command_joints`: motor_control topic -> the joints of its
    p_des entries in order; `stroke_topics`: JointState topics whose position is a gripper stroke [mm];
    `tolerances`: joint -> how far [rad, m] it may be seen beyond its range (POSITION_TOLERANCE for
    any other)."""

    def __init__(self, ranges: dict[str, tuple[float, float]], command_joints: dict[str, list[str]],
                 stroke_topics: frozenset[str] = frozenset(), tolerances: Optional[dict[str, float]] = None):
        self.ranges = ranges
        self.command_joints = command_joints
        self.stroke_topics = stroke_topics
        self.tolerances = tolerances or {}

    def _beyond(self, joint: str, value: float) -> bool:
        lo, hi = self.ranges.get(joint, (-math.inf, math.inf))
        tol = self.tolerances.get(joint, POSITION_TOLERANCE)
        return value < lo - tol or value > hi + tol

    def check(self, topic: str, msg: Any) -> list[str]:
        problems = [f"{topic}: non-finite {p}" for p in non_finite(msg)]
        kind = getattr(msg, "_type", "")
        if kind == "sensor_msgs/JointState":
            if topic in self.stroke_topics:
                problems += [f"{topic}: stroke {x:.4g} mm beyond [0, 100]" for x in msg.position
                             if math.isfinite(x) and not -2.0 <= x <= 102.0]
            else:
                problems += [f"{topic}: {n} at {x:.4g} beyond its range {self.ranges[n]}"
                             for n, x in zip(msg.name, msg.position) if math.isfinite(x) and self._beyond(n, x)]
        elif kind == "hdas_msg/motor_control" and topic in self.command_joints:
            problems += [f"{topic}: p_des of {n} at {x:.4g} beyond its range {self.ranges[n]}"
                         for n, x in zip(self.command_joints[topic], msg.p_des)
                         if math.isfinite(x) and self._beyond(n, x)]
        return problems


class SpeedChecker:
    """Joint speeds from successive ground-truth samples (finite differences) against the limits:
    `velocity`: joint -> its limit; a speed beyond `tolerance` x the limit is reported (`tolerances`:
    joint -> its own share, for the joints the driver bounds closer)."""

    def __init__(self, velocity: dict[str, float], tolerance: float, tolerances: Optional[dict[str, float]] = None):
        self.velocity = velocity
        self.tolerance = tolerance
        self.tolerances = tolerances or {}
        self._last: tuple[float, dict[str, float]] | None = None
        self.fastest: dict[str, float] = {}      # joint -> the largest speed / limit seen

    def sample(self, stamp: float, names: list[str], positions: list[float]) -> list[str]:
        now = dict(zip(names, positions))
        last, self._last = self._last, (stamp, now)
        if last is None or stamp <= last[0]:
            return []
        dt = stamp - last[0]
        out = []
        for n, limit in self.velocity.items():
            if n in now and n in last[1]:
                share = abs(now[n] - last[1][n]) / dt / limit
                self.fastest[n] = max(self.fastest.get(n, 0.0), share)
                if share > self.tolerances.get(n, self.tolerance):
                    out.append(f"{n} at {share * limit:.3g} rad/s, {share:.2f}x its limit {limit:g}")
        return out
