#!/usr/bin/env python3
"""Helpers of ota_script.sh (standard library only): wait for the master or a node, and find,
record and stop exactly what one `ota_script.sh boot` started.

What is ours: the boot gives its tmux sessions an environment variable R1_BOOT_ID=<random id>.
Every pane shell, and everything started from a pane (roscore, roslaunch and the nodes
roslaunch spawns), inherits it. So the processes of a boot are the pane shells of its sessions,
their descendants, and any process whose environment holds R1_BOOT_ID=<id> (a node orphaned by
a crashed roslaunch is no longer a descendant, but it still carries the id). Nothing else is
touched: not another roscore on the machine, not another tmux session, not the tmux server.

  r1_boot.py wait-master [--timeout S]
  r1_boot.py wait-node NODE [--timeout S]
  r1_boot.py check-free --state FILE --sessions NAME...     exit 3 (with a message) when a boot
                                                             of ours or a foreign session is there
  r1_boot.py record --state FILE --sessions NAME...         append the pane pids to the state file
  r1_boot.py stop --state FILE --sessions NAME...           stop in that order (see stop())
  r1_boot.py pids --state FILE --sessions NAME...           print the pids of our processes
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import xmlrpc.client

CALLER = "/ota_script"


# --- the master -----------------------------------------------------------------------------

def _master() -> xmlrpc.client.ServerProxy:
    uri = os.environ.get("ROS_MASTER_URI", "http://localhost:11311")
    return xmlrpc.client.ServerProxy(uri)


def master_up() -> bool:
    try:
        code, _, _ = _master().getPid(CALLER)
        return code == 1
    except (OSError, xmlrpc.client.Error):
        return False


def node_registered(node: str) -> bool:
    try:
        code, _, _ = _master().lookupNode(CALLER, node)
        return code == 1
    except (OSError, xmlrpc.client.Error):
        return False


def _wait(cond, timeout: float, period: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if cond():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(period)


# --- processes --------------------------------------------------------------------------------

def _stat(pid: int) -> tuple[int, str, int] | None:
    """(ppid, state, tpgid) of a process, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode(errors="replace")
    except OSError:
        return None
    fields = data[data.rindex(")") + 2:].split()
    return int(fields[1]), fields[0], int(fields[5])


def alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[1] not in ("Z", "X")


def _table() -> dict[int, int]:
    """pid -> ppid of every live process."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None and st[1] not in ("Z", "X"):
                table[int(name)] = st[0]
    return table


def descendants(roots: set[int], table: dict[int, int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, ppid in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = list(roots)
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in found:
                found.add(c)
                todo.append(c)
    return found


def has_boot_id(pid: int, boot_ids: set[str]) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read().split(b"\0")
    except OSError:   # gone, or another user's process
        return False
    return any(f"R1_BOOT_ID={b}".encode() in env for b in boot_ids)


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def _self_related(table: dict[int, int]) -> set[int]:
    """This process, its ancestors and its descendants: `kill` typed in a pane of ours must not
    kill itself (or the shell it runs in, before tmux closes it)."""
    me = os.getpid()
    related = {me} | descendants({me}, table)
    p = table.get(me, 0)
    while p > 1:
        related.add(p)
        p = table.get(p, 0)
    return related


# --- tmux -------------------------------------------------------------------------------------

def tmux(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["tmux", *args], capture_output=True, text=True)


def session_exists(name: str) -> bool:
    return tmux("has-session", "-t", f"={name}").returncode == 0


def session_boot_id(name: str) -> str | None:
    res = tmux("show-environment", "-t", f"={name}", "R1_BOOT_ID")
    line = res.stdout.strip()
    if res.returncode == 0 and line.startswith("R1_BOOT_ID="):
        return line.split("=", 1)[1] or None
    return None


def pane_pids(name: str) -> set[int]:
    res = tmux("list-panes", "-s", "-t", f"={name}", "-F", "#{pane_pid}")
    return {int(x) for x in res.stdout.split()} if res.returncode == 0 else set()


def tmux_server_pid() -> int | None:
    res = tmux("display-message", "-p", "#{pid}")
    return int(res.stdout) if res.returncode == 0 and res.stdout.strip().isdigit() else None


# --- the state of one boot ----------------------------------------------------------------------

def read_state(path: str) -> dict[str, str]:
    state: dict[str, str] = {}
    try:
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    state[k] = v
    except OSError:
        pass
    return state


class Boot:
    """What one boot started: its sessions (found by their R1_BOOT_ID), its boot ids and its
    processes."""

    def __init__(self, state_path: str, sessions: list[str]):
        self.state_path = state_path
        self.state = read_state(state_path)
        self.boot_ids: set[str] = set()
        if self.state.get("boot_id"):
            self.boot_ids.add(self.state["boot_id"])
        self.sessions: list[str] = []       # ours, in the given order
        self.foreign: list[str] = []        # same name, not started by a boot
        for name in sessions:
            if session_exists(name):
                bid = session_boot_id(name)
                if bid:
                    self.boot_ids.add(bid)
                    self.sessions.append(name)
                else:
                    self.foreign.append(name)
        self.recorded_panes = {int(p) for p in self.state.get("pane_pids", "").split() if p.isdigit()}

    def panes(self, session: str | None = None) -> set[int]:
        if session is not None:
            return pane_pids(session) if session in self.sessions else set()
        live = set().union(*(pane_pids(s) for s in self.sessions)) if self.sessions else set()
        # recorded panes count only while they still carry our id (pids get reused)
        return live | {p for p in self.recorded_panes if has_boot_id(p, self.boot_ids)}

    def processes(self) -> set[int]:
        """Every live process of this boot, pane shells included."""
        if not self.boot_ids:
            return set()
        table = _table()
        panes = {p for p in self.panes() if p in table}
        found = panes | descendants(panes, table)
        found |= {p for p in table if has_boot_id(p, self.boot_ids)}
        found -= _self_related(table)
        server = tmux_server_pid()
        found.discard(server if server else -1)
        return {p for p in found if alive(p)}

    def running(self) -> bool:
        return bool(self.sessions) or bool(self.processes())


def _describe(pids: set[int], limit: int = 12) -> str:
    lines = [f"  {p}: {cmdline(p)[:150]}" for p in sorted(pids)[:limit]]
    if len(pids) > limit:
        lines.append(f"  ... and {len(pids) - limit} more")
    return "\n".join(lines)


def _wait_gone(pids: set[int], timeout: float) -> set[int]:
    _wait(lambda: not any(alive(p) for p in pids), timeout, 0.2)
    return {p for p in pids if alive(p)}


def _signal(pids: set[int], sig: int) -> None:
    for p in pids:
        try:
            os.kill(p, sig)
        except (ProcessLookupError, PermissionError):
            pass


def stop(boot: Boot, sigint_timeout: float, term_timeout: float) -> int:
    """Stop one boot:
    1. per session, in the given order (modules before the master): SIGINT to the foreground
       process group of every pane, as Ctrl-C in that pane would (roslaunch then stops its
       nodes itself), and wait up to `sigint_timeout` for the pane's processes to end;
    2. SIGTERM to whatever of ours is left (pane shells aside), then SIGKILL after `term_timeout`;
    3. `tmux kill-session` for our sessions (the pane shells get SIGHUP), SIGKILL to a shell
       that outlives it;
    4. check that nothing of ours is left."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)   # `kill` typed in one of our panes survives its pane
    if not boot.running():
        for name in boot.foreign:
            print(f"tmux session '{name}' was not started by ota_script.sh boot: left alone")
        print("nothing to stop: no session or process of ota_script.sh boot is running")
        _remove(boot.state_path)
        return 0
    t0 = time.monotonic()
    print(f"stopping boot {' '.join(sorted(boot.boot_ids))}: sessions {' '.join(boot.sessions) or '(none left)'}")
    for name in boot.sessions:
        shells = boot.panes(name)
        table = _table()
        inside = descendants(shells, table) - _self_related(table)
        if not inside:
            continue
        for shell in shells:
            st = _stat(shell)
            # a job in the foreground of that pane (and not this `kill`, typed in one of our panes)
            if st and st[2] > 0 and st[2] != shell and st[2] != os.getpgrp():
                try:
                    os.killpg(st[2], signal.SIGINT)
                except (ProcessLookupError, PermissionError):
                    pass
        left = _wait_gone(inside, sigint_timeout)
        print(f"  {name}: SIGINT to {len(shells)} panes, "
              f"{len(inside) - len(left)}/{len(inside)} processes ended in {time.monotonic() - t0:.1f} s")
        if left:
            print(f"  {name}: still running after {sigint_timeout:.0f} s:\n{_describe(left)}")
    shells = boot.panes()
    rest = boot.processes() - shells
    if rest:
        print(f"  SIGTERM to {len(rest)} processes left:\n{_describe(rest)}")
        _signal(rest, signal.SIGTERM)
        left = _wait_gone(rest, term_timeout)
        if left:
            print(f"  SIGKILL to {len(left)} processes:\n{_describe(left)}")
            _signal(left, signal.SIGKILL)
            _wait_gone(left, 5.0)
    for name in boot.sessions:
        tmux("kill-session", "-t", f"={name}")
    left = _wait_gone(shells, 5.0)
    if left:
        _signal(left, signal.SIGKILL)
        _wait_gone(left, 5.0)
    boot.sessions = [s for s in boot.sessions if session_exists(s)]
    left = boot.processes()
    if left or boot.sessions:
        print(f"FAILED to stop: sessions {boot.sessions}, processes:\n{_describe(left)}", file=sys.stderr)
        return 1
    _remove(boot.state_path)
    print(f"stopped in {time.monotonic() - t0:.1f} s: no process or session of this boot is left")
    return 0


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["wait-master", "wait-node", "check-free", "record", "stop", "pids"])
    ap.add_argument("node", nargs="?")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--state")
    ap.add_argument("--sessions", nargs="*", default=[])
    ap.add_argument("--sigint-timeout", type=float, default=float(os.environ.get("R1_KILL_TIMEOUT", 30)))
    ap.add_argument("--term-timeout", type=float, default=5.0)
    a = ap.parse_args()
    if a.command == "wait-master":
        return 0 if _wait(master_up, a.timeout) else 1
    if a.command == "wait-node":
        if not a.node:
            ap.error("wait-node needs a node name")
        return 0 if _wait(lambda: node_registered(a.node), a.timeout) else 1
    if not a.state:
        ap.error(f"{a.command} needs --state")
    boot = Boot(a.state, a.sessions)
    if a.command == "check-free":
        if boot.running():
            st = boot.state
            print(f"the R1 stack is already running (boot {' '.join(sorted(boot.boot_ids))}"
                  f"{', started ' + st['started'] if st.get('started') else ''}"
                  f"{', simulated robot' if st.get('sim') == '1' else ''}"
                  f"; sessions: {' '.join(boot.sessions) or 'none left'}, "
                  f"{len(boot.processes())} processes). Stop it first: ota_script.sh kill", file=sys.stderr)
            return 3
        if boot.foreign:
            print(f"a tmux session named {' and '.join(boot.foreign)} exists that ota_script.sh did not start; "
                  f"close or rename it first (tmux ls; tmux rename-session -t NAME OTHER)", file=sys.stderr)
            return 3
        _remove(a.state)   # stale: nothing of that boot is alive
        return 0
    if a.command == "record":
        with open(a.state, "a") as f:
            f.write(f"sessions={' '.join(boot.sessions)}\n")
            f.write(f"pane_pids={' '.join(str(p) for p in sorted(boot.panes()))}\n")
        return 0
    if a.command == "pids":
        print("\n".join(str(p) for p in sorted(boot.processes())))
        return 0
    return stop(boot, a.sigint_timeout, a.term_timeout)


if __name__ == "__main__":
    sys.exit(main())
