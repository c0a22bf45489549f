"""Segmented primitives of the `cuda` target, as source templates (see `primitives.py`):
reductions and scans of each segment of a segmented array given by its offsets (`offsets[s]`
to `offsets[s + 1]`, int64, `segments + 1` of them), and the 2-D kernel for rows of one width.

Segmented reduction, three variants, each correct for any lengths, keeping operand order:
- `thread`: one thread per segment, folding its elements from `ne` (short segments);
- `warp`: one warp per segment, 32 elements at a time, a warp reduction by shuffles each;
- `block`: one block per segment, a block reduction per tile of `block` elements (long ones);
- `rows`: all segments of one width (the regularity facts say so): 2-D blocks of
  32 x (block / 32) threads, one warp per row, no offsets read.
`choose` picks the variant from the segment-length statistics the host already has
(`choose_scan` for scans).

Segmented scan: `thread` (one thread per segment) and `block` (one block per segment, block
scans by shuffles), both for any lengths; inclusive or exclusive.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...lang.scalar_ops import DTYPE_SOURCE
from .blocks import Operator, helpers, numba_type, shuffle
from .primitives import BLOCK, ERR, Element, Kernel, Source, np_name, signature

VARIANTS = ("thread", "warp", "block", "rows")
THREAD_MEAN, THREAD_MAX = 16, 256    # below both: one thread per segment
BLOCK_MEAN = 1024                    # from this mean length on: one block per segment
MAX_GRID = 4096                      # blocks of a launch (grid-stride loops past it)


@dataclass(frozen=True)
class SegmentStats:
    """What the host knows of a segmented array's lengths."""
    segments: int
    mean: float
    longest: int
    regular: bool      # all segments of one length

    @staticmethod
    def of(lengths) -> SegmentStats:
        """The statistics of a host array of segment lengths."""
        count = len(lengths)
        if count == 0:
            return SegmentStats(0, 0.0, 0, True)
        longest, shortest = int(lengths.max()), int(lengths.min())
        return SegmentStats(count, float(lengths.mean()), longest, longest == shortest)


def choose(stats: SegmentStats) -> str:
    """The variant of a segmented reduction for segments of these lengths: `rows` when they
    are all equal, `thread` when short (a thread's loop is cheap and coalescing matters
    little), `block` when long (a warp alone would leave the GPU idle), else `warp`."""
    if stats.regular and stats.segments > 0:
        return "rows"
    if stats.mean < THREAD_MEAN and stats.longest < THREAD_MAX:
        return "thread"
    if stats.mean >= BLOCK_MEAN:
        return "block"
    return "warp"


def choose_scan(stats: SegmentStats) -> str:
    """The variant of a segmented scan: `thread` for short segments, else `block`."""
    if stats.mean < THREAD_MEAN and stats.longest < THREAD_MAX:
        return "thread"
    return "block"


def _blocks(count: str, per_block: int) -> str:
    return f"min(max(({count} + {per_block - 1}) // {per_block}, 1), {MAX_GRID})"


def seg_reduce(p: str, op: Operator, elem: Element, block: int = BLOCK) -> Source:
    """All four variants. The launcher `p(variant, segments, offsets, *args, alloc, err)`
    (variant `thread`, `warp` or `block`) and `p_rows_launch(rows, width, *args, alloc, err)`
    return a device array of one value per segment."""
    d, arr = op.dtype, f"{op.dtype}[::1]"
    ne, a = op.ne, elem.params
    ny = block // 32
    thread = ["@jit", f"def {p}_thread(segments, offsets, {a}out, err):",
              "    for s in range(cuda.grid(1), segments, cuda.gridsize(1)):",
              f"        acc = {ne}",
              "        for i in range(offsets[s], offsets[s + 1]):",
              f"            acc = {op.call('acc', elem.call('i'))}",
              "        out[s] = acc"]
    warp = ["@jit", f"def {p}_warp(segments, offsets, {a}out, err):",
            "    lane = cuda.threadIdx.x % 32",
            "    warps = cuda.gridsize(1) // 32",
            "    for s in range(cuda.grid(1) // 32, segments, warps):",
            f"        run = {ne}",
            "        hi = offsets[s + 1]",
            "        for base in range(offsets[s], hi, 32):",
            "            i = base + lane",
            f"            x = {ne}",
            "            if i < hi:",
            f"                x = {elem.call('i')}",
            f"            t = {p}_warp_reduce(x, lane, err)",
            "            if lane == 0:",
            f"                run = {op.call('run', 't')}",
            "        if lane == 0:",
            "            out[s] = run"]
    blk = ["@jit", f"def {p}_block(segments, offsets, {a}out, err):",
           f"    wsum = cuda.shared.array({ny}, numba.{d})",
           "    tid = cuda.threadIdx.x",
           "    for s in range(cuda.blockIdx.x, segments, cuda.gridDim.x):",
           f"        run = {ne}",
           "        hi = offsets[s + 1]",
           f"        for base in range(offsets[s], hi, {block}):",
           "            i = base + tid",
           f"            x = {ne}",
           "            if i < hi:",
           f"                x = {elem.call('i')}",
           f"            t = {p}_block_reduce(x, wsum, err)",
           "            if tid == 0:",
           f"                run = {op.call('run', 't')}",
           "        if tid == 0:",
           "            out[s] = run"]
    rows = ["@jit", f"def {p}_rows(rows, width, {a}out, err):",
            "    lane = cuda.threadIdx.x",
            f"    for r in range(cuda.blockIdx.x * {ny} + cuda.threadIdx.y, rows, "
            f"cuda.gridDim.x * {ny}):",
            f"        run = {ne}",
            "        for col in range(0, width, 32):",
            "            j = col + lane",
            f"            x = {ne}",
            "            if j < width:",
            "                i = r * width + j",
            f"                x = {elem.call('i')}",
            f"            t = {p}_warp_reduce(x, lane, err)",
            "            if lane == 0:",
            f"                run = {op.call('run', 't')}",
            "        if lane == 0:",
            "            out[r] = run"]
    launcher = [f"def {p}(variant, segments, offsets, {a}alloc, err):",
                "    # offsets: device int64, segments + 1 of them",
                f"    out = alloc(segments, np.{np_name(d)})",
                "    if segments == 0:",
                "        return out",
                "    if variant == 'thread':",
                f"        {p}_thread[{_blocks('segments', block)}, {block}](segments, offsets, "
                f"{a}out, err)",
                "    elif variant == 'warp':",
                f"        {p}_warp[{_blocks('segments', ny)}, {block}](segments, offsets, "
                f"{a}out, err)",
                "    elif variant == 'block':",
                f"        {p}_block[min(segments, {MAX_GRID}), {block}](segments, offsets, "
                f"{a}out, err)",
                "    else:",
                "        raise ValueError(variant)",
                "    return out",
                "",
                "",
                f"def {p}_rows_launch(rows, width, {a}alloc, err):",
                f"    out = alloc(rows, np.{np_name(d)})",
                "    if rows > 0:",
                f"        {p}_rows[{_blocks('rows', ny)}, (32, {ny})](rows, width, {a}out, err)",
                "    return out"]
    text = "\n\n".join([helpers(p, op, block), *("\n".join(k) for k in
                                                  (thread, warp, blk, rows, launcher))])
    seg = ("int64", "int64[::1]", *elem.types, arr, ERR)
    kernels = (Kernel(f"{p}_thread", signature(*seg)), Kernel(f"{p}_warp", signature(*seg)),
               Kernel(f"{p}_block", signature(*seg)),
               Kernel(f"{p}_rows", signature("int64", "int64", *elem.types, arr, ERR)))
    return Source(text, kernels, p)


def seg_scan(p: str, op: Operator, elem: Element, block: int = BLOCK) -> Source:
    """Segmented scans, `thread` and `block` per segment; the launcher
    `p(variant, segments, offsets, n, *args, alloc, err, exclusive=False)` returns the n
    scanned values (n = offsets[segments])."""
    d, arr = op.dtype, f"{op.dtype}[::1]"
    ne, a = op.ne, elem.params
    thread = ["@jit", f"def {p}_thread(segments, offsets, exclusive, {a}out, err):",
              "    for s in range(cuda.grid(1), segments, cuda.gridsize(1)):",
              f"        acc = {ne}",
              "        for i in range(offsets[s], offsets[s + 1]):",
              f"            nxt = {op.call('acc', elem.call('i'))}",
              "            if exclusive:",
              "                out[i] = acc",
              "            else:",
              "                out[i] = nxt",
              "            acc = nxt"]
    blk = ["@jit", f"def {p}_block(segments, offsets, exclusive, {a}out, err):",
           f"    wsum = cuda.shared.array({block // 32}, numba.{d})",
           "    tid = cuda.threadIdx.x",
           "    for s in range(cuda.blockIdx.x, segments, cuda.gridDim.x):",
           f"        run = {ne}",
           "        hi = offsets[s + 1]",
           f"        for base in range(offsets[s], hi, {block}):",
           "            i = base + tid",
           f"            x = {ne}",
           "            if i < hi:",
           f"                x = {elem.call('i')}",
           f"            incl, excl, total = {p}_block_scan(x, wsum, err)",
           "            if i < hi:",
           "                if exclusive:",
           f"                    out[i] = {op.call('run', 'excl')}",
           "                else:",
           f"                    out[i] = {op.call('run', 'incl')}",
           f"            run = {op.call('run', 'total')}"]
    launcher = [f"def {p}(variant, segments, offsets, n, {a}alloc, err, exclusive=False):",
                f"    out = alloc(n, np.{np_name(d)})",
                "    if segments == 0:",
                "        return out",
                "    if variant == 'thread':",
                f"        {p}_thread[{_blocks('segments', block)}, {block}](segments, offsets, "
                f"exclusive, {a}out, err)",
                "    elif variant == 'block':",
                f"        {p}_block[min(segments, {MAX_GRID}), {block}](segments, offsets, "
                f"exclusive, {a}out, err)",
                "    else:",
                "        raise ValueError(variant)",
                "    return out"]
    text = "\n\n".join([helpers(p, op, block),
                        *("\n".join(k) for k in (thread, blk, launcher))])
    sig = signature("int64", "int64[::1]", "boolean", *elem.types, arr, ERR)
    return Source(text, (Kernel(f"{p}_thread", sig), Kernel(f"{p}_block", sig)), p)


# ---------------------------------------------------------------------- generated kernels
# What the segmented and rows kernels of the codegen (`codegen_segmented.py`) use: the
# variant of a launch, its grid, and the in-order warp fold of a prefix of valid lanes.

KERNEL_VARIANTS = ("thread", "warp", "block")    # a generated kernel's (rows: `width`)
CHOSEN: deque[tuple[str, str]] = deque(maxlen=256)   # (kernel, variant) of recent launches


def choose_kernel(stats: SegmentStats) -> str:
    """`choose` for a generated kernel: segments of one length (rows) take the variant their
    length asks for (one thread, warp or block per row; no 2-D kernel of its own)."""
    return choose(replace(stats, regular=False))


def pick(kernel: str, offsets: Any) -> str:
    """The variant of a segmented kernel for a host array of offsets (recorded in `CHOSEN`)."""
    return _picked(kernel, SegmentStats.of(np.diff(offsets)))


def pick_rows(kernel: str, rows: int, width: int) -> str:
    """The variant of a rows kernel: `rows` rows of `width` elements."""
    return _picked(kernel, SegmentStats(rows, float(width), width, True))


def _picked(kernel: str, stats: SegmentStats) -> str:
    variant = choose_kernel(stats)
    CHOSEN.append((kernel, variant))
    return variant


def launch_grid(variant: str, segments: int) -> tuple[int, int]:
    """(blocks, threads) of a launch: a thread, a warp or a block per segment (grid-stride
    loops over the segments past the grid)."""
    from .device import grid
    _, threads = grid(1)
    per = {"thread": 1, "warp": 32, "block": threads}[variant]
    return grid(max(1, segments) * per)


def warp_fold(value: str, count: str, call: Any, elem: str, indent: str) -> list[str]:
    """Lines that fold `value` over the lanes of a warp in order, lane 0 getting the fold of
    lanes 0 .. count - 1 (count >= 1; the others' values are never used: no padding with a
    neutral element). `call(a, b)` is the operator's code; `elem` the scalar type (a bool
    travels as an int32). Every lane of the warp runs these lines."""
    out = []
    for delta in (1, 2, 4, 8, 16):
        moved = shuffle(numba_type(DTYPE_SOURCE[elem]), "down", value, str(delta))
        out += [f"{indent}sg_other = {moved}",
                f"{indent}if sg_lane + {delta} < {count}:",
                f"{indent}    {value} = {call(value, 'sg_other')}"]
    return out
