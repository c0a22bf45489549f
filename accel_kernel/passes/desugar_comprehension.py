"""Comprehensions to `map`, `filter`, `expand`, `flatten` and `zip` (part of `desugar`).

The translation follows Elsman & Larsen, Fig. 2. The qualifiers of a branch are translated left
to right into the *accumulated array*: one element per binding of the variables seen so far,
in the order of the list-comprehension semantics. Its element is a left-nested tuple of
*components*, one per generator or `let` (`((x, y), z)` after three generators), which every
generated lambda matches with the pattern `P` and rebuilds with the expression `E(P)`:

- the first generator `p <- e` is `e` itself (`first-generator`); a branch that starts with a
  guard or a `let` starts from the one-element array `[0]` (`start`);
- a later generator `p <- e`: when `Size e` (its length) and `Fetch e i` (its element `i`) are
  defined (`iota n`, a range with a literal step, `map f e'` with `f` a value and `e'` one of
  these, an array that does not mention the bound variables):
  - if `Size e` mentions no bound variable, a regular map nest (their §4.1, `regular-nest`):
    `flatten (map (\\P -> map (\\v -> (E(P), v)) e) acc)`;
  - otherwise `expand (\\P -> Size e) (\\P i -> (E(P), Fetch e i)) acc` (`expand`);
  when they are not defined (`filter p xs`, a row of an array bound before), the same nested
  map as the regular nest, correct but irregular, with the reason logged (`nested-fallback`);
- a guard `c` is `filter (\\P -> c) acc` (`guard`); a run of guards is one filter by all their
  conditions, `filter (\\P -> c1 && c2) acc` (`guards`): `&&` evaluates `c2` only where `c1`
  holds, as the second filter did, and one mask is what fusion compacts in one pass;
- a guard `y < e` right after `y <- [a..<b]` whose size depends on the bound variables, `e` a
  variable or a literal not mentioning `y`: the range stops at `min b e` and the guard goes
  (`range-guard`): the same bindings, and the ones the guard would drop are never made;
- `let p = e` is `map (\\P -> (E(P), e)) acc` (`let`); a function-valued `let` cannot be an
  array element, so it is bound again inside every later lambda instead (`let-function`);
- zipped branches `[e | qs1 | qs2]` zip their arrays with `zip`/`zip3` (`zip`): unequal lengths
  raise the SizeError of `zip` at the comprehension, as the interpreter does;
- the body is `map (\\P -> body) acc` (`body`), left out when it would be the identity.

A name bound twice (by two qualifiers, or by two zipped branches) gets a fresh name at the
earlier binder, so that `P` binds every name once and the later binding wins.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..ir.core import free_vars, is_literal_step
from ..lang import ast
from ..lang.printer import print_expr, print_pattern
from ..lang.types import contains_func
from .desugar_build import Scope


@dataclass
class Emitted:
    """A node used by several generated lambdas: the first use keeps its ids."""
    node: ast.Node
    used: bool = False

    def take(self, builder) -> ast.Node:
        if self.used:
            return builder.copy(self.node)
        self.used = True
        return self.node


@dataclass
class Branch:
    """The translation state of one qualifier list."""
    scope: Scope
    acc: ast.Expr | None = None
    comps: list[Emitted] = field(default_factory=list)
    pending: list[tuple[Emitted, Emitted]] = field(default_factory=list)
    bound: set[str] = field(default_factory=set)      # source names bound so far
    guarded: tuple[ast.Expr, ast.Expr] | None = None    # after a guard: its condition (all
    #                                         the conditions of a run of guards) and the array
    #                                         before the run


@dataclass
class Sized:
    """`Size e` and `Fetch e i` of a generator's array, when defined."""
    depends: bool                                       # Size mentions a bound variable
    size: Callable[[], ast.Expr] | None = None
    fetch: Callable[[ast.Expr], ast.Expr] | None = None


def translate(d, e: ast.Comprehension, scope: Scope) -> ast.Expr:
    names = {n for branch in e.branches for q in branch if not isinstance(q, ast.Guard)
             for n in ast.pattern_names(q.pattern)}
    return d.with_binder(names, lambda renames: _Translation(d, e, renames).run(scope), e)


class _Translation:
    def __init__(self, d, e: ast.Comprehension, renames):
        self.d, self.b, self.e, self.renames = d, d.b, e, renames

    def run(self, scope: Scope) -> ast.Expr:
        e = self.e
        self.scope = scope      # where the generated calls are, outside every lambda
        branches = []
        for j, quals in enumerate(e.branches):
            later_branches = {n for qs in e.branches[j + 1:] for q in qs
                              if not isinstance(q, ast.Guard) for n in ast.pattern_names(q.pattern)}
            br = Branch(scope)
            absorbed = None
            for k, q in enumerate(quals):
                if q is absorbed:            # a bound of the range before it (`range-guard`)
                    continue
                later = later_branches | {n for q2 in quals[k + 1:] if not isinstance(q2, ast.Guard)
                                          for n in ast.pattern_names(q2.pattern)}
                following = quals[k + 1] if k + 1 < len(quals) else None
                absorbed = self.qualifier(br, q, later, following)
            branches.append(br)
        if len(branches) == 1:
            br = branches[0]
            acc, pattern, pending = br.acc, self.pattern(br), br.pending
            body_scope = br.scope
        else:
            acc, pattern = self.zip(branches)
            pending = [p for br in branches for p in br.pending]
            body_scope = scope
            for br in branches:
                body_scope = body_scope.extend({n: br.scope.names[n] for n in br.bound})
        log = self.d.ctx.log
        with log.apply("comprehension", e) as whole, log.apply("body", e.body) as rewrite:
            body = self.d.expr(e.body, body_scope)
            if len(branches) == 1 and not pending and self.is_identity(pattern, body):
                rewrite.after = acc
            else:
                fn = self.b.lam([pattern], self.wrap(pending, body), e.span)
                rewrite.after = self.b.apply(self.d.library("map", scope, e.span), [fn, acc],
                                             e.span)
            whole.after = rewrite.after
        return whole.after

    # ------------------------------------------------------------------ qualifiers

    def qualifier(self, br: Branch, q: ast.Qualifier, later: set[str],
                  following: ast.Qualifier | None = None) -> ast.Guard | None:
        """Translate `q`; the guard after it when `q` took it in (`range-guard`)."""
        span = q.span
        log = self.d.ctx.log
        if isinstance(q, ast.Generator) and br.acc is None:
            with log.apply("first-generator", _show(q), node=q,
                           note="the first generator's array is the array of bindings") as rewrite:
                br.acc = rewrite.after = self.d.expr(q.source, br.scope)
                self.bind(br, q.pattern, later)
            return None
        if br.acc is None:
            self.start(br, span)
        if isinstance(q, ast.Guard) and br.guarded is not None:
            with log.apply("guards", _show(q), node=q,
                           note="a guard right after a guard: one filter by both conditions "
                                "(`&&`: the second is still only evaluated where the first "
                                "holds), so fusion has one mask to compact by") as rewrite:
                first, before = br.guarded
                cond = self.b.new(ast.BinOp, "&&", first, self.d.expr(q.cond, br.scope),
                                  span=span)
                fn = self.lam(br, [], cond, span)
                br.acc = rewrite.after = self.b.apply(
                    self.d.library("filter", self.scope, span), [fn, before], span)
                br.guarded = (cond, before)
            return None
        before, br.guarded = br.acc, None
        if isinstance(q, ast.Guard):
            with log.apply("guard", _show(q), node=q) as rewrite:
                cond = self.d.expr(q.cond, br.scope)
                fn = self.lam(br, [], cond, span)
                br.acc = rewrite.after = self.b.apply(
                    self.d.library("filter", self.scope, span), [fn, br.acc], span)
                br.guarded = (cond, before)
        elif isinstance(q, ast.LetQual):
            self.let(br, q, later)
        else:
            return self.generator(br, q, later, following)
        return None

    def start(self, br: Branch, span) -> None:
        with self.d.ctx.log.apply("start", "", note="no generator comes first: one binding to "
                                                    "start from") as rewrite:
            br.acc = rewrite.after = self.b.new(ast.ArrayLit, (self.b.lit(0, span),), span=span)
            unit = self.b.pvar(self.d.fresh("u"), span)
            br.comps.append(Emitted(unit))

    def let(self, br: Branch, q: ast.LetQual, later: set[str]) -> None:
        log = self.d.ctx.log
        t = self.b.type_of(q.value)
        if t is None or contains_func(t):
            # The types of an inlined def of an earlier cell are not known here: binding the
            # value again in each later lambda is right whatever its type.
            why = ("a function cannot be an array element" if t is not None else
                   "its type is not known here (a def of an earlier cell)")
            with log.apply("let-function", _show(q), node=q,
                           note=f"{why}: it is bound again in every later lambda"):
                value = self.d.expr(q.value, br.scope)
                pattern, br.scope = self.d.bind_pattern(q.pattern, br.scope, "comp",
                                                        self.renames, fresh=later)
                br.pending.append((Emitted(pattern), Emitted(value)))
                br.bound |= set(ast.pattern_names(q.pattern))
            return
        with log.apply("let", _show(q), node=q) as rewrite:
            value = self.d.expr(q.value, br.scope)
            span = q.span
            element = self.b.tuple_of([self.rebuild(br, span), value], span)
            fn = self.lam(br, [], element, span)
            br.acc = rewrite.after = self.b.apply(self.d.library("map", self.scope, span),
                                                  [fn, br.acc], span)
            self.bind(br, q.pattern, later)

    def generator(self, br: Branch, q: ast.Generator, later: set[str],
                  following: ast.Qualifier | None) -> ast.Guard | None:
        sized = self.size_of(q.source, br)
        source_text = print_expr(q.source)
        limit = self.range_limit(q, following, br) if isinstance(sized, Sized) \
            and sized.depends and isinstance(q.source, ast.Range) else None
        if limit is not None:
            with self.d.ctx.log.apply(
                    "range-guard", _show(following), node=following,
                    note=f"`{_show(following)}` right after `{_show(q)}`: the range stops "
                         f"at `min {_operand(q.source.end)} {_operand(limit)}` instead, so "
                         "the elements the guard drops are never made") as rewrite:
                sized = self.range_sized(q.source, br, limit)
                rewrite.after = "(a bound of the range)"
        if isinstance(sized, Sized) and sized.depends:
            rule, note = "expand", f"Size of `{source_text}` depends on the bound variables"
        elif isinstance(sized, Sized):
            rule = "regular-nest"
            note = (f"Size of `{source_text}` does not depend on "
                    f"{_names(br.bound)}: a regular map nest, no expand")
        else:
            rule = "nested-fallback"
            note = (f"Size of `{source_text}` is undefined: {sized}; translated as a nested "
                    f"map (flatten of a map of maps), correct but irregular")
        with self.d.ctx.log.apply(rule, _show(q), node=q, note=note) as rewrite:
            if rule == "expand":
                br.acc = self.expand(br, q, sized)
            else:
                br.acc = self.nest(br, q)
            rewrite.after = br.acc
            self.bind(br, q.pattern, later)
        return following if limit is not None else None

    def range_limit(self, q: ast.Generator, following: ast.Qualifier | None,
                    br: Branch) -> ast.Expr | None:
        """`e` of a guard `x < e` right after `x <- [a..<b]` (step 1) whose `e` does not
        mention `x` and cannot fail (a variable or a literal: evaluated once per range
        instead of once per element, even for an empty range), when `min` is the
        library's: the range can stop at `min b e` (`range-guard`)."""
        source = q.source
        if not (isinstance(source, ast.Range) and not source.inclusive and source.step is None
                and isinstance(q.pattern, ast.PVar) and q.pattern.annot is None
                and isinstance(following, ast.Guard)):
            return None
        cond = following.cond
        if not (isinstance(cond, ast.BinOp) and cond.op == "<"
                and isinstance(cond.left, ast.Var) and cond.left.name == q.pattern.name
                and q.pattern.name not in free_vars(cond.right)
                and self.d.is_trivial(cond.right)):
            return None
        if "min" in self.d.redefined or "min" in br.scope.outs or "min" in self.scope.outs:
            return None
        return cond.right

    def expand(self, br: Branch, q: ast.Generator, sized: Sized) -> ast.Expr:
        """`expand` of the bindings so far: its size depends on them."""
        span = q.span
        i = self.d.fresh("i")
        size_fn = self.lam(br, [], sized.size(), span)
        element = self.b.tuple_of([self.rebuild(br, span), sized.fetch(self.b.var(i, span))],
                                  span)
        get_fn = self.lam(br, [self.b.pvar(i, span)], element, span)
        # The span of the source: a negative `iota` size is reported where it was written.
        where = q.source.span
        return self.b.apply(self.d.library("expand", self.scope, where),
                            [size_fn, get_fn, br.acc], where)

    def nest(self, br: Branch, q: ast.Generator) -> ast.Expr:
        """`flatten` of a map over the bindings so far of a map over the source."""
        span = q.span
        source = self.d.expr(q.source, br.scope)
        v = self.d.fresh("v")
        pair = self.b.tuple_of([self.rebuild(br, span), self.b.var(v, span)], span)
        inner = self.b.apply(self.d.library("map", br.scope, span),
                             [self.b.lam([self.b.pvar(v, span)], pair, span), source], span)
        outer = self.b.apply(self.d.library("map", self.scope, span),
                             [self.lam(br, [], inner, span), br.acc], span)
        return self.b.apply(self.d.library("flatten", self.scope, span), [outer], span)

    def bind(self, br: Branch, pattern: ast.Pattern, later: set[str]) -> None:
        out, br.scope = self.d.bind_pattern(pattern, br.scope, "comp", self.renames, fresh=later)
        br.comps.append(Emitted(out))
        br.bound |= set(ast.pattern_names(pattern))

    # ------------------------------------------------------------------ Size and Fetch

    def size_of(self, source: ast.Expr, br: Branch) -> Sized | str:
        """Size and Fetch of a generator's array, or why they are undefined."""
        if not (free_vars(source) & br.bound):
            return Sized(depends=False)
        d, scope = self.d, br.scope
        if self.is_library_call(source, "iota", 1, scope):
            n = source.args[0]
            return Sized(True, lambda: d.expr(n, scope), lambda i: i)
        if isinstance(source, ast.Range):
            if not is_literal_step(source.step):
                return ("its step is not a literal, and only the range itself may raise "
                        "\"range step is 0\"")
            return self.range_sized(source, br)
        if self.is_library_call(source, "map", 2, scope):
            f, inner = source.args
            if not self.is_value(f, scope):
                return "the function given to `map` is not a value (evaluating it could fail)"
            sub = self.size_of(inner, br)
            if not isinstance(sub, Sized) or not sub.depends:
                return sub
            return Sized(True, sub.size,
                         lambda i: self.apply_value(d.expr(f, scope), sub.fetch(i), source.span))
        if isinstance(source, ast.Var) and source.name in br.bound:
            return f"`{source.name}` is an array bound by the comprehension itself"
        if isinstance(source, ast.Apply) and isinstance(source.fn, ast.Var) and \
                source.fn.name in ("filter", "partition"):
            return f"the length of a `{source.fn.name}` result is known only once it has run"
        return ("it is not `iota n`, a range, `map f e` of one of those, or an array that does "
                f"not mention {_names(br.bound)}")

    def range_sized(self, source: ast.Range, br: Branch,
                    limit: ast.Expr | None = None) -> Sized:
        """Size and Fetch of a range; with `limit`, of the range stopped at `min end
        limit` (`range-guard`)."""
        d, span = self.d, source.span
        step = 1 if source.step is None else int(source.step.value)
        parts: list[ast.Expr] = []

        def bounds() -> list[ast.Expr]:
            if not parts:
                end = d.expr(source.end, br.scope)
                if limit is not None:
                    end = self.b.apply(d.library("min", br.scope, span),
                                       [end, d.expr(limit, br.scope)], span)
                parts.extend([d.expr(source.start, br.scope), end])
            return parts

        def size() -> ast.Expr:
            start, end = bounds()
            if d.is_trivial(start) or d.is_trivial(end):
                return d.range_count(start, end, step, source.inclusive, span, br.scope)
            lo = d.fresh("lo")     # evaluate the start first, as the range does
            count = d.range_count(self.b.var(lo, span), end, step, source.inclusive, span,
                                  br.scope)
            return self.b.let(self.b.pvar(lo, span), start, count, span)

        def fetch(i: ast.Expr) -> ast.Expr:
            return d.range_element(self.b.copy(bounds()[0]), i, step, span)

        return Sized(True, size, fetch)

    def is_library_call(self, e: ast.Expr, name: str, nargs: int, scope: Scope) -> bool:
        return (isinstance(e, ast.Apply) and isinstance(e.fn, ast.Var) and e.fn.name == name
                and len(e.args) == nargs and scope.get(name) is None
                and name not in self.d.globals_so_far)

    def is_value(self, f: ast.Expr, scope: Scope) -> bool:
        """Evaluating `f` cannot fail, so it may be evaluated once per element instead."""
        if isinstance(f, (ast.Lambda, ast.OpFunc, ast.Lit)):
            return True
        if isinstance(f, ast.Var):
            defn = self.d.defs.get(f.name)
            return scope.get(f.name) is not None or defn is None or bool(defn.params)
        if isinstance(f, (ast.LeftSection, ast.RightSection)):
            operand = f.left if isinstance(f, ast.LeftSection) else f.right
            return isinstance(operand, (ast.Lit, ast.Var)) and self.is_value(operand, scope)
        return False

    def apply_value(self, fn: ast.Expr, arg: ast.Expr, span) -> ast.Expr:
        """`fn arg`, as a `let` when `fn` is a lambda of one parameter."""
        if isinstance(fn, ast.Lambda) and len(fn.params) == 1:
            return self.b.let(fn.params[0], arg, fn.body, fn.span)
        return self.b.apply(fn, [arg], span)

    # ------------------------------------------------------------------ zip and lambdas

    def zip(self, branches: list[Branch]) -> tuple[ast.Expr, ast.Pattern]:
        span = self.e.span      # a length mismatch is reported at the comprehension
        arrays = [br.acc for br in branches]
        patterns = [self.pattern(br) for br in branches]
        scope = self.scope

        def zipped(arrays, patterns):
            if len(arrays) == 3 or len(arrays) == 2:
                name = "zip" if len(arrays) == 2 else "zip3"
                return (self.b.apply(self.d.library(name, scope, span), arrays, span),
                        self.b.new(ast.PTuple, tuple(patterns), span=span))
            rest, rest_pattern = zipped(arrays[1:], patterns[1:])
            return zipped([arrays[0], rest], [patterns[0], rest_pattern])

        with self.d.ctx.log.apply("zip", _show_branches(self.e), node=self.e,
                                  note="zipped branches: `zip` raises the SizeError when their "
                                       "lengths differ") as rewrite:
            rewrite.after, pattern = zipped(arrays, patterns)
        return rewrite.after, pattern

    def pattern(self, br: Branch) -> ast.Pattern:
        """`P`: the left-nested tuple pattern of the components."""
        comps = [c.take(self.b) for c in br.comps]
        out = comps[0]
        for c in comps[1:]:
            out = self.b.new(ast.PTuple, (out, c), span=c.span)
        return out

    def rebuild(self, br: Branch, span) -> ast.Expr:
        """`E(P)`: the element rebuilt from the components' variables."""
        comps = [self.b.rebuild(c.node, span) for c in br.comps]
        out = comps[0]
        for c in comps[1:]:
            out = self.b.new(ast.TupleLit, (out, c), span=span)
        return out

    def lam(self, br: Branch, extra: list[ast.Pattern], body: ast.Expr, span) -> ast.Lambda:
        """`\\P extra -> body`, with the function-valued `let`s bound again inside."""
        return self.b.lam([self.pattern(br), *extra], self.wrap(br.pending, body), span)

    def wrap(self, pending: list[tuple[Emitted, Emitted]], body: ast.Expr) -> ast.Expr:
        for pattern, value in reversed(pending):
            p = pattern.take(self.b)
            body = self.b.let(p, value.take(self.b), body, p.span)
        return body

    def is_identity(self, pattern: ast.Pattern, body: ast.Expr) -> bool:
        """Whether `\\pattern -> body` is the identity (no annotation to check either)."""
        if any(isinstance(n, (ast.PVar, ast.PTuple)) and n.annot is not None
               for n in ast.walk(pattern)):
            return False
        return body == self.b.rebuild(pattern, None)


def _show(q: ast.Qualifier) -> str:
    if isinstance(q, ast.Generator):
        return f"{print_pattern(q.pattern)} <- {print_expr(q.source)}"
    if isinstance(q, ast.LetQual):
        return f"let {print_pattern(q.pattern)} = {print_expr(q.value)}"
    return print_expr(q.cond)


def _show_branches(e: ast.Comprehension) -> str:
    return " | ".join(", ".join(_show(q) for q in branch) for branch in e.branches)


def _names(names: set[str]) -> str:
    return ", ".join(f"`{n}`" for n in sorted(names)) or "the bound variables"


def _operand(e: ast.Expr) -> str:
    """`e` printed as the argument of a call (in parentheses unless a name or a literal)."""
    text = print_expr(e)
    return text if isinstance(e, (ast.Var, ast.Lit)) else f"({text})"
