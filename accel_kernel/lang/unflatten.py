"""Futhark's `unflatten xs`, whose sizes come from the type of `xs` (docs/language.md, "From
Futhark"): the parser gives the call its sizes, `unflatten n m xs` (prelude.accel's
`unflatten`), when they can be read off the program:

- `xs` is a variable annotated `[n * m]t` (a parameter of a def or a lambda, or a `let`), and
  no other binder of the form has its name;
- `xs` is `iota (a * b)` or `replicate (a * b) x` (the product written there);
- `xs` is ascribed: `(e : [n * m]t)`.

Another `unflatten` of one argument is a SyntaxError saying how to give the sizes. A size read
off the program is a new node (with its own id) at each use.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterator

from . import ast
from .errors import AccelSyntaxError

HOW = ("`unflatten xs` takes its sizes from the type of `xs`, and here they are not written "
       "down: annotate `xs` as `[n * m]t`, or give them: `unflatten n m xs`")


def resolve(form: ast.TopForm, ids: Iterator[int]) -> ast.TopForm:
    """`form` with every `unflatten xs` given its two sizes."""
    if not any(_is_call(node) for node in ast.walk(form)):
        return form
    binders: dict[str, int] = {}
    products: dict[str, tuple] = {}
    for node in ast.walk(form):
        if isinstance(node, ast.PVar):
            binders[node.name] = binders.get(node.name, 0) + 1
            size = node.annot.size if isinstance(node.annot, ast.TArray) else None
            if isinstance(size, tuple):
                products[node.name] = size
        elif isinstance(node, ast.ForRange):
            binders[node.var] = binders.get(node.var, 0) + 1

    def sizes_of(arg: ast.Expr) -> tuple | None:
        if isinstance(arg, ast.Var) and binders.get(arg.name) == 1:
            return products.get(arg.name)
        if isinstance(arg, ast.Ascribe) and isinstance(arg.type, ast.TArray) \
                and isinstance(arg.type.size, tuple):
            return arg.type.size
        if isinstance(arg, ast.Apply) and isinstance(arg.fn, ast.Var) \
                and arg.fn.name in ("iota", "replicate") and isinstance(arg.args[0], ast.BinOp) \
                and arg.args[0].op == "*":
            return (arg.args[0].left, arg.args[0].right)
        return None

    def visit(node: ast.Node) -> ast.Node:
        node = ast.map_children(node, visit)
        if not _is_call(node):
            return node
        sizes = sizes_of(node.args[0])
        if sizes is None or len(sizes) != 2:
            raise AccelSyntaxError(HOW if sizes is None else
                                   f"`unflatten` makes two dimensions, and the size of its "
                                   f"argument has {len(sizes)} factors: give them, "
                                   "`unflatten n m xs`", node.span)
        made = tuple(_size_node(size, node.span, ids) for size in sizes)
        return replace(node, args=(*made, node.args[0]))

    return visit(form)


def _is_call(node: ast.Node) -> bool:
    return isinstance(node, ast.Apply) and node.fn == ast.Var("unflatten") and len(node.args) == 1


def _size_node(size: str | int | ast.Expr, span, ids: Iterator[int]) -> ast.Expr:
    if isinstance(size, str):
        return ast.Var(size, span=span, id=next(ids))
    if isinstance(size, int):
        return ast.Lit(size, "i64", span=span, id=next(ids))
    return _copy(size, ids)


def _copy(node: ast.Node, ids: Iterator[int]) -> ast.Node:
    """A copy of an expression with a new id for every node."""
    return replace(ast.map_children(node, lambda sub: _copy(sub, ids)), id=next(ids))
