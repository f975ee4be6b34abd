"""Which machine `scripts/setup` is setting up, and what that machine needs (Python 3.8, no ROS import).

Two targets:

* ``debian12``: the development machine (Debian 12 with its own ROS 1 packages, Python 3.11): the
  apt packages of `scripts/setup`, the venv from /usr/bin/python3, `requirements/dev.txt`.
* ``noetic``: the R1's own computer (Ubuntu 20.04 with ROS Noetic in /opt/ros/noetic, Python 3.8,
  aarch64 on the robot's Jetson): Noetic's packages (only the missing ones are installed), the venv
  from its Python 3.8, `requirements/robot-test.txt` (the robot's set, `requirements/robot.txt`, and
  what its tests need; Ruckig built from source: cmake and a C++17 compiler), and
  /opt/ros/noetic/setup.bash under the workspace.

`python3 scripts/lib/setup_target.py` prints the target's settings as shell assignments for
`scripts/setup` to evaluate; it exits 2 with a reason on a machine that is neither.
"""
from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

NOETIC_SETUP = "/opt/ros/noetic/setup.bash"

# Debian 12's own ROS 1 packages (ros_comm 1.15) and what the build and the tools need.
DEBIAN12_APT = [
    "python3-rospy", "python3-rosmaster", "rosout", "python3-roslaunch", "python3-rostest", "librostest-dev",
    "python3-rosunit", "python3-rostopic", "python3-rosservice", "python3-rosnode", "python3-rosparam",
    "python3-rosmsg", "rosbash", "catkin", "ros-message-generation", "ros-message-runtime", "g++", "make",
    "ros-std-msgs", "libstd-msgs-dev", "python3-std-msgs",
    "ros-geometry-msgs", "libgeometry-msgs-dev", "python3-geometry-msgs",
    "ros-sensor-msgs", "libsensor-msgs-dev", "python3-sensor-msgs",
    "ros-nav-msgs", "libnav-msgs-dev", "python3-nav-msgs",
    "ros-diagnostic-msgs", "libdiagnostic-msgs-dev", "python3-diagnostic-msgs",
    "python3-tf2-ros", "python3-tf2-msgs", "ros-robot-state-publisher", "python3-rosbag",
    "python3-venv", "python3-pip", "tmux", "iproute2",
    "python3-pykdl",   # KDL, a peer in the IK benchmark (scripts/benchmark ik)
    "catkin-lint",     # the packages' lint in scripts/test (Debian's: it reads Debian's catkin_pkg)
    # the robot's set on this machine (scripts/test's second pass) builds Ruckig 0.15.3 from its source,
    # as the robot does: CMake and Python's headers (g++ and make are above)
    "cmake", "python3-dev",
    "libosmesa6",      # MuJoCo's offscreen rendering without a display (the simulated cameras, MUJOCO_GL=osmesa)
]

# The same on Ubuntu 20.04 from ROS Noetic's apt repository (the robot has it configured), plus what
# Ruckig's source build needs (cmake, a C++17 compiler, Python's headers) and pinocchio's wheel (libgomp1).
NOETIC_APT = [
    "ros-noetic-rospy", "ros-noetic-rosmaster", "ros-noetic-rosout", "ros-noetic-roslaunch", "ros-noetic-rostest",
    "ros-noetic-rosunit", "ros-noetic-rostopic", "ros-noetic-rosservice", "ros-noetic-rosnode",
    "ros-noetic-rosparam", "ros-noetic-rosmsg", "ros-noetic-rosbash", "ros-noetic-catkin",
    "ros-noetic-message-generation", "ros-noetic-message-runtime", "ros-noetic-std-msgs",
    "ros-noetic-geometry-msgs", "ros-noetic-sensor-msgs", "ros-noetic-nav-msgs", "ros-noetic-diagnostic-msgs",
    "ros-noetic-tf2-ros", "ros-noetic-tf2-msgs", "ros-noetic-robot-state-publisher", "ros-noetic-rosbag",
    "python3-venv", "python3-pip", "tmux", "iproute2", "g++", "make", "cmake", "python3-dev", "libgomp1",
    "libosmesa6",      # MuJoCo's offscreen rendering (the simulator's cameras), for the tests on the robot
]


class UnsupportedMachine(Exception):
    """Neither Debian 12 nor Ubuntu 20.04 with ROS Noetic: says what was found."""


@dataclass(frozen=True)
class Target:
    name: str                      # debian12 | noetic
    python: str                    # the interpreter the venv is made from (and catkin builds with)
    requirements: str              # relative to the workspace
    apt: list[str] = field(default_factory=list)
    ros_setup: str | None = None   # sourced before the workspace's own devel/setup.bash

    def shell(self) -> str:
        """The settings as shell assignments (R1_TARGET, R1_PYTHON, R1_REQUIREMENTS, R1_APT, R1_ROS_SETUP)."""
        return "\n".join([f"R1_TARGET={shlex.quote(self.name)}", f"R1_PYTHON={shlex.quote(self.python)}",
                          f"R1_REQUIREMENTS={shlex.quote(self.requirements)}",
                          f"R1_APT=({' '.join(shlex.quote(p) for p in self.apt)})",
                          f"R1_ROS_SETUP={shlex.quote(self.ros_setup or '')}"])


def os_release(text: str) -> dict[str, str]:
    """/etc/os-release's KEY=value lines (quotes removed)."""
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip().strip('"').strip("'")
    return out


def choose(release: dict[str, str], noetic_installed: bool) -> Target:
    """The target for a machine with this /etc/os-release and (or not) /opt/ros/noetic.

    Raises UnsupportedMachine naming what was found."""
    distro, version = release.get("ID", ""), release.get("VERSION_ID", "")
    if distro == "debian" and version == "12":
        return Target("debian12", "/usr/bin/python3", "requirements/dev.txt", DEBIAN12_APT)
    if distro == "ubuntu" and version == "20.04":
        if not noetic_installed:
            raise UnsupportedMachine(f"Ubuntu 20.04 without ROS Noetic ({NOETIC_SETUP} is missing): install "
                                     "ros-noetic-ros-base first (the R1's computer has it)")
        return Target("noetic", "/usr/bin/python3", "requirements/robot-test.txt", NOETIC_APT, NOETIC_SETUP)
    name = release.get("PRETTY_NAME") or f"{distro} {version}".strip() or "an unknown system"
    raise UnsupportedMachine(f"{name}: the stack sets itself up on Debian 12 (development) or on Ubuntu 20.04 "
                             "with ROS Noetic (the R1's computer)")


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path("/")
    try:
        release = os_release((root / "etc/os-release").read_text())
        target = choose(release, (root / NOETIC_SETUP.lstrip("/")).exists())
    except (OSError, UnsupportedMachine) as e:
        print(f"setup_target: {e}", file=sys.stderr)
        return 2
    print(target.shell())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
