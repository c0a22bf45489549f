"""The `shape` stage's rules for library functions and operators (LANGUAGE.md §4).

Each function is written with the core descriptors, so that simplification and equivalence
see through it (`k` is a fresh index variable, `ℓ` a fresh unknown applied to `k` and to what
the call depends on):

- GENERATE: `generate n f`, `iota n = generate n (\\k -> scalar)`,
  `replicate n x = generate n (\\k -> x)`, `map f xs = generate (length xs) (\\i -> f xs[i])`
  (also `map2`, `map3`), `take n xs = generate n (\\k -> xs[k])`,
  `drop n xs = generate (length xs - n) (\\k -> xs[n + k])`,
  `reverse xs = generate (length xs) (\\k -> xs[length xs - 1 - k])`, `sort`, `sort_by`,
  `rotate`: `generate (length xs) (\\k -> xs[ℓ k])` (a permutation),
  `xs ++ ys = generate (length xs + length ys) (\\k -> cond (k < length xs) xs[k] ys[k - length xs])`,
  `interleave` alike, `transpose xss = generate (min (length xss) 1 * length xss[0]) (\\j -> generate (length xss) (\\i -> xss[i][j]))`,
  `filter p xs = generate ℓ (\\k -> xs[ℓ' k])`, `partition` two of those,
  `flatten xss = generate ℓ (\\k -> xss[ℓ' k][ℓ'' k])`, `expand sz get xs = generate ℓ (\\k -> get xs[ℓ' k] (ℓ'' k))`,
  `scatter dest is vs = generate (length dest) (\\k -> cond (ℓ k) dest[k] vs[ℓ' k])`;
- INDEX: `head xs = xs[0]`, `last xs = xs[length xs - 1]`;
- TUPLE: `zip xs ys = (xs, ys)`, `unzip ps = (ps.0, ps.1)` (arrays of tuples are tuples of arrays);
- FOLD: `reduce op ne xs` has the shape of `ne` when `op` maps an accumulator of that shape and
  an element of `xs` to an equivalent shape, else a fresh label; `scan` is a generate of that,
  `reduce_by_index` keeps `dest`'s rows when `op` keeps them, `foldSeq` like `reduce`;
- WHILE-SHAPE: `while p f x` has the shape of `x` when `f` maps it to an equivalent shape (the
  state's value is unknown in the body: the shape only may be relied on), else a fresh label;
- COND-SHAPE: `cond c a b`, `select c a b`;
- scalar functions and operators give scalars whose value is kept as a term (`min a b`);
- FALLBACK: sequences (their elements and length are only known at run time).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from ..lang import ast
from ..lang.scalar_ops import CONVERSIONS
from ..lang.types import BOOL, I64, Seq, Tuple, Type
from .shape import Info, ShapeAnalysis, value_vars
from .shape_terms import (SCALAR, Cond, Index, IndexVar, Length, Scalar, Shape, Size, SizeLit,
                          SizeOp, TupleShape, elem_type, has_arrays, index_vars)

_SCALAR_FUNCTIONS = {"min", "max", "abs", "sqrt", "exp", "log", "sin", "cos", "tan", "atan2",
                     "floor", "ceil", "round", *CONVERSIONS}


def _deps(args: list[Info]):
    return frozenset().union(*(a.deps for a in args)) if args else frozenset()


# ---------------------------------------------------------------- operators

def call_operator(an: ShapeAnalysis, op: str, left: Info, right: Info, node: ast.Node,
                  depth: int) -> Info:
    if op == "++":
        return _concat(an, [left, right], None, node, depth)
    if op in _SCALAR_FUNCTIONS:
        return call_builtin(an, op, [left, right], None, node, depth)
    return an.info(SCALAR, SizeOp(op, (an.term(left), an.term(right))), left.deps | right.deps)


def call_builtin(an: ShapeAnalysis, name: str, args: list[Info], rtype: Type | None,
                 node: ast.Node, depth: int) -> Info:
    rule = _RULES.get(name)
    if rule is not None:
        return rule(an, args, rtype, node, depth)
    deps = _deps(args)
    if name in _SCALAR_FUNCTIONS:
        return an.info(SCALAR, SizeOp(name, tuple(an.term(a) for a in args)), deps)
    for a in args:
        an.touch(a, depth + 1)
    if not has_arrays(rtype):
        return an.info(SCALAR, an.fresh_unknown(deps), deps)
    return an.result("FALLBACK", an.fresh_label(deps, rtype, node), node, deps,
                     f"`{name}`: the shape of its result is only known at run time")


# ---------------------------------------------------------------- generate and map

def _lambda_hint(f: Info) -> str | None:
    fn = f.fn
    lam = getattr(fn, "lam", None)
    if lam is not None and len(fn.args) < len(lam.params):
        p = lam.params[len(fn.args)]
        if isinstance(p, ast.PVar):
            return p.name
    return None


def _generate(an, args, rtype, node, depth) -> Info:
    n, f = args
    body = lambda i: an.apply(f, [an.info(SCALAR, i)], elem_type(rtype), node, depth + 1).shape
    shape = an.generate(an.term(n), depth, body, _lambda_hint(f))
    return an.result("GENERATE", shape, node, _deps(args))


def _map(an, args, rtype, node, depth) -> Info:
    f, arrays = args[0], args[1:]

    def body(i: IndexVar) -> Shape:
        elements = [an.element(a, i, node) for a in arrays]
        return an.apply(f, elements, elem_type(rtype), node, depth + 1).shape

    shape = an.generate(Length(arrays[0].shape), depth, body)
    return an.result("GENERATE", shape, node, _deps(args),
                     "map f xs = generate (length xs) (\\i -> f xs[i])")


def _iota(an, args, rtype, node, depth) -> Info:
    shape = an.generate(an.term(args[0]), depth, lambda _: SCALAR)
    return an.result("GENERATE", shape, node, _deps(args), "iota n = generate n (\\k -> scalar)")


def _replicate(an, args, rtype, node, depth) -> Info:
    n, x = args
    shape = an.generate(an.term(n), depth, lambda _: x.shape)
    return an.result("GENERATE", shape, node, _deps(args),
                     "replicate n x = generate n (\\k -> x)")


def _rows(an, array: Info, node, depth, size: Size, index_of: Callable[[IndexVar], Size],
          deps, note: str) -> Info:
    """`generate size (\\k -> array[index_of k])`: a rearrangement of the rows of `array`."""
    shape = an.generate(size, depth, lambda k: Index(array.shape, index_of(k)))
    return an.result("GENERATE", shape, node, deps, note)


def _take(an, args, rtype, node, depth) -> Info:
    n, xs = args
    return _rows(an, xs, node, depth, an.term(n), lambda k: k, _deps(args),
                 "take n xs = generate n (\\k -> xs[k])")


def _drop(an, args, rtype, node, depth) -> Info:
    n, xs = args
    count = an.term(n)
    return _rows(an, xs, node, depth, SizeOp("-", (Length(xs.shape), count)),
                 lambda k: SizeOp("+", (count, k)), _deps(args),
                 "drop n xs = generate (length xs - n) (\\k -> xs[n + k])")


def _reverse(an, args, rtype, node, depth) -> Info:
    xs = args[0]
    last = SizeOp("-", (Length(xs.shape), SizeLit(1)))
    return _rows(an, xs, node, depth, Length(xs.shape), lambda k: SizeOp("-", (last, k)),
                 _deps(args), "reverse xs = generate (length xs) (\\k -> xs[length xs - 1 - k])")


def _permutation(an, args, rtype, node, depth) -> Info:
    xs, deps = args[-1], _deps(args)
    for f in [a for a in args[:-1] if a.fn is not None]:    # sort_by's key, on an element
        an.generate(Length(xs.shape), depth, lambda i: an.apply(
            f, [an.element(xs, i, node)], None, node, depth + 1).shape)
    return _rows(an, xs, node, depth, Length(xs.shape), lambda k: an.fresh_unknown(deps, k),
                 deps, "a permutation: generate (length xs) (\\k -> xs[ℓ k])")


def _filter(an, args, rtype, node, depth) -> Info:
    p, xs = args
    _each(an, p, xs, BOOL, node, depth)
    return _filtered(an, xs, _deps(args), node, depth)


def _each(an, f: Info, xs: Info, rtype, node, depth) -> None:
    """Analyse `f` on an element of `xs`, as `map` would (for its facts)."""
    an.generate(Length(xs.shape), depth, lambda i: an.apply(
        f, [an.element(xs, i, node)], rtype, node, depth + 1).shape)


def _filtered(an, xs: Info, deps, node, depth) -> Info:
    return _rows(an, xs, node, depth, an.fresh_unknown(deps), lambda k: an.fresh_unknown(deps, k),
                 deps, "filter p xs = generate ℓ (\\k -> xs[ℓ' k]): which elements stay is "
                 "only known at run time")


def _partition(an, args, rtype, node, depth) -> Info:
    p, xs = args
    _each(an, p, xs, BOOL, node, depth)
    deps = _deps(args)
    parts = (_filtered(an, xs, deps, node, depth), _filtered(an, xs, deps, node, depth))
    shape = TupleShape(tuple(part.shape for part in parts))
    return an.result("TUPLE", shape, node, deps, "partition: two filters", parts=parts)


def _expand(an, args, rtype, node, depth) -> Info:
    sz, get, xs = args
    deps = _deps(args)
    _each(an, sz, xs, I64, node, depth)

    def body(k: IndexVar) -> Shape:
        x = an.element(xs, an.fresh_unknown(deps, k), node)
        j = an.info(SCALAR, an.fresh_unknown(deps, k))
        return an.apply(get, [x, j], elem_type(rtype), node, depth + 1).shape

    shape = an.generate(an.fresh_unknown(deps), depth, body)
    return an.result("GENERATE", shape, node, deps,
                     "expand sz get xs = generate ℓ (\\k -> get xs[ℓ' k] (ℓ'' k))")


def _flatten(an, args, rtype, node, depth) -> Info:
    xss, deps = args[0], _deps(args)
    shape = an.generate(an.fresh_unknown(deps), depth, lambda k: Index(
        Index(xss.shape, an.fresh_unknown(deps, k)), an.fresh_unknown(deps, k)))
    return an.result("GENERATE", shape, node, deps,
                     "flatten xss = generate ℓ (\\k -> xss[ℓ' k][ℓ'' k])")


def _concat(an, args, rtype, node, depth) -> Info:
    a, b = args
    la, lb = Length(a.shape), Length(b.shape)
    shape = an.generate(SizeOp("+", (la, lb)), depth, lambda k: Cond(
        SizeOp("<", (k, la)), Index(a.shape, k), Index(b.shape, SizeOp("-", (k, la)))))
    return an.result("GENERATE", shape, node, _deps(args),
                     "xs ++ ys = generate (length xs + length ys) "
                     "(\\k -> cond (k < length xs) xs[k] ys[k - length xs])")


def _interleave(an, args, rtype, node, depth) -> Info:
    a, b = args
    half = lambda k: SizeOp("/", (k, SizeLit(2)))
    even = lambda k: SizeOp("==", (SizeOp("%", (k, SizeLit(2))), SizeLit(0)))
    shape = an.generate(SizeOp("+", (Length(a.shape), Length(b.shape))), depth, lambda k: Cond(
        even(k), Index(a.shape, half(k)), Index(b.shape, half(k))))
    return an.result("GENERATE", shape, node, _deps(args))


def _transpose(an, args, rtype, node, depth) -> Info:
    xss = args[0]
    # no rows: no columns either (`transpose []` is `[]`, whatever the rows would hold)
    rows = SizeOp("*", (SizeOp("min", (Length(xss.shape), SizeLit(1))),
                        Length(Index(xss.shape, SizeLit(0)))))
    shape = an.generate(rows, depth, lambda j: an.generate(
        Length(xss.shape), depth + 1, lambda i: Index(Index(xss.shape, i), j)))
    return an.result("GENERATE", shape, node, _deps(args),
                     "transpose xss = generate (min (length xss) 1 * length xss[0]) "
                     "(\\j -> generate (length xss) (\\i -> xss[i][j]))")


def _scatter(an, args, rtype, node, depth) -> Info:
    dest, _, vs = args
    deps = _deps(args)
    shape = an.generate(Length(dest.shape), depth, lambda k: Cond(
        an.fresh_unknown(deps, k), Index(dest.shape, k), Index(vs.shape, an.fresh_unknown(deps, k))))
    return an.result("GENERATE", shape, node, deps,
                     "scatter: some rows of dest are replaced by rows of vs")


# ---------------------------------------------------------------- indexing and tuples

def _head(an, args, rtype, node, depth) -> Info:
    return _at(an, args[0], SizeLit(0), node)


def _last(an, args, rtype, node, depth) -> Info:
    xs = args[0]
    return _at(an, xs, SizeOp("-", (Length(xs.shape), SizeLit(1))), node)


def _at(an, xs: Info, index: Size, node) -> Info:
    out = an.element(xs, index, node)
    if not isinstance(out.shape, Scalar):
        an.apply_rule("INDEX", node, out.shape, node)
    return out


def _zip(an, args, rtype, node, depth) -> Info:
    shape = TupleShape(tuple(a.shape for a in args))
    return an.result("TUPLE", shape, node, _deps(args),
                     "an array of tuples is a tuple of arrays", parts=tuple(args))


def _unzip(an, args, rtype, node, depth) -> Info:
    count = len(rtype.elems) if hasattr(rtype, "elems") else 2
    parts = tuple(an.project(args[0], k, node) for k in range(count))
    shape = TupleShape(tuple(p.shape for p in parts))
    return an.result("TUPLE", shape, node, _deps(args),
                     "an array of tuples is a tuple of arrays", parts=parts)


def _length(an, args, rtype, node, depth) -> Info:
    return an.info(SCALAR, Length(args[0].shape), args[0].deps)


# ---------------------------------------------------------------- folds, loops, conditionals

def state_of(an: ShapeAnalysis, value: Info, deps) -> Info:
    """A loop state or accumulator: the shape of `value`, an unknown value."""
    if value.parts is not None:
        parts = tuple(state_of(an, p, deps) for p in value.parts)
        return an.info(value.shape, None, deps | value.deps, parts=parts)
    if value.fn is not None:
        return value
    return an.info(value.shape, an.fresh_unknown(deps | value.deps), deps | value.deps)


def _generic_state(an: ShapeAnalysis, value: Info, type_: Type | None, deps,
                   assumed: frozenset[IndexVar], node: ast.Node) -> Info:
    """The state at some iteration of a loop whose body changes its shape: each array's
    shape a fresh label and each scalar's value a fresh unknown, applied to the index
    variables `assumed` (what the shapes and scalars of the state are assumed to depend
    on); the data of the arrays may depend on everything the loop depends on."""
    if value.fn is not None:
        return value
    if value.parts is not None:
        types = type_.elems if isinstance(type_, Tuple) and \
            len(type_.elems) == len(value.parts) else (None,) * len(value.parts)
        parts = tuple(_generic_state(an, p, t, deps, assumed, node)
                      for p, t in zip(value.parts, types))
        return an.info(TupleShape(tuple(p.shape for p in parts)), None, deps | assumed,
                       parts=parts)
    if isinstance(value.shape, Scalar):
        return Info(SCALAR, an.fresh_unknown(assumed), assumed)
    label = an.fresh_label(assumed, type_, node)
    return Info(label, an.fresh_unknown(deps | assumed), deps | assumed)


def _varying(info: Info | None) -> frozenset[IndexVar]:
    """What a state's shapes and scalars may depend on (its arrays' data excepted)."""
    if info is None or info.fn is not None:
        return frozenset()
    if info.parts is not None:
        return frozenset().union(*(_varying(p) for p in info.parts))
    if isinstance(info.shape, Scalar):
        return _really(info.value) if info.value is not None else info.deps
    return _really(info.shape)


def _really(x: Shape | Size) -> frozenset[IndexVar]:
    """The index variables `x` depends on: those it mentions, except where every mention is
    a row of an array whose rows all have one shape (`xss[i]` of an `[n][m]` parameter)."""
    from .regularity import uniform_in
    return frozenset(v for v in index_vars(x) if not uniform_in(x, v))


def iterate(an: ShapeAnalysis, init: Info, deps, type_: Type | None, node: ast.Node,
            rule: str, body_of: Callable[[Info], tuple[Info, Info | None]],
            count: Size | None = None) -> Info:
    """FOLD / WHILE-SHAPE: the state keeps the shape of `init` when one step of the body
    maps that shape to an equivalent one (by induction, every step does). Otherwise the body
    is analysed again with a generic state (`_generic_state`), so that the facts of its nodes
    hold at every iteration, and the loop's shape is a fresh label applied to the index
    variables that the shapes and scalars of the state, the number of iterations (`count`;
    a `while`'s condition, the second result of `body_of`) and so the final shape may depend
    on: starting from those of `init`, grown until one step of the body adds none
    (WHILE-INDEP: a `while` over shapes alone stays independent of the enclosing maps)."""
    deps = deps | init.deps
    mark = an.mark()
    after, _ = body_of(state_of(an, init, deps))
    if an.equivalent(after.shape, init.shape):
        final = state_of(an, init, deps)        # the values after the loop are unknown
        return an.result(rule, init.shape, node, deps,
                         "the body keeps the shape of the state", parts=final.parts)
    changed = after.shape
    assumed = _varying(init) | (index_vars(count) if count is not None else frozenset())
    for _ in range(len(deps) + 2):
        an.rollback(mark)
        after, cond = body_of(_generic_state(an, init, type_, deps, assumed, node))
        found = _varying(after) | _varying(cond)
        if found <= assumed:
            break
        assumed = assumed | found
    else:                               # not settled: everything the loop depends on
        assumed = assumed | deps
    label = replace(an.fresh_label(assumed, type_, node),
                    narrowed=assumed < frozenset(v for v in deps if isinstance(v, IndexVar)))
    return an.result(rule, label, node, deps,
                     f"the body changes the shape of the state ({init.shape} becomes "
                     f"{changed}): a fresh label, applied to what the state's shape and "
                     f"the number of iterations depend on")


def _while(an, args, rtype, node, depth) -> Info:
    p, f, x = args

    def body_of(state: Info) -> tuple[Info, Info]:
        cond = an.apply(p, [state], BOOL, node, depth)
        return an.apply(f, [state], rtype, node, depth), cond

    return iterate(an, x, _deps(args), rtype, node, "WHILE-SHAPE", body_of)


def _reduce(an, args, rtype, node, depth) -> Info:
    op, ne, xs = args
    deps = _deps(args)
    element = an.element(xs, an.fresh_unknown(deps), node)
    return iterate(an, ne, deps, rtype, node, "FOLD",
                   lambda acc: (an.apply(op, [acc, element], rtype, node, depth), None),
                   count=Length(xs.shape))


def _fold_seq(an, args, rtype, node, depth) -> Info:
    op, ne, s = args
    deps = _deps(args)
    element = an.unknown_info(rtype, deps, node)
    return iterate(an, ne, deps, rtype, node, "FOLD",
                   lambda acc: (an.apply(op, [acc, element], rtype, node, depth), None),
                   count=an.fresh_unknown(deps))


def _combine(an, op: Info, acc: Info, element: Info, type_, deps, node, depth) -> bool:
    """Whether `op acc element` keeps the accumulator's shape. When it does not, the
    operator is analysed again with a generic accumulator (depending on everything the call
    does), so that its facts hold at every step."""
    mark = an.mark()
    after = an.apply(op, [state_of(an, acc, deps), element], type_, node, depth)
    if an.equivalent(after.shape, acc.shape):
        return True
    an.rollback(mark)
    every = frozenset(deps) | acc.deps
    an.apply(op, [_generic_state(an, acc, type_, every, every, node), element], type_, node,
             depth)
    return False


def _scan(an, args, rtype, node, depth) -> Info:
    op, ne, xs = args
    deps = _deps(args)
    element = an.element(xs, an.fresh_unknown(deps), node)
    keep = _combine(an, op, ne, element, elem_type(rtype), deps, node, depth)
    shape = an.generate(Length(xs.shape), depth, lambda k: ne.shape if keep else
                        an.fresh_label(deps, elem_type(rtype), node, k))
    note = ("the operator keeps the accumulator's shape" if keep else
            "the operator changes the accumulator's shape")
    return an.result("FOLD", shape, node, deps, note)


def _reduce_by_index(an, args, rtype, node, depth) -> Info:
    dest, op, ne, _, vs = args
    deps = _deps(args)
    row = an.element(dest, an.fresh_unknown(deps), node)
    element = an.element(vs, an.fresh_unknown(deps), node)
    keep = _combine(an, op, row, element, elem_type(rtype), deps, node, depth)
    shape = an.generate(Length(dest.shape), depth, lambda k: Index(dest.shape, k) if keep else
                        an.fresh_label(deps, elem_type(rtype), node, k))
    return an.result("FOLD", shape, node, deps,
                     "the operator keeps the rows' shape" if keep else
                     "the operator changes the rows' shape")


def _cond(an, args, rtype, node, depth) -> Info:
    c, a, b = args
    value = a.value if a.value is not None and a.value == b.value else None
    return an.result("COND-SHAPE", Cond(an.term(c), a.shape, b.shape), node, _deps(args),
                     value=value)


# ---------------------------------------------------------------- sequences

def _sequence(an, args, rtype, node, depth) -> Info:
    deps = _deps(args)
    for a in args:          # `produce`, `mapSeq`, `zipWithSeq` call theirs once per element
        if a.fn is not None:
            an.generate(an.fresh_unknown(deps), depth,
                        lambda k: _touch_at(an, a, deps | {k}, depth + 1).shape)
    if not has_arrays(rtype):
        return an.info(SCALAR, an.fresh_unknown(deps), deps)
    note = ("a sequence: its length and elements are only known at run time"
            if isinstance(rtype, Seq) else "the elements of a sequence, stacked")
    return an.result("FALLBACK", an.fresh_label(deps, rtype, node), node, deps, note)


def _touch_at(an: ShapeAnalysis, f: Info, deps, depth: int) -> Info:
    """`f` applied to unknown arguments that depend on `deps` (a point's index variable)."""
    fn = f.fn
    params = getattr(getattr(fn, "lam", None), "params", ())[len(getattr(fn, "args", ())):]
    if not params or fn.lam.id in an.applied:
        return f
    args = [an.unknown_info(an.type_of(p), f.deps | deps, p) for p in params]
    return an.apply(f, args, None, fn.lam, depth)


_RULES: dict[str, Callable[..., Info]] = {
    "generate": _generate, "map": _map, "map2": _map, "map3": _map, "iota": _iota,
    "replicate": _replicate, "take": _take, "drop": _drop, "reverse": _reverse,
    "sort": _permutation, "sort_by": _permutation, "rotate": _permutation,
    "filter": _filter, "partition": _partition, "expand": _expand, "flatten": _flatten,
    "concat": _concat, "interleave": _interleave, "transpose": _transpose,
    "scatter": _scatter, "head": _head, "last": _last, "zip": _zip, "zip3": _zip,
    "unzip": _unzip, "unzip3": _unzip, "length": _length, "while": _while,
    "reduce": _reduce, "scan": _scan, "reduce_by_index": _reduce_by_index,
    "foldSeq": _fold_seq, "cond": _cond, "select": _cond,
    "produce": _sequence, "stream": _sequence, "mapSeq": _sequence, "zipWithSeq": _sequence,
    "elements": _sequence, "tabulate": _sequence,
}

__all__ = ["call_builtin", "call_operator", "iterate", "state_of"]
