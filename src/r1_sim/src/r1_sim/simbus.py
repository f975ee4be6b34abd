"""The `r1sim` python-can interface: a CAN bus carried over a local Unix socket.

The simulated robot (`r1_sim` node) listens on one abstract Unix socket per bus;
the driver opens `can.Bus(interface="r1sim", channel="left_arm")` exactly as it
opens `socketcan` on the robot, so not one line of the driver differs between
simulation and hardware. Frames are Linux `struct can_frame` /
`struct canfd_frame`, i.e. socketcan's own binary layout, on a SOCK_SEQPACKET
socket (message boundaries kept, no parsing of text): a packet is one CAN FD
frame, or one or more classical frames back to back. `send()` writes one frame
per packet, as socketcan does; `send_batch()` writes a cycle's frames in one
packet (one system call instead of one per frame, on both ends), and the
simulator answers a batch with its replies in one packet. The server side is
`r1_sim.bus_server`; both live on this machine only (abstract socket names,
no network).

The interface is registered with python-can through the `can.interface` entry
point that the r1_sim package's CMakeLists writes into the devel/install space.
"""
from __future__ import annotations

import collections
import os
import select
import socket
import struct
import time
from typing import Any, Iterable, Optional

import can
from can import BusABC, Message
from can.exceptions import CanInitializationError, CanOperationError

CAN_EFF_FLAG = 0x80000000
CAN_RTR_FLAG = 0x40000000
CAN_ERR_FLAG = 0x20000000
CAN_EFF_MASK = 0x1FFFFFFF
CANFD_BRS = 0x01
CANFD_ESI = 0x02
CANFD_FDF = 0x04

CAN_FRAME = struct.Struct("=IBBBB8s")     # can_id, len, flags, res0, res1 (len8_dlc), data[8]
CANFD_FRAME = struct.Struct("=IBBBB64s")  # can_id, len, flags, res0, res1, data[64]
FRAME_SIZES = (CAN_FRAME.size, CANFD_FRAME.size)
MAX_BATCH = 64                             # classical frames per packet (1 KiB)
MAX_PACKET = max(MAX_BATCH * CAN_FRAME.size, CANFD_FRAME.size)

DEFAULT_NAMESPACE = "default"


def socket_address(channel: str, namespace: str | None = None) -> bytes:
    """Abstract Unix socket name of a simulated bus (leading NUL: no file, nothing to clean up)."""
    ns = namespace or os.environ.get("R1_SIM_NAMESPACE") or DEFAULT_NAMESPACE
    return f"\0r1sim/{ns}/{channel}".encode()


def pack_frame(msg: Message) -> bytes:
    """A python-can Message as socketcan's binary frame."""
    can_id = msg.arbitration_id
    if msg.is_extended_id:
        can_id |= CAN_EFF_FLAG
    if msg.is_remote_frame:
        can_id |= CAN_RTR_FLAG
    if msg.is_error_frame:
        can_id |= CAN_ERR_FLAG
    data = bytes(msg.data)
    if msg.is_fd:
        flags = CANFD_FDF | (CANFD_BRS if msg.bitrate_switch else 0) | (CANFD_ESI if msg.error_state_indicator else 0)
        return CANFD_FRAME.pack(can_id, len(data), flags, 0, 0, data)
    return CAN_FRAME.pack(can_id, msg.dlc if msg.is_remote_frame else len(data), 0, 0, 0, data)


def unpack_frame(packet: bytes, timestamp: float, channel: str | None = None) -> Message:
    """socketcan's binary frame as a python-can Message."""
    is_fd = len(packet) == CANFD_FRAME.size
    can_id, length, flags, _, _, data = (CANFD_FRAME if is_fd else CAN_FRAME).unpack(packet)
    is_extended = bool(can_id & CAN_EFF_FLAG)
    return Message(
        timestamp=timestamp,
        arbitration_id=can_id & (CAN_EFF_MASK if is_extended else 0x7FF),
        is_extended_id=is_extended,
        is_remote_frame=bool(can_id & CAN_RTR_FLAG),
        is_error_frame=bool(can_id & CAN_ERR_FLAG),
        is_fd=is_fd,
        bitrate_switch=bool(flags & CANFD_BRS),
        error_state_indicator=bool(flags & CANFD_ESI),
        dlc=length,
        data=data[:length],
        channel=channel,
        is_rx=True,
    )


def packet_frame_size(packet: bytes) -> int:
    """The size of the frames a packet carries: CANFD_FRAME.size for one CAN FD frame, CAN_FRAME.size for
    classical frames back to back.

    Raises ValueError for a packet that is neither (empty, or a length that no run of frames has).
    """
    n = len(packet)
    if n == CANFD_FRAME.size:
        return n
    if n == 0 or n % CAN_FRAME.size:
        raise ValueError(f"a {n}-byte packet is no CAN frame")
    return CAN_FRAME.size


def split_packet(packet: bytes) -> list[bytes]:
    """The frames of a packet, each as its bytes (see `packet_frame_size`; raises ValueError as it does)."""
    size = packet_frame_size(packet)
    return [packet[i:i + size] for i in range(0, len(packet), size)]


def unpack_packet(packet: bytes) -> list[tuple[int, int, int, int, int, bytes]]:
    """The frames of a packet, each unpacked: (can_id, len, flags, res0, res1, data padded to 8 or 64
    bytes). One `iter_unpack` for a run of classical frames (see `packet_frame_size`; raises ValueError
    as it does)."""
    if packet_frame_size(packet) == CANFD_FRAME.size:
        return [CANFD_FRAME.unpack(packet)]
    return list(CAN_FRAME.iter_unpack(packet))


def batch_frames(frames: Iterable[bytes]) -> list[tuple[bytes, int]]:
    """Encoded frames as packets, in order: classical frames back to back up to MAX_BATCH a
    packet, a CAN FD frame alone. Each packet with its number of frames."""
    packets: list[tuple[bytes, int]] = []
    run: list[bytes] = []
    for frame in frames:
        if len(frame) != CAN_FRAME.size:
            if run:
                packets.append((b"".join(run), len(run)))
                run = []
            packets.append((frame, 1))
            continue
        run.append(frame)
        if len(run) == MAX_BATCH:
            packets.append((b"".join(run), len(run)))
            run = []
    if run:
        packets.append((b"".join(run), len(run)))
    return packets


class R1SimBus(BusABC):
    """Client end of a simulated bus: send() and recv() as on socketcan.

    Extra keyword arguments (from the bus config): `namespace` (which simulator
    instance, default $R1_SIM_NAMESPACE or "default"), `connect_timeout` [s]
    to wait for the simulator to come up (default 10).
    """

    def __init__(self, channel: Any, can_filters: Optional[can.typechecking.CanFilters] = None,
                 namespace: str | None = None, connect_timeout: float = 10.0, fd: bool = False, **kwargs: Any):
        self.channel = str(channel)
        self.channel_info = f"r1sim channel '{self.channel}'"
        self._address = socket_address(self.channel, namespace)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        deadline = time.monotonic() + connect_timeout
        while True:
            try:
                self._sock.connect(self._address)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() >= deadline:
                    self._sock.close()
                    raise CanInitializationError(
                        f"no simulated bus '{self.channel}' (namespace "
                        f"'{self._address.decode().split('/')[1]}') after {connect_timeout:.0f} s: "
                        "is the r1_sim node running?") from None
                time.sleep(0.05)
        self._sock.setblocking(False)
        self._fd = fd
        self._pending: collections.deque[bytes] = collections.deque()   # frames of a packet not yet returned
        super().__init__(channel=channel, can_filters=can_filters, **kwargs)

    @property
    def pending(self) -> int:
        """Frames already read from the socket (the rest of a batch) that recv() returns next,
        without the file descriptor being readable for them."""
        return len(self._pending)

    def fileno(self) -> int:
        return self._sock.fileno()

    def send(self, msg: Message, timeout: Optional[float] = None) -> None:
        self._send_packet(pack_frame(msg), timeout)

    def send_batch(self, msgs: list[Message], timeout: Optional[float] = None) -> None:
        """Send frames in order, the classical ones up to MAX_BATCH to a packet (CAN FD frames
        one to a packet). All or nothing per packet: a CanOperationError means the frames of the
        packet that failed and of every later one were not sent."""
        for packet, _ in batch_frames(pack_frame(m) for m in msgs):
            self._send_packet(packet, timeout)

    def _send_packet(self, packet: bytes, timeout: Optional[float]) -> None:
        try:
            self._sock.send(packet)
        except BlockingIOError:
            # The simulator is not draining its socket: like a full socketcan TX queue.
            if timeout:
                _, ready, _ = select.select([], [self._sock], [], timeout)
                if ready:
                    self._sock.send(packet)
                    return
            raise CanOperationError("transmit buffer full (ENOBUFS-like): simulator not reading") from None
        except OSError as e:
            raise CanOperationError(f"simulated bus '{self.channel}' is down: {e}") from e

    def _recv_internal(self, timeout: Optional[float]) -> tuple[Optional[Message], bool]:
        if self._pending:
            return unpack_frame(self._pending.popleft(), time.time(), self.channel), False
        try:
            packet = self._sock.recv(MAX_PACKET)
        except BlockingIOError:
            if timeout == 0:
                return None, False
            ready, _, _ = select.select([self._sock], [], [], timeout)
            if not ready:
                return None, False
            try:
                packet = self._sock.recv(MAX_PACKET)
            except BlockingIOError:
                return None, False
        except OSError as e:
            raise CanOperationError(f"simulated bus '{self.channel}' is down: {e}") from e
        if not packet:
            raise CanOperationError(f"simulated bus '{self.channel}': the simulator closed the connection")
        try:
            frames = split_packet(packet)
        except ValueError as e:
            raise CanOperationError(f"simulated bus '{self.channel}': {e}") from None
        self._pending.extend(frames[1:])
        return unpack_frame(frames[0], time.time(), self.channel), False

    def shutdown(self) -> None:
        super().shutdown()
        self._sock.close()
