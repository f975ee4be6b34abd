"""The driver's CAN buses: each python-can Bus with its receive path and its fixed-rate cycle,
all on one event loop in one thread (`BusLoop`).

The receive path is python-can's Notifier, watching each bus's file descriptor on the loop
(a bus without one, as python-can's `virtual`, gets the Notifier's reader thread), with one
Listener per bus that hands each frame to the devices registered for its id. A device that
raises does not stop the bus: the error is counted and reported (throttled) through `report`;
a bus whose receive fails (the link is down) is reported and read again a second later. The
cycle sends, at the bus's rate, whatever its devices want sent, then calls the bus's
after-send hooks (the node publishes feedback there). Each cycle is one tick of the bus's
`LoopStats` (`r1_common.loop_stats`, on the driver's monotonic clock): its rate, its compute time
(building, sending, the after-send hooks) and its latency, the age of the command it sent:
from the arrival of the motor_control message (the devices' `command_stamp`) to the moment
its frames went out.

Why one thread: a thread per receive path and per cycle (8 on the R1) woke ~45,000 times a
second on the simulated robot and spent 40 % of a core in the kernel handing the GIL from one
to the next; the work itself fits in one thread with room to spare.
"""
from __future__ import annotations

import asyncio
import selectors
import threading
import time
from typing import Callable, Iterable, List, Tuple

import can

from r1_can.config import BusSpec
from r1_common.loop_stats import LoopStats

Frame = Tuple[int, bytes]     # (typing's names: a module-level alias runs on Python 3.8)
FrameSource = Callable[[float], List[Frame]]          # now -> frames to send
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


class _LoopNotifier(can.Notifier):
    """python-can's Notifier on an event loop, with the error handling its loop path lacks: a
    failing recv() (bus down) goes to the listeners' on_error, as on its thread path, and the bus
    is read again RETRY_S later instead of at once (a closed socket is always readable)."""

    RETRY_S = 1.0
    _halted = False      # stop() was called (our own flag: python-can's private one differs by release)
    # Frames read per wake-up. python-can reads one per wake-up; a cycle's replies arrive as a
    # burst (7 frames an arm), and each extra pass through the event loop costs a select(2) and
    # the loop's bookkeeping: reading the burst at once took HDAS from 78 to 74 % of a core on
    # the simulated robot at stock rates. Bounded, so a flooded bus cannot starve the cycles.
    MAX_BURST = 32

    def _on_message_available(self, bus: can.BusABC) -> None:
        try:
            for _ in range(self.MAX_BURST):
                msg = bus.recv(0)
                if msg is None:
                    break
                self._on_message_received(msg)
            else:
                if getattr(bus, "pending", 0) and self._loop is not None and not self._halted:
                    # frames the bus has already read (the rest of a batch, `r1sim`): the descriptor
                    # will not wake the loop for them, so come back after the loop's other work
                    self._loop.call_soon(self._on_message_available, bus)
        except Exception as exc:  # noqa: BLE001 - reported, never raised into the loop
            self._on_error(exc)
            loop, fd = self._loop, bus.fileno()
            if loop is not None and not self._halted:
                loop.remove_reader(fd)
                loop.call_later(self.RETRY_S, self._resume, bus, fd)

    def stop(self, timeout: float = 5.0) -> None:
        self._halted = True
        super().stop(timeout)

    def _resume(self, bus: can.BusABC, fd: int) -> None:
        if not self._halted and self._loop is not None:
            self._loop.add_reader(fd, self._on_message_available, bus)


class BusLoop:
    """One thread running one asyncio event loop for every bus added: receive paths and cycles."""

    def __init__(self, name: str = "hdas-buses"):
        self.name = name
        # select(2) takes its timeout in microseconds; epoll and poll round it up to a millisecond,
        # half a 500 Hz cycle of jitter on every tick
        self.loop = asyncio.SelectorEventLoop(selectors.SelectSelector())
        self._buses: list[DriverBus] = []
        self._thread: threading.Thread | None = None

    def add(self, bus: "DriverBus") -> None:
        self._buses.append(bus)

    def start(self) -> None:
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            for bus in self._buses:
                bus.attach(self.loop)
            ready.set()
            self.loop.run_forever()

        self._thread = threading.Thread(target=run, name=self.name, daemon=True)
        self._thread.start()
        ready.wait(5.0)

    def stop(self) -> None:
        """Stop every cycle and receive path, then shut the buses down."""
        if self._thread is not None and self.loop.is_running():
            def halt() -> None:
                for bus in self._buses:
                    bus.detach()
                self.loop.stop()
            self.loop.call_soon_threadsafe(halt)
            self._thread.join(timeout=2.0)
        for bus in self._buses:
            bus.detach()             # a Notifier reader thread (buses without a file descriptor)
            bus.bus.shutdown()
        if not self.loop.is_running():
            self.loop.close()


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
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.Handle | None = None   # call_soon's Handle, then call_at's TimerHandle
        self._next_tick = 0.0
        self._notifier: can.Notifier | None = None
        self._own_loop: BusLoop | None = None

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
        send_batch = getattr(bus, "send_batch", None)
        if send_batch is not None:
            # a bus that takes a cycle's frames in one write (the simulated one, `r1sim`); socketcan
            # has no such write and gets them one by one below
            msgs = [can.Message(arbitration_id=i, data=d, is_extended_id=False) for i, d in frames]
            if not msgs:
                return
            try:
                send_batch(msgs)
                self.frames_sent += len(msgs)
            except can.CanError as e:
                self.send_errors += 1
                self.report(f"bus {self.spec.name}: send failed: {e}")
            return
        for arbitration_id, data in frames:
            try:
                bus.send(can.Message(arbitration_id=arbitration_id, data=data, is_extended_id=False))
                self.frames_sent += 1
            except can.CanError as e:
                self.send_errors += 1
                self.report(f"bus {self.spec.name}: send failed: {e}")

    def start(self) -> None:
        """Run this bus alone on its own loop thread (the node runs all buses on one `BusLoop`)."""
        self._own_loop = BusLoop(f"bus-{self.spec.name}")
        self._own_loop.add(self)
        self._own_loop.start()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the receive path and the cycle on `loop` (called in the loop's thread)."""
        self._loop = loop
        self._notifier = _LoopNotifier(self.bus, [_Dispatch(self)], timeout=0.1, loop=loop)
        self._next_tick = time.monotonic()
        self._timer = loop.call_soon(self._tick)

    def detach(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._notifier is not None:
            self._notifier.stop(timeout=1.0)
            self._notifier = None

    def _tick(self) -> None:
        """One cycle: build and send every device's frames, the after-send hooks, then the next
        tick one period after this one's schedule (asyncio's clock is time.monotonic)."""
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
        period = 1.0 / self.spec.rate_hz
        self._next_tick += period
        if self._next_tick < time.monotonic() - 5 * period:     # far behind (machine busy): restart the schedule
            self.overruns += 1
            self._next_tick = time.monotonic()
        if self._loop is not None:
            self._timer = self._loop.call_at(self._next_tick, self._tick)

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
        """Stop a bus started alone with `start()`."""
        if self._own_loop is not None:
            self._own_loop.stop()
            self._own_loop = None
