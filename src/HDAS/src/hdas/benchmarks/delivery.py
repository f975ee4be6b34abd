"""benchmark_delivery: what one ROS message delivery costs on this machine (`rosrun HDAS benchmark_delivery`).

The whole stack's CPU is mostly messages, not arithmetic: at the stock rates HDAS's feedback, the
controllers' commands and the simulator's /clock make tens of thousands of deliveries a second. This
measures one delivery alone: a publisher sends an arm's feedback (`sensor_msgs/JointState`, 7 joints)
at 500 Hz to N subscriber processes (rospy.Subscriber, an empty callback), for HDAS's
`DirectPublisher` and rospy's queued publisher, and reports each side's CPU per message from
/proc. Its own roscore on a free port; nothing else of the stack runs.

`scripts/benchmark_delivery` runs this module's `main`; the publisher and the subscribers are this
module again (`python -m hdas.benchmarks.delivery --role pub|sub`). `summary` and `markdown` make the
tables (no ROS needed).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from r1_common.benchtools import StallProbe, cpu_seconds, free_port, stop_session

RATE_HZ = 500.0
TOPIC = "/benchmark_delivery/feedback"


def publisher(kind: str, subscribers: int, duration: float) -> None:
    """Child process: publish at RATE_HZ once every subscriber is connected; print the message count."""
    import rospy
    from sensor_msgs.msg import JointState

    from r1_common.ros_io import DirectPublisher, QuietPublisher
    rospy.init_node("delivery_pub", disable_signals=True)
    pub = DirectPublisher(TOPIC, JointState) if kind == "direct" else QuietPublisher(TOPIC, JointState,
                                                                                      queue_size=10)
    msg = JointState(name=[f"joint{i}" for i in range(1, 8)], position=[0.1] * 7, velocity=[0.2] * 7,
                     effort=[0.3] * 7)
    deadline = time.monotonic() + 30.0
    while pub.get_num_connections() < subscribers and time.monotonic() < deadline:
        time.sleep(0.05)
    print("READY", flush=True)
    period, sent = 1.0 / RATE_HZ, 0
    due = t0 = time.monotonic()
    while time.monotonic() - t0 < duration:
        msg.header.stamp = rospy.Time.now()
        pub.publish(msg)
        sent += 1
        due += period
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        else:
            due = time.monotonic()
    print(f"SENT {sent} {time.monotonic() - t0}", flush=True)
    time.sleep(1.0)


def subscriber() -> None:
    """Child process: count messages until told to stop (SIGTERM), then print the count."""
    import rospy
    from sensor_msgs.msg import JointState
    rospy.init_node("delivery_sub", anonymous=True, disable_signals=True)
    count = [0]
    rospy.Subscriber(TOPIC, JointState, lambda _m: count.__setitem__(0, count[0] + 1), queue_size=1,
                     tcp_nodelay=True)
    done = []
    signal.signal(signal.SIGTERM, lambda *_: done.append(1))
    while not done:
        time.sleep(0.1)
    print(f"RECEIVED {count[0]}", flush=True)


def summary(kind: str, sent: int, elapsed: float, received: Sequence[int], pub_cpu: float,
            sub_cpu: Sequence[float], wall: float) -> dict[str, Any]:
    """One case's figures: `sent` messages in `elapsed` s, each subscriber's count `received`, the
    publisher's and each subscriber's CPU seconds over `wall` seconds."""
    subscribers = len(received)
    rate = sent / elapsed
    shares = [c / wall for c in sub_cpu]
    mean_sub = sum(shares) / len(shares)
    return {"publisher": kind, "subscribers": subscribers, "rate_hz": round(rate, 1),
            "delivered_share": round(min(received) / sent, 3),
            "publisher_cpu_percent": round(100 * pub_cpu / wall, 2),
            "publisher_us_per_message": round(1e6 * pub_cpu / wall / rate, 1),
            "publisher_us_per_delivery": round(1e6 * pub_cpu / wall / rate / subscribers, 1),
            "subscriber_cpu_percent": round(100 * mean_sub, 2),
            "subscriber_us_per_message": round(1e6 * mean_sub / rate, 1)}


def measure(kind: str, subscribers: int, duration: float, env: Mapping[str, str]) -> dict[str, Any]:
    me = [sys.executable, "-m", "hdas.benchmarks.delivery"]     # this module, as a child process
    subs = [subprocess.Popen(me + ["--role", "sub"], env=env, stdout=subprocess.PIPE, text=True)
            for _ in range(subscribers)]
    pub = subprocess.Popen(me + ["--role", "pub", "--kind", kind, "--subscribers", str(subscribers),
                                 "--duration", str(duration)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        if pub.stdout.readline().strip() != "READY":
            raise RuntimeError("benchmark_delivery: the publisher did not start")
        time.sleep(0.5)                              # past the first messages' connection set-up
        cpu0 = {p.pid: cpu_seconds(p.pid) for p in subs + [pub]}
        t0 = time.monotonic()
        line = pub.stdout.readline().split()
        wall = time.monotonic() - t0
        cpu = {p.pid: cpu_seconds(p.pid) - cpu0[p.pid] for p in subs + [pub]}
        sent, elapsed = int(line[1]), float(line[2])
    finally:
        for p in subs:
            p.send_signal(signal.SIGTERM)
        received = [int(p.communicate(timeout=20)[0].split()[-1]) for p in subs]
        pub.wait(20)
    return summary(kind, sent, elapsed, received, cpu[pub.pid], [cpu[p.pid] for p in subs], wall)


def markdown(results: list[dict], stalled: float, when: str) -> str:
    lines = [f"# One message delivery ({when})", "",
             f"Machine: {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}. "
             f"`rosrun HDAS benchmark_delivery`: `sensor_msgs/JointState` (7 joints) at {RATE_HZ:g} Hz from one "
             "publisher process to N subscriber processes (`rospy.Subscriber`, empty callback), nothing else "
             "running; CPU from /proc over the window. The machine itself stalled "
             f"{100 * stalled:.0f} % of the time.", "",
             "| publisher | subscribers | rate (Hz) | publisher CPU | publisher µs / message | ÷ subscribers "
             "| each subscriber's CPU | subscriber µs / message |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['publisher']} | {r['subscribers']} | {r['rate_hz']} | {r['publisher_cpu_percent']} % | "
                     f"{r['publisher_us_per_message']} | {r['publisher_us_per_delivery']} | "
                     f"{r['subscriber_cpu_percent']} % | {r['subscriber_us_per_message']} |")
    lines += ["", "A subscriber's cost is a thread woken per message (rospy reads each connection on its own "
              "thread), the read and the deserialisation; a publisher's is the write to each subscriber's "
              "socket (with `direct`) or the hand-off to a writer thread per subscriber (`queued`). "
              "`docs/stack.md` multiplies these by the stack's deliveries."]
    return "\n".join(lines) + "\n"


def benchmark(argv: Sequence[str]) -> int:
    """The benchmark with command-line arguments `argv` (also a publisher's or subscriber's role)."""
    p = argparse.ArgumentParser(prog="benchmark_delivery", description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=10.0, help="measuring window per case [s]")
    p.add_argument("--subscribers", type=int, nargs="+", default=[1, 4, 8])
    p.add_argument("--out", default=None, help="output directory (default: <workspace>/docs/benchmarks)")
    p.add_argument("--role", choices=["main", "pub", "sub"], default="main", help=argparse.SUPPRESS)
    p.add_argument("--kind", default="direct", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.role == "pub":
        publisher(args.kind, args.subscribers[0], args.duration)
        return 0
    if args.role == "sub":
        subscriber()
        return 0
    import rospkg
    hdas_share = Path(rospkg.RosPack().get_path("HDAS"))
    out_dir = Path(args.out) if args.out else Path(os.environ.get("R1_WS", hdas_share.parents[1])) / "docs/benchmarks"
    out_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = dict(os.environ, ROS_MASTER_URI=f"http://localhost:{port}")
    core = subprocess.Popen(["roscore", "-p", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    results = []
    probe = StallProbe()
    probe.start()
    t_start = time.monotonic()
    try:
        time.sleep(3.0)
        for kind in ("direct", "queued"):
            for n in args.subscribers:
                r = measure(kind, n, args.duration, env)
                results.append(r)
                print(f"benchmark_delivery: {kind} -> {n}: publisher {r['publisher_us_per_delivery']} µs a delivery, "
                      f"subscriber {r['subscriber_us_per_message']} µs a message", flush=True)
    finally:
        probe.running = False
        stop_session(core)
    stalled = probe.stalled / (time.monotonic() - t_start)
    when = time.strftime("%Y-%m-%d %H:%M:%S")
    (out_dir / "delivery.json").write_text(json.dumps({"when": when, "machine_stalled_share": round(stalled, 3),
                                                       "results": results}, indent=1))
    (out_dir / "delivery.md").write_text(markdown(results, stalled, when))
    print(f"benchmark_delivery: wrote {out_dir / 'delivery.md'}")
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """`rosrun HDAS benchmark_delivery [args]`: run, then exit with the benchmark's status."""
    sys.exit(benchmark(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
