"""Wait until the whole stack publishes every topic of config/r1_topics.yaml with its type.

`python -m r1_startup.wait_stack [--timeout S] [--no-sensors]`: exit 0 when every stream delivers
and every event topic is advertised, 1 with one line per problem otherwise (used by scripts/run).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import rospkg
import rospy

from r1_startup.topics import TopicWatcher, load_topics


def default_topics_file() -> Path:
    return Path(rospkg.RosPack().get_path("startup_config")) / "config" / "r1_topics.yaml"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--timeout", type=float, default=300.0, help="wall-clock seconds")
    ap.add_argument("--no-sensors", action="store_true", help="the stack runs without sensors")
    ap.add_argument("--topics", type=Path, default=None, help="topic list (default: startup_config's)")
    args = ap.parse_args(argv)
    specs = load_topics(args.topics or default_topics_file(), sensors=not args.no_sensors)
    rospy.init_node("r1_wait_stack", anonymous=True, disable_signals=True)
    watcher = TopicWatcher(specs)
    t0 = time.monotonic()
    found = watcher.wait(args.timeout, log=lambda s: print(s, flush=True))
    if found:
        print(f"after {time.monotonic() - t0:.0f} s, {len(found)} of {len(specs)} topics are not right:")
        for line in found:
            print(f"  {line}")
        return 1
    streams = sum(s.kind == "stream" for s in specs)
    print(f"all {len(specs)} topics live with their types ({streams} streams delivering) "
          f"after {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
