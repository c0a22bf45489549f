"""The scalar IR: the first-order form of a map's function, what the scalar translators read.

A `ScalarFunc` is what a flat `ScalarFn` (a lambda in core accel, `ir/flat.py`) becomes once
its argument types are known (`ir/scalar_lower.py`): typed parameters, a body, and the free
variables of the enclosing block it reads, with their representations. No function values
are left: lambdas, operator sections, partial applications and builtins used as values were
reduced at lowering. Every node has its scalar type (`"bool" "i32" "i64" "f32" "f64"` or a
tuple of them) and the span of the accel code it came from.

    Var, Const                     a parameter, a let- or loop-bound name; a literal
    Unary, Binary                  `-x`, `!x`; `a + b`, with `&&`, `||` short-circuit
    Call                           a scalar builtin by name: `min a b`, `sqrt x`, `i32 x`
    If, Let                        `let` binds a name or a tuple of names (`Target`)
    Loop                           `loop s = init for i < n do body`, `... while c do body`
    Tuple, Project                 `(a, b)`, `t.0`
    Free, Index, Length            reads of the free variables: a scalar, an element of an
                                   array (all its indices at once), the length of an array

Free variables are addressed by name and a *path*: the tuple parts to choose, from the top
of the variable's representation down to one leaf (a scalar or a `Regular` array). Names are
unique in a function (lowering renames), so a translator may keep them as they are.

`print_func` writes the function as core accel (`\\(x: i64) -> ...`), which the parser
reads back; `verify` checks the types.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Union

from ..lang import ast
from ..lang import scalar_ops as ops
from ..lang.printer import print_expr
from ..lang.source import Span
from .flat import FVar, Regular, Rep, ScalarRep, Segmented, TupleRep

ScalarType = Union[str, tuple["ScalarType", ...]]
Target = Union[str, tuple["Target", ...]]       # what a let or a loop binds
Path = tuple[int, ...]

SCALARS = ops.SCALARS
COMPARISONS = ops.COMPARISONS
SHORT_CIRCUIT = ("&&", "||")


def _span() -> Span | None:
    return field(default=None, compare=False, repr=False, kw_only=True)


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Var:
    name: str
    type: ScalarType
    span: Span | None = _span()


@dataclass(frozen=True)
class Const:
    value: bool | int | float
    type: str
    span: Span | None = _span()


@dataclass(frozen=True)
class Unary:
    op: str                                   # "-" or "!"
    operand: "Expr"
    type: str
    span: Span | None = _span()


@dataclass(frozen=True)
class Binary:
    op: str                                   # && and || evaluate `right` only if needed
    left: "Expr"
    right: "Expr"
    type: str
    span: Span | None = _span()


@dataclass(frozen=True)
class Call:
    name: str                                 # a scalar builtin: min max abs sqrt ... i32
    args: tuple["Expr", ...]
    type: str
    span: Span | None = _span()


@dataclass(frozen=True)
class If:
    cond: "Expr"
    then: "Expr"
    else_: "Expr"
    type: ScalarType
    span: Span | None = _span()


@dataclass(frozen=True)
class Let:
    target: Target
    value: "Expr"
    body: "Expr"
    type: ScalarType
    span: Span | None = _span()


@dataclass(frozen=True)
class ForRange:
    var: str                                  # 0, 1, ... bound - 1, of the bound's type
    bound: "Expr"


@dataclass(frozen=True)
class While:
    cond: "Expr"                              # sees the state


@dataclass(frozen=True)
class Loop:
    state: Target
    init: "Expr"
    form: Union[ForRange, While]
    body: "Expr"                              # the next state
    type: ScalarType
    span: Span | None = _span()


@dataclass(frozen=True)
class Tuple:
    elems: tuple["Expr", ...]
    type: tuple
    span: Span | None = _span()


@dataclass(frozen=True)
class Project:
    expr: "Expr"
    index: int
    type: ScalarType
    span: Span | None = _span()


@dataclass(frozen=True)
class Free:
    """A scalar part of a free variable (`n`, `t.1` of a free `t`)."""
    name: str
    path: Path
    type: str
    span: Span | None = _span()


@dataclass(frozen=True)
class Index:
    """An element of a free array (`xs[i]`, `xss[i][j]`): one index per dimension of a
    Regular leaf, two per Segmented level. Each index is bounds checked at its own span
    (`spans`), unless `checked` is False (the index is known to be in bounds)."""
    name: str
    path: Path
    indices: tuple["Expr", ...]
    spans: tuple[Span | None, ...] = field(compare=False, repr=False)
    type: str
    checked: bool = True
    span: Span | None = _span()


@dataclass(frozen=True)
class Length:
    """The number of elements (rows) of a free array: `length xs`."""
    name: str
    path: Path
    type: str = "i64"
    span: Span | None = _span()


Expr = Union[Var, Const, Unary, Binary, Call, If, Let, Loop, Tuple, Project, Free, Index,
             Length]


@dataclass(frozen=True)
class Param:
    name: str
    type: ScalarType


@dataclass(frozen=True)
class ScalarFunc:
    """`\\params -> body`, reading `free` (variables of the enclosing block)."""
    params: tuple[Param, ...]
    body: Expr
    free: tuple[FVar, ...] = ()

    @property
    def type(self) -> ScalarType:
        return self.body.type

    def free_reps(self) -> dict[str, Rep]:
        return {v.name: v.rep for v in self.free}

    def __repr__(self) -> str:
        return print_func(self)


# ---------------------------------------------------------------- free variables


def leaf_rep(rep: Rep, path: Path) -> Rep:
    """The part of `rep` that `path` chooses (through the values of Segmented levels)."""
    for k in path:
        while isinstance(rep, Segmented):
            rep = rep.inner
        assert isinstance(rep, TupleRep), f"path {path} into {rep}"
        rep = rep.parts[k]
    return rep


def part(value: object, path: Path) -> object:
    """The part of a free variable's value (a tuple, for a TupleRep) that `path` chooses."""
    for k in path:
        value = value[k]      # type: ignore[index]
    return value


def depth(rep: Rep) -> int:
    """How many indices reach an element of an array of representation `rep`."""
    if isinstance(rep, Segmented):
        return 1 + depth(rep.inner)
    if isinstance(rep, TupleRep):
        return depth(rep.parts[0])
    return rep.rank if isinstance(rep, Regular) else 0


def leaves(t: ScalarType) -> list[str]:
    return [leaf for part in t for leaf in leaves(part)] if isinstance(t, tuple) else [t]


@functools.lru_cache(maxsize=4096)
def var_names(node: object) -> frozenset[str]:
    """Every variable name an expression (or loop form) mentions, bound inside it or not: a
    lane evaluator restricts only these to the lanes a branch runs on."""
    if isinstance(node, Var):
        return frozenset((node.name,))
    names: set[str] = set()
    for f in fields(node) if is_dataclass(node) else ():
        value = getattr(node, f.name)
        for part in value if isinstance(value, tuple) else (value,):
            if is_dataclass(part):
                names |= var_names(part)
    return frozenset(names)


def fresh_name(base: str, used: set[str]) -> str:
    """A name not in `used` (`base` itself, else `base_1`, `base_2`, ...), added to it: the
    lowering's and the source writers' one way to name a variable."""
    name, k = base, 0
    while name in used:
        k += 1
        name = f"{base}_{k}"
    used.add(name)
    return name


def target_names(target: Target) -> list[str]:
    if isinstance(target, tuple):
        return [name for part in target for name in target_names(part)]
    return [target]


# ---------------------------------------------------------------- the printer


def accel_type(t: ScalarType) -> ast.TypeExpr:
    if isinstance(t, tuple):
        return ast.TTuple(tuple(accel_type(p) for p in t))
    return ast.TScalar(t)


def rep_type(rep: Rep) -> ast.TypeExpr:
    """The accel type of a free variable as the printed function reads it: a TupleRep is a
    tuple (`xs.0[i]`), a rank-r Regular is r nested arrays."""
    if isinstance(rep, ScalarRep):
        return ast.TScalar(rep.elem)
    if isinstance(rep, TupleRep):
        return ast.TTuple(tuple(rep_type(p) for p in rep.parts))
    if isinstance(rep, Segmented):
        return ast.TArray(rep_type(rep.inner))
    t: ast.TypeExpr = ast.TScalar(rep.elem)
    for _ in range(rep.rank):
        t = ast.TArray(t)
    return t


def _target_pattern(target: Target) -> ast.Pattern:
    if isinstance(target, tuple):
        return ast.PTuple(tuple(_target_pattern(t) for t in target))
    return ast.PVar(target)


def _free_ref(name: str, path: Path, rep: Rep | None) -> tuple[ast.Expr, Path]:
    """The accel expression for the top-level tuple parts of `path`, and the rest of the
    path (tuple parts inside the array's elements, projected after indexing)."""
    expr: ast.Expr = ast.Var(name)
    k = 0
    while k < len(path) and (rep is None or isinstance(rep, TupleRep)):
        expr = ast.Project(expr, path[k])
        rep = rep.parts[path[k]] if rep is not None else None
        k += 1
    return expr, path[k:]


def _const_ast(node: Const) -> ast.Expr:
    value = node.value
    if node.type in ("f32", "f64") and not math.isfinite(value):
        if math.isnan(value):
            return ast.BinOp("/", ast.Lit(0.0, node.type), ast.Lit(0.0, node.type))
        name = "highest" if value > 0 else "lowest"
        return ast.Ascribe(ast.Var(name), ast.TScalar(node.type))
    return ast.Lit(value, node.type)


def to_ast(node: Expr, reps: dict[str, Rep] | None = None) -> ast.Expr:
    """The expression as core accel (what the printer prints)."""
    reps = reps or {}

    def go(e: Expr) -> ast.Expr:
        if isinstance(e, Var):
            return ast.Var(e.name)
        if isinstance(e, Const):
            return _const_ast(e)
        if isinstance(e, Unary):
            return ast.UnOp(e.op, go(e.operand))
        if isinstance(e, Binary):
            return ast.BinOp(e.op, go(e.left), go(e.right))
        if isinstance(e, Call):
            return ast.Apply(ast.Var(e.name), tuple(go(a) for a in e.args))
        if isinstance(e, If):
            return ast.If(go(e.cond), go(e.then), go(e.else_))
        if isinstance(e, Let):
            return ast.Let(_target_pattern(e.target), go(e.value), go(e.body))
        if isinstance(e, Loop):
            form = (ast.ForRange(e.form.var, go(e.form.bound)) if isinstance(e.form, ForRange)
                    else ast.While(go(e.form.cond)))
            return ast.Loop(_target_pattern(e.state), go(e.init), form, go(e.body))
        if isinstance(e, Tuple):
            return ast.TupleLit(tuple(go(x) for x in e.elems))
        if isinstance(e, Project):
            return ast.Project(go(e.expr), e.index)
        if isinstance(e, Free):
            return _free_ref(e.name, e.path, None)[0]
        if isinstance(e, Index):
            out, inner = _free_ref(e.name, e.path, reps.get(e.name))
            for index in e.indices:
                out = ast.Index(out, go(index))
            for k in inner:
                out = ast.Project(out, k)
            return out
        if isinstance(e, Length):
            return ast.Apply(ast.Var("length"), (_free_ref(e.name, e.path, reps.get(e.name))[0],))
        raise TypeError(f"not a scalar IR node: {e!r}")

    return go(node)


def print_expr_ir(node: Expr, reps: dict[str, Rep] | None = None) -> str:
    return print_expr(to_ast(node, reps))


def print_func(func: ScalarFunc) -> str:
    """`\\(x: i64) (y: f64) -> body`: core accel with typed parameters (the body alone for a
    function without parameters)."""
    body = to_ast(func.body, func.free_reps())
    if not func.params:
        return print_expr(body)
    params = tuple(ast.PVar(p.name, accel_type(p.type)) for p in func.params)
    return print_expr(ast.Lambda(params, body))


# ---------------------------------------------------------------- types
# The type rules are the table of scalar semantics' (`lang/scalar_ops.py`).

INTS, FLOATS = ops.INTS, ops.FLOATS
FUNCTION_ARITY = {name: e.arity for name, e in ops.FUNCTIONS.items()}
CONSTANTS = {name: Const(ops.constant_value(name, e.result), e.result)
             for name, e in ops.BUILTINS.items() if e.form == ops.CONSTANT and e.result != "a"}
BINARY_OPERATORS = tuple(ops.BINARY_OPS)


def _apply_rule(entry: ops.ScalarOp, what: str, args: list[ScalarType]) -> str:
    """The result type of `entry` applied to arguments of types `args` (its rule's type
    variable `a` stands for one scalar type of its class), or a ValueError."""
    if len(args) != entry.arity:
        raise ValueError(f"{what} takes {entry.arity} arguments")
    bound = {args[k] for k, p in enumerate(entry.params) if p == "a"}
    if any(isinstance(t, tuple) for t in args) or len(bound) > 1 or any(
            p != "a" and p != t for p, t in zip(entry.params, args)):
        raise ValueError(f"{what} on {' and '.join(map(str, args))}: the types must agree")
    a = bound.pop() if bound else args[0]
    if not entry.takes(a):
        raise ValueError(f"{what} is not defined on {a}")
    return entry.result_type(a)


def binary_type(op: str, left: ScalarType, right: ScalarType) -> str:
    """The type of `a op b`, or a ValueError (the operands must have one scalar type)."""
    return _apply_rule(ops.BINARY_OPS[op], f"operator {op}", [left, right])


def unary_type(op: str, operand: ScalarType) -> str:
    return _apply_rule(ops.UNARY_OPS[op], f"unary {op}", [operand])


def call_type(name: str, args: list[ScalarType]) -> ScalarType:
    """The type of a scalar builtin's result."""
    return _apply_rule(ops.FUNCTIONS[name], f"`{name}`", args)


def check_type(node: Expr, want: ScalarType, what: str) -> None:
    if node.type != want:
        raise ValueError(f"{what}: {node.type} where {want} is needed")


def verify(func: ScalarFunc) -> None:
    """Every node's type agrees with its operands' and every name is bound (a ValueError
    names what is wrong)."""
    reps = func.free_reps()
    scope: dict[str, ScalarType] = {name: rep.elem for name, rep in reps.items()
                                    if isinstance(rep, ScalarRep)}
    scope.update({p.name: p.type for p in func.params})

    def bind(target: Target, t: ScalarType, into: dict) -> dict:
        if isinstance(target, tuple):
            if not isinstance(t, tuple) or len(t) != len(target):
                raise ValueError(f"the tuple target {target} bound to a {t}")
            for sub, part in zip(target, t):
                bind(sub, part, into)
        else:
            into[target] = t
        return into

    def go(e: Expr, env: dict) -> None:
        if isinstance(e, Var):
            if env.get(e.name) != e.type:
                raise ValueError(f"`{e.name}` of type {e.type} is not bound with that type")
        elif isinstance(e, (Free, Index, Length)):
            if e.name not in reps:
                raise ValueError(f"`{e.name}` is not a free variable")
            for index in getattr(e, "indices", ()):
                go(index, env)
        elif isinstance(e, (Unary, Binary, Call)):
            operands = ((e.operand,) if isinstance(e, Unary) else
                        (e.left, e.right) if isinstance(e, Binary) else e.args)
            for x in operands:
                go(x, env)
            types = [x.type for x in operands]
            want = (unary_type(e.op, *types) if isinstance(e, Unary) else
                    binary_type(e.op, *types) if isinstance(e, Binary) else
                    call_type(e.name, types))
            if want != e.type:
                raise ValueError(f"{e!r} has type {e.type}, its operands give {want}")
        elif isinstance(e, If):
            go(e.cond, env), go(e.then, env), go(e.else_, env)
            check_type(e.cond, "bool", "the condition of an if")
            check_type(e.then, e.type, "an if's branch")
            check_type(e.else_, e.type, "an if's branch")
        elif isinstance(e, Let):
            go(e.value, env)
            go(e.body, bind(e.target, e.value.type, dict(env)))
            check_type(e.body, e.type, "a let's body")
        elif isinstance(e, Loop):
            go(e.init, env)
            check_type(e.init, e.type, "a loop's initial state")
            inner = bind(e.state, e.type, dict(env))
            if isinstance(e.form, ForRange):
                go(e.form.bound, env)
                inner[e.form.var] = e.form.bound.type
            else:
                go(e.form.cond, inner)
                check_type(e.form.cond, "bool", "a while condition")
            go(e.body, inner)
            check_type(e.body, e.type, "a loop's body")
        elif isinstance(e, Tuple):
            for x in e.elems:
                go(x, env)
            if e.type != tuple(x.type for x in e.elems):
                raise ValueError(f"a tuple of type {e.type}")
        elif isinstance(e, Project):
            go(e.expr, env)
            if not isinstance(e.expr.type, tuple) or e.expr.type[e.index] != e.type:
                raise ValueError(f"projection .{e.index} of a {e.expr.type}")

    go(func.body, scope)
