"""Hand-written baselines of the thesis' workloads (benchmarks/cluster.py): numba
(`@njit(parallel=True)`, the threads of one process) and numpy/scipy. Each takes the flat numpy
arrays of `cluster.Inputs.data`.

The CSR SMVM's numba baseline is benchmarks/baselines_numba.py's `smvm` (a prange over rows).
"""
from __future__ import annotations

import hashlib
import math

import numpy as np
from numba import njit, prange

# ---------------------------------------------------------------- audio: FIR filter


def fir_numpy(signal: np.ndarray, taps: np.ndarray) -> np.ndarray:
    return np.convolve(signal, taps[::-1], mode="valid")


def fir_windows_numpy(signal: np.ndarray, taps: np.ndarray) -> np.ndarray:
    """The windows as a strided view (no copy) times the taps."""
    return np.lib.stride_tricks.sliding_window_view(signal, len(taps)) @ taps


@njit(parallel=True, cache=True)
def fir_numba(signal, taps):
    width = len(taps)
    out = np.empty(len(signal) - width + 1)
    for k in prange(len(out)):
        total = 0.0
        for j in range(width):
            total += signal[k + j] * taps[j]
        out[k] = total
    return out


# ---------------------------------------------------------------- PageRank

DAMPING = 0.85


def pagerank_scipy(n: int, src: np.ndarray, dst: np.ndarray, outdeg: np.ndarray,
                   iterations: int) -> np.ndarray:
    """The link matrix built from the pairs (part of the time), then a sparse matrix-vector
    product per iteration."""
    import scipy.sparse as sp
    links = sp.csr_matrix((np.ones(len(src)), (dst, src)), shape=(n, n))
    dangling = outdeg == 0
    inverse = np.where(dangling, 0.0, 1.0 / np.maximum(outdeg, 1))
    rank = np.full(n, 1.0 / n)
    for _ in range(iterations):
        lost = rank[dangling].sum()
        rank = (1 - DAMPING) / n + DAMPING * (links @ (rank * inverse) + lost / n)
    return rank


@njit(parallel=True, cache=True)
def _incoming(n, src, dst, share, parts):
    """Each of `parts` threads sums its slice of the edges into its own vector; then the
    vectors are added (no atomics in numba)."""
    edges = len(src)
    partial = np.zeros((parts, n))
    for p in prange(parts):
        for e in range(p * edges // parts, (p + 1) * edges // parts):
            partial[p, dst[e]] += share[src[e]]
    out = np.zeros(n)
    for v in prange(n):
        total = 0.0
        for p in range(parts):
            total += partial[p, v]
        out[v] = total
    return out


@njit(parallel=True, cache=True)
def _update(rank, outdeg, summed, n):
    lost = 0.0
    for v in prange(n):
        if outdeg[v] == 0:
            lost += rank[v]
    out = np.empty(n)
    for v in prange(n):
        out[v] = 0.15 / n + 0.85 * (summed[v] + lost / n)
    return out


def pagerank_numba(n: int, src: np.ndarray, dst: np.ndarray, outdeg: np.ndarray,
                   iterations: int) -> np.ndarray:
    import numba
    parts = numba.get_num_threads()
    rank = np.full(n, 1.0 / n)
    inverse = np.where(outdeg == 0, 0.0, 1.0 / np.maximum(outdeg, 1))
    for _ in range(iterations):
        rank = _update(rank, outdeg, _incoming(n, src, dst, rank * inverse, parts), n)
    return rank


# ---------------------------------------------------------------- MD5 dictionary search

MD5_K = np.array([int(abs(math.sin(i + 1)) * 2 ** 32) & 0xFFFFFFFF for i in range(64)],
                 dtype=np.int64)
MD5_S = np.array([7, 12, 17, 22] * 4 + [5, 9, 14, 20] * 4 + [4, 11, 16, 23] * 4
                 + [6, 10, 15, 21] * 4, dtype=np.int64)
MASK = 0xFFFFFFFF


@njit(cache=True)
def _md5(chars, lo, hi, k_table, s_table):
    """One word of at most 55 bytes: one padded block, 32-bit words held in int64."""
    length = hi - lo
    block = np.zeros(16, dtype=np.int64)
    for p in range(length):
        block[p // 4] |= chars[lo + p] << (8 * (p % 4))
    block[length // 4] |= 0x80 << (8 * (length % 4))
    block[14] = length * 8
    a, b, c, d = 0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476
    for i in range(64):
        if i < 16:
            f, g = (b & c) | ((b ^ MASK) & d), i
        elif i < 32:
            f, g = (d & b) | ((d ^ MASK) & c), (5 * i + 1) % 16
        elif i < 48:
            f, g = b ^ c ^ d, (3 * i + 5) % 16
        else:
            f, g = c ^ (b | (d ^ MASK)), (7 * i) % 16
        t = (a + f + k_table[i] + block[g]) & MASK
        s = s_table[i]
        a, d, c = d, c, b
        b = (b + (((t << s) | (t >> (32 - s))) & MASK)) & MASK
    return ((a + 0x67452301) & MASK, (b + 0xEFCDAB89) & MASK,
            (c + 0x98BADCFE) & MASK, (d + 0x10325476) & MASK)


@njit(parallel=True, cache=True)
def _md5_search(chars, offsets, t0, t1, t2, t3, k_table, s_table):
    found = np.full(len(offsets) - 1, -1, dtype=np.int64)
    for w in prange(len(offsets) - 1):
        a, b, c, d = _md5(chars, offsets[w], offsets[w + 1], k_table, s_table)
        if a == t0 and b == t1 and c == t2 and d == t3:
            found[w] = w
    return found.max()


def md5_numba(chars: np.ndarray, offsets: np.ndarray, target: tuple[int, ...]) -> int:
    return int(_md5_search(chars, offsets, *target, MD5_K, MD5_S))


def md5_hashlib(words: list[bytes], digest: bytes) -> int:
    """Python's hashlib (OpenSSL's MD5), one word after the other in this thread."""
    found = -1
    for index, word in enumerate(words):
        if hashlib.md5(word).digest() == digest:
            found = index
    return found
