"""The demo's pick and place (`mobiman.demo.scripted`, step `pick`): the right arm picks the room's green can
from its side, lifts it 10 cm and places it 15 cm to the right, judged on the simulator's ground truth;
streamed pose targets through the arm pose controller, the gripper by its stroke target.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import rospy
from geometry_msgs.msg import PoseStamped
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import JointState
from std_msgs.msg import Float32

from mobiman.demo.common import Outcome, planar

# Pick and place (right arm, side grasp of the room's green can, r1_sim/worlds/room.xml): the torso leans
# forward (torso_link4 at x 0.146, z 0.678 in base_link, pitch 0; torso_joint1's gravity load 81 N·m of its
# 100), the gripper points forward pitched 15 deg down; the wrist centre then stays >= 8 cm inside the arm's
# reach (0.632 m) from the approach to the place, and the palm 3.5 cm above the table.
PICK_TORSO = [1.4, -2.2, -0.8, 0.0]
PICK_OBJECT = "green_can"
PICK_NOMINAL = (0.86, -0.20, 0.80)    # [m] the object where the demo started (world = start frame) when no ground truth
PICK_PITCH = math.radians(15.0)       # gripper x (the approach) pitched down
PICK_DEPTH = 0.045                    # [m] gripper_link behind the object's axis along the approach
APPROACH = 0.10                       # [m] pre-grasp and retreat distance along the approach
PLACE_OFFSET = (0.0, -0.15)           # [m] in the robot's frame, from where the object was
BASE_LINK_HEIGHT = 0.0415             # [m] base_link above the floor (URDF: base_footprint -> base_link)


class PickAndPlace:
    """The pick-and-place step and its helpers, mixed into `mobiman.demo.scripted.Demo` (whose streams,
    publishers, waits and config they use)."""

    def _object_world(self) -> np.ndarray | None:
        """The pick object's position in sim_world from /sim/objects (None on the robot)."""
        msg = self.objects.get()
        if msg is None or PICK_OBJECT not in msg.name:
            return None
        p = msg.pose[msg.name.index(PICK_OBJECT)].position
        return np.array([p.x, p.y, p.z])

    def _base_world(self) -> np.ndarray:
        """(x, y, yaw) of base_link in the world: ground truth in simulation, else odometry (the
        demo's start frame, where PICK_NOMINAL is given)."""
        truth = self.truth.get()
        return planar(truth if truth is not None else self.odom.get())

    @staticmethod
    def _in_base(p_world: np.ndarray, base: np.ndarray) -> np.ndarray:
        """A world point in base_link, the base at `base` (x, y, yaw)."""
        c, s = math.cos(base[2]), math.sin(base[2])
        d = p_world[:2] - base[:2]
        return np.array([c * d[0] + s * d[1], -s * d[0] + c * d[1], p_world[2] - BASE_LINK_HEIGHT])

    def _torso4(self) -> tuple[Rotation, np.ndarray]:
        """torso_link4 in base_link now (/motion_control/pose_floating_base: the measured torso joints)."""
        m = self.base_pose.get().pose
        o, t = m.orientation, m.position
        return Rotation.from_quat([o.x, o.y, o.z, o.w]), np.array([t.x, t.y, t.z])

    def _stream_line(self, side: str, start: np.ndarray, end: np.ndarray, quat: Sequence[float],
                     tolerance: float = 0.01, holding: bool = False, offset: np.ndarray | None = None,
                     reaim: int = 0, speed: float | None = None) -> np.ndarray:
        """Stream gripper poses along the line start -> end, given in base_link (`quat`: the gripper's
        orientation there), at `speed` (default `hand_speed`; 10 Hz, the stack's clock), each sent in
        torso_link4 through the torso's pose at the time: the torso's joints give a little under the
        arm's load (6 mm at torso_link4 with the can), which targets fixed in torso_link4 would follow
        down. Then hold the end until the measured gripper has settled (moved less than 1 mm in 0.3 s)
        within `tolerance` of the end. `holding` an object, settled anywhere (for 0.5 s) will do: the
        object's weight bends the arm's joint servos, whose gravity feed-forward knows only the arm
        (~9 mm down with the can), so the gripper may never come within `tolerance`, and waiting for
        it lets the object creep out of the fingers (MuJoCo's soft contacts: 0.33 mm/s with the can;
        on the stack it fell out after 110 s of waiting). `reaim`: that many times, a gripper settled
        beyond `tolerance` is aimed past the end by its error. `offset`: aim at end + offset from the
        start (a re-aim kept from the move before). Returns the offset of the last target streamed
        from `end`."""
        aim = np.asarray(end, dtype=float) + (np.zeros(3) if offset is None else offset)
        speed = speed or self.cfg.hand_speed
        self._stream_to(side, start, aim, quat, tolerance, end, holding, speed)
        for _ in range(reaim):
            error = np.asarray(end) - self._ee_in_base(side)
            if float(np.linalg.norm(error)) < tolerance:
                break
            self._stream_to(side, aim, aim + error, quat, tolerance, end, holding, speed)
            aim = aim + error
        self._for(0.3, lambda: self._send_pose(side, aim, quat), rate_hz=10.0)
        return aim - np.asarray(end)

    def _send_pose(self, side: str, p: np.ndarray, quat: Sequence[float]) -> None:
        """A gripper pose given in base_link, sent in torso_link4 (the arm targets' frame)."""
        r4, t4 = self._torso4()
        m = PoseStamped()
        m.header.stamp = rospy.Time.now()
        m.header.frame_id = "torso_link4"
        m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in r4.inv().apply(p - t4))
        (m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z,
         m.pose.orientation.w) = (float(v) for v in (r4.inv() * Rotation.from_quat(quat)).as_quat())
        self.cmd_pose[side].publish(m)

    def _stream_to(self, side: str, start: np.ndarray, aim: np.ndarray, quat: Sequence[float], tolerance: float,
                   end: np.ndarray, holding: bool, speed: float) -> None:
        """`_stream_line`'s one stream: targets start -> aim, until the gripper settles."""
        t0 = rospy.get_time()
        duration = max(float(np.linalg.norm(aim - start)) / speed, 0.1)
        track: dict[str, Any] = {"p": None, "t": None}

        def send() -> None:
            s = min(1.0, (rospy.get_time() - t0) / duration)
            self._send_pose(side, start + (0.5 - 0.5 * math.cos(math.pi * s)) * (aim - start), quat)

        def there() -> bool:
            now, p = rospy.get_time(), self._ee_in_base(side)
            if now - t0 < duration:
                return False
            if track["p"] is None or float(np.linalg.norm(p - track["p"])) > 0.001:
                track["p"], track["t"] = p, now
                return False
            if float(np.linalg.norm(p - end)) < tolerance:
                return now - track["t"] > 0.3
            return holding and now - track["t"] > 0.5
        try:
            self._until(there, f"{side} gripper to {np.round(aim, 3).tolist()}", send, rate_hz=10.0)
        except TimeoutError:
            pass                  # judged by the outcomes
        error = float(np.linalg.norm(self._ee_in_base(side) - end))
        if error >= tolerance:
            self.log(f"  {side} gripper stopped {error * 1000:.1f} mm from {np.round(end, 3).tolist()}")

    def _gripper_to(self, side: str, stroke: float, settle: float = 0.8) -> None:
        """A stroke target, streamed until the stroke stops changing (closed on an object: where it
        holds), then `settle` s more."""
        state = {"p": None, "t": None}

        def send() -> None:
            self.cmd_gripper[side].publish(Float32(stroke))

        def still() -> bool:
            p, now = float(self.gripper[side].get().position[0]), rospy.get_time()
            if state["p"] is None or abs(p - state["p"]) > 0.3:
                state["p"], state["t"] = p, now
                return False
            return now - state["t"] > 0.3
        try:
            self._until(still, f"{side} gripper to {stroke:.0f} mm", send, rate_hz=10.0)
        except TimeoutError:
            pass
        self._for(settle, send, rate_hz=10.0)

    def pick_and_place(self) -> list[Outcome]:
        """Right arm: lean the torso forward, open, approach the can, close, lift, move, place, open,
        retreat; the object's ground truth (/sim/objects, simulation only) judges the lift and the place."""
        side = "right"
        self.log(f"  torso: lean to {PICK_TORSO}")
        self.cmd_torso.publish(JointState(position=PICK_TORSO, velocity=[0.6] * 4))
        self._until(lambda: np.max(np.abs(np.asarray(self.torso_fb.get().position[:4]) - PICK_TORSO)) < 0.02,
                    "torso lean", detail=lambda: self._torso_report(PICK_TORSO))
        self._settle_torso()
        base = self._base_world()
        obj0 = self._object_world()
        truth = obj0 is not None
        obj = obj0 if truth else np.asarray(PICK_NOMINAL)
        c, s = math.cos(base[2]), math.sin(base[2])
        place_world = obj + np.array([c * PLACE_OFFSET[0] - s * PLACE_OFFSET[1],
                                      s * PLACE_OFFSET[0] + c * PLACE_OFFSET[1], 0.0])
        self.log(f"  {PICK_OBJECT} at {np.round(obj, 3).tolist()} ({'ground truth' if truth else 'nominal'}), "
                 f"place at {np.round(place_world[:2], 3).tolist()}")
        # in base_link: the gripper's x (the approach) pitched down, the lift straight up
        hand = Rotation.from_euler("y", PICK_PITCH)
        quat = tuple(float(v) for v in hand.as_quat())
        approach = hand.apply([1.0, 0.0, 0.0])
        up = np.array([0.0, 0.0, 1.0])
        grasp = self._in_base(obj, base) - PICK_DEPTH * approach
        place = self._in_base(place_world, base) - PICK_DEPTH * approach + 0.005 * up
        lift = self.cfg.lift_height * up
        here = self._ee_in_base(side)
        self.log("  gripper: open")
        self._gripper_to(side, 100.0, settle=0.3)
        self.log("  arm: approach, descend")
        self._stream_line(side, here, grasp - APPROACH * approach + 0.05 * up, quat, 0.02)
        self._stream_line(side, grasp - APPROACH * approach + 0.05 * up, grasp - APPROACH * approach, quat)
        self._stream_line(side, grasp - APPROACH * approach, grasp, quat, 0.005,
                          speed=0.5 * self.cfg.hand_speed)          # slower: no swerve into the can
        self.log("  gripper: close")
        self._gripper_to(side, 0.0)
        self.log(f"  arm: lift {self.cfg.lift_height:.2f} m")
        sag = self._stream_line(side, grasp, grasp + lift, quat, 0.005, holding=True, reaim=2)
        self.log(f"  arm: lifted, re-aimed by {np.round(sag * 1000, 1).tolist()} mm")
        self._for(1.0, lambda: self._send_pose(side, grasp + lift + sag, quat), rate_hz=10.0)
        lifted = self._object_world()
        self.log("  arm: move, place")
        sag = self._stream_line(side, grasp + lift + sag, place + lift, quat, 0.01, holding=True, offset=sag,
                                reaim=1)
        self._stream_line(side, place + lift + sag, place, quat, 0.005, holding=True, offset=sag)
        self.log("  gripper: open")
        self._gripper_to(side, 100.0, settle=0.3)
        self.log("  arm: retreat")
        self._stream_line(side, place, place - APPROACH * approach, quat, 0.02)
        self._stream_line(side, place - APPROACH * approach, place - APPROACH * approach + 0.10 * up, quat, 0.02)
        self._for(0.5, lambda: None)
        placed = self._object_world()
        if not truth or lifted is None or placed is None:
            self.log("  no ground truth of the object (not in simulation): no outcome")
            return []
        return [Outcome("pick and place", "object lifted", float(lifted[2] - obj0[2]), self.cfg.lift_height,
                        self.cfg.lift_tolerance, "m"),
                Outcome("pick and place", "object placed (xy off the target)",
                        float(np.linalg.norm(placed[:2] - place_world[:2])), 0.0, self.cfg.place_tolerance, "m")]

    def _ee_in_base(self, side: str) -> np.ndarray:
        """The measured gripper's position (/motion_control/pose_ee_arm_*, torso_link4) in base_link."""
        p = self.ee[side].get().pose.position
        r4, t4 = self._torso4()
        return r4.apply([p.x, p.y, p.z]) + t4
