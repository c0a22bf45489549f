"""Scalar semantics of accel (docs/language.md, "Scalar semantics"), on numpy scalars.

Every function takes and returns numpy scalars of the exact type (`np.bool_`, `np.int32`,
`np.int64`, `np.float32`, `np.float64`). Integer arithmetic wraps around (two's complement);
integer `/` truncates toward zero and `%` takes the dividend's sign (C); float arithmetic is
IEEE with numpy's warnings silenced. Errors are raised without a span: the evaluator attaches
the span of the responsible node. What the operators and functions are, their types, errors
and numpy functions: the one table of scalar semantics, `lang/scalar_ops.py`; this module is
its reference implementation on single values.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ...lang import scalar_ops as table
from ...lang import types as T
from ...lang.scalar_ops import BINARY_OPS, DTYPES, FUNCTIONS, UNARY_OPS

INT_TYPES = tuple(DTYPES[t] for t in table.INTS)
FLOAT_TYPES = tuple(DTYPES[t] for t in table.FLOATS)


def scalar_name(value: Any) -> str:
    """The accel scalar type name of a numpy scalar."""
    name = _exact_type(value)
    if name is None:
        raise TypeError(f"not an accel scalar: {value!r} ({type(value).__name__})")
    return name


def _exact_type(value: Any) -> str | None:
    """The accel scalar type of a numpy scalar, None for anything else (a Python number that
    a caller of a def passed in)."""
    for name, cls in DTYPES.items():
        if type(value) is cls:
            return name
    return None


def make(name: str, value: bool | int | float) -> Any:
    """A numpy scalar of accel type `name` from a Python value (integers wrap)."""
    if name in table.INTS:
        return DTYPES[name](table.wrap(int(value), name))
    with np.errstate(over="ignore"):      # an f64 beyond the f32 range is an infinity
        return DTYPES[name](value)


def is_int(value: Any) -> bool:
    return isinstance(value, INT_TYPES)


def is_float(value: Any) -> bool:
    return isinstance(value, FLOAT_TYPES)


# ---------------------------------------------------------------- operators
# Integers: accel's rule on Python ints, wrapped into the type. Floats and bools: the numpy
# function of the table entry, on numpy scalars.

def _trunc_div(x: int, y: int) -> int:
    quotient = abs(x) // abs(y)
    return quotient if (x < 0) == (y < 0) else -quotient


def _fail(op: str, *details: Any) -> None:
    error = BINARY_OPS[op].error
    assert error is not None
    raise error.error(None, *details)


def _div(x: int, y: int, t: str) -> int:
    if y == 0:
        _fail("/")
    return _trunc_div(x, y)


def _rem(x: int, y: int, t: str) -> int:
    if y == 0:
        _fail("%")
    return x - y * _trunc_div(x, y)


def _pow(x: int, n: int, t: str) -> int:
    modulus = 1 << table.BITS[t]
    if n >= 0:
        return pow(x, n, modulus)
    # x ** n for n < 0 is 1 / x ** -n in integer division (docs/language.md).
    denominator = table.wrap(pow(x, -n, modulus), t)
    if denominator == 0:
        _fail("**")
    return _trunc_div(1, denominator)


def _shift_left(x: int, n: int, t: str) -> int:
    if n < 0:
        _fail("<<", n)
    return 0 if n >= table.BITS[t] else x << n


def _shift_right(x: int, n: int, t: str) -> int:
    if n < 0:
        _fail(">>", n)
    return x >> min(n, table.BITS[t])   # Python's >> is arithmetic: -1 for a negative x


_ON_INTEGERS: dict[str, Callable[[int, int, str], int]] = {
    "+": lambda x, y, t: x + y,
    "-": lambda x, y, t: x - y,
    "*": lambda x, y, t: x * y,
    "/": _div,
    "%": _rem,
    "**": _pow,
    "&": lambda x, y, t: x & y,
    "|": lambda x, y, t: x | y,
    "^": lambda x, y, t: x ^ y,
    "<<": _shift_left,
    ">>": _shift_right,
}


def _numpy(name: str, *args: Any) -> Any:
    """The numpy function `name` on numpy scalars, its result of the first one's type."""
    with np.errstate(all="ignore"):
        return type(args[0])(getattr(np, name)(*args))


def binop(op: str, a: Any, b: Any) -> Any:
    """`a op b` for scalars (and `==`/`!=` on any values). `++` is not scalar: see library."""
    if op in table.COMPARISONS:
        return compare(op, a, b)
    entry, t = BINARY_OPS.get(op), _exact_type(a)
    if entry is None or (t is not None and not entry.takes(t)):
        raise TypeError(f"operator {op} is not defined on {t or type(a).__name__}")
    if t in table.INTS:
        return make(t, _ON_INTEGERS[op](int(a), int(b), t))
    return _numpy(entry.numpy, a, b)


def compare(op: str, a: Any, b: Any) -> Any:
    if isinstance(a, (list, tuple)):
        equal = values_equal(a, b)
        return np.bool_(equal if op == "==" else not equal)
    return np.bool_(getattr(np, BINARY_OPS[op].numpy)(a, b))


def values_equal(a: Any, b: Any) -> bool:
    """Structural equality (IEEE for floats: nan != nan)."""
    if isinstance(a, (list, tuple)):
        return (isinstance(b, type(a)) and len(a) == len(b)
                and all(values_equal(x, y) for x, y in zip(a, b)))
    return bool(a == b)


def negate(a: Any) -> Any:
    if is_int(a):
        return make(scalar_name(a), -int(a))
    return _numpy(UNARY_OPS["-"].numpy, a)


def logical_not(a: Any) -> Any:
    """`!`: logical not on bool, bitwise complement on integers."""
    if is_int(a):
        return make(scalar_name(a), ~int(a))
    return _numpy(UNARY_OPS["!"].numpy, a)


# ---------------------------------------------------------------- functions and constants

def convert(name: str, a: Any) -> Any:
    """The conversion functions `i32 i64 f32 f64`: integers wrap, floats truncate toward zero.
    A non-finite float converts to 0 (unspecified by the language; tests avoid it)."""
    if name in table.INTS and is_float(a):
        return make(name, math.trunc(float(a)) if math.isfinite(a) else 0)   # f32 too
    return make(name, int(a) if name in table.INTS else a)


def to_float(a: Any) -> Any:
    """The float type results of `floor`/`ceil`/`round` take: the same float, or f64."""
    return a if is_float(a) else np.float64(a)


def _function(name: str) -> Callable[..., Any]:
    """The scalar builtin `name` on numpy scalars."""
    entry = FUNCTIONS[name]
    if entry.form == table.CONVERSION:
        return lambda a: convert(name, a)
    if name == "select":
        return lambda c, a, b: a if c else b       # any values, not only scalars
    if name == "abs":
        return lambda a: make(scalar_name(a), abs(int(a))) if is_int(a) else _numpy("abs", a)
    if entry.type_class == "float":
        return lambda *args: _numpy(entry.numpy, *(to_float(x) for x in args))
    return lambda *args: _numpy(entry.numpy, *args)     # min, max: nan propagates


SCALAR_FUNCTIONS: dict[str, Callable[..., Any]] = {name: _function(name) for name in FUNCTIONS}
FUNCTION_ARITY: dict[str, int] = {name: entry.arity for name, entry in FUNCTIONS.items()}
# `pi`; the type constants depend on the type the context needs (`type_constant`)
CONSTANTS: dict[str, Any] = {
    name: make(entry.result, table.constant_value(name, entry.result))
    for name, entry in table.BUILTINS.items() if entry.form == table.CONSTANT and entry.numpy
}
TYPE_CONSTANTS = frozenset(table.TYPE_CONSTANTS)


def type_constant(name: str, t: T.Type) -> Any:
    """`zero`, `one`, `lowest`, `highest` of the scalar type `t`."""
    if not isinstance(t, T.Scalar) or not table.BUILTINS[name].takes(t.name):
        raise TypeError(f"`{name}` needs a numeric type, got {T.show(t)}")
    return DTYPES[t.name](table.constant_value(name, t.name))
