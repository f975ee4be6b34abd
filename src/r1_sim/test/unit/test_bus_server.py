"""r1_sim.bus_server: a garbled packet or a frame no device can take is dropped and counted; the server goes on."""
from __future__ import annotations

import os
import socket

from r1_sim.bus_server import SimBusServer, encode
from r1_sim.simbus import socket_address


def test_bad_packets_are_counted_and_good_frames_still_answered() -> None:
    ns = f"test_bus_server_{os.getpid()}"
    server = SimBusServer(["can0"], namespace=ns)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    client.connect(socket_address("can0", ns))
    server.poll(0.1, lambda *a: [])                    # accept

    seen = []

    def handler(channel, arbitration_id, data):
        if data[:1] == b"\xff":
            raise ValueError("register value must be finite")
        seen.append((channel, arbitration_id, bytes(data)))
        return [(0x11, b"\x01\x02")]

    client.send(b"\x00" * 5)                           # no CAN frame at all
    client.send(encode(0x01, b"\xff" * 8))             # a frame the device chokes on
    client.send(encode(0x02, b"\x07" * 8))             # a good one
    for _ in range(5):
        server.poll(0.05, handler)
    assert seen == [("can0", 0x02, b"\x07" * 8)]
    assert server.bad_packets == {"can0": 2}
    assert "must be finite" in server.last_error
    client.settimeout(1.0)
    assert len(client.recv(128)) > 0                   # the good frame's reply came back
    client.close()
