"""Inlining of global defs, the prelude's and the user's (part of `desugar`, rule `inline`).

Later stages (flattening) want one body per top-level form, so every call of a global def is
replaced by a copy of its body, with fresh ids on every node (types are keyed by id, and two
calls may instantiate a generic def differently) and the spans of the def.

- `f a b` with `def f p1 p2 = body` is `let p1' = a in let p2' = b in body'`: the parameters
  get fresh names, so nothing at the call site can capture them. A parameter whose argument is
  a variable or a literal is substituted instead (unless it is annotated, or is a size name),
  which keeps calls like `twice sq 3` first-order: `sq (sq 3)` is inlined in turn.
- A partial application gives a lambda for the parameters still missing; a def used as a value
  (`map sq xs`) is a lambda of all of them; extra arguments apply the inlined body.
- The interpreter evaluates all arguments of a call before it binds any parameter. Where a
  parameter's annotation has sizes (a binding can then fail), the arguments are bound to fresh
  variables first and the annotated patterns after, in order, so that a size mismatch and an
  error in a later argument are reported as the interpreter reports them.
- An annotated result is kept: a size annotation as `let (r: [n]t) = body in r` (checked at
  run time, at the annotation), any other as an ascription (it may fix `zero`'s type).
- Defs are late-bound: a call inlines the definition in force where the call is, and the
  inlined body is desugared there, so its own calls see the same definitions.
- Inlining can grow a program exponentially (`def f2 x = f1 (f1 x)`, `f3` calling `f2`
  twice, ...). Once the pass has copied `BUDGET` nodes, further calls stay calls
  (`inline-skipped`): still core, still correct, and the stage stays fast.
"""
from __future__ import annotations

from ..ir.core import binds, free_vars, has_sizes
from ..lang import ast
from .desugar_binders import Renames
from .desugar_build import LIBRARY_NAMES, Binding, Scope, Shadowed

BUDGET = 10_000          # nodes the inliner may copy in one run of the pass


def inline(d, defn: ast.Def, node: ast.Expr, args: tuple[ast.Expr, ...],
           scope: Scope) -> ast.Expr:
    """The inlined body of `defn` for `node`: a use of its name applied to `args`.
    `d` is the `Desugarer`."""
    if d.b.copied > BUDGET:
        return _keep_call(d, defn, node, args, scope)
    params = defn.params
    if not params or len(args) == len(params):
        how = ""
    elif not args:
        how = "; used as a value: a lambda of its parameters"
    elif len(args) < len(params):
        how = "; partial application: a lambda of the parameters still missing"
    else:
        how = "; the inlined body is applied to the extra arguments"
    with d.ctx.log.apply("inline", node, note=f"`{defn.name}` inlined{how}") as rewrite:
        rewrite.after = _inlined(d, defn, node, args, scope)
    return rewrite.after


def _inlined(d, defn: ast.Def, node: ast.Expr, args: tuple[ast.Expr, ...],
             scope: Scope) -> ast.Expr:
    b = d.b
    span = node.span
    inside = binds(defn.params, frozenset(), True)
    for g in sorted(free_vars(defn.body, inside)):
        if g in scope.outs:          # a global of the body that a local here would capture
            raise Shadowed(g)
    size_refs = {n for sub in ast.walk(defn) if isinstance(sub, ast.TArray)
                 for n in ([sub.size] if isinstance(sub.size, str) else
                           [f for f in sub.size if isinstance(f, str)]
                           if isinstance(sub.size, tuple) else [])}
    params = [b.copy(p) for p in defn.params]
    sized = any(has_sizes(p) for p in params)
    # Size names keep their names (they show in error messages) unless that could capture.
    avoid = set(LIBRARY_NAMES) | {n for a in args for n in free_vars(a)} | scope.outs

    def bind(p: ast.Pattern, inner: Scope) -> tuple[ast.Pattern, Scope]:
        fresh = {n for n in ast.pattern_names(p) if n not in size_refs or n in avoid}
        return d.bind_pattern(p, inner, "param", Renames(), fresh=fresh, avoid=avoid)

    arg_lets: list[tuple[ast.Pattern, ast.Expr]] = []
    checks: list[tuple[ast.Pattern, str]] = []
    lam_params: list[ast.Pattern] = []
    body_scope = scope.hide({})
    for j, p in enumerate(params):
        if j < len(args):
            sub = _substitution(d, p, args[j], scope, size_refs)
            if sub is not None:
                body_scope = body_scope.extend({p.name: sub})
                continue
            value = d.expr(args[j], scope)
            if sized:
                temp = d.fresh("arg")
                arg_lets.append((b.pvar(temp, p.span), value))
                checks.append((p, temp))
            else:
                p_out, body_scope = bind(p, body_scope)
                arg_lets.append((p_out, value))
        elif sized:
            temp = d.fresh("arg")
            lam_params.append(b.pvar(temp, p.span))
            checks.append((p, temp))
        else:
            p_out, body_scope = bind(p, body_scope)
            lam_params.append(p_out)
    extra_lets: list[tuple[ast.Pattern, ast.Expr]] = []
    extras: list[ast.Expr] = []
    for a in args[len(params):]:
        value = d.expr(a, scope)
        if d.is_trivial(value):
            extras.append(value)
        else:
            temp = d.fresh("arg")
            extra_lets.append((b.pvar(temp, a.span), value))
            extras.append(b.var(temp, a.span))
    check_lets = []
    for p, temp in checks:
        p_out, body_scope = bind(p, body_scope)
        check_lets.append((p_out, b.var(temp, p.span)))

    body = d.expr(b.copy(defn.body), body_scope)
    body = _result(d, defn, body, body_scope, avoid)
    out = _lets(d, check_lets, body)
    if lam_params:
        out = b.lam(lam_params, out, span)
    if extras:
        out = b.apply(out, extras, span)
    return _lets(d, arg_lets + extra_lets, out)


def _keep_call(d, defn: ast.Def, node: ast.Expr, args: tuple[ast.Expr, ...],
               scope: Scope) -> ast.Expr:
    """The call as a call, its arguments desugared, once the inlining budget is spent."""
    if defn.name in scope.outs:
        raise Shadowed(defn.name)
    with d.ctx.log.apply("inline-skipped", node, note=(
            f"`{defn.name}` is not inlined: the pass has copied over {BUDGET} nodes already "
            f"(inlining can grow a program exponentially)")) as rewrite:
        fn = node if isinstance(node, ast.Var) and node.name == defn.name else \
            d.b.var(defn.name, node.span)
        rewrite.after = fn if not args else d.b.apply(fn, [d.expr(a, scope) for a in args],
                                                      node.span)
    return rewrite.after


def _substitution(d, p: ast.Pattern, arg: ast.Expr, scope: Scope,
                  size_refs: set[str]) -> Binding | None:
    """What the parameter `p` stands for when its argument is substituted, or None."""
    if not isinstance(p, ast.PVar) or p.annot is not None or p.name in size_refs:
        return None
    if isinstance(arg, ast.Lit):
        return Binding(literal=arg)
    if not isinstance(arg, ast.Var):
        return None
    binding = scope.get(arg.name)
    if binding is not None:
        return binding
    defn = d.defs.get(arg.name)
    if defn is not None and not defn.params:
        return None          # a constant is evaluated where it is used: once, at the call
    if arg.name == "cond":
        return None          # `cond c a b` written out would read as the lazy `if`
    return Binding(global_name=arg.name)


def _result(d, defn: ast.Def, body: ast.Expr, scope: Scope, avoid: set[str]) -> ast.Expr:
    annot = defn.result
    if annot is None:
        return body
    b = d.b
    annot = b.copy(annot)
    if not has_sizes(annot):
        return b.new(ast.Ascribe, body, annot, span=annot.span)
    where = annot.span or defn.span      # where the interpreter reports a result mismatch
    name = d.fresh("result")
    pattern, inner = d.bind_pattern(b.new(ast.PVar, name, annot, span=where), scope, "param",
                                    Renames(), fresh=set(), avoid=avoid)
    return b.let(pattern, body, b.var(name, where), where)


def _lets(d, lets: list[tuple[ast.Pattern, ast.Expr]], body: ast.Expr) -> ast.Expr:
    for pattern, value in reversed(lets):
        body = d.b.let(pattern, value, body, pattern.span)
    return body
