"""Where a parallel kernel's threads run (Linux): `team()` around a launch of a parallel
variant (`tiers.Launcher`) keeps the other threads of the launching thread's team off the
core the launching thread runs on.

numba's `omp` threading layer gives each thread that launches parallel kernels a team of its
own (GNU OpenMP: the launching thread and `threads - 1` pool threads, asleep between
launches). The `cpu` target launches from its worker thread (`runtime/deep.py`), which the
calling thread wakes for every call; Linux then puts the worker on either core, sometimes
the one its pool thread last ran on, and on waking that pool thread (its last core busy,
the other idle) left it queued behind the worker for the whole kernel: the two threads of
a two-thread kernel shared one core, the kernel took twice its time, and the process's CPU
time equalled the wall time (the segmented sum, 10M values, in the benchmark harness's
rounds on this 2-core machine, 2026-11-25: 7 to 13 of 20 calls at 12 to 15 ms against
7.5 to 8.5 ms; `/proc/<pid>/task/<tid>/stat` showed the worker and its pool thread on one
core in each slow call and on two in each fast one). With `team()`: 0 or 1 of 20.

The pool threads are the threads that the launching thread's first parallel launch of a
compiled variant made (the process's threads after it, less those before and Python's own
threads); `tiers.Launcher` runs a parallel variant compiled only when tiered (the
default), so with `ACCEL_KERNELS=parallel` a thread whose first launch compiled finds no
pool. Before each later launch the pool threads may run on any core of the process's
mask but the launching thread's current one (one `sched_setaffinity` each, a few
microseconds, only when that core changed). Where that cannot be done (no
`sched_setaffinity` or `sched_getcpu`: not Linux; one core; a threading layer whose pool
existed before: `workqueue`, `tbb`) it does nothing.
The threads a pool thread starts inherit its mask (GNU OpenMP's pool threads start none).
"""
from __future__ import annotations

import ctypes
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator


def _sched_getcpu():
    try:
        return ctypes.CDLL(None, use_errno=True).sched_getcpu
    except (OSError, AttributeError):
        return None


_CURRENT_CPU = _sched_getcpu()
SUPPORTED = _CURRENT_CPU is not None and hasattr(os, "sched_setaffinity")


@dataclass
class _Team:
    pool: frozenset[int]                   # the pool threads' ids (none: do nothing)
    cores: frozenset[int]                  # the launching thread's mask when it was found
    kept_off: int | None = None            # the core the pool was last kept off


# a launching thread's native id -> its team; each thread adds only its own entry
_TEAMS: dict[int, _Team] = {}


def _threads() -> set[int]:
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except OSError:
        return set()


@contextmanager
def team(compiled: bool = True) -> Iterator[None]:
    """Around one launch of a parallel variant on this thread (see the module's docstring).
    `compiled`: the variant is compiled for these arguments (a launch that compiles may
    start other threads, which must not be taken for the pool: it finds nothing)."""
    if not SUPPORTED:
        yield
        return
    me = threading.get_native_id()
    found = _TEAMS.get(me)
    if found is None and not compiled:
        yield
        return
    if found is None:
        import numba
        numba.get_num_threads()            # the threading layer started (its threads made)
        before = _threads()
        yield
        python = {t.native_id for t in threading.enumerate()}
        pool = frozenset(_threads() - before - python)
        _TEAMS[me] = _Team(pool, frozenset(os.sched_getaffinity(0)))
        return
    _keep_off(found, _CURRENT_CPU())
    yield


def _keep_off(team: _Team, core: int) -> None:
    """Let the team's pool threads run on any of its cores but `core`."""
    if not team.pool or core == team.kept_off or core < 0:
        return
    others = team.cores - {core}
    if not others:
        return
    try:
        for thread in team.pool:
            os.sched_setaffinity(thread, others)
    except OSError:                        # the thread ended (its launching thread did)
        team.pool = frozenset()
        return
    team.kept_off = core
