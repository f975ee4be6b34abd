"""scripts/lib/check_types.py: its list names the ROS-free cores, and it reports a type error."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

WS = Path(__file__).resolve().parents[1]
# the development set's interpreter, where mypy 1.10 is (the robot's set, under test too, has no mypy)
DEV_PYTHON = str(Path(os.environ.get("R1_VENV", "/opt/r1_venv")) / "bin" / "python3")
# ROS client libraries and tools a core must not import (nor message packages: any `<pkg>.msg` / `<pkg>.srv`)
ROS_MODULES = {"rospy", "rosgraph", "roslib", "rospkg", "rosbag", "rostest", "rosnode", "rosservice", "tf",
               "tf2_ros", "actionlib", "message_filters", "genpy"}

sys.path.insert(0, str(WS / "scripts/lib"))
import check_types  # noqa: E402


def run(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([DEV_PYTHON, str(WS / "scripts/lib/check_types.py"), *map(str, paths)],
                          capture_output=True, text=True, cwd=WS)


def imported(path: Path) -> set[str]:
    """The absolute modules `path` imports (`from a import b`: both a and a.b, b may be a module)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return out


def workspace_source(module: str) -> Path | None:
    """The file of a workspace module (src/<pkg>/src/<module path>), None for any other."""
    parts = module.split(".")
    for root in WS.glob(f"src/*/src/{parts[0]}"):
        base = root.parent.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def ros_imports(path: Path, seen: set[Path] | None = None) -> list[str]:
    """The ROS modules `path` imports, directly or through the workspace's modules it imports."""
    seen = set() if seen is None else seen
    if path in seen:
        return []
    seen.add(path)
    found = []
    for module in sorted(imported(path)):
        parts = module.split(".")
        if parts[0] in ROS_MODULES or (len(parts) > 1 and parts[1] in ("msg", "srv")):
            found.append(f"{path.relative_to(WS)}: {module}")
        source = workspace_source(module)
        if source is not None:
            found += ros_imports(source, seen)
    return found


def core_files() -> list[Path]:
    out = []
    for entry in check_types.CORES:
        path = WS / entry
        assert path.exists(), f"{entry} is in check_types.CORES but not in the workspace"
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return out


def test_the_list_names_only_existing_ros_free_modules():
    files = core_files()
    assert WS / "src/mobiman/src/mobiman/arm/ik.py" in files
    assert WS / "src/HDAS/src/hdas/motor_group.py" in files
    found = [line for f in files for line in ros_imports(f)]
    assert not found, "cores that import ROS (directly or through a workspace module):\n" + "\n".join(found)


def test_the_ros_import_check_sees_a_node():
    """(The check above would pass on anything if it found no ROS import where there is one.)"""
    assert any("rospy" in line for line in ros_imports(WS / "src/HDAS/src/hdas/node.py"))
    assert any("rospy" in line for line in ros_imports(WS / "src/r1_common/src/r1_common/diagnostics.py"))


def test_a_type_error_is_reported(tmp_path):
    f = tmp_path / "probe.py"
    f.write_text("from __future__ import annotations\n"
                 "def f(x: int) -> str:\n"
                 "    return x\n")
    out = run(f)
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"{f}:3: error: Incompatible return value type" in out.stdout
    assert "1 type error in 1 paths" in out.stderr


def test_clean_files_pass(tmp_path):
    f = tmp_path / "probe.py"
    f.write_text("from __future__ import annotations\n"
                 "from typing import Optional\n"
                 "def f(x: Optional[int]) -> int:\n"
                 "    return 0 if x is None else x\n")
    out = run(f)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no type errors" in out.stdout


def test_without_mypy_the_check_fails_loudly(tmp_path):
    """(The robot's set has no mypy: there the check says so and fails, it does not pass quietly.)"""
    f = tmp_path / "probe.py"
    f.write_text("x = 1\n")
    out = subprocess.run([sys.executable, "-S", str(WS / "scripts/lib/check_types.py"), str(f)], capture_output=True,
                         text=True, cwd=WS)
    assert out.returncode == 2 and "mypy is not installed" in out.stderr
