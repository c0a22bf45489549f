"""Work and depth counted while the `numpy` target runs a flat program.

Every executed statement adds its *work* (elements produced or visited) and *depth* (parallel
steps) as `ir/flat.py` and docs/flat.md give them, measured on the actual values: N is the
number of flat scalars of the input, s the number of segments, and `log N` is
`ceil(log2 N)` (at least 1). Depths add up along the sequence of statements (statements are
not overlapped); a Loop adds the depths of all its iterations, an If those of the branch it
ran. With `trace=True` each statement's value is kept as well, for the views.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...ir.flat import Stmt
from .values import Segs


def log_depth(n: int) -> int:
    return max(1, math.ceil(math.log2(n))) if n > 1 else 1


def count(value: Any) -> int:
    """The number of flat scalars in a value (offsets not counted)."""
    if isinstance(value, tuple):
        return sum(count(v) for v in value)
    if isinstance(value, Segs):
        return count(value.values)
    if isinstance(value, np.ndarray):
        return int(value.size)
    return 1


@dataclass(frozen=True)
class StepCost:
    stmt: Stmt
    work: int
    depth: int


@dataclass
class Counters:
    """Totals and one `StepCost` per executed statement (a statement in a loop body appears
    once per iteration). `trace` holds `(stmt, value)` pairs when tracing."""
    work: int = 0
    depth: int = 0
    steps: list[StepCost] = field(default_factory=list)
    trace: list[tuple[Stmt, Any]] | None = None

    def add(self, stmt: Stmt, work: int, depth: int) -> None:
        self.work += work
        self.depth += depth
        self.steps.append(StepCost(stmt, work, depth))

    def record(self, stmt: Stmt, value: Any) -> None:
        if self.trace is not None:
            self.trace.append((stmt, value))

    def by_statement(self) -> dict[int, tuple[int, int, int]]:
        """Statement id -> (work, depth, times executed), summed over executions."""
        out: dict[int, tuple[int, int, int]] = {}
        for step in self.steps:
            work, depth, times = out.get(step.stmt.id, (0, 0, 0))
            out[step.stmt.id] = (work + step.work, depth + step.depth, times + 1)
        return out


def lib_cost(name: str, n_in: int, n_out: int) -> tuple[int, int]:
    """Work and depth of a library function (docs/flat.md): n_in flat input elements,
    n_out output elements."""
    if name in ("sort", "sort_by"):
        return n_in * log_depth(n_in), log_depth(n_in) ** 2
    if name in ("reduce_by_index", "partition"):
        return n_in + n_out, log_depth(n_in)
    if name in ("head", "last", "length", "flatten"):
        return 1, 1
    return n_in + n_out, 1
