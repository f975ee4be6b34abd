"""hdas.settings: HDAS's parameters declared once, apart from the CAN layout in the same namespace,
and documented in docs/hdas.md from the declaration."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from hdas.settings import TOPIC_PARAMS, HdasSettings
from r1_can.config import LAYOUT_KEYS, layout_of, parse_config
from r1_common.settings import ConfigError

WS = Path(__file__).resolve().parents[4]
LAYOUT = WS / "src/r1_can/config"


def namespace(buses: str = "r1_buses_robot.yaml") -> dict:
    """HDAS's namespace as hdas.launch loads it: the layout, a bus file, and r1_t."""
    params = yaml.safe_load((LAYOUT / "r1.yaml").read_text())
    params.update(yaml.safe_load((LAYOUT / buses).read_text()))
    params["r1_t"] = False
    return params


def test_the_documented_table_is_the_declaration() -> None:
    assert HdasSettings.markdown_table() in (WS / "docs/hdas.md").read_text(), \
        "docs/hdas.md: regenerate the table (python -c 'from hdas.settings import HdasSettings as S; " \
        "print(S.markdown_table())')"


@pytest.mark.parametrize("buses", ["r1_buses_robot.yaml", "r1_buses_sim.yaml", "r1_buses_sim_light.yaml"])
def test_the_launch_files_namespace_splits_into_settings_and_layout(buses: str) -> None:
    params = namespace(buses)
    assert HdasSettings.from_namespace(params) == HdasSettings()      # the stock settings
    assert set(layout_of(params)) == set(params) - {"r1_t"}          # every other key is the layout's
    assert set(parse_config(layout_of(params)).groups) == {"left_arm", "right_arm", "torso", "chassis"}


def test_settings_and_layout_share_no_key() -> None:
    assert not {f.name for f in dataclasses.fields(HdasSettings)} & set(LAYOUT_KEYS)


def test_a_setting_is_read_with_its_type_and_range_and_an_unknown_key_refused() -> None:
    params = dict(namespace(), command_timeout=0.5, left_arm_feedback_topic="/my/topic")
    s = HdasSettings.from_namespace(params)
    assert s.command_timeout == 0.5 and s.topics()["left_arm_feedback_topic"] == "/my/topic"
    with pytest.raises(ConfigError, match="^/HDAS/comand_timeout: unknown parameter") as e:
        HdasSettings.from_namespace(dict(params, comand_timeout=0.3), where="/HDAS")
    assert e.value.key == "/HDAS/comand_timeout"
    with pytest.raises(ConfigError, match="status_rate: 0.0 is below its range"):
        HdasSettings.from_namespace({"status_rate": 0.0})
    with pytest.raises(ConfigError, match="enable_on_start: must be true or false"):
        HdasSettings.from_namespace({"enable_on_start": "yes"})


def test_the_topic_params_are_the_stock_names() -> None:
    topics = HdasSettings().topics()
    assert tuple(topics) == TOPIC_PARAMS and len(topics) == 27
    assert topics["left_arm_feedback_topic"] == "/hdas/feedback_arm_left"
    assert topics["chassis_control_command_topic_name"] == "/motion_control/control_chassis"
    assert topics["function_frame_service_torso_name"] == "/hdas/function_frame_torso"
    assert all(name.startswith(("/hdas/", "/motion_control/", "/controller")) for name in topics.values())
