"""Segmented reductions, scans and filters of the `numpy` target against plain Python, on
random segment descriptors with many empty segments (hypothesis)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from accel_kernel.backends.numpy import Segs
from accel_kernel.ir import flat as F

from .test_numpy_build import R1, R2, RB1, c, fn, rows_of, run, segs, v
from .test_numpy_build import st as stmt

SMALL = st.integers(-20, 20)
ROWS = st.lists(st.one_of(st.just([]), st.just([]), st.lists(SMALL, max_size=9)), max_size=14)

OPS = {
    "+": (fn("(+)"), 0, lambda a, b: a + b),
    "*": (fn("\\a b -> a * b"), 1, lambda a, b: a * b),
    "min": (fn("min"), 2 ** 63 - 1, min),
    "max": (fn("\\a b -> max b a"), -2 ** 63, max),
    # not recognised: runs as a vectorised tree / Hillis-Steele over lanes
    "general+": (fn("\\a b -> (a + b) * 1"), 0, lambda a, b: a + b),
    "generalmax": (fn("\\a b -> if a > b then a else b"), -2 ** 63, max),
}
OP_NAMES = st.sampled_from(sorted(OPS))


def wrap(x: int) -> int:
    return (x + 2 ** 63) % 2 ** 64 - 2 ** 63


def fold(op, ne, row):
    acc = ne
    for x in row:
        acc = wrap(op(acc, x))
    return acc


def env(rows):
    xss = segs(rows)
    return {"o": xss.offsets, "x": xss.values}


@settings(max_examples=100, deadline=None)
@given(ROWS, OP_NAMES)
def test_segmented_reduce(rows, name):
    op, ne, py = OPS[name]
    out = v("out")
    got = run([stmt(out, F.SegReduce(op, c(ne), v("o"), v("x")))], out, env(rows))
    assert got.tolist() == [fold(py, ne, r) for r in rows]


@settings(max_examples=100, deadline=None)
@given(ROWS, OP_NAMES)
def test_segmented_scan(rows, name):
    op, ne, py = OPS[name]
    out = v("out")
    got = run([stmt(out, F.SegScan(op, c(ne), v("o"), v("x")))], out, env(rows))
    expected = []
    for r in rows:
        expected += [fold(py, ne, r[:k + 1]) for k in range(len(r))]
    assert got.tolist() == expected


@settings(max_examples=100, deadline=None)
@given(ROWS, st.randoms(use_true_random=False))
def test_segmented_filter(rows, rng):
    keep = [[rng.random() < 0.5 for _ in r] for r in rows]
    flat_keep = np.array([k for ks in keep for k in ks], dtype=bool)
    o2, x2 = v("o2"), v("x2")
    got_o, got_x = run([stmt((o2, x2), F.SegFilter(v("k", RB1), v("o"), v("x")))], (o2, x2),
                       {**env(rows), "k": flat_keep})
    assert rows_of(Segs(got_o, got_x)) == [[x for x, k in zip(r, ks) if k]
                                           for r, ks in zip(rows, keep)]


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 5), st.integers(0, 9), OP_NAMES, st.data())
def test_regular_reduce_and_scan_along_rows(n_rows, width, name, data):
    op, ne, py = OPS[name]
    values = data.draw(st.lists(SMALL, min_size=n_rows * width, max_size=n_rows * width))
    xss = np.array(values, dtype=np.int64).reshape(n_rows, width)
    red, scn = v("red", R1), v("scn", R2)
    got_r, got_s = run([stmt(red, F.Reduce(op, c(ne), v("xss", R2))),
                        stmt(scn, F.Scan(op, c(ne), v("xss", R2)))], (red, scn), {"xss": xss})
    rows = xss.tolist()
    assert got_r.tolist() == [fold(py, ne, r) for r in rows]
    assert got_s.tolist() == [[fold(py, ne, r[:k + 1]) for k in range(len(r))] for r in rows]


AFFINE = fn("\\(m1, c1) (m2, c2) -> (m1 * m2, m2 * c1 + c2)")
PAIR = F.TupleRep((R1, R1))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(-3, 3), st.integers(-5, 5)), max_size=7),
                max_size=10))
def test_a_non_commutative_operator_on_tuples_keeps_operand_order(rows):
    ms = segs([[m for m, _ in r] for r in rows])
    ks = segs([[k for _, k in r] for r in rows])
    ne = v("ne", F.TupleRep((F.ScalarRep("i64"), F.ScalarRep("i64"))))
    red, scn = v("red", PAIR), v("scn", PAIR)
    got_r, got_s = run([stmt(red, F.SegReduce(AFFINE, ne, v("o"), v("x", PAIR))),
                        stmt(scn, F.SegScan(AFFINE, ne, v("o"), v("x", PAIR)))], (red, scn),
                       {"o": ms.offsets, "x": (ms.values, ks.values),
                        "ne": (np.int64(1), np.int64(0))})

    def compose(row):
        m, k = 1, 0
        out = []
        for m2, k2 in row:
            m, k = m * m2, m2 * k + k2
            out.append((m, k))
        return out
    assert list(zip(*[g.tolist() for g in got_r])) == \
        [(compose(r)[-1] if r else (1, 0)) for r in rows]
    assert list(zip(*[g.tolist() for g in got_s])) == [p for r in rows for p in compose(r)]
