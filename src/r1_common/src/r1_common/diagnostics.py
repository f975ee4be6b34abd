"""What every node's /diagnostics has in common: a 1 Hz publisher on the wall clock, and statuses.

Each node hands `DiagnosticsPublisher` a function that builds its statuses (with the standard keys
of `r1_common.loop_stats`); the publisher calls it once a second of *wall* time, in its own thread. Not
a rospy.Timer: that runs on ROS time, and on a simulated clock running at a fifth of real time a
1 Hz timer would publish every 5 s, so a monitor (`rosrun HDAS r1_monitor`, which calls a module
STALE after 3 s of silence) would see every module go stale. The values inside keep the clock
each node measures on (see `docs/diagnostics.md`).
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Mapping

import rospy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from r1_common.ros_io import QuietPublisher

FIRST_REPORT_S = 0.2     # [s] after start, the first report

OK, WARN, ERROR = DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR


def status(name: str, hardware_id: str, level: int, message: str, values: Mapping[str, Any]) -> DiagnosticStatus:
    """A DiagnosticStatus with every value as a string (`name` starts with the node's name and ': ')."""
    return DiagnosticStatus(level=level, name=name, message=message, hardware_id=hardware_id,
                            values=[KeyValue(str(k), str(v)) for k, v in values.items()])


class DiagnosticsPublisher:
    """Publishes `build()`'s statuses on /diagnostics every `period` seconds of wall time."""

    def __init__(self, build: Callable[[], list[DiagnosticStatus]], period: float = 1.0, name: str = "node"):
        self.build = build
        self.period = period
        self.name = name
        self.pub = QuietPublisher("/diagnostics", DiagnosticArray, queue_size=2)
        self._now = threading.Event()
        self.thread = threading.Thread(target=self._run, name="diagnostics", daemon=True)
        self.thread.start()

    def publish_now(self) -> None:
        """Publish at once (a fault appeared or went), not at the next period; the period goes on."""
        self._now.set()

    def _run(self) -> None:
        # the first report soon after start (a restarted node is seen to be back at once), then every period
        next_t = time.monotonic() + min(self.period, FIRST_REPORT_S)
        failures = 0
        while not rospy.is_shutdown():
            delay = next_t - time.monotonic()
            if delay > 0:
                if not self._now.wait(delay):
                    next_t += self.period
            else:                              # far behind (a stalled process): no burst to catch up
                next_t = time.monotonic() + self.period
            self._now.clear()
            if rospy.is_shutdown():
                break
            try:
                array = DiagnosticArray(status=self.build())
            except Exception as e:              # a bug in a report must not end the reports
                failures += 1
                if failures in (1, 10, 100) or failures % 1000 == 0:
                    rospy.logerr(f"{self.name}: building diagnostics failed ({failures} times): {e!r}")
                continue
            array.header.stamp = rospy.Time.now()
            try:
                self.pub.publish(array)
            except rospy.ROSException:          # shutting down
                break
