"""scripts/lib/setup_target.py: which machine scripts/setup sets up (Debian 12 or the R1's Noetic)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

WS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(WS / "scripts" / "lib"))

from setup_target import DEBIAN12_APT, NOETIC_APT, NOETIC_SETUP, UnsupportedMachine, choose, os_release  # noqa: E402

DEBIAN12 = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n'
FOCAL = 'NAME="Ubuntu"\nVERSION="20.04.6 LTS (Focal Fossa)"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="20.04"\n'
JAMMY = 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\nVERSION_ID="22.04"\n'


def test_debian_12_is_the_development_machine_as_before():
    t = choose(os_release(DEBIAN12), noetic_installed=False)
    assert (t.name, t.python, t.requirements, t.ros_setup) == ("debian12", "/usr/bin/python3",
                                                               "requirements/dev.txt", None)
    assert t.apt == DEBIAN12_APT and "python3-rospy" in t.apt


def test_ubuntu_20_04_with_noetic_is_the_robot():
    t = choose(os_release(FOCAL), noetic_installed=True)
    assert (t.name, t.requirements, t.ros_setup) == ("noetic", "requirements/robot-test.txt", NOETIC_SETUP)
    assert t.apt == NOETIC_APT and {"cmake", "g++", "libgomp1"} <= set(t.apt)     # Ruckig's source build, pin
    assert all(p.startswith("ros-noetic-") for p in t.apt if p.startswith("ros-"))


@pytest.mark.parametrize("text, noetic, why", [
    (FOCAL, False, "without ROS Noetic"),
    (JAMMY, True, "Ubuntu 22.04"),
    ("", False, "an unknown system"),
])
def test_other_machines_are_refused_with_a_reason(text, noetic, why):
    with pytest.raises(UnsupportedMachine, match=why):
        choose(os_release(text), noetic)


def test_the_script_prints_shell_assignments_for_a_root(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/os-release").write_text(FOCAL)
    (tmp_path / "opt/ros/noetic").mkdir(parents=True)
    (tmp_path / "opt/ros/noetic/setup.bash").write_text("")
    out = subprocess.run([sys.executable, str(WS / "scripts/lib/setup_target.py"), str(tmp_path)],
                         capture_output=True, text=True, check=True).stdout
    env = subprocess.run(["bash", "-c", out + '\necho "$R1_TARGET|$R1_REQUIREMENTS|${R1_APT[0]}|$R1_ROS_SETUP"'],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert env == f"noetic|requirements/robot-test.txt|ros-noetic-rospy|{NOETIC_SETUP}"
    (tmp_path / "etc/os-release").write_text(JAMMY)
    bad = subprocess.run([sys.executable, str(WS / "scripts/lib/setup_target.py"), str(tmp_path)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "Ubuntu 22.04" in bad.stderr
