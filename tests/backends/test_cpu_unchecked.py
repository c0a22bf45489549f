"""`unchecked.load(array, i)`, the read the `cpu` target's kernels use at in-bounds indices:
the element numba's `array[i]` gives, for every dtype and layout a kernel sees; and
`unchecked.prefetch(array, i)`, the hint a segmented kernel gives at each segment's start."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from accel_kernel.backends.cpu.codegen import generate
from accel_kernel.backends.cpu.codegen_body import PREFETCH_AHEAD
from accel_kernel.backends.cpu.unchecked import load, prefetch
from accel_kernel.session import Session


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


@njit(cache=False)
def _sum_with_prefetches(values, ahead):
    total = 0.0
    for i in range(len(values)):
        prefetch(values, i + ahead)          # past the end too: a hint, never a read
        total += values[i]
    return total


def test_a_prefetch_reads_nothing_and_may_point_past_the_end():
    values = np.arange(100, dtype=np.float64)
    assert _sum_with_prefetches(values, 7) == values.sum()
    assert _sum_with_prefetches(values, 1 << 40) == values.sum()
    assert _sum_with_prefetches(values[:0], 3) == 0.0


def _kernels(text: str) -> str:
    program = Session().program_stages(text, "t.accel", stop_after="fuse")[-1].program
    return generate(program).source


def test_segmented_kernels_prefetch_what_they_read_at_each_segment_start():
    """Each segment's loop starts with a prefetch `PREFETCH_AHEAD` elements on in every
    array read at the element index (both of smvm's, not the gathered `x`); a kernel over
    equal rows, whose loops are predicted, and a map kernel have none."""
    smvm = _kernels("def f (cs: [][]i64) (vs: [][]f64) (x: []f64) : []f64 = "
                    "map2 (\\c v -> reduce (+) 0.0 (map2 (\\j w -> w * x[j]) c v)) cs vs")
    assert "from accel_kernel.backends.cpu.unchecked import load, prefetch" in smvm
    found = [line.strip() for line in smvm.splitlines() if "prefetch(" in line
             and "import" not in line]
    assert sorted(set(found)) == [f"prefetch(vals_1, start + {PREFETCH_AHEAD})",
                                  f"prefetch(vals_2, start + {PREFETCH_AHEAD})"], found
    assert "prefetch(" not in _kernels("def f (m: [n][k]f64) : []f64 = "
                                       "map (\\r -> reduce (+) 0.0 r) m")
    assert "prefetch(" not in _kernels("def f (xs: []f64) : []f64 = map (\\x -> x * 2.0) xs")
