"""Vectorised scalar code (`Map` and `Scalar` on the `numpy` target): every element computes
what the interpreter computes for it, and errors come only from elements that run the code
that fails."""
import itertools
import math

import numpy as np
import pytest

from accel_kernel.backends.interp import scalars as S
from accel_kernel.backends.numpy import Counters
from accel_kernel.backends.numpy.operators import binary_operator
from accel_kernel.ir import flat as F
from accel_kernel.lang.errors import AccelIndexError, DivisionByZero, SizeError

from .test_numpy_build import (I64, R1, RB1, RF1, SEG, at, fn, interp, rows_of, run, segs, src,
                               st, v)


def map1(text, xs, rep=R1, *free, out_rep=R1, globals=None, source=None, counters=None):
    out = v("out", out_rep)
    f = fn(text, *free, source=source)
    return run([st(out, F.Map(f, (v("arg", rep),)))], out, {"arg": xs, **(globals or {})},
               counters=counters)


I64_EDGES = [0, 1, -1, 2, -2, 3, 7, -7, 63, 64, -64, 2 ** 62, -2 ** 63, 2 ** 63 - 1]
I32_EDGES = [0, 1, -1, 2, -3, 7, 31, 32, -2 ** 31, 2 ** 31 - 1]


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "%", "**", "&", "|", "^", "<<", ">>",
                                "==", "<", ">="])
@pytest.mark.parametrize("elem, edges", [("i64", I64_EDGES), ("i32", I32_EDGES)])
def test_integer_operators_agree_with_the_interpreter_element_by_element(op, elem, edges):
    cls = np.int64 if elem == "i64" else np.int32
    pairs = []
    for x, y in itertools.product(edges, edges):
        try:
            S.binop(op, cls(x), cls(y))
        except (DivisionByZero, SizeError):
            continue        # errors are tested on their own
        pairs.append((x, y))
    a = np.array([p[0] for p in pairs], dtype=cls)
    b = np.array([p[1] for p in pairs], dtype=cls)
    rep = F.Regular(elem, 1)
    out = v("out", F.Regular("bool" if op in ("==", "<", ">=") else elem, 1))
    got = run([st(out, F.Map(fn(f"\\a b -> a {op} b"), (v("a", rep), v("b", rep))))], out,
              {"a": a, "b": b})
    expected = [S.binop(op, cls(x), cls(y)) for x, y in pairs]
    assert got.dtype == np.asarray(expected[0]).dtype
    assert got.tolist() == [e.item() for e in expected]


FLOATS = [0.0, -0.0, 1.5, -2.5, 0.5, 3.0, np.inf, -np.inf, np.nan, 1e300]


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "%", "**"])
def test_float_operators_are_ieee_like_the_interpreter(op):
    pairs = list(itertools.product(FLOATS, FLOATS))
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    out = v("out", RF1)
    got = run([st(out, F.Map(fn(f"\\a b -> a {op} b"), (v("a", RF1), v("b", RF1))))], out,
              {"a": a, "b": b})
    expected = np.array([S.binop(op, np.float64(x), np.float64(y)) for x, y in pairs])
    if op == "**":
        # numpy's scalar power gives nan for (-inf) ** 0.5, its ufunc (and C99) inf
        k = pairs.index((-np.inf, 0.5))
        assert np.isnan(expected[k]) and got[k] == np.inf
        expected[k] = np.inf
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", ["sqrt", "exp", "log", "sin", "cos", "tan", "floor", "ceil",
                                  "round", "abs", "i64", "i32", "f32"])
def test_scalar_functions_agree_with_the_interpreter(name):
    xs = np.array([0.5, 1.5, 2.5, -2.5, -2.7, 2.7, 0.0, -1.0, np.nan, np.inf, 1e20, -3e19])
    expected = [S.SCALAR_FUNCTIONS[name](np.float64(x)) for x in xs]
    elem = {"i64": "i64", "i32": "i32", "f32": "f32"}.get(name, "f64")
    got = map1(f"\\x -> {name} x", xs, RF1, out_rep=F.Regular(elem, 1))
    assert got.dtype == np.asarray(expected[0]).dtype
    np.testing.assert_array_equal(got, np.array(expected, dtype=got.dtype))


def test_min_max_atan2_select_and_conversions_of_integers():
    xs = np.array([-3, 0, 5], dtype=np.int64)
    got = map1("\\x -> (min x 1, max x 1, select (x > 0) x (-x), f64 x, i32 x, abs x)", xs,
               out_rep=F.TupleRep((R1, R1, R1, RF1, F.Regular("i32", 1), R1)))
    assert [g.tolist() for g in got] == [[-3, 0, 1], [1, 1, 5], [3, 0, 5], [-3.0, 0.0, 5.0],
                                         [-3, 0, 5], [3, 0, 5]]
    assert got[4].dtype == np.int32
    assert map1("\\x -> atan2 x 1.0 + pi", np.array([0.0]), RF1, out_rep=RF1).tolist() == \
        [math.pi]


def test_round_is_half_to_even_and_conversions_truncate():
    assert map1("\\x -> round x", np.array([0.5, 1.5, 2.5, -0.5]), RF1,
                out_rep=RF1).tolist() == [0.0, 2.0, 2.0, -0.0]
    assert map1("\\x -> i64 x", np.array([2.7, -2.7, np.nan]), RF1).tolist() == [2, -2, 0]


# ---------------------------------------------------------------- control flow per element


def test_an_untaken_branch_never_raises():
    source = src("map (\\x -> if x == 0 then 0 else 100 / x) xs")
    xs = np.array([0, 5, -3, 0], dtype=np.int64)
    got = map1("\\x -> if x == 0 then 0 else 100 / x", xs, source=source)
    assert got.tolist() == [0, 20, -33, 0]
    assert got.tolist() == interp("map (\\x -> if x == 0 then 0 else 100 / x) [0, 5, -3, 0]")


def test_division_by_zero_in_a_taken_branch_is_raised_at_the_operator():
    source = src("map (\\x -> if x > 0 then 1 else 10 / x) xs")
    with pytest.raises(DivisionByZero) as err:
        map1("\\x -> if x > 0 then 1 else 10 / x", np.array([3, 0, 4]), source=source)
    assert err.value.message == "integer division by zero"
    assert err.value.span == at(source, "10 / x")
    with pytest.raises(DivisionByZero, match="integer remainder by zero"):
        map1("\\x -> 7 % x", np.array([1, 0]))


def test_errors_in_a_map_over_an_empty_array_are_never_raised():
    got = map1("\\x -> if true then 1 / 0 else x", np.zeros(0, dtype=np.int64))
    assert got.dtype == np.int64 and got.tolist() == []
    got = map1("\\x -> (f64 x / 0.0, x < 1)", np.zeros(0, dtype=np.int64),
               out_rep=F.TupleRep((RF1, RB1)))
    assert got[0].dtype == np.float64 and got[1].dtype == np.bool_


def test_collatz_while_loop_stops_per_element():
    collatz = ("\\n -> (loop (x, steps) = (n, 0) while x != 1 do "
               "(if x % 2 == 0 then x / 2 else 3 * x + 1, steps + 1)).1")
    xs = np.array([1, 2, 3, 6, 7, 27], dtype=np.int64)
    counters = Counters()
    got = map1(collatz, xs, counters=counters)

    def steps(n):
        k = 0
        while n != 1:
            n, k = (n // 2 if n % 2 == 0 else 3 * n + 1), k + 1
        return k
    assert got.tolist() == [steps(n) for n in xs]
    assert got.tolist() == interp(f"map ({collatz}) [1, 2, 3, 6, 7, 27]")
    assert counters.depth == 1 + max(steps(n) for n in xs)    # lock-step iterations


def test_for_loop_with_a_per_element_bound():
    got = map1("\\n -> loop acc = 0 for i < n do acc + i", np.array([0, 1, 4, 3]))
    assert got.tolist() == [0, 0, 6, 3]


def test_and_short_circuit_guards_an_index_into_a_free_array():
    source = src("map (\\i -> i < n && xs[i] > 0) is")
    xs_free, n_free = v("xs"), v("n", I64)
    f_text = "\\i -> i < n && xs[i] > 0"
    is_ = np.array([0, 1, 2, 5, 9], dtype=np.int64)
    got = map1(f_text, is_, R1, xs_free, n_free, out_rep=RB1, source=source,
               globals={"xs": np.array([4, -1, 3]), "n": np.int64(3)})
    assert got.tolist() == [True, False, True, False, False]
    with pytest.raises(AccelIndexError) as err:
        map1("\\i -> xs[i] > 0", is_, R1, xs_free, out_rep=RB1, source=src("\\i -> xs[i] > 0"),
             globals={"xs": np.array([4, -1, 3])})
    assert err.value.message == "index 5 out of bounds for array of length 3"


def test_or_short_circuit_and_uniform_conditions():
    got = map1("\\x -> x == 0 || 10 / x > 2", np.array([0, 2, 5]), out_rep=RB1)
    assert got.tolist() == [True, True, False]
    got = map1("\\x -> if k > 0 then x else 1 / 0", np.array([1, 2]), R1, v("k", I64),
               globals={"k": np.int64(1)})
    assert got.tolist() == [1, 2]


def test_index_into_a_free_irregular_array():
    f_text = "\\i -> xss[i][1]"
    got = map1(f_text, np.array([0, 2]), R1, v("xss", SEG),
               globals={"xss": segs([[1, 2], [3], [4, 5, 6]])})
    assert got.tolist() == [2, 5]
    with pytest.raises(AccelIndexError, match="index 1 out of bounds for array of length 1"):
        map1(f_text, np.array([1]), R1, v("xss", SEG),
             globals={"xss": segs([[1, 2], [3], [4, 5, 6]])})


def test_let_tuples_lambdas_operator_functions_and_sections():
    got = map1("\\x -> let (a, b) = (x + 1, x * 2) in (\\p q -> p - q) a b + (+) 1 2", np.arange(3))
    assert got.tolist() == [x + 1 - 2 * x + 3 for x in range(3)]
    got = map1("\\x -> let f = (\\y -> y * 3) in f (f x)", np.arange(3))
    assert got.tolist() == [0, 9, 18]
    got = map1("\\x -> (max 2) x", np.arange(4))
    assert got.tolist() == [2, 2, 2, 3]


def test_map_over_the_values_of_a_segmented_array_and_shifts():
    got = map1("\\x -> x << 62", segs([[1, 2], [], [3]]), SEG, out_rep=SEG)
    assert rows_of(got) == [[2 ** 62, -2 ** 63], [], [-2 ** 62]]
    with pytest.raises(SizeError, match="negative shift amount -1"):
        map1("\\x -> 1 >> x", np.array([0, -1]))


def test_scalar_statement_with_free_variables():
    out = v("out", I64)
    assert run([st(out, F.Scalar(fn("a * b + 1", v("a", I64), v("b", I64))))], out,
               {"a": np.int64(6), "b": np.int64(7)}) == 43
    with pytest.raises(DivisionByZero):
        run([st(out, F.Scalar(fn("1 / 0")))], out)


def test_integer_arithmetic_wraps_without_warnings():
    big = np.array([2 ** 63 - 1], dtype=np.int64)
    with np.errstate(all="raise"):
        got = map1("\\x -> x + 1", big)
    assert got.tolist() == [-2 ** 63]


def test_recognised_operators():
    assert binary_operator(fn("\\a b -> a + b")) == "+"
    assert binary_operator(fn("\\a b -> b * a")) == "*"
    assert binary_operator(fn("(&&)")) == "&&"
    assert binary_operator(fn("min")) == "min"
    assert binary_operator(fn("\\x y -> max x y")) == "max"
    assert binary_operator(fn("\\a b -> a - b")) is None
    assert binary_operator(fn("\\a b -> a + a")) is None
    assert binary_operator(fn("\\a b -> a + b + 0")) is None


def test_bool_and_i32_values_keep_their_types():
    got = map1("\\x -> !x", np.array([True, False]), RB1, out_rep=RB1)
    assert got.tolist() == [False, True] and got.dtype == np.bool_
    got = map1("\\x -> x * 2i32 + 1i32", np.array([2 ** 30], dtype=np.int32),
               F.Regular("i32", 1), out_rep=F.Regular("i32", 1))
    assert got.dtype == np.int32 and got.tolist() == [-2 ** 31 + 1]


def test_for_in_over_a_free_array_and_curried_lambdas_through_the_scalar_ir():
    """Both come from the first-order lowering (ir/scalar_lower.py): `for x in xs` is a
    `for k < length xs` loop, `(\\a -> \\b -> ...) e` binds `a` before giving the inner
    function."""
    got = map1("\\s -> loop acc = s for x in xs do acc + x * s", np.array([0, 1, 2]), R1,
               v("xs"), globals={"xs": np.array([4, 5, 6])})
    assert got.tolist() == [0, 1 + 15, 2 + 30]
    got = map1("\\x -> (\\a -> \\b -> a * b) (x + 1) x", np.arange(4))
    assert got.tolist() == [0, 2, 6, 12]
    got = map1("\\x -> (/ (x - 1)) 6", np.array([2, 3, 4]))
    assert got.tolist() == [6, 3, 2]
