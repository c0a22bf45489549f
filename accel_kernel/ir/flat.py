"""The flat IR: what the `flatten` stage gives and the `numpy` target (later `fuse`) takes.

No nested parallelism is left. Every array is one of three *representations*:

- `Regular(elem, rank)`: one contiguous buffer with `rank` dimensions (a numpy array); the
  shape is known at run time. A regular nest `[n][m]t` is `Regular(t, 2)`: no segment
  descriptor anywhere.
- `Segmented(inner)`: an irregular array: `offsets` (int64, length n+1, offsets[0] == 0, the
  Awkward Array convention, so a result converts to `ak.Array` without copying) and flat
  `values` of representation `inner` (`Regular(t, 1)` for `[][]t`, another `Segmented` for
  deeper irregular nesting, `Regular(t, k)` for irregular rows of regular `k-1`-dimensional
  elements).
- `TupleRep(parts)`: a tuple; an array of tuples is a tuple of arrays (each component is
  flattened on its own, Clifton-Everest's `tuple_F`).

A scalar is `ScalarRep(elem)`. Element types are scalar type names (`"i64"`, `"f64"`, ...).

A flat program has one `Block` per top-level form of the core program, in order. A block is
a list of statements in SSA form: `Stmt(targets, op)` binds fresh variables to the result of
one operation. Operations are the flat SOACs, their segmented forms and explicit segment
descriptor operations; each documents its *work* (elements produced or visited) and *depth*
(parallel steps), from which the `numpy` target counts work and depth at run time.

Scalar code is never vectorised: a map's function stays a `ScalarFn`, a lambda over scalars
written in core accel (`\\x -> 2 * x + 1`), applied element by element (vectorisation
avoidance). Its free variables are scalars of the enclosing block (`ScalarFn.free`).

Every statement keeps the span of the core node it came from and an id; `origin` is the id of
that core node, so the views can relate a flat statement to the source.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from ..lang import ast
from ..lang.source import Span

# ---------------------------------------------------------------- representations


@dataclass(frozen=True)
class ScalarRep:
    elem: str                         # bool i32 i64 f32 f64


@dataclass(frozen=True)
class Regular:
    elem: str
    rank: int                         # >= 1


@dataclass(frozen=True)
class Segmented:
    inner: "Rep"                      # the representation of the flat values (rank >= 1)


@dataclass(frozen=True)
class TupleRep:
    parts: tuple["Rep", ...]


Rep = Union[ScalarRep, Regular, Segmented, TupleRep]

OFFSETS = Regular("i64", 1)           # the representation of a segment descriptor


def show_rep(rep: Rep) -> str:
    """`i64`, `[r2]f64` (regular rank 2), `[seg][r1]i64`, `([r1]i64, f64)`."""
    if isinstance(rep, ScalarRep):
        return rep.elem
    if isinstance(rep, Regular):
        return f"[r{rep.rank}]{rep.elem}"
    if isinstance(rep, Segmented):
        return f"[seg]{show_rep(rep.inner)}"
    return "(" + ", ".join(show_rep(p) for p in rep.parts) + ")"


def representation(rep: Rep) -> str:
    """What the views call it: "scalar", "regular", "irregular" (a segment descriptor is
    involved) or, for a tuple, the most irregular of its parts."""
    if isinstance(rep, ScalarRep):
        return "scalar"
    if isinstance(rep, Regular):
        return "regular"
    if isinstance(rep, Segmented):
        return "irregular"
    kinds = [representation(p) for p in rep.parts]
    for kind in ("irregular", "regular"):
        if kind in kinds:
            return kind
    return "scalar"


# ---------------------------------------------------------------- variables and code


@dataclass(frozen=True)
class FVar:
    name: str
    rep: Rep


@dataclass(frozen=True)
class Const:
    value: bool | int | float
    elem: str


Atom = Union[FVar, Const]


@dataclass(frozen=True)
class ScalarFn:
    """A function on scalars, in core accel: `params` bound to scalars (or tuples of scalars,
    as patterns), `body` a core expression that builds no array. `free` are the variables
    of the enclosing block the body reads: scalars, and arrays of scalars that the body reads
    element by element (`xs[j]`, `length xs`: SEQ-INNER's loops; `xss[q][j]` of a regular
    block of rows: SEQ-INNER-ROWS). The back ends read it
    first-order, lowered with its argument types (`ir/scalar_lower.lower` -> `ir/scalar.py`)."""
    params: tuple[ast.Pattern, ...]
    body: ast.Expr
    free: tuple[FVar, ...] = ()


# ---------------------------------------------------------------- operations
# Cost notation: n = length of the (outer) input, N = number of flat values, s = segments.


@dataclass(frozen=True)
class Scalar:
    """A scalar computation outside any map (avoided code). work 1, depth 1."""
    fn: ScalarFn                      # no params; reads `fn.free`


@dataclass(frozen=True)
class Literal:
    """A constant array or scalar written in the program. work N, depth 1."""
    value: object                     # interp value (nested lists / numpy scalars)
    rep: Rep


@dataclass(frozen=True)
class Iota:
    """[0, 1, ..., n-1]; SizeError for n < 0. work n, depth 1."""
    n: Atom


@dataclass(frozen=True)
class Replicate:
    """n copies of x: a scalar gives Regular rank 1, a Regular rank r gives rank r+1 (no
    copy needed: a broadcast view). work n*|x|, depth 1."""
    n: Atom
    x: Atom


@dataclass(frozen=True)
class Map:
    """Elementwise `fn` over arrays of one shape: all Regular with equal shapes, or all
    Segmented with equal offsets (applied to the flat values, offsets kept). A function
    returning a tuple gives a TupleRep. work N * |fn|, depth 1 (+ |fn|)."""
    fn: ScalarFn
    args: tuple[FVar, ...]


@dataclass(frozen=True)
class Reduce:
    """reduce along the innermost axis: Regular rank 1 -> scalar, rank r -> rank r-1 (a
    regular segmented reduction: no descriptor). work N, depth log N."""
    op: ScalarFn
    ne: Atom
    arr: FVar


@dataclass(frozen=True)
class SegReduce:
    """One reduction per segment of (offsets, values); an empty segment gives `ne`.
    work N + s, depth log N."""
    op: ScalarFn
    ne: Atom
    offsets: FVar
    values: FVar


@dataclass(frozen=True)
class Scan:
    """Inclusive scan along the innermost axis (rank r -> rank r). work N, depth log N."""
    op: ScalarFn
    ne: Atom
    arr: FVar


@dataclass(frozen=True)
class SegScan:
    """Inclusive scan within each segment; gives new values, same offsets. work N, depth
    log N."""
    op: ScalarFn
    ne: Atom
    offsets: FVar
    values: FVar


@dataclass(frozen=True)
class Filter:
    """Elements (rows, for rank > 1) where `keep` (bool, same length) holds, in order.
    work n, depth log n."""
    keep: FVar
    arr: FVar


@dataclass(frozen=True)
class Copy:
    """A fresh copy of a regular array, to be written in place by `WriteRows`.
    work N, depth 1."""
    arr: FVar


@dataclass(frozen=True)
class WriteRows:
    """`arr` with its rows (elements, for rank 1) at `indices` replaced by `rows`, written in
    place: `arr` is a buffer made by `Copy` that nothing reads after this statement (the
    flatten pass writes it only for the results of a loop's finished points). Indices are in
    bounds by construction. work |rows| scalars, depth 1."""
    arr: FVar
    indices: FVar
    rows: FVar


@dataclass(frozen=True)
class SegFilter:
    """Per segment, the values where `keep` holds: gives (new offsets, new values).
    work N + s, depth log N."""
    keep: FVar
    offsets: FVar
    values: FVar


@dataclass(frozen=True)
class SizesToOffsets:
    """Segment sizes (i64, length s) to offsets (length s+1, exclusive scan with the total
    last); SizeError on a negative size. work s, depth log s."""
    sizes: FVar


@dataclass(frozen=True)
class Lengths:
    """Offsets to segment sizes: offsets[1:] - offsets[:-1]. work s, depth 1."""
    offsets: FVar


@dataclass(frozen=True)
class SegmentIds:
    """For every flat position, the index of its segment (the segment id repeated by the
    segment's size). work N + s, depth log N."""
    offsets: FVar


@dataclass(frozen=True)
class SegmentIota:
    """For every flat position, its position within its segment (`replicated_iota`).
    work N + s, depth log N."""
    offsets: FVar


@dataclass(frozen=True)
class Gather:
    """arr[indices] along the outermost axis (indices i64, any shape): bounds checked,
    IndexError at `span` with the index and the length. work |indices| * |row|, depth 1."""
    arr: FVar
    indices: FVar


@dataclass(frozen=True)
class SegGather:
    """For every k, element `indices[k]` of segment `segments[k]` of (offsets, values):
    `xs[i]` inside a map over the rows of an irregular `xs`. Bounds checked against that
    segment's length: IndexError at `span`. work |indices|, depth 1."""
    offsets: FVar
    values: FVar
    segments: FVar
    indices: FVar


@dataclass(frozen=True)
class Index:
    """One element (or row) arr[i] outside any map: bounds checked. work |row|, depth 1."""
    arr: FVar
    index: Atom


@dataclass(frozen=True)
class Length:
    """The outer length of an array. work 1, depth 1."""
    arr: FVar


@dataclass(frozen=True)
class Rebuild:
    """An irregular array from offsets and values (a view: nothing is copied). work 1."""
    offsets: FVar
    values: FVar


@dataclass(frozen=True)
class Offsets:
    """The segment descriptor of a Segmented array (a view). work 1."""
    arr: FVar


@dataclass(frozen=True)
class Values:
    """The flat values of a Segmented array, or a Regular array of rank r seen as rank r-1
    with its two outer axes merged (`flatten`; a view). work 1."""
    arr: FVar


@dataclass(frozen=True)
class Reshape:
    """A Regular array with its outer axis split into (rows, len/rows): the regular
    counterpart of Rebuild (a view). work 1."""
    arr: FVar
    rows: Atom


@dataclass(frozen=True)
class MakeTuple:
    """A tuple of values (a view). work 0."""
    parts: tuple[Atom, ...]


@dataclass(frozen=True)
class Project:
    """Component k of a tuple (a view). work 0."""
    tup: FVar
    index: int


@dataclass(frozen=True)
class Library:
    """A whole-array library operation with no segmented counterpart yet in this IR, applied
    outside any map: `name` is the accel function (`sort`, `scatter`, `concat`,
    `transpose`, `reverse`, `rotate`, `take`, `drop`, `interleave`, `reduce_by_index`,
    `sort_by`, `partition`, `zip`/`unzip` never appear: tuples are free). work and depth as
    that function's documentation in docs/flat.md says."""
    name: str
    args: tuple[Atom, ...]
    fns: tuple[ScalarFn, ...] = ()


@dataclass(frozen=True)
class SegLibrary:
    """A library function applied to every segment of (offsets, values) at once: `sort`,
    `sort_by`, `reverse`, `rotate` (with `args` per segment), `scatter`... Gives new
    (offsets, values). work and depth as docs/flat.md says for each name."""
    name: str
    offsets: FVar
    values: FVar
    args: tuple[Atom, ...] = ()
    fns: tuple[ScalarFn, ...] = ()


@dataclass(frozen=True)
class If:
    """A branch outside any map on a scalar condition: only the chosen block runs."""
    cond: Atom
    then: "Block"
    else_: "Block"


@dataclass(frozen=True)
class Loop:
    """A sequential loop outside any map: `params` start as `init`; `body` gives their next
    values. `bound` (for i < n, with `index` bound to i) or `cond` (a block giving a bool,
    evaluated before each iteration)."""
    params: tuple[FVar, ...]
    init: tuple[Atom, ...]
    body: "Block"
    bound: Atom | None = None
    index: FVar | None = None
    cond: "Block | None" = None


@dataclass(frozen=True)
class SeqLoop:
    """A sequence consumed chunk by chunk outside any map (SEQ-LOOP; `runtime/scheduler.py`
    picks each step's chunk). The sequence has `length` elements (None: as many as the
    streamed values have rows, known only when they run out: a Python iterable). A step
    binds `start` and `count` (the chunk is elements [start, start + count)) and, for every
    `(source, chunk)` of `streams`, `chunk` to the source's rows in the chunk, then runs
    `body`, which gives the next values of `params` (a fold's accumulator, starting as
    `init`) and then the chunk's parts to append (elements, tabulate). The statement's
    targets: the params' final values, then each appended part concatenated over the steps
    in order. The body is the lifted, fused computation of a chunk: the chunk is the lifting
    context (Clifton-Everest 5.1-5.2). work: the body's over all steps; depth: the body's
    per step, added up.

    `combine` (a fold's, None without params) joins two partial accumulators: it reads the
    left one as `params` and the right one as `right` and gives their fold's operator
    applied to them. A run on one process never uses it; a cluster runs the steps apart,
    each from `init` (the operator's neutral element), and joins their results in order
    with it (`runtime/cluster.py`)."""
    params: tuple[FVar, ...]
    init: tuple[Atom, ...]
    length: Atom | None
    start: FVar
    count: FVar
    streams: tuple[tuple[FVar, FVar], ...]
    body: "Block"
    right: tuple[FVar, ...] = ()
    combine: "Block | None" = None

    @property
    def appended(self) -> int:
        return len(self.body.result) - len(self.params)


@dataclass(frozen=True)
class Assert:
    """A run-time check that binds nothing (`Stmt.targets == ()`): raises the accel error
    `kind` (`IndexError`, `SizeError`, ...) at the statement's span with `message` unless
    `ok` holds: a bool scalar, or a bool array (Regular, any rank) that must hold
    everywhere (an empty one holds). Written where flattening needs a check the operations
    themselves do not make: size annotations, slice bounds, `head`/`last` of an empty array,
    equal lengths for `map2`/`zip`, indices of `with`, a row index inside a regular map.
    work |ok|, depth log |ok|."""
    ok: Atom
    kind: str
    message: str


@dataclass(frozen=True)
class Kernel:
    """A fused kernel (the `fuse` stage): the statements of `body` run as one loop nest, so
    the values they pass to each other are never stored; `body.result` are the values the
    kernel writes out (the statement's targets, in order). `kind` says how it runs: "map"
    (elements in parallel), "redomap" (a map whose results are reduced on the fly), "scan",
    "filter", "segmented" (segments in parallel, each one's elements in order), "rows" (the
    rows of a regular block likewise), "push" (one loop per part of a concatenation, no
    branch), "hist" (a map or segmented kernel ending in the `reduce_by_index` its elements
    are combined into, FUSE-HIST). `lines` are the source lines its statements came from. work and depth: those
    of its statements (docs/flat.md); fusion saves the memory traffic, not operations."""
    name: str
    kind: str
    body: "Block"
    lines: tuple[int, ...] = ()


Op = Union[Scalar, Literal, Iota, Replicate, Map, Reduce, SegReduce, Scan, SegScan, Filter,
           Copy, WriteRows, SegFilter, SizesToOffsets, Lengths, SegmentIds, SegmentIota,
           Gather, SegGather, Index, Length, Rebuild, Offsets, Values, Reshape, MakeTuple,
           Project, Library, SegLibrary, If, Loop, SeqLoop, Assert, Kernel]


def blocks_of(op: "Op") -> list["Block"]:
    """The blocks nested in an operation (`if`, `loop`, `seq_loop`, a kernel), in the order
    they run."""
    if isinstance(op, If):
        return [op.then, op.else_]
    if isinstance(op, Loop):
        return [b for b in (op.cond, op.body) if b is not None]
    if isinstance(op, SeqLoop):
        return [op.body] + ([op.combine] if op.combine is not None else [])
    if isinstance(op, Kernel):
        return [op.body]
    return []


def bound_inside(op: "Op") -> set[str]:
    """The names an operation binds for its nested blocks only: a loop's parameters and
    index, a sequence's parameters, start, count, chunks and its combine's right operand."""
    if isinstance(op, Loop):
        return {p.name for p in op.params} | ({op.index.name} if op.index else set())
    if isinstance(op, SeqLoop):
        return ({p.name for p in op.params} | {op.start.name, op.count.name}
                | {chunk.name for _, chunk in op.streams} | {r.name for r in op.right})
    return set()


def fields_of(op: "Op") -> list:
    """The values of an operation's fields, with the pairs of a sequence's `streams`
    taken apart (what walkers over atoms, functions and blocks go through)."""
    out: list = []
    for name in op.__dataclass_fields__:
        value = getattr(op, name)
        for item in value if isinstance(value, tuple) else (value,):
            out += list(item) if isinstance(item, tuple) else [item]
    return out


# ---------------------------------------------------------------- statements and blocks


@dataclass(frozen=True)
class Stmt:
    """`let targets = op`. `origin` is the id of the core node this came from (0: none)."""
    targets: tuple[FVar, ...]
    op: Op
    span: Span | None = field(default=None, compare=False, repr=False)
    id: int = field(default=0, compare=False, repr=False)
    origin: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True)
class Block:
    stmts: tuple[Stmt, ...]
    result: tuple[Atom, ...]          # one atom per value the block gives


@dataclass(frozen=True)
class FlatForm:
    """One top-level form: `kind` is "def", "let" or "expr"; `name` the def's name, or the
    names a global let binds (as `result`, in order). `params` are a def's parameters."""
    kind: str
    names: tuple[str, ...]
    params: tuple[FVar, ...]
    body: Block
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class FlatProgram:
    forms: tuple[FlatForm, ...]
