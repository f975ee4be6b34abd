"""Type check of the ROS-free cores: mypy over the modules that import no rospy.

The cores (CAN protocol, HDAS device models, mobiman's controllers, r1_common's helpers) carry
annotations that the nodes, the simulator and the tests rely on; this keeps them true. mypy 1.10
runs at Python 3.11 with numpy's own stubs (from the development set), `--check-untyped-defs`, and
missing imports (pinocchio, numba, ...) taken as Any. The ROS wrappers stay out: rospy and the
message packages have no stubs, a check of them would check little. (What needs a Python newer
than the robot's 3.8 is scripts/lib/check_py38.py's business.)

`python scripts/lib/check_types.py [paths...]` (default: CORES below; paths given override it).
mypy's cache is /var/tmp/r1_mypy_cache/types (R1_MYPY_CACHE replaces /var/tmp/r1_mypy_cache).
Exit 0 when mypy finds nothing, 1 with mypy's output (one line per error) when it finds something,
2 when mypy is missing or not 1.10, or fails itself.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from check_py38 import mypy_110_missing  # (scripts/lib, beside this script)

WS = Path(__file__).resolve().parents[2]
# mypy's incremental cache, kept for the machine (shared root with check_py38.py, its own directory)
CACHE = Path(os.environ.get("R1_MYPY_CACHE", "/var/tmp/r1_mypy_cache")) / "types"

# The ROS-free core modules, relative to the workspace: packages (directories) or single modules.
# Everything here must import neither rospy nor a message package (tests/test_check_types.py checks).
CORES = (
    # r1_can: the CAN protocol
    "src/r1_can/src/r1_can",
    # r1_common: its ROS-free helpers (ros_io, diagnostics, ros_testing use rospy)
    "src/r1_common/src/r1_common/settings.py",
    "src/r1_common/src/r1_common/loop_stats.py",
    "src/r1_common/src/r1_common/throttle.py",
    "src/r1_common/src/r1_common/validation.py",
    "src/r1_common/src/r1_common/sequence.py",
    # HDAS: the driver's core (node, boards, check_node, monitor and the benchmarks use rospy)
    "src/HDAS/src/hdas/__init__.py",
    "src/HDAS/src/hdas/command_limits.py",
    "src/HDAS/src/hdas/commanders.py",
    "src/HDAS/src/hdas/errors.py",
    "src/HDAS/src/hdas/function_frames.py",
    "src/HDAS/src/hdas/group_codec.py",
    "src/HDAS/src/hdas/monitor_table.py",
    "src/HDAS/src/hdas/motor_group.py",
    "src/HDAS/src/hdas/selfcheck.py",
    "src/HDAS/src/hdas/settings.py",
    "src/HDAS/src/hdas/slew.py",
    "src/HDAS/src/hdas/urdf_limits.py",
    # mobiman: the cores (nodes, benchmarks and demo are ROS wrappers and tools)
    "src/mobiman/src/mobiman/model",
    "src/mobiman/src/mobiman/control",
    "src/mobiman/src/mobiman/arm",
    "src/mobiman/src/mobiman/tracker",
    "src/mobiman/src/mobiman/torso",
    "src/mobiman/src/mobiman/chassis",
    "src/mobiman/src/mobiman/estimation",
    "src/mobiman/src/mobiman/remote",
    # r1_sim: the simulated robot's ROS-free cores (not node.py, sensors_node.py: rospy)
    "src/r1_sim/src/r1_sim/base_traction.py",
    "src/r1_sim/src/r1_sim/bus_server.py",
    "src/r1_sim/src/r1_sim/lidar.py",
    "src/r1_sim/src/r1_sim/lockstep.py",
    "src/r1_sim/src/r1_sim/mjcf.py",
    "src/r1_sim/src/r1_sim/motor.py",
    "src/r1_sim/src/r1_sim/mujoco_world.py",
    "src/r1_sim/src/r1_sim/object_states.py",
    "src/r1_sim/src/r1_sim/offscreen.py",
    "src/r1_sim/src/r1_sim/physics.py",
    "src/r1_sim/src/r1_sim/robot.py",
    "src/r1_sim/src/r1_sim/sensor_rig.py",
    "src/r1_sim/src/r1_sim/sensor_settings.py",
    "src/r1_sim/src/r1_sim/sim_loop.py",
    "src/r1_sim/src/r1_sim/sim_settings.py",
    "src/r1_sim/src/r1_sim/simbus.py",
    "src/r1_sim/src/r1_sim/world_file.py",
    # startup_config: the whole stack's ROS-free parts
    "src/startup_config/src/r1_startup/posture_rig.py",
)

# --ignore-missing-imports leaves out the packages whose stubs typeshed once bundled (yaml): mypy asks for
# types-PyYAML, which the development set does not carry; import-untyped takes those as Any like the rest
MYPY_ARGS = ("--python-version", "3.11", "--ignore-missing-imports", "--disable-error-code", "import-untyped",
             "--hide-error-context", "--no-error-summary", "--check-untyped-defs", "--no-pretty")


def main(argv: list[str]) -> int:
    why_not = mypy_110_missing("check_types")      # (the one mypy of both checks)
    if why_not:
        print(why_not, file=sys.stderr)
        return 2
    paths = argv[1:] or list(CORES)
    out = subprocess.run([sys.executable, "-m", "mypy", *MYPY_ARGS, "--cache-dir", str(CACHE), *paths],
                         cwd=WS, capture_output=True, text=True)
    if out.returncode == 0:
        print(f"check_types: no type errors in {len(paths)} paths")
        return 0
    sys.stdout.write(out.stdout)
    sys.stderr.write(out.stderr)
    if out.returncode == 1:
        errors = sum(": error: " in line for line in out.stdout.splitlines())
        print(f"check_types: {errors} type error{'' if errors == 1 else 's'} in {len(paths)} paths", file=sys.stderr)
        return 1
    print(f"check_types: mypy failed (exit {out.returncode})", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
