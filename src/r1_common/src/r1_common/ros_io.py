"""rospy helpers the nodes share.

`WallTimer`: a periodic callback on wall time. rospy.Timer sleeps on ROS time, and on simulated
time rospy's sleep wakes on every /clock message (500 a second on the simulated robot) to look
at the clock, in every timer of every node, each time taking the interpreter's lock from the
threads doing the real work. A watchdog that compares both clocks anyway needs wall time only.

`QuietPublisher`: at shutdown (Ctrl-C, roslaunch stopping) rospy closes the topics while a
subscriber callback may still be running, and that callback's publish() raises "publish() to a
closed topic", which rospy logs as a "bad callback" traceback in every node on every stop. A
stopping node has nothing left to say: the message is dropped quietly then, and only then.

`DirectPublisher`: a QuietPublisher that writes each message to its subscribers inside publish().
rospy's queued publisher (queue_size set) gives every subscriber connection a writer thread that
is woken per message; for the 500 Hz streams that hand-off is most of what publishing costs
(measured: 3 topics at 500 Hz to 3 subscribers, 28 % of a core queued, 13 % direct). Without a
queue, a subscriber that stops reading would block publish() and the control loop calling it
once its socket buffers are full. Here a subscriber with a backlog is skipped (the message is
dropped for it, as a full rospy queue drops the oldest), and a send that still takes longer than
`send_timeout` disconnects it.
"""
from __future__ import annotations

import array
import fcntl
import os
import signal
import socket
import sys
import termios
import threading
import time
import warnings
from typing import Any, Callable

import rospy


class QuietPublisher(rospy.Publisher):
    """A rospy.Publisher whose publish() drops the message once ROS is shutting down."""

    def publish(self, *args, **kwargs) -> None:
        try:
            super().publish(*args, **kwargs)
        except rospy.ROSException as e:
            # rospy closes the topics while shutting down, not always after is_shutdown() turns true
            if not (rospy.is_shutdown() or rospy.core.is_shutdown_requested() or "closed topic" in str(e)):
                raise


class DirectPublisher(QuietPublisher):
    """A publisher without a writer thread per subscriber: publish() sends to each subscriber.

    For high-rate streams (feedback, motor commands, poses). Per subscriber connection:
    - a backlog of `backlog_bytes` or more unsent in its socket (the reader has not kept up and its
      receive buffer is full) skips the message for that subscriber (`skipped` counts them, and
      `skipped_by` per subscriber); it gets the next messages once it reads again, as with a full
      rospy queue;
    - a send that still blocks longer than `send_timeout` [s] raises, and rospy closes that
      connection (`disconnected` counts them). rospy subscribers do not reconnect by themselves.
    """

    def __init__(self, name: str, data_class: type, send_timeout: float = 0.05, backlog_bytes: int = 256 * 1024,
                 **kwargs: Any):
        if not send_timeout > 0 or backlog_bytes <= 0:
            raise ValueError(f"send_timeout and backlog_bytes must be > 0, got {send_timeout}, {backlog_bytes}")
        kwargs.pop("queue_size", None)
        with warnings.catch_warnings():           # rospy warns about a publisher without queue_size
            warnings.simplefilter("ignore", SyntaxWarning)
            super().__init__(name, data_class, queue_size=None, **kwargs)
        self.send_timeout = send_timeout
        self.backlog_bytes = backlog_bytes
        self.skipped_by: dict[str, int] = {}      # subscriber (caller id) -> messages skipped for it
        self.disconnected = 0
        self._guarded: list | None = None         # the connection list whose writes are guarded
        self._logged: dict[str, float] = {}

    @property
    def skipped(self) -> int:
        """Messages skipped for subscribers that had a backlog, all subscribers together."""
        return sum(self.skipped_by.values())

    def publish(self, *args: Any, **kwargs: Any) -> None:
        conns = self.impl.connections             # replaced, never changed in place, when one is added
        if conns is not self._guarded:
            for c in conns:
                self._guard(c)
            self._guarded = conns
        t0 = time.monotonic()
        super().publish(*args, **kwargs)
        if len(self.impl.connections) < len(conns) and time.monotonic() - t0 >= self.send_timeout:
            # a subscriber that hung up is dropped at once (broken pipe); one that hangs costs the timeout
            self.disconnected += len(conns) - len(self.impl.connections)
            gone = {c.endpoint_id for c in conns} - {c.endpoint_id for c in self.impl.connections}
            self._warn("disconnected", f"disconnected {sorted(gone)}: a send blocked for over "
                                       f"{self.send_timeout * 1e3:.0f} ms")

    def _guard(self, c: Any) -> None:
        """Bound the connection's socket sends and skip its messages while it has a backlog."""
        sock = getattr(c, "socket", None)
        if sock is None or getattr(c, "_r1_guarded", False):
            return
        sock.settimeout(self.send_timeout)
        # room for the backlog a subscriber may have before it is skipped (the kernel doubles this
        # and counts its per-message overhead against it; capped by net.core.wmem_max): a reader
        # that falls behind for a moment, as one does on a busy machine, loses nothing, as with
        # rospy's queue and the socket buffers it fills
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 * self.backlog_bytes)
        except OSError:
            pass                           # the default buffer: the cap below still holds
        write, fd, backlog = c.write_data, sock.fileno(), self.backlog_bytes
        outq = array.array("i", [0])

        def write_data(data: bytes) -> None:
            # bytes sent but not yet taken into the reader's buffer: they pile up only once that buffer
            # is full. A quarter of the send buffer at most (the kernel counts its own overhead on each
            # small message against it), so a message that is written fits without blocking.
            fcntl.ioctl(fd, termios.TIOCOUTQ, outq)
            if outq[0] and outq[0] >= min(backlog, sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) // 4):
                self.skipped_by[c.endpoint_id] = self.skipped_by.get(c.endpoint_id, 0) + 1
                self._warn(f"skip {c.endpoint_id}", f"{c.endpoint_id} is not keeping up ({outq[0]} bytes unread): "
                                                    f"messages skipped for it")
                return
            write(data)

        c.write_data = write_data                 # rospy's publish() calls it once per connection
        c._r1_guarded = True

    def _warn(self, key: str, text: str) -> None:
        now = time.monotonic()
        if now - self._logged.get(key, -float("inf")) >= 10.0:     # throttled: one line per 10 s per cause
            self._logged[key] = now
            rospy.logwarn(f"{self.resolved_name}: {text}")


class WallTimer:
    """Calls `callback(None)` every `period` seconds of wall time on a daemon thread until ROS
    shuts down (the argument stands for rospy.Timer's event). A callback that raises is logged
    (throttled) and called again next period."""

    def __init__(self, period: float, callback: Callable[[Any], None], name: str = "wall-timer"):
        if not period > 0:
            raise ValueError(f"WallTimer period must be > 0, got {period}")
        self.period, self.callback, self.name = period, callback, name
        self._stop = threading.Event()
        self._logged = -float("inf")
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        rospy.on_shutdown(self.shutdown)

    def _run(self) -> None:
        due = time.monotonic()
        while not rospy.is_shutdown():
            due += self.period
            if self._stop.wait(max(0.0, due - time.monotonic())):
                return
            try:
                self.callback(None)
            except Exception as e:  # noqa: BLE001 - a watchdog must outlive one bad call
                now = time.monotonic()
                if now - self._logged >= 10.0:          # throttled: one line per 10 s
                    self._logged = now
                    rospy.logerr(f"{self.name}: {e!r}")

    def shutdown(self) -> None:
        self._stop.set()


STOP_WITHIN = 3.0     # [s] after ROS shuts down (SIGINT), a node's process is gone by then


def stop_within(seconds: float = STOP_WITHIN) -> None:
    """Make sure this process ends within `seconds` once ROS shuts it down (roslaunch's SIGINT, Ctrl-C).

    rospy exits when its threads and the caller's loop do; a thread blocked in a library call, or a
    shutdown hook waiting on one, kept a node alive for 15 s now and then, and roslaunch escalated to
    SIGTERM then SIGKILL (once in about a dozen whole-stack stops on a loaded machine). Registered
    first, this hook starts a daemon timer that ends the process (exit status 0, with a line on
    stderr) if it is still there after `seconds`. A daemon thread no longer runs once the interpreter
    is finalizing (a tracker whose finalization hung for 11 s was not ended by it), so the hook also
    sets the process's real-time interval timer one second later with SIGALRM's default action: the
    kernel ends the process then, whatever the interpreter does (exit status -14)."""
    def arm(*_args: Any) -> None:
        def stop() -> None:
            time.sleep(seconds)
            sys.stderr.write(f"{rospy.get_name()}: still running {seconds:g} s after shutdown: exiting now\n")
            sys.stderr.flush()
            os._exit(0)
        threading.Thread(target=stop, name="stop_within", daemon=True).start()
        if threading.current_thread() is threading.main_thread():     # (handlers are set from there only)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.setitimer(signal.ITIMER_REAL, seconds + 1.0)
    rospy.on_shutdown(arm)


def run_node(node_name: str, make: Callable[[], Any]) -> None:
    """A node's main: init `node_name`, stop_within(), build the node with `make()` and spin.

    A configuration the node cannot use (r1_common.settings.ConfigError, raised by `make`) ends the
    process with one fatal log line naming the parameter and exit status 1; node classes raise it and
    never exit themselves, so that several of them can share a process (mobiman's controller_host)."""
    from r1_common.settings import ConfigError

    rospy.init_node(node_name)
    stop_within()   # gone within seconds of a SIGINT, whatever hangs
    try:
        make()
    except ConfigError as e:
        rospy.logfatal(f"{rospy.get_name()}: bad configuration: {e}")
        sys.exit(1)
    rospy.spin()
