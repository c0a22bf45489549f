"""Device memory bookkeeping and the budget policy, over an abstract allocator (pure code:
no numba here; `backends/cuda/memory.py` gives the numba.cuda allocator).

A `DevicePool` makes every buffer of one device, as a `Buffer` handle. It knows the bytes in
use, the peak and each buffer's last use (a tick of the pool's clock, bumped by `touch`).
With a budget (bytes; None for none), an allocation that would pass it (or that the device
itself refuses: the allocator raises `DeviceFull`) makes room in this order
(Clifton-Everest, thesis 6.2):

1. free dead buffers: buffers whose handle Python dropped are kept on the device for reuse
   by an allocation of the same size (a `cudaMalloc` costs more than a reuse), and given back
   here, oldest first;
2. evict live buffers, least recently used first: copy to host memory, free on the device;
   the handle stays valid and the buffer is uploaded again on its next use (`array`, `touch`);
   a buffer in use by the operation at hand (`pinned`, see `working_set`) is never evicted;
3. else raise the accel error `OutOfMemory` naming the bytes asked for and the budget.

Every allocation, free, transfer, eviction and re-upload is an event on the pool's
`EventStream` (`runtime/events.py`).

The allocator (`Allocator`) does these things on device arrays (any objects): `allocate(shape,
dtype)`, `upload(host ndarray)`, `download(device array) -> ndarray` (or `download_elements(device
array, start, stop)`: flat elements [start, stop)), `write(device array, host ndarray)` (into
an existing array) and `release(device array)`; it raises `DeviceFull` when the device has
no room.
"""
from __future__ import annotations

import contextlib
import itertools
import re
import time
import weakref
from collections import OrderedDict
from typing import Any, Iterator, Protocol

import numpy as np

from ..lang.errors import OutOfMemory
from . import events as E
from .memory import format_bytes


class DeviceFull(Exception):
    """Raised by an allocator when the device itself has no room for an allocation."""


class Allocator(Protocol):
    def allocate(self, shape: tuple[int, ...], dtype: np.dtype) -> Any: ...
    def upload(self, host: np.ndarray) -> Any: ...
    def download(self, device: Any) -> np.ndarray: ...
    def release(self, device: Any) -> None: ...
    def write(self, device: Any, host: np.ndarray) -> None: ...
    def download_elements(self, device: Any, start: int, stop: int) -> np.ndarray: ...


_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
SIZE_FORMS = ("a size: 512MB, 2GB, 1.5GiB, 4096 (bytes); KB/MB/GB are powers of 1000, "
              "KiB/MiB/GiB (and K/M/G) of 1024")


def parse_size(text: str) -> int:
    """`512MB` -> 512000000, `1.5GiB` -> 1610612736, `4096` -> 4096 (case and a space before
    the unit do not matter). ValueError with the forms accepted for anything else."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise ValueError(f"cannot read `{text.strip()}` as {SIZE_FORMS}")
    return int(float(match.group(1)) * _UNITS[unit])


def nbytes_of(shape: tuple[int, ...], dtype) -> int:
    n = np.dtype(dtype).itemsize
    for d in shape:
        n *= max(int(d), 0)
    return n


class _Entry:
    """The pool's record of one buffer (the `Buffer` handle points at it)."""
    __slots__ = ("number", "shape", "dtype", "nbytes", "device", "host", "last_use", "pins")

    def __init__(self, number: int, shape: tuple[int, ...], dtype: np.dtype, nbytes: int):
        self.number, self.shape, self.dtype, self.nbytes = number, shape, dtype, nbytes
        self.device: Any = None          # the device array while resident
        self.host: np.ndarray | None = None   # the host copy while evicted
        self.last_use = 0
        self.pins = 0


class Buffer:
    """A handle on one device buffer: `shape`, `dtype`, `nbytes`, `number`; `array` is the
    device array (uploaded again first when it was evicted; this counts as a use). Dropping
    the last reference makes the buffer dead (kept for reuse until room is needed)."""
    __slots__ = ("_pool", "_entry", "__weakref__")

    def __init__(self, pool: "DevicePool", entry: _Entry):
        self._pool, self._entry = pool, entry

    shape = property(lambda self: self._entry.shape)
    dtype = property(lambda self: self._entry.dtype)
    nbytes = property(lambda self: self._entry.nbytes)
    number = property(lambda self: self._entry.number)
    size = property(lambda self: int(np.prod(self._entry.shape, dtype=np.int64)))
    ndim = property(lambda self: len(self._entry.shape))
    pool = property(lambda self: self._pool)

    @property
    def resident(self) -> bool:
        """Whether it is on the device now (not evicted, not freed)."""
        return self._entry.device is not None

    @property
    def array(self) -> Any:
        return self._pool.touch(self)

    @property
    def __cuda_array_interface__(self) -> dict:
        """The device array's (a use): numba.cuda kernels on a real GPU take the handle as it
        is (the simulator does not read this: pass `array` there)."""
        return self.array.__cuda_array_interface__

    def __len__(self) -> int:
        return self._entry.shape[0]

    def __repr__(self) -> str:
        where = "device" if self.resident else "host" if self._entry.host is not None else "freed"
        return (f"Buffer(#{self.number}, {self.shape}, {self.dtype}, "
                f"{format_bytes(self.nbytes)}, on {where})")


class DevicePool:
    def __init__(self, allocator: Allocator, events: E.EventStream | None = None,
                 device: str = "device", budget: int | None = None):
        self.allocator = allocator
        self.events = events if events is not None else E.EventStream()
        self.device = device
        self.budget = budget
        self.in_use = 0                      # bytes on the device: live and dead buffers
        self.peak = 0
        self._clock = itertools.count(1)
        self._numbers = itertools.count(1)
        self._live: OrderedDict[int, _Entry] = OrderedDict()   # least recently used first
        self._dead: OrderedDict[int, _Entry] = OrderedDict()   # oldest first
        self._dropped: list[_Entry] = []     # handles dropped since the last operation

    # ------------------------------------------------------------ the interface

    def alloc(self, shape: tuple[int, ...] | int, dtype) -> Buffer:
        """A new uninitialised device buffer (raises OutOfMemory when it cannot fit)."""
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(map(int, shape))
        dtype = np.dtype(dtype)
        self._collect()
        nbytes = nbytes_of(shape, dtype)
        reused = self._reuse(shape, dtype)
        if reused is not None:
            self._emit(E.Alloc, reused, reused=True)
            return self._handle(reused)
        entry = _Entry(next(self._numbers), shape, dtype, nbytes)
        entry.device = self._place(nbytes, lambda: self.allocator.allocate(shape, dtype))
        self._emit(E.Alloc, entry)
        return self._handle(entry)

    def to_device(self, host: np.ndarray) -> Buffer:
        """A device buffer holding a copy of `host` (a numpy array)."""
        host = np.ascontiguousarray(host)
        self._collect()
        entry = _Entry(next(self._numbers), tuple(host.shape), host.dtype, host.nbytes)
        started = time.perf_counter()
        entry.device = self._place(entry.nbytes, lambda: self.allocator.upload(host))
        self._emit(E.Alloc, entry)
        self._transfer(entry, "to_device", started)
        return self._handle(entry)

    def to_host(self, buffer: Buffer, what: str = "value",
                elements: tuple[int, int] | None = None) -> np.ndarray:
        """The buffer's elements as a new numpy array (an evicted buffer is read from its host
        copy, without going back to the device). `what` the transfer event says it moves
        (`value`; `err`: a launch's error flag); `elements`: only the flat elements
        [start, stop) (a rank-1 array of them)."""
        entry = self._check(buffer)
        if entry.device is None:
            assert entry.host is not None
            if elements is not None:
                return entry.host.reshape(-1)[elements[0]:elements[1]].copy()
            return entry.host.copy()
        started = time.perf_counter()
        if elements is None:
            out = self.allocator.download(entry.device)
        else:
            out = self.allocator.download_elements(entry.device, *elements)
        self._transfer(entry, "to_host", started, what, out.nbytes)
        return out

    def write(self, buffer: Buffer, host: np.ndarray, what: str = "value") -> None:
        """Copy `host` (as many elements as the buffer has) into the buffer (a use)."""
        device = self.touch(buffer)
        started = time.perf_counter()
        self.allocator.write(device, np.ascontiguousarray(host))
        self._transfer(self._check(buffer), "to_device", started, what)

    def touch(self, buffer: Buffer) -> Any:
        """Mark the buffer used now (most recently used), upload it again if it was evicted,
        and return its device array."""
        entry = self._check(buffer)
        self._collect()
        if entry.device is None:
            self._reupload(entry)
        entry.last_use = next(self._clock)
        self._live.move_to_end(entry.number)
        return entry.device

    def free(self, buffer: Buffer) -> None:
        """Give the buffer's device memory back now (the handle may not be used again)."""
        entry = self._check(buffer)
        del self._live[entry.number]
        if entry.device is not None:
            self._release(entry, "freed")
        entry.host = None

    @contextlib.contextmanager
    def working_set(self, *buffers: Buffer) -> Iterator[list[Any]]:
        """The device arrays of `buffers`, all resident and none evicted while the block runs
        (a kernel's inputs and outputs: allocations inside the block evict other buffers)."""
        entries = [self._check(b) for b in buffers]
        for entry in entries:
            entry.pins += 1
        try:
            yield [self.touch(b) for b in buffers]
        finally:
            for entry in entries:
                entry.pins -= 1

    def launched(self, name: str, grid: tuple[int, ...], block: tuple[int, ...],
                 *buffers: Buffer) -> None:
        """Record a kernel launch (an event) and mark its buffers used."""
        for buffer in buffers:
            self.touch(buffer)
        if self.events.active:
            self.events.emit(E.Launch(self.device, name, tuple(grid), tuple(block),
                                      tuple(b.number for b in buffers)))

    def set_budget(self, budget: int | None) -> None:
        """Change the budget; evicts least recently used buffers at once to meet a smaller
        one (as far as unpinned buffers allow)."""
        self.budget = budget
        self._collect()
        if budget is not None and self.in_use > budget:
            self._make_room(self.in_use - budget, strict=False)

    def release_dead(self) -> int:
        """Give back every dead buffer; returns the bytes freed."""
        self._collect()
        freed = 0
        while self._dead:
            freed += self._free_dead()
        return freed

    @property
    def live_bytes(self) -> int:
        """Bytes of live buffers, on the device or evicted."""
        self._collect()
        return sum(e.nbytes for e in self._live.values())

    def describe(self) -> str:
        """`in use 1.0 KiB of budget 2.0 KiB (peak 1.5 KiB), 3 live buffers (1 evicted)`."""
        self._collect()
        budget = "no budget" if self.budget is None else f"budget {format_bytes(self.budget)}"
        evicted = sum(1 for e in self._live.values() if e.device is None)
        dead = f", {len(self._dead)} dead kept for reuse" if self._dead else ""
        return (f"{self.device}: in use {format_bytes(self.in_use)} of {budget} "
                f"(peak {format_bytes(self.peak)}), {len(self._live)} live buffers "
                f"({evicted} evicted){dead}")

    # ------------------------------------------------------------ the policy

    def _place(self, nbytes: int, make):
        """Run `make` (an allocation on the device of `nbytes`) once there is room."""
        if self.budget is not None and self.in_use + nbytes > self.budget:
            if self._pinned_bytes() + nbytes > self.budget:     # no eviction can help
                raise self._out_of_memory(nbytes, "even after evicting every buffer not in use")
            self._make_room(self.in_use + nbytes - self.budget, strict=True, asked=nbytes)
        while True:
            try:
                device = make()
                break
            except DeviceFull:
                if not self._make_room_for_one(nbytes):
                    raise self._out_of_memory(nbytes, "the device has no room") from None
        self.in_use += nbytes
        self.peak = max(self.peak, self.in_use)
        return device

    def _make_room(self, needed: int, strict: bool, asked: int = 0) -> None:
        """Free dead buffers, then evict the least recently used live ones, until `needed`
        bytes are freed; OutOfMemory (when `strict`) if even that is not enough."""
        freed = 0
        while freed < needed and self._dead:
            freed += self._free_dead()
        for entry in list(self._live.values()):
            if freed >= needed:
                break
            if entry.device is not None and entry.pins == 0:
                freed += self._evict(entry)
        if freed < needed and strict:
            raise self._out_of_memory(asked, "even after evicting every buffer not in use")

    def _make_room_for_one(self, nbytes: int) -> bool:
        """The device refused an allocation: free one dead or evict one live buffer."""
        if self._dead:
            self._free_dead()
            return True
        victim = next((e for e in self._live.values() if e.device is not None and e.pins == 0),
                      None)
        if victim is None:
            return False
        self._evict(victim)
        return True

    def _out_of_memory(self, nbytes: int, why: str) -> OutOfMemory:
        budget = self.budget if self.budget is not None else 0
        limit = (f"the memory budget of {format_bytes(self.budget)}" if self.budget is not None
                 else f"the memory of {self.device}")
        pinned = self._pinned_bytes()
        return OutOfMemory(f"a device buffer of {format_bytes(nbytes)} does not fit in {limit} "
                           f"({why}; {format_bytes(pinned)} in use by the running operation, "
                           f"{format_bytes(self.in_use)} on the device)",
                           requested=nbytes, available=budget)

    def _pinned_bytes(self) -> int:
        """Bytes on the device that the running operation uses (they cannot be evicted)."""
        return sum(e.nbytes for e in self._live.values() if e.pins and e.device is not None)

    def _reuse(self, shape: tuple[int, ...], dtype: np.dtype) -> _Entry | None:
        for number, entry in self._dead.items():
            if entry.shape == shape and entry.dtype == dtype:
                del self._dead[number]
                return entry
        return None

    def _evict(self, entry: _Entry) -> int:
        started = time.perf_counter()
        entry.host = self.allocator.download(entry.device)
        self._transfer(entry, "to_host", started)
        self.allocator.release(entry.device)
        entry.device = None
        self.in_use -= entry.nbytes
        self._emit(E.Evict, entry)
        return entry.nbytes

    def _reupload(self, entry: _Entry) -> None:
        host = entry.host
        assert host is not None
        started = time.perf_counter()
        entry.pins += 1                      # not chosen to make room for itself
        try:
            entry.device = self._place(entry.nbytes, lambda: self.allocator.upload(host))
        finally:
            entry.pins -= 1
        entry.host = None
        self._transfer(entry, "to_device", started)
        self._emit(E.Reupload, entry)

    def _free_dead(self) -> int:
        _, entry = self._dead.popitem(last=False)
        self._release(entry, "dead")
        return entry.nbytes

    def _release(self, entry: _Entry, reason: str) -> None:
        self.allocator.release(entry.device)
        entry.device = None
        self.in_use -= entry.nbytes
        if self.events.active:
            self.events.emit(E.Free(self.device, entry.number, entry.nbytes, self.in_use,
                                    reason))

    # ------------------------------------------------------------ handles

    def _handle(self, entry: _Entry) -> Buffer:
        entry.last_use = next(self._clock)
        entry.pins = 0
        self._live[entry.number] = entry
        handle = Buffer(self, entry)
        # the finalizer only appends to a list (it may run in any thread, at any time)
        weakref.finalize(handle, self._dropped.append, entry).atexit = False
        return handle

    def _collect(self) -> None:
        """Move the buffers whose handles were dropped to the dead list (evicted ones are
        simply forgotten: their host copy goes with them)."""
        while self._dropped:
            entry = self._dropped.pop()
            if self._live.pop(entry.number, None) is None:
                continue                     # freed explicitly before
            if entry.device is not None:
                self._dead[entry.number] = entry
            entry.host = None

    def _check(self, buffer: Buffer) -> _Entry:
        entry = buffer._entry
        if buffer._pool is not self or entry.number not in self._live:
            raise ValueError(f"{buffer!r} is not a live buffer of this pool")
        return entry

    def _emit(self, kind, entry: _Entry, **extra) -> None:
        if self.events.active:
            self.events.emit(kind(self.device, entry.number, entry.nbytes, self.in_use, **extra))

    def _transfer(self, entry: _Entry, direction: str, started: float,
                  what: str = "value", nbytes: int | None = None) -> None:
        if self.events.active:
            self.events.emit(E.Transfer(self.device, entry.number,
                                        entry.nbytes if nbytes is None else nbytes,
                                        direction, time.perf_counter() - started, what))
