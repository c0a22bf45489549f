"""The executor's side of a sequence run on a Dask cluster (`runtime/cluster.py`).

    run_on_cluster(executor, stmt, op, length, sources, state) -> the SeqLoop's value

On this process: the `Job` every task shares is made (the target's recipe for an executor,
`Executor.worker_factory()`; the loop; the values its body reads, a memory-mapped streamed
array as a reference to its file), the Python iterables streamed are pulled here and their
rows sent with the tasks, and the tasks' results are joined in element order: a fold's
partial accumulators with the loop's `combine` (the fold's operator, so each task folds its
chunk from the neutral element), appended parts concatenated.

On a worker: `chunk_task` makes the executor from the job (the `cpu` target's compiled module
is loaded once per worker process, from files in the kernel cache: numba's disk cache is
shared by the processes of a machine), makes the chunk (an index range for `produce`, rows of
a streamed array) and runs one step of the body (`Executor.step`).
"""
from __future__ import annotations

import zlib
from collections import ChainMap
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...ir import flat as F
from ...lang.errors import ClusterError, OutOfMemory
from ...passes.flatten.prune import block_reads
from ...runtime.cluster import ClusterRun, Job, Partial
from ...runtime.deep import on_deep_stack
from ...runtime.memory import Memory
from ...runtime.sequences import HostStream, sequence_number
from .costs import Counters
from .rows import slice_rows
from .values import Segs


@dataclass(frozen=True)
class NumpyFactory:
    """The `numpy` target's executor, on a worker."""

    def executor(self, values: dict) -> Any:
        from .executor import Executor
        return Executor(ChainMap(dict(values)), Counters(), None, Memory())

    def compile_seconds(self) -> float:
        return 0.0


@dataclass(frozen=True)
class Mapped:
    """A streamed array memory-mapped from a file, sent as the file's name and place: a
    worker maps the rows it needs itself (they do not cross the network)."""
    filename: str
    offset: int
    dtype: str
    shape: tuple[int, ...]

    def open(self) -> np.ndarray:
        return np.memmap(self.filename, dtype=np.dtype(self.dtype), mode="r",
                         offset=self.offset, shape=self.shape)


@dataclass(frozen=True)
class Iterable:
    """A streamed Python iterable: its rows come with each task, of type `elem_type`."""
    elem_type: Any


def run_on_cluster(executor: Any, stmt: F.Stmt, op: F.SeqLoop, length: int | None,
                   sources: list[Any], state: list[Any]) -> tuple[list, list[list]]:
    """The steps run as tasks (as `Executor._steps_here` runs them here): the final state
    and each appended part's chunks, in element order."""
    from .executor import _chunk_rows, _no_rows_left
    factory = executor.worker_factory()
    if factory is None:
        raise ClusterError(f"sequences of the `{executor.target}` target do not run on a "
                           f"cluster yet: `%cluster off`, or the cpu target", stmt.span)
    values = _values(executor, op, sources)
    arrays = {n: (v, digest(v)) for n, v in values.items() if _keepable(v)}
    job = Job(factory, op, {n: v for n, v in values.items() if n not in arrays}, state)

    def pull(start: int, count: int) -> tuple[list | None, int]:
        if not any(isinstance(v, HostStream) for v in sources):
            return None, count
        rows = [v.take(count) if isinstance(v, HostStream) else None for v in sources]
        got = _chunk_rows([r for r in rows if r is not None], count, start, length,
                          stmt.span)
        return rows, got

    line = stmt.span.line if stmt.span is not None else 0
    folds_arrays = any(not isinstance(p.rep, F.ScalarRep) for p in op.params)
    run = ClusterRun(executor.memory.cluster, job, length, executor.memory, chunk_task, pull,
                     executor.cancel, executor.target, line, sequence_number(),
                     combine_task if folds_arrays else None, arrays)
    partials = run.run()
    _no_rows_left(sources, sum(p.count for p in partials), stmt.span)
    if run.combined is not None:               # joined on the workers
        state = [executor.coerce(v, p.rep) for v, p in zip(run.combined, op.params)]
    elif op.params:
        for partial in partials:
            state = executor.combine(op, state, partial.state)
    return state, [[p.parts[k] for p in partials] for k in range(op.appended)]


def _values(executor: Any, op: F.SeqLoop, sources: list[Any]) -> dict:
    """What the loop's body reads from outside it: the streamed values (a memory-mapped
    array as its file, a Python iterable as its row type) and every variable its body and
    combine read (the names bound inside are not in the executor's scope)."""
    names = block_reads(op.body) | (block_reads(op.combine) if op.combine else set())
    names -= F.bound_inside(op)
    values = {n: executor.env[n] for n in names if n in executor.env}
    for (source, _), value in zip(op.streams, sources):
        if isinstance(value, HostStream):
            values[source.name] = Iterable(value.elem_type)
        else:
            values[source.name] = _mapped(value) or value
    return values


def _mapped(value: Any) -> Mapped | None:
    """A reference to the file of a contiguous array mapped from it read-only (None for
    any other value)."""
    if not isinstance(value, np.ndarray) or not value.flags.c_contiguous:
        return None
    base: Any = value
    while base is not None and not isinstance(base, np.memmap):
        base = getattr(base, "base", None)
    if base is None or getattr(base, "filename", None) is None or base.mode != "r":
        return None
    offset = int(base.offset) + (value.ctypes.data - base.ctypes.data)
    return Mapped(str(base.filename), offset, value.dtype.str, tuple(value.shape))


def _keepable(value: Any) -> bool:
    """Whether the cluster keeps the value on its workers between runs (an array or an
    irregular array: not a scalar, a tuple, a file reference or a row type)."""
    return isinstance(value, (np.ndarray, Segs))


def digest(value: Any) -> int:
    """A checksum of an array's contents (CRC-32, gigabytes a second): whether a value the
    cluster keeps was changed in place since."""
    if isinstance(value, Segs):
        return zlib.crc32(digest(value.values).to_bytes(4, "little"), digest(value.offsets))
    return zlib.crc32(np.ascontiguousarray(value).reshape(-1).view(np.uint8))


def chunk_task(job: Job, arrays: dict, start: int, count: int, rows: list | None) -> Partial:
    """On a worker: one step of the sequence over [start, start + count)."""
    from distributed import get_worker
    worker = get_worker()
    name = str(worker.name) if worker.name is not None else worker.address
    return _step(job, {**job.values, **arrays}, start, count, rows, name, worker.address)


@on_deep_stack
def _step(job: Job, values: dict, start: int, count: int, rows: list | None, name: str,
          address: str) -> Partial:
    from .boundary import rows_to_flat
    before = job.factory.compile_seconds()
    executor = job.factory.executor(values)
    op: F.SeqLoop = job.op
    chunks = []
    for k, (source, chunk) in enumerate(op.streams):
        value = values[source.name]
        if isinstance(value, Iterable):
            assert rows is not None and rows[k] is not None
            chunks.append(executor.coerce(rows_to_flat(rows[k], value.elem_type), chunk.rep))
        else:
            whole = value.open() if isinstance(value, Mapped) else value
            chunks.append(slice_rows(whole, start, start + count))
    state = [executor.coerce(v, p.rep) for v, p in zip(job.state, op.params)]
    with np.errstate(all="ignore"), executor:
        try:
            out, seconds, nbytes = executor.step(op, start, count, state, chunks)
        except OutOfMemory:
            if count == 1:
                raise
            return Partial(start, count, None, None, 0.0, 0, 0.0, name, address)
    compiled = job.factory.compile_seconds() - before
    return Partial(start, count, out[:len(op.params)], out[len(op.params):], seconds, nbytes,
                   compiled, name, address)


def combine_task(job: Job, arrays: dict, left: Partial, right: Partial) -> Partial:
    """On a worker: two neighbouring folds joined with the fold's operator."""
    return _combine(job, {**job.values, **arrays}, left, right)


@on_deep_stack
def _combine(job: Job, values: dict, left: Partial, right: Partial) -> Partial:
    executor = job.factory.executor(values)
    op: F.SeqLoop = job.op
    with np.errstate(all="ignore"), executor:
        state = executor.combine(op, [executor.coerce(v, p.rep) for v, p in
                                      zip(left.state, op.params)],
                                 [executor.coerce(v, p.rep) for v, p in
                                  zip(right.state, op.params)])
    return replace(left, count=left.count + right.count, state=state, parts=[])
