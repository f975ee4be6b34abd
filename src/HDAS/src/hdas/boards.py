"""ROS side of the sensor boards: decoded board frames -> /hdas/imu_*, /hdas/bms, /controller.

Each board listens on one CAN id of its bus (a bus sink, like a motor group) and
publishes what `r1_can.board_frames` decodes, stamped at reception.
"""
from __future__ import annotations

import rospy
from hdas_msg.msg import bms, controller_signal, controller_signal_stamped
from sensor_msgs.msg import Imu

from r1_can import board_frames
from r1_can.config import BoardSpec


class Board:
    """One board: `on_frame(id, data, now)` takes its frames (returns False for other ids)."""

    def __init__(self, spec: BoardSpec, pub: rospy.Publisher):
        self.spec = spec
        self.pub = pub
        self.received = 0

    def on_frame(self, arbitration_id: int, data: bytes, now: float) -> bool:
        if arbitration_id != self.spec.can_id:
            return False
        self.received += 1
        self.handle(data)
        return True

    def handle(self, data: bytes) -> None:
        raise NotImplementedError


class ImuBoard(Board):
    def __init__(self, spec: BoardSpec, topic: str):
        super().__init__(spec, rospy.Publisher(topic, Imu, queue_size=10))
        self.assembler = board_frames.ImuAssembler()
        self.msg = Imu()
        self.msg.header.frame_id = spec.frame_id

    def handle(self, data: bytes) -> None:
        report = self.assembler.add(data)
        if report is None:
            return
        m = self.msg
        m.header.stamp = rospy.Time.now()
        x, y, z, w = board_frames.rpy_to_quaternion(*report.rpy)
        m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w = x, y, z, w
        m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z = report.gyro
        m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z = report.acc
        self.pub.publish(m)


class BmsBoard(Board):
    def __init__(self, spec: BoardSpec, topic: str):
        super().__init__(spec, rospy.Publisher(topic, bms, queue_size=10))

    def handle(self, data: bytes) -> None:
        r = board_frames.decode_bms(data)
        msg = bms(voltage=r.voltage, current=r.current, capital=r.state_of_charge)
        msg.header.stamp = rospy.Time.now()
        self.pub.publish(msg)


class RemoteBoard(Board):
    def __init__(self, spec: BoardSpec, topic: str):
        super().__init__(spec, rospy.Publisher(topic, controller_signal_stamped, queue_size=10))

    def handle(self, data: bytes) -> None:
        r = board_frames.decode_remote(data)
        rx, ry, lx, ly = r.sticks if r.link_ok else (0.0, 0.0, 0.0, 0.0)
        msg = controller_signal_stamped()
        msg.header.stamp = rospy.Time.now()
        msg.data = controller_signal(left_x_axis=lx, left_y_axis=ly, right_x_axis=rx, right_y_axis=ry, mode=r.mode)
        self.pub.publish(msg)


_KINDS = {"imu": ImuBoard, "bms": BmsBoard, "remote": RemoteBoard}


def make_board(spec: BoardSpec, topic: str) -> Board:
    return _KINDS[spec.kind](spec, topic)
