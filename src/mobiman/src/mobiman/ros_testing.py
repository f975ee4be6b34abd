"""Helpers for rostests of the R1 stack: waiting on topics by condition, recording streams.

Tests on a shared machine judge conditions with generous timeouts, never wall-clock rates.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

import rospy


class Latest:
    """The latest message of a topic and how many arrived."""

    def __init__(self, topic: str, cls: type):
        self.msg: Any = None
        self.count = 0
        self.lock = threading.Lock()
        self.sub = rospy.Subscriber(topic, cls, self._cb, queue_size=1)

    def _cb(self, msg: Any) -> None:
        with self.lock:
            self.msg, self.count = msg, self.count + 1

    def wait(self, timeout: float = 30.0, predicate: Callable[[Any], bool] | None = None) -> Any:
        """The latest message (matching `predicate`), waiting up to `timeout` s; AssertionError if none."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not rospy.is_shutdown():
            with self.lock:
                m = self.msg
            if m is not None and (predicate is None or predicate(m)):
                return m
            time.sleep(0.01)
        raise AssertionError(f"{self.sub.name}: no {'matching ' if predicate else ''}message within {timeout} s")


class Recorder:
    """Every message of a topic with its arrival time, while recording."""

    def __init__(self, topic: str, cls: type):
        self.items: list[tuple[float, Any]] = []
        self.recording = False
        self.lock = threading.Lock()
        self.sub = rospy.Subscriber(topic, cls, self._cb, queue_size=1000, tcp_nodelay=True)

    def _cb(self, msg: Any) -> None:
        if self.recording:
            with self.lock:
                self.items.append((time.monotonic(), msg))

    def start(self) -> None:
        with self.lock:
            self.items = []
        self.recording = True

    def stop(self) -> list[tuple[float, Any]]:
        self.recording = False
        with self.lock:
            return list(self.items)
