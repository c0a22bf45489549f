"""The device memory manager of the `cuda` target: `runtime/budget.py`'s `DevicePool` over
numba.cuda (the only module here that allocates device memory).

For the code generator and driver, the whole interface is:

    pool = device_pool(memory)           # memory: the session's runtime.memory.Memory
    out = pool.alloc(shape, dtype)       # -> Buffer (uninitialised)
    xs = pool.to_device(host_array)      # -> Buffer holding a copy
    pool.to_host(buffer)                 # -> a new numpy array
    pool.touch(buffer)                   # mark used now (uploads again if evicted);
                                         #    returns the numba.cuda device array
    pool.free(buffer)                    # give the memory back now (else: when dropped)
    with pool.working_set(xs, out) as (d_xs, d_out):    # device arrays, not evicted
        kernel[grid, block](d_xs, d_out)                 #    while the launch runs
    pool.launched("map_3", grid, block, xs, out)         # the launch event

A `Buffer` is usable where numba.cuda wants a device array: pass `buffer.array` (this is a
use: an evicted buffer is uploaded again first) or the arrays `working_set` gives; on a real
GPU the handle itself works too (`__cuda_array_interface__`), not in the simulator, whose
`jit` takes no `extensions` either: pass the arrays. A launch takes its arrays from
`working_set`: reading `a.array` then `b.array` may evict `a` to make room for `b`.

Values stay on the device between kernels and cells: `DeviceValue` is the `"device"` form
of a `host.HostValue` (a flat value, `backends/numpy/values.py`, with `Buffer`s in place of
its numpy arrays); it becomes flat host buffers only when read (`to_flat`, through
`host.CONVERSIONS`). `device_value(pool, flat)` uploads a flat value.

The budget is the session's (`Session(budget=...)`, `%budget`), kept on the `Memory` that
the session hands to every target run; events go to the session's stream. A CUDA
out-of-memory error of an allocation is `DeviceFull` to the pool, which frees dead buffers
and evicts others before it gives up with the accel error `OutOfMemory`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...runtime.budget import Buffer, DeviceFull, DevicePool
from ...runtime.memory import Memory
from ..numpy.values import Segs

DEVICE = "cuda:0"


class NumbaAllocator:
    """numba.cuda device arrays. Their memory is given back when the last reference goes
    (numba defers it and flushes the deferred frees itself before failing an allocation)."""

    def __init__(self) -> None:
        from numba import cuda
        self.cuda = cuda

    def allocate(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self._refusing_full(lambda: self.cuda.device_array(shape, dtype))

    def upload(self, host: np.ndarray) -> Any:
        return self._refusing_full(lambda: self.cuda.to_device(host))

    def download(self, device: Any) -> np.ndarray:
        return device.copy_to_host()

    def release(self, device: Any) -> None:
        pass                       # the pool drops its reference: numba frees the memory

    def _refusing_full(self, make):
        from numba.cuda.cudadrv.driver import CudaAPIError
        try:
            return make()
        except CudaAPIError as err:
            if "OUT_OF_MEMORY" in str(getattr(err, "code", "")) or "OUT_OF_MEMORY" in str(err):
                raise DeviceFull(str(err)) from None
            raise


def device_pool(memory: Memory) -> DevicePool:
    """The session's pool for the (first) CUDA device, made on first use with the budget and
    event stream of `memory`."""
    pool = memory.devices.get(DEVICE)
    if pool is None:
        pool = DevicePool(NumbaAllocator(), memory.events, DEVICE, memory.budget)
        memory.devices[DEVICE] = pool
    return pool


class RunAllocator:
    """What a generated host function of a `cuda` run allocates with: called, a host buffer
    from the session's `Memory` (the outputs a launch copies back into); `pool`, the device
    pool every device buffer of the launch goes through (`device.launch`)."""

    def __init__(self, memory: Memory):
        self.memory = memory
        self.pool = device_pool(memory)

    def __call__(self, shape: tuple[int, ...] | int, dtype: Any) -> np.ndarray:
        return self.memory.alloc(shape, dtype)


@dataclass(frozen=True)
class DeviceValue:
    """A flat value on the device: `tree` is the flat value's structure (tuples, `Segs`,
    numpy scalars) with a `Buffer` for each of its arrays."""
    tree: Any
    pool: DevicePool

    def to_flat(self) -> Any:
        """The flat value on the host (each buffer copied to a new numpy array)."""
        return _map_tree(self.tree, self.pool.to_host)

    def buffers(self) -> list[Buffer]:
        found: list[Buffer] = []
        _map_tree(self.tree, lambda b: found.append(b) or b)
        return found

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.buffers())


def device_value(pool: DevicePool, flat: Any) -> DeviceValue:
    """Upload a flat value (each of its numpy arrays becomes a device buffer)."""
    return DeviceValue(_map_tree(flat, pool.to_device, np.ndarray), pool)


def _map_tree(tree: Any, f, leaf: type = Buffer) -> Any:
    if isinstance(tree, leaf):
        return f(tree)
    if isinstance(tree, tuple):
        return tuple(_map_tree(t, f, leaf) for t in tree)
    if isinstance(tree, Segs):
        return Segs(_map_tree(tree.offsets, f, leaf), _map_tree(tree.values, f, leaf))
    return tree
