"""scripts/run brings the whole stack up, waits for every topic, reports it, and stops cleanly on Ctrl-C."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.system      # (scripts/test --unit leaves it out)

WS = Path(__file__).resolve().parents[1]
PORT = 11393


def _descendants(pid: int) -> set[int]:
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for line in out.split("\n"):
        if line.strip():
            p, pp = map(int, line.split())
            children.setdefault(pp, []).append(p)
    found, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.add(c)
            todo.append(c)
    return found


@pytest.fixture
def run_env() -> dict:
    env = dict(os.environ, ROS_MASTER_URI=f"http://localhost:{PORT}")
    env.pop("R1_RUN_SECONDS", None)
    return env


def _as_from_a_terminal() -> None:
    """SIGINT at its default, as in a terminal: a harness started in the background (`cmd &` in a
    non-interactive shell) ignores it, every child inherits that, and bash cannot trap a signal
    ignored on entry, so Ctrl-C would be tested against a script that cannot see it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_run_brings_the_stack_up_and_stops_on_ctrl_c(run_env: dict) -> None:
    # A new session stands in for a terminal: Ctrl-C sends SIGINT to the foreground group.
    proc = subprocess.Popen([str(WS / "scripts" / "run")], env=run_env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=_as_from_a_terminal)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 900   # a starved shared machine brings the stack up slowly
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "Ctrl-C to stop" in line:
                break
        text = "".join(lines)
        assert "Ctrl-C to stop" in text, text
        assert "topics live with their types" in text, text
        # auto: the motion-control nodes in one process below 4 cores, like the light profile
        small = len(os.sched_getaffinity(0)) < 4    # (what nproc counts)
        assert f"profile {'light' if small else 'stock'}, one process {'true' if small else 'false'}" in text, text
        for node in ("/HDAS", "/r1_sim", "/chassis_control_node", "/r1_jointTracker_demo_node",
                     "/torso_speed_control", "/r1_left_arm_relaxed_ik", "/r1_right_arm_relaxed_ik",
                     "/r1_eepose_pub_node", "/r1_control_manager", "/r1_sim_sensors"):
            # (below 4 cores the motion-control nodes run hosted in one process: scripts/run, R1_ONE_PROCESS)
            assert f"  {node}\n" in text or f"  {node} (hosted in /mobiman_controllers)\n" in text, \
                f"{node} not running:\n{text}"
        assert "TF: all" in text and "have a transform" in text, text
        assert "/joint_states" in text, text
        started = _descendants(proc.pid)
        assert started, "scripts/run started no processes"
        stack_log = Path(run_env.get("ROS_HOME", WS / ".ros")) / "log" / "run" / "stack.log"
        os.killpg(proc.pid, signal.SIGINT)
        rest, _ = proc.communicate(timeout=180)   # a loaded machine shuts a stack down slowly
        assert proc.returncode == 0, rest
        assert "stopped" in rest
        # every node stopped on roslaunch's SIGINT (r1_common.ros_io.stop_within): it never escalated
        escalated = [line for line in stack_log.read_text().splitlines() if "escalating to SIGTERM" in line]
        assert escalated == [], escalated
        time.sleep(0.5)
        alive = [p for p in started if Path(f"/proc/{p}").exists()]
        assert alive == [], f"left running: {alive}"
    finally:
        if proc.poll() is None:
            # a failed check must not leave the stack running (it would starve every later test):
            # Ctrl-C first (the script stops its launches), then kill whatever is left
            kids = _descendants(proc.pid)
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            for pid in kids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def test_run_refuses_a_port_where_a_master_already_runs(run_env: dict) -> None:
    core = subprocess.Popen(["roscore", "-p", str(PORT)], env=run_env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120     # a loaded machine starts roscore slowly
        while subprocess.run(["rostopic", "list"], env=run_env, capture_output=True).returncode != 0:
            assert time.monotonic() < deadline, "roscore did not come up"
            time.sleep(0.3)
        res = subprocess.run([str(WS / "scripts" / "run")], env=run_env, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=120)
        assert res.returncode != 0
        assert "already answers" in res.stderr
    finally:
        # never leave this master behind: it would hold the port for every later run
        os.killpg(core.pid, signal.SIGINT)
        try:
            core.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(core.pid, signal.SIGKILL)
            core.wait()
