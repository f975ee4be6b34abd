"""benchmark_simulator: the simulator's physics on MuJoCo, measured (`scripts/benchmark simulator`).

One run measures (the hand-written physics MuJoCo replaced was measured beside it in one run before it
was removed: docs/benchmarks/simulator_side_by_side.{json,md}, the same tables):
1. the cost of one `SimRobot.step` (ROS-free, this process: the robot of r1.yaml and sim.yaml at its
   start pose, motors disabled), in the empty world and the room;
2. the simulator with the driver alone (`roslaunch HDAS r1_sim.launch`, the empty world, no controllers
   and no sensors; a child process per profile): the simulator's CPU while simulated time keeps up with
   the wall clock, the cleanest figure of its own cost at a bus profile (in the whole stack on 2 cores
   simulated time slows down while the driver, on the wall clock, sends as many frames per wall second:
   the simulator's work per simulated second grows with the lag);
3. the whole stack (`r1_startup.benchmark_stack`, a child process per run) at the stock and the light
   bus profile: the simulator's CPU (share of one core, and per second of simulated time), the sensors'
   CPU, the whole stack's, the stack's clock against the wall clock, and the driver's feedback rates.
Writes <out>/simulator.{json,md}. The sensors' cost per frame, old renderer against MuJoCo's, is
measured by `scripts/benchmark sensors` (docs/benchmarks/sensors_sim.md). A benchmark: it reports, it
does not judge.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np
import rospkg
import yaml

PHYSICS = "mujoco"
SIDE_BY_SIDE = "simulator_side_by_side.md"     # the run that measured the replaced physics beside MuJoCo
FEEDBACK = ("/hdas/feedback_arm_left", "/hdas/feedback_torso", "/hdas/feedback_chassis", "/hdas/imu_torso")


def step_cost(scene: str, steps: int = 3000) -> Dict[str, float]:
    """Wall time of one SimRobot.step [µs] (median and 90th percentile over `steps`, after 300 to settle)."""
    from r1_can.config import parse_config
    from r1_sim.robot import SimRobot
    rp = rospkg.RosPack()
    params: dict = {}
    for pkg, rel in (("r1_can", "config/r1.yaml"), ("r1_can", "config/r1_buses_sim.yaml"),
                     ("r1_sim", "config/sim.yaml")):
        params.update(yaml.safe_load((Path(rp.get_path(pkg)) / rel).read_text()))
    params.update(scene=scene)
    urdf = (Path(rp.get_path("r1_description")) / "urdf/r1_v2_1_0.urdf").read_text()
    robot = SimRobot(parse_config(params), urdf, params, now=0.0)
    dt = 1e-3
    for _ in range(300):
        robot.step(dt)
    times = np.empty(steps)
    for k in range(steps):
        t0 = time.perf_counter()
        robot.step(dt)
        times[k] = time.perf_counter() - t0
    return {"median_us": round(float(np.median(times)) * 1e6, 1),
            "p90_us": round(float(np.percentile(times, 90)) * 1e6, 1)}


def driver_only(profile: str, duration: float, log_path: Path) -> dict:
    """The simulator's CPU with HDAS alone at `profile`'s bus rates (this process's ROS node: run it in a
    child). Share of one core over `duration` s of wall time, simulated / wall time (from /clock), and
    the CPU per second of simulated time."""
    import rospy
    from rosgraph_msgs.msg import Clock

    from r1_common.benchtools import cpu_seconds, descendants, free_port, process_name, stop_session
    port = free_port()
    env = dict(os.environ, ROS_MASTER_URI=f"http://localhost:{port}")
    os.environ["ROS_MASTER_URI"] = env["ROS_MASTER_URI"]
    launch = subprocess.Popen(["roslaunch", "-p", str(port), "HDAS", "r1_sim.launch", "scene:=empty",
                               f"light:={'true' if profile == 'light' else 'false'}",
                               f"sim_namespace:=benchdrv{os.getpid()}{profile}"],
                              env=env, stdout=open(log_path, "w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        rospy.init_node("simulator_benchmark", anonymous=True, disable_signals=True)
        latest: list = []
        rospy.Subscriber("/clock", Clock, lambda m: latest.append(m.clock.to_sec()), queue_size=1)
        deadline = time.monotonic() + 300.0
        while not latest and time.monotonic() < deadline:
            time.sleep(0.1)
        if not latest:
            raise RuntimeError(f"no /clock within 300 s (log: {log_path})")
        time.sleep(10.0)                                   # HDAS enabled, the buses at their rates
        sim = [p for p in descendants(launch.pid) if process_name(p) == "r1_sim"]
        if not sim:
            raise RuntimeError(f"no r1_sim process (log: {log_path})")
        c0, s0, w0 = cpu_seconds(sim[0]), latest[-1], time.monotonic()
        time.sleep(duration)
        c1, s1, w1 = cpu_seconds(sim[0]), latest[-1], time.monotonic()
    finally:
        stop_session(launch, 60.0)
    log_path.unlink(missing_ok=True)                       # kept when the run failed (the errors name it)
    cpu = 100.0 * (c1 - c0) / (w1 - w0)
    ratio = (s1 - s0) / (w1 - w0)
    return {"physics": PHYSICS, "profile": profile, "r1_sim_cpu_percent": round(cpu, 1),
            "sim_real_time_factor": round(ratio, 3),
            "r1_sim_cpu_per_sim_second_percent": round(cpu / ratio, 1) if ratio > 0 else None}


def driver_only_run(profile: str, duration: float, out_dir: Path) -> dict:
    """`driver_only` in a child process (one ROS node per process)."""
    child = out_dir / f".simulator_driver_{profile}.json"
    subprocess.run([sys.executable, "-m", "r1_startup.benchmark_simulator", "--driver-only-child", profile,
                    str(child), "--duration", str(duration), "--out", str(out_dir)], check=True)
    result = json.loads(child.read_text())
    child.unlink()
    return result


def stack_run(profile: str, duration: float, out_dir: Path) -> dict:
    """benchmark_stack's result for one bus profile (a child process: one master per process)."""
    child = out_dir / f".simulator_{profile}.json"
    subprocess.run([sys.executable, "-m", "r1_startup.benchmark_stack", "--profiles", profile,
                    "--duration", str(duration), "--rounds", "3", "--out", str(out_dir), "--child", str(child)],
                   check=True)
    result = json.loads(child.read_text())
    child.unlink()
    return result


def summary(physics: str, result: dict) -> dict:
    """What the side-by-side table shows of one stack run."""
    procs = result["processes"]
    # simulated time / wall time as the simulator itself reports it (its /diagnostics): the benchmark's
    # own ROS clock share reads 1.0 when its node starts before /use_sim_time is set
    share = result["sim_real_time_factor"] or result["ros_clock_share"] or float("nan")
    sim = procs.get("r1_sim", {}).get("cpu_percent")
    sensors = procs.get("r1_sim_sensors", {}).get("cpu_percent")
    return {"physics": physics, "profile": result["profile"],
            "r1_sim_cpu_percent": sim,
            "r1_sim_cpu_per_sim_second_percent": round(sim / share, 1) if sim is not None and share > 0 else None,
            "sensors_cpu_percent": sensors,
            "total_cores": result["total_cores"], "sim_real_time_factor": share,
            "topics_not_live": len(result["topics_not_live"]),
            "machine_stalled_share": result["machine_stalled_share"],
            "feedback_hz": {t: result["topics"].get(t, {}).get("hz_wall") for t in FEEDBACK}}


def markdown(report: dict) -> str:
    """docs/benchmarks/simulator.md."""
    lines = [f"# The simulator on MuJoCo ({report['when']})", "",
             f"Machine: {report['machine']}. `scripts/benchmark simulator` (`r1_startup.benchmark_simulator`): "
             "one `SimRobot.step` in this process, the simulator with the driver alone, then the whole stack "
             "(`r1_stack.launch`, sensors included, "
             "the room) for each bus profile, measured as `scripts/benchmark stack` "
             "measures it. CPU is the share of one core; per simulated second it is divided by simulated "
             "time / wall time (on a machine that cannot keep up, simulated time slows down, and so does the "
             "work of every node). Topics not live: of the stack's topics, those that had not published "
             "when the measurement started. The hand-written physics MuJoCo replaced, measured beside it in "
             f"one run before its removal: `{SIDE_BY_SIDE}`.", "",
             "## One physics step (`SimRobot.step`, 1 ms)", "", "| physics | world | median | 90th pct |",
             "|---|---|---:|---:|"]
    for s in report["steps"]:
        lines.append(f"| {s['physics']} | {s['scene']} | {s['median_us']} µs | {s['p90_us']} µs |")
    lines += ["", "## The simulator with the driver alone", "",
              "`roslaunch HDAS r1_sim.launch scene:=empty` at the profile's bus rates: no controllers, no "
              "sensors; simulated time keeps up with the wall clock here.", "",
              "| physics | profile | r1_sim CPU | simulated / wall | per simulated s |", "|---|---|---:|---:|---:|"]
    for r in report.get("driver_only", []):
        lines.append(f"| {r['physics']} | {r['profile']} | {r['r1_sim_cpu_percent']} % | "
                     f"{100 * r['sim_real_time_factor']:.0f} % | {r['r1_sim_cpu_per_sim_second_percent']} % |")
    lines += ["", "## The whole stack", "",
              "| physics | profile | r1_sim CPU | per simulated s | sensors CPU | stack (cores) | simulated / wall | "
              "machine stalled | topics not live | " + " | ".join(f"`{t.split('/')[-1]}` Hz" for t in FEEDBACK) + " |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(FEEDBACK)]
    for r in report["stack"]:
        hz = " | ".join(f"{r['feedback_hz'][t]}" for t in FEEDBACK)
        lines.append(f"| {r['physics']} | {r['profile']} | {r['r1_sim_cpu_percent']} % | "
                     f"{r['r1_sim_cpu_per_sim_second_percent']} % | {r['sensors_cpu_percent']} % | "
                     f"{r['total_cores']} | {100 * r['sim_real_time_factor']:.0f} % | "
                     f"{100 * r['machine_stalled_share']:.0f} % | {r['topics_not_live']} | {hz} |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    """`benchmark_simulator [--profiles stock light] [--duration S] [--out DIR]`."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", nargs="+", default=["stock", "light"], choices=["stock", "light"])
    ap.add_argument("--duration", type=float, default=30.0, help="measuring window per stack run [s]")
    ap.add_argument("--out", default=".", help="directory of simulator.{json,md}")
    ap.add_argument("--driver-only-child", nargs=2, metavar=("PROFILE", "JSON"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.driver_only_child:
        profile, path = args.driver_only_child
        result = driver_only(profile, args.duration, out_dir / f"simulator_driver_{profile}_launch.log")
        Path(path).write_text(json.dumps(result))
        return 0
    report: dict = {"when": time.strftime("%Y-%m-%d %H:%M:%S"),
                    "machine": f"{len(__import__('os').sched_getaffinity(0))} CPUs, {platform.platform()}, "
                               f"Python {platform.python_version()}",
                    "steps": [], "driver_only": [], "stack": []}
    for scene in ("empty", "room"):
        print(f"benchmark_simulator: one step, {scene} ...", flush=True)
        report["steps"].append({"physics": PHYSICS, "scene": scene, **step_cost(scene)})
    for profile in args.profiles:
        print(f"benchmark_simulator: the driver alone, {profile}, {args.duration:g} s ...", flush=True)
        report["driver_only"].append(driver_only_run(profile, args.duration, out_dir))
    for profile in args.profiles:
        print(f"benchmark_simulator: the stack, {profile}, {args.duration:g} s ...", flush=True)
        report["stack"].append(summary(PHYSICS, stack_run(profile, args.duration, out_dir)))
    (out_dir / "simulator.json").write_text(json.dumps(report, indent=1))
    text = markdown(report)
    (out_dir / "simulator.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
