"""Writing the Python source of one numba function (the `cpu` back end).

A `Val` is a scalar in the generated code: a Python expression, its accel scalar type (the
numba type it has: `i32` is `np.int32`, ...) and the precedence of its outermost operator,
so that operands are parenthesised only where Python needs it. `FunctionWriter` collects the
statements of one function body with their indentation, gives fresh names (after the accel
variables they hold) and writes the error checks: a failing check stores its site's code in
`err` and returns a dummy result, whose type is known only at the end (`RETURN_DUMMY`).

A `Dialect` is what differs between the numba targets that share this writer: `NUMPY` (the
`cpu` target's `@njit` functions call numpy's functions, `np.sqrt`) and the `cuda` target's
device functions (`backends/cuda/dialect.py`: `math.sqrt`, no numpy ufuncs on the device).
Only the calls of numpy functions differ (`Dialect.call`), and signed integer `/` and `%`
(the `cpu` target's are `int_division.py`'s `sdiv` and `srem`); numpy's scalar types
(`np.int32`, `np.uint64`) and constants (`np.nan`, `np.pi`) are spelled alike in both.
Where the dialect `polls` (the `cpu` target's), `render` rewrites the function's loops so
that they poll the cancel flag (`polling.py`); device code does not.
"""
from __future__ import annotations

import keyword
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from ...ir.scalar import fresh_name
from ...lang.source import Span
from .errors import ErrorTable
from .polling import poll_loops

# Python precedences, loosest first (only what generated code uses)
TERNARY, OR, AND, NOT, COMPARE, BIT_OR, BIT_XOR, BIT_AND, SHIFT, SUM, PRODUCT, UNARY = range(12)
ATOM = 20

BINARY_PREC = {"or": OR, "and": AND, "|": BIT_OR, "^": BIT_XOR, "&": BIT_AND, "<<": SHIFT,
               ">>": SHIFT, "+": SUM, "-": SUM, "*": PRODUCT, "/": PRODUCT, "//": PRODUCT,
               "%": PRODUCT, "==": COMPARE, "!=": COMPARE, "<": COMPARE, "<=": COMPARE,
               ">": COMPARE, ">=": COMPARE}

# names generated code relies on, never given to a variable
RESERVED = frozenset({"np", "err", "range", "min", "max", "abs", "len", "True", "False",
                      "stop_asked",                             # polling.py's flag read
                      "trunc_div", "trunc_rem",                 # int_division.py's
                      "load", "prefetch",                       # unchecked.py's
                      "None", "math", "device_math", "cuda",    # the cuda dialect's modules
                      *keyword.kwlist, *keyword.softkwlist})

RETURN_DUMMY = object()       # a line: `return <the dummy result>`, filled in at the end


@dataclass(frozen=True)
class Val:
    """A scalar of accel type `type` in generated code. `simple`: a name, a literal or a
    subscript, cheap and safe to repeat (anything else is bound to a name before it is
    used twice). `unsigned`: for `np.int64(<u>)`, the uint64 expression `u`, which wrapping
    arithmetic continues without converting back and forth."""
    code: str
    type: str
    prec: int = ATOM
    simple: bool = False
    unsigned: "Val | None" = None


def operand(val: Val, prec: int, strict: bool = False) -> str:
    """`val` as an operand of an operator of precedence `prec` (`strict`: equal precedence
    needs parentheses too: a right operand, a comparison's operands)."""
    if val.prec < prec or (strict and val.prec == prec):
        return f"({val.code})"
    return val.code


def infix(left: Val, op: str, right: Val, type: str) -> Val:
    prec = BINARY_PREC[op]
    return Val(f"{operand(left, prec, prec == COMPARE)} {op} {operand(right, prec, True)}",
               type, prec)


def call(fn: str, args: Sequence[Val | str], type: str) -> Val:
    return Val(f"{fn}({', '.join(a.code if isinstance(a, Val) else a for a in args)})", type)


@dataclass(frozen=True)
class Dialect:
    """How one numba target spells a call of numpy's function `name` (a `lang/scalar_ops.py`
    `numpy` name: "sqrt", "divide", "fmod", "isnan", ...) on operands of accel type `type`.
    `spell(name, type, args)` gives the call as a `Val`; None: numpy's own, `np.<name>(...)`."""
    name: str                                     # the target, for "not built yet" messages
    spell: Callable[[str, str, Sequence[Val]], "Val | None"] = lambda name, type, args: None
    polls: bool = False       # loops poll the cancel flag (`polling.py`): host code only
    truncating_division: bool = False     # signed `/ %` as `int_division.py`'s intrinsics
    unchecked_reads: bool = False   # checked reads as `unchecked.py`'s `load(a, i, ...)`

    def call(self, name: str, args: Sequence[Val], type: str) -> Val:
        return self.spell(name, type, args) or call(f"np.{name}", args, type)


NUMPY = Dialect("cpu", polls=True,  # the cpu target: numpy's functions, as numba compiles them
                truncating_division=True, unchecked_reads=True)


def python_name(name: str) -> str:
    """A valid, non-reserved Python identifier for an accel name (accel names are ASCII
    letters, digits and `_`)."""
    name = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name) or "v"
    if name[0].isdigit():
        name = "v" + name
    return name + "_" if name in RESERVED else name


class FunctionWriter:
    """The body of one generated function: lines with their depth, names in use."""

    def __init__(self, errors: ErrorTable, used: set[str], dialect: Dialect = NUMPY):
        self.errors = errors
        self.dialect = dialect
        self.used = set(RESERVED) | used
        self.lines: list[tuple[int, object]] = []
        self.depth = 1

    # ------------------------------------------------------------------ names and lines

    def fresh(self, base: str) -> str:
        """A new variable name: `base` itself, else `base_1`, `base_2`, ..."""
        return fresh_name(python_name(base), self.used)

    def emit(self, line: object) -> None:
        self.lines.append((self.depth, line))

    @contextmanager
    def indented(self) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    @contextmanager
    def capture(self) -> Iterator[list]:
        """Collects the lines emitted inside (at their own depth) instead of writing them."""
        saved, self.lines = self.lines, []
        captured = self.lines
        try:
            yield captured
        finally:
            self.lines = saved

    def splice(self, lines: list) -> None:
        self.lines.extend(lines)

    def bind(self, val: Val, base: str) -> Val:
        """`val` computed once into a fresh variable."""
        name = self.fresh(base)
        self.emit(f"{name} = {val.code}")
        return Val(name, val.type, ATOM, True)

    def atom(self, val: Val, base: str) -> Val:
        """`val` as something cheap to repeat (bound to a variable unless it is simple)."""
        return val if val.simple else self.bind(val, base)

    # ------------------------------------------------------------------ errors

    def check(self, failed: str, kind: str, message: str, span: Span | None,
              details: Sequence[str] = ()) -> None:
        """`if failed:` report the site (with up to two details) and return."""
        code = self.errors.code(kind, message, span)
        self.emit(f"if {failed}:")
        with self.indented():
            for k, detail in enumerate(details, start=1):
                self.emit(f"err[{k}] = {detail}")
            self.emit(f"err[0] = {code}  # {self.errors.sites[code - 1].where()}")
            self.emit(RETURN_DUMMY)

    def render(self, dummy: str) -> list[str]:
        """The body's lines, its loops polling the cancel flag where the dialect's do."""
        lines = poll_loops(self.lines, self.fresh) if self.dialect.polls else self.lines
        return ["    " * depth + (f"return {dummy}" if line is RETURN_DUMMY else str(line))
                for depth, line in lines]
