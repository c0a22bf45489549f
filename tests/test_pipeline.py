"""The whole pipeline on every example program: `accel stages` in every format, and the
pipeline's own bookkeeping (ids, timings, unchanged stages)."""
import json
from pathlib import Path

import pytest

from accel_kernel.cli import main
from accel_kernel.compiler import stage_names
from accel_kernel.lang import ast
from accel_kernel.passes.base import PassContext, RewriteLog
from accel_kernel.session import Session

PROGRAMS = sorted((Path(__file__).parent / "programs").glob("*.accel"))
COMPILE_ERRORS = ("SyntaxError", "TypeError", "NameError")


def expected_compile_error(path: Path) -> str | None:
    for line in path.read_text().splitlines():
        if line.startswith("-- error: "):
            kind = line.split()[2]
            return kind if kind in COMPILE_ERRORS else None
    return None


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_accel_stages_on_every_program(path, capsys):
    kind = expected_compile_error(path)
    code = main(["stages", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    if kind is not None:
        assert code == 1 and err.startswith(f"error: {kind} at {path}:")
        return
    assert code == 0, err
    views = json.loads(out)
    assert [v["stage"] for v in views] == list(stage_names())
    regularity = next(v for v in views if v["stage"] == "regularity")
    assert all(node["regularity"] is not None for node in regularity["nodes"]
               if node["type"] is not None)
    assert main(["stages", str(path)]) == 0
    text = capsys.readouterr().out
    assert all(f"== {name} ==" in text for name in stage_names())
    assert main(["stages", str(path), "--format", "dot"]) == 0
    assert capsys.readouterr().out.count("digraph") == len(stage_names())


def test_ids_are_unique_in_every_stage():
    source = (Path(__file__).parent / "programs" / "pythagorean_triples.accel").read_text()
    for stage in Session().program_stages(source, "p.accel"):
        ids = [node.id for node in stage.nodes()]
        assert len(ids) == len(set(ids)), stage.name


def test_a_program_with_nothing_to_desugar_is_unchanged():
    stages = Session().program_stages("def f (x: i64) : i64 = x + 1\n", "p.accel")
    desugar = next(s for s in stages if s.name == "desugar")
    assert not desugar.changed and desugar.steps == ()
    assert desugar.program == stages[0].program


def test_stages_of_a_session_global_and_of_an_expression():
    session = Session(target="interp")
    session.execute("def double (xs: []i64) : []i64 = map (\\x -> 2 * x) xs\nlet ys = [1, 2]")
    by_name = session.stages("double")
    assert [s.name for s in by_name] == list(stage_names())
    regularity = next(s for s in by_name if s.name == "regularity")
    assert isinstance(regularity.program.forms[0], ast.Def)
    by_expr = session.stages("[x + 1 | x <- ys]")
    assert any(step.rule == "comprehension" for step in by_expr[2].steps)
    assert session.names()[-1].name == "ys"          # nothing was defined or evaluated


def test_fresh_names_avoid_each_other_and_the_program():
    ctx = PassContext(stage="t", ids=iter(range(1, 100)), log=RewriteLog("t"), env=None,
                      types={}, instantiations={}, definitions={}, facts={})
    names = [ctx.fresh_name("x", avoid={"x_2"}) for _ in range(3)]
    assert names == ["x_1", "x_3", "x_4"]
    assert ctx.fresh_name("x_7") == "x_5"
