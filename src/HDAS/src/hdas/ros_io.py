"""rospy helpers the nodes share.

`QuietPublisher`: at shutdown (Ctrl-C, roslaunch stopping) rospy closes the topics while a
subscriber callback may still be running, and that callback's publish() raises "publish() to a
closed topic", which rospy logs as a "bad callback" traceback in every node on every stop. A
stopping node has nothing left to say: the message is dropped quietly then, and only then.
"""
from __future__ import annotations

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
