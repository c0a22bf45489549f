"""The rules for each expression form of the core IR (the flattener's dispatcher).

`flatten(e, env)` first *avoids*: an expression whose free variables are all bound outside
the innermost maps around it is computed once, at the deepest level it depends on (AVOID);
code that may fail runs only when the innermost map has a point (GUARD, `control.py`), and
inside a partition it is moved to an enclosing map's level only on the partition's points.
Then scalar code becomes one operation (`scalar.py`), and every other form has its rule here,
in `library.py` (applications of library functions) or in `control.py` (`if`, loops). Functions are values of the flattener
(`FunVal`): a lambda is applied by binding its parameters and flattening its body where it is
applied, so lambdas, partial applications and let-bound functions leave no trace.
"""
from __future__ import annotations

from typing import Any

from ...ir import core
from ...ir.assert_message import field
from ...ir.flat import (Assert, Const, FVar, Literal, Rebuild, Reduce, Regular, Reshape,
                        ScalarRep, SegReduce, Segmented, TupleRep)
from ...lang import ast
from ...lang import types as T
from ...lang.builtins import BUILTINS
from ...lang.scalar_ops import CONVERSIONS
from .context import Env, FunVal, Leaf, Level, TupleVal, leaves, position
from .reps import rep_of_type
from .scalar import CONSTANTS, LOCAL, LocalArray, PARTIAL_OPS, SCALAR_BUILTINS, constant_value

TOTAL_BUILTINS = {"map", "filter", "reduce", "scan", "length", "flatten", "concat", "reverse",
                  "sort", "sort_by", "partition", "rotate", "unzip", "unzip3", "stream",
                  "mapSeq", "foldSeq", "elements", "tabulate", "select", "min", "max", "abs",
                  "sqrt", "exp", "log", "sin", "cos", "tan", "atan2", "floor", "ceil", "round",
                  *CONVERSIONS}


def arity(name: str) -> int:
    t, n = BUILTINS[name].scheme.type, 0
    while isinstance(t, T.Func):
        t, n = t.result, n + 1
    return n


class Expressions:
    """Mixin of the flattener: the dispatcher and the rules of the simple forms."""

    # ------------------------------------------------------------------ lookups
    def type_of(self, e: ast.Node) -> T.Type | None:
        return self.ctx.types.get(e.id)

    def lookup(self, env: Env, name: str) -> Any:
        v = env.scope.get(name)
        if isinstance(v, Leaf) and isinstance(v.atom, FVar) and isinstance(v.atom.rep, TupleRep):
            atom = v.atom
            return self.b.cached(("split", atom, v.level), lambda: self.split(atom, v.level))
        return v

    def fact(self, analysis: str, node: ast.Node) -> Any:
        return self.ctx.facts.get(analysis, {}).get(node.id)

    def rep_for(self, node: ast.Node, t: T.Type | None = None) -> Any:
        """The rep of a value from its type and its node's regularity nest."""
        reg = self.fact("regularity", node)
        return rep_of_type(t if t is not None else self.type_of(node),
                           reg.tree if reg is not None else None)

    # ------------------------------------------------------------------ the dispatcher
    def flatten(self, e: ast.Expr, env: Env) -> Any:
        home = self.hoisted(e, env)
        if home is not env:
            where = "outside every map" if home.level is None else \
                f"at map depth {home.level.depth}"
            with self.b.rule("AVOID", e, "invariant in the inner map(s): computed once, "
                             + where, inclusive=True):
                if self.is_function(e) or not self.partial(e, env, set()):
                    return self._flatten_here(e, home)
                return self.guarded(lambda at: self._flatten_here(e, at), env, home, e)
        return self._flatten_here(e, env)

    def _flatten_here(self, e: ast.Expr, env: Env) -> Any:
        if self.scalar_form(e, env):
            return self.scalar_code(e, env)
        return self.construct(e, env)

    def scalar_form(self, e: ast.Expr, env: Env) -> bool:
        if isinstance(e, ast.Var):
            return False
        return self.inline_kind(e, env) is not None

    def construct(self, e: ast.Expr, env: Env) -> Any:
        with self.b.at_node(e):
            return self._construct(e, env)

    def _construct(self, e: ast.Expr, env: Env) -> Any:
        if isinstance(e, ast.Var):
            return self.var(e, env)
        if isinstance(e, ast.Lit):
            return Leaf(Const(e.value, e.type))
        if isinstance(e, ast.Ascribe):
            return self.flatten(e.expr, env)
        if isinstance(e, ast.TupleLit):
            parts = tuple(self.flatten(p, env) for p in e.elems)
            if any(isinstance(x.atom, FVar) and not isinstance(x.rep, ScalarRep)
                   for p in parts for x in leaves(p)):
                with self.b.rule("TUPLE-F", e, "a tuple of arrays: each component stays a "
                                 "flat value of its own"):
                    pass
            return TupleVal(parts)
        if isinstance(e, ast.Project):
            v = self.flatten(e.expr, env)
            return self.component(v, e.index, env)
        if isinstance(e, ast.ArrayLit):
            return self.array_literal(e, env)
        if isinstance(e, ast.Range):
            return self.range_(e, env)
        if isinstance(e, ast.Index):
            return self.index(e, env)
        if isinstance(e, ast.Slice):
            return self.slice_(e, env)
        if isinstance(e, ast.Update):
            return self.update(e, env)
        if isinstance(e, ast.BinOp):
            if e.op == "++":
                return self.library("concat", [self.flatten(e.left, env),
                                               self.flatten(e.right, env)], e, env)
            if e.op in ("&&", "||"):
                lazy = ast.If(e.left, e.right, ast.Lit(False, "bool"), span=e.span, id=e.id) \
                    if e.op == "&&" else \
                    ast.If(e.left, ast.Lit(True, "bool"), e.right, span=e.span, id=e.id)
                return self.if_(lazy, env)
            raise NotImplementedError(f"flatten: the operator `{e.op}` here is not built yet")
        if isinstance(e, ast.Apply):
            fn = self.fun(e.fn, env)
            args = [self.arg(a, env) for a in e.args]
            return self.apply_value(fn, args, e, env)
        if isinstance(e, (ast.Lambda, ast.OpFunc)):
            return self.fun(e, env)
        if isinstance(e, ast.Let):
            return self.let(e, env)
        if isinstance(e, ast.If):
            return self.if_(e, env)
        if isinstance(e, ast.Loop):
            return self.loop(e, env)
        if isinstance(e, ast.UnOp):
            raise NotImplementedError(f"flatten: `{e.op}` of a non-scalar is not built yet")
        raise NotImplementedError(f"flatten: `{type(e).__name__}` is not part of the core IR")

    def var(self, e: ast.Var, env: Env) -> Any:
        v = self.lookup(env, e.name)
        if v is LOCAL:
            raise AssertionError(f"local scalar `{e.name}` outside its scalar code")
        if v is not None:
            return v
        if e.name in CONSTANTS:
            lit = constant_value(e.name, self.type_of(e))
            if isinstance(lit, ast.BinOp):      # an infinity
                inf = float("inf") if lit.left.value > 0 else float("-inf")
                return Leaf(Const(inf, lit.left.type))
            return Leaf(Const(lit.value, lit.type))
        if e.name in BUILTINS:
            return FunVal("builtin", e, name=e.name)
        if e.name in self.definitions:
            raise NotImplementedError(f"flatten: the call of `{e.name}` was not inlined "
                                      "(a def that is not inlined is not built yet)")
        raise NotImplementedError(f"flatten: the global `{e.name}` is unknown here")

    def component(self, v: Any, index: int, env: Env) -> Any:
        if isinstance(v, Leaf) and isinstance(v.atom, FVar):
            v = self.split(v.atom, v.level)
        if not isinstance(v, TupleVal):
            raise NotImplementedError("flatten: a projection of a non-tuple")
        return v.parts[index]

    # ------------------------------------------------------------------ avoidance
    def hoisted(self, e: ast.Expr, env: Env) -> Env:
        """The context `e` is computed in: the deepest level its free variables are lifted
        over (AVOID when that is above the innermost map)."""
        if env.level is None or isinstance(e, (ast.Lit, ast.Var, ast.Lambda, ast.OpFunc)):
            return env
        levels: list[Level | None] = []
        for name in self._free(e):
            v = self.lookup(env, name)
            if v is LOCAL or isinstance(v, LocalArray):
                return env
            levels += self._levels_of(v, set())
        home = self._deepest(levels, env)
        if home is env.level:
            return env
        if env.floor is not None and home is not None and self.partial(e, env, set()):
            floor = position(env.floor, env.level)          # lifted: only on the points
            if home.depth < floor.depth:                    # of the branch (or loop)
                home = floor
            if home is env.level:
                return env
        if home is None:        # computed once (under a GUARD if it may fail): no floor
            return Env(env.scope, None, env.trusted, None)
        return env.at(home)

    def _free(self, e: ast.Node) -> set[str]:
        cache = self.__dict__.setdefault("_free_cache", {})
        if e.id not in cache or not e.id:
            cache[e.id] = core.free_vars(e)
        return cache[e.id]

    def _levels_of(self, v: Any, seen: set[int]) -> list[Level | None]:
        if isinstance(v, (Leaf, TupleVal)):
            return [leaf.level for leaf in leaves(v)]
        if isinstance(v, FunVal):
            out = [leaf.level for a in v.args for leaf in leaves(a)]
            for a in v.args:
                if isinstance(a, FunVal):
                    out += self._levels_of(a, seen)
            if v.kind == "closure" and id(v) not in seen:
                seen.add(id(v))
                params = core.binds(v.lam.params, frozenset(), True)
                for name in core.free_vars(v.lam.body, params):
                    inner = v.scope.get(name) if v.scope is not None else None
                    if inner is not None and inner is not LOCAL:
                        out += self._levels_of(inner, seen)
            return out
        return []

    def partial(self, e: ast.Node, env: Env, seen: set[int]) -> bool:
        """Whether evaluating `e` may fail (conservatively)."""
        for node in ast.walk(e):
            if isinstance(node, (ast.Index, ast.Slice, ast.Update, ast.Range, ast.Loop)):
                return True
            if isinstance(node, ast.TArray) and node.size is not None:
                return True                     # a size annotation: checked at run time
            if isinstance(node, (ast.BinOp, ast.OpFunc)) and node.op in PARTIAL_OPS:
                return True
            if isinstance(node, ast.Var):
                v = env.scope.get(node.name)
                if v is None and node.name in BUILTINS and node.name not in TOTAL_BUILTINS \
                        and node.name not in SCALAR_BUILTINS and node.name not in CONSTANTS:
                    return True
                if isinstance(v, FunVal) and v.kind == "closure" and id(v) not in seen:
                    seen.add(id(v))
                    if self.partial(v.lam.body, Env(v.scope or {}), seen):
                        return True
                if isinstance(v, FunVal) and v.kind == "builtin" \
                        and v.name not in TOTAL_BUILTINS:
                    return True
        return False

    # ------------------------------------------------------------------ functions
    def is_function(self, e: ast.Expr) -> bool:
        t = self.type_of(e)
        if t is not None:
            return isinstance(t, T.Func)
        return isinstance(e, (ast.Lambda, ast.OpFunc))

    def arg(self, e: ast.Expr, env: Env) -> Any:
        return self.fun(e, env) if self.is_function(e) else self.flatten(e, env)

    def fun(self, e: ast.Expr, env: Env) -> FunVal:
        if isinstance(e, ast.Lambda):
            return FunVal("closure", e, e, env.scope)
        if isinstance(e, ast.OpFunc):
            return FunVal("op", e, name=e.op)
        if isinstance(e, ast.Var):
            v = self.var(e, env)
            if not isinstance(v, FunVal):
                raise NotImplementedError(f"flatten: `{e.name}` is not a function")
            return v
        if isinstance(e, ast.Ascribe):
            return self.fun(e.expr, env)
        if isinstance(e, ast.Let):
            return self.fun(e.body, self.bind_let(e, env))
        if isinstance(e, ast.Apply):
            f = self.fun(e.fn, env)
            out = self.apply_value(f, [self.arg(a, env) for a in e.args], e, env)
            if not isinstance(out, FunVal):
                raise NotImplementedError("flatten: a function value was expected")
            return out
        raise NotImplementedError(f"flatten: a function given by `{type(e).__name__}` is not "
                                  "built yet")

    def apply_value(self, f: Any, args: list[Any], node: ast.Node, env: Env) -> Any:
        if not args:
            return f
        if not isinstance(f, FunVal):
            raise NotImplementedError("flatten: applying a non-function")
        given = list(f.args) + list(args)
        if f.kind == "closure":
            need = len(f.lam.params)
        elif f.kind == "op":
            need = 2
        else:
            need = arity(f.name)
        if len(given) < need:
            return FunVal(f.kind, f.node, f.lam, f.scope, f.name, tuple(given))
        now, rest = given[:need], given[need:]
        if f.kind == "closure":
            inner = Env(dict(f.scope or {}), env.level, env.trusted, env.floor)
            for p, a in zip(f.lam.params, now):
                inner = self.bind_pattern(p, a, inner)
            result = self.flatten(f.lam.body, inner)
        elif f.kind == "op":
            result = self.operator(f.name, now, node, env)
        else:
            result = self.library(f.name, now, node, env)
        return self.apply_value(result, rest, node, env)

    def operator(self, op: str, values: list[Any], node: ast.Node, env: Env) -> Any:
        if op == "++":
            return self.library("concat", values, node, env)
        from .scalar import _Body
        builder = _Body(self, node)
        body = ast.BinOp(op, builder.value(values[0]), builder.value(values[1]), span=node.span)
        builder.partial = op in PARTIAL_OPS
        return self.emit_scalar(body, builder, builder.infer(body), env, node)

    def scalar_call(self, name: str, values: list[Any], node: ast.Node, env: Env) -> Any:
        from .scalar import _Body
        builder = _Body(self, node)
        body = ast.Apply(ast.Var(name), tuple(builder.value(v) for v in values),
                         span=node.span)
        t = self.type_of(node) if isinstance(node, ast.Apply) and \
            len(node.args) == len(values) else builder.infer(body)
        return self.emit_scalar(body, builder, t, env, node)

    # ------------------------------------------------------------------ let and patterns
    def let(self, e: ast.Let, env: Env) -> Any:
        return self.flatten(e.body, self.bind_let(e, env))

    def bind_let(self, e: ast.Let, env: Env) -> Env:
        value = self.arg(e.value, env)
        if not isinstance(value, FunVal) and any(
                isinstance(x.atom, FVar) and not isinstance(x.rep, ScalarRep)
                for x in leaves(value)):
            with self.b.rule("LET", e, "the bound name stands for the flat value"):
                pass
        return self.bind_pattern(e.pattern, value, env)

    def bind_pattern(self, p: ast.Pattern, v: Any, env: Env) -> Env:
        if p.annot is not None and core.has_sizes(p.annot):
            v, env = self.check_sizes(p, p.annot, v, env)
        if isinstance(p, ast.PVar):
            return env.bind(p.name, v)
        if isinstance(p, ast.PWild):
            return env
        if isinstance(v, Leaf) and isinstance(v.atom, FVar):
            v = self.split(v.atom, v.level)
        if not isinstance(v, TupleVal) or len(v.parts) != len(p.elems):
            raise NotImplementedError("flatten: a tuple pattern on a non-tuple value")
        for sub, part in zip(p.elems, v.parts):
            env = self.bind_pattern(sub, part, env)
        return env

    # ------------------------------------------------------------------ size annotations
    def check_sizes(self, p: ast.Pattern, annot: ast.TypeExpr, v: Any,
                    env: Env) -> tuple[Any, Env]:
        with self.b.rule("SIZE-CHECK", p, "a size annotation: checked at run time, its size "
                         "names bound"):
            return self._check_sizes(annot, v, env)

    def _check_sizes(self, annot: ast.TypeExpr, v: Any, env: Env) -> tuple[Any, Env]:
        if isinstance(annot, ast.TTuple) and isinstance(v, TupleVal):
            parts = []
            for sub, part in zip(annot.elems, v.parts):
                part, env = self._check_sizes(sub, part, env)
                parts.append(part)
            return TupleVal(tuple(parts)), env
        if not isinstance(annot, ast.TArray) or not core.has_sizes(annot):
            return v, env
        if annot.size is not None:
            env = self.size_is(annot.size, self.lengths_of(v), env)
        elem = annot.elem
        if isinstance(elem, ast.TArray) and core.has_sizes(elem):
            leaf = leaves(v)[0]     # the components of an array of tuples: one shape
            if leaf.level is not None:
                _, env = self._check_rows_lifted(leaf, elem, env)
                return v, env
            x, env = self._check_rows(leaf.atom, elem, env)
            if isinstance(v, Leaf):          # (components are kept as they are)
                v = Leaf(x)
        return v, env

    def _check_rows(self, x: FVar, elem: ast.TArray, env: Env) -> tuple[FVar, Env]:
        """Every row of the array `x` meets `elem` (the annotation of one row, `[m]...`),
        outer sizes first, at any depth. Rows said to have one length become a regular
        block (when their own rows are regular too); rows whose length is not annotated
        stay segments."""
        deeper = elem.elem if isinstance(elem.elem, ast.TArray) and \
            core.has_sizes(elem.elem) else None
        if isinstance(x.rep, Regular):
            if elem.size is not None:
                reached = self.scalarf("n > 0", "bool", "some", n=self.length(x))
                env = self.size_is(elem.size, Leaf(self.inner_extent(x)), env, Leaf(reached))
            if deeper is not None:
                _, env = self._check_rows(self.values(x), deeper, env)
            return x, env
        flat = self.values(x)
        if elem.size is not None:
            lens = self.lengths(self.offsets(x))
            first = self.b.emit(Reduce(self.lam(FIRST), Const(-1, "i64"), lens),
                                ScalarRep("i64"), "first")
            env = self._size_of_first(elem.size, Leaf(first), env)
            m = self.size_value(elem.size, env).atom
            ok = self.mapf("\\l -> l == m", [lens], "bool", "ok", m=m)
            self.b.check(Assert(ok, "SizeError", _expected(elem.size, m, lens)))
        inner = flat
        if deeper is not None:
            inner, env = self._check_rows(flat, deeper, env)
        if elem.size is not None and isinstance(inner.rep, Regular):
            rows = self.b.emit(Reshape(inner, self.length(x)),
                               Regular(inner.rep.elem, inner.rep.rank + 1), "rows")
            return rows, env
        if inner is flat:
            return x, env
        return self.b.emit(Rebuild(self.offsets(x), inner), Segmented(inner.rep), "rows"), env

    def _size_of_first(self, size: str | int, first: Leaf, env: Env) -> Env:
        """Bind (or keep) `size` from the length of the first row, `first` (-1: no row; a
        later array may still give the size, else it is 0). The rows are checked after."""
        if not isinstance(size, str):
            return env
        reached = self.compute("f >= 0", {"f": first}, "bool", env)
        length = self.compute("max f 0", {"f": first}, "i64", env)
        return self.size_is(size, length, env, reached, check=False)

    def _check_rows_lifted(self, v: Leaf, elem: ast.TArray, env: Env) -> tuple[Leaf, Env]:
        """`[n][m]` (and deeper: `[n][m][k]`) inside a map: the rows of every point's array
        have that point's length `m`, their rows that point's `k`, and so on. A new size name
        is bound per point to the length of the point's first row (0 if it has none and no
        later array gives it); every row is then compared with its point's size, so a point
        with no rows meets any size. The value keeps its representation."""
        x = v.atom
        items, per_point = self.values(x), None     # the rows of every point, in order
        count = self.to_level(self.lengths_of(v), v.level).atom
        while True:
            if elem.size is not None:
                env = self._check_items_lifted(items, per_point, count, elem.size, v, env)
            if not (isinstance(elem.elem, ast.TArray) and core.has_sizes(elem.elem)):
                return v, env
            # one level down: the rows of those rows, and where each point's start
            if per_point is None:
                per_point = self._offsets_of(x)
            per_point = self.gather(self._offsets_of(items), per_point, "offs")
            count = self.lengths(per_point)
            items, elem = self.values(items), elem.elem

    def _offsets_of(self, x: FVar) -> FVar:
        if isinstance(x.rep, Segmented):
            return self.offsets(x)
        return self.regular_offsets(self.length(x), self.inner_extent(x))

    def _check_items_lifted(self, items: FVar, per_point: FVar | None, count: FVar,
                            size: str | int, v: Leaf, env: Env) -> Env:
        """Every array of `items` (the arrays at one depth of every point's value, point by
        point: `per_point` their offsets, `count` how many each point has) has its point's
        length `size`."""
        level = v.level
        if isinstance(items.rep, Regular):
            reached = Leaf(self.mapf("\\k -> k > 0", [count], "bool", "some"), level)
            return self.size_is(size, Leaf(self.inner_extent(items)), env, reached)
        lens = self.lengths(self.offsets(items))
        per_point = per_point if per_point is not None else self.offsets(v.atom)
        first = self.b.emit(SegReduce(self.lam(FIRST), Const(-1, "i64"), per_point, lens),
                            Regular("i64", 1), "first")
        env = self._size_of_first(size, Leaf(first, level), env)
        want = self.size_value(size, env)
        row_want = self.gather(self.to_level(want, level).atom, self.segment_ids(per_point))
        ok = self.mapf("\\l w -> l == w", [lens, row_want], "bool", "ok")
        self.b.check(Assert(ok, "SizeError", _expected(size, row_want, lens)))
        return env

    def size_is(self, size: ast.Size, length: Leaf, env: Env, reached: Leaf | None = None,
                check: bool = True) -> Env:
        """`length` must be `size`: a literal, a bound size name, or a new one (bound).
        `reached` (per point) says whether the length exists: a row length of an array
        with no rows does not, and meets any size. A size name only such lengths gave so
        far is *provisional* (`Env` keeps (its value, its `reached`) under PROVISIONAL + name,
        while that value is bound to the name): the next array that has the length gives it;
        if none does, it is 0."""
        if isinstance(size, str) and not isinstance(self.lookup(env, size), Leaf):
            if reached is None:
                return env.bind(size, length)
            value = self.compute("if r then l else 0", {"r": reached, "l": length}, "i64", env)
            return env.bind(size, value).bind(PROVISIONAL + size, (value, reached))
        expected = self.size_value(size, env)
        mark = env.scope.get(PROVISIONAL + size) if isinstance(size, str) else None
        earlier = mark[1] if mark is not None and mark[0] is expected else None
        if check:
            cond, args = "l == n", {"l": length, "n": expected}
            if reached is not None:
                cond, args["r"] = "!r || " + cond, reached
            if earlier is not None:
                cond, args["q"] = "!q || " + cond, earlier
            if env.level is not None and all(a.level is None for a in args.values()):
                cond, args["p"] = "p == 0 || " + cond, Leaf(self.points(env.level))
            ok, atoms = self.compute_with(cond, args, "bool", env)
            self.b.check(Assert(ok.atom, "SizeError", _expected(size, atoms["n"], atoms["l"])))
        if earlier is None:
            return env
        value = self.compute("if q then n else l", {"q": earlier, "n": expected, "l": length},
                             "i64", env)
        env = env.bind(size, value)
        if reached is None:
            return env.bind(PROVISIONAL + size, None)
        return env.bind(PROVISIONAL + size, (value, self.compute(
            "q || r", {"q": earlier, "r": reached}, "bool", env)))

    def size_value(self, size: ast.Size, env: Env) -> Leaf:
        """What a size of an annotation stands for: its literal, the name's value, or the
        product of those (`[n * m]t`)."""
        if isinstance(size, tuple):
            names = [f"k{i}" for i in range(len(size))]
            return self.compute(" * ".join(names), {k: self.size_value(f, env)
                                                    for k, f in zip(names, size)}, "i64", env)
        return self.lookup(env, size) if isinstance(size, str) else Leaf(Const(size, "i64"))

    # ------------------------------------------------------------------ literals and indexing
    def array_literal(self, e: ast.ArrayLit, env: Env) -> Any:
        from .arrays import constant_value_of
        value = constant_value_of(e)
        if value is not None:
            return self.constant_array(e, value)
        return self.computed_array(e, env)

    def constant_array(self, e: ast.Expr, value: Any) -> Any:
        rep = self.rep_for(e)
        with self.b.rule("LITERAL", e, "a constant array: one literal per tuple component"):
            return self._literal(value, rep)

    def _literal(self, value: Any, rep: Any) -> Any:
        from ...ir.flat import TupleRep
        if isinstance(rep, TupleRep):
            parts = [self._literal(_component(value, k, rep), r)
                     for k, r in enumerate(rep.parts)]
            return TupleVal(tuple(parts))
        return Leaf(self.b.emit(Literal(value, rep), rep, "lit"))

    def index(self, e: ast.Index, env: Env) -> Any:
        xs = self.flatten(e.expr, env)
        i = self.flatten(e.index, env)
        return self.index_value(xs, i, e, env)


PROVISIONAL = "?reached "        # Env key of a provisional size: (its value, its `reached`)
FIRST = "\\a b -> if a >= 0 then a else b"    # the first of lengths (-1: none), associative


def _component(value: Any, k: int, rep: Any) -> Any:
    """Component k of a literal value of tuples (an array of tuples: its k-th array)."""
    if isinstance(value, tuple):
        return value[k]
    return [_component(v, k, rep) for v in value]


def _expected(size: ast.Size, want: Any, got: Any) -> str:
    """The interpreter's message for a size annotation not met, as an assert's template:
    `expected 2 elements for size n, got 3` (`expected 2 elements, got 3` for a literal)."""
    if isinstance(size, tuple):
        shown = " * ".join(map(str, size))
        return f"expected {field(want)} elements for size {shown}, got {field(got)}"
    if isinstance(size, str):
        return f"expected {field(want)} elements for size {size}, got {field(got)}"
    return f"expected {size} elements, got {field(got)}"
