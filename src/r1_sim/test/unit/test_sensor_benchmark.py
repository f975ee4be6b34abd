"""The sensors benchmark's report without rendering: the core budget and the Markdown page."""
from __future__ import annotations

import pytest

from r1_sim.benchmarks.sensors import core_share, markdown, side_by_side
from r1_sim.sensor_rig import parse_sensor_config

ROWS = [
    {"sensor": "head", "size": "default", "resolution": "160x90", "rays": 14400, "rate_hz": 2.0,
     "render_cpu_ms": 7.0, "render_wall_ms": 7.5, "encode_cpu_ms": 1.0, "encode_wall_ms": 1.1, "jpeg_bytes": 3000},
    {"sensor": "chassis_rear", "size": "default", "resolution": "128x72", "rays": 9216, "rate_hz": 1.0,
     "render_cpu_ms": 4.0, "render_wall_ms": 4.2, "encode_cpu_ms": 1.0, "encode_wall_ms": 1.0, "jpeg_bytes": 2000},
    {"sensor": "lidar", "size": "default", "resolution": "1500 rays", "rays": 1500, "rate_hz": 10.0, "returns": 1400,
     "render_cpu_ms": 3.0, "render_wall_ms": 3.1, "encode_cpu_ms": 0.5, "encode_wall_ms": 0.5},
    {"sensor": "head", "size": "vendor", "resolution": "640x360", "rays": 230400, "rate_hz": 15.0,
     "render_cpu_ms": 100.0, "render_wall_ms": 110.0, "encode_cpu_ms": 9.0, "encode_wall_ms": 9.0, "jpeg_bytes": 9e4},
]
# the same head camera measured with the ray caster, beside the rows above (MuJoCo's: no "renderer" key = mujoco)
RAYCAST = [{**ROWS[0], "renderer": "raycast", "render_cpu_ms": 5.0, "encode_cpu_ms": 1.0}]


def test_core_share_is_rate_times_cpu_time_of_the_enabled_sensors():
    config = parse_sensor_config({"cameras": {"chassis_rear": {"enabled": False}}})
    assert core_share(ROWS, config, "default", only_enabled=False) == pytest.approx(2 * 0.008 + 0.005 + 10 * 0.0035)
    assert core_share(ROWS, config, "default", only_enabled=True) == pytest.approx(2 * 0.008 + 10 * 0.0035)
    assert core_share(ROWS, config, "vendor", only_enabled=False) == pytest.approx(15 * 0.109)
    assert core_share(ROWS + RAYCAST, config, "default", True, "raycast") == pytest.approx(2 * 0.006)
    assert core_share(ROWS + RAYCAST, config, "default", True) == pytest.approx(2 * 0.008 + 10 * 0.0035)


def test_side_by_side_pairs_each_sensor_and_size_across_renderers():
    table = side_by_side(ROWS + RAYCAST)
    head = [e for e in table if (e["sensor"], e["size"]) == ("head", "default")]
    assert head == [{"sensor": "head", "size": "default", "resolution": "160x90", "mujoco": 8.0, "raycast": 6.0}]
    assert len(table) == len(ROWS)


def test_markdown_has_a_row_per_measurement_and_the_budget():
    result = {"date": "2025-01-01 00:00:00", "elapsed_s": 12.3,
              "machine": {"cpus": 2, "platform": "Linux", "python": "3.11", "stalled_fraction": 0.05,
                          "worst_stall_ms": 80},
              "blas_threads": "1", "gl": "osmesa", "mujoco": "3.2.3", "repeats": {"default": 9, "vendor": 2},
              "rows": ROWS + RAYCAST,
              "core_share": {
                  "mujoco": {"default_sizes_default_rates_enabled": 0.051, "default_sizes_default_rates_all": 0.056,
                             "vendor_sizes_vendor_rates_all": 1.635},
                  "raycast": {"default_sizes_default_rates_enabled": 0.012, "default_sizes_default_rates_all": 0.013,
                              "vendor_sizes_vendor_rates_all": 9.5}}}
    text = markdown(result)
    assert text.startswith("# Simulated sensors: render cost (2025-01-01 00:00:00, 12.3 s)")
    assert "| mujoco | head | default | 160x90 | 2 | 7.0 |  |  | 7.5 | 1.0 | 1.1 | 3000 |" in text
    assert "| mujoco | lidar | default | 1500 rays | 10 | 3.0 |  |  | 3.1 | 0.5 | 0.5 |  |" in text
    assert "| raycast | head | default | 160x90 | 2 | 5.0 |" in text
    assert "| head | default | 160x90 | 8.0 | 6.0 |" in text                      # the side-by-side table
    assert "**0.051**" in text and "1.635" in text and "**0.012**" in text and "OPENBLAS_NUM_THREADS=1" in text
    # MuJoCo alone: no side-by-side table, the kept comparison cited
    alone = {**result, "rows": ROWS, "core_share": {"mujoco": result["core_share"]["mujoco"]}}
    text = markdown(alone, "sensors_sim_side_by_side.json")
    assert "Side by side" not in text and "`sensors_sim_side_by_side.json`" in text and "raycast" not in text
