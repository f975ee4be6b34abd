"""The workspace's packages depend on each other one way only, and each declares what it uses.

Read from the sources: every ``package.xml`` (its ``depend``, ``build_depend``, ``exec_depend`` and
``test_depend``), every Python import of a workspace package's module (``setup.py``'s packages, and the
messages and services a package generates), every ``$(find pkg)`` and ``pkg="..."`` of a launch or test
file. Code under ``test/`` may use test dependencies; everything else only the others.
"""
from __future__ import annotations

import ast
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

WS = Path(__file__).resolve().parents[1]
SRC = WS / "src"
RUNTIME_KINDS = ("depend", "build_depend", "build_export_depend", "exec_depend")


def packages() -> Dict[str, Path]:
    """Package name → its directory, for every src/*/package.xml."""
    return {ET.parse(p).getroot().findtext("name").strip(): p.parent for p in sorted(SRC.glob("*/package.xml"))}


def declared(pkg_dir: Path) -> Tuple[Set[str], Set[str]]:
    """(runtime dependencies, test dependencies) of a package."""
    root = ET.parse(pkg_dir / "package.xml").getroot()
    runtime = {e.text.strip() for kind in RUNTIME_KINDS for e in root.iter(kind)}
    return runtime, {e.text.strip() for e in root.iter("test_depend")}


def module_owners(pkgs: Dict[str, Path]) -> Dict[str, str]:
    """Top-level Python module → the workspace package that provides it."""
    owners = {}
    for name, d in pkgs.items():
        for init in sorted((d / "src").glob("*/__init__.py")) if (d / "setup.py").exists() else []:
            owners[init.parent.name] = name      # setup.py's package_dir is src/: its top-level packages
        if (d / "msg").is_dir() or (d / "srv").is_dir():
            owners.setdefault(name, name)        # generated messages: import <package>.msg / .srv
    return owners


def python_files(d: Path) -> List[Path]:
    files = [p for p in d.rglob("*.py")]
    scripts = d / "scripts"
    if scripts.is_dir():
        files += [p for p in scripts.iterdir() if p.is_file() and p.suffix == ""
                  and p.read_text(errors="replace").startswith("#!") and "python" in p.read_text(errors="replace")[:80]]
    return files


def imported_modules(path: Path) -> Set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def uses(pkgs: Dict[str, Path]) -> List[Tuple[str, str, str, bool]]:
    """(user package, used package, where, in test code) for every use of a workspace package."""
    owners = module_owners(pkgs)
    found = []
    for name, d in pkgs.items():
        for f in python_files(d):
            in_test = "test" in f.relative_to(d).parts[:1]
            for mod in imported_modules(f):
                if mod in owners and owners[mod] != name:
                    found.append((name, owners[mod], str(f.relative_to(WS)), in_test))
        for f in list(d.rglob("*.launch")) + list(d.rglob("*.test")):
            in_test = "test" in f.relative_to(d).parts[:1]
            text = f.read_text()
            for used in set(re.findall(r"\$\(find ([A-Za-z0-9_]+)\)", text)) | set(re.findall(r'pkg="([^"]+)"', text)):
                if used in pkgs and used != name:
                    found.append((name, used, str(f.relative_to(WS)), in_test))
    return found


def test_the_workspace_has_its_packages():
    assert {"hdas_msg", "r1_description", "r1_common", "r1_can", "HDAS", "r1_sim", "mobiman",
            "startup_config"} <= set(packages())


def test_every_use_of_a_workspace_package_is_declared():
    pkgs = packages()
    deps = {n: declared(d) for n, d in pkgs.items()}
    undeclared = sorted({(user, used, where) for user, used, where, in_test in uses(pkgs)
                         if used not in deps[user][0] and not (in_test and used in deps[user][1])})
    assert undeclared == [], "\n".join(f"{u} uses {p} without declaring it ({w})" for u, p, w in undeclared)


def cycle(edges: Dict[str, Set[str]]) -> List[str]:
    """One cycle of the graph as a path, or [] (depth-first search)."""
    state: Dict[str, int] = {}
    stack: List[str] = []

    def visit(n: str) -> List[str]:
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        state[n] = 2
        stack.pop()
        return []

    for n in sorted(edges):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return []


@pytest.mark.parametrize("with_tests", [False, True], ids=["runtime", "with test dependencies"])
def test_the_package_graph_has_no_cycle(with_tests):
    pkgs = packages()
    edges = {}
    for n, d in pkgs.items():
        runtime, tests = declared(d)
        edges[n] = {p for p in runtime | (tests if with_tests else set()) if p in pkgs and p != n}
    assert cycle(edges) == []


def test_the_cycle_search_finds_one():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_the_shared_packages_stay_below_the_driver_and_the_simulator():
    """r1_common and r1_can use no package above them; the simulator does not use the driver."""
    pkgs = packages()
    above = {"HDAS", "r1_sim", "mobiman", "startup_config"}
    for low in ("r1_common", "r1_can"):
        runtime, tests = declared(pkgs[low])
        assert (runtime | tests) & above == set(), low
    runtime, tests = declared(pkgs["r1_sim"])
    assert "HDAS" not in runtime | tests


MOBIMAN_CORES = ("model", "arm", "tracker", "torso", "chassis", "estimation", "remote")


def test_module_owners_are_read_from_the_source_layout():
    owners = module_owners(packages())
    assert owners["mobiman"] == "mobiman" and owners["hdas"] == "HDAS" and owners["r1_can"] == "r1_can"


@pytest.mark.parametrize("sub", MOBIMAN_CORES)
def test_mobiman_cores_are_ros_free(sub):
    """The capability sub-packages of mobiman take numbers and return numbers: no rospy, no ROS
    messages, no tf2 (the nodes in mobiman.nodes wrap them)."""
    ros = {"rospy", "rosgraph", "tf2_ros", "genpy", "std_msgs", "sensor_msgs", "geometry_msgs", "nav_msgs",
           "diagnostic_msgs", "tf2_msgs", "hdas_msg"}
    files = sorted((SRC / "mobiman" / "src" / "mobiman" / sub).glob("*.py"))
    assert files
    used = {f.name: imported_modules(f) & ros for f in files}
    assert {f: m for f, m in used.items() if m} == {}
