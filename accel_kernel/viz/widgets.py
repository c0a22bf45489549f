"""Notebook views of the stages: `%stages` (a tab per stage) and `%step` (a slider over a
stage's rewrite log). ipywidgets is imported only when a widget is built.

Each view is one mime bundle, sent by the kernel as one `display_data`:

- `application/vnd.jupyter.widget-view+json`: the live widget (its comm is opened when the
  widget is built, through the comm manager the kernel registered);
- `text/html`: a static copy (the SVGs inline, the text views in `<pre>`), which nbconvert and
  GitHub show when the notebook was saved without widget state;
- `text/plain`: the text views.

The metadata carries the DOT of every drawing: `{"accel/dot": {STAGE: DOT, ...}}` (for `%step`,
the stage's DOT with all its changed nodes highlighted).

Drawings fit the notebook's width: a drawing is laid out top to bottom, and when that is tall
and narrow also left to right, and the one shorter on a page `NOTEBOOK_WIDTH_PT` wide is kept
(`fit_width`; a `%step` decides once, on its summary drawing, so that the frames do not turn
while the slider moves); the HTML scales a drawing wider than the page down to its width.
`compact=True` (`%stages --compact`, for slides) draws without node ids and types and leaves
out the source listing.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..compiler import Stage
from ..lang import types as T
from ..passes.base import Step
from .flat_run import format_flat
from .graphs import node_ids, stage_dot
from .render import HINT, RenderError, render_svg
from .text import listing_rows, source_listing, stage_header, stage_text

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

_CSS = ("<style>.accel-stage pre{font-size:12px;line-height:1.3;margin:4px 0}"
        ".accel-stage .accel-note{color:#555;font-style:italic;margin:4px 0}"
        ".accel-graph{overflow-x:auto;max-width:100%}"
        ".accel-graph svg{max-width:100%;height:auto}"
        ".accel-listing .accel-ids{color:#8a8a8a}"
        ".accel-steps td{font-family:monospace;font-size:12px;padding:1px 6px;"
        "text-align:left;vertical-align:top}</style>")


@dataclass(frozen=True)
class StageView:
    """One stage ready to show: its drawing (or why there is none) and its text."""
    name: str
    header: str
    changed: bool
    previous: str | None
    dot: str
    svg: str | None
    problem: str          # the hint or the render error when svg is None
    text: str
    listing: str
    listing_html: str = ""


def typed_types(stages: Sequence[Stage]) -> dict[int, T.Type]:
    """The types of the first stage that has them (drawn on the `parse` stage too)."""
    for stage in stages:
        if stage.types:
            return dict(stage.types)
    return {}


def stage_views(stages: Sequence[Stage], title: str = "",
                compact: bool = False) -> list[StageView]:
    """Every stage, drawn; a stage that changed nothing is not drawn again."""
    return [stage_view(stages, index, title, draw=stage.changed, compact=compact)
            for index, stage in enumerate(stages)]


def stage_view(stages: Sequence[Stage], index: int, title: str = "",
               draw: bool = True, compact: bool = False) -> StageView:
    """Stage `index` of a pipeline's stages (the others give its predecessor's name and the
    types the `parse` stage is drawn with)."""
    stage = stages[index]
    types = typed_types(stages)
    previous = stages[index - 1].name if index else None
    label = f"stage {stage.name}" + (f" · {title}" if title else "")
    dot = stage_dot(stage, types=types, previous=previous, title=label, compact=compact)
    svg, problem = (None, "")
    if draw:
        dot = with_hint(dot, order_columns(dot))
        dot = with_rankdir(dot, fit_width(dot))
        svg, problem = try_render(dot)
    if compact:
        listing = listing_html = ""
    else:
        ids = node_ids(stage, types)
        listing, listing_html = source_listing(stage, ids), _listing_html(stage, ids)
    return StageView(stage.name, stage_header(stage, previous), stage.changed, previous, dot,
                     svg, problem, stage_text(stage, previous), listing, listing_html)


def try_render(dot: str) -> tuple[str | None, str]:
    try:
        svg = render_svg(dot)
    except RenderError as err:
        return None, str(err)
    return svg, "" if svg is not None else HINT


# ---------------------------------------------------------------- fitting the page

NOTEBOOK_WIDTH_PT = 720     # a JupyterLab output area, about 960 px
SMALLEST_SCALE = 0.6        # a drawing shrunk more than this to fit is hard to read


def svg_size(svg: str) -> tuple[float, float] | None:
    """The (width, height) in points Graphviz wrote on the `<svg>` element."""
    found = re.search(r'<svg[^>]*?width="([\d.]+)pt"[^>]*?height="([\d.]+)pt"', svg)
    return (float(found.group(1)), float(found.group(2))) if found else None


def with_rankdir(dot: str, rankdir: str) -> str:
    """The DOT laid out `TB` (top to bottom, as `stage_dot` writes it) or `LR`."""
    return dot.replace("rankdir=TB", f"rankdir={rankdir}", 1)


def order_columns(dot: str) -> bool:
    """Whether a flat drawing in columns (`flat_views.columns`) needs its second hint to show
    them left to right, in program order (False when it has no columns or no renderer)."""
    from .flat_views import COLUMNS_HINT

    def in_order(text: str) -> bool | None:
        try:
            svg = render_svg(text)
        except RenderError:
            return None
        found = re.findall(r'<text[^>]*? x="([-\d.]+)"[^>]*>column (\d+) of \d+</text>',
                           svg or "")
        xs = [float(x) for x, _ in sorted(found, key=lambda f: int(f[1]))]
        return xs == sorted(xs) if xs else None

    if COLUMNS_HINT not in dot or in_order(dot) is not False:
        return False
    return bool(in_order(with_hint(dot, True)))


def with_hint(dot: str, on: bool) -> str:
    from .flat_views import COLUMNS_HINT
    return dot.replace(COLUMNS_HINT, "") if on else dot


def fit_width(dot: str, width: float = NOTEBOOK_WIDTH_PT) -> str:
    """`TB` or `LR`: the layout whose drawing is shorter on a page `width` points wide (a
    drawing wider than the page is scaled down to it, but never below `SMALLEST_SCALE`).
    Only a tall, narrow drawing is laid out a second time; without a renderer, `TB`."""
    try:
        tall = render_svg(dot)
    except RenderError:
        return "TB"
    size = svg_size(tall) if tall else None
    if size is None or size[1] <= 1.3 * size[0] or size[0] >= width:
        return "TB"
    try:
        wide = render_svg(with_rankdir(dot, "LR"))
    except RenderError:
        return "TB"
    other = svg_size(wide) if wide else None
    if other is None or other[0] * SMALLEST_SCALE > width:
        return "TB"

    def shown_height(w: float, h: float) -> float:
        return h * min(1.0, width / w)
    return "LR" if shown_height(*other) < shown_height(*size) else "TB"


# ---------------------------------------------------------------- HTML pieces

def _e(text: str) -> str:
    return html.escape(text, quote=True)


def graph_html(svg: str | None, problem: str) -> str:
    """A drawing in HTML. Where the HTML is sanitized (an untrusted notebook in JupyterLab
    drops `<svg>` but keeps its text), the container's zero font size hides the drawing's
    loose words; Graphviz gives every `<text>` its own size, so a drawing shows as drawn."""
    if svg is None:
        return f'<div class="accel-note">({_e(problem)})</div>' if problem else ""
    return f'<div class="accel-graph" style="font-size:0px">{svg}</div>'


def drawing_html(svg: str) -> str:
    """One drawing as HTML that fits the page (`%show`): JupyterLab draws `image/svg+xml` at
    its natural size, however wide."""
    return _CSS + graph_html(svg, "")


def view_html(view: StageView, with_listing: bool = True) -> str:
    if not view.changed:
        return (f'<div class="accel-stage"><div class="accel-note">{_e(view.header[3:])}: '
                f"the drawing and the program are those of `{_e(view.previous or '')}`"
                "</div></div>")
    parts = ['<div class="accel-stage">', graph_html(view.svg, view.problem),
             f"<pre>{_e(view.text)}</pre>"]
    if with_listing and view.listing:
        parts.append(f"<details><summary>source lines and node ids</summary>"
                     f"{view.listing_html or '<pre>' + _e(view.listing) + '</pre>'}"
                     "</details>")
    parts.append("</div>")
    return "".join(parts)


def _listing_html(stage: Stage, ids: Any) -> str:
    """The source listing as HTML: the ids in a grey margin column, the source lines as
    written (each line's ids also on hover)."""
    rows = listing_rows(stage, ids)
    width = max((len(margin) for kind, margin, _, _ in rows if kind == "line"), default=0)
    out = []
    for kind, margin, number, text in rows:
        if kind == "source":
            out.append(f"-- {_e(text)}")
        elif kind == "gap":
            out.append("")
        else:
            shown = f"{number:>3}" if number else "   "
            hover = f' title="node ids: {_e(margin)}"' if margin else ""
            out.append(f'<span class="accel-ids">{_e(margin.rjust(width))}</span>'
                       f"{'  ' if width else ''}<span{hover}>{shown} | {_e(text)}</span>")
    return '<pre class="accel-listing">' + "\n".join(out) + "</pre>"


def stages_html(views: Sequence[StageView]) -> str:
    """The static copy of `%stages`: every stage one after the other."""
    parts = [_CSS]
    for view in views:
        parts.append(f"<h4>{_e(view.name)}</h4>")
        parts.append(view_html(view, with_listing=view is views[-1]))
    return "".join(parts)


def stages_text(views: Sequence[StageView]) -> str:
    return "\n".join(view.text for view in views) + "\n" + (views[-1].listing if views else "")


# ---------------------------------------------------------------- %stages

def stages_bundle(views: Sequence[StageView]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Tab with one tab per stage (drawing and text), plus its static copy."""
    import ipywidgets as widgets
    children = [widgets.HTML(_CSS + view_html(view)) for view in views]
    tab = widgets.Tab(children=children)
    tab.titles = tuple(view.name if view.changed else f"{view.name} (=)" for view in views)
    changed = [i for i, view in enumerate(views) if view.changed]
    tab.selected_index = changed[-1] if changed else 0
    data = dict(tab._repr_mimebundle_())
    data["text/html"] = stages_html(views)
    data["text/plain"] = stages_text(views)
    return data, {"accel/dot": {view.name: view.dot for view in views}}


# ---------------------------------------------------------------- %step

@dataclass(frozen=True)
class StepFrames:
    """The two drawings of step `k` (1-based) of a stage: before and after it. `run` (a
    `viz.flat_run.FlatRun`, for `flatten` on real data) adds every binding's value."""
    stage: Stage
    previous: Stage | None
    types: dict[int, T.Type]
    run: Any = None
    compact: bool = False          # no node ids and types in the drawings (slides)

    @property
    def analysis(self) -> bool:
        return self.stage.name in self.stage.facts

    def touched(self, step: Step) -> set[int]:
        return set(step.changed) or {step.node}

    def known(self, k: int) -> set[int]:
        """The nodes whose facts the analysis had found after its first k steps."""
        ids: set[int] = set()
        for step in self.stage.steps[:k]:
            ids |= self.touched(step) | {step.node}
        return ids

    def dot(self, k: int, side: str) -> str:
        step = self.stage.steps[k - 1]
        name = self.stage.name
        title = f"{name} step {k}/{len(self.stage.steps)}: {step.rule} ({side})"
        if self.analysis:
            known = self.known(k - 1 if side == "before" else k)
            return stage_dot(self.stage, highlight=self.touched(step), known=known,
                             types=self.types, title=title, compact=self.compact)
        if side == "before":
            base = self.previous or self.stage
            return stage_dot(base, highlight={step.node}, types=self.types, title=title,
                             compact=self.compact)
        return stage_dot(self.stage, highlight=self.touched(step), types=self.types,
                         title=self._title(title), run=self.run, compact=self.compact)

    def summary_dot(self) -> str:
        ids: set[int] = set()
        for step in self.stage.steps:
            ids |= self.touched(step)
        title = self._title(f"{self.stage.name}: every node its steps changed")
        return stage_dot(self.stage, highlight=ids, types=self.types, run=self.run,
                         compact=self.compact, title=title)

    def _title(self, title: str) -> str:
        return title if self.run is None else f"{title} · {self.run.counters_line()}"

    def text(self, k: int) -> str:
        """Step k in words, with the values of what it made when there is a run."""
        steps = self.stage.steps
        text = step_text(steps[k - 1], k, len(steps))
        if self.run is None:
            return text
        lines = self.run.step_lines(steps[k - 1].changed)
        return text + ("\n  values on real data:\n" + "\n".join(lines) if lines else "")

    def header(self) -> str:
        if self.run is None:
            return ""
        run = self.run
        lines = [run.counters_line()]
        lines += [f"input {name} = {format_flat(v)}" for name, v in run.inputs.items()]
        if run.result is not None:
            lines.append(f"result: {run.result}")
        if run.error is not None:
            lines.append(f"stopped: {run.error}")
        return "\n".join(lines) + "\n"


def step_text(step: Step, k: int, total: int) -> str:
    where = f" at {step.span.location()}" if step.span is not None else ""
    lines = [f"step {k}/{total}: {step.rule} on #{step.node}{where}",
             f"  before: {step.before}", f"  after:  {step.after}"]
    if step.changed:
        lines.append("  changed: " + " ".join(f"#{i}" for i in step.changed))
    if step.note:
        lines.append(f"  note: {step.note}")
    return "\n".join(lines)


def steps_html(stage: Stage) -> str:
    """The table of steps. Its cells carry their alignment inline: where the HTML is
    sanitized (an untrusted notebook) the `<style>` goes, and JupyterLab right-aligns cells."""
    def row(cells: Sequence[str]) -> str:
        return "<tr>" + "".join(f'<td style="text-align:left;vertical-align:top">{c}</td>'
                                for c in cells) + "</tr>"
    rows = [row(["#", "rule", "node", "where", "before", "", "after", "note"])]
    for k, step in enumerate(stage.steps, start=1):
        where = step.span.location() if step.span is not None else ""
        rows.append(row([str(k), _e(step.rule), f"#{step.node}", _e(where), _e(step.before),
                         "→", _e(step.after), _e(step.note)]))
    return '<table class="accel-steps">' + "".join(rows) + "</table>"


def step_bundle(frames: StepFrames,
                render: Callable[[str], tuple[str | None, str]] = try_render,
                ) -> tuple[dict[str, Any], dict[str, Any]]:
    """A slider over the rewrite log: the step's rule and text, and the drawing before or
    after it with the nodes it touched highlighted; plus a static copy (the table of steps
    and the stage's drawing with every changed node highlighted)."""
    import ipywidgets as widgets
    steps = frames.stage.steps
    total = len(steps)
    summary = frames.summary_dot()
    hint = order_columns(summary)           # one layout for every frame: they do not turn
    rankdir = fit_width(with_hint(summary, hint))
    summary = with_rankdir(with_hint(summary, hint), rankdir)

    def draw(dot: str) -> tuple[str | None, str]:
        return render(with_rankdir(with_hint(dot, hint), rankdir))
    slider = widgets.IntSlider(value=1, min=1, max=total, description="step",
                               continuous_update=False,
                               layout=widgets.Layout(width="60%"))
    play = widgets.Play(value=1, min=1, max=total, interval=1500, description="play")
    widgets.jslink((play, "value"), (slider, "value"))
    side = widgets.ToggleButtons(options=["before", "after"], value="after",
                                 tooltips=["the program before this step",
                                           "the program after it, changed nodes in magenta"])
    info = widgets.HTML()
    graph = widgets.HTML()

    def show(_: Any = None) -> None:
        k = slider.value
        info.value = f"<pre>{_e(frames.header() + frames.text(k))}</pre>"
        svg, problem = draw(frames.dot(k, side.value))
        graph.value = _CSS + graph_html(svg, problem)

    slider.observe(show, names="value")
    side.observe(show, names="value")
    show()
    box = widgets.VBox([widgets.HBox([play, slider]), side, info, graph])

    data = dict(box._repr_mimebundle_())
    data["text/html"] = step_html(frames, render(summary))
    data["text/plain"] = frames.header() + "\n".join(
        frames.text(k) for k in range(1, total + 1)) + "\n"
    return data, {"accel/dot": {frames.stage.name: summary}}


def step_html(frames: StepFrames, drawing: tuple[str | None, str]) -> str:
    """The static copy of `%step` (what a notebook saved without widget state, nbconvert's
    HTML and GitHub show): the table of steps, the stage's drawing with every node its steps
    changed highlighted, and every step in a collapsible section with its before and after
    and, on real data, the values it made. Drawings per step are the live widget's alone:
    one Graphviz run a drawing, two a step, would make each `%step` seconds slower."""
    stage, total = frames.stage, len(frames.stage.steps)
    sections = "".join(f"<details><summary>step {k}/{total}: {_e(stage.steps[k - 1].rule)}"
                       f"</summary><pre>{_e(frames.text(k))}</pre></details>"
                       for k in range(1, total + 1))
    return (_CSS + f"<h4>{_e(stage.name)}: {total} steps</h4>"
            + (f"<pre>{_e(frames.header())}</pre>" if frames.run else "")
            + steps_html(stage) + graph_html(*drawing)
            + f'<div class="accel-stage">{sections}</div>')
