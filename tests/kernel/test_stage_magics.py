"""`%stages`, `%show STAGE` and `%step STAGE`: on a Session (stand-in analyses, see
tests/viz/test_graphs.py) and through a real kernel process (the real passes)."""
from __future__ import annotations

import shutil
from dataclasses import dataclass

import pytest

from accel_kernel import compiler
from accel_kernel.kernel import magics
from accel_kernel.kernel.magics import MagicContext, MagicError, parse_magic, run_magic
from accel_kernel.lang import ast
from accel_kernel.lang import types as T
from accel_kernel.lang.errors import AccelError
from accel_kernel.passes.base import PassContext, PassOutput
from accel_kernel.session import Session
from accel_kernel.viz import render

from .test_client import TIMEOUT, execute, kc, km  # noqa: F401

WIDGET = "application/vnd.jupyter.widget-view+json"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` not installed")

SMALL_DEF = "def rowsums (xss: [][]i64) : []i64 = map (\\xs -> reduce (+) 0 xs) xss"


@dataclass(frozen=True)
class Fact:
    nest: str
    independent: bool = True
    level: int | None = None

    def __str__(self) -> str:
        return self.nest


class FakeRegularity:
    name = "regularity"
    transforms = False

    def run(self, program: ast.Program, ctx: PassContext) -> PassOutput:
        facts = {}
        for form in program.forms:
            for node in ast.walk(form):
                t = ctx.types.get(node.id)
                if t is not None:
                    facts[node.id] = Fact("R>S" if isinstance(t, T.Array) else "S")
                    with ctx.log.apply("LITERAL", node) as step:
                        step.after = facts[node.id].nest
        return PassOutput(program, facts)


@pytest.fixture
def ctx(monkeypatch) -> MagicContext:
    monkeypatch.setattr(compiler, "default_passes", lambda: [FakeRegularity()])
    session = Session(target="interp")
    session.execute(SMALL_DEF, name="cell[1]")
    return MagicContext(session, cell_name="cell[2]", line=1)


def run(line: str, ctx: MagicContext) -> magics.MagicOutput:
    return run_magic(parse_magic(line), ctx)


def widget_of(bundle):
    from ipywidgets.widgets.widget import _instances
    return _instances[bundle[WIDGET]["model_id"]]


# ---------------------------------------------------------------- on a Session

@needs_dot
def test_show_sends_svg_with_dot_in_metadata_then_the_text(ctx):
    out = run("%show regularity rowsums", ctx)
    (graph, listing) = out.displays
    assert graph["image/svg+xml"].startswith("<svg")
    meta = out.metadata_of(0)["image/svg+xml"]
    assert meta["accel/stage"] == "regularity" and meta["accel/dot"].startswith("digraph")
    assert "stage regularity · rowsums" in meta["accel/dot"]
    assert graph["text/plain"].startswith("-- stage regularity")
    assert "def rowsums" in listing["text/plain"] and "  1 | def rowsums" in listing["text/plain"]


def test_show_without_renderer_prints_text_and_hint(ctx, monkeypatch):
    monkeypatch.setattr(render, "renderer", lambda: None)
    out = run("%show typed map (\\x -> x + 1) [1, 2]", ctx)
    (bundle,) = out.displays
    assert set(bundle) == {"text/plain"} and render.HINT in bundle["text/plain"]
    assert out.metadata_of(0)["text/plain"]["accel/dot"].startswith("digraph")
    assert "  1 | map" in bundle["text/plain"]                  # the source listing


def test_stages_sends_a_widget_and_a_static_copy(ctx):
    out = run("%stages rowsums", ctx)
    (bundle,) = out.displays
    assert bundle[WIDGET]["model_id"]
    assert "<h4>regularity</h4>" in bundle["text/html"]
    assert bundle["text/plain"].startswith("-- stage parse")
    assert set(out.metadata_of(0)["accel/dot"]) == {"parse", "typed", "regularity"}
    tab = widget_of(bundle)
    assert tab.titles == ("parse", "typed", "regularity") and tab.selected_index == 2


def test_compact_views_for_slides(ctx):
    """`--compact`: drawings without node ids and types, and no source listing."""
    out = run("%stages --compact rowsums", ctx)
    (bundle,) = out.displays
    assert "<h4>regularity</h4>" in bundle["text/html"]
    assert "node ids" not in bundle["text/html"] and "<b>#" not in out.metadata_of(0)[
        "accel/dot"]["regularity"]
    if shutil.which("dot"):
        assert len(run("%show --compact regularity rowsums", ctx).displays) == 1   # no listing
    def step_dot(line: str) -> str:
        return run(line, ctx).metadata_of(0)["accel/dot"]["regularity"]
    assert "<b>#" in step_dot("%step regularity rowsums")
    assert "<b>#" not in step_dot("%step --compact regularity rowsums")


def test_stages_defaults_to_the_last_def(ctx):
    (bundle,) = run("%stages", ctx).displays
    assert "rowsums" in bundle["text/plain"]


def test_step_sends_a_slider_over_the_rewrite_log(ctx):
    out = run("%step regularity rowsums", ctx)
    (bundle,) = out.displays
    from ipywidgets import IntSlider
    box = widget_of(bundle)
    slider = next(w for w in box.children[0].children if isinstance(w, IntSlider))
    info, graph = box.children[2], box.children[3]
    assert slider.max > 3 and info.value.startswith("<pre>step 1/")
    first = info.value
    slider.value = 3                       # what a frontend's comm message does
    assert info.value.startswith("<pre>step 3/") and info.value != first
    if shutil.which("dot"):
        assert "<svg" in graph.value and "penwidth" not in graph.value   # SVG, not DOT
    assert "LITERAL" in bundle["text/html"] and "<table" in bundle["text/html"]
    # the static copy: every step a collapsible section with its before and after
    sections = bundle["text/html"].count("<details><summary>step ")
    assert sections == slider.max and f"step {slider.max}/{slider.max}: " in bundle["text/html"]
    assert bundle["text/html"].count("  before: ") == slider.max
    assert bundle["text/plain"].startswith("step 1/")
    assert out.metadata_of(0)["accel/dot"]["regularity"].startswith("digraph")


def test_step_on_a_stage_without_steps_says_so(ctx):
    out = run("%step typed rowsums", ctx)
    assert out.displays == [] and "no steps" in out.stdout[0]


@pytest.mark.parametrize("line", ["%stages -h", "%show -h", "%step --help"])
def test_help_flag(line, ctx):
    (text,) = run(line, ctx).stdout
    assert text.startswith(line.split()[0])


def test_bad_arguments(ctx):
    with pytest.raises(MagicError, match="needs a stage name"):
        run("%show", ctx)
    with pytest.raises(MagicError, match="unknown stage `nope`"):
        run("%show nope rowsums", ctx)
    with pytest.raises(NotImplementedError, match="not available yet"):
        run("%step codegen rowsums", ctx)
    empty = MagicContext(Session(target="interp"), "cell[1]")
    with pytest.raises(MagicError, match="needs a def's name"):
        run("%stages", empty)


def test_accel_errors_point_at_the_cell_line(ctx):
    ctx.line = 3
    with pytest.raises(AccelError) as info:
        run("%show typed map undefined_name [1]", ctx)
    assert info.value.kind == "NameError"
    assert "cell[2]:3:" in info.value.headline()


# ---------------------------------------------------------------- through the kernel

def displays(outputs):
    return [m["content"] for m in outputs if m["msg_type"] == "display_data"]


@needs_dot
def test_kernel_show_regularity_is_svg_with_dot(kc):
    assert execute(kc, SMALL_DEF)[0]["status"] == "ok"
    reply, outputs = execute(kc, "%show regularity rowsums")
    assert reply["status"] == "ok", reply
    graph = displays(outputs)[0]
    assert graph["data"]["image/svg+xml"].startswith("<svg")
    assert graph["metadata"]["image/svg+xml"]["accel/dot"].startswith("digraph accel")


def test_kernel_stages_is_a_widget_with_html_fallback(kc):
    assert execute(kc, SMALL_DEF)[0]["status"] == "ok"
    msg_id = kc.execute("%stages rowsums")
    opened, shown = [], []
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "comm_open":
            opened.append(msg["content"]["comm_id"])
        if msg["msg_type"] == "display_data":
            shown.append(msg["content"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    (bundle,) = shown
    assert bundle["data"][WIDGET]["model_id"] in opened        # its comm was opened
    assert "<h4>regularity</h4>" in bundle["data"]["text/html"]
    assert "regularity" in bundle["metadata"]["accel/dot"]


def test_kernel_step_is_a_slider(kc):
    assert execute(kc, SMALL_DEF)[0]["status"] == "ok"
    reply, outputs = execute(kc, "%step regularity rowsums")
    assert reply["status"] == "ok", reply
    (bundle,) = displays(outputs)
    assert WIDGET in bundle["data"] and bundle["data"]["text/plain"].startswith("step 1/")


def test_kernel_stage_magic_errors(kc):
    reply, _ = execute(kc, "%show typed\n%show typed no_such_name_here")
    assert reply["status"] == "error" and reply["ename"] in ("NameError", "MagicError")
    reply, _ = execute(kc, "%show -h")
    assert reply["status"] == "ok"


def test_a_view_is_kept_until_what_it_shows_changes(monkeypatch):
    session = Session(target="interp")
    session.execute(SMALL_DEF, name="cell[1]")
    compiled: list[str] = []
    real = session.stages
    monkeypatch.setattr(session, "stages",
                        lambda target, *a, **k: compiled.append(target) or real(target, *a, **k))

    def show(line: str, cell: int) -> list:
        return run_magic(parse_magic(line), MagicContext(session, f"cell[{cell}]", 1)).displays

    first = show("%show fuse rowsums", 2)
    assert show("%show fuse rowsums", 3) == first and len(compiled) == 1     # shown again
    show("%show fuse", 4)                         # the default (the last def): its own key
    assert len(compiled) == 2
    session.execute(SMALL_DEF.replace("0 xs", "1 xs"), name="cell[5]")      # redefined
    assert show("%show fuse rowsums", 6) != first and len(compiled) == 3
    session.set_target("numpy")
    show("%show fuse rowsums", 7)
    assert len(compiled) == 4
    session.set_target("interp")                  # the same state as before: kept
    show("%show fuse rowsums", 8)
    assert len(compiled) == 4
    show("%show fuse rowsums [[1, 2]]", 9)           # its listing names its cell: not kept
    show("%show fuse rowsums [[1, 2]]", 10)
    assert len(compiled) == 6
    session.execute("let xss = [[1, 2], [3]]", name="cell[11]")
    ran: list[str] = []
    real_run = session.flat_run
    monkeypatch.setattr(session, "flat_run",
                        lambda target, *a, **k: ran.append(target) or real_run(target, *a, **k))
    first = show("%step flatten rowsums xss", 12)      # names no cell: kept by its text
    assert show("%step flatten rowsums xss", 13) == first and len(ran) == 1
