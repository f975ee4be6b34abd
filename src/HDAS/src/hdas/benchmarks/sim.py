"""benchmark_sim: HDAS against the simulated R1, measured (`rosrun HDAS benchmark_sim`).

Starts `roslaunch HDAS r1_sim.launch` on a private master, lets it settle, then for
--duration seconds records each /hdas topic's achieved rate against the stock check
window, the CPU use of the HDAS and r1_sim processes, frames/s per bus (from HDAS's
/diagnostics) and how much of the time the machine itself stalled (a sleeping probe
thread that notes oversleeps: on a shared VM this is what pulls rates down). Ends with
the stock self-check (`check_node --mode 1`, rates judged) and writes
<out>/hdas_sim.json, hdas_sim.md (tables) and hdas_sim.png (rates against windows).
A benchmark, not a test: it reports, and exits 0 unless the stack did not come up.

`scripts/benchmark_sim` runs this module's `main`; the tables are built by `rate_table`, `bus_table`
and `markdown` (no ROS needed).
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
import xmlrpc.client
from pathlib import Path
from typing import Any, Mapping, Sequence

import rospkg
import yaml

from r1_common.benchtools import StallProbe, cpu_seconds, free_port, stop_session

TOPIC_TYPES = {
    "sensor_msgs/JointState": ("sensor_msgs.msg", "JointState"),
    "sensor_msgs/Imu": ("sensor_msgs.msg", "Imu"),
    "hdas_msg/feedback_status": ("hdas_msg.msg", "feedback_status"),
    "hdas_msg/bms": ("hdas_msg.msg", "bms"),
    "hdas_msg/controller_signal_stamped": ("hdas_msg.msg", "controller_signal_stamped"),
}
EXTRA_TOPICS = {   # published by HDAS but not in the stock check windows
    "/hdas/feedback_gripper_left": ("sensor_msgs/JointState", (450, 550)),
    "/hdas/feedback_gripper_right": ("sensor_msgs/JointState", (450, 550)),
    "/hdas/imu_torso": ("sensor_msgs/Imu", (50, 150)),
    "/controller": ("hdas_msg/controller_signal_stamped", (25, 75)),
}


def numeric(text: str) -> bool:
    """A diagnostic value that reads as a number (latency keys read `n/a` when nothing was measured)."""
    try:
        float(text)
        return True
    except ValueError:
        return False


def rate_table(topics: Mapping[str, tuple[str, tuple[float, float]]], counts0: Mapping[str, int],
               counts1: Mapping[str, int], elapsed: float) -> dict[str, dict[str, Any]]:
    """Per topic: its rate over `elapsed` seconds from two message counts, its window, whether within."""
    rates = {}
    for topic, (_, window) in topics.items():
        hz = (counts1[topic] - counts0[topic]) / elapsed
        rates[topic] = {"hz": round(hz, 2), "window": list(window), "in_window": window[0] <= hz <= window[1]}
    return rates


def bus_table(buses: Mapping[str, list[dict[str, float]]]) -> dict[str, dict[str, Any]]:
    """Per bus, the mean of its /diagnostics samples (HDAS's numeric keys) over the window."""
    table = {}
    for name, samples in sorted(buses.items()):
        if not samples:
            continue
        keys = set().union(*samples)
        mean = {k: sum(s[k] for s in samples if k in s) / sum(k in s for s in samples) for k in keys}
        table[name] = {"cycle_hz": round(mean["cycle_hz"], 1), "target_hz": mean["target_hz"],
                       "frames_sent_per_s": round(mean["frames_sent_per_s"]),
                       "frames_received_per_s": round(mean["frames_received_per_s"]),
                       "load_percent": round(mean["load_percent"], 1),
                       "errors": int(samples[-1]["send_errors"] + samples[-1]["handler_errors"])}
    return table


def benchmark(argv: Sequence[str]) -> int:
    """The benchmark with command-line arguments `argv`; returns the exit status."""
    p = argparse.ArgumentParser(prog="benchmark_sim", description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=30.0, help="measuring window [s] (default %(default)g)")
    p.add_argument("--settle", type=float, default=5.0, help="time after start-up before measuring [s]")
    p.add_argument("--out", default=None, help="output directory (default: <workspace>/docs/benchmarks)")
    args = p.parse_args(argv)
    hdas_share = Path(rospkg.RosPack().get_path("HDAS"))
    out_dir = Path(args.out) if args.out else Path(os.environ.get("R1_WS", hdas_share.parents[1])) / "docs/benchmarks"
    out_dir.mkdir(parents=True, exist_ok=True)
    windows = yaml.safe_load((hdas_share / "config/check_windows.yaml").read_text())["modes"][1]
    topics = {t: (w["type"], tuple(w["rate"])) for t, w in windows.items()}
    topics.update(EXTRA_TOPICS)

    port = free_port()
    env = dict(os.environ, ROS_MASTER_URI=f"http://localhost:{port}")
    os.environ["ROS_MASTER_URI"] = env["ROS_MASTER_URI"]
    log_path = out_dir / "hdas_sim_launch.log"
    log = open(log_path, "w")
    launch = subprocess.Popen(["roslaunch", "-p", str(port), "HDAS", "r1_sim.launch",
                               f"sim_namespace:=benchmark{os.getpid()}"],
                              env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        return run(args, topics, launch, out_dir, env)
    finally:
        stop_session(launch)
        log.close()
        log_path.unlink(missing_ok=True)


def run(args, topics, launch, out_dir: Path, env) -> int:
    import importlib

    import rosgraph
    import rospy
    from diagnostic_msgs.msg import DiagnosticArray

    rospy.init_node("hdas_benchmark", anonymous=True, disable_signals=True)
    deadline = time.monotonic() + 90
    while True:
        try:
            rospy.wait_for_message("/hdas/feedback_arm_left", importlib.import_module("sensor_msgs.msg").JointState, 2)
            break
        except rospy.ROSException:
            if launch.poll() is not None or time.monotonic() > deadline:
                print("benchmark_sim: the simulated robot did not come up", file=sys.stderr)
                return 1
    time.sleep(args.settle)

    pids = {}
    master = rosgraph.Master(rospy.get_name())
    for node in ("/HDAS", "/r1_sim"):
        pids[node] = xmlrpc.client.ServerProxy(master.lookupNode(node)).getPid(rospy.get_name())[2]

    counts = {t: 0 for t in topics}
    lock = threading.Lock()

    def counter(topic):
        def cb(_msg):
            with lock:
                counts[topic] += 1
        return cb
    subs = []
    for topic, (type_name, _) in topics.items():
        module, cls = TOPIC_TYPES[type_name]
        subs.append(rospy.Subscriber(topic, getattr(importlib.import_module(module), cls), counter(topic),
                                     tcp_nodelay=True))
    buses: dict[str, list[dict[str, float]]] = {}

    def on_diagnostics(msg):
        for st in msg.status:
            if st.name.startswith("HDAS: bus "):
                buses.setdefault(st.name[len("HDAS: bus "):], []).append(
                    {kv.key: float(kv.value) for kv in st.values if numeric(kv.value)})
    subs.append(rospy.Subscriber("/diagnostics", DiagnosticArray, on_diagnostics))
    time.sleep(1.0)   # connections up

    probe = StallProbe()
    probe.start()
    cpu0 = {n: cpu_seconds(pid) for n, pid in pids.items()}
    with lock:
        counts0 = dict(counts)
    for b in buses.values():
        b.clear()
    t0 = time.monotonic()
    time.sleep(args.duration)
    elapsed = time.monotonic() - t0
    with lock:
        counts1 = dict(counts)
    cpu1 = {n: cpu_seconds(pid) for n, pid in pids.items()}
    probe.running = False
    for s in subs:
        s.unregister()

    rates = rate_table(topics, counts0, counts1, elapsed)
    cpu = {n.strip("/"): round(100 * (cpu1[n] - cpu0[n]) / elapsed, 1) for n in pids}

    check = subprocess.run(["rosrun", "HDAS", "check_node", "--mode", "1", "--duration", "5"],
                           env=env, capture_output=True, text=True, timeout=60)
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "stalled_fraction": round(probe.stalled / elapsed, 3), "worst_stall_ms": round(1e3 * probe.worst)},
        "duration_s": round(elapsed, 1),
        "rates": rates,
        "cpu_percent": cpu,
        "buses": bus_table(buses),
        "check_node_mode_1": {"passed": check.returncode == 0, "table": check.stdout},
    }
    (out_dir / "hdas_sim.json").write_text(json.dumps(result, indent=2) + "\n")
    (out_dir / "hdas_sim.md").write_text(markdown(result))
    plot(result, out_dir / "hdas_sim.png")
    print(markdown(result))
    return 0


def markdown(r) -> str:
    m = r["machine"]
    lines = [f"# HDAS on the simulated R1 ({r['date']}, {r['duration_s']} s)", "",
             f"Machine: {m['cpus']} CPUs, {m['platform']}, Python {m['python']}. The machine itself stalled "
             f"{100 * m['stalled_fraction']:.0f} % of the window (worst {m['worst_stall_ms']} ms): on a shared VM "
             "that share of time is lost to every process and pulls every rate down with it.", "",
             "| topic | Hz | stock window | in window |", "|---|---:|---|---|"]
    for t, x in r["rates"].items():
        lines.append(f"| `{t}` | {x['hz']:.1f} | {x['window'][0]:g}–{x['window'][1]:g} | "
                     f"{'yes' if x['in_window'] else '**no**'} |")
    lines += ["", "| process | CPU % (of one core) |", "|---|---:|"]
    lines += [f"| {n} | {c:.0f} |" for n, c in r["cpu_percent"].items()]
    lines += ["", "| bus | cycle Hz (target) | frames/s sent | frames/s received | load % | errors |",
              "|---|---:|---:|---:|---:|---:|"]
    for n, b in r["buses"].items():
        lines.append(f"| {n} | {b['cycle_hz']:.0f} ({b['target_hz']:g}) | {b['frames_sent_per_s']} | "
                     f"{b['frames_received_per_s']} | {b['load_percent']:.0f} | {b['errors']} |")
    passed = r["check_node_mode_1"]["passed"]
    lines += ["", f"`check_node --mode 1` (stock windows, rates judged): **{'PASS' if passed else 'FAIL'}**", "",
              "```", r["check_node_mode_1"]["table"].rstrip(), "```", ""]
    return "\n".join(lines)


def plot(r, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(r["rates"])
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(names) + 1.5))
    for i, t in enumerate(names):
        x = r["rates"][t]
        lo, hi = x["window"]
        ax.plot([lo, hi], [i, i], color="tab:green", linewidth=8, alpha=0.35, solid_capstyle="butt")
        ax.plot([x["hz"]], [i], "o", color="tab:blue" if x["in_window"] else "tab:red")
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("achieved rate [Hz] (dot) against the stock window (bar)")
    ax.set_title(f"HDAS on the simulated R1, {r['duration_s']} s, machine stalled "
                 f"{100 * r['machine']['stalled_fraction']:.0f} %")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> None:
    """`rosrun HDAS benchmark_sim [args]`: run, then exit with the benchmark's status."""
    sys.exit(benchmark(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
