"""Render cost of the simulated sensors (`rosrun r1_sim benchmark_sensors`), ROS-free.

For every camera at the default size (config/sensors.yaml) and at the vendor driver's size, and for
the lidar at the default and the MID360's 20,000 points: the time to render (ray cast + shade) and
to encode (JPEG, depth image, cloud bytes), as process CPU time (every thread, BLAS workers
included; a busy shared machine inflates it far less than wall time), and wall time. The budget
line multiplies each default cost by its rate: the share of
one core the node needs when simulated time runs at real time and every topic has a subscriber.
"""
from __future__ import annotations

import os
import platform
import time
from dataclasses import replace
from typing import Any, Mapping

import numpy as np

from r1_common.benchtools import StallProbe
from r1_sim.encoding import cloud_data, depth_16uc1, depth_32fc1, jpeg
from r1_sim.scene import Scene
from r1_sim.sensor_rig import SensorConfig, SensorRig

VENDOR_CAMERA_FPS = 15.0   # r1_sdk_facts.md §6: ZED and RealSense at 15 fps (chassis cameras assumed alike)
VENDOR_LIDAR_HZ = 10.0


def _measure(fn, repeats: int) -> tuple[list[float], list[float], Any]:
    cpu, wall, out = [], [], None
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        out = fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return cpu, wall, out


def _ms(values: list[float]) -> float:
    return round(float(np.median(values)) * 1e3, 2)


def run(urdf_xml: str, scene: Scene, config: SensorConfig, joints: Mapping[str, float],
        repeats: int = 5, vendor_repeats: int = 2) -> dict:
    """Measure every sensor at both sizes; returns the JSON-ready result."""
    probe = StallProbe()
    probe.start()
    t_start = time.perf_counter()
    cams = {n: replace(s, enabled=True) for n, s in config.cameras.items()}
    rows = []
    for size in ("default", "vendor"):
        specs = cams if size == "default" else {
            n: replace(s, width=s.vendor_size[0], height=s.vendor_size[1]) for n, s in cams.items()}
        lidar = replace(config.lidar, enabled=True,
                        points_per_scan=(config.lidar.points_per_scan if size == "default"
                                         else config.lidar.vendor_points))
        rig = SensorRig(urdf_xml, scene, replace(config, cameras=specs, lidar=lidar))
        rig.set_state(joints, (0.0, 0.0, 0.0))
        rig.world()
        n_rep = repeats if size == "default" else vendor_repeats
        for name, spec in specs.items():
            rig.render_camera(name)                       # warm-up (first-call allocations)
            r_cpu, r_wall, (rgb, depth) = _measure(lambda: rig.render_camera(name), n_rep)

            def encode():
                data = jpeg(rgb, spec.jpeg_quality)
                if spec.depth_encoding:
                    (depth_16uc1 if spec.depth_encoding == "16UC1" else depth_32fc1)(depth)
                return len(data)
            e_cpu, e_wall, jpeg_bytes = _measure(encode, n_rep)
            rows.append({"sensor": name, "size": size, "resolution": f"{spec.width}x{spec.height}",
                         "rays": spec.width * spec.height,
                         "rate_hz": spec.rate_hz if size == "default" else VENDOR_CAMERA_FPS,
                         "render_cpu_ms": _ms(r_cpu), "render_wall_ms": _ms(r_wall),
                         "encode_cpu_ms": _ms(e_cpu), "encode_wall_ms": _ms(e_wall), "jpeg_bytes": jpeg_bytes})
        rig.scan_lidar()
        r_cpu, r_wall, points = _measure(rig.scan_lidar, n_rep * 4)
        e_cpu, e_wall, _ = _measure(lambda: cloud_data(points), n_rep * 4)
        rows.append({"sensor": "lidar", "size": size, "resolution": f"{lidar.points_per_scan} rays",
                     "rays": lidar.points_per_scan, "rate_hz": lidar.rate_hz if size == "default" else VENDOR_LIDAR_HZ,
                     "returns": len(points),
                     "render_cpu_ms": _ms(r_cpu), "render_wall_ms": _ms(r_wall),
                     "encode_cpu_ms": _ms(e_cpu), "encode_wall_ms": _ms(e_wall)})
    probe.running = False
    elapsed = time.perf_counter() - t_start
    def share(size: str, only_enabled: bool) -> float:
        total = 0.0
        for r in rows:
            if r["size"] != size:
                continue
            on = config.lidar.enabled if r["sensor"] == "lidar" else config.cameras[r["sensor"]].enabled
            if on or not only_enabled:
                total += r["rate_hz"] * (r["render_cpu_ms"] + r["encode_cpu_ms"]) / 1e3
        return round(total, 3)
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                        "stalled_fraction": round(probe.stalled / elapsed, 3),
                        "worst_stall_ms": round(probe.worst * 1e3)},
            "elapsed_s": round(elapsed, 1), "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
            "repeats": {"default": repeats, "vendor": vendor_repeats},
            "rows": rows,
            "core_share": {"default_sizes_default_rates_enabled": share("default", True),
                           "default_sizes_default_rates_all": share("default", False),
                           "vendor_sizes_vendor_rates_all": share("vendor", False)}}


def markdown(result: dict) -> str:
    m = result["machine"]
    lines = [f"# Simulated sensors: render cost ({result['date']}, {result['elapsed_s']} s)", "",
             f"Machine: {m['cpus']} CPUs, {m['platform']}, Python {m['python']}. A sleeping probe found it stalled "
             f"{m['stalled_fraction']:.0%} of the run (worst {m['worst_stall_ms']} ms); CPU times are the process's "
             "(`time.process_time`, every thread), which stalls do not inflate; wall times do include them. "
             f"BLAS threads: OPENBLAS_NUM_THREADS={result['blas_threads']} (as the node sets it).", "",
             "Start pose of `sim.yaml`, robot at the origin of `config/scene.yaml`; median of "
             f"{result['repeats']['default']} (default sizes) / {result['repeats']['vendor']} (vendor sizes) renders "
             "(lidar: 4x as many scans). `render` = ray cast against the scene and the robot's collision primitives "
             "+ shading; `encode` = JPEG (+ depth image) or the cloud's bytes.", "",
             "| sensor | size | resolution | rate Hz | render CPU ms | render wall ms | encode CPU ms | encode wall ms "
             "| JPEG bytes |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        lines.append(f"| {r['sensor']} | {r['size']} | {r['resolution']} | {r['rate_hz']:g} | {r['render_cpu_ms']} | "
                     f"{r['render_wall_ms']} | {r['encode_cpu_ms']} | {r['encode_wall_ms']} | "
                     f"{r.get('jpeg_bytes', '')} |")
    c = result["core_share"]
    lines += ["", "Share of one core (CPU ms per frame x rate, simulated time at real time, every topic subscribed):",
              "",
              f"- default sizes and rates, the sensors enabled in sensors.yaml: "
              f"**{c['default_sizes_default_rates_enabled']}**",
              f"- default sizes and rates, every sensor: {c['default_sizes_default_rates_all']}",
              f"- vendor sizes at the vendor's rates (15 fps cameras, 10 Hz lidar): "
              f"{c['vendor_sizes_vendor_rates_all']} "
              "(a CPU ray caster is not a substitute for a GPU renderer at those sizes)", ""]
    return "\n".join(lines)
