"""scripts/lib/failed_tests.py: the failed tests of a pass, by name, from JUnit XML."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "lib" / "failed_tests.py"
sys.path.insert(0, str(SCRIPT.parent))
from failed_tests import failed_tests  # noqa: E402

PYTEST_XML = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="1"
 tests="3"><testcase classname="tests.test_x" name="test_ok" time="0.1"/>
<testcase classname="tests.test_x" name="test_bad" time="0.1">
<failure message="assert 1 == 2">long text</failure></testcase>
<testcase classname="tests.test_x" name="test_boom" time="0.1"><error message="ValueError: no">trace</error></testcase>
</testsuite></testsuites>"""
ROSUNIT_UNTIED = """<?xml version="1.0" encoding="utf-8"?><testsuite errors="0" failures="1" name="s" tests="1">
<testcase classname="__main__.T" name="test_a" time="1.0" /></testsuite>"""
ROSTEST_WRAPPER = """<?xml version="1.0" encoding="utf-8"?><testsuite errors="0" failures="1" name="s" tests="1">
<testcase classname="rostest.runner.RosTest" name="testx" time="1.0"><failure message="x">x</failure></testcase>
</testsuite>"""


def test_failures_and_errors_are_named_with_their_first_line(tmp_path):
    (tmp_path / "pytest").mkdir()
    (tmp_path / "pytest" / "pytest.xml").write_text(PYTEST_XML)
    assert failed_tests(tmp_path) == ["pytest/pytest.xml::tests.test_x::test_bad: assert 1 == 2",
                                      "pytest/pytest.xml::tests.test_x::test_boom: ValueError: no"]


def test_a_failure_tied_to_no_case_is_still_reported_and_wrappers_are_skipped(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "rosunit-a.xml").write_text(ROSUNIT_UNTIED)
    (tmp_path / "pkg" / "rostest-a.xml").write_text(ROSTEST_WRAPPER)
    (tmp_path / "pkg" / "rosunit-half.xml").write_text("<testsuite><testcase")
    lines = failed_tests(tmp_path)
    assert lines[0] == "pkg/rosunit-a.xml: 1 failure(s) the file ties to no test case (read its system-out)"
    assert lines[1].startswith("pkg/rosunit-half.xml: unreadable results")
    assert len(lines) == 2


def test_the_command_prints_a_labelled_line_each_and_nothing_when_all_passed(tmp_path):
    (tmp_path / "pytest.xml").write_text(PYTEST_XML)
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), "[dev]"], capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout.splitlines() == ["[dev] FAILED pytest.xml::tests.test_x::test_bad: assert 1 == 2",
                                       "[dev] FAILED pytest.xml::tests.test_x::test_boom: ValueError: no"]
    passed = (PYTEST_XML.replace('errors="1" failures="1"', 'errors="0" failures="0"')
              .replace("<failure", "<skipped").replace("</failure>", "</skipped>")
              .replace("<error", "<skipped").replace("</error>", "</skipped>"))
    (tmp_path / "pytest.xml").write_text(passed)
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True)
    assert (out.returncode, out.stdout) == (0, "")
