"""The input checks every node runs first (r1_common.validation)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from r1_common.validation import (
    InputError,
    clamp_vector,
    data_time,
    finite_number,
    finite_vector,
    frame_id,
    plausible_positions,
    show,
    unit_quaternion,
)

LARGEST_STAMP = 4294967295 + 999999999e-9     # the largest time a ROS 1 header can carry


def test_finite_vector_judges_each_entry_so_huge_finite_values_pass():
    # a sum of these overflows to inf: the check must not form one
    v = finite_vector([1e308, 1e308, -1e308], "velocity", (3,))
    assert v.tolist() == [1e308, 1e308, -1e308]


@pytest.mark.parametrize("bad, index", [([0.0, math.nan, 1.0], 1), ([math.inf, 0.0, 0.0], 0), ([0, 0, -math.inf], 2)])
def test_finite_vector_names_the_first_non_finite_entry(bad, index):
    with pytest.raises(InputError, match=f"velocity .* is not finite at entry {index}"):
        finite_vector(bad, "velocity", (3,))


def test_finite_vector_refuses_other_lengths_and_says_which_are_taken():
    with pytest.raises(InputError, match="has 2 entries, expected 6 or 7"):
        finite_vector([0.0, 1.0], "p_des", (6, 7))


def test_a_huge_message_is_shown_shortened():
    e = pytest.raises(InputError, finite_vector, [0.0] * 1_000_000, "position", (6,)).value
    assert "1000000 entries" in str(e) and len(str(e)) < 200


def test_show_shortens_strings_and_numbers():
    assert show("x" * 500).endswith("...'") and len(show("x" * 500)) < 80
    assert show(1.0 / 3.0) == "0.3333"


def test_finite_number():
    assert finite_number(3, "stroke") == 3.0
    for bad in (math.nan, math.inf, "a", None):
        with pytest.raises(InputError, match="stroke"):
            finite_number(bad, "stroke")


def test_clamp_vector_reports_each_clamped_entry_by_name():
    out, notes = clamp_vector(np.array([5.0, 0.0, -1e308]), np.full(3, -1.0), np.full(3, 1.0), "p",
                              ["a", "b", "c"])
    assert out.tolist() == [1.0, 0.0, -1.0]
    assert notes == ["a 5 clamped to 1", "c -1e+308 clamped to -1"]


def test_plausible_positions_refuses_a_reading_far_beyond_the_range():
    lo, hi = np.array([-1.0, 0.0]), np.array([1.0, 2.0])
    assert plausible_positions(np.array([1.2, 0.0]), lo, hi, 0.5, "position").tolist() == [1.2, 0.0]
    with pytest.raises(InputError, match="puts joint2 at -0.6, beyond its range"):
        plausible_positions(np.array([0.0, -0.6]), lo, hi, 0.5, "position", ["joint1", "joint2"])


@pytest.mark.parametrize("stamp", [LARGEST_STAMP, 1.0, 1e-9, 1000.0 + 10.5, 1000.0 - 20.0, math.inf, math.nan])
def test_a_stamp_outside_the_window_is_taken_as_now_with_a_note(stamp):
    t, note = data_time(stamp, 1000.0, max_age=10.0, max_ahead=0.5)
    assert t == 1000.0 and "taken as received now" in note


def test_stamp_zero_is_unstamped_and_a_stamp_in_the_window_is_kept():
    assert data_time(0.0, 1000.0, 10.0, 0.5) == (1000.0, None)
    assert data_time(995.0, 1000.0, 10.0, 0.5) == (995.0, None)
    assert data_time(1000.4, 1000.0, 10.0, 0.5) == (1000.4, None)


def test_frame_ids():
    assert frame_id("/base_link") == "base_link"
    assert frame_id("") == "" and frame_id("  ") == ""
    assert frame_id("robot1/torso_link4") == "robot1/torso_link4"
    for bad in ("base link", "a\x00b", "tab\tbed", "x" * 300, "a//b", "ä", "$(find x)"):
        with pytest.raises(InputError, match="header.frame_id"):
            frame_id(bad)
    with pytest.raises(InputError, match="not a string"):
        frame_id(None)  # type: ignore[arg-type]


def test_unit_quaternion_normalises_near_unit_and_refuses_the_rest():
    q, norm = unit_quaternion([0.0, 0.0, 0.0, 1.05])
    assert norm == pytest.approx(1.05) and q.tolist() == [0.0, 0.0, 0.0, 1.0]
    for bad in ([0, 0, 0, 0], [0, 0, 0, 2.0], [0, 0, 0, 0.5], [1e308, 1e308, 0, 0], [0, 0, math.nan, 1]):
        with pytest.raises(InputError, match="pose.orientation"):
            unit_quaternion(bad)


def test_transforms_checked_before_tf2_stores_them():
    from r1_common.validation import transform
    ok = dict(translation=[0.1, 0.0, 1.0], rotation_xyzw=[0.0, 0.0, 0.0, 1.0], stamp=100.0, frame="/odom",
              child="base_footprint", now=100.2)
    assert transform(**ok) == ("odom", "base_footprint")
    assert transform(**{**ok, "stamp": 1.0}, static=True) == ("odom", "base_footprint")   # statics: any past stamp
    for bad in ({"translation": [0, 0, float("nan")]}, {"translation": [1e308, 0, 0]},
                {"rotation_xyzw": [0, 0, 0, 0]}, {"rotation_xyzw": [0, 0, 0, 1.05]},
                {"stamp": LARGEST_STAMP}, {"stamp": 50.0}, {"frame": ""}, {"child": "odom"},
                {"child": "base link"}):
        with pytest.raises(InputError):
            transform(**{**ok, **bad})
