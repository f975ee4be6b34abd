"""Every Settings declaration of the workspace can be read on the robot's Python 3.8.

r1_common.settings evaluates a Settings class's annotations at run time (typing.get_type_hints), where
Python 3.8 knows only typing's generics: `List[float]`, not `list[float]`; `Optional[str]`, not
`str | None`. mypy's 3.8 check passes both in annotations (under `from __future__ import annotations`
they are strings), so this test reads the declarations themselves."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import List

WS = Path(__file__).resolve().parents[1]
BUILTIN_GENERICS = {"list", "dict", "tuple", "set", "frozenset", "type"}


def settings_classes(tree: ast.Module) -> List[ast.ClassDef]:
    """Classes deriving from Settings directly or from another Settings class of the same module."""
    found: List[ast.ClassDef] = []
    names = {"Settings"}
    changed = True
    while changed:
        changed = False
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node not in found and any(
                    (isinstance(b, ast.Name) and b.id in names) or (isinstance(b, ast.Attribute) and b.attr in names)
                    for b in node.bases):
                found.append(node)
                names.add(node.name)
                changed = True
    return found


def newer_than_38(annotation: ast.expr) -> List[str]:
    bad = []
    for node in ast.walk(annotation):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in BUILTIN_GENERICS:
            bad.append(f"{node.value.id}[...]")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            bad.append("X | Y")
    return bad


def test_settings_annotations_use_typing_generics():
    problems = []
    for f in sorted(WS.glob("src/*/src/*/**/*.py")):
        tree = ast.parse(f.read_text(), str(f))
        for cls in settings_classes(tree):
            if cls.name == "Settings":
                continue
            for stmt in cls.body:
                if isinstance(stmt, ast.AnnAssign):
                    for what in newer_than_38(stmt.annotation):
                        problems.append(f"{f.relative_to(WS)}:{stmt.lineno} {cls.name}: {what}")
    assert problems == []



def test_the_check_finds_a_newer_annotation():
    tree = ast.parse("class A(Settings):\n    x: list[float] = 1\n    y: int | None = 2\nclass B(A):\n"
                     "    z: List[float] = 3\n")
    classes = settings_classes(tree)
    assert [c.name for c in classes] == ["A", "B"]
    assert [w for s in classes[0].body for w in newer_than_38(s.annotation)] == ["list[...]", "X | Y"]
    assert [w for s in classes[1].body for w in newer_than_38(s.annotation)] == []
