"""benchmark_posture: how the robot's posture holds against the physical world (`scripts/benchmark posture`).

On the closed loop of `r1_startup.posture_rig` (the simulated robot on MuJoCo, HDAS's motor groups, the
controllers' cores; simulated time only, so the figures do not depend on how busy the machine is):

1. every disturbance case of `r1_startup.posture_cases` (drives at the chassis' limits in each posture,
   shoulder and gripper pushes, drives holding 1 kg) for both controllers of the torso, at the light and
   the stock bus profile: each case's deviation, settling time, torque against the motors' effort, the
   base's measured acceleration;
2. what each part of the controllers' share of t_ff brings (the straight torso, arms out, speed control,
   light): all of it; without the base's feed-forward; without the servo's damping and gravity feedback;
   without either (what the torso had before, less its re-plan that let it fall);
3. pushes of growing force at the shoulders and at the gripper: deviation and return;
4. a loop of growing delay (feedback held back before the controllers see it): a shoulder push's
   deviation and return, with the feedback through t_ff fading out;
5. one drive plotted: the torso's joints, the base's speed and the torso's t_ff over time, with and
   without the base's feed-forward.

Writes <out>/posture.{json,md,png}. A benchmark: it reports, it does not judge (tests/unit test_posture does).
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path
from typing import Dict, List, Optional

from r1_startup.posture_cases import ARMS, TORSO, UPPER, PostureRun, posture_cases

ABLATIONS = {
    "all of it": {},
    "no base feed-forward": {"base_feedforward": 0.0},
    "no damping, gravity at the plan": {"damping_ratio": 0.0, "gravity_feedback": 0.0},
    "neither (the servo as before)": {"base_feedforward": 0.0, "damping_ratio": 0.0, "gravity_feedback": 0.0},
}


def matrix(controller: str, profile: str) -> List[dict]:
    out: List[dict] = []
    for torso in TORSO:
        for arms in ARMS:
            extra = arms == "out"
            out += [r.as_dict() for r in posture_cases(controller, torso, arms, profile, pushes=extra,
                                                        payload=1.0 if extra and torso == "straight" else 0.0)]
    return out


def ablation() -> List[dict]:
    out = []
    for name, over in ABLATIONS.items():
        run = PostureRun("speed", "straight", "out", torso_speed=over,
                         tracker={k: v for k, v in over.items() if k == "base_feedforward"})
        for case in (run.drive("x"), run.push("torso +x")):
            out.append({"variant": name, **case.as_dict()})
    return out


def push_sweep() -> List[dict]:
    out = []
    for link, forces in (("torso_link4", (20, 40, 60, 80, 100, 120)), ("right_gripper_link", (2, 5, 8, 10, 15, 20))):
        run = PostureRun("speed", "straight", "out")
        for f in forces:
            force = (float(f), 0.0, 0.0) if link == "torso_link4" else (0.0, float(f), 0.0)
            out.append({"link": link, "force": f, **run.push_at(link, force, f"push {link} {f} N").as_dict()})
    return out


def delay_sweep() -> List[dict]:
    out = []
    for delay in (0.0, 0.02, 0.04, 0.06, 0.08, 0.12):
        run = PostureRun("speed", "crouched", "out", feedback_delay=delay)
        out.append({"feedback_delay": delay, **run.push("torso +x").as_dict()})
    return out


def traces() -> Dict[str, dict]:
    """The torso's joints, the base's speed and the torso's t_ff through one drive, with and without the
    base's feed-forward."""
    out = {}
    for name, over in (("with the base's feed-forward", {}), ("without it", {"base_feedforward": 0.0})):
        run = PostureRun("speed", "straight", "out", torso_speed=over)
        run.rig.run(0.3)
        held = run.rig.positions()
        run.rig.samples.clear()
        t0 = run.rig.now
        run.drive("x")
        s = run.rig.samples
        out[name] = {"t": [x.t - t0 for x in s], "vx": [x.base[0] for x in s],
                     **{j: [x.q[j] - held[j] for x in s] for j in UPPER[:3]},
                     **{f"t_ff {j}": [x.t_ff.get(j, math.nan) for x in s] for j in UPPER[:2]}}
    return out


def plot(result: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(2, 2, figsize=(12, 8))
    for name, tr in result["traces"].items():
        style = "-" if "with" in name and "without" not in name else "--"
        for j in ("torso_joint1", "torso_joint2"):
            ax[0, 0].plot(tr["t"], tr[j], style, label=f"{j}, {name}")
        ax[1, 0].plot(tr["t"], tr["t_ff torso_joint1"], style, label=f"t_ff torso_joint1, {name}")
    tr = next(iter(result["traces"].values()))
    twin = ax[0, 0].twinx()
    twin.plot(tr["t"], tr["vx"], ":", color="grey", label="base speed")
    twin.set_ylabel("base speed [m/s]")
    ax[0, 0].set(title="a drive to 1 m/s and back at 2.5 m/s² (straight, arms out)", xlabel="s",
                 ylabel="joint off where it was held [rad]")
    ax[0, 0].legend(fontsize=7)
    ax[1, 0].set(xlabel="s", ylabel="N·m")
    ax[1, 0].legend(fontsize=7)
    for link, marker in (("torso_link4", "o"), ("right_gripper_link", "s")):
        rows = [r for r in result["push_sweep"] if r["link"] == link]
        ax[0, 1].plot([r["force"] for r in rows], [r["deviation"] for r in rows], marker + "-", label=link)
    ax[0, 1].axhline(0.05, color="red", lw=0.8)
    ax[0, 1].set(title="a 0.3 s push: the largest deviation", xlabel="N", ylabel="rad")
    ax[0, 1].legend()
    rows = result["delay_sweep"]
    ax[1, 1].plot([1e3 * r["feedback_delay"] for r in rows], [r["deviation"] for r in rows], "o-", label="deviation")
    ax[1, 1].plot([1e3 * r["feedback_delay"] for r in rows], [min(r["settle"], 5.0) / 10 for r in rows], "s--",
                  label="back within 0.01 rad after [s / 10]")
    ax[1, 1].set(title="50 N at the shoulders, crouched: feedback held back", xlabel="ms", ylabel="rad")
    ax[1, 1].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def markdown(result: dict) -> str:
    lines = [f"# The posture against the physical world ({result['when']})", "",
             "`scripts/benchmark posture` (r1_startup.benchmark_posture): the simulated robot, HDAS's motor groups and "
             "the controllers' cores in one closed loop, in simulated time (the figures do not depend on the "
             f"machine's load; the run took {result['cpu_seconds']:.0f} s of CPU on {result['machine']}). "
             "Deviation: the largest of any torso or arm joint from where it was held; back: when every joint "
             "was within 0.01 rad for good after the disturbance ended; torque: the largest motor torque over "
             "its effort; base: the base's true acceleration, speeding up / slowing down (10-90 % of the ramp).",
             ""]
    lines += ["## 1. Every case", "",
              "| profile | controller | torso | arms | case | deviation [rad] | joint | back after [s] | "
              "torque / effort | base [m/s², rad/s²] | passed |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for profile, rows in result["matrix"].items():
        for r in rows:
            base = " / ".join(f"{x:.2f}" for x in r["base_acceleration"]) if r["base_acceleration"] else ""
            verdict = "yes" if r["passed"] else "NO: " + "; ".join(r["failures"])
            lines.append(f"| {profile.split('/')[0]} | {r['controller']} | {r['torso']} | {r['arms']} | "
                         f"{r['case']} | {r['deviation']:.4f} | {r['worst_joint']} | {r['settle']:.2f} | "
                         f"{r['torque_ratio']:.2f} | {base} | {verdict} |")
    lines += ["", "## 2. What each part brings (straight, arms out, torso speed control, light)", "",
              "| variant | case | deviation [rad] | back after [s] |", "|---|---|---|---|"]
    lines += [f"| {r['variant']} | {r['case']} | {r['deviation']:.4f} | {r['settle']:.2f} |"
              for r in result["ablation"]]
    lines += ["", "## 3. Pushes of growing force for 0.3 s (straight, arms out)", "",
              "| where | force [N] | deviation [rad] | joint | back after [s] |", "|---|---|---|---|---|"]
    lines += [f"| {r['link']} | {r['force']} | {r['deviation']:.4f} | {r['worst_joint']} | {r['settle']:.2f} |"
              for r in result["push_sweep"]]
    lines += ["", "## 4. A loop of growing delay: 50 N at the shoulders, crouched, arms out", "",
              "| feedback delay [ms] | deviation [rad] | back after [s] |", "|---|---|---|"]
    lines += [f"| {1e3 * r['feedback_delay']:.0f} | {r['deviation']:.4f} | {r['settle']:.2f} |"
              for r in result["delay_sweep"]]
    lines += ["", "![the drive, the push sweep and the delay sweep](posture.png)", ""]
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="docs/benchmarks", help="directory for posture.{json,md,png}")
    ap.add_argument("--profiles", nargs="*", default=["light", "stock"], choices=["light", "stock"])
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.process_time()
    result: dict = {"when": time.strftime("%Y-%m-%d %H:%M"), "machine": f"{platform.machine()} {platform.node()}",
                    "matrix": {}}
    for profile in args.profiles:
        for controller in ("speed", "joint"):
            print(f"posture: {profile} {controller}", flush=True)
            result["matrix"][f"{profile}/{controller}"] = matrix(controller, profile)
    print("posture: ablation, sweeps, traces", flush=True)
    result["ablation"] = ablation()
    result["push_sweep"] = push_sweep()
    result["delay_sweep"] = delay_sweep()
    result["traces"] = traces()
    result["cpu_seconds"] = time.process_time() - t0
    (out / "posture.json").write_text(json.dumps(result, indent=1, allow_nan=True))
    (out / "posture.md").write_text(markdown(result))
    plot(result, out / "posture.png")
    print(f"posture: wrote {out}/posture.{{json,md,png}}")
    return 0
