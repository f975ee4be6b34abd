"""Throttled logging for nodes that face bad input at high rates.

At most one log line per key per period, with a count of what was swallowed, so a
bad stream at 500 Hz gives one clear line every few seconds instead of a flood.
"""
from __future__ import annotations

import threading
import time
from typing import Callable


class Throttle:
    """At most one log line per key per period, with a count of what was suppressed."""

    def __init__(self, period: float = 2.0):
        self.period = period
        self._last: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def __call__(self, log: Callable[[str], None], key: str, text: str) -> None:
        now = time.monotonic()
        with self._lock:
            last, skipped = self._last.get(key, (-1e9, 0))
            if now - last < self.period:
                self._last[key] = (last, skipped + 1)
                return
            self._last[key] = (now, 0)
        log(text + (f" ({skipped} more like this suppressed)" if skipped else ""))
