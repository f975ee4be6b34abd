"""One BLAS thread per process: every executable of the stack calls `use_one_blas_thread()` before it
imports numpy (docs/stack.md, "One BLAS thread per process").

numpy's OpenBLAS starts a worker thread per core when numpy loads. Our matrices are 3x3 to 30x30, for
which those threads bring nothing, and numpy 1.24's OpenBLAS (0.3.21, the robot's Python 3.8 set) keeps
its workers spinning on sched_yield between calls: chassis control's posture limits (an eigvalsh at 20 Hz)
cost 0.92 of a core with the worker, 0.22 without it (measured in chassis_sim's launch). In a process
that asked for SCHED_FIFO (r1_common.realtime) such a worker spins at real-time priority.

This module imports nothing heavy: it must run before numpy does.
"""
from __future__ import annotations

import os
import sys

#: The variables the BLAS libraries numpy and scipy may load read for their thread count.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def use_one_blas_thread() -> bool:
    """Ask the BLAS library for one thread, unless the environment already sets a count (a user's choice
    stays). Returns False if numpy was already imported: its BLAS read the environment then, so this
    call came too late and changed nothing."""
    for name in BLAS_THREAD_VARIABLES:
        os.environ.setdefault(name, "1")
    return "numpy" not in sys.modules
