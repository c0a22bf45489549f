"""Vectorised evaluation of a `ScalarFn` (a scalar lambda in core accel) over many elements.

Every element is a *lane*. A value is a numpy scalar (the same for every active lane), a 1-d
array with one entry per active lane, a tuple of those, or a function value. The body is
evaluated once, on whole arrays, for all lanes at a time, and each lane computes exactly what
the interpreter computes for that element, errors included:

- `if` splits the lanes: each branch runs only on the lanes that take it (the environment is
  gathered to those lanes), and the two results are merged by scattering. A branch no lane
  takes is never evaluated, so an error in it is never raised;
- `&&` and `||` evaluate their right side only on the lanes that need it;
- `loop ... for i < n` and `loop ... while c` keep the set of active lanes and run while it is
  not empty; each lane leaves when its own bound or condition says so;
- integer division, remainder, negative powers and shifts raise on the lanes that run them.

When no lane runs at all (a map over an empty array) the body is evaluated with `check=False`
only to find the result's types: nothing can fail there, as no element exists.

Free variables (`ScalarFn.free`) are the same for every lane; a free array may be indexed
(`xs[i]`, `xss[i][j]`, bounds checked per lane) and measured (`length xs`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from ...ir.flat import ScalarFn
from ...lang import ast
from ...lang import types as T
from ...lang.errors import AccelError
from ...lang.source import Span
from ..interp import scalars as interp_scalars
from . import scalar_ops as ops
from .rows import check_indices, first_leaf
from .values import Segs, make_scalar

TYPE_CONSTANTS = frozenset({"zero", "one", "lowest", "highest"})


@dataclass(frozen=True, eq=False)
class Closure:
    params: tuple[ast.Pattern, ...]
    body: ast.Expr
    env: dict


@dataclass(frozen=True, eq=False)
class Builtin:
    """A library function (`min`) or, with `operator`, a binary operator (`(+)`)."""
    name: str
    arity: int
    operator: bool = False
    flipped: bool = False
    span: Span | None = None


@dataclass(frozen=True, eq=False)
class Partial:
    fn: Any
    args: tuple


# ---------------------------------------------------------------- lanes


def take(value: Any, idx: np.ndarray) -> Any:
    """A value restricted to the lanes `idx`."""
    if isinstance(value, tuple):
        return tuple(take(v, idx) for v in value)
    if isinstance(value, np.ndarray):
        return value[idx]
    if isinstance(value, Closure):
        return Closure(value.params, value.body, restrict(value.env, idx))
    if isinstance(value, Partial):
        return Partial(take(value.fn, idx), tuple(take(a, idx) for a in value.args))
    return value


def restrict(env: Mapping[str, Any], idx: np.ndarray) -> dict:
    return {name: take(value, idx) for name, value in env.items()}


def spread(value: Any, n: int) -> Any:
    """A value with one array entry per lane (a fresh array, safe to write into)."""
    if isinstance(value, tuple):
        return tuple(spread(v, n) for v in value)
    if isinstance(value, np.ndarray):
        return value.copy()
    return np.full(n, value, dtype=np.asarray(value).dtype)


def _assign(state: Any, idx: np.ndarray, new: Any) -> None:
    if isinstance(state, tuple):
        for s, v in zip(state, new):
            _assign(s, idx, v)
    else:
        state[idx] = new


def _merge(then: Any, else_: Any, then_idx: np.ndarray, else_idx: np.ndarray, n: int) -> Any:
    if isinstance(then, tuple):
        return tuple(_merge(a, b, then_idx, else_idx, n) for a, b in zip(then, else_))
    out = np.empty(n, dtype=np.asarray(then).dtype)
    out[then_idx] = then
    out[else_idx] = else_
    return out


def _bind(pattern: ast.Pattern, value: Any, env: dict) -> dict:
    if isinstance(pattern, ast.PVar):
        env[pattern.name] = value
    elif isinstance(pattern, ast.PTuple):
        for sub, part in zip(pattern.elems, value):
            _bind(sub, part, env)
    return env


# ---------------------------------------------------------------- the evaluator


class LaneEvaluator:
    """Evaluates scalar code over lanes. `free` holds the free variables; `work` counts
    element operations and `steps` the lock-step loop iterations run."""

    def __init__(self, free: Mapping[str, Any], fallback: Mapping[str, Any] | None = None,
                 tick: Callable[[], None] = lambda: None):
        self.free = free
        self.fallback = fallback if fallback is not None else {}
        self.tick = tick
        self.check = True
        self.work = 0
        self.steps = 0

    def apply(self, fn: ScalarFn, args: list[Any], n: int) -> Any:
        """`fn` applied to `args` (values over `n` lanes); one array entry per lane."""
        self.check = n > 0
        env: dict = {}
        for param, arg in zip(fn.params, args):
            _bind(param, arg, env)
        result = self.eval(fn.body, env, n)
        rest = list(args[len(fn.params):])
        if rest:
            result = self.call(result, rest, n, fn.body.span)
        return spread(result, n) if not isinstance(result, np.ndarray) else result

    def eval(self, node: ast.Expr, env: dict, n: int) -> Any:
        method = getattr(self, "_" + type(node).__name__.lower(), None)
        if method is None:
            raise ValueError(f"{type(node).__name__} is not scalar code")
        return method(node, env, n)

    # ------------------------------------------------------------------ leaves

    def _lit(self, node: ast.Lit, env: dict, n: int) -> Any:
        return make_scalar(node.type, node.value)

    def _var(self, node: ast.Var, env: dict, n: int) -> Any:
        name = node.name
        if name in env:
            return env[name]
        if name in self.free:
            return self.free[name]
        if name in ops.CONSTANTS:
            return ops.CONSTANTS[name]
        if name in ops.FUNCTIONS:
            return Builtin(name, ops.FUNCTIONS[name][0], span=node.span)
        if name == "length":
            return Builtin(name, 1, span=node.span)
        if name in self.fallback:       # a variable of the block that `free` does not list
            return self.fallback[name]
        raise ValueError(f"`{name}` is not bound in scalar code"
                         + (" (flatten must resolve type constants)" if name in TYPE_CONSTANTS
                            else ""))

    def _ascribe(self, node: ast.Ascribe, env: dict, n: int) -> Any:
        if (isinstance(node.expr, ast.Var) and node.expr.name in TYPE_CONSTANTS
                and isinstance(node.type, ast.TScalar) and node.expr.name not in env):
            return _type_constant(node.expr.name, node.type.name)
        return self.eval(node.expr, env, n)

    def _tuplelit(self, node: ast.TupleLit, env: dict, n: int) -> Any:
        return tuple(self.eval(e, env, n) for e in node.elems)

    def _project(self, node: ast.Project, env: dict, n: int) -> Any:
        return self.eval(node.expr, env, n)[node.index]

    # ------------------------------------------------------------------ operators

    def _binop(self, node: ast.BinOp, env: dict, n: int) -> Any:
        left = self.eval(node.left, env, n)
        if node.op in ("&&", "||"):
            return self._short_circuit(node, left, env, n)
        right = self.eval(node.right, env, n)
        self.work += n
        return ops.binop(node.op, left, right, node.span, self.check)

    def _short_circuit(self, node: ast.BinOp, left: Any, env: dict, n: int) -> Any:
        decided = np.bool_(node.op == "||")       # the value that makes the right side moot
        if not isinstance(left, np.ndarray):
            if bool(left) == bool(decided):
                return decided
            return self.eval(node.right, env, n)
        need = np.flatnonzero(left != decided)
        out = np.full(n, decided)
        if len(need):
            right = self.eval(node.right, restrict(env, need), len(need))
            out[need] = right
            self.work += len(need)
        return out

    def _unop(self, node: ast.UnOp, env: dict, n: int) -> Any:
        value = self.eval(node.operand, env, n)
        self.work += n
        return ops.negate(value) if node.op == "-" else ops.logical_not(value)

    def _opfunc(self, node: ast.OpFunc, env: dict, n: int) -> Any:
        if node.op.isidentifier():
            return self._var(ast.Var(node.op, span=node.span), env, n)
        return Builtin(node.op, 2, operator=True, span=node.span)

    def _leftsection(self, node: ast.LeftSection, env: dict, n: int) -> Any:
        return Partial(Builtin(node.op, 2, operator=True, span=node.span),
                       (self.eval(node.left, env, n),))

    def _rightsection(self, node: ast.RightSection, env: dict, n: int) -> Any:
        return Partial(Builtin(node.op, 2, operator=True, flipped=True, span=node.span),
                       (self.eval(node.right, env, n),))

    # ------------------------------------------------------------------ functions

    def _lambda(self, node: ast.Lambda, env: dict, n: int) -> Any:
        return Closure(node.params, node.body, env)

    def _apply(self, node: ast.Apply, env: dict, n: int) -> Any:
        fn = self.eval(node.fn, env, n)
        args = [self.eval(a, env, n) for a in node.args]
        try:
            return self.call(fn, args, n, node.span)
        except AccelError as err:
            if err.span is None:
                err.span = node.span
            raise

    def call(self, fn: Any, args: list, n: int, span: Span | None) -> Any:
        while args:
            if isinstance(fn, Partial):
                fn, args = fn.fn, [*fn.args, *args]
            arity = len(fn.params) if isinstance(fn, Closure) else getattr(fn, "arity", None)
            if arity is None:
                raise ValueError(f"cannot apply {fn!r} in scalar code")
            if len(args) < arity:
                return Partial(fn, tuple(args))
            fn, args = self._invoke(fn, args[:arity], n), args[arity:]
        return fn

    def _invoke(self, fn: Any, args: list, n: int) -> Any:
        if isinstance(fn, Closure):
            env = dict(fn.env)
            for param, arg in zip(fn.params, args):
                _bind(param, arg, env)
            return self.eval(fn.body, env, n)
        self.work += n
        if fn.operator:
            left, right = (args[1], args[0]) if fn.flipped else (args[0], args[1])
            return ops.binop(fn.name, left, right, fn.span, self.check)
        if fn.name == "length":
            return np.int64(len(args[0]) if isinstance(args[0], Segs) else
                            first_leaf(args[0]).shape[0])
        return ops.FUNCTIONS[fn.name][1](*args)

    # ------------------------------------------------------------------ binding and control

    def _let(self, node: ast.Let, env: dict, n: int) -> Any:
        value = self.eval(node.value, env, n)
        return self.eval(node.body, _bind(node.pattern, value, dict(env)), n)

    def _if(self, node: ast.If, env: dict, n: int) -> Any:
        cond = self.eval(node.cond, env, n)
        if not isinstance(cond, np.ndarray):
            return self.eval(node.then if cond else node.else_, env, n)
        then_idx = np.flatnonzero(cond)
        else_idx = np.flatnonzero(~cond)
        if len(else_idx) == 0:
            return self.eval(node.then, env, n)
        if len(then_idx) == 0:
            return self.eval(node.else_, env, n)
        then = self.eval(node.then, restrict(env, then_idx), len(then_idx))
        else_ = self.eval(node.else_, restrict(env, else_idx), len(else_idx))
        self.work += n
        return _merge(then, else_, then_idx, else_idx, n)

    def _loop(self, node: ast.Loop, env: dict, n: int) -> Any:
        state = spread(self.eval(node.init, env, n), n)
        form = node.form
        if isinstance(form, ast.ForRange):
            return self._for_range(node, form, state, env, n)
        if isinstance(form, ast.While):
            return self._while(node, form, state, env, n)
        raise ValueError("`for x in xs` is not scalar code")

    def _step(self, node: ast.Loop, state: Any, active: np.ndarray, scope: dict,
              n: int) -> Any:
        """One iteration on the lanes `active` (scope already restricted to them)."""
        full = len(active) == n
        _bind(node.pattern, state if full else take(state, active), scope)
        new = self.eval(node.body, scope, len(active))
        if full:
            return spread(new, n)     # a fresh state: the body may return parts of the old
        _assign(state, active, new)
        return state

    def _for_range(self, node: ast.Loop, form: ast.ForRange, state: Any, env: dict,
                   n: int) -> Any:
        bound = self.eval(form.bound, env, n)
        index_type = np.asarray(bound).dtype.type
        bounds = np.broadcast_to(bound, (n,))
        active = np.flatnonzero(bounds > 0)
        i = 0
        while len(active):
            self.tick()
            self.steps += 1
            scope = dict(env) if len(active) == n else restrict(env, active)
            scope[form.var] = index_type(i)
            state = self._step(node, state, active, scope, n)
            i += 1
            active = active[bounds[active] > i]
        return state

    def _while(self, node: ast.Loop, form: ast.While, state: Any, env: dict, n: int) -> Any:
        active = np.arange(n)
        while len(active):
            self.tick()
            scope = dict(env) if len(active) == n else restrict(env, active)
            _bind(node.pattern, state if len(active) == n else take(state, active), scope)
            cond = np.broadcast_to(self.eval(form.cond, scope, len(active)), (len(active),))
            going = np.flatnonzero(cond)
            if len(going) == 0:
                break
            self.steps += 1
            if len(going) < len(active):
                scope, active = restrict(scope, going), active[going]
            state = self._step(node, state, active, scope, n)
        return state

    # ------------------------------------------------------------------ free arrays

    def _index(self, node: ast.Index, env: dict, n: int) -> Any:
        chain: list[ast.Index] = []
        base: ast.Expr = node
        while isinstance(base, ast.Index):
            chain.append(base)
            base = base.expr
        chain.reverse()
        if not (isinstance(base, ast.Var) and base.name not in env):
            raise ValueError("scalar code may index only free arrays")
        array = self._var(base, env, n)
        if not _is_array(array):
            raise ValueError("scalar code may index only free arrays")
        indices = [self.eval(level.index, env, n) for level in chain]
        self.work += n * len(chain)
        return self._index_into(array, indices, [level.span for level in chain], n)

    def _index_into(self, array: Any, indices: list, spans: list, n: int) -> Any:
        if isinstance(array, tuple):
            return tuple(self._index_into(a, indices, spans, n) for a in array)
        if not self.check:
            return np.zeros(n, dtype=_dtype_of(array))
        i = indices[0]
        if isinstance(array, Segs):
            check_indices(i, len(array.offsets) - 1, spans[0])
            if len(indices) == 1:
                raise ValueError("scalar code cannot hold a row of an irregular array")
            start = array.offsets[i]
            check_indices(indices[1], array.offsets[np.add(i, 1)] - start, spans[1])
            return self._index_into(array.values, [start + indices[1], *indices[2:]],
                                    spans[1:], n)
        if len(indices) != array.ndim:
            raise ValueError("scalar code must index a regular array down to a scalar")
        for k, (index, span) in enumerate(zip(indices, spans)):
            check_indices(index, array.shape[k], span)
        return ops.scalar_or_array(array[tuple(indices)])


def _is_array(value: Any) -> bool:
    leaf = first_leaf(value)
    return isinstance(leaf, Segs) or isinstance(leaf, np.ndarray) and leaf.ndim >= 1


def _dtype_of(array: Any) -> np.dtype:
    while isinstance(array, Segs):
        array = array.values
    return array.dtype


def _type_constant(name: str, elem: str) -> Any:
    return interp_scalars.type_constant(name, T.Scalar(elem))
