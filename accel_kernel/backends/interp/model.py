"""The interpreter's value model (the reference meaning of every accel value).

- scalars: numpy scalars of the exact type (`np.bool_`, `np.int32`, `np.int64`, `np.float32`,
  `np.float64`);
- arrays: Python lists, never mutated once built (nested arrays are lists of lists, possibly
  ragged);
- tuples: Python tuples;
- functions: the frozen classes below (user lambdas, user defs, builtins, operators, partial
  applications; a section is a partial application of an operator);
- sequences: `Sequence`, an eager list of elements.

A global read from the session may be `Stored` (kept in a compiled target's form): the
evaluator takes its `interp` value, or reads one element of it (`a[7]`) through `array()`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ...lang import ast
from ...lang.source import Span
from ...lang.types import Type

Value = Any
TypeSubst = Mapping[str, Type]


@dataclass(frozen=True, eq=False)
class Closure:
    """A user lambda `\\p1 p2 -> body` with the local scope and type substitution it was
    created in."""
    params: tuple[ast.Pattern, ...]
    body: ast.Expr
    env: Mapping[str, Value]
    tsubst: TypeSubst

    @property
    def arity(self) -> int:
        return len(self.params)


@dataclass(frozen=True, eq=False)
class DefFunc:
    """A user `def`. Globals in its body are looked up by name when it is called (late
    binding); `tsubst` gives its type variables at this use (dictionary passing for `zero`...).
    A def without parameters is a constant, evaluated on each use."""
    defn: ast.Def
    tsubst: TypeSubst

    @property
    def arity(self) -> int:
        return len(self.defn.params)

    @property
    def name(self) -> str:
        return self.defn.name


@dataclass(frozen=True, eq=False)
class BuiltinFunc:
    """A built-in function; `impl(interp, *args)` receives exactly `arity` arguments."""
    name: str
    arity: int
    impl: Callable[..., Value]


@dataclass(frozen=True, eq=False)
class OperatorFunc:
    """A binary operator as a function: `(+)`; `flipped` takes its operands in reverse order
    (the right section `(+1)` is `Partial(OperatorFunc("+", flipped=True), (1,))`). `span` is
    where the operator was written, for the errors it raises."""
    op: str
    span: Span | None = None
    flipped: bool = False

    @property
    def arity(self) -> int:
        return 2


@dataclass(frozen=True, eq=False)
class Partial:
    """A function applied to fewer arguments than it takes."""
    fn: "Function"
    args: tuple[Value, ...]

    @property
    def arity(self) -> int:
        return self.fn.arity - len(self.args)


Function = Closure | DefFunc | BuiltinFunc | OperatorFunc | Partial
FUNCTION_TYPES = (Closure, DefFunc, BuiltinFunc, OperatorFunc, Partial)


@dataclass(frozen=True, eq=False)
class Sequence:
    """A sequence (LANGUAGE.md §7). The interpreter computes it eagerly: its elements in order."""
    items: tuple[Value, ...]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def __repr__(self) -> str:
        return f"Sequence({list(self.items)!r})"


class Stored:
    """A global's value that a session keeps in another form than the interpreter's (a
    compiled target's flat buffers: `host.HostValue`). `interp` is its interp value (converted
    when first read); `array()` is what indexing reads: an object whose `len` and `[k]` read
    one element without converting the whole array, or the interp value."""
    interp: Value

    def array(self) -> Value:
        return self.interp


def is_function(value: Value) -> bool:
    return isinstance(value, FUNCTION_TYPES)


def describe(fn: Function) -> str:
    """A short name for a function value, for messages."""
    if isinstance(fn, DefFunc):
        return fn.name
    if isinstance(fn, BuiltinFunc):
        return fn.name
    if isinstance(fn, OperatorFunc):
        return f"({fn.op})"
    if isinstance(fn, Partial):
        return describe(fn.fn)
    return "lambda"
