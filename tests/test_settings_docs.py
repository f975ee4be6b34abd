"""The settings tables in docs/ are the declarations (r1_common.settings): every block

    <!-- settings: package.module.Class -->
    | parameter | type | default | range | meaning |
    ...
    <!-- /settings -->

in docs/*.md equals `Class.markdown_table()`. `python tests/test_settings_docs.py --write`
rewrites the blocks from the declarations.
"""
from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

WS = Path(__file__).resolve().parents[1]
DOCS = sorted((WS / "docs").glob("*.md"))
BLOCK = re.compile(r"(<!-- settings: ([\w.]+) -->\n)(.*?)(<!-- /settings -->)", re.S)


def declared(path: str):
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def blocks() -> list[tuple[str, str, str]]:
    """(doc, class path, the table in the doc) of every block."""
    return [(doc.name, m.group(2), m.group(3).strip()) for doc in DOCS for m in BLOCK.finditer(doc.read_text())]


def test_the_docs_have_settings_tables():
    assert len(blocks()) >= 5


@pytest.mark.parametrize("doc, path, table", blocks(), ids=lambda x: x if isinstance(x, str) and "|" not in x else "")
def test_a_settings_table_is_its_declaration(doc: str, path: str, table: str):
    assert table == declared(path).markdown_table().strip(), \
        f"docs/{doc}: the table of {path} differs from its declaration; run {Path(__file__).name} --write"


def write() -> None:
    for doc in DOCS:
        text = doc.read_text()
        new = BLOCK.sub(lambda m: f"{m.group(1)}{declared(m.group(2)).markdown_table().strip()}\n{m.group(4)}", text)
        if new != text:
            doc.write_text(new)
            print(f"rewrote the settings tables of {doc.relative_to(WS)}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {sys.argv[0]} --write   (rewrites the settings tables in docs/ from the declarations)")
    write()
