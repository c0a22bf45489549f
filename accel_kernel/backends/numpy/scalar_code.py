"""Vectorised evaluation of a `ScalarFn` (a scalar lambda in core accel) over many elements.

The function is first lowered to the first-order scalar IR (`ir/scalar_lower.py`, the
argument types read from the arguments, the free variables' representations from their
values); the evaluator is a plain walk over that IR.

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
(`xs[i]`, `xss[i][j]`, bounds checked per lane), measured (`length xs`) and walked (`for x
in xs`, lowered to `for k < length xs`).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from ...ir import scalar as S
from ...ir.core import free_vars
from ...ir.flat import Regular, Rep, ScalarFn, ScalarRep, Segmented, TupleRep
from ...ir.scalar_lower import lower
from ...lang import ast
from ...lang.errors import AccelError
from ...lang.scalar_ops import DTYPES
from . import scalar_ops as ops
from .rows import check_indices
from .values import Segs, make_scalar

SCALAR_TYPES = {np.dtype(cls).name: name for name, cls in DTYPES.items()}
# by the dtype itself: `dtype.name` is computed in Python on every read (numpy 2), and the
# host's scalar statements look up a type for every value they read, on every run
_OF_DTYPE = {np.dtype(cls): name for name, cls in DTYPES.items()}


# ---------------------------------------------------------------- lanes


def take(value: Any, idx: np.ndarray) -> Any:
    """A value restricted to the lanes `idx`."""
    if isinstance(value, tuple):
        return tuple(take(v, idx) for v in value)
    if isinstance(value, np.ndarray):
        return value[idx]
    return value


def restrict(env: Mapping[str, Any], idx: np.ndarray, reads: Any = None) -> dict:
    """`env` restricted to the lanes `idx`; with `reads` (expressions), only the variables
    they mention (a branch over a few lanes does not copy every variable in scope)."""
    names = None if reads is None else frozenset().union(*(S.var_names(r) for r in reads))
    return {name: take(value, idx) for name, value in env.items()
            if names is None or name in names}


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


def _bind(target: S.Target, value: Any, env: dict) -> dict:
    if isinstance(target, tuple):
        for sub, part in zip(target, value):
            _bind(sub, part, env)
    else:
        env[target] = value
    return env


# ---------------------------------------------------------------- types of values


def value_type(value: Any) -> S.ScalarType:
    """The scalar type of an argument (a numpy scalar, lanes, or a tuple of them)."""
    if isinstance(value, tuple):
        return tuple(value_type(v) for v in value)
    dtype = np.asarray(value).dtype
    return _OF_DTYPE.get(dtype) or SCALAR_TYPES[dtype.name]


def value_rep(value: Any) -> Rep | None:
    """The representation of a free variable's value (None: nothing scalar code reads)."""
    if isinstance(value, tuple):
        parts = [value_rep(v) for v in value]
        return None if None in parts else TupleRep(tuple(parts))  # type: ignore[arg-type]
    if isinstance(value, Segs):
        inner = value_rep(value.values)
        return None if inner is None else Segmented(inner)
    if not isinstance(value, (np.ndarray, np.generic)):
        return None
    elem = _OF_DTYPE.get(value.dtype) or SCALAR_TYPES.get(value.dtype.name)  # (byte order)
    if elem is None:
        return None
    return Regular(elem, value.ndim) if value.ndim else ScalarRep(elem)


# ---------------------------------------------------------------- the evaluator

_LOWERED: dict[tuple, tuple[ScalarFn, S.ScalarFunc]] = {}   # LaneEvaluator.lowered's
_LOWERED_SIZE = 4096
_FREE: dict[int, tuple[ScalarFn, frozenset[str]]] = {}


def _free_names(fn: ScalarFn) -> frozenset[str]:
    """The names a scalar function reads from outside it (once per function)."""
    hit = _FREE.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    names = frozenset(free_vars(ast.Lambda(fn.params, fn.body) if fn.params else fn.body))
    if len(_FREE) >= _LOWERED_SIZE:
        _FREE.pop(next(iter(_FREE)))
    _FREE[id(fn)] = (fn, names)
    return names



class LaneEvaluator:
    """Evaluates scalar code over lanes. `free` holds the free variables (`fallback`: the
    block's variables, for a name `free` does not list); `work` counts element operations
    and `steps` the lock-step loop iterations run."""

    def __init__(self, free: Mapping[str, Any], fallback: Mapping[str, Any] | None = None,
                 tick: Callable[[], None] = lambda: None):
        self.free = dict(free)
        self.fallback = fallback if fallback is not None else {}
        self.tick = tick
        self.check = True
        self.work = 0
        self.steps = 0

    def lowered(self, fn: ScalarFn, args: list[Any]) -> S.ScalarFunc:
        """`fn` in the scalar IR, for arguments like `args` (lowered once for each argument
        types and representations of what it reads: a cell's run evaluates its host scalar
        statements again and again)."""
        names = _free_names(fn)
        for name in names:
            if name not in self.free and name in self.fallback:
                self.free[name] = self.fallback[name]
        reps = {name: rep for name, rep in ((n, value_rep(self.free[n])) for n in names
                                            if n in self.free) if rep is not None}
        types = [value_type(a) for a in args]
        key = (id(fn), tuple(types), tuple(sorted(reps.items())))
        hit = _LOWERED.get(key)
        if hit is not None and hit[0] is fn:
            return hit[1]
        func = lower(fn, types, reps, "numpy")
        if len(_LOWERED) >= _LOWERED_SIZE:
            _LOWERED.pop(next(iter(_LOWERED)))
        _LOWERED[key] = (fn, func)          # fn kept alive: its id is not reused meanwhile
        return func

    def apply(self, fn: ScalarFn, args: list[Any], n: int) -> Any:
        """`fn` applied to `args` (values over `n` lanes); one array entry per lane."""
        self.check = n > 0
        func = self.lowered(fn, args)
        env = {param.name: arg for param, arg in zip(func.params, args)}
        result = self.eval(func.body, env, n)
        return spread(result, n) if not isinstance(result, np.ndarray) else result

    def eval(self, node: S.Expr, env: dict, n: int) -> Any:
        return getattr(self, "_" + type(node).__name__.lower())(node, env, n)

    # ------------------------------------------------------------------ leaves

    def _const(self, node: S.Const, env: dict, n: int) -> Any:
        return make_scalar(node.type, node.value)

    def _var(self, node: S.Var, env: dict, n: int) -> Any:
        return env[node.name] if node.name in env else self.free[node.name]

    def _free(self, node: S.Free, env: dict, n: int) -> Any:
        return S.part(self.free[node.name], node.path)

    def _tuple(self, node: S.Tuple, env: dict, n: int) -> Any:
        return tuple(self.eval(e, env, n) for e in node.elems)

    def _project(self, node: S.Project, env: dict, n: int) -> Any:
        return self.eval(node.expr, env, n)[node.index]

    # ------------------------------------------------------------------ operators

    def _binary(self, node: S.Binary, env: dict, n: int) -> Any:
        left = self.eval(node.left, env, n)
        if node.op in S.SHORT_CIRCUIT:
            return self._short_circuit(node, left, env, n)
        right = self.eval(node.right, env, n)
        self.work += n
        return ops.binop(node.op, left, right, node.span, self.check)

    def _short_circuit(self, node: S.Binary, left: Any, env: dict, n: int) -> Any:
        decided = np.bool_(node.op == "||")       # the value that makes the right side moot
        if not isinstance(left, np.ndarray):
            if bool(left) == bool(decided):
                return decided
            return self.eval(node.right, env, n)
        need = np.flatnonzero(left != decided)
        out = np.full(n, decided)
        if len(need):
            right = self.eval(node.right, restrict(env, need, (node.right,)), len(need))
            out[need] = right
            self.work += len(need)
        return out

    def _unary(self, node: S.Unary, env: dict, n: int) -> Any:
        value = self.eval(node.operand, env, n)
        self.work += n
        return ops.negate(value) if node.op == "-" else ops.logical_not(value)

    def _call(self, node: S.Call, env: dict, n: int) -> Any:
        args = [self.eval(a, env, n) for a in node.args]
        self.work += n
        try:
            return ops.FUNCTIONS[node.name][1](*args)
        except AccelError as err:
            if err.span is None:
                err.span = node.span
            raise

    # ------------------------------------------------------------------ binding and control

    def _let(self, node: S.Let, env: dict, n: int) -> Any:
        value = self.eval(node.value, env, n)
        return self.eval(node.body, _bind(node.target, value, dict(env)), n)

    def _if(self, node: S.If, env: dict, n: int) -> Any:
        cond = self.eval(node.cond, env, n)
        if not isinstance(cond, np.ndarray):
            return self.eval(node.then if cond else node.else_, env, n)
        then_idx = np.flatnonzero(cond)
        else_idx = np.flatnonzero(~cond)
        if len(else_idx) == 0:
            return self.eval(node.then, env, n)
        if len(then_idx) == 0:
            return self.eval(node.else_, env, n)
        then = self.eval(node.then, restrict(env, then_idx, (node.then,)), len(then_idx))
        else_ = self.eval(node.else_, restrict(env, else_idx, (node.else_,)), len(else_idx))
        self.work += n
        return _merge(then, else_, then_idx, else_idx, n)

    def _loop(self, node: S.Loop, env: dict, n: int) -> Any:
        state = spread(self.eval(node.init, env, n), n)
        if isinstance(node.form, S.ForRange):
            return self._for_range(node, node.form, state, env, n)
        return self._while(node, node.form, state, env, n)

    def _step(self, node: S.Loop, state: Any, active: np.ndarray, scope: dict,
              n: int) -> Any:
        """One iteration on the lanes `active` (scope already restricted to them)."""
        full = len(active) == n
        _bind(node.state, state if full else take(state, active), scope)
        new = self.eval(node.body, scope, len(active))
        if full:
            return spread(new, n)     # a fresh state: the body may return parts of the old
        _assign(state, active, new)
        return state

    def _for_range(self, node: S.Loop, form: S.ForRange, state: Any, env: dict,
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

    def _while(self, node: S.Loop, form: S.While, state: Any, env: dict, n: int) -> Any:
        active = np.arange(n)
        while len(active):
            self.tick()
            scope = dict(env) if len(active) == n else restrict(env, active)
            _bind(node.state, state if len(active) == n else take(state, active), scope)
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

    def _length(self, node: S.Length, env: dict, n: int) -> Any:
        array = S.part(self.free[node.name], node.path)
        self.work += n
        return np.int64(len(array) if isinstance(array, Segs) else array.shape[0])

    def _index(self, node: S.Index, env: dict, n: int) -> Any:
        array = S.part(self.free[node.name], node.path)
        indices = [self.eval(index, env, n) for index in node.indices]
        self.work += n * len(indices)
        return self._index_into(array, indices, list(node.spans), n, node.checked)

    def _index_into(self, array: Any, indices: list, spans: list, n: int,
                    checked: bool) -> Any:
        if not self.check:
            return np.zeros(n, dtype=_dtype_of(array))
        i = indices[0]
        if isinstance(array, Segs):
            if checked:
                check_indices(i, len(array.offsets) - 1, spans[0])
            start = array.offsets[i]
            if checked:
                check_indices(indices[1], array.offsets[np.add(i, 1)] - start, spans[1])
            return self._index_into(array.values, [start + indices[1], *indices[2:]],
                                    spans[1:], n, checked)
        if checked:
            for k, (index, span) in enumerate(zip(indices, spans)):
                check_indices(index, array.shape[k], span)
        return ops.scalar_or_array(array[tuple(indices)])


def _dtype_of(array: Any) -> np.dtype:
    while isinstance(array, Segs):
        array = array.values
    return array.dtype
