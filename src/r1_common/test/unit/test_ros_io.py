"""r1_common.ros_io.WallTimer: periodic on wall time, survives a failing callback, stops on shutdown."""
import threading
import time
from typing import Tuple

from r1_common.ros_io import WallTimer


def test_wall_timer_calls_on_keeps_going_after_an_error_and_stops():
    calls = []
    lock = threading.Lock()

    def callback(event):
        with lock:
            calls.append(event)
            n = len(calls)
        if n == 2:
            raise RuntimeError("one bad call")

    timer = WallTimer(0.01, callback, "test-timer")
    deadline = time.monotonic() + 5.0
    while len(calls) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(calls) >= 6 and all(e is None for e in calls)     # on past the raising call
    timer.shutdown()
    time.sleep(0.05)
    stopped_at = len(calls)
    time.sleep(0.1)
    assert len(calls) == stopped_at


def test_wall_timer_refuses_a_zero_period():
    import pytest
    with pytest.raises(ValueError):
        WallTimer(0.0, lambda e: None)


def run_hanging_node(tmp_path, hang: str) -> Tuple[float, int, str]:
    """A node with stop_within(1.0) and `hang` (Python lines) before it spins, on a master of its own:
    SIGINT once it is ready; (seconds until it is gone, exit status, stderr)."""
    import os
    import signal
    import socket
    import subprocess
    import sys

    with socket.socket() as s:                 # a free port for a master of our own
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, ROS_MASTER_URI=f"http://localhost:{port}", ROS_HOME=str(tmp_path))
    core = subprocess.Popen(["rosmaster", "--core", "-p", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30.0
    while True:                                # the master up first: else rospy prints its retries on stdout
        try:
            socket.create_connection(("localhost", port), timeout=1.0).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "rosmaster did not start within 30 s"
            time.sleep(0.05)
    node = tmp_path / "hanging_node.py"
    node.write_text(
        "import threading, time, rospy\n"
        "from r1_common.ros_io import stop_within\n"
        "rospy.init_node('hanging_node')\n"
        "stop_within(1.0)\n"
        f"{hang}\n"
        "print('ready', flush=True)\n"
        "rospy.spin()\n")
    try:
        proc = subprocess.Popen([sys.executable, str(node)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        lines = []
        while not lines or lines[-1] != "ready":     # (rospy may print a warning or two first)
            line = proc.stdout.readline()
            assert line, f"the node ended before it was ready: {lines}, {proc.stderr.read()}"
            lines.append(line.strip())
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        return time.monotonic() - t0, proc.returncode, proc.stderr.read()
    finally:
        core.terminate()
        core.wait(10)


def test_stop_within_ends_a_node_that_hangs_at_shutdown(tmp_path):
    """A node whose shutdown hangs (here a thread that never returns, as a blocked library call) is gone
    within stop_within's seconds of its SIGINT: roslaunch never has to escalate to SIGTERM."""
    took, status, err = run_hanging_node(
        tmp_path, "threading.Thread(target=lambda: time.sleep(3600)).start()   # not a daemon: Python waits for it")
    assert took < 3.0, f"{took:.1f} s"
    assert status == 0
    assert "still running 1 s after shutdown: exiting now" in err


def test_stop_within_ends_a_node_whose_interpreter_hangs_while_finalizing(tmp_path):
    """A hang after the interpreter began finalizing (here an object's __del__ at module teardown, as a
    library's destructor that waits), where daemon threads no longer run: the kernel ends the process
    (SIGALRM) a second after stop_within's time. (On a loaded machine rospy's own shutdown may outlast
    stop_within's second, and its thread ends the process before the finalization begins: also gone.)"""
    import signal

    took, status, err = run_hanging_node(
        tmp_path, "class Hang:\n    def __del__(self):\n        time.sleep(3600)\nhang = Hang()")
    assert took < 4.0, f"{took:.1f} s"
    assert status == -signal.SIGALRM or (status == 0 and "exiting now" in err), (status, err[-500:])
