"""Reductions and scans that the scalar flat operations cannot take as they are written.

- A *lifted neutral element* (`map (\\x -> reduce max x xs)`): every point reduces from its
  own `ne`. The flat reductions take one scalar `ne` and compute `ne op r`, so the operator
  is first made into one with a known identity: values are paired with a flag, `(false, _)`
  is the identity, `(true, a) op (true, b) = (true, a op b)`. One segmented reduction (scan)
  of the flagged values gives `(has, r)` per segment (element), then one map gives
  `if has then ne op r else ne`: interp's left fold `((ne op x0) op x1) ...` for an
  associative `op`, and `ne` for an empty segment (LIFT-REDUCE-NE, LIFT-SCAN-NE).
- An *elementwise operator on arrays*, `map2 f` with `f` on scalars (`reduce (map2 (+))
  [0, 0] xss`): the reduction of a block of rows is the reduction of every column, so the
  block is transposed and every column reduced (scanned, histogrammed) with `f`, from
  `ne[j]` (REDUCE-COLUMNS, SCAN-COLUMNS, HIST-COLUMNS, and LIFT-... inside a map). interp's
  `map2` raises a SizeError when a row's length is not `ne`'s: that is checked first.
- Any other operator on arrays inside a map: a sequential loop over the elements whose body
  applies the operator to every point's accumulator (LIFT-REDUCE-SEQUENTIAL).
"""
from __future__ import annotations

from typing import Any

from ...ir.flat import (OFFSETS, Assert, Atom, Const, FVar, Library, Map, Project, Rebuild,
                        Regular, Reshape, ScalarFn, SegReduce, SegScan, Segmented,
                        SizesToOffsets, TupleRep)
from ...lang import ast
from .context import Env, FunVal, Leaf, TupleVal, leaves, map_leaves
from .reps import as_irregular, row_rep

_ZERO = {"bool": False, "f32": 0.0, "f64": 0.0}


def _structure(v: Any, names: list[str]) -> ast.Expr:
    """An expression rebuilding value `v`'s tuple structure from one name per leaf."""
    it = iter(names)

    def build(x: Any) -> ast.Expr:
        if isinstance(x, TupleVal):
            return ast.TupleLit(tuple(build(p) for p in x.parts))
        return ast.Var(next(it))
    return build(v)


def _pattern(v: Any, names: list[str]) -> ast.Pattern:
    it = iter(names)

    def build(x: Any) -> ast.Pattern:
        if isinstance(x, TupleVal):
            return ast.PTuple(tuple(build(p) for p in x.parts))
        return ast.PVar(next(it))
    return build(v)


def _tuple(exprs: list[ast.Expr]) -> ast.Expr:
    return exprs[0] if len(exprs) == 1 else ast.TupleLit(tuple(exprs))


def _ptuple(names: list[str]) -> ast.Pattern:
    pats = [ast.PVar(n) for n in names]
    return pats[0] if len(pats) == 1 else ast.PTuple(tuple(pats))


def _rebuild(v: Any, items: list[Any]) -> Any:
    it = iter(items)
    return map_leaves(v, lambda _leaf: next(it))


def two_levels(rep):
    """The representation of a lifted array of arrays with both levels segmented."""
    if isinstance(rep, Regular):
        inner = Regular(rep.elem, rep.rank - 2)
    elif isinstance(rep.inner, Regular):
        inner = Regular(rep.inner.elem, rep.inner.rank - 1)
    else:
        inner = rep.inner.inner
    return Segmented(Segmented(inner))



class OperatorRules:
    """Mixin of the flattener: reductions and scans with a lifted `ne` or an array operator."""

    # ------------------------------------------------------------------ flagged operators
    def _names(self, base: str, k: int) -> list[str]:
        return [self.b.fresh(f"{base}{j}_") for j in range(k)]

    def _applied(self, fn: ScalarFn, shape: Any, a: list[str], b: list[str],
                 out: list[str], rest: ast.Expr) -> ast.Expr:
        """`let P0 = A in let P1 = B in let OUT = fn body in rest`: the operator applied to
        two values given leaf by leaf, its result bound leaf by leaf."""
        body = ast.Let(_pattern(shape, out), fn.body, rest)
        body = ast.Let(fn.params[1], _structure(shape, b), body)
        return ast.Let(fn.params[0], _structure(shape, a), body)

    def flagged_op(self, fn: ScalarFn, shape: Any) -> ScalarFn:
        """`fn` on (flag, value...) tuples with `(false, _)` as its identity."""
        k = len(leaves(shape))
        fa, fb = self.b.fresh("fa_"), self.b.fresh("fb_")
        a, b, out = self._names("a", k), self._names("b", k), self._names("r", k)
        var = ast.Var
        both = self._applied(fn, shape, a, b, out, _tuple([ast.Lit(True, "bool")] +
                                                          [var(n) for n in out]))
        body = ast.If(ast.UnOp("!", var(fa)), _tuple([var(fb)] + [var(n) for n in b]),
                      ast.If(ast.UnOp("!", var(fb)), _tuple([var(fa)] + [var(n) for n in a]),
                             both))
        return ScalarFn((_ptuple([fa] + a), _ptuple([fb] + b)), body, fn.free)

    def _with_ne(self, fn: ScalarFn, shape: Any, ne: list[FVar], flagged: FVar) -> list[FVar]:
        """`if has then ne op r else ne`, elementwise over the flagged results."""
        k = len(ne)
        n, r, out = self._names("n", k), self._names("r", k), self._names("o", k)
        has = self.b.fresh("has_")
        flat = _tuple([ast.Var(x) for x in out])
        body = ast.If(ast.Var(has), self._applied(fn, shape, n, r, out, flat),
                      _tuple([ast.Var(x) for x in n]))
        parts = [self.b.emit(Project(flagged, j), p, "c")
                 for j, p in enumerate(flagged.rep.parts)]            # type: ignore[union-attr]
        params = tuple(ast.PVar(x) for x in n) + (ast.PVar(has),) + \
            tuple(ast.PVar(x) for x in r)
        reps = [p.rep for p in ne]
        res = self.b.emit(Map(ScalarFn(params, body, fn.free), tuple(ne) + tuple(parts)),
                          reps[0] if k == 1 else TupleRep(tuple(reps)), "red")
        if k == 1:
            return [res]
        return [self.b.emit(Project(res, j), p, "c") for j, p in enumerate(reps)]

    def _flagged_values(self, vals: list[FVar]) -> tuple[FVar, FVar]:
        flags = self.mapf("\\x -> true", [vals[0]], "bool", "flag")
        arr = self.make_tuple([flags] + list(vals))
        ne = self.make_tuple([Const(False, "bool")] + [
            Const(_ZERO.get(v.rep.elem, 0), v.rep.elem) for v in vals])  # type: ignore
        return arr, ne

    def seg_reduce_ne(self, fn: ScalarFn, shape: Any, ne: list[FVar], offsets: FVar,
                      vals: list[FVar]) -> list[FVar]:
        """One reduction per segment of the flat `vals`, segment `s` from `ne[s]`."""
        arr, flag_ne = self._flagged_values(vals)
        rep = TupleRep(tuple(Regular(p.elem, 1) for p in flag_ne.rep.parts))  # type: ignore
        red = self.b.emit(SegReduce(self.flagged_op(fn, shape), flag_ne, offsets, arr), rep,
                          "red")
        return self._with_ne(fn, shape, ne, red)

    def seg_scan_ne(self, fn: ScalarFn, shape: Any, ne: list[FVar], offsets: FVar,
                    vals: list[FVar]) -> list[FVar]:
        """An inclusive scan within every segment of the flat `vals`, segment `s` from
        `ne[s]`."""
        arr, flag_ne = self._flagged_values(vals)
        scanned = self.b.emit(SegScan(self.flagged_op(fn, shape), flag_ne, offsets, arr),
                              arr.rep, "scan")
        seg = self.segment_ids(offsets)
        return self._with_ne(fn, shape, [self.gather(x, seg, "ne") for x in ne], scanned)

    # ------------------------------------------------------------------ lifted ne
    def _as_segments(self, xs: Any, env: Env) -> tuple[FVar, list[FVar], bool]:
        """Every point's row of a lifted array as (offsets, flat values per leaf, whether
        it was a regular block)."""
        regular = all(isinstance(leaf.rep, Regular) for leaf in leaves(xs))
        if regular:
            x = leaves(xs)[0].atom
            offs = self.regular_offsets(self.points(env.level), self.inner_extent(x))
        else:
            xs = self._segmented(xs)
            offs = self.offsets(leaves(xs)[0].atom)
        return offs, [self.values(leaf.atom) for leaf in leaves(xs)], regular

    def reduce_lifted_ne(self, fn: ScalarFn, ne: Any, xs: Any, node: ast.Node,
                         env: Env) -> Any:
        level = env.level
        with self.b.rule("LIFT-REDUCE-NE", node, "every point reduces from its own neutral "
                         "element: a segmented reduction of flagged values, then ne op r"):
            offs, vals, _ = self._as_segments(xs, env)
            ne_vec = [leaf.atom for leaf in leaves(self.to_level(ne, level))]
            out = self.seg_reduce_ne(fn, ne, ne_vec, offs, vals)
            return _rebuild(ne, [Leaf(o, level) for o in out])

    def scan_lifted_ne(self, fn: ScalarFn, ne: Any, xs: Any, node: ast.Node,
                       env: Env) -> Any:
        level = env.level
        with self.b.rule("LIFT-SCAN-NE", node, "every point scans from its own neutral "
                         "element: a segmented scan of flagged values, then ne op s"):
            offs, vals, regular = self._as_segments(xs, env)
            ne_vec = [leaf.atom for leaf in leaves(self.to_level(ne, level))]
            out = self.seg_scan_ne(fn, ne, ne_vec, offs, vals)
            if regular:
                pts = self.points(level)
                return _rebuild(ne, [Leaf(self.b.emit(Reshape(o, pts), Regular(
                    o.rep.elem, 2), "scan"), level) for o in out])       # type: ignore
            return _rebuild(ne, [Leaf(self.b.emit(Rebuild(offs, o), Segmented(o.rep),
                                                  "scan"), level) for o in out])

    # ------------------------------------------------------------------ array operators
    def elementwise_op(self, op: Any) -> tuple[ScalarFn, str] | None:
        """`f` (as a ScalarFn) when the operator `op` is `map2 f` with `f` on scalars."""
        if isinstance(op, FunVal) and op.kind == "builtin" and \
                op.name in ("map2", "zipWithSeq") and len(op.args) == 1 and \
                isinstance(op.args[0], FunVal):
            try:
                return self.scalar_fn(op.args[0], 2, "map2"), op.name
            except NotImplementedError:
                return None
        return None

    def _rows_checked(self, xs: Any, k: Atom, what: str) -> tuple[Atom, list[FVar]]:
        """The number of rows of an unlifted array of rows and its flat values, after
        checking that every row has `k` elements (interp's `map2` SizeError otherwise)."""
        x = leaves(xs)[0].atom
        n = self.length(x)
        if isinstance(x.rep, Regular):
            ok = self.scalarf("n == 0 || m == k", "bool", "ok", n=n, m=self.inner_extent(x),
                              k=k)
        else:
            ok = self.all_true(self.mapf("\\l -> l == k", [self.lengths(self.offsets(x))],
                                         "bool", "ok", k=k))
        self.b.check(Assert(ok, "SizeError", f"{what}: array lengths differ"))
        return n, [self.values(leaf.atom) for leaf in leaves(xs)]

    def _columns(self, n: Atom, k: Atom, vals: list[FVar]) -> tuple[Atom, list[FVar]]:
        """The flat values of an n x k block in column-major order (a transposition)."""
        total = self.scalarf("n * k", "i64", "n", n=n, k=k)
        src = self.mapf("\\q -> (q % n) * k + q / n", [self.iota(total)], "i64", "idx", n=n,
                        k=k)
        return total, [self.gather(v, src, "col") for v in vals]

    def reduce_columns(self, fn: ScalarFn, name: str, ne: Any, xs: Any, node: ast.Node,
                       env: Env) -> Any:
        """`reduce (map2 f) ne xss` outside every map: every column reduced by `f` from
        `ne[j]` (rows of another length than `ne` are map2's SizeError)."""
        with self.b.rule("REDUCE-COLUMNS", node, "an elementwise operator on rows: every "
                         "column reduced, from its element of ne"):
            ne_vec = [leaf.atom for leaf in leaves(ne)]
            k = self.length(ne_vec[0])
            n, vals = self._rows_checked(xs, k, name)
            _, cols = self._columns(n, k, vals)
            offs = self.regular_offsets(k, n)
            out = self.seg_reduce_ne(fn, ne, ne_vec, offs, cols)
            return _rebuild(ne, [Leaf(o) for o in out])

    def scan_columns(self, fn: ScalarFn, name: str, ne: Any, xs: Any, node: ast.Node,
                     env: Env) -> Any:
        """`scan (map2 f) ne xss` outside every map: every column scanned by `f` from
        `ne[j]`, then transposed back."""
        with self.b.rule("SCAN-COLUMNS", node, "an elementwise operator on rows: every "
                         "column scanned, from its element of ne"):
            ne_vec = [leaf.atom for leaf in leaves(ne)]
            k = self.length(ne_vec[0])
            n, vals = self._rows_checked(xs, k, name)
            total, cols = self._columns(n, k, vals)
            offs = self.regular_offsets(k, n)
            out = self.seg_scan_ne(fn, ne, ne_vec, offs, cols)
            back = self.mapf("\\p -> (p % k) * n + p / k", [self.iota(total)], "i64", "idx",
                             n=n, k=k)

            def rows(o: FVar) -> Leaf:
                flat = self.gather(o, back, "scan")
                return Leaf(self.b.emit(Reshape(flat, n), Regular(flat.rep.elem, 2),
                                        "scan"))              # type: ignore[union-attr]
            return _rebuild(ne, [rows(o) for o in out])

    def reduce_by_index_columns(self, dest: Any, op: Any, ne: Any, is_: Leaf, vs: Any,
                                node: ast.Node, env: Env) -> Any:
        """`reduce_by_index dest (map2 f) ne is vss` outside every map: element `j` of row
        `t` of `vss` goes to element `j` of destination row `is[t]`, one flat histogram by
        `f` over the destination's flat values (rows may differ in length: each index's
        row must have its value row's length, map2's SizeError otherwise)."""
        found = self.elementwise_op(op)
        if found is None:
            return self.reduce_by_index_sequential(dest, op, is_, vs, node, env)
        fn, name = found
        with self.b.rule("HIST-ELEMENTWISE", node, "an elementwise operator on rows: every "
                         "element of a value row to its place in its destination row, one "
                         "flat reduce_by_index"):
            self.same_lengths([is_, vs], node, env, "reduce_by_index")
            d, v = leaves(dest)[0].atom, leaves(vs)[0].atom
            rows = self.length(d)
            if isinstance(d.rep, Regular):
                m = self.inner_extent(d)
                d_start = self.mapf("\\i -> i * m", [self.iota(rows)], "i64", "start", m=m)
                d_len = self.replicate(rows, m)
            else:
                d_start = self.gather(self.offsets(d), self.iota(rows), "start")
                d_len = self.lengths(self.offsets(d))
            if isinstance(v.rep, Regular):
                mv = self.inner_extent(v)
                v_len = self.replicate(self.length(v), mv)
                flat_n = self.length(self.values(v))
                row_of = self.mapf("\\q -> q / m", [self.iota(flat_n)], "i64", "row", m=mv)
                pos = self.mapf("\\q -> q % m", [self.iota(flat_n)], "i64", "pos", m=mv)
            else:
                v_len = self.lengths(self.offsets(v))
                row_of = self.segment_ids(self.offsets(v))
                pos = self.segment_iota(self.offsets(v))
            ix = is_.atom
            safe = self.mapf("\\i -> if 0 <= i && i < r then i else 0", [ix], "i64", "at",
                             r=rows)
            dl = self.gather(self.concat(d_len, self.replicate(Const(1, "i64"),
                                                                Const(0, "i64"))), safe, "dl")
            ok = self.mapf("\\i l w -> !(0 <= i && i < r) || l == w", [ix, dl, v_len], "bool",
                           "ok", r=rows)
            self.b.check(Assert(self.all_true(ok), "SizeError",
                                f"{name}: array lengths differ"))
            target_row = self.gather(ix, row_of, "row")
            start = self.gather(self.concat(d_start, self.replicate(Const(1, "i64"),
                                                                     Const(0, "i64"))),
                                self.mapf("\\i -> if 0 <= i && i < r then i else r",
                                          [target_row], "i64", "at", r=rows), "start")
            target = self.mapf("\\i s p -> if 0 <= i && i < r then s + p else -1",
                               [target_row, start, pos], "i64", "at", r=rows)
            d_vals = self._array_arg(map_leaves(dest, lambda leaf: Leaf(self.values(leaf.atom))))
            v_vals = self._array_arg(map_leaves(vs, lambda leaf: Leaf(self.values(leaf.atom))))
            hist = self.b.emit(Library("reduce_by_index", (d_vals, Const(0, "i64"), target,
                                                           v_vals), (fn,)), d_vals.rep, "hist")
            parts = self.split(hist, None)

            def shaped(leaf: Leaf, orig: Leaf) -> Leaf:
                if isinstance(orig.rep, Regular):
                    return Leaf(self.b.emit(Reshape(leaf.atom, rows), orig.rep, "hist"))
                return Leaf(self.b.emit(Rebuild(self.offsets(orig.atom), leaf.atom),
                                        orig.rep, "hist"))
            it = iter(leaves(dest))
            return map_leaves(parts, lambda leaf: shaped(leaf, next(it)))

    def _lifted_columns(self, ne: Any, xs: Any, name: str, env: Env):
        """Inside a map: every point's block of rows as columns. Gives the segment
        descriptors (per point: its columns `kp_offs`; per column: its elements
        `seg_offs`), the column-major flat values, the neutral elements' flat values (one
        per column) and what is needed to put a scanned result back in rows."""
        level = env.level
        xs = map_leaves(xs, lambda leaf: self.coerce(leaf, two_levels(leaf.rep)))
        x = leaves(xs)[0].atom
        point_offs, row_offs = self.offsets(x), self.offsets(self.values(x))
        ne_l = self.to_level(ne, level)
        k = self.lengths_of(ne_l)
        k_vec = k.atom if k.level is not None else self.replicate(self.points(level), k.atom)
        point_of_row = self.segment_ids(point_offs)
        ok = self.mapf("\\l k -> l == k", [self.lengths(row_offs),
                                            self.gather(k_vec, point_of_row, "k")], "bool", "ok")
        self.b.check(Assert(ok, "SizeError", f"{name}: array lengths differ"))
        kp_offs = self.b.emit(SizesToOffsets(k_vec), OFFSETS, "offs")
        seg_p, seg_j = self.segment_ids(kp_offs), self.segment_iota(kp_offs)
        sizes = self.gather(self.lengths(point_offs), seg_p, "sz")
        seg_offs = self.b.emit(SizesToOffsets(sizes), OFFSETS, "offs")
        base = self.gather(row_offs, self.gather(point_offs, self.iota(self.points(level)),
                                                 "first"), "base")
        s = self.segment_ids(seg_offs)
        p = self.gather(seg_p, s, "pt")
        src = self.mapf("\\b i k j -> b + i * k + j",
                        [self.gather(base, p, "base"), self.segment_iota(seg_offs),
                         self.gather(k_vec, p, "k"), self.gather(seg_j, s, "col")], "i64", "idx")
        cols = [self.gather(self.values(self.values(leaf.atom)), src, "col")
                for leaf in leaves(xs)]
        ne_flat = [self.values(leaf.atom) for leaf in leaves(ne_l)]
        return xs, kp_offs, seg_offs, cols, ne_flat, ne_l

    def reduce_columns_lifted(self, fn: ScalarFn, name: str, ne: Any, xs: Any,
                              node: ast.Node, env: Env) -> Any:
        level = env.level
        with self.b.rule("LIFT-REDUCE-COLUMNS", node, "an elementwise operator on every "
                         "point's rows: one segment per (point, column), reduced from ne"):
            _, kp_offs, seg_offs, cols, ne_flat, ne_l = self._lifted_columns(ne, xs, name, env)
            out = self.seg_reduce_ne(fn, ne, ne_flat, seg_offs, cols)

            def shaped(o: FVar, orig: Leaf) -> Leaf:
                if isinstance(orig.rep, Regular):
                    return Leaf(self.b.emit(Reshape(o, self.points(level)), orig.rep, "red"),
                                level)
                return Leaf(self.b.emit(Rebuild(kp_offs, o), Segmented(o.rep), "red"), level)
            return _rebuild(ne, [shaped(o, leaf) for o, leaf in zip(out, leaves(ne_l))])

    def scan_columns_lifted(self, fn: ScalarFn, name: str, ne: Any, xs: Any,
                            node: ast.Node, env: Env) -> Any:
        level = env.level
        with self.b.rule("LIFT-SCAN-COLUMNS", node, "an elementwise operator on every "
                         "point's rows: one segment per (point, column), scanned from ne, "
                         "then put back in rows"):
            xs, kp_offs, seg_offs, cols, ne_flat, _ = self._lifted_columns(ne, xs, name, env)
            out = self.seg_scan_ne(fn, ne, ne_flat, seg_offs, cols)
            x = leaves(xs)[0].atom
            point_offs, row_offs = self.offsets(x), self.offsets(self.values(x))
            r = self.segment_ids(row_offs)
            p = self.gather(self.segment_ids(point_offs), r, "pt")
            i = self.mapf("\\r f -> r - f", [r, self.gather(point_offs, p, "first")], "i64",
                          "row")
            col = self.mapf("\\c j -> c + j", [self.gather(kp_offs, p, "c"),
                                                self.segment_iota(row_offs)], "i64", "col")
            src = self.mapf("\\s i -> s + i", [self.gather(seg_offs, col, "s"), i], "i64",
                            "idx")

            def rows(o: FVar) -> Leaf:
                vals = self.gather(o, src, "scan")
                inner = self.b.emit(Rebuild(row_offs, vals), Segmented(vals.rep), "scan")
                return Leaf(self.b.emit(Rebuild(point_offs, inner), Segmented(inner.rep),
                                        "scan"), level)
            return _rebuild(ne, [rows(o) for o in out])

    def reduce_by_index_elementwise_lifted(self, fn: ScalarFn, name: str, dest: Any, is_: Leaf,
                                           vs: Any, node: ast.Node, env: Env) -> Any:
        """`reduce_by_index dest (map2 f) ne is vss` at every point: element `j` of point
        `p`'s value row `t` goes to element `j` of `p`'s destination row `is[t]` (dropped
        when `is[t]` is outside `p`'s destination), one flat `reduce_by_index` by `f` over
        all points' destination values; in-range rows are checked to have one length."""
        level = env.level
        with self.b.rule("LIFT-HIST-ELEMENTWISE", node, "an elementwise operator on rows at "
                         "every point: each element to its place in its point's destination "
                         "row, one flat reduce_by_index"):
            self.same_lengths([is_, vs], node, env, "reduce_by_index")
            dest = map_leaves(dest, lambda leaf: self.coerce(leaf, two_levels(leaf.rep)))
            vs = map_leaves(vs, lambda leaf: self.coerce(leaf, two_levels(leaf.rep)))
            d, v = leaves(dest)[0].atom, leaves(vs)[0].atom
            d_points, d_rows = self.offsets(d), self.offsets(self.values(d))
            v_points, v_rows = self.offsets(v), self.offsets(self.values(v))
            flat_is = self.values(is_.atom)
            # per value row t: its point, its index, whether it is in range, its dest row
            p = self.segment_ids(v_points)
            n_dest = self.gather(self.lengths(d_points), p, "nd")
            first = self.gather(d_points, p, "first")
            row = self.mapf("\\i n f -> if 0 <= i && i < n then f + i else -1",
                            [flat_is, n_dest, first], "i64", "row")
            zero = self.replicate(Const(1, "i64"), Const(0, "i64"))
            d_len = self.gather(self.concat(self.lengths(d_rows), zero),
                                self.mapf("\\r -> if r < 0 then m else r", [row], "i64", "at",
                                          m=self.length(self.lengths(d_rows))), "dl")
            ok = self.mapf("\\r l w -> r < 0 || l == w", [row, d_len, self.lengths(v_rows)],
                           "bool", "ok")
            self.b.check(Assert(self.all_true(ok), "SizeError",
                                f"{name}: array lengths differ"))
            start = self.gather(self.concat(d_rows, zero),
                                self.mapf("\\r -> if r < 0 then 0 else r", [row], "i64", "at"),
                                "start")
            t = self.segment_ids(v_rows)
            target = self.mapf("\\r s j -> if r < 0 then -1 else s + j",
                               [self.gather(row, t, "row"), self.gather(start, t, "start"),
                                self.segment_iota(v_rows)], "i64", "at")
            d_vals = self._array_arg(map_leaves(dest, lambda leaf: Leaf(
                self.values(self.values(leaf.atom)))))
            v_vals = self._array_arg(map_leaves(vs, lambda leaf: Leaf(
                self.values(self.values(leaf.atom)))))
            hist = self.b.emit(Library("reduce_by_index", (d_vals, Const(0, "i64"), target,
                                                           v_vals), (fn,)), d_vals.rep, "hist")

            def shaped(leaf: Leaf) -> Leaf:
                inner = self.b.emit(Rebuild(d_rows, leaf.atom), Segmented(leaf.rep), "hist")
                return Leaf(self.b.emit(Rebuild(d_points, inner), Segmented(inner.rep),
                                        "hist"), level)
            return map_leaves(self.split(hist, None), shaped)

    def reduce_by_index_sequential(self, dest: Any, op: Any, is_: Leaf, vs: Any,
                                   node: ast.Node, env: Env) -> Any:
        """`reduce_by_index` with an operator on arrays that is not elementwise: a loop over
        the indices in order, as interp combines; an index in range replaces its row by
        `op row v` (outside maps a gather from the rows and the new row; inside a map, on
        the points whose index is in range, a `with` of every such point's row), an index
        out of range leaves the rows as they are (the operator is not applied)."""
        self.same_lengths([is_, vs], node, env, "reduce_by_index")
        one = Leaf(Const(1, "i64"))

        def body(state: Any, t: Leaf, inner: Env) -> Any:
            if inner.level is not None:
                return lifted_body(state, t, inner)
            i = self.index_value(is_, t, node, inner)
            rows = self.lengths_of(state)
            ok = Leaf(self.scalarf("0 <= i && i < n", "bool", "ok", i=i.atom, n=rows.atom))

            def put(e: Env) -> Any:
                row = self.apply_value(op, [self.index_value(state, i, node, e),
                                            self.index_value(vs, t, node, e)], node, e)
                both = self.lib_concat([state, self.lib_replicate([one, row], node, e)],
                                       node, e)
                idx = self.mapf("\\k -> if k == i then n else k", [self.iota(rows.atom)],
                                "i64", "idx", i=i.atom, n=rows.atom)
                return map_leaves(both, lambda leaf: Leaf(self.gather(leaf.atom, idx, "row")))
            return self.if_blocks(ok, put, lambda e: state, inner)

        def lifted_body(state: Any, t: Leaf, inner: Env) -> Any:
            level = inner.level
            i = self.index_value(self.to_level(is_, level), t, node, inner)
            rows = self.lengths_of(state)
            ok = Leaf(self.mapf("\\i n -> 0 <= i && i < n", [self.to_level(i, level).atom,
                                                              self.to_level(rows, level).atom],
                                "bool", "ok"), level)

            def put(e: Env) -> Any:
                here = lambda x: self.to_level(x, e.level)      # noqa: E731
                rows_now, at = here(state), here(i)
                row = self.apply_value(op, [self.index_value(rows_now, at, node, e),
                                            self.index_value(here(vs), here(t), node, e)],
                                       node, e)
                return self.update_lifted(rows_now, at, row, node, e)
            return self.partition(ok, put, lambda e: state, node, inner)
        with self.b.rule(self._rule(env, "HIST-SEQUENTIAL").replace("-REGULAR", "").replace(
                "-IRREGULAR", ""), node, "the operator works on arrays and is not "
                         "elementwise: a loop over the indices, each in range replacing its "
                         "row"):
            # rows may change length: the destination is carried irregular
            init = map_leaves(dest, lambda leaf: self.coerce(leaf, as_irregular(leaf.rep))
                              if isinstance(row_rep(leaf.rep), (Regular, Segmented))
                              else leaf)
            return self.for_loop(init, self.lengths_of(is_), body, node, env)
