"""Joint limits read from the URDF, the one place every limit of the stack lives.

The driver needs only the numbers (position range, velocity and effort limits),
so it reads them from the XML instead of building a dynamics model.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from hdas.command_limits import JointLimitArrays


@dataclass(frozen=True)
class JointLimit:
    lower: float
    upper: float
    velocity: float
    effort: float


def read_limits(urdf_xml: str) -> dict[str, JointLimit]:
    """name -> limits of every moving joint as written; continuous joints get ±inf position
    limits, a missing velocity or effort attribute inf (`limit_arrays` refuses both for a motor);
    a joint without a name (not valid URDF) is left out."""
    out = {}
    for j in ET.fromstring(urdf_xml).iter("joint"):
        kind, name = j.get("type"), j.get("name")
        if kind in ("fixed", "floating", "planar") or name is None:
            continue
        lim = j.find("limit")
        attrs = lim.attrib if lim is not None else {}
        get = lambda k, d, attrs=attrs: float(attrs.get(k, d))
        bounded = kind != "continuous"
        out[name] = JointLimit(get("lower", 0) if bounded else -math.inf,
                               get("upper", 0) if bounded else math.inf,
                               get("velocity", "inf"), get("effort", "inf"))
    return out


def limit_arrays(limits: dict[str, JointLimit], joints: Sequence[str]) -> JointLimitArrays:
    """Limits of the given (motor-driven) joints, in that order.

    ValueError for a joint missing from the URDF, one without a finite positive velocity or
    effort limit (the only bound on what a command may carry) or with lower >= upper (every
    command would be clamped to one end)."""
    missing = [j for j in joints if j not in limits]
    if missing:
        raise ValueError(f"joints not in robot_description: {', '.join(missing)}")
    rows = [limits[j] for j in joints]
    bad = [f"{j}: {what}" for j, r in zip(joints, rows) for what, wrong in (
        ("velocity limit missing, zero or negative", not (0 < r.velocity < math.inf)),
        ("effort limit missing, zero or negative", not (0 < r.effort < math.inf)),
        (f"lower {r.lower} not below upper {r.upper}", not r.lower < r.upper)) if wrong]
    if bad:
        raise ValueError("unusable joint limits in robot_description: " + "; ".join(bad))
    return JointLimitArrays(*(np.array([getattr(r, k) for r in rows])
                              for k in ("lower", "upper", "velocity", "effort")))
