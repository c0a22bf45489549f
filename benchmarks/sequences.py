"""Sequences streamed in bounded memory against the same computation over an array that fits
(issue "Sequences that stream"), with hand-written numba and numpy in the same run.

    python -m benchmarks.sequences [--n N] [--gb G] [--budget SIZE] [--target cpu|cuda]
                                   [--repeat R] [--dir DIR]

Two workloads, each timed per element (the median of R runs after a first, compiling one):

- **produce**: `foldSeq (+) 0 (mapSeq (\\i -> reduce (+) 0 (iota (i % 1000))) (produce N
  (\\i -> i)))`, whose elements as one array would take N × 500 × 8 bytes (40 GB at N = 10M),
  against `reduce (+) 0 (map (\\i -> reduce (+) 0 (iota (i % 1000))) (iota N))` over an index
  array (which fits: 8 bytes an element), and a hand-written numba loop over the same N (LLVM
  turns its inner loop into a formula: a bound no flattened program reaches);
- **stream**: the row sums of a memory-mapped `.npy` of G GB (rows of 1000 i64) folded under
  `%budget` (default 512MB), against `reduce (+) 0 (map (\\r -> reduce (+) 0 r) rows)` over an
  in-memory array of 1/8 of the rows, and numpy summing the memory map in chunks of 64 MiB.

For each streamed run the table gives the peak RSS above the process's baseline (VmHWM, reset
before the run through /proc/self/clear_refs) and the chunk sizes the scheduler chose (first
steps, largest, the last full chunk) from the run's trace. The machine, its load before the
run and the command go in the header.
"""
from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .run_targets import machine, versions

PRODUCE = ("foldSeq (+) 0 (mapSeq (\\i -> reduce (+) 0 (iota (i % 1000))) "
           "(produce {n} (\\i -> i)))")
ARRAY = "reduce (+) 0 (map (\\i -> reduce (+) 0 (iota (i % 1000))) (iota {n}))"
STREAM = "foldSeq (+) 0 (mapSeq (\\r -> reduce (+) 0 r) (stream rows))"
ROWS_ARRAY = "reduce (+) 0 (map (\\r -> reduce (+) 0 r) rows)"
ROW = 1000


def _peak_reset() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _peak_mb() -> float:
    with open("/proc/self/status") as f:
        return int(f.read().split("VmHWM:")[1].split()[0]) / 1024


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        return int(f.read().split("VmRSS:")[1].split()[0]) / 1024


def timed(run, repeat: int) -> tuple[float, object]:
    value = run()                                    # compiles
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        value = run()
        times.append(time.perf_counter() - began)
    return statistics.median(times), value


def streamed(session, program: str, repeat: int) -> tuple[float, str, float, list[int]]:
    """Median seconds, value, peak RSS growth (MB) and the chunk sizes of the last run."""
    from accel_kernel.runtime import events as E
    session.execute(program)                         # compiles
    times, log = [], []
    for _ in range(repeat):
        _peak_reset()
        base = _rss_mb()
        with session.events.recording() as log:
            began = time.perf_counter()
            value = session.execute(program).text
            times.append(time.perf_counter() - began)
        grown = _peak_mb() - base
    sizes = [e.elements for e in log if isinstance(e, E.Step)]
    return statistics.median(times), value, grown, sizes


def chunks(sizes: list[int]) -> str:
    head = ", ".join(str(s) for s in sizes[:4])
    full = sizes[-2] if len(sizes) > 1 else sizes[-1]
    return f"{len(sizes)} steps: {head}, … largest {max(sizes)}, last full {full}"


def numba_produce(n: int) -> int:
    import numba

    @numba.njit(parallel=True, cache=False)
    def total(n):
        s = 0
        for i in numba.prange(n):
            t = 0
            for k in range(i % 1000):
                t += k
            s += t
        return s
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--gb", type=float, default=4.0)
    parser.add_argument("--budget", default="512MB")
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    args = parser.parse_args()
    from accel_kernel.session import Session

    load = os.getloadavg()[0]
    print(f"# sequences: {machine()}; load average {load:.2f} before the run")
    print(f"# {versions()}")
    print(f"# command: python -m benchmarks.sequences {shlex.join(sys.argv[1:])}\n")
    print("| workload | variant | elements | median s | ns / element | vs array | peak RSS "
          "above baseline | chunks |")
    print("|---|---|---:|---:|---:|---:|---:|---|")

    def row(workload, variant, n, seconds, base, rss="", sizes=""):
        per = seconds / n * 1e9
        ratio = f"{base / per:.2f}" if base else ""
        print(f"| {workload} | {variant} | {n:,} | {seconds:.3g} | {per:.3g} | {ratio} | "
              f"{rss} | {sizes} |", flush=True)
        return per

    # -- produce
    session = Session(args.target)
    seconds, value = timed(lambda: session.execute(ARRAY.format(n=args.n)).text, args.repeat)
    base = row("produce", f"accel {args.target}, over an index array", args.n, seconds, None)
    seconds, value, grown, sizes = streamed(session, PRODUCE.format(n=args.n), args.repeat)
    row("produce", f"accel {args.target}, streamed", args.n, seconds, base,
        f"{grown:.0f} MB", chunks(sizes))
    total = numba_produce(args.n)
    seconds, expected = timed(lambda: total(args.n), args.repeat)
    row("produce", "hand-written numba", args.n, seconds, base)
    assert int(value) == int(expected), (value, expected)

    # -- stream over a memory-mapped file
    rows = int(args.gb * 1e9) // (ROW * 8)
    path = Path(args.dir) / f"accel_stream_{rows}.npy"
    if not path.exists():
        out = np.lib.format.open_memmap(path, mode="w+", dtype=np.int64, shape=(rows, ROW))
        for lo in range(0, rows, 65536):
            out[lo:lo + 65536] = np.arange(ROW)
        out.flush()
        del out
    from accel_kernel.kernel.loading import bind_python
    session = Session(args.target, budget=args.budget)
    fits = rows // 8
    bind_python(session, {"rows": np.ascontiguousarray(np.load(path, mmap_mode="r")[:fits])},
                "in memory")
    seconds, value = timed(lambda: session.execute(ROWS_ARRAY).text, args.repeat)
    assert int(value) == fits * (ROW * (ROW - 1) // 2)
    base = row("stream", f"accel {args.target}, an array in memory ({fits * ROW * 8 / 1e9:.2f} "
               "GB)", fits, seconds, None)
    session.execute("let rows = [[0]]")              # free the in-memory rows
    bind_python(session, {"rows": np.load(path, mmap_mode="r")}, "memory-mapped")
    seconds, value, grown, sizes = streamed(session, STREAM, args.repeat)
    assert int(value) == rows * (ROW * (ROW - 1) // 2)
    row("stream", f"accel {args.target}, streamed from a {args.gb:g} GB .npy, %budget "
        f"{args.budget}", rows, seconds, base, f"{grown:.0f} MB", chunks(sizes))

    def numpy_chunks():
        mapped, s = np.load(path, mmap_mode="r"), 0
        step = (64 << 20) // (ROW * 8)
        for lo in range(0, rows, step):
            s += int(mapped[lo:lo + step].sum())
        return s
    seconds, value = timed(numpy_chunks, args.repeat)
    row("stream", "numpy, 64 MiB chunks of the memory map", rows, seconds, base)


if __name__ == "__main__":
    main()
