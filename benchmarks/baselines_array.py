"""Hand-written numpy and Awkward Array baselines for benchmarks/workloads.py: whole-array
code as a numpy (or Awkward) user would write it, the same algorithm as the accel program and
the numba kernel (the same candidates, the same arithmetic in the same order where floats
must agree exactly, as in mandelbrot and the k-means assignment).
"""
from __future__ import annotations

import awkward as ak
import numpy as np

# ---------------------------------------------------------------- numpy


def seg_sum(offsets: np.ndarray, values: np.ndarray) -> np.ndarray:
    """`reduceat` over the non-empty rows only: alone it gives an empty row the next row's
    first value (and a trailing empty row an index error); empty rows stay 0."""
    sizes = np.diff(offsets)
    out = np.zeros(len(sizes), dtype=values.dtype)
    nonempty = np.flatnonzero(sizes)
    if len(nonempty):
        out[nonempty] = np.add.reduceat(values, offsets[:-1][nonempty])
    return out


def smvm(offsets: np.ndarray, cols: np.ndarray, vals: np.ndarray, x: np.ndarray) -> np.ndarray:
    return seg_sum(offsets, vals * x[cols])


def triples(n: int) -> np.ndarray:
    """The comprehension's candidates (b in [a, n), c in [b, a+b)), one `a` at a time."""
    parts = [np.empty((0, 3), dtype=np.int64)]
    for a in range(1, n):
        b = np.arange(a, n)[:, None]
        c = b + np.arange(a)[None, :]
        bi, ci = np.nonzero((c < n) & (a * a + b * b == c * c))
        parts.append(np.stack([np.full(len(bi), a), b[bi, 0], c[bi, ci]], axis=1))
    return np.concatenate(parts)


def _line_points(x0, y0, x1, y1, t, line):
    """Point t of line `line` (both flat, one entry per point), as round(t·|d| / steps) with
    the sign of d along each axis, in integers that are never negative."""
    dx, dy = x1 - x0, y1 - y0
    steps = np.maximum(np.maximum(np.abs(dx), np.abs(dy)), 1)[line]
    x = x0[line] + np.sign(dx)[line] * ((t * np.abs(dx)[line] + steps // 2) // steps)
    y = y0[line] + np.sign(dy)[line] * ((t * np.abs(dy)[line] + steps // 2) // steps)
    return x, y


def draw_lines(x0, y0, x1, y1, width: int, height: int) -> np.ndarray:
    counts = np.maximum(np.abs(x1 - x0), np.abs(y1 - y0)) + 1
    starts = np.cumsum(counts) - counts
    line = np.repeat(np.arange(len(counts)), counts)
    t = np.arange(int(counts.sum())) - starts[line]
    x, y = _line_points(x0, y0, x1, y1, t, line)
    return np.bincount(y * width + x, minlength=width * height)


def sort_rows(offsets: np.ndarray, values: np.ndarray) -> np.ndarray:
    """One sort of all values by (row, value)."""
    rows = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    return values[np.lexsort((values, rows))]


def mandelbrot(height: int, width: int, limit: int) -> np.ndarray:
    """All pixels at once; each step keeps only the pixels still iterating (compaction)."""
    ci = (-1.5 + 3.0 * np.arange(height) / height)[:, None].repeat(width, axis=1).ravel()
    cr = np.tile(-2.0 + 3.0 * np.arange(width) / width, height)
    out = np.full(height * width, limit, dtype=np.int64)
    alive = np.arange(height * width)
    x = np.zeros(len(alive))
    y = np.zeros(len(alive))
    for i in range(limit):
        going = x * x + y * y <= 4.0
        out[alive[~going]] = i
        alive, x, y, cr, ci = alive[going], x[going], y[going], cr[going], ci[going]
        x, y = x * x - y * y + cr, 2.0 * x * y + ci
    return out.reshape(height, width)


def nbody(dt, eps2, x, y, z, vx, vy, vz, m, block: int = 512) -> np.ndarray:
    """Broadcasting over blocks of `block` bodies against all bodies (bounded memory)."""
    acc = np.empty((3, len(x)))
    for lo in range(0, len(x), block):
        hi = min(lo + block, len(x))
        dx = x[None, :] - x[lo:hi, None]
        dy = y[None, :] - y[lo:hi, None]
        dz = z[None, :] - z[lo:hi, None]
        d2 = dx * dx + dy * dy + dz * dz + eps2
        s = m[None, :] / (d2 * np.sqrt(d2))
        acc[0, lo:hi] = (dx * s).sum(axis=1)
        acc[1, lo:hi] = (dy * s).sum(axis=1)
        acc[2, lo:hi] = (dz * s).sum(axis=1)
    nv = np.stack([vx, vy, vz]) + dt * acc
    return np.concatenate([np.stack([x, y, z]) + dt * nv, nv])


def kmeans_step(points: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    diff = points[:, None, :] - centroids[None, :, :]
    nearest = (diff * diff).sum(axis=2).argmin(axis=1)     # ties: the first, as the others
    k = len(centroids)
    counts = np.bincount(nearest, minlength=k)
    sums = np.stack([np.bincount(nearest, weights=points[:, j], minlength=k)
                     for j in range(points.shape[1])], axis=1)
    out = centroids.copy()
    full = counts > 0
    out[full] = sums[full] / counts[full, None]
    return out


# ---------------------------------------------------------------- Awkward Array


def ak_seg_sum(xss: ak.Array) -> ak.Array:
    return ak.sum(xss, axis=1)


def ak_smvm(cols: ak.Array, vals: ak.Array, x: np.ndarray) -> ak.Array:
    # `x[cols]` itself fails in Awkward 2 (numpy cannot take a jagged index, and
    # `ak.Array(x)[cols]` is a jagged slice): gather the flat columns, then unflatten
    gathered = ak.unflatten(x[ak.to_numpy(ak.flatten(cols))], ak.num(cols))
    return ak.sum(vals * gathered, axis=1)


def ak_triples(n: int) -> np.ndarray:
    """The comprehension's candidates: a jagged row of `c` per pair (a, b), broadcast."""
    pairs = ak.combinations(ak.Array([np.arange(1, n)]), 2, replacement=True)[0]
    a, b = ak.unzip(pairs)
    counts = ak.to_numpy(np.minimum(a + b, n) - b)
    c = b + ak.local_index(ak.unflatten(np.empty(counts.sum(), np.int8), counts), axis=1)
    hit = a * a + b * b == c * c
    a, b = ak.broadcast_arrays(a, c)[0], ak.broadcast_arrays(b, c)[0]
    return np.stack([ak.to_numpy(ak.flatten(v[hit])) for v in (a, b, c)], axis=1)


def ak_draw_lines(x0, y0, x1, y1, width: int, height: int) -> np.ndarray:
    """A jagged `t` per line; the per-line values broadcast against it."""
    dx, dy = x1 - x0, y1 - y0
    steps = np.maximum(np.abs(dx), np.abs(dy))
    t = ak.local_index(ak.unflatten(np.empty(int((steps + 1).sum()), np.int8), steps + 1),
                       axis=1)
    div = np.maximum(steps, 1)
    x = x0 + np.sign(dx) * ((t * np.abs(dx) + steps // 2) // div)
    y = y0 + np.sign(dy) * ((t * np.abs(dy) + steps // 2) // div)
    pixels = ak.to_numpy(ak.flatten(y * width + x))
    return np.bincount(pixels, minlength=width * height)


def ak_sort_rows(xss: ak.Array) -> ak.Array:
    return ak.sort(xss, axis=1)
