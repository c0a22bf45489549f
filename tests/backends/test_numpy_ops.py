"""The `numpy` target, one flat operation at a time, on small hand-built programs. Expected
values are computed in plain Python, and compared with the interpreter where core accel
says the same thing."""
import numpy as np
import pytest

from accel_kernel.backends.numpy import Counters, Segs, call, execute, from_flat
from accel_kernel.backends.numpy import rows as rows_module
from accel_kernel.backends.numpy import segmented as segmented_module
from accel_kernel.ir import flat as F
from accel_kernel.lang import types as T
from accel_kernel.lang.errors import AccelIndexError, SizeError

from .test_numpy_build import (BOOL, I64, R1, R2, RB1, SEG, at, c, fn, interp, prog,
                               rows_of, run, segs, src, st, v)

ADD = fn("\\a b -> a + b")


def seg_sum(rows, op=ADD, ne=c(0)):
    xss = segs(rows)
    o, x, out = v("o"), v("x"), v("out")
    return run([st(out, F.SegReduce(op, ne, o, x))], out,
               {"o": xss.offsets, "x": xss.values})


# ---------------------------------------------------------------- segmented reductions


@pytest.mark.parametrize("rows", [
    [[], [1, 2], [3]],                 # empty first
    [[1, 2], [3], []],                 # empty last
    [[1], [], [], [], [2, 3], []],     # a run of empties
    [[], [], []],                      # all empty
    [],                                # no segments
    [[5]],
])
def test_segmented_sum_gives_zero_for_empty_segments_anywhere(rows):
    out = seg_sum(rows)
    assert out.dtype == np.int64
    assert out.tolist() == [sum(r) for r in rows]


@pytest.mark.parametrize("name, ne, pick", [
    ("min", np.iinfo(np.int64).max, min), ("max", np.iinfo(np.int64).min, max)])
def test_min_and_max_segmented_reductions_give_the_neutral_element_on_empty_segments(
        name, ne, pick):
    rows = [[], [4, -2, 7], [], [1], []]
    for op in (fn(f"\\a b -> {name} a b"), fn(name)):
        out = seg_sum(rows, op, c(ne))
        assert out.tolist() == [pick(r) if r else ne for r in rows]


def test_segmented_reduction_with_a_general_operator_keeps_operand_order():
    # affine maps x -> m*x + c composed left to right: associative, not commutative
    compose = fn("\\(m1, c1) (m2, c2) -> (m1 * m2, m2 * c1 + c2)")
    rows = [[], [(2, 1), (3, 4), (5, 0)], [(1, 7)], [], [(2, 2), (2, 2)]]
    ms = segs([[m for m, _ in r] for r in rows])
    cs = segs([[k for _, k in r] for r in rows])
    pair = F.TupleRep((R1, R1))
    ne, out = v("ne", F.TupleRep((I64, I64))), v("out", pair)
    result = run([st(out, F.SegReduce(compose, ne, v("o"), v("x", pair)))], out,
                 {"o": ms.offsets, "x": (ms.values, cs.values), "ne": (np.int64(1), np.int64(0))})

    def fold(r):
        m, k = 1, 0
        for m2, c2 in r:
            m, k = m * m2, m2 * k + c2
        return m, k
    assert list(zip(result[0].tolist(), result[1].tolist())) == [fold(r) for r in rows]


def test_segmented_reduction_adds_a_non_neutral_start_as_the_interpreter_does():
    assert seg_sum([[1, 2], []], ne=c(10)).tolist() == [13, 10]


def test_a_hand_flattened_row_sum_agrees_with_the_interpreter():
    code = "map (\\row -> reduce (+) 0 row) [[1, 2], [], [3, 4, 5], []]"
    xss, out = v("xss", SEG), v("out")
    result = run([
        st(xss, F.Literal([[1, 2], [], [3, 4, 5], []], SEG)),
        st(v("o"), F.Offsets(xss)), st(v("x"), F.Values(xss)),
        st(out, F.SegReduce(fn("(+)"), c(0), v("o"), v("x"))),
    ], out)
    assert from_flat(result, T.Array(T.I64)) == interp(code)


# ---------------------------------------------------------------- regular reductions


def test_regular_reduce_along_the_innermost_axis_makes_no_segment_descriptor(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("a segment descriptor was made")
    monkeypatch.setattr(segmented_module, "segment_iota", forbidden)
    monkeypatch.setattr(segmented_module, "sizes_to_offsets", forbidden)
    monkeypatch.setattr(rows_module, "sizes_to_offsets", forbidden)
    xss = np.arange(12, dtype=np.int64).reshape(3, 4)
    out, tot = v("out"), v("tot", I64)
    general = fn("\\a b -> b - 0 + a")       # not recognised: the tree path
    for op in (ADD, general):
        sums, total = run([st(out, F.Reduce(op, c(0), v("xss", R2))),
                           st(tot, F.Reduce(op, c(0), out))], (out, tot), {"xss": xss})
        assert sums.tolist() == [6, 22, 38] and total == 66 and type(total) is np.int64


def test_regular_reduce_of_an_empty_axis_gives_ne_per_row():
    out = v("out")
    result = run([st(out, F.Reduce(fn("max"), c(-1), v("xss", R2)))], out,
                 {"xss": np.zeros((3, 0), dtype=np.int64)})
    assert result.tolist() == [-1, -1, -1]


def test_regular_scan_along_rows_and_a_general_scan():
    xss = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64)
    out = v("out", R2)
    for op in (ADD, fn("\\a b -> a + b * 1")):
        result = run([st(out, F.Scan(op, c(0), v("xss", R2)))], out, {"xss": xss})
        assert result.tolist() == [[1, 3, 6], [4, 9, 15]]


@pytest.mark.parametrize("op", [ADD, fn("max"), fn("\\a b -> a + b * 1")])
def test_segmented_scan_restarts_in_every_segment(op):
    rows = [[3, 1], [], [5, 2, 7, 1], [4]]
    xss = segs(rows)
    out = v("out")
    result = run([st(out, F.SegScan(op, c(0), v("o"), v("x")))], out,
                 {"o": xss.offsets, "x": xss.values})
    is_max = op.body.__class__.__name__ == "Var"
    expected = []
    for r in rows:
        acc = 0
        for x in r:
            acc = max(acc, x) if is_max else acc + x
            expected.append(acc)
    assert result.tolist() == expected


# ---------------------------------------------------------------- filters and descriptors


def test_filter_regular_rows_and_irregular_rows():
    keep = np.array([True, False, True])
    out = v("out", R2)
    assert run([st(out, F.Filter(v("k", RB1), v("xs", R2)))], out,
               {"k": keep, "xs": np.arange(6).reshape(3, 2)}).tolist() == [[0, 1], [4, 5]]
    outs = v("outs", SEG)
    result = run([st(outs, F.Filter(v("k", RB1), v("xs", SEG)))], outs,
                 {"k": keep, "xs": segs([[1, 2], [3], []])})
    assert rows_of(result) == [[1, 2], []]


def test_seg_filter_gives_new_offsets_and_values():
    xss = segs([[1, 2, 3], [], [4, 5], [6]])
    keep = xss.values % 2 == 0
    o2, x2 = v("o2"), v("x2")
    o, x = run([st((o2, x2), F.SegFilter(v("k", RB1), v("o"), v("x")))], (o2, x2),
               {"k": keep, "o": xss.offsets, "x": xss.values})
    assert rows_of(Segs(o, x)) == [[2], [], [4], [6]]
    whole = v("whole", SEG)
    assert rows_of(run([st(whole, F.SegFilter(v("k", RB1), v("o"), v("x")))], whole,
                       {"k": keep, "o": xss.offsets, "x": xss.values})) == [[2], [], [4], [6]]


def test_replicated_iota_from_sizes():
    sizes, o, ids, pos = v("sizes"), v("o"), v("ids"), v("pos")
    ids_v, pos_v = run([st(sizes, F.Literal([2, 0, 3, 1], R1)),
                        st(o, F.SizesToOffsets(sizes)),
                        st(ids, F.SegmentIds(o)), st(pos, F.SegmentIota(o))], (ids, pos))
    assert ids_v.tolist() == [0, 0, 2, 2, 2, 3]
    assert pos_v.tolist() == [0, 1, 0, 1, 2, 0]


def test_negative_size_is_a_size_error_named_after_its_source():
    source = src("map (\\n -> iota n) ns")
    span = at(source, "iota n")
    o = v("o")
    with pytest.raises(SizeError) as err:
        run([st(o, F.SizesToOffsets(v("ns")), span=span)], o,
            {"ns": np.array([2, -1, -3], dtype=np.int64)})
    assert err.value.message == "iota: negative size -1" and err.value.span == span
    with pytest.raises(SizeError, match="replicate: negative size -2"):
        run([st(o, F.SizesToOffsets(v("ns")), span=at(src("replicate n 0"), "replicate n 0"))],
            o, {"ns": np.array([-2], dtype=np.int64)})


def test_lengths_and_iota_errors():
    out = v("out")
    assert run([st(out, F.Lengths(v("o")))], out,
               {"o": np.array([0, 2, 2, 5])}).tolist() == [2, 0, 3]
    with pytest.raises(SizeError, match="iota: negative size -4"):
        run([st(out, F.Iota(c(-4)))], out)


# ---------------------------------------------------------------- indexing


def test_gather_checks_bounds_with_the_interpreters_message_and_the_statement_span():
    source = src("map (\\i -> xs[i]) is")
    span = at(source, "xs[i]")
    out = v("out")
    xs = np.array([10, 20, 30], dtype=np.int64)
    ok = run([st(out, F.Gather(v("xs"), v("is")), span=span)], out,
             {"xs": xs, "is": np.array([2, 0])})
    assert ok.tolist() == [30, 10]
    with pytest.raises(AccelIndexError) as err:
        run([st(out, F.Gather(v("xs"), v("is")), span=span)], out,
            {"xs": xs, "is": np.array([1, 5, -1])})
    assert err.value.kind == "IndexError" and err.value.span == span
    assert err.value.message == "index 5 out of bounds for array of length 3"
    code = "map (\\i -> xs[i]) [1, 5, -1]"
    with pytest.raises(AccelIndexError) as ref:
        interp("let xs = [10, 20, 30]\n" + code)
    assert ref.value.message == err.value.message


def test_gather_of_irregular_rows():
    out = v("out", SEG)
    result = run([st(out, F.Gather(v("xss", SEG), v("is")))], out,
                 {"xss": segs([[1], [], [2, 3]]), "is": np.array([2, 2, 1, 0])})
    assert rows_of(result) == [[2, 3], [2, 3], [], [1]]


def test_seg_gather_checks_each_index_against_its_own_segment():
    xss = segs([[1, 2], [3], []])
    out = v("out")
    env = {"o": xss.offsets, "x": xss.values}
    op = F.SegGather(v("o"), v("x"), v("seg"), v("i"))
    got = run([st(out, op)], out, {**env, "seg": np.array([0, 0, 1]), "i": np.array([1, 0, 0])})
    assert got.tolist() == [2, 1, 3]
    with pytest.raises(AccelIndexError, match="index 1 out of bounds for array of length 1"):
        run([st(out, op)], out, {**env, "seg": np.array([0, 1]), "i": np.array([1, 1])})
    with pytest.raises(AccelIndexError, match="index 0 out of bounds for array of length 0"):
        run([st(out, op)], out, {**env, "seg": np.array([2]), "i": np.array([0])})


def test_index_and_length_outside_a_map():
    x, row, n = v("x", I64), v("row", R1), v("n", I64)
    xss = np.arange(6, dtype=np.int64).reshape(2, 3)
    got = run([st(row, F.Index(v("xss", R2), c(1))), st(x, F.Index(row, c(2))),
               st(n, F.Length(v("xss", R2)))], (row, x, n), {"xss": xss})
    assert got[0].tolist() == [3, 4, 5] and got[1] == 5 and type(got[1]) is np.int64
    assert got[2] == 2
    with pytest.raises(AccelIndexError, match="index -1 out of bounds for array of length 2"):
        run([st(row, F.Index(v("xss", R2), c(-1)))], row, {"xss": xss})
    irregular = run([st(row, F.Index(v("xss", SEG), c(1)))], row, {"xss": segs([[1], [2, 3]])})
    assert irregular.tolist() == [2, 3]


# ---------------------------------------------------------------- maps and views


def test_map_over_segments_keeps_the_offsets_and_can_give_tuples():
    xss = segs([[1, 2], [], [3]])
    out = v("out", F.TupleRep((SEG, SEG)))
    a, b = run([st(out, F.Map(fn("\\x -> (x * 10, x + 1)"), (v("xss", SEG),)))], out,
               {"xss": xss})
    assert rows_of(a) == [[10, 20], [], [30]] and rows_of(b) == [[2, 3], [], [4]]
    assert a.offsets is xss.offsets


def test_map2_length_mismatch_is_the_interpreters_size_error():
    out = v("out")
    with pytest.raises(SizeError, match=r"map2: array lengths differ \(2 and 3\)"):
        run([st(out, F.Map(ADD, (v("a"), v("b"))))], out,
            {"a": np.arange(2), "b": np.arange(3)})
    with pytest.raises(SizeError, match=r"map2: array lengths differ \(1 and 2\)"):
        run([st(v("o", SEG), F.Map(ADD, (v("a", SEG), v("b", SEG))))], v("o", SEG),
            {"a": segs([[1], [2]]), "b": segs([[1], [2, 3]])})


def test_replicate_is_a_broadcast_view_and_works_on_irregular_values():
    out = v("out", R2)
    got = run([st(out, F.Replicate(c(3), v("x")))], out, {"x": np.array([1, 2])})
    assert got.tolist() == [[1, 2]] * 3 and got.base is not None
    deep = v("deep", F.Segmented(SEG))
    got = run([st(deep, F.Replicate(c(2), v("x", SEG)))], deep, {"x": segs([[1], [], [2, 3]])})
    assert from_flat(got, T.Array(T.Array(T.Array(T.I64)))) == [[[1], [], [2, 3]]] * 2
    with pytest.raises(SizeError, match="replicate: negative size -1"):
        run([st(out, F.Replicate(c(-1), c(0)))], out)


def test_rebuild_offsets_values_and_reshape_are_views():
    xs = np.arange(6, dtype=np.int64)
    m, back, seg = v("m", R2), v("back"), v("seg", SEG)
    got = run([st(m, F.Reshape(v("xs"), c(2))), st(back, F.Values(m)),
               st(seg, F.Rebuild(v("o"), v("xs")))], (m, back, seg),
              {"xs": xs, "o": np.array([0, 1, 6])})
    assert got[0].tolist() == [[0, 1, 2], [3, 4, 5]] and np.shares_memory(got[0], xs)
    assert got[1].tolist() == xs.tolist()
    assert rows_of(got[2]) == [[0], [1, 2, 3, 4, 5]]
    o = v("o2")
    assert run([st(o, F.Offsets(v("m", R2)))], o,
               {"m": xs.reshape(3, 2)}).tolist() == [0, 2, 4, 6]


def test_tuples_are_free():
    t, p = v("t", F.TupleRep((R1, I64))), v("p", I64)
    assert run([st(t, F.MakeTuple((v("xs"), c(7)))), st(p, F.Project(t, 1))], p,
               {"xs": np.arange(2)}) == 7


# ---------------------------------------------------------------- control


def test_if_runs_only_the_chosen_block():
    out = v("out")
    failing = F.Block((st(v("bad"), F.Iota(c(-1))),), (v("bad"),))
    fine = F.Block((st(v("good"), F.Iota(c(2))),), (v("good"),))
    got = run([st(out, F.If(c(True, "bool"), fine, failing))], out)
    assert got.tolist() == [0, 1]


def test_for_and_while_loops():
    acc, i, nxt = v("acc", I64), v("i", I64), v("next", I64)
    body = F.Block((st(nxt, F.Scalar(fn("acc + i * i", acc, i))),), (nxt,))
    out = v("out", I64)
    assert run([st(out, F.Loop((acc,), (c(0),), body, bound=c(4), index=i))], out) == 14
    x, more, half = v("x", I64), v("more", BOOL), v("half", I64)
    cond = F.Block((st(more, F.Scalar(fn("x > 1", x))),), (more,))
    body = F.Block((st(half, F.Scalar(fn("x / 2", x))),), (half,))
    assert run([st(out, F.Loop((x,), (c(100),), body, cond=cond))], out) == 1
    assert interp("loop x = 100 while x > 1 do x / 2") == 1


# ---------------------------------------------------------------- programs, counters, trace


def test_let_forms_bind_globals_for_later_forms_and_defs_are_callable():
    xs, total = v("xs"), v("total", I64)
    let_form = F.FlatForm("let", ("xs",), (), F.Block((st(xs, F.Iota(c(5))),), (xs,)))
    expr_form = F.FlatForm("expr", (), (), F.Block(
        (st(total, F.Reduce(ADD, c(0), v("xs"))),), (total,)))
    p = v("p")
    doubled = v("doubled")
    def_form = F.FlatForm("def", ("double",), (p,), F.Block(
        (st(doubled, F.Map(fn("\\x -> 2 * x"), (p,))),), (doubled,)))
    out = execute(F.FlatProgram((let_form, expr_form, def_form)), {"unused": np.int64(1)})
    assert out.bindings["xs"].tolist() == [0, 1, 2, 3, 4] and out.results == [10]
    assert call(out.defs["double"], [np.arange(3)], {}).tolist() == [0, 2, 4]
    assert out.interp_results([T.I64]) == [10]


def test_counters_measure_work_and_depth_and_trace_keeps_every_value():
    counters = Counters()
    xs, ys, total = v("xs"), v("ys"), v("total", I64)
    stmts = [st(xs, F.Iota(c(8))), st(ys, F.Map(fn("\\x -> x * x + 1"), (xs,))),
             st(total, F.Reduce(ADD, c(0), ys))]
    out = run(stmts, total, counters=counters, trace=True)
    assert out == sum(x * x + 1 for x in range(8))
    steps = [(s.stmt.op.__class__.__name__, s.work, s.depth) for s in counters.steps]
    # iota: n; map: N writes + 2 operations per element; reduce: N, log2 N
    assert steps == [("Iota", 8, 1), ("Map", 8 + 16, 1), ("Reduce", 8, 3)]
    assert counters.work == 40 and counters.depth == 5
    assert [type(value) for _, value in counters.trace] == [np.ndarray, np.ndarray, np.int64]
    assert counters.trace[1][1].tolist() == [x * x + 1 for x in range(8)]


def test_loop_depth_adds_up_over_iterations():
    counters = Counters()
    acc, nxt, out = v("acc", I64), v("next", I64), v("out", I64)
    body = F.Block((st(nxt, F.Scalar(fn("acc + 1", acc))),), (nxt,))
    run([st(out, F.Loop((acc,), (c(0),), body, bound=c(5)))], out, counters=counters)
    assert counters.depth == 5 + 5 * 1     # the test and the body, per iteration


def test_the_globals_given_are_not_changed():
    g = {"xs": np.arange(3)}
    execute(prog([st(v("ys"), F.Iota(c(1)))], v("ys"), kind="let", names=("xs",)), g)
    assert g["xs"].tolist() == [0, 1, 2]


def test_assert_raises_its_kind_at_the_statement_span_unless_ok_holds_everywhere():
    source = src("map2 (+) xs ys")
    span = at(source, "map2 (+) xs ys")
    check = st((), F.Assert(v("ok", RB1), "SizeError", "map2: array lengths differ (2 and 3)"),
               span=span)
    x = v("x", I64)
    assert run([check, st(x, F.Scalar(fn("1")))], x, {"ok": np.array([True, True])}) == 1
    assert run([check, st(x, F.Scalar(fn("1")))], x, {"ok": np.zeros(0, dtype=bool)}) == 1
    with pytest.raises(SizeError) as err:
        run([check], c(0), {"ok": np.array([True, False])})
    assert err.value.message == "map2: array lengths differ (2 and 3)" and err.value.span == span
    scalar = st((), F.Assert(c(False, "bool"), "IndexError", "index 3 out of bounds"))
    with pytest.raises(AccelIndexError, match="index 3 out of bounds"):
        run([scalar], c(0))


def test_a_cancelled_run_is_interrupted():
    from accel_kernel.lang.errors import Interrupted
    from accel_kernel.runtime.cancel import CancelToken
    token = CancelToken()
    token.set()
    with pytest.raises(Interrupted):
        execute(prog([st(v("xs"), F.Iota(c(3)))], v("xs")), {}, cancel=token)


def test_map_of_an_operator_function_over_two_arrays():
    out = v("out")
    got = run([st(out, F.Map(fn("(-)"), (v("a"), v("b"))))], out,
              {"a": np.array([5, 7]), "b": np.array([1, 2])})
    assert got.tolist() == [4, 5]


def test_replicated_iota_row_sums_agree_with_the_interpreter():
    code = "map (\\n -> reduce (+) 0 (iota n)) [3, 0, 2, 0]"
    ns, o, pos, sums = v("ns"), v("o"), v("pos"), v("sums")
    got = run([st(ns, F.Literal([np.int64(k) for k in (3, 0, 2, 0)], R1)),
               st(o, F.SizesToOffsets(ns)), st(pos, F.SegmentIota(o)),
               st(sums, F.SegReduce(ADD, c(0), o, pos))], sums)
    assert from_flat(got, T.Array(T.I64)) == interp(code)


def test_nested_filter_agrees_with_the_interpreter():
    code = "map (\\xs -> filter (\\x -> x > 0) xs) [[1, -2], [], [-3], [4, 5]]"
    xss, keep, res = v("xss", SEG), v("keep", RB1), v("res", SEG)
    got = run([st(xss, F.Literal(interp("[[1, -2], [], [-3], [4, 5]]"), SEG)),
               st(v("o"), F.Offsets(xss)), st(v("x"), F.Values(xss)),
               st(keep, F.Map(fn("\\x -> x > 0"), (v("x"),))),
               st(res, F.SegFilter(keep, v("o"), v("x")))], res)
    assert from_flat(got, T.Array(T.Array(T.I64))) == interp(code)


def test_reduce_and_scan_given_an_irregular_array_work_on_its_innermost_segments():
    out, scanned = v("out"), v("scanned", SEG)
    xss = segs([[1, 2], [], [3]])
    assert run([st(out, F.Reduce(ADD, c(0), v("x", SEG)))], out, {"x": xss}).tolist() == \
        [3, 0, 3]
    assert rows_of(run([st(scanned, F.Scan(ADD, c(0), v("x", SEG)))], scanned,
                       {"x": xss})) == [[1, 3], [], [3]]


def test_seg_filter_of_irregular_elements():
    # [][][]i64: keep some of the rows of every segment, rows themselves irregular
    inner = segs([[1], [], [2, 3], [4]])
    outer = np.array([0, 3, 4])
    o2, x2 = v("o2"), v("x2", SEG)
    o, x = run([st((o2, x2), F.SegFilter(v("k", RB1), v("o"), v("x", SEG)))], (o2, x2),
               {"k": np.array([True, False, True, False]), "o": outer, "x": inner})
    assert o.tolist() == [0, 2, 2] and rows_of(x) == [[1], [2, 3]]
