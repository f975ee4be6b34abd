"""Small tools the benchmark commands share: a free port, process CPU and memory, machine stalls, the
stop of a launched session.

Benchmarks run on shared machines: they report how much of their window the machine itself was
not scheduled (StallProbe), so a figure is read with its conditions.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path


def stop_session(proc: "subprocess.Popen[bytes]", timeout: float = 20.0) -> None:
    """SIGINT to the session `proc` leads (started with start_new_session=True, e.g. a roslaunch), SIGKILL
    to it if `proc` is still running `timeout` s later; returns once `proc` has ended."""
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def free_port() -> int:
    """A TCP port nobody listens on now (for a private ROS master)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all threads), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    """Resident memory of a process [MiB]."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (children, grandchildren...), from /proc."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    found, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


def process_name(pid: int) -> str:
    """A readable name: the ROS node name (__name:=) when there is one, else the program."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    args = [a.decode(errors="replace") for a in argv if a]
    for a in args:
        if a.startswith("__name:="):
            return a.split(":=", 1)[1]
    prog = [Path(a).name for a in args[:2]]
    return " ".join(p for p in prog if p) or "?"


class StallProbe(threading.Thread):
    """Sleeps 10 ms at a time and adds up every oversleep beyond 20 ms: time the machine was not ours."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stalled = 0.0
        self.worst = 0.0
        self.running = True

    def run(self) -> None:
        while self.running:
            t = time.perf_counter()
            time.sleep(0.01)
            over = time.perf_counter() - t - 0.01
            if over > 0.02:
                self.stalled += over
                self.worst = max(self.worst, over)


def stall_fraction(seconds: float) -> float:
    """Share of `seconds` the machine did not run a sleeping probe (oversleeps beyond 20 ms)."""
    lost, t_end = 0.0, time.monotonic() + seconds
    while time.monotonic() < t_end:
        t = time.perf_counter()
        time.sleep(0.01)
        over = time.perf_counter() - t - 0.01
        lost += over if over > 0.02 else 0.0
    return lost / seconds
