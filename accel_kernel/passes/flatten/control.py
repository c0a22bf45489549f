"""Rules for `if` and loops.

- GUARD: code that may fail and was moved out of the innermost map around it (AVOID: it
  reads only values of enclosing levels) runs inside an `If` on "the innermost level has a
  point": when no point reaches it (an empty array, an empty filter result, a branch no
  point takes, a loop no point enters), it does not run and its value is a placeholder of
  the right rep (empty arrays, zeros) that no point reads. One scalar comparison per moved
  computation, not per element. Exact when every point of the level it moved to has as many
  points below it as any other (regular levels between, or moved out of every map).
- GUARD-POINTS: moved to a lifted level whose points differ in that (an irregular or
  restricted level between): a partition of that level by whether a point lies below, the
  code on the points that have one, placeholders on the others.
- IF: a condition that is one unlifted scalar (outside every map, or avoided inside one)
  keeps an `If` operation; only the chosen block runs, and its blocks may hold lifted code.
- LIFT-IF-PARTITION: a lifted condition splits the points of the level in two (`filter` of
  the point indices by the condition and by its negation, a *restricted* level for each);
  each branch is flattened on its own points only (so a branch never fails on points that
  do not take it), and the results are put back in order (`merge`). Scalar branches never
  get here: they are one map with the branch chosen per element (LIFT-IF-SELECT).
- LOOP / WHILE: outside every map, a `Loop` with the flattened body.
- LIFT-LOOP-REGULAR: inside a map, a `for` loop whose count is one unlifted scalar (the same
  for every point) is one `Loop` whose body is the lifted body.
- LIFT-LOOP-ACTIVE: a count that differs per point, or a `while`: a `Loop` over the still
  active points. Each iteration computes the mask of active points, runs the lifted body on
  the restricted level of those points and merges the results back; it stops when no point
  is active.

Loop parameters get the reps of the initial values; when the body gives another rep (a
regular block that became irregular) they are generalised and the body flattened again.
"""
from __future__ import annotations

from typing import Any, Callable

from ...ir.flat import (OFFSETS, Atom, Block, Const, Copy, Filter, FVar, If, Library, Literal,
                        Loop, MakeTuple, Rebuild, Regular, Rep, Replicate, ScalarRep, Segmented,
                        TupleRep, WriteRows)
from ...lang import ast
from ..shape_terms import Generate, Label
from .context import Env, FunVal, Leaf, Level, leaves, map_leaves
from .reps import as_irregular, generalise, row_rep

I64 = ScalarRep("i64")
IDS = Regular("i64", 1)


def _all_regular(reps: list[Rep]) -> bool:
    return all(isinstance(r, Regular) for r in reps)


def _every_point_reaches(level: Level, home: Level) -> bool:
    """Whether every point of `home` (an enclosing level in `level`'s chain) has as many
    points of `level` below it as any other: only regular levels between them."""
    probe: Level | None = level
    while probe is not None and probe is not home:
        if probe.kind != "regular":
            return False
        probe = probe.parent
    return True


def _rebuild(structure: Any, items: list[Any]) -> Any:
    it = iter(items)
    return map_leaves(structure, lambda _: next(it))


_ZERO = {"bool": False, "f32": 0.0, "f64": 0.0}


class ControlRules:
    """Mixin of the flattener: `guarded`, `if_`, `loop`, `for_loop`, `while_loop`."""

    # ------------------------------------------------------------------ guards
    def guarded(self, make: Callable[[Env], Any], env: Env, home: Env, node: ast.Node) -> Any:
        """`make(home)`: code that may fail, moved from `env.level` up to `home.level`, run
        only where a point of `env.level` reaches it (GUARD)."""
        level = env.level
        if home.level is not None and not _every_point_reaches(level, home.level):
            return self._guarded_points(make, env, home, node)
        n = self.points(level)
        if isinstance(n, Const) and n.value > 0:
            return make(home)
        with self.b.block() as then:
            value = make(home)
        if isinstance(value, FunVal) or not then.stmts:
            return value                         # nothing was computed: nothing to guard
        with self.b.rule("GUARD", node, "may fail and was moved out of a map: runs only "
                         "when the map has a point"):
            reached = self.reached(level)
            items = leaves(value)
            with self.b.block() as else_:
                holders = [self.placeholder(x) for x in items]
            targets = self.b.emit(If(reached, Block(tuple(then.stmts),
                                                    tuple(x.atom for x in items)),
                                     Block(tuple(else_.stmts), tuple(holders))),
                                  [x.rep for x in items], "g")
            return _rebuild(value, [Leaf(t, x.level, x.over) for t, x in zip(targets, items)])

    def reached(self, level: Level) -> Atom:
        """Whether `level` has a point (one comparison per level and block)."""
        return self.b.cached(("reached", level), lambda: self.scalarf(
            "p > 0", "bool", "reached", p=self.points(level)))

    def _guarded_points(self, make: Callable[[Env], Any], env: Env, home: Env,
                        node: ast.Node) -> Any:
        """GUARD-POINTS: the points of `home.level` differ in whether a point of
        `env.level` lies below them (an irregular or restricted level between): the code
        runs on those that have one (a partition of `home.level`); the others get
        placeholders."""
        with self.b.rule("GUARD-POINTS", node, "may fail and was moved out of a map whose "
                         "extent differs per point: runs on the points that have a point of "
                         "that map"):
            mask = self.reaches(env.level, home.level)
            shape: list[Any] = []

            def then(inner: Env) -> Any:
                shape.append(make(inner))
                return shape[0]

            def else_(inner: Env) -> Any:
                return map_leaves(shape[0], lambda x: Leaf(self._empty(
                    row_rep(x.rep) if x.level is not None else x.rep)))
            return self.partition(Leaf(mask, home.level), then, else_, node, home)

    def reaches(self, level: Level, home: Level) -> FVar:
        """For every point of `home` (an enclosing level of `level`), whether a point of
        `level` lies below it."""
        def make() -> FVar:
            if level.kind == "irregular" and level.parent is home:
                return self.mapf("\\l -> l > 0", [self.lengths(level.offsets)], "bool",
                                 "reach")
            ids = self.ids_to(level, home)
            falses = self.b.emit(Replicate(self.points(home), Const(False, "bool")),
                                 Regular("bool", 1), "no")
            trues = self.b.emit(Replicate(self.points(level), Const(True, "bool")),
                                Regular("bool", 1), "yes")
            return self.b.emit(Library("scatter", (falses, ids, trues)), Regular("bool", 1),
                               "reach")
        return self.b.cached(("reaches", level, home), make)

    def placeholder(self, leaf: Leaf) -> Atom:
        """A value of `leaf`'s rep (stacked over its level's points) that stands for a
        value nothing reads: zeros and empty arrays."""
        if leaf.level is None:
            return self._empty(leaf.rep)
        row = Leaf(self._empty(row_rep(leaf.rep)))
        return self.coerce(self.to_level(row, leaf.level), leaf.rep).atom

    def _empty(self, rep: Rep) -> Atom:
        if isinstance(rep, ScalarRep):
            return Const(_ZERO.get(rep.elem, 0), rep.elem)
        if isinstance(rep, Regular):
            if rep.rank == 1:
                return self.b.emit(Literal([], rep), rep, "none")
            return self.b.emit(Replicate(Const(0, "i64"), self._empty(Regular(rep.elem,
                                                                            rep.rank - 1))),
                               rep, "none")
        if isinstance(rep, Segmented):
            offs = self.b.emit(Literal([0], OFFSETS), OFFSETS, "none")
            return self.b.emit(Rebuild(offs, self._empty(rep.inner)), rep, "none")
        assert isinstance(rep, TupleRep)
        return self.b.emit(MakeTuple(tuple(self._empty(p) for p in rep.parts)), rep, "none")

    # ------------------------------------------------------------------ if
    def if_(self, e: ast.If, env: Env) -> Any:
        c = self.flatten(e.cond, env)
        then = lambda inner: self.flatten(e.then, inner)        # noqa: E731
        else_ = lambda inner: self.flatten(e.else_, inner)      # noqa: E731
        if c.level is None:
            with self.b.rule("IF", e, "an unlifted condition: only the chosen block runs"):
                return self.if_blocks(c, then, else_, env)
        return self.partition(c, then, else_, e, env)

    def if_values(self, c: Leaf, a: Any, b: Any, env: Env) -> Any:
        return self.if_blocks(c, lambda _: a, lambda _: b, env)

    def if_blocks(self, c: Leaf, then: Callable[[Env], Any], else_: Callable[[Env], Any],
                  env: Env) -> Any:
        with self.b.block() as f_then:
            r_then = self.settle(then(env))
        with self.b.block() as f_else:
            r_else = self.settle(else_(env))
        pairs = list(zip(leaves(r_then), leaves(r_else)))
        out_levels, out_reps = [], []
        for a, b in pairs:
            level = self._deepest([a.level, b.level], env)
            out_levels.append(level)
            out_reps.append(None)
        results: list[list[Any]] = [[], []]
        for side, frame, values in ((0, f_then, r_then), (1, f_else, r_else)):
            with self.b.inside(frame):
                converted = [self.to_level(leaf, lvl) for leaf, lvl in
                             zip(leaves(values), out_levels)]
                results[side] = converted
        reps = [generalise(a.rep, b.rep) for a, b in zip(*results)]
        for side, frame in ((0, f_then), (1, f_else)):
            with self.b.inside(frame):
                results[side] = [self.coerce(leaf, rep) for leaf, rep in
                                 zip(results[side], reps)]
        then_block = Block(tuple(f_then.stmts), tuple(x.atom for x in results[0]))
        else_block = Block(tuple(f_else.stmts), tuple(x.atom for x in results[1]))
        targets = self.b.emit(If(c.atom, then_block, else_block), list(reps), "if")
        return _rebuild(r_then, [Leaf(t, lvl) for t, lvl in zip(targets, out_levels)])

    def partition(self, c: Leaf, then: Callable[[Env], Any], else_: Callable[[Env], Any],
                  node: ast.Node, env: Env) -> Any:
        level = env.level
        with self.b.rule("LIFT-IF-PARTITION", node, "a lifted condition: each branch runs "
                         "on the points that take it, the results are merged back"):
            mask = self.to_level(c, level).atom
            other = self.mapf("\\c -> !c", [mask], "bool", "not")
            part_then, part_else = self.restrict(level, mask), self.restrict(level, other)
            r_then = self.to_level(then(self._sub_env(env, part_then)), part_then)
            r_else = self.to_level(else_(self._sub_env(env, part_else)), part_else)
            uniform = isinstance(node, ast.Node) and self.uniform_value(node, env)

            def target(a: Leaf, b: Leaf) -> Rep:
                rep = generalise(a.rep, b.rep)
                if isinstance(rep, Regular) and rep.rank > 1 and not uniform:
                    rep = as_irregular(rep)
                return rep
            reps = [target(a, b) for a, b in zip(leaves(r_then), leaves(r_else))]
            r_then = _rebuild(r_then, [self.coerce(x, r) for x, r in
                                       zip(leaves(r_then), reps)])
            r_else = _rebuild(r_else, [self.coerce(x, r) for x, r in
                                       zip(leaves(r_else), reps)])
            return self.merge(level, mask, self.points(part_then), r_then, r_else)

    def _sub_env(self, env: Env, level: Level) -> Env:
        return Env(env.scope, level, env.trusted, level)

    # ------------------------------------------------------------------ loops
    def loop(self, e: ast.Loop, env: Env) -> Any:
        init = self.settle(self.flatten(e.init, env))
        form = e.form
        trusted = env.trusted and self._keeps_shape(e)
        if isinstance(form, ast.While):
            def cond(state: Any, inner: Env) -> Any:
                return self.flatten(form.cond, self.bind_pattern(e.pattern, state, inner))

            def body(state: Any, inner: Env) -> Any:
                return self.flatten(e.body, self.bind_pattern(e.pattern, state, inner))
            return self.while_loop(init, cond, body, e, env, trusted)
        if isinstance(form, ast.ForRange):
            bound = self.flatten(form.bound, env)

            def body_for(state: Any, i: Leaf, inner: Env) -> Any:
                inner = self.bind_pattern(e.pattern, state, inner).bind(form.var, i)
                return self.flatten(e.body, inner)
            return self.for_loop(init, bound, body_for, e, env, trusted)
        xs = self.flatten(form.array, env)
        bound = self.lengths_of(xs)

        def body_in(state: Any, i: Leaf, inner: Env) -> Any:
            x = self.index_value(xs, i, e, inner)
            inner = self.bind_pattern(form.pattern, x, inner)
            return self.flatten(e.body, self.bind_pattern(e.pattern, state, inner))
        return self.for_loop(init, bound, body_in, e, env, trusted)

    def lib_while(self, args, node, env):
        p, f, x = args
        return self.while_loop(
            x, lambda s, inner: self.apply_value(p, [s], node, inner),
            lambda s, inner: self.apply_value(f, [s], node, inner), node, env,
            env.trusted and self._keeps_shape(node))

    def _keeps_shape(self, node: ast.Node, elements: bool = False) -> bool:
        """Whether the loop (`while`, or the operator of the `reduce`; `scan`: `elements`)
        `node` keeps its state's shape (FOLD): the node's shape fact (a scan's elements') is
        not a label the node made. Only then may the state of its loop inside a map be a
        regular block: otherwise the points' states differ in length once some points have
        stopped while others go on."""
        shape = self.fact("shape", node)
        if elements and isinstance(shape, Generate):
            shape = shape.body
        return shape is not None and not (isinstance(shape, Label) and shape.origin == node.id)

    def _param_reps(self, init: Any, level: Level | None, trusted: bool) -> list[Rep]:
        reps = []
        for leaf in leaves(init):
            rep = leaf.rep
            if level is not None and not trusted and isinstance(rep, Regular) and rep.rank > 1:
                rep = as_irregular(rep)
            reps.append(rep)
        return reps

    def _attempts(self, reps: list[Rep], make: Callable[[list[Rep]], Any]) -> Any:
        """Run `make(reps)` until the body it flattens gives the reps its parameters have."""
        for _ in range(6):
            mark = self.b.mark()
            done, result = make(reps)
            if done:
                return result
            self.b.undo(mark)
            reps = result
        raise NotImplementedError("flatten: the reps of a loop's state do not settle")

    def _body(self, frame, results: list[Leaf], reps: list[Rep], level: Level | None):
        """Convert a body's results in its own block; (True, atoms) or (False, new reps)."""
        with self.b.inside(frame):
            results = [self.to_level(x, level) for x in results]
            wanted = [generalise(p, r.rep) for p, r in zip(reps, results)]
            if wanted != reps:
                return False, wanted
            return True, [self.coerce(x, r).atom for x, r in zip(results, reps)]

    def for_loop(self, init: Any, bound: Leaf, body: Callable[[Any, Leaf, Env], Any],
                 node: ast.Node, env: Env, trusted: bool = True) -> Any:
        level = env.level
        if bound.level is not None:
            return self.active_for(init, bound, body, node, env, trusted)
        init = self.to_level(init, level)
        rule = "LOOP" if level is None else "LIFT-LOOP-REGULAR"
        note = "a sequential loop outside every map" if level is None else \
            "the count is one unlifted scalar: one loop around the lifted body"
        with self.b.rule(rule, node, note):
            def make(reps: list[Rep]):
                params = [FVar(self.b.fresh("p"), r) for r in reps]
                index = FVar(self.b.fresh("i"), I64)
                state = _rebuild(init, [Leaf(p, level) for p in params])
                inner = Env(env.scope, level, trusted, env.floor)
                with self.b.block() as frame:
                    result = body(state, Leaf(index), inner)
                ok, out = self._body(frame, leaves(result), reps, level)
                if not ok:
                    return False, out
                inits = [self.coerce(x, r).atom for x, r in zip(leaves(init), reps)]
                loop = Loop(tuple(params), tuple(inits), Block(tuple(frame.stmts), tuple(out)),
                            bound=bound.atom, index=index)
                targets = self.b.emit(loop, list(reps), "loop")
                return True, _rebuild(init, [Leaf(t, level) for t in targets])
            return self._attempts(self._param_reps(init, level, trusted), make)

    def active_for(self, init: Any, bound: Leaf, body: Callable[[Any, Leaf, Env], Any],
                   node: ast.Node, env: Env, trusted: bool) -> Any:
        level = env.level
        init = self.to_level(init, level)
        count = self.to_level(bound, level).atom
        with self.b.rule("LIFT-LOOP-ACTIVE", node, "the count differs per point: a loop "
                         "over the points still active"):
            def make(reps: list[Rep]):
                if _all_regular(reps):
                    first = self.mapf("\\n -> 0 < n", [count], "bool", "active")
                    return self._compacted(init, reps, level, env, trusted, first,
                                           lambda state, k, inner: body(state, Leaf(k), inner),
                                           lambda state, k, inner, part: self.mapf(
                                               "\\n -> k + 1 < n",
                                               [self.to_level(Leaf(count, level), part).atom],
                                               "bool", "again", k=k),
                                           counter=True)
                params = [FVar(self.b.fresh("p"), r) for r in reps]
                k = FVar(self.b.fresh("k"), I64)
                state = _rebuild(init, [Leaf(p, level) for p in params])
                with self.b.block() as cond_frame:
                    mask = self.mapf("\\n -> k < n", [count], "bool", "active", k=k)
                    any_ = self.any_true(mask)
                with self.b.block() as frame:
                    mask = self.mapf("\\n -> k < n", [count], "bool", "active", k=k)
                    part = self.restrict(level, mask)
                    inner = Env(env.scope, part, trusted, part)
                    result = body(state, Leaf(k), inner)
                ok, out = self._body(frame, leaves(result), reps, part)
                if not ok:
                    return False, out
                with self.b.inside(frame):
                    new = self.merge_into(level, mask, state,
                                          _rebuild(init, [Leaf(a, part) for a in out]))
                    k1 = self.scalarf("k + 1", "i64", "k", k=k)
                atoms = [x.atom for x in leaves(new)] + [k1]
                inits = [self.coerce(x, r).atom for x, r in zip(leaves(init), reps)]
                loop = Loop(tuple(params) + (k,), tuple(inits) + (Const(0, "i64"),),
                            Block(tuple(frame.stmts), tuple(atoms)),
                            cond=Block(tuple(cond_frame.stmts), (any_,)))
                targets = self.b.emit(loop, list(reps) + [I64], "loop")
                return True, _rebuild(init, [Leaf(t, level) for t in targets[:-1]])
            return self._attempts(self._param_reps(init, level, trusted), make)

    def while_loop(self, init: Any, cond: Callable[[Any, Env], Any],
                   body: Callable[[Any, Env], Any], node: ast.Node, env: Env,
                   trusted: bool = True) -> Any:
        level = env.level
        if level is None:
            return self._while0(init, cond, body, node, env, trusted)
        init = self.to_level(init, level)
        with self.b.rule("LIFT-LOOP-ACTIVE", node, "a while inside a map: a loop over the "
                         "points whose condition still holds"):
            first = self.to_level(cond(init, env), level)

            def make(reps: list[Rep]):
                if _all_regular(reps):
                    return self._compacted(
                        init, reps, level, env, trusted, first.atom,
                        lambda state, k, inner: body(state, inner),
                        lambda state, k, inner, part: self.to_level(cond(state, inner),
                                                                    part).atom)
                params = [FVar(self.b.fresh("p"), r) for r in reps]
                mask = FVar(self.b.fresh("active"), Regular("bool", 1))
                state = _rebuild(init, [Leaf(p, level) for p in params])
                with self.b.block() as cond_frame:
                    any_ = self.any_true(mask)
                with self.b.block() as frame:
                    part = self.restrict(level, mask)
                    inner = Env(env.scope, part, trusted, part)
                    result = body(state, inner)
                ok, out = self._body(frame, leaves(result), reps, part)
                if not ok:
                    return False, out
                with self.b.inside(frame):
                    new_state = _rebuild(init, [Leaf(a, part) for a in out])
                    again = self.to_level(cond(new_state, inner), part)
                    new = self.merge_into(level, mask, state, new_state)
                    new_mask = self.merge_into(level, mask, Leaf(mask, level), again)
                atoms = [x.atom for x in leaves(new)] + [new_mask.atom]
                inits = [self.coerce(x, r).atom for x, r in zip(leaves(init), reps)]
                loop = Loop(tuple(params) + (mask,), tuple(inits) + (first.atom,),
                            Block(tuple(frame.stmts), tuple(atoms)),
                            cond=Block(tuple(cond_frame.stmts), (any_,)))
                targets = self.b.emit(loop, list(reps) + [mask.rep], "loop")
                return True, _rebuild(init, [Leaf(t, level) for t in targets[:-1]])
            return self._attempts(self._param_reps(init, level, trusted), make)

    def _compacted(self, init: Any, reps: list[Rep], level: Level, env: Env, trusted: bool,
                   first: FVar, body: Callable[[Any, FVar | None, Env], Any],
                   again: Callable[[Any, FVar | None, Env, Level], FVar],
                   counter: bool = False) -> tuple[bool, Any]:
        """A loop over the still-active points whose state is carried compacted: the ids of
        the active points and their states only. Each iteration runs the body on them, asks
        `again` which stay active, writes the states of the others into the result buffers
        (made once, as copies of the initial states) and keeps the rest. Work per iteration
        is proportional to the active points, not to all points, so the loop costs the sum
        of the points' iterations (plus one pass over all points), as the nested program
        does. `counter`: a scalar iteration count `k` (from 0) is carried too. Only for
        regular states (rows of a regular block are written in place)."""
        start = _rebuild(init, [self.coerce(x, r) for x, r in zip(leaves(init), reps)])
        ids0 = self.b.emit(Filter(first, self.iota(self.points(level))), IDS, "ids")
        part0 = self._points_of(level, ids0)
        inits = [x.atom for x in leaves(self.to_level(start, part0))]
        bufs0 = [self.b.emit(Copy(x.atom), r, "buf") for x, r in zip(leaves(start), reps)]
        ids = FVar(self.b.fresh("ids"), IDS)
        k = FVar(self.b.fresh("k"), I64) if counter else None
        params = [FVar(self.b.fresh("p"), r) for r in reps]
        bufs = [FVar(self.b.fresh("buf"), r) for r in reps]
        part = self._points_of(level, ids)
        with self.b.block() as cond_frame:
            go = self.scalarf("n > 0", "bool", "go", n=self.length(ids))
        with self.b.block() as frame:
            inner = Env(env.scope, part, trusted, part)
            result = body(_rebuild(init, [Leaf(p, part) for p in params]), k, inner)
        ok, out = self._body(frame, leaves(result), reps, part)
        if not ok:
            return False, out
        with self.b.inside(frame):
            stay = again(_rebuild(init, [Leaf(a, part) for a in out]), k, inner, part)
            done = self.mapf("\\c -> !c", [stay], "bool", "done")
            done_ids = self.b.emit(Filter(done, ids), IDS, "fin")
            written = [self.b.emit(WriteRows(b, done_ids, self.b.emit(Filter(done, a), r, "fin")),
                                   r, "buf") for b, a, r in zip(bufs, out, reps)]
            kept = [self.b.emit(Filter(stay, a), r, "st") for a, r in zip(out, reps)]
            next_ids = self.b.emit(Filter(stay, ids), IDS, "ids")
            k1 = [self.scalarf("k + 1", "i64", "k", k=k)] if k is not None else []
        loop = Loop(tuple([ids, *params, *bufs] + ([k] if k is not None else [])),
                    tuple([ids0, *inits, *bufs0] + ([Const(0, "i64")] if k is not None else [])),
                    Block(tuple(frame.stmts), tuple([next_ids, *kept, *written, *k1])),
                    cond=Block(tuple(cond_frame.stmts), (go,)))
        targets = self.b.emit(loop, [IDS, *reps, *reps] + ([I64] if k is not None else []),
                              "loop")
        results = targets[1 + len(reps):1 + 2 * len(reps)]
        return True, _rebuild(init, [Leaf(t, level) for t in results])

    def _points_of(self, level: Level, ids: FVar) -> Level:
        """The restricted level of the points of `level` whose indices are `ids`."""
        return Level(level.depth, "restricted", level.parent, lambda: self.length(ids),
                     base=level, subset=ids)

    def _while0(self, init, cond, body, node, env, trusted):
        with self.b.rule("WHILE", node, "a sequential loop outside every map, its condition "
                         "a block"):
            def make(reps: list[Rep]):
                params = [FVar(self.b.fresh("p"), r) for r in reps]
                state = _rebuild(init, [Leaf(p) for p in params])
                inner = Env(env.scope, None, trusted, env.floor)
                with self.b.block() as cond_frame:
                    c = cond(state, inner)
                with self.b.block() as frame:
                    result = body(state, inner)
                ok, out = self._body(frame, leaves(result), reps, None)
                if not ok:
                    return False, out
                inits = [self.coerce(x, r).atom for x, r in zip(leaves(init), reps)]
                loop = Loop(tuple(params), tuple(inits), Block(tuple(frame.stmts), tuple(out)),
                            cond=Block(tuple(cond_frame.stmts), (c.atom,)))
                targets = self.b.emit(loop, list(reps), "loop")
                return True, _rebuild(init, [Leaf(t) for t in targets])
            return self._attempts(self._param_reps(init, None, trusted), make)
