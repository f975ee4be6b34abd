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

from hdas.motor_group import JointLimitArrays


@dataclass(frozen=True)
class JointLimit:
    lower: float
    upper: float
    velocity: float
    effort: float


def read_limits(urdf_xml: str) -> dict[str, JointLimit]:
    """name -> limits of every moving joint; continuous joints get ±inf position limits."""
    out = {}
    for j in ET.fromstring(urdf_xml).iter("joint"):
        kind = j.get("type")
        if kind in ("fixed", "floating", "planar"):
            continue
        lim = j.find("limit")
        get = (lambda k, d: float(lim.get(k, d))) if lim is not None else (lambda k, d: float(d))
        bounded = kind != "continuous"
        out[j.get("name")] = JointLimit(get("lower", 0) if bounded else -math.inf,
                                        get("upper", 0) if bounded else math.inf,
                                        get("velocity", "inf") or math.inf, get("effort", "inf") or math.inf)
    return out


def limit_arrays(limits: dict[str, JointLimit], joints: Sequence[str]) -> JointLimitArrays:
    """Limits of the given joints, in that order; a joint missing from the URDF is an error."""
    missing = [j for j in joints if j not in limits]
    if missing:
        raise KeyError(f"joints not in robot_description: {', '.join(missing)}")
    rows = [limits[j] for j in joints]
    return JointLimitArrays(*(np.array([getattr(r, k) for r in rows]) for k in ("lower", "upper", "velocity", "effort")))
