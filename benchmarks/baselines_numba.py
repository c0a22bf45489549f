"""Hand-written numba baselines for benchmarks/workloads.py: one `@njit(parallel=True)` kernel
per workload, written the way a numba user would (a `prange` over the outer dimension, flat
numpy arrays in and out, no Python objects). They are the reference of every ratio.

Kernels whose result would be written by several iterations at once (a histogram, a
per-cluster sum) give each thread its own partial result and add them afterwards, rather than
race. Small serial steps are plain loops: numba turns array expressions such as
`counts[:, c].sum()` into parallel regions of their own, each a fork and a join. No `cache=True`: the first call in a process compiles, and that time is reported.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange


@njit(parallel=True)
def seg_sum(offsets, values):
    rows = len(offsets) - 1
    out = np.empty(rows, dtype=values.dtype)
    for i in prange(rows):
        total = 0.0
        for k in range(offsets[i], offsets[i + 1]):
            total += values[k]
        out[i] = total
    return out


@njit(parallel=True)
def smvm(offsets, cols, vals, x):
    rows = len(offsets) - 1
    out = np.empty(rows, dtype=vals.dtype)
    for i in prange(rows):
        total = 0.0
        for k in range(offsets[i], offsets[i + 1]):
            total += vals[k] * x[cols[k]]
        out[i] = total
    return out


_TRIPLE_CHUNKS = 64     # `a` is dealt cyclically to chunks: small `a` have few candidates


@njit(parallel=True)
def triples(n):
    """The comprehension's candidates (b in [a, n), c in [b, min(a+b, n))): count the hits
    per `a`, then write them at their offsets (the usual two-pass parallel filter)."""
    counts = np.zeros(n + 1, dtype=np.int64)
    for chunk in prange(_TRIPLE_CHUNKS):
        for a in range(1 + chunk, n, _TRIPLE_CHUNKS):
            found = 0
            for b in range(a, n):
                for c in range(b, min(a + b, n)):
                    if a * a + b * b == c * c:
                        found += 1
            counts[a + 1] = found
    offsets = np.cumsum(counts)
    out = np.empty((offsets[-1], 3), dtype=np.int64)
    for chunk in prange(_TRIPLE_CHUNKS):
        for a in range(1 + chunk, n, _TRIPLE_CHUNKS):
            k = offsets[a]
            for b in range(a, n):
                for c in range(b, min(a + b, n)):
                    if a * a + b * b == c * c:
                        out[k, 0], out[k, 1], out[k, 2] = a, b, c
                        k += 1
    return out


@njit(parallel=True)
def triples_isqrt(n):
    """Another algorithm, O(n²): for each a <= b the one candidate c = round(sqrt(a² + b²))."""
    counts = np.zeros(n + 1, dtype=np.int64)
    for a in prange(1, n):
        found = 0
        for b in range(a, n):
            c = np.int64(np.rint(np.sqrt(np.float64(a * a + b * b))))
            if c < n and a * a + b * b == c * c:
                found += 1
        counts[a + 1] = found
    offsets = np.cumsum(counts)
    out = np.empty((offsets[-1], 3), dtype=np.int64)
    for a in prange(1, n):
        k = offsets[a]
        for b in range(a, n):
            c = np.int64(np.rint(np.sqrt(np.float64(a * a + b * b))))
            if c < n and a * a + b * b == c * c:
                out[k, 0], out[k, 1], out[k, 2] = a, b, c
                k += 1
    return out


@njit
def _along(d, steps, t):
    """The offset along one axis of point t of a line of `steps` steps (d = its extent there):
    round(t·|d| / steps) with the sign of d, in integers that are never negative."""
    if steps == 0:
        return 0
    sign = 1 if d > 0 else (-1 if d < 0 else 0)
    return sign * ((t * abs(d) + steps // 2) // steps)


@njit(parallel=True)
def draw_lines(x0, y0, x1, y1, width, height):
    """Every point of every line counted into a width×height grid: the lines are split into
    one block per thread, each drawing into its own grid; the grids are added at the end."""
    lines = len(x0)
    threads = numba.get_num_threads()
    grids = np.zeros((threads, width * height), dtype=np.int64)
    for block in prange(threads):
        for i in range(block * lines // threads, (block + 1) * lines // threads):
            dx, dy = x1[i] - x0[i], y1[i] - y0[i]
            steps = max(abs(dx), abs(dy))
            for t in range(steps + 1):
                x = x0[i] + _along(dx, steps, t)
                y = y0[i] + _along(dy, steps, t)
                grids[block, y * width + x] += 1
    out = np.empty(width * height, dtype=np.int64)
    for p in prange(width * height):
        total = 0
        for block in range(threads):
            total += grids[block, p]
        out[p] = total
    return out


@njit(parallel=True)
def sort_rows(offsets, values):
    out = np.empty_like(values)
    for i in prange(len(offsets) - 1):
        out[offsets[i]:offsets[i + 1]] = np.sort(values[offsets[i]:offsets[i + 1]])
    return out


@njit(parallel=True)
def mandelbrot(height, width, limit):
    out = np.empty((height, width), dtype=np.int64)
    for row in prange(height):
        ci = -1.5 + 3.0 * row / height
        for col in range(width):
            cr = -2.0 + 3.0 * col / width
            x, y, i = 0.0, 0.0, 0
            while i < limit and x * x + y * y <= 4.0:
                x, y, i = x * x - y * y + cr, 2.0 * x * y + ci, i + 1
            out[row, col] = i
    return out


@njit(parallel=True)
def nbody(dt, eps2, x, y, z, vx, vy, vz, m):
    """One step: all-pairs accelerations with softening (a body's pull on itself is 0), then
    velocities, then positions."""
    n = len(x)
    out = np.empty((6, n), dtype=np.float64)
    for i in prange(n):
        ax, ay, az = 0.0, 0.0, 0.0
        for j in range(n):
            dx, dy, dz = x[j] - x[i], y[j] - y[i], z[j] - z[i]
            d2 = dx * dx + dy * dy + dz * dz + eps2
            s = m[j] / (d2 * np.sqrt(d2))
            ax += dx * s
            ay += dy * s
            az += dz * s
        nvx, nvy, nvz = vx[i] + dt * ax, vy[i] + dt * ay, vz[i] + dt * az
        out[0, i], out[1, i], out[2, i] = x[i] + dt * nvx, y[i] + dt * nvy, z[i] + dt * nvz
        out[3, i], out[4, i], out[5, i] = nvx, nvy, nvz
    return out


@njit(parallel=True)
def kmeans_step(points, centroids):
    """Nearest centroid of every point (ties to the lower index), then the mean of each
    cluster's points (an empty cluster keeps its centroid). One block of points per thread,
    each with its own sums and counts."""
    n, dims = points.shape
    k = centroids.shape[0]
    threads = numba.get_num_threads()
    sums = np.zeros((threads, k, dims), dtype=np.float64)
    counts = np.zeros((threads, k), dtype=np.int64)
    for block in prange(threads):
        for i in range(block * n // threads, (block + 1) * n // threads):
            best, best_d2 = 0, np.inf
            for c in range(k):
                d2 = 0.0
                for j in range(dims):
                    diff = points[i, j] - centroids[c, j]
                    d2 += diff * diff
                if d2 < best_d2:
                    best, best_d2 = c, d2
            counts[block, best] += 1
            for j in range(dims):
                sums[block, best, j] += points[i, j]
    out = np.empty_like(centroids)
    for c in range(k):          # k·dims·threads additions: plain loops, no parallel region
        count = 0
        for block in range(threads):
            count += counts[block, c]
        for j in range(dims):
            if count == 0:
                out[c, j] = centroids[c, j]
            else:
                total = 0.0
                for block in range(threads):
                    total += sums[block, c, j]
                out[c, j] = total / count
    return out
