"""The lint settings (pyproject.toml) do what docs/setup.md says: lines of 120, pyflakes, bugbear, import
order, the extensionless node scripts included."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

WS = Path(__file__).resolve().parents[1]
# the development set's ruff (the robot pass runs in the robot's venv, which has none)
RUFF = shutil.which("ruff") or shutil.which("ruff", path=os.path.join(os.environ.get("R1_VENV", "/opt/r1_venv"), "bin"))
pytestmark = pytest.mark.skipif(RUFF is None, reason="no development venv here (ruff is in requirements/dev-test.txt)")


def ruff(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([RUFF, "check", "--no-cache", "--output-format", "concise",
                           "--config", str(WS / "pyproject.toml"), *args], cwd=cwd, capture_output=True, text=True)


def test_each_habit_is_flagged(tmp_path):
    (tmp_path / "bad.py").write_text(
        "import os\n"                                                 # F401 unused import
        "import sys\n"
        "x = 1\n"
        f"y = '{'a' * 115}'\n"                                        # 121 characters: E501
        f"z = '{'a' * 114}'\n"                                        # 120: fine
        "def f(a=[]):\n"                                              # B006 mutable default
        "    return a\n"
        "print(sys.argv)\n")
    out = ruff("bad.py", cwd=tmp_path)
    assert out.returncode == 1
    codes = {line.split()[1] for line in out.stdout.splitlines() if line.startswith("bad.py:")}
    assert {"F401", "E501", "B006"} <= codes, out.stdout
    assert "bad.py:4:" in out.stdout and "bad.py:5:" not in out.stdout


def test_import_order_is_checked_with_our_packages_first_party(tmp_path):
    (tmp_path / "order.py").write_text("import numpy as np\nimport os\n\nprint(os, np)\n")
    assert "I001" in ruff("order.py", cwd=tmp_path).stdout
    (tmp_path / "order.py").write_text("import os\n\nimport numpy as np\nimport rospy\n\n"
                                       "from r1_common.throttle import Throttle\n\nprint(os, np, rospy, Throttle)\n")
    out = ruff("order.py", cwd=tmp_path)
    assert out.returncode == 0, out.stdout


def test_node_scripts_are_included_and_build_spaces_left_out():
    """(scripts/test runs the check over the workspace itself)"""
    files = ruff("--show-files", cwd=WS).stdout.splitlines()
    assert any(f.endswith("src/HDAS/scripts/HDAS") for f in files), "extensionless node scripts are not linted"
    assert any(f.endswith("src/mobiman/src/mobiman/arm/ik.py") for f in files)
    assert not any(part in f for f in files for part in ("/build/", "/devel/", "/install/", "/build_robot/"))
