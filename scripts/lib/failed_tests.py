#!/usr/bin/env python3
"""List the failed tests of a pass from its JUnit XML results, one line each.

Usage: ``failed_tests.py RESULTS_DIR [LABEL]``: every ``*.xml`` below RESULTS_DIR (pytest's and rosunit's;
rostest's own wrappers, ``rostest-*.xml``, only repeat them) is read; each test case with a ``failure`` or
``error`` element is printed as ``LABEL FILE::CLASS::NAME: first line of its message``. Prints nothing when
every test passed; exits 0 either way (the verdict is the caller's). A file that cannot be parsed is
reported as one line too (a crashed test writes half a file).
"""
from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import List


def failed_tests(results: Path) -> List[str]:
    """``FILE::CLASS::NAME: message`` for each failed or erroring test case below ``results``."""
    lines = []
    for path in sorted(results.rglob("*.xml")):
        if path.name.startswith("rostest-"):
            continue
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as e:
            lines.append(f"{path.relative_to(results)}: unreadable results ({e})")
            continue
        found = 0
        for case in root.iter("testcase"):
            for kind in ("failure", "error"):
                bad = case.find(kind)
                if bad is None:
                    continue
                found += 1
                text = (bad.get("message") or bad.text or kind).strip().splitlines() or [kind]
                lines.append(f"{path.relative_to(results)}::{case.get('classname', '')}::{case.get('name', '')}: "
                             f"{text[0][:200]}")
        # rosunit counts a failure it could not tie to a case (its XML then names none): say so
        suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
        counted = sum(int(s.get("failures") or 0) + int(s.get("errors") or 0) for s in suites)
        if counted > found:
            lines.append(f"{path.relative_to(results)}: {counted - found} failure(s) the file ties to no test "
                         "case (read its system-out)")
    return lines


def main(argv: List[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    label = argv[2] + " " if len(argv) > 2 else ""
    for line in failed_tests(Path(argv[1])):
        print(f"{label}FAILED {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
