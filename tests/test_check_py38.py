"""scripts/lib/check_py38.py finds what needs a Python newer than the robot's 3.8, and nothing else."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

# system: scripts/test --unit leaves it out; workspace: scripts/test runs it once, on the development set
pytestmark = [pytest.mark.system, pytest.mark.workspace]

WS = Path(__file__).resolve().parents[1]
# the development set's interpreter, where mypy 1.10 is (the robot's set, under test too, has no mypy)
DEV_PYTHON = str(Path(os.environ.get("R1_VENV", "/opt/r1_venv")) / "bin" / "python3")


def run(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    f = tmp_path / "probe.py"
    f.write_text(source)
    return subprocess.run([DEV_PYTHON, str(WS / "scripts/lib/check_py38.py"), str(f)], capture_output=True,
                          text=True, cwd=WS)


def test_newer_constructs_are_found(tmp_path):
    out = run(tmp_path, "from __future__ import annotations\n"
                        "import functools\n"
                        "Frame = tuple[int, bytes]\n"                      # a runtime alias: 3.9
                        "def f(s: str) -> str:\n"
                        "    return s.removeprefix('x')\n"                 # 3.9
                        "@functools.cache\n"                               # 3.9
                        "def g(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:\n"
                        "    return a | b\n")                              # dict union: 3.9
    assert out.returncode == 1
    found = [line for line in out.stdout.splitlines() if "needs Python > 3.8" in line]
    assert {int(line.split(":")[1]) for line in found} == {3, 5, 6, 8}, out.stdout


def test_type_errors_that_are_no_version_matter_are_left_alone(tmp_path):
    out = run(tmp_path, "from __future__ import annotations\n"
                        "def f(x: list[int]) -> int:\n"                    # an annotation: fine on 3.8
                        "    y: dict[str, int] = {}\n"
                        "    return 'not an int'\n")                       # a type error in both runs
    assert out.returncode == 0, out.stdout + out.stderr
    assert "nothing newer used" in out.stdout


def test_without_mypy_the_check_fails_loudly(tmp_path):
    """(The robot's set has no mypy: there the check says so and fails, it does not pass quietly.)"""
    import sys
    f = tmp_path / "probe.py"
    f.write_text("x = 1\n")
    out = subprocess.run([sys.executable, "-S", str(WS / "scripts/lib/check_py38.py"), str(f)], capture_output=True,
                         text=True, cwd=WS)
    assert out.returncode == 2 and "mypy is not installed" in out.stderr


def test_every_module_of_the_sub_packages_is_checked():
    out = subprocess.run([DEV_PYTHON, "-c", "import sys; sys.path.insert(0, 'scripts/lib'); import check_py38; "
                          "print('\\n'.join(check_py38.python_files()))"], capture_output=True, text=True, cwd=WS)
    files = set(out.stdout.split())
    on_disk = {str(p.relative_to(WS)) for p in (WS / "src").glob("*/src/*/**/*.py")}
    assert "src/mobiman/src/mobiman/arm/ik.py" in on_disk
    assert on_disk <= files
