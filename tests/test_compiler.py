"""The compiler's stage list is the only one: the passes are its stages after the front end,
and the session, the views, the CLI and the kernel's magics follow it. A stage added to it
(`inspect`, a stand-in analysis between `regularity` and `flatten`) shows up in each of
them, which it would not in a list written out again by hand."""
from __future__ import annotations

from dataclasses import replace

import pytest

from accel_kernel import boundary, compiler, targets
from accel_kernel.cli import main
from accel_kernel.kernel.magics import MagicContext, MagicError, parse_magic, run_magic
from accel_kernel.lang import ast
from accel_kernel.passes.base import PassContext, PassOutput
from accel_kernel.session import Session
from accel_kernel.viz.graphs import stage_dot
from accel_kernel.viz.json_view import stage_json
from accel_kernel.viz.text import stage_header, stage_text

ROWSUMS = "def rowsums (xss: [][]i64) : []i64 = map (\\xs -> reduce (+) 0 xs) xss\n"


def test_the_passes_are_the_stages_after_the_front_end():
    names = compiler.stage_names()
    front = len(compiler.FRONT_END)
    assert names[:front] == compiler.FRONT_END
    assert tuple(p.name for p in compiler.default_passes()) == names[front:]
    assert len(set(names)) == len(names) and not set(compiler.LATER_STAGES) & set(names)


def test_the_session_gives_every_stage_in_order():
    stages = Session(target="interp").program_stages(ROWSUMS, "p.accel")
    assert tuple(s.name for s in stages) == compiler.stage_names()


def test_stages_named_elsewhere_are_the_compilers():
    names = set(compiler.stage_names())
    # the last stage each built target needs
    assert {t.last_stage for t in targets.TARGETS.values() if t.built} <= names
    assert {stage for _, stage in boundary._STAGES} <= names | {"run"}   # a module's stage
    assert compiler.previous_stage("parse") is None
    assert compiler.previous_stage("nope") is None


# ---------------------------------------------------------------- one stage more

class Inspect:
    """An analysis that finds nothing: its stage is unchanged from `regularity`."""
    name = "inspect"
    transforms = False

    def run(self, program: ast.Program, ctx: PassContext) -> PassOutput:
        return PassOutput(program, {})


@pytest.fixture
def inspect(monkeypatch) -> tuple[str, ...]:
    """The compiler with the stage `inspect` before `flatten`; gives its stage names."""
    passes = compiler.default_passes()
    at = [p.name for p in passes].index("flatten")
    passes.insert(at, Inspect())
    names = compiler.STAGES[:at + len(compiler.FRONT_END)] + ("inspect",) + \
        compiler.STAGES[at + len(compiler.FRONT_END):]
    monkeypatch.setattr(compiler, "STAGES", names)
    monkeypatch.setattr(compiler, "default_passes", lambda: list(passes))
    assert compiler.stage_names() == names
    return names


def test_the_session_and_the_views_follow_the_compilers_stages(inspect):
    stages = Session(target="interp").program_stages(ROWSUMS, "p.accel")
    assert tuple(s.name for s in stages) == inspect
    by_name = {s.name: s for s in stages}
    assert stage_header(by_name["inspect"]) == "-- stage inspect: unchanged from regularity"
    assert stage_text(by_name["inspect"]).startswith("-- stage inspect: unchanged from "
                                                     "regularity\n")
    assert "(unchanged from regularity)" in stage_dot(by_name["inspect"])
    # the stage after it comes from `inspect` now, not from `regularity`
    flatten = replace(by_name["flatten"], changed=False)
    assert stage_header(flatten) == "-- stage flatten: unchanged from inspect"
    assert "(unchanged from inspect)" in stage_dot(flatten)
    assert stage_json(by_name["inspect"])["stage"] == "inspect"


def test_the_cli_follows_the_compilers_stages(inspect, tmp_path, capsys):
    path = tmp_path / "p.accel"
    path.write_text(ROWSUMS)
    assert main(["stages", str(path), "--stage", "inspect"]) == 0
    assert capsys.readouterr().out.startswith("-- stage inspect: unchanged from regularity")
    assert main(["stages", str(path), "--stage", "nope"]) == 2
    assert f"(stages: {', '.join(inspect)})" in capsys.readouterr().err
    assert main(["stages", str(path)]) == 0
    out = capsys.readouterr().out
    shown = [line[3:-3] for line in out.splitlines() if line.startswith("== ")]
    assert shown == ["source", *inspect]


def test_the_magics_follow_the_compilers_stages(inspect):
    ctx = MagicContext(Session(target="interp"), cell_name="cell[2]")
    ctx.session.execute(ROWSUMS, name="cell[1]")
    with pytest.raises(MagicError, match=f"stages: {', '.join(inspect)}"):
        run_magic(parse_magic("%show nope rowsums"), ctx)
    (help_text,) = run_magic(parse_magic("%show -h"), ctx).stdout
    assert f"STAGE: {' '.join(inspect)}" in help_text
    out = run_magic(parse_magic("%step inspect rowsums"), ctx)
    assert out.stdout == ["stage inspect of rowsums has no steps to show: it changed nothing\n"]
