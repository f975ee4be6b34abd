"""r1_can.bus: the cycle's loop statistics (rate, compute time, command age) and error counts."""
import math
import time

import can
import pytest

from r1_can.bus import DriverBus
from r1_can.config import BusSpec


def spec(rate_hz: float = 200.0) -> BusSpec:
    return BusSpec(name="test", interface="virtual", channel="hdas_test_bus", bitrate=1_000_000, rate_hz=rate_hz,
                   options={})


def run(bus: DriverBus, seconds: float) -> None:
    bus.start()
    try:
        time.sleep(seconds)
    finally:
        bus.stop()


def test_cycle_ticks_its_stats_with_the_age_of_the_command_sent():
    errors = []
    bus = DriverBus(spec(), can.Bus(interface="virtual", channel="hdas_test_bus"), errors.append)
    arrival = time.monotonic()
    bus.add_source(lambda now: [(0x1, bytes(8))])
    bus.add_command_stamp(lambda: arrival)       # one command, never renewed: its age grows
    bus.add_command_stamp(lambda: None)          # a device holding: no age
    run(bus, 0.5)
    v = bus.stats.values(time.monotonic())
    assert bus.stats.total == bus.cycles > 20
    assert float(v["rate_hz"]) == pytest.approx(200.0, rel=0.5)
    assert 0.0 < float(v["compute_ms_median"]) < 50.0
    assert 0.0 < float(v["latency_ms_median"]) < 1000.0 and float(v["latency_ms_p99"]) >= float(v["latency_ms_median"])
    assert not errors


def test_no_live_command_reads_na_and_a_failing_hook_counts_as_a_handler_error():
    errors = []
    bus = DriverBus(spec(), can.Bus(interface="virtual", channel="hdas_test_bus"), errors.append)
    bus.add_command_stamp(lambda: None)

    def hook(now):
        raise RuntimeError("boom")
    bus.after_send(hook)
    run(bus, 0.2)
    v = bus.stats.values(time.monotonic())
    assert v["latency_ms_median"] == "n/a"
    assert bus.handler_errors == bus.cycles > 0 and errors
    assert math.isfinite(float(v["compute_ms_p99"]))


class SocketBus(can.BusABC):
    """A bus with a file descriptor (as socketcan and r1sim): frames written to the peer socket."""

    def __init__(self):
        import socket
        self.sock, self.peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.setblocking(False)
        super().__init__(channel="socketpair")

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, msg, timeout=None) -> None:
        pass

    def _recv_internal(self, timeout):
        try:
            data = self.sock.recv(16)
        except BlockingIOError:
            return None, False
        if not data:
            raise can.CanOperationError("peer closed")
        return can.Message(arbitration_id=data[0], data=data[1:], is_extended_id=False), False


def test_frames_reach_the_devices_on_the_loop_and_a_dead_bus_is_reported_not_spun_on():
    errors, got = [], []
    sb = SocketBus()
    bus = DriverBus(spec(), sb, errors.append)
    bus.add_sink(lambda i, data, now: got.append((i, data)) or True)
    bus.start()
    try:
        for k in range(20):
            sb.peer.send(bytes([k]) + bytes(8))
        deadline = time.monotonic() + 2.0
        while len(got) < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert got == [(k, bytes(8)) for k in range(20)] and bus.frames_received == 20
        sb.peer.close()                       # the link goes down: recv() fails from now on
        cycles = bus.cycles
        time.sleep(0.5)
        assert bus.cycles > cycles + 20       # the cycle goes on
        down = [e for e in errors if "receive error" in e]
        assert 1 <= len(down) <= 2, errors    # reported, then read again a second later, not spun on
    finally:
        bus.stop()


def test_a_burst_of_frames_is_read_in_one_wake_up_and_the_read_is_bounded():
    """A cycle's replies arrive together: one wake-up of the loop reads them all (python-can's
    Notifier reads one per wake-up), but never more than MAX_BURST, so a flood cannot starve the
    cycles that share the loop."""
    import asyncio

    from r1_can.bus import _LoopNotifier
    got = []
    sb = SocketBus()
    loop = asyncio.new_event_loop()               # never run: the wake-ups are called by hand
    notifier = _LoopNotifier(sb, [lambda msg: got.append(msg.arbitration_id)], loop=loop)
    try:
        for k in range(7):
            sb.peer.send(bytes([k]) + bytes(8))
        notifier._on_message_available(sb)
        assert got == list(range(7))
        n = _LoopNotifier.MAX_BURST + 5
        for k in range(n):
            sb.peer.send(bytes([k]) + bytes(8))
        got.clear()
        notifier._on_message_available(sb)
        assert got == list(range(_LoopNotifier.MAX_BURST))
        notifier._on_message_available(sb)
        assert got == list(range(n))
    finally:
        notifier.stop()
        loop.close()
        sb.peer.close()
