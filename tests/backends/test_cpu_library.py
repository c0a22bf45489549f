"""Library functions the `cpu` target runs compiled (backends/cpu/library.py): `sort` (whole and
per segment), `sort_by` per segment, `reduce_by_index` and `scatter`, each against `interp`
bit for bit (NaN and the sign of zero included), with empty arrays and segments, ties,
out-of-range indices and random data; and errors with the interpreter's kind and position."""
from __future__ import annotations

import awkward as ak
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import accel_kernel as acc
from accel_kernel.backends.cpu import library
from accel_kernel.lang.errors import AccelError

SOURCE = r"""
def sort_f64 (xs: []f64) : []f64 = sort xs
def sort_f32 (xs: []f32) : []f32 = sort xs
def sort_i64 (xs: []i64) : []i64 = sort xs
def sort_i32 (xs: []i32) : []i32 = sort xs
def sort_bool (xs: []bool) : []bool = sort xs
def sort_rows (xss: [][]f64) : [][]f64 = map sort xss
def sort_rows_i64 (xss: [][]i64) : [][]i64 = map sort xss
def sort_regular (xss: [][3]f64) : [][3]f64 = map sort xss
def sort_rows_desc (xss: [][]i64) : [][]i64 = map (\xs -> sort_by (\x -> -x) xs) xss
def sort_rows_by_abs (xss: [][]f64) : [][]f64 = map (\xs -> sort_by (\x -> abs x) xs) xss
def hist (d: []i64) (is: []i64) (vs: []i64) : []i64 = reduce_by_index d (+) 0 is vs
def hist_f64 (d: []f64) (is: []i64) (vs: []f64) : []f64 = reduce_by_index d (+) 0.0 is vs
def hist_i32 (d: []i32) (is: []i64) (vs: []i32) : []i32 = reduce_by_index d (+) 0i32 is vs
def prod_i64 (d: []i64) (is: []i64) (vs: []i64) : []i64 = reduce_by_index d (*) 1 is vs
def min_f64 (d: []f64) (is: []i64) (vs: []f64) : []f64 = reduce_by_index d (min) 0.0 is vs
def max_f64 (d: []f64) (is: []i64) (vs: []f64) : []f64 =
  reduce_by_index d (\a b -> max a b) 0.0 is vs
def min_i64 (d: []i64) (is: []i64) (vs: []i64) : []i64 = reduce_by_index d (min) 0 is vs
def max_if (d: []i64) (is: []i64) (vs: []i64) : []i64 =
  reduce_by_index d (\a b -> if a < b then b else a) 0 is vs
def any_bool (d: []bool) (is: []i64) (vs: []bool) : []bool = reduce_by_index d (||) false is vs
def scatter_f64 (d: []f64) (is: []i64) (vs: []f64) : []f64 = scatter d is vs
def scatter_i64 (d: []i64) (is: []i64) (vs: []i64) : []i64 = scatter d is vs
def scatter_rows (d: [][]f64) (is: [][]i64) (vs: [][]f64) : [][]f64 = map3 scatter d is vs
"""

PROGRAM = acc.compile(SOURCE, "lib.accel")
SPECIAL = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.0, -1.0, 2.5]


def flat(value):
    """(row lengths, flat values) of a ragged result; (None, array) of a regular one."""
    if isinstance(value, ak.Array):
        return ak.num(value).to_numpy(), ak.flatten(value).to_numpy()
    return None, np.asarray(value)


def same(a, b) -> bool:
    """Equal bit for bit where it shows: dtype, lengths, values, NaN places, signs of zero."""
    (sizes_a, a), (sizes_b, b) = flat(a), flat(b)
    if (sizes_a is None) != (sizes_b is None) or a.dtype != b.dtype or a.shape != b.shape:
        return False
    if sizes_a is not None and not np.array_equal(sizes_a, sizes_b):
        return False
    if a.dtype.kind == "f":
        return np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a),
                                                                        np.signbit(b))
    return np.array_equal(a, b)


def ragged(rows: list, dtype=np.float64) -> ak.Array:
    """An Awkward array of these rows with the given dtype (empty ones included)."""
    values = np.array([x for row in rows for x in row], dtype=dtype)
    return ak.unflatten(values, np.array([len(row) for row in rows], dtype=np.int64))


def check(entry: str, *args):
    expected = PROGRAM.run(entry, *args, target="interp")
    got = PROGRAM.run(entry, *args, target="cpu")
    assert same(got, expected), (entry, got, expected)
    return got


@pytest.fixture
def compiled_only(monkeypatch):
    """Fails a test whose library call falls back to the numpy target's implementation."""
    def refuse(*args, **kwargs):
        raise AssertionError("fell back to the numpy target's library")
    monkeypatch.setattr(library.numpy_library, "library", refuse)
    monkeypatch.setattr(library.numpy_library, "seg_library", refuse)


def ties(n: int, seed: int = 0) -> np.ndarray:
    """Floats with many equal keys: both zeros, NaNs and infinities among them."""
    rng = np.random.default_rng(seed)
    return np.array(SPECIAL)[rng.integers(0, len(SPECIAL), n)]


# ---------------------------------------------------------------- sort


@pytest.mark.parametrize("n", [0, 1, 5, 32, 33, 1000])
def test_sort_of_floats_with_zeros_nans_and_ties_is_stable(n, compiled_only):
    check("sort_f64", ties(n, n))
    check("sort_f32", ties(n, n).astype(np.float32))


def test_sort_keeps_the_order_of_equal_zeros_and_nans():
    # numpy's sort may swap -0.0 and 0.0: the long-segment path writes them back in order
    xs = np.array([0.0, 3.0, -0.0, np.nan, 0.0, -1.0] * 20 + [-0.0])
    got = check("sort_f64", xs)
    zeros = got[got == 0]
    assert np.array_equal(np.signbit(zeros), np.signbit(xs[xs == 0]))


@pytest.mark.parametrize("n", [0, 7, 100])
def test_sort_of_integers_and_bools(n, compiled_only):
    rng = np.random.default_rng(n)
    check("sort_i64", rng.integers(-5, 5, n))
    check("sort_i32", rng.integers(-5, 5, n).astype(np.int32))
    check("sort_bool", rng.random(n) < 0.5)


def test_sort_of_rows_with_empty_short_and_long_rows(compiled_only):
    rows = [[], ties(3).tolist(), [], ties(32, 1).tolist(), ties(33, 2).tolist(),
            ties(500, 3).tolist(), []]
    check("sort_rows", ragged(rows))
    check("sort_rows", ragged([[]] * 3))
    rng = np.random.default_rng(4)
    check("sort_rows_i64", ragged([rng.integers(0, 4, k) for k in (0, 40, 2, 0)], np.int64))


def test_sort_of_no_rows_and_of_regular_rows():
    check("sort_rows", ragged([]))
    check("sort_regular", ties(12).reshape(4, 3))


def test_sort_by_per_row_is_stable(compiled_only):
    rng = np.random.default_rng(5)
    check("sort_rows_desc", ragged([rng.integers(0, 3, k) for k in (0, 5, 60, 1)], np.int64))
    check("sort_rows_by_abs", ragged([ties(k, k) for k in (0, 9, 70, 0)]))


# ---------------------------------------------------------------- reduce_by_index


def test_histogram_ignores_out_of_range_indices(compiled_only):
    indices = np.array([0, 1, 5, -1, 1, 3, 4, -7, 3])
    ones = np.ones(len(indices), dtype=np.int64)
    got = check("hist", np.array([10, 0, 0, 0], dtype=np.int64), indices, ones)
    assert got.tolist() == [11, 2, 0, 2]
    check("hist_i32", np.zeros(4, dtype=np.int32), indices, ones.astype(np.int32))
    check("prod_i64", np.ones(4, dtype=np.int64), indices, np.arange(9, dtype=np.int64))
    check("min_i64", np.zeros(4, dtype=np.int64), indices, np.arange(-4, 5, dtype=np.int64))


def test_histogram_of_floats_adds_in_index_order(compiled_only):
    rng = np.random.default_rng(6)
    values = rng.standard_normal(1000) * 10.0 ** rng.integers(-8, 8, 1000)
    check("hist_f64", np.zeros(3), rng.integers(-1, 4, 1000), values)


def test_min_and_max_of_floats_propagate_nan_and_keep_numpys_zero(compiled_only):
    indices = np.array([0, 0, 1, 1, 2, 2, 3])
    values = np.array([-0.0, 0.0, np.nan, 1.0, 0.0, -0.0, -np.inf])
    for dest in (np.zeros(4), np.array([-0.0, 2.0, np.nan, 0.0])):
        check("min_f64", dest, indices, values)
        check("max_f64", dest, indices, values)


def test_histograms_of_empty_arrays(compiled_only):
    empty_i, empty_f = np.zeros(0, dtype=np.int64), np.zeros(0)
    check("hist", np.zeros(3, dtype=np.int64), empty_i, empty_i)
    check("hist", empty_i, np.array([0, -1]), np.array([1, 2]))
    check("hist_f64", empty_f, empty_i, empty_f)


def test_other_operators_and_types_fall_back_to_numpy():
    indices = np.array([0, 0, 2, 9])
    check("max_if", np.zeros(3, dtype=np.int64), indices, np.array([1, 2, -3, 4]))
    check("any_bool", np.zeros(3, dtype=bool), indices, np.array([False, True, False, True]))


# ---------------------------------------------------------------- scatter


def test_scatter_ignores_out_of_range_indices_and_the_last_write_wins(compiled_only):
    got = check("scatter_f64", np.zeros(4), np.array([1, 7, 1, -1, 3]),
                np.array([1.0, 2.0, 3.0, 4.0, -0.0]))
    assert got.tolist() == [0.0, 3.0, 0.0, -0.0]
    check("scatter_i64", np.arange(3), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    check("scatter_i64", np.zeros(0, dtype=np.int64), np.array([0, -1]), np.array([5, 6]))


def test_scatter_per_row(compiled_only):
    check("scatter_rows", ragged([[0.0, 0.0], [], [1.0, 2.0, 3.0]]),
          ragged([[1, 1], [], [2, -1, 5]], np.int64), ragged([[4.0, 5.0], [], [7.0, 8.0, 9.0]]))


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("entry,args", [
    ("hist", (np.zeros(3, dtype=np.int64), np.array([0, 1]), np.array([1]))),
    ("hist_f64", (np.zeros(3), np.array([0]), np.array([1.0, 2.0]))),
    ("scatter_f64", (np.zeros(3), np.array([0, 1]), np.array([1.0]))),
])
def test_length_mismatch_is_the_interpreters_error(entry, args):
    outcomes = []
    for target in ("interp", "cpu"):
        with pytest.raises(AccelError) as info:
            PROGRAM.run(entry, *args, target=target)
        outcomes.append((info.value.kind, info.value.span.location()))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == "SizeError"


# ---------------------------------------------------------------- random data

floats = st.sampled_from(SPECIAL) | st.floats(-4, 4).map(lambda x: float(round(x)))
rows = st.lists(st.lists(floats, max_size=45), max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows)
def test_random_rows_sort_as_in_the_interpreter(xss):
    check("sort_rows", ragged(xss))
    check("sort_f64", np.array([x for xs in xss for x in xs], dtype=np.float64))
    check("sort_rows_by_abs", ragged(xss))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 6), st.lists(st.tuples(st.integers(-3, 9), floats), max_size=60))
def test_random_histograms_and_scatters_as_in_the_interpreter(size, pairs):
    indices = np.array([i for i, _ in pairs], dtype=np.int64)
    values = np.array([v for _, v in pairs], dtype=np.float64)
    dest = np.arange(size, dtype=np.float64) - 2.0
    for entry in ("hist_f64", "min_f64", "max_f64", "scatter_f64"):
        check(entry, dest, indices, values)
    ints = np.nan_to_num(values, posinf=7, neginf=-7).astype(np.int64)
    for entry in ("hist", "prod_i64", "min_i64", "scatter_i64"):
        check(entry, dest.astype(np.int64), indices, ints)


@pytest.mark.parametrize("n", [0, 1, 7, library.PARALLEL_SIZES + 5])
def test_offsets_of_sizes_are_the_running_sums(n):
    sizes = np.random.default_rng(n).integers(0, 50, n)
    offsets, found = library.offsets_of_sizes(sizes)
    assert found == library.SIZES_OK
    np.testing.assert_array_equal(offsets, np.concatenate([[0], np.cumsum(sizes)]))


@pytest.mark.parametrize("n", [9, library.PARALLEL_SIZES + 5])
def test_offsets_of_sizes_find_a_negative_size_and_a_sum_that_wraps(n):
    sizes = np.ones(n, np.int64)
    sizes[n // 2] = -1
    assert library.offsets_of_sizes(sizes)[1] == library.SIZE_NEGATIVE
    huge = np.full(n, 2**62, np.int64)                  # 2·2^62 is past the largest i64
    assert library.offsets_of_sizes(huge)[1] == library.SIZES_WRAP
    edge = np.zeros(n, np.int64)
    edge[0] = 2**63 - 1                                  # the largest i64 itself: no wrap
    offsets, found = library.offsets_of_sizes(edge)
    assert found == library.SIZES_OK and offsets[-1] == 2**63 - 1


def test_negative_and_huge_sizes_are_the_interpreters_errors():
    prog = acc.compile("def f (ns: []i64) : []i64 = map (\\n -> reduce (+) 0 (iota n)) ns")
    big = np.full(library.PARALLEL_SIZES, 2**62, np.int64)
    for ns in (np.array([2, -1, 3]), big):
        errors = []
        for target in ("interp", "cpu"):
            with pytest.raises(AccelError) as caught:
                prog.run("f", ns, target=target)
            errors.append((type(caught.value).__name__, str(caught.value)))
        kinds_and_places = [message.split(": ")[0] for _, message in errors]
        assert kinds_and_places[0] == kinds_and_places[1]     # "SizeError at <string>:1:54"
        assert errors[0][0] in ("SizeError", "OutOfMemory")
