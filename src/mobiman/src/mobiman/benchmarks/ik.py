"""The arm IK benchmark (issue 5), ROS-free: our `ArmIK` against public solvers on the same targets.

`scripts/benchmark ik` (`rosrun mobiman benchmark_ik`) calls `main`, which writes <out>/arm_ik.{json,md,png}.
The parts, each in its module:

* `ik_targets`: the cold targets (FK of random configurations), the three streamed 100 Hz paths, and
  the reference kinematics that judges every answer (success: < 1 mm and < 0.01 rad);
* `ik_solvers`: ours and the peers (KDL NR_JL, pink, ikpy) behind one adapter;
* `ik_run`: every solver on the same targets, interleaved target by target, and the summary;
* `ik_report`: the Markdown page, the figure and the goals.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from mobiman.benchmarks.ik_report import GOALS, markdown, plot
from mobiman.benchmarks.ik_run import run
from mobiman.benchmarks.ik_targets import POS_TOL, ROT_TOL
from r1_common.benchtools import stall_fraction


def main(argv: Sequence[str], urdf_path: Path, ours_config_path: Path | None, default_out: Path) -> int:
    p = argparse.ArgumentParser(description="The arm IK benchmark: ours against KDL, pink and ikpy "
                                            "(writes <out>/arm_ik.{json,md,png}).")
    p.add_argument("--targets", type=int, default=2000, help="number of cold targets (default 2000)")
    p.add_argument("--seed", type=int, default=5, help="RNG seed of the cold targets")
    p.add_argument("--ikpy-every", type=int, default=4,
                   help="ikpy answers every K-th cold target only (default 4: it is slow); 1 for all")
    p.add_argument("--solvers", default="ours,kdl,pink,ikpy", help="comma-separated subset of ours,kdl,pink,ikpy")
    p.add_argument("--out", default=None, help=f"output directory (default {default_out})")
    args = p.parse_args(list(argv))
    out = Path(args.out) if args.out else default_out
    out.mkdir(parents=True, exist_ok=True)
    names = [s.strip() for s in args.solvers.split(",") if s.strip()]
    ours_config = None
    if "ours" in names and ours_config_path is not None:
        import yaml
        ours_config = (yaml.safe_load(Path(ours_config_path).read_text()) or {}).get("solver") or {}
    urdf_xml = Path(urdf_path).read_text()
    print(f"benchmark_ik: {args.targets} cold targets + 3 streamed paths, solvers {', '.join(names)}")
    stalled_before = stall_fraction(3.0)
    t0 = time.monotonic()
    summary, raw = run(urdf_xml, args.targets, args.seed, names, ours_config, args.ikpy_every)
    run_seconds = time.monotonic() - t0
    stalled_after = stall_fraction(3.0)
    result = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "run_seconds": round(run_seconds, 1),
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                          "stalled_before": round(stalled_before, 3), "stalled_after": round(stalled_after, 3)},
              "urdf": Path(urdf_path).name, "success": {"position_m": POS_TOL, "orientation_rad": ROT_TOL},
              "goals": GOALS, "versions": versions(names), **summary}
    (out / "arm_ik.json").write_text(json.dumps(result, indent=1) + "\n")
    md = markdown(result)
    (out / "arm_ik.md").write_text(md)
    plot(summary, raw, out / "arm_ik.png")
    print(md)
    return 0


def versions(names: Sequence[str]) -> dict:
    from importlib import metadata
    v = {"pin": metadata.version("pin"), "numpy": np.__version__}
    for dist, key in (("pin-pink", "pink"), ("qpsolvers", "pink"), ("daqp", "pink"), ("ikpy", "ikpy"),
                      ("scipy", "ikpy")):
        if key in names:
            try:
                v[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                v[dist] = None
    if "kdl" in names:
        v["python3-pykdl"] = _dpkg_version("python3-pykdl")
    return v


def _dpkg_version(pkg: str) -> str | None:
    import subprocess
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


if __name__ == "__main__":     # python -m mobiman.benchmarks.ik (no ROS): paths from the source tree
    _src = Path(__file__).resolve().parents[3]
    sys.exit(main(sys.argv[1:], _src / "r1_description/urdf/r1_v2_1_0.urdf", _src / "mobiman/config/relaxed_ik.yaml",
                  _src.parent / "docs/benchmarks"))
