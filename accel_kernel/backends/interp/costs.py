"""Work and depth counted while the interpreter runs (docs/flat.md, "Work and depth of the
interpreter"), under the cost model of the flat IR so that the two can be compared.

*Work* counts the scalar operations performed and the scalars of the arrays produced; *depth*
the parallel steps of the nested program: sequential evaluation adds, the elements of a
parallel step (`parallel`) cost the deepest of them plus 1, and the combining steps of a
reduction or scan (`tree`) cost `ceil(log2 n)` times the deepest. The evaluator charges the
operators, `if`, indexing and the values it builds; `builtin` charges a builtin's own step
(its function arguments' applications count themselves). After an error the counters are
unspecified.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, TypeVar

from ...lang.scalar_ops import CONVERSIONS
from .model import Sequence, Value

Item = TypeVar("Item")


def log_depth(n: int) -> int:
    """`ceil(log2 n)`, at least 1."""
    return max(1, math.ceil(math.log2(n))) if n > 1 else 1


def scalars_in(value: Value) -> int:
    """The number of scalars in a value (of an array: of all its elements, ragged or not)."""
    if isinstance(value, list):
        if value and isinstance(value[0], (list, tuple)):
            return sum(scalars_in(v) for v in value)
        return len(value)
    if isinstance(value, tuple):
        return sum(scalars_in(v) for v in value)
    if isinstance(value, Sequence):
        return sum(scalars_in(v) for v in value.items)
    return 1


def own_elements(value: Value) -> int:
    """The scalars an array holds itself: each scalar (or scalar in a tuple) counts 1 and
    each inner array 1, as a reference to a row that was counted when it was built."""
    if isinstance(value, (list, Sequence)):
        return sum(_own(v) for v in value)
    return 1


def _own(element: Value) -> int:
    if isinstance(element, tuple):
        return sum(_own(v) for v in element)
    return 1


def array_scalars(args: list[Value]) -> int:
    """N_in: the scalars of a builtin's array (and sequence) arguments."""
    return sum(scalars_in(a) for a in args if isinstance(a, (list, Sequence)))


# What a builtin's own step costs; the applications of its function arguments count
# themselves (through `parallel`, `tree` or, for sequential ones, plain evaluation).
SCALAR = "scalar"        # 1, 1
RESULT = "result"        # N_out, 0: the elements' depth is the step's
BUILD = "build"          # N_out, 1
VISIT = "visit"          # N_in, 0: a reduction or scan reads every element
LIBRARY = "library"      # docs/flat.md's table of library functions
FREE = "free"            # 0, 0: `while` counts its iterations itself

RULES: dict[str, str] = {
    **dict.fromkeys(["abs", "sqrt", "exp", "log", "sin", "cos", "tan", "floor", "ceil",
                     "round", *CONVERSIONS, "min", "max", "atan2", "select",
                     "cond"], SCALAR),
    **dict.fromkeys(["map", "map2", "map3", "generate", "filter", "expand", "produce",
                     "mapSeq", "zipWithSeq"], RESULT),
    **dict.fromkeys(["iota", "replicate", "zip", "zip3", "unzip", "unzip3", "stream",
                     "elements", "tabulate"], BUILD),
    **dict.fromkeys(["reduce", "scan", "foldSeq"], VISIT),
    **dict.fromkeys(["sort", "sort_by", "scatter", "reduce_by_index", "partition", "concat",
                     "transpose", "reverse", "rotate", "take", "drop", "interleave", "head",
                     "last", "length", "flatten"], LIBRARY),
    "while": FREE,
}


def library_cost(name: str, args: list[Value], result: Value) -> tuple[int, int]:
    """Work and depth of a library function, as for the flat target (docs/flat.md)."""
    if name in ("head", "last", "length", "flatten"):
        return 1, 1
    n_in, n_out = array_scalars(args), scalars_in(result)
    if name in ("sort", "sort_by"):
        return n_in * log_depth(n_in), log_depth(n_in) ** 2
    if name in ("reduce_by_index", "partition"):
        return n_in + n_out, log_depth(n_in)
    return n_in + n_out, 1


@dataclass(slots=True)
class InterpCosts:
    """The running totals (`Interpreter.costs`), or a cell's share of them
    (`CellValues.costs`)."""
    work: int = 0
    depth: int = 0

    def op(self) -> None:
        """One scalar operation (also an `if`, an index, a loop iteration)."""
        self.work += 1
        self.depth += 1

    def produced(self, value: Value) -> None:
        """The elements of an array whose computation was counted already (a parallel step's
        result): one unit of work per element it holds itself (`own_elements`: rows built
        by the elements were counted when they were built, so nesting is not counted twice
        and a work blow-up of flattening by the nesting depth stays visible)."""
        self.work += own_elements(value)

    def built(self, value: Value, copy: bool = True) -> None:
        """An array built in one step, depth 1: a copy (`iota`, `replicate`, a slice, `with`)
        costs one unit per scalar it holds; a literal (`copy=False`) one per element it
        holds itself, as its rows were built by their own literals."""
        self.work += scalars_in(value) if copy else own_elements(value)
        self.depth += 1

    def builtin(self, name: str, args: list[Value], result: Value) -> None:
        """A builtin's own step, by its rule in `RULES`, once it has given `result`."""
        rule = RULES[name]
        if rule is SCALAR:
            self.work += 1
            self.depth += 1
        elif rule is RESULT:
            self.produced(result)
        elif rule is BUILD:
            self.built(result)
        elif rule is VISIT:
            self.work += array_scalars(args)
        elif rule is LIBRARY:
            work, depth = library_cost(name, args, result)
            self.work += work
            self.depth += depth

    def parallel(self, body: Callable[[Item], Value], items: Iterable[Item]) -> list[Value]:
        """`body(item)` for each item, in order, as the elements of one parallel step:
        depth 1 + the deepest element."""
        out, deepest = self._elements(body, items)
        self.depth += 1 + deepest
        return out

    def tree(self, step: Callable[[Item], Value], items: Iterable[Item]) -> list[Value]:
        """`step(item)` for each item, in order, as the combining steps of a reduction or
        scan, which a parallel machine does as a tree: depth ceil(log2 n) times the deepest
        step (at least 1)."""
        out, deepest = self._elements(step, items)
        self.depth += log_depth(len(out)) * max(1, deepest)
        return out

    def _elements(self, body: Callable[[Item], Value],
                  items: Iterable[Item]) -> tuple[list[Value], int]:
        """The results and the deepest element. Producing an item (a comprehension's
        qualifiers) counts toward the element it produces."""
        start, deepest, out = self.depth, 0, []
        self.depth = 0
        for item in items:
            out.append(body(item))
            if self.depth > deepest:
                deepest = self.depth
            self.depth = 0
        # Producing no further item (guards that fail after the last element) costs too.
        deepest = max(deepest, self.depth)
        self.depth = start
        return out, deepest
