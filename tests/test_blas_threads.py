"""Every Python executable of the workspace asks for one BLAS thread before numpy loads
(r1_common.blas_threads says why), and doing so leaves a node's process without BLAS workers."""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from r1_common.blas_threads import BLAS_THREAD_VARIABLES

WS = Path(__file__).resolve().parents[1]
#: What an executable may import before the call: the standard library modules that load no numpy.
ALLOWED_FIRST = {"os", "sys", "pathlib", "r1_common.blas_threads"}


def executables() -> List[Path]:
    """The Python scripts (`#!... python` first line) of every package that depends on r1_common: all but
    r1_description's, whose URDF tools load no numpy."""
    users = [x.parent for x in WS.glob("src/*/package.xml")
             if re.search(r"<(exec_)?depend>r1_common</", x.read_text())]
    return [p for d in sorted(users) for p in sorted((d / "scripts").glob("*"))
            if p.is_file() and p.read_text(errors="replace").startswith("#!") and "python" in p.open().readline()]


def imports_before_the_call(script: Path) -> List[str]:
    """The modules `script` imports before its `use_one_blas_thread()` statement; raises AssertionError if it
    never calls it at module level."""
    seen: List[str] = []
    for node in ast.parse(script.read_text()).body:
        if isinstance(node, ast.Import):
            seen += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            seen.append(node.module or "")
        elif (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
              and getattr(node.value.func, "id", None) == "use_one_blas_thread"):
            return seen
    raise AssertionError(f"{script.relative_to(WS)} never calls use_one_blas_thread() at module level")


def test_every_executable_asks_before_it_imports_anything_heavy():
    scripts = executables()
    assert len(scripts) >= 24, [str(s) for s in scripts]           # the finder finds them
    late = {str(s.relative_to(WS)): sorted(set(imports_before_the_call(s)) - ALLOWED_FIRST) for s in scripts}
    assert {k: v for k, v in late.items() if v} == {}


def threads_after_a_node_loads(numpy_first: bool) -> int:
    """Threads of a fresh process (no BLAS variable set) that loaded the chassis node's script (not its main),
    then ran one eigvalsh; `numpy_first`: numpy imported before the script ran, as a too-late call would be."""
    script = WS / "src/mobiman/scripts/chassis_control_node"
    child = ("import os, runpy\n" + ("import numpy\n" if numpy_first else "")
             + f"runpy.run_path({str(script)!r}, run_name='loaded')\n"
             "import numpy as np; a = np.random.rand(8, 8); np.linalg.eigvalsh(a + a.T)\n"
             "print(len(os.listdir('/proc/self/task')))\n")
    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    out = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120,
                         check=True)
    return int(out.stdout.split()[-1])


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: OpenBLAS starts no worker to compare with")
def test_a_node_process_has_no_blas_worker():
    assert threads_after_a_node_loads(numpy_first=False) == 1
    assert threads_after_a_node_loads(numpy_first=True) >= 2       # the worker the call keeps away


def test_a_users_own_count_stays(monkeypatch):
    import numpy  # noqa: F401  (loaded before the call)

    from r1_common import blas_threads
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    for name in BLAS_THREAD_VARIABLES[1:]:
        monkeypatch.delenv(name, raising=False)
    assert blas_threads.use_one_blas_thread() is False          # numpy is loaded here: too late, and said so
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"
    assert all(os.environ[name] == "1" for name in BLAS_THREAD_VARIABLES[1:])
