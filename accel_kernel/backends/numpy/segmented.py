"""Reductions, scans and filters, regular (along the innermost axis) and segmented.

An operator `\\a b -> a + b`, `(+)`, `min`... that `operators.binary_operator` recognises
runs as a numpy ufunc: `reduce`/`accumulate` along an axis, `reduceat` per segment. Any other
(associative) operator runs as a tree, vectorised across all segments at once:

- reduction: pair neighbours (positions 2j and 2j+1 of every segment) and combine them, one
  level per step, ceil(log2 longest segment) steps;
- scan: Hillis–Steele, `x[i] = x[i-d] op x[i]` for every position at least `d` into its
  segment, d = 1, 2, 4, ...

Both keep the order of operands, so associativity is enough (no commutativity needed). The
result is `ne op r`, which is the interpreter's left fold `((ne op x0) op x1) ...` for an
associative `op` (and exactly `r` when `ne` is the operator's identity).

Empty segments give `ne` wherever they are (first, last, in a run): `reduceat` alone is wrong
on them, so it only sees the non-empty segments. Floating-point sums may differ from the
interpreter's sequential sums in rounding (tree order, as on a GPU).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .operators import Operator
from .rows import first_leaf as _leaf
from .rows import mask_rows, segment_iota, sizes_of, sizes_to_offsets, tmap
from .scalar_code import take
from .values import Segs


def _full(shape: tuple[int, ...], ne: Any) -> Any:
    return tmap(lambda x: np.full(shape, x, dtype=np.asarray(x).dtype), ne)


def _put(out: Any, where: Any, value: Any) -> None:
    if isinstance(out, tuple):
        for o, v in zip(out, value):
            _put(o, where, v)
    else:
        out[where] = value


def _last_axis(value: Any, index: Any) -> Any:
    return tmap(lambda x: x[..., index], value)


# ---------------------------------------------------------------- regular (innermost axis)


def innermost(fn: Any, seg_fn: Any, arr: Any) -> Any:
    """`fn` along the last axis of a regular array; through the segment descriptors of an
    irregular one: `seg_fn(offsets, values)` on its innermost segments, `fn` on rows of
    regular values. (The IR gives `Reduce`/`Scan` regular arrays; this is for robustness.)"""
    leaf = _leaf(arr)
    if not isinstance(leaf, Segs):
        return fn(arr)
    values = tmap(lambda s: s.values, arr)
    inner = _leaf(values)
    if isinstance(inner, np.ndarray) and inner.ndim == 1:
        return seg_fn(leaf.offsets, values)
    return tmap(lambda v: Segs(leaf.offsets, v), innermost(fn, seg_fn, values))


def reduce_inner(op: Operator, ne: Any, arr: Any) -> Any:
    """Reduce along the last axis: rank r -> rank r-1 (a numpy scalar for r = 1)."""
    leaf = _leaf(arr)
    width = leaf.shape[-1]
    if width == 0:
        out = _full(leaf.shape[:-1], ne)
    else:
        ufunc = op.ufunc(arr)
        if ufunc is not None:
            reduced = ufunc.reduce(arr, axis=-1, dtype=arr.dtype)
        else:
            reduced = _tree_inner(op, arr)
        out = op.with_ne(ne, reduced)
    return tmap(lambda x: x[()] if isinstance(x, np.ndarray) and x.ndim == 0 else x, out)


def _tree_inner(op: Operator, x: Any) -> Any:
    while _leaf(x).shape[-1] > 1:
        width = _leaf(x).shape[-1]
        pairs = 2 * (width // 2)
        combined = op.combine(_last_axis(x, slice(0, pairs, 2)), _last_axis(x, slice(1, pairs, 2)))
        if width % 2:
            combined = tmap(lambda c, v: np.concatenate([c, v[..., -1:]], axis=-1), combined, x)
        x = combined
    return _last_axis(x, 0)


def scan_inner(op: Operator, ne: Any, arr: Any) -> Any:
    """Inclusive scan along the last axis."""
    leaf = _leaf(arr)
    if leaf.shape[-1] == 0:
        return tmap(lambda x: x.copy(), arr)
    ufunc = op.ufunc(arr)
    if ufunc is not None:
        return op.with_ne(ne, ufunc.accumulate(arr, axis=-1, dtype=arr.dtype))
    x, d = arr, 1
    while d < leaf.shape[-1]:
        step = op.combine(_last_axis(x, slice(None, -d)), _last_axis(x, slice(d, None)))
        x = tmap(lambda old, new: np.concatenate([old[..., :d], new], axis=-1), x, step)
        d *= 2
    return op.with_ne(ne, x)


# ---------------------------------------------------------------- segmented


def seg_reduce(op: Operator, ne: Any, offsets: np.ndarray, values: Any) -> Any:
    """One value per segment; `ne` for an empty segment."""
    sizes = sizes_of(offsets)
    ufunc = op.ufunc(values)
    if ufunc is not None and isinstance(values, np.ndarray) and len(values):
        return _seg_reduce_ufunc(ufunc, op, ne, offsets, sizes, values)
    leaf = _leaf(values)
    out = _full((len(sizes),) + leaf.shape[1:], ne)
    nonempty = np.flatnonzero(sizes > 0)
    if len(nonempty) == 0:
        return out
    reduced = take(_tree_segments(op, offsets, values), nonempty)
    _put(out, nonempty, op.with_ne(ne, reduced))
    return out


def _seg_reduce_ufunc(ufunc: np.ufunc, op: Operator, ne: Any, offsets: np.ndarray,
                      sizes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """`ufunc.reduceat` over the segments that start inside `values`, then `ne` written
    over every empty segment (reduceat gives an empty segment its neighbour's element; a
    trailing empty segment starts past the end, so those are not passed to it)."""
    inside = int(np.searchsorted(offsets[:-1], len(values), side="left"))
    out = np.empty((len(sizes),) + values.shape[1:], dtype=values.dtype)
    out[:inside] = op.with_ne(ne, ufunc.reduceat(values, offsets[:inside], axis=0,
                                                 dtype=values.dtype))
    out[inside:] = ne
    empty = sizes[:inside] == 0
    if empty.any():
        out[:inside][empty] = ne
    return out


def _tree_segments(op: Operator, offsets: np.ndarray, x: Any) -> Any:
    """Pairwise combination within every segment until each has at most one value; gives
    one entry per segment (garbage for empty segments)."""
    sizes = sizes_of(offsets)
    while len(sizes) and sizes.max() > 1:
        pos = segment_iota(offsets)
        seg_size = np.repeat(sizes, sizes)
        evens = np.flatnonzero(pos % 2 == 0)
        paired = evens[pos[evens] + 1 < seg_size[evens]]
        combined = op.combine(take(x, paired), take(x, paired + 1))
        new = tmap(lambda v: v.copy(), take(x, evens))
        _put(new, np.flatnonzero(pos[evens] + 1 < seg_size[evens]), combined)
        x, sizes = new, (sizes + 1) // 2
        offsets = sizes_to_offsets(sizes)
    starts = np.minimum(offsets[:-1], max(int(offsets[-1]) - 1, 0))
    return take(x, starts)


def seg_scan(op: Operator, ne: Any, offsets: np.ndarray, values: Any) -> Any:
    """Inclusive scan within every segment (same offsets)."""
    leaf = _leaf(values)
    if len(leaf) == 0:
        return tmap(lambda x: x.copy(), values)
    sizes = sizes_of(offsets)
    ufunc = op.ufunc(values)
    if ufunc is np.add and leaf.dtype.kind in "iu":
        # exact with wrap-around: the running total minus the total before the segment
        total = np.cumsum(values, axis=0, dtype=values.dtype)
        before = np.concatenate([np.zeros((1,) + total.shape[1:], total.dtype), total])
        return op.with_ne(ne, total - np.repeat(before[offsets[:-1]], sizes, axis=0))
    pos = segment_iota(offsets)
    x, d, longest = values, 1, int(sizes.max())
    while d < longest:
        idx = np.flatnonzero(pos >= d)
        step = op.combine(take(x, idx - d), take(x, idx))
        x = tmap(lambda v: v.copy(), x)
        _put(x, idx, step)
        d *= 2
    return op.with_ne(ne, x)


def seg_filter(keep: np.ndarray, offsets: np.ndarray, values: Any) -> tuple[np.ndarray, Any]:
    """Per segment, the values where `keep` holds: (new offsets, new values)."""
    counts = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(keep, out=counts[1:])
    return counts[offsets], mask_rows(values, keep)
