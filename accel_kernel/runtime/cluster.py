"""Sequences on a Dask cluster: a sequence's steps become tasks on `distributed`'s workers.

A session names a cluster (`Session(cluster=...)`, `%cluster`, `accel run --workers N`):

    cluster = Cluster.parse("local 2")     # a LocalCluster of 2 worker processes
    cluster = Cluster.parse("tcp://10.0.0.5:8786")   # an existing Dask scheduler
    cluster.client                         # started on first use
    cluster.close()                        # with the session

`ClusterRun` runs one sequence (a `SeqLoop`, `ir/flat.py`) there. Every task gets the same
`Job` (scattered once: the executor's recipe, the loop, the values its body reads) and a range
of elements; it produces its chunk on the worker (an index range for `produce`, rows of a
streamed array the worker holds or maps from its file) and runs the lifted, fused body. The
host (this process) keeps one adaptive scheduler per worker (`runtime/scheduler.py`, thesis
5.4), and one task in flight per worker: a step's wall time is the task's round trip, so the
chunks grow until the task's overhead is paid for. A Python iterable is pulled here and its
rows sent with the task. The results come back in any order; the caller joins them in order
(`Partial`), except a fold whose accumulator holds arrays: its folds stay on the workers and
are joined there in a tree of combine tasks (`ClusterRun.combine`). Events: `SeqBegin` with the workers, a `Step` per task with the worker's name, a
`Compile` for each worker's first task, `SeqEnd`.

Faults: a worker that dies mid-run has its tasks run again elsewhere by Dask (a task is pinned
to its worker only as a preference). An accel error in a task reaches the caller as the same
error; when several tasks fail, the one of the earliest elements is raised once every task
before it has finished. Cancel cancels the outstanding tasks.

Dask is imported only when a cluster is used.
"""
from __future__ import annotations

import os
import threading
import time
import weakref
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ..lang.errors import (AccelError, ClusterError, InternalError, Interrupted,
                           OutOfMemory)
from . import events as E
from .scheduler import Sample, Scheduler
from .sequences import ceiling_for, check_one_element

_POLL = 0.05          # seconds between looks at the cancel token while tasks run


class Cluster:
    """A cluster named by the session: `local N` (a LocalCluster of N worker processes made
    on first use, closed with the session), a scheduler's address, or a `distributed.Client`
    the caller made (not closed here)."""

    def __init__(self, spec: Any, timeout: float = 10):
        self.spec = spec
        self.timeout = timeout           # seconds to reach a scheduler
        self.workers: int | None = None
        self.address: str | None = None
        self._client: Any = None
        self._local: Any = None
        self._shared: dict[int, tuple] = {}     # id(value) -> (weakref, digest, future)
        if isinstance(spec, str):
            words = spec.split()
            if len(words) == 2 and words[0] == "local" and words[1].isdigit() \
                    and int(words[1]) >= 1:
                self.workers = int(words[1])
            elif len(words) == 1 and "://" in words[0]:
                self.address = words[0]
            else:
                raise ValueError(f"a cluster is `local N` (N worker processes) or a Dask "
                                 f"scheduler's address like tcp://HOST:8786, not {spec!r}")
        else:
            self._client = spec                  # a distributed.Client

    @classmethod
    def parse(cls, spec: Any) -> "Cluster | None":
        """None for None, "" or "off"; else the cluster (ValueError for a bad spec)."""
        if spec is None or (isinstance(spec, str) and spec.strip() in ("", "off", "none")):
            return None
        return spec if isinstance(spec, Cluster) else cls(spec.strip()
                                                          if isinstance(spec, str) else spec)

    def describe(self) -> str:
        if self.workers is not None:
            state = "running" if self._client is not None else "started on first use"
            return f"local {self.workers} ({self.workers} worker processes, {state})"
        if self.address is not None:
            return f"{self.address} (a Dask scheduler)"
        address = getattr(getattr(self._client, "scheduler", None), "address", "?")
        return f"{address} (a distributed.Client)"

    @property
    def client(self) -> Any:
        """The Dask client, connected (and the local cluster started) on first use."""
        if self._client is None:
            try:
                from distributed import Client, LocalCluster
            except ImportError as error:           # pragma: no cover - a dependency
                raise ClusterError(f"Dask's `distributed` is not installed: {error}") from None
            try:
                if self.workers is not None:
                    threads = max(1, (os.cpu_count() or 1) // self.workers)
                    self._local = LocalCluster(
                        n_workers=self.workers, threads_per_worker=1, processes=True,
                        dashboard_address=":0", silence_logs=50,
                        # idle OpenMP threads that spin would take the core of the
                        # other worker (measured: 25 s a run spinning, 0.7 s passive)
                        env={"NUMBA_NUM_THREADS": str(threads),
                             "OMP_WAIT_POLICY": "PASSIVE"})
                    self._client = Client(self._local, set_as_default=False)
                else:
                    self._client = Client(self.address, timeout=self.timeout,
                                          set_as_default=False)
            except Exception as error:
                self.close()
                raise ClusterError(f"could not start the cluster {self.spec!r}: "
                                   f"{type(error).__name__}: {error}") from None
        return self._client

    def share(self, value: Any, digest: int) -> Any:
        """The future of `value` on every worker, scattered the first time it is shared and
        kept while the value lives (a global read by every run of a sequence crosses the
        network once). `digest` is a checksum of its contents: a numpy array the caller
        changed in place since is scattered again."""
        key = id(value)
        hit = self._shared.get(key)
        if hit is not None and hit[0]() is value and hit[1] == digest:
            return hit[2]
        future = self.client.scatter(value, hash=False, broadcast=True)
        try:
            ref = weakref.ref(value, lambda _, k=key: self._shared.pop(k, None))
        except TypeError:                        # not weakly referable: not kept
            return future
        self._shared[key] = (ref, digest, future)
        return future

    def worker_names(self) -> dict[str, str]:
        """The workers now: address -> name (`0`, `1`, ... on a local cluster), asked of the
        scheduler. Not `Client.scheduler_info()`: it returns the client's cached copy, which
        the client's own periodic update (made with no workers listed) can replace between
        that call's request and its return, so it sometimes lists no workers at all."""
        client = self.client
        try:
            info = client.sync(client.scheduler.identity, n_workers=-1)
        except TypeError:                        # distributed before 2025: all workers
            info = client.sync(client.scheduler.identity)
        named = {address: str(w.get("name", address))
                 for address, w in info.get("workers", {}).items()}
        return dict(sorted(named.items(), key=lambda item: (len(item[1]), item[1])))

    def close(self) -> None:
        """Close what this object started: its client and local cluster (a client the caller
        gave is left open; so is a scheduler named by its address, only our client to it is
        closed)."""
        self._shared.clear()
        if self.workers is None and self.address is None:
            return
        for thing in (self._client, self._local):
            try:
                if thing is not None:
                    thing.close()
            except Exception:                       # closing is best effort
                pass
        self._client = self._local = None


# ---------------------------------------------------------------- one sequence's tasks


@dataclass(frozen=True)
class Job:
    """What every task of one sequence shares (scattered to the workers once per run):
    `factory` makes the executor on the worker (`factory.executor(values)`), `op` the
    SeqLoop, `values` what its body reads (those the cluster keeps between runs, arrays,
    come to each task apart: `ClusterRun.arrays`), `state` the fold's initial (neutral)
    accumulator."""
    factory: Any
    op: Any
    values: dict
    state: list


@dataclass(frozen=True)
class Partial:
    """A task's result: the chunk [start, start + count)'s fold (`state`) and appended
    parts, the computation's seconds on the worker, the bytes it held, the seconds numba
    compiled there, and the worker (None `state` and parts: refused memory, try smaller)."""
    start: int
    count: int
    state: list | None
    parts: list | None
    seconds: float
    nbytes: int
    compiled: float
    worker: str
    address: str
    kept: bool = False                # its state stays on the worker (a tree of combines)


def summary(partial: Partial) -> Partial:
    """A task's result without its values (the host's copy when they stay on the worker)."""
    return replace(partial, state=None, parts=None, kept=True)


@dataclass
class _Lane:
    """A worker's side of the run: its own scheduler, its task in flight."""
    name: str
    scheduler: Scheduler
    steps: int = 0
    limit: int = 1 << 62
    compiled_once: bool = False


@dataclass
class _Flight:
    start: int
    count: int
    address: str
    submitted: float
    rows: list | None                 # a Python iterable's rows sent with the task
    kept: Any = None                  # the task whose result stays on the worker


@dataclass
class ClusterRun:
    """Runs a sequence's steps as tasks: `run()` gives the `Partial`s in element order.

    The tasks' functions get the job, then `arrays`: the values the cluster keeps on its
    workers between runs (`Cluster.share`; a dict of futures, which Dask gives the task as
    the values), then their own arguments.

    `pull(start, count)` gives `(rows, got)`: for each streamed source, the Python
    iterable's next rows as a list (None for a source the worker reads itself; `rows` None
    when no source is an iterable) and how many there were (fewer than `count` when the
    iterables ended); `task` is the worker's function (`task(job, start, count, rows) ->
    Partial`). With `combine` (`combine(job, left, right) -> Partial`, a fold whose
    accumulator holds arrays), the folds stay on the workers and are joined there in a tree
    of combine tasks, in element order: `combined` is the result (None: no element)."""
    cluster: Cluster
    job: Job
    length: int | None
    memory: Any
    task: Callable
    pull: Callable[[int, int], Any]
    cancel: Any = None
    target: str = ""
    line: int = 0
    number: int = 0
    combine: Callable | None = None
    arrays: dict = field(default_factory=dict)   # name -> (value, digest): kept on the workers
    partials: list = field(default_factory=list)
    combined: list | None = None
    _kept: dict = field(default_factory=dict)         # start -> the task keeping its fold
    _arrays: dict = field(default_factory=dict)       # name -> its future on the workers
    _wake: threading.Event = field(default_factory=threading.Event)   # a task finished
    _ceiling: int = 0

    def run(self) -> list[Partial]:
        client = self.cluster.client
        budget = self.memory.budget
        ceiling = self._ceiling = ceiling_for(budget)
        prototype = getattr(self.memory, "schedule", None) or Scheduler()
        workers = self.cluster.worker_names()
        if not workers:
            raise ClusterError(f"the cluster {self.cluster.spec!r} has no workers")
        lanes = {a: _Lane(n, prototype.fresh(ceiling=ceiling)) for a, n in workers.items()}
        events = self.memory.events
        began = time.perf_counter()
        events.emit(E.SeqBegin(self.number, self.length, prototype.describe(),
                               ceiling if budget is not None else None, self.target,
                               self.line, tuple(lane.name for lane in lanes.values())))
        # on every worker: a worker that dies takes no lone copy with it (a restarted one
        # fetches the job from another)
        shared = client.scatter(self.job, hash=False, broadcast=True)
        self._arrays = {name: self.cluster.share(v, digest)
                        for name, (v, digest) in self.arrays.items()}
        flights: dict[Any, _Flight] = {}
        retry: list[tuple[int, int]] = []       # ranges refused memory: run again, halved
        errors: list[tuple[int, AccelError]] = []
        state = {"next": 0, "ended": False, "steps": 0}
        idle = None                             # since when no worker could take a task
        try:
            while True:
                self._check_cancel(flights, client)
                self._fill(client, shared, lanes, flights, retry, errors, state)
                if not flights:
                    if not retry and not self._more(state, errors):
                        break
                    # elements are left but no live worker took them (a worker died and
                    # none is back yet): wait for one, never end the run short
                    idle = idle if idle is not None else time.perf_counter()
                    if time.perf_counter() - idle > self.cluster.timeout:
                        raise ClusterError(
                            f"the cluster {self.cluster.spec!r} has had no live worker for "
                            f"{self.cluster.timeout:g} s; the sequence stopped at element "
                            f"{retry[0][0] if retry else state['next']}")
                    self._wake.wait(_POLL)
                    continue
                idle = None
                self._wake.wait(_POLL)
                self._wake.clear()
                for future in [f for f in flights if f.done()]:
                    flight = flights.pop(future)
                    self._finished(future, flight, lanes, retry, errors, state, budget,
                                   ceiling, events)
            if errors:
                raise min(errors, key=lambda e: e[0])[1]
            if self.combine is not None and self._kept:
                self.combined = self._tree(client, shared)
        except BaseException as error:
            _cancel(client, flights)
            events.emit(E.SeqEnd(self.number, sum(p.count for p in self.partials),
                                 state["steps"], time.perf_counter() - began,
                                 "cancelled" if isinstance(error, Interrupted) else "error"))
            raise
        finally:
            # dropped, not cancelled: cancelling the job would cancel every task that
            # depends on it, which Dask's scheduler does not expect of finished ones
            self._kept.clear()
            shared.release()
        self.partials.sort(key=lambda p: p.start)
        _check_tiling(self.partials, state["next"])
        events.emit(E.SeqEnd(self.number, sum(p.count for p in self.partials), state["steps"],
                             time.perf_counter() - began, "done"))
        return self.partials

    def _tree(self, client: Any, shared: Any) -> list:
        """The folds kept on the workers joined pairwise, neighbours only (the operator is
        associative, not commutative), in log2(tasks) rounds of combine tasks."""
        level = [self._kept[start] for start in sorted(self._kept)]
        while len(level) > 1:
            pairs = [client.submit(self.combine, shared, self._arrays, a, b, pure=False)
                     for a, b in zip(level[::2], level[1::2])]
            level = pairs + level[len(pairs) * 2:]
        final = level[0]
        final.add_done_callback(lambda _: self._wake.set())
        while not final.done():
            self._check_cancel({}, client)
            self._wake.wait(_POLL)
            self._wake.clear()
        return final.result().state

    def _check_cancel(self, flights: dict, client: Any) -> None:
        if self.cancel is not None and self.cancel.is_set():
            _cancel(client, flights)
            raise Interrupted("evaluation interrupted")

    def _fill(self, client: Any, shared: Any, lanes: dict[str, _Lane], flights: dict,
              retry: list, errors: list, state: dict) -> None:
        """One task in flight on every worker while elements are left (none after an error
        but those before it, which may fail earlier)."""
        busy = {f.address for f in flights.values()}
        live = self._live(lanes)
        for address, lane in lanes.items():
            if address in busy or address not in live:
                continue
            if retry:
                start, count, rows = retry.pop(0)
            else:
                start = state["next"]
                if not self._more(state, errors):
                    continue
                count = min(lane.scheduler.next_size(), lane.limit)
                if self.length is not None:
                    count = min(count, self.length - start)
                rows, got = self.pull(start, count)
                if got < count:                  # the Python iterables ended
                    state["ended"] = True
                count = got
                state["next"] = start + count
                if count == 0:
                    continue
            pin = {"workers": [address], "allow_other_workers": True, "pure": False}
            future = client.submit(self.task, shared, self._arrays, start, count, rows, **pin,
                                   key=f"accel-seq{self.number}-{start}-{count}-{id(self)}")
            kept = None
            if self.combine is not None:         # the fold stays there: its summary comes
                kept, future = future, client.submit(summary, future, **pin)
            flights[future] = _Flight(start, count, address, time.perf_counter(), rows, kept)
            future.add_done_callback(lambda _: self._wake.set())

    def _more(self, state: dict, errors: list) -> bool:
        """Whether elements are left to hand out (none after an error but those before it,
        which may fail earlier)."""
        start = state["next"]
        return not (state["ended"] or (self.length is not None and start >= self.length)
                    or (errors and start >= min(e[0] for e in errors)))

    def _live(self, lanes: dict[str, _Lane]) -> set[str]:
        """The workers alive now; a new one (a restarted process) gets a lane."""
        try:
            now = self.cluster.worker_names()
        except Exception:
            return set(lanes)
        for address, name in now.items():
            if address not in lanes:
                prototype = next(iter(lanes.values())).scheduler
                lanes[address] = _Lane(name, prototype.fresh(ceiling=self._ceiling))
        return set(now)

    def _finished(self, future: Any, flight: _Flight, lanes: dict[str, _Lane], retry: list,
                  errors: list, state: dict, budget: Any, ceiling: int, events: Any) -> None:
        try:
            partial: Partial = future.result()
        except AccelError as error:
            errors.append((flight.start, error))
            return
        except Exception as error:
            if not _cluster_failure(error):     # a bug in the task: the session's boundary
                raise                           # makes it an InternalError
            raise ClusterError(f"a task of the sequence failed on the cluster: "
                               f"{type(error).__name__}: {error}") from None
        lane = lanes.get(partial.address) or lanes[flight.address]
        if partial.state is None and not partial.kept:   # refused memory: halves, again
            if flight.count == 1:
                raise OutOfMemory("one element of this sequence does not fit in memory")
            half = max(1, flight.count // 2)
            lane.limit = half
            rows = flight.rows
            retry[:0] = [(flight.start, half, _rows(rows, 0, half)),
                         (flight.start + half, flight.count - half,
                          _rows(rows, half, flight.count))]
            return
        wall = max(time.perf_counter() - flight.submitted, partial.seconds, 1e-9)
        if budget is not None and lane.steps == 0:
            check_one_element(partial.nbytes, partial.count, ceiling)
        if not lane.compiled_once:
            lane.compiled_once = True
            events.emit(E.Compile(self.number, lane.name, partial.compiled))
        # numba's compiling in a worker's first task is not the chunk's cost: left out
        seconds = max(partial.seconds - partial.compiled, 0.0)
        wall = max(wall - partial.compiled, seconds, 1e-9)
        rule = lane.scheduler.record(Sample(partial.count, seconds, wall, partial.nbytes))
        s = lane.scheduler.state
        events.emit(E.Step(self.number, state["steps"], partial.start, partial.count,
                           partial.nbytes, seconds, wall, s.utilisation or 0.0,
                           s.time_per_element or 0.0, s.size, rule, lane.name))
        lane.steps += 1
        state["steps"] += 1
        self.partials.append(partial)
        if flight.kept is not None:
            self._kept[partial.start] = flight.kept


def _cancel(client: Any, flights: dict) -> None:
    """Cancel the tasks in flight: each chunk's task (a summary task depending on it goes
    with it; Dask's scheduler expects a cancelled task's dependents to be wanted still)."""
    roots = [f.kept if f.kept is not None else future for future, f in flights.items()]
    if roots:
        client.cancel(roots)
    flights.clear()


def _cluster_failure(error: Exception) -> bool:
    """Whether a task failed for the cluster's sake (its worker died more often than Dask
    retries, a connection closed, a task cancelled by another client), not its own."""
    from concurrent.futures import CancelledError
    from distributed import KilledWorker
    return isinstance(error, (KilledWorker, CancelledError, OSError, TimeoutError))


def _check_tiling(partials: list[Partial], end: int) -> None:
    """The chunks' results, in element order, cover [0, end) once each: a run that lost or
    repeated a chunk must fail, never give a wrong fold."""
    at = 0
    for partial in partials:
        if partial.start != at:
            break
        at += partial.count
    if at != end:
        raise InternalError("cluster", f"a sequence's chunks do not cover its elements "
                            f"[0, {end}) once each: "
                            f"{[(p.start, p.count) for p in partials][:20]}")


def _rows(rows: list | None, first: int, last: int) -> list | None:
    """The rows [first, last) of each source's rows sent with a task (None: made there)."""
    return None if rows is None else [r if r is None else r[first:last] for r in rows]
