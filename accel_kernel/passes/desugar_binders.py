"""Binders while desugaring (part of `desugar`): renaming, capture, size names.

Every binder the desugarer meets (lambda, `let`, loop and def parameters, comprehension
patterns, inlined parameters) goes through `bind_pattern`, which gives the binder's output
pattern and the scope inside it (`desugar_build.Scope`). A binder is renamed (rule `rename`)

- when code generated inside it must name a global that it would capture: the generated code
  raises `Shadowed`, `with_binder` renames the binder and desugars its scope again;
- when it would capture a variable an inlined argument brought in (its output name is taken
  by another visible variable).

Size names in annotations follow docs/language.md: lambda, `let` and def parameters bind the
size names that no variable in scope has; loop and comprehension patterns only check them.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Container, Iterable, TypeVar

from ..ir.core import pattern_sizes, size_names
from ..lang import ast
from ..lang.scalar_ops import INTS
from ..lang.types import I64, Scalar
from .desugar_build import Binding, Scope, Shadowed, map_children

T = TypeVar("T")
INT_TYPES = tuple(Scalar(t) for t in INTS)


class Renames(dict):
    """Source name -> output name for one binder, with the reason of each renaming."""

    def __init__(self):
        super().__init__()
        self.why: dict[str, str] = {}


class Binders:
    """The binder methods of the `Desugarer` (which provides `ctx`, `b`, `fresh`,
    `globals_so_far`)."""

    def binder_names(self, patterns: Iterable[ast.Pattern], scope: Scope) -> set[str]:
        """Variables of lambda, let or def parameters, and their size names not in scope."""
        patterns = list(patterns)
        names = {n for p in patterns for n in ast.pattern_names(p)}
        return names | {n for p in patterns for n in pattern_sizes(p) if scope.get(n) is None}

    def with_binder(self, names: set[str], attempt: Callable[[Renames], T],
                    where: ast.Node) -> T:
        """Run `attempt`; when the generated code inside needs a global that one of `names`
        shadows (`Shadowed`), rename that binder and desugar its scope again."""
        renames = Renames()
        while True:
            mark = self.ctx.log.mark()
            try:
                result = attempt(renames)
                break
            except Shadowed as err:
                src = next((k for k in sorted(names) if renames.get(k, k) == err.name), None)
                if src is None:
                    raise
                self.ctx.log.rollback(mark)
                renames[src] = self.fresh(src)
                renames.why[src] = (f"the desugared code here refers to the global "
                                    f"`{err.name}`, which this binder would capture")
        for src, new in renames.items():
            with self.ctx.log.apply("rename", src, node=where,
                                    note=renames.why.get(src, "")) as rewrite:
                rewrite.after = new
        return result

    def bind_name(self, src: str, scope: Scope, renames: Renames, taken: set[str]) -> str:
        out = renames.get(src, src)
        if out in taken:
            renames[src] = out = self.fresh(src)
            renames.why[src] = (f"another variable is named `{src}` in the output here "
                                f"(an inlined argument), and this binder would capture it")
        return out

    def bind_all(self, patterns: Iterable[ast.Pattern], scope: Scope, kind: str,
                 renames: Renames) -> tuple[list[ast.Pattern], Scope]:
        patterns = list(patterns)
        rebound = {n for p in patterns for n in ast.pattern_names(p)}
        out = []
        for p in patterns:
            new, scope = self.bind_pattern(p, scope, kind, renames, rebound)
            out.append(new)
        return out, scope

    def bind_pattern(self, p: ast.Pattern, scope: Scope, kind: str, renames: Renames,
                     rebound: set[str] | None = None, fresh: Container[str] = (),
                     avoid: set[str] = frozenset()) -> tuple[ast.Pattern, Scope]:
        """The output pattern of a binder and the scope inside it. `kind`: "param" (lambda,
        let, def: size names not in scope are bound), "loop" (sizes only checked) or "comp"
        (a comprehension pattern rebound by generated lambdas: wildcards become variables,
        and a size name that is not an integer variable in scope is made unique to it, since
        the interpreter checks such a name only within the one pattern). Variables in `fresh`
        get fresh names; size names it binds avoid `avoid`."""
        rebound = rebound if rebound is not None else set(ast.pattern_names(p))
        taken = scope.taken(rebound)
        bindings: dict[str, Binding] = {}
        sizes: dict[str, str | int] = {}
        for s in pattern_sizes(p):
            ref = self.size_ref(s, scope)
            if kind == "param":
                if ref is None:     # a new size: renamed away from a global of its name,
                    out = self.bind_name(s, scope, renames,   # which it does not refer to
                                         taken | scope.outs | set(avoid) | self.globals_so_far)
                    bindings[s] = Binding(out, I64)
                    ref = out
            elif kind == "loop":
                if ref is None:
                    ref = self.fresh(s) if s in scope.outs else s
            elif ref is None or not self.is_int_var(s, scope):
                ref = self.fresh(s)
            sizes[s] = ref

        def build(q: ast.Pattern) -> ast.Pattern:
            annot = self.rename_type(q.annot, scope, sizes)
            if isinstance(q, ast.PVar):
                out = self.fresh(q.name) if q.name in fresh else \
                    self.bind_name(q.name, scope, renames, taken)
                bindings[q.name] = Binding(out, self.b.type_of(q))
                if out == q.name and annot is q.annot:
                    return q
                return replace(q, name=out, annot=annot)
            if isinstance(q, ast.PWild):
                if kind == "comp":
                    return self.b.new(ast.PVar, self.fresh("w"), annot, span=q.span)
                return q if annot is q.annot else replace(q, annot=annot)
            elems = tuple(build(x) for x in q.elems)
            if annot is q.annot and all(a is b for a, b in zip(elems, q.elems)):
                return q
            return replace(q, elems=elems, annot=annot)

        new = build(p)
        return new, scope.extend(bindings)

    def size_ref(self, s: str, scope: Scope) -> str | int | None:
        """What a size name in an annotation refers to: a local variable's output name, an
        inlined literal, or None when no local variable has that name."""
        binding = scope.get(s)
        if binding is None:
            return None
        if binding.out is not None:
            return binding.out
        if binding.literal is not None:
            return int(binding.literal.value)
        return None

    def is_int_var(self, s: str, scope: Scope) -> bool:
        binding = scope.get(s)
        return binding is not None and (binding.literal is not None or
                                        binding.type in INT_TYPES)

    def rename_type(self, t: ast.TypeExpr | None, scope: Scope,
                    sizes: dict[str, str | int] | None = None) -> ast.TypeExpr | None:
        """`t` with its size names as the output names them."""
        if t is None or not (size_names(t) or _products(t)):
            return t

        def renamed(name: str) -> str | int:
            new = sizes.get(name) if sizes is not None else None
            return new if new is not None else (self.size_ref(name, scope) or name)

        def visit(node: ast.Node) -> ast.Node:
            node = map_children(node, visit)
            if isinstance(node, ast.TArray) and isinstance(node.size, tuple):   # `[n * m]t`
                size = tuple(renamed(f) if isinstance(f, str) else f for f in node.size)
                return node if size == node.size else replace(node, size=size)
            if isinstance(node, ast.TArray) and isinstance(node.size, str):
                new = sizes.get(node.size) if sizes is not None else None
                if new is None:
                    new = self.size_ref(node.size, scope)
                if new is not None and new != node.size:
                    return replace(node, size=new)
            return node

        return visit(t)


def _products(t: ast.TypeExpr) -> bool:
    """Whether an annotation has a product size (`[n * m]t`)."""
    return any(isinstance(n, ast.TArray) and isinstance(n.size, tuple) for n in ast.walk(t))
