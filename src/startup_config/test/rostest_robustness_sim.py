#!/usr/bin/env python3
"""The whole stack on the simulated robot against what its users' programs and its own failures do
(issue 19, docs/safety.md).

a. Fuzz: malformed and random messages on every input topic of the stack, found from the master
   (r1_startup.fuzz), then the checks after each topic: every node alive, the feedback at its rate,
   nothing non-finite and no position beyond the URDF's limits on the driver's, the controllers' and
   the simulator's topics, no joint faster than its limit.
b. kill -9 of every node in turn with the robot at rest: it comes back within 5 s, the arms and
   the torso hold (drift < 0.01 rad) and the base stays still meanwhile; chassis control also while
   driving: the base stops, and drives again once it is back.
c. Afterwards the robot still works: the guide's left-arm pose is reached (< 1 cm) and the base drives.

Times of the robot are simulated time (ground truth stamps); "back within 5 s" is wall time, as a
user waits for it.
"""
import collections
import os
import random
import signal
import threading
import time
import unittest

import numpy as np
import rosgraph
import roslib.message
import rospy
import rostest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

from hdas.urdf_limits import read_limits
from r1_common.ros_testing import node_pid
from r1_startup.fuzz import LimitChecker, MessageFuzzer, SpeedChecker
from r1_startup.topics import TopicWatcher, load_topics
from r1_startup.wait_stack import default_topics_file

HELD = ([f"torso_joint{k}" for k in range(1, 5)] + [f"left_arm_joint{k}" for k in range(1, 7)]
        + [f"right_arm_joint{k}" for k in range(1, 7)])
DRIFT = 0.01            # [rad] the arms and torso hold within this while a node is down
BACK_WITHIN = 5.0       # [s, wall] a killed node is back and publishing
# ... except the arm IK nodes and the sensors' renderer: on this 2-core machine, saturated by the simulated
# robot and the stack, their start takes 6-10 s (the IK's 3.7 s on an idle machine with the development
# set, 4.4 s with the robot's older numba and pinocchio: imports, numba's cached passes, the solver's
# tables). Neither holds the robot: the joint tracker and HDAS do meanwhile.
SLOW_STARTS = {"/r1_left_arm_relaxed_ik": 15.0, "/r1_right_arm_relaxed_ik": 15.0, "/r1_sim_sensors": 15.0}
NOT_KILLED = {"/r1_sim", "/rosout"}      # the simulated robot itself, and ROS's log collector
GUIDE_LEFT_POSE = ((0.373, 0.637, 0.303), (0.0, 0.0, -0.028, 1.0))     # the guide's example, torso_link4

# -- fuzz ------------------------------------------------------------------------------------------
# Topics that are not the robot's inputs, with the reason (every other topic a node of the stack
# subscribes to is fuzzed, found from the master: a new input topic is covered without a word here).
NOT_FUZZED = {
    "/clock": "the simulation's time base: a publisher there moves every node's clock (ROS 1's design); "
              "the robot has no /clock",
    "/rosout": "ROS's log collector (rosout, C++), not the robot's",
}
# Messages per topic: the motors' own command streams (/motion_control/control_*: what HDAS sends on, where
# a sustained fuzz found the fingers' speed) get 2,000 on every set; the other inputs 1,000 on the development
# set, and 500 on the robot's set of versions (scripts/test exports R1_SET), whose pass checks that the same
# validation holds on the robot's numpy, scipy and pinocchio: the two passes' fuzz cost CI ~4 min at 2,000
MOTOR_COMMANDS_PREFIX = "/motion_control/control_"
MESSAGES_PER_MOTOR_TOPIC = 2000
MESSAGES_PER_TOPIC = 500 if os.environ.get("R1_SET") == "robot" else 1000
RATE_HZ = 2000.0
CALLS_PER_SERVICE = 100
# a plausible message for a topic nobody publishes yet: where to copy one from
TEMPLATE_FROM = {
    "/motion_target/target_joint_state_arm_left": "/hdas/feedback_arm_left",
    "/motion_target/target_joint_state_arm_right": "/hdas/feedback_arm_right",
    "/motion_target/target_joint_state_torso": "/hdas/feedback_torso",
    "/motion_target/target_pose_arm_left": "/motion_control/pose_ee_arm_left",
    "/motion_target/pose_target_arm_left": "/motion_control/pose_ee_arm_left",
    "/motion_target/target_pose_arm_right": "/motion_control/pose_ee_arm_right",
    "/motion_target/pose_target_arm_right": "/motion_control/pose_ee_arm_right",
    # a gripper motor's own command (one entry a field, its motor's units): a hold where the fingers are
    # (their stroke [mm]) with the gripper's hold gains (GRIPPER_LAYOUT); with none, HDAS refuses every message
    "/motion_control/control_gripper_left": "/hdas/feedback_gripper_left",
    "/motion_control/control_gripper_right": "/hdas/feedback_gripper_right",
}
GRIPPER_LAYOUT = "/HDAS/groups/{side}_arm/gripper"     # the driver's CAN layout (r1_can/config/r1.yaml)
# state a fuzzed topic leaves behind that later checks must not inherit: put back after it
RESTORE = {
    "/motion_target/chassis_acc_limit": ("geometry_msgs/Twist",
                                         {"linear": {"x": 2.5, "y": 1.0}, "angular": {"z": 1.0}}),
    "/motion_target/brake_mode": ("std_msgs/Bool", {"data": False}),
    "/sim/remote": ("hdas_msg/controller_signal", {"mode": 5}),
}
RESTORE_CHECK = {         # topic -> (topic, type, predicate) that shows its RESTORE took
    "/sim/remote": ("/controller", "hdas_msg/controller_signal_stamped", lambda m: m.data.mode == 5),
}
JUDGED_PREFIXES = ("/hdas/", "/motion_control/", "/sim/")
RATE_TOPICS = ("/hdas/feedback_arm_left", "/hdas/feedback_torso")     # must flow through every fuzz
SPEED_TOLERANCE = 1.35        # ground-truth speed / URDF limit (finite differences at 100 Hz; docs/safety.md)
# The fingers' bar (docs/safety.md, section 7): HDAS's law stops pushing them at 1.05x their limit, in the motor
# itself; the ground truth is exact in simulated time (a sample's positions and stamp are one physics step's).
FINGERS = [f"{side}_gripper_finger_joint{k}" for side in ("left", "right") for k in (1, 2)]
FINGER_SPEED_TOLERANCE = 1.1
FINGER_POSITION_TOLERANCE = 0.001     # [m] past 0 or 0.05 (HDAS's push past a limit is zero 0.5 mm beyond it)


class Truth:
    """The simulator's ground truth: held joints and base speed, recorded on demand (simulated stamps)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.joints = None          # (stamp, positions of HELD)
        self.speed = None           # (stamp, |base twist|)
        self.recording = None
        rospy.Subscriber("/sim/joint_states", JointState, self._on_joints, queue_size=100)
        rospy.Subscriber("/sim/odom", Odometry, self._on_odom, queue_size=100)

    def _on_joints(self, m):
        # (the fuzz also publishes on /sim/joint_states: its messages are not the simulator's)
        index = {n: i for i, n in enumerate(m.name)}
        if any(index.get(j, len(m.position)) >= len(m.position) for j in HELD):
            return
        q = np.array([m.position[index[j]] for j in HELD])
        if not np.all(np.isfinite(q)):
            return
        with self.lock:
            self.joints = (m.header.stamp.to_sec(), q)
            if self.recording is not None:
                self.recording["joints"].append(self.joints)

    def _on_odom(self, m):
        t = m.twist.twist
        speed = float(np.hypot(t.linear.x, t.linear.y))
        with self.lock:
            self.speed = (m.header.stamp.to_sec(), speed)
            if self.recording is not None:
                self.recording["speed"].append(self.speed)

    def start(self):
        with self.lock:
            self.recording = {"joints": [], "speed": []}

    def stop(self):
        with self.lock:
            out, self.recording = self.recording, None
        return out

    def now(self):
        with self.lock:
            return self.joints[0] if self.joints else 0.0


class Heard:
    """When each node was last heard publishing (/diagnostics, /tf), monotonic."""

    def __init__(self):
        self.lock = threading.Lock()
        self.last = {}
        rospy.Subscriber("/diagnostics", DiagnosticArray, self._cb, queue_size=100)
        rospy.Subscriber("/tf", TFMessage, self._cb, queue_size=100)

    def _cb(self, msg):
        caller = msg._connection_header.get("callerid", "")
        with self.lock:
            self.last[caller] = time.monotonic()

    def since(self, node, t):
        with self.lock:
            return self.last.get(node, -1.0) > t


class Stream(threading.Thread):
    """Publishes `msg` on `pub` at `rate_hz` of wall time until stopped."""

    def __init__(self, pub, msg, rate_hz=20.0):
        super().__init__(daemon=True)
        self.pub, self.msg, self.period = pub, msg, 1.0 / rate_hz
        self.running = True

    def run(self):
        while self.running and not rospy.is_shutdown():
            self.pub.publish(self.msg)
            time.sleep(self.period)

    def stop(self):
        self.running = False
        self.join(5.0)


def twist(vx):
    t = Twist()
    t.linear.x = vx
    return t


class RobustnessSimTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rospy.init_node("test_robustness_sim", anonymous=True)
        watcher = TopicWatcher(load_topics(default_topics_file()))
        try:
            found = watcher.wait(900, log=rospy.loginfo)
        finally:
            watcher.close()
        assert not found, "the stack did not come up:\n" + "\n".join(found)
        cls.master = rosgraph.Master(rospy.get_name())
        cls.truth = Truth()
        cls.heard = Heard()
        cls.chassis = rospy.Publisher("/motion_target/target_speed_chassis", Twist, queue_size=1)
        cls.pose_left = rospy.Publisher("/motion_target/target_pose_arm_left", PoseStamped, queue_size=1)
        cls.torso_target = rospy.Publisher("/motion_target/target_joint_state_torso", JointState, queue_size=1)
        deadline = time.monotonic() + 120
        while cls.truth.speed is None or cls.truth.joints is None:
            assert time.monotonic() < deadline, "no ground truth"
            time.sleep(0.1)

    # -- helpers -------------------------------------------------------------------------------
    def pid_of(self, node):
        try:
            return node_pid(node)
        except AssertionError:      # not registered (yet), or gone
            return None

    def our_nodes(self):
        pubs, subs, _ = self.master.getSystemState()
        nodes = {n for _, ns in pubs + subs for n in ns}
        return sorted(nodes - NOT_KILLED - {rospy.get_name()})

    def wait_sim(self, seconds, wall_timeout=300.0):
        start, deadline = self.truth.now(), time.monotonic() + wall_timeout
        while self.truth.now() - start < seconds:
            self.assertLess(time.monotonic(), deadline, "simulated time did not advance")
            time.sleep(0.02)

    def settle(self, timeout=300.0):
        """Until the robot is still: the held joints moved < 1 mrad and the base < 0.005 m/s over 0.5 s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.truth.start()
            self.wait_sim(0.5)
            rec = self.truth.stop()
            q = np.array([q for _, q in rec["joints"]])
            speeds = [s for _, s in rec["speed"]]
            if len(q) > 2 and np.ptp(q, axis=0).max() < 1e-3 and max(speeds, default=1.0) < 0.005:
                return
        self.fail("the robot did not come to rest")

    def kill_and_wait_back(self, node):
        """kill -9 `node`; (seconds until it publishes again from a new process, wall)."""
        pid = self.pid_of(node)
        self.assertIsNotNone(pid, f"{node} is not running")
        t_kill = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        while time.monotonic() - t_kill < 60.0:
            new = self.pid_of(node)
            if new is not None and new != pid and self.heard.since(node, t_kill):
                return time.monotonic() - t_kill
            time.sleep(0.05)
        self.fail(f"{node} did not come back within 60 s")

    def reach_guide_pose_and_drive(self):
        """The robot still works: the torso stands straight again (the fuzz's random targets and speeds may
        leave it folded to the floor, where no arm reaches the guide's pose), the guide's left-arm pose is
        reached (< 1 cm) and the base drives."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            self.torso_target.publish(JointState(position=[0.0] * 4, velocity=[0.6] * 4))
            torso = rospy.wait_for_message("/hdas/feedback_torso", JointState, timeout=10)
            if max(abs(q) for q in torso.position[:4]) < 0.05:
                break
            time.sleep(0.5)
        self.assertLess(max(abs(q) for q in torso.position[:4]), 0.05, "the torso does not stand straight again")
        latest = {}
        sub = rospy.Subscriber("/motion_control/pose_ee_arm_left", PoseStamped,
                               lambda m: latest.__setitem__("pose", m), queue_size=1)
        (x, y, z), (qx, qy, qz, qw) = GUIDE_LEFT_POSE
        target = PoseStamped()
        target.pose.position.x, target.pose.position.y, target.pose.position.z = x, y, z
        target.pose.orientation.x, target.pose.orientation.y = qx, qy
        target.pose.orientation.z, target.pose.orientation.w = qz, qw
        deadline, error = time.monotonic() + 120, np.inf
        try:
            while time.monotonic() < deadline and error >= 0.01:
                self.pose_left.publish(target)
                time.sleep(0.05)
                if "pose" in latest:
                    p = latest["pose"].pose.position
                    error = float(np.linalg.norm([p.x - x, p.y - y, p.z - z]))
        finally:
            sub.unregister()
        self.assertLess(error, 0.01, "the guide's left-arm pose not reached")
        stream = Stream(self.chassis, twist(0.3))
        stream.start()
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.truth.speed[1] < 0.25:
                time.sleep(0.05)
            self.assertGreater(self.truth.speed[1], 0.25, "the base does not drive")
        finally:
            stream.stop()
        self.settle()

    # -- fuzz helpers --------------------------------------------------------------------------
    def stack_nodes(self):
        pubs, subs, _ = self.master.getSystemState()
        return {n for _, ns in pubs + subs for n in ns} - {rospy.get_name()}

    def input_topics(self):
        """topic -> the stack's nodes that subscribe to it (the test's own subscriptions do not count)."""
        _, subs, _ = self.master.getSystemState()
        me = rospy.get_name()
        out = {t: sorted(set(ns) - {me}) for t, ns in subs if set(ns) - {me}}
        return {t: ns for t, ns in out.items() if t not in NOT_FUZZED}

    def stack_services(self):
        _, _, srvs = self.master.getSystemState()
        return sorted(s for s, ns in srvs if not s.endswith(("/get_loggers", "/set_logger_level"))
                      and rospy.get_name() not in ns)

    def template(self, topic, cls):
        """The last real message on `topic`, else a plausible one (TEMPLATE_FROM), else the default."""
        try:
            return rospy.wait_for_message(topic, cls, timeout=0.5)
        except rospy.ROSException:
            pass
        source = TEMPLATE_FROM.get(topic)
        if source is None:
            return cls()
        src = rospy.wait_for_message(source, roslib.message.get_message_class(
            dict(self.master.getTopicTypes())[source]), timeout=30)
        if cls._type == "sensor_msgs/JointState":
            n = 4 if topic.endswith("torso") else 6
            return cls(position=list(src.position[:n]))
        if cls._type == "hdas_msg/motor_control":
            return self.gripper_hold(topic, cls, src)
        msg = cls()
        msg.pose = src.pose
        return msg

    def gripper_hold(self, topic, cls, stroke):
        """A gripper motor's command holding its fingers where `stroke` (the gripper's feedback: the gap [mm], each
        finger half of it) says they are: p_des their travel in motor radians (metres_per_rad), v_des and t_ff 0,
        kp and kd the layout's hold gains (N·m/rad, N·m·s/rad)."""
        layout = rospy.get_param(GRIPPER_LAYOUT.format(side="left" if topic.endswith("_left") else "right"))
        travel = stroke.position[0] / 2000.0             # [m] a finger's
        return cls(p_des=[travel / float(layout["metres_per_rad"])], v_des=[0.0], kp=[float(layout["hold_kp"])],
                   kd=[float(layout["hold_kd"])], t_ff=[0.0])

    def watch_outputs(self):
        """Judge every message the stack publishes on /hdas/*, /motion_control/* and /sim/* meanwhile
        (not this test's own): finite, within the URDF's ranges; the ground truth's speeds."""
        limits = read_limits(rospy.get_param("/robot_description"))
        ranges = {n: (lim.lower, lim.upper) for n, lim in limits.items()}
        arm = lambda side: [f"{side}_arm_joint{k}" for k in range(1, 7)] + [f"{side}_gripper_finger_joint1"]
        commands = {"/motion_control/control_arm_left": arm("left"), "/motion_control/control_arm_right": arm("right"),
                    "/motion_control/control_torso": [f"torso_joint{k}" for k in range(1, 5)],
                    "/motion_control/control_chassis": [f"steer_motor_joint{k}" for k in range(1, 4)]}
        self.checker = LimitChecker(ranges, commands, frozenset({"/hdas/feedback_gripper_left",
                                                                  "/hdas/feedback_gripper_right"}),
                                    {f: FINGER_POSITION_TOLERANCE for f in FINGERS})
        moving = {n: lim.velocity for n, lim in limits.items()
                  if not n.startswith("wheel_") and np.isfinite(lim.velocity)}
        self.speeds = SpeedChecker(moving, SPEED_TOLERANCE, {f: FINGER_SPEED_TOLERANCE for f in FINGERS})
        self.fastest = {}                   # joint -> speed / limit over the whole fuzz (self.speeds: this topic's)
        self.finger_ranges = {f: ranges[f] for f in FINGERS}
        self.finger_past = {f: -np.inf for f in FINGERS}     # [m] the farthest beyond its range (ground truth)
        self.finger_past_all = dict(self.finger_past)        # ... over the whole fuzz
        self.problems = []
        self.problem_lock = threading.Lock()
        self.arrivals = {t: collections.deque(maxlen=2000) for t in RATE_TOPICS}
        pubs, _, _ = self.master.getSystemState()
        types = dict(self.master.getTopicTypes())
        me = rospy.get_name()
        self.watched = []
        for topic, nodes in pubs:
            if topic.startswith(JUDGED_PREFIXES) and set(nodes) - {me} and topic in types:
                cls = roslib.message.get_message_class(types[topic])
                self.watched.append(rospy.Subscriber(topic, cls, self._judge, topic, queue_size=200))

    def _judge(self, msg, topic):
        if msg._connection_header.get("callerid") == rospy.get_name():
            return
        if topic in RATE_TOPICS:
            self.arrivals[topic].append(time.monotonic())
        found = self.checker.check(topic, msg)
        if topic == "/sim/joint_states":
            found += self.speeds.sample(msg.header.stamp.to_sec(), msg.name, msg.position)
            past = self.finger_past
            for n, x in zip(msg.name, msg.position):
                if n in past and np.isfinite(x):
                    lo, hi = self.finger_ranges[n]
                    past[n] = max(past[n], lo - x, x - hi)
        if found:
            with self.problem_lock:
                if len(self.problems) < 50:
                    self.problems += found

    def topic_fingers(self):
        """(speed / limit, farthest past the range [m]) of the fingers since the last call (ground truth), the
        whole fuzz's figures kept in self.fastest and self.finger_past_all."""
        fastest, self.speeds.fastest = self.speeds.fastest, {}
        past, self.finger_past = self.finger_past, {f: -np.inf for f in FINGERS}
        for n, r in fastest.items():
            self.fastest[n] = max(self.fastest.get(n, 0.0), r)
        self.finger_past_all = {f: max(self.finger_past_all[f], past[f]) for f in FINGERS}
        return max(fastest.get(f, 0.0) for f in FINGERS), max(past.values())

    def take_problems(self):
        with self.problem_lock:
            out, self.problems = self.problems, []
        return out

    def recent_rate(self, seconds=0.5):
        """Messages per second of wall time on RATE_TOPICS over the last `seconds` (watch_outputs counts
        them as they come: no wait)."""
        since = time.monotonic() - seconds
        return {t: sum(1 for a in list(arr) if a > since) / seconds for t, arr in self.arrivals.items()}

    def feedback_rate(self, seconds=2.0):
        """Messages per second of wall time on RATE_TOPICS, measured from now on for `seconds`."""
        counts = collections.Counter()
        subs = [rospy.Subscriber(t, JointState, lambda m, t=t: counts.update([t]), queue_size=100)
                for t in RATE_TOPICS]
        time.sleep(seconds)
        for sub in subs:
            sub.unregister()
        return {t: c / seconds for t, c in counts.items()}

    def pids(self):
        return {n: self.pid_of(n) for n in self.stack_nodes()}

    def fuzz_topic(self, topic, type_name, seed):
        cls = roslib.message.get_message_class(type_name)
        fuzz = MessageFuzzer(cls, self.template(topic, cls), seed=seed)
        pub = rospy.Publisher(topic, cls, queue_size=100)
        deadline = time.monotonic() + 10
        while pub.get_num_connections() < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        sent = collections.Counter()
        period = 1.0 / RATE_HZ
        next_t = t0 = time.monotonic()
        for _ in range(MESSAGES_PER_MOTOR_TOPIC if topic.startswith(MOTOR_COMMANDS_PREFIX) else MESSAGES_PER_TOPIC):
            category, msg = next(fuzz)
            pub.publish(msg)
            sent[category] += 1
            next_t += period
            time.sleep(max(0.0, next_t - time.monotonic()))
        self.send_seconds = time.monotonic() - t0
        time.sleep(0.2)
        try:
            if topic in RESTORE:
                self.restore(topic, pub)
        finally:
            pub.unregister()
        return sent

    def restore(self, topic, pub):
        """Put back the state a fuzzed topic leaves behind (RESTORE) on the fuzz's own publisher `pub`, and
        make sure it took: publish until RESTORE_CHECK (if any) sees the effect; fails after 30 s.

        (The fuzz's publisher, still connected: a new publisher on the topic right after the old one's
        unregistering can stay unconnected, rospy's subscriber taking the master's two updates for one
        and the same publisher URI. That lost the restore once in three CI runs.)"""
        kind, fields = RESTORE[topic]
        msg = roslib.message.get_message_class(kind)()
        for k, v in fields.items():
            if isinstance(v, dict):
                for kk, vv in v.items():
                    setattr(getattr(msg, k), kk, vv)
            else:
                setattr(msg, k, v)
        check = RESTORE_CHECK.get(topic)
        deadline = time.monotonic() + 30.0
        while True:
            for _ in range(5):
                pub.publish(msg)
                time.sleep(0.05)
            if check is None:
                return
            check_topic, check_type, ok = check
            try:
                seen = rospy.wait_for_message(check_topic, roslib.message.get_message_class(check_type), 1.0)
                if ok(seen):
                    return
            except rospy.ROSException:
                pass
            self.assertLess(time.monotonic(), deadline,
                            f"restoring {topic} to {fields} did not take in 30 s "
                            f"({pub.get_num_connections()} subscribers connected)")

    def fuzz_service(self, name, rng):
        """CALLS_PER_SERVICE requests that a service of the robot must refuse (a valid function frame would
        switch motors off, a valid fault would fault one); (calls, refused), refused None for a service
        with no verdict in its answer (tf2's debugging service of a Buffer: any answer will do)."""
        from rosservice import get_service_class_by_name
        cls = get_service_class_by_name(name)
        proxy = rospy.ServiceProxy(name, cls)
        fields = cls._request_class.__slots__
        judged = "success" in cls._response_class.__slots__
        refused = 0
        for _ in range(CALLS_PER_SERVICE):
            if cls._type == "hdas_msg/FunctionFrame":
                req = cls._request_class(command=rng.choice([0, 7, 8, 99, 100, 101, 255, rng.randint(7, 255)]))
            elif cls._type == "r1_sim/ApplyWrench":     # a harmless push (nothing for 0.5 s) with one field bad
                req = cls._request_class(link="torso_link4", duration=0.5)
                field = rng.choice(["link", "force", "torque", "duration"])
                bad = rng.choice([float("nan"), float("inf"), -float("inf"), 1e4, -1e9])
                if field == "link":
                    req.link = rng.choice(["", "no_such_link", "x" * 300, "torso_link4 ", "a\x00b"])
                elif field == "duration":
                    req.duration = rng.choice([0.0, -1.0, 10.5, 1e9, float("nan"), float("inf")])
                else:
                    setattr(getattr(req, field), rng.choice("xyz"), bad)
            else:
                req = cls._request_class(**{f: rng.choice(["", "no_such_joint", "x" * 300, "left_arm_joint1 ",
                                                           "gremlins", "a\x00b"]) for f in fields})
            try:
                answer = proxy(req)
                refused += judged and not answer.success
            except rospy.ServiceException:
                refused += 1
        return CALLS_PER_SERVICE, refused if judged else None

    # -- tests (in name order) -------------------------------------------------------------------
    def test_a_fuzz_every_input_topic_and_service(self):
        """Every input topic (and new ones that appear meanwhile, e.g. /tf once the arm IK listens to it)
        gets MESSAGES_PER_TOPIC (a motor command stream MESSAGES_PER_MOTOR_TOPIC) malformed, random
        and valid messages; after each, every node is alive
        (the same process), the feedback flows, and nothing the stack published was out of bounds."""
        self.watch_outputs()
        baseline = self.feedback_rate()
        rospy.loginfo(f"fuzz: feedback before {baseline}")
        before = self.pids()
        rng = random.Random(19)
        done, report, failures = set(), [], []
        while True:
            todo = sorted(set(self.input_topics()) - done)
            if not todo:
                break
            types = dict(self.master.getTopicTypes())
            for topic in todo:
                done.add(topic)
                sim_start = self.truth.now()
                sent = self.fuzz_topic(topic, types[topic], seed=rng.randrange(2 ** 31))
                sim_seconds = self.truth.now() - sim_start
                now = self.pids()
                dead = sorted(n for n, pid in before.items() if now.get(n) != pid)
                for _ in range(20):            # (a flood of 1,000-entry messages may take the nodes a while)
                    rate = self.recent_rate(0.5)
                    slow = sorted(t for t, r in baseline.items() if rate.get(t, 0.0) < 0.5 * r)
                    if not slow:
                        break
                    time.sleep(0.5)
                problems = self.take_problems()
                fingers = self.topic_fingers()
                report.append(f"{topic}: {sum(sent.values())} messages "
                              f"({', '.join(f'{c} {n}' for c, n in sorted(sent.items()))})"
                              f" sent in {self.send_seconds:.1f} s ({sim_seconds:.1f} s simulated)"
                              f"; feedback {', '.join(f'{r:.0f}/s' for r in rate.values())}"
                              f"; fingers {fingers[0]:.2f}x, {fingers[1] * 1000:+.2f} mm past")
                rospy.loginfo(f"fuzz: {report[-1]}")
                if dead or slow or problems:
                    failures.append(f"{topic}: died {dead}, slow feedback {slow}, out of bounds {problems[:5]}")
                    rospy.logerr(f"fuzz: {failures[-1]}")
                    before = self.pids()
        for name in self.stack_services():
            calls, refused = self.fuzz_service(name, rng)
            report.append(f"{name}: {calls} invalid requests" + (f", {refused} refused" if refused is not None else ""))
            rospy.loginfo(f"fuzz: {report[-1]}")
            if refused is not None and refused != calls:
                failures.append(f"{name}: {calls - refused} invalid requests accepted")
        now = self.pids()
        dead = sorted(n for n, pid in before.items() if now.get(n) != pid)
        self.topic_fingers()
        fastest = sorted(self.fastest.items(), key=lambda kv: -kv[1])[:5]
        rospy.loginfo("fuzz report:\n  " + "\n  ".join(report) + "\n  fastest joints (speed / limit): "
                      + ", ".join(f"{n} {r:.2f}" for n, r in fastest) + "\n  fingers (speed / limit, farthest "
                      "past their range): " + ", ".join(f"{f} {self.fastest.get(f, 0.0):.2f}x "
                                                       f"{self.finger_past_all[f] * 1000:+.2f} mm" for f in FINGERS))
        for sub in self.watched:
            sub.unregister()
        self.assertGreaterEqual(len(done), 20, f"only {len(done)} input topics found: {sorted(done)}")
        self.assertEqual(failures + ([f"died: {dead}"] if dead else []), [])
        self.reach_guide_pose_and_drive()


    def test_b_each_node_killed_comes_back_and_the_robot_holds(self):
        nodes = self.our_nodes()
        rospy.loginfo(f"kill -9, in turn: {', '.join(nodes)}")
        report = []
        for node in nodes:
            self.settle()
            q0 = self.truth.joints[1]
            self.truth.start()
            back = self.kill_and_wait_back(node)
            self.wait_sim(1.0)
            rec = self.truth.stop()
            q = np.array([q for _, q in rec["joints"]])
            drift = float(np.abs(q - q0).max()) if len(q) else np.inf
            base = max((s for _, s in rec["speed"]), default=np.inf)
            report.append(f"{node}: back after {back:.1f} s, drift {drift * 1e3:.1f} mrad, base {base:.4f} m/s")
            rospy.loginfo(f"kill -9 {report[-1]}")
            with self.subTest(node=node):
                self.assertLess(back, SLOW_STARTS.get(node, BACK_WITHIN), f"{node} took {back:.1f} s to come back")
                self.assertLess(drift, DRIFT, f"the arms or torso drifted {drift:.4f} rad while {node} was down")
                self.assertLess(base, 0.01, f"the base moved while {node} was down")
        rospy.loginfo("kill -9 of every node:\n  " + "\n  ".join(report))

    def test_c_chassis_control_killed_while_driving_stops_the_base(self):
        """The command stream goes on (its program is alive): the base stops within the driver's command
        timeout and the deceleration ramp once chassis control is gone, and drives again once it is back."""
        self.settle()
        stream = Stream(self.chassis, twist(0.3))
        stream.start()
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.truth.speed[1] < 0.29:
                time.sleep(0.05)
            self.truth.start()
            t_sim = self.truth.now()
            back = self.kill_and_wait_back("/chassis_control_node")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and self.truth.speed[1] < 0.25:
                time.sleep(0.05)
            rec = self.truth.stop()
        finally:
            stream.stop()
        t = np.array([s for s, _ in rec["speed"]]) - t_sim
        v = np.array([v for _, v in rec["speed"]])
        stopped = t[np.argmax(v < 0.01)] if np.any(v < 0.01) else np.inf
        rospy.loginfo(f"chassis control killed at 0.3 m/s: base below 0.01 m/s {stopped:.3f} s later (simulated), "
                      f"chassis control back after {back:.1f} s (wall), driving again at {v.max():.2f} m/s")
        self.assertLess(stopped, 0.2 + 0.3 / 2.5 + 0.05 + 0.1)     # HDAS's command timeout and wheel ramp
        self.assertGreater(v[-1], 0.25)
        self.assertLess(back, BACK_WITHIN)
        self.settle()

    def test_d_afterwards_the_guide_pose_is_reached_and_the_base_drives(self):
        self.reach_guide_pose_and_drive()


if __name__ == "__main__":
    rostest.rosrun("startup_config", "robustness_sim", RobustnessSimTest)
