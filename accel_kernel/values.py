"""The value boundary: interpreter values to text, JSON and Python (numpy / Awkward), and back.

- `format_value(v, t)`: accel syntax (`5`, `5i32`, `255u8`, `0.1`, `1.5f32`, `true`, `[1, 2]`,
  `(1, 2.0)`);
- `to_json(v, t)`: lists, numbers, booleans, `None` for non-finite floats;
- `to_python(v, t)`: numpy scalars, numpy arrays for regular arrays of scalars (any rank),
  `ak.Array` for ragged arrays and arrays of tuples, Python tuples; a sequence as its array;
- `from_python(obj, t)`: the inverse; `TypeError` when `obj` does not fit `t`.

Values are the interpreter's (numpy scalars, lists, tuples, `Sequence`); see
`backends/interp/model.py`. Awkward is imported only when a ragged value crosses.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from collections.abc import Sequence as CollectionSequence
from typing import Any

import numpy as np

from .backends.interp.model import Sequence, describe, is_function
from .lang import types as T
from .lang.scalar_ops import DTYPES as _DTYPES, FLOATS as _FLOATS, INTS as _INTS
from .lang.scalar_ops import scalar_type as _scalar_type


# ---------------------------------------------------------------- text

def format_value(value: Any, type: T.Type | None = None, max_elems: int | None = None) -> str:
    """`value` in accel syntax. With `max_elems`, an array longer than that shows its first and
    last elements around `...` (at every nesting level)."""
    if isinstance(type, T.Seq) or isinstance(value, Sequence):
        elem = type.elem if isinstance(type, T.Seq) else None
        items = value if is_array(value) else list(value)
        return format_value(items, T.Array(elem) if elem else None, max_elems)
    if is_array(value):
        elem = type.elem if isinstance(type, T.Array) else None
        if max_elems is not None and len(value) > max_elems:
            head = max(1, (max_elems + 1) // 2)   # type: ignore[operator]
            tail = max(0, max_elems - head)        # type: ignore[operator]
            items = value[:head] + [...] + (value[len(value) - tail:] if tail else [])
        else:
            items = value[:]
        shown = ["..." if v is ... else format_value(v, elem, max_elems) for v in items]
        return "[" + ", ".join(shown) + "]"
    if isinstance(value, tuple):
        elems = type.elems if isinstance(type, T.Tuple) else (None,) * len(value)
        return "(" + ", ".join(format_value(v, t, max_elems) for v, t in zip(value, elems)) + ")"
    if is_function(value):
        return f"<function {describe(value)}>"
    return format_scalar(value)


def is_array(value: Any) -> bool:
    """An interp array (a list) or a read-only view of a flat one (`FlatView`, a
    `collections.abc.Sequence` that is not a tuple): both are read by index."""
    return isinstance(value, list) or (isinstance(value, CollectionSequence)
                                       and not isinstance(value, (tuple, str)))


def format_scalar(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, np.integer) and not isinstance(value, np.int64):
        return f"{int(value)}{_scalar_type(value.dtype)}"      # `5i32`, `255u8`
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, np.float32):
        return _float_text(str(value), float(value)) + "f32"
    if isinstance(value, (float, np.floating)):
        return _float_text(repr(float(value)), float(value))
    raise TypeError(f"not an accel value: {value!r}")


def _float_text(text: str, x: float) -> str:
    """Shortest round-trip text, always readable back as a float (`2.0`, `1e+20`, `inf`)."""
    if not math.isfinite(x):
        return "nan" if x != x else ("inf" if x > 0 else "-inf")
    if "." not in text and "e" not in text:
        text += ".0"
    return text


# ---------------------------------------------------------------- JSON

def to_json(value: Any, type: T.Type | None = None) -> Any:
    """A JSON-able form: lists for arrays, tuples and sequences; None for non-finite floats.
    An f32 is the shortest decimal that reads back as that f32 (`4.3f32` is 4.3, not
    4.300000190734863), so results compare at f32 precision."""
    if isinstance(value, (list, tuple, Sequence)):
        if isinstance(type, T.Tuple):
            return [to_json(v, t) for v, t in zip(value, type.elems)]
        elem = type.elem if isinstance(type, (T.Array, T.Seq)) else None
        return [to_json(v, elem) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        x = float(value)
        if not math.isfinite(x):
            return None
        if isinstance(value, np.float32) or type == T.Scalar("f32"):
            return float(str(np.float32(x)))       # numpy's shortest round trip
        return x
    raise TypeError(f"not a JSON-able accel value: {value!r}")


# ---------------------------------------------------------------- to Python

def to_python(value: Any, type: T.Type) -> Any:
    """numpy / Awkward / tuples / numpy scalars, as LANGUAGE.md §9 says."""
    if isinstance(type, T.Seq):
        return to_python(list(value), T.Array(type.elem))
    if isinstance(type, T.Tuple):
        return tuple(to_python(v, t) for v, t in zip(value, type.elems))
    if isinstance(type, T.Scalar):
        return _DTYPES[type.name](value)
    if isinstance(type, T.Array):
        scalar = _innermost(type)
        if isinstance(scalar, T.Scalar):
            shape = regular_shape(value, T.array_rank(type))
            if shape is not None:
                return np.array(value, dtype=_DTYPES[scalar.name]).reshape(shape)
        import awkward as ak
        return ak.Array(_layout(value, type.elem))
    if is_function(value):
        return value
    raise TypeError(f"cannot convert a value of type {T.show(type)} to Python")


def _innermost(t: T.Type) -> T.Type:
    while isinstance(t, T.Array):
        t = t.elem
    return t


def regular_shape(value: list, rank: int) -> tuple[int, ...] | None:
    """The shape of a nested list of the given rank if it is regular, else None."""
    shape = [len(value)]
    level = [value]
    for _ in range(rank - 1):
        rows = [row for xs in level for row in xs]
        widths = {len(row) for row in rows}
        if len(widths) > 1:
            return None
        shape.append(widths.pop() if widths else 0)
        level = rows
    return tuple(shape)


def _layout(values: list, elem: T.Type):
    """An Awkward layout of length len(values) whose entries are `values` of type `elem`:
    flat contents and int64 offsets, records (tuples) as columns."""
    import awkward as ak
    if isinstance(elem, T.Scalar):
        return ak.contents.NumpyArray(np.array(values, dtype=_DTYPES[elem.name]))
    if isinstance(elem, T.Array):
        offsets = np.zeros(len(values) + 1, dtype=np.int64)
        np.cumsum([len(v) for v in values], out=offsets[1:])
        flat = [x for row in values for x in row]
        return ak.contents.ListOffsetArray(ak.index.Index64(offsets), _layout(flat, elem.elem))
    if isinstance(elem, T.Tuple):
        columns = [_layout([v[k] for v in values], t) for k, t in enumerate(elem.elems)]
        return ak.contents.RecordArray(columns, None, length=len(values))
    raise TypeError(f"cannot convert arrays of {T.show(elem)} to Awkward")


# ---------------------------------------------------------------- from Python

def from_python(obj: Any, type: T.Type) -> Any:
    """An interpreter value of type `type` from numpy arrays, `ak.Array`, lists, tuples and
    scalars (a Python iterable for a sequence). TypeError if `obj` does not fit."""
    if _is_awkward(obj):
        obj = obj.to_list()
    if isinstance(type, T.Scalar):
        return _scalar_from_python(obj, type.name)
    if isinstance(type, T.Array):
        if isinstance(obj, np.ndarray):
            if obj.ndim == 0:
                raise TypeError(f"expected an array of type {T.show(type)}, got a 0-d array")
            if obj.ndim == 1 and isinstance(type.elem, T.Scalar):
                _check_dtype(obj.dtype, type.elem.name)
                cls = _DTYPES[type.elem.name]
                return [cls(x) for x in obj.tolist()]
            return [from_python(row, type.elem) for row in obj]
        if isinstance(obj, (list, tuple)):
            return [from_python(x, type.elem) for x in obj]
        raise TypeError(f"expected an array of type {T.show(type)}, got {_describe(obj)}")
    if isinstance(type, T.Tuple):
        if isinstance(obj, dict):
            obj = tuple(obj[str(k)] for k in range(len(obj))) if all(
                str(k) in obj for k in range(len(obj))) else obj
        if not isinstance(obj, (tuple, list)) or len(obj) != len(type.elems):
            raise TypeError(f"expected a tuple of type {T.show(type)}, got {_describe(obj)}")
        return tuple(from_python(x, t) for x, t in zip(obj, type.elems))
    if isinstance(type, T.Seq):
        if not isinstance(obj, Iterable) or isinstance(obj, (str, bytes)):
            raise TypeError(f"expected an iterable for {T.show(type)}, got {_describe(obj)}")
        return Sequence(tuple(from_python(x, type.elem) for x in obj))
    raise TypeError(f"values of type {T.show(type)} cannot come from Python")


def _is_awkward(obj: Any) -> bool:
    return type(obj).__module__.startswith("awkward") and hasattr(obj, "to_list")


def _check_dtype(dtype: np.dtype, name: str) -> None:
    ok = (dtype.kind == "b" if name == "bool" else
          dtype.kind in "iuf" if name in _FLOATS else dtype.kind in "iu")
    if not ok:
        raise TypeError(f"expected elements of type {name}, got an array of dtype {dtype}")


def _scalar_from_python(obj: Any, name: str) -> Any:
    if isinstance(obj, np.ndarray) and obj.ndim == 0:
        obj = obj[()]
    cls = _DTYPES[name]
    if name == "bool":
        if isinstance(obj, (bool, np.bool_)):
            return np.bool_(obj)
    elif name in _INTS:
        if isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_)):
            info = np.iinfo(cls)
            if not info.min <= int(obj) <= info.max:
                raise TypeError(f"{int(obj)} does not fit in {name}")
            return cls(obj)
    elif isinstance(obj, (int, float, np.integer, np.floating)) and not isinstance(
            obj, (bool, np.bool_)):
        return cls(obj)
    raise TypeError(f"expected a value of type {name}, got {_describe(obj)}")


def _describe(obj: Any) -> str:
    if isinstance(obj, np.ndarray):
        return f"a numpy array of dtype {obj.dtype} and shape {obj.shape}"
    return f"{type(obj).__name__} {obj!r}"[:80]
