"""Choosing numba's CUDA simulator in a running process, where there is no GPU (the kernel's
`%cudasim`, so that a notebook of the `cuda` target runs on any machine).

numba.cuda decides between the GPU and the simulator once, when it is imported
(`NUMBA_ENABLE_CUDASIM=1` in numba's configuration). `simulate_without_gpu()` looks for a GPU
through the CUDA driver library itself (`cuInit`, `cuDeviceGetCount`: importing numba.cuda
to ask would fix the choice) and, when there is none and numba.cuda is not imported yet,
turns the simulator on; it returns one line saying what the `cuda` target runs on.
`ptx_listing(code)` gives `%show ptx` its listing under the simulator too.

It lives with the kernel, not in `backends/cuda/`: it is an edge of the process (it sets
`NUMBA_ENABLE_CUDASIM` in the process environment, which nothing under `backends/` reads).
"""
from __future__ import annotations

import ctypes
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

_DRIVER_LIBRARIES = ("libcuda.so.1", "libcuda.so", "nvcuda.dll", "libcuda.dylib")

ON_GPU = "cuda: {count} GPU(s) here: the cuda target runs on the GPU"
ON_SIMULATOR = ("cuda: no GPU here: the cuda target runs on numba's CUDA simulator (a Python "
                "thread per GPU thread: small inputs only; its times say nothing of a GPU)")
TOO_LATE = ("cuda: numba.cuda was imported for a GPU before %cudasim and there is none: "
            "restart the kernel and run %cudasim before the first cuda cell")


def gpu_count() -> int:
    """The GPUs the CUDA driver sees (0 without a driver)."""
    for name in _DRIVER_LIBRARIES:
        try:
            driver = ctypes.CDLL(name)
        except OSError:
            continue
        count = ctypes.c_int(0)
        if driver.cuInit(0) != 0 or driver.cuDeviceGetCount(ctypes.byref(count)) != 0:
            return 0
        return count.value
    return 0


def simulate_without_gpu() -> str:
    """Turn the simulator on when there is no GPU (see the module docstring); what the
    `cuda` target runs on, in one line."""
    if "numba.cuda" in sys.modules:            # the choice is made: say which
        from ..backends.cuda.device import simulated
        from numba import cuda
        if simulated():
            return ON_SIMULATOR
        return ON_GPU.format(count=len(cuda.gpus)) if cuda.is_available() else TOO_LATE
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return ON_SIMULATOR                    # chosen when the process started
    count = gpu_count()
    if count:
        return ON_GPU.format(count=count)
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    if "numba" in sys.modules:                 # numba read its configuration already
        from numba.core import config
        config.reload_config()
    return ON_SIMULATOR


def ptx_listing(code: Any) -> str:
    """`ptx.listing(code)` (every kernel's PTX and ptxas' report). The simulator replaces
    numba.cuda's compiler for the whole process, so there the listing is made by a child
    process without it, from the module's source and kernel parameters."""
    from ..backends.cuda.device import simulated
    from ..backends.cuda.ptx import listing
    if not simulated():
        return listing(code)
    module = (code.source, code.key, code.params)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_ROOT, env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", _CHILD], input=pickle.dumps(module), env=env,
                          capture_output=True, timeout=600)
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        raise RuntimeError(f"cuda: the PTX listing's process failed: {' '.join(tail)}")
    return done.stdout.decode()


_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])
_CHILD = """
import pickle, sys, types
from accel_kernel.backends.cuda.ptx import listing
source, key, params = pickle.load(sys.stdin.buffer)
sys.stdout.write(listing(types.SimpleNamespace(source=source, key=key, params=params)))
"""
