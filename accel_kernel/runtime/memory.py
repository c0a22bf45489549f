"""The memory manager: every buffer a compiled target allocates goes through `Memory.alloc`,
which knows the bytes in use, the peak and how many buffers were made (a buffer's bytes are
returned when Python drops it). It also carries what every target run shares about memory:
the session's event stream (`events`, `runtime/events.py`), the memory budget (`budget`,
bytes or None; it bounds device memory and a sequence's chunks, not these host buffers), the
device pools made so far (`devices`: name -> `runtime.budget.DevicePool`, made by a device
back end on first use) and how sequences size their chunks (`schedule`,
`runtime/scheduler.py`).

An allocation larger than the memory available is refused before it is made
(`check_allocation`: `errors.OutOfMemory` with the bytes asked for and the bytes available),
so a huge size is an accel error, not a `MemoryError` halfway through or the operating
system's OOM killer. The back ends call it wherever they know a size before allocating
(`Memory.alloc`, the numpy target's `iota`/`replicate`, the interpreter's library)."""
from __future__ import annotations

import os
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..lang.errors import OutOfMemory
from ..lang.source import Span
from .events import EventStream

CHECK_ABOVE = 1 << 24     # smaller allocations are not checked (reading the limit costs time)


def available_bytes() -> int:
    """The memory the system can still give this process: `MemAvailable` of /proc/meminfo
    (Linux), else the free physical pages, else a very large number (no limit known)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def check_allocation(nbytes: int, what: str, span: Span | None = None) -> None:
    """Raise OutOfMemory, before allocating, when `nbytes` exceed the memory available.
    `what` names the allocation in the message (`iota`, `a buffer of 10 i64`, ...)."""
    if nbytes < CHECK_ABOVE:
        return
    available = available_bytes()
    if nbytes > available:
        raise OutOfMemory(f"{what} needs {format_bytes(nbytes)} but only "
                          f"{format_bytes(available)} are available", span,
                          requested=nbytes, available=available)


def out_of_memory(span: Span | None = None, requested: int = 0) -> OutOfMemory:
    """The accel error for a `MemoryError` that escaped (the size was not known before)."""
    available = available_bytes()
    asked = f"{format_bytes(requested)} " if requested else ""
    return OutOfMemory(f"an allocation of {asked}failed: out of memory "
                       f"({format_bytes(available)} available)", span,
                       requested=requested, available=available)


def format_bytes(n: int) -> str:
    """`12 B`, `3.0 KiB`, `1.5 GiB`, up to EiB (sizes of a few exabytes do occur here)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024:
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} EiB"


def _adaptive() -> Any:
    from .scheduler import Scheduler
    return Scheduler()


@dataclass
class Memory:
    in_use: int = 0          # bytes of live buffers
    peak: int = 0
    allocations: int = 0
    allocated: int = 0       # bytes ever allocated
    budget: int | None = None                     # device memory budget (bytes)
    events: EventStream = field(default_factory=EventStream)
    devices: dict = field(default_factory=dict)   # device name -> runtime.budget.DevicePool
    schedule: Any = field(default_factory=_adaptive)  # sequences' runtime.scheduler.Scheduler
    cluster: Any = None        # where sequences run: a runtime.cluster.Cluster, None: here

    def set_budget(self, budget: int | None) -> None:
        """Set (None: remove) the device budget, for the pools made later and those made."""
        self.budget = budget
        for pool in self.devices.values():
            pool.set_budget(budget)

    def alloc(self, shape: tuple[int, ...] | int, dtype) -> np.ndarray:
        """A new uninitialised buffer (the compiled kernel writes every element). Raises
        OutOfMemory (without a span: the caller knows the statement) when it cannot fit."""
        dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        nbytes = int(np.dtype(dtype).itemsize)
        for d in dims:
            nbytes *= max(int(d), 0)
        check_allocation(nbytes, f"a buffer of shape {tuple(int(d) for d in dims)}")
        try:
            buffer = np.empty(shape, dtype=dtype)
        except MemoryError:
            raise out_of_memory(requested=nbytes) from None
        nbytes = buffer.nbytes
        self.in_use += nbytes
        self.allocated += nbytes
        self.allocations += 1
        self.peak = max(self.peak, self.in_use)
        weakref.finalize(buffer, self._release, nbytes)
        return buffer

    def _release(self, nbytes: int) -> None:
        self.in_use -= nbytes
