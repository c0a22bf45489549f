"""Python values straight to flat values and back, for the compiled targets' calls
(`prog.run(..., target="numpy")`): numpy arrays and Awkward Arrays cross without a Python
loop over their elements (LANGUAGE.md §9 gives the same values as the interpreter's
`values.from_python` / `to_python`, which go through nested lists).

    flat_from_python(obj, t) -> FlatValue          # ndarray, Segs, tuples, numpy scalars
    python_from_flat(value, t) -> Any               # np.ndarray, ak.Array, tuples, scalars

A regular array (a numpy array, or an Awkward array whose rows all have one length at every
level) becomes a `Regular` block; a ragged one `Segs` with int64 offsets starting at 0; an
array of tuples a tuple of arrays. Anything else (lists, tuples of arrays, sequences) goes
through the interpreter's conversion.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.flat import Rep, TupleRep
from ...lang import types as T
from ...lang.errors import AccelError
from ...values import _check_dtype, from_python, to_python
from .values import DTYPES, FlatValue, Segs, rep_of_value, to_flat


def flat_from_python(obj: Any, t: T.Type) -> FlatValue:
    """The flat value of a Python argument of accel type `t` (TypeError if it does not fit;
    a Python iterable for a sequence stays one, pulled as the sequence runs)."""
    from ...runtime.sequences import HostStream
    if isinstance(obj, HostStream):
        return obj
    if isinstance(t, T.Array) and isinstance(obj, np.ndarray):
        inner = _innermost(t)
        if isinstance(inner, T.Scalar) and obj.ndim == T.array_rank(t):
            _check_dtype(obj.dtype, inner.name)
            return np.ascontiguousarray(obj, dtype=DTYPES[inner.name])
    if isinstance(t, T.Array) and _is_awkward(obj):
        import awkward as ak
        try:
            return _from_layout(ak.to_layout(obj), t)
        except _Unsupported:
            pass
    value = from_python(obj, t)
    return to_flat(value, rep_of_value(value, t))


def rows_to_flat(rows: list[Any], t: T.Type) -> FlatValue:
    """The flat value of the rows a Python iterable gave (`t`: the type of a row);
    StreamError when a row does not have that type."""
    from ...lang.errors import StreamError
    try:
        if isinstance(t, T.Scalar):
            return np.asarray(rows, dtype=DTYPES[t.name]).reshape(len(rows))
        if rows and all(isinstance(r, np.ndarray) and r.shape == rows[0].shape for r in rows):
            return flat_from_python(np.stack(rows), T.Array(t))
        return flat_from_python(list(rows), T.Array(t))
    except (TypeError, ValueError, AccelError) as error:
        raise StreamError(f"a row of the Python iterable is not a {T.show(t)}: {error}") \
            from None


class _Unsupported(Exception):
    """An Awkward layout this module does not read directly (options, unions, strings)."""


def _from_layout(layout: Any, t: T.Type) -> FlatValue:
    import awkward as ak
    contents = ak.contents
    if isinstance(t, T.Tuple):
        if not isinstance(layout, contents.RecordArray) or len(layout.contents) != len(t.elems):
            raise _Unsupported
        return tuple(_from_layout(c, e) for c, e in zip(layout.contents, t.elems))
    if isinstance(t, T.Scalar):
        if not isinstance(layout, contents.NumpyArray) or layout.data.ndim != 1:
            raise _Unsupported
        data = np.asarray(layout.data)
        _check_dtype(data.dtype, t.name)
        return np.ascontiguousarray(data, dtype=DTYPES[t.name])
    if not isinstance(t, T.Array):
        raise _Unsupported
    if isinstance(layout, contents.RecordArray) and isinstance(t.elem, T.Tuple):
        if len(layout.contents) != len(t.elem.elems):   # an array of tuples: its columns
            raise _Unsupported
        return tuple(_from_layout(c, T.Array(e)) for c, e in zip(layout.contents,
                                                                 t.elem.elems))
    if isinstance(layout, contents.NumpyArray):
        data = np.asarray(layout.data)
        if data.ndim != T.array_rank(t) or not isinstance(_innermost(t), T.Scalar):
            raise _Unsupported
        return flat_from_python(data, t)
    if isinstance(layout, contents.RegularArray):
        layout = layout.to_ListOffsetArray64(True)
    if not isinstance(layout, (contents.ListOffsetArray, contents.ListArray)):
        raise _Unsupported
    if isinstance(layout, contents.ListOffsetArray) and len(layout.offsets) \
            and layout.offsets.data.dtype == np.int64 and int(layout.offsets[0]) == 0:
        offsets = np.asarray(layout.offsets.data)       # already from 0: no copy
        content = layout.content[:int(offsets[-1])]
    else:
        layout = layout.to_ListOffsetArray64(True)      # offsets from 0, content trimmed
        offsets = np.asarray(layout.offsets.data, dtype=np.int64)
        content = layout.content
    inner = _from_layout(content, t.elem)
    return _segs_or_block(offsets, inner, t.elem)


def _segs_or_block(offsets: np.ndarray, inner: FlatValue, elem: T.Type) -> FlatValue:
    """Rows given by `offsets` over `inner`: one regular block when every row has the same
    length and the rows are regular blocks of scalars, else segments (tuples component
    by component, sharing the offsets)."""
    if isinstance(inner, tuple):
        parts = elem.elems if isinstance(elem, T.Tuple) else [None] * len(inner)
        return tuple(_segs_or_block(offsets, v, e) for v, e in zip(inner, parts))
    if isinstance(inner, np.ndarray) and _equal_rows(offsets):
        rows = len(offsets) - 1
        width = int(offsets[1] - offsets[0]) if rows else 0
        return inner.reshape((rows, width) + inner.shape[1:])
    return Segs(offsets, inner)


def _equal_rows(offsets: np.ndarray) -> bool:
    """Whether every row has the same length (a cheap test first: the total must be the
    number of rows times the first row's length)."""
    rows = len(offsets) - 1
    if rows <= 0:
        return True
    width = offsets[1] - offsets[0]
    if offsets[-1] - offsets[0] != rows * width:
        return False
    return bool(np.all(np.diff(offsets) == width))


def python_from_flat(value: FlatValue, t: T.Type) -> Any:
    """The Python value (LANGUAGE.md §9) of a flat value of accel type `t`: regular arrays
    of scalars as numpy arrays, others as Awkward Arrays, tuples as tuples."""
    if isinstance(t, T.Tuple) and isinstance(value, tuple):
        return tuple(python_from_flat(v, e) for v, e in zip(value, t.elems))
    if isinstance(t, T.Scalar):
        return DTYPES[t.name](value)
    if isinstance(t, T.Array) and isinstance(_innermost(t), T.Scalar):
        block = _as_block(value, T.array_rank(t))
        if block is not None:
            return block.astype(DTYPES[_innermost(t).name], copy=False)
        if isinstance(value, Segs):
            import awkward as ak
            return ak.Array(_layout(value))
    if isinstance(t, T.Array) and isinstance(value, tuple):
        import awkward as ak
        return ak.Array(_layout(value))
    from .values import from_flat
    return to_python(from_flat(value, t), t)


def _as_block(value: FlatValue, rank: int) -> np.ndarray | None:
    """`value` as one regular block of the given rank, if every level is rectangular."""
    if isinstance(value, np.ndarray):
        return value if value.ndim == rank else None
    if isinstance(value, Segs):
        sizes = np.diff(value.offsets)
        if len(sizes) and np.any(sizes != sizes[0]):
            return None
        inner = _as_block(value.values, rank - 1)
        if inner is None:
            return None
        width = int(sizes[0]) if len(sizes) else 0
        if len(sizes) == 0:
            return np.zeros((0,) * rank, dtype=inner.dtype)
        return inner.reshape((len(sizes), width) + inner.shape[1:])
    return None


def _layout(value: FlatValue) -> Any:
    """An Awkward layout of a flat array value (no copies of the data)."""
    import awkward as ak
    contents = ak.contents
    if isinstance(value, tuple):
        columns = [_layout(v) for v in value]
        length = len(value[0]) if value else 0
        return _rezip(columns, length)
    if isinstance(value, Segs):
        return contents.ListOffsetArray(ak.index.Index64(value.offsets), _layout(value.values))
    if isinstance(value, np.ndarray):
        if value.ndim == 1:
            return contents.NumpyArray(value)
        return contents.RegularArray(_layout(value.reshape((-1,) + value.shape[2:])),
                                     value.shape[1], zeros_length=value.shape[0])
    raise TypeError(f"not a flat array: {value!r}")


def _rezip(columns: list, length: int) -> Any:
    """A tuple of arrays (tuple_F) back to an array of tuples: the record goes inside the
    lists the columns share (their offsets are equal: they came from one array)."""
    import awkward as ak
    contents = ak.contents
    if all(isinstance(c, contents.ListOffsetArray) for c in columns):
        inner = _rezip([c.content for c in columns], len(columns[0].content))
        return contents.ListOffsetArray(columns[0].offsets, inner)
    if all(isinstance(c, contents.RegularArray) for c in columns):
        inner = _rezip([c.content for c in columns], len(columns[0].content))
        return contents.RegularArray(inner, columns[0].size, zeros_length=length)
    return contents.RecordArray(columns, None, length=length)


def rep_of_flat(value: FlatValue, t: T.Type) -> Rep:
    """The representation of a flat value (as `values.rep_of_value` gives for interp ones)."""
    from ...ir.flat import Regular, ScalarRep, Segmented
    from ...runtime.sequences import HostStream
    if isinstance(t, T.Seq):                      # a sequence is stored as an array
        t = T.Array(t.elem)
    if isinstance(value, HostStream):             # rows of any shape: irregular below
        from .values import rep_of_type
        return rep_of_type(t, regular=False)
    if isinstance(value, tuple):
        parts = t.elems if isinstance(t, T.Tuple) else [_component(t, k) for k in range(len(value))]
        return TupleRep(tuple(rep_of_flat(v, e) for v, e in zip(value, parts)))
    if isinstance(value, Segs):
        elem = t.elem if isinstance(t, T.Array) else t
        return Segmented(rep_of_flat(value.values, elem))
    if isinstance(value, np.ndarray):
        return Regular(_innermost(t).name, value.ndim)     # type: ignore[union-attr]
    return ScalarRep(t.name)                                # type: ignore[union-attr]


def _component(t: T.Type, k: int) -> T.Type:
    if isinstance(t, T.Array):
        return T.Array(_component(t.elem, k))
    assert isinstance(t, T.Tuple)
    return t.elems[k]


def _innermost(t: T.Type) -> T.Type:
    while isinstance(t, T.Array):
        t = t.elem
    return t


def _is_awkward(obj: Any) -> bool:
    return type(obj).__module__.startswith("awkward") and hasattr(obj, "layout")
