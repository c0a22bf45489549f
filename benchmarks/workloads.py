"""The workloads of the CPU back end's benchmarks (issue "Fusion and the numba CPU back end"):
each an accel program, its inputs at a given scale, and hand-written baselines.

    python -m benchmarks.workloads --check [--scale S] [--only NAME] [--targets interp,numpy]

checks, at a tiny scale (1e-4 by default), that every accel program type checks, runs on the
`interp` and `numpy` targets (or those named) and agrees with every baseline; it exits 1 if
one does not. Without `--check` it lists the workloads' sizes at that scale. benchmarks/run_targets.py times
them.

Scale 1.0 is the issue's sizes; a smaller scale shrinks each workload's size roughly in
proportion to its work (the count of rows, lines or points times the scale; the side of a
square problem times √scale; n of the O(n³) triples times ∛scale; bodies times √scale), with
small minimums so that every workload still means something. Inputs are drawn with a fixed
seed. The accel arguments are numpy and Awkward arrays (`prog.run` takes them without copying
element by element); the baselines get the same data as flat numpy arrays (`Inputs.data`),
so their timings include no conversion.

Entry points take columns, not arrays of tuples (`smvm` takes `cols` and `vals`, `draw` four
coordinate arrays, `nbody` seven arrays) and `zip` them inside, as Futhark's entry points do:
`prog.run(..., target="numpy")` converts an Awkward array of tuples element by element in
Python (about 6 µs an element: 2 minutes for the 20M non-zeros of SMVM), which would hide
the program's own time. Results may be arrays of tuples: that direction is fast.

Baselines: `numba` (`@njit(parallel=True)`, benchmarks/baselines_numba.py) is the reference
of every ratio and of every agreement check; `numpy` and, for ragged data, `awkward`
(benchmarks/baselines_array.py). Outputs are compared after `Workload.canonical`, which
turns any variant's result (numpy, Awkward, tuples of them) into plain numpy arrays.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from typing import Any, Callable

import awkward as ak
import numpy as np

from . import baselines_array as arr
from . import baselines_numba as nb

SEED = 2026


@dataclass(frozen=True)
class Inputs:
    args: tuple                 # the accel entry's arguments
    data: dict[str, Any]        # the same data for the baselines (flat numpy, or Awkward)
    size: str                   # what was drawn, in words


@dataclass(frozen=True)
class Baseline:
    name: str                   # "numba", "numpy", "awkward", or one of them with a note
    run: Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class Workload:
    name: str
    source: str                 # accel source defining `entry` (and its helpers)
    entry: str
    make_inputs: Callable[[float], Inputs]
    baselines: tuple[Baseline, ...]      # the first is the reference (hand-written numba)
    canonical: Callable[[Any], Any]      # any variant's result -> numpy arrays (or tuples)
    rtol: float = 0.0           # 0: integers, compared exactly
    atol: float = 0.0
    note: str = ""              # choices worth knowing when reading the timings


# ---------------------------------------------------------------- helpers


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng([SEED, sum(map(ord, name))])


def _scaled(full: float, scale: float, minimum: int) -> int:
    return max(minimum, round(full * scale))


def _offsets(sizes: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets


def _ragged(offsets: np.ndarray, values: np.ndarray) -> ak.Array:
    """An `ak.Array` over these offsets and values (no copy)."""
    return ak.Array(ak.contents.ListOffsetArray(ak.index.Index64(offsets),
                                                ak.contents.NumpyArray(values)))


def _float_rows(sizes: np.ndarray, draw: Callable[[int], np.ndarray]) -> Inputs:
    """One ragged argument: rows of these sizes (the first and the last made empty) of
    values from `draw`; the data has its offsets, values and Awkward array."""
    sizes[0] = sizes[-1] = 0
    offsets = _offsets(sizes)
    values = draw(int(offsets[-1]))
    xss = _ragged(offsets, values)
    return Inputs((xss,), dict(offsets=offsets, values=values, xss=xss), "")


def _columns(value: Any, width: int) -> np.ndarray:
    """An array of `width`-tuples (Awkward of tuples, a tuple of columns, or (k, width)) as a
    (k, width) numpy array."""
    if isinstance(value, ak.Array):
        return np.stack([ak.to_numpy(value[str(i)]) for i in range(width)], axis=1)
    if isinstance(value, tuple):
        return np.stack(value, axis=1)
    return np.asarray(value).reshape(-1, width)


def _flat(value: Any) -> np.ndarray:
    if isinstance(value, ak.Array):
        return ak.to_numpy(value)
    return np.asarray(value)


def _count(n: float) -> str:
    return f"{n / 1e6:.3g}M" if n >= 1e6 else (f"{n / 1e3:.3g}k" if n >= 1e3 else f"{n:g}")


def check(a: Any, b: Any, rtol: float = 0.0, atol: float = 0.0) -> bool:
    """Canonical outputs agree: the same structure and shapes; integers and booleans equal,
    floats within `rtol`/`atol` (numpy's `allclose`, NaN equal to NaN)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                and all(check(x, y, rtol, atol) for x, y in zip(a, b)))
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))
    return bool(np.array_equal(a, b))


# ---------------------------------------------------------------- segmented sum

SEG_SUM = r"""
def seg_sum (xss: [][]f64) : []f64 = map (\r -> reduce (+) 0.0 r) xss
"""


def seg_sum_inputs(scale: float) -> Inputs:
    """10M float64 values in 1M rows of 0 to 20 (the first and the last row empty)."""
    rng = _rng("seg_sum")
    rows = _scaled(1_000_000, scale, 8)
    inputs = _float_rows(rng.integers(0, 21, rows), rng.standard_normal)
    return Inputs(inputs.args, inputs.data,
                  f"{_count(len(inputs.data['values']))} values in {_count(rows)} rows")


# ---------------------------------------------------------------- CSR SMVM

SMVM = r"""
def smvm (cols: [][]i64) (vals: [][]f64) (x: []f64) : []f64 =
  map2 (\cs vs -> reduce (+) 0.0 (map2 (\j v -> v * x[j]) cs vs)) cols vals
"""


def smvm_inputs(scale: float) -> Inputs:
    """1M rows of 10 to 30 non-zeros (about 1% of the rows, the first and the last empty),
    random columns into a dense vector of as many entries as rows."""
    rng = _rng("smvm")
    rows = _scaled(1_000_000, scale, 8)
    sizes = rng.integers(10, 31, rows)
    sizes[rng.random(rows) < 0.01] = 0
    sizes[0] = sizes[-1] = 0
    offsets = _offsets(sizes)
    nnz = int(offsets[-1])
    cols, vals = rng.integers(0, rows, nnz), rng.standard_normal(nnz)
    x = rng.standard_normal(rows)
    ak_cols, ak_vals = _ragged(offsets, cols), _ragged(offsets, vals)
    return Inputs((ak_cols, ak_vals, x), dict(offsets=offsets, cols=cols, vals=vals, x=x,
                                    ak_cols=ak_cols, ak_vals=ak_vals),
                  f"{_count(rows)} rows, {_count(nnz)} non-zeros")


# ---------------------------------------------------------------- Pythagorean triples

TRIPLES = r"""
def triples (n: i64) : [](i64, i64, i64) =
  [(a, b, c) | a <- [1..<n], b <- [a..<n], c <- [b..<(a + b)], c < n, a * a + b * b == c * c]
"""


def triples_inputs(scale: float) -> Inputs:
    """Below 1000: n = 1000·∛scale (the candidates grow as n³), at least 10."""
    n = max(10, round(1000 * scale ** (1 / 3)))
    a, b = np.triu_indices(n - 1)               # a <= b, both from 1
    candidates = int(np.minimum(a + 1, n - (b + 1)).sum())
    return Inputs((n,), dict(n=n), f"below {n}, {_count(candidates)} candidates")


# ---------------------------------------------------------------- line drawing

LINES = r"""
def sgn (x: i64) : i64 = if x > 0 then 1 else if x < 0 then -1 else 0

def steps (((x0, y0), (x1, y1)): ((i64, i64), (i64, i64))) : i64 =
  max (abs (x1 - x0)) (abs (y1 - y0))

-- the offset along one axis of point t of a line of n steps: round(t·|d| / n) with the sign
-- of d, in integers that are never negative (so C and floor division agree)
def along (d: i64) (n: i64) (t: i64) : i64 =
  if n == 0 then 0 else sgn d * ((t * abs d + n / 2) / n)

def pixel (w: i64) (((x0, y0), (x1, y1)): ((i64, i64), (i64, i64))) (t: i64) : i64 =
  let n = steps ((x0, y0), (x1, y1))
  in (y0 + along (y1 - y0) n t) * w + x0 + along (x1 - x0) n t

def draw (w: i64) (h: i64) (x0s: []i64) (y0s: []i64) (x1s: []i64) (y1s: []i64) : []i64 =
  let lines = zip (zip x0s y0s) (zip x1s y1s)
  let pixels = expand (\l -> steps l + 1) (pixel w) lines
  in reduce_by_index (replicate (w * h) 0) (+) 0 pixels (map (\_ -> 1) pixels)
"""


def lines_inputs(scale: float) -> Inputs:
    """100k lines with both ends uniform on a 1000×1000 grid (about 470 points a line); below
    scale 0.01 the grid shrinks too (side 10000·√scale, at least 16)."""
    rng = _rng("lines")
    lines = _scaled(100_000, scale, 5)
    side = min(1000, max(16, round(10_000 * math.sqrt(scale))))
    x0, y0, x1, y1 = (rng.integers(0, side, lines) for _ in range(4))
    points = int((np.maximum(np.abs(x1 - x0), np.abs(y1 - y0)) + 1).sum())
    return Inputs((side, side, x0, y0, x1, y1),
                  dict(x0=x0, y0=y0, x1=x1, y1=y1, width=side, height=side),
                  f"{_count(lines)} lines, {_count(points)} points, {side}×{side} grid")


# ---------------------------------------------------------------- per-row sort

SORT_ROWS = r"""
def sort_rows (xss: [][]f64) : [][]f64 = map sort xss
"""


def sort_rows_inputs(scale: float) -> Inputs:
    """1000 rows of 0 to 2000 float64 values (mean 1000; the first and the last row empty);
    both the rows and the mean length scale with √scale."""
    rng = _rng("sort_rows")
    side = max(4, round(1000 * math.sqrt(scale)))
    inputs = _float_rows(rng.integers(0, 2 * side + 1, side), rng.random)
    return Inputs(inputs.args, inputs.data,
                  f"{_count(side)} rows, {_count(len(inputs.data['values']))} values")


def _sorted_rows(value: Any) -> tuple[np.ndarray, np.ndarray]:
    """(row lengths, flat values) of a ragged result, or of the (offsets, values) that the
    numba and numpy baselines give."""
    if isinstance(value, tuple):
        offsets, values = value
        return np.diff(offsets), values
    return ak.to_numpy(ak.num(value)), ak.to_numpy(ak.flatten(value))


# ---------------------------------------------------------------- mandelbrot

MANDELBROT = r"""
def escape (limit: i64) (cr: f64) (ci: f64) : i64 =
  let (_, _, i) = loop (x, y, i) = (0.0, 0.0, 0) while i < limit && x * x + y * y <= 4.0 do
                    (x * x - y * y + cr, 2.0 * x * y + ci, i + 1)
  in i

def mandelbrot (h: i64) (w: i64) (limit: i64) : [][]i64 =
  generate h (\row -> generate w (\col ->
    escape limit (-2.0 + 3.0 * f64 col / f64 w) (-1.5 + 3.0 * f64 row / f64 h)))
"""


def mandelbrot_inputs(scale: float) -> Inputs:
    """The square [-2, 1] × [-1.5, 1.5] on 1000×1000 pixels, at most 255 iterations."""
    side = max(8, round(1000 * math.sqrt(scale)))
    return Inputs((side, side, 255), dict(height=side, width=side, limit=255),
                  f"{side}×{side} pixels, limit 255")


# ---------------------------------------------------------------- n-body

NBODY = r"""
def pull (eps2: f64) (ps: [](f64, f64, f64)) (ms: []f64) ((xi, yi, zi): (f64, f64, f64))
    : (f64, f64, f64) =
  let pulls = map2 (\(xj, yj, zj) m ->
                      let (dx, dy, dz) = (xj - xi, yj - yi, zj - zi)
                      let d2 = dx * dx + dy * dy + dz * dz + eps2
                      let s = m / (d2 * sqrt d2)
                      in (dx * s, dy * s, dz * s)) ps ms
  in reduce (\(a, b, c) (d, e, f) -> (a + d, b + e, c + f)) (0.0, 0.0, 0.0) pulls

def nbody (dt: f64) (eps2: f64) (xs: []f64) (ys: []f64) (zs: []f64)
          (vxs: []f64) (vys: []f64) (vzs: []f64) (ms: []f64)
    : ([](f64, f64, f64), [](f64, f64, f64)) =
  let ps = zip3 xs ys zs
  let accs = map (pull eps2 ps ms) ps
  let vs = map2 (\(vx, vy, vz) (ax, ay, az) -> (vx + dt * ax, vy + dt * ay, vz + dt * az))
                (zip3 vxs vys vzs) accs
  let ps2 = map2 (\(x, y, z) (vx, vy, vz) -> (x + dt * vx, y + dt * vy, z + dt * vz)) ps vs
  in (ps2, vs)
"""


def nbody_inputs(scale: float) -> Inputs:
    """10k bodies (normal positions, small velocities, masses 0.5 to 1.5 over n), dt 0.01,
    softening 0.1 (eps² = 0.01)."""
    rng = _rng("nbody")
    n = max(4, round(10_000 * math.sqrt(scale)))
    x, y, z = rng.standard_normal((3, n))
    vx, vy, vz = 0.1 * rng.standard_normal((3, n))
    m = rng.uniform(0.5, 1.5, n) / n
    dt, eps2 = 0.01, 0.01
    return Inputs((dt, eps2, x, y, z, vx, vy, vz, m),
                  dict(dt=dt, eps2=eps2, x=x, y=y, z=z, vx=vx, vy=vy, vz=vz, m=m),
                  f"{_count(n)} bodies, {_count(n * n)} pairs")


def _bodies(value: Any) -> np.ndarray:
    """(6, n): positions then velocities, from the accel pair of arrays of triples or the
    baselines' (6, n) array."""
    if isinstance(value, tuple):
        return np.concatenate([_columns(v, 3).T for v in value])
    return np.asarray(value)


# ---------------------------------------------------------------- k-means

KMEANS = r"""
def dist2 (p: []f64) (c: []f64) : f64 = reduce (+) 0.0 (map2 (\a b -> (a - b) * (a - b)) p c)

-- the nearer of two (distance, index) pairs, the lower index on a tie: associative
def nearer ((d1, i1): (f64, i64)) ((d2, i2): (f64, i64)) : (f64, i64) =
  if d2 < d1 || (d2 == d1 && i2 < i1) then (d2, i2) else (d1, i1)

def nearest (cs: [][]f64) (p: []f64) : i64 =
  let (_, best) = reduce nearer (highest, -1) (map2 (\c i -> (dist2 p c, i)) cs (iota (length cs)))
  in best

def kmeans_step (ps: [n][d]f64) (cs: [k][d]f64) : [k][d]f64 =
  let assign = map (nearest cs) ps
  let counts = reduce_by_index (replicate k 0) (+) 0 assign (replicate n 1)
  let slots = flatten (map (\c -> map (\j -> c * d + j) (iota d)) assign)
  let sums = reduce_by_index (replicate (k * d) 0.0) (+) 0.0 slots (flatten ps)
  in generate k (\c -> generate d (\j ->
       if counts[c] == 0 then cs[c][j] else sums[c * d + j] / f64 counts[c]))
"""


def kmeans_inputs(scale: float) -> Inputs:
    """1M 2-D points around 8 random centres (σ 0.5 in a 10×10 square); the first centroids
    are 8 of the points. With 2 dimensions every variant's distance is the same float (one
    addition), so the assignments agree exactly."""
    rng = _rng("kmeans")
    n, k = _scaled(1_000_000, scale, 16), 8
    centres = rng.uniform(0, 10, (k, 2))
    points = centres[rng.integers(0, k, n)] + 0.5 * rng.standard_normal((n, 2))
    centroids = points[rng.choice(n, k, replace=False)].copy()
    return Inputs((points, centroids), dict(points=points, centroids=centroids),
                  f"{_count(n)} points, {k} clusters, 2-D")


# ---------------------------------------------------------------- the workloads

_NBODY_ARGS = ("dt", "eps2", "x", "y", "z", "vx", "vy", "vz", "m")


WORKLOADS: tuple[Workload, ...] = (
    Workload(
        "seg_sum", SEG_SUM, "seg_sum", seg_sum_inputs,
        (Baseline("numba", lambda d: nb.seg_sum(d["offsets"], d["values"])),
         Baseline("numpy", lambda d: arr.seg_sum(d["offsets"], d["values"])),
         Baseline("awkward", lambda d: arr.ak_seg_sum(d["xss"]))),
        _flat, rtol=1e-9, atol=1e-9),
    Workload(
        "smvm", SMVM, "smvm", smvm_inputs,
        (Baseline("numba", lambda d: nb.smvm(d["offsets"], d["cols"], d["vals"], d["x"])),
         Baseline("numpy", lambda d: arr.smvm(d["offsets"], d["cols"], d["vals"], d["x"])),
         Baseline("awkward", lambda d: arr.ak_smvm(d["ak_cols"], d["ak_vals"], d["x"]))),
        _flat, rtol=1e-9, atol=1e-9,
        note="the matrix is given as two ragged arrays sharing their offsets, `cols` and "
             "`vals` (not `[][](i64, f64)`: see the module's docstring)"),
    Workload(
        "triples", TRIPLES, "triples", triples_inputs,
        (Baseline("numba", lambda d: nb.triples(d["n"])),
         Baseline("numpy", lambda d: arr.triples(d["n"])),
         Baseline("awkward", lambda d: arr.ak_triples(d["n"])),
         Baseline("numba, O(n²) c = isqrt(a² + b²) (another algorithm)",
                  lambda d: nb.triples_isqrt(d["n"]))),
        lambda v: _columns(v, 3),
        note="every variant but the last enumerates the comprehension's candidates "
             "(c in [b, a+b), c < n)"),
    Workload(
        "lines", LINES, "draw", lines_inputs,
        (Baseline("numba", lambda d: nb.draw_lines(d["x0"], d["y0"], d["x1"], d["y1"],
                                                   d["width"], d["height"])),
         Baseline("numpy", lambda d: arr.draw_lines(d["x0"], d["y0"], d["x1"], d["y1"],
                                                    d["width"], d["height"])),
         Baseline("awkward", lambda d: arr.ak_draw_lines(d["x0"], d["y0"], d["x1"], d["y1"],
                                                         d["width"], d["height"]))),
        _flat,
        note="the points of every line (`expand`, max(|dx|, |dy|) + 1 a line) counted into "
             "the grid with `reduce_by_index`: the result is the hits per pixel"),
    Workload(
        "sort_rows", SORT_ROWS, "sort_rows", sort_rows_inputs,
        (Baseline("numba", lambda d: (d["offsets"], nb.sort_rows(d["offsets"], d["values"]))),
         Baseline("numpy", lambda d: (d["offsets"], arr.sort_rows(d["offsets"], d["values"]))),
         Baseline("awkward", lambda d: arr.ak_sort_rows(d["xss"]))),
        _sorted_rows),
    Workload(
        "mandelbrot", MANDELBROT, "mandelbrot", mandelbrot_inputs,
        (Baseline("numba", lambda d: nb.mandelbrot(d["height"], d["width"], d["limit"])),
         Baseline("numpy", lambda d: arr.mandelbrot(d["height"], d["width"], d["limit"]))),
        _flat),
    Workload(
        "nbody", NBODY, "nbody", nbody_inputs,
        (Baseline("numba", lambda d: nb.nbody(*(d[k] for k in _NBODY_ARGS))),
         Baseline("numpy", lambda d: arr.nbody(*(d[k] for k in _NBODY_ARGS)))),
        _bodies, rtol=1e-9, atol=1e-12),
    Workload(
        "kmeans", KMEANS, "kmeans_step", kmeans_inputs,
        (Baseline("numba", lambda d: nb.kmeans_step(d["points"], d["centroids"])),
         Baseline("numpy", lambda d: arr.kmeans_step(d["points"], d["centroids"]))),
        _flat, rtol=1e-9, atol=1e-12),
)

BY_NAME = {w.name: w for w in WORKLOADS}


def select(only: str | None) -> list[Workload]:
    """The workloads named in `only` (comma-separated), or all of them."""
    if not only:
        return list(WORKLOADS)
    names = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise SystemExit(f"unknown workload(s) {', '.join(unknown)}: "
                         f"choose from {', '.join(BY_NAME)}")
    return [BY_NAME[n] for n in names]


# ---------------------------------------------------------------- --check


def check_workload(workload: Workload, scale: float,
                   targets: tuple[str, ...] = ("interp", "numpy")) -> list[tuple[str, str]]:
    """(variant, "ok" or what went wrong) for the accel targets and every baseline, each
    compared with the first baseline."""
    import accel_kernel as acc

    inputs = workload.make_inputs(scale)
    reference = workload.canonical(workload.baselines[0].run(inputs.data))
    results = [(workload.baselines[0].name, "ok (reference)")]
    try:
        prog = acc.compile(workload.source, f"benchmarks/workloads.py:{workload.name}")
    except Exception as err:                      # a type error is a finding, not a crash
        return results + [("accel", f"does not compile: {type(err).__name__}: {err}")]
    runs = [(f"accel {t}", lambda t=t: prog.run(workload.entry, *inputs.args, target=t))
            for t in targets]
    runs += [(b.name, lambda b=b: b.run(inputs.data)) for b in workload.baselines[1:]]
    for name, action in runs:
        try:
            value = workload.canonical(action())
        except Exception as err:
            results.append((name, f"FAILS: {type(err).__name__}: {err}"))
            continue
        agrees = check(value, reference, workload.rtol, workload.atol)
        results.append((name, "ok" if agrees else "DISAGREES with numba"))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="type check and run every program on interp and numpy, "
                             "compare with the baselines")
    parser.add_argument("--scale", type=float, default=1e-4)
    parser.add_argument("--only", help="comma-separated workload names")
    parser.add_argument("--targets", default="interp,numpy",
                        help="comma-separated accel targets to check (default interp,numpy)")
    args = parser.parse_args(argv)
    targets = tuple(t.strip() for t in args.targets.split(",") if t.strip())
    if not args.check:
        for w in select(args.only):
            print(f"{w.name}: {w.make_inputs(args.scale).size}")
        return 0
    failed = 0
    for workload in select(args.only):
        size = workload.make_inputs(args.scale).size
        print(f"{workload.name} ({size}):")
        for variant, outcome in check_workload(workload, args.scale, targets):
            failed += not outcome.startswith("ok")
            print(f"  {variant}: {outcome}")
    print("all agree" if not failed else f"{failed} problem(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
