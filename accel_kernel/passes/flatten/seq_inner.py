"""SEQ-INNER and SEQ-INNER-ROWS, the part of scalar code (`scalar.py`) that reads whole
arrays: inside a map, `reduce op ne a` of an array `a` that scalar code can read element by
element becomes a loop of the scalar function (`loop acc = ne for j < length a do op acc
a[j]`), so each point runs its own loop instead of the array being replicated per point.

Arrays read element by element: a free array of scalars (unlifted: the same for every point),
`zip`s and `map`s of scalar code over such arrays (also `let`-bound: `LocalArray`), `iota n`
of a literal or of such an array's length; a block of rows the same for every point (`cs:
[k][d]f64`) as the array of a `map`, whose function then gets one row (`LocalRow`) and reads
it element by element (`cs[j][l]`); and, in the element code of such a loop (`Env.seq_inner`),
the point's own row of a lifted regular block (`p` of `map (\\p -> ...) ps`, read as
`ps[q][l]`, `q` the point's index). The lengths a `zip` or `map2` reads are checked once,
outside the map, only where the read is reached (`SeqInnerBuild.base`).

`SeqInnerClassify` is a mixin of the flattener (with `ScalarCode`), `SeqInnerBuild` of the
scalar function builder (`scalar._Body`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

from ...ir import core
from ...ir.flat import Const, FVar, Regular
from ...lang import ast, scalar_ops
from .context import Env, FunVal, Leaf, TupleVal, leaves, map_leaves

SCALAR_BUILTINS = {name: entry.arity for name, entry in scalar_ops.FUNCTIONS.items()}
PARTIAL_OPS = {op for op, entry in scalar_ops.BINARY_OPS.items() if entry.error}   # may fail

LOCAL = object()                      # a name bound inside the scalar code being built
ZIPS = {"zip": 2, "zip3": 3}
MAPS = {"map": 1, "map2": 2, "map3": 3}


@dataclass(frozen=True, eq=False)
class LocalArray:
    """A name bound inside scalar code to an array read element by element (SEQ-INNER):
    its defining expression, flattened where it is used."""
    expr: ast.Expr
    env: Env


@dataclass(frozen=True, eq=False)
class LocalRow:
    """A name bound inside scalar code to one row of an unlifted regular block of rows (the
    parameter of `f` in `map f cs` read by a SEQ-INNER loop): `array` the block's value,
    `index` the row, an expression of the body (None while classifying)."""
    array: Any
    index: ast.Expr | None = None


@dataclass(frozen=True)
class _Length:
    """The length of an array read element by element, when it is not an array's own: a
    row's width, an `iota`'s count."""
    leaf: Leaf


def worst(*kinds: str | None) -> str | None:
    if any(k is None for k in kinds):
        return None
    return "scalar" if "scalar" in kinds else "pure"


def _var(e: ast.Expr) -> ast.Var | None:
    while isinstance(e, ast.Ascribe):
        e = e.expr
    return e if isinstance(e, ast.Var) else None


def unlifted_rows(v: Any) -> bool:
    """A value that is the same for every point and is a regular block of rows of scalars
    (a tuple of them)."""
    if isinstance(v, TupleVal):
        return bool(v.parts) and all(unlifted_rows(p) for p in v.parts)
    return isinstance(v, Leaf) and v.level is None and isinstance(v.atom, FVar) \
        and isinstance(v.rep, Regular) and v.rep.rank == 2


def _block_rows(v: Any) -> bool:
    """A lifted regular block with one row of scalars per point (`p` of `map (\\p -> ...)
    ps`, `ps: [n][d]f64`; a tuple of them over one level)."""
    if not isinstance(v, (Leaf, TupleVal)):
        return False
    found = leaves(v)
    return bool(found) and len({id(leaf.level) for leaf in found}) == 1 and all(
        leaf.level is not None and isinstance(leaf.atom, FVar)
        and isinstance(leaf.rep, Regular) and leaf.rep.rank == 2 for leaf in found)


def unlifted_vector(v: Any) -> bool:
    """A value that is the same for every point and is an array of scalars (a tuple of
    them: an array of tuples)."""
    if isinstance(v, TupleVal):
        return bool(v.parts) and all(unlifted_vector(p) for p in v.parts)
    return isinstance(v, Leaf) and v.level is None and isinstance(v.atom, FVar) \
        and isinstance(v.rep, Regular) and v.rep.rank == 1


def checked_read(e: ast.Expr) -> bool:
    """Whether `e` applies a `zip` or `map` to several arrays: read element by element
    (SEQ-INNER), their lengths are checked once outside the scalar function, so such a read
    must not be where only some evaluations reach it (a branch, a loop body, the right of
    `&&`): there it is not scalar code, and the check stays with its branch."""
    for n in ast.walk(e):
        if isinstance(n, ast.Apply) and isinstance(n.fn, ast.Var) \
                and (ZIPS.get(n.fn.name, 0) >= 2 and len(n.args) >= 2
                     or MAPS.get(n.fn.name, 0) >= 2 and len(n.args) >= 3):
            return True
    return False


class SeqInnerClassify:
    """Mixin of the flattener: which arrays scalar code reads element by element."""

    def _classify_local_array(self, e: ast.Let, env: Env) -> str | None:
        """`let a = <array read element by element> in <scalar code>`."""
        if not isinstance(e.pattern, ast.PVar) or core.has_sizes(e.pattern.annot) \
                or not self.inner_array(e.value, env):
            return None                      # (a size annotation is a check to make)
        inner = replace(env, scope={**env.scope, e.pattern.name: LocalArray(e.value, env)})
        # no operands: an operand is flattened on its own and cannot read the local array
        return "pure" if self.classify(e.body, inner) == "pure" else None

    def inner_array(self, e: ast.Expr, env: Env) -> bool:
        """Whether scalar code can read the array `e` element by element: a free array of
        scalars (not lifted: the same for every point), a local one, a row a loop chose
        (`LocalRow`), in a loop's element code the point's own row of a regular block,
        `iota` of a literal or a length, or `zip`s and `map`s of scalar code over them (a
        `map` also over the rows of an unlifted block, `inner_rows`: SEQ-INNER-ROWS)."""
        if isinstance(e, ast.Ascribe):
            return self.inner_array(e.expr, env)
        if isinstance(e, ast.Var):
            v = self.lookup(env, e.name)
            return isinstance(v, (LocalArray, LocalRow)) or unlifted_vector(v) \
                or env.seq_inner and _block_rows(v)
        if not (isinstance(e, ast.Apply) and isinstance(e.fn, ast.Var)
                and self.lookup(env, e.fn.name) is None):
            return False
        name, args = e.fn.name, e.args
        if ZIPS.get(name) == len(args):
            return all(self.inner_array(a, env) for a in args)
        if name == "iota" and len(args) == 1:
            return self._counted(args[0], env)
        if MAPS.get(name) == len(args) - 1:
            closure = self._closure(args[0], env)
            if closure is None or len(closure.lam.params) != len(args) - 1:
                return False
            scope = self._locals_scope(closure.scope, closure.lam.params)
            for param, a in zip(closure.lam.params, args[1:]):
                if self.inner_rows(a, env):     # SEQ-INNER-ROWS: the parameter is a row
                    if not isinstance(param, ast.PVar) or core.has_sizes(param.annot):
                        return False
                    scope[param.name] = LocalRow(self.lookup(env, _var(a).name))
                elif not self.inner_array(a, env):
                    return False
            inner = Env(scope, seq_inner=True)
            return self.classify(closure.lam.body, inner) == "pure"
        return False

    def inner_rows(self, e: ast.Expr, env: Env) -> bool:
        """Whether `e` is an unlifted regular block of scalar rows (the same for every
        point) that a SEQ-INNER loop can read row by row, as the array of a `map`."""
        v = _var(e)
        return v is not None and unlifted_rows(self.lookup(env, v.name))

    def _counted(self, n: ast.Expr, env: Env) -> bool:
        """Whether `iota n` can be read element by element: `n` a literal or the length
        of an array read element by element (never negative: no size check is lost)."""
        while isinstance(n, ast.Ascribe):
            n = n.expr
        if isinstance(n, ast.Lit):
            return isinstance(n.value, int) and not isinstance(n.value, bool) and n.value >= 0
        return isinstance(n, ast.Apply) and isinstance(n.fn, ast.Var) \
            and n.fn.name == "length" and self.lookup(env, "length") is None \
            and len(n.args) == 1 \
            and (self.inner_array(n.args[0], env) or self.inner_rows(n.args[0], env))

    def _classify_inner(self, e: ast.Apply, env: Env) -> str | None:
        """`reduce op ne a` and `length a` of an array scalar code reads element by element,
        where the reduction depends on the point (SEQ-INNER: each point runs its own loop;
        an invariant one is computed once, in parallel, by AVOID)."""
        name, args = e.fn.name, e.args
        if not self.ctx.options.seq_inner:
            return None
        if name == "length" and len(args) == 1 and self.inner_array(args[0], env):
            return "pure"
        if name != "reduce" or len(args) != 3 or not self.inner_array(args[2], env) \
                or not self._per_point(e, env):
            return None
        if not self._scalar_operator(args[0], env):
            return None
        return worst(self.classify(args[1], env), "pure")

    def _scalar_operator(self, op: ast.Expr, env: Env) -> bool:
        if isinstance(op, ast.OpFunc):
            return op.op != "++"
        if isinstance(op, ast.Var) and self.lookup(env, op.name) is None:
            return SCALAR_BUILTINS.get(op.name) == 2
        closure = self._closure(op, env)
        if closure is None or len(closure.lam.params) != 2:
            return False
        inner = Env(self._locals_scope(closure.scope, closure.lam.params))
        return self.classify(closure.lam.body, inner) == "pure" \
            and not checked_read(closure.lam.body)

    def unlifted_arrays(self, e: ast.Expr, env: Env, seen: set[int]) -> set[str]:
        """The names of the unlifted arrays `e` may read element by element (SEQ-INNER):
        a parameter of the scalar function must not take one of them as its name."""
        out: set[str] = set()
        for name in self._free(e):
            out |= self._unlifted_in(self.lookup(env, name), seen)
        return out

    def _unlifted_in(self, v: Any, seen: set[int]) -> set[str]:
        if isinstance(v, LocalRow):
            v = v.array
        if isinstance(v, (Leaf, TupleVal)):
            return {leaf.atom.name for leaf in leaves(v)
                    if unlifted_vector(leaf) or unlifted_rows(leaf) or _block_rows(leaf)}
        if isinstance(v, LocalArray) and id(v) not in seen:
            seen.add(id(v))
            return self.unlifted_arrays(v.expr, v.env, seen)
        if isinstance(v, FunVal) and id(v) not in seen:
            seen.add(id(v))
            out: set[str] = set()
            for a in v.args:
                out |= self._unlifted_in(a, seen)
            if v.kind == "closure" and v.scope is not None:
                for name in self._free(v.lam):
                    out |= self._unlifted_in(v.scope.get(name), seen)
            return out
        return set()

    def _per_point(self, e: ast.Expr, env: Env) -> bool:
        """Whether `e` reads a lifted value (so it runs inside a map, once per point)."""
        for name in self._free(e):
            v = self.lookup(env, name)
            if isinstance(v, LocalArray):
                if self._per_point(v.expr, v.env):
                    return True
            elif isinstance(v, LocalRow):            # a row chosen by a loop's index
                return True
            elif v is not LOCAL and v is not None and any(
                    level is not None for level in self._levels_of(v, set())):
                return True
        return False


class SeqInnerBuild:
    """Mixin of the scalar function builder (`scalar._Body`): SEQ-INNER's loops, reads and
    length checks."""

    def fresh(self, base: str) -> str:
        self.count = getattr(self, "count", 0) + 1
        name = f"{base}{self.count}"
        while name in self.root_binders or name in self.params or name in self.free \
                or name in self.reserved:
            self.count += 1
            name = f"{base}{self.count}"
        return name

    def sequential_reduce(self, e: ast.Apply, env: Env, root: bool) -> ast.Expr:
        """`reduce op ne a` of an array read element by element: a loop in the scalar
        function, `loop acc = ne for j < length a do op acc a[j]`."""
        op, ne, arr = e.args
        with self.fl.b.rule("SEQ-INNER", e, "a reduction over an array that is the same "
                            "for every point, inside a map: each point runs it as a loop "
                            "(work n·m as flattened, no replicated array; depth m per point)"
                            ) as entry:
            outer, self.rows_read = self.rows_read, False
            count = self.length(arr, env, root)
            acc, j = self.fresh("acc"), self.fresh("j")
            element = self.element(arr, env, ast.Var(j), root)
            body = self.combine(op, [ast.Var(acc), element], env, root, replace(e, id=0))
            if self.rows_read:
                entry.name = "SEQ-INNER-ROWS"
                entry.note = ("a reduction over rows (of a block the same for every point, "
                              "or the point's own row of a regular block), inside a map: a "
                              "loop that reads the rows in place, nothing replicated")
            self.rows_read = outer or self.rows_read
            return ast.Loop(ast.PVar(acc), self.expr(ne, env, root), ast.ForRange(j, count),
                            body, span=e.span, id=e.id)

    def combine(self, fn: ast.Expr, args: list[Any], env: Env, root: bool,
                node: ast.Node, element: bool = False) -> ast.Expr:
        """A scalar function (operator, builtin, lambda) applied to built arguments; with
        `element`, the element function of a map a SEQ-INNER loop reads (an argument may
        be a row, `LocalRow`: its parameter names the row)."""
        if isinstance(fn, ast.OpFunc):
            if fn.op in PARTIAL_OPS:
                self.partial = True
            return ast.BinOp(fn.op, args[0], args[1], span=node.span, id=node.id)
        if isinstance(fn, ast.Var) and self.fl.lookup(env, fn.name) is None:
            return ast.Apply(ast.Var(fn.name, span=fn.span), tuple(args), span=node.span,
                             id=node.id)
        closure = self.fl._closure(fn, env)
        assert closure is not None
        lam = closure.lam
        scope = self.fl._locals_scope(closure.scope, lam.params)
        params, values = [], []
        for param, arg in zip(lam.params, args):
            if isinstance(arg, LocalRow):
                scope[param.name] = arg          # (a PVar: `inner_array` checked)
            else:
                params.append(param)
                values.append(arg)
        inner = Env(scope, env.level, env.trusted, env.floor, env.seq_inner or element,
                    env.lazy)
        body = self.expr(lam.body, inner, False)
        if not params:
            return body
        if len(params) == 1:
            return ast.Let(params[0], values[0], body, span=node.span)
        return ast.Let(ast.PTuple(tuple(params)), ast.TupleLit(tuple(values)), body,
                       span=node.span)

    def _parts(self, arr: ast.Expr, env: Env) -> tuple[str, Any, Env]:
        """What an array read element by element is, after local names and ascriptions:
        ("value", its flat value, env) for an unlifted array of scalars, ("rows", its flat
        value, env) for an unlifted block of rows, ("block", the lifted value, env) for the
        point's own row of a regular block, ("row", the `LocalRow`, env) for a row a loop
        chose, ("zip" | "map" | "iota", the call, env)."""
        while True:
            if isinstance(arr, ast.Ascribe):
                arr = arr.expr
                continue
            if isinstance(arr, ast.Var):
                v = self.fl.lookup(env, arr.name)
                if isinstance(v, LocalArray):
                    arr, env = v.expr, v.env
                    continue
                if isinstance(v, LocalRow):
                    return "row", v, env
                if _block_rows(v):
                    return "block", v, env
                return ("rows" if unlifted_rows(v) else "value"), v, env
            name = arr.fn.name
            return ("zip" if name in ZIPS else "iota" if name == "iota" else "map"), arr, env

    def element(self, arr: ast.Expr, env: Env, j: ast.Expr, root: bool) -> Any:
        """Element `j` of an array read element by element: an expression of the body, or
        for a block of rows the row itself (a `LocalRow`, bound by the map reading it)."""
        kind, what, env = self._parts(arr, env)
        if kind == "value":
            return self._indexed(what, j)
        if kind in ("rows", "row", "block"):
            self.rows_read = True
        if kind == "rows":
            return LocalRow(what, j)
        if kind == "row":
            return self._indexed(what.array, what.index, j)
        if kind == "block":                   # row `q` of the block, `q` the point's index
            level = leaves(what)[0].level
            point = Leaf(self.fl.iota(self.fl.points(level)), level)
            block = map_leaves(what, lambda leaf: Leaf(leaf.atom))
            return self._indexed(block, self.operand(point, None), j)
        if kind == "iota":
            return j
        if kind == "zip":
            return ast.TupleLit(tuple(self.element(a, env, j, root) for a in what.args))
        self.guards.append(self.base(what, env))  # its function runs only on an element
        try:
            items = [self.element(a, env, j, root) for a in what.args[1:]]
            return self.combine(what.args[0], items, env, root, replace(what, id=0),
                                element=True)
        finally:
            self.guards.pop()

    def _indexed(self, v: Any, *indices: ast.Expr,
                 nodes: Sequence[ast.Index] = ()) -> ast.Expr:
        """`v[i][j]...` (each component of a tuple of arrays); with `nodes`, the source's
        `Index` nodes, each read keeps its span (where a bounds error points)."""
        if isinstance(v, TupleVal):
            return ast.TupleLit(tuple(self._indexed(p, *indices, nodes=nodes)
                                      for p in v.parts))
        out = self.operand(v, None)
        for k, index in enumerate(indices):
            node = nodes[k] if nodes else None
            out = ast.Index(out, index, span=node.span, id=node.id) if node is not None \
                else ast.Index(out, index)
        return out

    def length(self, arr: ast.Expr, env: Env, root: bool) -> ast.Expr:
        """The length of an array read element by element (the arrays a `zip` or `map`
        reads must have one length: checked once, outside the map, as MAP and ZIP do)."""
        self.base(arr, env)
        return self._count(arr, env, root)

    def _count(self, arr: ast.Expr, env: Env, root: bool) -> ast.Expr:
        kind, what, env = self._parts(arr, env)
        if kind in ("zip", "map"):
            return self._count(what.args[0 if kind == "zip" else 1], env, root)
        if kind == "iota":
            return self.expr(what.args[0], env, root)
        if kind == "row":                    # a row's width: an avoided scalar
            return self.operand(self._row_width(what), None)
        if kind == "block":
            return self.operand(self.fl.lengths_of(what), None)
        first = what
        while isinstance(first, TupleVal):
            first = first.parts[0]
        return ast.Apply(ast.Var("length"), (self.operand(first, None),))

    def base(self, arr: ast.Expr, env: Env) -> Any:
        """What gives an element-by-element array its length: a free array, or `_Length`
        (checking that the arrays a `zip` or `map` reads have one length)."""
        kind, what, env = self._parts(arr, env)
        if kind in ("value", "rows", "block"):
            return what
        if kind == "row":
            return _Length(self._row_width(what))
        if kind == "iota":
            n = what.args[0]
            while isinstance(n, ast.Ascribe):
                n = n.expr
            if isinstance(n, ast.Lit):
                return _Length(Leaf(Const(n.value, "i64")))
            return self.base(n.args[0], env)
        arrays = what.args if kind == "zip" else what.args[1:]
        bases = [self.base(a, env) for a in arrays]
        if len(bases) > 1 and id(what) not in self.checked:
            self.checked.add(id(what))
            guards = list(self.guards)

            def check(reached: Any = None) -> None:
                with self.fl.b.at_node(what):
                    self.fl.check_lengths([self._length_leaf(b) for b in bases], what, env,
                                          what.fn.name, self._reached(reached, guards))
            if self.checks is None:
                check()
            else:
                self.checks.append(check)
        return bases[0]

    def _row_width(self, row: LocalRow) -> Leaf:
        return Leaf(self.fl.inner_extent(leaves(row.array)[0].atom))

    def _length_leaf(self, base: Any) -> Leaf:
        return base.leaf if isinstance(base, _Length) else self.fl.lengths_of(base)

    def _reached(self, reached: Any, guards: list[Any]) -> Any:
        """Whether a check inside the element code of maps is reached: the point exists
        (`reached`, None outside every map) and each of the maps has an element."""
        if not guards:
            return reached
        names = {f"n{k}": self._length_leaf(g).atom for k, g in enumerate(guards)}
        terms = [f"{name} > 0" for name in names]
        if reached is not None:
            names["r"] = reached
            terms.insert(0, "r")
        return self.fl.scalarf(" && ".join(terms), "bool", "reached", **names)
