"""Lowering a flat `ScalarFn` (a lambda in core accel) to the first-order scalar IR.

    lower(fn, arg_types, free, target) -> ScalarFunc       # ir/scalar.py

`arg_types` are the types of the arguments the function is applied to (more than it has
parameters when its body is itself a function: `\\x -> (+) x`), `free` the representations
of its free variables. Both come from where the function is applied (a `Map`'s arguments, a
reduction's neutral element, a kernel's loop): that is why the back ends lower, through this
one entry point, and not `flatten` (docs/flat.md).

Function values exist only here, while lowering: lambdas (`Closure`), builtins and operators
used as values (`Builtin`), operator sections and partial applications (`Partial`). Every
application is beta-reduced: an argument is bound by a `Let` to a fresh name (a variable or
a literal is substituted), so it is evaluated once, where the source evaluates it. Free
arrays are `ArrayRef`s; reading one gives `Index`/`Length` nodes. Type constants (`zero :
f64`) become constants, `for x in xs` a `for k < length xs` loop reading `xs[k]`.

What cannot be made first-order (a function or an array as a result, a loop state or an `if`
choice; indexing anything but a free array) raises `NotImplementedError("<target>: ... in
scalar code is not built yet")`; an ill-typed function (a compiler bug) raises `ValueError`.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..lang import ast
from ..lang import scalar_ops as ops
from ..lang.printer import print_expr
from ..lang.source import Span
from . import scalar as S
from .flat import FVar, Regular, Rep, ScalarFn, ScalarRep, Segmented, TupleRep

TYPE_CONSTANTS = ops.TYPE_CONSTANTS


def type_constant(name: str, t: str) -> S.Const:
    """`zero`, `one`, `lowest`, `highest` of a numeric type."""
    try:
        value = ops.constant_value(name, t)
    except TypeError:
        raise ValueError(f"`{name}` needs a numeric type, got {t}") from None
    return S.Const(float(value) if t in S.FLOATS else value, t)


# ---------------------------------------------------------------- values while lowering


@dataclass(frozen=True)
class ArrayRef:
    name: str
    path: S.Path
    rep: Rep                      # Regular or Segmented


@dataclass(frozen=True, eq=False)
class Closure:
    params: tuple[ast.Pattern, ...]
    body: ast.Expr
    env: dict


@dataclass(frozen=True, eq=False)
class Builtin:
    """A scalar function (`min`), `length`, or with `operator` a binary operator (`(+)`)."""
    name: str
    arity: int
    operator: bool = False
    flipped: bool = False
    span: Span | None = None


@dataclass(frozen=True, eq=False)
class Partial:
    fn: Any
    args: tuple


@dataclass(frozen=True, eq=False)
class Bound:
    """A function value that needs `lets` evaluated first (`(\\x -> \\y -> x + y) (a * b)`
    binds x before it gives the inner function)."""
    lets: tuple
    value: Any


def _is_data(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_is_data(v) for v in value)
    return not isinstance(value, (ArrayRef, Closure, Builtin, Partial, Bound))


def _atomic(e: Any) -> bool:
    return isinstance(e, (S.Var, S.Const, S.Free))


def _type_of(value: Any) -> S.ScalarType:
    if isinstance(value, tuple):
        return tuple(_type_of(v) for v in value)
    return value.type


def to_expr(value: Any, span: Span | None = None) -> S.Expr:
    """A data value (an IR expression or a Python tuple of them) as one expression."""
    if isinstance(value, tuple):
        elems = tuple(to_expr(v, span) for v in value)
        return S.Tuple(elems, tuple(e.type for e in elems), span=span)
    return value


def _array_leaves(value: Any) -> list[ArrayRef]:
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _array_leaves(v)]
    return [value] if isinstance(value, ArrayRef) else []


def _is_array(value: Any) -> bool:
    while isinstance(value, tuple) and value:
        value = value[0]
    return isinstance(value, ArrayRef)


# ---------------------------------------------------------------- the entry point

_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 512


def lower(fn: ScalarFn, arg_types: Sequence[S.ScalarType], free: Mapping[str, Rep],
          target: str = "scalar") -> S.ScalarFunc:
    """`fn` applied to arguments of `arg_types`, first-order. Cached per function object
    (not per value: equal functions may carry other spans)."""
    key = (id(fn), tuple(arg_types), tuple(free.items()), target)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is fn:
        _CACHE.move_to_end(key)
        return hit[1]
    func = _Lowering(fn, free, target).function(list(arg_types))
    _CACHE[key] = (fn, func)
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return func


class _Lowering:
    def __init__(self, fn: ScalarFn, free: Mapping[str, Rep], target: str):
        self.fn = fn
        self.target = target
        self.free_reps = dict(free)
        self.used = set(free) | set(S.FUNCTION_ARITY) | set(TYPE_CONSTANTS) | {
            "length", "pi", "loop", "for", "while", "do", "let", "in", "if", "then", "else"}
        self.free = {name: self._free_value(name, rep, ()) for name, rep in free.items()}

    def not_built(self, what: str) -> NotImplementedError:
        return NotImplementedError(f"{self.target}: {what} in scalar code is not built yet")

    def fresh(self, base: str) -> str:
        return S.fresh_name(base, self.used)

    def _free_value(self, name: str, rep: Rep, path: S.Path) -> Any:
        if isinstance(rep, TupleRep):
            return tuple(self._free_value(name, part, (*path, k))
                         for k, part in enumerate(rep.parts))
        if isinstance(rep, ScalarRep):
            return S.Var(name, rep.elem) if not path else S.Free(name, path, rep.elem)
        return ArrayRef(name, path, rep)

    # ------------------------------------------------------------------ the function

    def function(self, arg_types: list[S.ScalarType]) -> S.ScalarFunc:
        fn = self.fn
        if len(arg_types) < len(fn.params):
            raise ValueError(f"{len(fn.params)} parameters but {len(arg_types)} argument "
                             f"types")
        env: dict[str, Any] = {}
        params: list[S.Param] = []
        lets: list = []
        extra: list[Any] = []
        for k, arg_type in enumerate(arg_types):
            pattern = fn.params[k] if k < len(fn.params) else None
            name = self.fresh(pattern.name if isinstance(pattern, ast.PVar) else f"p{k}")
            params.append(S.Param(name, arg_type))
            value = S.Var(name, arg_type)
            if pattern is None:
                extra.append(value)
            elif isinstance(pattern, ast.PVar):
                env[pattern.name] = value
            else:     # a tuple pattern gets a variable per component
                self.bind(pattern, value, env, lets)
        result = self.expr(fn.body, env)
        if extra:
            result = self.call(result, extra, fn.body.span)
        if not _is_data(result):
            raise self.not_built("a result that is a function or an array")
        body = self.wrap(lets, to_expr(result, fn.body.span))
        free = tuple(FVar(name, rep) for name, rep in self.free_reps.items())
        return S.ScalarFunc(tuple(params), body, free)

    # ------------------------------------------------------------------ binding

    def bind(self, pattern: ast.Pattern, value: Any, env: dict, lets: list) -> None:
        """Binds `pattern` to `value` in `env` (in place); an expression to keep gets a
        `Let` (appended to `lets`, to wrap around what follows)."""
        if isinstance(value, Bound):
            lets.extend(value.lets)
            value = value.value
        if isinstance(pattern, ast.PWild):
            return
        if isinstance(pattern, ast.PVar):
            env[pattern.name] = self.settle(value, pattern.name, lets)
            return
        assert isinstance(pattern, ast.PTuple)
        if isinstance(value, tuple):
            if len(value) != len(pattern.elems):
                raise ValueError("a tuple pattern bound to a tuple of another size")
            for sub, part in zip(pattern.elems, value):
                self.bind(sub, part, env, lets)
            return
        if not isinstance(value.type, tuple) or len(value.type) != len(pattern.elems):
            raise ValueError("a tuple pattern bound to a value that is not a tuple")
        target = self.target_of(pattern, value.type, env)
        lets.append((target, value))

    def target_of(self, pattern: ast.Pattern, t: S.ScalarType, env: dict) -> S.Target:
        """Fresh names for the variables of `pattern` (bound in `env` to them)."""
        if isinstance(pattern, ast.PTuple):
            if not isinstance(t, tuple) or len(t) != len(pattern.elems):
                raise ValueError("a tuple pattern bound to a value that is not a tuple")
            return tuple(self.target_of(p, part, env) for p, part in zip(pattern.elems, t))
        name = self.fresh(pattern.name if isinstance(pattern, ast.PVar) else "unused")
        if isinstance(pattern, ast.PVar):
            env[pattern.name] = self.expand(S.Var(name, t))
        return name

    def expand(self, var: S.Var) -> Any:
        """A variable of a tuple type as a Python tuple of projections."""
        return self._project_all(var) if isinstance(var.type, tuple) else var

    def _project_all(self, e: S.Expr) -> Any:
        return tuple(S.Project(e, k, part) if not isinstance(part, tuple) else
                     self._project_all(S.Project(e, k, part))
                     for k, part in enumerate(e.type))

    def settle(self, value: Any, base: str, lets: list) -> Any:
        """`value` with every expression in it that is not a variable or a constant bound
        to a fresh name (a function keeps its arguments that way)."""
        if isinstance(value, Bound):
            lets.extend(value.lets)
            return self.settle(value.value, base, lets)
        if isinstance(value, tuple):
            return tuple(self.settle(v, f"{base}_{k}", lets) for k, v in enumerate(value))
        if isinstance(value, Partial):
            return Partial(value.fn, tuple(self.settle(a, base, lets) for a in value.args))
        if isinstance(value, (ArrayRef, Closure, Builtin)) or _atomic(value) or (
                isinstance(value, S.Project) and _atomic(value.expr)):
            return value
        name = self.fresh(base)
        lets.append((name, value))
        return self.expand(S.Var(name, value.type, span=value.span))

    @staticmethod
    def wrap(lets: list, body: S.Expr) -> S.Expr:
        for target, value in reversed(lets):
            body = S.Let(target, value, body, body.type, span=value.span)
        return body

    # ------------------------------------------------------------------ expressions

    def expr(self, node: ast.Expr, env: dict) -> Any:
        method = getattr(self, "_" + type(node).__name__.lower(), None)
        if method is None:
            raise self.not_built(f"`{type(node).__name__}` ({print_expr(node)})")
        return method(node, env)

    def data(self, node: ast.Expr, env: dict, what: str) -> S.Expr:
        value = self.expr(node, env)
        if not _is_data(value):
            raise self.not_built(what)
        return to_expr(value, node.span)

    def scalar(self, node: ast.Expr, env: dict, what: str) -> S.Expr:
        value = self.expr(node, env)
        if not _is_data(value) or isinstance(_type_of(value), tuple):
            raise self.not_built(f"{what} on tuples, functions or arrays")
        return value

    def _lit(self, node: ast.Lit, env: dict) -> Any:
        return S.Const(node.value, node.type, span=node.span)

    def _var(self, node: ast.Var, env: dict) -> Any:
        name = node.name
        if name in env:
            return env[name]
        if name in self.free:
            return self.free[name]
        if name in S.CONSTANTS:
            return S.CONSTANTS[name]
        if name in S.FUNCTION_ARITY:
            return Builtin(name, S.FUNCTION_ARITY[name], span=node.span)
        if name == "length":
            return Builtin(name, 1, span=node.span)
        if name in TYPE_CONSTANTS:
            raise ValueError(f"`{name}` must come resolved (flatten resolves type constants)")
        raise ValueError(f"`{name}` is not bound in scalar code (not a parameter and not in "
                         f"`free`)")

    def _ascribe(self, node: ast.Ascribe, env: dict) -> Any:
        if (isinstance(node.expr, ast.Var) and node.expr.name in TYPE_CONSTANTS
                and isinstance(node.type, ast.TScalar) and node.expr.name not in env):
            const = type_constant(node.expr.name, node.type.name)
            return S.Const(const.value, const.type, span=node.span)
        return self.expr(node.expr, env)

    def _tuplelit(self, node: ast.TupleLit, env: dict) -> Any:
        return tuple(self.expr(e, env) for e in node.elems)

    def _project(self, node: ast.Project, env: dict) -> Any:
        value = self.expr(node.expr, env)
        if isinstance(value, tuple):
            return value[node.index]
        if _is_data(value) and isinstance(value.type, tuple):
            out = S.Project(value, node.index, value.type[node.index], span=node.span)
            return self._project_all(out) if isinstance(out.type, tuple) else out
        raise ValueError(f"projection .{node.index} of a value that is not a tuple")

    # ------------------------------------------------------------------ operators

    def _binop(self, node: ast.BinOp, env: dict) -> Any:
        left = self.scalar(node.left, env, f"operator {node.op}")
        right = self.scalar(node.right, env, f"operator {node.op}")
        return self.binary(node.op, left, right, node.span)

    def binary(self, op: str, left: S.Expr, right: S.Expr, span: Span | None) -> S.Expr:
        return S.Binary(op, left, right, S.binary_type(op, left.type, right.type), span=span)

    def _unop(self, node: ast.UnOp, env: dict) -> Any:
        value = self.expr(node.operand, env)
        if not _is_data(value) or isinstance(_type_of(value), tuple):
            raise ValueError(f"unary {node.op} of a value that is not a scalar")
        return S.Unary(node.op, value, S.unary_type(node.op, value.type), span=node.span)

    def _opfunc(self, node: ast.OpFunc, env: dict) -> Any:
        if node.op.isidentifier():
            return self._var(ast.Var(node.op, span=node.span), env)
        return Builtin(node.op, 2, operator=True, span=node.span)

    def _leftsection(self, node: ast.LeftSection, env: dict) -> Any:
        return Partial(Builtin(node.op, 2, operator=True, span=node.span),
                       (self.expr(node.left, env),))

    def _rightsection(self, node: ast.RightSection, env: dict) -> Any:
        return Partial(Builtin(node.op, 2, operator=True, flipped=True, span=node.span),
                       (self.expr(node.right, env),))

    # ------------------------------------------------------------------ functions

    def _lambda(self, node: ast.Lambda, env: dict) -> Any:
        return Closure(node.params, node.body, env)

    def _apply(self, node: ast.Apply, env: dict) -> Any:
        fn = self.expr(node.fn, env)
        args = [self.expr(a, env) for a in node.args]
        return self.call(fn, args, node.span)

    def call(self, fn: Any, args: list, span: Span | None) -> Any:
        """Curried application: beta reduction, builtins as IR nodes."""
        pending: list = []
        while args:
            if isinstance(fn, Bound):
                pending.extend(fn.lets)
                fn = fn.value
            if isinstance(fn, Partial):
                fn, args = fn.fn, [*fn.args, *args]
            if isinstance(fn, Closure):
                arity = len(fn.params)
            elif isinstance(fn, Builtin):
                arity = fn.arity
            else:
                raise ValueError("application of a value that is not a function")
            if len(args) < arity:
                return Partial(fn, tuple(args))
            fn, args = self._invoke(fn, args[:arity], span), args[arity:]
        if isinstance(fn, Bound):
            pending.extend(fn.lets)
            fn = fn.value
        if not pending:
            return fn
        if not _is_data(fn):
            return Bound(tuple(pending), fn)
        return self.wrap(pending, to_expr(fn, span))

    def _invoke(self, fn: Closure | Builtin, args: list, span: Span | None) -> Any:
        if isinstance(fn, Closure):           # beta reduction
            env = dict(fn.env)
            lets: list = []
            for param, arg in zip(fn.params, args):
                self.bind(param, arg, env, lets)
            result = self.expr(fn.body, env)
            if not lets:
                return result
            if not _is_data(result):
                return Bound(tuple(lets), result)
            return self.wrap(lets, to_expr(result, span))
        if fn.operator:
            return self._operator(fn, args, span)
        if fn.name == "length":
            leaves = _array_leaves(args[0])
            if not leaves:
                raise self.not_built("`length` of something that is not a free array")
            return S.Length(leaves[0].name, leaves[0].path, span=span)
        if fn.name == "select" and _is_data(args[1]) and isinstance(_type_of(args[1]), tuple):
            return self._select(args, span)
        if not all(_is_data(a) and not isinstance(_type_of(a), tuple) for a in args):
            raise self.not_built(f"`{fn.name}` of tuples, functions or arrays")
        return S.Call(fn.name, tuple(args), S.call_type(fn.name, [a.type for a in args]),
                      span=span)

    def _operator(self, fn: Builtin, args: list, span: Span | None) -> S.Expr:
        for a in args:
            if not _is_data(a) or isinstance(_type_of(a), tuple):
                raise self.not_built(f"operator {fn.name} on tuples, functions or arrays")
        left, right = (args[1], args[0]) if fn.flipped else (args[0], args[1])
        if not fn.flipped:
            return self.binary(fn.name, left, right, fn.span or span)
        # `(op r) l`: r was evaluated with the section, before l
        if _atomic(right) or _atomic(left):
            return self.binary(fn.name, left, right, fn.span or span)
        name = self.fresh("operand")
        body = self.binary(fn.name, left, S.Var(name, right.type), fn.span or span)
        return S.Let(name, right, body, body.type, span=right.span)

    def _select(self, args: list, span: Span | None) -> S.Expr:
        cond, a, b = args
        lets: list = []
        if not _atomic(cond):
            cond = self.settle(cond, "cond", lets)

        def choose(x: Any, y: Any) -> Any:
            if isinstance(x, tuple) or isinstance(x.type, tuple):
                xs = x if isinstance(x, tuple) else self._project_all(x)
                ys = y if isinstance(y, tuple) else self._project_all(y)
                return tuple(choose(p, q) for p, q in zip(xs, ys))
            return S.Call("select", (cond, x, y), S.call_type("select", ["bool", x.type,
                                                                          y.type]), span=span)
        return self.wrap(lets, to_expr(choose(a, b), span))

    # ------------------------------------------------------------------ let and if

    def _let(self, node: ast.Let, env: dict) -> Any:
        base = node.pattern.name if isinstance(node.pattern, ast.PVar) else "value"
        value = self.expr(node.value, env)
        lets: list = []
        inner = dict(env)
        if isinstance(node.pattern, ast.PVar):
            inner[node.pattern.name] = self.settle(value, base, lets)
        else:
            self.bind(node.pattern, value, inner, lets)
        result = self.expr(node.body, inner)
        if not lets:
            return result
        if not _is_data(result):
            return Bound(tuple(lets), result)
        return self.wrap(lets, to_expr(result, node.body.span))

    def _if(self, node: ast.If, env: dict) -> Any:
        cond = self.expr(node.cond, env)
        if not (_is_data(cond) and cond.type == "bool"):
            raise ValueError("the condition of an `if` is not a bool")
        then = self.expr(node.then, env)
        else_ = self.expr(node.else_, env)
        if not (_is_data(then) and _is_data(else_)):
            raise self.not_built("an `if` that chooses a function or an array")
        then, else_ = to_expr(then, node.then.span), to_expr(else_, node.else_.span)
        if then.type != else_.type:
            raise ValueError(f"if branches of types {then.type} and {else_.type}")
        return S.If(cond, then, else_, then.type, span=node.span)

    # ------------------------------------------------------------------ loops

    def _loop(self, node: ast.Loop, env: dict) -> Any:
        init = self.data(node.init, env, "a loop whose state holds a function or an array")
        form = node.form
        if isinstance(form, ast.ForRange):
            bound = self.expr(form.bound, env)
            if not (_is_data(bound) and bound.type in S.INTS):
                raise ValueError("the bound of `for i < n` is not an integer")
            scope = dict(env)
            state = self.target_of(node.pattern, init.type, scope)
            index = self.fresh(form.var)
            scope[form.var] = S.Var(index, bound.type)
            body = self._step(node, init.type, scope)
            return S.Loop(state, init, S.ForRange(index, bound), body, init.type,
                          span=node.span)
        if isinstance(form, ast.While):
            scope = dict(env)
            state = self.target_of(node.pattern, init.type, scope)
            cond = self.expr(form.cond, scope)
            if not (_is_data(cond) and cond.type == "bool"):
                raise ValueError("the condition of `while` is not a bool")
            body = self._step(node, init.type, scope)
            return S.Loop(state, init, S.While(cond), body, init.type, span=node.span)
        return self._for_in(node, form, init, env)

    def _step(self, node: ast.Loop, t: S.ScalarType, scope: dict) -> S.Expr:
        new = self.expr(node.body, scope)
        if not _is_data(new) or _type_of(new) != t:
            raise ValueError("a loop body gives a value of another type than its state")
        return to_expr(new, node.body.span)

    def _for_in(self, node: ast.Loop, form: ast.ForIn, init: S.Expr, env: dict) -> Any:
        """`for x in xs` as `for k < length xs` reading `xs[k]` (in bounds: unchecked)."""
        array = self.expr(form.array, env)
        leaves = _array_leaves(array)
        if not (_is_array(array) and all(isinstance(a.rep, Regular) and a.rep.rank == 1
                                         for a in leaves)):
            raise self.not_built("`for x in xs` over anything but a free array of scalars")
        scope = dict(env)
        state = self.target_of(node.pattern, init.type, scope)
        position = S.Var(self.fresh("k"), "i64")

        def element(a: Any) -> Any:
            if isinstance(a, tuple):
                return tuple(element(x) for x in a)
            return S.Index(a.name, a.path, (position,), (None,), a.rep.elem, checked=False)

        value = to_expr(element(array), form.array.span)
        lets: list = []
        if isinstance(form.pattern, ast.PVar):
            name = self.fresh(form.pattern.name)
            lets.append((name, value))
            scope[form.pattern.name] = self.expand(S.Var(name, value.type))
        else:
            self.bind(form.pattern, value, scope, lets)
        body = self.wrap(lets, self._step(node, init.type, scope))
        length = S.Length(leaves[0].name, leaves[0].path, span=form.array.span)
        return S.Loop(state, init, S.ForRange(position.name, length), body, init.type,
                      span=node.span)

    # ------------------------------------------------------------------ free arrays

    def _index(self, node: ast.Index, env: dict) -> Any:
        chain: list[ast.Index] = []
        base: ast.Expr = node
        while isinstance(base, ast.Index):
            chain.append(base)
            base = base.expr
        chain.reverse()
        array = self.expr(base, env)
        if not _is_array(array):
            raise self.not_built("indexing something that is not a free array")
        indices = []
        for level in chain:
            index = self.expr(level.index, env)
            if not (_is_data(index) and index.type in S.INTS):
                raise ValueError("an index that is not an integer")
            indices.append(index)
        spans = tuple(level.span for level in chain)
        leaves = _array_leaves(array)
        lets: list = []
        if len(leaves) > 1:       # every leaf reads at the same indices: compute them once
            indices = [self.settle(i, "i", lets) for i in indices]
        for leaf in leaves:
            if len(indices) < S.depth(leaf.rep):
                raise self.not_built("a row of an irregular array" if isinstance(
                    leaf.rep, Segmented) else f"a row of a rank-{leaf.rep.rank} array")

        def read(a: Any) -> Any:
            if isinstance(a, tuple):
                return tuple(read(x) for x in a)
            return self._element(a, tuple(indices), spans, node.span)

        value = read(array)
        if not lets:
            return value
        return self.wrap(lets, to_expr(value, node.span))

    def _element(self, array: ArrayRef, indices: tuple, spans: tuple,
                 span: Span | None) -> Any:
        rep = array.rep
        if isinstance(rep, Regular) and len(indices) != rep.rank:
            raise self.not_built(f"a row of a rank-{rep.rank} array ({len(indices)} "
                                 f"ind{'ex' if len(indices) == 1 else 'ices'})")
        inner = rep
        while isinstance(inner, Segmented):
            inner = inner.inner
        if isinstance(inner, TupleRep):
            raise self.not_built("an element of an irregular array of tuples")
        if len(indices) != S.depth(rep):
            raise self.not_built("a row of an irregular array")
        return S.Index(array.name, array.path, indices, spans, inner.elem, span=span)
