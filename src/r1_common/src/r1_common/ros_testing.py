"""Helpers for rostests of the R1 stack: waiting on topics by condition, recording streams.

Tests on a shared machine judge conditions with generous timeouts, never wall-clock rates.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable, Dict

import rospy

# rospy gives all subscribers of a topic in one process one connection, whose receive queue (and
# tcp_nodelay) is that of the subscriber that existed when it connected: a Recorder made after a
# Latest of the same topic lost bursts to the Latest's queue of 1. Every helper uses these settings.
QUEUE_SIZE = 1000


class Latest:
    """The latest message of a topic and how many arrived."""

    def __init__(self, topic: str, cls: type):
        self.msg: Any = None
        self.count = 0
        self.lock = threading.Lock()
        self.sub = rospy.Subscriber(topic, cls, self._cb, queue_size=QUEUE_SIZE, tcp_nodelay=True)

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


def node_pid(name: str) -> int:
    """The process id of the ROS node `name`, from its own XML-RPC getPid; AssertionError when the master does
    not know it or it does not answer."""
    import xmlrpc.client

    import rosgraph
    caller = rospy.get_name()
    try:
        code, msg, pid = xmlrpc.client.ServerProxy(rosgraph.Master(caller).lookupNode(name)).getPid(caller)
    except Exception as e:     # not registered (yet), or gone
        raise AssertionError(f"{name}: no pid ({e})") from None
    assert code == 1, f"{name}: no pid ({msg})"
    return int(pid)


class Recorder:
    """Every message of a topic with its arrival time, while recording."""

    def __init__(self, topic: str, cls: type):
        self.items: list[tuple[float, Any]] = []
        self.recording = False
        self.lock = threading.Lock()
        self.sub = rospy.Subscriber(topic, cls, self._cb, queue_size=QUEUE_SIZE, tcp_nodelay=True)

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


class Diagnostics:
    """The latest /diagnostics status of each name, waited on by name or by node."""

    def __init__(self) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        self.status: dict[str, Any] = {}
        self.lock = threading.Lock()
        self.sub = rospy.Subscriber("/diagnostics", DiagnosticArray, self._cb, queue_size=QUEUE_SIZE)

    def _cb(self, msg: Any) -> None:
        with self.lock:
            for s in msg.status:
                self.status[s.name] = s

    def wait(self, name: str, predicate: Callable[[Any], bool], timeout: float = 120.0) -> Any:
        """The status called `name` once `predicate` holds for it; AssertionError after `timeout` s."""
        deadline, s = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            with self.lock:
                s = self.status.get(name)
            if s is not None and predicate(s):
                return s
            time.sleep(0.05)
        raise AssertionError(f"no matching diagnostics {name!r} within {timeout} s (last: {s})")

    def of(self, node: str, timeout: float = 60.0, predicate: Callable[[Any], bool] | None = None) -> Any:
        """The first status of `node` (name starting with "node:"), matching `predicate` if given."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                found = [s for name, s in self.status.items() if name.startswith(node + ":")]
            if found and (predicate is None or predicate(found[0])):
                return found[0]
            time.sleep(0.1)
        raise AssertionError(f"no {'matching ' if predicate else ''}diagnostics of {node} within {timeout} s")


def launch_namespace(launch: "str | os.PathLike[str]", node_ns: str, *args: str) -> Dict[str, Any]:
    """The private parameters of node `node_ns` (e.g. "/r1_sim") that the launch file `launch` sets with
    the arguments `args` ("name:=value"), read by roslaunch's own loader, as the nested dict
    rospy.get_param("~") would return (roslaunch flattens the maps it loads). Raises AssertionError
    listing roslaunch's configuration errors."""
    import roslaunch.config
    import roslaunch.xmlloader

    config = roslaunch.config.ROSLaunchConfig()
    roslaunch.xmlloader.XmlLoader().load(str(launch), config, argv=list(args), verbose=False)
    assert not config.config_errors, config.config_errors
    out: Dict[str, Any] = {}
    prefix = node_ns.rstrip("/") + "/"
    for key, param in config.params.items():
        if not key.startswith(prefix):
            continue
        *path, leaf = key[len(prefix):].split("/")
        d = out
        for part in path:
            d = d.setdefault(part, {})
        d[leaf] = param.value
    return out
