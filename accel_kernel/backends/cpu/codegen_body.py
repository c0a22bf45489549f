"""Stage `codegen` for the `cpu` target: the body of one kernel function, its loops and the
element code of its statements (`codegen.py` writes the module, each kernel's signature and
its host function). Takes a kernel statement of the fused program (`ir.flat.Kernel`) through
its `codegen.KernelWriter`; gives the lines of the function body, after its `def` line.

Loops by kernel kind (the element code is the kernel's statements, each value a local
variable, inputs read at the element index):

- map: `for i in prange(n)`: the element code, then every written-out value stored at `i`.
- redomap: the elements split into chunks (a few per thread); each chunk folds its elements
  from its first one, then the chunks' results are folded from the neutral element once,
  in order (so any associative operator works, and `ne` is used exactly once).
- scan: chunks again: their totals, an exclusive fold of the totals, then each chunk scans
  from its carry (the element code runs twice: nothing is stored in between).
- filter: a counting pass (each chunk's kept elements, and the reductions over kept
  elements), the chunks' start positions, then a writing pass that stores the kept values at
  their positions; with nothing compacted to write out, the counting pass is all. A filter
  kernel with a segment descriptor (FUSE-SEGMENTED-FILTER) has chunks of whole segments, of
  about equal numbers of elements, each segment's elements in order.
- segmented: `for s in prange(segments)`, each segment's elements in order; the segment id
  and the position in it are the loop's own indices.
- rows: as segmented, with rows of one width.

In the kernels whose chunks run their elements in order from `lo` (redomap, hist), `map
(\\q -> q / m) ι` and `q % m` over the kernel's own `iota` ι, `m` a scalar from the host
(a regular level's parent and position: LIFT-MAP-REGULAR), are counted instead of divided:
a quotient and a remainder start at `lo` and step with the element (an integer division
per element took 40% of a loop over 2M elements that adds a value into 16 buckets). When
`m` is not positive the division is made as written (its DivisionByZero, its signs).

Indices for gathers are `intp`; every gather is bounds checked (IndexError at the
statement's span, as the `numpy` target reports it), reading only on the in-bounds path.

The names, dtypes and statement facts that the kernel writer shares with the body are here
too (`python_name`, `DTYPES`, `element_type`, `op_reads`, `split_at_filter`).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ...ir import flat as F
from ...lang import ast
from ...lang.scalar_ops import DTYPE_SOURCE
from .polling import POLL_EVERY, polled_range
from .python_code import python_name as _python_name
from .scalar_arith import literal
from .scalar_source import free_parameters
from .tiers import PARALLEL

if TYPE_CHECKING:                   # the writer that makes a body (and that imports this)
    from .codegen import KernelWriter

DTYPES = DTYPE_SOURCE     # scalar type -> the numpy dtype as generated code spells it
SPARSE = 16               # a filter chunk keeping fewer than 1 element in this many is sparse

# the names of the generated functions' own variables: an accel name that is one of them
# gets a trailing `_` in kernels and host functions
KERNEL_NAMES = frozenset({"n", "chunks", "i", "s", "c", "lo", "hi", "acc", "kept", "pos",
                          "starts", "counts", "total", "carry", "run", "start", "end", "width",
                          "block", "block_stop", "block_end", "stop_asked",  # polling.py's
                          "seg_end", "sparse", "found", "seek", "seek_end", "seek_mid",
                          "alloc", "front", "back", "out", "err", "numba", "prange", "njit",
                          "np", "len", "int", "max", "min", "range",
                          "cuda", "math", "device_math", "launch", "device",
                          "segmented",     # the cuda target's
                          "part", "buckets", "at_hist", "hist_rows", "hist_partials", "hist_merge",
                          "CHUNKS_PER_THREAD", "trunc_div", "trunc_rem", "load", "prefetch"})


# the prefixes of the names the code generators make from an accel name's Python name `x`:
# `out_x` (an output), `at_x` (an index read), `part_x` (a partial), `quot_x`, `rem_x` (a
# counted division), `r_x` (a host function's scalar result) and the cuda target's `acc_x`,
# `x_x`, `y_x`, `run_x`, `wsum_x`; and ESCAPE's own
DERIVED = ("out_", "at_", "part_", "quot_", "rem_", "r_", "acc_", "x_", "y_", "run_", "wsum_")
ESCAPE = "esc_"
# the module-level names of a generated module: a kernel `k<N>_<kind>` (with `_seq`, `_host`,
# `_count`, `_count_seq`) and a scalar function `<name>_f<N>`
MODULE_NAMES = re.compile(r"k\d+_|.*_f\d+$")


def python_name(name: str) -> str:
    """The Python name of an accel name in kernels and host functions: never one of their
    own variables (KERNEL_NAMES get a trailing `_`), a name they make from another accel
    name (one that starts like those, a DERIVED prefix and then no digit, gets ESCAPE in
    front: the accel names `m_1` and `out_m_1` in one kernel would both be `out_m_1`) nor
    one of the module's functions (a global `k1_map_host` or `m_1_f1` gets ESCAPE too)."""
    name = _python_name(name)
    if any(name.startswith(p) and not name[len(p):len(p) + 1].isdigit()
           for p in (*DERIVED, ESCAPE)) or MODULE_NAMES.match(name):
        return ESCAPE + name
    return name + "_" if name in KERNEL_NAMES else name


def element_type(rep: Any) -> str:
    """The scalar type of one element of a value of this rep (a scalar or a regular array)."""
    if isinstance(rep, (F.ScalarRep, F.Regular)):
        return rep.elem
    raise NotImplementedError(f"cpu: a value of representation {F.show_rep(rep)} in a kernel "
                              "is not built yet")


def _stype(rep: Any) -> Any:
    """The scalar type of one element of a value of this rep (tuples of them)."""
    if isinstance(rep, F.TupleRep):
        return tuple(_stype(p) for p in rep.parts)
    return element_type(rep)


def op_reads(op: Any) -> list[F.FVar]:
    """The variables an operation reads (those of its scalar functions included)."""
    out: list[F.FVar] = []
    for name in op.__dataclass_fields__:
        value = getattr(op, name)
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, F.FVar):
                out.append(item)
            elif isinstance(item, F.ScalarFn):
                out += list(item.free)
    return out


def split_at_filter(stmts: list[F.Stmt]) -> tuple[list[F.Stmt], list[F.Stmt]]:
    """The statements over all elements (up to the filters) and those over the kept ones."""
    filters = [k for k, s in enumerate(stmts) if isinstance(s.op, F.Filter)]
    kept: set[str] = {stmts[k].targets[0].name for k in filters}
    before, after = [], []
    for s in stmts:
        if isinstance(s.op, F.Filter):
            continue
        reads = {v.name for v in op_reads(s.op)}
        if reads & kept:
            kept |= {t.name for t in s.targets}
            after.append(s)
        else:
            before.append(s)
    return before, after


def _block(header: str | list[str], body: list[str]) -> list[str]:
    """A compound statement (`for`, `if`; a polled loop's header lines), or nothing when its
    body is empty: a loop or a test with nothing to do is left out (Python has no empty
    blocks)."""
    return [*([header] if isinstance(header, str) else header), *body] if body else []


def _polled(indent: str, var: str, start: str, end: str, body: list[str]) -> list[str]:
    """`for var in range(start, end):` over `body` (written one level deeper than
    `indent`), polling the cancel flag (`polling.polled_range`); nothing when `body` is
    empty."""
    head, inner, tail = polled_range(indent, var, start, end)
    shift = " " * (len(inner) - len(indent) - 4)
    return [*head, *(shift + line for line in body), *tail] if body else []


def polled_segment(indent: str, var: str, start: str, end: str,
                    body: list[str]) -> list[str]:
    """The loop over one segment's elements: when the segment is at most `POLL_EVERY`
    long, the flag is read once and the loop is a plain one; else `_polled`'s (which, the
    flag set, ends at once). On 1M segments of about 10 values the strip-mined loop alone
    cost 7% over a hand-written sum (its `while` and `min` on every segment; the one read
    costs nothing measurable); the body is written twice, except in a sequential twin
    (`polling.sequential_body`: the strip-mined loop alone)."""
    if not body:
        return []
    inner = indent + "    "
    return [f"{indent}seg_end = {end}",
            f"{indent}if seg_end - {start} <= {POLL_EVERY} and not stop_asked(err):",
            f"{inner}for {var} in range({start}, seg_end):",
            *("    " + line for line in body),
            f"{indent}else:",
            *_polled(inner, var, start, "seg_end", ["    " + line for line in body])]


def _first_at_least(target: str, offsets: str, value: str, least: str) -> list[str]:
    """`target = np.searchsorted(offsets, value)` (the first index whose offset is at least
    `value`; `least` is no greater than it) as a binary search written out: numba's
    `searchsorted` is generic (its comparison handles NaN and complex numbers) and cost
    0.2 to 0.35 s of compile the first time a process compiled a kernel calling it."""
    return [f"        seek = {value}",
            f"        {target} = {least}",
            f"        seek_end = len({offsets})",
            f"        while {target} < seek_end:",
            f"            seek_mid = ({target} + seek_end) >> 1",
            f"            if {offsets}[seek_mid] < seek:",
            f"                {target} = seek_mid + 1",
            "            else:",
            "                seek_end = seek_mid"]


def counted_division(op: Any, iotas: set[str], made: set[str]) -> tuple[str, F.Atom] | None:
    """(`/` or `%`, m) when `op` is `map (\\q -> q / m) ι` or `q % m` over an `iota` ι of
    the kernel (`iotas`), `m` an `i64` scalar not made by the kernel or a positive literal."""
    if not (isinstance(op, F.Map) and len(op.args) == 1 and isinstance(op.args[0], F.FVar)
            and op.args[0].name in iotas and len(op.fn.params) == 1
            and isinstance(op.fn.params[0], ast.PVar)):
        return None
    q, body = op.fn.params[0].name, op.fn.body
    if not (isinstance(body, ast.BinOp) and body.op in ("/", "%")
            and isinstance(body.left, ast.Var) and body.left.name == q):
        return None
    right = body.right
    if isinstance(right, ast.Lit) and right.type == "i64" and not isinstance(right.value, bool) \
            and right.value > 0:
        return body.op, F.Const(right.value, "i64")
    free = {v.name: v for v in op.fn.free}
    if isinstance(right, ast.Var) and right.name != q and right.name in free \
            and right.name not in made and isinstance(free[right.name].rep, F.ScalarRep) \
            and free[right.name].rep.elem == "i64":
        return body.op, free[right.name]
    return None


PREFETCH_AHEAD = 2048     # elements: how far past a segment's start `prefetches` asks for
#                           (16 KB of f64; 512 to 4096 measured within 3% of each other)


class KernelBody:
    """The body of one kernel function: its loops and the element code of its statements."""

    def __init__(self, kernel: KernelWriter, aligned: set[str]):
        self.k = kernel
        self.aligned = aligned
        self.lines: list[str] = []
        self.locals: dict[str, str] = {}
        self.views: dict[str, tuple[str, tuple]] = {}    # a projected input: (input, path)
        self.count_divisions = False    # `counted_division`s counted (elements run in order)
        self.divisors: dict[str, str] = {}      # a counted divisor's key -> its value

    # ------------------------------------------------------------------ counted divisions
    def counter_start(self, indent: str, first: str) -> list[str]:
        """The quotient and remainder of element `first` by each counted divisor."""
        out = []
        for key, m in self.divisors.items():
            out += [f"{indent}quot_{key} = {first} // {m} if {m} > 0 else 0"
                    f"  # q / {m} and q % {m} counted from here",
                    f"{indent}rem_{key} = {first} - quot_{key} * {m}"]
        return out

    def _counter_steps(self, indent: str, keys: list[str]) -> list[str]:
        out = []
        for key in keys:
            m = self.divisors[key]
            out += [f"{indent}rem_{key} += 1",
                    f"{indent}if rem_{key} == {m}:",
                    f"{indent}    rem_{key} = 0",
                    f"{indent}    quot_{key} += 1"]
        return out

    def _counted(self, s: F.Stmt, indent: str, local: str,
                 call: str) -> tuple[str, list[str]] | None:
        """A counted division's divisor key and element code (the call when the divisor is
        not positive), or None when `s` is not one."""
        if not self.count_divisions:
            return None
        iotas = {t.name for st in self.k.body if isinstance(st.op, F.Iota) for t in st.targets}
        found = counted_division(s.op, iotas, self.k.made)
        if found is None:
            return None
        symbol, m = found
        value = self.value(m)
        key = python_name(m.name) if isinstance(m, F.FVar) else str(m.value)
        self.divisors[key] = value
        counted = f"{'quot' if symbol == '/' else 'rem'}_{key}"
        if isinstance(m, F.Const):
            return key, [f"{indent}{local} = {counted}"]
        return key, [f"{indent}if {value} > 0:", f"{indent}    {local} = {counted}",
                     f"{indent}else:", f"{indent}    {local} = {call}"]

    # ------------------------------------------------------------------ element code
    def value(self, a: F.Atom, index: str = "i") -> str:
        if isinstance(a, F.Const):
            return literal(a.value, a.elem).code
        if a.name in self.locals:
            return self.locals[a.name]
        return self.leaf_value(a.name, a.rep, (), index)

    def leaf_value(self, name: str, rep: F.Rep, path: tuple, index: str) -> str:
        """An input's value: its kernel parameter (read at `index` when the input is read
        at the element index); a tuple of arrays is a tuple of its parts."""
        if isinstance(rep, F.TupleRep):
            parts = [self.leaf_value(name, p, (*path, k), index) for k, p in enumerate(rep.parts)]
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        param = self.k.leaf_name.get((name, path), python_name(name))
        return self.read(param, index) if name in self.aligned else param

    def read(self, array: str, index: str) -> str:
        """Element `index` of a one-dimensional array at an index that is in bounds by
        construction: `load` (`unchecked.py`: numba's `array[index]` without the select
        for a negative index)."""
        return f"load({array}, {index})"

    def prefetches(self, indent: str, start: str) -> list[str]:
        """At a segment's first element `start`: a `prefetch` (`unchecked.py`, which says
        why) `PREFETCH_AHEAD` elements past it in every array the kernel reads at its
        element index."""
        aligned = self.k.aligned_inputs()
        return [f"{indent}prefetch({python_name(p.name)}, {start} + {PREFETCH_AHEAD})"
                for v in self.k.inputs if v.name in aligned and v.name not in self.k.host_only
                for p in self.k.leaves[v.name] if isinstance(p.rep, F.Regular)]

    def element(self, stmts: list[F.Stmt], indent: str, index: str = "i",
                segment: str | None = None, start: str | None = None) -> list[str]:
        """The code of element-wise statements for the element at `index` (with
        `count_divisions`, the next element counted is the one after `index`)."""
        out = []
        counted: list[str] = []
        for s in stmts:
            op = s.op
            if isinstance(op, (F.Reduce, F.SegReduce, F.Scan, F.Filter, F.Library)):
                continue
            t = s.targets[0] if s.targets else None
            local = python_name(t.name) if t is not None else ""
            if isinstance(op, F.Map):
                types = [_stype(a.rep) if isinstance(a, F.FVar) else a.elem for a in op.args]
                fname, _ = self.k.module.scalar_fn(op.fn, types,
                                                   t.name)
                args = [self.value(a, index) for a in op.args]
                args += self.free_args(op.fn)
                call = f"{fname}({', '.join(args + ['err'])})"
                found = self._counted(s, indent, local, call)
                if found is not None:
                    key, lines = found
                    out += lines
                    counted += [key] if key not in counted else []
                else:
                    out.append(f"{indent}{local} = {call}")
            elif isinstance(op, F.Project) and op.tup.name not in self.locals:
                # a part of an input tuple (or of a part of one): its own parameter
                name, path = self.views.get(op.tup.name, (op.tup.name, ()))
                self.views[t.name] = (name, (*path, op.index))
                self.locals[t.name] = self.leaf_value(name, t.rep, (*path, op.index), index)
                continue
            elif isinstance(op, F.Project):
                out.append(f"{indent}{local} = {self.value(op.tup, index)}[{op.index}]")
            elif isinstance(op, F.Gather):
                arr = python_name(op.arr.name)
                ix = self.value(op.indices, index)
                code = self.k.module.errors.code(
                    "IndexError", "index {0} out of bounds for array of length {1}", s.span)
                at = f"at_{local}"
                flat = isinstance(op.arr.rep, F.Regular) and op.arr.rep.rank == 1
                # one unsigned comparison (a negative index is a huge one); the element is
                # read only on the in-bounds path (an empty array is never read)
                out += [f"{indent}{at} = numba.intp({ix})",
                        f"{indent}if numba.uint64({at}) < numba.uint64(len({arr})):",
                        f"{indent}    {local} = {self.read(arr, at) if flat else f'{arr}[{at}]'}",
                        f"{indent}else:",
                        f"{indent}    err[1] = {at}",
                        f"{indent}    err[2] = len({arr})",
                        f"{indent}    err[0] = {code}",
                        f"{indent}    {local} = {self.zero_of(arr, t)}"]
            elif isinstance(op, F.Iota):
                out.append(f"{indent}{local} = {DTYPES[element_type(t.rep)]}({index})")
            elif isinstance(op, F.Replicate):
                out.append(f"{indent}{local} = {self.value(op.x, index)}")
            elif isinstance(op, (F.Values, F.Reshape)):
                out.append(f"{indent}{local} = {self.value(op.arr, index)}")
            elif isinstance(op, F.SegmentIds):
                out.append(f"{indent}{local} = np.int64({segment})")
            elif isinstance(op, F.SegmentIota):
                out.append(f"{indent}{local} = np.int64({index} - {start})")
            else:
                raise NotImplementedError(f"cpu: `{type(op).__name__}` in a kernel is not "
                                          "built yet")
            if t is not None:
                self.locals[t.name] = local
        return out + self._counter_steps(indent, counted)

    def zero_of(self, arr: str, t: F.FVar) -> str:
        """A dummy element of array `arr` (of the gather's target `t`), for a failed read."""
        return f"{arr}.dtype.type(0)"

    def store(self, outputs: list[F.FVar], indent: str, index: str = "i") -> list[str]:
        return [f"{indent}out_{python_name(t.name)}[{index}] = {self.locals[t.name]}"
                for t in outputs if t.name in self.locals]

    def operator(self, stmt: F.Stmt) -> str:
        op = stmt.op
        elem = element_type(stmt.targets[0].rep)
        name, _ = self.k.module.scalar_fn(op.op, [elem, elem], stmt.targets[0].name + "_op")
        return name

    def free_args(self, fn: F.ScalarFn) -> list[str]:
        """The kernel's names for the leaves of a scalar function's free variables."""
        params = free_parameters({v.name: v.rep for v in fn.free})
        return [self.k.leaf_name.get((p.var, p.path)) or self.value(F.FVar(p.var, p.rep))
                for p in params]

    def op_call(self, fname: str, a: str, b: str, stmt: F.Stmt) -> str:
        free = self.free_args(stmt.op.op)
        return f"{fname}({', '.join([a, b] + free + ['err'])})"

    # ------------------------------------------------------------------ kinds
    def map_loop(self, outputs: list[F.FVar]) -> None:
        element = self.element(self.k.body, " " * 8) + self.store(outputs, " " * 8)
        self.lines += _block("    for i in prange(n):", element)

    def chunks(self) -> None:
        """`chunks` (a few per thread, at most one per element) comes from the host."""

    def redomap(self, outputs: list[F.FVar], reductions: list[F.Stmt]) -> None:
        self.chunks()
        ops = {s.id: self.operator(s) for s in reductions}
        accs = [python_name(s.targets[0].name) for s in reductions]
        for s, acc in zip(reductions, accs):
            self.lines.append(f"    part_{acc} = np.empty(max(chunks, 1), "
                              f"{DTYPES[element_type(s.targets[0].rep)]})")
        self.lines += ["    for c in prange(chunks):",
                       "        lo = c * n // chunks",
                       "        hi = (c + 1) * n // chunks"]
        # the chunk's first element starts each fold; the others are folded in
        self.locals = {}
        self.count_divisions = True
        first = self.element(self.k.body, " " * 8, index="lo")
        self.lines += self.counter_start(" " * 8, "lo") + first
        self.lines += self.store(outputs, " " * 8, index="lo")
        for s, acc in zip(reductions, accs):
            self.lines.append(f"        acc_{acc} = {self.value(s.op.arr, 'lo')}")
        self.locals = {}
        head, inner, tail = polled_range(" " * 8, "i", "lo + 1", "hi")
        self.lines += head
        self.lines += self.element(self.k.body, inner)
        self.lines += self.store(outputs, inner)
        for s, acc in zip(reductions, accs):
            self.lines.append(f"{inner}acc_{acc} = "
                              + self.op_call(ops[s.id], f"acc_{acc}", self.value(s.op.arr), s))
        self.lines += tail
        for acc in accs:
            self.lines.append(f"        part_{acc}[c] = acc_{acc}")
        for s, acc in zip(reductions, accs):       # the chunks in order, from `ne` once
            self.lines += [f"    {acc} = {self.value(s.op.ne)}",
                           "    for c in range(chunks):",
                           f"        {acc} = " + self.op_call(ops[s.id], acc, f"part_{acc}[c]", s)]
        self.lines.append(f"    return ({', '.join(accs)},)")

    def scan(self, outputs: list[F.FVar], terminals: list[F.Stmt]) -> None:
        (scan,) = [s for s in terminals if isinstance(s.op, F.Scan)]
        fname = self.operator(scan)
        out = python_name(scan.targets[0].name)
        dtype = DTYPES[element_type(scan.targets[0].rep)]
        self.chunks()
        self.lines += [f"    total = np.empty(max(chunks, 1), {dtype})",
                       "    for c in prange(chunks):",
                       "        lo = c * n // chunks",
                       "        hi = (c + 1) * n // chunks"]
        self.locals = {}
        self.lines += self.element(self.k.body, " " * 8, index="lo")
        self.lines.append(f"        acc = {self.value(scan.op.arr, 'lo')}")
        self.locals = {}
        head, inner, tail = polled_range(" " * 8, "i", "lo + 1", "hi")
        self.lines += head
        self.lines += self.element(self.k.body, inner)
        self.lines.append(f"{inner}acc = " + self.op_call(fname, "acc", self.value(scan.op.arr), scan))
        self.lines += tail
        self.lines += ["        total[c] = acc",
                       f"    carry = np.empty(max(chunks, 1), {dtype})",
                       f"    run = {self.value(scan.op.ne)}",
                       "    for c in range(chunks):",
                       "        carry[c] = run",
                       "        run = " + self.op_call(fname, "run", "total[c]", scan),
                       "    for c in prange(chunks):",
                       "        lo = c * n // chunks",
                       "        hi = (c + 1) * n // chunks",
                       "        acc = carry[c]"]
        head, inner, tail = polled_range(" " * 8, "i", "lo", "hi")
        self.lines += head
        self.locals = {}
        self.lines += self.element(self.k.body, inner)
        self.lines.append(f"{inner}acc = " + self.op_call(fname, "acc", self.value(scan.op.arr), scan))
        self.lines.append(f"{inner}out_{out}[i] = acc")
        self.lines += self.store([t for t in outputs if t.name != scan.targets[0].name], inner)
        self.lines += tail

    def _chunk_bounds(self) -> list[str]:
        """Chunk `c`'s elements `lo..hi`; in a segmented filter kernel its segments, as many
        elements in each chunk as can be (segments of very different lengths: the triples'
        pairs `(a, b)` have `a` candidates each), found in the offsets."""
        offsets = self.k.segment_offsets()
        if offsets is None:
            return ["        lo = c * n // chunks", "        hi = (c + 1) * n // chunks"]
        offsets = python_name(offsets)
        return [*_first_at_least("lo", offsets, f"{offsets}[n] * c // chunks", "0"),
                *_first_at_least("hi", offsets, f"{offsets}[n] * (c + 1) // chunks", "lo")]

    def _chunk_elements(self, body: list[str], segment: list[str] = (),
                        skip: list[str] = ()) -> list[str]:
        """The loop over a chunk's elements, `body` written at indent 12: `lo..hi`, or in a
        segmented filter kernel (FUSE-SEGMENTED-FILTER) the chunk's segments `lo..hi`, each
        one's elements in order (the segment id `s`, its first element `start`), after the
        code of its `segment` values (`_per_segment`, also written at indent 12), run only
        for a segment with elements (as the elements' code would have been)."""
        offsets = self.k.segment_offsets()
        if offsets is None:
            return _polled(" " * 8, "i", "lo", "hi", body)
        offsets = python_name(offsets)
        if not segment:
            inner = polled_segment(" " * 12, "i", "start", self.read(offsets, "s + 1"),
                                    ["    " + line for line in body])
            return _block("        for s in range(lo, hi):",
                          [f"            start = {self.read(offsets, 's')}",
                           *self.prefetches(" " * 12, "start"), *inner] if inner else [])
        inner = polled_segment(" " * 16, "i", "start", "end",
                                ["        " + line for line in body])
        return [*self.nonempty_segments(offsets),
                *("    " + line for line in [*segment, *skip]), *inner]

    def nonempty_segments(self, offsets: str) -> list[str]:
        """The head of a loop over a chunk's segments `lo..hi` (the id `s`, its elements
        `start..end`) whose body, at indent 16, runs for a segment with elements, after the
        segment's `prefetches`."""
        return ["        for s in range(lo, hi):",
                f"            start = {self.read(offsets, 's')}",
                f"            end = {self.read(offsets, 's + 1')}",
                "            if start < end:",
                *self.prefetches(" " * 16, "start")]

    def _per_segment(self, stmts: list[F.Stmt]) -> tuple[list[F.Stmt], list[F.Stmt]]:
        """In a segmented filter kernel, the statements whose values are the same for
        every element of a segment (its id, what is gathered at it, functions of those),
        computed once per segment, and the others; ([], stmts) in another kernel."""
        if self.k.segment_offsets() is None:
            return [], stmts
        invariant: set[str] = set()
        segment, element = [], []
        for s in stmts:
            reads = {v.name for v in op_reads(s.op)}
            per_element = {r for r in reads if r in self.aligned
                           or r in self.k.made and r not in invariant}
            if isinstance(s.op, F.SegmentIds) or isinstance(s.op, (F.Gather, F.Map, F.Project)) \
                    and reads & invariant and not per_element:
                invariant |= {t.name for t in s.targets}
                segment.append(s)
            else:
                element.append(s)
        return segment, element

    def filter(self, outputs: list[F.FVar], reductions: list[F.Stmt]) -> None:
        """With compacted outputs, a counting function `<name>_count` (kept elements per
        chunk) runs first and the kernel writes the kept values from each chunk's start
        position (`starts`); reductions over the kept elements are folded in the kernel.
        The chunks are of elements, or of segments in a segmented filter kernel."""
        filters = [s for s in self.k.body if isinstance(s.op, F.Filter)]
        keep = filters[0].op.keep
        before, after = split_at_filter(self.k.body)
        made_before = {t.name for s in before for t in s.targets}
        full = [t for t in outputs if t.name in made_before]          # over all elements
        compacted = self.k.compacted(outputs, reductions)
        ops = {s.id: self.operator(s) for s in reductions}
        accs = [python_name(s.targets[0].name) for s in reductions]
        over_all = {s.id for s in reductions if s in before}
        if compacted:
            self.locals = {}
            count = [PARALLEL,
                     f"def {self.k.name}_count(n, chunks, "
                     f"{', '.join(self.param_names() + ['err'])}):",
                     "    counts = np.empty(chunks, np.int64)",     # every chunk writes its count
                     "    for c in prange(chunks):",
                     *self._chunk_bounds(),
                     "        kept = 0"]
            per_segment, per_element = self._per_segment(before)
            segment = self.element(per_segment, " " * 12, segment="s", start="start")
            counting = self.element(per_element, " " * 12, segment="s", start="start")
            counting += [f"            if {self.value(keep)}:", "                kept += 1"]
            count += self._chunk_elements(counting, segment)
            count += ["        counts[c] = kept", "    return counts"]
            self.k.module.kernel_function(count)
        self.chunks()
        for s, acc in zip(reductions, accs):
            self.lines += [f"    part_{acc} = np.empty(max(chunks, 1), "
                           f"{DTYPES[element_type(s.targets[0].rep)]})",
                           f"    have_{acc} = np.zeros(max(chunks, 1), np.bool_)"]
        self.lines += ["    for c in prange(chunks):", *self._chunk_bounds()]
        if compacted:
            self.lines.append("        pos = starts[c]")
        for s, acc in zip(reductions, accs):
            self.lines += [f"        acc_{acc} = {self.value(s.op.ne)}",
                           f"        first_{acc} = True"]
        self.locals = {}
        per_segment, per_element = self._per_segment(before)
        segment = self.element(per_segment, " " * 12, segment="s", start="start")
        element = self.element(per_element, " " * 12, segment="s", start="start")
        element += self.store(full, " " * 12)
        for s, acc in zip(reductions, accs):
            if s.id in over_all:
                element += self.fold(s, acc, ops[s.id], " " * 12)
        test = self.value(keep)
        skip = self._skip_empty_segments(per_element, keep) \
            if compacted and not full and not reductions else []
        if skip:
            offsets = python_name(self.k.segment_offsets())
            self.lines.append(f"        sparse = (starts[c + 1] - pos) * {SPARSE} < "
                              f"{offsets}[hi] - {offsets}[lo]")
        for f in filters:                # a kept value is the element itself
            self.locals[f.targets[0].name] = self.value(f.op.arr)
        kept = self.element(after, " " * 16)
        for s, acc in zip(reductions, accs):
            if s.id not in over_all:
                kept += self.fold(s, acc, ops[s.id], " " * 16)
        for t in compacted:
            kept.append(f"                out_{python_name(t.name)}[pos] = "
                        f"{self.locals[t.name]}")
        if compacted:
            kept.append("                pos += 1")
        element += _block(f"            if {test}:", kept)
        self.lines += self._chunk_elements(element, segment, skip)
        for acc in accs:
            self.lines += [f"        part_{acc}[c] = acc_{acc}",
                           f"        have_{acc}[c] = not first_{acc}"]
        for s, acc in zip(reductions, accs):
            self.lines += [f"    {acc} = {self.value(s.op.ne)}",
                           "    for c in range(chunks):",
                           f"        if have_{acc}[c]:",
                           f"            {acc} = " + self.op_call(ops[s.id], acc, f"part_{acc}[c]", s)]
        if accs:
            self.lines.append(f"    return ({', '.join(accs)},)")

    def _skip_empty_segments(self, per_element: list[F.Stmt], keep: F.FVar) -> list[str]:
        """In a segmented filter kernel's writing pass, for a chunk that keeps few of its
        elements (fewer than one in `SPARSE`, from the counting pass): each segment's kept
        elements are counted first, in a loop with no store (which LLVM vectorises), and a
        segment with none is not run again (the triples keep 1 candidate in 10^4 of 83.5M:
        the writing pass took twice the counting pass, 13.4 against 6.9 ms). The count runs
        strip-mined only (`polled_segment`'s two loops cost the tour's cell 9 0.15 s more
        compile time; a sequential twin leaves the count out, `polling.sequential_body`).
        Lines at indent 12, for `_chunk_elements`; none in another kernel."""
        if self.k.segment_offsets() is None:
            return []
        probe = self.element(per_element, " " * 20, segment="s", start="start")
        probe += [f"{' ' * 20}if {self.value(keep)}:", f"{' ' * 20}    found += 1"]
        return ["            if sparse:",
                "                found = 0",
                *_polled(" " * 16, "i", "start", "end", probe),
                "                if found == 0:",
                "                    continue"]

    def fold(self, s: F.Stmt, acc: str, fname: str, indent: str) -> list[str]:
        """Fold the element into a chunk's accumulator (its first element starts it)."""
        v = self.value(s.op.arr)
        return [f"{indent}if first_{acc}:", f"{indent}    acc_{acc} = {v}",
                f"{indent}    first_{acc} = False", f"{indent}else:",
                f"{indent}    acc_{acc} = " + self.op_call(fname, f"acc_{acc}", v, s)]

    def param_names(self) -> list[str]:
        return self.k.param_names()

    def segmented(self, kind: str, outputs: list[F.FVar], reductions: list[F.Stmt]) -> None:
        if kind == "segmented":
            offsets = python_name(self.k.offsets_name())
            start, end = self.read(offsets, "s"), self.read(offsets, "s + 1")
        else:
            start, end = "s * width", "(s + 1) * width"
        ops = {s.id: self.operator(s) for s in reductions}
        self.lines += ["    for s in prange(n):", f"        start = {start}"]
        if kind == "segmented":             # (equal rows: their loops are predicted)
            self.lines += self.prefetches(" " * 8, "start")
        for s in reductions:
            acc = python_name(s.targets[0].name)
            self.lines.append(f"        acc_{acc} = {self.value(s.op.ne)}")
        self.locals = {}
        element = self.element(self.k.body, " " * 12, segment="s", start="start")
        element += self.store(outputs, " " * 12)
        for s in reductions:
            acc = python_name(s.targets[0].name)
            arr = s.op.values if isinstance(s.op, F.SegReduce) else s.op.arr
            element.append(f"            acc_{acc} = " + self.op_call(ops[s.id], f"acc_{acc}", self.value(arr), s))
        self.lines += polled_segment(" " * 8, "i", "start", end, element)
        for s in reductions:
            acc = python_name(s.targets[0].name)
            self.lines.append(f"        out_{acc}[s] = acc_{acc}")
