"""The program tree the generator builds and the shrinker cuts: typed text with holes.

A `Node` is a piece of accel source of a known type: a sequence of strings and child nodes
that concatenate to its text. Every node the generator makes is already parenthesised where
it needs to be, so replacing a node by any other node of the same type gives a program that
parses (whether it still type checks depends on the names it reads: the shrinker checks).
A `Program` is the defs it needs, its global `let`s and its final expression, one per line.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator

# The types the generator makes values of.
I64, BOOL, F64 = "i64", "bool", "f64"
ARR1, ARR2, ARR3 = "[]i64", "[][]i64", "[][][]i64"
PAIR = "(i64, []i64)"
ARRAY_DEPTH = {ARR1: 1, ARR2: 2, ARR3: 3}


@dataclass(frozen=True)
class Node:
    type: str
    parts: tuple["str | Node", ...]
    lit: int | None = None              # the value of an integer literal (shrunk towards 0)
    items: bool = False                 # an array literal: parts are "[", e, ", ", e, ..., "]"

    @property
    def text(self) -> str:
        return "".join(p if isinstance(p, str) else p.text for p in self.parts)

    def size(self) -> int:
        return 1 + sum(p.size() for p in self.parts if isinstance(p, Node))

    def children(self) -> list["Node"]:
        return [p for p in self.parts if isinstance(p, Node)]


def node(type: str, *parts: "str | Node") -> Node:
    return Node(type, tuple(parts))


def int_lit(value: int) -> Node:
    return Node(I64, (str(value) if value >= 0 else f"({value})",), lit=value)


def array_lit(type: str, elements: list[Node]) -> Node:
    """`[e1, e2, ...]`, or an ascribed empty array when there are no elements."""
    if not elements:
        return node(type, f"([] : {type})")
    parts: list[str | Node] = ["["]
    for k, element in enumerate(elements):
        if k:
            parts.append(", ")
        parts.append(element)
    parts.append("]")
    return Node(type, tuple(parts), items=True)


def smallest(type: str) -> list[Node]:
    """The simplest values of a type, which the shrinker tries in place of a node."""
    if type == I64:
        return [int_lit(0), int_lit(1)]
    if type == BOOL:
        return [node(BOOL, "true"), node(BOOL, "false")]
    if type == F64:
        return [node(F64, "0.0")]
    if type in ARRAY_DEPTH:
        depth = ARRAY_DEPTH[type]
        return [node(type, f"([] : {type})"), node(type, "[" * depth + "0" + "]" * depth)]
    return []


# ---------------------------------------------------------------- paths into a tree

Path = tuple[int, ...]          # indices into `parts`, from the root


def walk(root: Node, path: Path = ()) -> Iterator[tuple[Path, Node]]:
    """Every node with its path, parents before children."""
    yield path, root
    for k, part in enumerate(root.parts):
        if isinstance(part, Node):
            yield from walk(part, path + (k,))


def replace_at(root: Node, path: Path, new: Node) -> Node:
    if not path:
        return new
    k = path[0]
    parts = list(root.parts)
    parts[k] = replace_at(parts[k], path[1:], new)
    return replace(root, parts=tuple(parts))


def drop_item(literal: Node, k: int) -> Node:
    """The array literal without its k-th element (k counts elements, not parts)."""
    elements = [p for p in literal.parts if isinstance(p, Node)]
    del elements[k]
    return array_lit(literal.type, elements)


# ---------------------------------------------------------------- whole programs

@dataclass(frozen=True)
class Form:
    """One line of the program: `let NAME = EXPR`, or the final expression (name None)."""
    name: str | None
    expr: Node

    @property
    def text(self) -> str:
        return self.expr.text if self.name is None else f"let {self.name} = {self.expr.text}"


@dataclass(frozen=True)
class Program:
    defs: tuple[str, ...]               # the helper defs it uses, one line each
    forms: tuple[Form, ...]             # global lets, then the final expression

    @property
    def text(self) -> str:
        return "\n".join([*self.defs, *(f.text for f in self.forms)]) + "\n"

    def size(self) -> int:
        return len(self.defs) + sum(f.expr.size() for f in self.forms)
