"""rospy helpers the nodes share.

`WallTimer`: a periodic callback on wall time. rospy.Timer sleeps on ROS time, and on simulated
time rospy's sleep wakes on every /clock message (500 a second on the simulated robot) to look
at the clock, in every timer of every node, each time taking the interpreter's lock from the
threads doing the real work. A watchdog that compares both clocks anyway needs wall time only.

`QuietPublisher`: at shutdown (Ctrl-C, roslaunch stopping) rospy closes the topics while a
subscriber callback may still be running, and that callback's publish() raises "publish() to a
closed topic", which rospy logs as a "bad callback" traceback in every node on every stop. A
stopping node has nothing left to say: the message is dropped quietly then, and only then.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

import rospy


class QuietPublisher(rospy.Publisher):
    """A rospy.Publisher whose publish() drops the message once ROS is shutting down."""

    def publish(self, *args, **kwargs) -> None:
        try:
            super().publish(*args, **kwargs)
        except rospy.ROSException as e:
            # rospy closes the topics while shutting down, not always after is_shutdown() turns true
            if not (rospy.is_shutdown() or rospy.core.is_shutdown_requested() or "closed topic" in str(e)):
                raise


class WallTimer:
    """Calls `callback(None)` every `period` seconds of wall time on a daemon thread until ROS
    shuts down (the argument stands for rospy.Timer's event). A callback that raises is logged
    (throttled) and called again next period."""

    def __init__(self, period: float, callback: Callable[[Any], None], name: str = "wall-timer"):
        if not period > 0:
            raise ValueError(f"WallTimer period must be > 0, got {period}")
        self.period, self.callback, self.name = period, callback, name
        self._stop = threading.Event()
        self._logged = -float("inf")
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        rospy.on_shutdown(self.shutdown)

    def _run(self) -> None:
        due = time.monotonic()
        while not rospy.is_shutdown():
            due += self.period
            if self._stop.wait(max(0.0, due - time.monotonic())):
                return
            try:
                self.callback(None)
            except Exception as e:  # noqa: BLE001 - a watchdog must outlive one bad call
                now = time.monotonic()
                if now - self._logged >= 10.0:          # throttled: one line per 10 s
                    self._logged = now
                    rospy.logerr(f"{self.name}: {e!r}")

    def shutdown(self) -> None:
        self._stop.set()
