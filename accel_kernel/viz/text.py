"""The text view of a compilation stage: what a terminal, a saved notebook or a test reads.

- `stage_text(stage)`: a `--` header line (the stage, how many rules fired, or that it changed
  nothing), then the stage's program printed like accel source (`lang.printer`). For analysis
  stages (once `stage.facts` has something) each form is preceded by `--` comment lines giving
  every binding's type and facts, so the text still parses back to the same program.
- `source_listing(stage, ids)`: the source the stage came from with line numbers, and in a
  margin column on the left the `#id`s of the graph nodes that start on each line (a few a
  row, more on margin rows below it), so that a node can be followed from the source to
  every stage's graph while the source lines stay as written (`listing_rows` gives the rows,
  for the HTML view).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..compiler import Stage, previous_stage
from ..lang import ast
from ..lang import types as T
from ..lang.printer import print_form_wrapped
from .graphs import node_ids

IDS_PER_ROW = 4            # node ids in one row of the listing's margin column


def stage_header(stage: Stage, previous: str | None = None) -> str:
    """`-- stage shape: 7 rules, 0.3 ms` or `-- stage desugar: unchanged from typed`."""
    if previous is None:
        previous = previous_stage(stage.name)
    if not stage.changed:
        return f"-- stage {stage.name}: unchanged from {previous or 'the stage before'}"
    parts = []
    if stage.steps:
        parts.append(f"{len(stage.steps)} rule{'s' if len(stage.steps) != 1 else ''}")
    if stage.seconds:
        parts.append(_seconds(stage.seconds))
    return f"-- stage {stage.name}" + (": " + ", ".join(parts) if parts else "")


def stage_text(stage: Stage, previous: str | None = None) -> str:
    if not isinstance(stage.program, ast.Program):      # a flat program (`flatten` on)
        from .flat_views import flat_text
        return flat_text(stage, previous)
    lines = [stage_header(stage, previous)]
    for form in stage.program.forms:
        if stage.facts:
            lines.extend(_fact_comments(stage, form))
        lines.append(print_form_wrapped(form))
    return "\n".join(lines) + "\n"


def _seconds(t: float) -> str:
    return f"{t * 1e6:.0f} µs" if t < 1e-3 else f"{t * 1e3:.1f} ms"


# ---------------------------------------------------------------- facts as comments

def bindings(form: ast.TopForm) -> Iterator[tuple[str, list[int], ast.Node]]:
    """(name, candidate node ids for its facts, node) for every name the form binds, in
    source order: a def's result, parameters, lets, lambda and loop variables, generators."""
    def names(pattern: ast.Pattern, extra: list[int]) -> Iterator[tuple[str, list[int],
                                                                        ast.Node]]:
        for node in ast.walk(pattern):
            if isinstance(node, ast.PVar):
                yield node.name, [node.id, *extra], node

    for node in ast.walk(form):
        if isinstance(node, ast.Def):
            yield f"{node.name} (result)", [node.body.id], node
            for p in node.params:
                yield from names(p, [])
        elif isinstance(node, (ast.Let, ast.GlobalLet, ast.LetQual)):
            yield from names(node.pattern, [node.pattern.id, node.value.id])
        elif isinstance(node, ast.Lambda):
            for p in node.params:
                yield from names(p, [])
        elif isinstance(node, ast.Loop):
            yield from names(node.pattern, [node.pattern.id])
            if isinstance(node.form, ast.ForRange):
                yield node.form.var, [node.form.id], node.form
            elif isinstance(node.form, ast.ForIn):
                yield from names(node.form.pattern, [node.form.pattern.id])
        elif isinstance(node, ast.Generator):
            yield from names(node.pattern, [node.pattern.id])
        elif isinstance(node, ast.TopExpr):
            yield "it", [node.expr.id], node


def _fact_comments(stage: Stage, form: ast.TopForm) -> list[str]:
    rows: list[tuple[str, str]] = []
    for name, ids, _ in bindings(form):
        t = next((stage.types[i] for i in ids if i in stage.types), None)
        described = [f"#{ids[0]}" + (f" : {T.show(t)}" if t is not None else "")]
        for analysis, facts in stage.facts.items():
            fact = next((facts[i] for i in ids if i in facts), None)
            if fact is not None:
                described.append(f"{analysis} {fact}")
        rows.append((name, ", ".join(described)))
    if not rows:
        return []
    width = max(len(name) for name, _ in rows)
    return [f"-- {name.ljust(width)}  {text}".rstrip() for name, text in rows]


# ---------------------------------------------------------------- source listing

def source_listing(stage: Stage, ids: Iterable[int] | None = None) -> str:
    """The lines of the source(s) the stage's program came from, numbered, with the ids of
    the nodes starting on each line in a margin column on the left: those of `ids`, by
    default the nodes of the stage's drawing (`graphs.node_ids`).

        -- cell[3]   (node ids on the left, as in the drawings)
                       #289 #330    1 | def dists (xs: [][]f64) : []f64 =
             #297 #299 #302 #303    2 |   let sq = map (\\r -> map (\\x -> x * x) r) xs
                  #305 #306 #308      |
    """
    rows = listing_rows(stage, ids)
    width = max((len(margin) for kind, margin, _, _ in rows if kind == "line"), default=0)
    out: list[str] = []
    for kind, margin, number, text in rows:
        if kind == "source":
            out.append(f"-- {text}" + ("   (node ids on the left, as in the drawings)"
                                      if width else ""))
        elif kind == "gap":
            out.append("")
        else:
            shown = f"{number:>3}" if number else "   "
            line = f"{margin.rjust(width)}{'  ' if width else ''}{shown} | {text}"
            out.append(line.rstrip())
    return "\n".join(out) + "\n"


def listing_rows(stage: Stage, ids: Iterable[int] | None = None
                 ) -> list[tuple[str, str, int, str]]:
    """The rows of `source_listing`: (kind, margin ids, line number, text), kind `source` (a
    source's name in text), `gap` (between sources) or `line` (a source line, number > 0, or
    a margin row of more ids, number 0 and no text)."""
    wanted = set(ids) if ids is not None else set(node_ids(stage))
    starts: dict[tuple[int, int], list[int]] = {}     # (source, line) -> ids
    for node in stage.nodes():
        if node.span is None or node.id not in wanted:
            continue
        found = starts.setdefault((id(node.span.source), node.span.line), [])
        if node.id not in found:
            found.append(node.id)
    rows: list[tuple[str, str, int, str]] = []
    for source, first, last in _source_ranges(stage.source):
        if rows:
            rows.append(("gap", "", 0, ""))
        rows.append(("source", "", 0, source.name))
        for number in range(first, last + 1):
            found = [f"#{i}" for i in sorted(starts.get((id(source), number), []))]
            chunks = [" ".join(found[k:k + IDS_PER_ROW])
                      for k in range(0, len(found), IDS_PER_ROW)] or [""]
            rows.append(("line", chunks[0], number, source.line_text(number)))
            rows.extend(("line", chunk, 0, "") for chunk in chunks[1:])
    return rows


def _source_ranges(program: ast.Program) -> list[tuple[Any, int, int]]:
    """(source, first line, last line) covering the program's forms, per source in order."""
    ranges: dict[int, list[Any]] = {}
    for form in program.forms:
        span = form.span
        if span is None:
            continue
        last = span.source.line_col(max(span.start, span.end - 1))[0]
        entry = ranges.setdefault(id(span.source), [span.source, span.line, last])
        entry[1] = min(entry[1], span.line)
        entry[2] = max(entry[2], last)
    return [tuple(r) for r in ranges.values()]   # type: ignore[misc]


def facts_of(stage: Stage, node_id: int) -> Mapping[str, Any]:
    """Every analysis' fact about one node."""
    return {name: facts[node_id] for name, facts in stage.facts.items() if node_id in facts}
