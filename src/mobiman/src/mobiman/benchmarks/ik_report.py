"""The IK benchmark's report: the Markdown page (`markdown`) and the figure (`plot`) from `ik_run.run`'s
summary, and the goals ours is held to."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mobiman.benchmarks.ik_targets import POS_TOL, RATE_HZ, ROT_TOL

GOALS = {"cold_success": 0.995, "streamed_success": 1.0, "streamed_median_ms": 0.2, "streamed_p99_ms": 1.0,
         "cold_median_ms": 2.0}


def _versus(ours: dict, peer: dict) -> str:
    """Where ours is ahead of one peer, cold and streamed: success, then median and p99 CPU time."""
    parts = []
    for mode in ("cold", "streamed"):
        o, p = ours[mode], peer[mode]
        cells = [("success", o["success"] >= p["success"])]
        for stat in ("median", "p99"):
            ov, pv = o["cpu_ms"][stat], p["cpu_ms"][stat]
            cells.append((stat, ov is not None and pv is not None and ov < pv))
        behind = [name for name, ahead in cells if not ahead]
        parts.append(f"{mode} {'ahead' if not behind else 'behind on ' + ', '.join(behind)}")
    return f"{peer['label']}: " + ", ".join(parts)


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.2f} %"


def _ms(x) -> str:
    return "–" if x is None else (f"{x:.3f}" if x < 10 else f"{x:.1f}")


def _mm(s: dict) -> str:
    return "–" if s["median"] is None else f"{1e3 * s['median']:.3g} / {1e3 * s['p99']:.3g} / {1e3 * s['max']:.3g}"


def _mrad(s: dict) -> str:
    return "–" if s["median"] is None else f"{1e3 * s['median']:.3g} / {1e3 * s['p99']:.3g} / {1e3 * s['max']:.3g}"


def _accuracy_and_time_cells(d: dict) -> str:
    """success | position error | orientation error | wall time | CPU time, for one table row."""
    return (f"{_pct(d['success'])} | {_mm(d['position_error_m'])} | {_mrad(d['orientation_error_rad'])} | "
            f"{_ms(d['time_ms']['median'])} / {_ms(d['time_ms']['p99'])} | "
            f"{_ms(d['cpu_ms']['median'])} / {_ms(d['cpu_ms']['p99'])}")


def markdown(result: dict) -> str:
    sv = result["solvers"]
    tg = result["targets"]
    m = result["machine"]
    every = tg["cold"].get("ikpy_every", 1)
    lines = [
        f"# Arm IK benchmark ({result['date']})", "",
        f"Machine: {m['cpus']} CPUs, {m['platform']}, Python {m['python']}. A sleeping probe found it stalled "
        f"{100 * m['stalled_before']:.0f} % of the time before the run and {100 * m['stalled_after']:.0f} % after "
        "(shared VM): wall-clock times include those stalls, so the thread CPU time of each solve is given too "
        "(on a starved VM it still counts part of them: read p99s as upper bounds). "
        f"Run time {result['run_seconds']:.0f} s. Command: `scripts/benchmark ik` (`rosrun mobiman benchmark_ik`).", "",
        f"Targets, the same for every solver and interleaved target by target: {tg['cold']['count']} cold targets, FK "
        f"of random left-arm configurations uniform within the joint limits (seed {tg['cold']['seed']})"
        + (f"; ikpy answers every {every}th of them only (it is slow; `--ikpy-every 1` for all)" if every > 1 and
           "ikpy" in sv else "")
        + f". Streamed paths at {RATE_HZ:g} Hz from q0 = {tg['q0']} (gripper at {tg['start_pose_xyz']} m in "
        "torso_link4), each tick warm-started from the previous answer:", ""]
    for name, p in tg["streamed"].items():
        lines.append(f"- `{name}`: {p['ticks']} ticks, {p['description']} ({p['judged_ticks']} judged)")
    lines += ["", f"Success: position error < {POS_TOL * 1e3:g} mm and orientation error < {ROT_TOL:g} rad, judged by "
              "pinocchio FK. Errors as median / p99 / max; times as median / p99.", "",
              "**Cold** (no history; peers from the mid-range seed, ours `solve_cold`)", "",
              "| solver | targets | success | pos. error [mm] | rot. error [mrad] | wall time [ms] | CPU time [ms] "
              "| NaN | outside limits | in self-collision |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in sv.values():
        c = s["cold"]
        lines.append(f"| {s['label']} | {c['targets']} | {_accuracy_and_time_cells(c)} | {c['nan']} | "
                     f"{c['outside_limits']} | {c.get('in_collision', '–')} |")
    c = sv.get("ours", {}).get("cold", {})
    if "targets_in_collision" in c:
        lines += ["", f"{c['targets_in_collision']} of the {c['targets']} cold targets come from configurations in "
                  "self-collision by our solver's capsule model (which it keeps clear of); ours on the others: "
                  f"{_pct(c['success_collision_free'])}; of the {c['targets_in_collision']}, ours meets "
                  f"{c.get('met_in_collision', 0)} with another posture, clear of itself, and answers the others "
                  "with the closest clear approach. \"In self-collision\": answers inside the arm, the torso, the head "
                  "or the other arm (at zero) by the same capsule model."]
    lines += ["", "**Streamed** (all three paths; success and errors over the judged ticks, times and jumps over all)",
              "",
              "| solver | judged ticks | success | pos. error [mm] | rot. error [mrad] | wall time [ms] "
              "| CPU time [ms] | max joint jump per tick [rad] | NaN | in self-collision |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in sv.values():
        st = s["streamed"]
        lines.append(f"| {s['label']} | {st['judged_ticks']} | {_accuracy_and_time_cells(st)} | "
                     f"{st['max_joint_jump_rad']:.3f} | {st['nan']} | {st.get('in_collision', '–')} |")
    lines += ["", f"Goals (ours): cold success ≥ {100 * GOALS['cold_success']:g} %, cold median < "
              f"{GOALS['cold_median_ms']:g} ms; "
              f"streamed success {100 * GOALS['streamed_success']:g} %, streamed median "
              f"< {GOALS['streamed_median_ms']:g} ms, p99 < {GOALS['streamed_p99_ms']:g} ms.", ""]
    if "ours" in sv:
        o = sv["ours"]

        def met(ok: bool) -> str:
            return "met" if ok else "**not met**"

        def t(d: dict, key: str, stat: str) -> float:
            v = d[key][stat]
            return 1e9 if v is None else v
        lines += ["Ours against the goals: "
                  f"cold success {met(o['cold']['success'] >= GOALS['cold_success'])} on all targets"
                  + (f" ({met(o['cold']['success_collision_free'] >= GOALS['cold_success'])} on the collision-free "
                     "ones: the others ask for the arm inside itself, which it refuses by design)"
                     if o["cold"].get("success_collision_free") is not None else "") + "; "
                  f"cold median {met(t(o['cold'], 'time_ms', 'median') < GOALS['cold_median_ms'])} wall, "
                  f"{met(t(o['cold'], 'cpu_ms', 'median') < GOALS['cold_median_ms'])} CPU; "
                  f"streamed success {met(o['streamed']['success'] >= GOALS['streamed_success'])}; "
                  f"streamed median {met(t(o['streamed'], 'time_ms', 'median') < GOALS['streamed_median_ms'])} wall, "
                  f"{met(t(o['streamed'], 'cpu_ms', 'median') < GOALS['streamed_median_ms'])} CPU; "
                  f"streamed p99 {met(t(o['streamed'], 'time_ms', 'p99') < GOALS['streamed_p99_ms'])} wall, "
                  f"{met(t(o['streamed'], 'cpu_ms', 'p99') < GOALS['streamed_p99_ms'])} CPU.", ""]
    if "ours" in sv and len(sv) > 1:
        lines += ["Ours against each peer (ahead: at least as successful, and faster; median / p99 CPU time): "
                  + "; ".join(_versus(sv["ours"], s) for n, s in sv.items() if n != "ours") + ".", ""]
    lines += ["**Per path**: success on the judged ticks; CPU time median / p99 [ms]; max joint jump per tick [rad]. "
              "Beyond the reach margin of `out_of_reach`: position error median / max [mm], its excess over the "
              "bound a kept orientation allows (wrist-centre distance − reach) max [mm] "
              "(negative: orientation given up "
              "for position), max joint jump [rad].", "",
              "| solver | " + " | ".join(tg["streamed"]) + " | beyond reach |",
              "|---|" + "---:|" * (len(tg["streamed"]) + 1)]
    for s in sv.values():
        cells = []
        for p in s["paths"].values():
            cells.append(f"{_pct(p['success'])}; {_ms(p['cpu_ms']['median'])} / {_ms(p['cpu_ms']['p99'])}; "
                         f"{p['max_joint_jump_rad']:.3f}")
        far = s["paths"].get("out_of_reach", {}).get("unjudged")
        beyond = "–" if not far else (f"{1e3 * far['position_error_m']['median']:.1f} / "
                                      f"{1e3 * far['position_error_m']['max']:.1f}; "
                                      f"{1e3 * far['excess_over_geometric_bound_m']['max']:.1f}; "
                                      f"{far['max_joint_jump_rad']:.3f}")
        lines.append(f"| {s['label']} | " + " | ".join(cells) + f" | {beyond} |")
    lines += ["", "Settings:", ""]
    for name, s in sv.items():
        st = s["settings"]
        if name == "ours" and isinstance(st.get("config"), dict):
            st = dict(st, config="config/relaxed_ik.yaml `solver`")
        lines.append(f"- {s['label']}: " + "; ".join(f"{k} {v}" for k, v in st.items()))
    lines += ["", "Each solver's own FK against pinocchio's (max |ΔT| over 20 random q): " + ", ".join(
        f"{s['label']} {s['fk_check_max_error']:.1e}" for s in sv.values() if "fk_check_max_error" in s) + "."]
    lines += ["", "Versions: " + ", ".join(f"{k} {v}" for k, v in result.get("versions", {}).items()), "",
              "![solve times and streamed errors](arm_ik.png)", ""]
    return "\n".join(lines)


def plot(summary: dict, raw: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(summary["solvers"])
    labels = {n: summary["solvers"][n]["label"] for n in names}
    paths = raw["paths"]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))

    colors = {n: f"C{i}" for i, n in enumerate(names)}

    def cdf(ax, data, title, xlabel, thr=None, dashed=None):
        for n in names:
            for d, style, lab in ((data, "-", labels[n]), (dashed, "--", None)):
                if d is None:
                    continue
                x = np.sort(np.asarray(d[n], dtype=float))
                x = x[np.isfinite(x)]
                if len(x):
                    ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=lab, color=colors[n],
                            linestyle=style, linewidth=1.2 if style == "-" else 0.8)
        if thr is not None:
            ax.axvline(thr, color="k", linestyle=":", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction of solves")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")

    cdf(axes[0, 0], {n: raw["cold"][n][3] * 1e3 for n in names}, "cold solve time: CPU (solid), wall (dashed)",
        "ms", GOALS["cold_median_ms"], {n: raw["cold"][n][2] * 1e3 for n in names})
    cdf(axes[0, 1], {n: np.concatenate([raw["streamed"][n][p.name][3] for p in paths]) * 1e3 for n in names},
        "streamed solve time, all paths: CPU (solid), wall (dashed)", "ms", GOALS["streamed_p99_ms"],
        {n: np.concatenate([raw["streamed"][n][p.name][2] for p in paths]) * 1e3 for n in names})
    cdf(axes[0, 2], {n: np.maximum(raw["cold"][n][0], 1e-12) for n in names}, "cold position error", "m", POS_TOL)
    for ax, p in zip(axes[1], paths):
        t = np.arange(len(p.targets)) / RATE_HZ
        for n in names:
            ax.semilogy(t, np.maximum(raw["streamed"][n][p.name][0], 1e-12), label=labels[n], linewidth=1,
                        color=colors[n])
        ax.axhline(POS_TOL, color="k", linestyle=":", linewidth=0.8)
        if (~p.judged).any():
            ax.fill_between(t, 1e-12, 10, where=~p.judged, color="grey", alpha=0.2, label="beyond reach margin")
        ax.set_ylim(1e-10, 1)
        ax.set_title(f"streamed '{p.name}': position error")
        ax.set_xlabel("time [s] (100 Hz ticks)")
        ax.set_ylabel("m")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle("R1 left arm IK: our ArmIK against KDL, pink and ikpy on the same targets")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
