"""mobiman.nodes.controller_host: the module list names known node kinds, each once, or the host refuses to
start; a hosted node with a bad configuration is reported and left out while the others run."""
import importlib
import inspect

import pytest

from mobiman.nodes.controller_host import KINDS, node_class, parse_modules, start_nodes
from r1_common.settings import ConfigError


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
    with pytest.raises(ConfigError, match=why) as e:
        parse_modules(modules)
    assert e.value.key == "modules"


def test_every_kind_names_a_node_class_that_takes_hosted_params():
    for kind, (module, cls) in KINDS.items():
        init = getattr(importlib.import_module(module), cls).__init__
        assert list(inspect.signature(init).parameters)[1:] == ["params", "name"], kind


class Fake:
    """A hosted node that records its construction."""

    started = []

    def __init__(self, params=None, name=None):
        Fake.started.append((name, dict(params)))


class Log:
    def __init__(self):
        self.fatal, self.info = [], []


def host(modules, params):
    """start_nodes with real node classes for the kinds of KINDS and `Fake` for kind "fake"."""
    Fake.started = []
    log = Log()
    hosted = start_nodes(modules, lambda name: params.get(name, {}),
                         make=lambda kind: Fake if kind == "fake" else node_class(kind),
                         log_fatal=log.fatal.append, log_info=log.info.append)
    return hosted, log


@pytest.mark.parametrize("kind, params, key", [
    ("chassis", {"max_speed": [1.5, 1.5]}, "/bad/max_speed"),
    ("chassis", {"max_wheel_speeed": 2.1}, "/bad/max_wheel_speeed"),
    ("rc_manager", {"mapping": {"linear_x": {"axis": "left_z"}}}, "/bad/mapping/linear_x/axis"),
    ("eepose", {"joint_states_rate_hz": "fast"}, "/bad/joint_states_rate_hz"),
    ("eepose", {"joint_groups_file": "/no/such/groups.yaml"}, "/bad/joint_groups_file"),
    ("rc_manager", {"joint_groups_file": "/no/such/groups.yaml"}, "/bad/joint_groups_file"),
])
def test_a_node_with_a_bad_configuration_is_reported_and_the_others_start(kind, params, key):
    """One real node class with a bad parameter between two others: it is logged (fatal, its name and the
    key), the two others start, in order, with their own parameters; the host carries on."""
    hosted, log = host([("fake", "/first"), (kind, "/bad"), ("fake", "/last")],
                       {"/first": {"a": 1}, "/bad": params, "/last": {"b": 2}})
    assert [h.name for h in hosted] == ["/first", "/last"]
    assert Fake.started == [("/first", {"a": 1}), ("/last", {"b": 2})]
    assert len(log.fatal) == 1
    assert log.fatal[0].startswith(f"controller_host: /bad ({kind}) not started: "
                                   f"bad configuration: {key}")
    assert log.info == ["controller_host: /first (fake) started", "controller_host: /last (fake) started"]


def test_parameters_that_are_not_a_namespace_leave_that_node_out():
    hosted, log = host([("fake", "/a"), ("fake", "/b")], {"/a": 3.0, "/b": {}})
    assert [h.name for h in hosted] == ["/b"]
    assert "/a (fake) not started" in log.fatal[0] and "namespace" in log.fatal[0]


def test_no_node_started_is_an_empty_list():
    hosted, log = host([("chassis", "/c"), ("rc_manager", "/r")],
                       {"/c": {"steer_limit": -1.0}, "/r": {"dead_band": 0.7}})
    assert hosted == [] and len(log.fatal) == 2 and log.info == []
    assert "/c/steer_limit" in log.fatal[0] and "dead_band" in log.fatal[1]


def test_any_other_error_is_a_bug_and_ends_the_host():
    def broken(kind):
        def make(params=None, name=None):
            raise RuntimeError("a bug")
        return make
    with pytest.raises(RuntimeError, match="a bug"):
        start_nodes([("fake", "/a")], lambda name: {}, make=broken, log_fatal=print, log_info=print)
