"""Scalar semantics of the reference interpreter (docs/language.md, "Scalar semantics")."""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from accel_kernel.backends.interp import scalars as S
from accel_kernel.lang import types as T
from accel_kernel.lang.errors import DivisionByZero, SizeError

I64_MIN, I64_MAX = -2 ** 63, 2 ** 63 - 1
i64s = st.integers(I64_MIN, I64_MAX)
i32s = st.integers(-2 ** 31, 2 ** 31 - 1)


def c_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def wrap64(x: int) -> int:
    return (x + 2 ** 63) % 2 ** 64 - 2 ** 63


@pytest.mark.parametrize("x, y, q, r", [
    (7, 2, 3, 1), (-7, 2, -3, -1), (7, -2, -3, 1), (-7, -2, 3, -1), (0, 5, 0, 0),
    (I64_MIN, -1, I64_MIN, 0),
])
def test_integer_division_truncates_and_remainder_has_the_dividends_sign(x, y, q, r):
    a, b = np.int64(x), np.int64(y)
    assert S.binop("/", a, b) == q and type(S.binop("/", a, b)) is np.int64
    assert S.binop("%", a, b) == r


@given(i64s, i64s.filter(lambda v: v != 0))
def test_division_identity(x, y):
    q = S.binop("/", np.int64(x), np.int64(y))
    r = S.binop("%", np.int64(x), np.int64(y))
    assert int(q) == wrap64(c_div(x, y))
    assert wrap64(int(q) * y + int(r)) == x
    assert int(r) == 0 or (int(r) < 0) == (x < 0)


@pytest.mark.parametrize("op", ["/", "%"])
def test_integer_division_by_zero(op):
    with pytest.raises(DivisionByZero):
        S.binop(op, np.int64(1), np.int64(0))
    with pytest.raises(DivisionByZero):
        S.binop(op, np.int32(1), np.int32(0))


def test_float_division_is_ieee():
    assert S.binop("/", np.float64(1), np.float64(0)) == np.inf
    assert math.isnan(S.binop("/", np.float64(0), np.float64(0)))
    assert type(S.binop("/", np.float32(1), np.float32(3))) is np.float32
    assert S.binop("%", np.float64(-7.5), np.float64(2)) == -1.5


@given(i64s, i64s)
def test_wrap_around_i64(x, y):
    assert int(S.binop("+", np.int64(x), np.int64(y))) == wrap64(x + y)
    assert int(S.binop("*", np.int64(x), np.int64(y))) == wrap64(x * y)
    assert int(S.binop("-", np.int64(x), np.int64(y))) == wrap64(x - y)


@given(i32s, i32s)
def test_wrap_around_i32(x, y):
    out = S.binop("*", np.int32(x), np.int32(y))
    assert type(out) is np.int32
    assert int(out) == (x * y + 2 ** 31) % 2 ** 32 - 2 ** 31


def test_negation_and_abs_wrap():
    assert S.negate(np.int64(I64_MIN)) == I64_MIN
    assert S.SCALAR_FUNCTIONS["abs"](np.int64(I64_MIN)) == I64_MIN
    assert S.SCALAR_FUNCTIONS["abs"](np.int32(-3)) == 3


def test_integer_power():
    assert S.binop("**", np.int64(3), np.int64(4)) == 81
    assert S.binop("**", np.int64(2), np.int64(64)) == 0          # wraps
    assert S.binop("**", np.int64(2), np.int64(-1)) == 0          # 1 / 2
    assert S.binop("**", np.int64(1), np.int64(-5)) == 1
    assert S.binop("**", np.int64(-1), np.int64(-3)) == -1
    with pytest.raises(DivisionByZero):
        S.binop("**", np.int64(0), np.int64(-1))
    assert S.binop("**", np.float64(2), np.float64(-1)) == 0.5


def test_shifts():
    assert S.binop("<<", np.int64(1), np.int64(63)) == I64_MIN
    assert S.binop("<<", np.int64(1), np.int64(64)) == 0
    assert S.binop(">>", np.int64(-8), np.int64(1)) == -4
    assert S.binop(">>", np.int64(-8), np.int64(100)) == -1
    assert S.binop(">>", np.int64(8), np.int64(100)) == 0
    assert S.binop("<<", np.int32(1), np.int32(31)) == -2 ** 31
    with pytest.raises(SizeError):
        S.binop("<<", np.int64(1), np.int64(-1))


def test_bitwise_and_not():
    assert S.binop("&", np.int64(6), np.int64(3)) == 2
    assert S.binop("|", np.int64(6), np.int64(3)) == 7
    assert S.binop("^", np.int64(6), np.int64(3)) == 5
    assert S.logical_not(np.int64(0)) == -1
    assert S.logical_not(np.bool_(True)) == np.bool_(False)
    assert S.binop("^", np.bool_(True), np.bool_(True)) == np.bool_(False)


@pytest.mark.parametrize("x, out", [(2.7, 2), (-2.7, -2), (0.5, 0), (1e30, 0)])
def test_conversions_truncate(x, out):
    if abs(x) < 2 ** 63:
        assert S.convert("i64", np.float64(x)) == out
    assert type(S.convert("i64", np.float64(x))) is np.int64


def test_conversions():
    assert S.convert("i32", np.int64(2 ** 32 + 5)) == 5
    assert S.convert("i64", np.bool_(True)) == 1
    assert type(S.convert("f32", np.int64(3))) is np.float32
    assert S.convert("f64", np.float32(0.1)) == float(np.float32(0.1))
    assert S.convert("i64", np.float64(np.nan)) == 0


@pytest.mark.parametrize("x, out", [(0.5, 0.0), (1.5, 2.0), (2.5, 2.0), (-0.5, -0.0), (-1.5, -2.0)])
def test_round_half_to_even_returns_float(x, out):
    result = S.SCALAR_FUNCTIONS["round"](np.float64(x))
    assert type(result) is np.float64 and result == out


def test_floor_ceil_keep_the_float_type():
    assert type(S.SCALAR_FUNCTIONS["floor"](np.float32(1.5))) is np.float32
    assert S.SCALAR_FUNCTIONS["floor"](np.float64(-1.5)) == -2.0
    assert S.SCALAR_FUNCTIONS["ceil"](np.float64(-1.5)) == -1.0


def test_min_max_select():
    assert S.SCALAR_FUNCTIONS["min"](np.int64(3), np.int64(-1)) == -1
    assert type(S.SCALAR_FUNCTIONS["max"](np.int32(3), np.int32(-1))) is np.int32
    assert math.isnan(S.SCALAR_FUNCTIONS["max"](np.float64(np.nan), np.float64(1)))
    assert S.SCALAR_FUNCTIONS["select"](np.bool_(False), np.int64(1), np.int64(2)) == 2


def test_type_constants():
    assert S.type_constant("lowest", T.F64) == -np.inf
    assert S.type_constant("highest", T.I32) == 2 ** 31 - 1
    assert type(S.type_constant("zero", T.F32)) is np.float32
    assert S.type_constant("one", T.I64) == 1
    with pytest.raises(TypeError):
        S.type_constant("zero", T.BOOL)


def test_comparisons_give_bool():
    assert S.binop("<", np.int64(1), np.int64(2)) is np.bool_(True) or S.binop(
        "<", np.int64(1), np.int64(2)) == np.bool_(True)
    assert type(S.binop("==", np.float64(1), np.float64(1))) is np.bool_
    assert not S.binop("==", np.float64(np.nan), np.float64(np.nan))
