"""Simplification (S1–S4) and equivalence (E1–E2) of shape descriptors (`shape_terms`).

Rules, each applied wherever it matches, innermost first, until none applies:

- S1  `(generate n (\\i -> s))[e]      → s[i := e]`
- S2  `(s1, ..., sn).k                 → sk`
- S3  `length (generate n (\\i -> s))  → n`
- S4  `length (const [d, ...])         → d`, `(const [d, d2, ...])[e] → const [d2, ...]`
- E1  `generate n (\\i -> s[i])        → s`   when `i` is not in `s` and `n ≡ length s`
- E2  `generate (length s) (\\i -> scalar) → s` when the elements of `s` hold no array
- SPLIT (arrays of tuples are tuples of arrays): `(s1, s2)[e] → (s1[e], s2[e])`,
  `length (s1, s2) → length s1`, `generate n (\\i -> (s1, s2)) → (generate n (\\i -> s1), ...)`,
  `(generate n (\\i -> s)).k → generate n (\\i -> s.k)`
- COND-SHAPE `cond c s1 s2 → s1` when `s1 ≡ s2` (or `c` is a literal); indexing and projecting
  go into both branches; `length (cond c s1 s2) → length s1` when the lengths are equal (the
  declared size when they are equal by DECL only)
- CONST-SHAPE `generate d (\\i -> scalar) → const [d]`, `generate d (\\i -> const ds) → const [d, ds]`
  for a literal `d`
- SCALAR a descriptor whose type holds no array is `scalar`
- ARITH `+ - * min max` of integer literals are folded; `0 + e`, `e + 0`, `e - 0` are `e`
- COND-SHAPE also `cond (i < 0) s1 s2 → s2` for an index variable `i` (`[] ++ xs`)

Equivalence (`equivalent`): both sides are simplified and compared structurally up to the
renaming of generate variables, with E1/E2 read both ways (extensionality:
`generate n (\\i -> s') ≡ s` when `n ≡ length s` and `s' ≡ s[i]`), `cond c s1 s2 ≡ s` when both
branches are, and sizes compared after DECL: `length x`, `length x[e]`, ... of a parameter
declared `[n][m]t` are `n`, `m`, ...
"""
from __future__ import annotations

from typing import Callable

from .shape_terms import (SCALAR, Cond, Const, Function, Generate, Index, IndexVar, Label, Length,
                          Project, Read, Scalar, Shape, Size, SizeLit, SizeOp, SizeVar,
                          TupleShape, Unknown, Var, elem_type, has_arrays, index_vars, rebuild,
                          shape_type, substitute, _children)

Step = tuple[str, str, str]          # rule, before, after (accel-like text)

_FOLDABLE: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "min": min, "max": max,
}


class Simplifier:
    """Applies the rules above; `steps` lists every application (when `record` is set)."""

    def __init__(self, record: bool = True):
        self.record = record
        self.steps: list[Step] = []

    # ------------------------------------------------------------------ entry points

    def shape(self, s: Shape) -> Shape:
        s = rebuild(s, [self._any(c) for c in _children(s)])
        while True:
            rewritten = self._shape_head(s)
            if rewritten is None:
                return s
            rule, new = rewritten
            self._log(rule, s, new)
            s = rebuild(new, [self._any(c) for c in _children(new)])

    def size(self, e: Size) -> Size:
        e = rebuild(e, [self._any(c) for c in _children(e)])
        while True:
            rewritten = self._size_head(e)
            if rewritten is None:
                return e
            rule, new = rewritten
            self._log(rule, e, new)
            e = rebuild(new, [self._any(c) for c in _children(new)])

    def _any(self, x):
        return self.size(x) if _is_size(x) else self.shape(x)

    def _log(self, rule: str, before, after) -> None:
        if self.record:
            self.steps.append((rule, str(before), str(after)))

    # ------------------------------------------------------------------ shape rules

    def _shape_head(self, s: Shape) -> tuple[str, Shape] | None:
        if isinstance(s, Index):
            inner, e = s.shape, s.index
            if isinstance(inner, Generate):
                return "S1", substitute(inner.body, inner.var, e)
            if isinstance(inner, Const):
                return "S4", Const(inner.dims[1:]) if len(inner.dims) > 1 else SCALAR
            if isinstance(inner, TupleShape):
                return "SPLIT", TupleShape(tuple(Index(p, e) for p in inner.parts))
            if isinstance(inner, Cond):
                return "COND-SHAPE", Cond(inner.cond, Index(inner.then, e), Index(inner.else_, e))
            if isinstance(inner, Scalar):
                return "SCALAR", SCALAR
        elif isinstance(s, Project):
            inner = s.shape
            if isinstance(inner, TupleShape) and s.index < len(inner.parts):
                return "S2", inner.parts[s.index]
            if isinstance(inner, Scalar):
                return "SCALAR", SCALAR
            if isinstance(inner, Cond):
                return "COND-SHAPE", Cond(inner.cond, Project(inner.then, s.index),
                                          Project(inner.else_, s.index))
            if isinstance(inner, Generate):
                return "SPLIT", Generate(inner.size, inner.var, Project(inner.body, s.index))
        elif isinstance(s, Generate):
            found = self._generate_rule(s)
            if found is not None:
                return found
        elif isinstance(s, Cond):
            if isinstance(s.cond, SizeLit) and isinstance(s.cond.value, bool):
                return "COND-SHAPE", s.then if s.cond.value else s.else_
            if _below_zero(s.cond):         # an index is never negative (`[] ++ xs`)
                return "COND-SHAPE", s.else_
            if equivalent(s.then, s.else_):
                # either will do; the one with fewer index variables reads more simply
                fewer = len(index_vars(s.else_)) < len(index_vars(s.then))
                return "COND-SHAPE", s.else_ if fewer else s.then
        if not isinstance(s, (Scalar, Function)):
            t = shape_type(s)
            if t is not None and not has_arrays(t):
                return "SCALAR", SCALAR
        return None

    def _generate_rule(self, g: Generate) -> tuple[str, Shape] | None:
        n, i, body = g.size, g.var, g.body
        if isinstance(body, TupleShape):
            return "SPLIT", TupleShape(tuple(Generate(n, i, p) for p in body.parts))
        if (isinstance(body, Index) and body.index == i and i not in index_vars(body.shape)
                and size_equal(n, Length(body.shape))):
            return "E1", body.shape
        if isinstance(body, Scalar) and isinstance(n, Length) and _flat_elements(n.shape):
            return "E2", n.shape
        if (isinstance(n, SizeLit) and type(n.value) is int and n.value >= 0
                and i not in index_vars(body)):
            if isinstance(body, Scalar):
                return "CONST-SHAPE", Const((n.value,))
            if isinstance(body, Const):
                return "CONST-SHAPE", Const((n.value,) + body.dims)
        return None

    # ------------------------------------------------------------------ size rules

    def _size_head(self, e: Size) -> tuple[str, Size] | None:
        if isinstance(e, Length):
            s = e.shape
            if isinstance(s, Generate):
                return "S3", s.size
            if isinstance(s, Const) and s.dims:
                return "S4", SizeLit(s.dims[0])
            if isinstance(s, TupleShape) and s.parts:
                return "SPLIT", Length(s.parts[0])
            if isinstance(s, Cond):
                quiet = Simplifier(record=False)
                la, lb = quiet.size(Length(s.then)), quiet.size(Length(s.else_))
                if la == lb:
                    return "COND-SHAPE", la
                if _declared(la) == _declared(lb):
                    # equal by their declared sizes only: `length xss[i - 1]` need not exist
                    # where the condition is false, the declared size `m` always does
                    return "COND-SHAPE", _declared(la)
        elif isinstance(e, SizeOp) and e.op in _FOLDABLE and len(e.args) == 2:
            a, b = e.args
            if all(isinstance(x, SizeLit) and type(x.value) is int for x in (a, b)):
                return "ARITH", SizeLit(_FOLDABLE[e.op](a.value, b.value))
            if e.op in ("+", "-") and _zero(b):
                return "ARITH", a
            if e.op == "+" and _zero(a):
                return "ARITH", b
        elif isinstance(e, SizeOp) and e.op == "-" and len(e.args) == 1:
            a = e.args[0]
            if isinstance(a, SizeLit) and type(a.value) is int:
                return "ARITH", SizeLit(-a.value)
        return None


def _below_zero(c: Size) -> bool:
    """`i < 0` of an index variable (which counts from 0): never true."""
    return (isinstance(c, SizeOp) and c.op == "<" and len(c.args) == 2
            and isinstance(c.args[0], IndexVar) and _zero(c.args[1]))


def _zero(x: Size) -> bool:
    return isinstance(x, SizeLit) and type(x.value) is int and x.value == 0


def _is_size(x) -> bool:
    return isinstance(x, (SizeLit, SizeVar, IndexVar, Length, SizeOp, Read, Unknown))


def _flat_elements(s: Shape) -> bool:
    """Whether the elements of an array of shape `s` are known to hold no array."""
    t = elem_type(shape_type(s))
    return t is not None and not has_arrays(t)


def simplify(s: Shape) -> tuple[Shape, list[Step]]:
    """`s` simplified, with the rule applications that got it there."""
    simplifier = Simplifier()
    out = simplifier.shape(s)
    return out, simplifier.steps


def simplify_size(e: Size) -> tuple[Size, list[Step]]:
    simplifier = Simplifier()
    out = simplifier.size(e)
    return out, simplifier.steps


# ---------------------------------------------------------------- comparing sizes (DECL)

def size_key(e: Size) -> Size:
    """The form in which sizes are compared: simplified, declared sizes put in (DECL)."""
    return _declared(Simplifier(record=False).size(e))


def _declared(e: Size) -> Size:
    if isinstance(e, Length):
        depth, s = 0, e.shape
        while isinstance(s, Index):
            depth, s = depth + 1, s.shape
        if isinstance(s, Var) and depth < len(s.sizes) and s.sizes[depth] is not None:
            return s.sizes[depth]
        return e
    if isinstance(e, (SizeOp, Read, Unknown)):
        return rebuild(e, [_declared(c) for c in _children(e)])
    return e


def size_equal(a: Size, b: Size) -> bool:
    return a == b or size_key(a) == size_key(b)


# ---------------------------------------------------------------- equivalence

def equivalent(a: Shape, b: Shape) -> bool:
    """`a ≡ b`: equal after simplification, up to E1/E2 both ways and renaming."""
    quiet = Simplifier(record=False)
    return _equiv(quiet.shape(a), quiet.shape(b), quiet, 1)


def _equiv(a: Shape, b: Shape, quiet: Simplifier, depth: int) -> bool:
    """Compares simplified shapes; the variable put for generate binders `depth` deep is
    `•` at level `-depth`, which no program variable has."""
    fresh = IndexVar("•", -depth)
    if a == b:
        return True
    if isinstance(a, Const) and isinstance(b, Const):
        return a.dims == b.dims
    if isinstance(a, Const):
        a = _unfold_const(a, fresh)
    if isinstance(b, Const):
        b = _unfold_const(b, fresh)
    if isinstance(a, Cond):
        return _equiv(a.then, b, quiet, depth) and _equiv(a.else_, b, quiet, depth)
    if isinstance(b, Cond):
        return _equiv(a, b.then, quiet, depth) and _equiv(a, b.else_, quiet, depth)
    if isinstance(a, Generate) and isinstance(b, Generate):
        if not size_equal(a.size, b.size):
            return False
        return _equiv(quiet.shape(substitute(a.body, a.var, fresh)),
                      quiet.shape(substitute(b.body, b.var, fresh)), quiet, depth + 1)
    if isinstance(a, Generate) or isinstance(b, Generate):
        g, other = (a, b) if isinstance(a, Generate) else (b, a)
        if not size_equal(g.size, Length(other)):
            return False
        return _equiv(quiet.shape(substitute(g.body, g.var, fresh)),
                      quiet.shape(Index(other, fresh)), quiet, depth + 1)
    if isinstance(a, TupleShape) and isinstance(b, TupleShape):
        return len(a.parts) == len(b.parts) and all(
            _equiv(x, y, quiet, depth) for x, y in zip(a.parts, b.parts))
    if isinstance(a, Index) and isinstance(b, Index):
        return size_equal(a.index, b.index) and _equiv(a.shape, b.shape, quiet, depth)
    if isinstance(a, Project) and isinstance(b, Project):
        return a.index == b.index and _equiv(a.shape, b.shape, quiet, depth)
    if isinstance(a, Label) and isinstance(b, Label):
        return a.label == b.label and len(a.args) == len(b.args) and all(
            size_equal(x, y) for x, y in zip(a.args, b.args))
    return False


def _unfold_const(c: Const, binder: IndexVar) -> Shape:
    """`const [d, ds]` as `generate d (\\_ -> const ds)`, to compare it with a generate."""
    if not c.dims:
        return SCALAR
    inner: Shape = Const(c.dims[1:]) if len(c.dims) > 1 else SCALAR
    return Generate(SizeLit(c.dims[0]), binder, inner)
