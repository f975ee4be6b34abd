"""Render cost of the simulated sensors (`rosrun r1_sim benchmark_sensors`) -> docs/benchmarks/sensors_sim.*

No ROS master needed: renders through r1_sim.sensor_rig (the node's own code, MuJoCo) with the node's
settings (config/sensors.yaml over the defaults), a scene (`--scene`, default `room`) and the simulator's
start pose (config/sim.yaml); `main` finds them with rospkg. For every camera at its default size and at
the vendor driver's size, and for the lidar at the default and the MID360's 20,000 points: the time to
render (RGB and depth passes; lidar rays) and to encode (JPEG, depth image, cloud bytes), as process CPU
time (every thread, OSMesa's and BLAS workers included; a busy shared machine inflates it far less than
wall time), and wall time. The former numpy ray caster was measured beside it at the same sizes before
its removal: `sensors_sim_side_by_side.json`, which the page cites. The budget line multiplies each default
cost by its rate: the share of one core the node needs when simulated time runs at real time and every
topic has a subscriber.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

import mujoco
import numpy as np
import yaml

from r1_common.benchtools import StallProbe
from r1_sim.encoding import cloud_data, depth_16uc1, depth_32fc1, jpeg
from r1_sim.sensor_rig import SensorConfig, SensorRig, parse_sensor_config, scene_xml

VENDOR_CAMERA_FPS = 15.0   # r1_sdk_facts.md §6: ZED and RealSense at 15 fps (chassis cameras assumed alike)
VENDOR_LIDAR_HZ = 10.0
SIDE_BY_SIDE = "sensors_sim_side_by_side.json"   # the run that measured the ray caster beside MuJoCo (kept)


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


def run(urdf_xml: str, scene: str, config: SensorConfig, joints: Mapping[str, float],
        repeats: int = 5, vendor_repeats: int = 2) -> dict:
    """Measure every sensor at both sizes (`scene`: the scene's MJCF text); returns the JSON-ready result."""
    probe = StallProbe()
    probe.start()
    t_start = time.perf_counter()
    cams = {n: replace(s, enabled=True) for n, s in config.cameras.items()}
    rows = []
    for renderer in ("mujoco",):    # the ray caster measured beside it: SIDE_BY_SIDE
        for size in ("default", "vendor"):
            specs = cams if size == "default" else {
                n: replace(s, width=s.vendor_size[0], height=s.vendor_size[1]) for n, s in cams.items()}
            lidar = replace(config.lidar, enabled=True,
                            points_per_scan=(config.lidar.points_per_scan if size == "default"
                                             else config.lidar.vendor_points))
            rig = SensorRig(urdf_xml, scene, replace(config, cameras=specs, lidar=lidar))
            try:
                rig.set_state(joints, (0.0, 0.0, 0.0))
                n_rep = repeats if size == "default" else vendor_repeats
                for name, spec in specs.items():
                    rig.render_camera(name)                       # warm-up (first-call allocations)
                    r_cpu, r_wall, (rgb, depth) = _measure(lambda: rig.render_camera(name), n_rep)
                    row = {"renderer": renderer, "sensor": name, "size": size,
                           "resolution": f"{spec.width}x{spec.height}", "rays": spec.width * spec.height,
                           "rate_hz": spec.rate_hz if size == "default" else VENDOR_CAMERA_FPS,
                           "render_cpu_ms": _ms(r_cpu), "render_wall_ms": _ms(r_wall)}
                    if spec.depth_encoding:                        # RGB and depth are two passes
                        rgb_cpu, _, _ = _measure(lambda: rig.render_camera(name, depth=False), n_rep)
                        d_cpu, _, _ = _measure(lambda: rig.render_camera(name, rgb=False), n_rep)
                        row.update(rgb_cpu_ms=_ms(rgb_cpu), depth_cpu_ms=_ms(d_cpu))

                    def encode():
                        data = jpeg(rgb, spec.jpeg_quality)
                        if spec.depth_encoding:
                            (depth_16uc1 if spec.depth_encoding == "16UC1" else depth_32fc1)(depth)
                        return len(data)
                    e_cpu, e_wall, jpeg_bytes = _measure(encode, n_rep)
                    row.update(encode_cpu_ms=_ms(e_cpu), encode_wall_ms=_ms(e_wall), jpeg_bytes=jpeg_bytes)
                    rows.append(row)
                rig.scan_lidar()
                r_cpu, r_wall, points = _measure(rig.scan_lidar, n_rep * 4)
                e_cpu, e_wall, _ = _measure(lambda: cloud_data(points), n_rep * 4)
                rows.append({"renderer": renderer, "sensor": "lidar", "size": size,
                             "resolution": f"{lidar.points_per_scan} rays", "rays": lidar.points_per_scan,
                             "rate_hz": lidar.rate_hz if size == "default" else VENDOR_LIDAR_HZ,
                             "returns": len(points), "render_cpu_ms": _ms(r_cpu), "render_wall_ms": _ms(r_wall),
                             "encode_cpu_ms": _ms(e_cpu), "encode_wall_ms": _ms(e_wall)})
            finally:
                rig.close()
    probe.running = False
    elapsed = time.perf_counter() - t_start
    renderers = sorted({r["renderer"] for r in rows})
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                        "stalled_fraction": round(probe.stalled / elapsed, 3),
                        "worst_stall_ms": round(probe.worst * 1e3)},
            "elapsed_s": round(elapsed, 1), "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
            "gl": os.environ.get("MUJOCO_GL", "default"), "mujoco": mujoco.__version__,
            "repeats": {"default": repeats, "vendor": vendor_repeats},
            "rows": rows,
            "core_share": {r: {"default_sizes_default_rates_enabled": core_share(rows, config, "default", True, r),
                               "default_sizes_default_rates_all": core_share(rows, config, "default", False, r),
                               "vendor_sizes_vendor_rates_all": core_share(rows, config, "vendor", False, r)}
                           for r in renderers}}


def core_share(rows: List[dict], config: SensorConfig, size: str, only_enabled: bool,
               renderer: str = "mujoco") -> float:
    """Share of one core the sensors of `size` ("default" or "vendor") need at their rates: the sum of
    rate × CPU time per frame (render + encode) over the `renderer`'s `rows`, the sensors `config`
    disables left out when `only_enabled`."""
    total = 0.0
    for r in rows:
        if r["size"] != size or r.get("renderer", "mujoco") != renderer:
            continue
        on = config.lidar.enabled if r["sensor"] == "lidar" else config.cameras[r["sensor"]].enabled
        if on or not only_enabled:
            total += r["rate_hz"] * (r["render_cpu_ms"] + r["encode_cpu_ms"]) / 1e3
    return round(total, 3)


def side_by_side(rows: List[dict]) -> List[dict]:
    """Per sensor and size, the render + encode CPU ms of each renderer measured (the comparison table)."""
    table: Dict[tuple, dict] = {}
    for r in rows:
        key = (r["sensor"], r["size"])
        entry = table.setdefault(key, {"sensor": r["sensor"], "size": r["size"], "resolution": r["resolution"]})
        entry[r.get("renderer", "mujoco")] = round(r["render_cpu_ms"] + r["encode_cpu_ms"], 2)
    return list(table.values())


def markdown(result: dict, compared: Optional[str] = None) -> str:
    """The result of `run` as the Markdown page docs/benchmarks/sensors_sim.md; `compared`: where the
    side-by-side run with the ray caster is kept (cited when this run has MuJoCo alone)."""
    m = result["machine"]
    renderers = sorted(result["core_share"])
    lines = [f"# Simulated sensors: render cost ({result['date']}, {result['elapsed_s']} s)", "",
             f"Machine: {m['cpus']} CPUs, {m['platform']}, Python {m['python']}. A sleeping probe found it stalled "
             f"{m['stalled_fraction']:.0%} of the run (worst {m['worst_stall_ms']} ms); CPU times are the process's "
             "(`time.process_time`, every thread), which stalls do not inflate; wall times do include them. "
             f"BLAS threads: OPENBLAS_NUM_THREADS={result['blas_threads']} (as the node sets it); "
             f"MuJoCo {result.get('mujoco', '?')}, MUJOCO_GL={result.get('gl', '?')} (software OpenGL, llvmpipe).", "",
             "Start pose of `sim.yaml`, robot at the origin of the `room` scene; median of "
             f"{result['repeats']['default']} (default sizes) / {result['repeats']['vendor']} (vendor sizes) renders "
             "(lidar: 4x as many scans). `render` = `mujoco`: RGB and depth from one offscreen pass "
             "(`r1_sim.offscreen.OffscreenCamera`, no multisampling) / for the lidar `mj_multiRay` "
             "on the model without bounding volumes, one call per azimuth sector of a scan with the geoms none of "
             "its beams can reach left out (`SensorRig.cast_rays`)"
             + ("; `raycast`: the numpy ray caster it replaced (one cast for both, + shading)" if "raycast" in renderers
                else "") + "; `encode` = JPEG (+ depth image) or the cloud's bytes.", ""]
    if len(renderers) > 1:
        lines += ["## Side by side (render + encode CPU ms per frame)", "",
                  "| sensor | size | resolution | " + " | ".join(renderers) + " |",
                  "|---|---|---|" + "---:|" * len(renderers)]
        for e in side_by_side(result["rows"]):
            lines.append(f"| {e['sensor']} | {e['size']} | {e['resolution']} | "
                         + " | ".join(str(e.get(r, "")) for r in renderers) + " |")
        lines += ["", "## Every measurement", ""]
    elif compared:
        lines += [f"The side-by-side run with the ray caster MuJoCo replaced is kept in `{compared}` "
                  "(docs/sensors.md quotes it; `side_by_side` of its rows gives the comparison table).", ""]
    lines += ["| renderer | sensor | size | resolution | rate Hz | render CPU ms | RGB only | depth only "
              "| render wall ms | encode CPU ms | encode wall ms | JPEG bytes |",
              "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        lines.append(f"| {r.get('renderer', 'mujoco')} | {r['sensor']} | {r['size']} | {r['resolution']} | "
                     f"{r['rate_hz']:g} | {r['render_cpu_ms']} | {r.get('rgb_cpu_ms', '')} | "
                     f"{r.get('depth_cpu_ms', '')} | {r['render_wall_ms']} | {r['encode_cpu_ms']} | "
                     f"{r['encode_wall_ms']} | {r.get('jpeg_bytes', '')} |")
    lines += ["", "Share of one core (CPU ms per frame x rate, simulated time at real time, every topic subscribed):",
              ""]
    for r in renderers:
        c = result["core_share"][r]
        lines += [f"- {r}: default sizes and rates, the sensors enabled (the node's settings): "
                  f"**{c['default_sizes_default_rates_enabled']}**; every sensor: "
                  f"{c['default_sizes_default_rates_all']}; vendor sizes at the vendor's rates (15 fps cameras, "
                  f"10 Hz lidar): {c['vendor_sizes_vendor_rates_all']}"]
    lines.append("")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    """`benchmark_sensors [--out DIR] [--repeats N] [--vendor-repeats N] [--config FILE]`: measure, write
    <out>/sensors_sim.{json,md} (default out: <workspace>/docs/benchmarks, R1_WS or the source tree's),
    print the page. Exit status 0."""
    import rospkg

    p = argparse.ArgumentParser(description="Render cost of the simulated cameras and lidar -> "
                                            "docs/benchmarks/sensors_sim.{json,md}")
    p.add_argument("--out", default=None, help="output directory (default: <workspace>/docs/benchmarks)")
    p.add_argument("--repeats", type=int, default=9, help="renders per sensor at the default size")
    p.add_argument("--vendor-repeats", type=int, default=2, help="renders per sensor at the vendor's size")
    p.add_argument("--config", default=None, help="sensors YAML (default: r1_sim/config/sensors.yaml)")
    p.add_argument("--scene", default="room", help="scene: a name of r1_sim/worlds or an MJCF file (default: room)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    rp = rospkg.RosPack()
    share = Path(rp.get_path("r1_sim"))
    out_dir = Path(args.out) if args.out else Path(os.environ.get("R1_WS", share.parents[1])) / "docs/benchmarks"
    out_dir.mkdir(parents=True, exist_ok=True)
    config = parse_sensor_config(yaml.safe_load(Path(args.config or share / "config/sensors.yaml").read_text()) or {})
    joints = yaml.safe_load((share / "config/sim.yaml").read_text()).get("start_pose", {})
    urdf = (Path(rp.get_path("r1_description")) / "urdf/r1_v2_1_0.urdf").read_text()
    result = run(urdf, scene_xml(args.scene), config, joints, args.repeats, args.vendor_repeats)
    (out_dir / "sensors_sim.json").write_text(json.dumps(result, indent=1) + "\n")
    (out_dir / "sensors_sim.md").write_text(markdown(result, SIDE_BY_SIDE))
    print(markdown(result, SIDE_BY_SIDE))
    print(f"written: {out_dir}/sensors_sim.json, sensors_sim.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
