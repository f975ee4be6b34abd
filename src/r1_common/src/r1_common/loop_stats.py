"""Loop statistics every node reports on /diagnostics, under the same keys.

A node calls `tick()` once per loop iteration (a feedback message handled, a frame rendered, a
cycle sent) with what it measured; `values()` turns the last window into the standard
diagnostic keys, so one monitor (`rosrun HDAS r1_monitor`) can show every module side by side:

    rate_hz             iterations per second over the window (on the clock the node is given:
                        ROS time, so simulated time when /use_sim_time is set)
    compute_ms_median   time spent inside one iteration (wall clock, what the CPU paid)
    compute_ms_p99
    latency_ms_median   from the input's stamp to the output (ROS time): how old the data
    latency_ms_p99      a module acts on is when it acts

Counters (dropped, clamped, errors) stay with the node; `values()` adds whatever it is given.
ROS-free and thread-safe.
"""
from __future__ import annotations

import threading
from collections import deque
from typing import Mapping

import numpy as np

RATE = "rate_hz"
COMPUTE_MEDIAN, COMPUTE_P99 = "compute_ms_median", "compute_ms_p99"
LATENCY_MEDIAN, LATENCY_P99 = "latency_ms_median", "latency_ms_p99"
STANDARD_KEYS = (RATE, COMPUTE_MEDIAN, COMPUTE_P99, LATENCY_MEDIAN, LATENCY_P99)


class LoopStats:
    """Rate, compute time and latency of one loop over a sliding window of `window_s` seconds."""

    def __init__(self, window_s: float = 5.0, max_samples: int = 20000):
        if window_s <= 0:
            raise ValueError(f"window_s must be positive, got {window_s}")
        self.window_s = window_s
        self.total = 0
        # one deque per column: a window is three np.fromiter calls, not an array of tuples
        # (that conversion cost 1.4 ms per report at 500 Hz, in every node, every second)
        self._t: deque[float] = deque(maxlen=max_samples)
        self._compute: deque[float] = deque(maxlen=max_samples)
        self._latency: deque[float] = deque(maxlen=max_samples)
        self._lock = threading.Lock()

    def tick(self, now: float, compute_s: float = float("nan"), latency_s: float = float("nan")) -> None:
        """One iteration at time `now` [s]; compute and latency [s] where the loop knows them."""
        with self._lock:
            self.total += 1
            self._t.append(now)
            self._compute.append(compute_s)
            self._latency.append(latency_s)

    def _window(self, now: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(times, compute, latency) of the iterations in the window ending at `now`."""
        with self._lock:
            cols = (self._t, self._compute, self._latency)
            while self._t and self._t[0] < now - self.window_s:
                for c in cols:
                    c.popleft()
            if self._t and self._t[-1] > now + 1.0:   # the clock went back (a restarted sim)
                for c in cols:
                    c.clear()
            t, compute, latency = (np.fromiter(c, dtype=float, count=len(c)) for c in cols)
            return t, compute, latency

    @staticmethod
    def _rate(now: float, t: np.ndarray) -> float:
        if len(t) < 2:
            return 0.0
        span = max(now - t[0], t[-1] - t[0])
        return (len(t) - 1) / span if span > 0 else 0.0

    def rate_hz(self, now: float) -> float:
        """Iterations per second over the window ending at `now` (0 with fewer than two)."""
        return self._rate(now, self._window(now)[0])

    def values(self, now: float, extra: Mapping[str, object] | None = None) -> dict[str, str]:
        """The standard keys (as strings, for diagnostic_msgs/KeyValue), then `extra`."""
        t, compute, latency = self._window(now)
        out = {RATE: f"{self._rate(now, t):.1f}"}
        for v, (k_med, k_p99) in ((compute, (COMPUTE_MEDIAN, COMPUTE_P99)), (latency, (LATENCY_MEDIAN, LATENCY_P99))):
            v = v[np.isfinite(v)] * 1e3
            out[k_med] = f"{np.median(v):.3f}" if len(v) else "n/a"
            out[k_p99] = f"{np.percentile(v, 99):.3f}" if len(v) else "n/a"
        for k, val in (extra or {}).items():
            out[str(k)] = str(val)
        return out
