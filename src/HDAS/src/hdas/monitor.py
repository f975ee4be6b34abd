"""r1_monitor: one live table of every module's rate, compute time and latency (from /diagnostics).

    rosrun HDAS r1_monitor                                  # redraw every second; Ctrl-C stops
    rosrun HDAS r1_monitor --topics /hdas/feedback_torso /motion_control/control_torso
    rosrun HDAS r1_monitor --once 20 --require HDAS --require r1_jointTracker_demo_node

It keeps the latest DiagnosticStatus per name (and when it arrived) and redraws one table every
second of wall time: in place on a terminal, as plain blocks otherwise. A module not heard for
3 s (wall time) is STALE. The table itself is `hdas.monitor_table` (ROS-free); docs/diagnostics.md
describes the keys. `scripts/r1_monitor` runs this module's `main`.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import threading
import time
from typing import Callable, Sequence

import rosgraph
import rospy
from diagnostic_msgs.msg import DiagnosticArray

from hdas.monitor_table import STALE_AFTER, StatusBoard, TopicRate, missing, render
from r1_common.loop_stats import LoopStats

TOPIC_WINDOW = 5.0       # [s] of ROS time over which a topic's rate is measured
CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear screen


class TopicMeter:
    """Message rate of one topic (rospy.AnyMsg: no type needed, nothing deserialised)."""

    def __init__(self, topic: str):
        self.stats = LoopStats(window_s=TOPIC_WINDOW)
        self.last_wall: float | None = None
        self.lock = threading.Lock()
        self.sub = rospy.Subscriber(topic, rospy.AnyMsg, self._on_msg, queue_size=50, tcp_nodelay=True)

    def _on_msg(self, _msg: rospy.AnyMsg) -> None:
        self.stats.tick(rospy.get_time())
        self.last_wall = time.monotonic()

    def rate(self, wall_now: float) -> TopicRate:
        return TopicRate(self.stats.rate_hz(rospy.get_time()), self.stats.total,
                         None if self.last_wall is None else wall_now - self.last_wall)


class ClockWatch:
    """How fast ROS time runs against wall time (simulated time may run slower).

    `sim`: ROS time is simulated (default: /use_sim_time); `ros_now` and `wall_now` read the clocks."""

    def __init__(self, sim: bool | None = None, ros_now: Callable[[], float] = rospy.get_time,
                 wall_now: Callable[[], float] = time.monotonic) -> None:
        self.sim = bool(rospy.get_param("/use_sim_time", False)) if sim is None else sim
        self.ros_now, self.wall_now = ros_now, wall_now
        self.samples: list[tuple[float, float]] = []

    def note(self) -> str:
        if not self.sim:
            return "ROS time: wall clock"
        wall, ros = self.wall_now(), self.ros_now()
        if ros == 0.0:          # no /clock yet: nothing to compare (a zero sample would read as a jump)
            return "ROS time: simulated, no /clock yet"
        self.samples = [s for s in self.samples if wall - s[0] <= 10.0 and s[1] <= ros] + [(wall, ros)]
        w0, r0 = self.samples[0]
        if wall - w0 < 0.5:
            return "ROS time: simulated"
        return f"ROS time: simulated, {100 * (ros - r0) / (wall - w0):.0f} % of wall time"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="r1_monitor", description=__doc__.split("\n")[0])
    parser.add_argument("--once", type=float, metavar="SECONDS",
                        help="listen this long (wall time), print one table and exit (1 if a --require is missing)")
    parser.add_argument("--require", action="append", default=[], metavar="NAME_PREFIX",
                        help="with --once: a module whose status name starts with this must have been heard "
                             "(repeatable)")
    parser.add_argument("--topics", nargs="+", default=[], metavar="TOPIC",
                        help="also measure these topics' message rates (ROS clock, last 5 s)")
    parser.add_argument("--stale", type=float, default=STALE_AFTER, metavar="SECONDS",
                        help=f"a module not heard this long is STALE (default {STALE_AFTER:g})")
    parser.add_argument("--period", type=float, default=1.0, metavar="SECONDS", help="redraw period (default 1)")
    return parser


def monitor(argv: Sequence[str]) -> int:
    """The monitor with command-line arguments `argv`; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.once is not None and args.once <= 0:
        parser.error("--once needs a positive number of seconds")

    if args.once is not None and not rosgraph.is_master_online():   # a check must not wait for a master
        print(f"r1_monitor: no ROS master at {rosgraph.get_master_uri()}", file=sys.stderr)
        return 1
    rospy.init_node("r1_monitor", anonymous=True, disable_signals=True)
    statuses = StatusBoard()

    def on_diagnostics(msg: DiagnosticArray) -> None:
        received = time.monotonic()
        for s in msg.status:
            statuses.update(s.name, s.level, s.message, s.hardware_id, [(kv.key, kv.value) for kv in s.values],
                            received)

    rospy.Subscriber("/diagnostics", DiagnosticArray, on_diagnostics, queue_size=100)
    meters = {t: TopicMeter(t) for t in args.topics}
    clock = ClockWatch()

    def lines() -> list[str]:
        now = time.monotonic()
        width = shutil.get_terminal_size((160, 40)).columns if sys.stdout.isatty() else 160
        title = f"r1_monitor {time.strftime('%H:%M:%S')}  {clock.note()}"
        topics = {t: m.rate(now) for t, m in meters.items()} or None
        return render(statuses.snapshot(), now, topics, args.stale, width, title)

    try:
        if args.once is not None:
            end = time.monotonic() + args.once
            while time.monotonic() < end and not rospy.is_shutdown():
                clock.note()
                time.sleep(min(0.5, max(0.0, end - time.monotonic())))
            print("\n".join(lines()), flush=True)
            absent = missing(statuses.snapshot(), args.require)
            if absent:
                print(f"r1_monitor: not heard within {args.once:g} s: {', '.join(absent)}", file=sys.stderr)
                return 1
            return 0
        tty = sys.stdout.isatty()
        next_t = time.monotonic()
        while not rospy.is_shutdown():
            text = "\n".join(lines())
            sys.stdout.write(CLEAR + text + "\n" if tty else text + "\n\n")
            sys.stdout.flush()
            next_t = max(next_t + args.period, time.monotonic())     # no burst after a stall
            time.sleep(max(0.0, next_t - time.monotonic()))
    except KeyboardInterrupt:
        pass
    finally:
        rospy.signal_shutdown("r1_monitor done")
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """`rosrun HDAS r1_monitor [args]`: run, then exit with the monitor's status."""
    sys.exit(monitor(rospy.myargv(sys.argv)[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
