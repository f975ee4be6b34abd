"""Self-check core of `rosrun HDAS check_node`: windows, per-topic accumulation, verdicts, the table.

ROS-free so the whole judgement can be tested without a master: the node only
subscribes, stamps each message with its arrival time and feeds it here.
Rates are counted from arrival times, (n-1)/(t_last-t_first), so a late
connection or a busy machine that delivers in bursts does not bias them the
way counting over the nominal window, or trusting header stamps, would.
"""
from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import yaml

TYPE_RE = re.compile(r"^[A-Za-z][\w]*/[A-Za-z]\w*$")
TOPIC_KEYS = {"type", "rate", "fields"}
FIELD_KEYS = {"min", "max", "length"}


class WindowConfigError(ValueError):
    """The check-window file is malformed; the message names the mode, topic and key."""


@dataclass(frozen=True)
class FieldWindow:
    """Bounds of one numeric field (attribute path) of a message.

    Scalar bounds apply to every entry; list bounds apply per index, and entries
    past the list (the arm's gripper) are not checked.
    """
    field: str
    lower: float | tuple[float, ...]
    upper: float | tuple[float, ...]
    length: int | None = None   # entries every message must carry; None: any

    @property
    def per_index(self) -> bool:
        return isinstance(self.lower, tuple)

    def bounds(self, index: int) -> tuple[float, float]:
        if isinstance(self.lower, tuple) and isinstance(self.upper, tuple):
            return self.lower[index], self.upper[index]
        assert not isinstance(self.lower, tuple) and not isinstance(self.upper, tuple), \
            "lower and upper are both lists or both numbers (_field refuses a mix)"
        return self.lower, self.upper

    def checked_indices(self, longest: int) -> int:
        """How many leading entries are judged, given the longest array received."""
        if isinstance(self.lower, tuple):
            return len(self.lower)
        return self.length if self.length is not None else longest


@dataclass(frozen=True)
class TopicCheck:
    topic: str
    type: str                      # "pkg/Message", as rostopic spells it
    rate: tuple[float, float]      # [Hz] accepted receive rate
    fields: tuple[FieldWindow, ...] = ()

    def extract(self, msg: Any) -> dict[str, tuple[float, ...]]:
        """The checked fields of one message, ready for TopicAccumulator.add."""
        return {f.field: field_values(msg, f.field) for f in self.fields}


@dataclass(frozen=True)
class WindowConfig:
    modes: dict[int, tuple[TopicCheck, ...]]

    def checks(self, mode: int) -> tuple[TopicCheck, ...]:
        if mode not in self.modes:
            raise WindowConfigError(f"mode {mode} is not in the config (have {', '.join(map(str, self.modes))})")
        return self.modes[mode]


def field_values(msg: Any, path: str) -> tuple[float, ...]:
    """The numbers at a dotted attribute path of a message; a scalar becomes one entry."""
    obj = msg
    for part in path.split("."):
        obj = getattr(obj, part)
    if isinstance(obj, (int, float)):
        return (obj,)
    if isinstance(obj, str):
        raise TypeError(f"field '{path}' is a string, not a number")
    return tuple(obj)


def _number(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
        raise WindowConfigError(f"{where}: {v!r} is not a number")
    return float(v)


def _bound(v: Any, where: str) -> float | tuple[float, ...]:
    if isinstance(v, list):
        if not v:
            raise WindowConfigError(f"{where}: empty list")
        return tuple(_number(x, f"{where}[{i}]") for i, x in enumerate(v))
    return _number(v, where)


def _field(name: str, d: Any, where: str) -> FieldWindow:
    if not isinstance(d, dict):
        raise WindowConfigError(f"{where}: expected a mapping with min and max")
    unknown = set(d) - FIELD_KEYS
    if unknown:
        raise WindowConfigError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    for key in ("min", "max"):
        if key not in d:
            raise WindowConfigError(f"{where}: missing '{key}'")
    lower, upper = _bound(d["min"], f"{where}/min"), _bound(d["max"], f"{where}/max")
    if isinstance(lower, tuple) != isinstance(upper, tuple):
        raise WindowConfigError(f"{where}: min and max must both be numbers or both be lists")
    if isinstance(lower, tuple) and isinstance(upper, tuple) and len(lower) != len(upper):
        raise WindowConfigError(f"{where}: min has {len(lower)} entries, max has {len(upper)}")
    lows = lower if isinstance(lower, tuple) else (lower,)
    highs = upper if isinstance(upper, tuple) else (upper,)
    for i, (lo, hi) in enumerate(zip(lows, highs)):
        if lo > hi:
            raise WindowConfigError(f"{where}: min {lo:g} > max {hi:g} at index {i}")
    length = d.get("length")
    if length is not None:
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise WindowConfigError(f"{where}/length: must be a positive integer")
        if isinstance(lower, tuple) and len(lower) > length:
            raise WindowConfigError(f"{where}: {len(lower)} bounds but length {length}")
    return FieldWindow(name, lower, upper, length)


def _topic(topic: Any, d: Any, where: str) -> TopicCheck:
    if not isinstance(topic, str) or not topic.startswith("/"):
        raise WindowConfigError(f"{where}: topic must be an absolute name, got {topic!r}")
    if not isinstance(d, dict):
        raise WindowConfigError(f"{where}: expected a mapping with type and rate")
    unknown = set(d) - TOPIC_KEYS
    if unknown:
        raise WindowConfigError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    for key in ("type", "rate"):
        if key not in d:
            raise WindowConfigError(f"{where}: missing '{key}'")
    if not isinstance(d["type"], str) or not TYPE_RE.match(d["type"]):
        raise WindowConfigError(f"{where}/type: {d['type']!r} is not 'package/Message'")
    rate = d["rate"]
    if not isinstance(rate, list) or len(rate) != 2:
        raise WindowConfigError(f"{where}/rate: expected [min_hz, max_hz]")
    lo, hi = (_number(x, f"{where}/rate") for x in rate)
    if not 0 < lo <= hi:
        raise WindowConfigError(f"{where}/rate: need 0 < min <= max, got [{lo:g}, {hi:g}]")
    fields = d.get("fields") or {}
    if not isinstance(fields, dict):
        raise WindowConfigError(f"{where}/fields: expected a mapping field -> {{min, max}}")
    return TopicCheck(topic, d["type"], (lo, hi),
                      tuple(_field(str(k), v, f"{where}/fields/{k}") for k, v in fields.items()))


def parse_windows(d: Any) -> WindowConfig:
    """Check and convert the window tree; raises WindowConfigError naming the bad key."""
    if not isinstance(d, dict) or not isinstance(d.get("modes"), dict) or not d["modes"]:
        raise WindowConfigError("config: needs a non-empty 'modes' mapping (mode number -> topics)")
    modes: dict[int, tuple[TopicCheck, ...]] = {}
    for mode, topics in d["modes"].items():
        if isinstance(mode, bool) or not isinstance(mode, int):
            raise WindowConfigError(f"modes: key {mode!r} is not an integer mode")
        if not isinstance(topics, dict) or not topics:
            raise WindowConfigError(f"modes/{mode}: needs a non-empty mapping topic -> window")
        modes[mode] = tuple(_topic(t, v, f"modes/{mode}/{t}") for t, v in topics.items())
    return WindowConfig(modes)


def load_windows(path: str | Path) -> WindowConfig:
    """Read and check a window file; every failure is a WindowConfigError naming the file."""
    try:
        d = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise WindowConfigError(f"{path}: {e}") from e
    try:
        return parse_windows(d)
    except WindowConfigError as e:
        raise WindowConfigError(f"{path}: {e}") from e


@dataclass(frozen=True)
class ValueResult:
    label: str                       # "position[2]", "voltage", "position length"
    lower: float | None
    upper: float | None
    min: float | None
    max: float | None
    avg: float | None
    ok: bool
    note: str = ""


@dataclass(frozen=True)
class TopicResult:
    check: TopicCheck
    count: int
    hz: float | None                 # None below two messages
    rate_ok: bool
    values: tuple[ValueResult, ...]
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.rate_ok and all(v.ok for v in self.values)


def _field_results(w: FieldWindow, samples: Sequence[tuple[float, ...]]) -> list[ValueResult]:
    lengths = sorted({len(s) for s in samples})
    rows = []
    if w.length is not None and lengths != [w.length]:
        rows.append(ValueResult(f"{w.field} length", None, None, None, None, None, False,
                                f"expected {w.length} entries, got {', '.join(map(str, lengths))}"))
    n = w.checked_indices(lengths[-1])
    if n == 0:
        return rows + [ValueResult(w.field, None, None, None, None, None, False, "no values")]
    indexed = w.per_index or n > 1 or lengths[-1] > 1
    for i in range(n):
        lo, hi = w.bounds(i)
        label = f"{w.field}[{i}]" if indexed else w.field
        col = np.array([s[i] for s in samples if len(s) > i], dtype=float)
        if col.size == 0:
            rows.append(ValueResult(label, lo, hi, None, None, None, False, "no values"))
            continue
        mn, mx = float(col.min()), float(col.max())   # NaN propagates and fails the comparison below
        rows.append(ValueResult(label, lo, hi, mn, mx, float(col.mean()), bool(lo <= mn and mx <= hi)))
    return rows


def evaluate(check: TopicCheck, times: Sequence[float],
             values: Mapping[str, Sequence[tuple[float, ...]]], judge_rate: bool = True) -> TopicResult:
    """Judge one topic from its arrival times and the checked fields of each message.

    With judge_rate=False the rate is measured and shown but only "alive" (a message in
    the window) is required: for test runs on shared machines, where wall-clock rates are
    the benchmark's business, not a pass/fail criterion (a 1 Hz topic may show once in a
    short window on a stalled machine).
    """
    n = len(times)
    if n == 0:
        return TopicResult(check, 0, None, False, (), "no messages")
    fields = tuple(r for w in check.fields for r in _field_results(w, values[w.field]))
    if n == 1:
        return TopicResult(check, 1, None, not judge_rate, fields,
                           "only 1 message" + ("" if judge_rate else ", rate not judged"))
    span = times[-1] - times[0]
    hz = (n - 1) / span if span > 0 else math.inf
    if not judge_rate:
        return TopicResult(check, n, hz, True, fields, "rate not judged")
    return TopicResult(check, n, hz, check.rate[0] <= hz <= check.rate[1], fields)


class TopicAccumulator:
    """Samples of one topic over the window; add() is called on rospy's receive thread."""

    def __init__(self, check: TopicCheck, judge_rate: bool = True) -> None:
        self.check = check
        self.judge_rate = judge_rate
        self._lock = threading.Lock()
        self._times: list[float] = []
        self._values: dict[str, list[tuple[float, ...]]] = {f.field: [] for f in check.fields}

    def add(self, receive_time: float, values: Mapping[str, tuple[float, ...]]) -> None:
        """Record one message; receive_time must come from one monotonic clock for all samples."""
        with self._lock:
            self._times.append(receive_time)
            for field, store in self._values.items():
                store.append(values[field])

    def result(self) -> TopicResult:
        with self._lock:
            times = list(self._times)
            values = {k: list(v) for k, v in self._values.items()}
        return evaluate(self.check, times, values, self.judge_rate)


def _num(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def _window(lo: float | None, hi: float | None) -> str:
    return "" if lo is None or hi is None else f"[{lo:g}, {hi:g}]"


def _verdict(ok: bool, note: str) -> str:
    return ("OK" if ok else "FAIL") + (f" ({note})" if note else "")


HEADER = ("Topic", "Hz", "Rate window", "Check", "Min", "Max", "Avg", "Limits", "Result")


def format_table(results: Sequence[TopicResult]) -> str:
    """One row per topic (its rate), then one row per checked value; ends with the overall verdict."""
    rows: list[tuple[str, ...]] = []
    for r in results:
        rows.append((r.check.topic, _num(r.hz, ".1f"), _window(*r.check.rate), "rate", "", "", "", "",
                     _verdict(r.rate_ok, r.note)))
        for v in r.values:
            rows.append(("", "", "", v.label, _num(v.min, ".3f"), _num(v.max, ".3f"), _num(v.avg, ".3f"),
                         _window(v.lower, v.upper), _verdict(v.ok, v.note)))
    widths = [max(len(row[i]) for row in [HEADER, *rows]) for i in range(len(HEADER))]
    right = {1, 4, 5, 6}   # numbers

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    failed = [r.check.topic for r in results if not r.ok]
    summary = ("Overall: OK" if not failed else
               f"Overall: FAIL ({len(failed)} of {len(results)} topics: {', '.join(failed)})")
    return "\n".join([line(HEADER), "  ".join("-" * w for w in widths), *map(line, rows), summary])
