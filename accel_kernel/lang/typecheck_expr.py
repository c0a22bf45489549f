"""Type inference for expressions (stage `typed`), used by `typecheck` for each form.

One `ExpressionChecker` per top-level form: it walks the expressions, unifying as it goes
(`typecheck_unify.Unifier`), and records the type of every expression and pattern node, the
instantiation of every generic name or operator, and the global names used. Errors name both
types in accel syntax and point at the smallest node responsible: the operand or argument
that does not fit, the `else` branch, the condition.
"""
from __future__ import annotations

from typing import Callable, Mapping

from . import ast
from .builtins import BUILTINS, OPERATORS, UNARY_OPERATORS
from .errors import AccelNameError, AccelTypeError
from .typecheck_names import pattern_size_names, product_factors
from .typecheck_unify import Mismatch, TypeNamer, Unifier, class_phrase, ordered_vars
from .types import (BOOL, CLASSES, I64, Array, Func, Scalar, Scheme, Seq, Tuple, Type, TypeVar,
                    contains_func, substitute)

def annotation_type(annot: ast.TypeExpr) -> Type:
    """The semantic type of a type annotation (sizes are dropped)."""
    if isinstance(annot, ast.TScalar):
        return Scalar(annot.name)
    if isinstance(annot, ast.TArray):
        return Array(annotation_type(annot.elem))
    if isinstance(annot, ast.TTuple):
        return Tuple(tuple(annotation_type(e) for e in annot.elems))
    if isinstance(annot, ast.TFunc):
        return Func(annotation_type(annot.param), annotation_type(annot.result))
    if isinstance(annot, ast.TSeq):
        return Seq(annotation_type(annot.elem))
    raise TypeError(f"not a type expression: {annot!r}")


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")

_OPERAND_PHRASES = {
    "num": "numeric operands (integers or f32 or f64)",
    "int": "integer operands (i8, i16, i32, i64, u8, u16, u32 or u64)",
    "float": "float operands (f32 or f64)",
    "scalar": "scalar operands (bool, integers, f32 or f64)",
    "bits": "bool or integer operands",
}

Scope = dict[str, Type]

# Builtins whose scheme variable (here) may also be a tuple of scalars: see `check_ordered`.
_ORDERED = {"sort": "a", "sort_by": "k"}


def _ordinal(k: int) -> str:
    return _ORDINALS[k] if k < len(_ORDINALS) else f"number {k + 1}"


class ExpressionChecker:
    """Infers the types of the expressions of one top-level form.

    `resolve_global(name, node, scope)` gives the scheme of a global name (or raises the name
    error); the results are `node_types`, `insts` (scheme variables at each generic use, as
    unifier variables) and `deps`, all in terms of the unifier `u`, resolved by the caller."""

    def __init__(self, resolve_global: Callable[[str, ast.Node, Mapping[str, Type]], Scheme]):
        self.resolve_global = resolve_global
        self.u = Unifier()
        self.node_types: dict[int, Type] = {}
        self.insts: dict[int, dict[str, Type]] = {}
        self.deps: set[str] = set()
        self.ordered: list[tuple[ast.Var, Type]] = []
        self._dispatch: dict[type, Callable[..., Type]] = {
            ast.Lit: self._lit, ast.Var: self._var, ast.ArrayLit: self._array,
            ast.Range: self._range, ast.TupleLit: self._tuple, ast.Project: self._project,
            ast.Index: self._index, ast.Slice: self._slice, ast.BinOp: self._binop,
            ast.UnOp: self._unop, ast.Apply: self._apply, ast.OpFunc: self._opfunc,
            ast.LeftSection: self._left_section, ast.RightSection: self._right_section,
            ast.Lambda: self._lambda, ast.Let: self._let, ast.If: self._if,
            ast.Loop: self._loop, ast.Update: self._update, ast.Ascribe: self._ascribe,
            ast.Comprehension: self._comprehension,
        }

    # ------------------------------------------------------------------ helpers

    def infer(self, e: ast.Expr, scope: Scope) -> Type:
        t = self._dispatch[type(e)](e, scope)
        self.node_types[e.id] = t
        return t

    def _unify_or(self, a: Type, b: Type,
                  error: Callable[[TypeNamer], Exception]) -> None:
        """Unify, or raise `error(namer)` with the types as they were before the attempt."""
        mark = self.u.snapshot()
        try:
            self.u.unify(a, b)
        except Mismatch:
            self.u.restore(mark)
            raise error(TypeNamer(self.u)) from None

    def _expect(self, t: Type, expected: Type, node: ast.Node, what: str) -> None:
        """`what` (e.g. "an array index") must have type `expected` (no type variables)."""
        self._unify_or(t, expected, lambda n: AccelTypeError(
            f"{what} must be {n.show(expected)}, got {n.show(t)}", node.span))

    def _expect_array(self, t: Type, node: ast.Node) -> Type:
        """The element type of an array-typed `t`."""
        p = self.u.prune(t)
        if isinstance(p, Array):
            return p.elem
        elem = self.u.fresh()
        self._unify_or(p, Array(elem), lambda n: AccelTypeError(
            f"expected an array, got {n.show(p)}", node.span))
        return elem

    def _instantiate(self, scheme: Scheme, node: ast.Node) -> Type:
        if not scheme.vars:
            return scheme.type
        mapping: dict[str, Type] = {
            v: self.u.fresh_of_class(scheme.constraints.get(v)) for v in scheme.vars}
        self.insts[node.id] = mapping
        return substitute(scheme.type, mapping)

    def _global(self, name: str, node: ast.Node, scope: Scope) -> Scheme:
        scheme = self.resolve_global(name, node, scope)
        self.deps.add(name)
        return scheme

    # ------------------------------------------------------------------ patterns

    def _pattern(self, p: ast.Pattern, t: Type, scope: Scope, seen: set[str]) -> Type:
        """Bind the names of `p`, matched against a value of type `t`, into `scope`."""
        if p.annot is not None:
            declared = annotation_type(p.annot)
            self._unify_or(t, declared, lambda n: AccelTypeError(
                f"this pattern is annotated {n.show(declared)}, but matches a value of type "
                f"{n.show(t)}", p.span))
        if isinstance(p, ast.PVar):
            if p.name in seen:
                raise AccelNameError(f"`{p.name}` is bound twice here", p.span)
            seen.add(p.name)
            scope[p.name] = t
        elif isinstance(p, ast.PTuple):
            parts = tuple(self.u.fresh() for _ in p.elems)
            self._unify_or(t, Tuple(parts), lambda n: AccelTypeError(
                f"a pattern of {len(p.elems)} elements cannot match a value of type "
                f"{n.show(t)}", p.span))
            for sub, part in zip(p.elems, parts):
                self._pattern(sub, part, scope, seen)
        self.node_types[p.id] = t
        return t

    def _bind_sizes(self, patterns: tuple[ast.Pattern, ...] | list[ast.Pattern],
                    scope: Scope) -> None:
        """Size names of parameter annotations are i64 variables of the body; a size name
        that is already a variable in scope must be an integer (it is checked against)."""
        for p in patterns:
            for name in pattern_size_names(p):
                if name in scope:
                    t = scope[name]
                    self._unify_or(t, self.u.fresh(CLASSES["int"]), lambda n: AccelTypeError(
                        f"size `{name}` is a variable of type {n.show(t)}, not an integer",
                        p.span))
                else:
                    scope[name] = I64
        # a product size (`[n * m]t`) is checked against integer variables bound before it
        later = {n for p in patterns for n in (*ast.pattern_names(p), *pattern_size_names(p))}
        for p in patterns:
            for name, node in product_factors(p):
                if name in later or name not in scope:
                    raise AccelTypeError(f"the size `{name}` of a product size must be an "
                                         "integer variable bound before it (a parameter to "
                                         "its left, or a variable in scope)", node.span)
                t = scope[name]
                self._unify_or(t, I64, lambda n: AccelTypeError(
                    f"size `{name}` is a variable of type {n.show(t)}, not i64", node.span))
            later -= {*ast.pattern_names(p), *pattern_size_names(p)}

    # ------------------------------------------------------------------ expressions

    def _lit(self, e: ast.Lit, scope: Scope) -> Type:
        return Scalar(e.type)

    def _var(self, e: ast.Var, scope: Scope) -> Type:
        if e.name in scope:
            return scope[e.name]
        scheme = self._global(e.name, e, scope)
        ordered = _ORDERED.get(e.name)
        if ordered is not None and scheme is BUILTINS[e.name].scheme:
            # `sort` also orders tuples of scalars (lexicographically), which a class cannot
            # say: the variable is left free here and checked by `check_ordered`.
            scheme = Scheme(scheme.vars, scheme.type,
                            {v: c for v, c in scheme.constraints.items() if v != ordered})
            t = self._instantiate(scheme, e)
            self.ordered.append((e, self.insts[e.id][ordered]))
            return t
        return self._instantiate(scheme, e)

    def check_ordered(self) -> None:
        """The element types `sort` (and the key types `sort_by`) got must be scalars or
        tuples of scalars; one still unknown is constrained to the scalars."""
        for node, var in self.ordered:
            t = self.u.prune(var)
            parts = [self.u.prune(x) for x in t.elems] if isinstance(t, Tuple) else [t]
            for part in parts:
                if isinstance(part, Scalar):
                    continue
                if isinstance(part, TypeVar) and self.u.try_unify(part, self.u.fresh(
                        CLASSES["scalar"])):
                    continue
                what = "elements" if node.name == "sort" else "keys"
                raise AccelTypeError(f"`{node.name}` orders scalars and tuples of scalars, "
                                     f"but its {what} have type {TypeNamer(self.u).show(t)}",
                                     node.span)

    def _array(self, e: ast.ArrayLit, scope: Scope) -> Type:
        if not e.elems:
            return Array(self.u.fresh())
        first = self.infer(e.elems[0], scope)
        if contains_func(self.u.resolve(first)):
            raise AccelTypeError(f"an array cannot contain functions (got "
                                 f"{TypeNamer(self.u).show(first)})", e.elems[0].span)
        for elem in e.elems[1:]:
            t = self.infer(elem, scope)
            self._unify_or(t, first, lambda n: AccelTypeError(
                f"array elements differ: {n.show(first)} and {n.show(t)}", elem.span))
        return Array(first)

    def _range(self, e: ast.Range, scope: Scope) -> Type:
        for part, what in ((e.start, "a range bound"), (e.end, "a range bound"),
                           (e.step, "a range step")):
            if part is not None:
                self._expect(self.infer(part, scope), I64, part, what)
        return Array(I64)

    def _tuple(self, e: ast.TupleLit, scope: Scope) -> Type:
        return Tuple(tuple(self.infer(x, scope) for x in e.elems))

    def _project(self, e: ast.Project, scope: Scope) -> Type:
        t = self.u.prune(self.infer(e.expr, scope))
        if isinstance(t, Tuple):
            if e.index < len(t.elems):
                return t.elems[e.index]
            raise AccelTypeError(f"tuple index {e.index} out of range for "
                                 f"{TypeNamer(self.u).show(t)}", e.span)
        if isinstance(t, TypeVar) and self.u.class_of(t) is None:
            raise AccelTypeError(
                f"the type of this expression is not known here, so `.{e.index}` cannot be "
                f"checked; add a type annotation, e.g. `(p: (i64, f64))`", e.expr.span)
        raise AccelTypeError(f"expected a tuple, got {TypeNamer(self.u).show(t)}", e.expr.span)

    def _index(self, e: ast.Index, scope: Scope) -> Type:
        elem = self._expect_array(self.infer(e.expr, scope), e.expr)
        self._expect(self.infer(e.index, scope), I64, e.index, "an array index")
        return elem

    def _slice(self, e: ast.Slice, scope: Scope) -> Type:
        t = self.infer(e.expr, scope)
        self._expect_array(t, e.expr)
        for bound in (e.lo, e.hi):
            if bound is not None:
                self._expect(self.infer(bound, scope), I64, bound, "a slice bound")
        if e.step is not None:
            self._expect(self.infer(e.step, scope), I64, e.step, "a slice step")
        return t

    # ------------------------------------------------------------------ operators

    def _operator(self, op: str, node: ast.Node, scope: Scope) -> tuple[Type, Type, Type]:
        """The instantiated type of a binary operator: (left, right, result)."""
        if op in OPERATORS:
            t = self._instantiate(OPERATORS[op], node)
        else:        # an identifier used as an operator, e.g. `(min)`: looked up globally
            t = self._instantiate(self._global(op, node, {}), node)
        left, right, result = self.u.fresh(), self.u.fresh(), self.u.fresh()
        self._unify_or(t, Func(left, Func(right, result)), lambda n: AccelTypeError(
            f"`{op}` is not a function of two arguments (it has type {n.show(t)})", node.span))
        return left, right, result

    def _operand(self, op: str, actual: Type, expected: Type, node: ast.Node,
                 other: Type | None = None) -> None:
        mark = self.u.snapshot()
        try:
            self.u.unify(actual, expected)
            return
        except Mismatch:
            self.u.restore(mark)
        n = TypeNamer(self.u)
        if other is not None and self._fits_operand(op, actual):
            raise AccelTypeError(f"`{op}` expects operands of the same type, got "
                                 f"{n.show(other)} and {n.show(actual)}", node.span)
        raise AccelTypeError(f"`{op}` expects {self._operand_phrase(op, expected, n)}, got "
                             f"{n.show(actual)}", node.span)

    def _fits_operand(self, op: str, t: Type) -> bool:
        scheme = OPERATORS.get(op)
        if scheme is None or not isinstance(scheme.type, Func):
            return False
        mark = self.u.snapshot()
        fresh = {v: self.u.fresh_of_class(scheme.constraints.get(v)) for v in scheme.vars}
        ok = self.u.try_unify(t, substitute(scheme.type.param, fresh))
        self.u.restore(mark)
        return ok

    def _operand_phrase(self, op: str, expected: Type, n: TypeNamer) -> str:
        scheme = OPERATORS.get(op) or UNARY_OPERATORS.get(op)
        if scheme is not None and isinstance(scheme.type, Func):
            param = scheme.type.param
            if isinstance(param, TypeVar) and param.name in scheme.constraints:
                return _OPERAND_PHRASES[scheme.constraints[param.name]]
            if isinstance(param, Scalar):
                return f"{param.name} operands"
            if isinstance(param, Array):
                return "arrays"
        return n.show(expected)

    def _binop(self, e: ast.BinOp, scope: Scope) -> Type:
        left, right, result = self._operator(e.op, e, scope)
        lt = self.infer(e.left, scope)
        self._operand(e.op, lt, left, e.left)
        rt = self.infer(e.right, scope)
        self._operand(e.op, rt, right, e.right, other=lt)
        return result

    def _unop(self, e: ast.UnOp, scope: Scope) -> Type:
        t = self._instantiate(UNARY_OPERATORS[e.op], e)
        assert isinstance(t, Func)
        operand = self.infer(e.operand, scope)
        self._operand(e.op, operand, t.param, e.operand)
        return t.result

    def _opfunc(self, e: ast.OpFunc, scope: Scope) -> Type:
        if e.op in OPERATORS:
            return self._instantiate(OPERATORS[e.op], e)
        if e.op.isidentifier():
            if e.op in scope:
                return scope[e.op]
            return self._instantiate(self._global(e.op, e, scope), e)
        return self._instantiate(UNARY_OPERATORS[e.op], e)

    def _left_section(self, e: ast.LeftSection, scope: Scope) -> Type:
        left, right, result = self._operator(e.op, e, scope)
        self._operand(e.op, self.infer(e.left, scope), left, e.left)
        return Func(right, result)

    def _right_section(self, e: ast.RightSection, scope: Scope) -> Type:
        left, right, result = self._operator(e.op, e, scope)
        self._operand(e.op, self.infer(e.right, scope), right, e.right)
        return Func(left, result)

    # ------------------------------------------------------------------ application

    def _apply(self, e: ast.Apply, scope: Scope) -> Type:
        known: dict[int, Type] = {}
        if isinstance(e.fn, ast.Var) and e.fn.name in ("elements", "stream") \
                and e.fn.name not in scope and e.args:
            special = self._elements if e.fn.name == "elements" else self._stream
            fn_type = special(e, scope, known)
            self.node_types[e.fn.id] = fn_type
        else:
            fn_type = self.infer(e.fn, scope)
        name = _function_label(e.fn)
        deferred: list[tuple[int, ast.Lambda, Type]] = []
        current = fn_type
        for k, arg in enumerate(e.args):
            f = self.u.prune(current)
            if isinstance(f, TypeVar):
                fresh = Func(self.u.fresh(), self.u.fresh())
                f = fresh if self.u.try_unify(f, fresh) else f
            if not isinstance(f, Func):
                n = TypeNamer(self.u)
                if k == 0:
                    what = name if isinstance(e.fn, (ast.Var, ast.OpFunc)) else "this expression"
                    raise AccelTypeError(f"{what} is not a function (it has type "
                                         f"{n.show(fn_type)}), so it cannot be applied",
                                         e.fn.span)
                raise AccelTypeError(f"{name} is applied to too many arguments (its type is "
                                     f"{n.show(fn_type)})", arg.span)
            if isinstance(arg, ast.Lambda) and k not in known:
                # Checked last, knowing what the other arguments say about its parameters,
                # so that `map (\p -> p.0) (zip xs ys)` needs no annotation.
                deferred.append((k, arg, f.param))
            else:
                t = known[k] if k in known else self.infer(arg, scope)
                self._argument(name, k, t, f.param, arg)
            current = f.result
        for k, arg, param in deferred:
            t = self._lambda(arg, scope, expected=param)
            self.node_types[arg.id] = t
            self._argument(name, k, t, param, arg)
        return current

    def _elements(self, e: ast.Apply, scope: Scope, known: dict[int, Type]) -> Type:
        """`elements` of a sequence of scalars is the array of them (docs/language.md), which
        its scheme `seq []a -> []a` cannot say: that case is typed here."""
        scheme = self._global("elements", e.fn, scope)
        if scheme is BUILTINS["elements"].scheme:
            known[0] = self.infer(e.args[0], scope)
            s = self.u.prune(known[0])
            if isinstance(s, Seq):
                elem = self.u.prune(s.elem)
                if isinstance(elem, Scalar) or (isinstance(elem, TypeVar)
                                                and self.u.class_of(elem) is not None):
                    self.insts[e.fn.id] = {"a": elem}
                    return Func(Seq(elem), Array(elem))
        return self._instantiate(scheme, e.fn)

    def _stream(self, e: ast.Apply, scope: Scope, known: dict[int, Type]) -> Type:
        """`stream` of a sequence (a Python iterable given to accel is a `seq t`: LANGUAGE.md
        §7 streams it) is that sequence, which its scheme `[]a -> seq a` cannot say."""
        scheme = self._global("stream", e.fn, scope)
        if scheme is BUILTINS["stream"].scheme:
            known[0] = self.infer(e.args[0], scope)
            s = self.u.prune(known[0])
            if isinstance(s, Seq):
                self.insts[e.fn.id] = {"a": s.elem}
                return Func(s, s)
        return self._instantiate(scheme, e.fn)

    def _argument(self, name: str, k: int, actual: Type, expected: Type,
                  node: ast.Node) -> None:
        self._unify_or(actual, expected, lambda n: AccelTypeError(
            f"{name} expects {self._expected_phrase(expected, actual, n)} as its {_ordinal(k)} "
            f"argument, got {n.show(actual)}", node.span))

    def _expected_phrase(self, expected: Type, actual: Type, n: TypeNamer) -> str:
        e, a = self.u.resolve(expected), self.u.resolve(actual)
        if isinstance(e, TypeVar):
            cls = self.u.class_of(e)
            return class_phrase(cls) if cls is not None else n.show(e)
        if not ordered_vars(e) or type(e) is type(a):
            return n.show(e)
        if isinstance(e, Func):
            return "a function"
        if isinstance(e, Array):
            return "an array"
        if isinstance(e, Tuple):
            return f"a tuple of {len(e.elems)} elements"
        if isinstance(e, Seq):
            return "a sequence"
        return n.show(e)

    # ------------------------------------------------------------------ binding forms

    def _lambda(self, e: ast.Lambda, scope: Scope, expected: Type | None = None) -> Type:
        inner = dict(scope)
        seen: set[str] = set()
        params: list[Type] = []
        for p in e.params:
            hint = None
            if expected is not None:
                f = self.u.prune(expected)
                hint, expected = (f.param, f.result) if isinstance(f, Func) else (None, None)
            if hint is not None:
                mark, trial, trial_seen = self.u.snapshot(), dict(inner), set(seen)
                try:
                    params.append(self._pattern(p, hint, trial, trial_seen))
                    inner, seen = trial, trial_seen
                    continue
                except AccelTypeError:
                    self.u.restore(mark)    # reported against the whole argument instead
            params.append(self._pattern(p, self.u.fresh(), inner, seen))
        self._bind_sizes(e.params, inner)
        result = self.infer(e.body, inner)
        for p in reversed(params):
            result = Func(p, result)
        return result

    def _let(self, e: ast.Let, scope: Scope) -> Type:
        value = self.infer(e.value, scope)
        inner = dict(scope)
        self._pattern(e.pattern, value, inner, set())
        self._bind_sizes([e.pattern], inner)
        return self.infer(e.body, inner)

    def _if(self, e: ast.If, scope: Scope) -> Type:
        cond = self.infer(e.cond, scope)
        self._expect(cond, BOOL, e.cond, "the condition of `if`")
        then = self.infer(e.then, scope)
        else_ = self.infer(e.else_, scope)
        self._unify_or(else_, then, lambda n: AccelTypeError(
            f"if branches differ: {n.show(then)} and {n.show(else_)}", e.else_.span))
        return then

    def _loop(self, e: ast.Loop, scope: Scope) -> Type:
        init = self.infer(e.init, scope)
        inner = dict(scope)
        self._pattern(e.pattern, init, inner, set())
        form = e.form
        if isinstance(form, ast.ForRange):
            self._expect(self.infer(form.bound, scope), I64, form.bound,
                         f"the bound of `for {form.var} < ...`")
            inner[form.var] = I64
        elif isinstance(form, ast.ForIn):
            elem = self._expect_array(self.infer(form.array, scope), form.array)
            self._pattern(form.pattern, elem, inner, set())
        else:
            self._expect(self.infer(form.cond, inner), BOOL, form.cond,
                         "the condition of `while`")
        body = self.infer(e.body, inner)
        self._unify_or(body, init, lambda n: AccelTypeError(
            f"the loop body has type {n.show(body)}, but the loop variable has type "
            f"{n.show(init)}", e.body.span))
        return init

    def _update(self, e: ast.Update, scope: Scope) -> Type:
        array = self.infer(e.array, scope)
        elem = array
        for index in e.indices:
            elem = self._expect_array(elem, e.array)
            self._expect(self.infer(index, scope), I64, index, "an array index")
        value = self.infer(e.value, scope)
        self._unify_or(value, elem, lambda n: AccelTypeError(
            f"the new element has type {n.show(value)}, but the array's elements have type "
            f"{n.show(elem)}", e.value.span))
        return array

    def _ascribe(self, e: ast.Ascribe, scope: Scope) -> Type:
        t = self.infer(e.expr, scope)
        declared = annotation_type(e.type)
        self._unify_or(t, declared, lambda n: AccelTypeError(
            f"this expression has type {n.show(t)}, but is ascribed {n.show(declared)}",
            e.expr.span))
        return declared

    def _comprehension(self, e: ast.Comprehension, scope: Scope) -> Type:
        visible = dict(scope)
        for branch in e.branches:
            inner = dict(scope)
            for q in branch:
                if isinstance(q, ast.Generator):
                    elem = self._expect_array(self.infer(q.source, inner), q.source)
                    inner = dict(inner)
                    self._pattern(q.pattern, elem, inner, set())
                elif isinstance(q, ast.Guard):
                    self._expect(self.infer(q.cond, inner), BOOL, q.cond,
                                 "a comprehension guard")
                else:
                    value = self.infer(q.value, inner)
                    inner = dict(inner)
                    self._pattern(q.pattern, value, inner, set())
            # As the interpreter does: each branch's scope in turn, the later ones winning.
            visible.update(inner)
        body = self.infer(e.body, visible)
        if contains_func(self.u.resolve(body)):
            raise AccelTypeError(f"an array cannot contain functions (got "
                                 f"{TypeNamer(self.u).show(body)})", e.body.span)
        return Array(body)


def _function_label(fn: ast.Expr) -> str:
    if isinstance(fn, ast.Var):
        return f"`{fn.name}`"
    if isinstance(fn, ast.OpFunc):
        return f"`({fn.op})`"
    return "this function"
