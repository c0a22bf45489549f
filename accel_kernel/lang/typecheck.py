"""Type inference and checking (stage `typed`): AST in, a type for every node out.

Hindley–Milner with constrained type variables (`num int float scalar bits`, see
`types.CLASSES`). `check_program(program, env)` checks the top-level forms in order, each
seeing the ones before it, the session's globals (`GlobalEnv`) and the builtins
(`builtins.BUILTINS`; user globals shadow them). A `def` is generalised into a `Scheme` and
instantiated at every use; `let`s (local and global) are monomorphic.

What it gives (`CheckResult`): the final type of every expression and pattern node (inside a
generic def its variables are named after the def's scheme: `a`, `b`, ...), the instantiation
of every generic name or operator at each use, the scheme of every name the program binds,
the global names each definition uses, and the type of each top-level expression.

Variables left over in a form that nothing determines and that are not part of a def's scheme
(`length []`, an unused lambda) are defaulted, to `f64` when they must be floats and to `i64`
otherwise; a top-level expression or global `let` whose own type is ambiguous is an error.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Mapping

from . import ast
from .builtins import BUILTINS
from .errors import AccelNameError, AccelTypeError
from .typecheck_expr import ExpressionChecker, Scope, annotation_type
from .typecheck_names import find_cycle, free_names
from .typecheck_unify import TypeNamer, class_name, letter_names, ordered_vars
from .types import (F64, I64, Array, Func, Scheme, Seq, Tuple, Type, TypeVar, contains_func,
                    show, substitute)

__all__ = ["GlobalEnv", "CheckResult", "check_program", "annotation_type", "bound_names"]


@dataclass(frozen=True)
class GlobalEnv:
    """The globals a program is checked against: earlier cells and the prelude."""
    schemes: Mapping[str, Scheme] = field(default_factory=dict)
    deps: Mapping[str, frozenset[str]] = field(default_factory=dict)


@dataclass
class CheckResult:
    types: dict[int, Type] = field(default_factory=dict)
    instantiations: dict[int, dict[str, Type]] = field(default_factory=dict)
    schemes: dict[str, Scheme] = field(default_factory=dict)
    deps: dict[str, frozenset[str]] = field(default_factory=dict)
    expr_types: list[Type] = field(default_factory=list)


def check_program(program: ast.Program, env: GlobalEnv) -> CheckResult:
    """Infer and check the types of a program's forms; raises AccelTypeError/AccelNameError."""
    return _ProgramChecker(program, env).check()


def bound_names(form: ast.TopForm) -> list[str]:
    if isinstance(form, ast.Def):
        return [form.name]
    if isinstance(form, ast.GlobalLet):
        return ast.pattern_names(form.pattern)
    return []


# ---------------------------------------------------------------- the program

class _ProgramChecker:
    """Checks the forms in order and resolves global names (this program, env, builtins)."""

    def __init__(self, program: ast.Program, env: GlobalEnv):
        self.program = program
        self.env = env
        self.result = CheckResult()
        self.free = [free_names(form) for form in program.forms]
        self.binding_forms: dict[str, list[int]] = {}
        for k, form in enumerate(program.forms):
            for name in bound_names(form):
                self.binding_forms.setdefault(name, []).append(k)

    def check(self) -> CheckResult:
        for k, form in enumerate(self.program.forms):
            if isinstance(form, ast.Def):
                self._check_recursion(k, form)
            _FormChecker(self, k, form).check()
        return self.result

    # ------------------------------------------------------------------ recursion

    def _check_recursion(self, k: int, form: ast.Def) -> None:
        """Defs are late-bound, so the graph that matters is the one after this program:
        each name's edges are those of its last binding here, else `env.deps`."""
        def edges(name: str):
            if name == form.name:
                return self.free[k]
            forms = self.binding_forms.get(name)
            if forms:
                return self.free[forms[-1]]
            return self.env.deps.get(name, frozenset())

        path = find_cycle(form.name, list(self.free[k]), edges)
        if path is not None:
            where = self.free[k][path[1]]
            raise AccelTypeError("recursive definition: " + " -> ".join(path) +
                                 " (definitions may not be recursive; use loop, while or a "
                                 "SOAC)", where.span or form.span)

    # ------------------------------------------------------------------ names

    def resolve(self, name: str, node: ast.Node, k: int, in_def: bool,
                scope: Mapping[str, Type]) -> Scheme:
        """The scheme of a global name used by form `k`."""
        if name in self.result.schemes:
            return self.result.schemes[name]
        later = any(j > k for j in self.binding_forms.get(name, ()))
        if later and in_def:
            # A def is late-bound: it would see the later binding, which is not checked yet.
            again = " (it is defined again later in this cell)" if self._known(name) else ""
            raise AccelNameError(f"`{name}` is used before its definition{again}", node.span)
        if name in self.env.schemes:
            return self.env.schemes[name]
        if name in BUILTINS:
            return BUILTINS[name].scheme
        if later:
            raise AccelNameError(f"`{name}` is used before its definition", node.span)
        candidates = set(scope) | set(self.result.schemes) | set(self.env.schemes) | set(BUILTINS)
        close = difflib.get_close_matches(name, sorted(candidates), n=1)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        raise AccelNameError(f"unknown name `{name}`{hint}", node.span)

    def _known(self, name: str) -> bool:
        return name in self.env.schemes or name in BUILTINS


# ---------------------------------------------------------------- one form

class _FormChecker(ExpressionChecker):
    """Checks one top-level form and writes its results (final types) into the program's."""

    def __init__(self, program: _ProgramChecker, index: int, form: ast.TopForm):
        super().__init__(self._resolve)
        self.program = program
        self.index = index
        self.form = form
        self.in_def = isinstance(form, ast.Def)

    def _resolve(self, name: str, node: ast.Node, scope: Mapping[str, Type]) -> Scheme:
        return self.program.resolve(name, node, self.index, self.in_def, scope)

    # ------------------------------------------------------------------ top level

    def check(self) -> None:
        form, result = self.form, self.program.result
        if isinstance(form, ast.Def):
            scheme, rename = self._def(form)
            self._finish(rename)
            result.schemes[form.name] = scheme
            result.deps[form.name] = frozenset(self.deps)
        elif isinstance(form, ast.GlobalLet):
            value_type = self.infer(form.value, {})
            self.check_ordered()
            scope: Scope = {}
            self._pattern(form.pattern, value_type, scope, set())
            resolved = self.u.resolve(value_type)
            self._finish({})
            self._check_closed(resolved, form.value, "a global `let`")
            for name in ast.pattern_names(form.pattern):
                result.schemes[name] = Scheme((), self._final(scope[name], {}))
                result.deps[name] = frozenset(self.deps)
        else:
            t = self.infer(form.expr, {})
            self.check_ordered()
            t = self.u.resolve(t)
            self._finish({})
            self._check_closed(t, form.expr, "a top-level expression")
            result.expr_types.append(t)

    def _def(self, form: ast.Def) -> tuple[Scheme, dict[str, Type]]:
        scope: Scope = {}
        seen: set[str] = set()
        params = [self._pattern(p, self.u.fresh(), scope, seen) for p in form.params]
        self._bind_sizes(form.params, scope)
        body = self.infer(form.body, scope)
        if form.result is not None:
            declared = annotation_type(form.result)
            self._unify_or(body, declared, lambda n: AccelTypeError(
                f"the body of `{form.name}` has type {n.show(body)}, but its result is "
                f"annotated {n.show(declared)}", form.body.span))
        self.check_ordered()
        whole: Type = body
        for p in reversed(params):
            whole = Func(p, whole)
        whole = self.u.resolve(whole)
        qvars = ordered_vars(whole)
        names = letter_names(len(qvars))
        rename: dict[str, Type] = {v: TypeVar(n) for v, n in zip(qvars, names)}
        constraints = {}
        for v, n in zip(qvars, names):
            cls = self.u.classes.get(v)
            if cls is not None:
                constraints[n] = class_name(cls) or "scalar"
        return Scheme(tuple(names), substitute(whole, rename), constraints), rename

    def _check_closed(self, t: Type, node: ast.Node, what: str) -> None:
        """Top-level values must be first-order and have a known type."""
        if contains_func(t):
            n = TypeNamer(self.u)
            hint = "; use `def` to name a function" if what == "a global `let`" else (
                "; apply it to its arguments")
            raise AccelTypeError(f"the value of {what} cannot be a function (got {n.show(t)})"
                                 + hint, node.span)
        if ordered_vars(t):
            n = TypeNamer(self.u)
            example = self._default_all(t)
            text = _source_text(node)
            raise AccelTypeError(
                f"cannot infer the type of this expression (got {n.show(t)}); add an "
                f"annotation, e.g. ({text} : {show(example)})", node.span)

    # ------------------------------------------------------------------ finishing a form

    def _default_all(self, t: Type, keep: Mapping[str, Type] | None = None) -> Type:
        """`t` with its variables defaulted (f64 for float-only ones, else i64), except
        those in `keep`, which are renamed as it says."""
        mapping: dict[str, Type] = dict(keep or {})
        for v in ordered_vars(t):
            if v not in mapping:
                cls = self.u.classes.get(v)
                mapping[v] = F64 if cls is not None and "i64" not in cls else I64
        return substitute(t, mapping)

    def _final(self, t: Type, rename: Mapping[str, Type]) -> Type:
        return self._default_all(self.u.resolve(t), rename)

    def _finish(self, rename: Mapping[str, Type]) -> None:
        """Write the final types of this form into the result, then check what can only be
        checked on final types (arrays of functions, function-valued `if`s and loops)."""
        out = self.program.result
        final = {i: self._final(t, rename) for i, t in self.node_types.items()}
        out.types.update(final)
        for i, inst in self.insts.items():
            out.instantiations[i] = {v: self._final(t, rename) for v, t in inst.items()}
        self._sweep(self.form, final)

    def _sweep(self, form: ast.Node, final: Mapping[int, Type]) -> None:
        for node in _post_order(form):
            t = final.get(node.id)
            if t is None:
                continue
            if _has_function_array(t):
                raise AccelTypeError(f"an array cannot contain functions (got {show(t)})",
                                     node.span)
            if isinstance(node, ast.If) and contains_func(t):
                raise AccelTypeError(f"the branches of an `if` cannot be functions (got "
                                     f"{show(t)})", node.then.span or node.span)
            if isinstance(node, ast.Loop) and contains_func(t):
                raise AccelTypeError(f"a loop variable cannot be a function (got "
                                     f"{show(t)})", node.init.span or node.span)


# ---------------------------------------------------------------- small helpers

def _has_function_array(t: Type) -> bool:
    """Whether a value of type `t` holds an array (or sequence) of functions; the insides of
    function types are not looked at (`map`'s own type is fine)."""
    if isinstance(t, (Array, Seq)):
        return contains_func(t.elem)
    if isinstance(t, Tuple):
        return any(_has_function_array(e) for e in t.elems)
    return False


def _post_order(node: ast.Node):
    for child in ast.children(node):
        yield from _post_order(child)
    yield node


def _source_text(node: ast.Node) -> str:
    span = node.span
    if span is not None:
        text = span.source.text[span.start:span.end]
        if "\n" not in text and len(text) <= 40:
            return text
    return "e"
