"""hdas.monitor_table: the r1_monitor table (levels, stale, n/a, ordering, widths, truncation)."""
from hdas.monitor_table import (
    MISSING,
    MODULE_WIDTH,
    StatusBoard,
    TopicRate,
    counters,
    format_number,
    level_name,
    missing,
    module_rows,
    render,
    table,
    truncate,
)
from r1_common.loop_stats import LoopStats


def board(*entries):
    """StatusBoard from (name, level, message, values, received) tuples."""
    b = StatusBoard()
    for name, level, message, values, received in entries:
        b.update(name, level, message, "hw", values, received)
    return b.snapshot()


STANDARD = {"rate_hz": "100.0", "compute_ms_median": "0.123", "compute_ms_p99": "1.500",
            "latency_ms_median": "2.000", "latency_ms_p99": "12.345", "dropped": "1", "clamped": "2", "errors": "0"}


def test_levels_by_name_and_stale_after_three_seconds():
    s = board(("a: x", 0, "", {}, 10.0), ("b: x", 1, "", {}, 10.0), ("c: x", 2, "", {}, 10.0),
              ("d: x", 3, "", {}, 10.0), ("e: x", 7, "", {}, 10.0))
    assert [level_name(s[n], 12.0) for n in sorted(s)] == ["OK", "WARN", "ERROR", "STALE", "7"]
    assert level_name(s["a: x"], 12.99) == "OK"
    assert level_name(s["a: x"], 13.01) == "STALE"          # not heard for more than 3 s
    assert level_name(s["c: x"], 14.0, stale_after=5.0) == "ERROR"


def test_a_row_reads_the_standard_keys_and_counters():
    s = board(("HDAS: bus torso", 0, "ok", STANDARD, 0.0))
    (row,) = module_rows(s, 1.0)
    assert row == ("HDAS: bus torso", "OK", "100", "0.12/1.50", "2.00/12.3", "1/2/0", "ok")


def test_na_and_missing_values():
    values = {"rate_hz": "0.0", "compute_ms_median": "n/a", "compute_ms_p99": "n/a", "dropped": "3"}
    s = board(("m: a", 1, "waiting", values, 0.0), ("m: b", 0, "", {"state": "idle"}, 0.0))
    a, b = module_rows(s, 0.5)
    assert a[2:6] == ("0.00", "n/a/n/a", MISSING, "3/-/-")
    assert b[2:6] == (MISSING, MISSING, MISSING, MISSING)     # a module without the standard keys
    assert format_number("nan") == "n/a" and format_number(None) == MISSING and format_number("fast") == "fast"
    assert counters({"errors": "2"}) == "-/-/2"


def test_loop_stats_values_read_back():
    stats = LoopStats(window_s=10.0)
    for i in range(11):
        stats.tick(i * 0.1, compute_s=0.001)
    s = board(("n: loop", 0, "", stats.values(1.0, {"dropped": 0, "clamped": 0, "errors": 0}), 0.0))
    (row,) = module_rows(s, 0.0)
    assert row[2:6] == ("10.0", "1.00/1.00", "n/a/n/a", "0/0/0")


def test_rows_sorted_by_name_and_the_latest_status_wins():
    b = StatusBoard()
    for name in ("torso_speed_control: x", "HDAS: bus left_arm", "r1_sim: physics", "HDAS: bus chassis"):
        b.update(name, 0, "old", "", {}, 0.0)
    b.update("HDAS: bus chassis", 2, "new", "", [("rate_hz", "5")], 1.0)
    rows = module_rows(b.snapshot(), 1.0)
    assert [r[0] for r in rows] == ["HDAS: bus chassis", "HDAS: bus left_arm", "r1_sim: physics",
                                    "torso_speed_control: x"]
    assert rows[0][1:3] == ("ERROR", "5.00") and rows[0][-1] == "new"


def test_columns_line_up_and_long_messages_are_cut_to_the_width():
    long = "target out of reach: best pose 12.3 mm, 0.123 rad from it " * 4
    s = board(("a: short", 0, "ok", STANDARD, 0.0), ("b: long", 1, long, STANDARD, 0.0))
    lines = render(s, 0.0, width=100)
    head, rule, *rows = lines[1:]
    assert all(len(line) <= 100 for line in lines)
    assert rows[1].endswith("~") and "target out of" in rows[1]
    # every column starts at the same place in every line
    starts = [i for i, c in enumerate(rule) if c == "-" and (i == 0 or rule[i - 1] == " ")]
    for line in (head, *rows):
        for i in starts[1:]:
            assert line[i - 2:i] == "  " or line[i - 1] == " "
    assert head.split()[:3] == ["module", "level", "rate"]


def test_message_keeps_a_minimum_width_on_a_narrow_terminal():
    s = board(("a: b", 0, "a message of some length", STANDARD, 0.0))
    lines = render(s, 0.0, width=20)
    assert "a message " in lines[-1]           # not cut to nothing


def test_long_module_names_and_multiline_messages_are_one_line():
    name = "x" * (MODULE_WIDTH + 10)
    s = board((name, 0, "line one\nline two\tand a tab", {}, 0.0))
    (row,) = module_rows(s, 0.0)
    assert len(row[0]) == MODULE_WIDTH and row[0].endswith("~")
    line = render(s, 0.0, width=200)[-1]
    assert "\n" not in line and "line one line two and a tab" in line


def test_truncate():
    assert truncate("abcdef", 10) == "abcdef"
    assert truncate("abcdef", 4) == "abc~"
    assert truncate("abcdef", 1) == "a"
    assert truncate("abcdef", 0) == ""


def test_summary_line_and_empty_board():
    s = board(("a: x", 0, "", {}, 0.0), ("b: x", 1, "", {}, 0.0), ("c: x", 0, "", {}, -10.0))
    assert render(s, 0.0, title="r1_monitor")[0] == "r1_monitor  3 modules: 1 OK, 1 WARN, 1 STALE  (ms: median/p99)"
    assert render({}, 0.0)[1] == "(no /diagnostics heard yet)"


def test_topic_section_in_the_order_given():
    topics = {"/hdas/feedback_torso": TopicRate(99.96, 500, 0.01), "/controller": TopicRate(0.0, 0, None)}
    lines = render(board(("a: x", 0, "", {}, 0.0)), 0.0, topics=topics)
    i = lines.index("")
    assert lines[i + 1].split() == ["topic", "rate", "Hz", "messages", "last", "s", "ago"]
    assert lines[i + 3].split() == ["/hdas/feedback_torso", "100.0", "500", "0.0"]
    assert lines[i + 4].split() == ["/controller", "0.0", "0", "never"]


def test_table_aligns_numbers_right():
    lines = table(("name", "n"), [("a", "1"), ("bb", "100")], "<>")
    assert lines == ["name    n", "----  ---", "a       1", "bb    100"]


def test_missing_prefixes():
    names = ["HDAS: bus torso", "r1_jointTracker_demo_node: torso"]
    assert missing(names, ["HDAS", "r1_jointTracker_demo_node", "chassis_control_node"]) == ["chassis_control_node"]
    assert missing([], []) == []
