"""Flattening on real data: the flat program of a cell run on its actual inputs, with the
concrete value of every flat binding and the work and depth counters of both targets.

`Session.flat_run(text)` and `Program.flat_run(entry, *args)` build a `FlatRun`; `%step
flatten EXPR` shows it step by step. Long arrays are elided in the middle (`format_flat`);
a statement inside a loop shows its value in the last iteration and how often it ran.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..backends.numpy.costs import Counters
from ..backends.numpy.values import Segs
from ..compiler import Stage

LIMIT = 12          # array elements shown before eliding the middle


def format_flat(value: Any, limit: int = LIMIT) -> str:
    """A flat value in a line: `[0, 3, 3, 5]`, `[1, 2, 3, …, 98, 99]` (n=100),
    `offsets [0, 2, 2, 5] values [...]`, 2-D blocks row by row, tuples in parentheses."""
    if isinstance(value, Segs):
        return f"offsets {format_flat(value.offsets, limit)} values {format_flat(value.values, limit)}"
    if isinstance(value, tuple):
        return "(" + ", ".join(format_flat(v, limit) for v in value) + ")"
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return _scalar(value.item())
        items = [format_flat(row, limit) for row in _ends(value, limit)] if value.ndim > 1 \
            else [_scalar(x) for x in _ends(value, limit).tolist()]
        if len(value) > limit:
            half = limit // 2
            items[half:half] = ["…"]
            return "[" + ", ".join(items) + f"] (n={len(value)})"
        return "[" + ", ".join(items) + "]"
    if isinstance(value, np.generic):
        return _scalar(value.item())
    return _scalar(value)


def _ends(value: np.ndarray, limit: int) -> np.ndarray:
    if len(value) <= limit:
        return value
    half = limit // 2
    return np.concatenate([value[:half], value[len(value) - (limit - half):]])


def _scalar(x: Any) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    return repr(x) if isinstance(x, float) else str(x)


@dataclass
class FlatRun:
    """The flatten stage of a cell and what running its flat program on real inputs gave."""
    stage: Stage
    values: dict[int, Any] = field(default_factory=dict)     # statement id -> last value
    times: dict[int, int] = field(default_factory=dict)      # statement id -> executions
    costs: dict[int, tuple[int, int]] = field(default_factory=dict)   # id -> (work, depth)
    inputs: dict[str, Any] = field(default_factory=dict)     # globals read, as flat values
    work: int = 0
    depth: int = 0
    interp_work: int | None = None
    interp_depth: int | None = None
    result: str | None = None          # the value, in accel syntax
    error: str | None = None           # the accel error the run stopped at
    stages: list[Stage] = field(default_factory=list)       # every stage up to `stage`
    runs: bool = True                  # False: only defs, nothing to run on data

    @classmethod
    def from_counters(cls, stage: Stage, counters: Counters, **fields: Any) -> "FlatRun":
        run = cls(stage, work=counters.work, depth=counters.depth, **fields)
        for stmt, value in counters.trace or []:
            run.values[stmt.id] = value
        for stmt_id, (work, depth, times) in counters.by_statement().items():
            run.costs[stmt_id] = (work, depth)
            run.times[stmt_id] = times
        return run

    def value_text(self, stmt_id: int, limit: int = LIMIT) -> str | None:
        if stmt_id not in self.values:
            return None
        text = format_flat(self.values[stmt_id], limit)
        times = self.times.get(stmt_id, 1)
        return text + (f"  (last of {times} runs)" if times > 1 else "")

    def labels(self, limit: int = 8) -> dict[int, str]:
        """Short value texts for the nodes of the drawing."""
        out = {}
        for stmt_id in self.values:
            text = format_flat(self.values[stmt_id], limit)
            out[stmt_id] = text if len(text) <= 60 else text[:59] + "…"
        return out

    def counters_line(self) -> str:
        line = f"flat: work {self.work}, depth {self.depth}"
        if self.interp_work is not None:
            line += f" · interp: work {self.interp_work}, depth {self.interp_depth}"
            if self.interp_work:
                line += f" · work ratio {self.work / self.interp_work:.2f}"
        return line

    def step_lines(self, changed: tuple[int, ...]) -> list[str]:
        """The values and costs of the statements a step created."""
        by_id = {s.id: s for s in _statements(self.stage)}
        lines = []
        for stmt_id in changed:
            stmt = by_id.get(stmt_id)
            if stmt is None:
                continue
            names = ", ".join(t.name for t in stmt.targets) or f"#{stmt_id}"
            value = self.value_text(stmt_id)
            work, depth = self.costs.get(stmt_id, (0, 0))
            shown = value if value is not None else "(not run)"
            lines.append(f"    {names} = {shown}    [work {work}, depth {depth}]")
        return lines

    def text(self) -> str:
        """The flat program with the value and cost of every binding."""
        lines = [f"-- {self.counters_line()}"]
        for name, value in self.inputs.items():
            lines.append(f"-- input {name} = {format_flat(value)}")
        for stmt in _statements(self.stage):
            names = ", ".join(t.name for t in stmt.targets) or f"#{stmt.id}"
            value = self.value_text(stmt.id)
            work, depth = self.costs.get(stmt.id, (0, 0))
            lines.append(f"{names} = {value if value is not None else '(not run)'}"
                         f"    [work {work}, depth {depth}]")
        if self.result is not None:
            lines.append(f"-- result: {self.result}")
        if self.error is not None:
            lines.append(f"-- stopped: {self.error}")
        return "\n".join(lines)


    def dot(self) -> str:
        """The flat program drawn with every node's value."""
        from .graphs import stage_dot
        return stage_dot(self.stage, run=self,
                         title=f"flatten on real data · {self.counters_line()}")

    def svg(self) -> str | None:
        from .render import render_svg
        return render_svg(self.dot())

    def _repr_svg_(self) -> str | None:
        return self.svg()

    def __repr__(self) -> str:
        return self.text()


def _statements(stage: Stage):
    from .flat_views import statements
    return list(statements(stage.program))


def interp_costs(values: Any) -> tuple[int | None, int | None]:
    """(work, depth) of an interpreter run's `CellValues`, when it counted them."""
    costs = getattr(values, "costs", None)
    if costs is None:
        return None, None
    return costs.work, costs.depth
