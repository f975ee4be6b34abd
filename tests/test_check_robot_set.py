"""scripts/lib/check_robot_set.sh refuses a robot requirement without a CPython 3.8 wheel (PyPI needed)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

# system: scripts/test --unit leaves it out; workspace: scripts/test runs it once, on the development set
pytestmark = [pytest.mark.system, pytest.mark.workspace]

WS = Path(__file__).resolve().parents[1]


def check(tmp_path: Path, text: str) -> subprocess.CompletedProcess:
    req = tmp_path / "robot.txt"
    req.write_text(text)
    return subprocess.run([str(WS / "scripts/lib/check_robot_set.sh"), str(req)], capture_output=True, text=True)


def test_a_requirement_without_a_python_3_8_wheel_fails_the_check(tmp_path):
    out = check(tmp_path, "numpy==2.2.0\n")           # numpy 2.2 needs Python >= 3.10
    assert out.returncode == 1
    assert "aarch64" in out.stderr and "x86_64" in out.stderr and "numpy" in out.stderr


def test_a_source_only_package_fails_unless_it_is_ruckig(tmp_path):
    assert check(tmp_path, "empy==3.3.4\n").returncode == 1          # no wheel at all
    out = check(tmp_path, "PyYAML==6.0.3\nruckig==0.15.3\n")         # Ruckig: its source resolves
    assert out.returncode == 0, out.stderr
    assert "ruckig==0.15.3 from its source" in out.stdout
