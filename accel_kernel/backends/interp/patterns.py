"""Pattern binding and run-time size checks for the interpreter.

`bind(pattern, value, env, sizes)` returns a new local scope with the pattern's variables
bound. Annotated patterns check their sizes (docs/language.md): `[3]t` needs 3 elements,
`[n]t` binds the size name `n` the first time and checks it afterwards (against the same
binding site's earlier parameters, or against an `n` already in scope), `[n][m]t` checks every
row. Mismatches are `SizeError`s at the annotated pattern's span.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ...lang import ast
from ...lang.errors import SizeError
from ...lang.source import Span
from . import scalars
from .model import Value


def bind(pattern: ast.Pattern, value: Value, env: Mapping[str, Value],
         sizes: dict[str, int | None] | None = None) -> dict[str, Value]:
    """A copy of `env` extended with the names `pattern` binds to (parts of) `value`.
    `sizes` collects the size names the annotations bind (shared by the parameters of one
    call); pass None where no annotation can bind a new size name."""
    out = dict(env)
    _bind_into(pattern, value, out, sizes if sizes is not None else {}, env)
    return out


def _bind_into(pattern: ast.Pattern, value: Value, out: dict[str, Value],
               sizes: dict[str, int | None], scope: Mapping[str, Value]) -> None:
    if pattern.annot is not None:
        check_sizes(pattern.annot, value, sizes, scope, pattern.span)
    if isinstance(pattern, ast.PVar):
        out[pattern.name] = value
    elif isinstance(pattern, ast.PTuple):
        if not isinstance(value, tuple) or len(value) != len(pattern.elems):
            raise TypeError(f"tuple pattern of {len(pattern.elems)} does not match {value!r}")
        for sub, part in zip(pattern.elems, value):
            _bind_into(sub, part, out, sizes, scope)


def bind_sizes(env: dict[str, Value], sizes: Mapping[str, int | None]) -> dict[str, Value]:
    """Size names become `i64` variables of the body (unless the scope already has them).
    One that only the rows of empty arrays carry (`[n][m]` given `[]`) is 0, *provisional*:
    a later pattern in its scope that has that length binds it anew (a def's parameters are
    patterns of nested `let`s once `desugar` inlined it)."""
    for name, n in sizes.items():
        if name in env and not provisional(env, name):
            continue
        value = np.int64(0 if n is None else n)
        env[name] = value
        if n is None:
            env[PROVISIONAL + name] = value
    return env


PROVISIONAL = "?reached "       # key of a provisional size's value in a scope (not a name)


def provisional(scope: Mapping[str, Value], name: str) -> bool:
    return name in scope and scope.get(PROVISIONAL + name) is scope[name]


def check_sizes(annot: ast.TypeExpr, value: Value, sizes: dict[str, int | None],
                scope: Mapping[str, Value], span: Span | None) -> None:
    """Check the sizes `annot` declares against `value`, binding new size names in `sizes`."""
    if not _has_size(annot):
        return
    if isinstance(annot, ast.TArray):
        if annot.size is not None:
            _check_size(annot.size, len(value), sizes, scope, span)
        if _has_size(annot.elem):
            for row in value:
                check_sizes(annot.elem, row, sizes, scope, span)
            if len(value) == 0:         # no row gives the rows' sizes (yet): 0 unless one does
                for name in _size_names(annot.elem):
                    sizes.setdefault(name, None)
    elif isinstance(annot, ast.TTuple):
        for sub, part in zip(annot.elems, value):
            check_sizes(sub, part, sizes, scope, span)


def _check_size(size: ast.Size, actual: int, sizes: dict[str, int | None],
                scope: Mapping[str, Value], span: Span | None) -> None:
    if isinstance(size, tuple):          # `[n * m]t`: variables bound before (the checker)
        expected = 1
        for factor in size:
            expected *= factor if isinstance(factor, int) else int(scope[factor])
        if actual != expected:
            shown = " * ".join(map(str, size))
            raise SizeError(f"expected {expected} elements for size {shown}, got {actual}",
                            span)
        return
    if isinstance(size, int):
        if actual != size:
            raise SizeError(f"expected {size} elements, got {actual}", span)
        return
    expected = sizes.get(size)
    if expected is None and size in scope and scalars.is_int(scope[size]) \
            and not provisional(scope, size):
        expected = int(scope[size])
    if expected is None:
        sizes[size] = actual
    elif expected != actual:
        raise SizeError(f"expected {expected} elements for size {size}, got {actual}", span)


def _size_names(annot: ast.TypeExpr) -> list[str]:
    if isinstance(annot, ast.TArray):
        own = [annot.size] if isinstance(annot.size, str) else []
        return own + _size_names(annot.elem)
    if isinstance(annot, ast.TTuple):
        return [name for e in annot.elems for name in _size_names(e)]
    return []


def _has_size(annot: ast.TypeExpr) -> bool:
    if isinstance(annot, ast.TArray):
        return annot.size is not None or _has_size(annot.elem)
    if isinstance(annot, ast.TTuple):
        return any(_has_size(e) for e in annot.elems)
    return False
