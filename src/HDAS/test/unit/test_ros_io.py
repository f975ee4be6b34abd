"""hdas.ros_io.WallTimer: periodic on wall time, survives a failing callback, stops on shutdown."""
import threading
import time

from hdas.ros_io import WallTimer


def test_wall_timer_calls_on_keeps_going_after_an_error_and_stops():
    calls = []
    lock = threading.Lock()

    def callback(event):
        with lock:
            calls.append(event)
            n = len(calls)
        if n == 2:
            raise RuntimeError("one bad call")

    timer = WallTimer(0.01, callback, "test-timer")
    deadline = time.monotonic() + 5.0
    while len(calls) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(calls) >= 6 and all(e is None for e in calls)     # on past the raising call
    timer.shutdown()
    time.sleep(0.05)
    stopped_at = len(calls)
    time.sleep(0.1)
    assert len(calls) == stopped_at


def test_wall_timer_refuses_a_zero_period():
    import pytest
    with pytest.raises(ValueError):
        WallTimer(0.0, lambda e: None)
