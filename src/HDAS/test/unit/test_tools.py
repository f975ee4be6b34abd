"""The logic of HDAS's tools behind their short scripts, without a master: check_node's arguments,
prompt, stamping and message checks; r1_monitor's clock note and arguments; the benchmarks' tables."""
from __future__ import annotations

from pathlib import Path

import pytest

from hdas import check_node, monitor
from hdas.benchmarks import delivery, sim
from hdas.selfcheck import FieldWindow, TopicAccumulator, TopicCheck, load_windows

WINDOWS = load_windows(str(Path(__file__).resolve().parents[2] / "config/check_windows.yaml"))


def test_check_node_arguments_as_the_stock_tool() -> None:
    args = check_node.build_parser().parse_args([])
    assert (args.mode, args.duration, args.rates, args.config) == (None, 5.0, "judge", None)
    args = check_node.build_parser().parse_args(["--mode", "1", "--duration", "4", "--rates", "report"])
    assert (args.mode, args.duration, args.rates) == (1, 4.0, "report")


def test_check_node_asks_for_a_mode_until_one_of_the_config_is_typed(capsys) -> None:
    answers = iter(["7", "x", " 1 "])
    assert check_node.ask_mode(WINDOWS, read=lambda _prompt: next(answers)) == 1
    assert capsys.readouterr().err.count("robot mode must be one of 0, 1") == 2


def test_check_node_without_a_mode_on_stdin_is_a_usage_error() -> None:
    def eof(_prompt: str) -> str:
        raise EOFError
    with pytest.raises(SystemExit) as e:
        check_node.ask_mode(WINDOWS, read=eof)
    assert e.value.code == check_node.EXIT_USAGE


def test_check_node_stamps_each_message_with_its_arrival_on_its_clock() -> None:
    from sensor_msgs.msg import JointState
    check = TopicCheck("/hdas/feedback_torso", "sensor_msgs/JointState", (400.0, 600.0),
                       (FieldWindow("position", -3.0, 3.0),))
    acc = TopicAccumulator(check)
    times = iter([1.0, 1.002, 1.004])
    on_message = check_node.recorder(acc, lambda: next(times))
    for q in (0.1, 0.2, 0.3):
        on_message(JointState(position=[q] * 4))
    result = acc.result()
    assert result.count == 3 and result.hz == pytest.approx(500.0) and result.ok


def test_check_node_refuses_windows_it_cannot_measure() -> None:
    assert check_node.unusable(WINDOWS.checks(1)) == ""
    odd = TopicCheck("/x", "sensor_msgs/Image", (1.0, 2.0))
    assert check_node.unusable([odd]) == "/x: type sensor_msgs/Image is not one of " + \
        ", ".join(check_node.MESSAGE_TYPES)
    misspelt = TopicCheck("/y", "hdas_msg/bms", (1.0, 2.0), (FieldWindow("voltagee", 0.0, 60.0),))
    assert check_node.unusable([misspelt]).startswith("/y: ")


def test_r1_monitor_notes_how_fast_simulated_time_runs() -> None:
    assert monitor.ClockWatch(sim=False).note() == "ROS time: wall clock"
    clock = {"wall": 100.0, "ros": 0.0}
    watch = monitor.ClockWatch(sim=True, ros_now=lambda: clock["ros"], wall_now=lambda: clock["wall"])
    assert watch.note() == "ROS time: simulated, no /clock yet"
    clock["ros"] = 50.0
    assert watch.note() == "ROS time: simulated"
    clock["wall"], clock["ros"] = 102.0, 51.0                   # 1 s of simulated time in 2 s
    assert watch.note() == "ROS time: simulated, 50 % of wall time"


def test_r1_monitor_arguments() -> None:
    args = monitor.build_parser().parse_args(["--once", "20", "--require", "HDAS", "--require", "r1_sim",
                                              "--topics", "/a", "/b"])
    assert (args.once, args.require, args.topics, args.period) == (20.0, ["HDAS", "r1_sim"], ["/a", "/b"], 1.0)


def test_benchmark_sim_tables() -> None:
    assert sim.numeric("2.5") and not sim.numeric("n/a")
    topics = {"/a": ("sensor_msgs/JointState", (450.0, 550.0)), "/b": ("hdas_msg/bms", (1.5, 2.5))}
    rates = sim.rate_table(topics, {"/a": 10, "/b": 0}, {"/a": 5010, "/b": 10}, 10.0)
    assert rates == {"/a": {"hz": 500.0, "window": [450.0, 550.0], "in_window": True},
                     "/b": {"hz": 1.0, "window": [1.5, 2.5], "in_window": False}}
    sample = {"cycle_hz": 499.0, "target_hz": 500.0, "frames_sent_per_s": 3500.0, "frames_received_per_s": 3490.0,
              "load_percent": 87.0, "send_errors": 0.0, "handler_errors": 1.0}
    buses = sim.bus_table({"left_arm": [sample, dict(sample, cycle_hz=501.0, handler_errors=2.0)], "none": []})
    assert buses == {"left_arm": {"cycle_hz": 500.0, "target_hz": 500.0, "frames_sent_per_s": 3500,
                                  "frames_received_per_s": 3490, "load_percent": 87.0, "errors": 2}}
    result = {"date": "today", "duration_s": 30.0, "rates": rates, "cpu_percent": {"HDAS": 75.0},
              "buses": buses, "check_node_mode_1": {"passed": False, "table": "the table\n"},
              "machine": {"cpus": 2, "platform": "linux", "python": "3.11", "stalled_fraction": 0.05,
                          "worst_stall_ms": 12}}
    text = sim.markdown(result)
    assert "| `/b` | 1.0 | 1.5–2.5 | **no** |" in text and "| HDAS | 75 |" in text
    assert "| left_arm | 500 (500) | 3500 | 3490 | 87 | 2 |" in text and "**FAIL**" in text


def test_benchmark_delivery_figures() -> None:
    # 1000 messages in 2 s to two subscribers; the publisher used 0.2 s of CPU, the subscribers 0.1 and 0.3
    r = delivery.summary("direct", 1000, 2.0, [1000, 990], 0.2, [0.1, 0.3], 2.0)
    assert r == {"publisher": "direct", "subscribers": 2, "rate_hz": 500.0, "delivered_share": 0.99,
                 "publisher_cpu_percent": 10.0, "publisher_us_per_message": 200.0,
                 "publisher_us_per_delivery": 100.0, "subscriber_cpu_percent": 10.0,
                 "subscriber_us_per_message": 200.0}
    text = delivery.markdown([r], 0.02, "today")
    assert text.startswith("# One message delivery (today)")
    assert "| direct | 2 | 500.0 | 10.0 % | 200.0 | 100.0 | 10.0 % | 200.0 |" in text
