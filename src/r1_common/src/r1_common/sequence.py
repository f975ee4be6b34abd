"""Messages a subscriber never got, counted from the gaps in their header sequence numbers.

rospy numbers every message of a publisher (header.seq, one count per publish, the same for
every subscriber). A subscriber that falls behind loses messages silently: rospy keeps only the
newest `queue_size` of what piled up in the socket, and a publisher may skip a subscriber that
stopped reading (r1_common.ros_io.DirectPublisher). The gaps in the numbers a subscriber sees say how
many it lost. A publisher that does not number its messages (roscpp leaves seq as the message
has it, usually 0), a restarted one (the numbers start again) and a first message count nothing.
"""
from __future__ import annotations


class SequenceGaps:
    """Counts the messages missing between consecutive header.seq values of one topic."""

    MAX_GAP = 1_000_000       # a larger jump is a different publisher's numbering, not lost messages

    def __init__(self) -> None:
        self.missed = 0
        self._last = 0

    def observe(self, seq: int) -> int:
        """Take the next message's seq; returns how many messages were missed just before it."""
        last, self._last = self._last, seq
        gap = seq - last - 1
        if last <= 0 or not 0 < gap < self.MAX_GAP:
            return 0
        self.missed += gap
        return gap
