"""startup_config's one-shot boot: `ota_script.sh boot --sim` brings the stack up in tmux and
`ota_script.sh kill` stops exactly what it started.

Real tmux, tmuxp, roscore and roslaunch. The tests never touch a developer's stack: their own
master ports (11421 for the boot, 11422 for a bystander master), their own tmux server
(TMUX_TMPDIR of their own; tmux puts its socket there) and their own ROS_HOME. The simulated
robot runs with light:=true (a fifth of the bus rates) to spare the shared machine.
"""
from __future__ import annotations

import filecmp
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.system      # (scripts/test --unit leaves it out)

WS = Path(__file__).resolve().parents[1]
SRC_DIR = WS / "src" / "startup_config" / "script"
INSTALL_DIR = WS / "install" / "share" / "startup_config" / "script"
SRC_SCRIPT = SRC_DIR / "ota_script.sh"
INSTALL_SCRIPT = INSTALL_DIR / "ota_script.sh"
PORT = 11421
BYSTANDER_PORT = 11422
SESSIONS = {"master": ["roscore"], "R1_modules": ["HDAS", "mobiman_chassis|mobiman_joint", "sensors", "monitor"]}

LIVE_SCRIPT = r"""
import sys, time, rospy, rosnode
from sensor_msgs.msg import JointState
rospy.init_node("ota_test_wait", anonymous=True, disable_signals=True)
t0 = time.monotonic()
for topic in ("/hdas/feedback_arm_left", "/hdas/feedback_chassis"):
    rospy.wait_for_message(topic, JointState, timeout=float(sys.argv[1]))
    print(f"{topic}: live after {time.monotonic() - t0:.1f} s", flush=True)
want = {"/chassis_control_node", "/r1_jointTracker_demo_node"}
while not want <= set(rosnode.get_node_names()):
    if time.monotonic() - t0 > float(sys.argv[1]):
        sys.exit(f"not registered: {sorted(want - set(rosnode.get_node_names()))}")
    time.sleep(1)
print("controllers registered", flush=True)
"""


# --- helpers ---------------------------------------------------------------------------------

def _proc_key(pid: int) -> tuple[int, str] | None:
    """(pid, start time): a pid that was reused is another process."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = data[data.rindex(")") + 2:].split()
    if fields[0] in ("Z", "X"):
        return None
    return pid, fields[19]


def _descendants(roots: set[int]) -> set[int]:
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        if line.strip():
            p, pp = map(int, line.split())
            children.setdefault(pp, []).append(p)
    found, todo = set(), list(roots)
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in found:
                found.add(c)
                todo.append(c)
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def _tmux(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["tmux", *args], env=env, capture_output=True, text=True)


def _panes(env: dict) -> dict[str, list[int]]:
    res = _tmux(env, "list-panes", "-a", "-F", "#{session_name} #{pane_pid}")
    panes: dict[str, list[int]] = {}
    for line in res.stdout.splitlines():
        name, pid = line.rsplit(" ", 1)
        panes.setdefault(name, []).append(int(pid))
    return panes


def _screens(env: dict) -> str:
    """What every pane of the boot shows (for failure messages)."""
    text = []
    for session in SESSIONS:
        res = _tmux(env, "list-panes", "-s", "-t", f"={session}", "-F", "#{pane_id} #{window_name}")
        for line in res.stdout.splitlines():
            pane, window = line.split(" ", 1)
            shot = _tmux(env, "capture-pane", "-p", "-t", pane).stdout.rstrip()
            text.append(f"--- {session}:{window} ---\n" + "\n".join(shot.splitlines()[-15:]))
    return "\n".join(text)


def _run(script: Path, env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(script), *args], env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def env(tmp_path: Path):
    """Environment of its own: master port, tmux server (socket under a short TMUX_TMPDIR),
    ROS_HOME; no trace of a boot this test might run inside."""
    tmux_dir = tempfile.mkdtemp(prefix="r1tmux-")   # short: a Unix socket path has 108 bytes
    e = dict(os.environ, ROS_MASTER_URI=f"http://localhost:{PORT}", TMUX_TMPDIR=tmux_dir,
             ROS_HOME=str(tmp_path / "ros"), ROS_HOSTNAME="localhost", R1_SIM_LAUNCH_ARGS="light:=true")
    for k in ("TMUX", "TMUX_PANE", "R1_BOOT_ID", "R1_BOOT_ENV", "R1_SIM", "ROS_IP"):
        e.pop(k, None)
    yield e
    _tmux(e, "kill-server")   # the test's own server only (its own socket)
    shutil.rmtree(tmux_dir, ignore_errors=True)


# --- cheap checks ---------------------------------------------------------------------------

@pytest.mark.parametrize("args", [[], ["start"], ["boot", "--hardware"], ["kill", "now"], ["ota_mcu"]])
def test_anything_but_boot_or_kill_prints_the_usage_and_fails(env: dict, args: list[str]) -> None:
    res = _run(SRC_SCRIPT, env, *args)
    assert res.returncode != 0
    assert "usage" in res.stderr and "boot" in res.stderr and "kill" in res.stderr, res.stderr


def test_kill_with_nothing_running_says_so(env: dict) -> None:
    res = _run(SRC_SCRIPT, env, "kill")
    assert res.returncode == 0, res.stderr
    assert "nothing to stop" in res.stdout


def _path_without(tmp_path: Path, name: str, source: str = "/usr/bin") -> Path:
    """A directory with every command of `source` but `name` (symlinks)."""
    d = tmp_path / f"bin_without_{name}"
    d.mkdir()
    for f in Path(source).iterdir():
        if f.name != name:
            (d / f.name).symlink_to(f)
    return d


def test_boot_fails_loudly_without_tmux(env: dict, tmp_path: Path) -> None:
    env = dict(env, PATH=str(_path_without(tmp_path, "tmux")))
    res = _run(SRC_SCRIPT, env, "boot", "--sim")
    assert res.returncode != 0
    assert "tmux is not installed" in res.stderr, res.stderr


def test_boot_fails_loudly_without_tmuxp(env: dict, tmp_path: Path) -> None:
    venv = Path(os.environ.get("R1_VENV", "/opt/r1_venv"))
    fake = tmp_path / "venv"
    fake_bin = fake / "bin"
    fake_bin.mkdir(parents=True)
    (fake_bin / "activate").write_text(f'export VIRTUAL_ENV="{fake}"; export PATH="{fake_bin}:$PATH"\n')
    for f in (venv / "bin").iterdir():
        if f.name not in ("tmuxp", "activate"):
            (fake_bin / f.name).symlink_to(f)
    env = dict(env, R1_VENV=str(fake), PATH=str(_path_without(tmp_path, "tmuxp")))
    res = _run(SRC_SCRIPT, env, "boot", "--sim")
    assert res.returncode != 0
    assert "tmuxp is not installed" in res.stderr, res.stderr
    assert _tmux(env, "ls").returncode != 0, "a session was created"


@pytest.mark.skipif(Path("/sys/class/net/can0").exists(), reason="this machine has CAN interfaces")
def test_start_hdas_on_the_robot_fails_clearly_without_can_interfaces(env: dict) -> None:
    res = _run(SRC_DIR / "start_hdas.sh", dict(env, R1_SIM="0"), timeout=60)
    assert res.returncode != 0
    assert "no CAN interface can0" in res.stderr, res.stderr


def test_a_missing_sensor_launch_is_reported_not_fatal(env: dict) -> None:
    # A sensor launch file that is not in the build (R1_SENSORS_LAUNCH names one): said, not fatal.
    res = _run(SRC_DIR / "start_sensors.sh", dict(env, R1_SIM="0", R1_SENSORS_LAUNCH="HDAS no_such_sensors.launch"),
               timeout=60)
    assert res.returncode == 0, res.stderr
    assert "no launch/no_such_sensors.launch" in res.stderr and "rest of the stack" in res.stderr


def test_install_tree_is_current() -> None:
    """scripts/setup installs the scripts (catkin_make install) with their execute bits."""
    assert INSTALL_SCRIPT.exists(), f"{INSTALL_SCRIPT} missing: run scripts/setup (catkin_make install)"
    for f in SRC_DIR.rglob("*"):
        if f.is_file() and "__pycache__" not in f.parts:
            g = INSTALL_DIR / f.relative_to(SRC_DIR)
            assert g.exists() and filecmp.cmp(f, g, shallow=False), f"{g} stale: run scripts/setup"
            assert os.access(g, os.X_OK) == os.access(f, os.X_OK), f"{g}: execute bit differs"


# --- the boot -------------------------------------------------------------------------------

def test_boot_sim_from_the_install_tree_then_kill_stops_exactly_what_it_started(env: dict) -> None:
    assert INSTALL_SCRIPT.exists(), f"{INSTALL_SCRIPT} missing: run scripts/setup (catkin_make install)"
    # Bystanders that kill must leave alone (the vendor's stop would SIGTERM that roscore):
    # another master on this machine, another session on the same tmux server.
    bystander = subprocess.Popen(["roscore", "-p", str(BYSTANDER_PORT)], env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
    assert _tmux(env, "new-session", "-d", "-s", "bystander", "sleep 3600").returncode == 0
    started: set[tuple[int, str]] = set()
    try:
        t0 = time.monotonic()
        res = _run(INSTALL_SCRIPT, env, "boot", "--sim")
        assert res.returncode == 0, res.stdout + res.stderr
        assert "install tree" in res.stdout and "simulated robot" in res.stdout, res.stdout
        windows = {s: _tmux(env, "list-windows", "-t", f"={s}", "-F", "#{window_name}").stdout.split("\n")[:-1]
                   for s in SESSIONS}
        assert windows == SESSIONS

        live = subprocess.run(["python", "-c", LIVE_SCRIPT, "300"], env=env, capture_output=True, text=True,
                              timeout=400)
        boot_to_live = time.monotonic() - t0
        assert live.returncode == 0, live.stdout + live.stderr + "\n" + _screens(env)
        print(f"\nboot-to-live: {boot_to_live:.1f} s ({live.stdout.strip()})")

        panes = _panes(env)
        ours = {p for s in SESSIONS for p in panes.get(s, [])}
        pids = ours | _descendants(ours)
        cmds = {p: _cmdline(p) for p in pids}
        assert any("roscore" in c and f"-p {PORT}" in c for c in cmds.values()), cmds
        assert any("roslaunch" in c and "r1_sim.launch" in c for c in cmds.values()), cmds
        assert any("chassis_control_node" in c for c in cmds.values()), cmds
        assert not any(f"{BYSTANDER_PORT}" in c for c in cmds.values())
        started = {k for k in map(_proc_key, pids) if k}

        # while ours run, a second boot refuses (from the source tree: same state, same sessions)
        again = _run(SRC_SCRIPT, env, "boot", "--sim")
        assert again.returncode != 0
        assert "already running" in again.stderr and "ota_script.sh kill" in again.stderr, again.stderr

        t1 = time.monotonic()
        res = _run(INSTALL_SCRIPT, env, "kill", timeout=300)
        kill_time = time.monotonic() - t1
        print(f"kill: {kill_time:.1f} s\n{res.stdout}")
        assert res.returncode == 0, res.stdout + res.stderr
        left = [(pid, cmds.get(pid)) for pid, st in started if _proc_key(pid) == (pid, st)]
        assert left == [], f"left running after kill: {left}"
        for s in SESSIONS:
            assert _tmux(env, "has-session", "-t", f"={s}").returncode != 0, f"session {s} left"
        assert _tmux(env, "has-session", "-t", "=bystander").returncode == 0, "kill closed a foreign session"
        assert bystander.poll() is None, "kill stopped a foreign roscore"
        assert _descendants({bystander.pid}), "kill stopped the foreign roscore's master"

        res = _run(SRC_SCRIPT, env, "kill")
        assert res.returncode == 0 and "nothing to stop" in res.stdout, res.stdout + res.stderr
    finally:
        if any(_tmux(env, "has-session", "-t", f"={s}").returncode == 0 for s in SESSIONS):
            _run(SRC_SCRIPT, env, "kill", timeout=300)
        for pid, st in started:   # whatever a failed kill left
            if _proc_key(pid) == (pid, st):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        os.killpg(bystander.pid, signal.SIGINT)
        try:
            bystander.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(bystander.pid, signal.SIGKILL)
            bystander.wait()
