"""requirements/: the development set split by purpose (runtime, test, benchmark), each pin in one place,
and the runtime code importing only what the runtime set installs."""
from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path
from typing import Dict, Set

WS = Path(__file__).resolve().parents[1]
REQ = WS / "requirements"
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==[0-9][A-Za-z0-9.]*$")
# import name -> distribution (where they differ or one distribution provides several)
IMPORT_DIST = {"pinocchio": "pin", "coal": "pin", "can": "python-can", "yaml": "pyyaml", "PIL": "pillow",
               "em": "empy"}
# provided by the system's ROS packages (Debian's or Noetic's), not by pip
ROS = {"rospy", "rosgraph", "roslib", "rostest", "rosunit", "rospkg", "genpy", "catkin_pkg", "tf2_ros", "tf2_py",
       "rosbag", "roslaunch", "rosservice", "rosnode", "rosmaster", "message_filters", "std_msgs", "sensor_msgs",
       "geometry_msgs", "nav_msgs", "diagnostic_msgs", "tf2_msgs", "std_srvs", "visualization_msgs", "PyKDL"}

NOT_RUNTIME = {
    "ros_testing.py": "helpers of the rostests",
    "node_graph.py": "draws docs/node_graph.png (matplotlib, dev-test.txt)",
}


def pins(name: str) -> Dict[str, str]:
    """distribution (lower case) -> line, of one requirements file (its -r includes apart)."""
    out = {}
    for line in (REQ / name).read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line or line.startswith("-r "):
            continue
        m = PIN.match(line)
        assert m, f"{name}: {line!r} is not an exact pin"
        out[m[1].lower()] = line
    return out


def test_dev_txt_is_the_three_parts():
    lines = [ln.strip() for ln in (REQ / "dev.txt").read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert lines == ["-r dev-runtime.txt", "-r dev-test.txt", "-r dev-bench.txt"]


def test_each_pin_is_in_one_file_only():
    parts = {n: pins(n) for n in ("dev-runtime.txt", "dev-test.txt", "dev-bench.txt")}
    seen: Dict[str, str] = {}
    for name, found in parts.items():
        for dist in found:
            assert dist not in seen, f"{dist} pinned in {seen.get(dist)} and {name}"
            seen[dist] = name


def third_party_imports(path: Path) -> Set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    workspace = {p.parent.name for p in WS.glob("src/*/src/*/__init__.py")} | {p.name for p in WS.glob("src/*")}
    return {m for m in out - workspace - ROS if m != "__future__" and not m.endswith(("_msgs", "_srvs"))
            and installed(m)}


def installed(module: str) -> bool:
    """Whether `module` comes from an installed distribution (site- or dist-packages), not the stdlib."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return True                 # not importable here: a third-party module missing from the venv
    origin = (spec.origin or "") if spec else "missing"
    return spec is None or "site-packages" in origin or "dist-packages" in origin


def test_runtime_code_imports_only_the_runtime_set():
    """The packages' runtime modules (not tests, not benchmarks, not the demo) import only what
    dev-runtime.txt installs (or the system's ROS packages); what the robot's set must have too."""
    runtime = set(pins("dev-runtime.txt"))
    missing = {}
    for f in sorted(WS.glob("src/*/src/*/**/*.py")):
        rel = f.relative_to(WS)
        if {"benchmarks", "demo", "test"} & set(rel.parts) or "benchmark" in f.name or f.name in NOT_RUNTIME:
            continue
        for mod in third_party_imports(f):
            if IMPORT_DIST.get(mod, mod).lower() not in runtime:
                missing.setdefault(mod, []).append(str(rel))
    assert missing == {}
    robot = pins("robot.txt")
    # what only the simulator needs (its cameras' JPEG, its world) is in the robot's test set, not on the robot;
    # empy comes from the system's ROS packages there
    simulator_only = {"pillow", "mujoco"}
    assert simulator_only <= set(pins("robot-test.txt"))
    assert runtime - simulator_only - {"empy"} <= set(robot), "the robot's set lacks a runtime package"
