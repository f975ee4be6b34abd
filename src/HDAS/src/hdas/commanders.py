"""Who commands each motor group (ROS-free): two commanders on one topic are seen at once.

ROS 1 lets any node publish on `/motion_control/*`. A teleoperation program that streams there while
the joint tracker also does makes the two fight over the motors, each command undoing the last.
`Commanders` records, per command topic, which node sent each message and when; the driver names
them in /diagnostics and warns while more than one is active.
"""
from __future__ import annotations

import threading

ACTIVE_WINDOW = 0.5      # [s] a commander that sent within this is active
FORGET_AFTER = 60.0      # [s] one silent this long is no longer listed


class Commanders:
    """Per topic: node name -> (messages, time of the last) [monotonic s]."""

    def __init__(self, active_window: float = ACTIVE_WINDOW, forget_after: float = FORGET_AFTER):
        self.active_window = active_window
        self.forget_after = forget_after
        self._seen: dict[str, dict[str, list[float]]] = {}
        self._lock = threading.Lock()

    def heard(self, topic: str, caller: str, now: float) -> bool:
        """A message on `topic` from `caller` at `now`; True when another node is active on it too."""
        with self._lock:
            nodes = self._seen.setdefault(topic, {})
            entry = nodes.get(caller)
            if entry is None:
                nodes[caller] = [1.0, now]
            else:
                entry[0] += 1.0
                entry[1] = now
            if len(nodes) < 2:
                return False
            return any(n != caller and now - last <= self.active_window for n, (_, last) in nodes.items())

    def active(self, topic: str, now: float) -> list[str]:
        """The nodes that sent on `topic` within the active window, sorted."""
        with self._lock:
            return sorted(n for n, (_, last) in self._seen.get(topic, {}).items() if now - last <= self.active_window)

    def report(self, now: float) -> dict[str, dict[str, tuple[int, float]]]:
        """topic -> node -> (messages, seconds since its last), for every node heard within
        `forget_after` (older ones are dropped: a node name per restart must not pile up)."""
        with self._lock:
            out = {}
            for topic, nodes in self._seen.items():
                for n in [n for n, (_, last) in nodes.items() if now - last > self.forget_after]:
                    del nodes[n]
                out[topic] = {n: (int(count), now - last) for n, (count, last) in nodes.items()}
            return out
