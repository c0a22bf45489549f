"""Scalar semantics of accel (docs/language.md, "Scalar semantics"), on numpy scalars.

Every function takes and returns numpy scalars of the exact type (`np.bool_`, `np.int32`,
`np.int64`, `np.float32`, `np.float64`). Integer arithmetic wraps around (two's complement);
integer `/` truncates toward zero and `%` takes the dividend's sign (C); float arithmetic is
IEEE with numpy's warnings silenced. Errors are raised without a span: the evaluator attaches
the span of the responsible node.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ...lang import types as T
from ...lang.errors import DivisionByZero, SizeError

SCALAR_TYPES: dict[str, type] = {
    "bool": np.bool_, "i32": np.int32, "i64": np.int64, "f32": np.float32, "f64": np.float64,
}
INT_TYPES = (np.int32, np.int64)
FLOAT_TYPES = (np.float32, np.float64)


def scalar_name(value: Any) -> str:
    """The accel scalar type name of a numpy scalar."""
    for name, cls in SCALAR_TYPES.items():
        if type(value) is cls:
            return name
    raise TypeError(f"not an accel scalar: {value!r} ({type(value).__name__})")


def make(name: str, value: bool | int | float) -> Any:
    """A numpy scalar of accel type `name` from a Python value (integers wrap)."""
    cls = SCALAR_TYPES[name]
    if cls in INT_TYPES:
        return wrap(int(value), cls)
    return cls(value)


_BITS: dict[type, int] = {np.int32: 32, np.int64: 64}


def wrap(value: int, cls: type) -> Any:
    """A Python int reduced modulo 2**bits into the signed range of `cls`."""
    half = 1 << (_BITS[cls] - 1)
    if -half <= value < half:
        return cls(value)
    return cls(((value + half) % (half << 1)) - half)


def is_int(value: Any) -> bool:
    return isinstance(value, INT_TYPES)


def is_float(value: Any) -> bool:
    return isinstance(value, FLOAT_TYPES)


# ---------------------------------------------------------------- binary operators

def _int_div(a: Any, b: Any) -> Any:
    x, y = int(a), int(b)
    if y == 0:
        raise DivisionByZero("integer division by zero")
    quotient = abs(x) // abs(y)
    return wrap(quotient if (x < 0) == (y < 0) else -quotient, type(a))


def _int_rem(a: Any, b: Any) -> Any:
    x, y = int(a), int(b)
    if y == 0:
        raise DivisionByZero("integer remainder by zero")
    return wrap(x - y * _trunc_div(x, y), type(a))


def _trunc_div(x: int, y: int) -> int:
    quotient = abs(x) // abs(y)
    return quotient if (x < 0) == (y < 0) else -quotient


def _int_pow(a: Any, b: Any) -> Any:
    cls, x, n = type(a), int(a), int(b)
    bits = _BITS[cls]
    if n >= 0:
        return wrap(pow(x, n, 1 << bits), cls)
    # x ** n for n < 0 is 1 / x ** -n in integer division (docs/language.md).
    denominator = int(wrap(pow(x, -n, 1 << bits), cls))
    if denominator == 0:
        raise DivisionByZero("integer division by zero (negative power of 0)")
    return cls(_trunc_div(1, denominator))


def _shift(a: Any, b: Any, left: bool) -> Any:
    cls, x, n = type(a), int(a), int(b)
    if n < 0:
        raise SizeError(f"negative shift amount {n}")
    bits = _BITS[cls]
    if left:
        return cls(0) if n >= bits else wrap(x << n, cls)
    return cls(x >> min(n, bits))   # Python's >> is arithmetic: -1 for a negative x


def _float_op(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        with np.errstate(all="ignore"):
            return type(a)(fn(a, b))
    return apply


def _int_op(fn: Callable[[int, int], int]) -> Callable[[Any, Any], Any]:
    return lambda a, b: wrap(fn(int(a), int(b)), type(a))


_INT_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": _int_op(lambda x, y: x + y),
    "-": _int_op(lambda x, y: x - y),
    "*": _int_op(lambda x, y: x * y),
    "/": _int_div,
    "%": _int_rem,
    "**": _int_pow,
    "&": _int_op(lambda x, y: x & y),
    "|": _int_op(lambda x, y: x | y),
    "^": _int_op(lambda x, y: x ^ y),
    "<<": lambda a, b: _shift(a, b, left=True),
    ">>": lambda a, b: _shift(a, b, left=False),
}

_FLOAT_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": _float_op(np.add),
    "-": _float_op(np.subtract),
    "*": _float_op(np.multiply),
    "/": _float_op(np.divide),
    "%": _float_op(np.fmod),          # sign of the dividend, as for integers
    "**": _float_op(np.power),
}

_BOOL_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "&": lambda a, b: np.bool_(bool(a) and bool(b)),
    "|": lambda a, b: np.bool_(bool(a) or bool(b)),
    "^": lambda a, b: np.bool_(bool(a) != bool(b)),
    "&&": lambda a, b: np.bool_(bool(a) and bool(b)),
    "||": lambda a, b: np.bool_(bool(a) or bool(b)),
}

COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")


def binop(op: str, a: Any, b: Any) -> Any:
    """`a op b` for scalars (and `==`/`!=` on any values). `++` is not scalar: see library."""
    if op in COMPARISONS:
        return compare(op, a, b)
    if isinstance(a, np.bool_):
        table = _BOOL_OPS
    elif is_int(a):
        table = _INT_OPS
    else:
        table = _FLOAT_OPS
    if op not in table:
        raise TypeError(f"operator {op} is not defined on {scalar_name(a)}")
    return table[op](a, b)


def compare(op: str, a: Any, b: Any) -> Any:
    if op == "==":
        return np.bool_(values_equal(a, b))
    if op == "!=":
        return np.bool_(not values_equal(a, b))
    if op == "<":
        return np.bool_(a < b)
    if op == "<=":
        return np.bool_(a <= b)
    if op == ">":
        return np.bool_(a > b)
    return np.bool_(a >= b)


def values_equal(a: Any, b: Any) -> bool:
    """Structural equality (IEEE for floats: nan != nan)."""
    if isinstance(a, (list, tuple)):
        return (isinstance(b, type(a)) and len(a) == len(b)
                and all(values_equal(x, y) for x, y in zip(a, b)))
    return bool(a == b)


def negate(a: Any) -> Any:
    if is_int(a):
        return wrap(-int(a), type(a))
    return type(a)(-a)


def logical_not(a: Any) -> Any:
    """`!`: logical not on bool, bitwise complement on integers."""
    if isinstance(a, np.bool_):
        return np.bool_(not a)
    return wrap(~int(a), type(a))


# ---------------------------------------------------------------- functions and constants

def convert(name: str, a: Any) -> Any:
    """The conversion functions `i32 i64 f32 f64`: integers wrap, floats truncate toward zero.
    A non-finite float converts to 0 (unspecified by the language; tests avoid it)."""
    cls = SCALAR_TYPES[name]
    if cls in INT_TYPES:
        if is_float(a):
            return wrap(int(math.trunc(a)) if math.isfinite(a) else 0, cls)
        return wrap(int(a), cls)
    return cls(a)


def to_float(a: Any) -> Any:
    """The float type results of `floor`/`ceil`/`round` take: the same float, or f64."""
    return a if is_float(a) else np.float64(a)


def _unary_float(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def apply(a: Any) -> Any:
        x = to_float(a)
        with np.errstate(all="ignore"):
            return type(x)(fn(x))
    return apply


def _min(a: Any, b: Any) -> Any:
    return type(a)(np.minimum(a, b))    # nan propagates, as in numpy


def _max(a: Any, b: Any) -> Any:
    return type(a)(np.maximum(a, b))


def _abs(a: Any) -> Any:
    if is_int(a):
        return wrap(abs(int(a)), type(a))
    return type(a)(np.abs(a))


def _atan2(a: Any, b: Any) -> Any:
    with np.errstate(all="ignore"):
        return type(a)(np.arctan2(a, b))


SCALAR_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": _min,
    "max": _max,
    "abs": _abs,
    "sqrt": _unary_float(np.sqrt),
    "exp": _unary_float(np.exp),
    "log": _unary_float(np.log),
    "sin": _unary_float(np.sin),
    "cos": _unary_float(np.cos),
    "tan": _unary_float(np.tan),
    "floor": _unary_float(np.floor),
    "ceil": _unary_float(np.ceil),
    "round": _unary_float(np.round),    # half to even
    "atan2": _atan2,
    "select": lambda c, a, b: a if c else b,
    "i32": lambda a: convert("i32", a),
    "i64": lambda a: convert("i64", a),
    "f32": lambda a: convert("f32", a),
    "f64": lambda a: convert("f64", a),
}


def type_constant(name: str, t: T.Type) -> Any:
    """`zero`, `one`, `lowest`, `highest` of the scalar type `t`."""
    if not isinstance(t, T.Scalar) or t.name == "bool":
        raise TypeError(f"`{name}` needs a numeric type, got {T.show(t)}")
    cls = SCALAR_TYPES[t.name]
    if name == "zero":
        return cls(0)
    if name == "one":
        return cls(1)
    if cls in FLOAT_TYPES:
        return cls(-np.inf if name == "lowest" else np.inf)
    info = np.iinfo(cls)
    return cls(info.min if name == "lowest" else info.max)
