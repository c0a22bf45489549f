"""The `fuse` stage: kernels of fused statements (pull arrays, redomap, filter into its
consumer, segmented and row kernels, push kernels for `++`), every decision logged, and the
fused program computing what the flat one computes (both run on the `numpy` target, which
runs a kernel statement by statement). The fusion decisions on small programs (the kernels
printed, the rules and notes logged) are text fixtures: tests/passes/fixtures/fuse_*.accel."""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_kernel.backends.numpy import execute
from accel_kernel.ir import flat as F
from accel_kernel.ir.flat_printer import parse_flat, print_flat, verify
from accel_kernel.lang import ast
from accel_kernel.lang.errors import AccelError
from accel_kernel.session import Session
from accel_kernel.values import format_value

PROGRAMS = sorted((Path(__file__).parent.parent / "programs").glob("*.accel"))


def stage_of(text: str, name: str = "fuse"):
    stages = Session().program_stages(text, "test.accel", stop_after=name)
    assert stages[-1].name == name
    return stages


def kernels(block: F.Block) -> list[F.Stmt]:
    out = []
    for stmt in block.stmts:
        if isinstance(stmt.op, F.Kernel):
            out.append(stmt)
        for inner in F.blocks_of(stmt.op):
            if not isinstance(stmt.op, F.Kernel):
                out += kernels(inner)
    return out


def run(stages, index: int) -> tuple:
    typed = next(s for s in stages if s.name == "typed")
    types = [typed.types[f.expr.id] for f in typed.program.forms if isinstance(f, ast.TopExpr)]
    try:
        out = execute(stages[index].program, {})
    except AccelError as err:
        return ("error", type(err).__name__, err.span.location() if err.span else None)
    values = out.interp_results(types)
    return ("value", [format_value(v, t) for v, t in zip(values, types)])


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_every_program_fuses_and_computes_what_the_flat_program_computes(path):
    text = path.read_text()
    try:
        stages = stage_of(text)
    except AccelError:
        pytest.skip("a compile-time error: nothing to fuse")
    fused = stages[-1].program
    assert verify(fused) == []
    assert run(stages, -1) == run(stages, -2)
    assert print_flat(parse_flat(print_flat(fused))) == print_flat(fused)


def test_kernels_list_their_source_lines():
    stages = stage_of("def f (xs: []i64) : i64 =\n  let ys = map (\\x -> x + 1) xs\n"
                      "  in reduce (+) 0 ys")
    (kernel,) = kernels(stages[-1].program.forms[0].body)
    assert kernel.op.lines == (2, 3)


def test_an_expansion_and_the_filter_over_it_are_one_kernel():
    """FUSE-SEGMENTED-FILTER (the triples comprehension: `c < n` is the range's bound,
    desugar's `range-guard`, the other guard one filter): the candidates are made, tested
    and the kept ones written by one filter kernel that runs segment by segment; no
    candidate is written out."""
    text = ("def triples (n: i64) : [](i64, i64, i64) =\n"
            "  [(a, b, c) | a <- [1..<n], b <- [a..<n], c <- [b..<(a + b)], c < n, "
            "a * a + b * b == c * c]\n"
            "triples 30")
    stages = stage_of(text)
    assert any(step.rule == "FUSE-SEGMENTED-FILTER" for step in stages[-1].steps)
    last = kernels(stages[-1].program.forms[0].body)[-1]
    assert last.op.kind == "filter"
    assert any(isinstance(s.op, F.SegmentIota) for s in last.op.body.stmts)
    filtered = {t.name for s in last.op.body.stmts if isinstance(s.op, F.Filter)
                for t in s.targets}
    assert {t.name for t in last.targets} == filtered
    assert run(stages, -1) == run(stages, -2)
    assert run(stages, -1)[1][0].startswith("[(3, 4, 5), (5, 12, 13), (6, 8, 10)")



LINES = ("def draw (w: i64) (h: i64) (x0s: []i64) (x1s: []i64) : []i64 =\n"
         "  let pixels = expand (\\l -> l.1 - l.0 + 1) (\\l t -> l.0 + t) (zip x0s x1s)\n"
         "  in reduce_by_index (replicate (w * h) 0) (+) 0 pixels (map (\\_ -> 1) pixels)\n"
         "draw 4 2 [0, 2, 5] [3, 2, 9]")


def test_a_histogram_joins_the_kernel_that_makes_its_indices():
    """FUSE-HIST (benchmarks' `lines`): the expansion's elements are combined into the
    histogram by the kernel that makes them; neither the indices nor the ones are written
    out, `w * h` moves before the kernel and the destination's replicate joins it."""
    stages = stage_of(LINES)
    assert [s.rule for s in stages[-1].steps].count("FUSE-HIST") == 2     # the def, the call
    body = stages[-1].program.forms[0].body
    (hist,) = [k for k in kernels(body) if k.op.kind == "hist"]
    assert [t.name for t in hist.targets] == [body.result[0].name]       # only the histogram
    ops = [type(s.op).__name__ for s in hist.op.body.stmts]
    assert ops[-3:] == ["Replicate", "Map", "Library"]
    assert not any(isinstance(s.op, F.Library) for s in body.stmts)
    assert run(stages, -1) == run(stages, -2) == ("value", ["[1, 1, 2, 1, 0, 1, 1, 1]"])   # 9 is out of range


def test_a_histogram_joins_the_kernel_of_indices_read_elsewhere_when_it_runs_in_parallel():
    """FUSE-HIST with shared indices (k-means' counts): an integer `+` runs as partial
    histograms in parallel, so it joins the kernel, which also writes the indices out for
    their other reader."""
    text = ("def f (n: i64) : ([]i64, []i64) =\n"
            "  let is = map (\\i -> (i * 7) % 5) (iota n)\n"
            "  let c = reduce_by_index (replicate 5 0) (+) 0 is (map (\\_ -> 1) is)\n"
            "  in (c, is[1:4])\n"
            "f 40")
    stages = stage_of(text)
    assert "FUSE-HIST" in [s.rule for s in stages[-1].steps]
    (hist,) = [k for k in kernels(stages[-1].program.forms[0].body) if k.op.kind == "hist"]
    assert len(hist.targets) == 2                       # the histogram and the indices
    assert run(stages, -1) == run(stages, -2) == ("value", ["([8, 8, 8, 8, 8], [2, 4, 1])"])


@pytest.mark.parametrize("text", [
    # the indices are read by something else too, and a float `min` runs in element order
    "let is = map (\\i -> i % 3) (iota 10)\n"
    "let c = reduce_by_index (replicate 3 0.0) min 0.0 is (map (\\i -> f64 i) is)\n"
    "in (c, reduce (+) 0 is)",
    # values replicated to a count that is not the indices' length (a check the rule does
    # not make; with the same count the replicate is the kernel's and joins)
    "let n = 10\n"
    "let c = reduce_by_index (replicate 3 0) (+) 0 (map (\\i -> i % 3) (iota n)) "
    "(replicate 10 1) in c",
])
def test_a_histogram_stays_on_the_host_when_it_cannot_join(text):
    stages = stage_of(text)
    assert "FUSE-HIST" not in [s.rule for s in stages[-1].steps]
    assert run(stages, -1) == run(stages, -2)


def test_the_cuda_target_keeps_histograms_on_the_host():
    """`Options.hist` is off for `cuda`, whose kernel writer makes no hist kernel."""
    stages = Session().program_stages(LINES, "test.accel", stop_after="fuse", target="cuda")
    assert "FUSE-HIST" not in [s.rule for s in stages[-1].steps]


NEAREST = """\
def dist2 (p: []f64) (c: []f64) : f64 = reduce (+) 0.0 (map2 (\\a b -> (a - b) * (a - b)) p c)
def nearer ((d1, i1): (f64, i64)) ((d2, i2): (f64, i64)) : (f64, i64) =
  if d2 < d1 || (d2 == d1 && i2 < i1) then (d2, i2) else (d1, i1)
def nearest (cs: [][]f64) (p: []f64) : i64 =
  let (_, best) = reduce nearer (highest, -1) (map2 (\\c i -> (dist2 p c, i)) cs (iota (length cs)))
  in best
def assign (ps: [n][d]f64) (cs: [k][d]f64) : []i64 = map (nearest cs) ps
assign [[0.0, 0.0], [5.0, 5.0], [1.0, 0.5]] [[4.0, 4.0], [0.0, 1.0]]"""


def test_a_kernel_that_cannot_fail_moves_after_an_assert_so_a_map_can_join_it():
    """DEFER: the map over the points reads rows by index (it may fail), and the check that
    points and centroids have one width comes after the `iota` of the points started a
    kernel; that kernel cannot fail, so it moves after the check and the map joins it."""
    stages = stage_of(NEAREST)
    steps = stages[-1].steps
    assert "DEFER" in [s.rule for s in steps]
    body = next(f for f in stages[-1].program.forms if f.names == ("assign",)).body
    assert any({type(s.op) for s in k.op.body.stmts} >= {F.Iota, F.Map}
               and any(isinstance(s.op, F.Map) and s.op.fn.free for s in k.op.body.stmts)
               for k in kernels(body))
    assert run(stages, -1) == run(stages, -2) == ("value", ["[1, 0, 1]"])
