"""check_node: the HDAS self-check (`rosrun HDAS check_node`), as the stock tool.

Asks for the robot mode, listens to the /hdas/* topics for a measuring window and
prints one table of rates and value ranges against config/check_windows.yaml,
then "Self check completed". Exit 0: every topic inside its windows; 1: a FAIL;
2: bad arguments or config; 130: interrupted. The judgement lives in hdas.selfcheck.

This module subscribes and measures; `scripts/check_node` runs its `main`.
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Callable, Sequence

import rospkg
import rospy
from hdas_msg.msg import bms, feedback_status
from sensor_msgs.msg import Imu, JointState

from hdas.selfcheck import TopicAccumulator, TopicCheck, WindowConfig, WindowConfigError, format_table, load_windows

NODE_NAME = "topic_monitor_with_self_check"   # the stock tool's node name
MESSAGE_TYPES = {
    "sensor_msgs/JointState": JointState,
    "sensor_msgs/Imu": Imu,
    "hdas_msg/feedback_status": feedback_status,
    "hdas_msg/bms": bms,
}
EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="check_node", description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", type=int,
                   help="robot mode: 0 = folded, without arms; 1 = arms installed (asked on stdin if omitted)")
    p.add_argument("--duration", type=float, default=5.0,
                   help="measuring window [s] (default: %(default)g; keep it >= 4 so the "
                        "1 Hz status topics deliver enough messages for a rate)")
    p.add_argument("--rates", choices=("judge", "report"), default="judge",
                   help="judge: a rate outside its window fails (the stock tool); report: rates are shown, only "
                        "presence and values are judged (for tests on shared, noisy machines)")
    p.add_argument("--config", help="window file (default: $(rospack find HDAS)/config/check_windows.yaml)")
    return p


def ask_mode(windows: WindowConfig, read: Callable[[str], str] = input) -> int:
    """Prompt as the stock tool does (with `read`), until a mode of the config is typed."""
    modes = ", ".join(map(str, windows.modes))
    while True:
        try:
            text = read("Please input robot mode: ").strip()
        except EOFError:
            print(f"\ncheck_node: no robot mode on stdin (give --mode, one of {modes})", file=sys.stderr)
            sys.exit(EXIT_USAGE)
        if text.lstrip("-").isdigit() and int(text) in windows.modes:
            return int(text)
        print(f"robot mode must be one of {modes}", file=sys.stderr)


def recorder(acc: TopicAccumulator, clock: Callable[[], float]) -> Callable[[Any], None]:
    """Subscriber callback: stamp with the arrival time (`clock`, never the header) and store."""
    extract = acc.check.extract

    def on_message(msg: Any) -> None:
        acc.add(clock(), extract(msg))
    return on_message


def unusable(checks: Sequence[TopicCheck]) -> str:
    """Why the checks cannot be measured ("" when they can): a type without a message class here, or
    a field its message does not have (found here, not in every callback)."""
    for c in checks:
        if c.type not in MESSAGE_TYPES:
            return f"{c.topic}: type {c.type} is not one of {', '.join(MESSAGE_TYPES)}"
        try:
            c.extract(MESSAGE_TYPES[c.type]())
        except (AttributeError, TypeError) as e:
            return f"{c.topic}: {e}"
    return ""


def measuring_clock() -> Callable[[], float] | None:
    """The clock rates are judged on: wall (monotonic) on the robot; on simulated time (/clock)
    the simulator's, since its buses run at their rates in simulated time (a busy machine runs
    it slower than real time). None if /clock does not start within 30 s."""
    if not rospy.get_param("/use_sim_time", False):
        return time.monotonic
    give_up = time.monotonic() + 30.0
    while rospy.get_time() == 0.0:
        if time.monotonic() > give_up or rospy.is_shutdown():
            return None
        time.sleep(0.05)
    return rospy.get_time


def check(argv: Sequence[str]) -> int:
    """The self-check with command-line arguments `argv`; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.duration <= 0:
        parser.error("--duration must be > 0")
    try:
        windows = load_windows(args.config or f"{rospkg.RosPack().get_path('HDAS')}/config/check_windows.yaml")
        mode = args.mode if args.mode is not None else ask_mode(windows)
        checks = windows.checks(mode)
    except (WindowConfigError, rospkg.ResourceNotFound) as e:
        parser.error(str(e))
    problem = unusable(checks)
    if problem:
        parser.error(problem)

    rospy.init_node(NODE_NAME)
    clock = measuring_clock()
    if clock is None:
        print("check_node: /use_sim_time is set but /clock is not advancing (is the simulator running?)",
              file=sys.stderr)
        return EXIT_FAIL
    accumulators = [TopicAccumulator(c, judge_rate=args.rates == "judge") for c in checks]
    # queue_size left at None (unbounded): a busy machine delivers late, but delivers every message.
    subs = [rospy.Subscriber(a.check.topic, MESSAGE_TYPES[a.check.type], recorder(a, clock), tcp_nodelay=True)
            for a in accumulators]
    simulated = " of simulated time" if clock is not time.monotonic else ""
    print(f"Robot mode {mode}: measuring {len(checks)} topics for {args.duration:g} s{simulated} ...", flush=True)
    start = clock()
    give_up = time.monotonic() + max(60.0, 30.0 * args.duration)   # polled: rospy.sleep would hang on a stopped /clock
    while clock() < start + args.duration and not rospy.is_shutdown():
        if time.monotonic() > give_up:
            print(f"check_node: simulated time advanced only {clock() - start:.2f} s of {args.duration:g} s "
                  f"in {max(60.0, 30.0 * args.duration):g} s", file=sys.stderr)
            return EXIT_FAIL
        time.sleep(0.05)
    for s in subs:
        s.unregister()
    if rospy.is_shutdown():
        print("check_node: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    results = [a.result() for a in accumulators]
    print(format_table(results))
    print("Self check completed", flush=True)
    return 0 if all(r.ok for r in results) else EXIT_FAIL


def main(argv: Sequence[str] | None = None) -> None:
    """`rosrun HDAS check_node [args]`: the check, then exit with its status (130 on Ctrl-C)."""
    try:
        sys.exit(check(rospy.myargv()[1:] if argv is None else argv))
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    main()
