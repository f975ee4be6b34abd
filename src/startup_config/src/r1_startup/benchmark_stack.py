"""benchmark_stack: the whole R1 stack on the simulated robot, measured (`scripts/benchmark stack`).

For each bus profile (stock: the vendor's rates; light: a fifth of them), on a private master:
`roslaunch startup_config r1_stack.launch` (everything `scripts/run` starts), wait until every topic is
live, then for --duration seconds of wall time
1. every topic's rate (wall clock, which the stock check windows are about, and the stack's own clock)
   against the stock self-check window (HDAS/config/check_windows.yaml) or the vendor's rate;
2. the CPU (share of one core) and resident memory of every process of the stack;
3. end-to-end latencies while the left arm takes small pose steps: pose target -> joint target (arm
   pose control) -> first motor command that moves (joint tracker) -> CAN frame (HDAS's own measure of
   the age of the command it sends, from its /diagnostics).
Writes <out>/stack.{json,md,png}. A benchmark: it reports, it does not judge. Each profile runs in a
process of its own (`python -m r1_startup.benchmark_stack --child FILE ...`): rospy joins one master
per process. rospy is imported where a master is needed only, so the report (`markdown`, `plot`) and
the rate windows are usable without ROS.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np
import rospkg
import yaml

from r1_common.benchtools import StallProbe, cpu_seconds, descendants, free_port, process_name, rss_mb, stop_session

GOALS = {"total_cores": 1.5}


def stock_windows() -> Dict[str, Optional[Tuple[float, float]]]:
    """Rate windows [Hz] by topic: HDAS's stock self-check windows, else ±10 % around the vendor's rate,
    else None (no stock rate)."""
    from r1_startup.topics import load_topics
    from r1_startup.wait_stack import default_topics_file
    hdas = Path(rospkg.RosPack().get_path("HDAS"))
    checks = yaml.safe_load((hdas / "config/check_windows.yaml").read_text())["modes"][1]
    out: Dict[str, Optional[Tuple[float, float]]] = {}
    for s in load_topics(default_topics_file()):
        if s.name in checks:
            low, high = checks[s.name]["rate"]
            out[s.name] = (low, high)
        elif s.stock_hz:
            out[s.name] = (0.9 * s.stock_hz, 1.1 * s.stock_hz)
        else:
            out[s.name] = None
    return out


LAUNCH_ARGS: list[str] = []


def launch_stack(profile: str, port: int, log_path: Path) -> subprocess.Popen:
    """`roslaunch startup_config r1_stack.launch` for `profile` on a master of its own at `port`, its output
    to `log_path`, in a session of its own (`stop` ends it); points this process's ROS_MASTER_URI at it."""
    env = dict(os.environ, ROS_MASTER_URI=f"http://localhost:{port}")
    os.environ["ROS_MASTER_URI"] = env["ROS_MASTER_URI"]
    return subprocess.Popen(["roslaunch", "-p", str(port), "startup_config", "r1_stack.launch",
                             f"light:={'true' if profile == 'light' else 'false'}",
                             f"sim_namespace:=bench{os.getpid()}{profile}", *LAUNCH_ARGS],
                            env=env, stdout=open(log_path, "w"), stderr=subprocess.STDOUT, start_new_session=True)


def stop(launch: subprocess.Popen) -> None:
    """SIGINT to the launch's session, SIGKILL after 60 s."""
    stop_session(launch, 60.0)


class Counters:
    """Message arrivals per topic on the wall clock and the ROS clock."""

    def __init__(self, topics):
        import rospy
        self.rospy = rospy
        self.lock = threading.Lock()
        self.counting = False
        self.n = {t: 0 for t in topics}
        self.subs = [rospy.Subscriber(t, rospy.AnyMsg, self._cb, t, queue_size=100) for t in topics]

    def _cb(self, _msg, topic):
        if self.counting:
            with self.lock:
                self.n[topic] += 1

    def start(self):
        with self.lock:
            self.n = {t: 0 for t in self.n}
        self.t_wall, self.t_ros = time.monotonic(), self.rospy.get_time()
        self.counting = True

    def stop(self):
        self.counting = False
        wall, ros = time.monotonic() - self.t_wall, self.rospy.get_time() - self.t_ros
        with self.lock:
            return {t: {"messages": c, "hz_wall": c / wall, "hz_ros": c / ros if ros > 0 else None}
                    for t, c in self.n.items()}, wall, ros


class LatencyRounds(threading.Thread):
    """Small pose steps of the left gripper; the time each stage takes to pass the step on (wall clock)."""

    def __init__(self, rounds: int):
        super().__init__(daemon=True)
        import rospy
        from geometry_msgs.msg import PoseStamped
        from hdas_msg.msg import motor_control
        from sensor_msgs.msg import JointState
        self.rospy, self.PoseStamped = rospy, PoseStamped
        self.rounds, self.running = rounds, True
        self.lock = threading.Lock()
        self.joint_targets: list[float] = []
        self.commands: list[tuple[float, bool]] = []
        self.ee = None
        self.results: Dict[str, List[float]] = {"pose_to_joint_target": [], "joint_target_to_command": [],
                                                "pose_to_command": []}      # [s] per round
        self.pose_pub = rospy.Publisher("/motion_target/target_pose_arm_left", PoseStamped, queue_size=1,
                                        tcp_nodelay=True)
        rospy.Subscriber("/motion_target/target_joint_state_arm_left", JointState,
                         lambda m: self._stamp(self.joint_targets, time.monotonic()), queue_size=100, tcp_nodelay=True)
        rospy.Subscriber("/motion_control/control_arm_left", motor_control, self._on_cmd, queue_size=1000,
                         tcp_nodelay=True)
        rospy.Subscriber("/motion_control/pose_ee_arm_left", PoseStamped, self._on_ee, queue_size=1)

    def _stamp(self, lst, t):
        with self.lock:
            lst.append(t)

    def _on_cmd(self, m):
        moving = any(abs(v) > 1e-9 for v in m.v_des[:6])
        with self.lock:
            self.commands.append((time.monotonic(), moving))

    def _on_ee(self, m):
        self.ee = m

    def _at_rest(self, seconds: float) -> bool:
        now = time.monotonic()
        with self.lock:
            recent = [mv for t, mv in self.commands if t > now - seconds]
        return bool(recent) and not any(recent)

    def run(self):
        time.sleep(2.0)
        for k in range(self.rounds):
            if not self.running or self.ee is None:
                break
            deadline = time.monotonic() + 10
            while not self._at_rest(0.3) and time.monotonic() < deadline and self.running:
                time.sleep(0.05)
            m = self.PoseStamped()
            m.header.frame_id = "torso_link4"
            m.pose = self.ee.pose
            m.pose.position.z += 0.01 if k % 2 == 0 else -0.01
            with self.lock:
                self.joint_targets.clear()
                self.commands.clear()
            m.header.stamp = self.rospy.Time.now()
            sent = time.monotonic()
            self.pose_pub.publish(m)
            t_joint = t_cmd = None
            while time.monotonic() - sent < 5.0 and t_cmd is None:
                with self.lock:
                    if t_joint is None and self.joint_targets:
                        t_joint = self.joint_targets[0]
                    if t_joint is not None:
                        t_cmd = next((t for t, mv in self.commands if mv and t >= t_joint), None)
                time.sleep(0.0005)
            if t_joint is not None:
                self.results["pose_to_joint_target"].append(t_joint - sent)
            if t_cmd is not None:
                self.results["joint_target_to_command"].append(t_cmd - t_joint)
                self.results["pose_to_command"].append(t_cmd - sent)
            time.sleep(0.6)   # the IK stream goes stale (0.5 s) and the arm comes to rest

    @staticmethod
    def summary(samples: list[float]) -> dict:
        ms = np.array(samples) * 1e3
        return {"n": len(ms), "median_ms": round(float(np.median(ms)), 2) if len(ms) else None,
                "p99_ms": round(float(np.percentile(ms, 99)), 2) if len(ms) else None}


def measure(profile: str, duration: float, rounds: int, out_dir: Path) -> dict:
    """Launch the stack for `profile`, wait until its topics are live, measure for `duration` s of wall
    time while `rounds` pose steps run; the JSON-ready result of the profile."""
    import rospy
    from diagnostic_msgs.msg import DiagnosticArray

    from r1_startup.topics import TopicWatcher, load_topics
    from r1_startup.wait_stack import default_topics_file

    port = free_port()
    log_path = out_dir / f"stack_{profile}_launch.log"
    launch = launch_stack(profile, port, log_path)
    try:
        rospy.init_node("stack_benchmark", anonymous=True, disable_signals=True)
        specs = load_topics(default_topics_file())
        t0 = time.monotonic()
        watcher = TopicWatcher(specs)
        problems = watcher.wait(900)
        watcher.close()     # rospy types a topic by its first subscriber in a process: typed ones come next
        up_s = time.monotonic() - t0
        if problems:
            print(f"benchmark_stack: {profile}: {len(problems)} topics not live after {up_s:.0f} s: {problems[:3]}")
        time.sleep(5.0)
        hdas_latency: dict[str, dict] = {}
        sim_rtf: list[float] = []

        def on_diag(msg):
            for s in msg.status:
                v = {kv.key: kv.value for kv in s.values}
                if s.name.startswith("HDAS: bus"):
                    hdas_latency[s.name[len("HDAS: bus "):]] = v
                if s.name.startswith("r1_sim:"):
                    for k, val in v.items():
                        if "real_time" in k:
                            try:
                                sim_rtf.append(float(val))
                            except ValueError:
                                pass
        rospy.Subscriber("/diagnostics", DiagnosticArray, on_diag, queue_size=50)
        lat = LatencyRounds(rounds)                                   # typed subscribers first,
        counters = Counters([s.name for s in specs if s.kind == "stream"])   # then the counting ones
        pids = [p for p in descendants(launch.pid)]
        names = {p: process_name(p) for p in pids}
        cpu0 = {p: cpu_seconds(p) for p in pids if Path(f"/proc/{p}").exists()}
        probe = StallProbe()
        probe.start()
        counters.start()
        lat.start()
        time.sleep(duration)
        rates, wall, ros = counters.stop()
        lat.running = False
        probe.running = False
        procs: Dict[str, Dict[str, float]] = {}
        for p, c0 in cpu0.items():
            if Path(f"/proc/{p}").exists():
                procs[names[p]] = {"cpu_percent": round(100 * (cpu_seconds(p) - c0) / wall, 1),
                                   "rss_mb": round(rss_mb(p), 1)}
        windows = stock_windows()
        topics = {}
        for t, r in rates.items():
            w = windows.get(t)
            topics[t] = {"hz_wall": round(r["hz_wall"], 2),
                         "hz_ros": round(r["hz_ros"], 2) if r["hz_ros"] is not None else None,
                         "stock_window": list(w) if w else None,
                         "in_window": (w[0] <= r["hz_wall"] <= w[1]) if w else None}
        lat.join(10)
        bus_lat = {b: {k: v.get(k) for k in ("rate_hz", "latency_ms_median", "latency_ms_p99", "load_percent")}
                   for b, v in hdas_latency.items()}
        return {"profile": profile, "up_after_s": round(up_s, 1), "topics_not_live": problems,
                "window_wall_s": round(wall, 1), "window_ros_s": round(ros, 1),
                "ros_clock_share": round(ros / wall, 3),
                "sim_real_time_factor": round(float(np.median(sim_rtf)), 3) if sim_rtf else None,
                "machine_stalled_share": round(probe.stalled / wall, 3),
                "machine_worst_stall_ms": round(probe.worst * 1e3),
                "topics": topics, "processes": dict(sorted(procs.items(), key=lambda kv: -kv[1]["cpu_percent"])),
                "total_cores": round(sum(p["cpu_percent"] for p in procs.values()) / 100, 2),
                "total_rss_mb": round(sum(p["rss_mb"] for p in procs.values())),
                "latency": {k: LatencyRounds.summary(v) for k, v in lat.results.items()},
                "hdas_command_age": bus_lat}
    finally:
        stop(launch)
        log_path.unlink(missing_ok=True)


def markdown(results: list[dict], when: str) -> str:
    """The profiles' results as the Markdown page docs/benchmarks/stack.md."""
    lines = [f"# The whole stack on the simulated R1 ({when})", "",
             f"Machine: {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}. "
             "`scripts/benchmark stack` runs `roslaunch startup_config r1_stack.launch` (what `scripts/run` "
             "starts, sensors included) and measures it over a wall-clock window while the left arm takes "
             "1 cm pose steps. Rates are per second of wall time (what the stock windows are about); the "
             "stack's own clock is simulated time, which slows down with a machine that cannot keep up.", ""]
    lines += ["| profile | up after | stack clock / wall | machine stalled | total CPU (cores) | goal | memory |",
              "|---|---:|---:|---:|---:|---|---:|"]
    for r in results:
        lines.append(f"| {r['profile']} | {r['up_after_s']} s | {100 * r['ros_clock_share']:.0f} % | "
                     f"{100 * r['machine_stalled_share']:.0f} % (worst {r['machine_worst_stall_ms']} ms) | "
                     f"{r['total_cores']} | < {GOALS['total_cores']} | {r['total_rss_mb']} MiB |")
    lines += ["", "## Topic rates (Hz, wall clock)", "",
              "| topic | stock window | " + " | ".join(f"{r['profile']}" for r in results) + " |",
              "|---|---|" + "---:|" * len(results)]
    for t in results[0]["topics"]:
        w = results[0]["topics"][t]["stock_window"]
        cells = []
        for r in results:
            d = r["topics"].get(t, {})
            mark = "" if d.get("in_window") in (True, None) else " **out**"
            cells.append(f"{d.get('hz_wall', 0):.1f}{mark}")
        lines.append(f"| `{t}` | {f'{w[0]:g}–{w[1]:g}' if w else '—'} | " + " | ".join(cells) + " |")
    lines += ["", "The light profile runs the buses at a fifth of the stock rates by design "
              "(`r1_buses_sim_light.yaml`), so its HDAS topics sit below the stock windows by design. The "
              "simulated cameras run at a few Hz by default (`r1_sim/config/sensors.yaml`: rendering at the "
              "vendor's 15 Hz and sizes would take tens of cores, `docs/sensors.md`), so they sit below the "
              "vendor drivers' rates by design too.", "",
              "## Latency, pose target to motor command (ms, wall clock; median / p99)", "",
              "| stage | " + " | ".join(r["profile"] for r in results) + " |", "|---|" + "---:|" * len(results)]
    stages = [("pose_to_joint_target", "pose target → joint target (arm pose control)"),
              ("joint_target_to_command", "joint target → first moving motor command (joint tracker)"),
              ("pose_to_command", "pose target → motor command")]
    for key, label in stages:
        cells = [f"{r['latency'][key]['median_ms']} / {r['latency'][key]['p99_ms']} (n={r['latency'][key]['n']})"
                 for r in results]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    cells = []
    for r in results:
        b = r["hdas_command_age"].get("left_arm", {})
        cells.append(f"{b.get('latency_ms_median')} / {b.get('latency_ms_p99')}")
    lines.append("| motor command → CAN frame (HDAS: age of the command when its frame is sent) | "
                 + " | ".join(cells) + " |")
    lines += ["", "## Processes (CPU % of one core, resident memory MiB)", "",
              "| process | " + " | ".join(r["profile"] for r in results) + " |", "|---|" + "---:|" * len(results)]
    names = list(dict.fromkeys(n for r in results for n in r["processes"]))
    for n in names:
        cells = [f"{r['processes'][n]['cpu_percent']} % / {r['processes'][n]['rss_mb']}" if n in r["processes"]
                 else "—" for r in results]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(results: list[dict], path: Path) -> None:
    """Topic rates against their stock windows and the processes' CPU, per profile, as a PNG at `path`."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(15, 7))
    topics = [t for t in results[0]["topics"] if results[0]["topics"][t]["stock_window"]]
    y = np.arange(len(topics))
    h = 0.8 / len(results)
    for i, r in enumerate(results):
        ratio = [r["topics"][t]["hz_wall"] / np.mean(r["topics"][t]["stock_window"]) for t in topics]
        ax1.barh(y + i * h, ratio, h, label=r["profile"])
    ax1.axvspan(0.9, 1.1, color="g", alpha=0.15, label="stock window (about)")
    ax1.set_yticks(y + h / 2, [t.replace("/hdas/", "").replace("/motion_control/", "mc/") for t in topics], fontsize=7)
    ax1.set_xlabel("rate / stock rate (wall clock)")
    ax1.set_title("topic rates")
    ax1.legend(fontsize=8)
    names = list(dict.fromkeys(n for r in results for n in r["processes"]))[:14]
    y = np.arange(len(names))
    for i, r in enumerate(results):
        ax2.barh(y + i * h, [r["processes"].get(n, {}).get("cpu_percent", 0) for n in names], h,
                 label=f"{r['profile']}: {r['total_cores']} cores")
    ax2.set_yticks(y + h / 2, names, fontsize=7)
    ax2.set_xlabel("CPU % of one core")
    ax2.set_title("processes")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def main(argv: Optional[List[str]] = None) -> int:
    """`benchmark_stack [--duration S] [--profiles stock light] [--rounds N] [--out DIR] [--launch-arg A:=V]`:
    each profile in a child process, then <out>/stack.{json,md,png}. Exit status 0 (a child that fails
    raises subprocess.CalledProcessError)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=60.0, help="measuring window per profile [s]")
    ap.add_argument("--profiles", nargs="+", default=["stock", "light"], choices=["stock", "light"])
    ap.add_argument("--rounds", type=int, default=20, help="pose steps for the latency")
    ap.add_argument("--out", default=None, help="output directory (default: <workspace>/docs/benchmarks)")
    ap.add_argument("--launch-arg", action="append", default=[], metavar="NAME:=VALUE",
                    help="extra r1_stack.launch argument (repeatable), e.g. use_sim_time:=false")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)   # one profile, results to this file
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    LAUNCH_ARGS[:] = args.launch_arg
    share = Path(rospkg.RosPack().get_path("startup_config"))
    out_dir = Path(args.out) if args.out else Path(os.environ.get("R1_WS", share.parents[1])) / "docs/benchmarks"
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.child:      # rospy joins one master per process: each profile runs in a process of its own
        Path(args.child).write_text(json.dumps(measure(args.profiles[0], args.duration, args.rounds, out_dir)))
        return 0
    when = time.strftime("%Y-%m-%d %H:%M:%S")
    results = []
    for profile in args.profiles:
        print(f"benchmark_stack: {profile} profile, {args.duration:g} s ...", flush=True)
        child = out_dir / f".stack_{profile}.json"
        subprocess.run([sys.executable, "-m", "r1_startup.benchmark_stack", "--profiles", profile,
                        "--duration", str(args.duration), "--rounds", str(args.rounds), "--out", str(out_dir),
                        "--child", str(child),
                        *[f"--launch-arg={a}" for a in args.launch_arg]], check=True)
        results.append(json.loads(child.read_text()))
        child.unlink()
    (out_dir / "stack.json").write_text(json.dumps({"when": when, "goals": GOALS, "results": results}, indent=1))
    text = markdown(results, when)
    (out_dir / "stack.md").write_text(text)
    plot(results, out_dir / "stack.png")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
