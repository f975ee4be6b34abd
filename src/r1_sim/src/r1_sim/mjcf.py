"""The simulated world as one MuJoCo model: the robot from its URDF, on a planar base, in a scene. ROS-free.

`world_xml` compiles the URDF with MuJoCo's own URDF importer (every link a body, so every sensor
frame of the URDF is there to mount a camera or an IMU on), and puts it into a scene: an MJCF
document of the user's (`worlds/*.xml` in this package: `room`, `empty`). What is added to the robot:

* **the base**: `base_footprint` gets a planar joint set (`base_x`, `base_y` slides, `base_yaw`
  hinge) with a position servo on each (`base_servo`), which `r1_sim.base_traction` drives after the
  swerve modules (slipping beyond the grip);
  the chassis (base, steer and wheel links) has no contacts: it rolls over the floor kinematically
  (why: docs/simulator.md, "The base on the floor");
* **contacts**: every other robot geom touches the scene (scene geoms keep MuJoCo's default
  contype/conaffinity 1) but not the robot itself, as the old simulator had no self-contact either:
  the controllers keep the arms apart (the arm IK's capsules), and the URDF's primitives of
  neighbouring links overlap. Two exceptions: the two fingers of a hand (`FINGER_LINK` bodies with one
  parent) touch each other (a contact pair), and the fingers' contacts take the fingers' own settings
  (`FINGER_CONTACT`, priority over the scene's geoms), stiff enough that a grip holds what it grasps;
* **friction that sticks** (`GRIP_FRICTION`, unless the scene's `<option>` chooses): elliptic friction
  cones with impratio 10, as MuJoCo's documentation advises for grasping;
* **ties** (the gripper's second finger follows its first: a joint equality), **cameras** mounted on
  URDF frames (`CameraMount`, ROS optical frames: z forward, y down), **IMU sites and sensors**
  (`imu_site`, `imu_sensors`): orientation, rate gyro and specific force of a URDF frame.

Joint names are the URDF's. Joint friction, damping, armature and the brakes are not in the XML:
`r1_sim.mujoco_world.MujocoWorld` sets them on the compiled model from the simulator's settings.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, Tuple

import mujoco

__all__ = ["BASE_JOINTS", "CHASSIS_LINKS", "CameraMount", "GRIP_FRICTION", "base_servo", "brake_name", "WORLDS_DIR",
           "WorldError", "imu_sensors", "imu_site", "robot_mjcf", "scene_path", "world_xml"]

BASE_JOINTS = ("base_x", "base_y", "base_yaw")
CHASSIS_LINKS = ("base_footprint", "base_link", "steer_motor_link", "wheel_motor_link")   # no contacts
FINGER_LINK = "gripper_finger_link"      # a body whose name contains it is a finger
# The fingers' contacts (with the scene's geoms, whose default priority 0 yields to these, and with each
# other): MuJoCo's contacts are soft, and a held object creeps through soft friction at a speed that grows
# with its weight and the constraint's softness: MuJoCo's default (solimp 0.9..0.95, solref 0.02 s) let a
# 94 g cylinder slide out in seconds. Impedance 0.999..0.9999 and the stiffest time constant the step
# allows (2 steps; MuJoCo's refsafe floor) hold a 1 kg object to < 0.3 mm/s at 500 Hz and 1 kHz
# (docs/simulator.md). condim 4: torsional friction too, so a held object does not spin about the pads.
FINGER_CONTACT = {"priority": "1", "condim": "4", "friction": "1 0.01 0.001", "solimp": "0.999 0.9999 0.001"}
FINGER_PAIR_CONDIM = "1"                 # finger on finger: they stop each other, no friction needed
# The world's friction cones (a scene's own <option> cone/impratio win). MuJoCo's friction is a soft
# constraint: with its default pyramidal cones and impratio 1 a held 1 kg object crept 0.5 mm in 5 s at rest
# and 0.6 mm through six 50 N pushes at the shoulders, and in the whole stack it fell out of the hand ~15 s
# after the grasp. Elliptic cones with impratio 10 (friction 10x stiffer than the normal force's constraint):
# 0.02 and 0.03 mm, at the same step cost (docs/simulator.md, "Friction that sticks"). Only the robot's
# upper body and the scene's objects have contacts (the chassis rolls kinematically): nothing else changes.
GRIP_FRICTION = {"cone": "elliptic", "impratio": "10"}


def _worlds_dir() -> Path:
    """r1_sim's `worlds/`: beside the package's source (devel space: src/r1_sim/worlds), or in the install
    space's share (<prefix>/lib/python3/dist-packages/r1_sim -> <prefix>/share/r1_sim/worlds)."""
    here = Path(__file__).resolve()
    source, installed = here.parents[2] / "worlds", here.parents[4] / "share" / "r1_sim" / "worlds"
    return source if source.is_dir() or not installed.is_dir() else installed


WORLDS_DIR = _worlds_dir()
ROBOT_CONTYPE, ROBOT_CONAFFINITY = 2, 1       # touches the scene's default geoms (1, 1), not itself
GRAVITY = 9.81


class WorldError(ValueError):
    """A scene or robot that cannot be made into the simulated world (the message says why)."""


@dataclass(frozen=True)
class CameraMount:
    """A camera on a URDF frame: a ROS optical frame (z forward, x right, y down)."""

    name: str
    frame: str
    fovy_deg: float


def base_servo(joint: str) -> str:
    """The position actuator of a base joint (gains set by MujocoWorld from r1_sim.base_traction)."""
    return f"{joint}_servo"


def brake_name(joint: str) -> str:
    """The equality that is the brake of a joint."""
    return f"brake:{joint}"


def imu_site(frame: str) -> str:
    return f"imu:{frame}"


def imu_sensors(frame: str) -> Tuple[str, str, str]:
    """Names of the (orientation in the world, gyro, specific force) sensors of an IMU frame."""
    return f"{frame}:quat", f"{frame}:gyro", f"{frame}:acc"


def scene_path(scene: str, worlds_dir: Path = WORLDS_DIR) -> Path:
    """A scene by name (`room` -> worlds/room.xml) or by path to an MJCF file.

    :raises WorldError: no such file."""
    path = Path(scene) if ("/" in scene or scene.endswith(".xml")) else worlds_dir / f"{scene}.xml"
    if not path.is_file():
        names = sorted(p.stem for p in worlds_dir.glob("*.xml"))
        raise WorldError(f"scene {scene!r}: no file {path} (scenes here: {', '.join(names)})")
    return path


def robot_mjcf(urdf_xml: str) -> ET.Element:
    """The robot alone as MJCF (`<mujoco>`), compiled from the URDF by MuJoCo's importer.

    Collision geoms are named `<link>_<k>` (as pinocchio names them), visuals dropped (the URDF's
    collision and visual primitives are the same; the importer colours geoms from the materials).

    :raises WorldError: a URDF MuJoCo cannot compile."""
    try:
        robot = ET.fromstring(urdf_xml)
    except ET.ParseError as e:
        raise WorldError(f"robot_description is not XML: {e}") from None
    for link in robot.iter("link"):
        for k, col in enumerate(link.findall("collision")):
            col.set("name", f"{link.get('name')}_{k}")
    for old in robot.findall("mujoco"):
        robot.remove(old)
    ET.SubElement(ET.SubElement(robot, "mujoco"), "compiler", fusestatic="false", discardvisual="true")
    try:
        model = mujoco.MjModel.from_xml_string(ET.tostring(robot, encoding="unicode"))
    except ValueError as e:
        raise WorldError(f"MuJoCo cannot compile the URDF: {e}") from None
    return ET.fromstring(_saved_xml(model))


def _saved_xml(model: mujoco.MjModel) -> str:
    import os
    import tempfile
    fd, path = tempfile.mkstemp(suffix=".xml")
    os.close(fd)
    try:
        mujoco.mj_saveLastXML(path, model)
        return Path(path).read_text()
    finally:
        os.unlink(path)


def _body(root: ET.Element, name: str) -> ET.Element:
    for b in root.iter("body"):
        if b.get("name") == name:
            return b
    raise WorldError(f"no link {name!r} in the robot")


def world_xml(urdf_xml: str, scene_xml: str, *, timestep: float = 0.001,
              ties: Sequence[Tuple[str, str]] = (), brakes: Sequence[str] = (),
              cameras: Sequence[CameraMount] = (),
              imus: Sequence[str] = ()) -> str:
    """The world's MJCF: the scene with the robot on its planar base (see the module doc).

    `ties`: (follower, leader) joints moving together; `brakes`: joints with a brake, each an inactive
    joint equality `brake_name(joint)` that holds the joint where it is once activated; `cameras`,
    `imus` (URDF frames): what to mount;
    The base starts at the world's origin facing +x.

    :raises WorldError: a scene that is not MJCF, a frame or joint not in the robot."""
    if timestep <= 0.0 or not math.isfinite(timestep):
        raise WorldError(f"timestep {timestep!r}: must be positive")
    try:
        scene = ET.fromstring(scene_xml)
    except ET.ParseError as e:
        raise WorldError(f"scene is not XML: {e}") from None
    if scene.tag != "mujoco":
        raise WorldError(f"scene: root element <{scene.tag}>, expected <mujoco>")
    robot = robot_mjcf(urdf_xml)
    root = _body(robot, "base_footprint")
    joints = [ET.Element("joint", name="base_x", type="slide", axis="1 0 0"),
              ET.Element("joint", name="base_y", type="slide", axis="0 1 0"),
              ET.Element("joint", name="base_yaw", type="hinge", axis="0 0 1")]
    for k, element in enumerate(joints):
        root.insert(k, element)
    for joint in root.iter("joint"):
        if joint.get("range") is not None:
            # hard stops as stiff as the time step allows (MuJoCo's default, 0.02 s, let a closing finger
            # sink 2 cm into its stop)
            joint.set("solreflimit", f"{2 * timestep:.9g} 1")
        # dry friction that sticks: MuJoCo's friction loss is a soft constraint, and with its defaults a
        # wrist under 60 % of its Coulomb torque crept 0.9 rad in 0.5 s; this stiffness and impedance hold
        # it to ~1 mrad (measured; test_mujoco_world)
        joint.set("solreffriction", f"{2 * timestep:.9g} 1")
        joint.set("solimpfriction", "0.999 0.9999 0.001")
    finger_solref = f"{2 * timestep:.9g} 1"
    contact = ET.Element("contact")
    for body in root.iter("body"):
        name = body.get("name", "")
        chassis = any(name.startswith(c) for c in CHASSIS_LINKS)
        for g in body.findall("geom"):
            if chassis:
                g.set("contype", "0")
                g.set("conaffinity", "0")
            else:
                g.set("contype", str(ROBOT_CONTYPE))
                g.set("conaffinity", str(ROBOT_CONAFFINITY))
                g.set("condim", "4")          # torsional friction too: a held object does not spin
            if FINGER_LINK in name:
                for attribute, value in FINGER_CONTACT.items():
                    g.set(attribute, value)
                g.set("solref", finger_solref)
        # the two fingers of a hand touch each other (the robot's geoms touch nothing of the robot otherwise)
        fingers = [b for b in body.findall("body") if FINGER_LINK in b.get("name", "")]
        if len(fingers) == 2:
            for g1 in fingers[0].findall("geom"):
                for g2 in fingers[1].findall("geom"):
                    ET.SubElement(contact, "pair", geom1=g1.get("name", ""), geom2=g2.get("name", ""),
                                  condim=FINGER_PAIR_CONDIM, solref=finger_solref, solimp=FINGER_CONTACT["solimp"])
    for cam in cameras:
        body = _body(robot, cam.frame)
        # MuJoCo's cameras look along -z with y up: the optical frame turned half a turn about x
        ET.SubElement(body, "camera", name=cam.name, pos="0 0 0", quat="0 1 0 0", fovy=f"{cam.fovy_deg:.6g}")
    sensor = ET.Element("sensor")
    for frame in imus:
        ET.SubElement(_body(robot, frame), "site", name=imu_site(frame), size="0.005")
        quat, gyro, acc = imu_sensors(frame)
        ET.SubElement(sensor, "framequat", name=quat, objtype="site", objname=imu_site(frame))
        ET.SubElement(sensor, "gyro", name=gyro, site=imu_site(frame))
        ET.SubElement(sensor, "accelerometer", name=acc, site=imu_site(frame))
    joint_names = {j.get("name") for j in robot.iter("joint")}
    equality = ET.Element("equality")
    for follower, leader in ties:
        for j in (follower, leader):
            if j not in joint_names:
                raise WorldError(f"tie: no joint {j!r} in the robot")
        ET.SubElement(equality, "joint", joint1=follower, joint2=leader, polycoef="0 1 0 0 0",
                      solref="0.002 1")
    for j in brakes:
        if j not in joint_names:
            raise WorldError(f"brake: no joint {j!r} in the robot")
        ET.SubElement(equality, "joint", name=brake_name(j), joint1=j, polycoef="0 0 0 0 0", active="false",
                      solref="0.002 1")
    actuator = ET.Element("actuator")
    for j in BASE_JOINTS:        # kp, kv and the force range: set on the model (MujocoWorld)
        ET.SubElement(actuator, "position", name=base_servo(j), joint=j, kp="1", kv="1", forcelimited="true",
                      forcerange="-1 1", ctrllimited="false")
    # assemble: the scene's document with the robot's bodies, ours after the scene's own sections
    compiler = scene.find("compiler")
    if compiler is None:
        compiler = ET.Element("compiler")
        scene.insert(0, compiler)
    compiler.set("angle", "radian")
    option = scene.find("option")
    if option is None:
        option = ET.Element("option")
        scene.insert(1, option)
    option.set("timestep", f"{timestep:.9g}")
    option.set("integrator", "implicitfast")
    option.set("gravity", f"0 0 {-GRAVITY}")
    for attribute, value in GRIP_FRICTION.items():
        if option.get(attribute) is None:
            option.set(attribute, value)
    worldbody = scene.find("worldbody")
    if worldbody is None:
        worldbody = ET.SubElement(scene, "worldbody")
    worldbody.append(root)
    for section in (contact, equality, actuator, sensor):
        if len(section):
            scene.append(section)
    return ET.tostring(scene, encoding="unicode")


def load_world(xml: str) -> mujoco.MjModel:
    """Compile a world's MJCF.

    :raises WorldError: MuJoCo refuses it (its message)."""
    try:
        return mujoco.MjModel.from_xml_string(xml)
    except ValueError as e:
        raise WorldError(f"MuJoCo cannot compile the world: {e}") from None
