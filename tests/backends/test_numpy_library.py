"""Library functions on whole flat arrays (`Library`) and per segment (`SegLibrary`) on the
`numpy` target, against the interpreter (same values, same errors)."""
import numpy as np
import pytest

from accel_kernel.backends.numpy import Segs, from_flat, to_flat
from accel_kernel.ir import flat as F
from accel_kernel.lang import types as T
from accel_kernel.lang.errors import AccelError, SizeError

from .test_numpy_build import I64, R1, R2, SEG, at, c, fn, interp, rows_of, run, segs, src, st, v

ARR = T.Array
PAIRS = F.TupleRep((R1, R1))


def lib(name, args, out_rep, fns=(), span=None):
    """Run `Library(name)` on (interp value, rep) arguments; the flat result."""
    atoms, env = [], {}
    for k, (value, rep) in enumerate(args):
        if isinstance(rep, F.ScalarRep):
            atoms.append(c(value, rep.elem))
        else:
            atoms.append(v(f"a{k}", rep))
            env[f"a{k}"] = to_flat(value, rep)
    out = v("out", out_rep)
    return run([st(out, F.Library(name, tuple(atoms), tuple(fns)), span=span)], out, env)


def ints(xs):
    return [np.int64(x) for x in xs]


@pytest.mark.parametrize("name, xs, arg, code", [
    ("reverse", [1, 2, 3], None, "reverse [1, 2, 3]"),
    ("rotate", [1, 2, 3, 4, 5], -2, "rotate (-2) [1, 2, 3, 4, 5]"),
    ("rotate", [1, 2, 3, 4, 5], 7, "rotate 7 [1, 2, 3, 4, 5]"),
    ("take", [1, 2, 3], 2, "take 2 [1, 2, 3]"),
    ("drop", [1, 2, 3], 3, "drop 3 [1, 2, 3]"),
    ("sort", [3, 1, 2, 1], None, "sort [3, 1, 2, 1]"),
])
def test_rank_one_functions_agree_with_the_interpreter(name, xs, arg, code):
    args = [(ints(xs), R1)] if arg is None else [(arg, I64), (ints(xs), R1)]
    assert from_flat(lib(name, args, R1), ARR(T.I64)) == interp(code)


def test_sort_is_stable_on_tuples_and_puts_nan_last():
    pairs = [(2, 0), (1, 1), (2, 2), (1, 3)]
    keys_rep = F.TupleRep((R1, R1))
    key_only = fn("\\(k, i) -> k")
    got = lib("sort_by", [([(np.int64(k), np.int64(i)) for k, i in pairs], keys_rep)],
              keys_rep, fns=(key_only,))
    assert list(zip(got[0].tolist(), got[1].tolist())) == [(1, 1), (1, 3), (2, 0), (2, 2)]
    assert interp("sort_by (\\(k, i) -> k) [(2, 0), (1, 1), (2, 2), (1, 3)]") == \
        [(1, 1), (1, 3), (2, 0), (2, 2)]
    floats = lib("sort", [([np.float64(x) for x in [2.0, np.nan, -1.0, 0.5]],
                           F.Regular("f64", 1))], F.Regular("f64", 1))
    assert floats.tolist()[:3] == [-1.0, 0.5, 2.0] and np.isnan(floats[3])
    mixed = F.TupleRep((R1, F.Regular("f64", 1)))
    rows = [(np.int64(1), np.float64(2.0)), (np.int64(0), np.float64(9.0)),
            (np.int64(1), np.float64(1.0))]
    tuples = lib("sort", [(rows, mixed)], mixed)
    assert tuples[0].tolist() == [0, 1, 1] and tuples[1].tolist() == [9.0, 1.0, 2.0]


def test_scatter_ignores_out_of_range_indices():
    got = lib("scatter", [(ints([0, 0, 0, 0]), R1), (ints([1, -1, 4, 3, 9]), R1),
                          (ints([10, 20, 30, 40, 50]), R1)], R1)
    assert from_flat(got, ARR(T.I64)) == interp(
        "scatter [0, 0, 0, 0] [1, -1, 4, 3, 9] [10, 20, 30, 40, 50]") == [0, 10, 0, 40]


def test_scatter_of_rows_into_an_irregular_array():
    got = lib("scatter", [([ints([1]), [], ints([2, 3])], SEG), (ints([0, 5]), R1),
                          ([ints([7, 8, 9]), ints([6])], SEG)], SEG)
    assert rows_of(got) == [[7, 8, 9], [], [2, 3]]


def test_scatter_needs_equal_lengths():
    with pytest.raises(SizeError, match=r"scatter: array lengths differ \(2 and 1\)"):
        lib("scatter", [(ints([0]), R1), (ints([0, 1]), R1), (ints([5]), R1)], R1)


@pytest.mark.parametrize("op", ["(+)", "\\a b -> a * 2 + b - a"])
def test_reduce_by_index_with_a_ufunc_and_with_a_general_operator(op):
    dest, idx, vals = [1, 1, 1], [0, 2, 2, -1, 5, 0], [5, 6, 7, 8, 9, 10]
    got = lib("reduce_by_index", [(ints(dest), R1), (0, I64), (ints(idx), R1),
                                  (ints(vals), R1)], R1, fns=(fn(op),))
    code = f"reduce_by_index [1, 1, 1] ({op}) 0 [0, 2, 2, -1, 5, 0] [5, 6, 7, 8, 9, 10]"
    assert from_flat(got, ARR(T.I64)) == interp(code)


def test_concat_interleave_head_last_flatten_and_partition():
    a, b = ints([1, 2]), ints([3, 4])
    assert lib("concat", [(a, R1), (b, R1)], R1).tolist() == [1, 2, 3, 4]
    assert lib("interleave", [(a, R1), (b, R1)], R1).tolist() == \
        interp("interleave [1, 2] [3, 4]")
    assert lib("head", [(a, R1)], I64) == 1 and lib("last", [(a, R1)], I64) == 2
    assert lib("flatten", [([ints([1]), [], ints([2, 3])], SEG)], R1).tolist() == [1, 2, 3]
    yes, no = lib("partition", [(ints([1, 2, 3, 4, 5]), R1)], PAIRS,
                  fns=(fn("\\x -> x % 2 == 1"),))
    assert (yes.tolist(), no.tolist()) == interp("partition (\\x -> x % 2 == 1) [1, 2, 3, 4, 5]")
    rows = lib("concat", [([ints([1])], SEG), ([[], ints([2, 3])], SEG)], SEG)
    assert rows_of(rows) == [[1], [], [2, 3]]


@pytest.mark.parametrize("name, args, code", [
    ("take", [(4, I64), (ints([1, 2]), R1)], "take 4 [1, 2]"),
    ("drop", [(-1, I64), (ints([1, 2]), R1)], "drop (-1) [1, 2]"),
    ("head", [([], R1)], "head ([] : []i64)"),
    ("last", [([], R1)], "last ([] : []i64)"),
    ("interleave", [(ints([1]), R1), (ints([1, 2]), R1)], "interleave [1] [1, 2]"),
    ("transpose", [([ints([1, 2]), ints([3])], SEG)], "transpose [[1, 2], [3]]"),
])
def test_errors_are_the_interpreters(name, args, code):
    source = src(code)
    span = at(source, code)
    with pytest.raises(AccelError) as ours:
        lib(name, args, R1, span=span)
    with pytest.raises(AccelError) as theirs:
        interp(code)
    assert (ours.value.kind, ours.value.message) == (theirs.value.kind, theirs.value.message)
    assert ours.value.span == span


def test_transpose_regular_irregular_and_empty():
    m = [ints([1, 2, 3]), ints([4, 5, 6])]
    got = lib("transpose", [(m, R2)], R2)
    assert got.tolist() == interp("transpose [[1, 2, 3], [4, 5, 6]]")
    as_segs = lib("transpose", [(m, SEG)], SEG)
    assert rows_of(as_segs) == [[1, 4], [2, 5], [3, 6]]
    assert lib("transpose", [([], R2)], R2).shape[0] == 0
    assert lib("transpose", [([[], []], R2)], R2).tolist() == interp(
        "transpose ([[], []] : [][]i64)") == []


# ---------------------------------------------------------------- per segment


ROWS = [[3, 1, 2], [], [5, 5, 4], [9]]


def seglib(name, rows, args=(), fns=(), env=None, span=None):
    xss = segs(rows)
    o2, x2 = v("o2"), v("x2")
    atoms = tuple(a if isinstance(a, (F.Const, F.FVar)) else c(a) for a in args)
    return run([st((o2, x2), F.SegLibrary(name, v("o"), v("x"), atoms, tuple(fns)), span=span)],
               (o2, x2), {"o": xss.offsets, "x": xss.values, **(env or {})})


def per_row(code_fn, rows):
    return [interp(code_fn(r)) for r in rows]


def lit(row):
    return "(" + repr(row) + " : []i64)"


def test_segmented_sort_reverse_and_rotate():
    o, x = seglib("sort", ROWS)
    assert rows_of(Segs(o, x)) == per_row(lambda r: f"sort {lit(r)}", ROWS)
    o, x = seglib("reverse", ROWS)
    assert rows_of(Segs(o, x)) == per_row(lambda r: f"reverse {lit(r)}", ROWS)
    o, x = seglib("rotate", ROWS, args=(-1,))
    assert rows_of(Segs(o, x)) == per_row(lambda r: f"rotate (-1) {lit(r)}", ROWS)
    ks = np.array([1, 5, -4, 2], dtype=np.int64)
    o, x = seglib("rotate", ROWS, args=(v("ks"),), env={"ks": ks})
    assert rows_of(Segs(o, x)) == [interp(f"rotate ({k}) {lit(r)}") for k, r in zip(ks, ROWS)]


def test_segmented_sort_by_is_stable_within_segments():
    o, x = seglib("sort_by", ROWS, fns=(fn("\\x -> x / 2"),))
    assert rows_of(Segs(o, x)) == per_row(lambda r: f"sort_by (\\x -> x / 2) {lit(r)}", ROWS)


def test_segmented_take_drop_head_last():
    o, x = seglib("take", ROWS, args=(v("ns"),), env={"ns": np.array([2, 0, 3, 1])})
    assert rows_of(Segs(o, x)) == [[3, 1], [], [5, 5, 4], [9]]
    with pytest.raises(SizeError, match="drop: 1 is out of range for an array of length 0"):
        seglib("drop", ROWS, args=(1,))
    out = v("out")
    xss = segs([[1, 2], [3]])
    heads = run([st(out, F.SegLibrary("head", v("o"), v("x")))], out,
                {"o": xss.offsets, "x": xss.values})
    assert heads.tolist() == [1, 3]
    with pytest.raises(SizeError, match="last of an empty array"):
        run([st(out, F.SegLibrary("last", v("o"), v("x")))], out,
            {"o": segs(ROWS).offsets, "x": segs(ROWS).values})


def test_segmented_concat_interleave_and_scatter():
    other = segs([[7], [8, 9], [], [6]])
    env = {"o_b": other.offsets, "x_b": other.values}
    o, x = seglib("concat", ROWS, args=(v("o_b"), v("x_b")), env=env)
    assert rows_of(Segs(o, x)) == [a + b for a, b in zip(ROWS, rows_of(other))]
    same_sizes = segs([[0, 0, 0], [], [1, 1, 1], [2]])
    env = {"o_b": same_sizes.offsets, "x_b": same_sizes.values}
    o, x = seglib("interleave", ROWS, args=(v("o_b"), v("x_b")), env=env)
    assert rows_of(Segs(o, x)) == [interp(f"interleave {lit(a)} {lit(b)}")
                                   for a, b in zip(ROWS, rows_of(same_sizes))]
    idx, vals = segs([[2, 7], [], [0], []]), segs([[10, 20], [], [30], []])
    env = {"io": idx.offsets, "iv": idx.values, "vo": vals.offsets, "vv": vals.values}
    o, x = seglib("scatter", ROWS, args=(v("io"), v("iv"), v("vo"), v("vv")), env=env)
    assert rows_of(Segs(o, x)) == [[3, 1, 10], [], [30, 5, 4], [9]]
