"""DOT of a stage (`viz.graphs`) and the text view (`viz.text`), without any renderer.

The stages come from `Session.stages` with stand-in analyses (`FakeAnalysis`) in place of the
real `desugar`/`shape`/`regularity` passes, so that these tests check the drawing only: facts
of a known form, and one rewrite step per fact.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from accel_kernel import compiler
from accel_kernel.lang import ast
from accel_kernel.lang import types as T
from accel_kernel.lang.parser import parse_program
from accel_kernel.lang.source import Source
from accel_kernel.passes.base import PassContext, PassOutput
from accel_kernel.session import Session
from accel_kernel.viz import colourings, graphs, render, text
from accel_kernel.viz.colourings import COLOURINGS
from accel_kernel.viz.graphs import HIGHLIGHT, stage_dot


@dataclass(frozen=True)
class FakeShape:
    dims: str

    def __str__(self) -> str:
        return self.dims


@dataclass(frozen=True)
class FakeRegularity:
    nest: str
    independent: bool
    level: int | None

    def __str__(self) -> str:
        level = "∞" if self.level is None else str(self.level)
        return f"⟨{self.nest}, {'ind' if self.independent else 'dep'}, {level}⟩"


def _nest(t: T.Type) -> str:
    if isinstance(t, T.Array):
        return ("Ir>" if isinstance(t.elem, T.Array) else "R>") + _nest(t.elem)
    return "S"


class FakeAnalysis:
    """An analysis giving every typed node a fact (arrays of arrays are irregular, scalars
    dependent) and logging one step per fact."""
    transforms = False

    def __init__(self, name: str):
        self.name = name

    def fact(self, t: T.Type):
        if self.name == "shape":
            return FakeShape("[n]" * T.array_rank(t) or "[]")
        scalar = not isinstance(t, T.Array)
        return FakeRegularity(_nest(t), not scalar, 1 if scalar else None)

    def run(self, program: ast.Program, ctx: PassContext) -> PassOutput:
        facts = {}
        for form in program.forms:
            for node in ast.walk(form):
                if node.id in ctx.types:
                    facts[node.id] = self.fact(ctx.types[node.id])
                    with ctx.log.apply(self.name.upper(), node, changed=(node.id,)) as step:
                        step.after = str(facts[node.id])
        return PassOutput(program, facts)


FAKE_PASSES = [FakeAnalysis("shape"), FakeAnalysis("regularity")]


@pytest.fixture
def fake_passes(monkeypatch):
    monkeypatch.setattr(compiler, "default_passes", lambda: list(FAKE_PASSES))


def stages_of(code: str, target: str) -> list[compiler.Stage]:
    session = Session(target="interp")
    session.execute(code, name="cell[1]")
    return session.stages(target)


def by_name(stages):
    return {s.name: s for s in stages}


SMVM = """\
let v = [1.0, 2.0, 3.0]
def smvm (rows: [][](i64, f64)) : []f64 =
  let n = length v
  map (\\row -> reduce (+) 0.0 (map (\\(j, a) -> a * v[j % n]) row)) rows
"""


def node_line(dot: str, ident: int) -> str:
    (line,) = [ln for ln in dot.splitlines() if ln.strip().startswith(f"n{ident} [")]
    return line


def find(stage, kind, pred=lambda n: True):
    return next(n for n in stage.nodes() if isinstance(n, kind) and pred(n))


# ---------------------------------------------------------------- structure

def test_one_node_per_operation_variables_are_edges(fake_passes):
    stage = by_name(stages_of(SMVM, "smvm"))["typed"]
    dot = stage_dot(stage)
    outer = find(stage, ast.Apply, lambda a: a.args and isinstance(a.args[-1], ast.Var)
                 and a.args[-1].name == "rows")
    length = find(stage, ast.Apply, lambda a: a.fn == ast.Var("length"))
    # applications are nodes labelled `#id text`, the lambda is `λ`, globals fold in
    assert f"<b>#{outer.id}&#160;</b>map λ rows" in dot
    assert "n = length v" in node_line(dot, length.id)
    # the parameter is an input node; the global `v` an input node too; edges, not nodes
    param = find(stage, ast.PVar, lambda p: p.name == "rows")
    assert "shape=invhouse" in node_line(dot, param.id)
    assert re.search(rf"n{param.id} -> n{outer.id};", dot)
    assert re.search(r"g_v -> n\d+;", dot)
    # the scalar body is one node (`a * v[j % n]`) fed by the tuple parameter and by `n`
    body = find(stage, ast.BinOp, lambda b: b.op == "*")
    assert "a * v[j % n]" in node_line(dot, body.id)
    assert re.search(rf"n{length.id} -> n{body.id};", dot)
    # lambdas are clusters; their results flow into the operation with dashed edges
    assert dot.count("subgraph cluster_") == 3                  # def + two lambdas
    assert re.search(rf"-> n{outer.id} \[style=dashed", dot)
    assert "\\\\row ->" in dot and "\\\\(j, a) ->" in dot


def test_labels_have_type_and_tooltip_with_source_line(fake_passes):
    stage = by_name(stages_of(SMVM, "smvm"))["typed"]
    dot = stage_dot(stage)
    length = find(stage, ast.Apply, lambda a: a.fn == ast.Var("length"))
    line = node_line(dot, length.id)
    assert ">i64</font>" in line
    assert 'tooltip="line 3: let n = length v"' in line
    assert "#" + str(find(stage, ast.Def).id) + " def smvm (rows: [][](i64, f64)) : " \
        "[][](i64, f64) -> []f64" in dot


def test_comprehension_is_a_cluster_with_generators_and_guards(fake_passes):
    stage = by_name(stages_of("def t (n: i64) = [(x, y) | x <- [1..<n], y <- [x..<n], "
                              "x + y < n]", "t"))["typed"]
    dot = stage_dot(stage)
    comp = find(stage, ast.Comprehension)
    assert f"subgraph cluster_{comp.id}" in dot
    assert "x &lt;- #" in dot and "y &lt;- #" in dot
    guard = find(stage, ast.Guard)
    assert 'shape=box, fillcolor="#ececec", style="filled"' in node_line(dot, guard.cond.id)
    assert f"n{guard.cond.id} -> n{comp.id} [style=dotted" in dot


def test_literal_arrays_are_one_node_and_results_are_marked(fake_passes):
    stage = by_name(stages_of("let z = 0", "map (\\r -> length r) [[1, 2], [3]]"))["typed"]
    dot = stage_dot(stage)
    literal = find(stage, ast.ArrayLit, lambda a: len(a.elems) == 2
                   and isinstance(a.elems[0], ast.ArrayLit))
    assert "[[1, 2], [3]]" in node_line(dot, literal.id)
    assert sum("peripheries=2" in line for line in dot.splitlines()) == 1


def test_loops_bind_their_variables_inside_a_cluster(fake_passes):
    code = ("def bubble (xs: []i64) : []i64 =\n  let n = length xs\n"
            "  loop ys = xs for i < n do\n"
            "    if ys[0] > ys[1] then scatter ys [0, 1] [ys[1], ys[0]] else ys\n")
    stage = by_name(stages_of(code, "bubble"))["typed"]
    dot = stage_dot(stage)
    loop = find(stage, ast.Loop)
    assert f"subgraph cluster_{loop.id}" in dot
    assert "ys = xs" in dot and "for i &lt; n" in dot
    assert "loop ys = xs for i &lt; n" in node_line(dot, loop.id)


def test_dot_is_deterministic(fake_passes):
    first = [stage_dot(s) for s in stages_of(SMVM, "smvm")]
    second = [stage_dot(s) for s in stages_of(SMVM, "smvm")]
    assert first == second


def test_parse_stage_drawn_with_the_types_of_typed(fake_passes):
    stages = by_name(stages_of(SMVM, "smvm"))
    parse, typed = stages["parse"], stages["typed"]
    with_types = stage_dot(parse, types=typed.types)
    assert graphs.node_ids(parse, typed.types) == graphs.node_ids(typed)
    assert "</font>" not in with_types.split("label=<<table")[0]   # no type lines in parse
    assert "i64</font>" not in with_types


# ---------------------------------------------------------------- colours and facts

def test_regularity_colours_border_and_legend(fake_passes):
    stage = by_name(stages_of(SMVM, "smvm"))["regularity"]
    dot = stage_dot(stage)
    param = find(stage, ast.PVar, lambda p: p.name == "rows")
    line = node_line(dot, param.id)
    assert f'fillcolor="{colourings.ORANGE}"' in line and "⟨Ir&gt;R&gt;S, ind, ∞⟩" in line
    length = find(stage, ast.Apply, lambda a: a.fn == ast.Var("length"))
    line = node_line(dot, length.id)
    assert f'fillcolor="{colourings.GREY}"' in line and "dashed" in line    # scalar, dependent
    row = find(stage, ast.PVar, lambda p: p.name == "row")
    assert f'fillcolor="{colourings.GREEN}"' in node_line(dot, row.id)
    for word in ("regular", "irregular", "scalar", "dependent (dep)", "independent (ind)"):
        assert f">{word}</font>" in dot
    # a tuple of scalars is scalar
    assert colourings.regularity_fill(FakeRegularity("(S, S)", True, None)) == colourings.GREY
    assert colourings.regularity_fill(FakeRegularity("(R>S, S)", True, None)) == \
        colourings.GREEN


def test_shape_stage_shows_shapes(fake_passes):
    stage = by_name(stages_of(SMVM, "smvm"))["shape"]
    dot = stage_dot(stage)
    param = find(stage, ast.PVar, lambda p: p.name == "rows")
    assert "shape [n][n]" in node_line(dot, param.id)


def test_known_limits_the_facts_shown(fake_passes):
    stage = by_name(stages_of(SMVM, "smvm"))["regularity"]
    param = find(stage, ast.PVar, lambda p: p.name == "rows")
    length = find(stage, ast.Apply, lambda a: a.fn == ast.Var("length"))
    dot = stage_dot(stage, known={param.id})
    assert "⟨" in node_line(dot, param.id)
    assert "⟨" not in node_line(dot, length.id)
    assert f'fillcolor="{colourings.WHITE}"' in node_line(dot, length.id)


def test_highlight_draws_a_thick_border(fake_passes):
    stage = by_name(stages_of(SMVM, "smvm"))["typed"]
    length = find(stage, ast.Apply, lambda a: a.fn == ast.Var("length"))
    dot = stage_dot(stage, highlight={length.id})
    assert f'color="{HIGHLIGHT}", penwidth=3.5' in node_line(dot, length.id)
    assert dot.count("penwidth=3.5") == 1
    # a folded sub-expression highlights the node it is drawn in
    lit = find(stage, ast.Lit, lambda x: x.value == 0.0)
    assert stage_dot(stage, highlight={lit.id}).count("penwidth=3.5") == 1


def test_a_new_stage_only_needs_a_colouring(fake_passes, monkeypatch):
    import dataclasses
    stage = dataclasses.replace(by_name(stages_of(SMVM, "smvm"))["typed"], name="flatten")
    monkeypatch.setitem(COLOURINGS, "flatten", colourings.Colouring(
        lambda node: colourings.Look("#123456", extra="lifted"),
        (colourings.LegendEntry("#123456", "lifted"),)))
    dot = stage_dot(stage)
    assert 'fillcolor="#123456"' in dot and ">lifted</font>" in dot
    assert "stage flatten" in dot


def test_unchanged_stage_says_so():
    session = Session(target="interp")
    program = parse_program(Source("cell[1]", "1 + 2"), session._ids)
    from accel_kernel.lang.typecheck import check_program
    checked = check_program(program, session._env())
    stages = compiler.run_pipeline(program, checked, session._env(), {}, session._ids, [])
    import dataclasses
    same = dataclasses.replace(stages[1], name="desugar", changed=False)
    assert "(unchanged from typed)" in stage_dot(same)
    assert text.stage_text(same).startswith("-- stage desugar: unchanged from typed")


def test_every_example_program_gives_dot(fake_passes):
    """No renderer: only the DOT is built, for every stage of every example program."""
    from pathlib import Path
    from accel_kernel.lang.errors import AccelError
    count = 0
    for path in sorted(Path(__file__).parents[1].joinpath("programs").glob("*.accel")):
        if path.name.startswith("error_"):
            continue
        session = Session(target="interp")
        try:
            stages = session.program_stages(path.read_text(), path.name)
        except AccelError:
            continue
        for stage in stages:
            dot = stage_dot(stage, types=stages[1].types)
            assert dot.startswith("digraph accel {") and dot.endswith("}\n")
        count += 1
    assert count > 50


# ---------------------------------------------------------------- text view

def test_text_view_prints_the_program_with_facts_as_comments(fake_passes):
    stages = by_name(stages_of(SMVM, "smvm"))
    view = text.stage_text(stages["regularity"])
    assert view.startswith("-- stage regularity: ")
    assert re.search(r"^-- n +#\d+ : i64, shape \[\], regularity ⟨S, dep, 1⟩$", view, re.M)
    assert re.search(r"^-- rows +#\d+ : \[\]\[\]\(i64, f64\), shape", view, re.M)
    # the comments keep it accel: it parses back to the same program
    again = parse_program(Source("again", view))
    assert again == stages["regularity"].program
    assert "--" not in text.stage_text(stages["typed"]).split("\n", 1)[1]


def test_source_listing_shows_node_ids_per_line(fake_passes):
    stage = by_name(stages_of(SMVM, "smvm"))["typed"]
    listing = text.source_listing(stage)
    length = find(stage, ast.Apply, lambda a: a.fn == ast.Var("length"))
    lines = listing.splitlines()
    assert lines[0] == "-- cell[1]   (node ids on the left, as in the drawings)"
    # the ids are a margin column on the left; the source lines stay as written
    rows = {int(m.group(2)): (m.group(1).split(), m.group(3))
            for m in (re.match(r"^([ #\d]*?)\s*(\d+) \| (.*)$", ln) for ln in lines[1:]) if m}
    margin3, text3 = rows[3]
    assert text3 == "  let n = length v" and f"#{length.id}" in margin3
    assert f"#{find(stage, ast.Def).id}" in rows[2][0]
    assert 1 not in rows                                     # `let v` is not the target
    column = {ln.index("|") for ln in lines[1:] if "|" in ln}
    assert len(column) == 1                                  # one margin width for all rows
    # more ids than fit one margin row go on margin rows below the line, with no source
    def margin_ids(line: str) -> list[str]:
        return re.findall(r"#\d+", line.split("|")[0])
    more = [ln for ln in lines[1:] if re.match(r"^ *#\d+( #\d+)* +\|$", ln)]
    assert all(len(margin_ids(ln)) <= text.IDS_PER_ROW for ln in lines[1:])
    shown = [i for ln in lines[1:] for i in margin_ids(ln)]
    assert len(shown) == len(set(shown)) == len(set(re.findall(r"#\d+", listing)))
    assert more or all(len(ids) < text.IDS_PER_ROW for ids, _ in rows.values())


def test_compact_drawings_have_no_ids_and_no_types(fake_passes):
    stages = by_name(stages_of(SMVM, "smvm"))
    full = stage_dot(stages["typed"])
    small = stage_dot(stages["typed"], compact=True)
    length = find(stages["typed"], ast.Apply, lambda a: a.fn == ast.Var("length"))
    assert f"<b>#{length.id}&#160;</b>n = length v" in node_line(full, length.id)
    assert "label=<n = length v" in node_line(small, length.id)
    assert ">i64</font>" in node_line(full, length.id)
    assert "</font>" not in node_line(small, length.id)              # no type line
    assert not re.search(r'label="#\d+ ', small)                     # nor in cluster labels
    from accel_kernel.viz.widgets import stage_views
    views = stage_views(list(stages.values()), title="smvm", compact=True)
    assert all(view.listing == "" for view in views)                  # no source listing


def test_no_renderer_gives_text_and_hint(fake_passes, monkeypatch):
    monkeypatch.setattr(render, "renderer", lambda: None)
    from accel_kernel.viz.widgets import stage_views
    views = stage_views(stages_of(SMVM, "smvm"))
    assert [v.name for v in views] == ["parse", "typed", "shape", "regularity"]
    assert all(v.svg is None and v.problem == render.HINT for v in views)
    assert all(v.dot.startswith("digraph") for v in views)


def test_forms_are_stacked_and_library_names_are_text(fake_passes):
    code = ("def lo (xs: []f64) : f64 = reduce min highest xs\n"
            "def hi (xs: []f64) : f64 = reduce max lowest xs\n")
    session = Session(target="interp")
    stages = session.program_stages(code, "two.accel")
    dot = stage_dot(stages[1])
    assert "g_highest" not in dot and "reduce min highest xs" in dot
    first = find(stages[1], ast.Def, lambda d: d.name == "lo")
    second = find(stages[1], ast.Def, lambda d: d.name == "hi")
    # an invisible edge from the first def's result puts the second def's input below it
    assert re.search(rf"n{first.body.id} -> n{second.params[0].id} \[style=invis, weight=0\];", dot)
