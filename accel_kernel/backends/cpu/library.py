"""Library functions of the `cpu` target over flat numeric arrays: what `Library` and
`SegLibrary` statements run on the host as numba loops (`@njit`, cached on disk) instead of
the numpy target's whole-array numpy calls.

    library(ctx, name, args, fns, span) -> value
    seg_library(ctx, name, offsets, values, args, fns, span) -> (offsets, values) | value

Same arguments and results as the numpy target's `library` / `seg_library`
(backends/numpy/library.py), which defines the semantics and runs everything not matched here:

- `sort` of a rank-1 array (per segment and whole): short segments (up to SHORT_SEGMENT
  elements) by a stable insertion sort, all in parallel; each longer one in place by numpy's
  `ndarray.sort`, whose SIMD sorts are 3 to 5 times faster than numba's `np.sort` (measured on
  AVX-512: 20 ms against 55 ms for the 963k values of benchmarks/ `sort_rows`), with a
  Python loop over the long segments only (half a microsecond each). That sort is not stable
  and its AVX-512 version may even flip the sign of a zero: with NaN last, what compares
  equal and still differs is -0.0 against 0.0, and NaNs (sign, payload), so the zeros and the
  NaNs of each long segment are then written back in their original order.
- `sort_by` per segment with rank-1 numeric keys: a stable `argsort` per segment in parallel.
- `reduce_by_index` with `+`, `*`, `min` or `max` over rank-1 numeric arrays: one sequential
  loop in index order, as the interpreter combines (float sums depend on the order). It runs
  at memory speed (under a nanosecond an element); per-thread partial histograms measured
  slower on two cores, for small and large destinations alike. (A `reduce_by_index` whose
  indices a kernel makes is usually not here: FUSE-HIST combines it in that kernel,
  `codegen_hist.py`.)
- `scatter` of rank-1 arrays: a copy of the destination, then the writes in order (the last
  write to an index wins); out-of-range indices ignored.
- `offsets_of_sizes`: a segment descriptor's offsets from its sizes (`sizes_to_offsets`, run
  by the driver's executor) in one sequential pass that also finds a negative size and an
  i64 total that wraps (from PARALLEL_SIZES sizes, two parallel passes over chunks); the
  numpy target's four passes (a test for negative sizes, a float sum, a cumulative sum
  into a zeroed array) took 1.5 to 2 ms of a Pythagorean triples call's 19 ms for the 500k
  pairs' sizes.

Lengths are checked here, before any compiled code runs, with the numpy target's messages.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import get_num_threads, njit, prange

from ...ir.flat import ScalarFn
from ...lang.source import Span
from ..numpy import library as numpy_library
from ..numpy.operators import binary_operator
from ..numpy.rows import check_lengths, gather_rows, length

NUMERIC = "biuf"                 # numpy kinds of bool, integers and floats
OPERATORS = {"+": 0, "*": 1, "min": 2, "max": 3}
SHORT_SEGMENT = 32               # sorted by insertion in numba; longer ones by numpy's sort


def library(ctx: Any, name: str, args: list, fns: tuple[ScalarFn, ...],
            span: Span | None) -> Any:
    """`name` on whole flat arrays: compiled when the arguments allow, else numpy's."""
    if name == "sort" and _numeric(args[0]):
        return sort_segments(np.array([0, len(args[0])], dtype=np.int64), _flat(args[0]))
    if name == "scatter":
        dest, indices, values = args
        check_lengths("scatter", [len(indices), length(values)], span)
        if _numeric(dest, "iuf") and _indices(indices) and _same(values, dest):
            return _scatter(dest.copy(), _flat(indices), _flat(values))
    if name == "reduce_by_index":         # (dest, ne, is, vs), op in fns
        dest, _, indices, values = args
        check_lengths("reduce_by_index", [len(indices), length(values)], span)
        op = binary_operator(fns[0])
        if (op in OPERATORS and _numeric(dest, "iuf") and _indices(indices)
                and _same(values, dest)):
            return reduce_by_index(OPERATORS[op], dest, _flat(indices), _flat(values))
    return numpy_library.library(ctx, name, args, fns, span)


def seg_library(ctx: Any, name: str, offsets: np.ndarray, values: Any, args: list,
                fns: tuple[ScalarFn, ...], span: Span | None) -> Any:
    """`name` on every segment of (offsets, values): compiled when they allow, else numpy's."""
    whole = (len(offsets) > 0 and int(offsets[0]) == 0
             and int(offsets[-1]) == length(values))
    if name == "sort" and whole and _numeric(values):
        return offsets, sort_segments(_flat(offsets), _flat(values))
    if name == "sort_by" and whole:
        keys = args[0] if args else ctx.apply(fns[0], [values], length(values))
        if _numeric(keys):
            return offsets, gather_rows(values, _argsort_segments(_flat(offsets), _flat(keys)))
        args, fns = [keys], ()          # computed once
    return numpy_library.seg_library(ctx, name, offsets, values, args, fns, span)


# ---------------------------------------------------------------- which arguments are compiled


def _numeric(value: Any, kinds: str = NUMERIC) -> bool:
    return isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in kinds


def _indices(value: Any) -> bool:
    return _numeric(value, "iu")


def _same(value: Any, like: np.ndarray) -> bool:
    return isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype == like.dtype


def _flat(array: np.ndarray) -> np.ndarray:
    """A C-contiguous array, so that each function is compiled for one layout only."""
    return np.ascontiguousarray(array)


# ---------------------------------------------------------------- sort


def sort_segments(offsets: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Every segment of the rank-1 `values` sorted (stable, ascending, NaN last)."""
    out = values.copy()
    _insertion_sort_segments(offsets, out, SHORT_SEGMENT)
    long = np.flatnonzero(np.diff(offsets) > SHORT_SEGMENT)
    for start, end in zip(offsets[long].tolist(), offsets[long + 1].tolist()):
        out[start:end].sort()
    if values.dtype.kind == "f" and len(long):
        _restore_ties(offsets, long, out, values)
    return out


@njit(parallel=True, cache=True)
def _insertion_sort_segments(offsets, out, longest):
    """The segments of `out` no longer than `longest` sorted in place, stably, NaN last."""
    for s in prange(len(offsets) - 1):
        start, end = offsets[s], offsets[s + 1]
        if end - start > longest:
            continue
        for k in range(start + 1, end):
            x = out[k]
            j = k
            while j > start:
                y = out[j - 1]
                if x < y or (y != y and x == x):
                    out[j] = y
                    j -= 1
                else:
                    break
            out[j] = x


@njit(cache=True)
def _first_not_below(part, strict):
    """The first position of the sorted `part` whose element is not `< 0` (not `<= 0` when
    `strict`); NaN is neither, so it counts as after every number."""
    lo, hi = 0, len(part)
    while lo < hi:
        mid = (lo + hi) // 2
        if part[mid] < 0 or (strict and part[mid] == 0):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _first_nan(part):
    lo, hi = 0, len(part)
    while lo < hi:
        mid = (lo + hi) // 2
        if part[mid] == part[mid]:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(parallel=True, cache=True)
def _restore_ties(offsets, segments, out, values):
    """The given segments of `out` are those of `values` sorted by numpy, which may reorder
    elements that compare equal (and its AVX-512 sort writes every zero as -0.0): write the
    zeros and the NaNs back as they come in `values`."""
    for k in prange(len(segments)):
        start, end = offsets[segments[k]], offsets[segments[k] + 1]
        part, original = out[start:end], values[start:end]
        lo, hi = _first_not_below(part, False), _first_not_below(part, True)
        if lo < hi:
            for x in original:
                if x == 0:
                    part[lo] = x
                    lo += 1
        nan = _first_nan(part)
        if nan < len(part):
            for x in original:
                if x != x:
                    part[nan] = x
                    nan += 1


@njit(parallel=True, cache=True)
def _argsort_segments(offsets, keys):
    """The flat positions of every segment in the stable ascending order of its keys."""
    order = np.empty(len(keys), dtype=np.int64)
    for s in prange(len(offsets) - 1):
        start, end = offsets[s], offsets[s + 1]
        order[start:end] = start + np.argsort(keys[start:end], kind="mergesort")
    return order


# ---------------------------------------------------------------- reduce_by_index and scatter


def reduce_by_index(op: int, dest: np.ndarray, indices: np.ndarray,
                    values: np.ndarray) -> np.ndarray:
    """`dest` combined at `indices` with `values` by operator `op` (a value of OPERATORS)."""
    out = dest.copy()
    _reduce_by_index(out, indices, values, op)
    return out


@njit(inline="always")
def _combine(op, a, b):
    """`a op b`; `min` and `max` as numpy's: NaN propagates, equal operands give `b`."""
    if op == 0:
        return a + b
    if op == 1:
        return a * b
    if op == 2:
        return a if a < b or a != a else b
    return a if a > b or a != a else b


@njit(cache=True)
def _reduce_by_index(out, indices, values, op):
    m = len(out)
    for k in range(len(indices)):
        i = indices[k]
        if 0 <= i < m:
            out[i] = _combine(op, out[i], values[k])


@njit(cache=True)
def _scatter(out, indices, values):
    m = len(out)
    for k in range(len(indices)):
        i = indices[k]
        if 0 <= i < m:
            out[i] = values[k]
    return out


SIZES_OK, SIZE_NEGATIVE, SIZES_WRAP = 0, 1, 2       # what `offsets_of_sizes` found
I64_MAX = np.int64(2**63 - 1)
PARALLEL_SIZES = 1 << 16          # sizes from which the two-pass parallel scan runs


def offsets_of_sizes(sizes: np.ndarray) -> tuple[np.ndarray, int]:
    """The offsets of an i64 array of sizes (`0`, then the running sums), and SIZES_OK; or
    SIZE_NEGATIVE / SIZES_WRAP (the offsets then unfinished) for the caller to report."""
    offsets = np.empty(len(sizes) + 1, dtype=np.int64)
    if len(sizes) < PARALLEL_SIZES:
        return offsets, int(_offsets_of_sizes(sizes, offsets))
    chunks = 4 * get_num_threads()
    return offsets, int(_offsets_of_sizes_parallel(sizes, offsets, chunks))


@njit(cache=True, nogil=True)
def _offsets_of_sizes(sizes, offsets):
    total = 0
    offsets[0] = 0
    for i in range(len(sizes)):
        size = sizes[i]
        if size < 0:
            return SIZE_NEGATIVE
        if size > I64_MAX - total:    # the sum would wrap (tested before: LLVM takes a
            return SIZES_WRAP         # signed sum of non-negative values to stay so)
        total += size
        offsets[i + 1] = total
    return SIZES_OK


@njit(parallel=True, cache=True)
def _offsets_of_sizes_parallel(sizes, offsets, chunks):
    """As `_offsets_of_sizes`, in two passes over chunks: each chunk's total (and whether
    it has a negative size), then each chunk's running sums from the totals before it."""
    n = len(sizes)
    totals = np.empty(chunks, np.int64)
    found = np.empty(chunks, np.int64)
    for c in prange(chunks):
        total, status = 0, SIZES_OK
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            size = sizes[i]
            if size < 0:
                status = SIZE_NEGATIVE
                break
            if size > I64_MAX - total:
                status = SIZES_WRAP
                break
            total += size
        totals[c], found[c] = total, status
    carry = 0
    for c in range(chunks):
        if found[c] != SIZES_OK:
            return found[c]
        total = totals[c]
        totals[c] = carry
        if total > I64_MAX - carry:
            return SIZES_WRAP
        carry += total
    offsets[0] = 0
    for c in prange(chunks):
        total = totals[c]
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            total += sizes[i]
            offsets[i + 1] = total
    return SIZES_OK
