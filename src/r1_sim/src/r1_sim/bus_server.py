"""Server end of the simulated CAN buses (see `r1_sim.simbus` for the client).

One listening abstract Unix socket per bus. Like a real bus, every frame a
client sends reaches every other client of that bus (a sniffer sees the
driver's commands) and the simulated devices, whose replies reach all clients.
It works on raw socketcan frames with `struct`, not python-can Messages: at
~20,000 frames/s every microsecond counts. A packet may carry several classical
frames (`R1SimBus.send_batch`, `r1_sim.simbus.packet_frame_size`): the devices' replies
to one packet go out in one packet too, as do the boards' frames of one loop pass
(`broadcast_many`), so a cycle of the driver costs each side a few system calls
instead of one per frame.
"""
from __future__ import annotations

import selectors
import socket
from typing import Callable, Iterable, Optional, Sequence, Tuple

from r1_sim.simbus import (
    CAN_EFF_FLAG,
    CAN_EFF_MASK,
    CAN_FRAME,
    CANFD_FDF,
    CANFD_FRAME,
    MAX_BATCH,
    MAX_PACKET,
    batch_frames,
    socket_address,
    unpack_packet,
)

# handler(channel, arbitration_id, data) -> replies [(arbitration_id, data), ...]
FrameHandler = Callable[[str, int, bytes], Iterable[Tuple[int, bytes]]]

_pack = CAN_FRAME.pack
_PAD8 = bytes(8)


def encode(arbitration_id: int, data: bytes) -> bytes:
    """A frame from a device: classical up to 8 bytes, CAN FD above."""
    if len(data) <= 8:
        return _pack(arbitration_id, len(data), 0, 0, 0, data)
    return CANFD_FRAME.pack(arbitration_id, len(data), CANFD_FDF, 0, 0, data)


class SimBusServer:
    """Accepts driver connections per bus and moves frames between them and the devices."""

    def __init__(self, channels: Iterable[str], namespace: str | None = None):
        self._selector = selectors.DefaultSelector()
        self._clients: dict[str, list[socket.socket]] = {}
        self.frames_in: dict[str, int] = {}
        self.frames_out: dict[str, int] = {}
        self.bad_packets: dict[str, int] = {}      # packets that were no frame, or that no device could take
        self.last_error = ""
        for channel in channels:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                listener.bind(socket_address(channel, namespace))
            except OSError as e:
                raise RuntimeError(f"cannot serve simulated bus '{channel}': {e} (another simulator with the "
                                   "same namespace running? set R1_SIM_NAMESPACE)") from e
            listener.listen(4)
            listener.setblocking(False)
            self._selector.register(listener, selectors.EVENT_READ, (channel, True))
            self._clients[channel] = []
            self.frames_in[channel] = 0
            self.frames_out[channel] = 0

    @property
    def channels(self) -> list[str]:
        return list(self._clients)

    def connected(self, channel: str) -> int:
        return len(self._clients[channel])

    def poll(self, timeout: float, handler: FrameHandler,
             heard: Optional[Callable[[str], None]] = None) -> int:
        """Wait up to `timeout` s for frames, hand each to `handler`, send its replies; returns frames handled.
        `heard(channel)` is called once per packet of frames a client sent (before its frames are handled)."""
        handled = 0
        for key, _ in self._selector.select(timeout):
            channel, is_listener = key.data
            sock: socket.socket = key.fileobj  # type: ignore[assignment]
            if is_listener:
                self._accept(sock, channel)
                continue
            handled += self._drain(sock, channel, handler, heard)
        return handled

    def _accept(self, listener: socket.socket, channel: str) -> None:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return
        conn.setblocking(False)
        self._clients[channel].append(conn)
        self._selector.register(conn, selectors.EVENT_READ, (channel, False))

    def _drain(self, sock: socket.socket, channel: str, handler: FrameHandler,
               heard: Optional[Callable[[str], None]]) -> int:
        """Every packet a readable client has queued, in order (a backlog clears in one pass of the loop)."""
        handled = 0
        while True:
            try:
                packet = sock.recv(MAX_PACKET)
            except BlockingIOError:
                return handled
            except OSError:
                packet = b""
            if not packet:
                self._drop(sock, channel)
                return handled
            handled += self._serve(sock, channel, packet, handler, heard)

    def _serve(self, sock: socket.socket, channel: str, packet: bytes, handler: FrameHandler,
               heard: Optional[Callable[[str], None]]) -> int:
        """One packet from a client: relayed to the other clients, its frames to the devices, their replies
        to every client in one packet; returns its frames (0: not frames, dropped and counted)."""
        try:
            frames = unpack_packet(packet)
        except ValueError as e:     # not a frame (a client writing something else): dropped
            self.bad_packets[channel] = self.bad_packets.get(channel, 0) + 1
            self.last_error = f"{channel}: {e}"
            return 0
        self.frames_in[channel] += len(frames)
        if heard is not None:
            heard(channel)
        clients = self._clients[channel]
        if len(clients) > 1:
            for other in clients:
                if other is not sock:
                    self._send(other, channel, packet, len(frames))
        replies: list[tuple[int, bytes]] = []
        for can_id, length, _, _, _, data in frames:
            arbitration_id = can_id & CAN_EFF_MASK if can_id & CAN_EFF_FLAG else can_id & 0x7FF
            try:
                replies.extend(handler(channel, arbitration_id, data[:length]))
            except (ValueError, OverflowError, KeyError, IndexError) as e:
                # a frame the devices cannot take (a garbled payload) is lost, as on a real bus;
                # the simulator goes on
                self.bad_packets[channel] = self.bad_packets.get(channel, 0) + 1
                self.last_error = f"{channel} 0x{arbitration_id:x}: {e!r}"
        if replies:
            self.broadcast_many(channel, replies)
        return len(frames)

    def broadcast(self, channel: str, arbitration_id: int, data: bytes) -> None:
        """Put a device's frame on a bus: every connected client receives it."""
        packet = encode(arbitration_id, data)
        for client in list(self._clients[channel]):
            self._send(client, channel, packet, 1)

    def broadcast_many(self, channel: str, frames: Sequence[tuple[int, bytes]]) -> None:
        """Put several frames on a bus in order: classical ones up to MAX_BATCH to a packet."""
        if len(frames) <= MAX_BATCH and all(len(data) <= 8 for _, data in frames):
            # the usual case (a motor's replies to one packet of the driver's): one packet
            packets = [(b"".join([_pack(i, len(data), 0, 0, 0, data) for i, data in frames]), len(frames))]
        else:
            packets = batch_frames(encode(arbitration_id, data) for arbitration_id, data in frames)
        for client in list(self._clients[channel]):
            for packet, count in packets:
                self._send(client, channel, packet, count)

    def _send(self, sock: socket.socket, channel: str, packet: bytes, frames: int) -> None:
        try:
            sock.send(packet)
            self.frames_out[channel] += frames
        except BlockingIOError:
            pass  # a client that does not read loses frames, as on a real bus with a full RX queue
        except OSError:
            self._drop(sock, channel)

    def _drop(self, sock: socket.socket, channel: str) -> None:
        if sock in self._clients[channel]:
            self._clients[channel].remove(sock)
            self._selector.unregister(sock)
            sock.close()

    def close(self) -> None:
        for key in list(self._selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self._selector.close()
