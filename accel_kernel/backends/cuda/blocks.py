"""Source templates of the device helpers that the primitives (`primitives.py`,
`segmented.py`) share: a warp reduction and a warp scan by shuffles, a block reduction and a
block scan through shared memory between warps.

Every helper keeps operand order (`op` need only be associative, as `reduce` and `scan`
require): a warp reduction pulls from lane `l + 1, 2, 4, 8, 16` (lane 0 ends with the fold
of lanes 0..31 in order), a warp scan from lane `l - 1, 2, 4, 8, 16`. Lanes past the data
hold the neutral element. All threads of a block (of a warp, for the warp helpers) call a
helper together: shuffles and barriers are never under a divergent branch.

Shuffles move 32- and 64-bit signed integers and floats; a `boolean` travels as an int32, an
unsigned or 8- or 16-bit integer as a signed one (`CARRIED`).
"""
from __future__ import annotations

from dataclasses import dataclass

FULL_MASK = "0xffffffff"
WARP = 32
# numba's shuffles take int32, int64, float32 and float64: the other integers travel as one
# of those (the same bits for uint32 and uint64, widened for 8 and 16 bits)
CARRIED = {"int8": "int32", "int16": "int32", "uint8": "int32", "uint16": "int32",
           "uint32": "int32", "uint64": "int64"}
SHUFFLED = frozenset({"int32", "int64", "float32", "float64", "boolean", *CARRIED})


@dataclass(frozen=True)
class Operator:
    """An associative operator: the `@cuda.jit(device=True)` function `name(a, b, err)`, the
    element type (a numba type name: `int64`, `float64`, `boolean`, ...) and the source of
    the neutral element."""
    name: str
    dtype: str
    neutral: str

    def __post_init__(self) -> None:
        if self.dtype not in SHUFFLED:
            raise NotImplementedError(f"cuda: reductions over `{self.dtype}` values are not "
                                      "built yet")

    def call(self, a: str, b: str) -> str:
        return f"{self.name}({a}, {b}, err)"

    @property
    def ne(self) -> str:
        return f"numba.{self.dtype}({self.neutral})"


def numba_type(dtype_source: str) -> str:
    """The numba type name of a dtype as generated code spells it (`np.float64`)."""
    name = dtype_source.removeprefix("np.").removeprefix("numba.")
    return "boolean" if name in ("bool_", "bool") else name


def shuffle(dtype: str, kind: str, value: str, delta: str) -> str:
    """The code of a warp shuffle (`kind`: "idx", "up", "down" or "xor") of `value`, a
    number of numba type `dtype`: a `boolean` travels as an int32, and so do the integers
    numba does not shuffle (`CARRIED`)."""
    name = "shfl_sync" if kind == "idx" else f"shfl_{kind}_sync"
    call = f"cuda.{name}({FULL_MASK}, {{}}, {delta})"
    if dtype == "boolean":
        return call.format(f"numba.int32({value})") + " != 0"
    if dtype in CARRIED:
        return f"numba.{dtype}({call.format(f'numba.{CARRIED[dtype]}({value})')})"
    return call.format(value)


def _shuffle(op: Operator, kind: str, value: str, delta: str) -> str:
    return shuffle(op.dtype, kind, value, delta)


def helpers(p: str, op: Operator, block: int) -> str:
    """The source of `{p}_warp_reduce`, `{p}_warp_scan`, `{p}_block_reduce` and
    `{p}_block_scan` for this operator and a 1-D block of `block` threads."""
    if block % WARP or not WARP <= block <= 1024:
        raise ValueError(f"cuda: a block of {block} threads (a multiple of 32, at most 1024)")
    warps = block // WARP
    reduce_steps, scan_steps = [], []
    for delta in (1, 2, 4, 8, 16):
        reduce_steps += [f"    other = {_shuffle(op, 'down', 'acc', str(delta))}",
                         f"    if lane + {delta} < 32:",
                         f"        acc = {op.call('acc', 'other')}"]
        scan_steps += [f"    other = {_shuffle(op, 'up', 'acc', str(delta))}",
                       f"    if lane >= {delta}:",
                       f"        acc = {op.call('other', 'acc')}"]
    return "\n".join([
        "@jit(device=True)",
        f"def {p}_warp_reduce(acc, lane, err):",
        "    # lane 0 gets the in-order fold of the warp's 32 values",
        *reduce_steps,
        "    return acc",
        "",
        "",
        "@jit(device=True)",
        f"def {p}_warp_scan(acc, lane, err):",
        "    # the inclusive and exclusive in-order scans of the warp's values",
        *scan_steps,
        f"    prev = {_shuffle(op, 'up', 'acc', '1')}",
        "    if lane == 0:",
        f"        prev = {op.ne}",
        "    return acc, prev",
        "",
        "",
        "@jit(device=True)",
        f"def {p}_block_reduce(acc, wsum, err):",
        f"    # thread 0 gets the in-order fold of the block's values; wsum: shared, {warps} slots",
        "    lane = cuda.threadIdx.x % 32",
        "    warp = cuda.threadIdx.x // 32",
        f"    acc = {p}_warp_reduce(acc, lane, err)",
        "    if lane == 0:",
        "        wsum[warp] = acc",
        "    cuda.syncthreads()",
        f"    acc = {op.ne}",
        f"    if lane < {warps}:",
        "        acc = wsum[lane]",
        f"    acc = {p}_warp_reduce(acc, lane, err)",
        "    cuda.syncthreads()",
        "    return acc",
        "",
        "",
        "@jit(device=True)",
        f"def {p}_block_scan(x, wsum, err):",
        "    # (inclusive, exclusive, block total) of the in-order scan of the block's values",
        "    lane = cuda.threadIdx.x % 32",
        "    warp = cuda.threadIdx.x // 32",
        f"    acc, prev = {p}_warp_scan(x, lane, err)",
        "    if lane == 31:",
        "        wsum[warp] = acc",
        "    cuda.syncthreads()",
        "    # every warp scans the warp totals, and takes its own prefix and the block's total",
        f"    w = {op.ne}",
        f"    if lane < {warps}:",
        "        w = wsum[lane]",
        f"    winc, wexc = {p}_warp_scan(w, lane, err)",
        f"    before = {_shuffle(op, 'idx', 'wexc', 'warp')}",
        f"    total = {_shuffle(op, 'idx', 'winc', str(warps - 1))}",
        "    cuda.syncthreads()",
        f"    return {op.call('before', 'acc')}, {op.call('before', 'prev')}, total",
    ])


def counted_reduce(p: str, fname: str, dtype: str, nfree: int) -> str:
    """The source of `{p}_warp_reduce(acc, lane, count, *free, err)` and
    `{p}_block_reduce(acc, count, wsum, *free, err)` for the operator `fname(a, b, *free,
    err)` on `dtype` values (a numba type name), for the generated kernels (`@cuda.jit`).

    Only the first `count` values (of the warp; of the block) are folded: the lanes past them
    hold anything, never a neutral element (a program's `ne` need not be neutral, and is
    applied once by the caller). Lane 0 (thread 0) gets the in-order fold of the valid
    values when `count >= 1`. `wsum`: a shared array of 32 slots (one per warp of any block
    up to 1024 threads). Every thread of the block calls `{p}_block_reduce` together."""
    if dtype not in SHUFFLED:
        raise NotImplementedError(f"cuda: reductions over `{dtype}` values are not built yet")
    free = "".join(f"k_fr{k}, " for k in range(nfree))
    op = Operator(fname, dtype, "0")
    steps = []
    for delta in (1, 2, 4, 8, 16):
        # lane l holds the fold of [l, min(l + delta, count)); it takes the next run's
        steps += [f"    other = {_shuffle(op, 'down', 'acc', str(delta))}",
                  f"    if lane + {delta} < count:",
                  f"        acc = {fname}(acc, other, {free}err)"]
    return "\n".join([
        "@cuda.jit(device=True)",
        f"def {p}_warp_reduce(acc, lane, count, {free}err):",
        "    # lane 0 gets the in-order fold of lanes 0 .. count - 1 (count <= 32)",
        *steps,
        "    return acc",
        "",
        "",
        "@cuda.jit(device=True)",
        f"def {p}_block_reduce(acc, count, wsum, {free}err):",
        "    # thread 0 gets the in-order fold of threads 0 .. count - 1",
        "    lane = cuda.threadIdx.x % 32",
        "    warp = cuda.threadIdx.x // 32",
        f"    acc = {p}_warp_reduce(acc, lane, min(count - warp * 32, 32), {free}err)",
        "    if lane == 0 and warp * 32 < count:",
        "        wsum[warp] = acc",
        "    cuda.syncthreads()",
        "    warps = (count + 31) // 32",
        "    if lane < warps:",
        "        acc = wsum[lane]",
        f"    acc = {p}_warp_reduce(acc, lane, warps, {free}err)",
        "    cuda.syncthreads()",
        "    return acc",
    ])
