"""A fix to numba's parallel compiler that the `cpu` target's kernels need (applied once, when
`stop_flag.py`, which every generated module imports, is imported).

numba's array analysis (run on every `parallel=True` function before its `prange` loops
become parfors) takes a tuple built in the function for an array's shape and tracks it.
For a tuple holding another tuple, as a scalar function returning `((a, b), c)` builds (a
comprehension over three generators: the triples), it then fails with `IndexError: tuple
index out of range` or an `AssertionError` on dimensions (numba 0.68, also for floats in
the tuple), so the parallel variant of such a kernel did not compile: the tiered launch
stayed sequential and `$ACCEL_KERNELS=parallel` raised an internal error. A shape is
never a nested tuple, so such a tuple is left untracked, as numba itself leaves a tuple
holding a multi-dimensional array (`_analyze_op_build_tuple` returns None).
"""
from __future__ import annotations

from typing import Any

from numba.core import ir, types
from numba.parfors.array_analysis import ArrayAnalysis

_build_tuple = ArrayAnalysis._analyze_op_build_tuple


def _untracked_if_nested(self: Any, scope: Any, equiv_set: Any, expr: Any, lhs: Any) -> Any:
    if any(isinstance(item, ir.Var) and isinstance(self.typemap[item.name], types.BaseTuple)
           for item in expr.items):
        return None
    return _build_tuple(self, scope, equiv_set, expr, lhs)


if not getattr(_build_tuple, "accel_fixed", False):
    _untracked_if_nested.accel_fixed = True      # type: ignore[attr-defined]
    ArrayAnalysis._analyze_op_build_tuple = _untracked_if_nested
