"""Building blocks of the `desugar` stage: scopes, and a builder of new nodes.

- `Scope` follows accel's lexical scoping while desugaring. It maps each visible source name to
  a `Binding`: the name it has in the output (a binder may be renamed), or what it stands for
  when an inlined parameter was substituted (a literal, a global). It also keeps `outs`, the
  output names of every enclosing binder, visible or not: a global name that the generated code
  refers to (`map`, or a global used by an inlined body) must not be one of them, or it would be
  captured. That is reported by raising `Shadowed`, which the nearest binder of that name
  catches: it renames itself and desugars its scope again.
- `Builder` makes new nodes, each with a fresh id and the span of the source node it comes
  from, and deep copies with fresh ids (a def body inlined twice, an expression used twice).
  It remembers which input node each copy came from, so the input's types still apply.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..lang import ast
from ..lang.ast import map_children, map_value, node_fields  # noqa: F401  (used here and by other passes)
from ..lang.source import Span
from ..lang.types import Type
from .base import PassContext


class Shadowed(Exception):
    """Generated code must name the global `name`, but an enclosing binder has that name."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


class Redefined(Exception):
    """Generated code must name the library's `name`, but the program redefines it globally:
    no renaming can help, so the form is left as it is."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


@dataclass(frozen=True)
class Binding:
    """What a visible source name means in the output."""
    out: str | None = None            # a local variable, named so in the output
    type: Type | None = None          # its type in the input, when known
    global_name: str | None = None    # an inlined parameter that stands for this global
    literal: ast.Lit | None = None    # an inlined parameter that stands for this literal


class Scope:
    __slots__ = ("names", "outs")

    def __init__(self, names: dict[str, Binding] | None = None,
                 outs: frozenset[str] = frozenset()):
        self.names = names or {}
        self.outs = outs

    def get(self, name: str) -> Binding | None:
        return self.names.get(name)

    def extend(self, bindings: dict[str, Binding]) -> "Scope":
        if not bindings:
            return self
        outs = {b.out for b in bindings.values() if b.out is not None}
        return Scope({**self.names, **bindings}, self.outs | outs)

    def hide(self, bindings: dict[str, Binding]) -> "Scope":
        """The scope of an inlined body: only its parameters are visible, but the caller's
        binders still enclose it."""
        outs = {b.out for b in bindings.values() if b.out is not None}
        return Scope(dict(bindings), self.outs | outs)

    def taken(self, rebound: set[str]) -> set[str]:
        """Output names of the visible variables a binder of `rebound` does not hide."""
        return {b.out for k, b in self.names.items() if k not in rebound and b.out is not None}


EMPTY = Scope()

# Library functions the generated code calls by name.
LIBRARY_NAMES = frozenset({"map", "filter", "expand", "flatten", "zip", "zip3", "iota", "max",
                           "min"})



class Builder:
    """New nodes with fresh ids; copies remember their origin (for the input's types)."""

    def __init__(self, ctx: PassContext):
        self.ctx = ctx
        self.origin: dict[int, int] = {}
        self.copied = 0                   # nodes copied so far (the inlining budget)

    def new(self, cls: type, *args: Any, span: Span | None) -> Any:
        return cls(*args, span=span, id=self.ctx.fresh_id())

    def copy(self, node: Any) -> Any:
        """A deep copy with a fresh id on every node and the original spans."""
        values = {name: map_value(getattr(node, name), self.copy)
                  for name in node_fields(type(node))}
        new = type(node)(**values, span=node.span, id=self.ctx.fresh_id())
        self.origin[new.id] = self.origin.get(node.id, node.id)
        self.copied += 1
        return new

    def type_of(self, node: ast.Node) -> Type | None:
        return self.ctx.types.get(self.origin.get(node.id, node.id))

    # -- small constructors

    def var(self, name: str, span: Span | None) -> ast.Var:
        return self.new(ast.Var, name, span=span)

    def lit(self, value: int, span: Span | None) -> ast.Lit:
        return self.new(ast.Lit, value, "i64", span=span)

    def pvar(self, name: str, span: Span | None) -> ast.PVar:
        return self.new(ast.PVar, name, span=span)

    def apply(self, fn: ast.Expr, args: list[ast.Expr], span: Span | None) -> ast.Apply:
        return self.new(ast.Apply, fn, tuple(args), span=span)

    def lam(self, params: list[ast.Pattern], body: ast.Expr, span: Span | None) -> ast.Lambda:
        return self.new(ast.Lambda, tuple(params), body, span=span)

    def let(self, pattern: ast.Pattern, value: ast.Expr, body: ast.Expr,
            span: Span | None) -> ast.Let:
        return self.new(ast.Let, pattern, value, body, span=span)

    def tuple_of(self, elems: list[ast.Expr], span: Span | None) -> ast.Expr:
        return elems[0] if len(elems) == 1 else self.new(ast.TupleLit, tuple(elems), span=span)

    def binop(self, op: str, left: ast.Expr, right: ast.Expr, span: Span | None) -> ast.BinOp:
        return self.new(ast.BinOp, op, left, right, span=span)

    def add(self, left: ast.Expr, k: int, span: Span | None) -> ast.Expr:
        """`left + k`, folded when `k` is 0 or `left` a literal."""
        if k == 0:
            return left
        if is_int_lit(left):
            return self.lit(left.value + k, span)
        if k < 0:
            return self.binop("-", left, self.lit(-k, span), span)
        return self.binop("+", left, self.lit(k, span), span)

    def sub(self, left: ast.Expr, right: ast.Expr, span: Span | None) -> ast.Expr:
        """`left - right`, folded when `right` is the literal 0."""
        if is_int_lit(right) and right.value == 0:
            return left
        return self.binop("-", left, right, span)

    def rebuild(self, pattern: ast.Pattern, span: Span | None) -> ast.Expr:
        """The value a wildcard-free pattern matched, as an expression."""
        if isinstance(pattern, ast.PVar):
            return self.var(pattern.name, span)
        assert isinstance(pattern, ast.PTuple), pattern
        return self.new(ast.TupleLit, tuple(self.rebuild(p, span) for p in pattern.elems),
                        span=span)


def is_int_lit(e: ast.Node) -> bool:
    return isinstance(e, ast.Lit) and e.type == "i64" and not isinstance(e.value, bool)
