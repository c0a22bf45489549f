"""Binary operators of reductions and scans: recognised ones run as numpy ufuncs.

`binary_operator(fn)` recognises `\\a b -> a + b`, `(+)`, `min`, `\\a b -> b * a` (for a
commutative operator) and the like; `Operator` combines two values with the ufunc or, for
any other operator, by evaluating the scalar code over lanes (`scalar_code`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.flat import ScalarFn
from ...lang import ast
from .rows import first_leaf as _leaf
from .rows import tmap
from .scalar_code import LaneEvaluator

ASSOCIATIVE = frozenset({"+", "*", "min", "max", "&&", "||", "&", "|", "^"})

UFUNCS: dict[str, np.ufunc] = {
    "+": np.add, "*": np.multiply, "min": np.minimum, "max": np.maximum,
    "&&": np.logical_and, "||": np.logical_or, "&": np.bitwise_and, "|": np.bitwise_or,
    "^": np.bitwise_xor,
}


class Operator:
    """A binary operator of a reduction or scan: a ufunc when recognised, else scalar code
    evaluated over lanes."""

    def __init__(self, fn: ScalarFn, evaluator: LaneEvaluator):
        self.fn = fn
        self.evaluator = evaluator
        self.name = binary_operator(fn)

    def ufunc(self, sample: Any) -> np.ufunc | None:
        if self.name is None or isinstance(sample, tuple):
            return None
        is_bool = np.asarray(sample).dtype.kind == "b"
        if self.name in ("&&", "||") and not is_bool or self.name in ("+", "*") and is_bool:
            return None
        return UFUNCS[self.name]

    def combine(self, a: Any, b: Any) -> Any:
        """`a op b` for values of one shape (or a numpy scalar with an array)."""
        ufunc = self.ufunc(a if isinstance(a, np.ndarray) else b)
        if ufunc is not None:
            return ufunc(a, b)
        like = b if isinstance(_leaf(b), np.ndarray) else a
        shape = _leaf(like).shape
        n = int(np.prod(shape))
        flat = [tmap(lambda x: x.reshape(-1) if isinstance(x, np.ndarray) else x, v)
                for v in (a, b)]
        out = self.evaluator.apply(self.fn, flat, n)
        return tmap(lambda x: x.reshape(shape), out)

    def is_identity(self, ne: Any) -> bool:
        """Whether `ne op x == x` for every x, so the final `ne op r` can be skipped."""
        if self.name is None or isinstance(ne, tuple):
            return False
        dtype = np.asarray(ne).dtype
        x = ne.item()
        if self.name in ("+", "|", "^", "||"):
            # for floats only -0.0 is neutral: 0.0 + -0.0 is 0.0
            return x == 0 and (dtype.kind != "f" or bool(np.signbit(ne)))
        if self.name in ("*",):
            return x == 1
        if self.name in ("&&", "&"):
            return x is True or x == -1
        if dtype.kind == "f":
            return x == (np.inf if self.name == "min" else -np.inf)
        if dtype.kind == "b":
            return x == (self.name == "min")
        info = np.iinfo(dtype)
        return x == (info.max if self.name == "min" else info.min)

    def with_ne(self, ne: Any, r: Any) -> Any:
        return r if self.is_identity(ne) else self.combine(ne, r)


def binary_operator(fn: ScalarFn) -> str | None:
    """The associative operator `fn` is (`\\a b -> a + b`, `(+)`, `min`, `\\a b -> b * a`
    for a commutative one), or None. A recognised operator runs as a numpy ufunc."""
    params, body = fn.params, fn.body
    while not params and isinstance(body, ast.Lambda):
        params, body = body.params, body.body
    shadowed = {v.name for v in fn.free}
    if not params:
        if isinstance(body, ast.OpFunc) and body.op in ASSOCIATIVE:
            return body.op
        if isinstance(body, ast.Var) and body.name in ("min", "max") and body.name not in shadowed:
            return body.name
        return None
    if len(params) != 2 or not all(isinstance(p, ast.PVar) for p in params):
        return None
    a, b = (p.name for p in params)       # type: ignore[union-attr]
    if isinstance(body, ast.BinOp):
        op, operands = body.op, (body.left, body.right)
    elif isinstance(body, ast.Apply) and len(body.args) == 2 and isinstance(
            body.fn, (ast.OpFunc, ast.Var)):
        op = body.fn.op if isinstance(body.fn, ast.OpFunc) else body.fn.name
        if op in shadowed or op in (a, b):
            return None
        operands = body.args
    else:
        return None
    names = tuple(e.name if isinstance(e, ast.Var) else None for e in operands)
    if a == b or op not in ASSOCIATIVE or names not in ((a, b), (b, a)):
        return None
    return op
