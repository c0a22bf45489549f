"""Stage `regularity`: the triple ⟨n, i, k⟩ for every node (van den Haak et al., Listings 3–5).

Takes the program and the facts of the `shape` stage; gives the program back unchanged, with a
`Regularity` per node that has a shape:

- `nest` (n): the regularity of each array dimension, outermost first: `R` (every sub-array at
  that depth has the same length) or `Ir` (they may differ), then `S` for the scalar elements;
  `R>Ir>S` is an array of arrays of scalars whose rows may differ in length. An array of
  tuples is a tuple of arrays: `(R>S, R>Ir>S)`. The outermost dimension of an array is always
  `R` (it is one length); a function or a scalar is `S`.
- `independent` (i) and `level` (k): a node is *dependent at level k* when its shape (an
  array) or its value (a scalar, or a tuple of scalars: it may become a size or a condition;
  the index variables the `shape` stage says its value may depend on) depends on the index
  variable of a generate/map lambda `k` lambdas deep (the outermost is level 0; the lowest such
  level counts); `independent` (level `∞`, `None`) when on none, i.e. every instance of the
  node in the enclosing parallel loops has the same shape (array) or value (scalar).
  `backends/interp/facts.py` checks all three on data.

The triple is computed from the simplified shape (rules, named in the log):

- LITERAL `const [d, ...]`: all `R`; VAR: a parameter declared `[n][m]t` is `R>R>S`, one
  declared `[][]t` (or not annotated, or a global) is `R>Ir>S`: the inner dimensions are
  irregular unless shown otherwise; INDEX: the outermost dimension dropped (the next becomes
  the outermost, so `R`); TUPLE, PROJECT componentwise; LET: the triple of the bound value;
- GENERATE-1 `generate n (\\i -> s)`, `s` does not mention `i`: `R > n(s)`;
- GENERATE-2 `s` mentions `i` only through rows of an array that does not: `s = a[e]`
  gives `R > ` the dimensions of `a` below its outermost (the rows of `a`, stacked); elsewhere
  when the rows of `a` are regular throughout, `R > n(s)`. A generate that E1/E2 simplified
  away (its shape is that of an array it copies) is GENERATE-2 too;
- GENERATE-3 otherwise: `R > ir(n(s))`, `ir` marking every dimension of `s` irregular;
- COND `cond c s1 s2`: the meet `∧` of the branches (`R ∧ R = R`, anything else `Ir`;
  independent only if both, the lower level), with the condition's dependence when the
  branches differ; when they are equivalent the shape collapsed and its triple is used;
- FOLD (`reduce`, `scan`, `loop ... for`): the triple of the accumulator's shape, or of a label;
- WHILE-REG: a `while` whose body keeps the state's shape has the state's triple;
  WHILE-INDEP: the body changes the shape, but the condition and the shapes depend only on the
  state's shape and on what does not vary, and the initial shape is one for all points: the
  label mentions fewer index variables than the loop depends on (every point iterates alike,
  so `R>R>S` once mapped over the rows of an `[n][m]` array);
  WHILE-IRR: otherwise a fresh label, dependent where the loop is (`R>Ir>S` once mapped);
- FALLBACK: a label `ℓ` of a type: `R`, then `Ir` for each inner dimension.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from ..lang import ast
from ..lang.types import Array, Seq, Tuple, Type
from .base import PassContext, PassOutput, RewriteLog
from .shape_terms import (Cond, Const, Function, Generate, Index, IndexVar, Label, Project,
                          Read, Scalar, Shape, TupleShape, Unknown, Var, has_arrays, index_vars,
                          level_of, _children)

# ---------------------------------------------------------------- nests


@dataclass(frozen=True)
class Nest:
    """`dims` (True: R, False: Ir), outermost first, of an array of scalars; or `parts` for a
    tuple (of arrays)."""
    dims: tuple[bool, ...] = ()
    parts: tuple["Nest", ...] | None = None

    def __str__(self) -> str:
        if self.parts is not None:
            return "(" + ", ".join(str(p) for p in self.parts) + ")"
        return ">".join(["R" if d else "Ir" for d in self.dims] + ["S"])


SCALAR_NEST = Nest()


def parse_nest(text: str) -> Nest:
    """The `Nest` a string such as `R>Ir>S` or `(R>S, S)` stands for."""
    return _parse_nest(text.replace(" ", ""))


def _parse_nest(text: str) -> Nest:
    if text.startswith("("):
        parts, depth, start = [], 0, 1
        for k, ch in enumerate(text):
            depth += ch == "("
            depth -= ch == ")"
            if (ch == "," and depth == 1) or (ch == ")" and depth == 0):
                parts.append(_parse_nest(text[start:k]))
                start = k + 1
        return Nest(parts=tuple(parts))
    words = text.split(">")
    if words[-1] != "S" or any(w not in ("R", "Ir") for w in words[:-1]):
        raise ValueError(f"not a nest: {text!r}")
    return Nest(tuple(w == "R" for w in words[:-1]))


def prepend(dim: bool, nest: Nest) -> Nest:
    """One more outer dimension (to each component of a tuple)."""
    if nest.parts is not None:
        return Nest(parts=tuple(prepend(dim, p) for p in nest.parts))
    return Nest((dim,) + nest.dims)


def ir(nest: Nest) -> Nest:
    """`ir`: every dimension irregular."""
    if nest.parts is not None:
        return Nest(parts=tuple(ir(p) for p in nest.parts))
    return Nest(tuple(False for _ in nest.dims))


def rows(nest: Nest) -> Nest:
    """The dimensions below the outermost one, as they are (the rows of an array, stacked
    together, without their outer dimension)."""
    if nest.parts is not None:
        return Nest(parts=tuple(rows(p) for p in nest.parts))
    return Nest(nest.dims[1:])


def drop_outer(nest: Nest) -> Nest:
    """INDEX: an element of the array; its own outermost dimension is one length: `R`."""
    inner = rows(nest)
    if inner.parts is not None:
        return Nest(parts=tuple(_top_regular(p) for p in inner.parts))
    return _top_regular(inner)


def _top_regular(nest: Nest) -> Nest:
    if nest.parts is not None:
        return Nest(parts=tuple(_top_regular(p) for p in nest.parts))
    return Nest((True,) + nest.dims[1:]) if nest.dims else nest


def meet_nests(a: Nest, b: Nest) -> Nest:
    """`a ∧ b`: `R` only where both are `R`."""
    if a.parts is not None and b.parts is not None and len(a.parts) == len(b.parts):
        return Nest(parts=tuple(meet_nests(x, y) for x, y in zip(a.parts, b.parts)))
    if a.parts is not None or b.parts is not None:
        return ir(a if a.parts is not None else b)
    n = max(len(a.dims), len(b.dims))
    pad = lambda d: d + (False,) * (n - len(d))
    return Nest(tuple(x and y for x, y in zip(pad(a.dims), pad(b.dims))))


def fully_regular(nest: Nest) -> bool:
    if nest.parts is not None:
        return all(fully_regular(p) for p in nest.parts)
    return all(nest.dims)


def nest_of_type(t: Type | None, sizes: tuple = (), outer_regular: bool = True) -> Nest:
    """VAR and FALLBACK: the outermost dimension `R`, an inner one `R` only when declared."""
    dims: list[bool] = []
    while isinstance(t, (Array, Seq)):
        k = len(dims)
        dims.append((k == 0 and outer_regular) or (k < len(sizes) and sizes[k] is not None))
        t = t.elem
    if isinstance(t, Tuple) and has_arrays(t):
        parts = tuple(nest_of_type(e, (), outer_regular=not dims) for e in t.elems)
        out = Nest(parts=parts)
        for d in reversed(dims):
            out = prepend(d, out)
        return out
    return Nest(tuple(dims))


# ---------------------------------------------------------------- the triple

@dataclass(frozen=True)
class Regularity:
    """⟨nest, independence, level⟩; `level` None is `∞`: independent."""
    nest: str
    independent: bool
    level: int | None

    def __str__(self) -> str:
        dependence = "independent" if self.independent else "dependent"
        level = "∞" if self.level is None else str(self.level)
        return f"⟨{self.nest}, {dependence}, {level}⟩"

    @property
    def tree(self) -> Nest:
        return parse_nest(self.nest)


def triple(nest: Nest, level: int | None) -> Regularity:
    return Regularity(str(nest), level is None, level)


def meet(a: Regularity, b: Regularity) -> Regularity:
    """The ∧ of two triples: nests met, independent only if both, the lower level."""
    levels = [x for x in (a.level, b.level) if x is not None]
    return triple(meet_nests(a.tree, b.tree), min(levels) if levels else None)


# ---------------------------------------------------------------- nests of shapes

def nest_of(s: Shape) -> Nest:
    """The nest of a simplified shape (the rules above, without their names)."""
    return _nest_rule(s)[1]


def generate_rule(g: Generate) -> tuple[str, Nest, str]:
    """GENERATE-1/2/3 for `generate n (\\i -> s)`: the rule, the nest and why."""
    i, body = g.var, g.body
    if i not in index_vars(body):
        return "GENERATE-1", prepend(True, nest_of(body)), f"the body does not depend on {i}"
    if isinstance(body, Index) and i not in index_vars(body.shape):
        return ("GENERATE-2", prepend(True, rows(nest_of(body.shape))),
                f"the body is a row of {body.shape}, which does not depend on {i}")
    if uniform_in(body, i):
        return ("GENERATE-2", prepend(True, nest_of(body)),
                f"the body depends on {i} only through rows of regular arrays")
    return ("GENERATE-3", prepend(True, ir(nest_of(body))),
            f"the body's shape depends on {i}: its dimensions are irregular")


def uniform_in(x, i: IndexVar) -> bool:
    """Whether every mention of `i` in `x` is inside a row `a[e]` of an array `a` that does not
    mention `i` and whose rows all have one shape (so the shape of `x` is the same for all `i`)."""
    if i not in index_vars(x):
        return True
    if isinstance(x, Index) and i not in index_vars(x.shape):
        return fully_regular(rows(nest_of(x.shape)))
    if isinstance(x, (IndexVar, Read, Unknown, Label)):
        return False
    if isinstance(x, Generate):
        return uniform_in(x.size, i) and uniform_in(x.body, i)
    return all(uniform_in(c, i) for c in _children(x))


def _nest_rule(s: Shape) -> tuple[str, Nest, str]:
    if isinstance(s, (Scalar, Function)):
        return "SCALAR", SCALAR_NEST, ""
    if isinstance(s, Const):
        return "LITERAL", Nest(tuple(True for _ in s.dims)), "literal extents: regular"
    if isinstance(s, Var):
        return "VAR", nest_of_type(s.type, s.sizes), _declared(s)
    if isinstance(s, Label):
        return "FALLBACK", nest_of_type(s.type), "unknown: irregular below the outermost"
    if isinstance(s, Index):
        return "INDEX", drop_outer(nest_of(s.shape)), "the outermost dimension dropped"
    if isinstance(s, TupleShape):
        return "TUPLE", Nest(parts=tuple(nest_of(p) for p in s.parts)), ""
    if isinstance(s, Project):
        inner = nest_of(s.shape)
        if inner.parts is not None and s.index < len(inner.parts):
            return "PROJECT", inner.parts[s.index], ""
        return "PROJECT", inner, ""
    if isinstance(s, Generate):
        return generate_rule(s)
    if isinstance(s, Cond):
        return ("COND", meet_nests(nest_of(s.then), nest_of(s.else_)),
                "the branches differ: their meet")
    return "FALLBACK", SCALAR_NEST, ""


def _declared(v: Var) -> str:
    if not v.sizes:
        return "no sizes declared: inner dimensions irregular"
    shown = "".join(f"[{'' if d is None else d}]" for d in v.sizes)
    return f"declared {shown}"


# ---------------------------------------------------------------- the pass

_GENERATORS = {"generate", "map", "map2", "map3", "iota", "replicate"}
_FOLDS = {"reduce", "scan", "reduce_by_index", "foldSeq"}


def _applied_name(node: ast.Node) -> str | None:
    if isinstance(node, ast.Apply) and isinstance(node.fn, ast.Var):
        return node.fn.name
    return None


def rule_for(node: ast.Node, shape: Shape, let_bound: bool,
             deps: frozenset[IndexVar] | None = None) -> tuple[str, Nest, str]:
    """The rule that gives `node` its triple, the nest, and a note for the log (`deps`: the
    index variables the node's value may depend on, from the `shape` stage)."""
    rule, nest, note = _nest_rule(shape)
    name = _applied_name(node)
    if isinstance(node, (ast.Let, ast.Def, ast.GlobalLet)) or let_bound:
        return "LET", nest, "the triple of the bound value"
    if isinstance(node, (ast.Lit, ast.ArrayLit)):
        return "LITERAL", nest, note
    if isinstance(node, ast.Var):
        return "VAR", nest, note
    if isinstance(node, ast.Index):
        return "INDEX", nest, note
    if isinstance(node, (ast.If,)) or name in ("cond", "select"):
        return "COND", nest, note if rule == "COND" else "equivalent branches: their shape"
    if (isinstance(node, ast.Loop) and isinstance(node.form, ast.While)) or name == "while":
        if not (isinstance(shape, Label) and shape.origin == node.id):
            return "WHILE-REG", nest, "the body keeps the state's shape"
        if shape.narrowed:
            return "WHILE-INDEP", nest, (
                "the body changes the state's shape, but the condition and the shapes depend "
                "on fewer maps than the loop: every point of those iterates alike")
        return "WHILE-IRR", nest, "the body changes the state's shape: a fresh label"
    if isinstance(node, ast.Loop) or name in _FOLDS:
        return "FOLD", nest, note
    if name in _GENERATORS and isinstance(shape, Const):
        return "GENERATE-1", nest, "literal extents: regular"
    if name in _GENERATORS and not isinstance(shape, Generate):
        return "GENERATE-2", nest, f"equivalent (E1/E2) to {shape}"
    return rule, nest, note


def level_for(node_id: int, shape: Shape, shapes: Mapping[int, Shape]) -> int | None:
    """The level `k` of a node: the lowest level of the index variables its shape mentions
    (an array), or its value may depend on (a scalar: a size, a condition; the paper's
    `c = xss[i][0] > 10` is dependent at level 0), componentwise for a tuple."""
    deps = getattr(shapes, "deps", {}).get(node_id)
    if not isinstance(shape, Function) and deps is not None:
        levels = [v.level for v in deps]
        return min(levels) if levels else None
    return level_of(shape)


def analyse(program: ast.Program, ctx: PassContext,
            shapes: Mapping[int, Shape]) -> dict[int, Regularity]:
    facts: dict[int, Regularity] = {}
    value_deps = getattr(shapes, "deps", {})
    let_patterns: set[int] = set()
    for form in program.forms:
        for node in ast.walk(form):
            if isinstance(node, (ast.Let, ast.GlobalLet)):
                let_patterns |= {p.id for p in ast.walk(node.pattern)}
    for form in program.forms:
        for node in ast.walk(form):
            shape = shapes.get(node.id)
            if shape is None:
                continue
            rule, nest, note = rule_for(node, shape, node.id in let_patterns,
                                        value_deps.get(node.id))
            facts[node.id] = result = triple(nest, level_for(node.id, shape, shapes))
            if _logged(node, shape, rule):
                with ctx.log.apply(rule, str(shape), node=node, note=note) as step:
                    step.after = str(result)
    return facts


def _logged(node: ast.Node, shape: Shape, rule: str) -> bool:
    """Log the rules of generates, conds, loops, folds, labels and let bindings on arrays; not
    the plain names, indexing and tuples in between (their triples follow from those)."""
    if isinstance(shape, (Scalar, Function)) or rule in ("VAR", "INDEX", "TUPLE", "PROJECT"):
        return False
    return not isinstance(node, (ast.Let, ast.Def, ast.GlobalLet, ast.TopExpr, ast.PTuple))


class RegularityPass:
    name = "regularity"
    transforms = False

    def run(self, program: ast.Program, ctx: PassContext) -> PassOutput:
        shapes = ctx.facts.get("shape")
        if shapes is None:                     # run on its own: compute the shapes first
            from .shape import analyse as analyse_shapes
            shapes = analyse_shapes(program, replace(ctx, log=RewriteLog("shape")))
        return PassOutput(program, analyse(program, ctx, shapes))


REGULARITY = RegularityPass()

__all__ = ["Regularity", "Nest", "parse_nest", "meet", "meet_nests", "ir", "nest_of",
           "nest_of_type", "generate_rule", "triple", "RegularityPass", "REGULARITY"]
