"""The topics the whole stack must publish (config/r1_topics.yaml) and a check that they do.

`load_topics` and `problems` are ROS-free (pytest); `TopicWatcher` counts messages per topic with
rospy.AnyMsg subscribers (no message class needed, the type comes from the connection header), so
one watcher serves scripts/run's wait, the system rostest and the benchmark.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import yaml

KINDS = ("stream", "registered")


@dataclass(frozen=True)
class TopicSpec:
    name: str
    type: str
    kind: str             # "stream": messages must arrive; "registered": a publisher must exist
    group: str
    stock_hz: float | None = None
    sensor: bool = False


def load_topics(path: str | Path, sensors: bool = True) -> list[TopicSpec]:
    """The topic list, without the sensor topics when `sensors` is false; ValueError on a bad file."""
    data = yaml.safe_load(Path(path).read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected groups of topics")
    specs = []
    for group, topics in data.items():
        for name, d in (topics or {}).items():
            if not name.startswith("/") or "type" not in d or d.get("kind") not in KINDS:
                raise ValueError(f"{path}: {name}: needs an absolute name, a type and a kind in {KINDS}")
            spec = TopicSpec(name, d["type"], d["kind"], group, d.get("hz"), bool(d.get("sensor", False)))
            if sensors or not spec.sensor:
                specs.append(spec)
    return specs


def problems(specs: Iterable[TopicSpec], published_types: Mapping[str, str],
             received: Mapping[str, tuple[int, str]]) -> list[str]:
    """What is wrong, one line per topic: not advertised, wrong type, or (streams) no message yet.

    `published_types`: topic -> type of the master's publishers; `received`: topic -> (count, type
    from the message's connection header).
    """
    out = []
    for s in specs:
        advertised = published_types.get(s.name)
        if advertised is None:
            out.append(f"{s.name}: nobody publishes it (expected {s.type})")
        elif advertised != s.type:
            out.append(f"{s.name}: published as {advertised}, expected {s.type}")
        elif s.kind == "stream":
            count, msg_type = received.get(s.name, (0, ""))
            if count == 0:
                out.append(f"{s.name}: advertised, no message yet")
            elif msg_type != s.type:
                out.append(f"{s.name}: messages of type {msg_type}, expected {s.type}")
    return out


class TopicWatcher:
    """Counts the messages of each stream topic and notes their type (rospy needed)."""

    def __init__(self, specs: Sequence[TopicSpec]):
        import rospy
        self._rospy = rospy
        self.specs = list(specs)
        self._lock = threading.Lock()
        self._count: dict[str, int] = {}
        self._type: dict[str, str] = {}
        self._subs = [rospy.Subscriber(s.name, rospy.AnyMsg, self._cb, s.name, queue_size=50)
                      for s in self.specs if s.kind == "stream"]

    def close(self) -> None:
        """Unsubscribe. rospy keeps one subscription per topic and process, typed by its first subscriber:
        a typed subscriber of the same topic in this process gets messages only after this."""
        for sub in self._subs:
            sub.unregister()
        self._subs = []

    def _cb(self, msg, topic: str) -> None:
        with self._lock:
            self._count[topic] = self._count.get(topic, 0) + 1
            self._type[topic] = msg._connection_header.get("type", "")

    def received(self) -> dict[str, tuple[int, str]]:
        with self._lock:
            return {t: (c, self._type.get(t, "")) for t, c in self._count.items()}

    def problems(self) -> list[str]:
        import rosgraph
        master = rosgraph.Master(self._rospy.get_name())
        published = dict(master.getPublishedTopics(""))
        return problems(self.specs, published, self.received())

    def wait(self, timeout: float, progress_every: float = 15.0, log=print) -> list[str]:
        """Wait (wall time) until nothing is wrong; the remaining problems (empty when all is well)."""
        deadline = time.monotonic() + timeout
        next_report = time.monotonic() + progress_every
        while True:
            found = self.problems()
            if not found or time.monotonic() > deadline or self._rospy.is_shutdown():
                return found
            if time.monotonic() > next_report:
                log(f"  waiting for {len(found)} topic(s), e.g. {found[0]}")
                next_report += progress_every
            time.sleep(0.5)
