"""One CAN bus of the driver: its python-can Bus, its receive path and its fixed-rate cycle.

The receive path is python-can's Notifier with one Listener per bus that hands
each frame to the devices registered for its id. A device that raises does not
stop the bus: the error is counted and reported (throttled) through `on_error`.
The cycle thread sends, at the bus's rate, whatever its devices want sent, then
calls the bus's after-send hooks (the node publishes feedback there). Each cycle is one tick
of the bus's `LoopStats` (`hdas.loop_stats`, on the driver's monotonic clock): its rate, its
compute time (building, sending, the after-send hooks) and its latency, the age of the command
it sent: from the arrival of the motor_control message (the devices' `command_stamp`) to the
moment its frames went out.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Iterable

import can

from hdas.config import BusSpec
from hdas.loop_stats import LoopStats

Frame = tuple[int, bytes]
FrameSource = Callable[[float], list[Frame]]          # now -> frames to send
FrameSink = Callable[[int, bytes, float], bool]       # (id, data, now) -> taken?
ErrorReporter = Callable[[str], None]
CommandStamp = Callable[[], "float | None"]           # arrival of the command last sent, None: a hold


def open_bus(spec: BusSpec) -> can.BusABC:
    """The python-can bus of a config entry (socketcan on the robot, r1sim in simulation)."""
    return can.Bus(interface=spec.interface, channel=spec.channel, **spec.options)


class _Dispatch(can.Listener):
    def __init__(self, owner: "DriverBus"):
        self.owner = owner

    def on_message_received(self, msg: can.Message) -> None:
        self.owner.dispatch(msg)

    def on_error(self, exc: Exception) -> None:
        # python-can calls this when recv() itself fails; the Notifier keeps running.
        self.owner.report(f"bus {self.owner.spec.name}: receive error: {exc}")


class DriverBus:
    """A bus with its devices: `add_source` for what to send, `add_sink` for what it receives."""

    def __init__(self, spec: BusSpec, bus: can.BusABC, report: ErrorReporter):
        self.spec = spec
        self.bus = bus
        self.report = report
        self._sources: list[FrameSource] = []
        self._sinks: list[FrameSink] = []
        self._after_send: list[Callable[[float], None]] = []
        self._command_stamps: list[CommandStamp] = []
        self.frames_sent = 0
        self.frames_received = 0
        self.send_errors = 0
        self.handler_errors = 0
        self.unknown_frames = 0
        self.overruns = 0
        self.cycles = 0
        self.stats = LoopStats(window_s=5.0)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._notifier: can.Notifier | None = None

    def add_source(self, source: FrameSource) -> None:
        self._sources.append(source)

    def add_sink(self, sink: FrameSink) -> None:
        self._sinks.append(sink)

    def after_send(self, hook: Callable[[float], None]) -> None:
        self._after_send.append(hook)

    def add_command_stamp(self, stamp: CommandStamp) -> None:
        """A device's arrival time (monotonic) of the command its last frames carried (None: none)."""
        self._command_stamps.append(stamp)

    def dispatch(self, msg: can.Message) -> None:
        """Receive path: hand a frame to the first device that takes it."""
        if msg.is_error_frame:
            self.report(f"bus {self.spec.name}: error frame {msg.arbitration_id:#x}")
            return
        self.frames_received += 1
        now = time.monotonic()
        data = bytes(msg.data)
        for sink in self._sinks:
            try:
                if sink(msg.arbitration_id, data, now):
                    return
            except Exception as e:  # a bad frame must not stop the bus
                self.handler_errors += 1
                self.report(f"bus {self.spec.name}: frame {msg.arbitration_id:#x} {data.hex()} not handled: {e!r}")
                return
        self.unknown_frames += 1

    def send_all(self, frames: Iterable[Frame]) -> None:
        bus = self.bus
        for arbitration_id, data in frames:
            try:
                bus.send(can.Message(arbitration_id=arbitration_id, data=data, is_extended_id=False))
                self.frames_sent += 1
            except can.CanError as e:
                self.send_errors += 1
                self.report(f"bus {self.spec.name}: send failed: {e}")

    def start(self) -> None:
        self._notifier = can.Notifier(self.bus, [_Dispatch(self)], timeout=0.1)
        self._thread = threading.Thread(target=self._cycle, name=f"bus-{self.spec.name}", daemon=True)
        self._thread.start()

    def _cycle(self) -> None:
        period = 1.0 / self.spec.rate_hz
        next_tick = time.monotonic()
        while not self._stop.is_set():
            t0 = time.perf_counter()
            now = time.monotonic()
            frames: list[Frame] = []
            for source in self._sources:
                try:
                    frames.extend(source(now))
                except Exception as e:
                    self.handler_errors += 1
                    self.report(f"bus {self.spec.name}: building frames failed: {e!r}")
            self.send_all(frames)
            latency = self._command_age(time.monotonic())
            for hook in self._after_send:
                try:
                    hook(now)
                except Exception as e:
                    self.handler_errors += 1
                    self.report(f"bus {self.spec.name}: after-send hook failed: {e!r}")
            self.cycles += 1
            self.stats.tick(now, time.perf_counter() - t0, latency)
            next_tick += period
            delay = next_tick - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            elif delay < -5 * period:     # far behind (machine busy): restart the schedule
                self.overruns += 1
                next_tick = time.monotonic()

    def _command_age(self, sent: float) -> float:
        """Age of the oldest command this cycle sent [s]; NaN when it sent holds or requests only."""
        ages = []
        for stamp in self._command_stamps:
            try:
                t = stamp()
            except Exception:
                t = None
            if t is not None:
                ages.append(sent - t)
        return max(ages) if ages else float("nan")

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=1.0)
        if self._notifier:
            self._notifier.stop()
        self.bus.shutdown()
