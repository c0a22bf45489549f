"""Where a kernel's parallel variant starts to pay (backends/cpu/tiers.py, `PARALLEL_FROM`
and `LOOP_WEIGHT`): kernels of each kind, and one with a loop per element, on the `cpu`
target with every launch sequential and with every launch parallel, over inputs of
growing length. The time is the kernels' own (their `Launch` events), the minimum of
`--repeat` calls after a compiling one (on a busy machine other processes only ever add
time, and a thread pool waiting for a busy core adds a lot), both variants called in
alternating order.

    python -m benchmarks.tiers [--repeat N] [--max-log2 K]
"""
from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np

from .run_targets import OtherLoad, machine

KERNELS = {
    "map": "def f (xs: []i64) : []i64 = map (\\x -> x * 3 + 1) xs",
    "redomap": "def f (xs: []i64) : i64 = reduce (+) 0 (map (\\x -> x * x) xs)",
    "scan": "def f (xs: []i64) : []i64 = scan (+) 0 xs",
    "filter": "def f (xs: []i64) : []i64 = filter (\\x -> x % 3 == 0) xs",
    "loop (8 steps)": ("def f (xs: []i64) : []i64 = map (\\x -> loop a = x for i < 8 do "
                       "(a * 31 + i) % 1000003) xs"),
}


def program(source: str, mode: str) -> Any:
    """The program with its kernels launched as `mode` says (`$ACCEL_KERNELS`, read when
    the program's session is made)."""
    import accel_kernel as acc
    saved = os.environ.get("ACCEL_KERNELS")
    os.environ["ACCEL_KERNELS"] = mode
    try:
        return acc.compile(source, "benchmarks/tiers.py")
    finally:
        if saved is None:
            os.environ.pop("ACCEL_KERNELS")
        else:
            os.environ["ACCEL_KERNELS"] = saved


def kernel_seconds(prog: Any, xs: np.ndarray) -> float:
    prog.run("f", xs, trace=True)
    return sum(e.seconds for e in prog.events if e.kind == "launch")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--max-log2", type=int, default=22)
    args = parser.parse_args()
    load = OtherLoad()
    print(machine())
    print("| kernel | elements | sequential µs | parallel µs | parallel / sequential |")
    print("|---|---:|---:|---:|---:|")
    for name, source in KERNELS.items():
        progs = {mode: program(source, mode) for mode in ("sequential", "parallel")}
        for log2 in range(8, args.max_log2 + 1, 2):
            xs = np.arange(2 ** log2, dtype=np.int64)
            times: dict[str, list[float]] = {mode: [] for mode in progs}
            for mode, prog in progs.items():
                kernel_seconds(prog, xs)                      # compiles, touches memory
            for _ in range(args.repeat):
                for mode, prog in progs.items():
                    times[mode].append(kernel_seconds(prog, xs))
            seq, par = (min(times[m]) for m in ("sequential", "parallel"))
            print(f"| {name} | {2 ** log2:,} | {seq * 1e6:.1f} | {par * 1e6:.1f} | "
                  f"{par / seq:.2f} |")
    print(f"\nother processes used {load.cores():.2f} cores on average")


if __name__ == "__main__":
    main()
