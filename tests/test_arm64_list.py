"""scripts/test-arm64's tests run in an arm64 root without ROS: each listed file exists and imports
nothing of ROS (collected here with rospy & co. made unimportable), so the smoke test, which CI does not
run, cannot break by a new import."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# system: scripts/test --unit leaves it out; workspace: scripts/test runs it once, on the development set
pytestmark = [pytest.mark.system, pytest.mark.workspace]

WS = Path(__file__).resolve().parents[1]
BLOCK = ("rospy", "roslib", "rosgraph", "rosparam", "rostest", "genpy", "tf2_ros", "tf2_py", "rosbag",
         "catkin", "hdas_msg", "sensor_msgs", "geometry_msgs", "std_msgs", "nav_msgs", "tf2_msgs",
         "diagnostic_msgs")


def listed_tests() -> list[str]:
    text = (WS / "scripts" / "test-arm64").read_text()
    block = re.search(r"^TESTS=\((.*?)\)", text, re.S | re.M)
    assert block, "no TESTS=(...) in scripts/test-arm64"
    return block.group(1).split()


def test_every_listed_test_exists():
    tests = listed_tests()
    assert len(tests) >= 10
    assert [t for t in tests if not (WS / t).is_file()] == []


def test_the_listed_tests_import_nothing_of_ros(tmp_path):
    (tmp_path / "no_ros.py").write_text(f"import sys\nfor m in {BLOCK!r}:\n    sys.modules[m] = None\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no_ros", "-p", "no:cacheprovider", "--collect-only",
                          "-q", *listed_tests()], cwd=WS, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": f"{tmp_path}"})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert re.search(r"\d+ tests collected", out.stdout), out.stdout[-500:]


def test_the_check_sees_a_ros_import(tmp_path):
    """The blocking works: a module that imports rospy fails to import under it."""
    (tmp_path / "no_ros.py").write_text(f"import sys\nfor m in {BLOCK!r}:\n    sys.modules[m] = None\n")
    out = subprocess.run([sys.executable, "-c", "import no_ros, rospy"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": f"{tmp_path}"})
    assert out.returncode != 0 and "rospy" in out.stderr
