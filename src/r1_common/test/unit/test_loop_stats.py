"""r1_common.loop_stats: the standard loop keys every node reports on /diagnostics."""
import math

import pytest

from r1_common.loop_stats import STANDARD_KEYS, LoopStats


def test_rate_over_the_window():
    s = LoopStats(window_s=2.0)
    for i in range(1001):                     # 100 Hz for 10 s
        s.tick(i * 0.01)
    assert s.rate_hz(10.0) == pytest.approx(100.0, rel=0.01)
    assert s.total == 1001


def test_rate_falls_when_the_loop_stops():
    s = LoopStats(window_s=1.0)
    for i in range(100):
        s.tick(i * 0.01)
    assert s.rate_hz(0.99) == pytest.approx(100.0, rel=0.02)
    assert s.rate_hz(5.0) == 0.0              # nothing in the last second


def test_compute_and_latency_percentiles_in_ms():
    s = LoopStats(window_s=100.0)
    for i in range(100):
        s.tick(i * 0.01, compute_s=(i + 1) * 1e-5, latency_s=0.002)
    v = s.values(1.0)
    assert set(STANDARD_KEYS) <= set(v)
    assert float(v["compute_ms_median"]) == pytest.approx(0.505, abs=1e-3)
    assert float(v["compute_ms_p99"]) == pytest.approx(0.99, abs=0.01)
    assert float(v["latency_ms_median"]) == pytest.approx(2.0)


def test_unknown_measurements_read_na_and_extra_keys_follow():
    s = LoopStats()
    s.tick(0.0)
    s.tick(0.1)
    v = s.values(0.1, {"dropped": 3})
    assert v["latency_ms_median"] == "n/a" and v["compute_ms_p99"] == "n/a"
    assert v["dropped"] == "3"
    assert list(v)[: len(STANDARD_KEYS)] == list(STANDARD_KEYS)


def test_a_clock_that_jumps_back_restarts_the_window():
    s = LoopStats(window_s=5.0)
    for i in range(50):
        s.tick(1000.0 + i * 0.1)
    assert s.rate_hz(10.0) == 0.0
    assert math.isfinite(float(s.values(10.0)["rate_hz"]))


def test_window_must_be_positive():
    with pytest.raises(ValueError):
        LoopStats(window_s=0)
