"""The reference interpreter (target `interp`): evaluates the typed AST directly.

It defines the meaning of accel programs; every other back end is tested against it, so it is
written for clarity. It takes the parsed top-level forms plus two tables from the type checker
(`types[node.id]` and `instantiations[var_node.id]`) and gives `CellValues`: the names the cell
binds, the values of its top-level expressions and what computing them cost (`costs`: work
and depth under the flat IR's cost model, docs/flat.md).

Name lookup goes local scope, then globals (this cell's bindings over the session's), then
builtins. Defs are late-bound: a def's body looks its globals up when it runs. The only values
that need types at run time are `zero one lowest highest`; they are found by dictionary passing:
each def activation carries a type substitution (`tsubst`) for its quantified type variables,
computed at the `Var` that names the def from `instantiations` and the caller's own `tsubst`.
"""
from __future__ import annotations

from collections import ChainMap
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence as SequenceType

import numpy as np

from ...lang import ast
from ...lang import types as T
from ...lang.errors import AccelError, AccelIndexError, AccelNameError, Interrupted, SizeError
from ...runtime.cancel import CancelToken
from ...runtime.memory import check_allocation
from . import scalars
from .costs import InterpCosts
from .library import CONSTANTS, ELEMENT_BYTES, LIBRARY, SLOT_BYTES, TYPE_CONSTANTS
from .model import (BuiltinFunc, Closure, DefFunc, OperatorFunc, Partial, Stored, TypeSubst,
                    Value, is_function)
from .patterns import bind, bind_sizes, check_sizes

Env = Mapping[str, Value]


@dataclass
class CellValues:
    """What running a cell's forms gives: new global bindings, top-level expression values
    and the work and depth of evaluating them (None where the interpreter did not run them)."""
    bindings: dict[str, Value] = field(default_factory=dict)
    results: list[Value] = field(default_factory=list)
    costs: InterpCosts | None = None


class Interpreter:
    def __init__(self, globals: Mapping[str, Value], types: Mapping[int, T.Type],
                 instantiations: Mapping[int, Mapping[str, T.Type]],
                 cancel: CancelToken | None = None):
        self.bindings: dict[str, Value] = {}
        self.globals: ChainMap[str, Value] = ChainMap(self.bindings, globals)  # type: ignore[arg-type]
        self.types = types
        self.instantiations = instantiations
        self.cancel = cancel
        self.costs = InterpCosts()      # work and depth of everything evaluated so far
        self._dispatch: dict[type, Callable[[Any, Env, TypeSubst], Value]] = {
            ast.Lit: self._lit, ast.Var: self._var, ast.ArrayLit: self._array,
            ast.Range: self._range, ast.TupleLit: self._tuple, ast.Project: self._project,
            ast.Index: self._index, ast.Slice: self._slice, ast.BinOp: self._binop,
            ast.UnOp: self._unop, ast.Apply: self._apply, ast.OpFunc: self._opfunc,
            ast.LeftSection: self._left_section, ast.RightSection: self._right_section,
            ast.Lambda: self._lambda, ast.Let: self._let, ast.If: self._if,
            ast.Loop: self._loop, ast.Update: self._update, ast.Ascribe: self._ascribe,
            ast.Comprehension: self._comprehension,
        }

    # ------------------------------------------------------------------ public API

    def run_forms(self, forms: SequenceType[ast.TopForm]) -> CellValues:
        """Evaluate top-level forms in order; later forms see earlier bindings. The `globals`
        given to the constructor are never mutated."""
        out = CellValues(bindings=self.bindings)
        work, depth = self.costs.work, self.costs.depth
        for form in forms:
            if isinstance(form, ast.Def):
                self.bindings[form.name] = DefFunc(form, {})
            elif isinstance(form, ast.GlobalLet):
                value = self.eval(form.value, {}, {})
                scope = bind(form.pattern, value, {}, {})
                for name in ast.pattern_names(form.pattern):
                    self.bindings[name] = scope[name]
            elif isinstance(form, ast.TopExpr):
                out.results.append(self.eval(form.expr, {}, {}))
            else:
                raise TypeError(f"not a top-level form: {form!r}")
        out.costs = InterpCosts(self.costs.work - work, self.costs.depth - depth)
        return out

    def call(self, fn: Value, args: list[Value], tsubst: TypeSubst | None = None) -> Value:
        """Call a function value (typically a global def) with interpreter values. Without
        `tsubst`, a def's type variables are inferred from the arguments' values."""
        if isinstance(fn, DefFunc):
            if tsubst is None:
                tsubst = self._infer_tsubst(fn.defn, args)
            fn = DefFunc(fn.defn, tsubst)
            if fn.arity == 0:
                return self.apply(self._def_constant(fn), args) if args else self._def_constant(fn)
        if not args:
            return fn
        return self.apply(fn, args)

    def eval(self, node: ast.Expr, env: Env, tsubst: TypeSubst) -> Value:
        return self._dispatch[type(node)](node, env, tsubst)

    def tick(self, span=None) -> None:
        """Poll for cancellation (every call, loop iteration and SOAC element)."""
        if self.cancel is not None and self.cancel.is_set():
            raise Interrupted("evaluation interrupted", span)

    def apply(self, fn: Value, args: list[Value]) -> Value:
        """Curried application: saturate `fn` as many times as `args` allow."""
        self.tick()
        if not isinstance(fn, Partial) and is_function(fn) and fn.arity == len(args):
            return self._invoke(fn, args)     # the common case: an exact call
        args = list(args)
        while args:
            if isinstance(fn, Partial):
                fn, args = fn.fn, [*fn.args, *args]
            if not is_function(fn):
                raise TypeError(f"cannot apply a non-function value {fn!r}")
            arity = fn.arity
            if len(args) < arity:
                return Partial(fn, tuple(args))
            fn = self._invoke(fn, args[:arity])
            args = args[arity:]
        return fn

    # ------------------------------------------------------------------ calls

    def _invoke(self, fn: Value, args: list[Value]) -> Value:
        if isinstance(fn, BuiltinFunc):
            result = fn.impl(self, *args)
            self.costs.builtin(fn.name, args, result)
            return result
        if isinstance(fn, Closure):
            env = fn.env
            sizes: dict[str, int | None] = {}
            for param, arg in zip(fn.params, args):
                env = bind(param, arg, env, sizes)
            return self.eval(fn.body, bind_sizes(dict(env), sizes), fn.tsubst)
        if isinstance(fn, DefFunc):
            return self._call_def(fn, args)
        if isinstance(fn, OperatorFunc):
            left, right = (args[1], args[0]) if fn.flipped else (args[0], args[1])
            return self._operator(fn.op, left, right, fn.span)
        raise TypeError(f"cannot apply {fn!r}")

    def _call_def(self, fn: DefFunc, args: list[Value]) -> Value:
        defn = fn.defn
        env: dict[str, Value] = {}
        sizes: dict[str, int | None] = {}
        for param, arg in zip(defn.params, args):
            env = bind(param, arg, env, sizes)
        bind_sizes(env, sizes)
        result = self.eval(defn.body, env, fn.tsubst)
        if defn.result is not None:
            check_sizes(defn.result, result, sizes, env, defn.result.span or defn.span)
        return result

    def _def_constant(self, fn: DefFunc) -> Value:
        """A def without parameters: evaluated on each use."""
        self.tick(fn.defn.span)
        result = self.eval(fn.defn.body, {}, fn.tsubst)
        if fn.defn.result is not None:
            check_sizes(fn.defn.result, result, {}, {}, fn.defn.result.span or fn.defn.span)
        return result

    def _infer_tsubst(self, defn: ast.Def, args: list[Value]) -> dict[str, T.Type]:
        mapping: dict[str, T.Type] = {}
        for param, arg in zip(defn.params, args):
            param_type = self.types.get(param.id)
            if param_type is not None:
                _match_value(param_type, arg, mapping)
        return mapping

    # ------------------------------------------------------------------ expressions

    def _lit(self, node: ast.Lit, env: Env, ts: TypeSubst) -> Value:
        return scalars.make(node.type, node.value)

    def _var(self, node: ast.Var, env: Env, ts: TypeSubst) -> Value:
        name = node.name
        if name in env:
            return env[name]
        if name in self.globals:
            value = self.globals[name]
            if isinstance(value, Stored):     # kept in a compiled target's form
                return value.interp
            if isinstance(value, DefFunc):
                callee = DefFunc(value.defn, self._callee_tsubst(node, ts))
                return self._def_constant(callee) if callee.arity == 0 else callee
            return value
        return self._builtin(name, node, ts)

    def _builtin(self, name: str, node: ast.Node, ts: TypeSubst) -> Value:
        if name in LIBRARY:
            return LIBRARY[name]
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name in TYPE_CONSTANTS:
            return self._type_constant(name, node, ts)
        raise AccelNameError(f"`{name}` is not defined", node.span)

    def _callee_tsubst(self, node: ast.Node, ts: TypeSubst) -> dict[str, T.Type]:
        inst = self.instantiations.get(node.id) or {}
        return {v: T.substitute(t, dict(ts)) for v, t in inst.items()}

    def _type_constant(self, name: str, node: ast.Node, ts: TypeSubst) -> Value:
        t = self.types.get(node.id)
        if t is not None:
            t = T.substitute(t, dict(ts))
        if not isinstance(t, T.Scalar):
            # Fall back on the instantiation of the constant's own scheme (`num a => a`).
            candidates = list(self._callee_tsubst(node, ts).values())
            t = candidates[0] if len(candidates) == 1 else t
        if not isinstance(t, T.Scalar):
            shown = T.show(t) if t is not None else "unknown"
            raise AccelError(f"internal error: the type of `{name}` is {shown} at run time",
                             node.span)
        return scalars.type_constant(name, t)

    def _array(self, node: ast.ArrayLit, env: Env, ts: TypeSubst) -> Value:
        out = [self.eval(e, env, ts) for e in node.elems]
        self.costs.built(out, copy=False)
        return out

    def _range(self, node: ast.Range, env: Env, ts: TypeSubst) -> Value:
        start = self.eval(node.start, env, ts)
        end = self.eval(node.end, env, ts)
        step = self.eval(node.step, env, ts) if node.step is not None else type(start)(1)
        if int(step) == 0:
            raise SizeError("range step is 0", node.span)
        stop = int(end) + ((1 if int(step) > 0 else -1) if node.inclusive else 0)
        sign = 1 if int(step) > 0 else -1      # (len() of a range past 2**63 overflows)
        count = max(0, (stop - int(start) + int(step) - sign) // int(step))
        check_allocation(count * ELEMENT_BYTES, f"a range of {count} elements", node.span)
        cls, out = type(start), []
        for i, x in enumerate(range(int(start), stop, int(step))):
            if i % 1024 == 0:
                self.tick(node.span)
            out.append(cls(x))
        self.costs.built(out)
        return out

    def _tuple(self, node: ast.TupleLit, env: Env, ts: TypeSubst) -> Value:
        return tuple(self.eval(e, env, ts) for e in node.elems)

    def _project(self, node: ast.Project, env: Env, ts: TypeSubst) -> Value:
        return self.eval(node.expr, env, ts)[node.index]

    def _index(self, node: ast.Index, env: Env, ts: TypeSubst) -> Value:
        xs = self._indexed(node.expr, env, ts)
        i = self.eval(node.index, env, ts)
        self.costs.op()
        return xs[_checked_index(i, len(xs), node)]

    def _indexed(self, node: ast.Expr, env: Env, ts: TypeSubst) -> Value:
        """The array an index or a slice reads: a global kept flat is read in place
        (`Stored.array`), not converted whole for a few elements."""
        if isinstance(node, ast.Var) and node.name not in env:
            value = self.globals.get(node.name)
            if isinstance(value, Stored):
                return value.array()
        return self.eval(node, env, ts)

    def _slice(self, node: ast.Slice, env: Env, ts: TypeSubst) -> Value:
        xs = self._indexed(node.expr, env, ts)
        if node.step is not None:
            return self._strided(node, xs, env, ts)
        lo = int(self.eval(node.lo, env, ts)) if node.lo is not None else 0
        hi = int(self.eval(node.hi, env, ts)) if node.hi is not None else len(xs)
        if not 0 <= lo <= hi <= len(xs):
            raise AccelIndexError(f"slice {lo}:{hi} out of bounds for array of length {len(xs)}",
                                  node.span)
        out = xs[lo:hi]
        self.costs.built(out)
        return out

    def _strided(self, node: ast.Slice, xs: Value, env: Env, ts: TypeSubst) -> Value:
        """`xs[i:j:s]` (docs/language.md, "Slices"): i, i + s, ... up to j, not included; with
        s < 0, i defaults to n - 1 and j to -1 (`xs[::-1]` reverses)."""
        n, step = len(xs), int(self.eval(node.step, env, ts))
        lo = int(self.eval(node.lo, env, ts)) if node.lo is not None else (
            0 if step > 0 else n - 1)
        hi = int(self.eval(node.hi, env, ts)) if node.hi is not None else (
            n if step >= 0 else -1)
        if step == 0:
            raise AccelIndexError(f"slice {lo}:{hi}:0 has step 0", node.span)
        if not (0 <= lo <= hi <= n if step > 0 else -1 <= hi <= lo < n):
            raise AccelIndexError(f"slice {lo}:{hi}:{step} out of bounds for array of length "
                                  f"{n}", node.span)
        out = xs[lo:(None if hi < 0 else hi):step]
        self.costs.built(out)
        return out

    def _binop(self, node: ast.BinOp, env: Env, ts: TypeSubst) -> Value:
        left = self.eval(node.left, env, ts)
        if node.op == "&&":
            self.costs.op()
            return np.bool_(bool(self.eval(node.right, env, ts))) if left else np.bool_(False)
        if node.op == "||":
            self.costs.op()
            return np.bool_(True) if left else np.bool_(bool(self.eval(node.right, env, ts)))
        return self._operator(node.op, left, self.eval(node.right, env, ts), node.span)

    def _operator(self, op: str, left: Value, right: Value, span) -> Value:
        if op == "++":
            check_allocation(2 * (len(left) + len(right)) * SLOT_BYTES, "++", span)  # copies
            result = list(left) + list(right)
            self.costs.builtin("concat", [left, right], result)
            return result
        if op.isidentifier():   # `(min)` written as an operator function
            return self.apply(self._builtin_or_global(op), [left, right])
        try:
            result = scalars.binop(op, left, right)
        except AccelError as err:
            if err.span is None:
                err.span = span
            raise
        self.costs.op()
        return result

    def _builtin_or_global(self, name: str) -> Value:
        value = self.globals.get(name)
        return value if value is not None else LIBRARY[name]

    def _unop(self, node: ast.UnOp, env: Env, ts: TypeSubst) -> Value:
        value = self.eval(node.operand, env, ts)
        self.costs.op()
        return scalars.negate(value) if node.op == "-" else scalars.logical_not(value)

    def _apply(self, node: ast.Apply, env: Env, ts: TypeSubst) -> Value:
        if self._is_builtin_cond(node, env):
            cond, then, else_ = node.args
            chosen = then if self.eval(cond, env, ts) else else_
            self.costs.op()
            return self.eval(chosen, env, ts)
        fn = self.eval(node.fn, env, ts)
        args = [self.eval(a, env, ts) for a in node.args]
        try:
            return self.apply(fn, args)
        except AccelError as err:
            if err.span is None:
                err.span = node.span
            raise

    def _is_builtin_cond(self, node: ast.Apply, env: Env) -> bool:
        """`cond c a b` evaluates only the chosen branch, like `if`."""
        return (isinstance(node.fn, ast.Var) and node.fn.name == "cond" and len(node.args) == 3
                and "cond" not in env and "cond" not in self.globals)

    def _opfunc(self, node: ast.OpFunc, env: Env, ts: TypeSubst) -> Value:
        if node.op.isidentifier():
            return self._var(ast.Var(node.op, span=node.span, id=node.id), env, ts)
        return OperatorFunc(node.op, node.span)

    def _left_section(self, node: ast.LeftSection, env: Env, ts: TypeSubst) -> Value:
        return Partial(OperatorFunc(node.op, node.span), (self.eval(node.left, env, ts),))

    def _right_section(self, node: ast.RightSection, env: Env, ts: TypeSubst) -> Value:
        return Partial(OperatorFunc(node.op, node.span, flipped=True),
                       (self.eval(node.right, env, ts),))

    def _lambda(self, node: ast.Lambda, env: Env, ts: TypeSubst) -> Value:
        return Closure(node.params, node.body, env, ts)

    def _let(self, node: ast.Let, env: Env, ts: TypeSubst) -> Value:
        value = self.eval(node.value, env, ts)
        sizes: dict[str, int | None] = {}
        scope = bind(node.pattern, value, env, sizes)
        return self.eval(node.body, bind_sizes(scope, sizes), ts)

    def _if(self, node: ast.If, env: Env, ts: TypeSubst) -> Value:
        chosen = node.then if self.eval(node.cond, env, ts) else node.else_
        self.costs.op()
        return self.eval(chosen, env, ts)

    def _loop(self, node: ast.Loop, env: Env, ts: TypeSubst) -> Value:
        acc = self.eval(node.init, env, ts)
        form = node.form
        if isinstance(form, ast.ForRange):
            bound = self.eval(form.bound, env, ts)
            for i in range(int(bound)):
                self.tick(node.span)
                self.costs.op()         # the iteration's bound check
                scope = bind(node.pattern, acc, env)
                scope[form.var] = type(bound)(i)
                acc = self.eval(node.body, scope, ts)
        elif isinstance(form, ast.ForIn):
            for x in self.eval(form.array, env, ts):
                self.tick(node.span)
                self.costs.op()
                scope = bind(form.pattern, x, bind(node.pattern, acc, env))
                acc = self.eval(node.body, scope, ts)
        else:
            while True:
                self.tick(node.span)
                scope = bind(node.pattern, acc, env)
                if not self.eval(form.cond, scope, ts):
                    break
                self.costs.op()
                acc = self.eval(node.body, scope, ts)
        return acc

    def _update(self, node: ast.Update, env: Env, ts: TypeSubst) -> Value:
        array = self.eval(node.array, env, ts)
        indices = [self.eval(i, env, ts) for i in node.indices]
        value = self.eval(node.value, env, ts)

        def replace(xs: list, path: list[Value]) -> list:
            k = _checked_index(path[0], len(xs), node)
            out = list(xs)
            out[k] = value if len(path) == 1 else replace(xs[k], path[1:])
            return out

        result = replace(array, indices)
        self.costs.built(result)       # a copy, as the flat target's scatter makes
        return result

    def _ascribe(self, node: ast.Ascribe, env: Env, ts: TypeSubst) -> Value:
        return self.eval(node.expr, env, ts)

    # ------------------------------------------------------------------ comprehensions

    def _comprehension(self, node: ast.Comprehension, env: Env, ts: TypeSubst) -> Value:
        """The body's elements are computed in parallel, each with the qualifiers that produce
        its scope (a zipped comprehension computes each branch's scopes as a step first)."""
        def body(scope: Env) -> Value:
            return self.eval(node.body, scope, ts)

        if len(node.branches) == 1:
            out = self.costs.parallel(body, self._qualifier_scopes(node.branches[0], 0, env, ts))
            self.costs.produced(out)
            return out
        branches = [self.costs.parallel(_same, self._qualifier_scopes(qs, 0, env, ts))
                    for qs in node.branches]
        counts = [len(b) for b in branches]
        if len(set(counts)) > 1:
            shown = " and ".join(str(c) for c in counts)
            raise SizeError(f"zipped comprehension: the branches give different numbers of "
                            f"elements ({shown})", node.span)
        out = self.costs.parallel(body, map(_merged, zip(*branches)))
        self.costs.produced(out)
        return out

    def _qualifier_scopes(self, qualifiers: tuple[ast.Qualifier, ...], k: int, env: Env,
                          ts: TypeSubst) -> Iterator[Env]:
        """The scopes the qualifiers `k...` produce from `env`, in order (list-comprehension
        semantics: each qualifier sees the variables bound before it)."""
        if k == len(qualifiers):
            yield env
            return
        qual = qualifiers[k]
        if isinstance(qual, ast.Generator):
            source = self.eval(qual.source, env, ts)
            path = self.costs.depth          # the depth on the way to this generator
            for x in source:
                self.tick(qual.span)
                self.costs.depth = path + 1  # its elements are one parallel step
                yield from self._qualifier_scopes(qualifiers, k + 1, bind(qual.pattern, x, env), ts)
        elif isinstance(qual, ast.Guard):
            if self.eval(qual.cond, env, ts):
                yield from self._qualifier_scopes(qualifiers, k + 1, env, ts)
        else:
            scope = bind(qual.pattern, self.eval(qual.value, env, ts), env)
            yield from self._qualifier_scopes(qualifiers, k + 1, scope, ts)


def _same(scope: Env) -> Env:
    return scope


def _merged(scopes: tuple[Env, ...]) -> Env:
    """One scope from a zipped comprehension's branches (the later branch wins)."""
    merged: dict[str, Value] = {}
    for scope in scopes:
        merged.update(scope)
    return merged


def _checked_index(i: Value, length: int, node: ast.Node) -> int:
    k = int(i)
    if not 0 <= k < length:
        raise AccelIndexError(f"index {k} out of bounds for array of length {length}", node.span)
    return k


def _match_value(t: T.Type, value: Value, mapping: dict[str, T.Type]) -> None:
    """Bind the type variables of `t` from the run-time shape of `value` (for `call`)."""
    if isinstance(t, T.TypeVar):
        found = value_type(value)
        if found is not None:
            mapping.setdefault(t.name, found)
    elif isinstance(t, T.Array) and isinstance(value, list) and value:
        _match_value(t.elem, value[0], mapping)
    elif isinstance(t, T.Tuple) and isinstance(value, tuple):
        for sub, part in zip(t.elems, value):
            _match_value(sub, part, mapping)


def value_type(value: Value) -> T.Type | None:
    """The type of a value as far as it shows (None for empty arrays and functions)."""
    if isinstance(value, tuple):
        parts = [value_type(v) for v in value]
        return None if any(p is None for p in parts) else T.Tuple(tuple(parts))  # type: ignore
    if isinstance(value, list):
        elem = value_type(value[0]) if value else None
        return T.Array(elem) if elem is not None else None
    try:
        return T.Scalar(scalars.scalar_name(value))
    except TypeError:
        return None
