"""Hand-written numba.cuda baselines for the GPU benchmarks (benchmarks/run_cuda.py): the
kernels a numba.cuda user would write for each workload of benchmarks/workloads.py, plus a
flat sum. Each function takes the workload's data with its arrays on the device
(`to_device(data)`) and gives its result on the device (`to_host` copies it back, in the
form of the CPU numba baseline, so that `Workload.canonical` reads both).

The usual choices: grid-stride loops, a thread per row, segment, line, pixel, body or point;
a block per row for the per-row sort (a rank sort: each thread places its elements by
counting the smaller ones, ties by position: stable); a shared-memory tree reduction with
one partial per block and a one-block second pass for the sum; integer atomics for the line
histogram and the k-means counts, float atomics for the k-means sums (their order varies
from run to run: within the workload's tolerance). Everything is inlined in the kernels (no
device functions), and blocks are powers of two (the tree reduction halves them).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import cuda, float64

THREADS = 256                  # a block (a power of two, at most 1024)
MAX_BLOCKS = 4096


def threads() -> int:
    """Threads a block: 32 on the simulator (a Python thread each), else THREADS."""
    from numba import config
    return 32 if config.ENABLE_CUDASIM else THREADS


def blocks(n: int) -> int:
    return max(1, min(MAX_BLOCKS, -(-n // threads())))


def to_device(data: dict[str, Any]) -> dict[str, Any]:
    """The workload's data with every numpy array copied to the device (Awkward arrays and
    scalars dropped or kept as they are)."""
    return {k: cuda.to_device(v) if isinstance(v, np.ndarray) else v
            for k, v in data.items() if not type(v).__module__.startswith("awkward")}


def to_host(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(to_host(v) for v in value)
    return value.copy_to_host() if hasattr(value, "copy_to_host") else value


# ---------------------------------------------------------------- flat sum

@cuda.jit
def _sum_partials(xs, partials):
    shared = cuda.shared.array(1024, float64)
    tid = cuda.threadIdx.x
    total = 0.0
    for i in range(cuda.grid(1), xs.size, cuda.gridsize(1)):
        total += xs[i]
    shared[tid] = total
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 0:
        if tid < step:
            shared[tid] += shared[tid + step]
        cuda.syncthreads()
        step //= 2
    if tid == 0:
        partials[cuda.blockIdx.x] = shared[0]


def reduce_sum(d: dict[str, Any]) -> Any:
    """The sum of `values` (a one-element device array): partials, then one block."""
    xs = d["values"]
    count = blocks(xs.size)
    partials = cuda.device_array(count, np.float64)
    _sum_partials[count, threads()](xs, partials)
    out = cuda.device_array(1, np.float64)
    _sum_partials[1, threads()](partials, out)
    return out


# ---------------------------------------------------------------- segmented sum, SMVM

@cuda.jit
def _seg_sum(offsets, values, out):
    for r in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        total = 0.0
        for k in range(offsets[r], offsets[r + 1]):
            total += values[k]
        out[r] = total


def seg_sum(d: dict[str, Any]) -> Any:
    rows = d["offsets"].size - 1
    out = cuda.device_array(rows, np.float64)
    _seg_sum[blocks(rows), threads()](d["offsets"], d["values"], out)
    return out


@cuda.jit
def _smvm(offsets, cols, vals, x, out):
    for r in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        total = 0.0
        for k in range(offsets[r], offsets[r + 1]):
            total += vals[k] * x[cols[k]]
        out[r] = total


def smvm(d: dict[str, Any]) -> Any:
    rows = d["offsets"].size - 1
    out = cuda.device_array(rows, np.float64)
    _smvm[blocks(rows), threads()](d["offsets"], d["cols"], d["vals"], d["x"], out)
    return out


# ---------------------------------------------------------------- Pythagorean triples

@cuda.jit
def _triples_count(n, counts):
    for a in range(1 + cuda.grid(1), n, cuda.gridsize(1)):
        found = 0
        for b in range(a, n):
            for c in range(b, min(a + b, n)):
                if a * a + b * b == c * c:
                    found += 1
        counts[a + 1] = found


@cuda.jit
def _triples_write(n, offsets, out):
    for a in range(1 + cuda.grid(1), n, cuda.gridsize(1)):
        k = offsets[a]
        for b in range(a, n):
            for c in range(b, min(a + b, n)):
                if a * a + b * b == c * c:
                    out[k, 0] = a
                    out[k, 1] = b
                    out[k, 2] = c
                    k += 1


def triples(d: dict[str, Any]) -> Any:
    """A thread per `a` counts its triples, the offsets are a scan of the counts (on the
    host: n numbers), then each thread writes its triples at its offset."""
    n = d["n"]
    counts = cuda.to_device(np.zeros(n + 1, dtype=np.int64))
    _triples_count[blocks(n), threads()](n, counts)
    offsets = np.cumsum(counts.copy_to_host())
    out = cuda.device_array((int(offsets[-1]), 3), np.int64)
    _triples_write[blocks(n), threads()](n, cuda.to_device(offsets), out)
    return out


# ---------------------------------------------------------------- line drawing

@cuda.jit
def _draw_lines(x0, y0, x1, y1, width, grid):
    for i in range(cuda.grid(1), x0.size, cuda.gridsize(1)):
        dx, dy = x1[i] - x0[i], y1[i] - y0[i]
        steps = max(abs(dx), abs(dy))
        sx = 1 if dx > 0 else (-1 if dx < 0 else 0)
        sy = 1 if dy > 0 else (-1 if dy < 0 else 0)
        for t in range(steps + 1):
            ox, oy = 0, 0
            if steps != 0:
                ox = sx * ((t * abs(dx) + steps // 2) // steps)
                oy = sy * ((t * abs(dy) + steps // 2) // steps)
            cuda.atomic.add(grid, (y0[i] + oy) * width + x0[i] + ox, 1)


def draw_lines(d: dict[str, Any]) -> Any:
    """A thread per line, its points counted into the grid by integer atomics."""
    grid = cuda.to_device(np.zeros(d["width"] * d["height"], dtype=np.int64))
    lines = d["x0"].size
    _draw_lines[blocks(lines), threads()](d["x0"], d["y0"], d["x1"], d["y1"], d["width"], grid)
    return grid


# ---------------------------------------------------------------- per-row sort

@cuda.jit
def _sort_rows(offsets, values, out):
    for r in range(cuda.blockIdx.x, offsets.size - 1, cuda.gridDim.x):
        start, stop = offsets[r], offsets[r + 1]
        for i in range(start + cuda.threadIdx.x, stop, cuda.blockDim.x):
            v = values[i]
            rank = 0
            for j in range(start, stop):
                w = values[j]
                if w < v or (w == v and j < i):
                    rank += 1
            out[start + rank] = v


def sort_rows(d: dict[str, Any]) -> Any:
    """A block per row (a rank sort); (offsets, sorted values) as the CPU baseline gives."""
    rows = d["offsets"].size - 1
    out = cuda.device_array(d["values"].size, np.float64)
    _sort_rows[max(1, min(MAX_BLOCKS, rows)), threads()](d["offsets"], d["values"], out)
    return d["offsets"], out


# ---------------------------------------------------------------- mandelbrot

@cuda.jit
def _mandelbrot(height, width, limit, out):
    for p in range(cuda.grid(1), height * width, cuda.gridsize(1)):
        row, col = p // width, p % width
        ci = -1.5 + 3.0 * row / height
        cr = -2.0 + 3.0 * col / width
        x, y, i = 0.0, 0.0, 0
        while i < limit and x * x + y * y <= 4.0:
            x, y, i = x * x - y * y + cr, 2.0 * x * y + ci, i + 1
        out[row, col] = i


def mandelbrot(d: dict[str, Any]) -> Any:
    height, width = d["height"], d["width"]
    out = cuda.device_array((height, width), np.int64)
    _mandelbrot[blocks(height * width), threads()](height, width, d["limit"], out)
    return out


# ---------------------------------------------------------------- n-body

@cuda.jit
def _nbody(dt, eps2, x, y, z, vx, vy, vz, m, out):
    n = x.size
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        ax, ay, az = 0.0, 0.0, 0.0
        for j in range(n):
            dx, dy, dz = x[j] - x[i], y[j] - y[i], z[j] - z[i]
            d2 = dx * dx + dy * dy + dz * dz + eps2
            s = m[j] / (d2 * math.sqrt(d2))
            ax += dx * s
            ay += dy * s
            az += dz * s
        nvx, nvy, nvz = vx[i] + dt * ax, vy[i] + dt * ay, vz[i] + dt * az
        out[0, i], out[1, i], out[2, i] = x[i] + dt * nvx, y[i] + dt * nvy, z[i] + dt * nvz
        out[3, i], out[4, i], out[5, i] = nvx, nvy, nvz


def nbody(d: dict[str, Any]) -> Any:
    """A thread per body over all bodies; (6, n): positions then velocities."""
    n = d["x"].size
    out = cuda.device_array((6, n), np.float64)
    _nbody[blocks(n), threads()](d["dt"], d["eps2"], d["x"], d["y"], d["z"], d["vx"],
                                 d["vy"], d["vz"], d["m"], out)
    return out


# ---------------------------------------------------------------- k-means

@cuda.jit
def _kmeans_assign(points, centroids, counts, sums):
    n, dims = points.shape
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        best, best_d2 = 0, math.inf
        for c in range(centroids.shape[0]):
            d2 = 0.0
            for j in range(dims):
                diff = points[i, j] - centroids[c, j]
                d2 += diff * diff
            if d2 < best_d2:
                best, best_d2 = c, d2
        cuda.atomic.add(counts, best, 1)
        for j in range(dims):
            cuda.atomic.add(sums, (best, j), points[i, j])


@cuda.jit
def _kmeans_means(centroids, counts, sums, out):
    k, dims = centroids.shape
    for p in range(cuda.grid(1), k * dims, cuda.gridsize(1)):
        c, j = p // dims, p % dims
        out[c, j] = centroids[c, j] if counts[c] == 0 else sums[c, j] / counts[c]


def kmeans_step(d: dict[str, Any]) -> Any:
    """A thread per point finds its nearest centroid (ties to the lower index) and adds
    itself to its cluster by atomics; then a thread per coordinate divides."""
    points, centroids = d["points"], d["centroids"]
    k, dims = centroids.shape
    counts = cuda.to_device(np.zeros(k, dtype=np.int64))
    sums = cuda.to_device(np.zeros((k, dims), dtype=np.float64))
    _kmeans_assign[blocks(points.shape[0]), threads()](points, centroids, counts, sums)
    out = cuda.device_array((k, dims), np.float64)
    _kmeans_means[1, threads()](centroids, counts, sums, out)
    return out


BASELINES = {"reduce": reduce_sum, "seg_sum": seg_sum, "seg_sum_100M": seg_sum,
             "smvm": smvm, "triples": triples, "lines": draw_lines, "sort_rows": sort_rows,
             "mandelbrot": mandelbrot, "nbody": nbody, "kmeans": kmeans_step}

# each kernel with the signature of its launch, for the PTX check (tests/test_benchmarks_cuda.py)
A1, A2, I1 = "float64[:]", "float64[:, :]", "int64[:]"
SIGNATURES = {
    _sum_partials: f"void({A1}, {A1})",
    _seg_sum: f"void({I1}, {A1}, {A1})",
    _smvm: f"void({I1}, {I1}, {A1}, {A1}, {A1})",
    _triples_count: f"void(int64, {I1})",
    _triples_write: f"void(int64, {I1}, int64[:, :])",
    _draw_lines: f"void({I1}, {I1}, {I1}, {I1}, int64, {I1})",
    _sort_rows: f"void({I1}, {A1}, {A1})",
    _mandelbrot: "void(int64, int64, int64, int64[:, :])",
    _nbody: f"void(float64, float64, {A1}, {A1}, {A1}, {A1}, {A1}, {A1}, {A1}, {A2})",
    _kmeans_assign: f"void({A2}, {A2}, {I1}, {A2})",
    _kmeans_means: f"void({A2}, {I1}, {A2}, {A2})",
}
