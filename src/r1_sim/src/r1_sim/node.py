"""r1_sim_node: the simulated R1 behind its CAN buses (node `r1_sim`; the robot is r1_sim.robot).

Serves one `r1sim` bus per bus of the robot's CAN layout, steps the physics at `physics_rate_hz`
(r1_sim.sim_loop.PhysicsPacer), emits the board frames, and offers on `/sim` what only a simulator
can: ground truth (/sim/joint_states, /sim/odom, and /sim/objects: the scene's free bodies), fault
injection (/sim/inject_fault), pushes (/sim/apply_wrench) and the remote controller's sticks (/sim/remote).

Parameters (private): the robot's CAN layout (r1_can.config.parse_config: r1_can/config/r1.yaml + a bus
file) and r1_sim.sim_settings.SimSettings (docs/simulator.md). `robot_description` (global): the URDF.
The bus namespace is the environment variable R1_SIM_NAMESPACE ("default" when unset).

With /use_sim_time set (r1_sim.launch sets it) the node publishes the simulated clock on /clock, as
Gazebo does: on a machine too busy for real time the physics runs slower than the wall clock and
every node that keeps ROS time slows down with it.

Diagnostics at 1 Hz of wall time (`r1_sim: physics`): the standard loop keys of r1_common.loop_stats
with one tick per physics step on the wall clock (rate_hz = simulated steps per real second, compute
= the wall time of one step; no latency), the real-time factor, the slips and the lockstep waits, and
what the robot touches (`robot_touches`; also logged when it changes, looked at every 0.5 s).
"""
from __future__ import annotations

import math
import os
import time
from typing import List

import rospy
import rospy.impl.simtime
import rospy.rostime
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import Point, Pose, Quaternion, Twist, Vector3
from hdas_msg.msg import controller_signal
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState

from r1_can.config import parse_config
from r1_common.diagnostics import DiagnosticsPublisher, status
from r1_common.ros_io import DirectPublisher, run_node
from r1_common.settings import ConfigError
from r1_sim.bus_server import SimBusServer
from r1_sim.mjcf import WorldError
from r1_sim.msg import ObjectStates
from r1_sim.mujoco_world import describe_contacts
from r1_sim.robot import SimRobot
from r1_sim.sim_loop import PhysicsPacer, RequestQueue, by_bus
from r1_sim.sim_settings import NODE, SimSettings
from r1_sim.srv import ApplyWrench, ApplyWrenchResponse, InjectFault, InjectFaultResponse

CONTACTS_PERIOD_S = 0.5       # [s] wall time between looks at what the robot touches


def odometry(robot: SimRobot, stamp: rospy.Time) -> Odometry:
    """base_link's true pose and twist (world frame `sim_world`, the floor at z = 0)."""
    (x, y, yaw), (vx, vy, wz) = robot.base_pose(), robot.base_twist()
    msg = Odometry()
    msg.header.stamp, msg.header.frame_id, msg.child_frame_id = stamp, "sim_world", "base_link"
    msg.pose.pose.position.x, msg.pose.pose.position.y = x, y
    msg.pose.pose.position.z = robot.base_height()
    msg.pose.pose.orientation.z, msg.pose.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    msg.twist.twist.linear.x, msg.twist.twist.linear.y, msg.twist.twist.angular.z = vx, vy, wz
    return msg


def object_states(robot: SimRobot, stamp: rospy.Time) -> ObjectStates:
    """/sim/objects: the scene's free bodies in sim_world (r1_sim/ObjectStates)."""
    out = ObjectStates()
    out.header.stamp = stamp
    out.header.frame_id = "sim_world"
    for o in robot.objects():
        w, x, y, z = o.quaternion
        out.name.append(o.name)
        out.pose.append(Pose(Point(*o.position), Quaternion(x, y, z, w)))
        out.twist.append(Twist(Vector3(*o.linear), Vector3(*o.angular)))
    return out


def clock_publisher() -> rospy.Publisher:
    """/clock, published synchronously (r1_common.ros_io.DirectPublisher).

    rospy's queued publisher hands each message to a thread per subscriber and yields once per
    subscriber; at 200-500 Hz with every node subscribed that hand-off costs a starved machine more
    wall time than the physics (~5 ms per /clock message). A node that stops reading (a debugger,
    SIGSTOP) is skipped once its buffers are full instead of stopping the simulation.
    """
    return DirectPublisher("/clock", Clock, tcp_nodelay=True)


def keep_own_clock() -> None:
    """Stop reading /clock back: the simulator sets its own ROS time where it publishes it.

    Under /use_sim_time rospy subscribes every node to /clock, this one included (its subscriber is
    `rospy.impl.simtime._clock_sub`): 500 messages a second through a socket to itself for a time it
    already knows (~7 % of a core at the stock rates).
    """
    sub = getattr(rospy.impl.simtime, "_clock_sub", None)
    if sub is not None:
        sub.unregister()


class SimNode:
    """The simulator's ROS side: its buses, topics and service around a SimRobot; `run()` is its loop."""

    def __init__(self) -> None:
        """:raises r1_common.settings.ConfigError: bad settings, a bad CAN layout, no robot_description."""
        params = rospy.get_param("~")
        self.settings = SimSettings.from_namespace(params)
        config = parse_config(params, where=NODE)      # the CAN layout; ConfigError names its key
        urdf = rospy.get_param("robot_description", None)
        if not urdf:
            raise ConfigError("robot_description", "not set: the simulator needs the robot's URDF")
        try:
            self.robot = SimRobot(config, urdf, self.settings, time.monotonic())
        except WorldError as e:
            raise ConfigError(f"{NODE}/scene", str(e)) from None
        self.namespace = os.environ.get("R1_SIM_NAMESPACE", "default")
        self.server = SimBusServer(config.buses, namespace=os.environ.get("R1_SIM_NAMESPACE"))
        rospy.loginfo("r1_sim: serving buses %s (namespace %s)", ", ".join(config.buses), self.namespace)
        self.requests = RequestQueue()
        rospy.Service("/sim/inject_fault", InjectFault, self._inject)
        rospy.Service("/sim/apply_wrench", ApplyWrench, self._apply_wrench)
        rospy.Subscriber("/sim/remote", controller_signal, self._on_remote, queue_size=1)
        # ground truth at 100 Hz, written in the loop (as /clock): a queued publisher wakes a writer
        # thread per message
        self.joints_pub = DirectPublisher("/sim/joint_states", JointState)
        self.odom_pub = DirectPublisher("/sim/odom", Odometry)
        self.objects_pub = DirectPublisher("/sim/objects", ObjectStates)
        # On wall time catching up keeps the physics with the controllers' clock; on simulated time the
        # controllers keep the physics' clock (SimSettings.max_lag_sim_time_s).
        self.sim_clock = bool(rospy.get_param("/use_sim_time", False))
        if self.sim_clock:
            keep_own_clock()
        self.clock_pub = clock_publisher() if self.sim_clock else None
        self.epoch = time.time() - self.robot.time    # simulated time starts at the wall time of the start
        now = time.monotonic()
        lockstep = PhysicsPacer.lockstep_for(self.settings, {n: b.rate_hz for n, b in config.buses.items()},
                                             self.sim_clock)
        self.pacer = PhysicsPacer(self.robot, self.settings, self.sim_clock, now, lockstep)
        self._last_report = [now, self.robot.time]
        self.touching = ""                            # what the robot touches, as last logged
        self._contacts_next = now
        self._diagnostics = DiagnosticsPublisher(self.diagnostics, name="r1_sim")   # its thread publishes

    def stamp(self) -> rospy.Time:
        """ROS time now: the simulated clock on simulated time, else the wall clock."""
        return rospy.Time.from_sec(self.epoch + self.robot.time) if self.sim_clock else rospy.Time.now()

    def _inject(self, req) -> InjectFaultResponse:
        ok, message, when = self.requests.inject_fault(req.joint, req.fault)
        return InjectFaultResponse(ok, message, when if when is not None else rospy.Time())

    def _apply_wrench(self, req) -> ApplyWrenchResponse:
        f, t = req.force, req.torque
        ok, message, when = self.requests.apply_wrench(req.link, (f.x, f.y, f.z), (t.x, t.y, t.z), req.duration)
        if ok:
            rospy.loginfo(f"r1_sim: pushing {req.link} for {req.duration:g} s from {when.to_sec():.3f}: force "
                          f"({f.x:g}, {f.y:g}, {f.z:g}) N, torque ({t.x:g}, {t.y:g}, {t.z:g}) N·m")
        return ApplyWrenchResponse(ok, message, when if when is not None else rospy.Time())

    def _on_remote(self, m: controller_signal) -> None:
        self.requests.set_remote([m.left_x_axis, m.left_y_axis, m.right_x_axis, m.right_y_axis], m.mode)

    def diagnostics(self) -> List[DiagnosticStatus]:
        """`r1_sim: physics`: steps on the wall clock, the real-time factor since the last report."""
        wall, sim_t = time.monotonic(), self.robot.time
        last = self._last_report
        factor = (sim_t - last[1]) / (wall - last[0]) if wall > last[0] else 0.0
        last[:] = [wall, sim_t]
        p = self.pacer
        values = p.stats.values(wall, {"real_time_factor": f"{factor:.3f}", "target_hz": f"{1.0 / p.dt:g}",
                                       "simulated_time_s": f"{sim_t:.3f}",
                                       "clock": "simulated" if self.sim_clock else "wall", "lagged": p.lagged,
                                       "lockstep_waits": p.lockstep_waits,
                                       "robot_touches": self.touching or "nothing",
                                       "bad_packets": sum(self.server.bad_packets.values()),
                                       "last_bad_packet": self.server.last_error})
        level = DiagnosticStatus.OK if factor > 0.0 else DiagnosticStatus.WARN
        message = f"simulated time at {factor:.0%} of real time" + ("" if factor > 0.0 else ": physics not stepping")
        return [status("r1_sim: physics", f"r1sim/{self.namespace}", level, message, values)]

    def _note_contacts(self) -> None:
        """Log what the robot touches when that changes (a link on the table, a gripper on an object):
        what explains a joint that pushes and does not arrive."""
        touching = describe_contacts(self.robot.contacts())
        if touching != self.touching:
            self.touching = touching
            rospy.loginfo(f"r1_sim: the robot touches {touching or 'nothing'}")

    def run(self) -> None:
        """Serve the buses and step the physics until ROS shuts down, then close the buses."""
        robot, pacer, server = self.robot, self.pacer, self.server
        while not rospy.is_shutdown():
            # the driver's frames to the motors; lockstep hears the driver once per packet
            server.poll(pacer.wait_time(time.monotonic()), robot.handle, heard=pacer.heard)
            now = time.monotonic()
            done = pacer.advance(now)
            for buses in done.let_go:
                rospy.logwarn(f"r1_sim: no frames from the driver on {', '.join(buses)} for "
                              f"{pacer.lockstep.timeout:g} s: simulated time runs on without waiting for it")
            if done.slipped and not self.sim_clock:
                rospy.logwarn_throttle(10.0, f"r1_sim: physics fell behind real time ({pacer.lagged} times)")
            report = pacer.real_time_report(now)       # on simulated time slipping is normal: say how much
            if report is not None:
                factor, window = report
                (rospy.loginfo if factor > 0.9 else rospy.logwarn)(
                    f"r1_sim: simulated time ran at {factor:.0%} of real time over the last {window:.0f} s")
            if self.clock_pub is not None and pacer.clock_due():
                now_stamp = self.stamp()
                rospy.rostime._set_rostime(now_stamp)    # this node's own ROS time (keep_own_clock)
                self.clock_pub.publish(Clock(now_stamp))
            for bus, frames in by_bus(robot.board_frames(now)).items():
                server.broadcast_many(bus, frames)      # an IMU's frames in one packet
            self.requests.serve(robot, self.stamp)
            if now >= self._contacts_next:
                self._contacts_next = now + CONTACTS_PERIOD_S
                self._note_contacts()
            if pacer.truth_due(now):
                t = self.stamp()
                positions = robot.joint_positions()
                joints = JointState(name=list(positions), position=list(positions.values()))
                joints.header.stamp = t
                self.joints_pub.publish(joints)
                self.odom_pub.publish(odometry(robot, t))
                self.objects_pub.publish(object_states(robot, t))
        server.close()


def main() -> None:
    """The node's process: a bad configuration ends it with one fatal line (r1_common.ros_io.run_node)."""
    run_node(NODE, lambda: SimNode().run())      # run() returns when ROS shuts down
