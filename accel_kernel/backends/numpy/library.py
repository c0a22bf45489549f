"""Whole-array library functions (`Library`) and their per-segment forms (`SegLibrary`).

Semantics and error messages are the interpreter's (`backends/interp/library.py`):
sorts are stable and ascending with NaN last, `scatter` and `reduce_by_index` ignore
out-of-range indices (for `scatter` the last write to an index wins), `rotate` turns left by
`k` modulo the length, `take`/`drop` need `0 <= n <= length`. Every function works on any
flat value (ndarray, Segs, tuples) through `rows`, without a Python loop over rows or
segments. Per-segment sorts are one stable `lexsort` on (segment id, key).

Argument conventions (`Library.args`, `SegLibrary.args`) are listed in docs/flat.md.
"""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ...ir.flat import ScalarFn
from ...lang.errors import SizeError
from ...lang.source import Span
from .rows import (check_lengths, concat_rows, gather_rows, length, mask_rows, regular_offsets,
                   row, segment_ids, segment_iota, sizes_of, sizes_to_offsets, slice_rows, tmap)
from .operators import Operator
from .segmented import _tree_segments, seg_filter
from .values import Segs


class Context(Protocol):
    def operator(self, fn: ScalarFn) -> Operator: ...
    def apply(self, fn: ScalarFn, args: list, n: int) -> Any: ...


def _leaves(value: Any) -> list[np.ndarray]:
    if isinstance(value, tuple):
        return [leaf for part in value for leaf in _leaves(part)]
    if not isinstance(value, np.ndarray) or value.ndim != 1:
        raise ValueError("sort keys must be scalars or tuples of scalars")
    return [value]


def sort_order(keys: Any, segments: np.ndarray | None = None) -> np.ndarray:
    """The stable ascending order of `keys` (lexicographic over tuple components, NaN last),
    within each segment when `segments` (non-decreasing ids) is given."""
    columns = _leaves(keys)
    if segments is not None:
        columns = [segments, *columns]
    if len(columns) == 1:
        return np.argsort(columns[0], kind="stable")
    return np.lexsort(columns[::-1])


def _keys(ctx: Context, fns: tuple[ScalarFn, ...], xs: Any) -> Any:
    return ctx.apply(fns[0], [xs], length(xs))


def _count(name: str, n: Any, size: int, span: Span | None) -> int:
    if not 0 <= int(n) <= size:
        raise SizeError(f"{name}: {int(n)} is out of range for an array of length {size}", span)
    return int(n)


def _nonempty(name: str, xs: Any, span: Span | None) -> int:
    n = length(xs)
    if n == 0:
        raise SizeError(f"{name} of an empty array", span)
    return n


def _transpose(xss: Any) -> Any:
    if isinstance(xss, tuple):
        return tuple(_transpose(x) for x in xss)
    if isinstance(xss, np.ndarray):
        if xss.shape[0] == 0:
            return np.empty((0, 0) + xss.shape[2:], dtype=xss.dtype)
        return np.swapaxes(xss, 0, 1)
    rows, width = len(xss), int(xss.offsets[1]) if len(xss) else 0
    flat = (xss.offsets[:-1][None, :] + np.arange(width, dtype=np.int64)[:, None]).reshape(-1)
    return Segs(regular_offsets(width, rows), gather_rows(xss.values, flat))


def _check_rectangular(xss: Any, span: Span | None) -> None:
    while isinstance(xss, tuple):
        xss = xss[0]
    if isinstance(xss, Segs) and len(xss):
        sizes = sizes_of(xss.offsets)
        bad = np.flatnonzero(sizes != sizes[0])
        if len(bad):
            k = int(bad[0])
            raise SizeError(f"transpose: ragged array (row 0 has {int(sizes[0])} elements, "
                            f"row {k} has {int(sizes[k])})", span)


def _scatter(dest: Any, indices: np.ndarray, values: Any, span: Span | None) -> Any:
    check_lengths("scatter", [len(indices), length(values)], span)
    n = length(dest)
    choice = np.arange(n, dtype=np.int64)
    valid = np.flatnonzero((indices >= 0) & (indices < n))
    choice[indices[valid]] = n + valid      # repeated indices: the last assignment stays
    return gather_rows(concat_rows(dest, values), choice)


def _reduce_by_index(ctx: Context, fn: ScalarFn, dest: Any, indices: np.ndarray, values: Any,
                     span: Span | None) -> Any:
    check_lengths("reduce_by_index", [len(indices), length(values)], span)
    op = ctx.operator(fn)
    valid = np.flatnonzero((indices >= 0) & (indices < length(dest)))
    out = tmap(lambda d: np.array(d, copy=True), dest)
    ufunc = op.ufunc(dest)
    if ufunc is not None:
        ufunc.at(out, indices[valid], values[valid])     # in index order, unbuffered
        return out
    # a general operator: a stable sort by bucket, then one segmented tree per bucket
    order = valid[np.argsort(indices[valid], kind="stable")]
    buckets, starts = np.unique(indices[order], return_index=True)
    offsets = np.append(starts, len(order)).astype(np.int64)
    partial = _tree_segments(op, offsets, gather_rows(values, order))
    combined = op.combine(gather_rows(out, buckets), partial)

    def put(o: np.ndarray, c: np.ndarray) -> None:
        o[buckets] = c
    tmap(put, out, combined)
    return out


def library(ctx: Context, name: str, args: list, fns: tuple[ScalarFn, ...],
            span: Span | None) -> Any:
    """`name` applied to whole flat arrays outside any map."""
    if name == "sort":
        return gather_rows(args[0], sort_order(args[0]))
    if name == "sort_by":          # (xs) with the key in fns, or (keys, xs)
        xs = args[-1]
        keys = args[0] if len(args) == 2 else _keys(ctx, fns, xs)
        return gather_rows(xs, sort_order(keys))
    if name == "scatter":
        return _scatter(args[0], args[1], args[2], span)
    if name == "reduce_by_index":  # (dest, ne, is, vs), op in fns
        return _reduce_by_index(ctx, fns[0], args[0], args[2], args[3], span)
    if name == "concat":
        return concat_rows(args[0], args[1])
    if name == "transpose":
        _check_rectangular(args[0], span)
        return _transpose(args[0])
    if name == "reverse":
        return gather_rows(args[0], np.arange(length(args[0]) - 1, -1, -1, dtype=np.int64))
    if name == "rotate":
        k, xs = args
        n = length(xs)
        if n == 0:
            return xs
        return gather_rows(xs, (np.arange(n, dtype=np.int64) + int(k) % n) % n)
    if name in ("take", "drop"):
        k = _count(name, args[0], length(args[1]), span)
        n = length(args[1])
        return slice_rows(args[1], 0, k) if name == "take" else slice_rows(args[1], k, n)
    if name == "interleave":
        xs, ys = args
        n = length(xs)
        check_lengths("interleave", [n, length(ys)], span)
        pairs = np.stack([np.arange(n), n + np.arange(n)], axis=1).reshape(-1)
        return gather_rows(concat_rows(xs, ys), pairs)
    if name == "head":
        _nonempty("head", args[0], span)
        return row(args[0], 0)
    if name == "last":
        return row(args[0], _nonempty("last", args[0], span) - 1)
    if name == "flatten":
        return tmap(_flatten, args[0])
    if name == "partition":        # (xs), predicate in fns
        keep = _keys(ctx, fns, args[0]).astype(bool)
        return mask_rows(args[0], keep), mask_rows(args[0], ~keep)
    if name == "length":
        return np.int64(length(args[0]))
    raise NotImplementedError(f"library function `{name}` on the numpy target")


def _flatten(xss: Any) -> Any:
    if isinstance(xss, Segs):
        return xss.values
    return xss.reshape((xss.shape[0] * xss.shape[1],) + xss.shape[2:])


# ---------------------------------------------------------------- per segment


def _per_segment(arg: Any, segments: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(arg, dtype=np.int64), (segments,))


def _first_bad(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad)[0])


def seg_library(ctx: Context, name: str, offsets: np.ndarray, values: Any, args: list,
                fns: tuple[ScalarFn, ...], span: Span | None) -> Any:
    """`name` applied to every segment of (offsets, values): (new offsets, new values), or
    one value per segment for `head` and `last`."""
    sizes = sizes_of(offsets)
    segments = len(sizes)
    if name in ("sort", "sort_by"):
        if name == "sort":
            keys = values
        else:
            keys = args[0] if args else _keys(ctx, fns, values)
        return offsets, gather_rows(values, sort_order(keys, segment_ids(offsets)))
    if name == "reverse":
        ends = (offsets[:-1] + offsets[1:] - 1)[segment_ids(offsets)]
        return offsets, gather_rows(values, ends - np.arange(len(ends), dtype=np.int64))
    if name == "rotate":
        seg = segment_ids(offsets)
        shift = np.mod(_per_segment(args[0], segments), np.maximum(sizes, 1))
        inside = np.mod(segment_iota(offsets) + shift[seg], np.maximum(sizes, 1)[seg])
        return offsets, gather_rows(values, offsets[:-1][seg] + inside)
    if name in ("take", "drop"):
        counts = _per_segment(args[0], segments)
        bad = (counts < 0) | (counts > sizes)
        if np.any(bad):
            k = _first_bad(bad)
            _count(name, counts[k], int(sizes[k]), span)
        pos, seg = segment_iota(offsets), segment_ids(offsets)
        keep = pos < counts[seg] if name == "take" else pos >= counts[seg]
        return seg_filter(keep, offsets, values)
    if name in ("head", "last"):
        if np.any(sizes == 0):
            raise SizeError(f"{name} of an empty array", span)
        return gather_rows(values, offsets[:-1] if name == "head" else offsets[1:] - 1)
    if name in ("concat", "interleave"):
        return _seg_merge(name, offsets, values, args[0], args[1], span)
    if name == "scatter":          # (is offsets, is values, vs offsets, vs values)
        return _seg_scatter(offsets, values, *args, span=span)
    raise NotImplementedError(f"per-segment `{name}` on the numpy target")


def _seg_merge(name: str, offsets: np.ndarray, values: Any, other_offsets: np.ndarray,
               other_values: Any, span: Span | None) -> tuple[np.ndarray, Any]:
    """Row-wise `concat` or `interleave` of two irregular arrays."""
    check_lengths("map2", [len(offsets) - 1, len(other_offsets) - 1], span)
    a, b = sizes_of(offsets), sizes_of(other_offsets)
    if name == "interleave" and np.any(a != b):
        k = _first_bad(a != b)
        check_lengths("interleave", [int(a[k]), int(b[k])], span)
    new_offsets = sizes_to_offsets(a + b)
    pos_a, seg_a = segment_iota(offsets), segment_ids(offsets)
    pos_b, seg_b = segment_iota(other_offsets), segment_ids(other_offsets)
    if name == "concat":
        dest_a = new_offsets[:-1][seg_a] + pos_a
        dest_b = new_offsets[:-1][seg_b] + a[seg_b] + pos_b
    else:
        dest_a = new_offsets[:-1][seg_a] + 2 * pos_a
        dest_b = new_offsets[:-1][seg_b] + 2 * pos_b + 1
    source = np.empty(int(new_offsets[-1]), dtype=np.int64)
    source[dest_a] = np.arange(len(dest_a))
    source[dest_b] = len(dest_a) + np.arange(len(dest_b))
    return new_offsets, gather_rows(concat_rows(values, other_values), source)


def _seg_scatter(offsets: np.ndarray, dest: Any, index_offsets: np.ndarray,
                 indices: np.ndarray, value_offsets: np.ndarray, values: Any,
                 span: Span | None) -> tuple[np.ndarray, Any]:
    ni, nv = sizes_of(index_offsets), sizes_of(value_offsets)
    if np.any(ni != nv):
        k = _first_bad(ni != nv)
        check_lengths("scatter", [int(ni[k]), int(nv[k])], span)
    seg = segment_ids(index_offsets)
    sizes = sizes_of(offsets)
    valid = np.flatnonzero((indices >= 0) & (indices < sizes[seg]))
    total = int(offsets[-1])
    choice = np.arange(total, dtype=np.int64)
    choice[offsets[:-1][seg[valid]] + indices[valid]] = total + valid
    return offsets, gather_rows(concat_rows(dest, values), choice)

