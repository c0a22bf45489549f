"""Device primitives of the `cuda` target, as source templates: reduction (redomap), scan,
filter. (`segmented.py` has the segmented ones, `blocks.py` the warp and block helpers.)

A template is a function returning a `Source`: the Python source of the `@jit` kernels and
of a host launcher, to be compiled by numba.cuda with the operator's and the element code's
`@jit(device=True)` functions in the same module (`load` does it, for a GPU or for the
simulator). The generated text names `jit` (`cuda.jit`, or the simulator's), `cuda`, `numba`
and `np`.

- The operator (`blocks.Operator`) is `op(a, b, err)`, associative, with a neutral element.
  Every primitive keeps operand order, so `op` need not commute.
- The element code (`Element`) is `elem(i, *args, err)`: the value of element `i` computed
  from the kernel's arguments (a redomap's map; a plain reduction reads `a[i]`).
- `err` is the int64 error array of the cpu target (code, two operands), passed everywhere.
- Host launchers take `alloc(count, dtype)` (the memory manager's device allocation) and
  return device arrays; sizes are in elements.

Flat reduction: each block folds a contiguous range of tiles of `block` elements, a block
reduction per tile (warp shuffles, then one value per warp through shared memory), one
partial per block; a second one-block pass folds the partials. No atomics: the result is the
same run to run. With `commutative=True` (`+`, `min`, `max`, ...) each thread instead folds
a grid-stride loop of elements and the block reduces once. An empty input gives `ne`.

Scan: three phases: the per-block reduction above, a one-block exclusive scan of the
partials (each block's carry, and the total), then each block rescans its range from its
carry (block scans by shuffles) and writes it. Inclusive or exclusive (a kernel argument).
Any block count; the element code runs twice (nothing is stored in between).

Filter: the same three phases over the int64 flags `keep(i, ...)`; the third writes each kept
element's value at its position (the exclusive scan of the flags): a push array with no
branch on which half. The launcher returns the output (room for every element) and the
count (read back to the host).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .blocks import Operator, helpers

BLOCK = 256           # threads per block
MAX_BLOCKS = 1024     # blocks of the first phase (each loops over a range of tiles)
ERR = "int64[::1]"


@dataclass(frozen=True)
class Element:
    """The element code: the device function `name(i, *args, err)`, the kernel arguments it
    reads and their numba types (`float64[::1]`), for signatures."""
    name: str
    args: tuple[str, ...] = ()
    types: tuple[str, ...] = ()

    def call(self, index: str) -> str:
        return f"{self.name}({', '.join((index, *self.args, 'err'))})"

    @property
    def params(self) -> str:
        return "".join(f"{a}, " for a in self.args)


@dataclass(frozen=True)
class Kernel:
    """One `@jit` kernel of a primitive and its numba signature (for `compile_ptx`)."""
    name: str
    signature: str


@dataclass(frozen=True)
class Source:
    """A primitive's generated source, its kernels and its host launcher's name."""
    text: str
    kernels: tuple[Kernel, ...]
    launcher: str


def load(sources: list[str], simulate: bool | None = None) -> dict[str, Any]:
    """Compile generated source (the device functions first) into a fresh namespace: for a
    GPU, or for numba's simulator (which then also gets the warp intrinsics; by default when
    numba.cuda is the simulator)."""
    import math

    import numba
    import numpy as np
    from numba import cuda

    from .simulator import simulated
    if simulate is None:
        simulate = simulated()
    if simulate:
        from numba.cuda import simulator as sim

        from .simulator import install
        install()
        jit = sim.jit
    else:
        jit = cuda.jit
    namespace: dict[str, Any] = {"cuda": cuda, "jit": jit, "numba": numba, "np": np,
                                 "math": math}
    exec(compile("\n\n\n".join(sources), "<accel cuda>", "exec"), namespace)
    return namespace


def signature(*types: str) -> str:
    return f"void({', '.join(types)})"


def grid_lines(n: str, block: int, max_blocks: int) -> list[str]:
    """Launcher lines: `blocks` (at least one) and `per` (tiles of each block)."""
    return [f"    tiles = ({n} + {block - 1}) // {block}",
            f"    blocks = min(max(tiles, 1), {max_blocks})",
            "    per = (tiles + blocks - 1) // blocks"]


def range_fold(p: str, op: Operator, block: int, value: str) -> list[str]:
    """Kernel lines: this block's tiles folded in order into `run` (valid in thread 0)."""
    return [f"    wsum = cuda.shared.array({block // 32}, numba.{op.dtype})",
            "    tid = cuda.threadIdx.x",
            f"    run = {op.ne}",
            "    first = cuda.blockIdx.x * per",
            "    for tile in range(first, first + per):",
            f"        i = tile * {block} + tid",
            f"        x = {op.ne}",
            "        if i < n:",
            f"            x = {value}",
            f"        t = {p}_block_reduce(x, wsum, err)",
            "        if tid == 0:",
            f"            run = {op.call('run', 't')}"]


def range_scan(p: str, op: Operator, block: int, value: str, write: list[str]) -> list[str]:
    """Kernel lines: this block's tiles scanned in order from `run`; `write` uses `i`,
    `incl`, `excl` (the scans up to element i) and `x`."""
    return [f"    wsum = cuda.shared.array({block // 32}, numba.{op.dtype})",
            "    tid = cuda.threadIdx.x",
            "    first = cuda.blockIdx.x * per",
            "    for tile in range(first, first + per):",
            f"        i = tile * {block} + tid",
            f"        x = {op.ne}",
            "        if i < n:",
            f"            x = {value}",
            f"        incl, excl, total = {p}_block_scan(x, wsum, err)",
            "        if i < n:",
            *write,
            f"        run = {op.call('run', 'total')}"]


def partials_kernel(p: str, op: Operator, elem: Element, block: int, commutative: bool,
              value: str | None = None) -> list[str]:
    value = value or elem.call("i")
    head = ["@jit", f"def {p}_partials(n, per, {elem.params}partials, err):"]
    if not commutative:
        return [*head, *range_fold(p, op, block, value),
                "    if tid == 0:", "        partials[cuda.blockIdx.x] = run"]
    return [*head,
            f"    wsum = cuda.shared.array({block // 32}, numba.{op.dtype})",
            "    i = cuda.grid(1)",
            f"    acc = {op.ne}",
            "    while i < n:",
            f"        acc = {op.call('acc', value)}",
            f"        i += cuda.gridDim.x * {block}",
            f"    t = {p}_block_reduce(acc, wsum, err)",
            "    if cuda.threadIdx.x == 0:",
            "        partials[cuda.blockIdx.x] = t"]


def carries_kernel(p: str, op: Operator, block: int) -> list[str]:
    """One block: the exclusive scan of the partials (each block's carry) and the total."""
    return ["@jit", f"def {p}_carries(m, partials, carries, grand, err):",
            "    n = m", f"    per = (m + {block - 1}) // {block}",
            f"    run = {op.ne}",
            *range_scan(p, op, block, "partials[i]",
                         [f"            carries[i] = {op.call('run', 'excl')}"]),
            "    if tid == 0:", "        grand[0] = run"]


def reduction(p: str, op: Operator, elem: Element, block: int = BLOCK,
              max_blocks: int = MAX_BLOCKS, commutative: bool = False) -> Source:
    """A reduction (redomap) of `elem(i)` for i < n; the launcher `p(n, *args, alloc, err)`
    returns a device array of one element."""
    d = op.dtype
    lines = [helpers(p, op, block), "",
             "\n".join(partials_kernel(p, op, elem, block, commutative)), "",
             "\n".join(["@jit", f"def {p}_final(n, per, partials, out, err):",
                        *range_fold(p, op, block, "partials[i]"),
                        "    if tid == 0:", "        out[0] = run"]), "",
             "\n".join([f"def {p}(n, {elem.params}alloc, err):",
                        *grid_lines("n", block, max_blocks),
                        f"    partials = alloc(blocks, np.{np_name(d)})",
                        f"    {p}_partials[blocks, {block}](n, per, {elem.params}partials, err)",
                        f"    out = alloc(1, np.{np_name(d)})",
                        f"    {p}_final[1, {block}](blocks, (blocks + {block - 1}) // {block}, "
                        "partials, out, err)",
                        "    return out"])]
    arr = f"{d}[::1]"
    kernels = (Kernel(f"{p}_partials", signature("int64", "int64", *elem.types, arr, ERR)),
               Kernel(f"{p}_final", signature("int64", "int64", arr, arr, ERR)))
    return Source("\n\n".join(lines), kernels, p)


def np_name(dtype: str) -> str:
    """The numpy name of a numba type name (`boolean` -> `bool_`)."""
    return "bool_" if dtype == "boolean" else dtype


def scan(p: str, op: Operator, elem: Element, block: int = BLOCK,
         max_blocks: int = MAX_BLOCKS) -> Source:
    """An inclusive (or exclusive) scan of `elem(i)` for i < n; the launcher
    `p(n, *args, alloc, err, exclusive=False)` returns (the scan, its total: one element)."""
    d, arr = op.dtype, f"{op.dtype}[::1]"
    apply = ["@jit", f"def {p}_apply(n, per, exclusive, {elem.params}carries, out, err):",
             "    run = carries[cuda.blockIdx.x]",
             *range_scan(p, op, block, elem.call("i"),
                          ["            if exclusive:",
                           f"                out[i] = {op.call('run', 'excl')}",
                           "            else:",
                           f"                out[i] = {op.call('run', 'incl')}"])]
    launcher = [f"def {p}(n, {elem.params}alloc, err, exclusive=False):",
                *grid_lines("n", block, max_blocks),
                f"    partials = alloc(blocks, np.{np_name(d)})",
                f"    {p}_partials[blocks, {block}](n, per, {elem.params}partials, err)",
                f"    carries = alloc(blocks, np.{np_name(d)})",
                f"    total = alloc(1, np.{np_name(d)})",
                f"    {p}_carries[1, {block}](blocks, partials, carries, total, err)",
                f"    out = alloc(n, np.{np_name(d)})",
                f"    {p}_apply[blocks, {block}](n, per, exclusive, {elem.params}carries, out, "
                "err)",
                "    return out, total"]
    text = "\n\n".join([helpers(p, op, block),
                        "\n".join(partials_kernel(p, op, elem, block, False)),
                        "\n".join(carries_kernel(p, op, block)), "\n".join(apply),
                        "\n".join(launcher)])
    kernels = (Kernel(f"{p}_partials", signature("int64", "int64", *elem.types, arr, ERR)),
               Kernel(f"{p}_carries", signature("int64", arr, arr, arr, ERR)),
               Kernel(f"{p}_apply", signature("int64", "int64", "boolean", *elem.types, arr, arr,
                                         ERR)))
    return Source(text, kernels, p)


def filter_(p: str, keep: Element, value: Element, dtype: str, block: int = BLOCK,
            max_blocks: int = MAX_BLOCKS) -> Source:
    """Compaction: the values `value(i)` of the elements with `keep(i)`, in order. Both
    element functions take the same arguments (`keep.args`). The launcher
    `p(n, *args, alloc, err)` returns (the output, room for n values; the count)."""
    add = Operator(f"{p}_add", "int64", "0")
    flag = f"numba.int64(1 if {keep.call('i')} else 0)"
    arr, counts = f"{dtype}[::1]", "int64[::1]"
    scatter = ["@jit", f"def {p}_scatter(n, per, {keep.params}carries, out, err):",
               "    run = carries[cuda.blockIdx.x]",
               *range_scan(p, add, block, flag,
                            ["            if x != 0:",
                             f"                out[run + excl] = {value.call('i')}"])]
    launcher = [f"def {p}(n, {keep.params}alloc, err):",
                *grid_lines("n", block, max_blocks),
                "    partials = alloc(blocks, np.int64)",
                f"    {p}_partials[blocks, {block}](n, per, {keep.params}partials, err)",
                "    carries = alloc(blocks, np.int64)",
                "    total = alloc(1, np.int64)",
                f"    {p}_carries[1, {block}](blocks, partials, carries, total, err)",
                f"    out = alloc(n, np.{np_name(dtype)})",
                f"    {p}_scatter[blocks, {block}](n, per, {keep.params}carries, out, err)",
                "    return out, int(total.copy_to_host()[0])"]
    text = "\n\n".join([f"@jit(device=True)\ndef {p}_add(a, b, err):\n    return a + b",
                        helpers(p, add, block),
                        "\n".join(partials_kernel(p, add, keep, block, False, flag)),
                        "\n".join(carries_kernel(p, add, block)), "\n".join(scatter),
                        "\n".join(launcher)])
    kernels = (Kernel(f"{p}_partials", signature("int64", "int64", *keep.types, counts, ERR)),
               Kernel(f"{p}_carries", signature("int64", counts, counts, counts, ERR)),
               Kernel(f"{p}_scatter", signature("int64", "int64", *keep.types, counts, arr, ERR)))
    return Source(text, kernels, p)



ATOMIC = {"add": "cuda.atomic.add", "min": "cuda.atomic.min", "max": "cuda.atomic.max"}
ATOMIC_TYPES = ("int32", "int64", "uint32", "uint64")


def reduce_by_index(p: str, kind: str, dtype: str, index: Element, value: Element,
                    block: int = BLOCK, max_blocks: int = MAX_BLOCKS) -> Source:
    """`reduce_by_index` for integer `+`, `min` and `max` (`kind`: add, min, max) by
    atomics: `out[index(i)] op= value(i)`, out-of-range indices ignored (LANGUAGE.md). The
    operators commute, so the order of the atomics does not change the result. Both element
    functions take `index.args`. The launcher `p(n, *args, out, err)` updates `out` (a copy
    of the destination: `m` values) in place."""
    if kind not in ATOMIC or dtype not in ATOMIC_TYPES:
        raise NotImplementedError(f"cuda: reduce_by_index with `{kind}` on `{dtype}` (a "
                                  "sort-based or private-histogram variant) is not built yet")
    kernel = ["@jit", f"def {p}_atomic(n, {index.params}out, err):",
              "    m = out.shape[0]",
              "    for i in range(cuda.grid(1), n, cuda.gridsize(1)):",
              f"        j = numba.int64({index.call('i')})",
              "        if j >= 0 and j < m:",
              f"            {ATOMIC[kind]}(out, j, numba.{dtype}({value.call('i')}))"]
    launcher = [f"def {p}(n, {index.params}out, err):",
                f"    blocks = min(max((n + {block - 1}) // {block}, 1), {max_blocks})",
                f"    {p}_atomic[blocks, {block}](n, {index.params}out, err)",
                "    return out"]
    kernels = (Kernel(f"{p}_atomic", signature("int64", *index.types, f"{dtype}[::1]", ERR)),)
    return Source("\n\n".join(["\n".join(kernel), "\n".join(launcher)]), kernels, p)


def reduce_by_index_sorted(p: str, combine: str, dtype: str, block: int = BLOCK,
                           max_blocks: int = MAX_BLOCKS) -> Source:
    """`reduce_by_index` for any operator `combine(a, b, err)` (a device function) and for
    floats, in the interpreter's order: `out[j] = combine(out[j], v)` for each value of
    bucket `j` in input order, so float sums are those of a sequential loop. The input comes
    sorted: `keys` (int64: the bucket of each element, `m` for an out-of-range index) and
    `order` (their stable ascending order, from `sort.py`). The thread at the first position
    of a run of one bucket folds the run into `out[j]` (a copy of the destination: `m`
    values), in place: each bucket has one writer, so no atomics and the same result every
    run. A bucket's run is folded by one thread: a very long run is slow, not wrong. The
    launcher `p(n, order, keys, values, out, err)`."""
    kernel = ["@jit", f"def {p}_runs(n, order, keys, values, out, err):",
              "    m = out.shape[0]",
              "    for i in range(cuda.grid(1), n, cuda.gridsize(1)):",
              "        j = keys[order[i]]",
              "        if j < m and (i == 0 or keys[order[i - 1]] != j):",
              "            acc = out[j]",
              "            k = i",
              "            while k < n and keys[order[k]] == j:",
              f"                acc = {combine}(acc, values[order[k]], err)",
              "                k += 1",
              "            out[j] = acc"]
    launcher = [f"def {p}(n, order, keys, values, out, err):",
                f"    blocks = min(max((n + {block - 1}) // {block}, 1), {max_blocks})",
                f"    {p}_runs[blocks, {block}](n, order, keys, values, out, err)",
                "    return out"]
    i64, arr = "int64[::1]", f"{dtype}[::1]"
    kernels = (Kernel(f"{p}_runs", signature("int64", i64, i64, arr, arr, ERR)),)
    return Source("\n\n".join(["\n".join(kernel), "\n".join(launcher)]), kernels, p)
