"""Levels of the lifting context: entering and leaving maps, moving values between levels.

- `enter_map` / `enter_extent` start a level below the current one: over the rows of arrays
  (regular when the rows are a `Regular` block, irregular over a `Segmented` array's
  descriptor) or over `n` points per parent point (regular when `n` is one unlifted scalar or
  the facts show it is the same everywhere, irregular with `sizes_to_offsets` otherwise).
- `leave` turns the results of a level into per-point arrays of its parent: a regular level
  gives `reshape` (no descriptor), an irregular one `rebuild` with its descriptor.
- `to_level` gives a value the points of a deeper (or restricted) level: an unlifted array is
  `replicate`d only when an operation needs it per point; a lifted one is gathered by the
  ids of its ancestor points (`segment_ids`, or `q / m` on a regular level).
- `restrict` and `merge` make the sub-levels of a partition and put their results back.
- `coerce` converts a `Regular` value to the `Segmented` rep another value of its kind has.
"""
from __future__ import annotations

import itertools
from typing import Any

from ...ir.flat import (OFFSETS, Const, FVar, Gather, Iota, Length, Lengths, Library, Map,
                        Offsets, Rebuild, Regular, Rep, Replicate, Reshape, Scalar, ScalarFn,
                        ScalarRep, SegmentIds, SegmentIota, Segmented, SizesToOffsets, TupleRep,
                        Values, Atom, Reduce, Filter, Project, MakeTuple)
from ...ir.flat_printer import make_fn
from ...lang import ast
from ...lang.parser import parse_expr
from ...lang.source import Source
from .context import Builder, Env, Leaf, Level, TupleVal, Val, leaves, map_leaves, zip_leaves
from .reps import row_rep, stack_regular

I64 = ScalarRep("i64")
_PARSED: dict[str, ast.Expr] = {}


def _parse(text: str) -> ast.Expr:
    if text not in _PARSED:
        _PARSED[text] = parse_expr(Source("flatten", text), itertools.repeat(0))
    return _PARSED[text]


def substitute_names(e: ast.Node, names: dict[str, Any]) -> Any:
    """`e` with each `Var` named in `names` replaced: an FVar by a variable of its name, a
    Const by a literal. Binders are not renamed (the texts here bind nothing in `names`)."""
    if isinstance(e, ast.Var) and e.name in names:
        a = names[e.name]
        if isinstance(a, Const):
            return ast.Lit(a.value, a.elem, span=e.span)
        return ast.Var(a.name, span=e.span)
    if not isinstance(e, ast.Node):
        return e
    changes = {}
    for name in e.__dataclass_fields__:
        if name in ("span", "id"):
            continue
        value = getattr(e, name)
        if isinstance(value, ast.Node):
            changes[name] = substitute_names(value, names)
        elif isinstance(value, tuple):
            changes[name] = tuple(substitute_names(v, names) if isinstance(v, ast.Node) else v
                                  for v in value)
    return type(e)(**{**{k: getattr(e, k) for k in e.__dataclass_fields__
                         if k not in ("span", "id")}, **changes}, span=e.span, id=e.id)


class LevelOps:
    b: Builder

    # ------------------------------------------------------------------ small emitters
    def lam(self, text: str, **names: Atom) -> ScalarFn:
        """A scalar function written in accel (`\\q -> q / m`), `names` its free atoms."""
        expr = substitute_names(_parse(text), names)
        reps = {a.name: a.rep for a in names.values() if isinstance(a, FVar)}
        if isinstance(expr, ast.Lambda):
            return make_fn(expr.params, expr.body, reps)
        return make_fn((), expr, reps)

    def mapf(self, text: str, args: list[Atom], out: str, base: str = "v",
             **names: Atom) -> FVar:
        rank = args[0].rep.rank if isinstance(args[0].rep, Regular) else 1  # type: ignore
        return self.b.emit(Map(self.lam(text, **names), tuple(args)), Regular(out, rank), base)

    def scalarf(self, text: str, out: str, base: str = "n", **names: Atom) -> Atom:
        return self.b.emit(Scalar(self.lam(text, **names)), ScalarRep(out), base)

    def compute(self, body: str, args: dict[str, Leaf], out: str, env: Env) -> Leaf:
        return self.compute_with(body, args, out, env)[0]

    def compute_with(self, body: str, args: dict[str, Leaf], out: str,
                     env: Env) -> tuple[Leaf, dict[str, Atom]]:
        """Scalar code `body` of the named values at the deepest level among them (one
        `scalar` when none is lifted, else one `map` over the lifted ones), and the atoms it
        read (the lifted ones brought to that level)."""
        lifted = [name for name, leaf in args.items() if leaf.level is not None]
        unlifted = {name: leaf.atom for name, leaf in args.items() if leaf.level is None}
        if not lifted:
            return Leaf(self.scalarf(body, out, "v", **unlifted)), unlifted
        home = self._deepest([args[name].level for name in lifted], env)
        atoms = {name: self.to_level(args[name], home).atom for name in lifted}
        lam = "\\" + " ".join(lifted) + " -> " + body
        x = self.mapf(lam, list(atoms.values()), out, "v", **unlifted)
        return Leaf(x, home), {**unlifted, **atoms}

    def length(self, x: Atom) -> Atom:
        return self.b.cached(("length", x), lambda: self.b.emit(Length(x), I64, "len"))

    def points(self, level: Level) -> Atom:
        """How many points `level` has (made when first needed)."""
        if callable(level.points):
            return self.b.cached(("points", level), level.points)
        return level.points

    def values(self, x: FVar) -> FVar:
        def make() -> FVar:
            rep = x.rep.inner if isinstance(x.rep, Segmented) else row_rep(x.rep)
            return self.b.emit(Values(x), rep, "vals")
        return self.b.cached(("values", x), make)

    def offsets(self, x: FVar) -> FVar:
        return self.b.cached(("offsets", x), lambda: self.b.emit(Offsets(x), OFFSETS, "offs"))

    def iota(self, n: Atom) -> FVar:
        return self.b.cached(("iota", n), lambda: self.b.emit(Iota(n), Regular("i64", 1),
                                                               "iota"))

    def lengths(self, offsets: FVar) -> FVar:
        return self.b.cached(("lengths", offsets),
                             lambda: self.b.emit(Lengths(offsets), Regular("i64", 1), "lens"))

    def segment_ids(self, offsets: FVar) -> FVar:
        return self.b.cached(("segids", offsets),
                             lambda: self.b.emit(SegmentIds(offsets), Regular("i64", 1), "seg"))

    def segment_iota(self, offsets: FVar) -> FVar:
        return self.b.cached(("segiota", offsets),
                             lambda: self.b.emit(SegmentIota(offsets), Regular("i64", 1),
                                                 "pos"))

    def gather(self, x: Atom, indices: FVar, base: str = "g") -> FVar:
        counted = self.b.frame.lookup(("iota-of", indices))
        if counted is not None and isinstance(x, FVar) and \
                self.b.frame.lookup(("length", x)) == counted:
            return x                              # every row, in order

        def make() -> FVar:
            rep = x.rep if isinstance(x, FVar) else ScalarRep(x.elem)
            idx = indices.rep
            if isinstance(rep, Regular) and isinstance(idx, Regular):
                out: Rep = Regular(rep.elem, rep.rank - 1 + idx.rank)
            else:
                out = rep
            return self.b.emit(Gather(x, indices), out, base)  # type: ignore[arg-type]
        return self.b.cached(("gather", x, indices), make)

    def replicate(self, n: Atom, x: Atom) -> FVar:
        rep = x.rep if isinstance(x, FVar) else ScalarRep(x.elem)
        if isinstance(rep, Regular) and rep.rank == 1:
            return self.b.cached(("replicate", n, x), lambda: self._replicated_rows(n, x))
        if isinstance(rep, (ScalarRep, Regular)):
            return self.b.cached(("replicate", n, x), lambda: self.b.emit(
                Replicate(n, x), stack_regular(rep), "rep"))
        # an irregular array: one row of it, gathered n times
        one = self.b.emit(Replicate(Const(1, "i64"), self.length(x)), Regular("i64", 1), "sz")
        offs = self.b.emit(SizesToOffsets(one), OFFSETS, "offs")
        row = self.b.emit(Rebuild(offs, x), Segmented(rep), "row")   # type: ignore[arg-type]
        zeros = self.b.emit(Replicate(n, Const(0, "i64")), Regular("i64", 1), "zero")
        return self.gather(row, zeros, "rep")

    def _replicated_rows(self, n: Atom, x: FVar) -> FVar:
        """`replicate n x` of a rank-1 array, remembered as `n` rows `x`: its row width is
        `length x` (0 without rows: `inner_extent`), and a level over its rows reads `x` at
        each point's position instead of the replicate's values (`enter_rows`), so that
        nothing reads the n × length x block, which DEAD then removes."""
        out = self.b.emit(Replicate(n, x), stack_regular(x.rep), "rep")
        self.b.frame.cache[("replicated", out)] = (n, x)
        return out

    def concat(self, a: FVar, b: FVar) -> FVar:
        return self.b.emit(Library("concat", (a, b)), a.rep, "cat")

    def make_tuple(self, atoms: list[Atom]) -> FVar:
        reps = tuple(a.rep if isinstance(a, FVar) else ScalarRep(a.elem) for a in atoms)
        return self.b.emit(MakeTuple(tuple(atoms)), TupleRep(reps), "tup")

    def split(self, x: FVar, level: Level | None) -> Val:
        """A tuple-rep variable as a `TupleVal` of its components (tuple_F)."""
        if not isinstance(x.rep, TupleRep):
            return Leaf(x, level)
        parts = [self.split(self.b.emit(Project(x, k), r, "c"), level)
                 for k, r in enumerate(x.rep.parts)]
        return TupleVal(tuple(parts))

    def any_true(self, mask: FVar) -> Atom:
        return self.b.emit(Reduce(self.lam("\\a b -> a || b"), Const(False, "bool"), mask),
                           ScalarRep("bool"), "any")

    def all_true(self, mask: FVar) -> Atom:
        return self.b.emit(Reduce(self.lam("\\a b -> a && b"), Const(True, "bool"), mask),
                           ScalarRep("bool"), "all")

    # ------------------------------------------------------------------ extents
    def inner_extent(self, x: FVar) -> Atom:
        """The common length of the rows of a Regular array of rank >= 2 (0 when it has no
        rows): the flat length over the number of rows, an unlifted scalar."""
        def make() -> Atom:
            replicated = self.b.frame.lookup(("replicated", x))
            if replicated is not None:          # its rows' length, without making them
                n, row = replicated
                return self.scalarf("if r == 0 then 0 else w", "i64", "m", r=n,
                                    w=self.length(row))
            rows, flat = self.length(x), self.length(self.values(x))
            return self.scalarf("if r == 0 then 0 else t / r", "i64", "m", r=rows, t=flat)
        return self.b.cached(("extent", x), make)

    def lengths_of(self, v: Val) -> Leaf:
        """The length of an array value, for every point of its level: one unlifted scalar
        when it is the same everywhere (a regular block), else a lifted one."""
        leaf = leaves(v)[0]
        x = leaf.atom
        assert isinstance(x, FVar)
        if leaf.level is None:
            return Leaf(self.length(x))
        if isinstance(x.rep, Regular):
            return Leaf(self.inner_extent(x), over=leaf.level)
        return Leaf(self.lengths(self.offsets(x)), leaf.level)

    def regular_offsets(self, rows: Atom, m: Atom) -> FVar:
        """The descriptor of `rows` segments of `m` elements each (a regular block seen as
        segments, needed only where the result is irregular)."""
        def make() -> FVar:
            n1 = self.scalarf("r + 1", "i64", r=rows)
            return self.mapf("\\k -> k * m", [self.iota(n1)], "i64", "offs", m=m)
        return self.b.cached(("regoffs", rows, m), make)

    # ------------------------------------------------------------------ between levels
    def parent_ids(self, level: Level) -> FVar:
        """For every point of `level`, the index of its parent point."""
        def make() -> FVar:
            if level.kind == "restricted":
                assert level.base is not None and level.subset is not None
                return self.gather(self.parent_ids(level.base), level.subset, "parent")
            if level.kind == "irregular":
                assert level.offsets is not None
                return self.segment_ids(level.offsets)
            assert level.extent is not None
            return self.mapf("\\q -> q / m", [self.iota(self.points(level))], "i64", "parent",
                             m=level.extent)
        return self.b.cached(("parent", level), make)

    def positions(self, level: Level) -> FVar:
        """For every point of a regular level, its position among its parent's points (`q %
        m`, `m` the level's extent: the `j` of `generate m (\\j -> ...)`)."""
        assert level.kind == "regular" and level.extent is not None
        return self.b.cached(("position", level), lambda: self.mapf(
            "\\q -> q % m", [self.iota(self.points(level))], "i64", "pos", m=level.extent))

    def ids_to(self, level: Level, target: Level) -> FVar | None:
        """For every point of `level`, the index of the point of `target` (an enclosing
        level, or one `level` is a restriction of) it belongs to; None when they are one."""
        if level is target:
            return None

        def make() -> FVar:
            if level.kind == "restricted" and _reaches(level.base, target):
                inner = self.ids_to(level.base, target)    # type: ignore[arg-type]
                return level.subset if inner is None else self.gather(inner, level.subset)
            assert level.parent is not None
            p = self.parent_ids(level)
            inner = self.ids_to(level.parent, target)
            return p if inner is None else self.gather(inner, p, "anc")
        return self.b.cached(("ids", level, target), make)

    def to_level(self, v: Val, level: Level | None) -> Val:
        """`v` with one value per point of `level` (unchanged if it has them already; a
        sequence not run yet is run into an array first)."""
        return map_leaves(self.settle(v), lambda leaf: self._leaf_to(leaf, level))

    def _leaf_to(self, leaf: Leaf, level: Level | None) -> Leaf:
        if leaf.level is level:
            return leaf
        if level is None:
            raise ValueError("a lifted value cannot be used outside its map")
        if leaf.level is None:
            return Leaf(self.replicate(self.points(level), leaf.atom), level)
        ids = self.ids_to(level, leaf.level)
        assert ids is not None and isinstance(leaf.atom, FVar)
        return Leaf(self.gather(leaf.atom, ids, "d"), level)

    # ------------------------------------------------------------------ entering and leaving
    def enter_rows(self, arrays: list[Leaf], level: Level | None) -> tuple[Level, list[Leaf]]:
        """A level over the rows of per-point arrays stacked over `level` (or of unlifted
        arrays when `level` is None), and their rows on it."""
        first = arrays[0].atom
        assert isinstance(first, FVar)
        if level is None:
            new = Level(1, "regular", None, lambda: self.length(first))
            return new, [Leaf(a.atom, new) for a in arrays]
        if isinstance(first.rep, Regular):
            m = self.inner_extent(first)
            parent = level
            new = Level(level.depth + 1, "regular", level, lambda: self.scalarf(
                "p * m", "i64", "pts", p=self.points(parent), m=m), extent=m)
        else:
            offs = self.offsets(first)
            new = Level(level.depth + 1, "irregular", level,
                        lambda: self.length(self.values(first)), offsets=offs)
        return new, [Leaf(self._row_values(a.atom, new), new) for a in arrays]  # type: ignore

    def _row_values(self, x: FVar, level: Level) -> FVar:
        """The elements of the rows of `x` on the level over them: a replicated array's
        (`_replicated_rows`) read from the array at each point's position on a regular
        level (the rows have the level's width: the lengths were checked), others' values."""
        replicated = self.b.frame.lookup(("replicated", x))
        if replicated is not None and level.kind == "regular":
            return self.gather(replicated[1], self.positions(level), "d")
        return self.values(x)

    def enter_extent(self, n: Leaf, level: Level | None, uniform: bool) -> tuple[Level, Leaf]:
        """A level of `n` points per point of `level` (n unlifted, or lifted over `level`),
        and the index of each point within its parent (the `i` of `generate n (\\i -> ...)`)."""
        if level is None:
            new = Level(1, "regular", None, n.atom, extent=n.atom)
            return new, Leaf(self.iota(n.atom), new)
        if n.level is not None and uniform:
            ok = self.mapf("\\k -> k >= 0", [n.atom], "bool", "ok")  # type: ignore[list-item]
            from ...ir.flat import Assert
            self.b.check(Assert(ok, "SizeError", "negative size {" + n.atom.name + "}"))
            m = self.b.emit(Reduce(self.lam("\\a b -> max a b"), Const(0, "i64"), n.atom),
                            I64, "m")                                   # type: ignore[arg-type]
            n = Leaf(m)
        if n.level is None:
            # the extent only matters where there are points (it may stand for theirs)
            extent = self.scalarf("if p == 0 then 0 else n", "i64", "m", p=self.points(level),
                                  n=n.atom)
            new = Level(level.depth + 1, "regular", level, lambda: self.scalarf(
                "p * m", "i64", "pts", p=self.points(level), m=extent), extent=extent)
            return new, Leaf(self.positions(new), new)
        assert n.level is level and isinstance(n.atom, FVar)
        offs = self.b.emit(SizesToOffsets(n.atom), OFFSETS, "offs")
        new = Level(level.depth + 1, "irregular", level,
                    lambda: self.length(self.segment_ids(offs)), offsets=offs)
        return new, Leaf(self.segment_iota(offs), new)

    def leave(self, v: Val, level: Level) -> Val:
        """Per-point results over `level` as per-point arrays over its parent."""
        v = self.to_level(v, level)
        return map_leaves(v, lambda leaf: Leaf(self._up(leaf.atom, level), level.parent))

    def _up(self, x: Any, level: Level) -> Any:
        if level.parent is None:
            return x
        if level.kind == "irregular":
            return self.b.emit(Rebuild(level.offsets, x), Segmented(x.rep), "nest")
        assert level.kind == "regular" and level.extent is not None
        if isinstance(x.rep, Regular):
            out = self.b.emit(Reshape(x, self.points(level.parent)), Regular(x.rep.elem,
                                                                       x.rep.rank + 1), "nest")
            self.b.frame.cache[("extent", out)] = level.extent
            return out
        offs = self.regular_offsets(self.points(level.parent), level.extent)
        return self.b.emit(Rebuild(offs, x), Segmented(x.rep), "nest")

    # ------------------------------------------------------------------ partitions
    def restrict(self, level: Level, mask: FVar) -> Level:
        """The sub-level of the points of `level` where `mask` holds."""
        subset = self.b.emit(Filter(mask, self.iota(self.points(level))), Regular("i64", 1), "sub")
        return Level(level.depth, "restricted", level.parent, lambda: self.length(subset),
                     base=level, subset=subset)

    def merge(self, level: Level, mask: FVar, n_then: Atom, then: Val, else_: Val) -> Val:
        """Results over the `mask` part of `level` (`n_then` points) and over the `!mask`
        part, put back in order: the two concatenated, then gathered by each point's place
        in its part."""
        ones = self.mapf("\\c -> if c then 1 else 0", [mask], "i64", "one")
        ranks = self.b.emit(self.scan_plus(ones), Regular("i64", 1), "rank")
        place = self.mapf("\\c s p -> if c then s - 1 else t + p - s",
                          [mask, ranks, self.iota(self.points(level))], "i64", "place", t=n_then)

        def put(a: Leaf, b: Leaf) -> Leaf:
            x, y = a.atom, b.atom
            return Leaf(self.gather(self.concat(x, y), place, "merged"), level)  # type: ignore
        return zip_leaves([then, else_], put)

    def merge_into(self, level: Level, mask: FVar, full: Val, part: Val) -> Val:
        """`full` (over `level`) with its `mask` points replaced by `part` (over them)."""
        def make() -> FVar:
            ones = self.mapf("\\c -> if c then 1 else 0", [mask], "i64", "one")
            ranks = self.b.emit(self.scan_plus(ones), Regular("i64", 1), "rank")
            return self.mapf("\\c s p -> if c then n + s - 1 else p",
                             [mask, ranks, self.iota(self.points(level))], "i64", "place",
                             n=self.points(level))
        place = self.b.cached(("place-into", level, mask), make)

        def put(a: Leaf, b: Leaf) -> Leaf:
            return Leaf(self.gather(self.concat(a.atom, b.atom), place, "merged"),  # type: ignore
                        level)
        return zip_leaves([full, part], put)

    def scan_plus(self, x: FVar):
        from ...ir.flat import Scan
        return Scan(self.lam("\\a b -> a + b"), Const(0, "i64"), x)

    # ------------------------------------------------------------------ conversions
    def coerce(self, leaf: Leaf, rep: Rep) -> Leaf:
        """`leaf` in rep `rep`: a Regular block seen as segments where needed."""
        if leaf.rep == rep:
            return leaf
        x = leaf.atom
        if isinstance(x, Const) and isinstance(rep, Regular):
            return Leaf(self.replicate(Const(1, "i64"), x), leaf.level)
        assert isinstance(x, FVar)
        if isinstance(x.rep, Regular) and isinstance(rep, Segmented) and x.rep.rank > 1:
            inner = self.coerce(Leaf(self.values(x)), rep.inner).atom
            offs = self.regular_offsets(self.length(x), self.inner_extent(x))
            return Leaf(self.b.emit(Rebuild(offs, inner), Segmented(inner.rep), "seg"),
                        leaf.level)
        if isinstance(x.rep, Segmented) and isinstance(rep, Segmented):
            inner = self.coerce(Leaf(self.values(x)), rep.inner).atom
            return Leaf(self.b.emit(Rebuild(self.offsets(x), inner), Segmented(inner.rep),
                                    "seg"), leaf.level)
        raise NotImplementedError(f"flatten: converting {x.rep} to {rep} is not built yet")


def _reaches(level: Level | None, target: Level) -> bool:
    while level is not None:
        if level is target:
            return True
        level = level.base
    return False
