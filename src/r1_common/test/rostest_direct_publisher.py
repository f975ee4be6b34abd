#!/usr/bin/env python3
"""DirectPublisher (r1_common.ros_io) with real rospy subscribers in other processes.

The point of the class is that publish() never waits long on a subscriber that does not read:
one subscriber process is stopped (SIGSTOP) while messages are published until its socket
buffers are full. Small messages are then skipped for it (it stays connected and gets the new
ones once it runs again); a large one that would block longer than the send timeout cuts it off.
Either way publish() keeps returning and a subscriber that keeps reading gets every message. A
subscriber that exits normally is not counted as stalled.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import unittest

import rospy
import rostest
from std_msgs.msg import String

from r1_common.ros_io import DirectPublisher

SUBSCRIBER = """
import rospy
from std_msgs.msg import String
rospy.init_node("stalled_subscriber", anonymous=True)
def on_message(m):
    if m.data.startswith("resumed"):
        print(m.data[:16], flush=True)
rospy.Subscriber("{topic}", String, on_message, queue_size=1)
print("ready", rospy.get_name(), flush=True)
rospy.spin()
"""


def wait_for(predicate, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


class DirectPublisherTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rospy.init_node("test_direct_publisher", anonymous=True)

    def subscriber_process(self, topic: str) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", SUBSCRIBER.format(topic=topic)], stdout=subprocess.PIPE,
                                text=True, env=dict(os.environ))
        self.addCleanup(lambda: (proc.kill(), proc.wait()))
        word, proc.node_name = proc.stdout.readline().split()
        self.assertEqual(word, "ready")
        return proc

    def publish_while_stopped(self, pub, stalled, payload: str, count: int, received: list) -> None:
        """`count` messages numbered 0.. while `stalled` is stopped; publish() must not hang."""
        os.kill(stalled.pid, signal.SIGSTOP)
        done = threading.Event()
        sent = [0]

        every = 1 if len(payload) > 1000 else 10    # a pause every `every` messages: the live reader keeps up

        def publish_all():
            for i in range(count):
                pub.publish(String(data=f"{i:08d}" + payload))
                sent[0] += 1
                if i % every == 0:
                    time.sleep(0.002)
            done.set()

        threading.Thread(target=publish_all, daemon=True).start()
        # a blocking publisher would hang here for good once the stopped reader's buffers are full
        self.assertTrue(done.wait(90), f"publish() blocked on a stopped subscriber after {sent[0]} messages")
        # the reading subscriber gets every message it was not skipped for (on a loaded machine it
        # can itself fall a receive buffer behind), in order, and nearly all of them
        expected = count - pub.skipped_by.get(rospy.get_name(), 0)
        self.assertTrue(wait_for(lambda: len(received) == expected, 20), f"the live subscriber got {len(received)} "
                        f"of {expected}")
        self.assertTrue(all(a < b for a, b in zip(received, received[1:])), "in order, no repeats")
        self.assertGreater(len(received), 0.9 * count)

    def live_and_stalled(self, topic: str, **kw):
        pub = DirectPublisher(topic, String, **kw)
        received: list[int] = []
        rospy.Subscriber(topic, String, lambda m: m.data[:8].isdigit() and received.append(int(m.data[:8])),
                         queue_size=5000)
        stalled = self.subscriber_process(topic)
        self.assertTrue(wait_for(lambda: pub.get_num_connections() == 2, 20), "both subscribers connect")
        return pub, received, stalled

    def test_stalled_subscriber_is_skipped_and_gets_new_messages_again(self):
        self.stalled_subscriber_is_skipped(4096, 2000)         # 8 MiB: its buffers fill

    def test_stalled_subscriber_of_small_messages_is_skipped_not_cut_off(self):
        # feedback-sized messages, hundreds to a socket buffer: skipped too, never cut off
        self.stalled_subscriber_is_skipped(300, 12000)         # 3.6 MB

    def stalled_subscriber_is_skipped(self, size: int, count: int):
        pub, received, stalled = self.live_and_stalled(f"/direct_publisher_test/skipped_{size}")
        self.publish_while_stopped(pub, stalled, "x" * size, count, received)
        self.assertGreater(pub.skipped_by.get(stalled.node_name, 0), 0,
                           "messages were skipped for the stopped subscriber")
        self.assertEqual(pub.disconnected, 0)
        self.assertEqual(pub.get_num_connections(), 2, "the stopped subscriber stays connected")
        os.kill(stalled.pid, signal.SIGCONT)
        lines: list[str] = []
        threading.Thread(target=lambda: lines.append(stalled.stdout.readline().strip()), daemon=True).start()
        for _ in range(200):                          # it drains its backlog, then reads the new messages
            pub.publish(String(data="resumed"))
            if lines:
                break
            time.sleep(0.05)
        self.assertEqual(lines, ["resumed"], "the resumed subscriber gets messages again")

    def test_subscriber_blocking_a_send_is_cut_off(self):
        topic = "/direct_publisher_test/cut_off"
        pub = DirectPublisher(topic, String, send_timeout=0.2)
        stalled = self.subscriber_process(topic)
        self.assertTrue(wait_for(lambda: pub.get_num_connections() == 1, 20))
        os.kill(stalled.pid, signal.SIGSTOP)
        big = String(data="x" * (64 << 20))          # more than its socket buffers take: the send blocks
        done = threading.Event()
        threading.Thread(target=lambda: ([pub.publish(big) for _ in range(3)], done.set()), daemon=True).start()
        self.assertTrue(done.wait(60), "publish() blocked on a stopped subscriber")
        self.assertEqual(pub.get_num_connections(), 0, "the stopped subscriber is disconnected")
        self.assertEqual(pub.disconnected, 1)
        os.kill(stalled.pid, signal.SIGCONT)

    def test_subscriber_that_exits_is_not_counted_as_stalled(self):
        topic = "/direct_publisher_test/exits"
        pub = DirectPublisher(topic, String, send_timeout=0.05)
        leaving = self.subscriber_process(topic)
        self.assertTrue(wait_for(lambda: pub.get_num_connections() == 1, 20))
        leaving.terminate()
        leaving.wait(10)
        self.assertTrue(wait_for(lambda: (pub.publish(String(data="x")), pub.get_num_connections() == 0)[1], 20),
                        "the closed connection is dropped")
        self.assertEqual(pub.disconnected, 0)

    def test_send_timeout_must_be_positive(self):
        with self.assertRaises(ValueError):
            DirectPublisher("/direct_publisher_test/bad", String, send_timeout=0.0)
        with self.assertRaises(ValueError):
            DirectPublisher("/direct_publisher_test/bad", String, backlog_bytes=0)


if __name__ == "__main__":
    rostest.rosrun("HDAS", "direct_publisher", DirectPublisherTest)
