"""Checks of what comes in from outside, ROS-free: the first thing every node does with a message.

Every input of the stack (targets, commands, feedback, the remote, stamps and frames) passes
through these checks before any library call that could throw or abort the process sees it
(tf2, pinocchio, Ruckig, the IK's compiled passes, numpy reductions that overflow). A value that
cannot be used raises `InputError`, which names the field, shows the value (shortened: a message
may carry a million entries) and says why; the node logs it throttled, counts it and goes on with
its last good input. What may be clamped instead is each caller's decision (`docs/safety.md`).

Checks are element by element: no sum or product of the input is formed, so finite values of any
size (1e308) are judged as the finite numbers they are and never overflow into inf on the way.
"""
from __future__ import annotations

import math
import re
from typing import Any, Collection, Sequence

import numpy as np

SHOWN = 8                      # entries of a long array shown in an error
MAX_FRAME_ID = 256             # characters of a frame id
QUATERNION_TOLERANCE = 0.1     # |norm - 1| beyond this: not a rotation (dropped), below: normalised
STREAM_MAX_AGE = 10.0          # [s] a stream's stamp (feedback, the remote) older than this is not its time
STREAM_MAX_AHEAD = 5.0         # [s] nor one this far ahead of the receiver's clock (a node stalled for a
                               # while reads its next messages ahead of its own clock, which lags until
                               # it catches up: a 1 s stall gave 1 s)
FEEDBACK_MARGIN = 0.5          # [rad, m] a measured position this far beyond its joint's range is refused
_FRAME_ID = re.compile(r"[A-Za-z0-9_./\-]+")


class InputError(ValueError):
    """An input that cannot be used: `field` and `value` name it, `why` says what is wrong."""

    def __init__(self, field: str, value: Any, why: str):
        self.field, self.value, self.why = field, value, why
        super().__init__(f"{field} {show(value)} {why}")


def show(value: Any) -> str:
    """A short text of a value for a log line: numbers to 4 significant digits, at most SHOWN entries."""
    if isinstance(value, str):
        return repr(value if len(value) <= 64 else value[:64] + "...")
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4g}"
    if isinstance(value, (int, np.integer, bool)):
        return str(value)
    try:
        items = list(value)
    except TypeError:
        return repr(value)[:80]
    head = ", ".join(show(x) for x in items[:SHOWN])
    return f"[{head}, ... ({len(items)} entries)]" if len(items) > SHOWN else f"[{head}]"


def finite_vector(values: Sequence[float], field: str, sizes: Collection[int]) -> np.ndarray:
    """`values` as a float array of one of the allowed `sizes`, every entry finite.

    Raises InputError for another length, a non-numeric entry or a NaN/inf entry (named by index).
    """
    count = len(values)
    if count not in sizes:
        want = " or ".join(str(s) for s in sorted(set(sizes)))
        raise InputError(field, values, f"has {count} entries, expected {want}")
    try:
        v = np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError):
        raise InputError(field, values, "is not a list of numbers") from None
    bad = ~np.isfinite(v)
    if bad.any():
        raise InputError(field, values, f"is not finite at entry {int(np.flatnonzero(bad)[0])}")
    return v


def finite_number(value: float, field: str) -> float:
    """`value` as a float; InputError when it is not a finite number."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(field, value, "is not a number") from None
    if not math.isfinite(x):
        raise InputError(field, value, "is not finite")
    return x


def clamp_vector(values: np.ndarray, lower: np.ndarray, upper: np.ndarray, field: str,
                 names: Sequence[str] | None = None) -> tuple[np.ndarray, list[str]]:
    """`values` clipped into [lower, upper]; returns the result and one note per changed entry."""
    out = np.minimum(np.maximum(values, lower), upper)
    changed = np.flatnonzero(out != values)
    label = (lambda i: names[i]) if names is not None else (lambda i: f"{field}[{i}]")
    notes = [f"{label(int(i))} {values[i]:.4g} clamped to {out[i]:.4g}" for i in changed]
    return out, notes


def plausible_positions(values: np.ndarray, lower: np.ndarray, upper: np.ndarray, margin: float,
                        field: str, names: Sequence[str] | None = None) -> np.ndarray:
    """Measured positions, refused when one lies beyond its joint's range by more than `margin`.

    A motor cannot report that (its frame encodes ±PMAX and HDAS reports POS_EXCEED already 0.02
    rad past a limit): such feedback comes from a wrong publisher or a wrong zero, and a controller
    that clipped it into the range would act on a position the arm is not at."""
    out_of_range = (values < lower - margin) | (values > upper + margin)
    if out_of_range.any():
        i = int(np.flatnonzero(out_of_range)[0])
        what = names[i] if names is not None else f"entry {i}"
        raise InputError(field, values, f"puts {what} at {values[i]:.4g}, beyond its range "
                                        f"[{lower[i]:.4g}, {upper[i]:.4g}] by more than {margin:g}")
    return values


def data_time(stamp: float, now: float, max_age: float, max_ahead: float) -> tuple[float, str | None]:
    """The time a stamped message's data stands for, on the receiver's clock `now` [s].

    Stamp 0 means "unstamped" (ROS convention): `now`, no note. Any other stamp within
    [now - max_age, now + max_ahead] is taken as it is; one outside (any value a ROS time can
    hold: 4294967295.999999999, a stamp from another clock) is replaced by `now` and a note says
    so, so that no clock, timeout or lookup downstream ever runs on it. A receiver whose clock is
    not set yet (`now` 0: simulated time before the first /clock) takes the stamp as it is."""
    if stamp == 0.0:
        return now, None
    if now <= 0.0 and math.isfinite(stamp):
        return stamp, None
    if not math.isfinite(stamp) or stamp < now - max_age or stamp > now + max_ahead:
        return now, (f"header.stamp {stamp:.9f} is {stamp - now:+.3g} s from now (accepted: "
                     f"-{max_age:g} .. +{max_ahead:g} s): taken as received now")
    return stamp, None


def frame_id(text: str, field: str = "header.frame_id") -> str:
    """A frame id without its leading '/' ('' stays ''); InputError when it cannot name a frame.

    Accepted: up to MAX_FRAME_ID characters of letters, digits, '_', '.', '-' and '/' (tf2's
    names; whitespace, control characters and other symbols are refused before tf2 sees them)."""
    if not isinstance(text, str):
        raise InputError(field, text, "is not a string")
    name = text.strip().lstrip("/")
    if name == "":
        return ""
    if len(name) > MAX_FRAME_ID:
        raise InputError(field, text, f"is {len(name)} characters long (at most {MAX_FRAME_ID})")
    if not _FRAME_ID.fullmatch(name) or "//" in name:
        raise InputError(field, text, "is not a frame name (letters, digits, '_', '.', '-', '/')")
    return name


def unit_quaternion(xyzw: Sequence[float], field: str = "pose.orientation",
                    tolerance: float = QUATERNION_TOLERANCE) -> tuple[np.ndarray, float]:
    """A rotation quaternion (x, y, z, w) normalised, and its norm as received.

    InputError for non-finite entries or a norm farther than `tolerance` from 1 (zero, or a
    vector that was never a rotation: normalising it would invent one). The norm is computed
    on the entries scaled by the largest, so huge finite entries do not overflow."""
    q = finite_vector(xyzw, field, (4,))
    scale = float(np.max(np.abs(q)))
    norm = 0.0 if scale == 0.0 else scale * float(np.linalg.norm(q / scale))
    if not abs(norm - 1.0) <= tolerance:
        raise InputError(field, xyzw, f"has norm {norm:.4g}, not a rotation (|norm - 1| > {tolerance:g})")
    return q / norm, norm


def transform(translation: Sequence[float], rotation_xyzw: Sequence[float], stamp: float, frame: str, child: str,
              now: float, static: bool = False, max_age: float = 10.0, max_ahead: float = 0.5) -> tuple[str, str]:
    """A /tf or /tf_static transform checked before tf2 stores it: (frame, child) without leading '/'.

    InputError for non-finite or far (> 1e4 m) translations, a rotation that is not a unit quaternion
    (within QUATERNION_TOLERANCE; tf2 itself warns at 0.01 and stores it), frame ids that are no frame
    names or name the same frame, and a stamp outside [now - max_age, now + max_ahead] (a static
    transform's stamp only not ahead): tf2 keeps a transform by its stamp, and one stamped
    4294967295.999999999 made a later lookup abort the process (its time arithmetic overflows)."""
    t = finite_vector(translation, "transform.translation", (3,))
    if np.any(np.abs(t) > 1e4):
        raise InputError("transform.translation", translation, "lies beyond 1e4 m")
    unit_quaternion(rotation_xyzw, "transform.rotation", 0.01)
    parent, kid = frame_id(frame, "header.frame_id"), frame_id(child, "child_frame_id")
    if not parent or not kid or parent == kid:
        raise InputError("child_frame_id", child, f"with header.frame_id {frame!r}: two distinct frames needed")
    late = not static and stamp < now - max_age
    if now > 0.0 and (not math.isfinite(stamp) or late or stamp > now + max_ahead):
        raise InputError("header.stamp", stamp, f"is {stamp - now:+.3g} s from now")
    return parent, kid
