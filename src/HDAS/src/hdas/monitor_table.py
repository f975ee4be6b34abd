"""The table of `rosrun HDAS r1_monitor`: every module's rate, compute time and latency side by side.

ROS-free: the monitor's ROS part feeds `StatusBoard` with the DiagnosticStatus entries it hears on
/diagnostics (as plain values) and `render` turns the latest status per name, plus optional topic
rates, into lines of text. The columns read the standard keys of `r1_common.loop_stats`
(rate_hz, compute_ms_median/p99, latency_ms_median/p99) and the standard counters (dropped,
clamped, errors); a module that does not report a key shows `-`, one that reports `n/a` (nothing
measured in the window) shows `n/a`.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from r1_common.loop_stats import COMPUTE_MEDIAN, COMPUTE_P99, LATENCY_MEDIAN, LATENCY_P99, RATE

STALE_AFTER = 3.0                  # [s] of wall time without a status: STALE
LEVEL_NAMES = {0: "OK", 1: "WARN", 2: "ERROR", 3: "STALE"}
COUNTERS = ("dropped", "clamped", "errors")
MISSING = "-"                      # the module does not report the key
ELLIPSIS = "~"                     # marks a truncated cell (ASCII: logs and any terminal)
MODULE_WIDTH = 48                  # longest module name shown in full
MIN_MESSAGE_WIDTH = 12


@dataclass
class Status:
    """One module's latest DiagnosticStatus, and when it arrived (monotonic wall clock [s])."""

    name: str
    level: int
    message: str = ""
    hardware_id: str = ""
    values: dict[str, str] = field(default_factory=dict)
    received: float = 0.0


class StatusBoard:
    """The latest status per name (thread-safe: the subscriber writes, the display reads)."""

    def __init__(self) -> None:
        self._latest: dict[str, Status] = {}
        self._lock = threading.Lock()

    def update(self, name: str, level: int, message: str, hardware_id: str,
               values: Mapping[str, str] | Iterable[tuple[str, str]], received: float) -> None:
        pairs = values.items() if isinstance(values, Mapping) else values
        status = Status(name, int(level), message, hardware_id, {str(k): str(v) for k, v in pairs}, received)
        with self._lock:
            self._latest[name] = status

    def snapshot(self) -> dict[str, Status]:
        with self._lock:
            return dict(self._latest)


def level_name(status: Status, now: float, stale_after: float = STALE_AFTER) -> str:
    """OK / WARN / ERROR as the module says, STALE when not heard for `stale_after` seconds."""
    if now - status.received > stale_after:
        return "STALE"
    return LEVEL_NAMES.get(status.level, str(status.level))


def format_number(text: str | None) -> str:
    """A key's value for a cell: `-` when absent, as sent when not a number, else 3 significant-ish digits."""
    if text is None:
        return MISSING
    try:
        x = float(text)
    except ValueError:
        return text.strip() or MISSING
    if not math.isfinite(x):
        return "n/a" if math.isnan(x) else text.strip()
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def median_p99(values: Mapping[str, str], median_key: str, p99_key: str) -> str:
    """`median/p99` of two keys (`-` when the module reports neither)."""
    a, b = values.get(median_key), values.get(p99_key)
    if a is None and b is None:
        return MISSING
    return f"{format_number(a)}/{format_number(b)}"


def counters(values: Mapping[str, str]) -> str:
    """`dropped/clamped/errors`, each `-` when the module has no such count."""
    if not any(k in values for k in COUNTERS):
        return MISSING
    return "/".join(format_count(values.get(k)) for k in COUNTERS)


def format_count(text: str | None) -> str:
    if text is None:
        return MISSING
    try:
        return str(int(float(text)))
    except ValueError:
        return text.strip() or MISSING


def truncate(text: str, width: int) -> str:
    """`text` cut to `width` characters, the last one marking the cut."""
    text = " ".join(text.split())          # one line: no newlines or tabs in a cell
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return text[: width - 1] + ELLIPSIS if width > 1 else text[:width]


MODULE_HEADER = ("module", "level", "rate Hz", "compute ms", "latency ms", "drop/clamp/err", "message")
MODULE_ALIGN = "<<>>><<"    # per column: < left, > right


def module_rows(statuses: Mapping[str, Status], now: float, stale_after: float = STALE_AFTER) -> list[tuple[str, ...]]:
    """One row per module, sorted by name (a live display that does not reorder itself)."""
    rows: list[tuple[str, ...]] = []
    for name in sorted(statuses, key=lambda n: (n.lower(), n)):
        s = statuses[name]
        v = s.values
        rows.append((truncate(name, MODULE_WIDTH), level_name(s, now, stale_after), format_number(v.get(RATE)),
                     median_p99(v, COMPUTE_MEDIAN, COMPUTE_P99), median_p99(v, LATENCY_MEDIAN, LATENCY_P99),
                     counters(v), s.message))
    return rows


@dataclass
class TopicRate:
    """What the monitor measured on one topic: rate [Hz] on the ROS clock, total count, age [s] (wall)."""

    rate_hz: float
    count: int
    age_s: float | None         # None: never heard


TOPIC_HEADER = ("topic", "rate Hz", "messages", "last s ago")
TOPIC_ALIGN = "<>>>"


def topic_rows(rates: Mapping[str, TopicRate]) -> list[tuple[str, ...]]:
    """One row per topic in the order given (the order of `--topics`)."""
    return [(topic, f"{r.rate_hz:.1f}", str(r.count), "never" if r.age_s is None else f"{r.age_s:.1f}")
            for topic, r in rates.items()]


def table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str, width: int | None = None) -> list[str]:
    """Header, rule and rows in columns two spaces apart; the last column is cut to fit `width`."""
    n = len(header)
    widths = [max([len(header[i])] + [len(r[i]) for r in rows]) for i in range(n)]
    if width is not None:
        fixed = sum(widths[:-1]) + 2 * (n - 1)
        widths[-1] = max(min(widths[-1], width - fixed), min(MIN_MESSAGE_WIDTH, widths[-1]))

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, cell in enumerate(cells):
            cell = truncate(cell, widths[i]) if i == n - 1 else cell
            out.append(cell.rjust(widths[i]) if align[i] == ">" else cell.ljust(widths[i]))
        return "  ".join(out).rstrip()

    return [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]


def summary(statuses: Mapping[str, Status], now: float, stale_after: float = STALE_AFTER) -> str:
    counts: dict[str, int] = {}
    for s in statuses.values():
        lv = level_name(s, now, stale_after)
        counts[lv] = counts.get(lv, 0) + 1
    order = ("OK", "WARN", "ERROR", "STALE")
    parts = [f"{counts[k]} {k}" for k in order if k in counts] + \
            [f"{c} level {k}" for k, c in counts.items() if k not in order]
    return f"{len(statuses)} modules" + (": " + ", ".join(parts) if parts else "")


def render(statuses: Mapping[str, Status], now: float, topics: Mapping[str, TopicRate] | None = None,
           stale_after: float = STALE_AFTER, width: int | None = 120, title: str = "") -> list[str]:
    """The whole display: a title line, the module table, and the topic table when topics are given."""
    lines = [(title + "  " if title else "") + summary(statuses, now, stale_after) + "  (ms: median/p99)"]
    if statuses:
        lines += table(MODULE_HEADER, module_rows(statuses, now, stale_after), MODULE_ALIGN, width)
    else:
        lines.append("(no /diagnostics heard yet)")
    if topics:
        lines.append("")
        lines += table(TOPIC_HEADER, topic_rows(topics), TOPIC_ALIGN, width)
    return lines


def missing(statuses: Iterable[str], prefixes: Iterable[str]) -> list[str]:
    """The prefixes that no status name starts with (the monitor's --require)."""
    names = list(statuses)
    return [p for p in prefixes if not any(n.startswith(p) for n in names)]
