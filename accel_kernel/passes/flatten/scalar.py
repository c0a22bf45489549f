"""Scalar code: vectorisation avoidance. A maximal scalar expression becomes one `scalar`
(outside every map) or one `map` of a `ScalarFn` over its lifted operands; `+` is never lifted
on its own and constants are never replicated.

*Scalar code* is built from literals, variables holding scalars, operators (`&&` and `||` only
with scalar code on their right), `if` whose branches are scalar code (both are evaluated
lazily by the scalar function: LIFT-IF-SELECT), `let`, tuples, projections, the scalar library
functions (`min`, `sqrt`, `i64`, `select`, ...) and applications of lambdas to scalar code
(inlined). Any other sub-expression of scalar type (`xs[i]`, `length xs`, `reduce ...`) is an
*operand*: flattened on its own first, then read by the scalar function. Operands that are
unlifted scalars are the function's free variables (`ScalarFn.free`); lifted ones are its
parameters, all brought to the deepest level among them. Reductions inside scalar code over
whole arrays (SEQ-INNER, SEQ-INNER-ROWS) are in `seq_inner.py`.
"""
from __future__ import annotations

import math
import weakref

from dataclasses import replace
from typing import Any

from ...ir.flat import Const, FVar, Map, Regular, Scalar, ScalarFn, ScalarRep, TupleRep
from ...ir.flat_printer import make_fn
from ...lang import ast, scalar_ops
from ...lang import types as T
from .context import (Builder, Env, FunVal, Leaf, Level, TupleVal, map_leaves,
                      position)
from .reps import row_rep
from .seq_inner import (LOCAL, PARTIAL_OPS, SCALAR_BUILTINS, LocalArray, SeqInnerBuild,
                        SeqInnerClassify, checked_read, unlifted_rows, unlifted_vector,
                        worst)

CONSTANTS = tuple(name for name, entry in scalar_ops.BUILTINS.items() if not entry.arity)
def is_scalar_type(t: T.Type | None) -> bool:
    if isinstance(t, T.Scalar):
        return True
    if isinstance(t, T.TypeVar):
        return True
    return isinstance(t, T.Tuple) and all(is_scalar_type(e) for e in t.elems)


def per_point_scalar(v: Any) -> bool:
    if isinstance(v, Leaf):
        rep = v.rep if v.level is None else row_rep(v.rep)
        return isinstance(rep, ScalarRep)
    if isinstance(v, TupleVal):
        return all(per_point_scalar(p) for p in v.parts)
    return v is LOCAL


def constant_value(name: str, t: T.Type | None) -> ast.Expr:
    """`zero`, `one`, `lowest`, `highest`, `pi` of type `t`, as a literal (an infinity as
    `1.0 / 0.0`, which prints and parses back)."""
    elem = scalar_ops.BUILTINS[name].result_type(t.name if isinstance(t, T.Scalar) else "i64")
    value = scalar_ops.constant_value(name, elem)
    if elem in scalar_ops.INTS:
        return ast.Lit(value, elem)
    if math.isinf(value):
        return ast.BinOp("/", ast.Lit(math.copysign(1.0, value), elem), ast.Lit(0.0, elem))
    return ast.Lit(float(value), elem)


class ScalarCode(SeqInnerClassify):
    """Mixin of the flattener: classification and building of scalar code."""
    b: Builder

    # ------------------------------------------------------------------ classification
    def classify(self, e: ast.Expr, env: Env) -> str | None:
        """"pure" (scalar code only), "scalar" (scalar code with operands to flatten first,
        or itself such an operand), or None (not of a scalar type: an array, a function).
        An operator's kind is remembered for its environment (without keeping that alive):
        `inline_kind` asks again at every node of a chain of operators (`1 + 1 + ... + 1`),
        which would otherwise cost the square of its length."""
        chained = isinstance(e, (ast.BinOp, ast.UnOp))
        if chained:
            memo = self.__dict__.setdefault("_kinds", {})
            known = memo.get((id(e), id(env)))
            if known is not None and known[0] is e and known[1]() is env:
                return known[2]
        kind = self.inline_kind(e, env)
        kind = kind if kind is not None else self.opaque(e)
        if chained:
            memo[(id(e), id(env))] = (e, weakref.ref(env), kind)
        return kind

    def inline_kind(self, e: ast.Expr, env: Env) -> str | None:
        """The kind of `e` when its own node can be part of a scalar function (its children
        may still be operands); None when it cannot."""
        if isinstance(e, ast.Lit):
            return "pure"
        if isinstance(e, ast.Var):
            v = self.lookup(env, e.name)
            if v is None and e.name in CONSTANTS:
                return "pure"
            return "pure" if v is not None and per_point_scalar(v) else None
        if isinstance(e, ast.Ascribe):
            return self.inline_kind(e.expr, env)
        if isinstance(e, ast.BinOp):
            if e.op == "++":
                return None
            if e.op in ("&&", "||"):
                right = self.classify(e.right, lazy(env))
                if right != "pure" or checked_read(e.right):
                    return None
                return worst(self.classify(e.left, env), right)
            return worst(self.classify(e.left, env), self.classify(e.right, env))
        if isinstance(e, ast.UnOp):
            return self.classify(e.operand, env)
        if isinstance(e, ast.If):
            if checked_read(e.then) or checked_read(e.else_):
                return None                  # a length check only where the branch is taken
            branches = lazy(env)
            if self.classify(e.then, branches) == "pure" \
                    and self.classify(e.else_, branches) == "pure":
                return worst(self.classify(e.cond, env), "pure")
            return None
        if isinstance(e, ast.Index):
            return self._classify_read(e, env) if env.lazy else None
        if isinstance(e, ast.Let):
            if not is_scalar_type(self.type_of(e.value)):
                return self._classify_local_array(e, env)
            value = self.classify(e.value, env)
            body = self.classify(e.body, self._locals(env, [e.pattern]))
            return worst(value, body)
        if isinstance(e, ast.TupleLit):
            return worst(*(self.classify(p, env) for p in e.elems))
        if isinstance(e, ast.Project):
            return self.classify(e.expr, env) if self.inline_kind(e.expr, env) else None
        if isinstance(e, ast.Apply):
            return self._classify_apply(e, env)
        if isinstance(e, ast.Loop):
            return self._classify_loop(e, env)
        return None

    def _classify_read(self, e: ast.Index, env: Env) -> str | None:
        """LIFT-READ-LAZY: in a branch, `xs[i]` (`xss[i][j]`) of an array the same for
        every point, of scalars (or tuples of them), every index given and each scalar code
        that cannot fail, is scalar code: the scalar function reads it, bounds checked, only
        where the branch runs. Elsewhere such a read stays an operand (a `gather`, fused
        into the kernel that reads it); in a branch, an operand would need the points split
        by the branch (LIFT-IF-PARTITION)."""
        found = read_chain(e)
        if found is None:
            return None
        base, indices = found
        v = self.lookup(env, base.name)
        if not (len(indices) == 1 and unlifted_vector(v)
                or len(indices) == 2 and unlifted_rows(v)):
            return None
        for index in indices:
            if self.classify(index, env) != "pure" or _may_fail(index, env, self):
                return None                  # (all indices are computed before the checks)
        return "pure"

    def _classify_loop(self, e: ast.Loop, env: Env) -> str | None:
        """A `for i < n` or `while` loop whose state is scalar and whose condition and body
        are scalar code reading nothing but the state, the counter and per-point scalars is
        scalar code itself: each point runs its own loop inside the scalar function
        (LIFT-MAP-SCALAR) instead of the loop being lifted over the points."""
        form = e.form
        if not isinstance(form, (ast.While, ast.ForRange)) \
                or not is_scalar_type(self.type_of(e.init)):
            return None
        names = [e.pattern] + ([ast.PVar(form.var)] if isinstance(form, ast.ForRange) else [])
        inner = self._locals(env, names)
        if self.classify(e.body, inner) != "pure" or checked_read(e.body):
            return None
        if isinstance(form, ast.While):
            if self.classify(form.cond, inner) != "pure":
                return None
            return worst(self.classify(e.init, env), "pure")
        return worst(self.classify(e.init, env), self.classify(form.bound, env))

    def opaque(self, e: ast.Expr) -> str | None:
        return "scalar" if is_scalar_type(self.type_of(e)) else None

    def _classify_apply(self, e: ast.Apply, env: Env) -> str | None:
        fn, args = e.fn, e.args
        if isinstance(fn, ast.Var) and fn.name in ("reduce", "length") \
                and self.lookup(env, fn.name) is None:
            return self._classify_inner(e, env)
        kinds = [self.classify(a, env) for a in args]
        if isinstance(fn, ast.Var) and self.lookup(env, fn.name) is None:
            if SCALAR_BUILTINS.get(fn.name) == len(args):
                return worst(*kinds)
            return None
        if isinstance(fn, ast.OpFunc) and len(args) == 2 and fn.op != "++":
            return worst(*kinds)
        closure = self._closure(fn, env)
        if closure is not None and len(closure.lam.params) == len(args):
            inner = Env(self._locals_scope(closure.scope, closure.lam.params),
                        seq_inner=env.seq_inner, lazy=env.lazy)
            return worst(*kinds, self.classify(closure.lam.body, inner))
        return None

    def _closure(self, fn: ast.Expr, env: Env) -> FunVal | None:
        if isinstance(fn, ast.Lambda):
            return FunVal("closure", fn, fn, env.scope)
        if isinstance(fn, ast.Var):
            v = self.lookup(env, fn.name)
            if isinstance(v, FunVal) and v.kind == "closure" and not v.args:
                return v
        return None

    def _locals(self, env: Env, patterns) -> Env:
        return replace(env, scope=self._locals_scope(env.scope, patterns))

    def _locals_scope(self, scope, patterns) -> dict:
        out = dict(scope)
        for p in patterns:
            for name in ast.pattern_names(p):
                out[name] = LOCAL
        return out

    # ------------------------------------------------------------------ building
    def scalar_code(self, e: ast.Expr, env: Env) -> Any:
        """Flatten scalar code `e` (classified "pure" or "scalar") into one operation."""
        builder = _Body(self, e)
        builder.reserved = self.unlifted_arrays(e, env, set())
        builder.checks = []
        body = builder.expr(e, env, root=True)
        return self.emit_scalar(body, builder, self.type_of(e) or builder.infer(body), env, e)

    def emit_scalar(self, body: ast.Expr, builder: "_Body", t: T.Type | None, env: Env,
                    node: ast.Node) -> Any:
        # the lengths SEQ-INNER's zips and maps need, checked once outside the map: code
        # that may fail like a partial operator, run with the function (GUARD)
        checks = builder.checks or []
        trivial = None if checks else self._trivial(body, builder)
        if trivial is not None:
            return trivial
        may_fail = builder.partial or bool(checks)
        params = list(builder.params.items())
        levels = [leaf.level for _, leaf in params]
        home = self._deepest(levels, env)
        overs = [leaf.over for leaf in builder.free.values() if leaf.over is not None]
        if may_fail and overs and env.level is not None:    # may fail: only where its
            home = self._deepest(levels + overs, env)         # points exist (moved out of
            #                                                   every map: GUARDed by AVOID)
        if may_fail and env.floor is not None and home is not None \
                and home.depth < env.floor.depth:       # on the branch's points only
            home = position(env.floor, env.level)

        def emit(at: Level | None) -> Any:
            for check in checks:
                check()
            return self._emit_at(at, body, builder, t, env, node, overs)

        if may_fail and env.level is not None and home is not env.level:
            # may fail and is moved out of the innermost map: only if it has a point (GUARD)
            return self.guarded(lambda at: emit(at.level), env, env.at(home), node)
        if checks and env.level is not None:
            # the function stays in its map: only the checks of the unlifted arrays it reads
            # need a point, and their condition says so (the kernel itself is not guarded)
            reached = self.reached(env.level)
            for check in checks:
                check(reached)
            return self._emit_at(home, body, builder, t, env, node, overs)
        return emit(home)

    def _emit_at(self, home: Level | None, body: ast.Expr, builder: "_Body",
                 t: T.Type | None, env: Env, node: ast.Node, overs: list[Level]) -> Any:
        params = list(builder.params.items())
        if home is None:
            fn = make_fn((), body, builder.free_reps())
            rep = _rep_of(t, None)
            with self.b.rule("SCALAR", node, "scalar code outside every map"):
                x = self.b.emit(Scalar(fn), rep, "s")
            over = self._deepest_over(overs, env)
            return map_leaves(self.split(x, None), lambda leaf: Leaf(leaf.atom, None, over))
        args = [self.to_level(leaf, home).atom for _, leaf in params]
        patterns = tuple(ast.PVar(name) for name, _ in params)
        if not args:                         # failing code kept below the floor
            args, patterns = [self.iota(self.points(home))], (ast.PWild(),)
        fn = make_fn(patterns, body, builder.free_reps())
        rule = "LIFT-IF-SELECT" if any(isinstance(n, ast.If) for n in ast.walk(body)) \
            else "LIFT-MAP-SCALAR"
        note = "one map of the scalar function over its lifted operands"
        if fn.free:
            note += "; avoided (free): " + ", ".join(f.name for f in fn.free)
        if rule == "LIFT-IF-SELECT":
            note = "both branches are scalar code: one map, the branch chosen per element"
        with self.b.rule(rule, node, note):
            x = self.b.emit(Map(fn, tuple(args)), _rep_of(t, home), "m")
        return self.split(x, home)

    def _deepest(self, levels: list[Level | None], env: Env) -> Level | None:
        best: Level | None = None
        for level in levels:
            found = position(level, env.level)
            if found is not None and (best is None or found.depth > best.depth):
                best = found
        return best

    def _deepest_over(self, overs: list[Level], env: Env) -> Level | None:
        """The deepest level the operands are `over`, as a level of `env`'s chain; moved
        out of every map (`env.level` None: AVOID), the level itself."""
        if not overs:
            return None
        if env.level is None:
            return max(overs, key=lambda level: level.depth)
        return self._deepest(overs, env)

    def _trivial(self, body: ast.Expr, builder: "_Body") -> Any:
        """A body that computes nothing: its value is an operand, a constant or a tuple."""
        if isinstance(body, ast.Var):
            if body.name in builder.params:
                return builder.params[body.name]
            if body.name in builder.free:
                return builder.free[body.name]
            return None
        if isinstance(body, ast.Lit) and not isinstance(body.value, float):
            return Leaf(Const(body.value, body.type))
        if isinstance(body, ast.Lit):
            return Leaf(Const(body.value, body.type))
        if isinstance(body, ast.TupleLit):
            parts = [self._trivial(p, builder) for p in body.elems]
            return TupleVal(tuple(parts)) if all(p is not None for p in parts) else None
        return None

    def scalar_fn(self, fun: FunVal, arity: int, what: str) -> ScalarFn:
        """The ScalarFn of a function passed to `reduce`/`scan` (no lifted operands)."""
        params, body, builder = self.fn_body(fun, arity, what)
        if builder.params:
            raise NotImplementedError(f"flatten: the operator of `{what}` reads lifted "
                                      "values, which is not built yet")
        return make_fn(params, body, builder.free_reps())

    def fn_body(self, fun: FunVal, arity: int, what: str):
        node = fun.node
        if fun.kind == "op" and len(fun.args) + arity == 2:
            builder = _Body(self, node)
            names = ["a", "b"][len(fun.args):]
            given = [builder.value(a) for a in fun.args]
            operands = given + [ast.Var(n) for n in names]
            body = ast.BinOp(fun.name, operands[0], operands[1], span=node.span)
            return tuple(ast.PVar(n) for n in names), body, builder
        if fun.kind == "builtin" and SCALAR_BUILTINS.get(fun.name) == len(fun.args) + arity:
            builder = _Body(self, node)
            names = ["a", "b", "c"][:arity]
            given = [builder.value(a) for a in fun.args]
            body = ast.Apply(ast.Var(fun.name), tuple(given + [ast.Var(n) for n in names]),
                             span=node.span)
            return tuple(ast.PVar(n) for n in names), body, builder
        if fun.kind == "closure" and not fun.args and len(fun.lam.params) == arity:
            builder = _Body(self, fun.lam.body)
            inner = Env(self._locals_scope(fun.scope, fun.lam.params))
            if self.classify(fun.lam.body, inner) != "pure" or checked_read(fun.lam.body):
                # (a zip's length check would run even where the operator never does)
                raise NotImplementedError(f"flatten: the function passed to `{what}` is not "
                                          "scalar code, which is not built yet")
            body = builder.expr(fun.lam.body, inner, root=False)
            return fun.lam.params, body, builder
        raise NotImplementedError(f"flatten: this function passed to `{what}` is not built "
                                  "yet")


def _may_fail(e: ast.Expr, env: Env, fl: ScalarCode) -> bool:
    """Whether the scalar function's own part of `e` may raise: a partial operator whose
    right operand is not a literal it is defined for, or anything but operators, builtins,
    tuples and branches. An operand (`xs[i]`, `length xs`) is flattened on its own, in
    order, before any later one: its errors already come first."""
    if isinstance(e, (ast.Lit, ast.Var)) or fl.inline_kind(e, env) is None:
        return False
    if isinstance(e, ast.Ascribe):
        return _may_fail(e.expr, env, fl)
    if isinstance(e, ast.BinOp) and e.op in ("&&", "||"):
        return _may_fail(e.left, env, fl) or _may_fail(e.right, lazy(env), fl)
    if isinstance(e, ast.BinOp):
        safe = e.op not in PARTIAL_OPS or (
            isinstance(e.right, ast.Lit) and not isinstance(e.right.value, bool)
            and (e.right.value > 0 if e.op in ("/", "%") else e.right.value >= 0))
        return not safe or _may_fail(e.left, env, fl) or _may_fail(e.right, env, fl)
    if isinstance(e, ast.UnOp):
        return _may_fail(e.operand, env, fl)
    if isinstance(e, ast.Project):
        return _may_fail(e.expr, env, fl)
    if isinstance(e, ast.TupleLit):
        return any(_may_fail(p, env, fl) for p in e.elems)
    if isinstance(e, ast.If):
        return _may_fail(e.cond, env, fl) or any(_may_fail(p, lazy(env), fl)
                                                  for p in (e.then, e.else_))
    if isinstance(e, ast.Apply) and isinstance(e.fn, ast.Var) \
            and fl.lookup(env, e.fn.name) is None and e.fn.name in SCALAR_BUILTINS:
        return any(_may_fail(a, env, fl) for a in e.args)
    return True


def lazy(env: Env) -> Env:
    """`env` for code that only some evaluations reach (a branch, the right of `&&`)."""
    return env if env.lazy else replace(env, lazy=True)


def _chain_nodes(e: ast.Expr) -> list[ast.Index]:
    """The `Index` nodes of `xss[i][j]`, outermost array first."""
    out = []
    while isinstance(e, ast.Index):
        out.append(e)
        e = e.expr
    return out[::-1]


def read_chain(e: ast.Index) -> tuple[ast.Var, list[ast.Expr]] | None:
    """`xss[i][j]` as (`xss`, [i, j]) when the array is a variable, else None."""
    nodes = _chain_nodes(e)
    base = nodes[0].expr
    while isinstance(base, ast.Ascribe):
        base = base.expr
    if not isinstance(base, ast.Var):
        return None
    return base, [node.index for node in nodes]


def _rep_of(t: T.Type | None, level: Level | None):
    if isinstance(t, T.Tuple):
        return TupleRep(tuple(_rep_of(e, level) for e in t.elems))
    elem = t.name if isinstance(t, T.Scalar) else "i64"
    return ScalarRep(elem) if level is None else Regular(elem, 1)


class _Body(SeqInnerBuild):
    """Builds one scalar function body: variables that hold operands are renamed to the
    function's parameters (lifted operands) or free variables (unlifted ones)."""

    def __init__(self, fl: ScalarCode, root: ast.Node):
        self.fl = fl
        self.params: dict[str, Leaf] = {}
        self.free: dict[str, Leaf] = {}
        self.partial = False
        self.root_binders = {n.name for n in ast.walk(root) if isinstance(n, ast.PVar)}
        self.reserved: set[str] = set()     # free arrays' names (SEQ-INNER)
        self.checks: list | None = None     # length checks left to `emit_scalar` (None: now)
        self.checked: set[int] = set()      # the zips and maps whose check is made
        self.guards: list[Any] = []         # the maps whose element code is being built:
        #                                     reached only when they have an element
        self.rows_read = False              # a loop read rows (SEQ-INNER-ROWS)

    def free_reps(self) -> dict:
        return {name: leaf.atom.rep for name, leaf in self.free.items()
                if isinstance(leaf.atom, FVar)}

    def operand(self, leaf: Leaf, name: str | None) -> ast.Expr:
        """A variable (or literal) standing for `leaf` in the body."""
        atom = leaf.atom
        if isinstance(atom, Const):
            return ast.Lit(atom.value, atom.elem)
        if leaf.level is None:
            self.free[atom.name] = leaf
            return ast.Var(atom.name)
        for existing, other in self.params.items():
            if other == leaf:
                return ast.Var(existing)
        if name is None or name in self.params or name in self.root_binders:
            name = atom.name
        if name in self.reserved or name in self.params:
            name = self.fresh(f"{atom.name}_p")
        self.params[name] = leaf
        return ast.Var(name)

    def value(self, v: Any, name: str | None = None) -> ast.Expr:
        if isinstance(v, Leaf):
            return self.operand(v, name)
        if isinstance(v, TupleVal):
            return ast.TupleLit(tuple(self.value(p) for p in v.parts))
        raise NotImplementedError("flatten: a function where a scalar was expected")

    def expr(self, e: ast.Expr, env: Env, root: bool) -> ast.Expr:
        fl = self.fl
        if isinstance(e, ast.Lit):
            return e
        if isinstance(e, ast.Var):
            v = fl.lookup(env, e.name)
            if v is LOCAL:
                return e
            if v is None and e.name in CONSTANTS:
                lit = constant_value(e.name, fl.type_of(e))
                return lit
            return self.value(v, e.name if root else None)
        if isinstance(e, ast.Ascribe):
            return self.expr(e.expr, env, root)
        if isinstance(e, ast.Index) and env.lazy and fl.inline_kind(e, env) is not None:
            return self.read(e, env, root)      # LIFT-READ-LAZY
        if fl.inline_kind(e, env) is None:    # an operand: flattened on its own (AVOID)
            if isinstance(e, ast.Project):        # a component of an operand
                v = fl.flatten(e.expr, env)
                if isinstance(v, Leaf) and isinstance(v.atom, FVar):
                    v = fl.split(v.atom, v.level)
                return self.value(v.parts[e.index] if isinstance(v, TupleVal) else v)
            return self.value(fl.flatten(e, env))
        if isinstance(e, ast.BinOp) and e.op in ("&&", "||"):     # (the right is pure)
            return ast.BinOp(e.op, self.expr(e.left, env, root),
                             self.expr(e.right, lazy(env), root), span=e.span, id=e.id)
        if isinstance(e, ast.BinOp):
            if e.op in PARTIAL_OPS:
                self.partial = True
            left, right = self.ordered([e.left, e.right], env, root)
            return ast.BinOp(e.op, left, right, span=e.span, id=e.id)
        if isinstance(e, ast.UnOp):
            return ast.UnOp(e.op, self.expr(e.operand, env, root), span=e.span, id=e.id)
        if isinstance(e, ast.If):
            branches = lazy(env)
            return ast.If(self.expr(e.cond, env, root), self.expr(e.then, branches, root),
                          self.expr(e.else_, branches, root), span=e.span, id=e.id)
        if isinstance(e, ast.TupleLit):
            return ast.TupleLit(tuple(self.ordered(list(e.elems), env, root)),
                                span=e.span, id=e.id)
        if isinstance(e, ast.Let) and not is_scalar_type(fl.type_of(e.value)):
            self.base(e.value, env)          # its lengths are checked even if it is not read
            inner = replace(env, scope={**env.scope,
                                        e.pattern.name: LocalArray(e.value, env)})
            return self.expr(e.body, inner, root)
        if isinstance(e, ast.Let):
            inner = fl._locals(env, [e.pattern])
            if fl.classify(e.body, inner) == "pure":
                return ast.Let(e.pattern, self.expr(e.value, env, root),
                               self.expr(e.body, inner, root), span=e.span, id=e.id)
            # the body has operands that may read the bound names: bind them first
            value = fl.flatten(e.value, env)
            return self.expr(e.body, fl.bind_pattern(e.pattern, value, env), root)
        if isinstance(e, ast.Project):
            return ast.Project(self.expr(e.expr, env, root), e.index, span=e.span, id=e.id)
        if isinstance(e, ast.Apply):
            return self.apply(e, env, root)
        if isinstance(e, ast.Loop):
            form = e.form
            names = [e.pattern] + ([ast.PVar(form.var)] if isinstance(form, ast.ForRange)
                                   else [])
            inner = fl._locals(env, names)
            if isinstance(form, ast.While):
                init = self.expr(e.init, env, root)
                form = ast.While(self.expr(form.cond, inner, root), span=form.span)
            else:
                init, bound = self.ordered([e.init, form.bound], env, root)
                form = ast.ForRange(form.var, bound, span=form.span)
            return ast.Loop(e.pattern, init, form, self.expr(e.body, inner, root),
                            span=e.span, id=e.id)
        return self.value(fl.construct(e, env))

    def apply(self, e: ast.Apply, env: Env, root: bool) -> ast.Expr:
        fl = self.fl
        if isinstance(e.fn, ast.Var) and e.fn.name in ("reduce", "length") \
                and fl.lookup(env, e.fn.name) is None:
            if e.fn.name == "length":
                return self.length(e.args[0], env, root)
            return self.sequential_reduce(e, env, root)
        closure = fl._closure(e.fn, env)
        if closure is not None and fl.classify(closure.lam.body, Env(
                fl._locals_scope(closure.scope, closure.lam.params),
                seq_inner=env.seq_inner, lazy=env.lazy)) == "scalar":
            # the body has operands that may read the parameters: bind them first, as `let`
            inner = Env(closure.scope, env.level, env.trusted, env.floor, env.seq_inner,
                        env.lazy)
            for param, arg in zip(closure.lam.params, e.args):
                inner = fl.bind_pattern(param, fl.flatten(arg, env), inner)
            return self.expr(closure.lam.body, inner, False)
        return self.combine(e.fn, self.ordered(list(e.args), env, root), env, root, e)

    def read(self, e: ast.Index, env: Env, root: bool) -> ast.Expr:
        """An element of an unlifted array read in place (LIFT-READ-LAZY): the array a free
        variable of the function, each index keeping its span (where a bounds error
        points)."""
        base, indices = read_chain(e)
        self.partial = True
        with self.fl.b.rule("LIFT-READ-LAZY", e, "a read in a branch of an array the same for "
                            "every point: the scalar function reads it in place, bounds "
                            "checked, where the branch runs (no partition of the points)"):
            built = [self.expr(index, env, root) for index in indices]
            return self._indexed(self.fl.lookup(env, base.name), *built,
                                 nodes=_chain_nodes(e))

    def ordered(self, parts: list[ast.Expr], env: Env, root: bool) -> list[ast.Expr]:
        """Build `parts`, which are evaluated left to right. The operands of a part are
        flattened before the scalar function runs, so a part that may fail and comes before
        a part with operands is computed on its own first (ORDER): its error comes first,
        as it does in `interp` (`1 / 0 + length (iota (-1))` is a DivisionByZero)."""
        fl = self.fl
        later = [fl.classify(p, env) == "scalar" for p in parts[1:]] + [False]
        built = []
        for i, part in enumerate(parts):
            if any(later[i:]) and _may_fail(part, env, fl):
                with fl.b.rule("ORDER", part, "this operand may fail and a later one runs "
                               "array code first: computed on its own, before it"):
                    built.append(self.value(fl.flatten(part, env)))
            else:
                built.append(self.expr(part, env, root))
        return built

    def infer(self, body: ast.Expr) -> T.Type | None:
        """The type of a body built here from values (no type checker ran on it)."""
        if isinstance(body, ast.Lit):
            return T.Scalar(body.type)
        if isinstance(body, ast.Var):
            leaf = self.params.get(body.name) or self.free.get(body.name)
            if leaf is not None:
                rep = leaf.rep if leaf.level is None else row_rep(leaf.rep)
                return T.Scalar(rep.elem) if isinstance(rep, ScalarRep) else None
            return None
        if isinstance(body, ast.BinOp):
            if body.op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||"):
                return T.BOOL
            return self.infer(body.left)
        if isinstance(body, ast.UnOp):
            return self.infer(body.operand)
        if isinstance(body, ast.Apply) and isinstance(body.fn, ast.Var):
            name = body.fn.name
            if name in scalar_ops.CONVERSIONS:
                return T.Scalar(name)
            return self.infer(body.args[1] if name == "select" else body.args[0])
        if isinstance(body, ast.TupleLit):
            return T.Tuple(tuple(self.infer(p) for p in body.elems))  # type: ignore[misc]
        if isinstance(body, ast.If):
            return self.infer(body.then)
        if isinstance(body, (ast.Loop, ast.Let)):
            return self.infer(body.init if isinstance(body, ast.Loop) else body.body)
        return None
