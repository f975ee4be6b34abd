"""Real-time scheduling for a control process (SCHED_FIFO), as ros2_control's controller manager
asks for its loop: a controller that wakes on every message must not wait behind batch work
for a core. Linux schedules threads, not processes, so every thread the process has is moved,
and threads started later inherit the policy of the thread that starts them (so do processes:
a tool that launches others calls `normal_priority()` first).

Asking is allowed to fail (no CAP_SYS_NICE, a container without RT budget): the caller logs the
reason and runs at normal priority. The kernel's RT throttling (sched_rt_runtime_us) still
leaves the other processes 5 % of each core should a real-time thread ever spin.
"""
from __future__ import annotations

import os


def request_fifo(priority: int) -> str | None:
    """Move every thread of this process to SCHED_FIFO at `priority` (1-99; 0 asks for nothing).
    Returns None on success (or for 0), else why it could not be done."""
    if priority == 0:
        return None
    lo, hi = os.sched_get_priority_min(os.SCHED_FIFO), os.sched_get_priority_max(os.SCHED_FIFO)
    if not lo <= priority <= hi:
        return f"SCHED_FIFO priority must be within {lo}..{hi} (or 0: off), not {priority}"
    try:
        _set_all_threads(os.SCHED_FIFO, priority)
    except OSError as e:
        return f"SCHED_FIFO {priority} not permitted ({e.strerror}): running at normal priority " \
               f"(grant CAP_SYS_NICE or an rtprio limit to the robot user)"
    return None


def normal_priority() -> None:
    """Every thread of this process back to SCHED_OTHER (always permitted)."""
    _set_all_threads(os.SCHED_OTHER, 0)


def _set_all_threads(policy: int, priority: int) -> None:
    for tid in [int(t) for t in os.listdir("/proc/self/task")]:
        try:
            os.sched_setscheduler(tid, policy, os.sched_param(priority))
        except ProcessLookupError:      # the thread ended meanwhile
            pass


def policy_name(tid: int = 0) -> str:
    """'SCHED_FIFO 50', 'SCHED_OTHER', ... for a thread (0: the calling one), for diagnostics."""
    policy = os.sched_getscheduler(tid)
    names = {os.SCHED_OTHER: "SCHED_OTHER", os.SCHED_FIFO: "SCHED_FIFO", os.SCHED_RR: "SCHED_RR",
             os.SCHED_BATCH: "SCHED_BATCH", os.SCHED_IDLE: "SCHED_IDLE"}
    name = names.get(policy, str(policy))
    return f"{name} {os.sched_getparam(tid).sched_priority}" if policy in (os.SCHED_FIFO, os.SCHED_RR) else name
