"""Simulated time that waits for the driver (Gazebo's and PX4 SITL's "lockstep").

On simulated time (/clock) every node keeps the physics' clock, but the physics still runs
as fast as its process is scheduled. On a machine too busy to run the stack in real time the
driver may then go silent for tens of simulated milliseconds while the motors run on with a
stale command: a communication gap no real robot has. In lockstep the physics does not step
past `periods` of a bus's command period without a frame from the driver on that bus, so the
driver's (and behind it the controllers') pace sets simulated time.

A bus that stays silent for `timeout` seconds of wall time is let go (a driver that stopped
or disabled that limb must not freeze the simulation) until it speaks again.
"""
from __future__ import annotations

from collections.abc import Mapping


class Lockstep:
    def __init__(self, bus_rates_hz: Mapping[str, float], periods: float, timeout: float):
        if periods <= 0 or timeout <= 0 or any(r <= 0 for r in bus_rates_hz.values()):
            raise ValueError("lockstep periods, timeout and bus rates must be > 0")
        self.window = {bus: periods / rate for bus, rate in bus_rates_hz.items()}
        self.timeout = timeout
        self._heard: dict[str, float] = {}       # bus -> simulated time of the driver's last frame
        self._silent: set[str] = set()
        self._waiting_since: float | None = None
        self.waits = 0                            # times the physics waited
        self.let_go: list[str] = []               # buses let go at the last call of waiting_for

    def heard(self, bus: str, sim_time: float) -> None:
        """The driver sent a frame on `bus` (simulated time `sim_time`)."""
        if bus in self.window:
            self._heard[bus] = sim_time
            self._silent.discard(bus)

    def waiting_for(self, sim_time: float, wall_time: float) -> list[str]:
        """Buses the physics must wait for before stepping past `sim_time` (empty: step)."""
        self.let_go = []
        late = sorted(bus for bus, t in self._heard.items()
                      if bus not in self._silent and sim_time - t >= self.window[bus])
        if not late:
            self._waiting_since = None
            return []
        if self._waiting_since is None:
            self._waiting_since = wall_time
            self.waits += 1
        if wall_time - self._waiting_since > self.timeout:
            self._silent.update(late)
            self.let_go = late
            self._waiting_since = None
            return []
        return late

    @property
    def silent(self) -> set[str]:
        return set(self._silent)
