"""The `flatten` stage: regularity preserved, scalar code not lifted, every construct of the
core IR lifted (checked on the flat IR, and by running it on the `numpy` target against the
interpreter), the rules in the step log, and the stage in the pipeline and its views."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from accel_kernel.backends.numpy import call, execute, from_flat, to_flat
from accel_kernel.ir import flat as F
from accel_kernel.ir.flat_printer import parse_flat, print_stmt, verify
from accel_kernel.lang import ast
from accel_kernel.lang import types as T
from accel_kernel.lang.errors import AccelError
from accel_kernel.passes.desugar import DESUGAR
from accel_kernel.passes.flatten import FLATTEN
from accel_kernel.passes.regularity import REGULARITY
from accel_kernel.passes.shape import SHAPE
from accel_kernel.session import Session
from accel_kernel.values import format_value
from accel_kernel.viz.flat_views import flat_dot, flat_json, flat_text

from .helpers import stages_of, unseq

PROGRAMS = sorted((Path(__file__).parent.parent / "programs").glob("*.accel"))
PASSES = [DESUGAR, SHAPE, REGULARITY, FLATTEN]
# programs of tests/programs the stage does not flatten yet (none today)
NOT_FLATTENED: set[str] = set()
DESCRIPTOR_OPS = (F.Offsets, F.Rebuild, F.SizesToOffsets, F.SegmentIds, F.SegmentIota,
                  F.Lengths, F.SegReduce, F.SegScan, F.SegFilter, F.SegGather, F.SegLibrary)


# ---------------------------------------------------------------- helpers

def flatten(text: str):
    """The flatten stage of `text` (all its forms)."""
    stage = stages_of(text, PASSES)[-1]
    assert stage.name == "flatten"
    assert verify(stage.program) == []
    return stage


def form(stage, name: str) -> F.FlatForm:
    return next(f for f in stage.program.forms if name in f.names)


def statements(block: F.Block):
    for stmt in block.stmts:
        yield stmt
        if not isinstance(stmt.op, F.Kernel):
            for inner in F.blocks_of(stmt.op):
                yield from statements(inner)


def descriptors(flat_form: F.FlatForm) -> list[str]:
    """Every statement (and parameter) that makes or reads a segment descriptor."""
    found = [p.name for p in flat_form.params if F.representation(p.rep) == "irregular"]
    for stmt in statements(flat_form.body):
        if isinstance(stmt.op, DESCRIPTOR_OPS) or any(
                F.representation(t.rep) == "irregular" for t in stmt.targets):
            found.append(print_stmt(stmt)[0].strip())
    return found


def on_numpy(text: str) -> str:
    """The value of the last expression of `text`, flattened and run on the numpy target
    (accel errors propagate)."""
    stages = Session().program_stages(text, "test.accel", stop_after="flatten")
    typed = next(s for s in stages if s.name == "typed")
    exprs = [f for f in typed.program.forms if isinstance(f, ast.TopExpr)]
    t = unseq(typed.types[exprs[-1].expr.id])
    out = execute(stages[-1].program, {})
    return format_value(from_flat(out.results[-1], t), t)


def outcome(run, text: str):
    try:
        return "value", run(text)
    except AccelError as err:
        return type(err).__name__, err.span.location() if err.span else None


def same_as_interp(text: str) -> None:
    expected = outcome(lambda src: Session(target="interp").execute(src, "test.accel").text, text)
    assert outcome(on_numpy, text) == expected


def call_def(text: str, name: str, *args):
    """`name` of `text` called on interpreter values: (numpy result, interp result)."""
    session = Session(target="interp")
    session.execute(text, "test.accel")
    expected = session.call(name, list(args))
    stage = Session().program_stages(text, "test.accel", stop_after="flatten")[-1]
    flat_form = form(stage, name)
    t = session.scheme(name).type
    param_types = []
    while isinstance(t, T.Func):
        param_types.append(t.param)
        t = t.result
    flat_args = [to_flat(a, p.rep) for a, p in zip(args, flat_form.params)]
    got = from_flat(call(flat_form, flat_args, {}), t)
    return format_value(got, t), format_value(expected, t)


# ---------------------------------------------------------------- acceptance: regularity

def test_summing_rows_of_a_regular_matrix_is_a_2d_reduction_without_descriptors():
    stage = flatten("def f (xss: [n][m]i64) = map (\\r -> reduce (+) 0 r) xss")
    f = form(stage, "f")
    assert f.params[0].rep == F.Regular("i64", 2)
    reduces = [s for s in statements(f.body) if isinstance(s.op, F.Reduce)]
    assert len(reduces) == 1 and reduces[0].op.arr == f.params[0]
    assert reduces[0].targets[0].rep == F.Regular("i64", 1)
    assert descriptors(f) == []
    assert any(step.rule == "LIFT-REDUCE-REGULAR" for step in stage.steps)


def test_a_histogram_inside_a_map_is_one_flat_reduce_by_index_without_a_loop():
    stage = flatten("def f (xss: [][]i64) = map (\\r -> reduce_by_index (replicate 3 0) (+) 0 "
                    "r r) xss")
    f = form(stage, "f")
    stmts = list(statements(f.body))
    hists = [s for s in stmts if isinstance(s.op, F.Library) and s.op.name == "reduce_by_index"]
    assert len(hists) == 1 and not any(isinstance(s.op, F.Loop) for s in stmts)
    assert hists[0].targets[0].rep == F.Regular("i64", 1)      # the flat destination values
    assert f.body.result[0].rep == F.Regular("i64", 2)          # rows of the regular block
    assert call_def("def f (xss: [][]i64) = map (\\r -> reduce_by_index (replicate 3 0) (+) 0 "
                    "r r) xss", "f", [[0, 1, 1], [2, 7, -1], []])[0] == \
        "[[0, 2, 0], [0, 0, 2], [0, 0, 0]]"


def test_a_lifted_neutral_element_is_one_segmented_reduction_of_flagged_values():
    stage = flatten("def f (xss: [][]i64) = map (\\r -> reduce max (length r) r) xss")
    stmts = list(statements(form(stage, "f").body))
    reds = [s for s in stmts if isinstance(s.op, F.SegReduce)]
    assert len(reds) == 1 and not any(isinstance(s.op, F.Loop) for s in stmts)
    assert reds[0].op.values.rep == F.TupleRep((F.Regular("bool", 1), F.Regular("i64", 1)))
    assert reds[0].op.ne.rep == F.TupleRep((F.ScalarRep("bool"), F.ScalarRep("i64")))


def test_map2_operators_reduce_columns_of_the_transposed_block():
    stage = flatten("def f (xss: [][]i64) = reduce (map2 (+)) [0, 0] xss")
    stmts = list(statements(form(stage, "f").body))
    assert len([s for s in stmts if isinstance(s.op, F.SegReduce)]) == 1
    assert any(isinstance(s.op, F.Assert) and s.op.kind == "SizeError" for s in stmts)
    assert not any(isinstance(s.op, F.Loop) for s in stmts)


def test_transposing_regular_blocks_inside_a_map_needs_no_descriptor():
    stage = flatten("def f (n: i64) = map (\\r -> transpose r) (replicate n [[1, 2], [3, 4]])")
    f = form(stage, "f")
    assert descriptors(f) == []
    assert f.body.result[0].rep == F.Regular("i64", 3)


def test_summing_rows_of_an_irregular_array_is_a_segmented_reduction():
    stage = flatten("def f (xss: [][]i64) = map (\\r -> reduce (+) 0 r) xss")
    f = form(stage, "f")
    assert f.params[0].rep == F.Segmented(F.Regular("i64", 1))
    assert [type(s.op) for s in statements(f.body)] == [F.Offsets, F.Values, F.SegReduce]
    assert any(step.rule == "LIFT-REDUCE-SEGMENTED" for step in stage.steps)


EMPTY_ROWS = "[[], [], [2, 3], [], [], [4], [5, -1], []]"   # first, in a run, last


@pytest.mark.parametrize("op, ne, expected", [
    ("(+)", "0", "[0, 0, 5, 0, 0, 4, 4, 0]"),
    ("(*)", "1", "[1, 1, 6, 1, 1, 4, -5, 1]"),
    ("max", "(-100)", "[-100, -100, 3, -100, -100, 4, 5, -100]"),
    ("min", "100", "[100, 100, 2, 100, 100, 4, -1, 100]"),
    ("(\\a b -> if a > b then a else b)", "(-7)", "[-7, -7, 3, -7, -7, 4, 5, -7]"),
])
def test_empty_rows_reduce_to_the_neutral_element(op, ne, expected):
    """`np.add.reduceat` alone would give a neighbour's element for an empty row."""
    text = f"let xss = {EMPTY_ROWS}\nmap (\\r -> reduce {op} {ne} r) xss"
    stage = Session().program_stages(text, "t.accel", stop_after="flatten")[-1]
    assert any(isinstance(s.op, F.SegReduce) for f in stage.program.forms
               for s in statements(f.body))
    assert on_numpy(text) == expected
    same_as_interp(text)


def test_empty_rows_scan_and_filter():
    same_as_interp(f"let xss = {EMPTY_ROWS}\n"
                   "(map (\\r -> scan (+) 0 r) xss, map (\\r -> filter (> 2) r) xss,"
                   " map (\\r -> length r) xss)")


SORT_ROWS = """
def is_sorted (r: []i64) : bool = all (\\i -> r[i] <= r[i + 1]) (iota (length r - 1))
def bubble_pass (r: []i64) : []i64 =
  loop s = r for i < length r - 1 do
    if s[i] > s[i + 1] then scatter s [i, i + 1] [s[i + 1], s[i]] else s
def sort_rows (xss: [n][m]i64) : [][]i64 =
  map (\\row -> while (\\r -> !(is_sorted r)) bubble_pass row) xss
"""

EUROPAR = {
    "yss": """
def yss (xss: [n][m]i64) : [][]i64 =
  generate (length xss) (\\i -> generate (length xss[i]) (\\j -> xss[i][j] + 1))
""",
    "yss2": """
def yss2 (xss: [n][m]i64) : [][]i64 =
  generate (length xss) (\\i ->
    let c = xss[i][0] > 0
    let t = generate (length xss[i]) (\\j -> xss[i][j] + 1)
    let e = generate (length xss[i]) (\\j -> xss[i][j] * 2)
    in cond c t e)
""",
    "yss3": """
def yss3 (xss: [n][m]i64) : [][]i64 =
  generate (length xss) (\\i ->
    let c = xss[i][0] > 0
    let t = generate (length xss[i]) (\\j -> xss[i][j] + 1)
    let e = generate (length xss[i]) (\\j -> xss[i][j] * 2)
    in if c then t else e)
""",
    "sort_rows": SORT_ROWS,
}


@pytest.mark.parametrize("name", EUROPAR)
def test_the_europar_examples_stay_regular(name):
    text = EUROPAR[name]
    f = form(flatten(text), name)
    assert f.params[0].rep == F.Regular("i64", 2)
    assert descriptors(f) == []
    assert f.body.result[0].rep == F.Regular("i64", 2)
    for arg in ([[3, 1, 2], [-9, 8, 7]], [[5], [4], [0]], []):
        import numpy as np
        value = [[np.int64(x) for x in row] for row in arg]
        got, expected = call_def(text, name, value)
        assert got == expected


def test_irregular_results_use_descriptors():
    text = """
def double_rows (xss: [n][m]i64) : [][]i64 =
  map (\\row -> while (\\r -> length r < 64 && r[0] < 10) (\\r -> map (\\x -> 2 * x) (r ++ r)) row) xss
def ragged (xs: []i64) : [][]i64 = map (\\n -> iota n) xs
"""
    stage = flatten(text)
    assert descriptors(form(stage, "double_rows")) != []
    ragged = form(stage, "ragged")
    assert [type(s.op) for s in statements(ragged.body)] == \
        [F.SizesToOffsets, F.SegmentIota, F.Rebuild]
    import numpy as np
    rows = [[np.int64(3), np.int64(1)], [np.int64(50), np.int64(1)]]
    got, expected = call_def(text, "double_rows", rows)
    assert got == expected


# ---------------------------------------------------------------- acceptance: no lifted scalars
# (a scalar map, avoided scalars, the scalar code around an operand: the flatten_map_scalar*
# fixtures of tests/passes/fixtures/)

def test_slices_of_an_avoided_array_are_gathered_from_it_not_from_copies():
    """CSR rows as slices of one flat array: each point reads its range of `vals`
    directly; the array is never replicated per point (n × N work)."""
    text = ("def rows (vals: []f64) (offs: []i64) : [][]f64 =\n"
            "  generate (length offs - 1) (\\i -> vals[offs[i]:offs[i + 1]])\n"
            "def firsts (vals: []f64) (n: i64) : [][]f64 =\n"
            "  generate n (\\i -> vals[i:i + 2])")
    stage = flatten(text)
    for name in ("rows", "firsts"):
        ops = [type(s.op) for s in statements(form(stage, name).body)]
        assert F.Replicate not in ops, name
    assert call_def(text, "rows", [1.0, 2.0, 3.0], [0, 2, 2, 3]) == \
        ("[[1.0, 2.0], [], [3.0]]",) * 2
    assert call_def(text, "firsts", [1.0, 2.0, 3.0], 2) == ("[[1.0, 2.0], [2.0, 3.0]]",) * 2


def test_invariant_code_is_avoided():
    stage = flatten("def f (xs: []i64) (m: [][]i64) = map (\\x -> x + length (transpose m)) xs")
    assert any(step.rule == "AVOID" for step in stage.steps)
    f = form(stage, "f")
    transpose = next(s for s in statements(f.body) if isinstance(s.op, F.Library))
    assert transpose.op.name == "transpose"       # once, outside the map
    guard = next(s for s in f.body.stmts if isinstance(s.op, F.If))   # only if xs has a row
    assert transpose in guard.op.then.stmts
    assert json.dumps(flat_json(stage))           # the JSON view says which bindings
    bindings = flat_json(stage)["bindings"]
    assert bindings[transpose.targets[0].name]["representation"] == "avoided"


def test_moved_code_that_may_fail_is_guarded_by_the_point_count():
    text = ("def f (xs: []i64) (k: i64) = map (\\x -> x + reduce (+) 0 (iota k)) xs\n"
            "def g (xs: []i64) (ys: []i64) = map (\\x -> x + length ys) xs")
    stage = flatten(text)
    assert any(step.rule == "GUARD" for step in stage.steps)
    guard = next(s for s in form(stage, "f").body.stmts if isinstance(s.op, F.If))
    assert any(isinstance(s.op, F.Iota) for s in guard.op.then.stmts)   # only if xs has one
    assert not any(isinstance(s.op, F.Iota) for s in form(stage, "f").body.stmts)
    assert not any(isinstance(s.op, F.If) for s in statements(form(stage, "g").body))
    assert call_def(text, "f", [], -1) == ("[]",) * 2             # iota (-1) is not reached
    assert call_def(text, "f", [1, 2], 3) == ("[4, 5]",) * 2


def test_seq_inner_length_checks_are_guarded_and_stay_with_their_branch():
    """SEQ-INNER (the cpu flattening; the flat program run here with numpy) checks the
    lengths map2 reads once, outside the map, only when the map has a point (the check's
    condition reads `reached`; the kernel itself is not guarded), and not at all for a read
    in a branch (there it is not scalar code)."""
    text = ("def f (js: []i64) (xs: []i64) (ys: []i64) = "
            "map (\\j -> reduce (\\p q -> p + q * j) 0 (map2 (\\a b -> a * b) xs ys)) js\n"
            "def g (js: []i64) (xs: []i64) (ys: []i64) = "
            "map (\\j -> if j > 5 then length (zip xs ys) else j) js")
    stage = flatten(text)
    assert any(step.rule == "SEQ-INNER" for step in stage.steps)
    body = form(stage, "f").body
    assert not any(isinstance(s.op, F.If) for s in body.stmts)
    assert any(isinstance(s.op, F.Assert) for s in body.stmts)
    assert any("scalar (!reached_" in line for s in body.stmts for line in print_stmt(s))
    assert call_def(text, "f", [], [1, 2, 3], [1, 2]) == ("[]",) * 2
    assert call_def(text, "f", [1, 2], [1, 2, 3], [1, 2, 3]) == ("[14, 28]",) * 2
    assert call_def(text, "g", [1, 2], [1, 2, 3], [1, 2]) == ("[1, 2]",) * 2


def test_seq_inner_rows_reads_the_centroids_and_the_points_own_row_in_place():
    """SEQ-INNER-ROWS: k-means' `nearest` is one map of a scalar function over the points'
    indices, reading the blocks `ps` and `cs` whole (`ps[q][l]`, `cs[j][l]`): nothing is
    replicated per point and there is no segmented reduction. The widths map2 reads are
    checked only when some point meets some centroid."""
    text = ("def dist2 (p: []f64) (c: []f64) : f64 = "
            "reduce (+) 0.0 (map2 (\\a b -> (a - b) * (a - b)) p c)\n"
            "def f (ps: [n][d]f64) (cs: [k][e]f64) = map (\\p -> reduce min 1000.0 "
            "(map (\\c -> dist2 p c) cs)) ps")
    stage = flatten(text)
    assert [step.rule for step in stage.steps if step.rule.startswith("SEQ")] == \
        ["SEQ-INNER-ROWS"] * 2
    body = form(stage, "f").body
    assert not any(isinstance(s.op, (F.Replicate, F.SegReduce, F.Gather)) for s in body.stmts)
    (kernel,) = [s for s in body.stmts if isinstance(s.op, F.Map)]
    assert {v.rep for v in kernel.op.fn.free} >= {F.Regular("f64", 2)}
    assert any("scalar (reached_" in line and "> 0" in line
               for s in body.stmts for line in print_stmt(s))
    assert call_def(text, "f", [[0.0, 1.0], [2.0, 2.0]], [[1.0, 1.0], [3.0, 2.0]]) == \
        ("[1.0, 1.0]",) * 2
    assert call_def(text, "f", [[0.0, 1.0]], []) == ("[1000.0]",) * 2     # nothing to check
    # the point's own row alone is still a regular reduction along the rows
    stage = flatten("def g (xss: [n][m]i64) = map (\\r -> reduce (+) 0 r) xss")
    assert not any(step.rule.startswith("SEQ") for step in stage.steps)


def test_moved_code_runs_only_on_the_outer_points_that_reach_it():
    text = ("def f (xss: [][]i64) (xs: []i64) = "
            "map (\\x -> map (\\y -> xss[x]) (filter (\\z -> z > x) xs)) xs")
    stage = flatten(text)
    assert any(step.rule == "GUARD-POINTS" for step in stage.steps)
    # x = 0 has one inner point (z = 5), x = 5 none: xss[5] is never read
    assert call_def(text, "f", [[1], [2, 3]], [0, 5]) == ("[[[1]], []]",) * 2


# ---------------------------------------------------------------- every construct

@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_every_example_program_flattens_and_runs_on_numpy_like_interp(path):
    text = path.read_text()
    try:
        Session().check(text, path.name)
    except AccelError:
        pytest.skip("a compile-time error: nothing to flatten")
    if path.stem in NOT_FLATTENED:
        with pytest.raises(NotImplementedError, match="flatten: "):
            Session().program_stages(text, path.name, stop_after="flatten")
        return
    same_as_interp(text)


CONSTRUCTS = {
    "lifted-permutations": """
let xss = [[1, 2, 3], [4], [], [5, 6]]
let m = [[1, 2, 3], [4, 5, 6]]
(map reverse xss, map reverse m, map (\\r -> rotate 1 r) xss, map (\\r -> rotate (-1) r) m,
 map (\\r -> take (length r / 2) r) xss, map (\\r -> drop 1 r) m, map (\\r -> take 2 r) m)""",
    "lifted-sort-head-slice-concat": """
let xss = [[3, 1, 2], [4], [9, 8, 7, 6]]
let m = [[3, 1, 2], [6, 5, 4]]
(map sort xss, map sort m, map (\\r -> head r) xss, map (\\r -> last r) m, map (\\r -> r[1:]) xss,
 map (\\r -> r[0:2]) m, map (\\r -> r ++ [0]) xss, map (\\r -> r ++ r) m,
 map (\\r -> sort_by (\\x -> -x) r) xss)""",
    "lifted-reads-in-branches": """
let ys = [10, 20, 30]
let m = [[1, 2], [3, 4]]
let ps = zip [1, 2] [0.5, 1.5]
let xss = [[0, 1, 5], [], [2]]
(map (\\i -> if i < 3 then ys[i] else m[1][0]) [0, 3, 9],
 map (\\i -> i < 0 || ys[i] > 10) [1, -4, 0],
 map (\\i -> if i < 2 then ps[i] else (0, 0.0)) [1, 2],
 map (\\r -> map (\\j -> if j < 2 then m[j][r[0] % 2] else j) r) [[0, 4], [1]],
 map (\\r -> map (\\j -> if j < length ys then ys[j] * length r else 0) r) xss,
 map (\\i -> if i < 3 then (\\k -> ys[k] + k) i else 0) [2, 5])""",
    "lifted-update-scatter-filter": """
let m = [[1, 2, 3], [4, 5, 6]]
let xss = [[1, 2, 3], [4], [5, 6]]
(map (\\r -> r with [0] = 9) m, map (\\r -> r with [1] = 7) [[1, 2], [3, 4, 5]],
 map (\\r -> scatter r [0, 2] [10, 30]) m, map (\\r -> filter (\\x -> x % 2 == 1) r) m,
 map (\\r -> partition (\\x -> x > 2) r) xss)""",
    "lifted-flatten-depth3-loops": """
let m = [[1, 2, 3], [4, 5, 6]]
let xsss = [[[1], [2, 3]], [[]], [[4, 5, 6]]]
let cube = [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]
(map flatten xsss, map flatten cube, map (\\xss -> map (\\xs -> map (\\x -> x * 10) xs) xss) xsss,
 map (\\r -> loop acc = 0 for x in r do acc + x) m, map (\\r -> loop s = r for i < 3 do map (\\x -> x + i) s) m)""",
    "lifted-if-expand-while": """
let xs = [1, 5, 3, 8]
let m = [[1, 2], [3, 4], [5, 6]]
(map (\\x -> if x > 2 then [x, x] else [0, 0]) xs, map (\\x -> if x > 2 then iota x else [x]) xs,
 map (\\r -> if r[0] > 2 then map (\\y -> y * 2) r else r) m,
 map (\\x -> expand (\\y -> y) (\\y i -> y + i) [x, 2]) xs,
 map (\\x -> while (\\(a, b) -> a < 100) (\\(a, b) -> (a * 2, b + 1)) (x, 0)) xs)""",
    "avoided-arrays-inside-maps": """
let xs = [1, 5, 3, 8]
let ys = [10, 20, 30]
(map (\\x -> map (\\y -> x + y) ys) xs, map (\\x -> reduce (+) 0 (map (\\y -> x * y) ys)) xs,
 map (\\x -> filter (\\y -> y > x * 5) ys) xs, map (\\x -> scan (+) 0 (iota x)) xs,
 map (\\x -> (x, iota x)) xs, generate 3 (\\i -> generate 2 (\\j -> generate i (\\k -> i + j + k))))""",
    "values-of-outer-levels": """
let xss = [[1, 2, 3], [4], [], [5, 6]]
let n = 2
(map (\\r -> map (\\x -> x + n) r) xss, map (\\r -> map (\\x -> x + length r) r) xss,
 map (\\r -> let s = reduce (+) 0 r in map (\\x -> x * s) r) xss,
 map (\\r -> zip r (iota (length r))) xss, map (\\r -> unzip (map (\\x -> (x, x * 2)) r)) xss)""",
    "partitions-fail-only-where-taken": """
let xs = [4, 0, 2]
let e = ([] : []i64)
(map (\\x -> if x > 0 then 10 / x else 0) xs, map (\\x -> if x > 0 then [10 / x] else []) xs,
 map (\\x -> let a = iota x in if length a > 1 then a[1] else -1) xs,
 map (\\x -> loop (i, acc) = (0, []) while i < x do (i + 1, acc ++ [i])) xs,
 map (\\x -> if x > 5 then head e else x) xs, map (\\x -> if x > 5 then e[0] + x else x) xs)""",
    "empty-maps-fail-nowhere": """
let m = generate 0 (\\i -> [1, 2, 3])
let e = ([] : [][]i64)
(map (\\r -> take 2 r) m, map (\\r -> 10 / (length r - 3)) m, map (\\r -> iota (length r - 4)) m,
 map (\\r -> r[5]) m, map (\\r -> head (drop 3 r)) m, map (\\r -> reduce (+) 0 r) e)""",
    "replicate-and-nested-literals": """
let xs = [3, 1, 2]
(map (\\x -> replicate x x) xs, map (\\x -> replicate 2 x) xs, map (\\x -> replicate 2 [x, x]) xs,
 map (\\x -> map (\\y -> [y]) (iota x)) xs, reduce (\\a b -> a ++ b) [] [[1], [2, 3]])""",
    "indexing-at-every-level": """
let m = [[1, 2, 3], [4, 5, 6]]
let xss = [[1, 2, 3], [4], [5, 6]]
(map (\\r -> map (\\i -> r[i] * 2) (iota (length r))) m,
 map (\\r -> map (\\i -> r[length r - 1 - i]) (iota (length r))) xss,
 map (\\r -> generate (length r) (\\i -> generate (i + 1) (\\j -> r[j]))) xss,
 map (\\r -> reduce (\\a b -> if a > b then a else b) (-100) r) xss)""",
    "nested-loops-and-tuples-of-state": """
let xss = [[5, 1, 4], [2, 3], [9]]
(map (\\r -> loop s = r for i < length r do loop t = s for j < length r - 1 do
               if t[j] > t[j + 1] then scatter t [j, j + 1] [t[j + 1], t[j]] else t) xss,
 map (\\x -> loop (a, i) = (x, 0) while a != 1 && i < 10 do
               (if a % 2 == 0 then a / 2 else 3 * a + 1, i + 1)) [5, 3, 8])""",
    "errors-inside-maps": """
let xss = [[1, 2], [3, 4, 5]]
map (\\r -> r[2]) xss""",
    "errors-inside-regular-maps": """
let m = [[1, 2], [3, 4]]
map (\\r -> r[2]) m""",
    "negative-sizes-inside-maps": """
let xs = [3, -1, 2]
map (\\n -> iota n) xs""",
    "histograms-inside-maps": """
let xss = [[0, 1, 1], [2, 2], [5, -1], []]
(map (\\x -> reduce_by_index (replicate 3 0) (+) 0 x x) xss,
 map (\\n -> reduce_by_index (iota n) (\\a b -> a * b) 1 [0, 2, 3, 0] [7, 1, 9, 3]) [1, 4, 0, 3],
 map (\\x -> reduce_by_index [1.5, 2.5] min 0.0 x [0.5, -1.0]) [[0, 1], [1, 1]])""",
    "lifted-neutral-elements": """
let xss = [[3, 1], [], [2, 8, 5]]
(map (\\x -> reduce max x [1, 2]) [5, 0], map (\\r -> reduce min (length r) r) xss,
 map (\\r -> scan (+) (length r) r) xss,
 map (\\x -> map (\\y -> reduce (+) y (iota x)) [x, 1]) [2, 0],
 map (\\r -> reduce (\\(a, b) (c, d) -> (a + c, b * d)) (length r, 2) (zip r r)) xss)""",
    "array-operators": """
let blocks = [[[1, 2], [3, 4]], [[5, 6]], []]
(scan (map2 (+)) [0, 0] [[1, 2], [3, 4]], reduce (map2 (*)) [1, 1, 1] [[1, 2, 3], [4, 5, 6]],
 reduce_by_index [[0, 0], [0, 0]] (map2 (+)) [0, 0] [0, 1, 0] [[1, 2], [3, 4], [5, 6]],
 map (\\r -> reduce (map2 (+)) [0, 0] r) blocks, map (\\r -> scan (map2 max) [2, 2] r) blocks,
 map (\\r -> reduce (\\a b -> a ++ b) [] r) blocks, scan (\\a b -> a ++ b) [] [[1], [2, 3]])""",
    "array-operators-check-rows": """
map (\\r -> scan (map2 (+)) [0, 0] r) [[[1, 2]], [[1, 2, 3]]]""",
    "transposes-inside-maps": """
(map (\\m -> transpose m) [[[1, 2], [3, 4]], [[5, 6], [7, 8]]],
 map (\\n -> transpose (map (\\i -> [i, n]) (iota n))) [2, 0, 3],
 map (\\n -> transpose (replicate n (zip [1, 2] [true, false]))) [1, 2])""",
    "ragged-transposes-inside-maps": """
map (\\n -> transpose (map (\\i -> iota (i + n)) (iota 2))) [2, 3]""",
    "computed-ranges-inside-maps": """
(map (\\s -> [0..<6 by s]) [1, 2, -1], map (\\s -> [10..0 by s]) [-3, -1],
 map (\\a -> [a..(2 * a)]) [3, 0], map (\\s -> if s == 0 then [] else [0..4 by s]) [0, 2])""",
    "zero-range-steps-inside-maps": """
map (\\s -> [0..<6 by s]) [1, 0]""",
}


@pytest.mark.parametrize("name", CONSTRUCTS)
def test_lifted_constructs_run_on_numpy_like_interp(name):
    same_as_interp(CONSTRUCTS[name])


# ---------------------------------------------------------------- the rules in the log

@pytest.mark.parametrize("text, rules", [
    ("def f (xs: []i64) = map (\\x -> if x > 0 then iota x else [x]) xs",
     {"MAP", "LIFT-IF-PARTITION", "LIFT-IOTA-IRREGULAR", "LIFT-ARRAY"}),
    ("def f (xs: []i64) = map (\\x -> if x > 0 then x else 0 - x) xs", {"LIFT-IF-SELECT"}),
    ("def f (xs: []i64) (k: i64) = map (\\x -> loop a = [x, x] for i < k do map (* 2) a) xs",
     {"LIFT-LOOP-REGULAR"}),
    ("def f (xs: []i64) = map (\\x -> loop a = [x] for i < x do map (* 2) a) xs",
     {"LIFT-LOOP-ACTIVE"}),
    ("def f (xs: []i64) = map (\\x -> loop a = x for i < x do a * 2) xs", {"LIFT-MAP-SCALAR"}),
    ("def f (xs: []f64) (ys: []f64) = map (\\x -> reduce (+) 0.0 (map (\\y -> x * y) ys)) xs",
     {"SEQ-INNER", "LIFT-MAP-SCALAR"}),
    ("def f (xs: []i64) = map (\\x -> while (\\y -> y < 100) (\\y -> y * 2) x) xs",
     {"LIFT-LOOP-ACTIVE"}),
    ("def f (xs: []i64) (ys: []i64) = map (\\i -> ys[i]) xs", {"LIFT-INDEX-AVOIDED"}),
    ("def f (xss: [][]i64) = map (\\r -> r[0]) xss", {"LIFT-INDEX-SEGMENTED"}),
    ("def f (xss: [n][m]i64) = map (\\r -> r[0]) xss", {"LIFT-INDEX-REGULAR"}),
    ("def f (xss: [][]i64) = map (\\r -> filter (\\x -> x > 0) r) xss",
     {"LIFT-FILTER-SEGMENTED", "LIFT-MAP-IRREGULAR"}),
    ("def f (xss: [n][m]i64) = map (\\r -> scan (+) 0 r) xss", {"LIFT-SCAN-REGULAR"}),
    ("def f (xs: []i64) = expand (\\x -> x) (\\x i -> x + i) xs", {"EXPAND"}),
    ("def f (xs: []i64) (ys: []f64) = unzip (zip xs ys)", {"TUPLE-F"}),
    ("def f (xs: [n]i64) = reduce (+) 0 xs", {"SIZE-CHECK", "REDUCE"}),
    ("def f (xss: [][]i64) = foldSeq (\\a b -> a ++ b) [] (stream xss)",
     {"SEQ-LOOP", "REDUCE-SEQUENTIAL", "LOOP"}),
    ("def f (n: i64) = tabulate (mapSeq (\\i -> iota i) (produce n (\\i -> i)))",
     {"SEQ-LOOP", "LIFT-IOTA-IRREGULAR"}),
    ("def f (xs: []i64) = map (\\x -> foldSeq (+) x (produce x (\\i -> i))) xs",
     {"SEQ-ARRAY", "LIFT-GENERATE-IRREGULAR"}),
    ("def f (xs: []i64) = loop a = 0 while a < 10 do a + reduce (+) 0 xs", {"WHILE"}),
    ("def f (xs: []i64) (c: bool) = if c then xs else reverse xs", {"IF", "LIBRARY"}),
    ("def f (xss: [][]i64) = map (\\r -> reduce_by_index (replicate 3 0) (+) 0 r r) xss",
     {"LIFT-HIST-REGULAR"}),
    ("def f (xs: []i64) = map (\\n -> reduce_by_index (iota n) (+) 0 [0, 1] [1, 2]) xs",
     {"LIFT-HIST-SEGMENTED"}),
    ("def f (xs: []i64) = map (\\x -> reduce max x [1, 2]) xs", {"LIFT-REDUCE-NE"}),
    ("def f (xss: [][]i64) = map (\\r -> scan (+) (length r) r) xss", {"LIFT-SCAN-NE"}),
    ("def f (xss: [][]i64) = reduce (map2 (+)) [0, 0] xss", {"REDUCE-COLUMNS"}),
    ("def f (xss: [][]i64) = scan (map2 (+)) [0, 0] xss", {"SCAN-COLUMNS"}),
    ("def f (xss: [][]i64) = reduce_by_index [[0, 0]] (map2 (+)) [0, 0] [0] xss",
     {"HIST-ELEMENTWISE"}),
    ("def f (xsss: [][][]i64) = map (\\r -> reduce (map2 (+)) [0, 0] r) xsss",
     {"LIFT-REDUCE-COLUMNS"}),
    ("def f (xsss: [][][]i64) = map (\\r -> scan (map2 (+)) [0, 0] r) xsss",
     {"LIFT-SCAN-COLUMNS"}),
    ("def f (xsss: [][][]i64) = map (\\r -> reduce (\\a b -> a ++ b) [] r) xsss",
     {"LIFT-REDUCE-SEQUENTIAL", "LIFT-LOOP-ACTIVE"}),
    ("def f (xss: [][]i64) = scan (\\a b -> a ++ b) [] xss", {"SCAN-SEQUENTIAL", "LOOP"}),
    ("def f (n: i64) = map (\\r -> transpose r) (replicate n [[1, 2], [3, 4]])",
     {"LIFT-TRANSPOSE-REGULAR"}),
    ("def f (xsss: [][][]i64) = map (\\r -> transpose r) xsss", {"LIFT-TRANSPOSE-SEGMENTED"}),
    ("def f (xs: []i64) = map (\\s -> [0..<6 by s]) xs", {"LIFT-RANGE-IRREGULAR"}),
    ("def f (xsss: [][][]i64) = map (\\r -> reduce_by_index [[0, 0]] (map2 (+)) [0, 0] [0] r) "
     "xsss", {"LIFT-HIST-ELEMENTWISE"}),
    ("def f (xss: [][]i64) = reduce_by_index [[0]] (\\a b -> a ++ b) [] [0] xss",
     {"HIST-SEQUENTIAL", "LOOP"}),
    ("def f (xss: [][]i64) = map (\\r -> reduce (\\a b -> a * length r + b) 0 r) xss",
     {"LIFT-REDUCE-SEQUENTIAL"}),
    ("def f (xss: [n][m]i64) = map (\\r -> interleave r r) xss", {"LIFT-INTERLEAVE-REGULAR"}),
    ("def f (xss: [][]i64) = map (\\r -> interleave r r) xss", {"LIFT-INTERLEAVE-SEGMENTED"}),
    ("def f (xs: []i64) (ys: []i64) = map (\\i -> if i < length ys then ys[i] else 0) xs",
     {"LIFT-READ-LAZY", "LIFT-IF-SELECT"}),
    ("def f (xs: []i64) (m: [k][d]i64) = map (\\i -> i < 2 && m[i][0] > 0) xs",
     {"LIFT-READ-LAZY"}),
])
def test_rules_are_logged_under_their_names(text, rules):
    stage = flatten(text)
    logged = {step.rule for step in stage.steps}
    assert rules <= logged, logged
    ids = {stmt.id for f in stage.program.forms for stmt in statements(f.body)}
    for step in stage.steps:
        assert set(step.changed) <= ids
        assert step.stage == "flatten"


def test_the_log_is_in_the_order_the_rules_start():
    stage = flatten("def f (xss: [][]i64) = map (\\r -> map (\\x -> x + 1) r) xss")
    assert [s.rule for s in stage.steps] == ["PARAM", "MAP", "LIFT-MAP-IRREGULAR",
                                              "LIFT-MAP-SCALAR"]


# ---------------------------------------------------------------- what is not built yet

def test_what_is_not_built_yet_says_what(not_built):
    with pytest.raises(NotImplementedError, match="`sort` of tuples"):
        Session().program_stages(not_built, "t.accel", stop_after="flatten")
    stages = Session().program_stages(not_built, "t.accel")   # all stages: ends before flatten
    assert stages[-1].name == "regularity"


def test_the_last_refused_constructs_flatten():
    """What issue 18 found still refused: each flattens now, under its rule."""
    for text, rule in [
            ("def f (xsss: [][][]i64) = map (\\r -> reduce_by_index [[0]] (\\a b -> a ++ b) [] "
             "[0] r) xsss", "LIFT-HIST-SEQUENTIAL"),
            ("def f (xss: [][]i64) = map (\\r -> sort (zip r r)) xss", "LIFT-SORT-SEGMENTED"),
            ("def f (xss: [][]i64) = map (\\r -> [r, r] with [0][0] = 1) xss", "LIFT-UPDATE")]:
        stage = flatten(text)
        assert rule in {step.rule for step in stage.steps}, text


# ---------------------------------------------------------------- the stage and its views

def test_flatten_is_a_stage_of_the_pipeline():
    from accel_kernel.compiler import LATER_STAGES, default_passes, stage_names
    assert "flatten" in stage_names() and "flatten" not in LATER_STAGES
    assert FLATTEN in default_passes()
    stage = flatten("let xs = [1, 2]\ndef f (ys: []i64) = map (\\y -> y + xs[0]) ys\nxs")
    assert [f.kind for f in stage.program.forms] == ["let", "def", "expr"]
    assert stage.changed and stage.types                  # keeps the types of its input
    assert stage.program.forms[1].body.stmts[0].span is not None


def test_generic_defs_have_no_flat_form():
    stage = flatten("def twice f x = f (f x)\ndef sq x = x * x\nsq 3")
    assert [f.kind for f in stage.program.forms] == ["expr"]
    assert [s.rule for s in stage.steps][:2] == ["DEF-INLINED", "DEF-INLINED"]


def test_statements_keep_the_span_and_origin_of_their_core_node():
    stage = flatten("def f (xs: []i64) = map (\\x -> x / 2) xs")
    stmt = form(stage, "f").body.stmts[0]
    assert stmt.span.location().endswith(":1:32") and stmt.origin and stmt.id


def test_views_of_the_flat_stage():
    stage = flatten("def f (xss: [][]i64) = map (\\r -> reduce (+) 0 r) xss\n"
                    "def g (xss: [n][m]i64) = map (\\r -> reduce (+) 0 r) xss")
    text = flat_text(stage)
    assert text.startswith("-- stage flatten")
    assert parse_flat(text) == stage.program
    dot = flat_dot(stage, highlight={form(stage, "f").body.stmts[-1].id})
    assert dot.startswith("digraph") and "segment descriptor" in dot and "shape=note" in dot
    assert "#d6006f" in dot                                   # the highlighted statement
    view = flat_json(stage)
    kinds = {b["representation"] for b in view["bindings"].values()}
    assert kinds <= {"regular", "irregular", "avoided", "scalar"}
    f, g = form(stage, "f"), form(stage, "g")
    assert view["bindings"][f.params[0].name]["representation"] == "irregular"
    assert view["bindings"][g.body.result[0].name]["representation"] == "regular"
    assert view["bindings"][f.body.result[0].name]["rep"] == "[r1]i64"
    assert view["steps"] and view["stage"] == "flatten"


def test_the_generic_views_dispatch_to_the_flat_ones():
    from accel_kernel.viz.graphs import node_ids, stage_dot
    from accel_kernel.viz.json_view import stage_json
    from accel_kernel.viz.text import source_listing, stage_text
    stage = flatten("def f (xss: [][]i64) = map (\\r -> reduce (+) 0 r) xss")
    assert stage_dot(stage) == flat_dot(stage, previous="regularity")
    assert stage_text(stage) == flat_text(stage)
    assert stage_json(stage) == flat_json(stage)
    ids = set(node_ids(stage))
    assert ids == {s.id for s in form(stage, "f").body.stmts}
    assert all(f"#{i}" in source_listing(stage) for i in ids)


def test_step_walks_the_flattening_rule_by_rule():
    from accel_kernel.kernel.magics import MagicContext, parse_magic, run_magic
    session = Session(target="interp")
    session.execute("def rowsums (xss: [][]i64) : []i64 = map (\\xs -> reduce (+) 0 xs) xss")
    ctx = MagicContext(session, cell_name="cell[2]", line=1)
    out = run_magic(parse_magic("%step flatten rowsums"), ctx)
    text = out.displays[0]["text/plain"]
    assert "step 2/3: MAP" in text and "step 3/3: LIFT-REDUCE-SEGMENTED" in text
    assert "seg_reduce (\\a b -> a + b) 0" in text
    shown = run_magic(parse_magic("%show flatten rowsums"), ctx)
    assert "seg_reduce" in shown.displays[0]["text/plain"]
