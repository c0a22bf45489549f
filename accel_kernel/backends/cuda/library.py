"""Library functions of the `cuda` target on the device: what `Library` and `SegLibrary`
statements run as numba.cuda kernels, from flat host values to flat host values; everything
else (and any argument this module does not take) runs on the host as the `numpy` target
runs it (backends/numpy/library.py, which defines the semantics and the errors).

    handles(op) -> bool                  # whether `op` (Library/SegLibrary) may run here
    library(name, args, fns, span, pool) -> value | None       # None: not on the device
    seg_library(name, offsets, values, args, fns, span, pool) -> (offsets, values) | None
    run_library / run_seglibrary         # the cuda executor's `_library` / `_seglibrary`

- `sort`, `sort_by` (whole and per segment), keys of rank-1 integers, booleans or floats,
  or tuples of them: the stable ascending order (NaN last, -0.0 equal to 0.0) by `sort.py`,
  then the values gathered by it. Segments (and whole arrays) of at most `sort.RANK_MAX`
  elements by the rank sort (one launch), longer ones by the radix sort; tuple keys and
  long segments by stable sorts of one column at a time, last column (or the key) first,
  then the segment ids. `sort_by`'s key function runs on the host (numpy).
- `scatter` (whole and per segment): each destination slot's winner is the largest input
  position writing to it (`cuda.atomic.max`: the same whatever the order of the atomics),
  then each slot takes its winner's value or keeps its own: the interpreter's "last write
  wins", out-of-range indices ignored.
- `reduce_by_index` with `+`, `*`, `min` or `max` over rank-1 numbers: integer `+`, `min`,
  `max` by atomics (`primitives.reduce_by_index`: they commute, any order gives the same
  result); otherwise (floats, `*`) sorted by bucket and each bucket folded in input order
  from the destination's value (`primitives.reduce_by_index_sorted`): the interpreter's
  order, so float sums agree to the last bit.

Values with rows (Segs, rank-2 leaves) are gathered on the host by the order found on the
device. Each template is compiled once per (template, dtype) and its namespace cached;
device buffers come from the session's pool (`memory.device_pool`) when the executor has
one (pinned while the call runs, freed after), else they are plain numba.cuda arrays.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable

import numpy as np

from ...ir import flat as F
from ...ir.flat import ScalarFn
from ...lang.source import Span
from ..numpy import library as numpy_library
from ..numpy.costs import count, lib_cost
from ..numpy.operators import binary_operator
from ..numpy.rows import check_lengths, gather_rows, length, segment_ids, sizes_of
from . import primitives as P
from . import sort

WHOLE = frozenset({"sort", "sort_by", "scatter", "reduce_by_index"})
PER_SEGMENT = frozenset({"sort", "sort_by", "scatter"})
COMBINE = {"+": "add", "*": "mul", "min": "min", "max": "max"}
VALUE_TYPES = ("int32", "int64", "uint32", "uint64", "float32", "float64")

KERNELS = '''
@jit
def gather(n, order, src, out, err):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[i] = src[order[i]]


@jit
def winners(n, indices, segmented, seg, offsets, winner, err):
    """winner[t]: the last input position writing slot t (atomic max: any order)."""
    for k in range(cuda.grid(1), n, cuda.gridsize(1)):
        j = numba.int64(indices[k])
        start, size = numba.int64(0), numba.int64(winner.shape[0])
        if segmented:
            start = offsets[seg[k]]
            size = offsets[seg[k] + 1] - start
        if j >= 0 and j < size:
            cuda.atomic.max(winner, start + j, k)


@jit
def pick(n, winner, dest, values, out, err):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        w = winner[t]
        out[t] = values[w] if w >= 0 else dest[t]


@jit
def buckets(n, indices, m, keys, err):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        j = numba.int64(indices[i])
        keys[i] = j if j >= 0 and j < m else m


@jit(device=True)
def rbi_index(i, ix, vs, err):
    return ix[i]


@jit(device=True)
def rbi_value(i, ix, vs, err):
    return vs[i]


@jit(device=True)
def combine_add(a, b, err):
    return a + b


@jit(device=True)
def combine_mul(a, b, err):
    return a * b


@jit(device=True)
def combine_min(a, b, err):
    # numpy's minimum: NaN propagates, equal operands give b (-0.0 and 0.0)
    return a if a < b or a != a else b


@jit(device=True)
def combine_max(a, b, err):
    return a if a > b or a != a else b
'''


def handles(op: F.Library | F.SegLibrary) -> bool:
    """Whether the statement may run on the device (its arguments decide at run time)."""
    return op.name in (PER_SEGMENT if isinstance(op, F.SegLibrary) else WHOLE)


# ---------------------------------------------------------------- templates


def launch_shape() -> tuple[int, int]:
    """(threads per block, most blocks) of the templates: small under the simulator."""
    from .simulator import simulated
    return (32, 4) if simulated() else (P.BLOCK, P.MAX_BLOCKS)


def sources(kind: str, dtype: str, block: int, max_blocks: int) -> list[P.Source]:
    """The templates of one kind (`radix`, `rank`, `atomic_add`/`_min`/`_max`, `runs_add`/
    `_mul`/`_min`/`_max`) for one dtype; `kernels` has the others (`gather`, `winners`,
    `pick`, `buckets`) and the device functions."""
    if kind == "radix":
        return [sort.radix_sort(f"radix_{dtype}", dtype, block, max_blocks)]
    if kind == "rank":
        return [sort.rank_sort(f"rank_{dtype}", dtype, block, max_blocks)]
    what, op = kind.split("_")
    pair = ("ix", "vs"), ("int64[::1]", f"{dtype}[::1]")
    if what == "atomic":
        return [P.reduce_by_index(f"atomic_{op}_{dtype}", op, dtype,
                                  P.Element("rbi_index", *pair), P.Element("rbi_value", *pair),
                                  block, max_blocks)]
    return [P.reduce_by_index_sorted(f"runs_{op}_{dtype}", f"combine_{op}", dtype, block,
                                     max_blocks)]


def kernel_signatures() -> list[P.Kernel]:
    """The kernels of `KERNELS` with every signature they are launched with (for PTX)."""
    i64, err = "int64[::1]", P.ERR
    out = [P.Kernel("winners", P.signature("int64", i64, "boolean", i64, i64, i64, err)),
           P.Kernel("buckets", P.signature("int64", i64, "int64", i64, err))]
    for dtype in ("boolean", "int8", "uint8", "int16", "float16", *VALUE_TYPES):
        arr = f"{dtype}[::1]"
        out += [P.Kernel("gather", P.signature("int64", i64, arr, arr, err)),
                P.Kernel("pick", P.signature("int64", i64, arr, arr, arr, err))]
    return out


_NAMESPACES: dict[tuple[str, str, bool], dict[str, Any]] = {}


def _template(kind: str, dtype: str = "") -> Callable[..., Any]:
    """The launcher (or kernel) of a template, compiled on first use and cached."""
    from .simulator import simulated
    key = (kind if dtype else "kernels", dtype, simulated())
    if key not in _NAMESPACES:
        extra = [s.text for s in sources(kind, dtype, *launch_shape())] if dtype else []
        _NAMESPACES[key] = P.load([KERNELS, *extra])
    name = kind if not dtype else f"{kind}_{dtype}"
    return _NAMESPACES[key][name]


def _launch(kernel: str, n: int, *args: Any) -> None:
    from .device import grid, quiet, simulating
    if n > 0:
        blocks, threads = grid(n)
        with quiet(), simulating():
            _template(kernel)[blocks, threads](n, *args)


class Workspace:
    """The device arrays of one library call: from the session's pool (each pinned until
    the call ends, then freed) or plain numba.cuda arrays."""

    def __init__(self, pool: Any = None):
        from numba import cuda
        self.cuda, self.pool = cuda, pool
        self.stack = contextlib.ExitStack()
        self.buffers: list[Any] = []
        self.err = self.upload(np.zeros(3, np.int64))

    def alloc(self, n: int, dtype: Any) -> Any:
        if self.pool is None:
            return self.cuda.device_array(int(n), dtype)
        return self._pinned(self.pool.alloc(int(n), dtype))

    def upload(self, host: np.ndarray) -> Any:
        host = np.ascontiguousarray(host)
        if self.pool is None:
            return self.cuda.to_device(host)
        return self._pinned(self.pool.to_device(host))

    def _pinned(self, buffer: Any) -> Any:
        self.buffers.append(buffer)
        (array,) = self.stack.enter_context(self.pool.working_set(buffer))
        return array

    def __enter__(self) -> "Workspace":
        # the simulator's threads compute with numpy scalars outside the caller's
        # `np.errstate`: wrapping integer arithmetic (atomics too) must not warn there
        self.stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore", RuntimeWarning)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stack.close()
        for buffer in self.buffers:
            self.pool.free(buffer)


# ---------------------------------------------------------------- which values


def _vector(value: Any, kinds: str = "biuf") -> bool:
    return (isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in kinds
            and value.dtype != np.uint64 and value.dtype.itemsize <= 8)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, tuple):
        return [leaf for part in value for leaf in _leaves(part)]
    return [value]


def _key_column(ws: Workspace, key: np.ndarray) -> tuple[Any, str]:
    """A key on the device as one of the sorted types (exact: int64 and float64 hold every
    value of the narrower types, in the same order)."""
    dtype = "float64" if key.dtype.kind == "f" else "int64"
    return ws.upload(key.astype(dtype, copy=False)), dtype


# ---------------------------------------------------------------- sort


def _sort_column(ws: Workspace, keys: Any, dtype: str, offsets: np.ndarray,
                 longest: int) -> Any:
    """The stable order of one key column (device) within each segment of `offsets`."""
    n, segments = len(keys), len(offsets) - 1
    if longest <= sort.RANK_MAX:
        return _template("rank", dtype)(n, keys, segments, ws.upload(offsets), ws.alloc,
                                        ws.err)
    order = _template("radix", dtype)(n, keys, ws.alloc, ws.err)
    if segments <= 1:
        return order
    ids = _gather(ws, ws.upload(segment_ids(offsets)), order)
    return _gather(ws, order, _template("radix", "int64")(n, ids, ws.alloc, ws.err))


def _gather(ws: Workspace, src: Any, order: Any) -> Any:
    n = order.shape[0]
    out = ws.alloc(n, src.dtype)
    _launch("gather", n, order, src, out, ws.err)
    return out


def sort_order(ws: Workspace, keys: Any, offsets: np.ndarray) -> Any | None:
    """The device order of `keys` (a vector or a tuple of vectors, on the host) within each
    segment, lexicographic over tuple components; None when the keys are not vectors."""
    columns = _leaves(keys)
    if not all(_vector(c) for c in columns):
        return None
    longest = int(sizes_of(offsets).max()) if len(offsets) > 1 else 0
    order = None
    for column in reversed(columns):          # the last component first, each sort stable
        device, dtype = _key_column(ws, column)
        if order is not None:
            device = _gather(ws, device, order)
        step = _sort_column(ws, device, dtype, offsets, longest)
        order = step if order is None else _gather(ws, order, step)
    return order


def _take(ws: Workspace, values: Any, order: Any) -> Any:
    """`values` gathered by the device `order`: on the device when every leaf is a vector,
    else on the host."""
    if not all(isinstance(v, np.ndarray) and v.ndim == 1 for v in _leaves(values)):
        return gather_rows(values, order.copy_to_host())

    def one(v: Any) -> Any:
        if isinstance(v, tuple):
            return tuple(one(part) for part in v)
        return _gather(ws, ws.upload(v), order).copy_to_host()
    return one(values)


def _sorted(ctx: Any, name: str, args: list, fns: tuple[ScalarFn, ...], offsets: np.ndarray,
            pool: Any) -> Any | None:
    xs = args[-1] if name == "sort_by" else args[0]
    if length(xs) == 0:
        return None
    keys = xs if name == "sort" else args[0] if len(args) == 2 else \
        ctx.apply(fns[0], [xs], length(xs))
    with Workspace(pool) as ws:
        order = sort_order(ws, keys, offsets)
        return None if order is None else _take(ws, xs, order)


# ---------------------------------------------------------------- scatter


def _scatter(dest: Any, indices: np.ndarray, values: Any, seg: np.ndarray | None,
             offsets: np.ndarray | None, pool: Any) -> Any | None:
    """`dest` with `values` written at `indices` (flat positions within each segment of
    `offsets` when `seg` gives each index's segment); None when not on the device."""
    leaves = _leaves(dest)
    if not (_vector(indices, "iu") and len(leaves) == len(_leaves(values))
            and all(_vector(d) and _vector(v) and d.dtype == v.dtype
                    for d, v in zip(leaves, _leaves(values)))):
        return None
    m, n = length(dest), len(indices)
    if m == 0 or n == 0:
        return _copy(dest)
    with Workspace(pool) as ws:
        winner = ws.upload(np.full(m, -1, np.int64))
        segmented = seg is not None
        seg_d = ws.upload(seg if segmented else np.zeros(1, np.int64))
        offsets_d = ws.upload(offsets if segmented else np.zeros(2, np.int64))
        _launch("winners", n, ws.upload(indices.astype(np.int64, copy=False)), segmented,
                seg_d, offsets_d, winner, ws.err)

        def one(d: Any, v: Any) -> Any:
            if isinstance(d, tuple):
                return tuple(one(a, b) for a, b in zip(d, v))
            out = ws.alloc(m, d.dtype)
            _launch("pick", m, winner, ws.upload(d), ws.upload(v), out, ws.err)
            return out.copy_to_host()
        return one(dest, values)


def _copy(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    return np.array(value, copy=True)


# ---------------------------------------------------------------- reduce_by_index


def _reduce_by_index(fn: ScalarFn, dest: Any, indices: Any, values: Any,
                     pool: Any) -> Any | None:
    op = COMBINE.get(binary_operator(fn) or "")
    if not (op and _vector(indices, "iu") and isinstance(dest, np.ndarray)
            and dest.ndim == 1 and dest.dtype.name in VALUE_TYPES
            and isinstance(values, np.ndarray) and values.dtype == dest.dtype):
        return None
    m, n, dtype = len(dest), len(indices), dest.dtype.name
    if m == 0 or n == 0:
        return dest.copy()
    with Workspace(pool) as ws:
        ix, vs = ws.upload(indices.astype(np.int64, copy=False)), ws.upload(values)
        out = ws.upload(dest)
        if dtype in P.ATOMIC_TYPES and op != "mul":
            _template(f"atomic_{op}", dtype)(n, ix, vs, out, ws.err)
        else:
            keys = ws.alloc(n, np.int64)
            _launch("buckets", n, ix, m, keys, ws.err)
            order = _sort_column(ws, keys, "int64", np.array([0, n], np.int64), n)
            _template(f"runs_{op}", dtype)(n, order, keys, vs, out, ws.err)
        return out.copy_to_host()


# ---------------------------------------------------------------- entry points


def library(ctx: Any, name: str, args: list, fns: tuple[ScalarFn, ...], span: Span | None,
            pool: Any = None) -> Any | None:
    """`name` on whole flat arrays on the device, or None (then the host runs it)."""
    if name in ("sort", "sort_by"):
        xs = args[-1] if name == "sort_by" else args[0]
        return _sorted(ctx, name, args, fns, np.array([0, length(xs)], np.int64), pool)
    if name == "scatter":
        dest, indices, values = args
        check_lengths("scatter", [len(indices), length(values)], span)
        return _scatter(dest, indices, values, None, None, pool)
    if name == "reduce_by_index":       # (dest, ne, is, vs), op in fns
        dest, _, indices, values = args
        check_lengths("reduce_by_index", [len(indices), length(values)], span)
        return _reduce_by_index(fns[0], dest, indices, values, pool)
    return None


def seg_library(ctx: Any, name: str, offsets: np.ndarray, values: Any, args: list,
                fns: tuple[ScalarFn, ...], span: Span | None, pool: Any = None) -> Any | None:
    """`name` on every segment on the device: (offsets, new values), or None."""
    if not (len(offsets) > 1 and int(offsets[0]) == 0 and int(offsets[-1]) == length(values)):
        return None
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if name in ("sort", "sort_by"):
        out = _sorted(ctx, name, [*args, values], fns, offsets, pool)
    elif name == "scatter":            # (is offsets, is values, vs offsets, vs values)
        index_offsets, indices, value_offsets, new = args
        if not (len(index_offsets) == len(offsets) and np.array_equal(
                sizes_of(index_offsets), sizes_of(value_offsets))):
            return None                # the host raises the length error
        out = _scatter(values, indices, new, segment_ids(index_offsets), offsets, pool)
    else:
        return None
    return None if out is None else (offsets, out)


def _pool(executor: Any) -> Any:
    allocator = getattr(executor, "allocator", None)
    return getattr(allocator(), "pool", None) if allocator is not None else None


def run_library(executor: Any, stmt: F.Stmt, op: F.Library) -> Any:
    """The cuda executor's `_library`: on the device when it can, else the numpy target's."""
    args = [executor.atom(a) for a in op.args]
    out = library(executor, op.name, args, op.fns, stmt.span, _pool(executor)) \
        if handles(op) else None
    if out is None:
        out = numpy_library.library(executor, op.name, args, op.fns, stmt.span)
    executor._cost(stmt, *lib_cost(op.name, sum(count(a) for a in args), count(out)))
    return out


def run_seglibrary(executor: Any, stmt: F.Stmt, op: F.SegLibrary) -> Any:
    """The cuda executor's `_seglibrary`: on the device when it can, else the numpy
    target's."""
    offsets, values = executor.atom(op.offsets), executor.atom(op.values)
    args = [executor.atom(a) for a in op.args]
    out = seg_library(executor, op.name, offsets, values, args, op.fns, stmt.span,
                      _pool(executor)) if handles(op) else None
    if out is None:
        out = numpy_library.seg_library(executor, op.name, offsets, values, args, op.fns,
                                        stmt.span)
    executor._cost(stmt, *lib_cost(op.name, count(values) + len(offsets) - 1, count(out)))
    return out
