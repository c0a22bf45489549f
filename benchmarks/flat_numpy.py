"""The `numpy` target against hand-written numpy and Awkward Array (issue "Regularity-preserving
flattening ... numpy target").

    python -m benchmarks.flat_numpy [--small] [--repeat N] [--run-scale K] [--keep-memory]

Three workloads, every variant in the same run and checked against the first (hand-written
numpy); ratios are to that one:

- segmented sum: 10M float64 values in 1M rows of random length (0 to 20, mean 10; about 5%
  of the rows, the first and the last empty): `np.add.reduceat` over the non-empty rows,
  `ak.sum(xss, axis=1)`;
- CSR SMVM: 1M rows of 10 to 30 non-zeros (about 1% of the rows, the first and the last
  empty), random columns into a dense vector of 1M: gather, multiply, `np.add.reduceat`;
  Awkward's `ak.sum(vals * x[cols], axis=1)`;
- Pythagorean triples below 500, the comprehension of tests/programs/pythagorean_triples.accel
  (`c <- [b..<(a+b)], c < n`): numpy broadcasting over the same candidates one `a` at a time,
  Awkward over the same candidates (jagged `c` ranges) and with `ak.combinations`, and numpy
  with the O(n²) formula `c = isqrt(a² + b²)` for scale.

The numpy target is measured twice:

- "flat program": the def's flat form (`prog.stages(entry)["flatten"]`) run by
  `backends.numpy.call` on flat inputs, `Segs` over the very offsets and values the
  baselines use: the fair comparison;
- "`prog.run` end to end": Python values in and out, the conversion at the boundary included,
  in a second table with the numpy baseline and the flat program again on the same data; the
  row "boundary" is `prog.run` minus the flat program. SMVM runs there on 1/K of the rows
  (`--run-scale`, 10 by default): its argument, an Awkward array of tuples, still crosses
  element by element in Python (about 7 µs a non-zero).

Median of N rounds after one warm-up run, every round running every variant once; the peak
memory of the process is printed last. `--keep-memory` keeps freed memory in the process
(glibc `mallopt`): by default glibc gives every freed array above 32 MB back to the system
and the next one page-faults all over again, which on a small VM is slow and erratic and
hits the variants that allocate the most (the flat programs) hardest.
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

import awkward as ak
import numpy as np

import accel_kernel as acc
from accel_kernel.backends import numpy as flat_numpy
from accel_kernel.backends.numpy import Segs

from .baselines_array import ak_smvm as awkward_smvm
from .baselines_array import seg_sum as numpy_seg_sum
from .baselines_array import smvm as numpy_smvm
from .baselines_array import triples as numpy_triples
from .stages import _cpu
from .workloads import _offsets, _ragged

SOURCE = r"""
def seg_sum (xss: [][]f64) : []f64 = map (\r -> reduce (+) 0.0 r) xss

def smvm (rows: [][](i64, f64)) (x: []f64) : []f64 =
  map (\r -> reduce (+) 0.0 (map (\(j, v) -> v * x[j]) r)) rows

def pythagorean (n: i64) : [](i64, i64, i64) =
  [(a, b, c) | a <- [1..<n], b <- [a..<n], c <- [b..<(a+b)], c < n, a*a + b*b == c*c]
"""

FLAT = "accel numpy target, flat program"
RUN = "accel `prog.run` end to end"
BOUNDARY = "… of which boundary (`prog.run` − flat program)"


# ---------------------------------------------------------------- hand-written baselines


def numpy_triples_isqrt(n: int) -> np.ndarray:
    """Another algorithm, O(n²): c = round(sqrt(a² + b²)) for every a <= b."""
    a, b = np.triu_indices(n - 1)
    a, b = a + 1, b + 1
    c = np.rint(np.sqrt(a * a + b * b)).astype(np.int64)
    hit = (c < n) & (a * a + b * b == c * c)
    return np.stack([a[hit], b[hit], c[hit]], axis=1)


def awkward_triples(n: int) -> np.ndarray:
    """The comprehension's candidates: a jagged row of `c` per pair (a, b), broadcast."""
    pairs = ak.combinations(ak.Array([np.arange(1, n)]), 2, replacement=True)[0]
    a, b = ak.unzip(pairs)
    counts = ak.to_numpy(np.minimum(a + b, n) - b)
    c = b + ak.local_index(ak.unflatten(np.empty(counts.sum(), np.int8), counts), axis=1)
    hit = a * a + b * b == c * c
    a, b = ak.broadcast_arrays(a, c)[0], ak.broadcast_arrays(b, c)[0]
    return np.stack([ak.to_numpy(ak.flatten(v[hit])) for v in (a, b, c)], axis=1)


def awkward_triples_combinations(n: int) -> np.ndarray:
    """Every a <= b <= c < n (twice the comprehension's candidates)."""
    a, b, c = ak.unzip(ak.combinations(ak.Array([np.arange(1, n)]), 3, replacement=True)[0])
    hit = a * a + b * b == c * c
    return np.stack([ak.to_numpy(v[hit]) for v in (a, b, c)], axis=1)


# ---------------------------------------------------------------- workloads


@dataclass
class Case:
    name: str
    variants: dict[str, Callable[[], Any]]     # the first is the baseline
    agree: Callable[[Any, Any], bool]
    run: Callable[[], Any]                     # `prog.run` on the same data


def flat_def(prog: acc.Program, entry: str) -> Callable[[list], Any]:
    """The def's flat form, run on flat arguments. It is the body `prog.run` runs for
    arguments of the def's own types (ragged where it says `[]`); these read no globals."""
    form = prog.stages(entry, stop_after="flatten")["flatten"].stage.program.forms[0]
    return lambda args: flat_numpy.call(form, args, {})


def seg_sum_case(prog: acc.Program, rows: int, rng: np.random.Generator) -> Case:
    sizes = rng.integers(0, 21, rows)
    sizes[0] = sizes[-1] = 0
    offsets = _offsets(sizes)
    values = rng.standard_normal(int(offsets[-1]))
    xss = _ragged(offsets, values)
    flat = flat_def(prog, "seg_sum")
    variants = {
        "hand-written numpy (`np.add.reduceat`)": lambda: numpy_seg_sum(offsets, values),
        "Awkward `ak.sum(xss, axis=1)`": lambda: ak.sum(xss, axis=1),
        FLAT: lambda: flat([Segs(offsets, values)]),
    }
    name = f"segmented sum, {_count(len(values))} values in {_count(rows)} rows"
    return Case(name, variants, _close, lambda: prog.run("seg_sum", xss, target="numpy"))


def smvm_case(prog: acc.Program, rows: int, rng: np.random.Generator) -> Case:
    sizes = rng.integers(10, 31, rows)
    sizes[rng.random(rows) < 0.01] = 0
    sizes[0] = sizes[-1] = 0
    offsets = _offsets(sizes)
    nnz = int(offsets[-1])
    cols, vals = rng.integers(0, rows, nnz), rng.standard_normal(nnz)
    x = rng.standard_normal(rows)
    ak_cols, ak_vals = _ragged(offsets, cols), _ragged(offsets, vals)
    matrix = ak.zip((ak_cols, ak_vals))          # [][](i64, f64) for `prog.run`
    flat = flat_def(prog, "smvm")
    variants = {
        "hand-written numpy (gather, `np.add.reduceat`)": lambda: numpy_smvm(
            offsets, cols, vals, x),
        "Awkward `ak.sum(vals * x[cols], axis=1)`": lambda: awkward_smvm(ak_cols, ak_vals, x),
        FLAT: lambda: flat([(Segs(offsets, cols), Segs(offsets, vals)), x]),
    }
    name = f"CSR SMVM, {_count(rows)} rows, {_count(nnz)} non-zeros"
    return Case(name, variants, _close, lambda: prog.run("smvm", matrix, x, target="numpy"))


def pythagorean_case(prog: acc.Program, n: int) -> Case:
    flat = flat_def(prog, "pythagorean")
    variants = {
        "hand-written numpy (same candidates, one `a` at a time)": lambda: numpy_triples(n),
        "Awkward (same candidates, jagged `c` ranges)": lambda: awkward_triples(n),
        "Awkward `ak.combinations` (a ≤ b ≤ c < n: 2× the candidates)":
            lambda: awkward_triples_combinations(n),
        "numpy, O(n²) `c = isqrt(a² + b²)` (another algorithm)":
            lambda: numpy_triples_isqrt(n),
        FLAT: lambda: flat([np.int64(n)]),
    }
    return Case(f"Pythagorean triples below {n}", variants,
                lambda a, b: np.array_equal(_triples(a), _triples(b)),
                lambda: prog.run("pythagorean", n, target="numpy"))


def with_run(case: Case) -> Case:
    """The baseline and the flat program, then `prog.run` (the boundary row is derived)."""
    baseline = next(iter(case.variants))
    variants = {baseline: case.variants[baseline], FLAT: case.variants[FLAT], RUN: case.run}
    return Case(case.name, variants, case.agree, case.run)


def _close(a: Any, b: Any) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-9, atol=1e-9))


def _triples(value: Any) -> np.ndarray:
    """Triples from any variant as a (k, 3) int64 array in lexicographic order."""
    if isinstance(value, tuple):                 # three columns (the flat program)
        value = np.stack(value, axis=1)
    elif isinstance(value, ak.Array):            # an array of tuples (`prog.run`)
        value = np.stack([ak.to_numpy(value[str(k)]) for k in range(3)], axis=1)
    value = np.asarray(value, dtype=np.int64).reshape(-1, 3)
    return value[np.lexsort(value.T[::-1])]


def _count(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 100_000 else f"{n / 1e3:g}k"


# ---------------------------------------------------------------- measuring


@dataclass
class Row:
    workload: str
    variant: str
    seconds: float
    ratio: float               # to the hand-written numpy of the same workload and size
    agrees: bool | None        # None: a derived row, not a result


def measure(case: Case, repeat: int) -> list[Row]:
    """One warm-up run of every variant, then `repeat` rounds that run every variant once
    (interleaved, so a slow spell of the machine hits all of them alike); medians."""
    values = {variant: action() for variant, action in case.variants.items()}
    samples: dict[str, list[float]] = {variant: [] for variant in case.variants}
    for _ in range(repeat):
        for variant, action in case.variants.items():
            started = time.perf_counter()
            action()
            samples[variant].append(time.perf_counter() - started)
    medians = {variant: statistics.median(s) for variant, s in samples.items()}
    baseline = next(iter(case.variants))
    base, expected = medians[baseline], values[baseline]
    rows = [Row(case.name, variant, seconds, seconds / base,
                case.agree(values[variant], expected)) for variant, seconds in medians.items()]
    if RUN in medians:
        boundary = medians[RUN] - medians[FLAT]
        rows.append(Row(case.name, BOUNDARY, boundary, boundary / base, None))
    return rows


def print_table(rows: list[Row]) -> None:
    print("| workload | variant | median s | × numpy | agrees |")
    print("|---|---|---:|---:|:-:|")
    for r in rows:
        agrees = "—" if r.agrees is None else ("yes" if r.agrees else "**NO**")
        print(f"| {r.workload} | {r.variant} | {r.seconds:.4f} | {r.ratio:.2f} | {agrees} |")


def keep_memory() -> None:
    """Large arrays from the heap, and freed memory kept there (no `munmap`, no trimming)."""
    import ctypes
    libc = ctypes.CDLL("libc.so.6")
    trim_threshold, mmap_threshold = -1, -3          # M_TRIM_THRESHOLD, M_MMAP_THRESHOLD
    for option in (mmap_threshold, trim_threshold):
        if not libc.mallopt(option, 2 ** 31 - 1):
            raise OSError("mallopt failed")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", action="store_true", help="a tenth of the rows, n = 200")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--run-scale", type=int, default=10,
                        help="`prog.run` end to end on 1/K of the rows")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--keep-memory", action="store_true",
                        help="keep freed memory in the process (no page faults on reuse)")
    args = parser.parse_args()
    if args.keep_memory:
        keep_memory()
    rows, n = (100_000, 200) if args.small else (1_000_000, 500)

    prog = acc.compile(SOURCE, "benchmarks/flat_numpy.py")
    rng = np.random.default_rng(args.seed)
    print(f"median of {args.repeat} runs after a warm-up, seed {args.seed}"
          + (", freed memory kept in the process" if args.keep_memory else ""))
    print(f"machine: {platform.machine()}, {_cpu()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, numpy {np.__version__}, "
          f"awkward {ak.__version__}")
    print()
    results: list[Row] = []
    for case in (seg_sum_case(prog, rows, rng), smvm_case(prog, rows, rng),
                 pythagorean_case(prog, n)):
        results += measure(case, args.repeat)
    print_table(results)
    print()
    print(f"`prog.run` end to end (Python values in and out); SMVM on 1/{args.run_scale} "
          f"of the rows:")
    print()
    results = []
    for case in (seg_sum_case(prog, rows, rng), smvm_case(prog, rows // args.run_scale, rng),
                 pythagorean_case(prog, n)):
        results += measure(with_run(case), args.repeat)
    print_table(results)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2
    print()
    print(f"peak memory (max RSS): {peak:.1f} GiB")


if __name__ == "__main__":
    main()
