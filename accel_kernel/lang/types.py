"""Semantic types of accel (what the type checker infers), and their printer.

`Scalar("i64")`, `Array(elem)`, `Tuple((t1, t2))`, `Func(param, result)` (curried),
`Seq(elem)` and `TypeVar(name)`. Sizes are not part of types: size annotations are checked
at run time. A `Scheme` is a generic type: `forall vars. type`, where each quantified variable
may be constrained to a class of scalar types (`num`, `int`, `float`, `scalar`, `bits`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

SIGNED = ("i8", "i16", "i32", "i64")
UNSIGNED = ("u8", "u16", "u32", "u64")
SCALARS = ("bool", "i32", "i64", "f32", "f64", "i8", "i16", "u8", "u16", "u32", "u64")

# A constraint is the set of scalar types a type variable may stand for.
CLASSES: dict[str, frozenset[str]] = {
    "num": frozenset({*SIGNED, *UNSIGNED, "f32", "f64"}),
    "int": frozenset({*SIGNED, *UNSIGNED}),
    "float": frozenset({"f32", "f64"}),
    "scalar": frozenset(SCALARS),
    "bits": frozenset({"bool", *SIGNED, *UNSIGNED}),
}


@dataclass(frozen=True)
class Scalar:
    name: str


@dataclass(frozen=True)
class Array:
    elem: "Type"


@dataclass(frozen=True)
class Tuple:
    elems: tuple["Type", ...]


@dataclass(frozen=True)
class Func:
    param: "Type"
    result: "Type"


@dataclass(frozen=True)
class Seq:
    elem: "Type"


@dataclass(frozen=True)
class TypeVar:
    name: str


Type = Union[Scalar, Array, Tuple, Func, Seq, TypeVar]

BOOL, I32, I64, F32, F64 = (Scalar(n) for n in SCALARS[:5])


@dataclass(frozen=True)
class Scheme:
    """`forall vars. type`; `constraints` maps a variable name to the class name limiting it."""
    vars: tuple[str, ...]
    type: Type
    constraints: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    def __str__(self) -> str:
        return show_scheme(self)


def show(t: Type) -> str:
    """Accel syntax for a type: `[]i64`, `(i64, f64)`, `i64 -> []f32`, `seq []i64`."""
    if isinstance(t, Scalar):
        return t.name
    if isinstance(t, TypeVar):
        return t.name
    if isinstance(t, Array):
        return "[]" + _show_atomic(t.elem)
    if isinstance(t, Tuple):
        return "(" + ", ".join(show(e) for e in t.elems) + ")"
    if isinstance(t, Seq):
        return "seq " + _show_atomic(t.elem)
    if isinstance(t, Func):
        left = show(t.param)
        if isinstance(t.param, Func):
            left = f"({left})"
        return f"{left} -> {show(t.result)}"
    raise TypeError(f"not a type: {t!r}")


def _show_atomic(t: Type) -> str:
    text = show(t)
    return f"({text})" if isinstance(t, (Func, Seq)) else text


def show_scheme(s: Scheme) -> str:
    cons = [f"{cls} {v}" for v, cls in sorted(s.constraints.items()) if v in s.vars]
    prefix = (", ".join(cons) + " => ") if cons else ""
    return prefix + show(s.type)


def free_vars(t: Type) -> set[str]:
    if isinstance(t, TypeVar):
        return {t.name}
    if isinstance(t, (Array, Seq)):
        return free_vars(t.elem)
    if isinstance(t, Tuple):
        return set().union(*(free_vars(e) for e in t.elems)) if t.elems else set()
    if isinstance(t, Func):
        return free_vars(t.param) | free_vars(t.result)
    return set()


def substitute(t: Type, mapping: dict[str, Type]) -> Type:
    """Replace type variables by the types `mapping` gives them (others stay)."""
    if isinstance(t, TypeVar):
        return mapping.get(t.name, t)
    if isinstance(t, Array):
        return Array(substitute(t.elem, mapping))
    if isinstance(t, Seq):
        return Seq(substitute(t.elem, mapping))
    if isinstance(t, Tuple):
        return Tuple(tuple(substitute(e, mapping) for e in t.elems))
    if isinstance(t, Func):
        return Func(substitute(t.param, mapping), substitute(t.result, mapping))
    return t


def array_rank(t: Type) -> int:
    rank = 0
    while isinstance(t, Array):
        rank, t = rank + 1, t.elem
    return rank


def contains_func(t: Type) -> bool:
    if isinstance(t, Func):
        return True
    if isinstance(t, (Array, Seq)):
        return contains_func(t.elem)
    if isinstance(t, Tuple):
        return any(contains_func(e) for e in t.elems)
    return False


def ordered_vars(t: Type) -> list[str]:
    """The type variables of `t`, in order of first appearance."""
    out: list[str] = []

    def visit(t: Type) -> None:
        if isinstance(t, TypeVar):
            if t.name not in out:
                out.append(t.name)
        elif isinstance(t, (Array, Seq)):
            visit(t.elem)
        elif isinstance(t, Tuple):
            for e in t.elems:
                visit(e)
        elif isinstance(t, Func):
            visit(t.param)
            visit(t.result)

    visit(t)
    return out
