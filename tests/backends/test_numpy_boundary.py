"""numpy and Awkward arrays straight to flat values and back: the same Python values as the
interpreter's conversions (values.from_python / to_python), without per-element loops."""
from __future__ import annotations

import awkward as ak
import numpy as np
import pytest

from accel_kernel.backends.numpy.boundary import flat_from_python, python_from_flat, rep_of_flat
from accel_kernel.backends.numpy.values import Segs, from_flat, rep_of_value, to_flat
from accel_kernel.ir import flat as F
from accel_kernel.lang import types as T
from accel_kernel.values import from_python, to_python

I64, F64 = T.Scalar("i64"), T.Scalar("f64")


def arr(t: T.Type, rank: int = 1) -> T.Type:
    for _ in range(rank):
        t = T.Array(t)
    return t


CASES = [
    (np.arange(5, dtype=np.int64), arr(I64)),
    (np.arange(6.0).reshape(2, 3), arr(F64, 2)),
    (np.zeros((0, 3)), arr(F64, 2)),
    (ak.Array([[1, 2, 3], [], [4, 5], []]), arr(I64, 2)),
    (ak.Array([[], [], []]), arr(I64, 2)),
    (ak.Array([[1.0, 2.0], [3.0, 4.0]]), arr(F64, 2)),
    (ak.Array([[[1], [2, 3]], [], [[4, 5, 6]]]), arr(I64, 3)),
    (ak.Array([(1, 2.0), (3, 4.0)]), T.Array(T.Tuple((I64, F64)))),
    (ak.zip((ak.Array([[0, 2], [], [1]]), ak.Array([[1.0, 2.0], [], [3.0]]))),
     arr(T.Tuple((I64, F64)), 2)),
    (ak.Array([[1, 2, 3], [4, 5, 6]])[1:], arr(I64, 2)),       # offsets not from 0
    (np.int64(7), I64),
    ([[1, 2], [3]], arr(I64, 2)),                               # a list: the interp's way
]


@pytest.mark.parametrize("obj, t", CASES, ids=lambda x: str(x)[:30])
def test_the_same_flat_value_as_through_the_interpreter(obj, t):
    flat = flat_from_python(obj, t)
    via_interp = from_python(obj, t)
    assert from_flat(flat, t) == via_interp
    assert rep_of_flat(flat, t) == rep_of_value(via_interp, t)
    back = python_from_flat(flat, t)
    expected = to_python(via_interp, t)
    assert type(back) is type(expected)
    assert ak.to_list(back) == ak.to_list(expected)
    if isinstance(back, np.ndarray):
        assert back.dtype == expected.dtype
        # an empty block keeps its row length here ((0, 3)); through lists it is (0, 0)
        assert back.shape == expected.shape or back.size == expected.size == 0


def test_ragged_rows_keep_their_data_without_copies():
    values = np.arange(10, dtype=np.int64)
    a = ak.unflatten(values, [3, 0, 7])
    flat = flat_from_python(a, arr(I64, 2))
    assert isinstance(flat, Segs) and flat.offsets.tolist() == [0, 3, 3, 10]
    assert np.shares_memory(flat.values, values)
    out = python_from_flat(flat, arr(I64, 2))
    assert isinstance(out, ak.Array) and out.tolist() == a.tolist()


def test_segments_of_equal_length_come_back_as_a_numpy_block():
    flat = Segs(np.array([0, 2, 4]), np.array([1.0, 2.0, 3.0, 4.0]))
    out = python_from_flat(flat, arr(F64, 2))
    assert isinstance(out, np.ndarray) and out.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert python_from_flat(to_flat([[1.0], [2.0, 3.0]], F.Segmented(F.Regular("f64", 1))),
                            arr(F64, 2)).tolist() == [[1.0], [2.0, 3.0]]


def test_wrong_element_types_are_type_errors():
    with pytest.raises(TypeError):
        flat_from_python(np.array([1.5, 2.5]), arr(I64))
    with pytest.raises(TypeError):
        flat_from_python(ak.Array([[1.5], []]), arr(I64, 2))


def test_arrays_of_tuples_are_read_as_columns_without_a_python_loop():
    from accel_kernel.backends.numpy.boundary import _from_layout
    cols, vals = np.array([0, 2, 1]), np.array([1.0, 2.0, 3.0])
    rows = ak.unflatten(ak.zip((cols, vals)), [2, 0, 1])
    flat = _from_layout(ak.to_layout(rows), arr(T.Tuple((I64, F64)), 2))
    assert isinstance(flat, tuple) and all(isinstance(part, Segs) for part in flat)
    assert flat[0].offsets.tolist() == [0, 2, 2, 3]
    assert np.shares_memory(flat[1].values, vals)
