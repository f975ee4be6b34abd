"""The docs stay true to the code: every launch file and every launch argument is documented."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

WS = Path(__file__).resolve().parents[1]
LAUNCH_FILES = sorted(WS.glob("src/*/launch/*.launch"))
DOC = (WS / "docs" / "launch_files.md").read_text()
SENSORS_DOC = (WS / "docs" / "sensors.md")


def test_there_are_launch_files():
    assert len(LAUNCH_FILES) > 10


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_launch_file_and_its_arguments_are_documented(path: Path):
    assert f"`{path.name}`" in DOC or f"`{path.stem}" in DOC, f"docs/launch_files.md does not name {path.name}"
    doc = DOC
    if path.name == "r1_sensors.launch":   # its many driver switches are documented with the sensors
        doc = SENSORS_DOC.read_text()
    for arg in ET.parse(path).getroot().iter("arg"):
        if arg.get("default") is None and arg.get("value") is not None:
            continue                       # a fixed value inside the file, not an argument
        name = arg.get("name")
        assert re.search(rf"`{re.escape(name)}`", doc), f"{path.name}: argument {name} is not documented"
