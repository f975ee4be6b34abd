"""The set-point speed limit (hdas.slew.SlewLimiter)."""
from __future__ import annotations

import numpy as np
import pytest

from hdas.slew import SlewLimiter


def test_a_step_becomes_a_ramp_at_the_rate() -> None:
    s = SlewLimiter(np.array([1.0, 2.0]), bucket_s=0.01)
    s.reset(np.zeros(2))
    out = [s.step(np.array([1.0, -1.0]), 0.002 * k) for k in range(1, 1001)]
    p = np.array(out)
    assert np.allclose(p[-1], [1.0, -1.0])
    np.testing.assert_allclose(p[0], [0.01, -0.02])      # the first step spends the bucket (10 ms)
    np.testing.assert_allclose(np.diff(p[:100], axis=0)[5], [0.002, -0.004])   # then rate * dt a cycle
    assert s.limited > 0


def test_any_interval_moves_at_most_rate_times_its_length_plus_the_bucket() -> None:
    """On a clock that advances in steps (simulated time: /clock), many cycles read dt = 0."""
    rng = np.random.default_rng(3)
    s = SlewLimiter(np.array([3.0]), bucket_s=0.01)
    s.reset(np.zeros(1))
    t, times, p = 0.0, [], []
    for _ in range(3000):
        t += rng.choice([0.0, 0.0, 0.004, 0.002])
        times.append(t)
        p.append(s.step(np.array([rng.uniform(-5, 5)]), t)[0])
    times, p = np.array(times), np.array(p)
    for i in range(0, 2900, 7):
        for j in (i + 1, i + 10, i + 100):
            assert abs(p[j] - p[i]) <= 3.0 * (times[j] - times[i] + 0.01) + 1e-12


def test_a_target_within_reach_passes_unchanged_even_when_the_clock_stands() -> None:
    s = SlewLimiter(np.array([3.0]), bucket_s=0.01)
    s.reset(np.zeros(1))
    s.step(np.zeros(1), 1.0)
    assert s.step(np.array([0.004]), 1.002)[0] == 0.004
    assert s.step(np.array([0.008]), 1.002)[0] == 0.008          # dt = 0: the bucket pays
    assert s.limited == 0


def test_follow_and_reset() -> None:
    s = SlewLimiter(np.array([1.0, 1.0]))
    assert s.step(np.array([5.0, 5.0]), 0.0).tolist() == [5.0, 5.0]    # no start: the first target
    s.follow(np.array([True, False]), np.array([0.0, 0.0]))
    out = s.step(np.array([5.0, 6.0]), 0.001)
    assert out[0] == pytest.approx(0.01) and out[1] == pytest.approx(5.01)
    s.reset(np.array([1.0, 1.0]))
    assert s.position.tolist() == [1.0, 1.0]


def test_rates_must_be_positive() -> None:
    for bad in ([0.0], [-1.0], [np.inf], [np.nan]):
        with pytest.raises(ValueError):
            SlewLimiter(np.array(bad))
