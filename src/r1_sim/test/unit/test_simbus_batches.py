"""The `r1sim` bus carries a cycle's frames in one packet each way, and every frame still arrives in order.

Client (`R1SimBus.send_batch`, recv of a batch) and server (`SimBusServer`: a batch in, its replies
out in one packet, relayed to the other clients as it came), and HDAS's `DriverBus` and receive
path on top of them.
"""
from __future__ import annotations

import asyncio
import os
import socket
import time

import can
import pytest

from r1_can.bus import DriverBus, _LoopNotifier
from r1_can.config import BusSpec
from r1_sim.bus_server import SimBusServer, encode
from r1_sim.simbus import CAN_FRAME, CANFD_FRAME, MAX_BATCH, R1SimBus, socket_address, split_packet, unpack_packet


@pytest.fixture
def server():
    ns = f"test_simbus_batches_{os.getpid()}_{time.monotonic_ns()}"
    srv = SimBusServer(["can0"], namespace=ns)
    srv.ns = ns
    yield srv
    srv.close()


def msg(i: int, data: bytes = bytes(8), fd: bool = False) -> can.Message:
    return can.Message(arbitration_id=i, data=data, is_extended_id=False, is_fd=fd)


def raw_client(srv: SimBusServer) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(socket_address("can0", srv.ns))
    srv.poll(0.1, lambda *a: [])                 # accept
    s.settimeout(1.0)
    return s


def test_split_and_unpack_packet_take_runs_of_classical_frames_or_one_fd_frame_only() -> None:
    one = encode(0x01, b"\x01" * 8)
    two = encode(0x7FF, b"\x02" * 3)
    assert split_packet(one * 3) == [one] * 3
    assert unpack_packet(one + two) == [CAN_FRAME.unpack(one), CAN_FRAME.unpack(two)]
    assert unpack_packet(two)[0][:2] == (0x7FF, 3)
    fd = encode(0x02, bytes(range(64)))
    assert split_packet(fd) == [fd]
    assert unpack_packet(fd) == [CANFD_FRAME.unpack(fd)]
    for bad in (b"", b"\x00" * 5, one + b"\x00", fd + one):
        with pytest.raises(ValueError, match="no CAN frame"):
            split_packet(bad)
        with pytest.raises(ValueError, match="no CAN frame"):
            unpack_packet(bad)


def test_heard_is_told_once_per_packet_before_its_frames(server) -> None:
    """The lockstep's `heard` runs once per packet the driver sends (it ran once per frame: 7x a cycle)."""
    bus = R1SimBus("can0", namespace=server.ns)
    server.poll(0.1, lambda *a: [])               # accept the bus
    events = []
    bus.send_batch([msg(k) for k in range(1, 8)])
    bus.send(msg(9))
    deadline = time.monotonic() + 2.0
    while len(events) < 10 and time.monotonic() < deadline:
        server.poll(0.05, lambda ch, i, d: events.append(i) or [], heard=lambda ch: events.append(ch))
    assert events == ["can0", 1, 2, 3, 4, 5, 6, 7, "can0", 9]
    bus.shutdown()


def test_packets_queued_while_the_loop_was_busy_are_all_served_in_one_pass_and_answered_in_order(server) -> None:
    """A backlog clears in one pass of the loop: under load a pass can take several physics steps, and
    one packet per pass let the driver's frames fall behind."""
    client = raw_client(server)
    for k in range(5):
        client.send(encode(0x10 + k, bytes([k]) * 8) * 2)
    time.sleep(0.05)
    assert server.poll(0.2, lambda ch, i, d: [(i + 0x100, d[:1])]) == 10
    replies = [[CAN_FRAME.unpack(f)[0] for f in split_packet(client.recv(4096))] for _ in range(5)]
    assert replies == [[0x110 + k] * 2 for k in range(5)]
    client.close()


def test_a_batch_is_one_packet_and_the_devices_answer_it_in_one_packet(server) -> None:
    sniffer = raw_client(server)
    bus = R1SimBus("can0", namespace=server.ns)
    server.poll(0.1, lambda *a: [])               # accept the bus
    seen = []

    def handler(channel, arbitration_id, data):
        seen.append(arbitration_id)
        return [(0x10 + arbitration_id, bytes([arbitration_id]) * 8)]

    bus.send_batch([msg(k) for k in range(1, 8)])
    deadline = time.monotonic() + 2.0
    while len(seen) < 7 and time.monotonic() < deadline:
        server.poll(0.05, handler)
    assert seen == list(range(1, 8))
    assert server.frames_in["can0"] == 7
    relayed = sniffer.recv(4096)                  # the other client saw the batch as it was sent
    assert [CAN_FRAME.unpack(f)[0] for f in split_packet(relayed)] == list(range(1, 8))
    replies = sniffer.recv(4096)                  # the seven replies in one packet
    assert len(replies) == 7 * CAN_FRAME.size
    # the bus returns them one by one, in order, the rest of the batch waiting in `pending`
    got = []
    for k in range(7):
        m = bus.recv(1.0)
        got.append(m.arbitration_id)
        assert bus.pending == 6 - k
        assert bytes(m.data) == bytes([m.arbitration_id - 0x10]) * 8
    assert got == [0x11 + k for k in range(7)]
    assert bus.recv(0) is None
    bus.shutdown()
    sniffer.close()


def test_fd_frames_and_long_runs_are_split_into_packets_in_order(server) -> None:
    sniffer = raw_client(server)
    bus = R1SimBus("can0", namespace=server.ns)
    server.poll(0.1, lambda *a: [])
    seen = []
    frames = [msg(1), msg(2, bytes(range(12)), fd=True)] + [msg(100 + k) for k in range(MAX_BATCH + 3)]
    bus.send_batch(frames)
    packets = []
    deadline = time.monotonic() + 2.0
    while len(seen) < len(frames) and time.monotonic() < deadline:
        server.poll(0.05, lambda ch, i, d: seen.append((i, len(d))) or [])
    assert [i for i, _ in seen] == [m.arbitration_id for m in frames]
    assert seen[1] == (2, 12)
    sniffer.settimeout(0.2)
    try:
        while True:
            packets.append(len(split_packet(sniffer.recv(4096))))
    except socket.timeout:
        pass
    assert packets == [1, 1, MAX_BATCH, 3]        # classical run, FD alone, then MAX_BATCH at most a packet
    bus.shutdown()
    sniffer.close()


def test_a_bad_frame_in_a_batch_loses_itself_only(server) -> None:
    client = raw_client(server)
    good, bad = encode(0x02, b"\x07" * 8), encode(0x01, b"\xff" * 8)

    def handler(channel, arbitration_id, data):
        if data[:1] == b"\xff":
            raise ValueError("register value must be finite")
        return [(0x12, b"\x01")]

    client.send(good + bad + good)
    server.poll(0.2, handler)
    assert server.bad_packets == {"can0": 1} and server.frames_in["can0"] == 3
    assert len(split_packet(client.recv(4096))) == 2      # both good frames answered, in one packet
    client.close()


def test_the_driver_sends_a_cycle_in_one_packet_and_reads_every_reply(server) -> None:
    spec = BusSpec(name="can0", interface="r1sim", channel="can0", bitrate=1_000_000, rate_hz=100.0,
                   options={"namespace": server.ns})
    bus = R1SimBus("can0", namespace=server.ns)
    server.poll(0.1, lambda *a: [])
    got, errors = [], []
    driver = DriverBus(spec, bus, errors.append)
    driver.add_source(lambda now: [(k, bytes([k]) * 8) for k in range(1, 8)])
    driver.add_sink(lambda i, data, now: got.append(i) or True)
    packets = []
    real_drain = server._drain

    def counting_drain(sock, channel, handler, heard=None):
        before = server.frames_in[channel]
        n = real_drain(sock, channel, handler, heard)
        if server.frames_in[channel] > before:
            packets.append(server.frames_in[channel] - before)
        return n

    server._drain = counting_drain
    driver.start()
    try:
        deadline = time.monotonic() + 3.0
        while len(got) < 70 and time.monotonic() < deadline:
            server.poll(0.01, lambda ch, i, d: [(0x20 + i, d)])
    finally:
        driver.stop()
    assert not errors
    assert driver.frames_sent >= 70 and driver.send_errors == 0
    assert packets and set(packets) <= {7, 14, 21}   # whole cycles (one or more waiting), never split
    assert got[:14] == [0x20 + k for k in range(1, 8)] * 2
    assert driver.frames_received == len(got)


def test_a_batch_longer_than_a_burst_is_read_on_the_next_pass_of_the_loop(server) -> None:
    """The rest of a batch waits in the bus, not in the socket: the loop must come back for it."""
    bus = R1SimBus("can0", namespace=server.ns)
    server.poll(0.1, lambda *a: [])
    got = []
    loop = asyncio.new_event_loop()
    notifier = _LoopNotifier(bus, [lambda m: got.append(m.arbitration_id)], loop=loop)
    try:
        n = _LoopNotifier.MAX_BURST + 8
        server.broadcast_many("can0", [(k, bytes(8)) for k in range(n)])
        loop.run_until_complete(asyncio.sleep(0.2))
        assert got == list(range(n))
        assert bus.pending == 0
    finally:
        notifier.stop()
        loop.close()
        bus.shutdown()
