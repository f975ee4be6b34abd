"""The simulated sensors' settings: what the launch files load is accepted, each camera keeps the defaults of
its kind, the vendor's facts are overridden only where set, bad values are refused naming the key, and
docs/sensors.md shows the declaration."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from r1_common.ros_testing import launch_namespace
from r1_common.settings import ConfigError
from r1_sim.sensor_rig import VENDOR_CAMERAS, VENDOR_LIDAR, parse_sensor_config, sensor_config
from r1_sim.sensor_settings import (
    CameraSettings,
    CamerasSettings,
    DepthCameraSettings,
    HeadCameraSettings,
    LidarSettings,
    SensorsSettings,
)

SRC = Path(__file__).resolve().parents[3]
PKG = SRC / "r1_sim"
LAUNCH = PKG / "launch" / "r1_sim_sensors.launch"
DOC = SRC.parent / "docs" / "sensors.md"
CHASSIS = [n for n in VENDOR_CAMERAS if n.startswith("chassis_")]


@pytest.mark.parametrize("path, args", [(LAUNCH, ()), (LAUNCH, ("render_without_subscribers:=true",)),
                                        (PKG / "test" / "sensors_input.test", ())],
                         ids=["launch", "launch-render-all", "sensors_input.test"])
def test_what_the_launch_files_load_is_accepted(path, args):
    ns = launch_namespace(path, "/r1_sim_sensors", *args)
    s = SensorsSettings.from_params(ns, where="r1_sim_sensors")
    assert s.render_without_subscribers == ("render_without_subscribers:=true" in args)
    if path == LAUNCH:
        assert s.scene == "room" and s.urdf_file.endswith("r1_v2_1_0.urdf")
    else:                                  # the rostest's own overrides, over the defaults of each kind
        assert s.cameras.head.rate_hz == 5.0 and s.cameras.head.width == 160 and s.lidar.enabled
        assert not any(getattr(s.cameras, n).enabled for n in [*CHASSIS, "wrist_left", "wrist_right"])


def test_sensors_yaml_holds_overrides_only_and_the_defaults_are_the_stacks():
    assert yaml.safe_load((PKG / "config" / "sensors.yaml").read_text()) == {}
    cfg = parse_sensor_config({})
    head, wrist, rear = cfg.cameras["head"], cfg.cameras["wrist_left"], cfg.cameras["chassis_rear"]
    assert (head.width, head.height, head.hfov_deg, head.rate_hz, head.min_depth_m, head.max_depth_m) == \
        (160, 90, 110.0, 2.0, 0.3, 15.0)
    assert (wrist.width, wrist.height, wrist.hfov_deg, wrist.rate_hz, wrist.min_depth_m, wrist.max_depth_m) == \
        (128, 96, 87.0, 2.0, 0.07, 10.0)
    assert (rear.width, rear.height, rear.hfov_deg, rear.rate_hz, rear.depth_topic) == (128, 72, 118.0, 1.0, None)
    assert all(c.enabled and c.jpeg_quality == 80 for c in cfg.cameras.values())
    li = cfg.lidar
    assert (li.rate_hz, li.points_per_scan, li.elevation_deg, li.min_range_m, li.max_range_m, li.range_noise_m) == \
        (10.0, 1500, (-7.0, 52.0), 0.1, 40.0, 0.0)
    assert (cfg.stale_after_s, cfg.diagnostics_period_s) == (1.0, 1.0)


def test_the_vendors_facts_unless_overridden():
    cfg = parse_sensor_config({})
    for name, vendor in VENDOR_CAMERAS.items():
        c = cfg.cameras[name]
        assert (c.frame, c.rgb_topic, c.depth_topic, c.depth_encoding, c.label, c.vendor_size) == \
            (vendor.frame, vendor.rgb_topic, vendor.depth_topic, vendor.depth_encoding, vendor.label,
             vendor.vendor_size)
    assert (cfg.lidar.frame, cfg.lidar.topic, cfg.lidar.vendor_points) == \
        (VENDOR_LIDAR.frame, VENDOR_LIDAR.topic, VENDOR_LIDAR.vendor_points)
    cfg = parse_sensor_config({"jpeg_quality": 60, "cameras": {
        "head": {"frame": "head_link", "depth_topic": "/d", "jpeg_quality": 90},
        "chassis_rear": {"rgb_topic": "/rear"}}, "lidar": {"topic": "/cloud", "frame": "base_link"}})
    head, rear = cfg.cameras["head"], cfg.cameras["chassis_rear"]
    assert (head.frame, head.depth_topic, head.rgb_topic, head.jpeg_quality) == \
        ("head_link", "/d", VENDOR_CAMERAS["head"].rgb_topic, 90)
    assert (rear.rgb_topic, rear.jpeg_quality, cfg.cameras["wrist_left"].jpeg_quality) == ("/rear", 60, 60)
    assert (cfg.lidar.topic, cfg.lidar.frame) == ("/cloud", "base_link")


def test_a_cameras_section_is_read_over_the_defaults_of_its_kind():
    s = SensorsSettings.from_params({"cameras": {"head": {"rate_hz": 5.0}, "wrist_right": {"width": 64},
                                                 "chassis_left": {"enabled": False}}})
    assert s.cameras.head == HeadCameraSettings(rate_hz=5.0)
    assert s.cameras.wrist_right == DepthCameraSettings(width=64) and s.cameras.wrist_left == DepthCameraSettings()
    assert s.cameras.chassis_left == CameraSettings(enabled=False)
    assert SensorsSettings.from_params(s.to_params()) == s


@pytest.mark.parametrize("params, key", [
    ({"cameras": {"tail": {}}}, "r1_sim_sensors/cameras/tail"),
    ({"cameras": {"head": {"width": -1}}}, "r1_sim_sensors/cameras/head/width"),
    ({"cameras": {"head": {"rate_hz": "x"}}}, "r1_sim_sensors/cameras/head/rate_hz"),
    ({"cameras": {"head": {"jpeg_quality": 101}}}, "r1_sim_sensors/cameras/head/jpeg_quality"),
    ({"cameras": {"head": {"min_depth_m": 20.0}}}, "r1_sim_sensors/cameras/head"),
    ({"cameras": {"chassis_rear": {"depth_topic": "/x"}}}, "r1_sim_sensors/cameras/chassis_rear/depth_topic"),
    ({"lidar": {"elevation_deg": 5}}, "r1_sim_sensors/lidar/elevation_deg"),
    ({"lidar": {"elevation_deg": [10, -10]}}, "r1_sim_sensors/lidar"),
    ({"lidar": {"points_per_scan": 1500.5}}, "r1_sim_sensors/lidar/points_per_scan"),
    ({"render_without_subscribers": "yes"}, "r1_sim_sensors/render_without_subscribers"),
    ({"stale_after_s": 0.0}, "r1_sim_sensors/stale_after_s"),
    ({"scene_file": "room.yaml"}, "r1_sim_sensors/scene_file"),      # the ray caster's, gone
    ({"scene": 3}, "r1_sim_sensors/scene"),
])
def test_bad_values_are_refused_naming_the_key(params, key):
    with pytest.raises(ConfigError) as e:
        parse_sensor_config(params)
    assert e.value.key == key


def test_the_scene_is_a_setting_and_the_launch_files_argument():
    assert SensorsSettings().scene == "room" and SensorsSettings().objects_topic == "/sim/objects"
    ns = launch_namespace(LAUNCH, "/r1_sim_sensors", "scene:=empty")
    assert SensorsSettings.from_params(ns, where="r1_sim_sensors").scene == "empty"


def test_sensor_config_of_the_settings_is_parse_sensor_config_of_the_namespace():
    params = {"cameras": {"head": {"enabled": False}}, "lidar": {"rate_hz": 5.0}, "stale_after_s": 2.0}
    assert sensor_config(SensorsSettings.from_params(params)) == parse_sensor_config(params)


@pytest.mark.parametrize("cls", [SensorsSettings, CamerasSettings, HeadCameraSettings, DepthCameraSettings,
                                 CameraSettings, LidarSettings], ids=lambda c: c.__name__)
def test_docs_show_the_declared_parameters(cls):
    assert cls.markdown_table() in DOC.read_text(), f"docs/sensors.md: regenerate the table of {cls.__name__}"
