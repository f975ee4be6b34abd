"""benchmark_motion: chassis and torso speed control measured on the simulated R1
(`rosrun mobiman benchmark_motion`, or `scripts/benchmark motion`).

1. Core cost of one chassis control tick (twist limit + swerve inverse kinematics) and one
   torso resolved-rate tick; median and p99.
2. On the simulated robot (HDAS + r1_sim + r1_chassis_control.launch + the torso speed
   control, private master): a chassis sequence (forward, sideways, yaw, a diagonal with
   rotation, stop) recorded as target, the ideal acceleration-limited twist, the twist the
   node estimates from the wheels and the simulator's ground truth; a torso sequence (a
   square in x-z: up, forward, down, back) recorded as the commanded and the measured path
   of torso_link3 and its pitch.
Writes <out>/motion_control.{json,md,png}. A benchmark: it reports, it does not judge. The script
`benchmark_motion` runs `main`.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import rospkg

from r1_common.benchtools import free_port, stop_session

CHASSIS_STEPS = [((0.5, 0.0, 0.0), 2.0), ((0.0, 0.3, 0.0), 2.0), ((0.0, 0.0, 0.6), 2.0),
                 ((0.4, 0.3, 0.3), 2.5), ((0.0, 0.0, 0.0), 1.5)]
TORSO_START = [1.0, -2.0, -1.0, 0.0]
TORSO_STEPS = [((0.0, 0.1), 1.5), ((0.1, 0.0), 1.0), ((0.0, -0.1), 1.5), ((-0.1, 0.0), 1.0), ((0.0, 0.0), 1.0)]
R1_XY = np.array([[0.21516, 0.28], [0.21516, -0.28], [-0.28084, 0.0]])


def model():
    from mobiman.model.robot_model import RobotModel, load_group_config
    share = Path(rospkg.RosPack().get_path("mobiman"))
    groups, _ = load_group_config(share / "config/r1_joint_groups.yaml")
    urdf = (Path(rospkg.RosPack().get_path("r1_description")) / "urdf/r1_v2_1_0.urdf").read_text()
    return RobotModel(urdf, groups), urdf


def stats_us(samples: list[float]) -> dict[str, float]:
    us = np.array(samples) * 1e6
    return {"ticks": len(us), "median_us": round(float(np.median(us)), 1),
            "p99_us": round(float(np.percentile(us, 99)), 1)}


def core_ticks(ticks: int) -> dict[str, dict]:
    """ROS-free cost of one control tick of each controller."""
    import yaml

    from mobiman.chassis.control import ChassisController, ChassisLimits
    from mobiman.chassis.swerve import SwerveKinematics, SwerveParams
    from mobiman.torso.speed_control import TorsoSpeedConfig, TorsoSpeedController
    rng = np.random.default_rng(3)
    c = ChassisController(SwerveKinematics(R1_XY, SwerveParams(max_wheel_speed=2.1)), ChassisLimits(),
                          command_timeout=0.2)
    samples, t = [], 0.0
    for k in range(ticks):
        if k % 100 == 0:
            c.set_target(tuple(rng.uniform([-1.5, -1.5, -3], [1.5, 1.5, 3])), t)
        t += 0.005
        t0 = time.perf_counter()
        c.step(t, c._angles if c._angles is not None else np.zeros(3))
        samples.append(time.perf_counter() - t0)
    chassis = stats_us(samples)
    m, _ = model()
    share = Path(rospkg.RosPack().get_path("mobiman"))
    cfg = TorsoSpeedConfig.from_params(yaml.safe_load((share / "config/torso_speed_control.yaml").read_text()))
    torso = TorsoSpeedController(m, cfg)
    q = np.array(TORSO_START)
    torso.start(q)
    samples, t = [], 0.0
    for k in range(ticks):
        if k % 200 == 0:
            torso.set_speed(float(rng.uniform(-0.1, 0.1)), float(rng.uniform(-0.1, 0.1)), t)
        t += 0.002
        t0 = time.perf_counter()
        out = torso.step(t, q)
        samples.append(time.perf_counter() - t0)
        q = np.asarray(out.position, float)
    return {"chassis_tick": chassis, "torso_tick": stats_us(samples)}


def on_sim(out_dir: Path, light: bool) -> dict:
    port = free_port()
    os.environ["ROS_MASTER_URI"] = f"http://localhost:{port}"
    log = open(out_dir / "motion_launch.log", "w")
    launch = subprocess.Popen(["roslaunch", "-p", str(port), "mobiman", "benchmark_motion.launch",
                               f"sim_namespace:=bench_motion{os.getpid()}", f"light:={str(light).lower()}"],
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        return measure(launch)
    finally:
        stop_session(launch)
        log.close()
        (out_dir / "motion_launch.log").unlink(missing_ok=True)


class Rec:
    """Every message of a topic with its ROS receive time."""

    def __init__(self, topic, cls, stamp=None):
        import rospy
        self.items, self.lock, self.on = [], threading.Lock(), False
        self.rospy = rospy
        rospy.Subscriber(topic, cls, self._cb, queue_size=1000, tcp_nodelay=True)

    def _cb(self, m):
        if self.on:
            with self.lock:
                self.items.append((self.rospy.get_time(), m))

    def take(self):
        with self.lock:
            out, self.items = self.items, []
        return out


def wait_sim(seconds: float, wall: float = 600.0) -> None:
    import rospy
    t0, deadline = rospy.get_time(), time.monotonic() + wall
    while rospy.get_time() - t0 < seconds:
        if time.monotonic() > deadline:
            raise SystemExit("benchmark_motion: simulated time stalled")
        time.sleep(0.01)


def measure(launch: subprocess.Popen) -> dict:
    import rospy
    from geometry_msgs.msg import Twist
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState

    from mobiman.chassis.swerve import limit_twist

    rospy.init_node("motion_benchmark", anonymous=True, disable_signals=True)
    deadline = time.monotonic() + 300
    for topic, cls in (("/odom", Odometry), ("/motion_control/control_torso", None)):
        while True:
            try:
                if cls is None:
                    from hdas_msg.msg import motor_control
                    cls = motor_control
                rospy.wait_for_message(topic, cls, 2)
                break
            except rospy.ROSException:
                if launch.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"benchmark_motion: {topic} never came up on the simulated robot") from None
    m, _ = model()

    # -- chassis ---------------------------------------------------------------------------
    cmd = rospy.Publisher("/motion_target/target_speed_chassis", Twist, queue_size=10)
    truth, estimate = Rec("/sim/odom", Odometry), Rec("/motion_control/chassis_speed", Twist)
    time.sleep(1.0)
    truth.on = estimate.on = True
    targets = []
    rate = rospy.Rate(50)
    t_start = rospy.get_time()
    for (vx, vy, wz), seconds in CHASSIS_STEPS:
        t0 = rospy.get_time()
        while rospy.get_time() - t0 < seconds:
            tw = Twist()
            tw.linear.x, tw.linear.y, tw.angular.z = vx, vy, wz
            cmd.publish(tw)
            targets.append((rospy.get_time() - t_start, (vx, vy, wz)))
            rate.sleep()
    truth.on = estimate.on = False
    g = [(t - t_start, (o.twist.twist.linear.x, o.twist.twist.linear.y, o.twist.twist.angular.z))
         for t, o in truth.take()]
    e = [(t - t_start, (w.linear.x, w.linear.y, w.angular.z)) for t, w in estimate.take()]
    # the ideal: the targets through the controller's twist limit (2.5, 1.0, 1.0)
    ideal, tw, last = [], (0.0, 0.0, 0.0), 0.0
    for t, target in targets:
        tw = limit_twist(tw, target, (2.5, 1.0, 1.0), t - last)
        last = t
        ideal.append((t, tw))
    it = np.array([t for t, _ in ideal])
    iv = np.array([v for _, v in ideal])
    gt = np.array([t for t, _ in g])
    gv = np.array([v for _, v in g])
    inside = (gt >= it[0]) & (gt <= it[-1])
    ideal_at_g = np.column_stack([np.interp(gt[inside], it, iv[:, k]) for k in range(3)])
    err = gv[inside] - ideal_at_g
    lags = np.arange(0, 0.3, 0.005)
    rms_by_lag = [float(np.sqrt(np.mean((gv[inside] - np.column_stack(
        [np.interp(gt[inside] - lag, it, iv[:, k]) for k in range(3)])) ** 2))) for lag in lags]
    chassis = {"targets": [[round(t, 4), list(v)] for t, v in targets],
               "ideal": [[round(t, 4), [round(x, 4) for x in v]] for t, v in ideal],
               "truth": [[round(t, 4), [round(x, 4) for x in v]] for t, v in g],
               "estimate": [[round(t, 4), [round(x, 4) for x in v]] for t, v in e],
               "rms_error_vs_ideal": [round(float(x), 4) for x in np.sqrt(np.mean(err ** 2, axis=0))],
               "delay_s": round(float(lags[int(np.argmin(rms_by_lag))]), 3),
               "rms_error_after_delay": round(float(min(rms_by_lag)), 4)}
    # wait until the chassis rests
    wait_sim(1.0)

    # -- torso -----------------------------------------------------------------------------
    speed = rospy.Publisher("/motion_target/target_speed_torso", Twist, queue_size=10)
    joint_target = rospy.Publisher("/motion_target/target_joint_state_torso", JointState, queue_size=1, latch=True)
    joints = Rec("/sim/joint_states", JointState)
    time.sleep(1.0)
    joint_target.publish(JointState(position=TORSO_START, velocity=[0.5] * 4))
    names = None
    deadline = time.monotonic() + 600
    while True:
        msg = rospy.wait_for_message("/sim/joint_states", JointState, 30)
        names = list(msg.name)
        q = np.array([msg.position[names.index(f"torso_joint{i}")] for i in range(1, 5)])
        if np.max(np.abs(q - TORSO_START)) < 0.01:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"benchmark_motion: the torso did not reach {TORSO_START} (at {q.round(3)})")
        time.sleep(0.1)
    wait_sim(0.5)

    def link3(q4) -> tuple[float, float, float]:
        qf = m.configuration({"torso": q4})
        p3 = m.pose("torso_link3", qf, "base_link")
        p1 = m.pose("torso_link1", m.configuration({"torso": [0, 0, 0, 0]}), "base_link")
        r = p3.rotation
        return (float(p3.translation[0] - p1.translation[0]), float(p3.translation[2] - p1.translation[2]),
                float(math.atan2(-r[2, 0], r[0, 0])))

    joints.on = True
    commanded = []
    t_start = rospy.get_time()
    for (vx, vz), seconds in TORSO_STEPS:
        t0 = rospy.get_time()
        while rospy.get_time() - t0 < seconds:
            tw = Twist()
            tw.linear.x, tw.linear.z = vx, vz
            speed.publish(tw)
            commanded.append((rospy.get_time() - t_start, (vx, vz)))
            rate.sleep()
    joints.on = False
    path = []
    for t, msg in joints.take():
        q = [msg.position[list(msg.name).index(f"torso_joint{i}")] for i in range(1, 5)]
        path.append((t - t_start, link3(q)))
    x0, z0, pitch0 = path[0][1]
    cx, cz, cpath, last = x0, z0, [], 0.0
    for t, (vx, vz) in commanded:
        cx, cz = cx + vx * (t - last), cz + vz * (t - last)
        last = t
        cpath.append((t, (cx, cz)))
    end = np.array(path[-1][1][:2])
    corner_err = float(np.hypot(*(end - np.array([x0, z0]))))
    torso = {"measured": [[round(t, 4), [round(x, 5) for x in v]] for t, v in path],
             "commanded": [[round(t, 4), [round(x, 5) for x in v]] for t, v in cpath],
             "pitch_max_deviation_rad": round(float(max(abs(v[2] - pitch0) for _, v in path)), 5),
             "rise_measured_m": round(float(max(v[1] for _, v in path) - z0), 4),
             "rise_commanded_m": 0.15, "closing_error_m": round(corner_err, 4)}
    return {"chassis": chassis, "torso": torso}


def plot(sim: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(11, 9))
    ch = sim["chassis"]
    labels = ("vx [m/s]", "vy [m/s]", "wz [rad/s]")
    for k in range(3):
        ax = fig.add_subplot(4, 2, 2 * k + 1)
        for key, style, name in (("targets", ":", "target"), ("ideal", "--", "acceleration-limited"),
                                 ("estimate", "-", "from wheels (chassis_speed)"), ("truth", "-", "ground truth")):
            ax.plot([t for t, _ in ch[key]], [v[k] for _, v in ch[key]], linestyle=style, label=name,
                    alpha=0.8 if key != "truth" else 1.0)
        ax.set_ylabel(labels[k])
        if k == 0:
            ax.set_title("chassis: commanded vs measured twist")
            ax.legend(fontsize=7)
    ax.set_xlabel("time [s]")
    to = sim["torso"]
    ax = fig.add_subplot(2, 2, 2)
    ax.plot([v[0] for _, v in to["commanded"]], [v[1] for _, v in to["commanded"]], "--", label="commanded")
    ax.plot([v[0] for _, v in to["measured"]], [v[1] for _, v in to["measured"]], label="measured")
    ax.set_xlabel("torso_link3 x [m]")
    ax.set_ylabel("z [m] (from torso_joint1)")
    ax.set_title("torso: a square in x-z at 0.1 m/s")
    ax.axis("equal")
    ax.legend(fontsize=7)
    ax = fig.add_subplot(2, 2, 4)
    p0 = to["measured"][0][1][2]
    ax.plot([t for t, _ in to["measured"]], [(v[2] - p0) * 1e3 for _, v in to["measured"]])
    ax.set_xlabel("time [s]")
    ax.set_ylabel("pitch change [mrad]")
    ax.set_title("torso_link3 pitch (held)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def report(core: dict, sim: dict, light: bool) -> tuple[dict, str]:
    """The summary (motion_control.json without the series) and the Markdown of a run."""
    ch, to = sim["chassis"], sim["torso"]
    result = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "cpus": os.cpu_count(),
              "profile": "light" if light else "stock", **core,
              "chassis": {k: v for k, v in ch.items() if k not in ("targets", "ideal", "truth", "estimate")},
              "torso": {k: v for k, v in to.items() if k not in ("measured", "commanded")}}
    md = "\n".join([
        f"# Chassis and torso speed control ({result['date']})", "",
        f"Simulated R1 ({result['profile']} bus rates), simulated time; machine: {result['cpus']} CPUs, shared.", "",
        "| figure | value |", "|---|---:|",
        f"| chassis tick (twist limit + swerve IK), core, median / p99 | {core['chassis_tick']['median_us']} / "
        f"{core['chassis_tick']['p99_us']} µs |",
        f"| torso tick (resolved rate), core, median / p99 | {core['torso_tick']['median_us']} / "
        f"{core['torso_tick']['p99_us']} µs |",
        f"| chassis: RMS of ground truth − acceleration-limited target (vx, vy, wz) | "
        f"{', '.join(map(str, ch['rms_error_vs_ideal']))} |",
        f"| chassis: delay of the ground truth behind the ideal twist (best fit) | {ch['delay_s'] * 1000:.0f} ms |",
        f"| chassis: RMS error after removing that delay | {ch['rms_error_after_delay']} |",
        f"| torso: rise of torso_link3 for 0.1 m/s × 1.5 s | {to['rise_measured_m'] * 1000:.1f} mm "
        f"(commanded 150 mm) |",
        f"| torso: largest pitch change of torso_link3 | {to['pitch_max_deviation_rad'] * 1000:.2f} mrad |",
        f"| torso: closing error of the x-z square | {to['closing_error_m'] * 1000:.1f} mm |", "",
        "![chassis twist and torso path](motion_control.png)", ""])
    return result, md


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ticks", type=int, default=20000)
    p.add_argument("--light", action="store_true", help="the simulator's light profile (chassis bus 50 Hz)")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    share = Path(rospkg.RosPack().get_path("mobiman"))
    out = Path(args.out) if args.out else Path(os.environ.get("R1_WS", share.parents[1])) / "docs/benchmarks"
    out.mkdir(parents=True, exist_ok=True)
    core = core_ticks(args.ticks)
    sim = on_sim(out, args.light)
    result, md = report(core, sim, args.light)
    (out / "motion_control.json").write_text(json.dumps(dict(result, series=sim), indent=1) + "\n")
    (out / "motion_control.md").write_text(md)
    plot(sim, out / "motion_control.png")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
