"""The simulator's block runner and warp intrinsics (`backends/cuda/simulator.py`), in a child
process on numba's CUDA simulator: `syncthreads` (also after some threads returned),
`syncthreads_count`, shared arrays, a shuffle, blocks after blocks on the kept threads; an
exception in a thread is raised by the launch with numba's message (thread and block) and
ends the block's threads; a barrier some threads never reach raises instead of hanging.
"""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.cuda



def run_kernels() -> dict[str, object]:
    global cuda                 # the simulator swaps the kernels' global `cuda` for its own
    import threading

    import numpy as np
    from numba import cuda

    from accel_kernel.backends.cuda import simulator
    simulator.install()
    out: dict[str, object] = {}

    @cuda.jit
    def mirror(a, result):
        i = cuda.grid(1)
        s = cuda.shared.array(64, np.int64)
        s[cuda.threadIdx.x] = a[i]
        cuda.syncthreads()
        v = cuda.shfl_xor_sync(0xFFFFFFFF, s[63 - cuda.threadIdx.x], 1)
        odd = cuda.syncthreads_count(v % 2)
        if cuda.threadIdx.x < 10:
            return
        cuda.syncthreads()
        result[i] = v * 1000 + odd

    a = np.arange(192)
    got = np.zeros(192, np.int64)
    mirror[3, 64](a, got)
    lane = np.arange(192) % 64
    want = np.where(lane < 10, 0, (63 - (lane ^ 1) + 64 * (np.arange(192) // 64)) * 1000 + 32)
    out["values"] = got.tolist() == want.tolist()

    @cuda.jit
    def fails(a):
        cuda.syncthreads()
        if cuda.grid(1) == 37:
            raise ValueError("boom")
        cuda.syncthreads()
        a[cuda.grid(1)] = 1

    try:
        fails[2, 32](np.zeros(64))
        out["error"] = "none"
    except ValueError as e:
        out["error"] = str(e)

    @cuda.jit
    def stuck(a):
        if cuda.threadIdx.x < 16:
            cuda.syncwarp()
        else:
            cuda.syncthreads()

    try:
        stuck[1, 32](np.zeros(32))
        out["stuck"] = "none"
    except RuntimeError as e:
        out["stuck"] = str(e)
    got[:] = 0
    mirror[3, 64](a, got)                   # the runner works on after both
    out["values after"] = got.tolist() == want.tolist()
    threading.Event().wait(0.2)             # the failed blocks' threads end
    out["threads"] = threading.active_count()
    return out


def test_the_block_runner_on_the_simulator():
    from cuda_child import on_the_simulator
    out = on_the_simulator(__file__, timeout=300)
    assert out["values"] and out["values after"], out
    assert out["error"] == "tid=[5, 0, 0] ctaid=[1, 0, 0]: boom", out
    assert out["stuck"].startswith("simulator: every thread of block (0, 0, 0) waits"), out
    assert out["threads"] == 1 + 64, out        # the main thread and the kept block's


if __name__ == "__main__":
    print(json.dumps(run_kernels()))
