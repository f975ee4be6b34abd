"""mobiman.nodes.controller_host: the module list names known node kinds, each once, or the host refuses to start."""
import pytest

from mobiman.nodes.controller_host import KINDS, parse_modules


def test_kinds_and_names_are_resolved_in_order():
    assert parse_modules(["joint_tracker:r1_jointTracker_demo_node", "arm_ik:/r1_left_arm_relaxed_ik"]) == [
        ("joint_tracker", "/r1_jointTracker_demo_node"), ("arm_ik", "/r1_left_arm_relaxed_ik")]


@pytest.mark.parametrize("modules, why", [
    ([], "non-empty list"),
    ("joint_tracker:a", "non-empty list"),
    (["joint_tracker"], "is not 'kind:name'"),
    (["joint_tracker:"], "is not 'kind:name'"),
    (["planner:/x"], "unknown kind 'planner'"),
    (["arm_ik:/a", "eepose:a"], "/a listed twice"),
])
def test_a_bad_list_stops_the_host_with_the_reason(modules, why):
    with pytest.raises(SystemExit, match=why):
        parse_modules(modules)


def test_every_kind_names_a_node_class_that_takes_hosted_params():
    import importlib
    import inspect
    for kind, (module, cls) in KINDS.items():
        init = getattr(importlib.import_module(module), cls).__init__
        assert list(inspect.signature(init).parameters)[1:] == ["params", "name"], kind
