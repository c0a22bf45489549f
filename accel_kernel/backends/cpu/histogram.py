"""The run-time side of the `cpu` target's `hist` kernels (FUSE-HIST, `passes/fuse_hist.py`;
their code is written by `codegen_hist.py`): how many partial histograms a launch combines
into, those partial histograms, and their merge into the result.

A hist kernel cuts its elements into `rows` chunks of consecutive elements; chunk `c`
combines its elements, in order, into row `c` of `part` (a `rows × m` array). With one row,
`part` is the result itself: every element is combined in element order, as the interpreter
combines them (any operator other than `+ * min max` always runs that way). With more rows,
the chunks run in parallel, each into a row that starts at the operator's identity, and
`merge` then combines the rows into the result in chunk order, so every bucket's operands
keep their order and only their grouping changes, as in a chunked `reduce`: integer `+ * min
max` give the same result as in element order; a float `+` or `*` may differ in its last
bits, as a `reduce (+)` over floats does (docs/stages.md, FUSE-HIST). Float `min max` keep
one row (`\\a b -> min b a` and `merge`'s `min` differ on equal zeros).

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

# the identity of `+ * min max` (the operator codes of `OPERATORS`) for a dtype; a float `+`
# starts at -0.0: -0.0 + x is x for every x, -0.0 included (0.0 + -0.0 is 0.0)
IDENTITIES = {
    0: lambda t: -0.0 if np.dtype(t).kind == "f" else 0,
    1: lambda t: 1,
    2: lambda t: np.iinfo(t).max,
    3: lambda t: np.iinfo(t).min,
}


def hist_rows(buckets: int, work: int, op: int, dtype: np.dtype) -> int:
    """How many partial histograms a launch combines into: 1 (element order) or, for integer
    `+ * min max` and float `+ *`, the number of threads."""
    kind = np.dtype(dtype).kind
    if op < 0 or kind not in "iuf" or (kind == "f" and op > 1) or work < PARALLEL_FROM:
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
    identity = IDENTITIES[op](out.dtype)
    line = max(1, 64 // out.dtype.itemsize)             # elements in a cache line
    width = -(-out.shape[0] // line) * line + line
    return np.full((rows, width), identity, dtype=out.dtype)


def hist_merge(out: np.ndarray, part: np.ndarray, op: int) -> None:
    """Every row of `part` combined into `out` (nothing to do for one row: it is `out`); in
    parallel over the buckets from `tiers.PARALLEL_FROM` of them (k-means' 16 buckets took
    5 ms through a thread pool's start when the other core was busy)."""
    if part.shape[0] > 1:
        merge = _merge if out.shape[0] * part.shape[0] >= PARALLEL_FROM else _merge_seq
        merge(out, part, op)


@njit(parallel=True, cache=True)
def _merge(out, part, op):
    for j in prange(out.shape[0]):      # a row's padding is never read
        out[j] = _merged(out, part, op, j)


@njit(cache=True)       # its own function: numba's cache does not key on `parallel`
def _merge_seq(out, part, op):
    for j in range(out.shape[0]):
        out[j] = _merged(out, part, op, j)


@njit(inline="always")
def _merged(out, part, op, j):
    acc = out[j]
    for r in range(part.shape[0]):
        acc = combine(op, acc, part[r, j])
    return acc
