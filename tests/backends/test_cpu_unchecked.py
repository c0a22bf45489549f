"""`unchecked.load(array, i)`, the read the `cpu` target's kernels use at in-bounds indices:
the element numba's `array[i]` gives, for every dtype and layout a kernel sees."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from accel_kernel.backends.cpu.unchecked import load


@njit(cache=False)
def _all(array, index_type):
    out = np.empty(len(array), array.dtype)
    for i in range(len(array)):
        out[i] = load(array, index_type(i))
    return out


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float64, np.float32, np.bool_])
def test_every_element_of_a_contiguous_array(dtype):
    values = (np.arange(11) * 7 % 5).astype(dtype)
    np.testing.assert_array_equal(_all(values, np.int64), values)


@pytest.mark.parametrize("index_type", [np.int32, np.uint64, np.intp])
def test_index_of_any_integer_type(index_type):
    values = np.arange(6, dtype=np.float64) / 4
    np.testing.assert_array_equal(_all(values, index_type), values)


def test_strided_and_read_only_arrays():
    base = np.arange(20, dtype=np.int64)
    strided = base[3::4]                       # not contiguous: the read uses the stride
    np.testing.assert_array_equal(_all(strided, np.int64), [3, 7, 11, 15, 19])
    frozen = base.copy()
    frozen.flags.writeable = False
    np.testing.assert_array_equal(_all(frozen, np.int64), base)


def test_only_one_dimensional_arrays():
    with pytest.raises(TypingError):
        _all(np.zeros((2, 3)), np.int64)
