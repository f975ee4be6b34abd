"""A Livox MID360-style lidar's scan pattern, ROS-free (`r1_sim.sensor_rig` casts its rays in MuJoCo).

The MID360 sees 360° around its z axis and from −7° to +52° in elevation, with a non-repetitive
scan: each 0.1 s frame samples new directions and coverage fills in over successive frames. Here
each scan takes the next `points_per_scan` points of a scrambled Halton sequence (scipy's
`qmc.Halton`), mapped to azimuth and to elevation uniform in solid angle: low-discrepancy within a
scan, never repeating across scans, deterministic for a seed. The rig drops returns nearer than
`min_range` (the blind zone, 0.1 m) or beyond `max_range`, as the sensor does, and adds `range_noise_m`
with this object's generator.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import qmc


@dataclass
class LivoxLidar:
    points_per_scan: int = 2000
    elevation_deg: tuple[float, float] = (-7.0, 52.0)
    min_range: float = 0.1
    max_range: float = 40.0
    range_noise_m: float = 0.0
    seed: int = 0
    _sequence: qmc.Halton = field(init=False, repr=False)
    _rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        lo, hi = self.elevation_deg
        if self.points_per_scan < 1:
            raise ValueError("points_per_scan must be positive")
        if not -90.0 <= lo < hi <= 90.0:
            raise ValueError(f"elevation_deg must be an increasing pair in [-90, 90], got {self.elevation_deg}")
        if not 0.0 <= self.min_range < self.max_range:
            raise ValueError("need 0 <= min_range < max_range")
        self._sequence = qmc.Halton(d=2, scramble=True, seed=self.seed)
        self._rng = np.random.default_rng(self.seed)

    def next_directions(self) -> np.ndarray:
        """(points_per_scan, 3) unit directions of the next scan in the lidar frame."""
        u = self._sequence.random(self.points_per_scan)
        s_lo, s_hi = (math.sin(math.radians(a)) for a in self.elevation_deg)
        sin_el = s_lo + (s_hi - s_lo) * u[:, 1]
        cos_el = np.sqrt(1.0 - sin_el ** 2)
        az = 2.0 * math.pi * u[:, 0]
        return np.stack([cos_el * np.cos(az), cos_el * np.sin(az), sin_el], axis=1)
