"""The GPU benchmarks (issue 12): accel's `cuda` target against hand-written numba.cuda
kernels (benchmarks/cuda_baselines.py) and CuPy, on a real GPU.

    python -m benchmarks.run_targets --targets cuda [--scale S] [--repeat N] [--only NAME]

The workloads: the eight of benchmarks/workloads.py, a flat `reduce` (sum) of 100M float64
and a segmented sum of 100M float64 (10M rows of 0 to 20), at scale 1. Without a GPU (or
under numba's simulator, whose times mean nothing) it refuses in one line and exits 2.

Each variant is timed as run_targets does (compile: the first call, on tiny inputs; then the
median of N calls on the real inputs) and its output is compared with the CPU numba
baseline's (the flat sum: numpy's):

- `numba.cuda, kernels`: the inputs already on the device, the result left there (then the
  device synchronized): the kernels alone;
- `numba.cuda, with transfers`: the same from host arrays to a host result;
- `cupy` (reduce, the segmented sums, SMVM): skipped, saying so, where CuPy is not installed
  (it is not a dependency);
- accel `cuda`: `prog.run` on host arrays to a host result (what a user calls: the inputs'
  upload and the result's download are in its time, as in the row with transfers).

GB/s is the workload's least traffic (every input array read once, the output written once)
over the median time, and `% peak` that over the device's peak bandwidth, from its memory
clock and bus width (2 transfers a clock). For the compute-bound workloads (triples,
mandelbrot, n-body) it is small by nature.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import workloads as W

TINY = 1e-6
NO_GPU = ("benchmarks: --targets cuda times a GPU and there is none here ({why}); no "
          "simulator timings")


def refusal() -> str | None:
    """Why the GPU benchmarks cannot run here (one line), or None."""
    from numba import config
    if config.ENABLE_CUDASIM:
        return NO_GPU.format(why="NUMBA_ENABLE_CUDASIM=1: numba's simulator")
    try:
        from numba import cuda
    except ImportError as err:
        return NO_GPU.format(why=f"numba.cuda cannot be imported: {err}")
    if not cuda.is_available():
        return NO_GPU.format(why="numba.cuda.is_available() is false")
    return None


def device_line() -> tuple[str, float]:
    """The device in words, and its peak bandwidth in bytes a second."""
    from numba import cuda
    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
    clock_hz = device.MEMORY_CLOCK_RATE * 1e3               # the attribute is in kHz
    bus_bytes = device.GLOBAL_MEMORY_BUS_WIDTH / 8
    peak = 2 * clock_hz * bus_bytes
    cc = ".".join(map(str, device.compute_capability))
    return (f"{name} (sm {cc}, {device.MULTIPROCESSOR_COUNT} SMs, memory clock "
            f"{clock_hz / 1e6:.0f} MHz, {device.GLOBAL_MEMORY_BUS_WIDTH}-bit bus: peak "
            f"{peak / 1e9:.0f} GB/s)"), peak


# ---------------------------------------------------------------- the two added workloads

REDUCE = r"""
def total (xs: []f64) : f64 = reduce (+) 0.0 xs
"""


def reduce_inputs(scale: float) -> W.Inputs:
    n = max(1000, round(100_000_000 * scale))
    values = np.random.default_rng([W.SEED, 7]).standard_normal(n)
    return W.Inputs((values,), dict(values=values), f"{n / 1e6:.3g}M f64")


def _sum_reference(d: dict[str, Any]) -> float:
    return float(np.sum(d["values"]))


def _one(value: Any) -> np.ndarray:
    return np.atleast_1d(np.asarray(value, dtype=np.float64)).reshape(-1)


ADDED = (
    W.Workload("reduce", REDUCE, "total", reduce_inputs,
               (W.Baseline("numpy", _sum_reference),), _one, rtol=1e-9, atol=1e-6),
    W.Workload("seg_sum_100M", W.SEG_SUM, "seg_sum", lambda s: W.seg_sum_inputs(10 * s),
               W.WORKLOADS[0].baselines, W.WORKLOADS[0].canonical, rtol=1e-9, atol=1e-9),
)


def workloads(only: str | None) -> list[W.Workload]:
    every = list(W.WORKLOADS) + list(ADDED)
    if not only:
        return every
    names = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in names if n not in {w.name for w in every}]
    if unknown:
        raise SystemExit(f"unknown workload(s) {', '.join(unknown)}: "
                         f"choose from {', '.join(w.name for w in every)}")
    return [w for w in every if w.name in names]


# ---------------------------------------------------------------- CuPy

def cupy_variant(name: str) -> Callable[[dict[str, Any]], Any] | None:
    """CuPy's code for a workload (host data in, a host result out), or None."""
    import cupy as cp

    def seg_sum(d):
        """Each value's row: a 1 at every row start, summed up; then a weighted count."""
        import cupyx
        offsets, values = cp.asarray(d["offsets"]), cp.asarray(d["values"])
        starts = cp.zeros(values.size, dtype=cp.int64)
        inner = offsets[1:-1]
        cupyx.scatter_add(starts, inner[inner < values.size], 1)
        return cp.bincount(cp.cumsum(starts), weights=values,
                           minlength=len(d["offsets"]) - 1).get()

    def smvm(d):
        from cupyx.scipy.sparse import csr_matrix
        rows = len(d["offsets"]) - 1
        matrix = csr_matrix((cp.asarray(d["vals"]), cp.asarray(d["cols"]),
                             cp.asarray(d["offsets"])), shape=(rows, len(d["x"])))
        return (matrix @ cp.asarray(d["x"])).get()

    return {"reduce": lambda d: float(cp.asarray(d["values"]).sum()),
            "seg_sum": seg_sum, "seg_sum_100M": seg_sum, "smvm": smvm}.get(name)


# ---------------------------------------------------------------- timing

@dataclass
class Row:
    workload: str
    size: str
    variant: str
    compile: float | None = None
    median: float | None = None
    agrees: bool | None = None
    note: str = ""


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    from numba import cuda
    cuda.synchronize()
    started = time.perf_counter()
    value = call()
    cuda.synchronize()
    return time.perf_counter() - started, value


def _variants(workload: W.Workload, inputs: W.Inputs, tiny: W.Inputs) -> list[tuple]:
    """(name, compiling call, timed call, host result of a value)."""
    import accel_kernel as acc

    from . import cuda_baselines as G
    hand = G.BASELINES[workload.name]
    on_device, tiny_device = G.to_device(inputs.data), G.to_device(tiny.data)
    found = [("numba.cuda, kernels", lambda: hand(tiny_device), lambda: hand(on_device),
              G.to_host),
             ("numba.cuda, with transfers", lambda: G.to_host(hand(G.to_device(tiny.data))),
              lambda: G.to_host(hand(G.to_device(inputs.data))), lambda v: v)]
    try:
        cupy = cupy_variant(workload.name)
    except ImportError:
        cupy, found = None, found + [("cupy", None, None, "skipped: CuPy is not installed")]
    if cupy is not None:
        found.append(("cupy", lambda: cupy(tiny.data), lambda: cupy(inputs.data), lambda v: v))
    prog: list = []

    def compile_and_run():
        prog.append(acc.compile(workload.source, f"benchmarks:{workload.name}"))
        return prog[0].run(workload.entry, *tiny.args, target="cuda")

    found.append(("accel `cuda`", compile_and_run,
                  lambda: prog[0].run(workload.entry, *inputs.args, target="cuda"),
                  lambda v: v))
    return found


def traffic(inputs: W.Inputs, output: Any) -> int:
    """Bytes of every input array plus the output's."""
    arrays = [v for v in inputs.data.values() if isinstance(v, np.ndarray)]
    outs = output if isinstance(output, tuple) else (output,)
    return sum(a.nbytes for a in arrays) + sum(np.asarray(o).nbytes for o in outs)


def run_workload(workload: W.Workload, scale: float, repeat: int) -> tuple[list[Row], int]:
    inputs, tiny = workload.make_inputs(scale), workload.make_inputs(TINY)
    reference = workload.canonical(workload.baselines[0].run(inputs.data))
    rows = []
    for name, tiny_call, call, host in _variants(workload, inputs, tiny):
        row = Row(workload.name, inputs.size, name)
        rows.append(row)
        if call is None:
            row.note = host
            continue
        try:
            row.compile, _ = _timed(tiny_call)
            _, value = _timed(call)
            row.agrees = W.check(workload.canonical(host(value)), reference, workload.rtol,
                                 workload.atol)
            row.median = statistics.median(_timed(call)[0] for _ in range(repeat))
        except Exception as err:              # not built, or a failure: a finding
            row.note = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
    return rows, traffic(inputs, reference)


def main(args: Any) -> int:
    """The GPU table for run_targets' parsed arguments (`scale`, `repeat`, `only`)."""
    why = refusal()
    if why is not None:
        print(why)
        return 2
    device, peak = device_line()
    import warnings

    from numba.cuda.core.errors import NumbaPerformanceWarning
    # the hand-written kernels' small launches (the final pass of a reduction) warn
    warnings.simplefilter("ignore", NumbaPerformanceWarning)
    print(f"device: {device}")
    print(f"scale {args.scale:g}; compile = the first call, on tiny inputs; median of "
          f"{args.repeat} calls after a first; GB/s = least traffic / median; agrees = the "
          f"CPU numba baseline's output (reduce: numpy's)")
    print()
    print("| workload | size | variant | compile s | median ms | GB/s | % peak | agrees |")
    print("|---|---|---|---:|---:|---:|---:|:-:|")
    failed = False
    for workload in workloads(args.only):
        rows, nbytes = run_workload(workload, args.scale, args.repeat)
        for r in rows:
            rate = nbytes / r.median if r.median else None
            agrees = "—" if r.agrees is None else ("yes" if r.agrees else "**NO**")
            failed |= r.agrees is False
            variant = r.variant + (f" ({r.note})" if r.note else "")
            print(f"| {r.workload} | {r.size} | {variant} | "
                  f"{'—' if r.compile is None else f'{r.compile:.3g}'} | "
                  f"{'—' if r.median is None else f'{r.median * 1e3:.3g}'} | "
                  f"{'—' if rate is None else f'{rate / 1e9:.3g}'} | "
                  f"{'—' if rate is None else f'{100 * rate / peak:.3g}'} | {agrees} |")
    return 1 if failed else 0
