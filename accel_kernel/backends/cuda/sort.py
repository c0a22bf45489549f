"""A stable radix sort for the `cuda` target, as a source template (see `primitives.py`):
the order (a permutation, int64) that sorts int64 or float64 keys ascending, stably, NaN
last, as `sort_order` of the numpy target gives it (the caller gathers the values).

Keys become int64 words whose unsigned order is the keys' order: an integer's sign bit
flipped; a float's bits, all flipped when negative, else the sign bit set; -0.0 as 0.0 (equal
keys keep their order) and NaN as all ones (last). Then one pass per bit, lowest first, each a
stable split: the flags `bit of key`, their exclusive scan (the per-block count and the
one-block carries of `primitives`), and a scatter of each key and its index to its
position (`i - ones before` for a 0, `zeros + ones before` for a 1). Passes stop at the
highest bit where the words differ (at most 64 passes of three kernels): simple and stable,
not fast (a 4-bit digit per pass with per-block histograms is the next step).

`rank_sort` is the short-segment variant, one launch after the words: each element counts
the elements of its segment that come before it (a smaller word, or an equal one at a smaller
index) and writes its index at that rank. Quadratic in a segment's length, so for segments
of at most RANK_MAX elements, where it beats the radix sort's up to 192 launches.
"""
from __future__ import annotations

from .blocks import Operator, helpers
from .primitives import (BLOCK, ERR, MAX_BLOCKS, Element, Kernel, Source, carries_kernel,
                         grid_lines, partials_kernel, range_scan, reduction, signature)

SORTED_TYPES = ("int64", "float64")
SIGN = "numba.int64(-9223372036854775808)"
RANK_MAX = 2048       # the longest segment `rank_sort` takes (each thread reads its segment)


def word_lines(dtype: str) -> list[str]:
    """Kernel lines: `keys[i]`, the int64 word of `bits[i]` (the key's bits) whose unsigned
    order is the keys' order."""
    if dtype == "int64":
        return [f"        keys[i] = bits[i] ^ {SIGN}"]
    return ["        u = bits[i]",
            f"        if u == {SIGN}:",
            "            u = numba.int64(0)",
            "        if (u & 0x7FF0000000000000) == 0x7FF0000000000000 and "
            "(u & 0x000FFFFFFFFFFFFF) != 0:",
            "            keys[i] = numba.int64(-1)",
            "        elif u < 0:",
            "            keys[i] = ~u",
            "        else:",
            f"            keys[i] = u ^ {SIGN}"]


def radix_sort(p: str, dtype: str, block: int = BLOCK, max_blocks: int = MAX_BLOCKS) -> Source:
    """The launcher `p(n, keys, alloc, err, passes=None)` (keys: a device array of `dtype`)
    returns the device int64 array of the stable ascending order. Only the low bits up to
    the highest one where the words differ are sorted (an OR and an AND reduction of the
    words find it; `passes` given skips them): integers in [0, 2**20) take 20 passes."""
    if dtype not in SORTED_TYPES:
        raise NotImplementedError(f"cuda: sorting `{dtype}` keys is not built yet")
    add = Operator(f"{p}_add", "int64", "0")
    bit = Element("", ("keys", "shift"), ("int64[::1]", "int64"))
    flag = "(keys[i] >> shift) & 1"
    words = ["@jit", f"def {p}_words(n, bits, keys, order, err):",
             "    for i in range(cuda.grid(1), n, cuda.gridsize(1)):",
             *word_lines(dtype),
             "        order[i] = i"]
    split = ["@jit",
             f"def {p}_split(n, per, keys, shift, carries, ones, out_keys, order, out_order, "
             "err):",
             "    run = carries[cuda.blockIdx.x]",
             "    zeros = n - ones[0]",
             *range_scan(p, add, block, flag,
                          ["            pos = i - (run + excl)",
                           "            if x != 0:",
                           "                pos = zeros + run + excl",
                           "            out_keys[pos] = keys[i]",
                           "            out_order[pos] = order[i]"])]
    launcher = [f"def {p}(n, keys, alloc, err, passes=None):",
                *grid_lines("n", block, max_blocks),
                "    bits = keys.view(np.int64)",
                "    words, other = alloc(n, np.int64), alloc(n, np.int64)",
                "    order, other_order = alloc(n, np.int64), alloc(n, np.int64)",
                "    partials, carries = alloc(blocks, np.int64), alloc(blocks, np.int64)",
                "    ones = alloc(1, np.int64)",
                "    if n == 0:",
                "        return order",
                f"    {p}_words[blocks, {block}](n, bits, words, order, err)",
                "    if passes is None:",
                "        # the bits where the words differ: those above the highest are sorted",
                f"        some = {p}_any(n, words, alloc, err).copy_to_host()[0]",
                f"        every = {p}_all(n, words, alloc, err).copy_to_host()[0]",
                "        differ = int(some ^ every)",
                "        passes = 64 if differ < 0 else differ.bit_length()",
                "    for shift in range(passes):",
                f"        {p}_partials[blocks, {block}](n, per, words, shift, partials, err)",
                f"        {p}_carries[1, {block}](blocks, partials, carries, ones, err)",
                f"        {p}_split[blocks, {block}](n, per, words, shift, carries, ones, other, "
                "order, other_order, err)",
                "        words, other = other, words",
                "        order, other_order = other_order, order",
                "    return order"]
    i64 = "int64[::1]"
    word = Element(f"{p}_word", ("words",), (i64,))
    some = reduction(f"{p}_any", Operator(f"{p}_or", "int64", "0"), word, block, max_blocks,
                     commutative=True)
    every = reduction(f"{p}_all", Operator(f"{p}_and", "int64", "-1"), word, block,
                      max_blocks, commutative=True)
    functions = [f"@jit(device=True)\ndef {p}_add(a, b, err):\n    return a + b",
                 f"@jit(device=True)\ndef {p}_or(a, b, err):\n    return a | b",
                 f"@jit(device=True)\ndef {p}_and(a, b, err):\n    return a & b",
                 f"@jit(device=True)\ndef {p}_word(i, words, err):\n    return words[i]"]
    text = "\n\n".join([*functions, some.text, every.text,
                        helpers(p, add, block), "\n".join(words),
                        "\n".join(partials_kernel(p, add, bit, block, False, flag)),
                        "\n".join(carries_kernel(p, add, block)), "\n".join(split),
                        "\n".join(launcher)])
    kernels = (*some.kernels, *every.kernels, Kernel(f"{p}_words", signature("int64", i64, i64, i64, ERR)),
               Kernel(f"{p}_partials", signature("int64", "int64", i64, "int64", i64, ERR)),
               Kernel(f"{p}_carries", signature("int64", i64, i64, i64, ERR)),
               Kernel(f"{p}_split", signature("int64", "int64", i64, "int64", i64, i64, i64, i64,
                                         i64, ERR)))
    return Source(text, kernels, p)


def rank_sort(p: str, dtype: str, block: int = BLOCK,
              max_blocks: int = MAX_BLOCKS) -> Source:
    """The launcher `p(n, keys, segments, offsets, alloc, err)` (device arrays: keys of
    `dtype`, the int64 `segments + 1` offsets, from 0 to n) returns the device int64 array of
    the stable ascending order within each segment (flat positions)."""
    if dtype not in SORTED_TYPES:
        raise NotImplementedError(f"cuda: sorting `{dtype}` keys is not built yet")
    words = ["@jit", f"def {p}_words(n, bits, keys, err):",
             "    for i in range(cuda.grid(1), n, cuda.gridsize(1)):",
             *word_lines(dtype),
             # signed order from here on: the words' unsigned order
             f"        keys[i] = keys[i] ^ {SIGN}"]
    rank = ["@jit", f"def {p}_rank(n, segments, offsets, words, order, err):",
            "    for i in range(cuda.grid(1), n, cuda.gridsize(1)):",
            "        lo, hi = 0, segments         # the last segment starting at or before i",
            "        while hi - lo > 1:",
            "            mid = (lo + hi) // 2",
            "            if offsets[mid] <= i:",
            "                lo = mid",
            "            else:",
            "                hi = mid",
            "        w = words[i]",
            "        before = offsets[lo]",
            "        for j in range(offsets[lo], offsets[lo + 1]):",
            "            v = words[j]",
            "            if v < w or (v == w and j < i):",
            "                before += 1",
            "        order[before] = i"]
    launcher = [f"def {p}(n, keys, segments, offsets, alloc, err):",
                "    order = alloc(n, np.int64)",
                "    if n == 0:",
                "        return order",
                "    words = alloc(n, np.int64)",
                f"    blocks = min(max((n + {block - 1}) // {block}, 1), {max_blocks})",
                f"    {p}_words[blocks, {block}](n, keys.view(np.int64), words, err)",
                f"    {p}_rank[blocks, {block}](n, segments, offsets, words, order, err)",
                "    return order"]
    i64 = "int64[::1]"
    kernels = (Kernel(f"{p}_words", signature("int64", i64, i64, ERR)),
               Kernel(f"{p}_rank", signature("int64", "int64", i64, i64, i64, ERR)))
    text = "\n\n".join(["\n".join(words), "\n".join(rank), "\n".join(launcher)])
    return Source(text, kernels, p)
