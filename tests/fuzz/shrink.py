"""Shrinking a failing program: greedy delta debugging over the generator's program tree.

`shrink(program, still_fails, type_checks)` tries smaller variants of `program`, largest cuts
first, and keeps the first one that still type checks and on which `still_fails` holds (the
fuzz command asks for the same failure class, so a shrunk program shows the same bug). The
variants are: a global `let` or a helper def left out; a node replaced by the simplest value
of its type (`0`, `true`, `([] : []i64)`, `[0]`, ...) or by one of its descendants of the
same type; an element of an array literal left out; an integer literal made smaller. It
stops when no variant fails any more, or after `budget` runs of `still_fails`.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterator

from .program import Form, Node, Program, drop_item, int_lit, replace_at, smallest, walk


def measure(program: Program) -> tuple[int, int, int]:
    """What shrinking makes smaller: nodes, then characters, then literal magnitudes."""
    text = program.text
    literals = sum(abs(n.lit) for f in program.forms for _, n in walk(f.expr)
                   if n.lit is not None)
    return program.size(), len(text), literals


def smaller_literals(value: int) -> list[int]:
    out = [0, 1, value // 2, -value if value < 0 else value - 1]
    return [v for v in dict.fromkeys(out) if abs(v) < abs(value) or (v == 1 and value < 0)]


def node_variants(root: Node) -> Iterator[Node]:
    """Every one-step simplification of a form's expression, larger cuts first."""
    for path, current in walk(root):
        for simple in smallest(current.type):
            if simple.text != current.text:
                yield replace_at(root, path, simple)
        for below_path, below in walk(current):
            if below_path and below.type == current.type:
                yield replace_at(root, path, below)
        if current.items:
            for k in range(len(current.children())):
                yield replace_at(root, path, drop_item(current, k))
        if current.lit is not None:
            for value in smaller_literals(current.lit):
                yield replace_at(root, path, int_lit(value))


def variants(program: Program) -> Iterator[Program]:
    forms = program.forms
    for k in range(len(forms) - 1):               # the final expression stays
        yield replace(program, forms=forms[:k] + forms[k + 1:])
    for k in range(len(program.defs)):
        yield replace(program, defs=program.defs[:k] + program.defs[k + 1:])
    for k, form in enumerate(forms):
        for expr in node_variants(form.expr):
            yield replace(program, forms=forms[:k] + (Form(form.name, expr),) + forms[k + 1:])


def shrink(program: Program, still_fails: Callable[[str], bool],
           type_checks: Callable[[str], bool], budget: int = 250) -> Program:
    """The smallest variant of `program` found that type checks and still fails."""
    current, runs = program, 0
    seen: set[str] = {program.text}
    progress = True
    while progress and runs < budget:
        progress = False
        size = measure(current)
        for candidate in variants(current):
            text = candidate.text
            if text in seen or measure(candidate) >= size:
                continue
            seen.add(text)
            if not type_checks(text):
                continue
            runs += 1
            if still_fails(text):
                current, progress = candidate, True
                break
            if runs >= budget:
                break
    return current
