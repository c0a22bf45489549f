"""Running a sequence step by step (the host's side of a `SeqLoop`, `ir/flat.py`).

`SequenceRun` is what every target's executor uses: it asks the scheduler
(`runtime/scheduler.py`) for each step's chunk size, times the steps, keeps each chunk within
the bytes the memory budget allows, and writes every decision to the event stream
(`SeqBegin`, one `Step` per step, `SeqEnd`). It knows nothing of values: the executor slices
the streamed values, runs the step's body and says how long its computation took and how
many bytes the step held.

    run = SequenceRun(length, memory, target="cpu", line=3)
    for start, count in run:                  # stops after `length` elements
        ...                                   # run the body on [start, start + count)
        run.done(seconds=..., nbytes=...)     # what the step measured

A step refused memory before it ran (`OutOfMemory`, e.g. the segment descriptor of a chunk
whose inner loops would be billions long) is tried again with half its elements, and no
later step is larger (`shrink`): so a sequence without a budget still fits the machine.

The ceiling on a chunk's bytes: half the budget (`%budget`; the other half is for the
consumer's result and the inputs), else `DEFAULT_CHUNK_BYTES`. With a budget, a sequence
whose single element holds more than the ceiling is the accel error `OutOfMemory`.

Host iterables (a Python generator given to `stream`) are pulled here too: `HostStream`
wraps one, `take(count)` gives its next rows, and the sequence ends when it runs out.
"""
from __future__ import annotations

import ctypes
import itertools
import mmap
import time
from typing import Any, Iterator

import numpy as np

from ..lang.errors import OutOfMemory, StreamError
from . import events as E
from .memory import format_bytes
from .scheduler import Sample, Scheduler, fits, single_element_too_big

DEFAULT_CHUNK_BYTES = 256 << 20     # the chunk's bytes when no budget is set
_numbers = itertools.count(1)


def sequence_number() -> int:
    """The next sequence's number in the session's events (`SeqBegin.sequence`)."""
    return next(_numbers)


def check_one_element(nbytes: int, elements: int, ceiling: int) -> None:
    """The accel error `OutOfMemory` when one element of a first step that held `nbytes`
    for `elements` is larger than the budget's ceiling on a chunk."""
    if not fits(nbytes / elements, ceiling):
        raise OutOfMemory(single_element_too_big(nbytes // elements, ceiling),
                          requested=nbytes // elements, available=ceiling)


def ceiling_for(budget: int | None) -> int:
    """The most bytes one chunk may hold under the budget."""
    return DEFAULT_CHUNK_BYTES if budget is None else max(1, budget // 2)


class SequenceRun:
    """One sequence's steps: sizes from the scheduler, samples back to it, events out."""

    def __init__(self, length: int | None, memory: Any, target: str = "", line: int = 0,
                 scheduler: Scheduler | None = None):
        self.length = length
        self.events: E.EventStream = memory.events
        self.budget: int | None = memory.budget
        self.ceiling = ceiling_for(self.budget)
        prototype = scheduler or getattr(memory, "schedule", None) or Scheduler()
        self.scheduler = prototype.fresh(ceiling=self.ceiling)
        self.number = sequence_number()
        self.start = 0
        self.steps = 0
        self.began = time.perf_counter()
        self._step_began = self.began
        self._count = 0
        self.limit = 1 << 62                # the largest step the memory allowed so far
        self.outcome = "error"
        self.events.emit(E.SeqBegin(self.number, length, self.scheduler.describe(),
                                    self.ceiling if self.budget is not None else None,
                                    target, line))

    def __iter__(self) -> Iterator[tuple[int, int]]:
        while self.length is None or self.start < self.length:
            count = min(self.scheduler.next_size(), self.limit)
            if self.length is not None:
                count = min(count, self.length - self.start)
            self._count = count
            yield self.start, count

    def shrink(self, count: int) -> int:
        """A step of `count` elements was refused memory before it ran (`OutOfMemory`): it
        is tried again with half, and no later step is larger (the `limit`)."""
        self.limit = self._count = max(1, count // 2)
        return self.limit

    def done(self, seconds: float, nbytes: int, elements: int | None = None) -> None:
        """The step ran `elements` (default: the chunk's size) in `seconds` of computation,
        holding `nbytes`; the wall time is measured from the end of the step before."""
        now = time.perf_counter()
        count = self._count if elements is None else elements
        wall = max(now - self._step_began, seconds, 1e-9)
        if self.budget is not None and self.steps == 0:
            check_one_element(nbytes, count, self.ceiling)
        rule = self.scheduler.record(Sample(count, seconds, wall, nbytes))
        state = self.scheduler.state
        self.events.emit(E.Step(self.number, self.steps, self.start, count, nbytes, seconds,
                                wall, state.utilisation or 0.0,
                                state.time_per_element or 0.0, state.size, rule))
        self.start += count
        self.steps += 1
        self._step_began = time.perf_counter()

    def finish(self, outcome: str) -> None:
        self.outcome = outcome
        self.events.emit(E.SeqEnd(self.number, self.start, self.steps,
                                  time.perf_counter() - self.began, outcome))


class HostStream:
    """A Python iterable streamed into a sequence, pulled lazily: each step takes the
    rows it needs (`take`). `length` is known when the iterable has `len`. A HostStream
    is consumed once: a second run raises a clear error."""

    def __init__(self, iterable: Any, elem_type: Any = None):
        self.elem_type = elem_type        # the accel type of a row (set by the boundary)
        self.length: int | None = len(iterable) if hasattr(iterable, "__len__") else None
        self._iterator = iter(iterable)
        self._pending: list[Any] = []
        self.taken = 0
        self.ended = False

    def peek(self) -> Any:
        """The first row, without consuming it (to find the element type)."""
        if not self._pending:
            self._pending.append(next(self._iterator))
        return self._pending[0]

    def take(self, count: int) -> list[Any]:
        """Up to `count` next rows (fewer when the iterable ends). StreamError when the
        iterable raises."""
        rows = self._pending[:count]
        del self._pending[:count]
        while len(rows) < count and not self.ended:
            try:
                rows.append(next(self._iterator))
            except StopIteration:
                self.ended = True
            except Exception as error:          # the user's iterable failed
                self.ended = True
                raise StreamError(f"the Python iterable streamed here raised "
                                  f"{type(error).__name__}: {error}") from None
        self.taken += len(rows)
        return rows

    def unread(self, rows: list[Any]) -> None:
        """Give back rows taken but not used (a step tried again with fewer)."""
        self._pending[:0] = rows
        self.taken -= len(rows)

    def __iter__(self) -> Iterator[Any]:
        """Every row left (the interpreter reads a sequence whole)."""
        while rows := self.take(1024):
            yield from rows

    def started(self) -> bool:
        """Whether an earlier run took rows from it (it cannot be streamed again)."""
        return self.taken > 0 or self.ended


# ---------------------------------------------------------------- memory-mapped inputs

_MADV_DONTNEED = getattr(mmap, "MADV_DONTNEED", 4)
_PAGE = mmap.PAGESIZE


def release_pages(array: Any) -> None:
    """Give back the pages of a chunk of a memory-mapped array once its step has run, so a
    stream over a file larger than memory holds only the chunk in flight (the pages are
    read again from the file if used again). Only for read-only or shared mappings: a
    copy-on-write mapping's pages may hold changes."""
    if not isinstance(array, np.ndarray) or array.nbytes < _PAGE or not _mapped(array):
        return
    start = array.ctypes.data
    first = -(-start // _PAGE) * _PAGE                  # whole pages inside the chunk only
    last = (start + array.nbytes) // _PAGE * _PAGE
    if last > first:
        try:
            _libc().madvise(ctypes.c_void_p(first), ctypes.c_size_t(last - first),
                            _MADV_DONTNEED)
        except (OSError, AttributeError):                # not Linux: nothing to give back
            pass


def _mapped(array: np.ndarray) -> bool:
    """Whether the array's memory is a file mapping whose pages can be dropped: a view of
    a read-only or shared `np.memmap` (`np.load(..., mmap_mode="r")`, `%load`)."""
    base: Any = array
    while base is not None:
        if isinstance(base, np.memmap):
            return getattr(base, "mode", None) in ("r", "r+", "readonly", "readwrite")
        base = getattr(base, "base", None)
    return False


_LIBC: Any = None


def _libc() -> Any:
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC
