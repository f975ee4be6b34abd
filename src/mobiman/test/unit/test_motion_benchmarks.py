"""The tracker and motion benchmark modules (mobiman.benchmarks.tracker, .motion) without a simulator: the
core tick measurements on a few ticks, the reports and plots from made-up runs, the latency probe, the
module entry the tracker benchmark's helper processes use, and the short scripts in front of them."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from mobiman.benchmarks import motion as M
from mobiman.benchmarks import tracker as T

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def test_tracker_core_ticks() -> None:
    core = T.tick_times(60)
    assert core["ticks"] == 60 and 0 < core["median_us"] <= core["p99_us"] <= core["max_us"]


def test_motion_core_ticks() -> None:
    core = M.core_ticks(60)
    for key in ("chassis_tick", "torso_tick"):
        assert core[key]["ticks"] == 60 and 0 < core[key]["median_us"] <= core[key]["p99_us"]


def latency(rounds: int = 10) -> dict:
    return {"rounds": rounds, "answered": rounds, "median_ms": 0.5, "p99_ms": 1.2,
            "slowest_ms": [1.2, 1.0, 0.9, 0.8, 0.7]}


def test_tracker_report_and_plot(tmp_path: Path) -> None:
    core = {"ticks": 60, "median_us": 50.0, "p99_us": 80.0, "max_us": 90.0, "scheduling": "SCHED_OTHER"}
    move = {"t_target": [0.0, 3.0], "target": [0.8, 0.0], "t_cmd": [0.0, 1.0, 2.0], "p_des": [0.0, 0.4, 0.8],
            "v_des": [0.0, 1.0, 0.0], "t_fb": [0.0, 1.0, 2.0], "position": [0.0, 0.39, 0.8],
            "velocity": [0.0, 0.98, 0.0]}
    sim = {"latency": dict(latency(), tracker_counters={"scheduling": "SCHED_FIFO", "early_commands": "10",
                                                         "stale_feedback_events": "0"}),
           "alone": latency(), "move": move}
    result, md = T.report(core, sim, 0.05)
    assert result["tick_16_joints"] == core and result["goals"] == T.GOALS_US and "move" not in result
    assert "| tick, 16 joints" in md and "10/10 rounds" in md and "SCHED_FIFO" in md and "5 %" in md
    T.plot(move, tmp_path / "joint_tracker.png")
    assert (tmp_path / "joint_tracker.png").stat().st_size > 1000


def test_motion_report_and_plot(tmp_path: Path) -> None:
    core = {"chassis_tick": {"ticks": 60, "median_us": 20.0, "p99_us": 30.0},
            "torso_tick": {"ticks": 60, "median_us": 100.0, "p99_us": 200.0}}
    series = [[0.0, [0.0, 0.0, 0.0]], [1.0, [0.5, 0.0, 0.0]]]
    sim = {"chassis": {"targets": series, "ideal": series, "truth": series, "estimate": series,
                       "rms_error_vs_ideal": [0.01, 0.02, 0.03], "delay_s": 0.05, "rms_error_after_delay": 0.01},
           "torso": {"measured": [[0.0, [0.08, 0.38, 0.0]], [1.0, [0.08, 0.53, 0.001]]],
                     "commanded": [[0.0, [0.08, 0.38]], [1.0, [0.08, 0.53]]], "pitch_max_deviation_rad": 0.001,
                     "rise_measured_m": 0.149, "rise_commanded_m": 0.15, "closing_error_m": 0.002}}
    result, md = M.report(core, sim, light=True)
    assert result["profile"] == "light" and "measured" not in result["torso"] and "truth" not in result["chassis"]
    assert "149.0 mm" in md and "50 ms" in md and "light bus rates" in md
    M.plot(sim, tmp_path / "motion_control.png")
    assert (tmp_path / "motion_control.png").stat().st_size > 1000


def test_the_latency_probe_takes_the_first_moving_command() -> None:
    probe = T.FirstMoving()
    still, moving = SimpleNamespace(v_des=[0.0] * 6), SimpleNamespace(v_des=[0.0, 0.0, 0.0, 0.3, 0.0, 0.0])
    probe.on_command(moving)                                 # not armed: not taken
    assert probe.wait(0.01) is None
    probe.arm()
    probe.on_command(still)
    threading.Timer(0.02, probe.on_command, (moving,)).start()
    before = time.monotonic()
    arrived = probe.wait(5.0)
    assert arrived is not None and arrived >= before and probe.last is moving


def test_the_tracker_benchmark_runs_as_a_module() -> None:
    """Its helper processes (the feedback player, the tracker-alone run) are `python -m mobiman.benchmarks.tracker`."""
    out = subprocess.run([sys.executable, "-m", T.MODULE, "-h"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "--rounds" in out.stdout and "--ticks" in out.stdout


@pytest.mark.parametrize("script, module", [("benchmark_tracker", "tracker"), ("benchmark_motion", "motion")])
def test_the_scripts_are_short_and_run_the_modules(script: str, module: str) -> None:
    text = (SCRIPTS / script).read_text()
    # (12: the shebang, the docstring, the BLAS thread count asked for first, the import, the call)
    assert len(text.splitlines()) <= 12 and f"from mobiman.benchmarks.{module} import main" in text
    out = subprocess.run([sys.executable, str(SCRIPTS / script), "-h"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "--ticks" in out.stdout and "--out" in out.stdout
