"""Stage `shape`: a shape descriptor for every node (van den Haak et al., Listing 2).

Takes the (desugared) program and its types; gives the program back unchanged, with a fact
per expression and pattern node (and per `def`/`let`/top-level form: its value's shape): the
simplified `Shape` of its value (`shape_terms`), simplified by S1–S4, E1–E2 (`shape_rules`).

The analysis is an abstract evaluation of each form. An environment maps every local name to
what is known of its value (`Info`): its shape, its value as a size term when it has one
(`length xs`, `xs[i]`, `i + 1`), the index variables it may depend on, and for functions the
function itself, so that a lambda is analysed where it is applied (inside `map`, with its
parameter bound to `xs[i]`). LET: a let-bound name stands for its value's shape and term, so
equivalence sees through lets. Each `generate`/`map` binds a fresh `IndexVar` at the level of
its lambda (the number of generate/map lambdas around it, the outermost is 0). The rules of
the library functions are in `shape_library`. Everything the analysis does not understand gets
a fresh label (FALLBACK), applied to the index variables the node may depend on: never wrong,
only less precise. Every rule application goes through the rewriter (`ShapeAnalysis.result`
and `apply_rule`, over `RewriteLog.apply`), logged on the node it applied to with the shape it
gives.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Mapping

from ..lang import ast
from ..lang.builtins import BUILTINS
from ..lang.types import Func, Type
from ..lang.types import Tuple as TupleType
from .base import PassContext, PassOutput
from .shape_rules import Simplifier, equivalent
from .shape_terms import (FUNCTION, SCALAR, Cond, Const, Function, Generate, Index, IndexVar,
                          Label, Length, Project, Read, Scalar, Shape, Size, SizeLit, SizeOp,
                          SizeVar, TupleShape, Unknown, Var, has_arrays, index_vars, shape_type)

__all__ = ["Shape", "Var", "Index", "Scalar", "SCALAR", "TupleShape", "Const", "Project",
           "Generate", "Cond", "Label", "Function", "IndexVar", "SizeVar", "SizeLit", "Length",
           "SizeOp", "Read", "Unknown", "Info", "ShapeFacts", "value_vars", "uniform_vars",
           "ShapePass", "SHAPE",
           "analyse"]


# ---------------------------------------------------------------- what is known of a value

@dataclass(frozen=True, eq=False)
class Closure:
    lam: ast.Lambda
    env: Mapping[str, "Info"]
    args: tuple["Info", ...]
    depth: int


@dataclass(frozen=True, eq=False)
class Prim:
    """A library function or operator, with the arguments given so far. `kind`: `builtin`,
    `op` (`(+)`, `(2*)`) or `rsection` (`(+1)`: the argument goes on the left)."""
    kind: str
    name: str
    args: tuple["Info", ...] = ()


@dataclass(frozen=True, eq=False)
class Opaque:
    """A function the analysis cannot see into (a global def, a function parameter)."""
    name: str
    args: tuple["Info", ...] = ()


FnValue = Closure | Prim | Opaque


@dataclass(frozen=True, eq=False)
class Info:
    shape: Shape
    value: Size | None = None                  # the value as a size term, when known
    deps: frozenset[IndexVar] = frozenset()    # the index variables it may depend on
    fn: FnValue | None = None                  # for function values
    parts: tuple["Info", ...] | None = None    # for tuples built in view


def _arity(name: str) -> int:
    t, n = BUILTINS[name].scheme.type, 0
    while isinstance(t, Func):
        t, n = t.result, n + 1
    return n


_HINTS = "ijklmnpqrs"


# ---------------------------------------------------------------- the analysis

class ShapeAnalysis:
    """Abstract evaluation of a program's forms; `facts` is the result."""

    def __init__(self, ctx: PassContext, program: ast.Program):
        self.ctx = ctx
        self.types = ctx.types
        self.facts: dict[int, Shape] = {}
        self.deps: dict[int, frozenset[IndexVar]] = {}    # what each node's value depends on
        self.labels = itertools.count(1)
        self.session_globals = set(ctx.env.schemes)
        self.program_defs = {f.name for f in program.forms if isinstance(f, ast.Def)}
        self.program_lets: dict[str, Info] = {}
        self.pending: list[Closure] = []
        self.applied: set[int] = set()
        self.applications: list[tuple[Closure, tuple[Info, ...], int]] = []   # this form's
        self.generalised: set[int] = set()
        self.active: list[str] = []                # names of the enclosing index variables
        self.env_stack: list[Mapping[str, Info]] = []   # the scopes being analysed
        self._free: dict[int, frozenset[str]] = {}
        self._terms: dict[int, tuple[Info, Size]] = {}

    # ------------------------------------------------------------------ helpers for rules

    def type_of(self, node: ast.Node) -> Type | None:
        return self.types.get(node.id)

    def info(self, shape: Shape, value: Size | None = None,
             deps: frozenset[IndexVar] = frozenset(), fn: FnValue | None = None,
             parts: tuple[Info, ...] | None = None) -> Info:
        deps = deps | index_vars(shape)
        if value is not None:
            deps = deps | index_vars(value)
        return Info(shape, value, deps, fn, parts)

    def apply_rule(self, rule: str, before, after, node: ast.Node, note: str = "") -> None:
        """The rule `rule` gave `node` the shape `after`: one application, logged by the
        rewriter (an analysis changes no node: what it makes is the fact)."""
        with self.ctx.log.apply(rule, before, node=node, note=note) as step:
            step.after = str(after)

    def simplify(self, shape: Shape, node: ast.Node) -> Shape:
        """`shape` simplified; the steps are logged unless it ends up a scalar."""
        simplifier = Simplifier()
        out = simplifier.shape(shape)
        if not isinstance(out, (Scalar, Function)):
            for rule, before, after in simplifier.steps:
                self.apply_rule(rule, before, after, node)
        return out

    def result(self, rule: str, shape: Shape, node: ast.Node, deps: frozenset[IndexVar],
               note: str = "", value: Size | None = None,
               parts: tuple[Info, ...] | None = None) -> Info:
        """A rule's result, simplified; on array values the rule and each simplification step
        are logged (scalars are not, to keep the log readable)."""
        simplifier = Simplifier()
        out = simplifier.shape(shape)
        if not isinstance(out, (Scalar, Function)):
            self.apply_rule(rule, node, shape, node, note)
            for step_rule, before, after in simplifier.steps:
                self.apply_rule(step_rule, before, after, node)
        return self.info(out, value, deps, parts=parts)

    def fresh_unknown(self, deps: frozenset[IndexVar], *extra: Size) -> Unknown:
        return Unknown(next(self.labels), tuple(extra) + _sorted(deps))

    def fresh_label(self, deps: frozenset[IndexVar], type_: Type | None, node: ast.Node,
                    *extra: Size) -> Label:
        return Label(next(self.labels), tuple(extra) + _sorted(deps), type_, node.id)

    def unknown_info(self, type_: Type | None, deps: frozenset[IndexVar],
                     node: ast.Node) -> Info:
        """What is known of a value nothing is known about: its type."""
        if isinstance(type_, Func):
            return Info(FUNCTION, None, deps, Opaque("?"))
        shape = self.fresh_label(deps, type_, node) if has_arrays(type_) else SCALAR
        return Info(shape, self.fresh_unknown(deps), deps | index_vars(shape))

    def term(self, info: Info) -> Size:
        """The value of `info` as a size term: a fresh unknown when it has none."""
        if info.value is not None:
            return info.value
        cached = self._terms.get(id(info))
        if cached is None:
            cached = (info, self.fresh_unknown(info.deps))
            self._terms[id(info)] = cached
        return cached[1]

    def fresh_index(self, depth: int, hint: str | None = None) -> IndexVar:
        """A fresh index variable at `depth`, named apart from the names in scope."""
        taken = set(self.env_stack[-1] if self.env_stack else ()) | set(self.active)
        candidates = [hint] if hint else []
        candidates += [h for h in _HINTS[depth % len(_HINTS):] + _HINTS if h not in candidates]
        for name in candidates:
            if name not in taken:
                return IndexVar(name, depth)
        name = candidates[0]
        while name in taken:
            name += "'"
        return IndexVar(name, depth)

    def generate(self, size: Size, depth: int, body_of, hint: str | None = None) -> Generate:
        """`generate size (\\i -> body_of(i))`, `i` a fresh index variable at `depth`."""
        var = self.fresh_index(depth, hint)
        self.active.append(var.name)
        try:
            body = body_of(var)
        finally:
            self.active.pop()
        return Generate(size, var, body)

    def element(self, array: Info, index: Size, node: ast.Node) -> Info:
        """What is known of `array[index]`."""
        if array.parts is not None:
            parts = tuple(self.element(p, index, node) for p in array.parts)
            return self.info(self.simplify(TupleShape(tuple(p.shape for p in parts)), node),
                             None, array.deps | index_vars(index), parts=parts)
        shape = self.simplify(Index(array.shape, index), node)
        return self.info(shape, Read(self.term(array), index), array.deps | index_vars(index))

    def project(self, value: Info, k: int, node: ast.Node) -> Info:
        if value.parts is not None and k < len(value.parts):
            return value.parts[k]
        return self.info(self.simplify(Project(value.shape, k), node), None, value.deps)

    def equivalent(self, a: Shape, b: Shape) -> bool:
        return equivalent(a, b)

    def node_deps(self, node: ast.Node, env: Mapping[str, Info]) -> frozenset[IndexVar]:
        """The index variables a node may depend on: those of the local names it uses."""
        out: frozenset[IndexVar] = frozenset()
        for name in self.free_names(node):
            if name in env:
                out |= env[name].deps
        return out

    def free_names(self, node: ast.Node) -> frozenset[str]:
        cached = self._free.get(node.id)
        if cached is None:
            cached = _free_names(node, self.free_names)
            self._free[node.id] = cached
        return cached

    # ------------------------------------------------------------------ binding

    def bind(self, pattern: ast.Pattern, value: Info, env: Mapping[str, Info], *,
             log: bool = False) -> dict[str, Info]:
        """`env` extended by the names `pattern` binds to `value` (tuple patterns project);
        the pattern nodes get their facts. Size names of annotations are bound too."""
        out = dict(env)
        self._bind(pattern, value, out, log, None)
        return out

    def _bind(self, pattern: ast.Pattern, value: Info, env: dict[str, Info], log: bool,
              inherited: ast.TypeExpr | None) -> None:
        annot = pattern.annot or inherited
        if isinstance(pattern, ast.PVar):
            if isinstance(annot, ast.TArray):
                value = self._declared(pattern, annot, value)
            if value.value is None and value.fn is None and value.parts is None:
                value = Info(value.shape, self.term(value), value.deps)
            env[pattern.name] = value
            self.facts.setdefault(pattern.id, value.shape)
            self.deps.setdefault(pattern.id, uniform_vars(value))
            if log:
                self.apply_rule("LET", pattern, value.shape, pattern,
                                "a let-bound name has its value's shape")
        elif isinstance(pattern, ast.PWild):            # a value dropped still has a shape
            self.facts.setdefault(pattern.id, value.shape)
        elif isinstance(pattern, ast.PTuple):
            self.facts.setdefault(pattern.id, value.shape)
            self.deps.setdefault(pattern.id, uniform_vars(value))
            elems = annot.elems if isinstance(annot, ast.TTuple) else ()
            for k, sub in enumerate(pattern.elems):
                self._bind(sub, self.project(value, k, pattern), env, log,
                           elems[k] if k < len(elems) else None)
        self._bind_sizes(annot, value, env)

    def _declared(self, pattern: ast.PVar, annot: ast.TArray, value: Info) -> Info:
        """DECL: a pattern annotated `[n][m]t` is checked at run time, so every row of its
        value has the length of the first row: `generate (length s) (\\i ->
        generate (length s[0]) (\\j -> s[i][j]))` (undeclared dimensions simplify away)."""
        sizes: list[object] = []
        while isinstance(annot, ast.TArray):
            sizes.append(annot.size)
            annot = annot.elem
        if all(size is None for size in sizes[1:]):
            return value
        s = value.shape

        def nest(k: int, row: Shape, first: Shape) -> Shape:
            if k == len(sizes):
                return row
            length = Length(first if k > 0 and sizes[k] is not None else row)
            return self.generate(length, len(self.active), lambda i: nest(
                k + 1, Index(row, i), Index(first, SizeLit(0))))

        shape = self.simplify(nest(0, s, s), pattern)
        if shape != s:
            self.apply_rule("DECL", pattern, shape, pattern,
                            "a size annotation is checked at run time: rows of declared length")
        return Info(shape, value.value, value.deps | index_vars(shape), value.fn, value.parts)

    def _bind_sizes(self, annot: ast.TypeExpr | None, value: Info,
                    env: dict[str, Info]) -> None:
        """Size names an annotation binds: `n` in `(xs: [n]t)` is `length xs`."""
        shape = value.shape
        while isinstance(annot, ast.TArray):
            if isinstance(annot.size, str) and annot.size not in env:
                env[annot.size] = self.info(SCALAR, Length(shape), value.deps)
            annot = annot.elem
            shape = Index(shape, SizeLit(0))

    # ------------------------------------------------------------------ application

    def apply(self, f: Info, args: list[Info], rtype: Type | None, node: ast.Node,
              depth: int) -> Info:
        """What is known of `f args`, applied `depth` generates deep."""
        fn = f.fn
        if isinstance(fn, Closure):
            given = fn.args + tuple(args)
            count = len(fn.lam.params)
            if len(given) < count:
                return Info(FUNCTION, None, f.deps, Closure(fn.lam, fn.env, given, fn.depth))
            env = dict(fn.env)
            for p, a in zip(fn.lam.params, given):
                env = self.bind(p, a, env)
            self.applications.append((fn, given[:count], depth))
            self.applied.add(fn.lam.id)
            out = self.expr(fn.lam.body, env, depth)
            rest = list(given[count:])
            return self.apply(out, rest, rtype, node, depth) if rest else out
        if isinstance(fn, Prim):
            given = fn.args + tuple(args)
            count = _arity(fn.name) if fn.kind == "builtin" else 2
            if len(given) < count:
                return Info(FUNCTION, None, f.deps, Prim(fn.kind, fn.name, given))
            rest = list(given[count:])
            from .shape_library import call_builtin, call_operator
            if fn.kind == "builtin":
                out = call_builtin(self, fn.name, list(given[:count]),
                                   None if rest else rtype, node, depth)
            elif fn.kind == "op":
                out = call_operator(self, fn.name, given[0], given[1], node, depth)
            else:
                out = call_operator(self, fn.name, given[1], given[0], node, depth)
            return self.apply(out, rest, rtype, node, depth) if rest else out
        deps = f.deps.union(*(a.deps for a in args))
        for a in args:
            self.touch(a, depth)
        name = fn.name if isinstance(fn, Opaque) else "?"
        given = (fn.args if isinstance(fn, Opaque) else ()) + tuple(args)
        if isinstance(rtype, Func):
            return Info(FUNCTION, None, deps, Opaque(name, given))
        if not has_arrays(rtype):
            return self.info(SCALAR, self.fresh_unknown(deps), deps)
        label = self.fresh_label(deps, rtype, node)
        return self.result("FALLBACK", label, node, deps,
                           f"`{name}` is not inlined: its result is unknown")

    def touch(self, f: Info, depth: int) -> None:
        """Analyse a function nothing applies here, with unknown arguments (for its facts)."""
        fn = f.fn
        if isinstance(fn, Closure) and fn.lam.id not in self.applied:
            params = fn.lam.params[len(fn.args):]
            args = [self.unknown_info(self.type_of(p), f.deps, p) for p in params]
            self.apply(f, args, None, fn.lam, depth)

    # ------------------------------------------------------------------ forms

    def run(self, program: ast.Program) -> "ShapeFacts":
        from .shape_exprs import analyse_form
        for form in program.forms:
            analyse_form(self, form)
            self.generalise()
            while self.pending:
                closure = self.pending.pop()
                if closure.lam.id not in self.applied:
                    self.touch(Info(FUNCTION, None, frozenset(), closure), closure.depth)
        return ShapeFacts(self.facts, self.deps)

    def expr(self, e: ast.Expr, env: Mapping[str, Info], depth: int) -> Info:
        from .shape_exprs import analyse_expr
        out = analyse_expr(self, e, env, depth)
        self.facts.setdefault(e.id, out.shape)
        self.deps.setdefault(e.id, uniform_vars(out))
        return out

    # ------------------------------------------------------------------ shared lambdas

    def generalise(self) -> None:
        """GENERALISE: a lambda applied in several contexts (a let-bound function called with
        arguments of other shapes or values, at another depth, or made twice with other free
        variables) has one set of node facts for all of them: its body is analysed again
        with arguments (and free variables) that cover every application: a shape or value
        kept where all agree, else a fresh label or unknown applied to the index variables of
        all of them. Applications at different depths keep the first one's levels."""
        while True:
            by_lambda: dict[int, list] = {}
            for app in self.applications:
                by_lambda.setdefault(app[0].lam.id, []).append(app)
            todo = [apps for lam, apps in by_lambda.items() if lam not in self.generalised
                    and any(not _same_context(apps[0], other) for other in apps[1:])]
            if not todo:
                break
            for apps in todo:
                self._generalise(apps)
        self.applications.clear()

    def _generalise(self, apps: list) -> None:
        fn, _, depth = apps[0]
        lam = fn.lam
        self.generalised.add(lam.id)
        for node in [n for p in lam.params for n in ast.walk(p)] + list(ast.walk(lam.body)):
            self.facts.pop(node.id, None)
            self.deps.pop(node.id, None)
        closures = list({id(a[0]): a[0] for a in apps}.values())
        env = dict(fn.env)
        params = {n for p in lam.params for n in ast.pattern_names(p)}
        for name in self.free_names(lam.body) - params:
            infos = [c.env.get(name) for c in closures]
            if all(i is not None for i in infos):
                env[name] = self._cover(infos, None, lam)
        for k, p in enumerate(lam.params):
            env = self.bind(p, self._cover([a[1][k] for a in apps], self.type_of(p), p), env)
        self.apply_rule("GENERALISE", lam, "its applications", lam,
                        f"applied in {len(apps)} contexts: one analysis that covers them all")
        self.expr(lam.body, env, depth)

    def _cover(self, infos: list[Info], type_: Type | None, node: ast.Node) -> Info:
        """What is known of a value that is one of `infos` (a generic argument)."""
        first = infos[0]
        if all(i is first for i in infos):
            return first
        deps = frozenset().union(*(i.deps for i in infos))
        if any(i.fn is not None for i in infos):
            same = all(i.fn is first.fn for i in infos)
            return first if same else Info(FUNCTION, None, deps, Opaque("?"))
        if all(i.parts is not None and len(i.parts) == len(first.parts) for i in infos):
            types = type_.elems if isinstance(type_, TupleType) else (None,) * len(first.parts)
            parts = tuple(self._cover([i.parts[k] for i in infos], types[k], node)
                          for k in range(len(first.parts)))
            return self.info(TupleShape(tuple(p.shape for p in parts)), None, deps, parts=parts)
        vars_ = frozenset().union(*(value_vars(i) | index_vars(i.shape) for i in infos))
        if all(self.equivalent(i.shape, first.shape) for i in infos):
            shape = first.shape
        elif isinstance(first.shape, Scalar):
            shape = SCALAR
        else:
            shape = self.fresh_label(vars_, type_ or shape_type(first.shape), node)
        value = first.value if all(i.value == first.value for i in infos) else \
            self.fresh_unknown(vars_)
        return self.info(shape, value, deps | vars_)

    # ------------------------------------------------------------------ trying again

    def mark(self) -> tuple:
        """A point to come back to (`rollback`): a loop body analysed with the wrong state is
        analysed again, and only the facts of the second analysis are kept."""
        return (self.ctx.log.mark(), len(self.facts), len(self.deps), len(self.pending),
                set(self.applied), len(self.applications))

    def rollback(self, mark: tuple) -> None:
        """Forget the facts, log steps and pending lambdas recorded since `mark` (facts are
        only ever added, so the first `n` keys of each table are those of the mark)."""
        steps, facts, deps, pending, applied, applications = mark
        self.ctx.log.rollback(steps)
        del self.applications[applications:]
        for table, keep in ((self.facts, facts), (self.deps, deps)):
            for key in list(table)[keep:]:
                del table[key]
        del self.pending[pending:]
        self.applied = set(applied)


class ShapeFacts(dict):
    """The facts of the `shape` stage: node id -> its `Shape`. `deps` gives, per expression and
    pattern node, the index variables its shape (an array) or value (a scalar: a size, a
    condition) may depend on (`uniform_vars`): the `regularity` stage's level."""

    def __init__(self, shapes: Mapping[int, Shape] = (),
                 deps: Mapping[int, frozenset[IndexVar]] | None = None):
        super().__init__(shapes)
        self.deps = dict(deps or {})


def uniform_vars(info: Info) -> frozenset[IndexVar]:
    """The index variables what `flatten` relies on being uniform may depend on: the shape of
    an array, the value of a scalar (a size, a condition), componentwise for a tuple (all it
    may depend on for a tuple whose parts are not known apart)."""
    if info.fn is not None or isinstance(info.shape, Function):
        return frozenset()
    if info.parts is not None:
        return frozenset().union(*(uniform_vars(p) for p in info.parts))
    if isinstance(info.shape, Scalar):
        return value_vars(info)
    if _has_scalar_part(info.shape):
        return info.deps | index_vars(info.shape)
    return index_vars(info.shape)


def _has_scalar_part(s: Shape) -> bool:
    """Whether a value of shape `s` is a tuple with a scalar component (outside arrays)."""
    if isinstance(s, TupleShape):
        return any(isinstance(p, Scalar) or _has_scalar_part(p) for p in s.parts)
    if isinstance(s, (Label, Cond, Project)):
        t = shape_type(s)
        return t is None or (isinstance(t, TupleType) and any(
            not has_arrays(e) or isinstance(e, TupleType) for e in t.elems))
    return False


def value_vars(info: Info) -> frozenset[IndexVar]:
    """The index variables the value of `info` may depend on: those its term mentions when it
    has one (a term mentions every index variable its value depends on: unknowns are applied
    to them), of its parts for a tuple built in view, else every one it may depend on."""
    if info.parts is not None:
        return frozenset().union(*(value_vars(p) for p in info.parts))
    if info.value is not None:
        return index_vars(info.value)
    return info.deps | index_vars(info.shape)


def _same_context(a: tuple, b: tuple) -> bool:
    """Whether two applications of a lambda give its body the same facts: the same closure,
    at the same depth, with arguments of the same shapes and values."""
    (fa, args_a, depth_a), (fb, args_b, depth_b) = a, b
    return fa is fb and depth_a == depth_b and len(args_a) == len(args_b) and all(
        _same_info(x, y) for x, y in zip(args_a, args_b))


def _same_info(x: Info, y: Info) -> bool:
    if x is y:
        return True
    if x.fn is not None or y.fn is not None:
        return x.fn is y.fn
    if x.parts is not None or y.parts is not None:
        return x.parts is not None and y.parts is not None and len(x.parts) == len(y.parts) \
            and all(_same_info(p, q) for p, q in zip(x.parts, y.parts))
    return equivalent(x.shape, y.shape) and x.value == y.value


def _sorted(deps: frozenset[IndexVar]) -> tuple[IndexVar, ...]:
    return tuple(sorted(deps, key=lambda v: (v.level, v.name)))


def _free_names(node: ast.Node, free) -> frozenset[str]:
    """The names a node uses and does not bind itself (`free` gives them for children)."""
    if isinstance(node, ast.Var):
        return frozenset((node.name,))
    bound: set[str] = set()
    if isinstance(node, ast.Lambda):
        bound = {n for p in node.params for n in ast.pattern_names(p)}
        return free(node.body) - bound
    if isinstance(node, ast.Let):
        return free(node.value) | (free(node.body) - set(ast.pattern_names(node.pattern)))
    if isinstance(node, ast.Loop):
        inner = set(ast.pattern_names(node.pattern))
        form = node.form
        outside = free(node.init)
        if isinstance(form, ast.ForRange):
            outside |= free(form.bound)
            inner.add(form.var)
        elif isinstance(form, ast.ForIn):
            outside |= free(form.array)
            inner |= set(ast.pattern_names(form.pattern))
        else:
            return outside | ((free(form.cond) | free(node.body)) - inner)
        return outside | (free(node.body) - inner)
    if isinstance(node, ast.Comprehension):
        # conservative: every name used anywhere inside (binders included) counts
        out: frozenset[str] = frozenset()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Var):
                out |= {sub.name}
        return out
    out = frozenset()
    for child in ast.children(node):
        if isinstance(child, (ast.PVar, ast.PWild, ast.PTuple, ast.TScalar, ast.TArray,
                              ast.TTuple, ast.TFunc, ast.TSeq)):
            continue
        out |= free(child)
    return out


def analyse(program: ast.Program, ctx: PassContext) -> ShapeFacts:
    """The shape facts of a program (what `SHAPE.run` gives)."""
    return ShapeAnalysis(ctx, program).run(program)


class ShapePass:
    name = "shape"
    transforms = False

    def run(self, program: ast.Program, ctx: PassContext) -> PassOutput:
        return PassOutput(program, analyse(program, ctx))


SHAPE = ShapePass()
