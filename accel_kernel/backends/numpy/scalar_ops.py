"""accel's scalar operators and functions on whole numpy arrays (docs/language.md, "Scalar
semantics"), matching `backends/interp/scalars.py` element by element. What the operators and
functions are, their arities, errors and numpy functions: the one table of scalar semantics,
`lang/scalar_ops.py`; this module applies them to lanes.

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

from ...lang import scalar_ops as table
from ...lang.scalar_ops import BINARY_OPS, DTYPES, UNARY_OPS, ScalarError
from ...lang.source import Span


def scalar_or_array(x: Any) -> Any:
    """A 0-d array as a numpy scalar; anything else unchanged."""
    return x[()] if isinstance(x, np.ndarray) and x.ndim == 0 else x


def kind(x: Any) -> str:
    """'b' (bool), 'i' (integer) or 'f' (float)."""
    return np.asarray(x).dtype.kind


def _numpy(name: str) -> Callable[..., Any]:
    return getattr(np, name)


def binop(op: str, a: Any, b: Any, span: Span | None, check: bool = True) -> Any:
    """`a op b` elementwise (not `&&`/`||` short-circuit: both sides are values here)."""
    entry, t = BINARY_OPS.get(op), table.scalar_type(np.asarray(a).dtype)
    if entry is None or t is None or not entry.takes(t):
        raise TypeError(f"operator {op} is not defined on {np.asarray(a).dtype}")
    if entry.numpy_is_exact(t):
        return scalar_or_array(_numpy(entry.numpy)(a, b))
    return scalar_or_array(_ON_INTEGERS[op](a, b, entry.error, span, check))


def _nonzero_divisor(b: Any, error: ScalarError, span: Span | None, check: bool) -> Any:
    zero = np.equal(b, 0)
    if not np.any(zero):
        return b
    if check:
        raise error.error(span)
    return np.where(zero, np.ones_like(b), b)


def _int_div(a: Any, b: Any, error: ScalarError, span: Span | None, check: bool) -> Any:
    b = _nonzero_divisor(b, error, span, check)
    quotient = np.floor_divide(a, b)
    # floor to truncation: one up where the division is inexact and the signs differ
    inexact = np.not_equal(np.remainder(a, b), 0) & np.not_equal(np.less(a, 0), np.less(b, 0))
    return quotient + inexact.astype(np.asarray(quotient).dtype)


def _int_rem(a: Any, b: Any, error: ScalarError, span: Span | None, check: bool) -> Any:
    b = _nonzero_divisor(b, error, span, check)
    return np.fmod(a, b)     # C's remainder: the sign of the dividend


def _int_pow(a: Any, n: Any, error: ScalarError, span: Span | None, check: bool) -> Any:
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
        raise error.error(span)
    reciprocal = np.where(np.equal(power, 1), 1, np.where(np.equal(power, -1), -1, 0))
    return np.where(negative, reciprocal.astype(dtype), power).astype(dtype)


def _shift(left: bool) -> Callable[..., Any]:
    def shift(a: Any, n: Any, error: ScalarError, span: Span | None, check: bool) -> Any:
        negative = np.less(n, 0)
        if check and np.any(negative):
            raise error.error(span, int(np.ravel(n)[np.flatnonzero(np.ravel(negative))[0]]))
        dtype = np.asarray(a).dtype
        bits = dtype.itemsize * 8
        amount = np.clip(n, 0, bits - 1).astype(dtype)
        if not left and dtype.kind == "i":
            return np.right_shift(a, amount)      # arithmetic: -1 for a negative a past the width
        if not left:                              # logical on unsigned: 0 past the width
            return np.where(np.greater_equal(n, bits), np.zeros_like(a), np.right_shift(a, amount))
        return np.where(np.greater_equal(n, bits), np.zeros_like(a), np.left_shift(a, amount))
    return shift


# the integer rules numpy's own functions do not give (`numpy_exact` in the table)
_ON_INTEGERS: dict[str, Callable[..., Any]] = {
    "/": _int_div, "%": _int_rem, "**": _int_pow, "<<": _shift(True), ">>": _shift(False),
}


def negate(a: Any) -> Any:
    return scalar_or_array(_numpy(UNARY_OPS["-"].numpy)(a))


def logical_not(a: Any) -> Any:
    """`!`: logical not on bool, bitwise complement on integers."""
    return scalar_or_array(_numpy(UNARY_OPS["!"].numpy)(a))


# ---------------------------------------------------------------- functions


def convert(name: str, a: Any) -> Any:
    """`i32 i64 f32 f64`: integers wrap, floats truncate toward zero, NaN and infinities
    give 0 (as the interpreter)."""
    target = DTYPES[name]
    if name in table.FLOATS or kind(a) != "f":
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


def _function(name: str) -> Callable[..., Any]:
    """The scalar builtin `name` on lanes."""
    entry = table.FUNCTIONS[name]
    if entry.form == table.CONVERSION:
        return lambda a: convert(name, a)
    fn = _numpy(entry.numpy)
    if entry.type_class == "float":
        return lambda *args: scalar_or_array(fn(*(_to_float(x) for x in args)))
    return lambda *args: scalar_or_array(fn(*args))    # min, max: NaN propagates


FUNCTIONS: dict[str, tuple[int, Callable[..., Any]]] = {
    name: (entry.arity, _function(name)) for name, entry in table.FUNCTIONS.items()
}

CONSTANTS: dict[str, Any] = {
    name: DTYPES[entry.result](table.constant_value(name, entry.result))
    for name, entry in table.BUILTINS.items() if entry.form == table.CONSTANT and entry.numpy
}
