"""The lifting context of the `flatten` stage: values, levels, `Env`, and the statement builder.

- A flattened value (`Val`) is a `Leaf` (one flat atom and the level it is stacked over), a
  `TupleVal` (tuple_F: each component flattened on its own, never a tuple of flat arrays
  unless an operation needs one) or a `FunVal` (a function: a lambda with the scope it was
  made in, a library function or an operator, with the arguments given so far; functions are
  applied while flattening, never stored in the flat program), or a `SeqVal` (a sequence
  outside every map, run chunk by chunk by its consumer).
- A `Level` is one map of the nest around the code being flattened: its points are the
  iterations of all enclosing maps. A *regular* level has the same extent for every point of
  its parent (values stacked over it get one more regular dimension); an *irregular* one has
  a segment descriptor over its parent's points; a *restricted* level is a subset of another
  level's points (one branch of an `if`, the still-active points of a loop), given by the
  indices `subset` of those points.
- `Env` is the lifting context: the scope (name -> value), the innermost level (None outside
  every map), whether the analyses' facts can be trusted here, and the `floor` below which a
  computation that may fail must not be hoisted (inside a branch or a loop's active part),
  and whether it is the element code of a SEQ-INNER loop (`scalar.py`).
- `Builder` emits statements into nested blocks, gives fresh SSA names and statement ids,
  keeps per-block caches (a value distributed to a level once is reused in that block and
  the blocks inside it) and applies every rule through the rewriter (`Builder.rule`, over
  `RewriteLog.apply`), which logs it with the statements it made.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Mapping

from ...ir.flat import (Atom, Const, FVar, Iota, Op, Rebuild, Rep, Reshape, ScalarRep, Stmt,
                        TupleRep)
from ...ir.flat_printer import print_stmt
from ...lang import ast
from ..base import PassContext


# ---------------------------------------------------------------- values

@dataclass(frozen=True, eq=False)
class Level:
    depth: int
    kind: str                              # regular | irregular | restricted
    parent: "Level | None"                 # the level of the enclosing map (None: no map)
    points: Any                            # how many (an i64 atom, or a function making it)
    extent: Atom | None = None             # regular: points per parent point
    offsets: FVar | None = None            # irregular: descriptor over the parent's points
    base: "Level | None" = None            # restricted: the level this is a subset of
    subset: FVar | None = None             # restricted: indices into base's points

    def __repr__(self) -> str:
        return f"Level({self.kind}@{self.depth}, {self.points})"

    def root(self) -> "Level":
        """The unrestricted level this one is a subset of (itself when not restricted)."""
        return self.base.root() if self.base is not None else self


@dataclass(frozen=True)
class Leaf:
    atom: Atom
    level: Level | None = None             # None: not lifted (avoided)
    over: Level | None = None              # unlifted, but the value of every point of this
                                           # level (a regular block's row length): code
                                           # that may fail on it runs only if there are points

    @property
    def rep(self) -> Rep:
        return self.atom.rep if isinstance(self.atom, FVar) else ScalarRep(self.atom.elem)


@dataclass(frozen=True)
class TupleVal:
    parts: tuple["Val", ...]


@dataclass(frozen=True, eq=False)
class FunVal:
    kind: str                              # closure | builtin | op
    node: ast.Node
    lam: ast.Lambda | None = None
    scope: Mapping[str, Any] | None = None
    name: str = ""
    args: tuple[Any, ...] = ()             # values given so far (partial application)


@dataclass(frozen=True, eq=False)
class SeqVal:
    """A sequence outside every map, not run yet: `kind` is `produce` (args: n, f), `stream`
    (xs), `map` (f, s) or `zip` (f, s1, s2); `node` the call that made it. Its consumer runs
    it chunk by chunk (SEQ-LOOP, `sequences.py`); used anywhere else it is first run into an
    array (`settle`)."""
    kind: str
    node: ast.Node
    args: tuple[Any, ...]


Val = Leaf | TupleVal


def leaves(v: Any) -> list[Leaf]:
    """The flat values of `v` (of a function: the values given to it so far)."""
    if isinstance(v, Leaf):
        return [v]
    if isinstance(v, TupleVal):
        return [x for p in v.parts for x in leaves(p)]
    if isinstance(v, FunVal):          # a sequence given to a function so far is not a value
        return [x for a in v.args if not isinstance(a, SeqVal) for x in leaves(a)]
    if isinstance(v, SeqVal):
        raise TypeError("a sequence not run yet has no flat values (settle it first)")
    return []


def map_leaves(v: Any, fn: Callable[[Leaf], Any]) -> Any:
    if isinstance(v, Leaf):
        return fn(v)
    if isinstance(v, TupleVal):
        return TupleVal(tuple(map_leaves(p, fn) for p in v.parts))
    raise TypeError(f"not a value: {v!r}")


def zip_leaves(vs: list[Any], fn: Callable[..., Any]) -> Any:
    """`fn` applied to corresponding leaves of values of one structure."""
    first = vs[0]
    if isinstance(first, Leaf):
        return fn(*vs)
    return TupleVal(tuple(zip_leaves([v.parts[k] for v in vs], fn)
                          for k in range(len(first.parts))))


@dataclass(frozen=True)
class Env:
    scope: Mapping[str, Any]
    level: Level | None = None
    trusted: bool = True                   # the facts of shape/regularity hold here
    floor: Level | None = None             # failing code is not hoisted above this level
    seq_inner: bool = False                # in the element code of a SEQ-INNER loop: a row
                                           # of a lifted regular block is read in place
    lazy: bool = False                     # in a branch of scalar code (an `if`, the right
                                           # of `&&`): an unlifted array is read in place

    def bind(self, name: str, value: Any) -> "Env":
        scope = dict(self.scope)
        scope[name] = value
        return replace(self, scope=scope)

    def at(self, level: Level | None) -> "Env":
        return replace(self, level=level)

    @property
    def depth(self) -> int:
        return self.level.depth if self.level is not None else 0


def chain(level: Level | None) -> list[Level]:
    """The levels from `level` up to the outermost map."""
    out = []
    while level is not None:
        out.append(level)
        level = level.parent
    return out


def position(leaf_level: Level | None, level: Level | None) -> Level | None:
    """The level of the current chain (from `level` up) that a value stacked over
    `leaf_level` belongs to: that level itself or the restriction of it in the chain."""
    if leaf_level is None:
        return None
    for candidate in chain(level):
        probe: Level | None = candidate
        while probe is not None:
            if probe is leaf_level:
                return candidate
            probe = probe.base
    raise ValueError(f"{leaf_level!r} is not around {level!r}")


# ---------------------------------------------------------------- the builder

@dataclass
class Frame:
    stmts: list[Stmt] = field(default_factory=list)
    cache: dict[Any, Any] = field(default_factory=dict)
    parent: "Frame | None" = None

    def lookup(self, key: Any) -> Any:
        frame: Frame | None = self
        while frame is not None:
            if key in frame.cache:
                return frame.cache[key]
            frame = frame.parent
        return None


@dataclass
class _Rule:
    name: str
    node: ast.Node | None
    note: str
    stmts: list[Stmt] = field(default_factory=list)
    inclusive: bool = False           # also the statements of the rules inside it


class Builder:
    """Statements, names, caches and the rewrite log of one run of the pass."""

    def __init__(self, ctx: PassContext, avoid: set[str]):
        self.ctx = ctx
        self.avoid = avoid
        self.frame = Frame()
        self.rules: list[_Rule] = []
        self.origin: ast.Node | None = None       # the core node being flattened

    # -- names
    def fresh(self, base: str) -> str:
        base = base.split(".")[0] or "v"
        name = self.ctx.fresh_name(base, self.avoid)
        self.avoid.add(name)
        return name

    # -- emission
    def emit(self, op: Op, reps: Rep | list[Rep], base: str = "v") -> Any:
        """Bind fresh variables to `op`; one FVar for one rep, a tuple for a list."""
        many = isinstance(reps, list)
        rep_list = reps if many else [reps]
        targets = tuple(FVar(self.fresh(base), r) for r in rep_list)  # type: ignore[union-attr]
        node = self.origin
        stmt = Stmt(targets, op, span=node.span if node is not None else None,
                    id=self.ctx.fresh_id(), origin=node.id if node is not None else 0)
        self._attribute(stmt)
        if not many:
            self._views(op, targets[0])
        return targets if many else targets[0]

    def _views(self, op: Op, target: FVar) -> None:
        """What later statements can read from `target` without a statement of their own:
        the parts of a `rebuild`, what a `reshape` was made from, what an `iota` counts."""
        cache = self.frame.cache
        if isinstance(op, Rebuild):
            cache[("offsets", target)] = op.offsets
            cache[("values", target)] = op.values
        elif isinstance(op, Reshape):
            cache[("values", target)] = op.arr
            cache[("length", target)] = op.rows
        elif isinstance(op, Iota):
            cache[("iota-of", target)] = op.n

    def check(self, op: Op) -> None:
        """An `Assert` (binds nothing)."""
        node = self.origin
        stmt = Stmt((), op, span=node.span if node is not None else None,
                    id=self.ctx.fresh_id(), origin=node.id if node is not None else 0)
        self._attribute(stmt)

    def _attribute(self, stmt: Stmt) -> None:
        self.frame.stmts.append(stmt)
        for k, rule in enumerate(self.rules):
            if rule.inclusive or k == len(self.rules) - 1:
                rule.stmts.append(stmt)

    @contextmanager
    def at_node(self, node: ast.Node | None) -> Iterator[None]:
        """Statements made inside get the span and origin of `node`."""
        saved = self.origin
        if node is not None and node.span is not None:
            self.origin = node
        try:
            yield
        finally:
            self.origin = saved

    # -- blocks and caches
    @contextmanager
    def block(self) -> Iterator[Frame]:
        saved = self.frame
        self.frame = Frame(parent=saved)
        try:
            yield self.frame
        finally:
            self.frame = saved

    @contextmanager
    def inside(self, frame: Frame) -> Iterator[Frame]:
        """Continue emitting into a block made before (to convert its results)."""
        saved = self.frame
        self.frame = frame
        try:
            yield frame
        finally:
            self.frame = saved

    def cached(self, key: Any, make: Callable[[], Any]) -> Any:
        found = self.frame.lookup(key)
        if found is None:
            found = make()
            self.frame.cache[key] = found
        return found

    # -- the log
    @contextmanager
    def rule(self, name: str, node: ast.Node | None, note: str = "",
             inclusive: bool = False) -> Iterator[_Rule]:
        """One rule application, through the rewriter (`RewriteLog.apply`): logged where it
        starts (pre-order, before the rules applied inside it) with the statements made
        directly by it (with `inclusive`, also those of the rules applied inside it). The
        rule may rename itself (`entry.name`, a more specific name) or set its note."""
        entry = _Rule(name, node, note, inclusive=inclusive)
        self.rules.append(entry)
        try:
            with self.ctx.log.apply(name, _before(node), node=node, first=True) as step, \
                    self.at_node(node):
                yield entry
                step.rule, step.note = entry.name, entry.note
                step.after = _made(entry.stmts)
                step.changed = tuple(s.id for s in entry.stmts)
        finally:
            self.rules.pop()

    def mark(self) -> tuple:
        """Where the log, the current block and the active rules are (to undo an attempt)."""
        return (self.ctx.log.mark(), len(self.frame.stmts),
                [len(rule.stmts) for rule in self.rules], dict(self.frame.cache))

    def undo(self, mark: tuple) -> None:
        self.ctx.log.rollback(mark[0])
        del self.frame.stmts[mark[1]:]
        for rule, n in zip(self.rules, mark[2]):
            del rule.stmts[n:]
        # what the attempt cached names statements just removed
        self.frame.cache.clear()
        self.frame.cache.update(mark[3])


def _before(node: ast.Node | None) -> ast.Node | str:
    """What the log shows of the node a rule applies to (a qualifier or a type by its kind)."""
    if node is None:
        return "(program)"
    if isinstance(node, (ast.ForIn, ast.ForRange, ast.While, ast.Generator, ast.Guard,
                         ast.LetQual)) or isinstance(node, ast.TypeExpr.__args__):
        return type(node).__name__
    return node


def _made(stmts: list[Stmt]) -> str:
    """What the log shows of the statements a rule made: their first lines."""
    lines = [line.strip() for s in stmts for line in print_stmt(s)[:1]]
    after = "; ".join(lines) if lines else "(no statement)"
    return after if len(after) <= 400 else after[:399] + "…"


def const(value: Any, elem: str) -> Leaf:
    return Leaf(Const(value, elem))


def atom_of(leaf: Leaf) -> Atom:
    return leaf.atom


def tuple_rep(v: Any) -> Rep:
    if isinstance(v, Leaf):
        return v.rep
    return TupleRep(tuple(tuple_rep(p) for p in v.parts))
