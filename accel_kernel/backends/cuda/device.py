"""The device the `cuda` target runs on, and what generated host functions call on it.

`unavailable()` says why the target cannot run here (no numba.cuda, no GPU and no
simulator), in one line, or None. `launch(kernel, n, inputs, outputs, err)` runs a
generated kernel over `n` elements, with grid-stride loops (so any grid covers `n`). In a
session's run the host function's `alloc` is a `memory.RunAllocator`: it gives device
arrays (`memory.DeviceArray`, handles over the session's device pool), which a launch takes
as they are and writes in place: values stay on the device, and only the error array `err`
(a small host array, read after each launch) comes back. A numpy input is uploaded for the
launch alone. `host(x)` gives a host copy of a device array (a download). The budget bounds
every device buffer, and each allocation, transfer, free and launch is an event. Without a
pool (`alloc` a plain function), inputs and outputs are host arrays, copied both ways.

Under the simulator (`NUMBA_ENABLE_CUDASIM=1`, threads are Python threads) launches use
few, small blocks; on a GPU, blocks of `THREADS` threads, at most `MAX_BLOCKS` of them.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Iterator, Sequence

import numpy as np

NO_GPU = ("cuda: no NVIDIA GPU found (numba.cuda.is_available() is false); "
          "set NUMBA_ENABLE_CUDASIM=1 to run on the CUDA simulator")
THREADS, MAX_BLOCKS = 128, 4096                 # on a GPU
SIM_THREADS, SIM_MAX_BLOCKS = 32, 4             # on the simulator


def simulated() -> bool:
    """Whether numba.cuda is the simulator (`NUMBA_ENABLE_CUDASIM=1` when numba started)."""
    from numba import config
    return bool(config.ENABLE_CUDASIM)


def unavailable() -> str | None:
    """Why the `cuda` target cannot run here (one line), or None when it can."""
    try:
        from numba import cuda
    except ImportError as err:
        return f"cuda: numba.cuda cannot be imported ({err}); install numba-cuda[cu12]"
    if simulated() or cuda.is_available():
        return None
    return NO_GPU


def grid(n: int) -> tuple[int, int]:
    """(blocks, threads per block) for `n` elements."""
    threads, most = (SIM_THREADS, SIM_MAX_BLOCKS) if simulated() else (THREADS, MAX_BLOCKS)
    return max(1, min(most, -(-n // threads))), threads


_grid = grid            # `launch`'s own name for it (its parameter `grid` hides it)


def host(x: Any) -> np.ndarray:
    """A host numpy array of what a host function holds (to read a count, the segment
    lengths): a device array's copy (a download), the array itself when it is on the host."""
    from .memory import DeviceArray
    if isinstance(x, DeviceArray):
        return x.to_host()
    return np.asarray(x)


def launch(kernel: Any, n: int, inputs: Sequence[Any], outputs: Sequence[Any],
           err: np.ndarray | None = None, alloc: Any = None,
           grid: tuple[int, int] | None = None) -> None:
    """Run `kernel(n, *inputs, *outputs[, err])` on the device (see the module docstring);
    nothing runs for `n <= 0` (the outputs are then empty). `grid`: (blocks, threads per
    block) for a kernel that needs its own (a block per segment, a second pass of one
    block), else `grid(n)`'s. With an `alloc` that has a device pool (`memory.RunAllocator`):
    device arrays (inputs and outputs) are used as they are, pinned while the kernel runs;
    numpy inputs are uploaded to a temporary buffer (freed after); numpy outputs get one
    and are copied back; outputs are passed flat (one dimension, as many elements);
    `err` goes to the run's error buffer and back. Every buffer is an
    event of the session's stream, and so is the launch."""
    if n <= 0:
        return
    pool = getattr(alloc, "pool", None)
    if pool is None:
        _run_on_host_arrays(kernel, n, inputs, outputs, err, grid)
        return
    from .memory import DeviceArray
    temporary: list[DeviceArray] = []

    def on_device(x: Any) -> Any:
        if isinstance(x, np.ndarray):
            temporary.append(alloc.upload(x))
            return temporary[-1]
        return x
    args, outs = [on_device(x) for x in inputs], []
    for out in outputs:                   # a kernel writes its outputs as flat arrays
        if isinstance(out, np.ndarray):
            temporary.append(alloc(out.shape, out.dtype))
            out = temporary[-1]
        outs.append(out.reshape(-1))
    handles = [x for x in (*args, *outs) if isinstance(x, DeviceArray)]
    buffers = [x.buffer for x in handles]
    if err is not None:
        err_buffer = alloc.err_buffer(err)
        buffers.append(err_buffer)
    try:
        with pool.working_set(*buffers) as arrays:
            device = dict(zip(map(id, handles), arrays))
            views = [x.device_array(device[id(x)]) if isinstance(x, DeviceArray) else x
                     for x in (*args, *outs)]
            if err is not None:
                pool.write(err_buffer, err, "err")
                views.append(arrays[-1])
            shape = grid or _grid(n)
            _call(kernel, shape, n, views)
            pool.launched(getattr(kernel, "__name__", "kernel"), shape[:1], shape[1:],
                          *buffers)
        if err is not None:
            err[:] = pool.to_host(err_buffer, "err")
        for out, made in zip(outputs, outs):
            if isinstance(out, np.ndarray) and out.size:
                out.reshape(-1)[:] = made.to_host().reshape(-1)
    finally:
        for x in temporary:
            pool.free(x.buffer)


def _call(kernel: Any, shape: tuple[int, int], n: int, args: list[Any]) -> None:
    blocks, threads = shape
    with quiet(), simulating():
        kernel[blocks, threads](n, *args)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Around every run and launch: numba's low-occupancy warning is silenced (a small grid
    is a small input, not a mistake, and what a program prints must be its own), and so are
    RuntimeWarnings (the simulator's threads compute with numpy scalars outside the caller's
    `np.errstate`: wrapping integer arithmetic must not warn there)."""
    from numba.cuda.core.errors import NumbaPerformanceWarning    # numba-cuda's own class
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        yield


def simulating() -> Any:
    """On the simulator, `simulator.launching()` (warp intrinsics, fast thread switches)."""
    from .simulator import launching
    return launching() if simulated() else contextlib.nullcontext()


def _run_on_host_arrays(kernel: Any, n: int, inputs: Sequence[Any],
                        outputs: Sequence[np.ndarray], err: np.ndarray | None,
                        shape: tuple[int, int] | None) -> None:
    """A launch without a device pool (host arrays in and out, numba's own transfers)."""
    from numba import cuda
    args = [cuda.to_device(np.ascontiguousarray(x)) if isinstance(x, np.ndarray) else x
            for x in inputs]
    device_outputs = [cuda.device_array(out.size, out.dtype) for out in outputs]
    device_err = [cuda.to_device(err)] if err is not None else []
    _call(kernel, shape or _grid(n), n, [*args, *device_outputs, *device_err])
    for out, device_out in zip(outputs, device_outputs):
        if out.size:            # (an empty one: a segmented kernel's over empty segments)
            device_out.copy_to_host(out.reshape(-1))
    if err is not None:
        device_err[0].copy_to_host(err)
