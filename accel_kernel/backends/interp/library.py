"""The built-in library (LANGUAGE.md §4 and §7) over interpreter values.

Each builtin is `impl(interp, *args)`; `interp.apply(fn, args)` calls accel functions and
`interp.tick()` polls for cancellation (once per element). Run-time errors are raised without
a span: the evaluator attaches the span of the application that saturated the builtin.
The parallel structure is stated for the cost counters (`costs`): the elements of a SOAC run
through `interp.costs.parallel`, the steps of a reduction or scan through `interp.costs.tree`
(in order, so values and errors are those of a sequential run); what a builtin's own step costs
is charged by the evaluator (`costs.RULES`).
The derived functions (`sum`, `maximum`, `count`, ...) are accel source in `prelude.accel`.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol

import numpy as np

from ...lang.errors import SizeError
from ...runtime.memory import check_allocation
from . import scalars
from .costs import InterpCosts
from .model import BuiltinFunc, Sequence, Value


class Runner(Protocol):
    costs: InterpCosts

    def apply(self, fn: Value, args: list[Value]) -> Value: ...
    def tick(self) -> None: ...


def _length_check(name: str, *arrays: list) -> None:
    lengths = [len(a) for a in arrays]
    if len(set(lengths)) > 1:
        shown = " and ".join(str(n) for n in lengths) if len(lengths) == 2 else str(lengths)
        raise SizeError(f"{name}: array lengths differ ({shown})")


# What one element of a list the interpreter builds costs: the list's slot, plus the element
# object when each element is a new one (a numpy scalar: 32 bytes).
SLOT_BYTES = 8
ELEMENT_BYTES = SLOT_BYTES + 32


def _count(name: str, n: Value, element_bytes: int = ELEMENT_BYTES) -> int:
    """A size argument: SizeError when negative, OutOfMemory (before anything is built) when
    `n` elements of `element_bytes` each do not fit in the memory available."""
    if int(n) < 0:
        raise SizeError(f"{name}: negative size {int(n)}")
    check_allocation(int(n) * element_bytes, f"{name} {int(n)}")
    return int(n)


# ---------------------------------------------------------------- SOACs

def _map(it: Runner, f: Value, xs: list) -> list:
    return it.costs.parallel(lambda x: it.apply(f, [x]), xs)


def _map2(it: Runner, f: Value, xs: list, ys: list) -> list:
    _length_check("map2", xs, ys)
    return it.costs.parallel(lambda xy: it.apply(f, list(xy)), zip(xs, ys))


def _map3(it: Runner, f: Value, xs: list, ys: list, zs: list) -> list:
    _length_check("map3", xs, ys, zs)
    return it.costs.parallel(lambda xyz: it.apply(f, list(xyz)), zip(xs, ys, zs))


def _zip(it: Runner, xs: list, ys: list) -> list:
    _length_check("zip", xs, ys)
    return list(zip(xs, ys))


def _zip3(it: Runner, xs: list, ys: list, zs: list) -> list:
    _length_check("zip3", xs, ys, zs)
    return list(zip(xs, ys, zs))


def _unzip(it: Runner, pairs: list) -> tuple:
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _unzip3(it: Runner, triples: list) -> tuple:
    return [t[0] for t in triples], [t[1] for t in triples], [t[2] for t in triples]


def _scan(it: Runner, op: Value, ne: Value, xs: list) -> list:
    """The left fold's partial results (`op` is associative: a tree on a parallel machine)."""
    acc = ne

    def step(x: Value) -> Value:
        nonlocal acc
        acc = it.apply(op, [acc, x])
        return acc

    return it.costs.tree(step, xs)


def _reduce(it: Runner, op: Value, ne: Value, xs: list) -> Value:
    partial = _scan(it, op, ne, xs)
    return partial[-1] if partial else ne


def _filter(it: Runner, p: Value, xs: list) -> list:
    keep = it.costs.parallel(lambda x: it.apply(p, [x]), xs)
    return [x for x, k in zip(xs, keep) if k]


def _partition(it: Runner, p: Value, xs: list) -> tuple:
    keep = it.costs.parallel(lambda x: it.apply(p, [x]), xs)
    return [x for x, k in zip(xs, keep) if k], [x for x, k in zip(xs, keep) if not k]


def _iota(it: Runner, n: Value) -> list:
    cls, out = type(n), []
    for i in range(_count("iota", n)):
        if i % 1024 == 0:
            it.tick()
        out.append(cls(i))
    return out


def _replicate(it: Runner, n: Value, x: Value) -> list:
    count = _count("replicate", n, SLOT_BYTES)       # every slot holds the same `x`
    it.tick()
    return [x] * count


def _generate(it: Runner, n: Value, f: Value) -> list:
    cls = type(n)
    return it.costs.parallel(lambda i: it.apply(f, [cls(i)]), range(_count("generate", n)))


def _expand(it: Runner, size: Value, get: Value, xs: list) -> list:
    def expanded(x: Value) -> list:
        n = it.apply(size, [x])
        cls = type(n)
        return it.costs.parallel(lambda i: it.apply(get, [x, cls(i)]),
                                 range(_count("expand", n)))

    return [y for ys in it.costs.parallel(expanded, xs) for y in ys]


def _scatter(it: Runner, dest: list, indices: list, values: list) -> list:
    _length_check("scatter", indices, values)
    out = list(dest)
    for i, v in zip(indices, values):
        it.tick()
        if 0 <= int(i) < len(out):
            out[int(i)] = v
    return out


def _reduce_by_index(it: Runner, dest: list, op: Value, ne: Value, indices: list,
                     values: list) -> list:
    _length_check("reduce_by_index", indices, values)
    out = list(dest)

    def combine(pair: tuple[Value, Value]) -> None:
        i, v = int(pair[0]), pair[1]
        if 0 <= i < len(out):
            out[i] = it.apply(op, [out[i], v])

    it.costs.parallel(combine, zip(indices, values))
    return out


def sort_key(value: Value) -> Any:
    """Ascending order on scalars and tuples of scalars (lexicographic), NaN last."""
    if isinstance(value, tuple):
        return tuple(sort_key(v) for v in value)
    if isinstance(value, list):
        return (0, tuple(sort_key(v) for v in value))
    x = value.item()
    if isinstance(x, float) and x != x:
        return (1, 0.0)
    return (0, x)


def _sort(it: Runner, xs: list) -> list:
    it.tick()
    return sorted(xs, key=sort_key)


def _sort_by(it: Runner, key: Value, xs: list) -> list:
    keys = [sort_key(k) for k in it.costs.parallel(lambda x: it.apply(key, [x]), xs)]
    order = sorted(range(len(xs)), key=lambda k: keys[k])   # sorted is stable
    return [xs[k] for k in order]


def _while(it: Runner, p: Value, f: Value, x: Value) -> Value:
    while it.apply(p, [x]):
        it.costs.op()      # the iteration, as a `loop`'s
        x = it.apply(f, [x])
    return x


# ---------------------------------------------------------------- array functions

def _length(it: Runner, xs: list) -> Value:
    return np.int64(len(xs))


def _flatten(it: Runner, xss: list) -> list:
    return [x for xs in xss for x in xs]


def _concat(it: Runner, xs: list, ys: list) -> list:
    check_allocation(2 * (len(xs) + len(ys)) * SLOT_BYTES, "concat")   # (copies, result)
    return list(xs) + list(ys)


def _reverse(it: Runner, xs: list) -> list:
    return list(reversed(xs))


def _transpose(it: Runner, xss: list) -> list:
    if not xss:
        return []
    width = len(xss[0])
    for k, row in enumerate(xss):
        if len(row) != width:
            raise SizeError(f"transpose: ragged array (row 0 has {width} elements, "
                            f"row {k} has {len(row)})")
    return [[row[j] for row in xss] for j in range(width)]


def _take_drop_count(name: str, n: Value, xs: list) -> int:
    if not 0 <= int(n) <= len(xs):
        raise SizeError(f"{name}: {int(n)} is out of range for an array of length {len(xs)}")
    return int(n)


def _take(it: Runner, n: Value, xs: list) -> list:
    return xs[:_take_drop_count("take", n, xs)]


def _drop(it: Runner, n: Value, xs: list) -> list:
    return xs[_take_drop_count("drop", n, xs):]


def _head(it: Runner, xs: list) -> Value:
    if not xs:
        raise SizeError("head of an empty array")
    return xs[0]


def _last(it: Runner, xs: list) -> Value:
    if not xs:
        raise SizeError("last of an empty array")
    return xs[-1]


def _interleave(it: Runner, xs: list, ys: list) -> list:
    _length_check("interleave", xs, ys)
    return [z for pair in zip(xs, ys) for z in pair]


def _rotate(it: Runner, k: Value, xs: list) -> list:
    if not xs:
        return []
    shift = int(k) % len(xs)
    return xs[shift:] + xs[:shift]


# ---------------------------------------------------------------- sequences

def _produce(it: Runner, n: Value, f: Value) -> Sequence:
    cls = type(n)
    return Sequence(tuple(it.apply(f, [cls(i)]) for i in range(_count("produce", n))))


def _stream(it: Runner, xs: list) -> Sequence:
    return Sequence(tuple(xs))


def _map_seq(it: Runner, f: Value, s: Sequence) -> Sequence:
    return Sequence(tuple(it.apply(f, [x]) for x in s))


def _zip_with_seq(it: Runner, f: Value, s1: Sequence, s2: Sequence) -> Sequence:
    if len(s1) != len(s2):
        raise SizeError(f"zipWithSeq: sequence lengths differ ({len(s1)} and {len(s2)})")
    return Sequence(tuple(it.apply(f, [x, y]) for x, y in zip(s1, s2)))


def _fold_seq(it: Runner, op: Value, ne: Value, s: Sequence) -> Value:
    """A sequence is consumed in order (chunk by chunk): its steps' depths add."""
    acc = ne
    for x in s:
        acc = it.apply(op, [acc, x])
    return acc


def elements_of(s: Sequence) -> list:
    """All elements of a sequence concatenated (a sequence of scalars gives their array)."""
    if s.items and isinstance(s.items[0], list):
        return [x for chunk in s.items for x in chunk]
    return list(s.items)


def _elements(it: Runner, s: Sequence) -> list:
    return elements_of(s)


def _tabulate(it: Runner, s: Sequence) -> list:
    return list(s.items)


# ---------------------------------------------------------------- the table

def _scalar(name: str, arity: int) -> BuiltinFunc:
    fn = scalars.SCALAR_FUNCTIONS[name]
    return BuiltinFunc(name, arity, lambda it, *args: fn(*args))


_IMPLS: dict[str, tuple[int, Callable[..., Value]]] = {
    "map": (2, _map), "map2": (3, _map2), "map3": (4, _map3),
    "zip": (2, _zip), "zip3": (3, _zip3), "unzip": (1, _unzip), "unzip3": (1, _unzip3),
    "reduce": (3, _reduce), "scan": (3, _scan), "filter": (2, _filter),
    "partition": (2, _partition), "iota": (1, _iota), "replicate": (2, _replicate),
    "generate": (2, _generate), "expand": (3, _expand), "scatter": (3, _scatter),
    "reduce_by_index": (5, _reduce_by_index), "sort": (1, _sort), "sort_by": (2, _sort_by),
    "while": (3, _while),
    "length": (1, _length), "flatten": (1, _flatten), "concat": (2, _concat),
    "reverse": (1, _reverse), "transpose": (1, _transpose), "take": (2, _take),
    "drop": (2, _drop), "head": (1, _head), "last": (1, _last),
    "interleave": (2, _interleave), "rotate": (2, _rotate),
    "produce": (2, _produce), "stream": (1, _stream), "mapSeq": (2, _map_seq),
    "zipWithSeq": (3, _zip_with_seq), "foldSeq": (3, _fold_seq), "elements": (1, _elements),
    "tabulate": (1, _tabulate),
    "cond": (3, lambda it, c, a, b: a if c else b),   # eager only when partially applied
}

LIBRARY: dict[str, BuiltinFunc] = {name: BuiltinFunc(name, arity, impl)
                                   for name, (arity, impl) in _IMPLS.items()}
for _name, _arity in scalars.FUNCTION_ARITY.items():
    LIBRARY[_name] = _scalar(_name, _arity)

# Names whose value is a constant rather than a function.
CONSTANTS: dict[str, Value] = scalars.CONSTANTS
# Constants whose value depends on the type the context needs (dictionary passing).
TYPE_CONSTANTS = scalars.TYPE_CONSTANTS

ALL_NAMES = frozenset(LIBRARY) | frozenset(CONSTANTS) | TYPE_CONSTANTS
