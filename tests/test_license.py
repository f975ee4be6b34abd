"""The licence every package.xml declares is the one in LICENSE at the root."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

WS = Path(__file__).resolve().parents[1]


def test_every_package_declares_apache_2_and_the_root_holds_its_text():
    packages = sorted(WS.glob("src/*/package.xml"))
    assert len(packages) >= 6
    declared = {p.parent.name: [e.text.strip() for e in ET.parse(p).getroot().iter("license")] for p in packages}
    assert {name: lic for name, lic in declared.items() if lic != ["Apache-2.0"]} == {}
    text = (WS / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
