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

from collections import ChainMap
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...ir import flat as F
from ...lang.errors import AccelError, ClusterError, OutOfMemory
from ...passes.flatten.prune import block_reads
from ...runtime.cluster import ClusterRun, Job, Partial
from ...runtime.deep import on_deep_stack
from ...runtime.memory import Memory
from ...runtime.sequences import HostStream, sequence_number
from .costs import Counters
from .rows import slice_rows


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
                   sources: list[Any], state: list[Any]) -> Any:
    """The SeqLoop's value (as `Executor._seqloop` gives it), its steps run as tasks."""
    from .executor import _chunk_rows, _no_rows_left, concat_all
    factory = executor.worker_factory()
    if factory is None:
        raise ClusterError(f"sequences of the `{executor.target}` target do not run on a "
                           f"cluster yet: `%cluster off`, or the cpu target", stmt.span)
    values = _values(executor, op, sources)
    job = Job(factory, op, values, state)

    def pull(start: int, count: int) -> tuple[list | None, int]:
        if not any(isinstance(v, HostStream) for v in sources):
            return None, count
        rows = [v.take(count) if isinstance(v, HostStream) else None for v in sources]
        got = _chunk_rows([r for r in rows if r is not None], count, start, length,
                          stmt.span)
        return rows, got

    line = stmt.span.line if stmt.span is not None else 0
    arrays = any(not isinstance(p.rep, F.ScalarRep) for p in op.params)
    run = ClusterRun(executor.memory.cluster, job, length, executor.memory, chunk_task, pull,
                     executor.cancel, executor.target, line, sequence_number(),
                     combine_task if arrays else None)
    try:
        partials = run.run()
        _no_rows_left(sources, sum(p.count for p in partials), stmt.span)
    except AccelError as error:
        if error.span is None:
            error.span = stmt.span           # the runtime's own errors: at the consumer
        raise
    if run.combined is not None:               # joined on the workers
        state = [executor.coerce(v, p.rep) for v, p in zip(run.combined, op.params)]
    elif op.params:
        for partial in partials:
            state = executor.combine(op, state, partial.state)
    reps = [t.rep for t in stmt.targets[len(op.params):]]
    results = state + [concat_all([p.parts[k] for p in partials], rep)
                       for k, rep in enumerate(reps)]
    return results[0] if len(results) == 1 else tuple(results)


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


def chunk_task(job: Job, start: int, count: int, rows: list | None) -> Partial:
    """On a worker: one step of the sequence over [start, start + count)."""
    from distributed import get_worker
    worker = get_worker()
    name = str(worker.name) if worker.name is not None else worker.address
    return _step(job, start, count, rows, name, worker.address)


@on_deep_stack
def _step(job: Job, start: int, count: int, rows: list | None, name: str,
          address: str) -> Partial:
    from .boundary import rows_to_flat
    before = job.factory.compile_seconds()
    executor = job.factory.executor(job.values)
    op: F.SeqLoop = job.op
    chunks = []
    for k, (source, chunk) in enumerate(op.streams):
        value = job.values[source.name]
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


def combine_task(job: Job, left: Partial, right: Partial) -> Partial:
    """On a worker: two neighbouring folds joined with the fold's operator."""
    return _combine(job, left, right)


@on_deep_stack
def _combine(job: Job, left: Partial, right: Partial) -> Partial:
    executor = job.factory.executor(job.values)
    op: F.SeqLoop = job.op
    with np.errstate(all="ignore"), executor:
        state = executor.combine(op, [executor.coerce(v, p.rep) for v, p in
                                      zip(left.state, op.params)],
                                 [executor.coerce(v, p.rep) for v, p in
                                  zip(right.state, op.params)])
    return replace(left, count=left.count + right.count, state=state, parts=[])
