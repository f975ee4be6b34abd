"""Server end of the simulated CAN buses (see `r1_sim.simbus` for the client).

One listening abstract Unix socket per bus. Like a real bus, every frame a
client sends reaches every other client of that bus (a sniffer sees the
driver's commands) and the simulated devices, whose replies reach all clients.
It works on raw socketcan frames with `struct`, not python-can Messages: at
~20,000 frames/s every microsecond counts.
"""
from __future__ import annotations

import selectors
import socket
from typing import Callable, Iterable

from r1_sim.simbus import CAN_EFF_FLAG, CAN_EFF_MASK, CAN_FRAME, CANFD_FDF, CANFD_FRAME, socket_address

# handler(channel, arbitration_id, data) -> replies [(arbitration_id, data), ...]
FrameHandler = Callable[[str, int, bytes], Iterable[tuple[int, bytes]]]

_pack = CAN_FRAME.pack
_unpack = CAN_FRAME.unpack
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

    def poll(self, timeout: float, handler: FrameHandler) -> int:
        """Wait up to `timeout` s for frames, hand each to `handler`, send its replies; returns frames handled."""
        handled = 0
        for key, _ in self._selector.select(timeout):
            channel, is_listener = key.data
            sock: socket.socket = key.fileobj  # type: ignore[assignment]
            if is_listener:
                self._accept(sock, channel)
                continue
            handled += self._drain(sock, channel, handler)
        return handled

    def _accept(self, listener: socket.socket, channel: str) -> None:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return
        conn.setblocking(False)
        self._clients[channel].append(conn)
        self._selector.register(conn, selectors.EVENT_READ, (channel, False))

    def _drain(self, sock: socket.socket, channel: str, handler: FrameHandler) -> int:
        clients = self._clients[channel]
        handled = 0
        while True:
            try:
                packet = sock.recv(CANFD_FRAME.size)
            except BlockingIOError:
                return handled
            except OSError:
                packet = b""
            if not packet:
                self._drop(sock, channel)
                return handled
            handled += 1
            self.frames_in[channel] += 1
            if len(clients) > 1:
                for other in clients:
                    if other is not sock:
                        self._send(other, channel, packet)
            if len(packet) == CAN_FRAME.size:
                can_id, length, _, _, _, data = _unpack(packet)
            elif len(packet) == CANFD_FRAME.size:
                can_id, length, _, _, _, data = CANFD_FRAME.unpack(packet)
            else:                   # not a frame (a client writing something else): dropped
                self.bad_packets[channel] = self.bad_packets.get(channel, 0) + 1
                self.last_error = f"{channel}: a {len(packet)}-byte packet is no CAN frame"
                continue
            arbitration_id = can_id & CAN_EFF_MASK if can_id & CAN_EFF_FLAG else can_id & 0x7FF
            try:
                replies = list(handler(channel, arbitration_id, data[:length]))
            except (ValueError, OverflowError, KeyError, IndexError) as e:
                # a frame the devices cannot take (a garbled payload) is lost, as on a real bus;
                # the simulator goes on
                self.bad_packets[channel] = self.bad_packets.get(channel, 0) + 1
                self.last_error = f"{channel} 0x{arbitration_id:x}: {e!r}"
                continue
            for reply_id, reply in replies:
                self.broadcast(channel, reply_id, reply)

    def broadcast(self, channel: str, arbitration_id: int, data: bytes) -> None:
        """Put a device's frame on a bus: every connected client receives it."""
        packet = encode(arbitration_id, data)
        for client in list(self._clients[channel]):
            self._send(client, channel, packet)

    def _send(self, sock: socket.socket, channel: str, packet: bytes) -> None:
        try:
            sock.send(packet)
            self.frames_out[channel] += 1
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
