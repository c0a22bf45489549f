"""The core IR: the program the `desugar` stage gives to `shape`, `regularity` and `flatten`.

The core IR is the AST of `lang/ast.py` restricted to the core forms, not a new set of classes:
the same frozen dataclasses, the same printer (`lang.printer.print_program`, whose text parses
back and type checks), the same ids and spans. What desugaring removes:

- comprehensions `[e | qs]`: they become `map`, `filter`, `expand`, `flatten`, `zip`/`zip3`
  (Elsman & Larsen, Fig. 2; the rules are in docs/stages.md);
- sections `(+1)`, `(2*)`: they become lambdas;
- `cond c a b` applied to all three arguments: it becomes `if c then a else b`;
- ranges `[a..<b]`, `[a..b]`, `[a..<b by s]` with a literal step: they become
  `map (\\i -> a + i * s) (iota count)`, the count clamped with `max 0` so that an empty range
  is empty.

One sugar form stays: a range whose step is not a literal. Only the range itself can raise the
`SizeError` "range step is 0" with the position the user expects, so it is kept as a `Range`
node (and the desugar log says so).

Calls of global defs (prelude and user) are inlined by `desugar` when `Options.inline_prelude`
holds, but a call that is left alone is still core: inlining is an optimisation for the later
stages, not a restriction of the IR.

Invariants every core program keeps (`verify_core` checks them): no sugar form is left, every
node has a non-zero id, and no id is used twice (types and facts are keyed by id).
"""
from __future__ import annotations

from typing import Iterable

from ..lang import ast

SUGAR_FORMS = (ast.Comprehension, ast.LeftSection, ast.RightSection)
TYPE_NODES = (ast.TScalar, ast.TArray, ast.TTuple, ast.TFunc, ast.TSeq)
PATTERN_NODES = (ast.PVar, ast.PWild, ast.PTuple)


def is_literal_step(step: ast.Expr | None) -> bool:
    """A range step the desugarer can count with: absent (1) or a non-zero integer literal."""
    if step is None:
        return True
    return isinstance(step, ast.Lit) and not isinstance(step.value, bool) and step.value != 0


# ---------------------------------------------------------------- names

def size_names(t: ast.TypeExpr | None) -> list[str]:
    """The size names (`n` in `[n]i64`) an annotation mentions, in order."""
    out: list[str] = []
    if t is None:
        return out
    for node in ast.walk(t):
        if isinstance(node, ast.TArray) and isinstance(node.size, str) and node.size not in out:
            out.append(node.size)
    return out


def has_sizes(node: ast.Node | None) -> bool:
    """Whether an annotation (or a pattern's annotations) declares a size, named or literal:
    binding a value to it is checked at run time and can fail."""
    return node is not None and any(isinstance(n, ast.TArray) and n.size is not None
                                    for n in ast.walk(node))


def pattern_sizes(p: ast.Pattern) -> list[str]:
    """The size names of every annotation inside a pattern."""
    out: list[str] = []
    for node in ast.walk(p):
        if isinstance(node, PATTERN_NODES):
            out += [n for n in size_names(node.annot) if n not in out]
    return out


def binds(patterns: Iterable[ast.Pattern], bound: frozenset[str],
          with_sizes: bool) -> frozenset[str]:
    """The names patterns bind: their variables, and (lambda, let and def parameters) the
    size names of their annotations that are not already in scope."""
    patterns = list(patterns)
    names = {n for p in patterns for n in ast.pattern_names(p)}
    if with_sizes:
        names |= {n for p in patterns for n in pattern_sizes(p) if n not in bound}
    return bound | names


def free_vars(node: ast.Node, bound: frozenset[str] = frozenset()) -> set[str]:
    """The names a node refers to without binding them: variables, identifier operators, and
    size names of annotations that no enclosing binder binds. Core and sugar forms alike."""
    out: set[str] = set()
    _free(node, bound, out)
    return out


def _sizes_of(p: ast.Pattern | ast.TypeExpr | None, bound: frozenset[str], out: set[str]):
    if p is None:
        return
    names = pattern_sizes(p) if isinstance(p, PATTERN_NODES) else size_names(p)
    out.update(n for n in names if n not in bound)
    out.update(f for node in ast.walk(p) if isinstance(node, ast.TArray)   # `[n * m]t`: uses
               and isinstance(node.size, tuple) for f in node.size
               if isinstance(f, str) and f not in bound)


def _free(e: ast.Node | None, bound: frozenset[str], out: set[str]) -> None:
    if e is None:
        return
    if isinstance(e, ast.Var):
        if e.name not in bound:
            out.add(e.name)
    elif isinstance(e, (ast.OpFunc, ast.LeftSection, ast.RightSection)):
        if e.op.isidentifier() and e.op not in bound:
            out.add(e.op)
        for child in ast.children(e):
            _free(child, bound, out)
    elif isinstance(e, ast.Lambda):
        for p in e.params:
            _sizes_of(p, bound, out)
        _free(e.body, binds(e.params, bound, True), out)
    elif isinstance(e, ast.Let):
        _free(e.value, bound, out)
        _sizes_of(e.pattern, bound, out)
        _free(e.body, binds([e.pattern], bound, True), out)
    elif isinstance(e, ast.Loop):
        _free(e.init, bound, out)
        _sizes_of(e.pattern, bound, out)
        inner = binds([e.pattern], bound, False)
        form = e.form
        if isinstance(form, ast.ForRange):
            _free(form.bound, bound, out)
            inner = inner | {form.var}
        elif isinstance(form, ast.ForIn):
            _free(form.array, bound, out)
            _sizes_of(form.pattern, bound, out)
            inner = binds([form.pattern], inner, False)
        else:
            _free(form.cond, inner, out)
        _free(e.body, inner, out)
    elif isinstance(e, ast.Comprehension):
        visible = set(bound)
        for branch in e.branches:
            scope = bound
            for q in branch:
                if isinstance(q, ast.Guard):
                    _free(q.cond, scope, out)
                    continue
                _free(q.source if isinstance(q, ast.Generator) else q.value, scope, out)
                _sizes_of(q.pattern, scope, out)
                scope = binds([q.pattern], scope, False)
            visible |= scope
        _free(e.body, frozenset(visible), out)
    elif isinstance(e, ast.Ascribe):
        _free(e.expr, bound, out)
        _sizes_of(e.type, bound, out)
    else:
        for child in ast.children(e):
            if not isinstance(child, TYPE_NODES + PATTERN_NODES):
                _free(child, bound, out)


def bound_vars(node: ast.Node) -> set[str]:
    """Every name some binder inside `node` binds (pattern variables, size names, loop
    counters): what a substitution into `node` must not capture."""
    out: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.PVar):
            out.add(sub.name)
        elif isinstance(sub, ast.ForRange):
            out.add(sub.var)
        if isinstance(sub, PATTERN_NODES):
            out.update(size_names(sub.annot))
    return out


# ---------------------------------------------------------------- verification

def verify_core(program: ast.Program) -> list[str]:
    """The problems that keep `program` from being core IR (empty when it is core): sugar
    forms left, `cond` still applied to three arguments, missing or repeated node ids."""
    problems: list[str] = []
    seen: dict[int, ast.Node] = {}
    for form in program.forms:
        for node in ast.walk(form):
            where = node.span.location() if node.span is not None else "?"
            if node.id == 0:
                problems.append(f"{type(node).__name__} at {where} has no id")
            elif node.id in seen and seen[node.id] is not node:
                problems.append(f"id {node.id} is used twice ({type(seen[node.id]).__name__} "
                                f"and {type(node).__name__} at {where})")
            else:
                seen[node.id] = node
            if isinstance(node, SUGAR_FORMS):
                problems.append(f"{type(node).__name__} at {where} is not a core form")
            elif isinstance(node, ast.Range) and is_literal_step(node.step):
                problems.append(f"range at {where} has a literal step and should be "
                                f"`map`+`iota`")
        problems += _cond_calls(form)
    return problems


def _cond_calls(form: ast.TopForm) -> list[str]:
    """`cond c a b` calls of the library `cond` (not of a local variable named `cond`)."""
    problems: list[str] = []

    def visit(e: ast.Node, bound: frozenset[str]) -> None:
        if (isinstance(e, ast.Apply) and isinstance(e.fn, ast.Var) and e.fn.name == "cond"
                and len(e.args) == 3 and "cond" not in bound):
            where = e.span.location() if e.span is not None else "?"
            problems.append(f"`cond` applied at {where} should be an `if`")
        if isinstance(e, ast.Lambda):
            inner = binds(e.params, bound, True)
            visit(e.body, inner)
            return
        if isinstance(e, ast.Let):
            visit(e.value, bound)
            visit(e.body, binds([e.pattern], bound, True))
            return
        if isinstance(e, ast.Loop):
            inner = binds([e.pattern], bound, False)
            if isinstance(e.form, ast.ForRange):
                inner = inner | {e.form.var}
            elif isinstance(e.form, ast.ForIn):
                inner = binds([e.form.pattern], inner, False)
            visit(e.init, bound)
            for child in ast.children(e.form):
                visit(child, inner if isinstance(e.form, ast.While) else bound)
            visit(e.body, inner)
            return
        for child in ast.children(e):
            if not isinstance(child, TYPE_NODES + PATTERN_NODES):
                visit(child, bound)

    if isinstance(form, ast.Def):
        visit(form.body, binds(form.params, frozenset(), True))
    else:
        visit(form.value if isinstance(form, ast.GlobalLet) else form.expr, frozenset())
    return problems
