"""The device the `cuda` target runs on, and what generated host functions call on it.

`unavailable()` says why the target cannot run here (no numba.cuda, no GPU and no
simulator), in one line, or None. `launch(kernel, n, inputs, outputs, err)` runs a
generated kernel over `n` elements: the inputs (host arrays and scalars) are copied to the
device, the outputs (host buffers the runtime's allocator made) get device buffers of
their size, the kernel runs with grid-stride loops (so any grid covers `n`), then the
outputs and the error array come back to the host buffers. Every buffer of a launch is
copied back because the host statements between kernels run on the host (numpy); keeping
values on the device between kernels is the next step (issue 12). In a session's run every
device buffer goes through the session's device pool (`memory.RunAllocator`, the host
function's `alloc`): the budget bounds a launch's buffers and each is an event.

Under the simulator (`NUMBA_ENABLE_CUDASIM=1`, threads are Python threads) launches use
few, small blocks; on a GPU, blocks of `THREADS` threads, at most `MAX_BLOCKS` of them.
"""
from __future__ import annotations

import warnings
from typing import Any, Sequence

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
    lengths): the array itself when it is on the host."""
    return np.asarray(x)


def launch(kernel: Any, n: int, inputs: Sequence[Any], outputs: Sequence[np.ndarray],
           err: np.ndarray | None = None, alloc: Any = None,
           grid: tuple[int, int] | None = None) -> None:
    """Run `kernel(n, *inputs, *outputs[, err])` on the device (see the module docstring);
    nothing runs for `n <= 0` (the outputs are then empty). `grid`: (blocks, threads per
    block) for a kernel that needs its own (a block per segment, a second pass of one
    block), else `grid(n)`'s. With an `alloc` that has a
    device pool (`memory.RunAllocator`), every device buffer of the launch goes through it:
    the budget bounds them, and the uploads, allocations, launch, downloads and frees are
    events of the session's stream."""
    if n <= 0:
        return
    pool = getattr(alloc, "pool", None)
    if pool is None:
        from numba import cuda
        _run(kernel, n, [cuda.to_device(np.ascontiguousarray(x)) if isinstance(x, np.ndarray)
                         else x for x in inputs],
             [cuda.device_array(out.size, out.dtype) for out in outputs],
             [cuda.to_device(err)] if err is not None else [], outputs, err, grid)
        return
    uploads = {k: pool.to_device(x) for k, x in enumerate(inputs) if isinstance(x, np.ndarray)}
    made = [pool.alloc(out.size, out.dtype) for out in outputs]
    errs = [pool.to_device(err)] if err is not None else []
    buffers = [*uploads.values(), *made, *errs]
    try:
        with pool.working_set(*buffers) as arrays:
            on_device = dict(zip(uploads, arrays))
            args = [on_device.get(k, x) for k, x in enumerate(inputs)]
            rest = arrays[len(uploads):]
            shape = grid or _grid(n)
            _run(kernel, n, args, rest[:len(made)], rest[len(made):], outputs, err, shape)
            pool.launched(getattr(kernel, "__name__", "kernel"), shape[:1], shape[1:],
                          *buffers)
    finally:               # the values go back to the host (statements between kernels
        for buffer in buffers:          # run there): nothing stays on the device yet
            pool.free(buffer)


def _run(kernel: Any, n: int, args: list[Any], device_outputs: list[Any],
         device_err: list[Any], outputs: Sequence[np.ndarray], err: np.ndarray | None,
         shape: tuple[int, int] | None = None) -> None:
    blocks, threads = shape or _grid(n)
    with warnings.catch_warnings():
        # the simulator's threads compute with numpy scalars outside the caller's
        # `np.errstate`: wrapping integer arithmetic must not warn there
        warnings.simplefilter("ignore", RuntimeWarning)
        kernel[blocks, threads](n, *args, *device_outputs, *device_err)
    for out, device_out in zip(outputs, device_outputs):
        if out.size:            # (an empty one: a segmented kernel's over empty segments)
            device_out.copy_to_host(out.reshape(-1))
    if err is not None:
        device_err[0].copy_to_host(err)
