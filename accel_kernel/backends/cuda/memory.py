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

What a run holds are `DeviceArray`s: a handle on a `Buffer` in some shape (`reshape` gives
another handle on the same buffer). `RunAllocator` (the host functions' `alloc`) makes them;
`device.launch` pins their buffers while a kernel runs.

Values stay on the device between kernels and cells: `DeviceValue` is the `"device"` form
of a `host.HostValue` (a flat value, `backends/numpy/values.py`, with a `Placed` in place of
each of its numpy arrays: the array's host copy, its `DeviceArray`, or both); it becomes
flat host arrays only when read (`to_flat`, through `host.CONVERSIONS`), each downloaded
once. `DeviceValue.from_flat(flat)` is a flat value not uploaded yet (the `cuda` driver
uploads what its kernels read, once); `device_value(pool, flat)` uploads a flat value.

The budget is the session's (`Session(budget=...)`, `%budget`), kept on the `Memory` that
the session hands to every target run; events go to the session's stream. A CUDA
out-of-memory error of an allocation is `DeviceFull` to the pool, which frees dead buffers
and evicts others before it gives up with the accel error `OutOfMemory`.
"""
from __future__ import annotations

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

    def download_elements(self, device: Any, start: int, stop: int) -> np.ndarray:
        return device.reshape(device.size)[start:stop].copy_to_host()

    def write(self, device: Any, host: np.ndarray) -> None:
        device.copy_to_device(host.reshape(device.shape))

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


class DeviceArray:
    """What a generated host function holds for an array of a `cuda` run: a thin handle over
    a pool `Buffer` in some shape (`reshape` gives another handle on the same buffer).
    `shape`, `size`, `dtype`, `ndim`, `nbytes` and `len` read no element; the elements are
    read with `device.host(x)` (a download event), never by indexing or numpy. `host_copy`:
    the host copy a run's host statements read (`driver.Residency`), once made."""
    __slots__ = ("buffer", "shape", "host_copy", "__weakref__")

    def __init__(self, buffer: Buffer, shape: tuple[int, ...] | None = None):
        self.buffer = buffer
        self.shape = buffer.shape if shape is None else shape
        self.host_copy: np.ndarray | None = None

    dtype = property(lambda self: self.buffer.dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    nbytes = property(lambda self: self.buffer.nbytes)

    def __len__(self) -> int:
        return self.shape[0]

    def reshape(self, *shape: Any) -> "DeviceArray":
        """The same buffer in another shape (`-1` once for the rest, as numpy)."""
        dims = list(shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape)
        dims = [int(d) for d in dims]
        if -1 in dims:
            known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
            dims[dims.index(-1)] = self.size // known if known else 0
        if int(np.prod(dims, dtype=np.int64)) != self.size:
            raise ValueError(f"cannot reshape a device array of shape {self.shape} to "
                             f"{tuple(dims)}")
        return DeviceArray(self.buffer, tuple(dims))

    def device_array(self, array: Any) -> Any:
        """`array` (the buffer's numba device array) seen in this handle's shape."""
        return array if array.shape == self.shape else array.reshape(self.shape)

    def to_host(self) -> np.ndarray:
        """A host copy (a download event; an evicted buffer's host copy, without one)."""
        return self.buffer.pool.to_host(self.buffer).reshape(self.shape)

    def row(self, i: int) -> Any:
        """Row `i` as numpy's `array[i]` gives it (a numpy scalar of a rank-1 array): from the
        host copy when there is one, else a download of that row alone."""
        if self.host_copy is not None:
            return self.host_copy[i]
        width = self.size // self.shape[0]
        start = i * width
        elements = self.buffer.pool.to_host(self.buffer, elements=(start, start + width))
        return elements.reshape(self.shape[1:]) if self.ndim > 1 else elements[0]

    def __getitem__(self, key: Any) -> Any:
        raise TypeError("a device array is not read by indexing: device.host(x) gives a host copy")

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a device array is not a numpy array: device.host(x) gives a host copy")

    def __repr__(self) -> str:
        return f"DeviceArray({self.shape}, {self.dtype}, buffer #{self.buffer.number})"


class RunAllocator:
    """What a generated host function of a `cuda` run allocates with: called, a new device
    array (`DeviceArray`) from the session's device pool (`pool`); `err_buffer`, the one
    device buffer every launch of the run copies its error flag to and back."""

    def __init__(self, memory: Memory):
        self.memory = memory
        self.pool = device_pool(memory)
        self._err: Buffer | None = None

    def __call__(self, shape: tuple[int, ...] | int, dtype: Any) -> DeviceArray:
        return DeviceArray(self.pool.alloc(shape, dtype))

    def upload(self, host: np.ndarray) -> DeviceArray:
        return DeviceArray(self.pool.to_device(np.asarray(host)))

    def err_buffer(self, err: np.ndarray) -> Buffer:
        if self._err is None or self._err.shape != err.shape:
            self._err = self.pool.alloc(err.shape, err.dtype)
        return self._err


class Placed:
    """One array of a value kept between cells: its host copy (`host`), its device array
    (`device`), or both once one was made from the other (each at most once)."""
    __slots__ = ("host", "device")

    def __init__(self, host: np.ndarray | None = None, device: DeviceArray | None = None):
        assert host is not None or device is not None
        self.host, self.device = host, device

    def to_host(self) -> np.ndarray:
        if self.host is None:
            assert self.device is not None
            self.host = self.device.to_host()
        return self.host


class DeviceValue:
    """A flat value in the `"device"` form (`host.py`): the flat value's structure (tuples,
    `Segs`, numpy scalars) with a `Placed` for each of its arrays. A value a `cuda` run made
    has its arrays on the device (a host array where a host statement made it); a flat value
    read by a `cuda` run (`from_flat`) has its arrays on the host until a kernel reads them:
    the run uploads each once and keeps the device array here (`backends/cuda/driver.py`).
    `to_flat` copies to the host what is only on the device, once."""
    __slots__ = ("tree",)

    def __init__(self, tree: Any):
        self.tree = tree

    @staticmethod
    def from_flat(flat: Any) -> "DeviceValue":
        return DeviceValue(map_tree(flat, lambda a: Placed(host=a), np.ndarray))

    def to_flat(self) -> Any:
        """The flat value on the host (arrays only on the device are downloaded, once)."""
        return map_tree(self.tree, Placed.to_host, Placed)

    def placed(self) -> list[Placed]:
        found: list[Placed] = []
        map_tree(self.tree, lambda p: found.append(p) or p, Placed)
        return found

    def buffers(self) -> list[Buffer]:
        """The device buffers of its arrays that are on a device (resident or evicted)."""
        return [p.device.buffer for p in self.placed() if p.device is not None]

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.buffers())

    def skeleton(self) -> Any:
        """The flat value's structure with an empty array of each array's rank and dtype in
        place of each array (its representation, read without any transfer)."""
        def empty(p: Placed) -> np.ndarray:
            like = p.host if p.host is not None else p.device
            return np.empty((0,) * like.ndim, like.dtype)
        return map_tree(self.tree, empty, Placed)

    def __repr__(self) -> str:
        on = sum(p.device is not None for p in self.placed())
        return f"DeviceValue({len(self.placed())} arrays, {on} on the device)"


def device_value(pool: DevicePool, flat: Any) -> DeviceValue:
    """Upload a flat value (each of its numpy arrays becomes a device array)."""
    def up(a: np.ndarray) -> Placed:
        return Placed(device=DeviceArray(pool.to_device(a)))
    return DeviceValue(map_tree(flat, up, np.ndarray))


def map_tree(tree: Any, f, leaf: type | tuple = Buffer) -> Any:
    """`tree` (a flat value: tuples, `Segs`) with `f` applied to each leaf of type `leaf`."""
    if isinstance(tree, leaf):
        return f(tree)
    if isinstance(tree, tuple):
        return tuple(map_tree(t, f, leaf) for t in tree)
    if isinstance(tree, Segs):
        return Segs(map_tree(tree.offsets, f, leaf), map_tree(tree.values, f, leaf))
    return tree
