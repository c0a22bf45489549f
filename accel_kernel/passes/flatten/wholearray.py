"""Rules for the whole-array library functions (`concat`, `reverse`, `take`, `scatter`, ...).

Outside every map each is one `Library` operation on the flat arrays (LIBRARY), after the
checks the operation needs (`head` of an empty array, `take` beyond the length). Inside a map
the ones built so far are rewritten with index arithmetic on the flat values, so that a
regular block stays regular: `reverse` and `rotate` gather every point's elements in a new
order (LIFT-PERMUTE-REGULAR / -SEGMENTED), `take`/`drop` are per-point slices, `concat` gathers
from both arrays side by side (LIFT-CONCAT-...), `scatter` becomes one flat `scatter` at
`row start + index` (LIFT-SCATTER-...), `sort` a segmented sort (`seg_sort`).
"""
from __future__ import annotations

from typing import Any

from ...ir.flat import (OFFSETS, Const, FVar, Library, Project, Rebuild, Regular, Reshape,
                        ScalarRep, SegLibrary, Segmented, SizesToOffsets)
from ...lang import ast
from .context import Env, Leaf, Level, TupleVal, leaves, map_leaves, zip_leaves
from .reps import array_rank, as_irregular, generalise, row_rep


class WholeArrayRules:
    """Mixin of the flattener: `lib_<name>` for the whole-array functions."""

    def _library0(self, name: str, node: ast.Node, args: list[Any], rep: Any,
                  fns: tuple = ()) -> FVar:
        with self.b.rule("LIBRARY", node, f"`{name}` on whole flat arrays"):
            return self.b.emit(Library(name, tuple(args), fns), rep, name)

    def _joined_rep(self, reps: list[Any], node: ast.Node, env: Env,
                    lifted: bool = False) -> Any:
        """The rep of an array whose rows come from arrays of reps `reps` (`++`,
        `interleave`, `scatter`): their generalisation, but a Regular block whose rows are
        arrays stays Regular only when the node's facts say its rows have one shape; rows of
        equal rank may differ in length (`[[1, 2, 3]] ++ [[7, 3]]`), and so may the rows of
        the rows of segments."""
        rep = reps[0]
        for r in reps[1:]:
            rep = generalise(rep, r)
        rows_rank = 2 if lifted else 1        # a lifted value's outermost axis is the points
        if array_rank(rep) > rows_rank and not self.uniform_value(node, env):
            rep = as_irregular(rep)
        return rep

    def _not_lifted(self, name: str, env: Env) -> None:
        if env.level is not None:
            raise NotImplementedError(f"flatten: `{name}` inside a map is not built yet")

    # ------------------------------------------------------------------ concat
    def lib_concat(self, args, node, env):
        a, b = [self._home(x, env) for x in args]
        if env.level is None:
            def cat(x: Leaf, y: Leaf) -> Leaf:
                rep = self._joined_rep([x.rep, y.rep], node, env)
                x, y = self.coerce(x, rep), self.coerce(y, rep)
                return Leaf(self._library0("concat", node, [x.atom, y.atom], rep))
            return zip_leaves([a, b], cat)
        return zip_leaves([a, b], lambda x, y: self._concat_lifted(x, y, node, env))

    def _concat_lifted(self, x: Leaf, y: Leaf, node: ast.Node, env: Env) -> Leaf:
        level = env.level
        p = self.points(level)
        joined = self._joined_rep([x.rep, y.rep], node, env, lifted=True)
        if isinstance(x.rep, Regular) and x.rep == y.rep == joined:
            with self.b.rule("LIFT-CONCAT-REGULAR", node, "regular rows of both: a regular "
                             "block again, gathered from the two side by side"):
                ma, mb = self.inner_extent(x.atom), self.inner_extent(y.atom)
                w = self.scalarf("a + b", "i64", "w", a=ma, b=mb)
                total = self.scalarf("p * w", "i64", "n", p=p, w=w)
                cat = self.concat(self.values(x.atom), self.values(y.atom))
                idx = self.mapf("\\q -> let r = q / w in let k = q % w in "
                                "if k < a then r * a + k else p * a + r * b + k - a",
                                [self.iota(total)], "i64", "idx", w=w, a=ma, b=mb, p=p)
                out = self.gather(cat, idx, "cat")
                return Leaf(self.b.emit(Reshape(out, p), x.rep, "cat"), level)
        rep = joined if isinstance(joined, Segmented) else Segmented(row_rep(joined))
        with self.b.rule("LIFT-CONCAT-SEGMENTED", node, "per-point lengths add up: new "
                         "offsets, then a gather from the two value arrays"):
            x, y = self.coerce(x, rep), self.coerce(y, rep)
            ox, oy = self.offsets(x.atom), self.offsets(y.atom)
            la, lb = self.lengths(ox), self.lengths(oy)
            sizes = self.mapf("\\a b -> a + b", [la, lb], "i64", "sz")
            offs = self.b.emit(SizesToOffsets(sizes), OFFSETS, "offs")
            seg, pos = self.segment_ids(offs), self.segment_iota(offs)
            sa, sb = self.gather(ox, seg, "sa"), self.gather(oy, seg, "sb")
            ln = self.gather(la, seg, "la")
            va, vb = self.values(x.atom), self.values(y.atom)
            na = self.length(va)
            idx = self.mapf("\\p s t l -> if p < l then s + p else n + t + p - l",
                            [pos, sa, sb, ln], "i64", "idx", n=na)
            vals = self.gather(self.concat(va, vb), idx, "cat")
            return Leaf(self.b.emit(Rebuild(offs, vals), Segmented(vals.rep), "cat"), level)

    # ------------------------------------------------------------------ permutations
    def _permute(self, xs: Any, src: str, node: ast.Node, env: Env, name: str,
                 extra: Leaf | None = None) -> Any:
        """Every point's elements in a new order: element `p` of a row of length `l` comes
        from element `src` (an accel expression of `p`, `l` and `k`)."""
        level = env.level

        def one(leaf: Leaf) -> Leaf:
            x = leaf.atom
            k_free = {} if extra is None or extra.level is not None else {"k": extra.atom}
            if isinstance(x.rep, Regular):
                with self.b.rule("LIFT-PERMUTE-REGULAR", node, f"`{name}` of regular rows: a "
                                 "gather within the block"):
                    m, pts = self.inner_extent(x), self.points(level)
                    total = self.scalarf("p * m", "i64", "n", p=pts, m=m)
                    q = self.iota(total)
                    args, params = [q], "q"
                    if extra is not None and extra.level is not None:
                        rows = self.mapf("\\q -> q / m", [q], "i64", "row", m=m)
                        args.append(self.gather(self.to_level(extra, level).atom, rows, "k"))
                        params += " k"
                    idx = self.mapf(f"\\{params} -> let p = q % m in let l = m in "
                                    f"(q / m) * m + ({src})", args, "i64", "idx", m=m, **k_free)
                    out = self.gather(self.values(x), idx, name)
                    return Leaf(self.b.emit(Reshape(out, pts), x.rep, name), level)
            with self.b.rule("LIFT-PERMUTE-SEGMENTED", node, f"`{name}` of irregular rows: a "
                             "gather within each segment"):
                offs = self.offsets(x)
                seg, pos = self.segment_ids(offs), self.segment_iota(offs)
                start, lens = self.gather(offs, seg, "start"), self.gather(self.lengths(offs),
                                                                           seg, "len")
                args, params = [start, lens, pos], "s l p"
                if extra is not None and extra.level is not None:
                    args.append(self.gather(self.to_level(extra, level).atom, seg, "k"))
                    params += " k"
                idx = self.mapf(f"\\{params} -> s + ({src})", args, "i64", "idx", **k_free)
                vals = self.gather(self.values(x), idx, name)
                return Leaf(self.b.emit(Rebuild(offs, vals), x.rep, name), level)
        return map_leaves(xs, one)

    def lib_reverse(self, args, node, env):
        xs = self._home(args[0], env)
        if env.level is None:
            return map_leaves(xs, lambda leaf: Leaf(self._library0(
                "reverse", node, [leaf.atom], leaf.rep)))
        return self._permute(xs, "l - 1 - p", node, env, "reverse")

    def lib_rotate(self, args, node, env):
        k, xs = args[0], self._home(args[1], env)
        if env.level is None:
            return map_leaves(xs, lambda leaf: Leaf(self._library0(
                "rotate", node, [k.atom, leaf.atom], leaf.rep)))
        return self._permute(xs, "if l == 0 then 0 else ((p + k) % l + l) % l", node, env,
                             "rotate", extra=k)

    # ------------------------------------------------------------------ take, drop, head, last
    def _count_check(self, n: Leaf, length: Leaf, name: str, env: Env) -> None:
        home = self.check_home([n, length], env)
        self._bounds([n, length], "0 <= k && k <= n", home, "SizeError",
                     f"{name}: {{k}} is out of range for an array of length {{n}}",
                     names=("k", "n"))

    def lib_take(self, args, node, env):
        n, xs = args[0], self._home(args[1], env)
        length = self.lengths_of(xs)
        self._count_check(n, length, "take", env)
        if env.level is None:
            return map_leaves(xs, lambda leaf: Leaf(self._library0(
                "take", node, [n.atom, leaf.atom], leaf.rep)))
        with self.b.rule("LIFT-SLICE", node, "`take` per point: a slice of every row"):
            return self.slice_rows(xs, Leaf(Const(0, "i64")), n, env.level)

    def lib_drop(self, args, node, env):
        n, xs = args[0], self._home(args[1], env)
        length = self.lengths_of(xs)
        self._count_check(n, length, "drop", env)
        if env.level is None:
            return map_leaves(xs, lambda leaf: Leaf(self._library0(
                "drop", node, [n.atom, leaf.atom], leaf.rep)))
        home = self._deepest([n.level, length.level], env)
        count = self._scalar_of([length, n], "l - k", home, names=("l", "k"))
        with self.b.rule("LIFT-SLICE", node, "`drop` per point: a slice of every row"):
            return self.slice_rows(xs, n, count, env.level)

    def _end(self, args, node, env, name: str, index: str) -> Any:
        xs = self._home(args[0], env)
        length = self.lengths_of(xs)
        home = self.check_home([length], env)
        self._bounds([length], "n > 0", home, "SizeError", f"{name} of an empty array",
                     names=("n",))
        i = self._scalar_of([length], index, home, names=("n",))
        return self.index_value(xs, i, node, env)

    def lib_head(self, args, node, env):
        return self._end(args, node, env, "head", "0")

    def lib_last(self, args, node, env):
        return self._end(args, node, env, "last", "n - 1")

    # ------------------------------------------------------------------ sorting
    def lib_sort(self, args, node, env):
        xs = self._home(args[0], env)
        if env.level is None:
            arr = self._array_arg(xs)
            return self.split(self._library0("sort", node, [arr], arr.rep), None)
        if not isinstance(xs, Leaf):
            return self._sort_tuples_lifted(xs, node, env)
        regular = isinstance(xs.rep, Regular)
        seg = self._segmented(xs)
        x = seg.atom
        with self.b.rule("LIFT-SORT-SEGMENTED", node, "one sort per segment"):
            offs, vals = self.b.emit(SegLibrary("sort", self.offsets(x), self.values(x)),
                                     [OFFSETS, self.values(x).rep], "sort")
            if regular:
                return Leaf(self.b.emit(Reshape(vals, self.points(env.level)), xs.rep,
                                        "sort"), env.level)
            return Leaf(self.b.emit(Rebuild(offs, vals), x.rep, "sort"), env.level)

    def _sort_tuples_lifted(self, xs: TupleVal, node: ast.Node, env: Env) -> Any:
        """Every point's row of tuples sorted (lexicographically): one segmented sort of the
        tuple of the components' flat values, then each component put back in its rep."""
        level = env.level
        parts = [self._segmented(leaf) for leaf in leaves(xs)]
        with self.b.rule("LIFT-SORT-SEGMENTED", node, "one sort per segment, of the tuples "
                         "of the components' values"):
            values = self.make_tuple([self.values(p.atom) for p in parts])
            offs, out = self.b.emit(SegLibrary("sort", self.offsets(parts[0].atom), values),
                                    [OFFSETS, values.rep], "sort")
            order = iter(range(len(parts)))

            def one(leaf: Leaf) -> Leaf:
                k = next(order)
                comp = self.b.emit(Project(out, k), values.rep.parts[k], "sort")
                if isinstance(leaf.rep, Regular):
                    return Leaf(self.b.emit(Reshape(comp, self.points(level)), leaf.rep,
                                            "sort"), level)
                return Leaf(self.b.emit(Rebuild(offs, comp), parts[k].atom.rep, "sort"), level)
            return map_leaves(xs, one)

    def lib_sort_by(self, args, node, env):
        key, xs = args[0], self._home(args[1], env)
        keys = self.map_values(key, [xs], node, env)
        if env.level is not None:
            return self._sort_by_lifted(keys, xs, node, env)
        n = self.lengths_of(xs)
        pairs = self.make_tuple([leaf.atom for leaf in leaves(keys)] + [self.iota(n.atom)])
        with self.b.rule("LIBRARY", node, "`sort_by`: sort (key, position) pairs, then "
                         "gather by the positions"):
            sorted_ = self.b.emit(Library("sort", (pairs,)), pairs.rep, "sorted")
            k = len(pairs.rep.parts) - 1                             # type: ignore[union-attr]
            perm = self.b.emit(Project(sorted_, k), Regular("i64", 1), "perm")
        return map_leaves(xs, lambda leaf: Leaf(self.gather(leaf.atom, perm, "sorted")))

    def _sort_by_lifted(self, keys: Any, xs: Any, node: ast.Node, env: Env) -> Any:
        """Every point's row sorted by its keys: one `seg_sort_by` with the keys given."""
        level = env.level
        with self.b.rule("LIFT-SORT-SEGMENTED", node, "one stable sort per segment, by the "
                         "keys computed per element"):
            key_vals = self._array_arg(map_leaves(self._segmented(keys), lambda leaf: Leaf(
                self.values(leaf.atom))))

            def one(leaf: Leaf) -> Leaf:
                x = self._segmented(leaf).atom
                vals = self.values(x)
                offs, out = self.b.emit(SegLibrary("sort_by", self.offsets(x), vals,
                                                   (key_vals,)), [OFFSETS, vals.rep], "sort")
                if isinstance(leaf.rep, Regular):
                    return Leaf(self.b.emit(Reshape(out, self.points(level)), leaf.rep,
                                            "sort"), level)
                return Leaf(self.b.emit(Rebuild(offs, out), x.rep, "sort"), level)
            return map_leaves(xs, one)

    # ------------------------------------------------------------------ the rest
    def lib_transpose(self, args, node, env):
        xs = self._home(args[0], env)
        if env.level is not None:
            return self.transpose_lifted(xs, node, env)
        return map_leaves(xs, lambda leaf: Leaf(self._library0(
            "transpose", node, [leaf.atom], _regular_of(leaf.rep))))

    def row_targets(self, x: FVar, rows: FVar, flat_is: FVar) -> FVar:
        """Where index `flat_is[k]` of row `rows[k]` of `x` lies in `x`'s flat values, or -1
        (dropped by scatter and reduce_by_index) when it is outside that row."""
        if isinstance(x.rep, Regular):
            return self.mapf("\\r i -> if 0 <= i && i < m then r * m + i else -1",
                             [rows, flat_is], "i64", "at", m=self.inner_extent(x))
        offs = self.offsets(x)
        start = self.gather(offs, rows, "start")
        lens = self.gather(self.lengths(offs), rows, "len")
        return self.mapf("\\s l i -> if 0 <= i && i < l then s + i else -1",
                         [start, lens, flat_is], "i64", "at")

    def lib_interleave(self, args, node, env):
        a, b = [self._home(x, env) for x in args]
        if env.level is not None:
            return self.interleave_lifted(a, b, node, env)

        def weave(x: Leaf, y: Leaf) -> Leaf:
            rep = self._joined_rep([x.rep, y.rep], node, env)
            x, y = self.coerce(x, rep), self.coerce(y, rep)
            return Leaf(self._library0("interleave", node, [x.atom, y.atom], rep))
        return zip_leaves([a, b], weave)

    def lib_reduce_by_index(self, args, node, env):
        dest, op, ne, is_, vs = args
        if env.level is not None:
            return self.reduce_by_index_lifted(dest, op, ne, is_, vs, node, env)
        try:
            fn = self.scalar_fn(op, 2, "reduce_by_index")
        except NotImplementedError:
            return self.reduce_by_index_columns(dest, op, ne, is_, vs, node, env)
        d = self._array_arg(dest)
        arr = self._array_arg(vs)
        out = self._library0("reduce_by_index", node,
                             [d, self._neutral(ne, "reduce_by_index"), is_.atom, arr], d.rep,
                             (fn,))
        return self.split(out, None)

    def lib_scatter(self, args, node, env):
        dest, is_, vs = [self._home(x, env) for x in args]
        if env.level is None:
            self.same_lengths([is_, vs], node, env, "scatter")

            def put(d: Leaf, v: Leaf) -> Leaf:
                if isinstance(d.rep, ScalarRep) or isinstance(row_rep(d.rep), ScalarRep):
                    rep = d.rep
                else:
                    rep = self._joined_rep([d.rep, v.rep], node, env)
                    d, v = self.coerce(d, rep), self.coerce(v, rep)
                return Leaf(self._library0("scatter", node, [d.atom, is_.atom, v.atom], rep))
            return zip_leaves([dest, vs], put)
        return self.scatter_lifted(dest, is_, vs, node, env)

    def scatter_lifted(self, dest: Any, is_: Leaf, vs: Any, node: ast.Node, env: Env) -> Any:
        """One flat `scatter` into the values of every point's row: index `i` of point `r`
        goes to `start(r) + i` when `0 <= i < length(r)`, else nowhere (-1 is ignored)."""
        level = env.level
        self.same_lengths([is_, vs], node, env, "scatter")
        ix = is_.atom
        if isinstance(ix.rep, Regular):
            k = self.inner_extent(ix)
            rows = self.mapf("\\q -> q / k", [self.iota(self.length(self.values(ix)))],
                             "i64", "row", k=k)
        else:
            rows = self.segment_ids(self.offsets(ix))
        flat_is = self.values(ix)

        def one(d: Leaf, v: Leaf) -> Leaf:
            x = d.atom
            if isinstance(x.rep, Regular):
                rule, note = "LIFT-SCATTER-REGULAR", "rows of a regular block: targets at " \
                    "row * m + i, one flat scatter, no descriptor"
            else:
                rule, note = "LIFT-SCATTER-SEGMENTED", "irregular rows: targets at the " \
                    "segment start + i, one flat scatter"
            with self.b.rule(rule, node, note):
                target = self.row_targets(x, rows, flat_is)
                vals, new_vals = self.values(x), self.values(v.atom)
                if not isinstance(row_rep(vals.rep), ScalarRep):    # the elements are rows
                    rep = self._joined_rep([vals.rep, new_vals.rep], node, env)
                    vals = self.coerce(Leaf(vals), rep).atom
                    new_vals = self.coerce(Leaf(new_vals), rep).atom
                new = self.b.emit(Library("scatter", (vals, target, new_vals)),
                                  vals.rep, "scat")
                if isinstance(x.rep, Regular) and vals.rep == row_rep(x.rep):
                    return Leaf(self.b.emit(Reshape(new, self.points(level)), x.rep, "scat"),
                                level)
                offs = self.offsets(x) if isinstance(x.rep, Segmented) else \
                    self.regular_offsets(self.length(x), self.inner_extent(x))
                return Leaf(self.b.emit(Rebuild(offs, new), Segmented(new.rep), "scat"), level)
        return zip_leaves([dest, vs], one)


def _regular_of(rep: Any) -> Any:
    if isinstance(rep, Segmented) and isinstance(rep.inner, Regular):
        return Regular(rep.inner.elem, rep.inner.rank + 1)
    return rep
