"""Run-time values of the `numpy` target, and conversions to and from interpreter values.

A flat value has the representation (`ir/flat.py`) of the variable it is bound to:

- `ScalarRep(t)`: a numpy scalar of type t (`np.int64`, `np.float32`, `np.bool_`, ...);
- `Regular(t, r)`: an `np.ndarray` with `ndim == r` and t's dtype;
- `Segmented(inner)`: `Segs(offsets, values)`, `offsets` int64 of length n+1 (offsets[0] == 0,
  offsets[-1] == the number of flat values), `values` a value of representation `inner`;
- `TupleRep(parts)`: a Python tuple (an array of tuples is a tuple of arrays).

`to_flat(value, rep)` converts an interpreter value (nested lists of numpy scalars, tuples) to
the representation `rep`; `from_flat(value, type_or_rep)` converts back. A representation
cannot tell a tuple of arrays from an array of tuples (both are a tuple of arrays), so
`from_flat` takes the accel type where arrays of tuples can occur; given a `Rep`, a `TupleRep`
comes back as a tuple.
"""
from __future__ import annotations

from collections.abc import Sequence as CollectionSequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...ir.flat import Regular, Rep, ScalarRep, Segmented, TupleRep
from ...lang import types as T
from ...lang.scalar_ops import DTYPES
from ..interp import scalars
from ..interp.model import Sequence



@dataclass(frozen=True, eq=False)
class Segs:
    """An irregular array: row k is `values[offsets[k]:offsets[k+1]]` (rows of `values`)."""
    offsets: np.ndarray
    values: Any

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __repr__(self) -> str:
        return f"Segs(offsets={self.offsets.tolist()!r}, values={self.values!r})"


FlatValue = Any     # np.generic | np.ndarray | Segs | tuple


def make_scalar(elem: str, value: bool | int | float) -> np.generic:
    """A numpy scalar of accel type `elem` (integers wrap)."""
    return scalars.make(elem, value)


# ---------------------------------------------------------------- representations of types


def rep_of_type(t: T.Type, regular: bool = True) -> Rep:
    """The representation of type `t`: every nest regular (`regular=True`, the shape a
    rectangular value has) or every level below the outermost segmented (`regular=False`,
    which fits any value). Arrays of tuples become tuples of arrays."""
    if isinstance(t, T.Scalar):
        return ScalarRep(t.name)
    if isinstance(t, T.Tuple):
        return TupleRep(tuple(rep_of_type(e, regular) for e in t.elems))
    if not isinstance(t, T.Array):
        raise ValueError(f"no flat representation for {T.show(t)}")
    inner = _innermost(t)
    if isinstance(inner, T.Tuple):
        return TupleRep(tuple(rep_of_type(component_type(t, k), regular)
                              for k in range(len(inner.elems))))
    if not isinstance(inner, T.Scalar):
        raise ValueError(f"no flat representation for {T.show(t)}")
    rank = T.array_rank(t)
    if regular or rank == 1:
        return Regular(inner.name, rank)
    rep: Rep = Regular(inner.name, 1)
    for _ in range(rank - 1):
        rep = Segmented(rep)
    return rep


def rep_of_value(value: Any, t: T.Type) -> Rep:
    """The most regular representation of type `t` that fits the interpreter value `value`:
    regular down to the first ragged level, segmented above it."""
    if isinstance(t, T.Seq):                      # a sequence is stored as an array
        return rep_of_value(list(value), T.Array(t.elem))
    if isinstance(t, T.Scalar):
        return ScalarRep(t.name)
    if isinstance(t, T.Tuple):
        return TupleRep(tuple(rep_of_value(component(value, k), e)
                              for k, e in enumerate(t.elems)))
    inner = _innermost(t)
    if isinstance(inner, T.Tuple):
        return TupleRep(tuple(rep_of_value(component(value, k), component_type(t, k))
                              for k in range(len(inner.elems))))
    rank = T.array_rank(t)
    if rank == 1 or _regular_shape(value, rank) is not None:
        return Regular(inner.name, rank)     # type: ignore[union-attr]
    rows = [x for row in value for x in row]
    return Segmented(rep_of_value(rows, t.elem))     # type: ignore[union-attr]


def _innermost(t: T.Type) -> T.Type:
    while isinstance(t, T.Array):
        t = t.elem
    return t


def component_type(t: T.Type, k: int) -> T.Type:
    """`[][](a, b)` with k = 1 gives `[][]b`."""
    if isinstance(t, T.Array):
        return T.Array(component_type(t.elem, k))
    assert isinstance(t, T.Tuple)
    return t.elems[k]


def component(value: Any, k: int) -> Any:
    """Component k of a tuple, or of every tuple inside (nested) lists: unzip."""
    if isinstance(value, tuple):
        return value[k]
    return [component(v, k) for v in value]


# ---------------------------------------------------------------- interp -> flat


def to_flat(value: Any, rep: Rep) -> FlatValue:
    """An interpreter value in representation `rep`. A ragged value given a regular `rep` is
    a programming error (ValueError), not an accel error."""
    if isinstance(value, Sequence):               # a sequence is stored as an array
        value = list(value.items)
    if isinstance(rep, ScalarRep):
        return make_scalar(rep.elem, value.item() if isinstance(value, np.generic) else value)
    if isinstance(rep, TupleRep):
        return tuple(to_flat(component(value, k), part) for k, part in enumerate(rep.parts))
    if isinstance(rep, Regular):
        shape = _regular_shape(value, rep.rank)
        if shape is None:
            raise ValueError(f"a ragged value does not fit the regular representation "
                             f"[r{rep.rank}]{rep.elem}")
        flat = _leaves(value, rep.rank)
        return np.array(flat, dtype=DTYPES[rep.elem]).reshape(shape)
    if isinstance(rep, Segmented):
        if not isinstance(value, list):
            raise ValueError(f"expected an array for a segmented representation, got {value!r}")
        offsets = np.zeros(len(value) + 1, dtype=np.int64)
        np.cumsum([len(row) for row in value], out=offsets[1:])
        return Segs(offsets, to_flat([x for row in value for x in row], rep.inner))
    raise ValueError(f"not a representation: {rep!r}")


def _regular_shape(value: Any, rank: int) -> tuple[int, ...] | None:
    if not isinstance(value, list):
        return None
    shape, level = [len(value)], [value]
    for _ in range(rank - 1):
        rows = [row for xs in level for row in xs]
        if not all(isinstance(row, list) for row in rows):
            return None
        widths = {len(row) for row in rows}
        if len(widths) > 1:
            return None
        shape.append(widths.pop() if widths else 0)
        level = rows
    return tuple(shape)


def _leaves(value: list, rank: int) -> list:
    for _ in range(rank - 1):
        value = [x for row in value for x in row]
    return [x.item() if isinstance(x, np.generic) else x for x in value]


# ---------------------------------------------------------------- flat -> interp


def from_flat(value: FlatValue, how: T.Type | Rep) -> Any:
    """The interpreter value of a flat value, given its accel type (exact) or its
    representation (a TupleRep is then read as a tuple, never as an array of tuples)."""
    if isinstance(how, (ScalarRep, Regular, Segmented, TupleRep)):
        return _from_rep(value, how)
    return _from_type(value, how)


def _from_rep(value: FlatValue, rep: Rep) -> Any:
    if isinstance(rep, TupleRep):
        return tuple(_from_rep(v, p) for v, p in zip(value, rep.parts))
    return _from_array(value)


def _from_array(value: FlatValue) -> Any:
    """Scalars, ndarrays and Segs (of ndarrays or Segs) to nested lists of numpy scalars."""
    if isinstance(value, np.generic):
        return value
    if isinstance(value, np.ndarray):
        return _nest(value.tolist(), value.ndim, value.dtype.type)
    if isinstance(value, Segs):
        flat = _from_array(value.values)
        return _split(flat, value.offsets)
    raise ValueError(f"not a flat array value: {value!r}")


def _nest(items: list, depth: int, cls: type) -> list:
    if depth == 1:
        return [cls(x) for x in items]
    return [_nest(row, depth - 1, cls) for row in items]


def _split(flat: list, offsets: np.ndarray) -> list:
    bounds = offsets.tolist()
    return [flat[bounds[k]:bounds[k + 1]] for k in range(len(bounds) - 1)]


def _from_type(value: FlatValue, t: T.Type) -> Any:
    if isinstance(t, T.Scalar):
        return DTYPES[t.name](value)
    if isinstance(t, T.Tuple):
        return tuple(_from_type(v, e) for v, e in zip(value, t.elems))
    if isinstance(t, T.Seq):                      # a sequence is stored as an array
        from ...runtime.sequences import HostStream
        if isinstance(value, HostStream):         # the interpreter reads all its rows
            from ...lang.errors import StreamError
            from .boundary import rows_to_flat
            if value.started():
                raise StreamError("this Python iterable was consumed by an earlier run: "
                                  "bind it again to stream it again")
            value = rows_to_flat(value.take(1 << 62), t.elem)
        return Sequence(tuple(_from_type(value, T.Array(t.elem))))
    if not isinstance(t, T.Array):
        raise ValueError(f"cannot convert a flat value of type {T.show(t)}")
    if isinstance(value, Segs):
        return _split(_from_type(value.values, t.elem), value.offsets)
    if isinstance(value, tuple):                  # an array of tuples: zip the components
        inner = _innermost(t)
        assert isinstance(inner, T.Tuple)
        parts = [_from_type(v, component_type(t, k)) for k, v in enumerate(value)]
        return _zip_at(parts, T.array_rank(t))
    return _from_array(value)


def _zip_at(parts: list, depth: int) -> list:
    if depth == 1:
        return list(zip(*parts))
    return [_zip_at(list(rows), depth - 1) for rows in zip(*parts)]


# ---------------------------------------------------------------- reading without converting


def flat_length(value: FlatValue) -> int:
    """The number of rows of a flat array value (an array of tuples: of its components)."""
    if isinstance(value, tuple):
        return flat_length(value[0]) if value else 0
    return len(value)


def flat_size(value: FlatValue) -> int:
    """The number of scalars (or tuples) at the innermost level of a flat array value."""
    if isinstance(value, tuple):
        return flat_size(value[0]) if value else 0
    if isinstance(value, Segs):
        return flat_size(value.values)
    return int(np.size(value))


def flat_rows(value: FlatValue, start: int, stop: int) -> FlatValue:
    """Rows `start:stop` of a flat array value, as a flat value (views of its buffers; only
    a segmented level's offsets are copied, rebased to 0)."""
    if isinstance(value, tuple):
        return tuple(flat_rows(v, start, stop) for v in value)
    if isinstance(value, Segs):
        lo, hi = int(value.offsets[start]), int(value.offsets[stop])
        return Segs(value.offsets[start:stop + 1] - lo, flat_rows(value.values, lo, hi))
    return value[start:stop]


def flat_element(value: FlatValue, t: T.Type, k: int) -> Any:
    """Element k of the flat array value `value` of type `t`, read without converting the
    rest: a numpy scalar, a tuple, or a `FlatView` of an inner array."""
    return _view(flat_rows(value, k, k + 1), t.elem, first=True)   # type: ignore[union-attr]


def _view(value: FlatValue, t: T.Type, first: bool = False) -> Any:
    """`value` (with `first`: the first row of `value`) as a scalar, tuple or FlatView."""
    if isinstance(t, T.Tuple):
        return tuple(_view(v, e, first) for v, e in zip(value, t.elems))
    if isinstance(t, T.Scalar):
        return DTYPES[t.name](value[0] if first else value)
    if first:
        if isinstance(value, Segs):
            value = value.values                  # the one row's elements
        elif isinstance(value, np.ndarray):
            value = value[0]
        else:
            value = tuple(_first_row(v) for v in value)
    return FlatView(value, t)


def _first_row(value: FlatValue) -> FlatValue:
    if isinstance(value, tuple):
        return tuple(_first_row(v) for v in value)
    return value.values if isinstance(value, Segs) else value[0]


def flat_view(value: FlatValue, t: T.Type) -> Any:
    """A flat value of type `t` as the display reads it: arrays as `FlatView`s, tuples as
    tuples, scalars as numpy scalars; nothing is converted."""
    if isinstance(t, (T.Array, T.Seq)):
        return FlatView(value, t)
    if isinstance(t, T.Tuple):
        return tuple(flat_view(v, e) for v, e in zip(value, t.elems))
    if isinstance(t, T.Scalar):
        return DTYPES[t.name](value)
    return value


class FlatView(CollectionSequence):
    """A read-only view of a flat array value of accel type `t` as a sequence of elements
    (numpy scalars, tuples, views of inner arrays): what the display reads of a big array
    without converting it (`values.format_value` takes it as it takes a list)."""

    def __init__(self, value: FlatValue, t: T.Type):
        self.value = value
        self.type = T.Array(t.elem) if isinstance(t, T.Seq) else t

    def __len__(self) -> int:
        return flat_length(self.value)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return self._slice(k)
        if not -len(self) <= k < len(self):
            raise IndexError(k)
        return flat_element(self.value, self.type, k % len(self))

    def _slice(self, k: slice) -> list:
        """The elements of a slice, read a whole level at a time where the value allows."""
        value, elem = self.value, self.type.elem           # type: ignore[union-attr]
        if isinstance(value, np.ndarray) and value.ndim == 1:
            return list(value[k])                          # numpy scalars of its dtype
        if isinstance(value, tuple) and isinstance(elem, T.Tuple):   # an array of tuples
            columns = [FlatView(part, T.Array(e))[k] for part, e in zip(value, elem.elems)]
            return list(zip(*columns))
        if isinstance(value, Segs):
            bounds = value.offsets.tolist()
            return [_view(flat_rows(value.values, bounds[i], bounds[i + 1]), elem)
                    for i in range(*k.indices(len(self)))]
        return [self[i] for i in range(*k.indices(len(self)))]

    @property
    def size(self) -> int:
        return flat_size(self.value)

    def regular_shape(self, rank: int) -> tuple[int, ...] | None:
        """The shape of the top `rank` levels if they are rectangular, else None."""
        shape, value = [flat_length(self.value)], self.value
        while len(shape) < rank:
            if isinstance(value, tuple):
                return None
            if isinstance(value, np.ndarray):      # its rows' shape: the dims below
                return tuple(shape) + value.shape[1:1 + rank - len(shape)]
            sizes = np.diff(value.offsets)
            if len(sizes) and np.any(sizes != sizes[0]):
                return None
            shape.append(int(sizes[0]) if len(sizes) else 0)
            value = value.values
        return tuple(shape)

    def __repr__(self) -> str:
        return f"FlatView({self.value!r}, {T.show(self.type)})"
