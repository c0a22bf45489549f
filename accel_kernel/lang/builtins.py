"""The built-in names of accel (LANGUAGE.md §4 and §7) and the types of its operators.

`BUILTINS` maps each built-in name to a `Builtin`: its generic type (`types.Scheme`) and a
one-line doc. The table below is written in accel type syntax, with constraints in front:
`num a => a -> a -> a`. Type variables are lowercase names that are not scalar types; a
constraint names a class of `types.CLASSES` (`num int float scalar bits`). `parse_scheme`
reads that syntax. The derived functions (`sum`, `maximum`, `count`, ...) are not here: they
are accel source in `prelude.accel`.

`OPERATORS` gives the scheme of each binary operator (by its spelling) and `UNARY_OPERATORS`
that of `-` and `!` in prefix position. The scalar entries (operators, scalar functions,
conversions, constants: arity, type rule, doc) come from the one table of scalar semantics,
`scalar_ops.py`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import scalar_ops
from .types import (CLASSES, SCALARS, Array, Func, Scalar, Scheme, Seq, Tuple, Type, TypeVar,
                    free_vars, ordered_vars)


@dataclass(frozen=True)
class Builtin:
    name: str
    scheme: Scheme
    doc: str


# ---------------------------------------------------------------- the table

_ARRAYS: list[tuple[str, str, str]] = [
    # SOACs
    ("map", "(a -> b) -> []a -> []b",
     "map f xs: [f x | x <- xs], elementwise"),
    ("map2", "(a -> b -> c) -> []a -> []b -> []c",
     "map2 f xs ys: f applied to the pairs xs[i], ys[i]; the lengths must agree"),
    ("map3", "(a -> b -> c -> d) -> []a -> []b -> []c -> []d",
     "map3 f xs ys zs: f applied to xs[i], ys[i], zs[i]; the lengths must agree"),
    ("zip", "[]a -> []b -> [](a, b)",
     "zip xs ys: the array of pairs (xs[i], ys[i]); the lengths must agree"),
    ("zip3", "[]a -> []b -> []c -> [](a, b, c)",
     "zip3 xs ys zs: the array of triples (xs[i], ys[i], zs[i]); the lengths must agree"),
    ("unzip", "[](a, b) -> ([]a, []b)",
     "unzip ps: the array of first components and the array of second components"),
    ("unzip3", "[](a, b, c) -> ([]a, []b, []c)",
     "unzip3 ts: the three arrays of components of an array of triples"),
    ("reduce", "(a -> a -> a) -> a -> []a -> a",
     "reduce op ne xs: combines the elements with op (associative, ne its neutral element)"),
    ("scan", "(a -> a -> a) -> a -> []a -> []a",
     "scan op ne xs: inclusive prefix scan, element i is the reduction of xs[0..i]"),
    ("filter", "(a -> bool) -> []a -> []a",
     "filter p xs: the elements for which p holds, in order"),
    ("partition", "(a -> bool) -> []a -> ([]a, []a)",
     "partition p xs: (the elements where p holds, the others), both in order"),
    ("iota", "i64 -> []i64",
     "iota n: [0, 1, ..., n-1]; a negative n is a SizeError"),
    ("replicate", "i64 -> a -> []a",
     "replicate n x: an array of n copies of x"),
    ("generate", "i64 -> (i64 -> a) -> []a",
     "generate n f: [f 0, ..., f (n-1)], the same as map f (iota n)"),
    ("expand", "(a -> i64) -> (a -> i64 -> b) -> []a -> []b",
     "expand sz get xs: for each x, the elements get x 0 .. get x (sz x - 1), concatenated"),
    ("scatter", "[]a -> []i64 -> []a -> []a",
     "scatter dest is vs: a copy of dest with vs[k] written at index is[k]; "
     "out-of-range indices are ignored"),
    ("reduce_by_index", "[]a -> (a -> a -> a) -> a -> []i64 -> []a -> []a",
     "reduce_by_index dest op ne is vs: histogram, dest[is[k]] combined with vs[k] by op; "
     "out-of-range indices are ignored"),
    ("sort", "scalar a => []a -> []a",
     "sort xs: the elements in ascending order (stable, NaN last)"),
    ("sort_by", "scalar k => (a -> k) -> []a -> []a",
     "sort_by key xs: the elements ordered by ascending key x (stable)"),
    ("while", "(a -> bool) -> (a -> a) -> a -> a",
     "while p f x: applies f to x as long as p holds (x itself when p x is false)"),
    ("cond", "bool -> a -> a -> a",
     "cond c a b: a when c holds, else b; only the chosen branch is evaluated (like if)"),
    # arrays
    ("length", "[]a -> i64", "length xs: the number of elements of xs"),
    ("flatten", "[][]a -> []a", "flatten xss: the rows of xss concatenated"),
    ("concat", "[]a -> []a -> []a", "concat xs ys: xs followed by ys (also written xs ++ ys)"),
    ("reverse", "[]a -> []a", "reverse xs: the elements in reverse order"),
    ("transpose", "[][]a -> [][]a",
     "transpose xss: rows become columns; xss must be regular (SizeError otherwise)"),
    ("take", "i64 -> []a -> []a", "take n xs: the first n elements (0 <= n <= length xs)"),
    ("drop", "i64 -> []a -> []a", "drop n xs: all but the first n elements (0 <= n <= length xs)"),
    ("head", "[]a -> a", "head xs: the first element (SizeError when xs is empty)"),
    ("last", "[]a -> a", "last xs: the last element (SizeError when xs is empty)"),
    ("interleave", "[]a -> []a -> []a",
     "interleave xs ys: [xs[0], ys[0], xs[1], ys[1], ...]; the lengths must agree"),
    ("rotate", "i64 -> []a -> []a", "rotate k xs: xs rotated left by k (modulo its length)"),
]

_SEQUENCES: list[tuple[str, str, str]] = [
    # sequences (LANGUAGE.md §7)
    ("produce", "i64 -> (i64 -> a) -> seq a",
     "produce n f: the sequence f 0, ..., f (n-1), computed chunk by chunk"),
    ("stream", "[]a -> seq a", "stream xs: the sequence of the rows of xs, in order"),
    ("mapSeq", "(a -> b) -> seq a -> seq b", "mapSeq f s: f applied to each element of s"),
    ("zipWithSeq", "(a -> b -> c) -> seq a -> seq b -> seq c",
     "zipWithSeq f s1 s2: f applied to the pairs of elements; the lengths must agree"),
    ("foldSeq", "(a -> a -> a) -> a -> seq a -> a",
     "foldSeq op ne s: combines the elements of s with op (associative, ne neutral)"),
    ("elements", "seq []a -> []a",
     "elements s: all the elements of s concatenated into one array "
     "(a sequence of scalars gives the array of them)"),
    ("tabulate", "seq a -> []a",
     "tabulate s: the elements of s stacked into an array (they may differ in length)"),
]

# the scalar functions, conversions and constants, and the operators: lang/scalar_ops.py
_TABLE: list[tuple[str, str, str]] = [
    *_ARRAYS,
    *((op.name, op.signature, op.doc) for op in scalar_ops.BUILTINS.values()),
    *_SEQUENCES,
]

_BINARY: list[tuple[str, str]] = [
    *((op.name, op.signature) for op in scalar_ops.BINARY_OPS.values()),
    ("++", "[]a -> []a -> []a"),
]

_UNARY: dict[str, str] = {op.name: op.signature for op in scalar_ops.UNARY_OPS.values()}


# ---------------------------------------------------------------- the signature parser

class SignatureError(ValueError):
    """A malformed type signature in the table (a bug in this module, not a user error)."""


_TOKEN = re.compile(r"\s*(=>|->|[\[\](),]|[A-Za-z_][A-Za-z_0-9]*)")


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise SignatureError(f"unexpected character in {text!r} at {pos}")
        out.append(m.group(1))
        pos = m.end()
    return out


class _SignatureParser:
    """scheme ::= [class var {, class var} =>] type
    type ::= base [-> type];  base ::= seq atom | atom;
    atom ::= []atom | (type {, type}) | scalar | var"""

    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise SignatureError(f"expected {expected or 'more'} in {self.text!r}, got {tok!r}")
        self.pos += 1
        return tok

    def scheme(self) -> Scheme:
        constraints: dict[str, str] = {}
        if "=>" in self.toks:
            while True:
                cls, var = self.take(), self.take()
                if cls not in CLASSES:
                    raise SignatureError(f"unknown class {cls!r} in {self.text!r}")
                constraints[var] = cls
                if self.peek() == "=>":
                    break
                self.take(",")
            self.take("=>")
        t = self.type()
        if self.peek() is not None:
            raise SignatureError(f"trailing {self.peek()!r} in {self.text!r}")
        order = ordered_vars(t)
        assert set(order) == free_vars(t)
        unknown = set(constraints) - set(order)
        if unknown:
            raise SignatureError(f"constrained variables {unknown} unused in {self.text!r}")
        return Scheme(tuple(order), t, constraints)

    def type(self) -> Type:
        left = self.base()
        if self.peek() == "->":
            self.take()
            return Func(left, self.type())
        return left

    def base(self) -> Type:
        if self.peek() == "seq":
            self.take()
            return Seq(self.atom())
        return self.atom()

    def atom(self) -> Type:
        tok = self.take()
        if tok == "[":
            self.take("]")
            return Array(self.atom())
        if tok == "(":
            elems = [self.type()]
            while self.peek() == ",":
                self.take()
                elems.append(self.type())
            self.take(")")
            return elems[0] if len(elems) == 1 else Tuple(tuple(elems))
        if tok in SCALARS:
            return Scalar(tok)
        if tok[0].islower() and tok != "seq":
            return TypeVar(tok)
        raise SignatureError(f"unexpected {tok!r} in {self.text!r}")


def parse_scheme(text: str) -> Scheme:
    """Read a type signature such as `num a => (a -> b) -> []a -> []b`."""
    return _SignatureParser(text).scheme()


BUILTINS: dict[str, Builtin] = {
    name: Builtin(name, parse_scheme(sig), doc) for name, sig, doc in _TABLE
}

OPERATORS: dict[str, Scheme] = {op: parse_scheme(sig) for op, sig in _BINARY}

UNARY_OPERATORS: dict[str, Scheme] = {op: parse_scheme(sig) for op, sig in _UNARY.items()}
