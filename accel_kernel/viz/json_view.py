"""The JSON view of a stage (`accel stages --format json`), for tools and tests.

    {"stage": S,
     "changed": BOOL,
     "bindings": {NAME: {"type": T, "shape": "...", "regularity": NEST,
                         "independent": BOOL, "level": L, "location": "FILE:L:C"}},
     "nodes": [{"id": N, "op": "...", "type": T, "location": ..., "shape": ..., ...}],
     "steps": [{"stage", "rule", "node", "before", "after", "location", "changed", "note"}]}

`bindings` has every `def` and every `let` name at any depth (also `let` qualifiers of
comprehensions still present before desugaring); a name bound twice is keyed `NAME@LINE:COL`
from its second binding on. A def's entry describes its result (the body). `shape` appears
from the `shape` stage on, `regularity`, `independent` and `level` from the `regularity` stage
on; `level` is an integer, or `"inf"` for an independent value.
"""
from __future__ import annotations

from typing import Any, Iterator

from ..compiler import Stage
from ..lang import ast
from ..lang.types import show


def stage_json(stage: Stage) -> dict[str, Any]:
    if not isinstance(stage.program, ast.Program):      # a flat program (`flatten` on)
        from .flat_views import flat_json
        return flat_json(stage)
    return {
        "stage": stage.name,
        "changed": stage.changed,
        "bindings": {name: _node_facts(stage, node, with_op=False)
                     for name, node in binding_nodes(stage.program)},
        "nodes": [_node_facts(stage, node, with_op=True) for node in _expression_nodes(stage)],
        "steps": [step.to_json() for step in stage.steps],
    }


def binding_nodes(program: ast.Program) -> list[tuple[str, ast.Node]]:
    """(name, node whose facts describe it) for every def and let name, in source order."""
    out: list[tuple[str, ast.Node]] = []
    seen: set[str] = set()

    def add(name: str, node: ast.Node, where: ast.Node) -> None:
        key = name
        if key in seen and where.span is not None:
            key = f"{name}@{where.span.line}:{where.span.col}"
        seen.add(name)
        out.append((key, node))

    def patterns(pattern: ast.Pattern) -> Iterator[ast.PVar]:
        if isinstance(pattern, ast.PVar):
            yield pattern
        elif isinstance(pattern, ast.PTuple):
            for p in pattern.elems:
                yield from patterns(p)

    for form in program.forms:
        for node in ast.walk(form):
            if isinstance(node, ast.Def):
                add(node.name, node.body, node)
            elif isinstance(node, (ast.Let, ast.GlobalLet, ast.LetQual)):
                for var in patterns(node.pattern):
                    add(var.name, var, var)
    return out


def _expression_nodes(stage: Stage) -> Iterator[ast.Node]:
    for node in stage.nodes():
        if node.id in stage.types or isinstance(node, (ast.Def, ast.GlobalLet, ast.TopExpr)):
            yield node


def _node_facts(stage: Stage, node: ast.Node, with_op: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if with_op:
        out["id"] = node.id
        out["op"] = type(node).__name__
    t = stage.types.get(node.id)
    out["type"] = show(t) if t is not None else None
    out["location"] = node.span.location() if node.span is not None else None
    shape = stage.facts.get("shape", {}).get(node.id)
    if "shape" in stage.facts:
        out["shape"] = str(shape) if shape is not None else None
    if "regularity" in stage.facts:
        reg = stage.facts["regularity"].get(node.id)
        out["regularity"] = reg.nest if reg is not None else None
        out["independent"] = reg.independent if reg is not None else None
        out["level"] = (None if reg is None else "inf" if reg.level is None else reg.level)
    return out
