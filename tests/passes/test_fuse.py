"""The `fuse` stage: kernels of fused statements (pull arrays, redomap, filter into its
consumer, segmented and row kernels, push kernels for `++`), every decision logged, and the
fused program computing what the flat one computes (both run on the `numpy` target, which
runs a kernel statement by statement)."""
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


def ops(kernel: F.Stmt) -> list[type]:
    return [type(s.op) for s in kernel.op.body.stmts]


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


def test_a_filter_map_reduce_is_one_kernel():
    stages = stage_of("def f (xs: []i64) : i64 = reduce (+) 0 (map (\\x -> x * x) (filter (> 0) xs))")
    body = stages[-1].program.forms[0].body
    assert len(body.stmts) == 1 and len(kernels(body)) == 1
    kernel = kernels(body)[0]
    assert ops(kernel) == [F.Map, F.Filter, F.Map, F.Reduce]
    assert [t.name for t in kernel.targets] == [body.result[0].name]   # nothing else stored
    rules = [s.rule for s in stages[-1].steps]
    assert "FUSE-FILTER" in rules and "FUSE-REDOMAP" in rules


def test_sums_of_mapped_rows_are_one_segmented_or_one_rows_kernel():
    ragged = stage_of("def f (xss: [][]i64) : []i64 = map (\\r -> reduce (+) 0 (map (\\x -> 2 * x + 1) r)) xss")
    ks = kernels(ragged[-1].program.forms[0].body)
    assert len(ks) == 1 and ks[0].op.kind == "segmented"
    assert ops(ks[0]) == [F.Map, F.SegReduce]
    regular = stage_of("def f (xss: [n][m]i64) : []i64 = map (\\r -> reduce (+) 0 (map (\\x -> 2 * x + 1) r)) xss")
    ks = kernels(regular[-1].program.forms[0].body)
    assert len(ks) == 1 and ks[0].op.kind == "rows"
    assert F.Map in ops(ks[0]) and F.Reduce in ops(ks[0])


def test_concatenation_is_a_push_kernel():
    stages = stage_of("def f (a: []f64) (b: []f64) : []f64 = a ++ b")
    ks = kernels(stages[-1].program.forms[0].body)
    assert [k.op.kind for k in ks] == ["push"]
    assert ops(ks[0]) == [F.Library] and ks[0].op.body.stmts[0].op.name == "concat"


def test_independent_reductions_over_one_array_are_one_pass():
    stages = stage_of("def f (xs: []i64) = (reduce (+) 0 xs, reduce max 0 xs, map (\\x -> x * 2) xs)")
    ks = kernels(stages[-1].program.forms[0].body)
    assert len(ks) == 1 and ks[0].op.kind == "redomap"
    assert "FUSE-HORIZONTAL" in [s.rule for s in stages[-1].steps]


def test_a_value_read_outside_its_kernel_is_written_out_once():
    stages = stage_of("def f (xs: []i64) = let ys = map (\\x -> x + 1) xs "
                      "in (reduce (+) 0 ys, sort ys)")
    ks = kernels(stages[-1].program.forms[0].body)
    assert len(ks) == 1
    maps = [s for s in ks[0].op.body.stmts if isinstance(s.op, F.Map)]
    assert len(maps) == 1                                 # computed once, not inlined twice
    assert maps[0].targets[0].name in [t.name for t in ks[0].targets]
    notes = [s.note for s in stages[-1].steps if s.rule == "MATERIALISE"]
    assert any("host statement" in n for n in notes)


def test_refusals_are_logged_with_why():
    stages = stage_of("def f (xs: []i64) = let s = reduce (+) 0 xs in map (\\x -> x * s) xs")
    refused = [s for s in stages[-1].steps if s.rule == "REFUSE"]
    assert refused and "as a whole" in refused[0].note
    assert len(kernels(stages[-1].program.forms[0].body)) == 2


def test_kernels_list_their_source_lines():
    stages = stage_of("def f (xs: []i64) : i64 =\n  let ys = map (\\x -> x + 1) xs\n"
                      "  in reduce (+) 0 ys")
    (kernel,) = kernels(stages[-1].program.forms[0].body)
    assert kernel.op.lines == (2, 3)
