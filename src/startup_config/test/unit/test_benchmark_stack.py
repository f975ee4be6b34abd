"""The stack benchmark's report without a stack: latency summaries, the Markdown page, the plot, the windows."""
from __future__ import annotations

import pytest

from r1_startup.benchmark_stack import GOALS, LatencyRounds, markdown, plot, stock_windows


def result(profile: str, hz: float) -> dict:
    return {"profile": profile, "up_after_s": 42.0, "topics_not_live": [], "window_wall_s": 60.0,
            "window_ros_s": 54.0, "ros_clock_share": 0.9, "sim_real_time_factor": 0.9,
            "machine_stalled_share": 0.02, "machine_worst_stall_ms": 120,
            "topics": {"/hdas/feedback_arm_left": {"hz_wall": hz, "hz_ros": hz, "stock_window": [450.0, 550.0],
                                                   "in_window": 450.0 <= hz <= 550.0},
                       "/hdas/bms": {"hz_wall": 2.0, "hz_ros": 2.0, "stock_window": None, "in_window": None}},
            "processes": {"HDAS": {"cpu_percent": 70.0, "rss_mb": 80.0}, "r1_sim_node": {"cpu_percent": 60.0,
                                                                                       "rss_mb": 120.0}},
            "total_cores": 1.3, "total_rss_mb": 200,
            "latency": {k: LatencyRounds.summary([0.010, 0.012, 0.020]) for k in
                        ("pose_to_joint_target", "joint_target_to_command", "pose_to_command")},
            "hdas_command_age": {"left_arm": {"latency_ms_median": "1.2", "latency_ms_p99": "3.4"}}}


def test_latency_summary_in_milliseconds():
    assert LatencyRounds.summary([0.010, 0.012, 0.020]) == {"n": 3, "median_ms": 12.0, "p99_ms": 19.84}
    assert LatencyRounds.summary([]) == {"n": 0, "median_ms": None, "p99_ms": None}


def test_markdown_reports_each_profile_and_marks_rates_out_of_their_window():
    text = markdown([result("stock", 500.0), result("light", 100.0)], "2025-01-01 00:00:00")
    assert text.startswith("# The whole stack on the simulated R1 (2025-01-01 00:00:00)")
    assert f"| stock | 42.0 s | 90 % | 2 % (worst 120 ms) | 1.3 | < {GOALS['total_cores']} | 200 MiB |" in text
    assert "| `/hdas/feedback_arm_left` | 450–550 | 500.0 | 100.0 **out** |" in text
    assert "| `/hdas/bms` | — | 2.0 | 2.0 |" in text
    assert "| pose target → motor command | 12.0 / 19.84 (n=3) | 12.0 / 19.84 (n=3) |" in text
    assert "| r1_sim_node | 60.0 % / 120.0 | 60.0 % / 120.0 |" in text


def test_plot_writes_a_png(tmp_path):
    plot([result("stock", 500.0), result("light", 100.0)], tmp_path / "stack.png")
    assert (tmp_path / "stack.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_stock_windows_are_the_self_checks_else_ten_percent_around_the_vendors_rate():
    windows = stock_windows()
    assert windows and all(w is None or (len(w) == 2 and w[0] < w[1]) for w in windows.values())
    assert tuple(windows["/hdas/feedback_arm_left"]) == (450, 550)          # HDAS's check_windows.yaml
    assert windows["/motion_control/control_chassis"] == pytest.approx((180.0, 220.0))   # the vendor's 200 Hz
    assert windows["/diagnostics"] is None                                  # no stock rate
