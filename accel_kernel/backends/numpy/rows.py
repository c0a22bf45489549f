"""Whole-array operations on the rows of any flat value (`ndarray`, `Segs`, tuples of them).

A "row" is an element along the outermost axis: a scalar of a rank-1 array, a row of a
regular matrix, a segment of a `Segs`. Every function here works on all three kinds without
a Python loop over rows or segments; nested `Segs` recurse once per nesting level.

Segment descriptors follow `ir/flat.py`: int64 offsets of length s+1, offsets[0] == 0.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...ir.flat import Regular, Rep, ScalarRep, Segmented, TupleRep
from ...lang.errors import AccelIndexError, SizeError
from ...lang.source import Span
from ...runtime.sequences import HostStream
from .values import DTYPES, FlatValue, Segs


def tmap(fn: Callable[..., Any], *values: Any) -> Any:
    """`fn` applied to the leaves of values that share one tuple structure."""
    if isinstance(values[0], tuple):
        return tuple(tmap(fn, *parts) for parts in zip(*values))
    return fn(*values)


def first_leaf(value: Any) -> Any:
    while isinstance(value, tuple):
        value = value[0]
    return value


def length(value: FlatValue) -> int:
    """The number of rows."""
    value = first_leaf(value)
    if isinstance(value, Segs):
        return len(value.offsets) - 1
    return int(value.shape[0])


# ---------------------------------------------------------------- segment descriptors


def sizes_of(offsets: np.ndarray) -> np.ndarray:
    return offsets[1:] - offsets[:-1]


def sizes_to_offsets(sizes: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets


def segment_ids(offsets: np.ndarray) -> np.ndarray:
    """The segment of every flat position."""
    return np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), sizes_of(offsets))


def segment_iota(offsets: np.ndarray) -> np.ndarray:
    """The position of every flat position within its segment."""
    total = int(offsets[-1])
    return np.arange(total, dtype=np.int64) - np.repeat(offsets[:-1], sizes_of(offsets))


def regular_offsets(rows: int, width: int) -> np.ndarray:
    return np.arange(rows + 1, dtype=np.int64) * width


# ---------------------------------------------------------------- selecting rows


def row(value: FlatValue, i: int) -> Any:
    """Row i (a numpy scalar of a rank-1 array)."""
    if isinstance(value, tuple):
        return tuple(row(v, i) for v in value)
    if isinstance(value, Segs):
        return slice_rows(value.values, int(value.offsets[i]), int(value.offsets[i + 1]))
    return value[i]


def slice_rows(value: FlatValue, lo: int, hi: int) -> FlatValue:
    if isinstance(value, tuple):
        return tuple(slice_rows(v, lo, hi) for v in value)
    if isinstance(value, Segs):
        offsets = value.offsets[lo:hi + 1]
        return Segs(offsets - offsets[0],
                    slice_rows(value.values, int(offsets[0]), int(offsets[-1])))
    return value[lo:hi]


def gather_rows(value: FlatValue, indices: np.ndarray) -> FlatValue:
    """Rows `indices` (in range) in that order. A regular value accepts indices of any shape;
    a Segs needs rank-1 indices."""
    if isinstance(value, tuple):
        return tuple(gather_rows(v, indices) for v in value)
    if isinstance(value, Segs):
        sizes = sizes_of(value.offsets)[indices]
        offsets = sizes_to_offsets(sizes)
        starts = value.offsets[:-1][indices]
        flat = np.repeat(starts - offsets[:-1], sizes) + np.arange(offsets[-1], dtype=np.int64)
        return Segs(offsets, gather_rows(value.values, flat))
    return value[indices]


def mask_rows(value: FlatValue, keep: np.ndarray) -> FlatValue:
    if isinstance(value, np.ndarray):
        return value[keep]
    return gather_rows(value, np.flatnonzero(keep))


def concat_rows(a: FlatValue, b: FlatValue) -> FlatValue:
    """The rows of a, then the rows of b."""
    if isinstance(a, tuple):
        return tuple(concat_rows(x, y) for x, y in zip(a, b))
    if isinstance(a, Segs) or isinstance(b, Segs):
        a, b = as_segs(a), as_segs(b)
        offsets = np.concatenate([a.offsets, b.offsets[1:] + a.offsets[-1]])
        return Segs(offsets, concat_rows(a.values, b.values))
    if a.shape[1:] != b.shape[1:]:
        return concat_rows(as_segs(a), as_segs(b))
    return np.concatenate([a, b])


def tile_rows(value: FlatValue, n: int) -> FlatValue:
    """All the rows, n times over."""
    if isinstance(value, tuple):
        return tuple(tile_rows(v, n) for v in value)
    if isinstance(value, Segs):
        total = value.offsets[-1]
        ends = value.offsets[1:][None, :] + (np.arange(n, dtype=np.int64) * total)[:, None]
        offsets = np.concatenate([np.zeros(1, dtype=np.int64), ends.reshape(-1)])
        return Segs(offsets, tile_rows(value.values, n))
    return np.tile(value, (n,) + (1,) * (value.ndim - 1))


def replicate(value: Any, n: int) -> FlatValue:
    """n copies of `value` as the rows of a new array: a broadcast view when regular."""
    if isinstance(value, tuple):
        return tuple(replicate(v, n) for v in value)
    if isinstance(value, Segs):
        return Segs(regular_offsets(n, len(value)), tile_rows(value, n))
    array = np.asarray(value)
    return np.broadcast_to(array, (n,) + array.shape)


# ---------------------------------------------------------------- representations


def flat_values(value: np.ndarray | Segs) -> np.ndarray:
    """The elements of the rows of a ragged or regular array (rank >= 2), in order: a
    regular array's reshaped (a view when contiguous), without making its offsets."""
    if isinstance(value, Segs):
        return value.values
    if value.ndim < 2:
        raise ValueError("a rank-1 array has no segments")
    return value.reshape((value.shape[0] * value.shape[1],) + value.shape[2:])


def as_segs(value: np.ndarray | Segs) -> Segs:
    """A regular array (rank >= 2) seen as segments of equal length."""
    if isinstance(value, Segs):
        return value
    values = flat_values(value)             # a rank-1 array: ValueError
    return Segs(regular_offsets(value.shape[0], value.shape[1]), values)


def as_regular(value: Segs | np.ndarray) -> np.ndarray | None:
    """A Segs whose segments (at every level) have equal lengths as one ndarray, else None."""
    if isinstance(value, np.ndarray):
        return value
    inner = as_regular(value.values) if isinstance(value.values, Segs) else value.values
    if inner is None or not isinstance(inner, np.ndarray):
        return None
    sizes = sizes_of(value.offsets)
    rows = len(sizes)
    width = int(sizes[0]) if rows else 0
    if rows and not np.all(sizes == width):
        return None
    return inner.reshape((rows, width) + inner.shape[1:])


def coerce(value: Any, rep: Rep) -> Any:
    """`value` in representation `rep` where it is another form of the same array (a regular
    array as segments, equal segments as a regular array, a 0-d array as a scalar). A
    Python iterable streamed into a sequence stays as it is (its chunks are coerced)."""
    if isinstance(value, HostStream):
        return value
    if isinstance(rep, TupleRep):
        if isinstance(value, Segs) and isinstance(value.values, tuple):
            value = tuple(Segs(value.offsets, v) for v in value.values)
        return tuple(coerce(v, p) for v, p in zip(value, rep.parts))
    if isinstance(value, tuple) and isinstance(rep, Segmented):
        # a tuple of arrays with equal segments, kept as one descriptor over tuple values
        parts = [as_segs(v) for v in value]
        return Segs(parts[0].offsets, coerce(tuple(p.values for p in parts), rep.inner))
    if isinstance(rep, ScalarRep):
        if isinstance(value, np.ndarray):
            value = value[()]
        if type(value) is not DTYPES[rep.elem]:
            raise ValueError(f"a {type(value).__name__} scalar does not fit {rep.elem}")
        return value
    if isinstance(rep, Regular):
        if isinstance(value, Segs):
            regular = as_regular(value)
            if regular is None:
                raise ValueError(f"a ragged value does not fit [r{rep.rank}]{rep.elem}")
            value = regular
        if value.dtype != DTYPES[rep.elem] or value.ndim != rep.rank:
            # a representation mismatch is a compiler bug: say so rather than convert
            raise ValueError(f"a {value.dtype} array of rank {value.ndim} does not fit "
                             f"[r{rep.rank}]{rep.elem}")
        return value
    if isinstance(rep, Segmented):
        segs = as_segs(value)
        return Segs(segs.offsets, coerce(segs.values, rep.inner))
    raise ValueError(f"not a representation: {rep!r}")


# ---------------------------------------------------------------- maps


def align(args: list, span: Span | None) -> tuple[list, int, Callable[[Any], Any]]:
    """The lanes of a map's arguments (flat 1-d arrays of their elements), their number, and
    how to give the result the arguments' shape (same regular shape or same segments)."""
    leaves = [first_leaf(a) for a in args]
    name = f"map{len(args)}" if len(args) > 1 else "map"
    if any(isinstance(leaf, Segs) for leaf in leaves):
        args = [tmap(as_segs, a) for a in args]
        offsets = [first_leaf(a).offsets for a in args]
        _same_offsets(name, offsets, span)
        lanes, n, inner = align([tmap(lambda s: s.values, a) for a in args], span)
        return lanes, n, lambda out: tmap(lambda v: Segs(offsets[0], v), inner(out))
    shapes = [leaf.shape for leaf in leaves]
    for dim in range(len(shapes[0])):
        check_lengths(name, [s[dim] if dim < len(s) else 0 for s in shapes], span)
    shape = shapes[0]
    lanes = [tmap(lambda x: x.reshape(-1), a) for a in args]
    return lanes, int(np.prod(shape)), lambda out: tmap(lambda x: x.reshape(shape), out)


def _same_offsets(name: str, offsets: list[np.ndarray], span: Span | None) -> None:
    first = offsets[0]
    for other in offsets[1:]:
        if other is first or np.array_equal(other, first):
            continue
        check_lengths(name, [len(first) - 1, len(other) - 1], span)
        a, b = sizes_of(first), sizes_of(other)
        k = int(np.flatnonzero(a != b)[0])
        check_lengths(name, [int(a[k]), int(b[k])], span)


# ---------------------------------------------------------------- checks


def check_indices(indices: np.ndarray, lengths: np.ndarray | int, span: Span | None) -> None:
    """IndexError, as the interpreter words it, for the first index out of its bounds."""
    bad = (indices < 0) | (indices >= lengths)
    if np.any(bad):
        indices, lengths = np.broadcast_arrays(indices, lengths)
        k = int(np.flatnonzero(np.ravel(bad))[0])
        index, limit = int(np.ravel(indices)[k]), int(np.ravel(lengths)[k])
        raise AccelIndexError(f"index {index} out of bounds for array of length {limit}", span)


def check_lengths(name: str, lengths: list[int], span: Span | None) -> None:
    """SizeError `NAME: array lengths differ (2 and 3)` (the interpreter's words)."""
    if len(set(lengths)) > 1:
        shown = " and ".join(map(str, lengths)) if len(lengths) == 2 else str(lengths)
        raise SizeError(f"{name}: array lengths differ ({shown})", span)


SIZE_NAMES = ("iota", "replicate", "generate", "expand", "produce")


def size_error_name(span: Span | None) -> str:
    """The library function a negative size comes from, read off the statement's source
    text (`iota n`, `replicate n x`, ...); `iota` when the text does not say."""
    if span is not None:
        words = span.source.text[span.start:span.end].replace("(", " ").split()
        if words and words[0] in SIZE_NAMES:
            return words[0]
    return "iota"
