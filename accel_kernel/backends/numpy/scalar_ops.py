"""accel's scalar operators and functions on whole numpy arrays (docs/language.md, "Scalar
semantics"), matching `backends/interp/scalars.py` element by element.

Operands are numpy scalars (a value every element shares) or 1-d arrays (one entry per
element); the result is a numpy scalar when every operand is one. Integer arithmetic wraps;
`/` truncates toward zero, `%` takes the dividend's sign; floats are IEEE. The caller runs
under `np.errstate(all="ignore")`.

`check=False` evaluates without raising (used only to learn result types when no element
runs the code): divisors and shift amounts are made harmless instead.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...lang.errors import DivisionByZero, SizeError
from ...lang.source import Span

COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
    ">": np.greater, ">=": np.greater_equal,
}

_COMMON: dict[str, Callable[[Any, Any], Any]] = {
    "+": np.add, "-": np.subtract, "*": np.multiply,
}
_BITS: dict[str, Callable[[Any, Any], Any]] = {
    "&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor,
}
_BOOL: dict[str, Callable[[Any, Any], Any]] = {
    "&": np.logical_and, "|": np.logical_or, "^": np.logical_xor,
    "&&": np.logical_and, "||": np.logical_or,
}
_FLOAT: dict[str, Callable[[Any, Any], Any]] = {
    **_COMMON, "/": np.divide, "%": np.fmod, "**": np.power,
}


def scalar_or_array(x: Any) -> Any:
    """A 0-d array as a numpy scalar; anything else unchanged."""
    return x[()] if isinstance(x, np.ndarray) and x.ndim == 0 else x


def kind(x: Any) -> str:
    """'b' (bool), 'i' (integer) or 'f' (float)."""
    return np.asarray(x).dtype.kind


def binop(op: str, a: Any, b: Any, span: Span | None, check: bool = True) -> Any:
    """`a op b` elementwise (not `&&`/`||` short-circuit: both sides are values here)."""
    if op in COMPARISONS:
        return scalar_or_array(COMPARISONS[op](a, b))
    k = kind(a)
    if k == "b":
        table = _BOOL
    elif k == "f":
        table = _FLOAT
    else:
        return scalar_or_array(_int_binop(op, a, b, span, check))
    if op not in table:
        raise TypeError(f"operator {op} is not defined on {np.asarray(a).dtype}")
    return scalar_or_array(table[op](a, b))


def _int_binop(op: str, a: Any, b: Any, span: Span | None, check: bool) -> Any:
    if op in _COMMON:
        return _COMMON[op](a, b)
    if op in _BITS:
        return _BITS[op](a, b)
    if op == "/":
        return _int_div(a, b, span, check)
    if op == "%":
        return _int_rem(a, b, span, check)
    if op == "**":
        return _int_pow(a, b, span, check)
    if op in ("<<", ">>"):
        return _shift(op, a, b, span, check)
    raise TypeError(f"operator {op} is not defined on integers")


def _nonzero_divisor(b: Any, message: str, span: Span | None, check: bool) -> Any:
    zero = np.equal(b, 0)
    if not np.any(zero):
        return b
    if check:
        raise DivisionByZero(message, span)
    return np.where(zero, np.ones_like(b), b)


def _int_div(a: Any, b: Any, span: Span | None, check: bool) -> Any:
    b = _nonzero_divisor(b, "integer division by zero", span, check)
    quotient = np.floor_divide(a, b)
    # floor to truncation: one up where the division is inexact and the signs differ
    inexact = np.not_equal(np.remainder(a, b), 0) & np.not_equal(np.less(a, 0), np.less(b, 0))
    return quotient + inexact.astype(np.asarray(quotient).dtype)


def _int_rem(a: Any, b: Any, span: Span | None, check: bool) -> Any:
    b = _nonzero_divisor(b, "integer remainder by zero", span, check)
    return np.fmod(a, b)     # C's remainder: the sign of the dividend


def _int_pow(a: Any, n: Any, span: Span | None, check: bool) -> Any:
    dtype = np.asarray(a).dtype
    negative = np.less(n, 0)
    exponent = np.where(negative, np.negative(n), n)
    # -INT_MIN is INT_MIN: use x ** (2**63 - 1) * x for it
    too_big = np.less(exponent, 0)
    safe = np.where(too_big, np.iinfo(dtype).max, exponent).astype(dtype)
    power = np.power(a, safe)
    power = np.where(too_big, np.multiply(power, a), power)
    if not np.any(negative):
        return power
    # x ** n for n < 0 is 1 / x ** -n in integer division (docs/language.md)
    if check and np.any(negative & np.equal(power, 0)):
        raise DivisionByZero("integer division by zero (negative power of 0)", span)
    reciprocal = np.where(np.equal(power, 1), 1, np.where(np.equal(power, -1), -1, 0))
    return np.where(negative, reciprocal.astype(dtype), power).astype(dtype)


def _shift(op: str, a: Any, n: Any, span: Span | None, check: bool) -> Any:
    negative = np.less(n, 0)
    if check and np.any(negative):
        first = int(np.ravel(n)[np.flatnonzero(np.ravel(negative))[0]])
        raise SizeError(f"negative shift amount {first}", span)
    dtype = np.asarray(a).dtype
    bits = dtype.itemsize * 8
    amount = np.clip(n, 0, bits - 1).astype(dtype)
    if op == ">>":
        return np.right_shift(a, amount)      # arithmetic: -1 for a negative a past the width
    return np.where(np.greater_equal(n, bits), np.zeros_like(a), np.left_shift(a, amount))


def negate(a: Any) -> Any:
    return scalar_or_array(np.negative(a))


def logical_not(a: Any) -> Any:
    """`!`: logical not on bool, bitwise complement on integers."""
    if kind(a) == "b":
        return scalar_or_array(np.logical_not(a))
    return scalar_or_array(np.invert(a))


# ---------------------------------------------------------------- functions


def convert(name: str, a: Any) -> Any:
    """`i32 i64 f32 f64`: integers wrap, floats truncate toward zero, NaN and infinities
    give 0 (as the interpreter)."""
    target = {"i32": np.int32, "i64": np.int64, "f32": np.float32, "f64": np.float64}[name]
    if np.dtype(target).kind == "f" or kind(a) != "f":
        return scalar_or_array(np.asarray(a).astype(target))
    t = np.trunc(np.asarray(a, dtype=np.float64))
    t = np.where(np.isfinite(t), t, 0.0)
    # outside the int64 range: reduce modulo 2**64 first (exact in floating point)
    t = np.fmod(t, 2.0 ** 64)
    t = np.where(t >= 2.0 ** 63, t - 2.0 ** 64, t)
    t = np.where(t < -2.0 ** 63, t + 2.0 ** 64, t)
    return scalar_or_array(t.astype(np.int64).astype(target))


def _to_float(a: Any) -> Any:
    return a if kind(a) == "f" else np.asarray(a).astype(np.float64)


def _unary_float(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda a: scalar_or_array(fn(_to_float(a)))


FUNCTIONS: dict[str, tuple[int, Callable[..., Any]]] = {
    "min": (2, lambda a, b: scalar_or_array(np.minimum(a, b))),    # NaN propagates
    "max": (2, lambda a, b: scalar_or_array(np.maximum(a, b))),
    "abs": (1, lambda a: scalar_or_array(np.abs(a))),
    "sqrt": (1, _unary_float(np.sqrt)),
    "exp": (1, _unary_float(np.exp)),
    "log": (1, _unary_float(np.log)),
    "sin": (1, _unary_float(np.sin)),
    "cos": (1, _unary_float(np.cos)),
    "tan": (1, _unary_float(np.tan)),
    "floor": (1, _unary_float(np.floor)),
    "ceil": (1, _unary_float(np.ceil)),
    "round": (1, _unary_float(np.round)),    # half to even
    "atan2": (2, lambda a, b: scalar_or_array(np.arctan2(a, b))),
    "select": (3, lambda c, a, b: scalar_or_array(np.where(c, a, b))),
    "i32": (1, lambda a: convert("i32", a)),
    "i64": (1, lambda a: convert("i64", a)),
    "f32": (1, lambda a: convert("f32", a)),
    "f64": (1, lambda a: convert("f64", a)),
}

CONSTANTS: dict[str, Any] = {"pi": np.float64(np.pi)}
