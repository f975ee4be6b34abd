"""Python 3.8 is the floor of everything that runs on the robot: find what needs a newer Python.

A version checker that reads only syntax misses what fails at run time on 3.8 (`tuple[int, bytes]` as a
module-level alias, `str.removeprefix`, `functools.cache`, `dict | dict`). mypy knows both, through
typeshed's per-version stubs: this runs mypy 1.10 (newer releases refuse a 3.8 target) over the code
twice, for Python 3.8 and for 3.11, and reports the errors that only the 3.8 run finds. Those are
exactly the uses of something newer than 3.8; type errors that have nothing to do with the version
appear in both runs and are left to the type checking proper.

`python scripts/lib/check_py38.py [paths...]` (default: every Python file of the workspace that
runs on the robot or in its tests); exit 1 with one line per finding, 0 when there is none.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

WS = Path(__file__).resolve().parents[2]
# mypy's incremental cache, kept for the machine (a clean clone's check then reads what it already
# knows: mypy compares the files' hashes when their times differ)
CACHE = Path(os.environ.get("R1_MYPY_CACHE", "/var/tmp/r1_mypy_cache"))
PATTERNS = ("src/*/src/*/**/*.py", "src/*/scripts/*", "src/*/test/*.py", "src/*/test/*/*.py",
            "src/startup_config/script/*/*.py", "scripts/lib/*.py", "tests/*.py")
ERROR = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: (?P<text>.*?)(  \[(?P<code>[a-z-]+)\])?$")


def python_files(patterns=PATTERNS) -> list[str]:
    """Every Python file of the workspace (scripts without a .py suffix by their shebang)."""
    out = []
    for pattern in patterns:
        for path in sorted(WS.glob(pattern)):
            if not path.is_file():
                continue
            if path.suffix == ".py" or (not path.suffix and path.read_bytes()[:64].startswith(b"#!")
                                        and b"python" in path.read_bytes()[:64]):
                out.append(str(path.relative_to(WS)))
    return out


def errors(version: str, files: list[str]) -> dict[tuple[str, str, str], str]:
    """mypy's errors for a Python `version` target: (file, line, error code) -> text. (The texts of one
    error differ between targets, mypy spells Optional[X] as X | None from 3.10 on: the code is kept.)"""
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--python-version", version, "--no-site-packages", "--ignore-missing-imports",
         "--check-untyped-defs",
         "--scripts-are-modules", "--no-error-summary", "--hide-error-context", "--no-pretty",
         "--cache-dir", str(CACHE / f"mypy_cache_{version}"), *files],
        cwd=WS, capture_output=True, text=True)
    if out.returncode not in (0, 1):
        raise RuntimeError(f"mypy failed for Python {version}:\n{out.stdout}{out.stderr}")
    found = {}
    for line in out.stdout.splitlines():
        m = ERROR.match(line)
        if m:
            found[(m["file"], m["line"], m["code"])] = m["text"]
    return found


def mypy_110_missing(tool: str) -> str | None:
    """Why `tool` cannot run (mypy missing, or not 1.10: later releases refuse a 3.8 target), else None."""
    try:
        import mypy.version
    except ImportError:
        return f"{tool}: mypy is not installed (requirements/dev-test.txt pins 1.10.1)"
    if not mypy.version.__version__.startswith("1.10"):
        return f"{tool}: mypy {mypy.version.__version__}: 1.10 is needed (later releases refuse a 3.8 target)"
    return None


def main(argv: list[str]) -> int:
    why_not = mypy_110_missing("check_py38")
    if why_not:
        print(why_not, file=sys.stderr)
        return 2
    files = argv[1:] or python_files()
    old, new = errors("3.8", files), errors("3.11", files)
    newer = sorted((k for k in old if k not in new), key=lambda k: (k[0], int(k[1])))
    for file, line, code in newer:
        print(f"{file}:{line}: needs Python > 3.8: {old[(file, line, code)]}  [{code}]")
    if newer:
        print(f"{len(newer)} uses of something newer than Python 3.8 (the robot's Python) in {len(files)} files",
              file=sys.stderr)
        return 1
    print(f"Python 3.8: nothing newer used in {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
