"""r1_common.settings: one declaration gives the defaults, the checks, the errors and the docs table."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import pytest

from r1_common.settings import ConfigError, Settings, setting


@dataclass(frozen=True)
class Inner(Settings):
    gain: float = setting(1.0, "gain", low=0.0)


@dataclass(frozen=True)
class Example(Settings):
    rate_hz: float = setting(500.0, "Hz; loop rate", low=1.0, high=2000.0)
    count: int = setting(3, "how many", low=1)
    enabled: bool = setting(True, "on or off")
    mode: str = setting("mit", "output", choices=("mit", "pid"))
    limits: Tuple[float, float, float] = setting((2.5, 1.0, 1.0), "m/s²; x, y, yaw", low=0.0)
    gains: List[float] = setting([1.0, 2.0], "per joint", low=0.0)
    timeout: Optional[float] = setting(None, "s; none: never")
    extra: Dict[str, float] = setting({}, "per name")
    inner: Inner = setting(Inner(), "a section")
    anything: Any = setting(None, "taken as is")

    def __post_init__(self) -> None:
        if len(self.gains) > 4:
            raise ValueError("gains: at most 4 entries")


def test_defaults_when_nothing_is_set():
    s = Example.from_params(None)
    assert s == Example() and s.limits == (2.5, 1.0, 1.0) and s.inner.gain == 1.0


def test_values_are_converted_to_the_declared_types():
    s = Example.from_params({"rate_hz": 100, "limits": [1, 2, 3], "gains": [0, 1], "timeout": 2,
                             "extra": {"a": 1}, "inner": {"gain": 3}, "anything": [1, "x"]})
    assert s.rate_hz == 100.0 and isinstance(s.rate_hz, float)
    assert s.limits == (1.0, 2.0, 3.0) and s.gains == [0.0, 1.0] and s.timeout == 2.0
    assert s.extra == {"a": 1.0} and s.inner == Inner(3.0) and s.anything == [1, "x"]


def test_mutable_defaults_are_not_shared():
    a, b = Example(), Example()
    a.gains.append(9.0)
    assert b.gains == [1.0, 2.0]


@pytest.mark.parametrize("params, key", [
    ({"rate_hz": 0.5}, "node/rate_hz"),
    ({"rate_hz": "fast"}, "node/rate_hz"),
    ({"rate_hz": float("nan")}, "node/rate_hz"),
    ({"rate_hz": True}, "node/rate_hz"),
    ({"count": 2.5}, "node/count"),
    ({"enabled": 1}, "node/enabled"),
    ({"mode": "torque"}, "node/mode"),
    ({"limits": [1.0, 2.0]}, "node/limits"),
    ({"limits": [1.0, -2.0, 3.0]}, "node/limits[1]"),
    ({"gains": "1, 2"}, "node/gains"),
    ({"gains": [1.0, None]}, "node/gains[1]"),
    ({"extra": [1.0]}, "node/extra"),
    ({"inner": {"gain": -1.0}}, "node/inner/gain"),
    ({"inner": {"gian": 1.0}}, "node/inner/gian"),
    ({"rate_hzz": 100.0}, "node/rate_hzz"),
    ({"gains": [1.0] * 5}, "node"),
])
def test_bad_values_and_unknown_keys_raise_config_error_naming_the_key(params, key):
    with pytest.raises(ConfigError) as e:
        Example.from_params(params, where="node")
    assert e.value.key == key
    assert str(e.value).startswith(key)


def test_ignored_keys_and_a_non_namespace():
    assert Example.from_params({"someone_elses": 1}, ignore=["someone_elses"]) == Example()
    with pytest.raises(ConfigError):
        Example.from_params([1, 2], where="node")


def test_to_params_round_trips():
    s = Example.from_params({"limits": [1, 2, 3], "inner": {"gain": 2.0}})
    assert Example.from_params(s.to_params()) == s


def test_markdown_table_shows_every_setting_with_type_default_and_range():
    table = Example.markdown_table().splitlines()
    assert table[0] == "| parameter | type | default | range | meaning |"
    assert len(table) == 2 + 10
    assert "| `rate_hz` | float | `500.0` | 1.0 .. 2000.0 | Hz; loop rate |" in table
    assert "| `mode` | str | `mit` | `mit` / `pid` | output |" in table
    assert "| `limits` | 3 × float | `[2.5, 1.0, 1.0]` | 0.0 .. inf | m/s²; x, y, yaw |" in table
    assert "| `timeout` | float or null | `null` |  | s; none: never |" in table
    assert "| `inner` | section | (section) |  | a section |" in table


@dataclass(frozen=True)
class Rig(Settings):
    left: Inner = setting(Inner(2.0), "the left one's gain is 2 by default")
    per_name: Dict[str, Inner] = setting({}, "sections by name")


def test_a_section_is_read_over_its_fields_default():
    assert Rig.from_params({}).left.gain == 2.0
    assert Rig.from_params({"left": {}}).left.gain == 2.0         # not the class default 1.0
    assert Rig.from_params({"left": {"gain": 3.0}}).left.gain == 3.0


def test_to_params_goes_into_maps_of_sections():
    r = Rig.from_params({"per_name": {"a": {"gain": 4.0}}})
    assert r.per_name == {"a": Inner(4.0)}
    assert r.to_params() == {"left": {"gain": 2.0}, "per_name": {"a": {"gain": 4.0}}}
    assert Rig.from_params(r.to_params()) == r
