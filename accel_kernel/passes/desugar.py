"""The `desugar` stage: the typed AST in, the core IR (`ir/core.py`) out.

Rules (each logged under its name; docs/stages.md, "desugar", says exactly what each gives):

- comprehensions (`desugar_comprehension`): `first-generator`, `start`, `expand`,
  `regular-nest`, `nested-fallback`, `guard`, `let`, `let-function`, `zip`, `body` for the
  parts and `comprehension` for the whole (Elsman & Larsen, Fig. 2 and §4.1);
- `range` (`[a..<b by s]` with a literal step to `map` over `iota`), `range-kept` (any other
  step: the `Range` stays, it alone raises "range step is 0" where the user expects it);
- `left-section`, `right-section` (to lambdas), `cond` (`cond c a b` to `if`);
- `inline` (`desugar_inline`): calls of global defs, the prelude's and the user's;
  `inline-skipped` once the inlining budget is spent;
- `rename`: a local binder renamed so that generated code is not captured by it;
- `not-desugared`: a form left as it is because it redefines a library function that
  desugaring needs (`map`, `iota`, ...).

Nodes kept from the input keep their ids; every node made here gets a fresh id and the span
of the source node it comes from. A program with nothing to desugar comes back equal, with no
steps logged. The pass reads nothing but its arguments.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from ..ir.core import is_literal_step, pattern_sizes
from ..lang import ast
from ..lang.builtins import BUILTINS
from ..lang.typecheck import bound_names
from ..lang.types import I64
from .desugar_binders import Binders, Renames
from .desugar_build import (EMPTY, LIBRARY_NAMES, Binding, Builder, Redefined, Scope, Shadowed,
                            is_int_lit, map_children)
from .desugar_comprehension import translate
from .desugar_inline import inline
from .base import PassContext, PassOutput


class Desugarer(Binders):
    def __init__(self, ctx: PassContext, program: ast.Program):
        self.ctx = ctx
        self.b = Builder(ctx)
        self.inline_defs = ctx.options.inline_prelude
        self.defs: dict[str, ast.Def] = dict(ctx.definitions)
        self.globals_so_far: set[str] = set(ctx.env.schemes)
        program_names = {n for f in program.forms for n in bound_names(f)}
        self.redefined = (set(ctx.env.schemes) | program_names) & LIBRARY_NAMES
        self.avoid: set[str] = set(BUILTINS) | set(ctx.env.schemes) | _all_names(program)
        self._rules: dict[type, Callable[[ast.Node, Scope], ast.Expr]] = {
            ast.Var: self._var, ast.Apply: self._apply, ast.Lambda: self._lambda,
            ast.Let: self._let, ast.Loop: self._loop, ast.Range: self._range,
            ast.LeftSection: self._section, ast.RightSection: self._section,
            ast.Ascribe: self._ascribe, ast.Comprehension: self._comprehension,
        }

    # ------------------------------------------------------------------ program and forms

    def program(self, program: ast.Program) -> ast.Program:
        forms = []
        for form in program.forms:
            mark = self.ctx.log.mark()
            try:
                new = self.form(form)
            except (Redefined, Shadowed) as err:
                # Keeping the form is always correct; desugaring it could not be.
                self.ctx.log.rollback(mark)
                why = (f"`{err.name}` is redefined by the program, so the code desugaring "
                       f"generates cannot call the library's `{err.name}`"
                       if isinstance(err, Redefined) else
                       f"internal: no binder could be renamed to free `{err.name}`")
                with self.ctx.log.apply("not-desugared", form,
                                        note=why + "; the form is kept") as rewrite:
                    rewrite.after = new = form
            forms.append(new)
            for name in bound_names(form):
                self.globals_so_far.add(name)
                if isinstance(form, ast.Def):
                    self.defs[name] = form
                else:
                    self.defs.pop(name, None)     # a global let hides a def of that name
        if all(a is b for a, b in zip(forms, program.forms)):
            return program
        return replace(program, forms=tuple(forms))

    def global_sizes_renamed(self, p: ast.Pattern) -> ast.Pattern:
        """A global let's pattern with its size names that are globals renamed: a size name
        of an annotation binds a new size, it never refers to a global (the interpreter)."""
        clashing = {s: self.fresh(s) for s in pattern_sizes(p) if s in self.globals_so_far}
        if not clashing:
            return p

        def visit(q: ast.Pattern) -> ast.Pattern:
            annot = self.rename_type(q.annot, EMPTY, clashing)
            if isinstance(q, ast.PTuple):
                return replace(q, elems=tuple(visit(x) for x in q.elems), annot=annot)
            return q if annot is q.annot else replace(q, annot=annot)
        return visit(p)

    def form(self, form: ast.TopForm) -> ast.TopForm:
        if isinstance(form, ast.GlobalLet):
            value = self.expr(form.value, EMPTY)
            pattern = self.global_sizes_renamed(form.pattern)
            if value is form.value and pattern is form.pattern:
                return form
            return replace(form, value=value, pattern=pattern)
        if isinstance(form, ast.TopExpr):
            expr = self.expr(form.expr, EMPTY)
            return form if expr is form.expr else replace(form, expr=expr)

        def attempt(renames: Renames) -> ast.Def:
            params, scope = self.bind_all(form.params, EMPTY, "param", renames)
            body = self.expr(form.body, scope)
            result = self.rename_type(form.result, scope)
            if body is form.body and result is form.result and _same(params, form.params):
                return form
            return replace(form, params=tuple(params), body=body, result=result)

        return self.with_binder(self.binder_names(form.params, EMPTY), attempt, form)

    # ------------------------------------------------------------------ expressions

    def expr(self, e: ast.Expr, scope: Scope) -> ast.Expr:
        rule = self._rules.get(type(e))
        if rule is not None:
            return rule(e, scope)
        return map_children(e, lambda child: self.expr(child, scope))

    def _var(self, e: ast.Var, scope: Scope) -> ast.Expr:
        binding = scope.get(e.name)
        if binding is None:
            return self.global_var(e, e.name, scope)
        if binding.out is not None:
            return e if binding.out == e.name else replace(e, name=binding.out)
        if binding.literal is not None:
            return self.b.copy(binding.literal)
        return self.global_var(e, binding.global_name, scope)

    def global_var(self, e: ast.Var, name: str, scope: Scope) -> ast.Expr:
        if self.inline_defs and name in self.defs:
            return inline(self, self.defs[name], e, (), scope)
        if name in scope.outs:
            raise Shadowed(name)
        return e if e.name == name else replace(e, name=name)

    def _apply(self, e: ast.Apply, scope: Scope) -> ast.Expr:
        if isinstance(e.fn, ast.Var):
            binding = scope.get(e.fn.name)
            name = e.fn.name if binding is None else binding.global_name
            if (binding is None and name == "cond" and len(e.args) == 3
                    and name not in self.globals_so_far):
                return self._cond(e, scope)
            if name is not None and self.inline_defs and name in self.defs:
                return inline(self, self.defs[name], e, e.args, scope)
        return map_children(e, lambda child: self.expr(child, scope))

    def _cond(self, e: ast.Apply, scope: Scope) -> ast.Expr:
        with self.ctx.log.apply("cond", e, note="`cond c a b` evaluates only the chosen "
                                                "branch: an `if`") as rewrite:
            cond, then, else_ = (self.expr(a, scope) for a in e.args)
            rewrite.after = self.b.new(ast.If, cond, then, else_, span=e.span)
        return rewrite.after

    def _ascribe(self, e: ast.Ascribe, scope: Scope) -> ast.Expr:
        inner = self.expr(e.expr, scope)
        t = self.rename_type(e.type, scope)
        return e if inner is e.expr and t is e.type else replace(e, expr=inner, type=t)

    def _lambda(self, e: ast.Lambda, scope: Scope) -> ast.Expr:
        def attempt(renames: Renames) -> ast.Expr:
            params, inner = self.bind_all(e.params, scope, "param", renames)
            body = self.expr(e.body, inner)
            if body is e.body and _same(params, e.params):
                return e
            return replace(e, params=tuple(params), body=body)

        return self.with_binder(self.binder_names(e.params, scope), attempt, e)

    def _let(self, e: ast.Let, scope: Scope) -> ast.Expr:
        value = self.expr(e.value, scope)

        def attempt(renames: Renames) -> ast.Expr:
            pattern, inner = self.bind_pattern(e.pattern, scope, "param", renames)
            body = self.expr(e.body, inner)
            if value is e.value and pattern is e.pattern and body is e.body:
                return e
            return replace(e, pattern=pattern, value=value, body=body)

        return self.with_binder(self.binder_names([e.pattern], scope), attempt, e)

    def _loop(self, e: ast.Loop, scope: Scope) -> ast.Expr:
        init = self.expr(e.init, scope)
        form = e.form
        outside = None
        if isinstance(form, ast.ForRange):
            outside = self.expr(form.bound, scope)
        elif isinstance(form, ast.ForIn):
            outside = self.expr(form.array, scope)
        patterns = [e.pattern] + ([form.pattern] if isinstance(form, ast.ForIn) else [])
        names = {n for p in patterns for n in ast.pattern_names(p)}
        if isinstance(form, ast.ForRange):
            names.add(form.var)

        def attempt(renames: Renames) -> ast.Expr:
            pattern, inner = self.bind_pattern(e.pattern, scope, "loop", renames, names)
            if isinstance(form, ast.ForRange):
                var = self.bind_name(form.var, scope, renames, scope.taken(names))
                inner = inner.extend({form.var: Binding(var, I64)})
                new_form = (form if var == form.var and outside is form.bound
                            else replace(form, var=var, bound=outside))
            elif isinstance(form, ast.ForIn):
                fpattern, inner = self.bind_pattern(form.pattern, inner, "loop", renames, names)
                new_form = (form if fpattern is form.pattern and outside is form.array
                            else replace(form, pattern=fpattern, array=outside))
            else:
                cond = self.expr(form.cond, inner)
                new_form = form if cond is form.cond else replace(form, cond=cond)
            body = self.expr(e.body, inner)
            if all(a is b for a, b in ((init, e.init), (pattern, e.pattern),
                                       (new_form, e.form), (body, e.body))):
                return e
            return replace(e, pattern=pattern, init=init, form=new_form, body=body)

        return self.with_binder(names, attempt, e)

    def _comprehension(self, e: ast.Comprehension, scope: Scope) -> ast.Expr:
        return translate(self, e, scope)

    # ------------------------------------------------------------------ sections

    def _section(self, e: ast.LeftSection | ast.RightSection, scope: Scope) -> ast.Expr:
        left = isinstance(e, ast.LeftSection)
        with self.ctx.log.apply("left-section" if left else "right-section", e) as rewrite:
            rewrite.after = self._section_lambda(e, left, scope)
        return rewrite.after

    def _section_lambda(self, e: ast.LeftSection | ast.RightSection, left: bool,
                        scope: Scope) -> ast.Expr:
        operand = self.expr(e.left if left else e.right, scope)
        span = e.span
        # The interpreter evaluates the operand once, when the section is made: a lambda
        # keeps that by binding it first, unless it is a variable or a literal.
        bound = None
        if not self.is_trivial(operand):
            bound = self.fresh("l" if left else "r")
            operand_ref: ast.Expr = self.b.var(bound, span)
        else:
            operand_ref = operand
        param = self.fresh("y" if left else "x")
        arg = self.b.var(param, span)
        body = self.b.binop(e.op, operand_ref, arg, span) if left else \
            self.b.binop(e.op, arg, operand_ref, span)
        out: ast.Expr = self.b.lam([self.b.pvar(param, span)], body, span)
        if bound is not None:
            out = self.b.let(self.b.pvar(bound, span), operand, out, span)
        return out

    # ------------------------------------------------------------------ ranges

    def _range(self, e: ast.Range, scope: Scope) -> ast.Expr:
        if not is_literal_step(e.step):
            with self.ctx.log.apply("range-kept", e, note=(
                    "the step is not a literal: the range stays, the only node that raises "
                    "\"range step is 0\" at this position")) as rewrite:
                start, end = self.expr(e.start, scope), self.expr(e.end, scope)
                step = self.expr(e.step, scope)
                same = start is e.start and end is e.end and step is e.step
                rewrite.after = e if same else replace(e, start=start, end=end, step=step)
            return rewrite.after
        with self.ctx.log.apply("range", e) as rewrite:
            rewrite.after = self._literal_range(e, scope)
        return rewrite.after

    def _literal_range(self, e: ast.Range, scope: Scope) -> ast.Expr:
        """`iota` of the count, mapped to the elements unless they are `0, 1, ...`."""
        start, end = self.expr(e.start, scope), self.expr(e.end, scope)
        step_value = 1 if e.step is None else int(e.step.value)
        span = e.span
        lets = []
        if not self.is_trivial(start):
            lo = self.fresh("lo")
            lets.append((lo, start))
            first, again = self.b.var(lo, span), self.b.var(lo, span)
        else:
            first, again = start, self.b.copy(start)
        count = self.range_count(first, end, step_value, e.inclusive, span, scope)
        iota = self.b.apply(self.library("iota", scope, span), [count], span)
        if is_int_lit(again) and again.value == 0 and step_value == 1:
            out: ast.Expr = iota
        else:
            i = self.fresh("i")
            element = self.range_element(again, self.b.var(i, span), step_value, span)
            fn = self.b.lam([self.b.pvar(i, span)], element, span)
            out = self.b.apply(self.library("map", scope, span), [fn, iota], span)
        for name, value in reversed(lets):
            out = self.b.let(self.b.pvar(name, span), value, out, span)
        return out

    def range_count(self, start: ast.Expr, end: ast.Expr, step: int, inclusive: bool,
                    span, scope: Scope) -> ast.Expr:
        """The number of elements, never negative: `max 0 ((end - start + s - 1) / s)`."""
        if is_int_lit(start) and is_int_lit(end):
            stop = end.value + ((1 if step > 0 else -1) if inclusive else 0)
            return self.b.lit(len(range(start.value, stop, step)), span)
        k = abs(step)
        extra = k if inclusive else k - 1
        high, low = (end, start) if step > 0 else (start, end)
        if is_int_lit(low):       # fold `n - 1 + 1` into `n`
            n = self.b.add(high, extra - low.value, span)
        else:
            n = self.b.add(self.b.sub(high, low, span), extra, span)
        if k != 1:
            n = self.b.binop("/", n, self.b.lit(k, span), span)
        if "max" not in self.redefined:
            return self.b.apply(self.library("max", scope, span), [self.b.lit(0, span), n], span)
        # A global `max` of the program's own: clamp with an `if` instead.
        c = self.fresh("count")
        positive = self.b.binop(">", self.b.var(c, span), self.b.lit(0, span), span)
        clamp = self.b.new(ast.If, positive, self.b.var(c, span), self.b.lit(0, span), span=span)
        return self.b.let(self.b.pvar(c, span), n, clamp, span)

    def range_element(self, start: ast.Expr, i: ast.Expr, step: int, span) -> ast.Expr:
        """Element `i` of the range: `start + i * step`."""
        offset = i if step == 1 else self.b.binop("*", i, self.b.lit(step, span), span)
        if is_int_lit(start) and start.value == 0:
            return offset
        return self.b.binop("+", start, offset, span)

    # ------------------------------------------------------------------ helpers

    def library(self, name: str, scope: Scope, span) -> ast.Var:
        """A reference to the library function `name` from generated code."""
        if name in self.redefined:
            raise Redefined(name)
        if name in scope.outs:
            raise Shadowed(name)
        return self.b.var(name, span)

    def is_trivial(self, e: ast.Expr) -> bool:
        """Evaluating `e` cannot fail and costs nothing, so it may be repeated or moved."""
        if isinstance(e, ast.Lit):
            return True
        if isinstance(e, ast.Var):
            defn = self.defs.get(e.name)
            return defn is None or bool(defn.params)
        return False

    def fresh(self, base: str) -> str:
        return self.ctx.fresh_name(base, self.avoid)


def _same(new: list, old: tuple) -> bool:
    return all(a is b for a, b in zip(new, old))




def _all_names(program: ast.Program) -> set[str]:
    """Every identifier a program spells, so fresh names never collide with one."""
    names: set[str] = set()
    for form in program.forms:
        for sub in ast.walk(form):
            if isinstance(sub, (ast.Var, ast.PVar, ast.Def)):
                names.add(sub.name)
            elif isinstance(sub, ast.ForRange):
                names.add(sub.var)
            elif isinstance(sub, ast.TArray) and isinstance(sub.size, str):
                names.add(sub.size)
            elif isinstance(sub, ast.TArray) and isinstance(sub.size, tuple):
                names.update(f for f in sub.size if isinstance(f, str))
    return names


# ---------------------------------------------------------------- the pass

class DesugarPass:
    name = "desugar"
    transforms = True

    def run(self, program: ast.Program, ctx: PassContext) -> PassOutput:
        return PassOutput(Desugarer(ctx, program).program(program))


DESUGAR = DesugarPass()
