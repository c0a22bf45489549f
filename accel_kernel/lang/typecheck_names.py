"""Which global names a top-level form uses, and recursion cycles between definitions.

`free_names(form)` follows accel's scoping (lambda, let, loop and comprehension binders, and
size names bound by annotated parameters) and gives each global name the form mentions with
the first node that mentions it. `find_cycle` searches the definition graph, as it will be
once the cell is committed, for a path from a def back to itself: defs are late-bound, so
such a path is recursion (LANGUAGE.md §1 forbids it).
"""
from __future__ import annotations

from typing import Callable, Mapping

from . import ast


def product_factors(p: ast.Node) -> list[tuple[str, ast.Node]]:
    """The names in the product sizes (`[n * m]t`) of a pattern's annotations, each with its
    array type node."""
    return [(f, node) for node in ast.walk(p)
            if isinstance(node, ast.TArray) and isinstance(node.size, tuple)
            for f in node.size if isinstance(f, str)]


def size_names(annot: ast.TypeExpr | None) -> list[str]:
    """The size names (`n` in `[n]i64`) an annotation mentions, in order."""
    out: list[str] = []

    def visit(t: ast.TypeExpr | None) -> None:
        if isinstance(t, ast.TArray):
            if isinstance(t.size, str) and t.size not in out:
                out.append(t.size)
            visit(t.elem)
        elif isinstance(t, ast.TTuple):
            for e in t.elems:
                visit(e)
        elif isinstance(t, (ast.TFunc,)):
            visit(t.param)
            visit(t.result)
        elif isinstance(t, ast.TSeq):
            visit(t.elem)

    visit(annot)
    return out


def pattern_size_names(pattern: ast.Pattern) -> list[str]:
    """The size names of every annotation inside a pattern."""
    out = list(size_names(pattern.annot))
    if isinstance(pattern, ast.PTuple):
        for sub in pattern.elems:
            out += [n for n in pattern_size_names(sub) if n not in out]
    return out


def binders(patterns: tuple[ast.Pattern, ...] | list[ast.Pattern],
            with_sizes: bool) -> set[str]:
    names = {n for p in patterns for n in ast.pattern_names(p)}
    if with_sizes:
        names |= {n for p in patterns for n in pattern_size_names(p)}
    return names


def free_names(form: ast.TopForm) -> dict[str, ast.Node]:
    """The global names a top-level form refers to, each with the first node referring to it."""
    out: dict[str, ast.Node] = {}

    def use(name: str, node: ast.Node, bound: frozenset[str]) -> None:
        if name not in bound and name not in out:
            out[name] = node

    def expr(e: ast.Node | None, bound: frozenset[str]) -> None:
        if e is None:
            return
        if isinstance(e, ast.Var):
            use(e.name, e, bound)
        elif isinstance(e, ast.OpFunc):
            if e.op.isidentifier():
                use(e.op, e, bound)
        elif isinstance(e, (ast.LeftSection, ast.RightSection)):
            if e.op.isidentifier():
                use(e.op, e, frozenset())      # the interpreter looks sections up globally
            expr(e.left if isinstance(e, ast.LeftSection) else e.right, bound)
        elif isinstance(e, ast.Lambda):
            expr(e.body, bound | binders(e.params, with_sizes=True))
        elif isinstance(e, ast.Let):
            expr(e.value, bound)
            expr(e.body, bound | binders([e.pattern], with_sizes=True))
        elif isinstance(e, ast.Loop):
            expr(e.init, bound)
            inner = bound | binders([e.pattern], with_sizes=False)
            form_ = e.form
            if isinstance(form_, ast.ForRange):
                expr(form_.bound, bound)
                inner = inner | {form_.var}
            elif isinstance(form_, ast.ForIn):
                expr(form_.array, bound)
                inner = inner | binders([form_.pattern], with_sizes=False)
            else:
                expr(form_.cond, inner)
            expr(e.body, inner)
        elif isinstance(e, ast.Comprehension):
            visible = set(bound)
            for branch in e.branches:
                scope = frozenset(bound)
                for q in branch:
                    if isinstance(q, ast.Generator):
                        expr(q.source, scope)
                        scope = scope | binders([q.pattern], with_sizes=False)
                    elif isinstance(q, ast.Guard):
                        expr(q.cond, scope)
                    else:
                        expr(q.value, scope)
                        scope = scope | binders([q.pattern], with_sizes=False)
                visible |= scope
            expr(e.body, frozenset(visible))
        else:
            for child in ast.children(e):
                if not isinstance(child, (ast.TScalar, ast.TArray, ast.TTuple, ast.TFunc,
                                          ast.TSeq, ast.PVar, ast.PWild, ast.PTuple)):
                    expr(child, bound)

    if isinstance(form, ast.Def):
        expr(form.body, frozenset(binders(form.params, with_sizes=True)))
    elif isinstance(form, ast.GlobalLet):
        expr(form.value, frozenset())
    else:
        expr(form.expr, frozenset())
    return out


def find_cycle(start: str, first_steps: list[str],
               edges: Callable[[str], Mapping[str, object] | frozenset[str]]) -> list[str] | None:
    """A path `start -> ... -> start` whose first step is one of `first_steps` and whose other
    steps follow `edges(name)`, or None. The path found first in source order is returned."""
    seen: set[str] = set()

    def search(name: str, path: list[str]) -> list[str] | None:
        if name == start:
            return path + [name]
        if name in seen:
            return None
        seen.add(name)
        for nxt in edges(name):
            found = search(nxt, path + [name])
            if found is not None:
                return found
        return None

    for step in first_steps:
        found = search(step, [start])
        if found is not None:
            return found
    return None
