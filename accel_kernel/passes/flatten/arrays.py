"""Rules for array literals, ranges, indexing, slices and `with` updates, plus the facts the
flattener reads (is an extent, or a value's shape, the same at every point of the nest?).

Indexing inside a map: `xs[i]` of an avoided `xs` is a `gather` (LIFT-INDEX-AVOIDED); of a
lifted `xs` whose rows form a regular block, a gather from its flat values at `row * m + i`
after a bounds check (LIFT-INDEX-REGULAR, no descriptor); of a lifted irregular `xs`, a
`seg_gather` (LIFT-INDEX-SEGMENTED). A lifted `xs` bound further out is not copied to the
inner level: the ids of each point's ancestor select its row.
"""
from __future__ import annotations

from typing import Any

from ...ir.flat import (OFFSETS, Assert, Const, FVar, Index, Library, Rebuild, Regular, Reshape,
                        ScalarRep, SegGather, Segmented, SizesToOffsets)
from ...ir.assert_message import fill
from ...lang import ast
from ...lang.scalar_ops import DTYPES, INTS, wrap
from ..regularity import nest_of
from ..shape_terms import Generate, SizeLit, index_vars
from .context import Env, Leaf, Level, leaves, map_leaves, zip_leaves
from .reps import array_rank, as_irregular, generalise, row_rep, stack_regular

INDEX_MESSAGE = "index {i} out of bounds for array of length {n}"   # the interpreter's words

def constant_value_of(e: ast.Expr) -> Any:
    """The value of an array literal made of literals only (None when it is not)."""
    if isinstance(e, ast.Lit):
        return DTYPES[e.type](e.value)
    if isinstance(e, ast.UnOp) and e.op == "-" and isinstance(e.operand, ast.Lit):
        t = e.operand.type
        return DTYPES[t](wrap(-e.operand.value, t) if t in INTS else -e.operand.value)
    if isinstance(e, ast.Ascribe):
        return constant_value_of(e.expr)
    if isinstance(e, ast.ArrayLit):
        parts = [constant_value_of(x) for x in e.elems]
        return None if any(p is None for p in parts) else parts
    if isinstance(e, ast.TupleLit):
        parts = [constant_value_of(x) for x in e.elems]
        return None if any(p is None for p in parts) else tuple(parts)
    return None


class ArrayRules:
    """Mixin of the flattener: literals, ranges, indexing, slices, updates, facts."""

    # ------------------------------------------------------------------ facts
    def _uniform_dims(self, node: ast.Node) -> list[list[bool]] | None:
        shape = self.fact("shape", node)
        if shape is None:
            return None
        wrapped, ivs = shape, sorted(index_vars(shape), key=lambda v: v.level, reverse=True)
        for iv in ivs:
            wrapped = Generate(SizeLit(1), iv, wrapped)
        nest = nest_of(wrapped)
        parts = nest.parts if nest.parts is not None else [nest]
        return [list(p.dims[len(ivs):]) if p.parts is None else [False] for p in parts]

    def uniform_extent(self, node: ast.Node) -> bool:
        """Whether the array `node` makes has one length at every point of the map nest."""
        dims = self._uniform_dims(node)
        return dims is not None and all(d[:1] == [True] for d in dims)

    def uniform_value(self, node: ast.Node, env: Env) -> bool:
        """Whether every point's value of `node` has one shape (so per-point arrays stack
        into one regular block)."""
        if not env.trusted:
            return False
        dims = self._uniform_dims(node)
        return dims is not None and all(all(d) for d in dims)

    # ------------------------------------------------------------------ literals and ranges
    def computed_array(self, e: ast.ArrayLit, env: Env) -> Any:
        elems = [self.flatten(x, env) for x in e.elems]
        if env.level is None:
            with self.b.rule("ARRAY", e, "an array of computed elements"):
                return zip_leaves(elems, lambda *xs: self._stack0(list(xs), e, env))
        elems = [self.to_level(x, env.level) for x in elems]
        with self.b.rule("LIFT-ARRAY", e, "k elements per point: one block, gathered "
                         "from the elements side by side (segments when rows may differ)"):
            return zip_leaves(elems, lambda *xs: self._stack_lifted(list(xs), e, env))

    def _stack0(self, xs: list[Leaf], e: ast.Node, env: Env) -> Leaf:
        k = len(xs)
        if all(isinstance(x.rep, ScalarRep) for x in xs):
            if k == 1:
                return Leaf(self.replicate(Const(1, "i64"), xs[0].atom))
            names = {f"e{j}": x.atom for j, x in enumerate(xs)}
            text = " else ".join(f"if q == {j} then e{j}" for j in range(k - 1))
            text = f"\\q -> {text} else e{k - 1}"
            return Leaf(self.mapf(text, [self.iota(Const(k, "i64"))], xs[0].rep.elem,
                                  "arr", **names))
        target = xs[0].rep
        for x in xs[1:]:
            target = generalise(target, x.rep)
        if isinstance(target, Regular) and all(x.rep == target for x in xs) \
                and self.uniform_value(e, env):
            flat = self._concat_all([x.atom for x in xs])
            return Leaf(self.b.emit(Reshape(flat, Const(k, "i64")), stack_regular(target),
                                    "arr"))
        return Leaf(self._stack_segmented([x.atom for x in xs], target, e, env))

    def _stack_segmented(self, rows: list[FVar], target: Any, e: ast.Node, env: Env) -> FVar:
        """Rows (arrays) of possibly different lengths as one Segmented array."""
        if isinstance(target, Regular) and target.rank > 1:
            target = as_irregular(target)
        rows = [self.coerce(Leaf(r), target).atom for r in rows]
        sizes = self._stack0([Leaf(self.length(r)) for r in rows], e, env).atom
        offs = self.b.emit(SizesToOffsets(sizes), OFFSETS, "offs")
        vals = self._concat_all(rows)
        return self.b.emit(Rebuild(offs, vals), Segmented(vals.rep), "arr")

    def _concat_all(self, xs: list[FVar]) -> FVar:
        out = xs[0]
        for x in xs[1:]:
            out = self.concat(out, x)
        return out

    def _stack_lifted(self, xs: list[Leaf], e: ast.Node, env: Env) -> Leaf:
        """Every point's `[x0, ..., xk-1]`: the elements of all points side by side, gathered
        point by point. Elements that are arrays stay one regular block only when the facts
        say every point's literal has one shape; otherwise the rows become segments."""
        level = env.level
        target = xs[0].rep
        for x in xs[1:]:
            target = generalise(target, x.rep)
        if array_rank(target) > 1 and not self.uniform_value(e, env):
            target = as_irregular(target)
        rows = [self.coerce(x, target).atom for x in xs]
        k = Const(len(xs), "i64")
        points = self.points(level)
        flat = self._concat_all(rows)                        # element j of every point, ...
        total = self.scalarf("p * k", "i64", "n", p=points, k=k)
        idx = self.mapf("\\q -> (q % k) * p + q / k", [self.iota(total)], "i64", "idx",
                        k=k, p=points)
        gathered = self.gather(flat, idx, "arr")
        if isinstance(target, (ScalarRep, Regular)):
            return Leaf(self.b.emit(Reshape(gathered, points), stack_regular(target), "arr"),
                        level)
        offs = self.regular_offsets(points, k)
        return Leaf(self.b.emit(Rebuild(offs, gathered), Segmented(gathered.rep), "arr"),
                    level)

    def range_(self, e: ast.Range, env: Env) -> Any:
        start, end = self.flatten(e.start, env), self.flatten(e.end, env)
        step = self.flatten(e.step, env) if e.step is not None else Leaf(Const(1, "i64"))
        if any(x.level is not None for x in (start, end, step)):
            return self.range_lifted(start, end, step, e, env)
        with self.b.rule("RANGE", e, "a range with a computed step: its count, then a map "
                         "over iota"):
            ok = self.scalarf("s != 0", "bool", "ok", s=step.atom)
            self.b.check(Assert(ok, "SizeError", "range step is 0"))
            incl = "s" if e.inclusive else "s - 1"
            incl_neg = "-s" if e.inclusive else "-s - 1"
            count = self.scalarf(f"if s > 0 then max 0 ((b - a + {incl}) / s) "
                                 f"else max 0 ((a - b + {incl_neg}) / (-s))", "i64", "count",
                                 a=start.atom, b=end.atom, s=step.atom)
            return Leaf(self.mapf("\\i -> a + i * s", [self.iota(count)], start.rep.elem,
                                  "range", a=start.atom, s=step.atom))

    # ------------------------------------------------------------------ indexing
    def check_home(self, values: list[Any], env: Env) -> Level | None:
        """Where code that may fail on `values` runs: the deepest level they are lifted over
        or stand for, and not above the floor of a partition."""
        levels = [leaf.level if leaf.level is not None else leaf.over
                  for v in values for leaf in leaves(v)]
        return self.floored(self._deepest(levels, env), env)

    def floored(self, home: Level | None, env: Env) -> Level | None:
        """Where code that may fail runs: not above the floor of a partition (so that it
        runs only for the points that get there)."""
        if env.floor is not None and (home is None or home.depth < env.floor.depth):
            from .context import position
            return position(env.floor, env.level)
        return home

    def index_value(self, xs: Any, i: Leaf, node: ast.Node, env: Env) -> Any:
        home = self.check_home([xs, i], env)
        if home is None:
            with self.b.rule("INDEX", node, "one element, bounds checked"):
                return map_leaves(xs, lambda leaf: self.split(self.b.emit(
                    Index(leaf.atom, i.atom), row_rep(leaf.rep), "elem"), None))
        return map_leaves(xs, lambda leaf: self._index_lifted(leaf, i, home, node, env))

    def _index_lifted(self, leaf: Leaf, i: Leaf, home: Level, node: ast.Node,
                      env: Env) -> Any:
        x = leaf.atom
        if i.level is not None or leaf.level is None:
            i = self.to_level(i, home)
        if leaf.level is None:
            with self.b.rule("LIFT-INDEX-AVOIDED", node, "an avoided array read at lifted "
                             "indices: a gather, no replicate"):
                return self.split(self.gather(x, i.atom, "elem"), home)
        # for every point of `home`, the row of x (a point of x's own level) it reads
        rows = self.ids_to(home, leaf.level)
        if rows is None:
            rows = self.iota(self.points(home))
        if isinstance(x.rep, Regular):
            m = self.inner_extent(x)
            with self.b.rule("LIFT-INDEX-REGULAR", node, "rows of a regular block: a gather "
                             "from its flat values at row * m + i, no descriptor"):
                if i.level is None:
                    ok = self.scalarf("p == 0 || 0 <= i && i < m", "bool", "ok", i=i.atom,
                                      m=m, p=self.points(home))
                    flat = self.mapf("\\r -> r * m + i", [rows], "i64", "at", m=m, i=i.atom)
                else:
                    ok = self.mapf("\\i -> 0 <= i && i < m", [i.atom], "bool", "ok", m=m)
                    flat = self.mapf("\\r i -> r * m + i", [rows, i.atom], "i64", "at", m=m)
                self.b.check(Assert(ok, "IndexError", fill(INDEX_MESSAGE, {"i": i.atom,
                                                                          "n": m})))
                out = self.gather(self.values(x), flat, "elem")
            return self.split(out, home)
        if i.level is None:
            i = Leaf(self.replicate(self.points(home), i.atom), home)
        with self.b.rule("LIFT-INDEX-SEGMENTED", node, "rows of an irregular array: one "
                         "element of each point's segment"):
            vals = self.values(x)
            out = self.b.emit(SegGather(self.offsets(x), vals, rows, i.atom), vals.rep,
                              "elem")
        return self.split(out, home)

    # ------------------------------------------------------------------ slices
    def slice_(self, e: ast.Slice, env: Env) -> Any:
        if e.step is not None:
            return self._strided(e, env)
        xs = self.flatten(e.expr, env)
        n = self.lengths_of(xs)
        lo = self.flatten(e.lo, env) if e.lo is not None else Leaf(Const(0, "i64"))
        hi = self.flatten(e.hi, env) if e.hi is not None else n
        home = self.check_home([xs, lo, hi, n], env)
        with self.b.at_node(e):
            self._bounds([lo, hi, n], "0 <= lo && lo <= hi && hi <= n", home, "IndexError",
                         "slice {lo}:{hi} out of bounds for array of length {n}",
                         names=("lo", "hi", "n"))
            count = self._scalar_of([hi, lo], "hi - lo", home, names=("hi", "lo"))
            rule = "SLICE" if home is None else "LIFT-SLICE"
            with self.b.rule(rule, e, "the elements lo .. hi - 1: a gather"):
                return self.slice_rows(xs, lo, count, home)

    def _strided(self, e: ast.Slice, env: Env) -> Any:
        """`xs[i:j:s]`: s = 0 fails; s > 0 takes i, i + s, ... below j (0 <= i <= j <= n);
        s < 0 takes i, i + s, ... above j (-1 <= j <= i < n), i defaulting to n - 1 and j
        to -1 (docs/language.md, "Slices")."""
        xs = self.flatten(e.expr, env)
        n = self.lengths_of(xs)
        st = self.flatten(e.step, env)
        home = self.check_home([xs, st, n], env)
        with self.b.at_node(e):
            lo = self.flatten(e.lo, env) if e.lo is not None else \
                self._scalar_of([st, n], "if s > 0 then 0 else n - 1", home, names=("s", "n"))
            hi = self.flatten(e.hi, env) if e.hi is not None else \
                self._scalar_of([st, n], "if s > 0 then n else -1", home, names=("s", "n"))
            home = self.check_home([xs, lo, hi, st, n], env)
            self._bounds([lo, hi, st], "s != 0", home, "IndexError", "slice {lo}:{hi}:{s} has "
                         "step 0", names=("lo", "hi", "s"))
            self._bounds([lo, hi, st, n], "if s > 0 then 0 <= lo && lo <= hi && hi <= n "
                         "else -1 <= hi && hi <= lo && lo < n", home, "IndexError",
                         "slice {lo}:{hi}:{s} out of bounds for array of length {n}",
                         names=("lo", "hi", "s", "n"))
            count = self._scalar_of([hi, lo, st], "(hi - lo + s - (if s > 0 then 1 else -1)) / s",
                                    home, names=("hi", "lo", "s"))
            rule = "SLICE" if home is None else "LIFT-SLICE"
            with self.b.rule(rule, e, "the elements lo, lo + s, ... (count of them): a gather"):
                return self.slice_rows(xs, lo, count, home, st)

    def _scalar_of(self, args: list[Leaf], body: str, home: Level | None,
                   names: tuple[str, ...]) -> Leaf:
        if all(a.level is None for a in args):
            return Leaf(self.scalarf(body, "i64", "n", **{k: a.atom for k, a in
                                                          zip(names, args)}))
        lifted = [(k, self.to_level(a, home).atom) for k, a in zip(names, args)
                  if a.level is not None]
        free = {k: a.atom for k, a in zip(names, args) if a.level is None}
        text = "\\" + " ".join(k for k, _ in lifted) + " -> " + body
        return Leaf(self.mapf(text, [a for _, a in lifted], "i64", "n", **free), home)

    def _bounds(self, args: list[Leaf], body: str, home: Level | None, kind: str,
                message: str, names: tuple[str, ...]) -> None:
        """Assert `body` over `args` (named `names`); `{name}` in `message` shows the value
        of that argument where the check failed (`ir.assert_message`)."""
        if all(a.level is None for a in args):
            free = {k: a.atom for k, a in zip(names, args)}
            shown = dict(free)
            if home is not None:          # one value for every point: only if there is one
                body, free["pts"] = f"pts == 0 || ({body})", self.points(home)
            ok = self.scalarf(body, "bool", "ok", **free)
        else:
            lifted = [(k, self.to_level(a, home).atom) for k, a in zip(names, args)
                      if a.level is not None]
            free = {k: a.atom for k, a in zip(names, args) if a.level is None}
            shown = {**free, **dict(lifted)}
            text = "\\" + " ".join(k for k, _ in lifted) + " -> " + body
            ok = self.mapf(text, [a for _, a in lifted], "bool", "ok", **free)
        self.b.check(Assert(ok, kind, fill(message, shown)))

    def slice_rows(self, xs: Any, lo: Leaf, count: Leaf, home: Level | None,
                   step: Leaf | None = None) -> Any:
        """Every point's elements lo, lo + step, ... (count of them; step 1 when None;
        bounds checked before)."""
        if home is None:
            idx = self._slice_index([("k", self.iota(count.atom))], "", "k", [], lo, step,
                                    None, home)
            return map_leaves(xs, lambda leaf: Leaf(self.gather(leaf.atom, idx, "slice")))
        if all(leaf.level is None for leaf in leaves(xs)):
            return self._slice_avoided(xs, lo, count, home, step)
        xs = self.to_level(xs, home)
        first = leaves(xs)[0].atom
        if count.level is None and isinstance(first.rep, Regular):
            m = self.inner_extent(first)
            total = self.scalarf("p * c", "i64", "n", p=self.points(home), c=count.atom)
            q = self.iota(total)
            idx = self._slice_index([("q", q)], "(q / c) * m", "q % c", [], lo, step,
                                    lambda: self.mapf("\\q -> q / c", [q], "i64", "row",
                                                      c=count.atom),
                                    home, c=count.atom, m=m)
            return map_leaves(xs, lambda leaf: Leaf(self.b.emit(
                Reshape(self.gather(self.values(leaf.atom), idx, "slice"), self.points(home)),
                leaf.rep, "slice"), home))
        sizes = self.to_level(count, home).atom if count.level is not None else \
            self.replicate(self.points(home), count.atom)
        offs = self.b.emit(SizesToOffsets(sizes), OFFSETS, "offs")
        seg, pos = self.segment_ids(offs), self.segment_iota(offs)
        if isinstance(first.rep, Regular):
            starts = self.mapf("\\s -> s * m", [seg], "i64", "start",
                               m=self.inner_extent(first))
        else:
            starts = self.gather(self.offsets(first), seg, "start")
        idx = self._slice_index([("s", starts)], "s", "p", [("p", pos)], lo, step,
                                lambda: seg, home)

        def one(leaf: Leaf) -> Leaf:
            vals = self.gather(self.values(leaf.atom), idx, "slice")
            return Leaf(self.b.emit(Rebuild(offs, vals), Segmented(vals.rep), "slice"), home)
        return map_leaves(xs, one)

    def _slice_index(self, before: list, base: str, position: str, after: list, lo: Leaf,
                     step: Leaf | None, rows, home: Level | None, **free: Any) -> Any:
        """The flat index of each element of a slice: `base + lo + position * step` over the
        arrays `before` and `after` ((name, atom) pairs, the lambda's parameters), with `lo`
        and `step` free or, when lifted, gathered at each element's row (`rows()`)."""
        params, args, terms = [n for n, _ in before], [a for _, a in before], [base] if base else []
        row_ids = []

        def per_element(leaf: Leaf, free_name: str, param: str, label: str) -> str:
            if leaf.level is None:
                free[free_name] = leaf.atom
                return free_name
            if not row_ids:
                row_ids.append(rows())
            params.append(param)
            args.append(self.gather(self.to_level(leaf, home).atom, row_ids[0], label))
            return param

        terms.append(per_element(lo, "lo", "l", "lo"))
        if step is not None:
            moved = per_element(step, "st", "t", "step")
            position = f"({position}) * {moved}" if " " in position else f"{position} * {moved}"
        terms.append(position)
        params += [n for n, _ in after]
        args += [a for _, a in after]
        text = "\\" + " ".join(params) + " -> " + " + ".join(terms)
        return self.mapf(text, args, "i64", "idx", **free)

    def _slice_avoided(self, xs: Any, lo: Leaf, count: Leaf, home: Level,
                       step: Leaf | None = None) -> Any:
        """Every point's slice of one unlifted array: gathered from it directly at each
        point's `lo + k * step` (never a copy of the array per point)."""
        if count.level is None:
            total = self.scalarf("p * c", "i64", "n", p=self.points(home), c=count.atom)
            q = self.iota(total)
            idx = self._slice_index([("q", q)], "", "q % c", [], lo, step,
                                    lambda: self.mapf("\\q -> q / c", [q], "i64", "row",
                                                      c=count.atom),
                                    home, c=count.atom)

            def block(leaf: Leaf) -> Leaf:
                rows = self.gather(leaf.atom, idx, "slice")
                rep = Regular(rows.rep.elem, rows.rep.rank + 1) \
                    if isinstance(rows.rep, Regular) else rows.rep
                if not isinstance(rep, Regular):
                    raise NotImplementedError("flatten: a slice of an irregular array "
                                              "inside a map")
                return Leaf(self.b.emit(Reshape(rows, self.points(home)), rep, "slice"), home)
            return map_leaves(xs, block)
        sizes = self.to_level(count, home).atom
        offs = self.b.emit(SizesToOffsets(sizes), OFFSETS, "offs")
        seg, pos = self.segment_ids(offs), self.segment_iota(offs)
        idx = self._slice_index([], "", "p", [("p", pos)], lo, step, lambda: seg, home)

        def one(leaf: Leaf) -> Leaf:
            vals = self.gather(leaf.atom, idx, "slice")
            return Leaf(self.b.emit(Rebuild(offs, vals), Segmented(vals.rep), "slice"), home)
        return map_leaves(xs, one)

    # ------------------------------------------------------------------ updates
    def update(self, e: ast.Update, env: Env) -> Any:
        xs = self.flatten(e.array, env)
        indices = [self.flatten(i, env) for i in e.indices]
        v = self.flatten(e.value, env)
        home = self.check_home([xs, v, *indices], env)
        if home is not None:
            with self.b.rule("LIFT-UPDATE", e, "one element per point: a scatter on the flat "
                             "values"):
                return self._update_path(xs, indices, v, e, env.at(home))
        with self.b.rule("UPDATE", e, "a copy with one element (or row) replaced"):
            return self._update0(xs, indices, v, e, env)

    def _update0(self, xs: Any, indices: list[Leaf], v: Any, e: ast.Node, env: Env) -> Any:
        i, rest = indices[0], indices[1:]
        n = self.lengths_of(xs)
        ok = self.scalarf("0 <= i && i < n", "bool", "ok", i=i.atom, n=n.atom)
        self.b.check(Assert(ok, "IndexError", fill(INDEX_MESSAGE, {"i": i.atom, "n": n.atom})))
        if rest:
            row = self.index_value(xs, i, e, env)
            v = self._update0(row, rest, v, e, env)

        def put(x: Leaf, y: Leaf) -> Leaf:
            if isinstance(y.rep, ScalarRep):
                one_i = self.replicate(Const(1, "i64"), i.atom)
                one_v = self.replicate(Const(1, "i64"), y.atom)
                return Leaf(self.b.emit(Library("scatter", (x.atom, one_i, one_v)), x.rep,
                                        "upd"))
            if isinstance(x.rep, Regular) and self.uniform_value(e, env):
                row = self.b.emit(Reshape(y.atom, Const(1, "i64")), x.rep, "row")
                xx = x.atom
            else:
                target = x.rep if isinstance(x.rep, Segmented) else \
                    Segmented(as_irregular(row_rep(x.rep)))
                target = generalise(target, Segmented(y.rep))
                row = self._stack_segmented([y.atom], target.inner, e, env)
                xx = self.coerce(x, target).atom
            place = self.mapf("\\p -> if p == i then n else p", [self.iota(n.atom)], "i64",
                              "place", i=i.atom, n=n.atom)
            return Leaf(self.gather(self.concat(xx, row), place, "upd"))
        return zip_leaves([xs, v], put)

    def _update_path(self, xs: Any, indices: list[Leaf], v: Any, node: ast.Node,
                     env: Env) -> Any:
        """`xs with [i][j]... = v` inside a map: `xs with [i] = (xs[i] with [j]... = v)`,
        the bounds checked outermost first, as interp does."""
        if len(indices) > 1:
            row = self.index_value(self.to_level(xs, env.level), indices[0], node, env)
            v = self._update_path(row, indices[1:], v, node, env)
        return self.update_lifted(xs, indices[0], v, node, env)

    def update_lifted(self, xs: Any, i: Leaf, v: Any, node: ast.Node, env: Env) -> Any:
        xs = self.to_level(xs, env.level)
        n = self.lengths_of(xs)
        self._bounds([i, n], "0 <= i && i < n", env.level, "IndexError", INDEX_MESSAGE,
                     names=("i", "n"))
        def one_row(x: Leaf) -> Leaf:      # a one-element array per point
            x = self.to_level(x, env.level)
            points = self.points(env.level)
            if isinstance(x.rep, Segmented):      # per point a row of its own length
                offs = self.regular_offsets(points, Const(1, "i64"))
                return Leaf(self.b.emit(Rebuild(offs, x.atom), Segmented(x.rep), "one"),
                            env.level)
            return Leaf(self.b.emit(Reshape(x.atom, points), stack_regular(x.rep), "one"),
                        env.level)
        return self.scatter_lifted(xs, one_row(i), map_leaves(v, one_row), node, env)
