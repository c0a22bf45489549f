"""The value boundary: accel text, JSON, numpy/Awkward and back (values.py)."""
import math

import awkward as ak
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from accel_kernel.backends.interp import Sequence
from accel_kernel.lang import types as T
from accel_kernel.values import format_value, from_python, to_json, to_python

I64, I32, F64, F32, BOOL = T.I64, T.I32, T.F64, T.F32, T.BOOL
A = T.Array


def i64s(*xs):
    return [np.int64(x) for x in xs]


@pytest.mark.parametrize("value, type, text", [
    (np.int64(5), I64, "5"),
    (np.int64(-5), I64, "-5"),
    (np.int32(5), I32, "5i32"),
    (np.float64(0.1), F64, "0.1"),
    (np.float64(2.0), F64, "2.0"),
    (np.float64(1e20), F64, "1e+20"),
    (np.float32(1.5), F32, "1.5f32"),
    (np.float32(0.1), F32, "0.1f32"),
    (np.float64(np.inf), F64, "inf"),
    (np.float64(-np.inf), F64, "-inf"),
    (np.float32(np.nan), F32, "nanf32"),
    (np.bool_(True), BOOL, "true"),
    (i64s(1, 2, 3), A(I64), "[1, 2, 3]"),
    ([], A(I64), "[]"),
    ((np.int64(1), np.float64(2.0)), T.Tuple((I64, F64)), "(1, 2.0)"),
    ([i64s(1, 2), i64s(3)], A(A(I64)), "[[1, 2], [3]]"),
    ([(np.int32(1), [np.bool_(False)])], A(T.Tuple((I32, A(BOOL)))), "[(1i32, [false])]"),
])
def test_format_value(value, type, text):
    assert format_value(value, type) == text


def test_format_value_elides_long_arrays():
    assert format_value(i64s(*range(10)), A(I64), max_elems=4) == "[0, 1, ..., 8, 9]"
    assert format_value(i64s(*range(3)), A(I64), max_elems=4) == "[0, 1, 2]"
    nested = [i64s(*range(6))] * 6
    assert format_value(nested, A(A(I64)), max_elems=2) == "[[0, ..., 5], ..., [0, ..., 5]]"


def test_format_sequence_as_its_array():
    assert format_value(Sequence((i64s(1), i64s(2, 3))), T.Seq(A(I64))) == "[[1], [2, 3]]"


def test_to_json():
    assert to_json([np.float64(1.5), np.float64(np.nan)], A(F64)) == [1.5, None]
    assert to_json((np.int32(1), np.bool_(True)), T.Tuple((I32, BOOL))) == [1, True]
    assert to_json([i64s(1), []], A(A(I64))) == [[1], []]


def test_regular_arrays_become_numpy_of_the_exact_dtype():
    out = to_python([i64s(1, 2), i64s(3, 4)], A(A(I64)))
    assert isinstance(out, np.ndarray) and out.dtype == np.int64 and out.shape == (2, 2)
    out = to_python([], A(F32))
    assert out.dtype == np.float32 and out.shape == (0,)
    assert to_python([[], []], A(A(BOOL))).shape == (2, 0)
    assert type(to_python(np.int32(3), I32)) is np.int32


def test_ragged_arrays_become_awkward_with_offsets():
    value = [i64s(1, 2, 3), [], i64s(4)]
    out = to_python(value, A(A(I64)))
    assert isinstance(out, ak.Array)
    assert out.tolist() == [[1, 2, 3], [], [4]]
    layout = out.layout
    assert isinstance(layout, ak.contents.ListOffsetArray)
    assert np.asarray(layout.offsets).tolist() == [0, 3, 3, 4]
    assert np.asarray(layout.offsets).dtype == np.int64
    assert layout.content.data.dtype == np.int64


def test_ragged_at_depth_three():
    value = [[i64s(1), []], [], [[], i64s(2, 3), i64s(4)]]
    out = to_python(value, A(A(A(I64))))
    assert isinstance(out, ak.Array) and out.tolist() == [[[1], []], [], [[], [2, 3], [4]]]
    assert np.asarray(out.layout.offsets).tolist() == [0, 2, 2, 5]


def test_arrays_of_tuples_become_awkward_tuples():
    value = [(np.int64(0), np.float64(1.5)), (np.int64(1), np.float64(2.5))]
    out = to_python(value, A(T.Tuple((I64, F64))))
    assert isinstance(out, ak.Array) and out.tolist() == [(0, 1.5), (1, 2.5)]
    assert out.fields == ["0", "1"]


def test_sequences_and_tuples_to_python():
    out = to_python(Sequence((i64s(1), i64s(2, 3))), T.Seq(A(I64)))
    assert isinstance(out, ak.Array) and out.tolist() == [[1], [2, 3]]
    pair = to_python((np.int64(1), [np.float64(2.0)]), T.Tuple((I64, A(F64))))
    assert isinstance(pair, tuple) and pair[1].dtype == np.float64


def test_from_python():
    assert from_python(np.array([1, 2]), A(I64)) == i64s(1, 2)
    assert type(from_python(np.array([1, 2]), A(I64))[0]) is np.int64
    assert from_python(ak.Array([[1], []]), A(A(I64))) == [i64s(1), []]
    assert from_python(3, I32) == np.int32(3) and type(from_python(3, I32)) is np.int32
    assert from_python((1, 2.5), T.Tuple((I64, F64))) == (1, 2.5)
    assert from_python(ak.Array([(1, 2.0)]), A(T.Tuple((I64, F64)))) == [(1, 2.0)]
    seq = from_python(iter([[1], [2, 3]]), T.Seq(A(I64)))
    assert isinstance(seq, Sequence) and list(seq) == [i64s(1), i64s(2, 3)]


@pytest.mark.parametrize("obj, type", [
    (np.array([1.5]), A(I64)),
    (1.5, I64),
    (True, I64),
    (2 ** 40, I32),
    ([1, 2], I64),
    (5, A(I64)),
    ((1, 2, 3), T.Tuple((I64, I64))),
])
def test_from_python_rejects_what_does_not_fit(obj, type):
    with pytest.raises(TypeError):
        from_python(obj, type)


# ---------------------------------------------------------------- round trips (hypothesis)

scalar_types = st.sampled_from([I64, I32, F64, F32, BOOL])


def types_strategy():
    return st.recursive(
        scalar_types,
        lambda inner: st.one_of(st.builds(A, inner),
                                st.lists(inner, min_size=2, max_size=3).map(
                                    lambda ts: T.Tuple(tuple(ts)))),
        max_leaves=4)


def values_of(t):
    if isinstance(t, T.Scalar):
        if t.name == "bool":
            return st.booleans().map(np.bool_)
        if t.name == "i64":
            return st.integers(-2 ** 63, 2 ** 63 - 1).map(np.int64)
        if t.name == "i32":
            return st.integers(-2 ** 31, 2 ** 31 - 1).map(np.int32)
        if t.name == "f32":
            return st.floats(width=32, allow_nan=False).map(np.float32)
        return st.floats(allow_nan=False).map(np.float64)
    if isinstance(t, T.Array):
        return st.lists(values_of(t.elem), max_size=4)
    return st.tuples(*(values_of(e) for e in t.elems))


typed_values = types_strategy().flatmap(lambda t: st.tuples(st.just(t), values_of(t)))


def same(a, b):
    """Equal values with equal scalar types."""
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and (a == b or (math.isnan(a) and math.isnan(b)))


@settings(max_examples=200, deadline=None)
@given(typed_values)
def test_python_round_trip(typed):
    t, value = typed
    assert same(from_python(to_python(value, t), t), value)


@settings(max_examples=200, deadline=None)
@given(typed_values)
def test_json_round_trip_through_from_python(typed):
    t, value = typed
    assume("inf" not in format_value(value, t))     # non-finite floats are JSON null
    back = from_python(_json_to_python(to_json(value, t), t), t)
    assert same(back, value)


def _json_to_python(j, t):
    if isinstance(t, T.Tuple):
        return tuple(_json_to_python(x, e) for x, e in zip(j, t.elems))
    if isinstance(t, T.Array):
        return [_json_to_python(x, t.elem) for x in j]
    return j


@settings(max_examples=100, deadline=None)
@given(typed_values)
def test_format_is_deterministic_and_balanced(typed):
    t, value = typed
    text = format_value(value, t)
    assert text.count("[") == text.count("]") and text.count("(") == text.count(")")
