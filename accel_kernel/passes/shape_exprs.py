"""The `shape` stage's rules for each kind of expression and top-level form.

`analyse_form` and `analyse_expr` are called by `shape.ShapeAnalysis`; the rules of library
functions and operators are in `shape_library`. Each rule builds the descriptor of Listing 2
for its construct and hands it to `ShapeAnalysis.result`, which simplifies and logs it:
VAR (names), CONST-SHAPE (array literals whose rows have equivalent shapes), GENERATE (ranges,
slices), TUPLE, PROJECT, INDEX, LET, COND-SHAPE (`if`), FOLD (`loop ... for`), WHILE-SHAPE
(`loop ... while`), UPDATE (`with`), FALLBACK (comprehensions left by an earlier stage, and
anything not understood).
"""
from __future__ import annotations

from typing import Mapping

from ..lang import ast
from ..lang.builtins import BUILTINS
from ..lang import types as T
from ..lang.types import Func
from .shape import Closure, Info, Opaque, Prim, ShapeAnalysis
from .shape_library import call_operator, iterate
from .shape_terms import (FUNCTION, SCALAR, Cond, Const, Function, Index, Length, Scalar, SizeLit,
                          SizeOp, SizeVar, TupleShape, Var, has_arrays)

Env = Mapping[str, Info]


# ---------------------------------------------------------------- top-level forms

def analyse_form(an: ShapeAnalysis, form: ast.TopForm) -> None:
    if isinstance(form, ast.Def):
        an.program_lets.pop(form.name, None)
        env: dict[str, Info] = {}
        for p in form.params:
            _param(an, p, p.annot, env)
        body = an.expr(form.body, env, 0)
        an.facts[form.id] = body.shape
    elif isinstance(form, ast.GlobalLet):
        value = an.expr(form.value, {}, 0)
        bound = an.bind(form.pattern, value, {}, log=True)
        an.program_lets.update(bound)
        an.facts[form.id] = value.shape
    else:
        an.facts[form.id] = an.expr(form.expr, {}, 0).shape


def _param(an: ShapeAnalysis, p: ast.Pattern, annot: ast.TypeExpr | None,
           env: dict[str, Info]) -> None:
    """VAR: a parameter's shape is its name, with the sizes its annotation declares."""
    annot = p.annot or annot
    if isinstance(p, ast.PVar):
        t = an.type_of(p)
        if isinstance(t, Func):
            info = Info(FUNCTION, None, frozenset(), Opaque(p.name))
        elif not has_arrays(t):
            info = Info(SCALAR, SizeVar(p.name))
        else:
            info = Info(Var(p.name, t, _declared_sizes(annot)), SizeVar(p.name))
            an.apply_rule("VAR", p, info.shape, p, "a parameter: its shape is its name")
        env[p.name] = info
        an.facts[p.id] = info.shape
    elif isinstance(p, ast.PTuple):
        elems = annot.elems if isinstance(annot, ast.TTuple) else ()
        for k, sub in enumerate(p.elems):
            _param(an, sub, elems[k] if k < len(elems) else None, env)
        shapes = tuple(an.facts.get(sub.id, SCALAR) for sub in p.elems)
        an.facts[p.id] = an.simplify(TupleShape(shapes), p)
    _size_names(annot, env)


def _declared_sizes(annot: ast.TypeExpr | None) -> tuple:
    sizes = []
    while isinstance(annot, ast.TArray):
        size = annot.size
        sizes.append(SizeVar(size) if isinstance(size, str) else
                     SizeLit(size) if isinstance(size, int) else None)
        annot = annot.elem
    return tuple(sizes)


def _size_names(annot: ast.TypeExpr | None, env: dict[str, Info]) -> None:
    if isinstance(annot, ast.TArray):
        if isinstance(annot.size, str) and annot.size not in env:
            env[annot.size] = Info(SCALAR, SizeVar(annot.size))
        _size_names(annot.elem, env)
    elif isinstance(annot, ast.TTuple):
        for e in annot.elems:
            _size_names(e, env)


# ---------------------------------------------------------------- expressions

def analyse_expr(an: ShapeAnalysis, e: ast.Expr, env: Env, depth: int) -> Info:
    rule = _RULES.get(type(e))
    if rule is None:
        return an.unknown_info(an.type_of(e), an.node_deps(e, env), e)
    an.env_stack.append(env)
    try:
        return rule(an, e, env, depth)
    finally:
        an.env_stack.pop()


def _lit(an, e: ast.Lit, env, depth) -> Info:
    return Info(SCALAR, SizeLit(e.value))


def _var(an, e: ast.Var, env, depth) -> Info:
    name, t = e.name, an.type_of(e)
    note = ""
    if name in env:
        out = env[name]
        note = "a local name: the shape of what it is bound to (LET)"
    elif name in an.program_lets:
        out = an.program_lets[name]
        note = "a global let of this program: the shape of its value (LET)"
    elif name in an.program_defs or name in an.session_globals:
        if isinstance(t, Func):
            out = Info(FUNCTION, None, frozenset(), Opaque(name))
        elif not has_arrays(t):
            out = Info(SCALAR, SizeVar(name))
        else:
            out = Info(Var(name, t), SizeVar(name))
            note = "a global: its shape is its name"
    elif name in BUILTINS:
        out = (Info(FUNCTION, None, frozenset(), Prim("builtin", name)) if isinstance(t, Func)
               else Info(SCALAR, SizeVar(name)))
    else:
        out = an.unknown_info(t, frozenset(), e)
    if not isinstance(out.shape, (Scalar, Function)) and out.shape != Var(name):
        an.apply_rule("VAR", e, out.shape, e, note)
    return out


def _array_lit(an, e: ast.ArrayLit, env, depth) -> Info:
    elems = [an.expr(x, env, depth) for x in e.elems]
    deps = an.node_deps(e, env)
    if not elems:
        # `const [0, 0, ...]` of the literal's rank (rows no index reaches: any length is
        # right, a rank that is not would make `[] ++ xss` read as scalars)
        t, rank = an.type_of(e), 0
        while isinstance(t, T.Array):
            t, rank = t.elem, rank + 1
        if isinstance(t, T.Scalar) or rank == 0:
            return an.result("CONST-SHAPE", Const((0,) * max(rank, 1)), e, deps,
                             "an empty literal")
        label = an.fresh_label(deps, an.type_of(e), e)
        return an.result("FALLBACK", label, e, deps, "an empty literal of tuples of arrays")
    first = elems[0].shape
    if all(an.equivalent(first, x.shape) for x in elems[1:]):
        shape = an.generate(SizeLit(len(elems)), depth, lambda _: first)
        return an.result("CONST-SHAPE", shape, e, deps,
                         "a literal whose elements have equivalent shapes")
    label = an.fresh_label(deps, an.type_of(e), e)
    return an.result("FALLBACK", label, e, deps, "the elements of the literal differ in shape")


def _range(an, e: ast.Range, env, depth) -> Info:
    start, end = an.expr(e.start, env, depth), an.expr(e.end, env, depth)
    deps = an.node_deps(e, env)
    if e.step is not None:
        an.expr(e.step, env, depth)
        size = an.fresh_unknown(deps)
    else:
        diff = SizeOp("-", (an.term(end), an.term(start)))
        if e.inclusive:
            diff = SizeOp("+", (diff, SizeLit(1)))
        size = SizeOp("max", (SizeLit(0), diff))
    shape = an.generate(size, depth, lambda _: SCALAR)
    return an.result("GENERATE", shape, e, deps, "a range is a generate of its count")


def _tuple(an, e: ast.TupleLit, env, depth) -> Info:
    parts = tuple(an.expr(x, env, depth) for x in e.elems)
    shape = TupleShape(tuple(p.shape for p in parts))
    return an.result("TUPLE", shape, e, an.node_deps(e, env), parts=parts)


def _project(an, e: ast.Project, env, depth) -> Info:
    value = an.expr(e.expr, env, depth)
    out = an.project(value, e.index, e)
    if not isinstance(out.shape, Scalar):
        an.apply_rule("PROJECT", e, out.shape, e)
    return out


def _index(an, e: ast.Index, env, depth) -> Info:
    array, index = an.expr(e.expr, env, depth), an.expr(e.index, env, depth)
    out = an.element(array, an.term(index), e)
    if not isinstance(out.shape, Scalar):
        an.apply_rule("INDEX", e, out.shape, e)
    return out


def _slice(an, e: ast.Slice, env, depth) -> Info:
    array = an.expr(e.expr, env, depth)
    if e.step is not None:
        for part in (e.lo, e.hi, e.step):
            if part is not None:
                an.expr(part, env, depth)
        deps = an.node_deps(e, env)
        shape = an.generate(an.fresh_unknown(deps), depth,
                            lambda k: Index(array.shape, an.fresh_unknown(deps, k)))
        return an.result("GENERATE", shape, e, deps, "xs[i:j:s] = generate ℓ (\\k -> "
                         "xs[i + k * s]): ℓ from i, j, s and the length of xs")
    lo = an.term(an.expr(e.lo, env, depth)) if e.lo is not None else SizeLit(0)
    hi = an.term(an.expr(e.hi, env, depth)) if e.hi is not None else Length(array.shape)
    shape = an.generate(SizeOp("-", (hi, lo)), depth,
                        lambda k: Index(array.shape, SizeOp("+", (lo, k))))
    return an.result("GENERATE", shape, e, an.node_deps(e, env),
                     "xs[lo:hi] = generate (hi - lo) (\\k -> xs[lo + k])")


def _binop(an, e: ast.BinOp, env, depth) -> Info:
    left, right = an.expr(e.left, env, depth), an.expr(e.right, env, depth)
    return call_operator(an, e.op, left, right, e, depth)


def _unop(an, e: ast.UnOp, env, depth) -> Info:
    x = an.expr(e.operand, env, depth)
    return an.info(SCALAR, SizeOp(e.op, (an.term(x),)), x.deps)


def _apply(an, e: ast.Apply, env, depth) -> Info:
    f = an.expr(e.fn, env, depth)
    args = [an.expr(a, env, depth) for a in e.args]
    return an.apply(f, args, an.type_of(e), e, depth)


def _op_func(an, e: ast.OpFunc, env, depth) -> Info:
    kind = "builtin" if e.op in BUILTINS else "op"
    return Info(FUNCTION, None, frozenset(), Prim(kind, e.op))


def _left_section(an, e: ast.LeftSection, env, depth) -> Info:
    left = an.expr(e.left, env, depth)
    kind = "builtin" if e.op in BUILTINS else "op"
    return Info(FUNCTION, None, left.deps, Prim(kind, e.op, (left,)))


def _right_section(an, e: ast.RightSection, env, depth) -> Info:
    right = an.expr(e.right, env, depth)
    return Info(FUNCTION, None, right.deps, Prim("rsection", e.op, (right,)))


def _lambda(an, e: ast.Lambda, env, depth) -> Info:
    closure = Closure(e, env, (), depth)
    an.pending.append(closure)
    return Info(FUNCTION, None, an.node_deps(e, env), closure)


def _let(an, e: ast.Let, env, depth) -> Info:
    value = an.expr(e.value, env, depth)
    inner = an.bind(e.pattern, value, dict(env), log=not isinstance(value.shape, Scalar))
    return an.expr(e.body, inner, depth)


def _if(an, e: ast.If, env, depth) -> Info:
    c = an.expr(e.cond, env, depth)
    then, else_ = an.expr(e.then, env, depth), an.expr(e.else_, env, depth)
    value = then.value if then.value is not None and then.value == else_.value else None
    shape = Cond(an.term(c), then.shape, else_.shape)
    note = "the branches have equivalent shapes" if an.equivalent(then.shape, else_.shape) \
        else "the branches differ: the shape depends on the condition"
    return an.result("COND-SHAPE", shape, e, c.deps | then.deps | else_.deps, note, value)


def _loop(an, e: ast.Loop, env, depth) -> Info:
    init = an.expr(e.init, env, depth)
    deps = an.node_deps(e, env) | init.deps
    form = e.form
    outer: dict[str, Info] = {}
    count = None                         # the number of iterations, as a size term
    if isinstance(form, ast.ForRange):
        count = an.term(an.expr(form.bound, env, depth))
        outer[form.var] = an.info(SCALAR, an.fresh_unknown(deps))
    elif isinstance(form, ast.ForIn):
        array = an.expr(form.array, env, depth)
        count = Length(array.shape)
        element = an.element(array, an.fresh_unknown(deps), e)
        outer = an.bind(form.pattern, element, {})

    def body_of(state: Info) -> tuple[Info, Info | None]:
        inner = an.bind(e.pattern, state, dict(env))
        inner.update(outer)
        cond = an.expr(form.cond, inner, depth) if isinstance(form, ast.While) else None
        return an.expr(e.body, inner, depth), cond

    rule = "WHILE-SHAPE" if isinstance(form, ast.While) else "FOLD"
    return iterate(an, init, deps, an.type_of(e), e, rule, body_of, count)


def _update(an, e: ast.Update, env, depth) -> Info:
    array = an.expr(e.array, env, depth)
    target = array
    for i in e.indices:
        target = an.element(target, an.term(an.expr(i, env, depth)), e)
    value = an.expr(e.value, env, depth)
    deps = an.node_deps(e, env)
    if an.equivalent(value.shape, target.shape):
        return an.result("UPDATE", array.shape, e, deps,
                         "the new element has the shape of the old one", parts=array.parts)
    label = an.fresh_label(deps, an.type_of(e), e)
    return an.result("UPDATE", label, e, deps, "the new element may change the shape")


def _ascribe(an, e: ast.Ascribe, env, depth) -> Info:
    return an.expr(e.expr, env, depth)


def _comprehension(an, e: ast.Comprehension, env, depth) -> Info:
    deps = an.node_deps(e, env)
    visible = dict(env)
    for branch in e.branches:
        scope = dict(env)
        for q in branch:
            if isinstance(q, ast.Generator):
                source = an.expr(q.source, scope, depth)
                element = an.element(source, an.fresh_unknown(deps), e)
                scope = an.bind(q.pattern, element, scope)
            elif isinstance(q, ast.Guard):
                an.expr(q.cond, scope, depth)
            else:
                scope = an.bind(q.pattern, an.expr(q.value, scope, depth), scope)
        visible.update(scope)
    an.expr(e.body, visible, depth)
    label = an.fresh_label(deps, an.type_of(e), e)
    return an.result("FALLBACK", label, e, deps,
                     "a comprehension the desugar stage left: its shape is unknown")


_RULES = {
    ast.Lit: _lit, ast.Var: _var, ast.ArrayLit: _array_lit, ast.Range: _range,
    ast.TupleLit: _tuple, ast.Project: _project, ast.Index: _index, ast.Slice: _slice,
    ast.BinOp: _binop, ast.UnOp: _unop, ast.Apply: _apply, ast.OpFunc: _op_func,
    ast.LeftSection: _left_section, ast.RightSection: _right_section, ast.Lambda: _lambda,
    ast.Let: _let, ast.If: _if, ast.Loop: _loop, ast.Update: _update, ast.Ascribe: _ascribe,
    ast.Comprehension: _comprehension,
}

__all__ = ["analyse_form", "analyse_expr"]
