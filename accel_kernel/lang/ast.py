"""The accel abstract syntax tree, as produced by the parser (stage `parse`).

Every node is a frozen dataclass. Two keyword-only fields are on every node and are left out
of equality, so that `parse(print(ast)) == ast` compares structure only:

- `span`: where the node came from in its `Source`;
- `id`: a number unique within a session, stable through later stages, shown in the views.

Curried application `f x y` is one `Apply(Var f, (x, y))`. Binary operators keep their
spelling in `op` (`"+"`, `"&&"`, `"++"` ...); `(+)` is `OpFunc("+")`, `(+1)` is
`RightSection("+", 1)` and `(2*)` is `LeftSection("*", 2)`.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable, Union

from .source import Span


@dataclass(frozen=True)
class Node:
    span: Span | None = field(default=None, compare=False, repr=False, kw_only=True)
    id: int = field(default=0, compare=False, repr=False, kw_only=True)


# ---------------------------------------------------------------- type expressions (syntax)

@dataclass(frozen=True)
class TScalar(Node):
    name: str                       # a scalar type: bool i32 i64 f32 f64 i8 ... u64


@dataclass(frozen=True)
class TArray(Node):
    elem: "TypeExpr"
    size: "Size" = None             # [n]t, [3]t, []t, or [n * m]t: ("n", "m")


@dataclass(frozen=True)
class TTuple(Node):
    elems: tuple["TypeExpr", ...]


@dataclass(frozen=True)
class TFunc(Node):
    param: "TypeExpr"
    result: "TypeExpr"


@dataclass(frozen=True)
class TSeq(Node):
    elem: "TypeExpr"


TypeExpr = Union[TScalar, TArray, TTuple, TFunc, TSeq]
# An array's size in an annotation: a name (bound by the annotation, or an integer variable in
# scope), a literal, a product of those (`[n * m]t`: checked against variables in scope, never
# bound), or None (`[]t`).
Size = Union[str, int, tuple[Union[str, int], ...], None]


# ---------------------------------------------------------------- patterns

@dataclass(frozen=True)
class PVar(Node):
    name: str
    annot: TypeExpr | None = None   # (x: t)


@dataclass(frozen=True)
class PWild(Node):
    annot: TypeExpr | None = None   # _ or (_: t)


@dataclass(frozen=True)
class PTuple(Node):
    elems: tuple["Pattern", ...]
    annot: TypeExpr | None = None   # ((a, b): (i64, f64))


Pattern = Union[PVar, PWild, PTuple]


# ---------------------------------------------------------------- expressions

@dataclass(frozen=True)
class Lit(Node):
    """A scalar literal. `value` is a Python bool, int or float; `type` its scalar type name."""
    value: bool | int | float
    type: str                       # its scalar type (types.SCALARS)


@dataclass(frozen=True)
class Var(Node):
    name: str


@dataclass(frozen=True)
class ArrayLit(Node):
    elems: tuple["Expr", ...]


@dataclass(frozen=True)
class Range(Node):
    """`[start..<end]` (inclusive=False), `[start..end]` (inclusive=True), optional `by step`."""
    start: "Expr"
    end: "Expr"
    inclusive: bool
    step: "Expr | None" = None


@dataclass(frozen=True)
class TupleLit(Node):
    elems: tuple["Expr", ...]       # at least two


@dataclass(frozen=True)
class Project(Node):
    expr: "Expr"
    index: int                      # t.0


@dataclass(frozen=True)
class Index(Node):
    expr: "Expr"
    index: "Expr"                   # xs[i]


@dataclass(frozen=True)
class Slice(Node):
    expr: "Expr"
    lo: "Expr | None"               # xs[i:j], xs[i:], xs[:j]
    hi: "Expr | None"
    step: "Expr | None" = None      # xs[i:j:s], xs[::-1] (docs/language.md, "Slices")


@dataclass(frozen=True)
class BinOp(Node):
    op: str
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True)
class UnOp(Node):
    op: str                         # "-" or "!"
    operand: "Expr"


@dataclass(frozen=True)
class Apply(Node):
    fn: "Expr"
    args: tuple["Expr", ...]        # at least one


@dataclass(frozen=True)
class OpFunc(Node):
    op: str                         # (+)


@dataclass(frozen=True)
class LeftSection(Node):
    op: str
    left: "Expr"                    # (2*)  ==  \y -> 2 * y


@dataclass(frozen=True)
class RightSection(Node):
    op: str
    right: "Expr"                   # (+1)  ==  \x -> x + 1


@dataclass(frozen=True)
class Lambda(Node):
    params: tuple[Pattern, ...]
    body: "Expr"


@dataclass(frozen=True)
class Let(Node):
    pattern: Pattern
    value: "Expr"
    body: "Expr"


@dataclass(frozen=True)
class If(Node):
    cond: "Expr"
    then: "Expr"
    else_: "Expr"


@dataclass(frozen=True)
class ForRange(Node):
    var: str                        # for i < n
    bound: "Expr"


@dataclass(frozen=True)
class ForIn(Node):
    pattern: Pattern                # for x in xs
    array: "Expr"


@dataclass(frozen=True)
class While(Node):
    cond: "Expr"                    # while c


LoopForm = Union[ForRange, ForIn, While]


@dataclass(frozen=True)
class Loop(Node):
    pattern: Pattern
    init: "Expr"
    form: LoopForm
    body: "Expr"


@dataclass(frozen=True)
class Update(Node):
    array: "Expr"
    indices: tuple["Expr", ...]     # xs with [i][j] = v
    value: "Expr"


@dataclass(frozen=True)
class Ascribe(Node):
    expr: "Expr"
    type: TypeExpr                  # (e : t)


@dataclass(frozen=True)
class Generator(Node):
    pattern: Pattern                # p <- e
    source: "Expr"


@dataclass(frozen=True)
class Guard(Node):
    cond: "Expr"


@dataclass(frozen=True)
class LetQual(Node):
    pattern: Pattern                # let p = e
    value: "Expr"


Qualifier = Union[Generator, Guard, LetQual]


@dataclass(frozen=True)
class Comprehension(Node):
    """`[body | q1, q2 | q3]`: `branches` has one qualifier list per `|`; more than one zips."""
    body: "Expr"
    branches: tuple[tuple[Qualifier, ...], ...]


Expr = Union[Lit, Var, ArrayLit, Range, TupleLit, Project, Index, Slice, BinOp, UnOp, Apply,
             OpFunc, LeftSection, RightSection, Lambda, Let, If, Loop, Update, Ascribe,
             Comprehension]


# ---------------------------------------------------------------- top level

@dataclass(frozen=True)
class Def(Node):
    """`def name p1 p2 : t = body`; a constant when `params` is empty."""
    name: str
    params: tuple[Pattern, ...]
    result: TypeExpr | None
    body: Expr


@dataclass(frozen=True)
class GlobalLet(Node):
    pattern: Pattern
    value: Expr


@dataclass(frozen=True)
class TopExpr(Node):
    expr: Expr


TopForm = Union[Def, GlobalLet, TopExpr]


@dataclass(frozen=True)
class Program(Node):
    forms: tuple[TopForm, ...]


# ---------------------------------------------------------------- helpers

def children(node: Node) -> list[Node]:
    """The direct sub-nodes of a node, in source order (types included)."""
    out: list[Node] = []
    for name in node.__dataclass_fields__:
        if name in ("span", "id"):
            continue
        value = getattr(node, name)
        _collect(value, out)
    return out


def _collect(value: object, out: list[Node]) -> None:
    if isinstance(value, Node):
        out.append(value)
    elif isinstance(value, tuple):
        for item in value:
            _collect(item, out)


def walk(node: Node):
    """All nodes under (and including) `node`, pre-order. Without recursion: a deep tree
    (`1 + 1 + ... + 1`, nested to the left) costs no more than a wide one."""
    pending = [node]
    while pending:
        current = pending.pop()
        yield current
        pending += reversed(children(current))


def pattern_names(pattern: Pattern) -> list[str]:
    """The variables a pattern binds, left to right."""
    if isinstance(pattern, PVar):
        return [pattern.name]
    if isinstance(pattern, PTuple):
        return [name for p in pattern.elems for name in pattern_names(p)]
    return []


# ---------------------------------------------------------------- rebuilding

_FIELDS: dict[type, tuple[str, ...]] = {}


def node_fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in fields(cls) if f.name not in ("span", "id"))
        _FIELDS[cls] = names
    return names


def map_value(value: Any, fn: Callable[[Node], Node]) -> Any:
    if isinstance(value, Node):
        return fn(value)
    if isinstance(value, tuple):
        items = tuple(map_value(v, fn) for v in value)
        return value if all(a is b for a, b in zip(items, value)) else items
    return value


def map_children(node: Node, fn: Callable[[Node], Node]) -> Node:
    """`node` with `fn` applied to each direct sub-node; the same object when nothing changed
    (so an untouched program stays equal and keeps its ids)."""
    changes = {}
    for name in node_fields(type(node)):
        value = getattr(node, name)
        new = map_value(value, fn)
        if new is not value:
            changes[name] = new
    return replace(node, **changes) if changes else node
