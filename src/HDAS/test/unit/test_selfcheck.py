"""Self-check core: rates from arrival times, per-index value windows, mode selection, config refusal, the table."""
from __future__ import annotations

import copy
import dataclasses
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from hdas.selfcheck import (
    FieldWindow,
    TopicAccumulator,
    TopicCheck,
    WindowConfigError,
    evaluate,
    field_values,
    format_table,
    load_windows,
    parse_windows,
)

WINDOWS = Path(__file__).resolve().parents[2] / "config" / "check_windows.yaml"
FOLDED = (1.74, -2.7, -0.96, 0.0)   # r1_control_manager's torso preset
TORSO = TopicCheck("/hdas/feedback_torso", "sensor_msgs/JointState", (450, 550),
                   (FieldWindow("position", (1.5, -2.9, -1.1, -0.2), (1.9, -2.5, -0.8, 0.2), 4),))


def feed(check: TopicCheck, hz: float, seconds: float, values: dict, start: float = 100.0,
         jitter: float = 0.0) -> TopicAccumulator:
    """An accumulator fed as a subscriber would be: n messages at arrival times start + k/hz (± jitter)."""
    acc = TopicAccumulator(check)
    n = int(round(hz * seconds)) + 1
    for k in range(n):
        acc.add(start + k / hz + (jitter if k % 2 else -jitter), values)
    return acc


def raw() -> dict:
    return yaml.safe_load(WINDOWS.read_text())


# --- rates ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("hz,ok", [(500, True), (451, True), (549, True), (440, False), (560, False)])
def test_rate_window(hz: float, ok: bool) -> None:
    r = feed(TORSO, hz, 5.0, {"position": FOLDED}).result()
    assert r.hz == pytest.approx(hz)
    assert r.rate_ok is ok and r.ok is ok


def test_rate_uses_arrival_span_not_the_nominal_window() -> None:
    """Connected 1.5 s late into a 5 s window and delivered in bursts: still 500 Hz, not 350."""
    acc = TopicAccumulator(TORSO)
    for k in range(1750):                 # 3.5 s at 500 Hz, sent from t = 101.5
        sent = 101.5 + k * 0.002
        acc.add(math.ceil(sent / 0.02) * 0.02, {"position": FOLDED})   # handed over in 20 ms bursts
    r = acc.result()
    assert r.hz == pytest.approx(500, rel=0.01) and r.ok


def test_low_rate_topic_from_few_messages() -> None:
    status = TopicCheck("/hdas/feedback_status_torso", "hdas_msg/feedback_status", (0.5, 1.5))
    r = feed(status, 1.0, 4.0, {}, jitter=0.05).result()   # 5 messages in a 5 s window
    assert r.count == 5 and r.hz == pytest.approx(1.0, rel=0.05) and r.ok


def test_missing_topic_fails() -> None:
    r = TopicAccumulator(TORSO).result()
    assert r.count == 0 and r.hz is None and not r.ok and r.note == "no messages"
    assert "FAIL (no messages)" in format_table([r])


def test_single_message_has_no_rate_and_fails() -> None:
    acc = TopicAccumulator(TORSO)
    acc.add(1.0, {"position": FOLDED})
    r = acc.result()
    assert r.hz is None and not r.rate_ok and r.note == "only 1 message"
    assert all(v.ok for v in r.values)


def test_simultaneous_arrivals_are_an_infinite_rate() -> None:
    r = evaluate(TORSO, [1.0, 1.0], {"position": [FOLDED, FOLDED]})
    assert r.hz == math.inf and not r.ok


# --- values --------------------------------------------------------------------------------------

def test_value_window_violation_is_reported_per_index() -> None:
    acc = TopicAccumulator(TORSO)
    for k in range(501):
        pos = list(FOLDED)
        if k == 250:
            pos[2] = -0.5                 # one sample of joint 3 leaves [-1.1, -0.8]
        acc.add(k / 500, {"position": tuple(pos)})
    r = acc.result()
    assert r.rate_ok and not r.ok
    by_label = {v.label: v for v in r.values}
    assert [v.ok for v in r.values] == [True, True, False, True]
    j3 = by_label["position[2]"]
    assert j3.max == pytest.approx(-0.5) and j3.min == pytest.approx(-0.96)
    assert j3.avg == pytest.approx((500 * -0.96 - 0.5) / 501)
    assert (j3.lower, j3.upper) == (-1.1, -0.8)


def test_lower_bound_violation_and_nan_fail() -> None:
    r = evaluate(TORSO, [0.0, 0.002], {"position": [(1.4, -2.7, -0.96, 0.0), (1.74, -2.7, -0.96, math.nan)]})
    assert [v.ok for v in r.values] == [False, True, True, False]


def test_wrong_length_fails_and_missing_indices_have_no_values() -> None:
    r = evaluate(TORSO, [0.0, 0.002], {"position": [FOLDED[:3], FOLDED[:3]]})
    labels = {v.label: v for v in r.values}
    assert not labels["position length"].ok and "expected 4 entries, got 3" in labels["position length"].note
    assert not labels["position[3]"].ok and labels["position[3]"].note == "no values"
    assert labels["position[0]"].ok


def test_arm_gripper_entry_is_not_bounded() -> None:
    arm = parse_windows(raw()).checks(1)[5]
    assert arm.topic == "/hdas/feedback_arm_left"
    home = (0.0, 0.5, -0.5, 0.0, 0.0, 0.0, 37.0)   # gripper entry far outside any joint bound
    r = feed(arm, 500, 2.0, {"position": home}).result()
    assert r.ok and [v.label for v in r.values] == [f"position[{i}]" for i in range(6)]
    r = feed(arm, 500, 2.0, {"position": home[:6]}).result()
    assert not r.ok and r.values[0].label == "position length"


def test_scalar_bounds_apply_to_every_entry_and_scalar_fields_are_unindexed() -> None:
    chassis = TopicCheck("/hdas/feedback_chassis", "sensor_msgs/JointState", (150, 250),
                         (FieldWindow("effort", -1000.0, 1000.0),))
    r = evaluate(chassis, [0.0, 0.005], {"effort": [(0.0,) * 6, (0.0, 0.0, 0.0, 0.0, 1001.0, 0.0)]})
    assert [v.label for v in r.values] == [f"effort[{i}]" for i in range(6)]
    assert [v.ok for v in r.values] == [True] * 4 + [False, True]
    bms = TopicCheck("/hdas/bms", "hdas_msg/bms", (1.5, 2.5), (FieldWindow("voltage", 42.0, 60.0),))
    r = evaluate(bms, [0.0, 0.5], {"voltage": [(41.9,), (48.0,)]})
    assert [v.label for v in r.values] == ["voltage"] and not r.ok and r.values[0].min == pytest.approx(41.9)


def test_empty_field_fails() -> None:
    r = evaluate(TopicCheck("/t", "sensor_msgs/JointState", (1, 2), (FieldWindow("position", -1.0, 1.0),)),
                 [0.0, 1.0], {"position": [(), ()]})
    assert not r.ok and r.values[0].note == "no values"


def test_extract_reads_attribute_paths() -> None:
    msg = SimpleNamespace(position=[1.0, 2.0], voltage=48.5, linear_acceleration=SimpleNamespace(z=9.8), name="x")
    assert field_values(msg, "position") == (1.0, 2.0)
    assert field_values(msg, "voltage") == (48.5,)
    assert field_values(msg, "linear_acceleration.z") == (9.8,)
    with pytest.raises(TypeError, match="string"):
        field_values(msg, "name")
    with pytest.raises(AttributeError):
        field_values(msg, "positon")
    assert TORSO.extract(SimpleNamespace(position=FOLDED)) == {"position": FOLDED}


# --- shipped config and modes --------------------------------------------------------------------

def test_mode_0_checks_the_folded_torso_and_no_arms() -> None:
    checks = {c.topic: c for c in load_windows(WINDOWS).checks(0)}
    assert list(checks) == ["/hdas/feedback_torso", "/hdas/feedback_status_torso", "/hdas/feedback_chassis",
                            "/hdas/bms", "/hdas/imu_chassis"]
    assert checks["/hdas/feedback_torso"] == TORSO
    assert checks["/hdas/feedback_chassis"].rate == (150, 250)
    assert {f.field: (f.lower, f.upper) for f in checks["/hdas/feedback_chassis"].fields} == \
        {k: (-1000, 1000) for k in ("position", "velocity", "effort")}
    assert checks["/hdas/bms"].fields == (FieldWindow("voltage", 42.0, 60.0),)
    assert checks["/hdas/bms"].rate == (1.5, 2.5) and checks["/hdas/imu_chassis"].rate == (50, 150)
    assert checks["/hdas/feedback_status_torso"].type == "hdas_msg/feedback_status"


def test_mode_1_adds_the_arms_and_bounds_the_torso_by_its_joint_limits() -> None:
    w = load_windows(WINDOWS)
    m0, m1 = {c.topic: c for c in w.checks(0)}, {c.topic: c for c in w.checks(1)}
    assert set(m1) - set(m0) == {"/hdas/feedback_arm_left", "/hdas/feedback_arm_right",
                                 "/hdas/feedback_status_arm_left", "/hdas/feedback_status_arm_right"}
    for topic in set(m0) - {"/hdas/feedback_torso"}:
        assert m1[topic] == m0[topic], topic
    torso = m1["/hdas/feedback_torso"].fields[0]
    tol = 0.02   # the driver's own POS_EXCEED tolerance
    assert torso.lower == pytest.approx(np.subtract((-1.1345, -2.7925, -1.8326, -3.0543), tol))
    assert torso.upper == pytest.approx(np.add((1.8326, 2.5307, 1.5708, 3.0543), tol))
    arm = m1["/hdas/feedback_arm_right"]
    assert arm == dataclasses.replace(m1["/hdas/feedback_arm_left"], topic=arm.topic)
    assert arm.rate == (450, 550) and arm.fields[0].length == 7
    assert arm.fields[0].lower == pytest.approx(np.subtract((-2.8798, 0.0, -3.3161, -2.8798, -1.6581, -2.8798), tol))
    assert arm.fields[0].upper == pytest.approx(np.add((2.8798, 3.2289, 0.0, 2.8798, 1.6581, 2.8798), tol))
    assert m1["/hdas/feedback_status_arm_left"].rate == (0.5, 1.5)


def test_standing_torso_passes_mode_1_and_fails_mode_0() -> None:
    w = load_windows(WINDOWS)
    standing = (0.6, -1.2, -0.6, 0.0)
    results = [feed(w.checks(m)[0], 500, 2.0, {"position": standing}).result() for m in (0, 1)]
    assert [r.ok for r in results] == [False, True]


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(WindowConfigError, match=r"mode 2 is not in the config \(have 0, 1\)"):
        load_windows(WINDOWS).checks(2)


# --- config validation ---------------------------------------------------------------------------

TORSO_0 = ("modes", 0, "/hdas/feedback_torso")


def at(d: dict, path: tuple) -> dict:
    for k in path:
        d = d[k]
    return d


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d.pop("modes"), "needs a non-empty 'modes'"),
    (lambda d: d["modes"].update({"x": d["modes"][0]}), "key 'x' is not an integer mode"),
    (lambda d: d["modes"].update({2: {}}), "modes/2: needs a non-empty mapping"),
    (lambda d: d["modes"][0].update({"hdas/bms": d["modes"][0]["/hdas/bms"]}), "absolute name"),
    (lambda d: at(d, TORSO_0).pop("rate"), "modes/0//hdas/feedback_torso: missing 'rate'"),
    (lambda d: at(d, TORSO_0).update(rate=[550, 450]), "need 0 < min <= max"),
    (lambda d: at(d, TORSO_0).update(rate=[450]), r"expected \[min_hz, max_hz\]"),
    (lambda d: at(d, TORSO_0).update(rate=["fast", 550]), "'fast' is not a number"),
    (lambda d: at(d, TORSO_0).update(type="JointState"), "not 'package/Message'"),
    (lambda d: at(d, TORSO_0).update(fileds={}), r"unknown key\(s\) fileds"),
    (lambda d: at(d, TORSO_0)["fields"]["position"].pop("max"), "fields/position: missing 'max'"),
    (lambda d: at(d, TORSO_0)["fields"]["position"].update(max=[1.9, -2.5]), "min has 4 entries, max has 2"),
    (lambda d: at(d, TORSO_0)["fields"]["position"].update(max=2.0), "both be numbers or both be lists"),
    (lambda d: at(d, TORSO_0)["fields"]["position"].update(max=[1.9, -2.5, -1.2, 0.2]),
     "min -1.1 > max -1.2 at index 2"),
    (lambda d: at(d, TORSO_0)["fields"]["position"].update(length=3), "4 bounds but length 3"),
    (lambda d: at(d, TORSO_0)["fields"]["position"].update(length=0), "length: must be a positive integer"),
    (lambda d: at(d, TORSO_0)["fields"]["position"].update(min=[]), "position/min: empty list"),
    (lambda d: at(d, TORSO_0)["fields"]["position"].update(tolerance=0.1), r"unknown key\(s\) tolerance"),
    (lambda d: at(d, TORSO_0).update(fields=[1, 2]), "fields: expected a mapping"),
])
def test_bad_config_is_refused_with_the_key_named(mutate, message: str) -> None:
    d = copy.deepcopy(raw())
    mutate(d)
    with pytest.raises(WindowConfigError, match=message):
        parse_windows(d)


def test_load_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("modes: {0: [unclosed\n")
    with pytest.raises(WindowConfigError, match="bad.yaml"):
        load_windows(bad)
    with pytest.raises(WindowConfigError, match="missing.yaml"):
        load_windows(tmp_path / "missing.yaml")
    bad.write_text("modes: {0: {/t: {type: a/B, rate: [1, 0]}}}\n")
    with pytest.raises(WindowConfigError, match=r"bad.yaml: modes/0//t/rate"):
        load_windows(bad)


# --- table ---------------------------------------------------------------------------------------

def test_table_shows_measurements_limits_and_verdicts() -> None:
    w = load_windows(WINDOWS).checks(0)
    good = feed(w[0], 500, 2.0, {"position": FOLDED}).result()
    bms = feed(w[3], 2, 4.0, {"voltage": (40.5,)}).result()
    missing = TopicAccumulator(w[4]).result()
    table = format_table([good, bms, missing])
    lines = table.splitlines()
    assert lines[0].split() == ["Topic", "Hz", "Rate", "window", "Check", "Min", "Max", "Avg", "Limits", "Result"]
    torso = next(line for line in lines if line.startswith("/hdas/feedback_torso"))
    assert "500.0" in torso and "[450, 550]" in torso and torso.endswith("OK")
    j0 = next(line for line in lines if "position[0]" in line)
    assert "1.740" in j0 and "[1.5, 1.9]" in j0 and j0.endswith("OK")
    volt = next(line for line in lines if "voltage" in line)
    assert "40.500" in volt and "[42, 60]" in volt and volt.endswith("FAIL")
    imu = next(line for line in lines if line.startswith("/hdas/imu_chassis"))
    assert imu.endswith("FAIL (no messages)")
    assert lines[-1] == "Overall: FAIL (2 of 3 topics: /hdas/bms, /hdas/imu_chassis)"
    assert format_table([good]).splitlines()[-1] == "Overall: OK"


def test_rates_can_be_reported_without_judging() -> None:
    slow = [i * 0.1 for i in range(5)]                     # 10 Hz against a 450-550 window
    judged = evaluate(TORSO, slow, {"position": [FOLDED] * 5})
    assert not judged.ok and judged.hz == pytest.approx(10.0)
    reported = evaluate(TORSO, slow, {"position": [FOLDED] * 5}, judge_rate=False)
    assert reported.ok and reported.hz == pytest.approx(10.0) and "not judged" in reported.note
    # values and presence are still judged
    assert not evaluate(TORSO, [], {"position": []}, judge_rate=False).ok
    bad = evaluate(TORSO, slow, {"position": [(9.0, 9.0, 9.0, 9.0)] * 5}, judge_rate=False)
    assert not bad.ok
    # one message in the window is alive when rates are not judged, still not when they are
    once = evaluate(TORSO, [0.0], {"position": [FOLDED]}, judge_rate=False)
    assert once.ok and once.hz is None
    assert not evaluate(TORSO, [0.0], {"position": [FOLDED]}).ok
    assert not evaluate(TORSO, [0.0], {"position": [(9.0, 9.0, 9.0, 9.0)]}, judge_rate=False).ok
