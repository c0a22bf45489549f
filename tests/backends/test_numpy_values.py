"""Flat values of the `numpy` target and their conversions from and to interpreter values."""
import numpy as np
import pytest

from accel_kernel.backends.numpy import Segs, from_flat, rep_of_type, rep_of_value, to_flat
from accel_kernel.backends.numpy.rows import as_regular, as_segs, coerce
from accel_kernel.ir import flat as F
from accel_kernel.lang import types as T

i64 = np.int64
ARR = T.Array


def nested(rows):
    """Python ints to numpy scalars, keeping the list structure."""
    if isinstance(rows, list):
        return [nested(r) for r in rows]
    if isinstance(rows, tuple):
        return tuple(nested(r) for r in rows)
    if isinstance(rows, float):
        return np.float64(rows)
    if isinstance(rows, bool):
        return np.bool_(rows)
    return i64(rows)


def same(a, b) -> bool:
    """Equal values of equal numpy types, all the way down."""
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


RAGGED3 = [[[1, 2], [], [3]], [], [[]], [[4], [5, 6, 7]]]


def test_ragged_depth_three_with_empty_rows_round_trips():
    value = nested(RAGGED3)
    t = ARR(ARR(ARR(T.I64)))
    rep = rep_of_value(value, t)
    assert rep == F.Segmented(F.Segmented(F.Regular("i64", 1)))
    flat = to_flat(value, rep)
    assert flat.offsets.tolist() == [0, 3, 3, 4, 6]
    assert flat.values.offsets.tolist() == [0, 2, 2, 3, 3, 4, 7]
    assert flat.values.values.tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert flat.offsets.dtype == np.int64
    assert same(from_flat(flat, t), value)
    assert same(from_flat(flat, rep), value)


def test_regular_values_become_ndarrays_of_their_rank():
    value = nested([[1, 2, 3], [4, 5, 6]])
    rep = rep_of_value(value, ARR(ARR(T.I64)))
    assert rep == F.Regular("i64", 2)
    flat = to_flat(value, rep)
    assert flat.shape == (2, 3) and flat.dtype == np.int64
    assert same(from_flat(flat, rep), value)


@pytest.mark.parametrize("rows, shape", [([], (0, 0)), ([[]], (1, 0)), ([[], []], (2, 0))])
def test_empty_regular_shapes(rows, shape):
    rep = F.Regular("f64", 2)
    flat = to_flat(rows, rep)
    assert flat.shape == shape
    assert from_flat(flat, rep) == rows


def test_a_ragged_value_does_not_fit_a_regular_representation():
    with pytest.raises(ValueError, match="ragged"):
        to_flat(nested([[1], [2, 3]]), F.Regular("i64", 2))


def test_irregular_rows_of_regular_elements():
    value = nested([[[1, 2], [3, 4]], [], [[5, 6]]])
    rep = F.Segmented(F.Regular("i64", 2))
    flat = to_flat(value, rep)
    assert flat.values.shape == (3, 2)
    assert same(from_flat(flat, ARR(ARR(ARR(T.I64)))), value)


def test_arrays_of_tuples_are_tuples_of_arrays():
    t = ARR(T.Tuple((T.I64, T.F64)))
    value = nested([(1, 0.5), (2, 1.5)])
    rep = rep_of_type(t)
    assert rep == F.TupleRep((F.Regular("i64", 1), F.Regular("f64", 1)))
    flat = to_flat(value, rep)
    assert flat[0].tolist() == [1, 2] and flat[1].tolist() == [0.5, 1.5]
    assert same(from_flat(flat, t), value)
    # without the type, a TupleRep reads as a tuple of arrays
    assert same(from_flat(flat, rep), ([i64(1), i64(2)], [np.float64(0.5), np.float64(1.5)]))


def test_ragged_arrays_of_tuples_both_ways_of_storing_them():
    t = ARR(ARR(T.Tuple((T.I64, T.BOOL))))
    value = nested([[(1, True)], [], [(2, False), (3, True)]])
    split = rep_of_value(value, t)
    assert split == F.TupleRep((F.Segmented(F.Regular("i64", 1)),
                                F.Segmented(F.Regular("bool", 1))))
    assert same(from_flat(to_flat(value, split), t), value)
    shared = F.Segmented(F.TupleRep((F.Regular("i64", 1), F.Regular("bool", 1))))
    flat = to_flat(value, shared)
    assert isinstance(flat, Segs) and isinstance(flat.values, tuple)
    assert same(from_flat(flat, t), value)
    assert same(from_flat(coerce(flat, split), t), value)
    assert isinstance(coerce(to_flat(value, split), shared), Segs)


def test_scalars_and_tuples_of_scalars():
    assert same(to_flat(np.int32(5), F.ScalarRep("i32")), np.int32(5))
    t = T.Tuple((T.I64, ARR(T.F64)))
    value = (i64(3), [np.float64(1.0)])
    rep = rep_of_type(t)
    assert same(from_flat(to_flat(value, rep), t), value)


def test_rep_of_type_irregular_and_regular():
    t = ARR(ARR(ARR(T.F32)))
    assert rep_of_type(t) == F.Regular("f32", 3)
    assert rep_of_type(t, regular=False) == F.Segmented(F.Segmented(F.Regular("f32", 1)))


def test_regular_and_segmented_forms_convert():
    m = np.arange(6, dtype=np.int64).reshape(2, 3)
    s = as_segs(m)
    assert s.offsets.tolist() == [0, 3, 6]
    assert np.array_equal(as_regular(s), m)
    assert as_regular(Segs(np.array([0, 1, 3]), np.arange(3))) is None
    with pytest.raises(ValueError):
        coerce(Segs(np.array([0, 1, 3]), np.arange(3)), F.Regular("i64", 2))
    with pytest.raises(ValueError):
        coerce(np.arange(3.0), F.Regular("i64", 1))
