"""The run-time side of the `cpu` target's `hist` kernels (FUSE-HIST, `passes/fuse_hist.py`;
their code is written by `codegen_hist.py`): how many partial histograms a launch combines
into, those partial histograms, and their merge into the result.

A hist kernel cuts its elements into `rows` chunks; chunk `c` combines its elements, in
order, into row `c` of `part` (a `rows × m` array). With one row, `part` is the result
itself: every element is combined in element order, as the interpreter combines them (so a
float sum, or any operator that is not an exact, commutative `+ * min max` on integers,
always runs that way). With more rows (integers only), the chunks run in parallel, each into
a row that starts at the operator's identity, and `merge` then combines the rows into the
result: integer `+ * min max` are associative, commutative and exact, so the result is the
same as in element order.

More rows cost `rows × m` more memory to fill and merge; with `m` buckets large against
the elements that costs more than the parallel chunks save: `rows` is 1 unless the
launch's work reaches `tiers.PARALLEL_FROM` and `m × threads <= MAX_BUCKETS_PER_ELEMENT ×
work` (measured: docs/stages.md, FUSE-HIST).
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from .library import OPERATORS, _combine as combine
from .tiers import PARALLEL_FROM

MAX_BUCKETS_PER_ELEMENT = 2.0     # partial histograms only while m × threads <= this × work

__all__ = ["OPERATORS", "combine", "hist_rows", "hist_partials", "hist_merge"]


def hist_rows(buckets: int, work: int, op: int, dtype: np.dtype) -> int:
    """How many partial histograms a launch combines into: 1 (element order) or the
    number of threads."""
    if op < 0 or np.dtype(dtype).kind not in "iu" or work < PARALLEL_FROM:
        return 1
    threads = numba.get_num_threads()
    if threads < 2 or buckets * threads > MAX_BUCKETS_PER_ELEMENT * work:
        return 1
    return threads


def hist_partials(out: np.ndarray, rows: int, op: int) -> np.ndarray:
    """The rows the chunks combine into: `out` itself (as one row) or `rows` rows of the
    operator's identity, each padded past a cache line of its own (two threads writing the
    8 buckets of rows in one cache line took twice as long as one thread alone). A kernel
    reads the first `out.shape[0]` buckets of a row."""
    if rows == 1:
        return out.reshape(1, -1)
    info = np.iinfo(out.dtype)
    identity = {0: 0, 1: 1, 2: info.max, 3: info.min}[op]
    line = max(1, 64 // out.dtype.itemsize)             # elements in a cache line
    width = -(-out.shape[0] // line) * line + line
    return np.full((rows, width), identity, dtype=out.dtype)


def hist_merge(out: np.ndarray, part: np.ndarray, op: int) -> None:
    """Every row of `part` combined into `out` (nothing to do for one row: it is `out`)."""
    if part.shape[0] > 1:
        _merge(out, part, op)


@njit(parallel=True, cache=True)
def _merge(out, part, op):
    for j in prange(out.shape[0]):      # a row's padding is never read
        acc = out[j]
        for r in range(part.shape[0]):
            acc = combine(op, acc, part[r, j])
        out[j] = acc
