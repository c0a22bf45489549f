"""Rules for the library functions: the SOACs and their lifted (regular / segmented) forms.

Outside every map a library call becomes its flat operation (`reduce`, `filter`, `iota`, a
whole-array `Library` operation...). Inside a map it is *lifted*: applied to every point's
value at once. The representation of the per-point values decides the rule: a `Regular`
block (one more dimension) keeps the operation regular (`reduce` along the inner axis, no
descriptor: LIFT-REDUCE-REGULAR), a `Segmented` array uses the segmented operation
(`seg_reduce`, LIFT-REDUCE-SEGMENTED). `map`, `generate` (and `iota`, `replicate`) and `expand`
open a new level of the lifting context (`levels.py`). Inside a map, `reduce_by_index` is one
flat histogram at `row start + index` (LIFT-HIST-...), `transpose` a gather (LIFT-TRANSPOSE-...)
and a range with per-point bounds a generate over the counts (LIFT-RANGE-...); reductions with a
lifted neutral element or an operator on arrays are in `operators.py`.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...ir.flat import (OFFSETS, Assert, Const, Filter, FVar, Iota, Library, Map, Rebuild,
                        Reduce, Regular, Replicate, Reshape, Scan, ScalarRep, SegFilter, SegReduce,
                        SegScan, Segmented, SizesToOffsets, TupleRep)
from ...ir.assert_message import field
from ...lang import ast
from ...lang import types as T
from .operators import OperatorRules, two_levels
from .context import Env, FunVal, Leaf, Level, TupleVal, leaves, map_leaves, zip_leaves
from .reps import as_irregular, generalise, is_scalar, row_rep, scalar_elem, stack_regular
from .scalar import SCALAR_BUILTINS
from .sequences import SEQUENCE_FUNCTIONS


class LibraryRules(OperatorRules):
    """Mixin of the flattener: `library(name, args, node, env)`."""

    def library(self, name: str, args: list[Any], node: ast.Node, env: Env) -> Any:
        if name in SCALAR_BUILTINS:
            if all(self._scalar_value(a) for a in args):
                return self.scalar_call(name, args, node, env)
            if name == "select":
                return self.select_values(args[0], args[1], args[2], node, env)
        if name in SEQUENCE_FUNCTIONS:
            with self.b.at_node(node):
                return self.sequence(name, args, node, env)
        handler = getattr(self, "lib_" + name, None)
        if handler is None:
            raise NotImplementedError(f"flatten: `{name}` is not built yet")
        with self.b.at_node(node):
            return handler(args, node, env)

    def _scalar_value(self, v: Any) -> bool:
        from .scalar import per_point_scalar
        return per_point_scalar(v)

    def _rule(self, env: Env, base: str, level: Level | None = None) -> str:
        level = level if level is not None else env.level
        if level is None:
            return base
        kind = "REGULAR" if level.kind == "regular" else "IRREGULAR"
        return f"LIFT-{base}-{kind}"

    def _home(self, v: Any, env: Env) -> Any:
        return self.to_level(v, env.level)

    # ------------------------------------------------------------------ map and generate
    def lib_map(self, args, node, env):
        return self.map_values(args[0], args[1:], node, env)

    lib_map2 = lib_map
    lib_map3 = lib_map

    def map_values(self, f: Any, arrays: list[Any], node: ast.Node, env: Env) -> Any:
        arrays = [self._home(a, env) for a in arrays]
        if len(arrays) > 1:
            self.same_lengths(arrays, node, env, _called(node, "map"))
        flat = [leaf for a in arrays for leaf in leaves(a)]
        with self.b.rule("MAP", node) as entry:
            level, rows = self.enter_rows(flat, env.level)
            it = iter(rows)
            elems = [map_leaves(a, lambda _: next(it)) for a in arrays]
            entry.name = "MAP" if env.level is None else \
                ("LIFT-MAP-REGULAR" if level.kind == "regular" else "LIFT-MAP-IRREGULAR")
            entry.note = {
                "MAP": "a map outside every map: its body is lifted over the elements",
                "LIFT-MAP-REGULAR": "a nested map over regular rows: one more regular level, "
                                    "no descriptor",
                "LIFT-MAP-IRREGULAR": "a nested map over irregular rows: a level over the "
                                      "segment descriptor"}[entry.name]
            result = self.apply_value(f, elems, node, env.at(level))
            return self.leave(result, level)

    def same_lengths(self, arrays: list[Any], node: ast.Node, env: Env, what: str,
                     reached: Any = None) -> None:
        """An assert that the arrays have one length; with `reached` (a bool atom), only
        when it holds (lengths of unlifted arrays read inside a map that may have no point)."""
        self.check_lengths([self.lengths_of(a) for a in arrays], node, env, what, reached)

    def check_lengths(self, lengths: list[Leaf], node: ast.Node, env: Env, what: str,
                      reached: Any = None) -> None:
        """`same_lengths` of the arrays' lengths (`lengths_of`, or a row's width)."""
        first = lengths[0]
        unlifted = all(n.level is None for n in lengths)
        for other in lengths[1:]:
            a, b = first, other
            if a.level is None and b.level is None:
                if a.atom == b.atom:
                    continue
                if reached is None:
                    ok = self.scalarf("a == b", "bool", "ok", a=a.atom, b=b.atom)
                else:
                    ok = self.scalarf("!r || a == b", "bool", "ok", a=a.atom, b=b.atom,
                                      r=reached)
                shown = [a.atom, b.atom]
            else:
                home = self._deepest([a.level, b.level], env)
                shown = [self.to_level(a, home).atom, self.to_level(b, home).atom]
                ok = self.mapf("\\a b -> a == b", shown, "bool", "ok")
            # the interpreter's words: `(2 and 3)`, or all the lengths `[2, 3, 3]`
            details = f"{field(shown[0])} and {field(shown[1])}" if len(lengths) == 2 \
                or not unlifted else "[" + ", ".join(field(n.atom) for n in lengths) + "]"
            self.b.check(Assert(ok, "SizeError", f"{what}: array lengths differ ({details})"))

    def lib_generate(self, args, node, env):
        return self.generate_values(args[0], args[1], node, env)

    def generate_values(self, n: Any, f: Any, node: ast.Node, env: Env,
                        base: str = "GENERATE") -> Any:
        if n.level is not None:
            n = self.to_level(n, env.level)
        uniform = n.level is None or (env.trusted and self.uniform_extent(node))
        notes = {"regular": "the extent is the same for every point: a regular level",
                 "irregular": "the extents differ: a level over sizes_to_offsets"}
        with self.b.rule(base, node) as entry:
            level, index = self.enter_extent(n, env.level, uniform)
            entry.name = self._rule(env, base, level)
            entry.note = notes[level.kind] if env.level is not None else \
                "a generate outside every map: its body is lifted over the index"
            result = f(index, env.at(level)) if callable(f) else \
                self.apply_value(f, [index], node, env.at(level))
            return self.leave(result, level)

    def lib_iota(self, args, node, env):
        n = args[0]
        if env.level is None:
            with self.b.rule("IOTA", node):
                return Leaf(self.b.emit(Iota(n.atom), Regular("i64", 1), "iota"))
        return self.generate_values(n, lambda i, _env: i, node, env, "IOTA")

    def lib_replicate(self, args, node, env):
        n, x = args
        if env.level is None and all(isinstance(leaf.rep, (ScalarRep, Regular))
                                     for leaf in leaves(x)):
            with self.b.rule("REPLICATE", node):
                return map_leaves(x, lambda leaf: Leaf(self.b.emit(
                    Replicate(n.atom, leaf.atom), stack_regular(leaf.rep), "rep")))
        return self.generate_values(n, lambda i, inner: self.to_level(x, inner.level), node,
                                    env, "REPLICATE")

    # ------------------------------------------------------------------ ranges
    def range_lifted(self, start: Leaf, end: Leaf, step: Leaf, node: ast.Range,
                     env: Env) -> Any:
        """`[a..<b by s]` (or `..`) whose bounds or step differ per point: the step checked
        at every point that reaches it (0 is a SizeError), the count per point, then a
        generate of `a + i * s` over the counts (an irregular level unless the count is one
        unlifted scalar). The count divides only by a non-zero step: fused code may compute
        it before the check fails."""
        elem = start.rep.elem
        home = self.check_home([start, end, step], env)
        self._bounds([step], "s != 0", home, "SizeError", "range step is 0", names=("s",))
        incl = "s" if node.inclusive else "s - 1"
        incl_neg = "-s" if node.inclusive else "-s - 1"
        count = self._scalar_of([start, end, step],
                                f"if s > 0 then max 0 ((b - a + {incl}) / s) "
                                f"else if s < 0 then max 0 ((a - b + {incl_neg}) / (-s)) "
                                "else 0", home,
                                names=("a", "b", "s"))

        def element(i: Leaf, inner: Env) -> Leaf:
            lifted = [(k, self.to_level(x, inner.level).atom)
                      for k, x in (("a", start), ("s", step)) if x.level is not None]
            free = {k: x.atom for k, x in (("a", start), ("s", step)) if x.level is None}
            params = " ".join(["i"] + [k for k, _ in lifted])
            return Leaf(self.mapf(f"\\{params} -> a + i * s", [i.atom] + [a for _, a in lifted],
                                  elem, "range", **free), inner.level)
        # logged as LIFT-RANGE-REGULAR (one count for every point) or -IRREGULAR
        return self.generate_values(count, element, node, env, "RANGE")

    # ------------------------------------------------------------------ transpose
    def transpose_lifted(self, xs: Any, node: ast.Node, env: Env) -> Any:
        """Every point's two outer axes swapped. A regular block `[P][r][c]` is a gather by
        the axis permutation (LIFT-TRANSPOSE-REGULAR); otherwise every point's rows are
        checked to have one length (a ragged point is interp's SizeError) and point `p`'s
        `c_p` new rows of `r_p` elements are gathered from `row_start + j`
        (LIFT-TRANSPOSE-SEGMENTED)."""
        level = env.level
        first = leaves(xs)[0]
        if all(isinstance(leaf.rep, Regular) for leaf in leaves(xs)):
            with self.b.rule("LIFT-TRANSPOSE-REGULAR", node, "a regular block: a gather by "
                             "the permutation of its two inner axes"):
                x = first.atom
                pts, r = self.points(level), self.inner_extent(x)
                c = self.inner_extent(self.values(x))
                total = self.scalarf("p * r * c", "i64", "n", p=pts, r=r, c=c)
                src = self.mapf("\\q -> let w = r * c in let e = q % w in "
                                "(q / w) * w + (e % r) * c + e / r",
                                [self.iota(total)], "i64", "idx", r=r, c=c)
                rows = self.scalarf("p * c", "i64", "n", p=pts, c=c)

                def block(leaf: Leaf) -> Leaf:
                    out = self.gather(self.values(self.values(leaf.atom)), src, "tr")
                    out = self.b.emit(Reshape(out, rows), stack_regular(out.rep), "tr")
                    return Leaf(self.b.emit(Reshape(out, pts), leaf.rep, "tr"), level)
                return map_leaves(xs, block)
        with self.b.rule("LIFT-TRANSPOSE-SEGMENTED", node, "rows per point differ: every "
                         "point's rows checked for one length, then a segmented gather"):
            xs = map_leaves(xs, lambda leaf: self.coerce(leaf, two_levels(leaf.rep)))
            x = leaves(xs)[0].atom
            point_offs, rows = self.offsets(x), self.values(x)
            row_offs = self.offsets(rows)
            row_lens = self.lengths(row_offs)
            r = self.lengths(point_offs)                         # rows per point
            starts = self.gather(point_offs, self.iota(self.length(r)), "start")
            # the width of every point: its first row's length (0 for a point without rows)
            zero = self.replicate(Const(1, "i64"), Const(0, "i64"))
            c = self.gather(self.concat(row_lens, zero),
                            self.mapf("\\s r -> if r == 0 then n else s", [starts, r], "i64",
                                      "at", n=self.length(row_lens)), "width")
            point_of_row = self.segment_ids(point_offs)
            ok = self.mapf("\\l w -> l == w", [row_lens, self.gather(c, point_of_row, "w")],
                           "bool", "ok")
            self.b.check(Assert(ok, "SizeError", "transpose: ragged array"))
            new_sizes = self.mapf("\\r c -> if r == 0 then 0 else c", [r, c], "i64", "sz")
            new_point_offs = self.b.emit(SizesToOffsets(new_sizes), OFFSETS, "offs")
            p_of, j_of = self.segment_ids(new_point_offs), self.segment_iota(new_point_offs)
            new_row_offs = self.b.emit(SizesToOffsets(self.gather(r, p_of, "sz")), OFFSETS,
                                       "offs")
            out_row, i_of = self.segment_ids(new_row_offs), self.segment_iota(new_row_offs)
            first_row = self.gather(self.gather(point_offs, p_of, "start"), out_row, "start")
            j = self.gather(j_of, out_row, "col")
            src = self.mapf("\\f i -> f + i", [first_row, i_of], "i64", "row")
            elem = self.mapf("\\s j -> s + j", [self.gather(row_offs, src, "rs"), j], "i64",
                             "idx")

            def one(leaf: Leaf) -> Leaf:
                vals = self.gather(self.values(self.values(leaf.atom)), elem, "tr")
                inner = self.b.emit(Rebuild(new_row_offs, vals), Segmented(vals.rep), "tr")
                return Leaf(self.b.emit(Rebuild(new_point_offs, inner), Segmented(inner.rep),
                                        "tr"), level)
            return map_leaves(xs, one)

    # ------------------------------------------------------------------ interleave
    def interleave_lifted(self, a: Any, b: Any, node: ast.Node, env: Env) -> Any:
        """Every point's two rows (of one length, checked) alternated: a gather from the
        two flat value arrays side by side, element `2k` from `a`, `2k + 1` from `b`
        (LIFT-INTERLEAVE-REGULAR without a descriptor, or -SEGMENTED)."""
        level = env.level
        self.same_lengths([a, b], node, env, "interleave")

        def one(x: Leaf, y: Leaf) -> Leaf:
            p = self.points(level)
            joined = self._joined_rep([x.rep, y.rep], node, env, lifted=True)
            if isinstance(x.rep, Regular) and x.rep == y.rep == joined:
                with self.b.rule("LIFT-INTERLEAVE-REGULAR", node, "rows of regular blocks: "
                                 "a regular block twice as wide, gathered from both"):
                    m = self.inner_extent(x.atom)
                    total = self.scalarf("2 * p * m", "i64", "n", p=p, m=m)
                    idx = self.mapf("\\q -> let r = q / (2 * m) in let e = q % (2 * m) in "
                                    "if e % 2 == 0 then r * m + e / 2 else p * m + r * m + e / 2",
                                    [self.iota(total)], "i64", "idx", m=m, p=p)
                    out = self.gather(self.concat(self.values(x.atom), self.values(y.atom)),
                                      idx, "inter")
                    return Leaf(self.b.emit(Reshape(out, p), x.rep, "inter"), level)
            # rows whose own rows may differ in length (the facts say so): segments
            rep = joined if isinstance(joined, Segmented) else Segmented(row_rep(joined))
            with self.b.rule("LIFT-INTERLEAVE-SEGMENTED", node, "rows of different lengths: "
                             "offsets of twice the lengths, a gather from both"):
                x, y = self.coerce(x, rep), self.coerce(y, rep)
                ox, oy = self.offsets(x.atom), self.offsets(y.atom)
                sizes = self.mapf("\\l -> 2 * l", [self.lengths(ox)], "i64", "sz")
                offs = self.b.emit(SizesToOffsets(sizes), OFFSETS, "offs")
                seg, pos = self.segment_ids(offs), self.segment_iota(offs)
                sa, sb = self.gather(ox, seg, "sa"), self.gather(oy, seg, "sb")
                va, vb = self.values(x.atom), self.values(y.atom)
                idx = self.mapf("\\p s t -> if p % 2 == 0 then s + p / 2 else n + t + p / 2",
                                [pos, sa, sb], "i64", "idx", n=self.length(va))
                vals = self.gather(self.concat(va, vb), idx, "inter")
                return Leaf(self.b.emit(Rebuild(offs, vals), Segmented(vals.rep), "inter"),
                            level)
        return zip_leaves([a, b], one)

    # ------------------------------------------------------------------ reductions
    def _op_fn(self, op: FunVal, what: str):
        return self.scalar_fn(op, 2, what)

    def _neutral(self, ne: Any, what: str) -> Any:
        if any(leaf.level is not None for leaf in leaves(ne)):
            raise NotImplementedError(f"flatten: `{what}` with a lifted neutral element is "
                                      "not built yet")
        atoms = [leaf.atom for leaf in leaves(ne)]
        return atoms[0] if isinstance(ne, Leaf) else self.make_tuple(atoms)

    def _array_arg(self, xs: Any) -> Any:
        atoms = [leaf.atom for leaf in leaves(xs)]
        return atoms[0] if isinstance(xs, Leaf) else self.make_tuple(atoms)

    def lib_reduce(self, args, node, env):
        op, ne, xs = args
        xs = self._home(xs, env)
        try:
            fn = self._op_fn(op, "reduce")
        except NotImplementedError:
            found = self.elementwise_op(op)
            if found is not None:
                columns = self.reduce_columns if env.level is None else \
                    self.reduce_columns_lifted
                return columns(found[0], found[1], ne, xs, node, env)
            return self.sequential_fold(op, ne, xs, node, env)
        if env.level is None:
            with self.b.rule("REDUCE", node, "a reduction outside every map"):
                rep = self._rep(ne)
                out = self.b.emit(Reduce(fn, self._neutral(ne, "reduce"), self._array_arg(xs)),
                                  rep, "red")
                return self.split(out, None)
        first = leaves(xs)[0].atom
        if not is_scalar(row_rep(row_rep(first.rep))):
            raise NotImplementedError("flatten: `reduce` of arrays inside a map is not built "
                                      "yet")
        if any(leaf.level is not None for leaf in leaves(ne)):
            return self.reduce_lifted_ne(fn, ne, xs, node, env)
        neutral = self._neutral(ne, "reduce")
        rep = _lifted(self._rep(ne))
        if all(isinstance(leaf.rep, Regular) for leaf in leaves(xs)):
            with self.b.rule("LIFT-REDUCE-REGULAR", node, "every point's row is a row of one "
                             "regular block: a reduction along its inner axis, no descriptor"):
                out = self.b.emit(Reduce(fn, neutral, self._array_arg(xs)), rep, "red")
        else:
            with self.b.rule("LIFT-REDUCE-SEGMENTED", node, "irregular rows: one reduction "
                             "per segment of the descriptor"):
                xs = self._segmented(xs)
                offs = self.offsets(leaves(xs)[0].atom)
                vals = map_leaves(xs, lambda leaf: Leaf(self.values(leaf.atom)))
                out = self.b.emit(SegReduce(fn, neutral, offs, self._array_arg(vals)), rep,
                                  "red")
        return self.split(out, env.level)

    def _segmented(self, xs: Any) -> Any:
        """Every component of a lifted array in a Segmented rep."""
        def one(leaf: Leaf) -> Leaf:
            if isinstance(leaf.rep, Segmented):
                return leaf
            return self.coerce(leaf, Segmented(row_rep(leaf.rep)))
        return map_leaves(xs, one)

    def _rep(self, v: Any):
        if isinstance(v, Leaf):
            return v.rep
        return TupleRep(tuple(self._rep(p) for p in v.parts))

    def lib_scan(self, args, node, env):
        op, ne, xs = args
        xs = self._home(xs, env)
        found = self.elementwise_op(op)
        if found is not None:
            columns = self.scan_columns if env.level is None else self.scan_columns_lifted
            return columns(found[0], found[1], ne, xs, node, env)
        try:
            fn = self._op_fn(op, "scan")
        except NotImplementedError:
            return self.sequential_scan(op, ne, xs, node, env)
        if any(leaf.level is not None for leaf in leaves(ne)):
            return self.scan_lifted_ne(fn, ne, xs, node, env)
        neutral = self._neutral(ne, "scan")
        if env.level is None or all(isinstance(leaf.rep, Regular) for leaf in leaves(xs)):
            rule = "SCAN" if env.level is None else "LIFT-SCAN-REGULAR"
            with self.b.rule(rule, node, "" if env.level is None else
                             "regular rows: a scan along the inner axis"):
                arr = self._array_arg(xs)
                out = self.b.emit(Scan(fn, neutral, arr), arr.rep, "scan")
            return self.split(out, env.level)
        with self.b.rule("LIFT-SCAN-SEGMENTED", node, "irregular rows: a scan per segment"):
            xs = self._segmented(xs)
            offs = self.offsets(leaves(xs)[0].atom)
            vals = map_leaves(xs, lambda leaf: Leaf(self.values(leaf.atom)))
            arr = self._array_arg(vals)
            out = self.b.emit(SegScan(fn, neutral, offs, arr), arr.rep, "scan")
            parts = self.split(out, None)
            return map_leaves(parts, lambda leaf: Leaf(self.b.emit(
                Rebuild(offs, leaf.atom), Segmented(leaf.rep), "scan"), env.level))

    def sequential_fold(self, op: FunVal, ne: Any, xs: Any, node: ast.Node, env: Env) -> Any:
        """`reduce` whose operator is not scalar code: a sequential loop over the elements
        from `ne`, interp's left fold (REDUCE-SEQUENTIAL; inside a map a loop over every
        point's elements, while some point has elements left: LIFT-REDUCE-SEQUENTIAL)."""
        n = self.lengths_of(xs)               # every point's length inside a map

        def body(state: Any, i: Leaf, inner: Env) -> Any:
            # inside a map the loop runs on the points still active: xs's rows there
            x = self.index_value(self.to_level(xs, inner.level), i, node, inner)
            return self.apply_value(op, [state, x], node, inner)
        with self.b.rule(self._rule(env, "REDUCE-SEQUENTIAL").replace("-REGULAR", "").replace(
                "-IRREGULAR", ""), node, "the operator works on arrays: a loop over the "
                "elements"):
            return self.for_loop(ne, n, body, node, env,
                                 env.trusted and self._keeps_shape(node))

    # ------------------------------------------------------------------ histograms
    def _rows_of_elements(self, ix: FVar) -> FVar:
        """For every flat element of a lifted array, the point (row) it belongs to."""
        if isinstance(ix.rep, Regular):
            k = self.inner_extent(ix)
            return self.mapf("\\q -> q / k", [self.iota(self.length(self.values(ix)))],
                             "i64", "row", k=k)
        return self.segment_ids(self.offsets(ix))

    def reduce_by_index_lifted(self, dest: Any, op: FunVal, ne: Any, is_: Leaf, vs: Any,
                               node: ast.Node, env: Env) -> Any:
        """`reduce_by_index` at every point as ONE flat histogram: point `r`'s destination
        row occupies [start(r), start(r) + length(r)) of the flat destination values, its
        index `i` goes to `start(r) + i` when `0 <= i < length(r)` and nowhere (-1, which
        the flat histogram drops) otherwise, so no index reaches another point's row."""
        level = env.level
        try:
            fn = self.scalar_fn(op, 2, "reduce_by_index")
        except NotImplementedError:
            found = self.elementwise_op(op)
            if found is None:
                dest, is_, vs = [self._home(x, env) for x in (dest, is_, vs)]
                return self.reduce_by_index_sequential(dest, op, is_, vs, node, env)
            dest, is_, vs = [self._home(x, env) for x in (dest, is_, vs)]
            return self.reduce_by_index_elementwise_lifted(found[0], found[1], dest, is_, vs,
                                                           node, env)
        dest, is_, vs = [self._home(x, env) for x in (dest, is_, vs)]
        self.same_lengths([is_, vs], node, env, "reduce_by_index")
        regular = all(isinstance(leaf.rep, Regular) for leaf in leaves(dest))
        rule, note = ("LIFT-HIST-REGULAR", "destination rows of a regular block: targets at "
                      "row * m + i, one flat reduce_by_index") if regular else \
            ("LIFT-HIST-SEGMENTED", "destination rows of different lengths: targets at the "
             "segment start + i, one flat reduce_by_index")
        with self.b.rule(rule, node, note):
            if not regular:
                dest = self._segmented(dest)
            x = leaves(dest)[0].atom
            rows, flat_is = self._rows_of_elements(is_.atom), self.values(is_.atom)
            target = self.row_targets(x, rows, flat_is)
            d_vals = self._array_arg(map_leaves(dest, lambda leaf: Leaf(self.values(leaf.atom))))
            v_vals = self._array_arg(map_leaves(vs, lambda leaf: Leaf(self.values(leaf.atom))))
            # the neutral element is not used by reduce_by_index (the destination's values
            # start every bucket); a lifted one is not passed
            neutral = Const(0, "i64") if any(leaf.level is not None for leaf in leaves(ne)) \
                else self._neutral(ne, "reduce_by_index")
            hist = self.b.emit(Library("reduce_by_index", (d_vals, neutral, target, v_vals),
                                       (fn,)), d_vals.rep, "hist")
            parts = self.split(hist, None)
            if regular:
                return map_leaves(parts, lambda leaf: Leaf(self.b.emit(
                    Reshape(leaf.atom, self.points(level)), stack_regular(leaf.rep), "hist"),
                    level))
            return map_leaves(parts, lambda leaf: Leaf(self.b.emit(
                Rebuild(self.offsets(x), leaf.atom), Segmented(leaf.rep), "hist"), level))

    def sequential_scan(self, op: FunVal, ne: Any, xs: Any, node: ast.Node, env: Env) -> Any:
        """`scan` whose operator is not scalar code and not elementwise: a sequential loop
        over the elements carrying the accumulator and the rows made so far, each new
        accumulator appended as a row (SCAN-SEQUENTIAL; inside a map, every point's)."""
        n = self.lengths_of(xs)
        one = Leaf(Const(1, "i64"))

        def body(state: Any, i: Leaf, inner: Env) -> Any:
            acc, rows = state.parts
            x = self.index_value(self.to_level(xs, inner.level), i, node, inner)
            new = self.apply_value(op, [acc, x], node, inner)
            row = self.lib_replicate([one, new], node, inner)
            return TupleVal((new, self.lib_concat([rows, row], node, inner)))
        with self.b.rule(self._rule(env, "SCAN-SEQUENTIAL").replace("-REGULAR", "").replace(
                "-IRREGULAR", ""), node, "the operator works on arrays: a loop over the "
                "elements, every partial result appended"):
            empty = self.lib_replicate([Leaf(Const(0, "i64")), ne], node, env)
            # the partial results may differ in length: rows kept as segments
            empty = map_leaves(empty, lambda leaf: self.coerce(leaf, as_irregular(leaf.rep))
                               if row_rep(leaf.rep) != ScalarRep(scalar_elem(leaf.rep))
                               else leaf)
            return self.for_loop(TupleVal((ne, empty)), n, body, node, env,
                                 env.trusted and self._keeps_shape(node, True)).parts[1]

    # ------------------------------------------------------------------ filters
    def keep_mask(self, p: Any, xs: Any, node: ast.Node, env: Env) -> Leaf:
        keep = self.map_values(p, [xs], node, env)
        return keep

    def lib_filter(self, args, node, env):
        p, xs = args
        xs = self._home(xs, env)
        keep = self.keep_mask(p, xs, node, env)
        return self._filter_by(keep, xs, node, env)

    def _filter_by(self, keep: Leaf, xs: Any, node: ast.Node, env: Env) -> Any:
        if env.level is None:
            with self.b.rule("FILTER", node, "the elements where the predicate holds"):
                return map_leaves(xs, lambda leaf: Leaf(self.b.emit(
                    Filter(keep.atom, leaf.atom), leaf.rep, "filt")))
        with self.b.rule("LIFT-FILTER-SEGMENTED", node, "the kept elements of each point "
                         "differ in number: a segmented filter"):
            mask = self.values(keep.atom)

            def one(leaf: Leaf) -> Leaf:
                x = leaf.atom
                offs = self.offsets(x) if isinstance(x.rep, Segmented) else \
                    self.regular_offsets(self.length(x), self.inner_extent(x))
                vals = self.values(x)
                new_offs, new_vals = self.b.emit(SegFilter(mask, offs, vals),
                                                 [OFFSETS, vals.rep], "filt")
                return Leaf(self.b.emit(Rebuild(new_offs, new_vals), Segmented(vals.rep),
                                        "filt"), env.level)
            return map_leaves(xs, one)

    def lib_partition(self, args, node, env):
        p, xs = args
        xs = self._home(xs, env)
        keep = self.keep_mask(p, xs, node, env)
        other = self.b.emit(Map(self.lam("\\k -> !k"), (keep.atom,)), keep.atom.rep, "not")
        return TupleVal((self._filter_by(keep, xs, node, env),
                         self._filter_by(Leaf(other, keep.level), xs, node, env)))

    # ------------------------------------------------------------------ expand and flatten
    def lib_expand(self, args, node, env):
        size, get, xs = args
        xs = self._home(xs, env)
        level, rows = self.enter_rows(leaves(xs), env.level)
        it = iter(rows)
        x = map_leaves(xs, lambda _: next(it))
        rule = "EXPAND" if env.level is None else "LIFT-EXPAND"
        with self.b.rule(rule, node, "sizes per element, sizes_to_offsets, then the elements "
                         "of every segment"):
            inner_env = env.at(level)
            n = self.apply_value(size, [x], node, inner_env)
            if n.level is not None:
                n = self.to_level(n, level)
            inner, index = self.enter_extent(n, level, n.level is None)
            result = self.apply_value(get, [self.to_level(x, inner), index], node,
                                      env.at(inner))
            per_element = self.leave(result, inner)
            per_point = self.leave(per_element, level)
        return self.flatten_rows(per_point, node, env)

    def lib_flatten(self, args, node, env):
        return self.flatten_rows(self._home(args[0], env), node, env)

    def flatten_rows(self, xss: Any, node: ast.Node, env: Env) -> Any:
        if env.level is None:
            with self.b.rule("FLATTEN", node, "the flat values (a view)"):
                return map_leaves(xss, lambda leaf: Leaf(self.values(leaf.atom)))
        with self.b.rule("LIFT-FLATTEN", node, "every point's rows joined"):
            return map_leaves(xss, lambda leaf: Leaf(self._flatten_lifted(leaf.atom),
                                                      env.level))

    def _flatten_lifted(self, x: FVar) -> FVar:
        points = self.length(x)
        if isinstance(x.rep, Regular):
            merged = self.values(self.values(x))
            from ...ir.flat import Reshape
            return self.b.emit(Reshape(merged, points), Regular(merged.rep.elem,
                                                                merged.rep.rank + 1), "flat")
        vals = self.values(x)
        if isinstance(vals.rep, Regular):
            m = self.inner_extent(vals)
            offs = self.mapf("\\o -> o * m", [self.offsets(x)], "i64", "offs", m=m)
            inner = self.values(vals)
        else:
            offs = self.gather(self.offsets(vals), self.offsets(x), "offs")
            inner = self.values(vals)
        return self.b.emit(Rebuild(offs, inner), Segmented(inner.rep), "flat")

    # ------------------------------------------------------------------ lengths and tuples
    def lib_length(self, args, node, env):
        xs = self._home(args[0], env)
        out = self.lengths_of(xs)
        if env.level is not None:
            rule = "LIFT-LENGTH-REGULAR" if out.level is None else "LIFT-LENGTH-SEGMENTED"
            note = "a regular block: one length for every point (avoided)" \
                if out.level is None else "the lengths of the segments"
            with self.b.rule(rule, node, note):
                pass
        return out

    def lib_zip(self, args, node, env):
        arrays = [self._home(a, env) for a in args]
        self.same_lengths(arrays, node, env, _called(node, "zip"))
        with self.b.rule("TUPLE-F", node, "an array of tuples is a tuple of arrays: nothing "
                         "to compute"):
            return TupleVal(tuple(arrays))

    lib_zip3 = lib_zip

    def lib_unzip(self, args, node, env):
        v = args[0]
        if isinstance(v, Leaf) and isinstance(v.atom, FVar):
            v = self.split(v.atom, v.level)
        return v

    lib_unzip3 = lib_unzip

    # ------------------------------------------------------------------ select
    def select_values(self, c: Any, a: Any, b: Any, node: ast.Node, env: Env) -> Any:
        """Both values computed; one chosen (per point inside a map)."""
        if c.level is None:
            with self.b.rule("SELECT", node, "an unlifted condition: one of two values"):
                return self.if_values(c, a, b, env)
        a, b = self._home(a, env), self._home(b, env)
        mask = self.to_level(c, env.level).atom
        place = self.mapf("\\c p -> if c then p else n + p",
                          [mask, self.iota(self.points(env.level))], "i64", "place",
                          n=self.points(env.level))
        with self.b.rule("LIFT-IF-SELECT", node, "both values computed: a gather picks each "
                         "point's row"):
            def pick(x: Leaf, y: Leaf) -> Leaf:
                rep = generalise(x.rep, y.rep)
                x, y = self.coerce(x, rep), self.coerce(y, rep)
                return Leaf(self.gather(self.concat(x.atom, y.atom), place, "sel"), env.level)
            return zip_leaves([a, b], pick)

    def lib_cond(self, args, node, env):
        return self.select_values(args[0], args[1], args[2], node, env)


def _lifted(rep):
    if isinstance(rep, ScalarRep):
        return Regular(rep.elem, 1)
    if isinstance(rep, TupleRep):
        return TupleRep(tuple(_lifted(p) for p in rep.parts))
    return rep


def _called(node: ast.Node, default: str) -> str:
    """The library function a check's message names: `map2`, `zip3`, ... as written."""
    fn = getattr(node, "fn", None)
    return fn.name if isinstance(fn, ast.Var) and fn.name.startswith(default) else default
