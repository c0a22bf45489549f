"""accel's compiled targets against hand-written numba, numpy and Awkward Array (issue "Fusion
and the numba CPU back end"), every variant in the same process on the same inputs.

    python -m benchmarks.run_targets [--scale S] [--targets numpy,cpu] [--repeat N]
                                     [--budget SECONDS] [--only NAME[,NAME]] [--threads T]
    python -m benchmarks.run_targets --targets cuda [--scale S] [--repeat N] [--only NAME]

`--targets cuda` (alone) runs the GPU benchmarks of benchmarks/run_cuda.py instead: the
`cuda` target against hand-written numba.cuda kernels and CuPy, in GB/s against the device's
peak; without a GPU it refuses in one line (no simulator timings).

For each workload of benchmarks/workloads.py, each baseline and each accel target asked for
(a target that raises NotImplementedError is skipped, saying so) is timed three ways:

- compile: the first call in the process, on the workload's inputs at a tiny scale (the same
  types): numba compiles its kernel there (no cache); an accel target compiles the source
  (`acc.compile`: parsing, type checking) and runs the compiler's passes and code generation
  there;
- first call: compile plus the first call on the real inputs (which on this machine also pays
  for touching fresh memory: a virtual machine's first use of a page is slow; on `cpu` it
  runs the kernels' sequential variants while their parallel ones compile in the
  background, `backends/cpu/tiers.py`, and the timed calls start once those are compiled);
- median: the median of N more calls on the real inputs: the compiled code (fewer, at
  least one, once a variant's calls have taken `--budget` seconds: the `numpy` target's
  triples, lines and n-body take 10 to 40 s a call at scale 1). The N calls are made in
  rounds, every variant once a round (in a shuffled order, the same in every run), so the drift
  of a virtual machine's memory speed over minutes falls on all of them alike.

The ratio is the median over hand-written numba's. numba's output is also the one every other
variant must agree with (`workloads.check` on `Workload.canonical` outputs).

The bandwidth ceiling (`CEILINGS`): for the segmented sum, a flat `np.sum` over the same
values array is timed in the same rounds (a row of its own, not compared: it has no rows),
and a second table gives each variant's GB/s (the bytes it must move: the values and offsets
read, one f64 a row written) and that as a fraction of `np.sum`'s GB/s over the values alone:
what this machine's memory system gives one pass over the data.

Sizes: scale 1.0 is the issue's (see workloads.py for how a smaller scale shrinks each). At
scale 1 the process needs about 14 GiB (the `numpy` target's n-body and triples materialize
every pair and every candidate); run one workload at a time (`--only`) where that is too much.
At scale 1 a run of all workloads takes 5 to 10 minutes on 2 cores.

The header says how many cores other processes used, before and during the run: numba's
parallel regions wait for every thread, so a busy machine slows the numba baselines (and the
`cpu` target) much more than single-threaded numpy. `--threads` sets numba's thread count.
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import random
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import date
from typing import Any, Callable

import numpy as np

from . import workloads as W

TINY = 1e-6        # the scale of the compiling call: every workload at its minimum size
ORDER_SEED = 2026  # the shuffled order of the variants in each round (`interleaved`)


@dataclass
class Timing:
    workload: str
    size: str
    variant: str
    compile: float | None = None        # seconds: the first call, on tiny inputs
    first: float | None = None          # compile + the first call on the real inputs
    median: float | None = None
    calls: int = 0                      # the calls the median is taken over
    ratio: float | None = None
    agrees: bool | None = None
    note: str = ""                      # skipped or failed, and why


@dataclass(frozen=True)
class Ceiling:
    name: str                               # the variant's name in the tables
    call: Callable[[dict], Any]             # on `Inputs.data`
    moved: Callable[[dict], int]            # bytes a variant of the workload must move
    flat: Callable[[dict], int]             # bytes `call` moves


# the memory system's ceiling for a workload: one flat pass over the same data
CEILINGS = {
    "seg_sum": Ceiling("np.sum over the values (flat: the ceiling)",
                       lambda d: np.sum(d["values"]),
                       lambda d: d["values"].nbytes + d["offsets"].nbytes
                       + 8 * (len(d["offsets"]) - 1),
                       lambda d: d["values"].nbytes),
}


@dataclass
class Variant:
    name: str
    tiny: Callable[[], Any]             # the compiling call
    call: Callable[[], Any]             # a call on the real inputs


def _time(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = action()
    return time.perf_counter() - started, value


def first_calls(workload: W.Workload, size: str, variant: Variant) -> tuple[Timing, Any]:
    """The compiling call and the first real call of one variant, and the canonical output
    of that first call."""
    compile_s, _ = _time(variant.tiny)
    first_s, value = _time(variant.call)
    if variant.name.startswith("accel"):
        # the first call ran the cpu kernels' sequential variants and started compiling
        # the parallel ones in the background (backends/cpu/tiers.py): the timed calls
        # measure the steady state, so they start once those are compiled
        from accel_kernel.backends.cpu import tiers
        tiers.shared("tiered").wait()
    return (Timing(workload.name, size, variant.name, compile_s, compile_s + first_s),
            workload.canonical(value))


def interleaved(found: list[tuple[Variant, Timing]], repeat: int, budget: float) -> None:
    """`repeat` rounds, each calling every variant once in turn (a variant stops, after at
    least one call, once its calls have taken `budget` seconds): the machine's drift (this
    virtual machine's memory bandwidth moves by 2x over minutes) falls on every variant
    alike. Each round calls the variants in a shuffled order (`ORDER_SEED`: the same orders
    in every run), so no variant mostly runs right after the same one: a call right after
    the `numpy` or Awkward baselines, which stream and free gigabytes, finds the caches
    cold. accel pays that more than a hand-written kernel (its host code and intermediate
    arrays are cold too: Pythagorean triples' first call after the Awkward baseline took
    33 to 49 ms, the next 19 to 20 ms; 2026-11-25), and the rotation used before kept the
    cyclic order, so the accel call came right after the Awkward one in nearly every round.
    Sets each timing's median and call count."""
    samples: list[list[float]] = [[] for _ in found]
    rounds = list(zip(found, samples))
    order = random.Random(ORDER_SEED)
    for _ in range(repeat):
        for (variant, _timing), mine in order.sample(rounds, len(rounds)):
            if not mine or sum(mine) < budget:
                mine.append(_time(variant.call)[0])
    for (_variant, timing), mine in zip(found, samples):
        timing.median, timing.calls = statistics.median(mine), len(mine)


def variants(workload: W.Workload, inputs: W.Inputs, tiny: W.Inputs,
             targets: list[str]) -> list[Variant]:
    """The baselines (numba first), then `prog.run` on each accel target: one `acc.compile`
    per target, inside its compiling call."""
    import accel_kernel as acc
    found = [Variant(b.name, lambda b=b: b.run(tiny.data), lambda b=b: b.run(inputs.data))
             for b in workload.baselines]
    for target in targets:
        prog: list = []

        def compile_and_run(target=target, prog=prog):
            prog.append(acc.compile(workload.source, f"benchmarks/workloads.py:{workload.name}"))
            return prog[0].run(workload.entry, *tiny.args, target=target)

        found.append(Variant(f"accel `{target}`", compile_and_run,
                             lambda target=target, prog=prog:
                             prog[0].run(workload.entry, *inputs.args, target=target)))
    return found


def run_workload(workload: W.Workload, scale: float, targets: list[str], repeat: int,
                 budget: float) -> list[Timing]:
    inputs, tiny = workload.make_inputs(scale), workload.make_inputs(TINY)
    rows: list[Timing] = []
    timed: list[tuple[Variant, Timing]] = []
    reference = None
    for variant in variants(workload, inputs, tiny, targets):
        try:
            timing, value = first_calls(workload, inputs.size, variant)
        except NotImplementedError as err:
            rows.append(Timing(workload.name, inputs.size, variant.name,
                               note=f"skipped, NotImplementedError: {err}"))
            continue
        except Exception as err:                  # an accel error or a failure: a finding
            rows.append(Timing(workload.name, inputs.size, variant.name,
                               note=f"failed, {type(err).__name__}: {err}"))
            continue
        if reference is None:
            reference = value
        timing.agrees = W.check(value, reference, workload.rtol, workload.atol)
        rows.append(timing)
        timed.append((variant, timing))
        del value
        gc.collect()
    ceiling = CEILINGS.get(workload.name)
    if ceiling is not None:               # timed in the same rounds; nothing to agree with
        flat = Variant(ceiling.name, lambda: ceiling.call(tiny.data),
                       lambda: ceiling.call(inputs.data))
        timing, _value = first_calls(workload, inputs.size, flat)
        rows.append(timing)
        timed.append((flat, timing))
    interleaved(timed, repeat, budget)
    base = timed[0][1].median if timed else None
    for _variant, timing in timed:
        timing.ratio = timing.median / base if base else None
    if ceiling is not None:
        BYTES[workload.name] = (ceiling.moved(inputs.data), ceiling.flat(inputs.data))
    return rows


BYTES: dict[str, tuple[int, int]] = {}     # workload -> (bytes a variant moves, the ceiling's)


def print_ceilings(rows: list[Timing]) -> None:
    """Each timed variant of a workload with a ceiling in GB/s, and as a fraction of the
    ceiling's GB/s (both measured in this run)."""
    for name, (moved, flat) in BYTES.items():
        mine = [r for r in rows if r.workload == name and r.median]
        top = next((r for r in mine if r.variant == CEILINGS[name].name), None)
        if top is None:
            continue
        ceiling_gbs = flat / top.median / 1e9
        print(f"{name}: GB/s of the {moved / 1e9:.3g} GB each variant moves (values, offsets, "
              f"one f64 a row); the ceiling: {CEILINGS[name].name}, {flat / 1e9:.3g} GB in "
              f"{_seconds(top.median)} s = {ceiling_gbs:.3g} GB/s")
        print()
        print("| workload | variant | median s | GB/s | of the ceiling's GB/s |")
        print("|---|---|---:|---:|---:|")
        for r in mine:
            if r is top:
                continue
            gbs = moved / r.median / 1e9
            print(f"| {name} | {r.variant} | {_seconds(r.median)} | {gbs:.3g} | "
                  f"{gbs / ceiling_gbs:.0%} |")
        print()


# ---------------------------------------------------------------- the report


def machine() -> str:
    model, cores = platform.processor() or "unknown cpu", os.cpu_count()
    try:
        fields = dict(line.split(":", 1) for line in
                      subprocess.run(["lscpu"], capture_output=True, text=True).stdout
                      .splitlines() if ":" in line)
        model = fields.get("Model name", model).strip()
        cores = int(fields.get("CPU(s)", cores))
    except (OSError, ValueError):
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024 ** 3
    return f"{platform.machine()}, {model}, {cores} cores, {memory:.0f} GiB RAM"


def versions() -> str:
    import awkward
    import numba
    return (f"Python {platform.python_version()}, numpy {np.__version__}, "
            f"numba {numba.__version__} ({numba.get_num_threads()} threads, "
            f"{numba.threading_layer() if _parallel_ran() else 'threading layer not chosen yet'}), "
            f"awkward {awkward.__version__}")


def _parallel_ran() -> bool:
    """Whether a parallel numba kernel has run (before that the threading layer is unknown)."""
    import numba
    try:
        numba.threading_layer()
    except ValueError:
        return False
    return True


def _seconds(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def print_table(rows: list[Timing]) -> list[str]:
    """The Markdown table; returns the notes of the skipped and failed rows, numbered."""
    notes: list[str] = []
    print("| workload | size | variant | compile s | first call s | median s | calls "
          "| × numba | agrees |")
    print("|---|---|---|---:|---:|---:|---:|---:|:-:|")
    shown = None
    for r in rows:
        variant = r.variant
        if r.note:
            if r.note not in notes:
                notes.append(r.note)
            variant += f" ({r.note.split(',')[0]} [{notes.index(r.note) + 1}])"
        ratio = "—" if r.ratio is None else f"{r.ratio:.3g}"
        agrees = "—" if r.agrees is None else ("yes" if r.agrees else "**NO**")
        size = r.size if r.workload != shown else ""
        shown = r.workload
        calls = str(r.calls) if r.calls else "—"
        print(f"| {r.workload} | {size} | {variant} | {_seconds(r.compile)} | "
              f"{_seconds(r.first)} | {_seconds(r.median)} | {calls} | {ratio} | {agrees} |")
    return notes


class OtherLoad:
    """The CPU time other processes use while this one runs, in cores on average: all busy
    time in /proc/stat minus this process's own (all its threads)."""

    def __init__(self):
        self.start = self._sample()

    @staticmethod
    def _sample() -> tuple[float, float, float]:
        with open("/proc/stat") as stat:
            fields = [int(f) for f in stat.readline().split()[1:]]
        busy = (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")   # not idle, iowait
        own = os.times()
        return time.perf_counter(), busy, own.user + own.system

    def cores(self) -> float:
        wall, busy, own = (b - a for a, b in zip(self.start, self._sample()))
        return max(busy - own, 0.0) / wall if wall > 0 else 0.0


def _warn_if_busy(cores: float, when: str) -> None:
    if cores > 0.2:
        print(f"warning: other processes used {cores:.2f} cores {when}. A numba parallel "
              f"region waits for all its threads, and one may not get a core until the next "
              f"time slice: small numba timings then come out in multiples of a few ms. "
              f"Prefer an idle machine (or compare with --threads 1).")


def _memory_available() -> float:
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024 ** 2
    return float("nan")


def set_threads(threads: int) -> None:
    """numba's thread count, here and on accel's worker thread (`runtime/deep.py`): numba
    keeps one per thread, so the baselines alone would have run on `threads`."""
    import numba

    from accel_kernel.runtime.deep import run_deep
    numba.set_num_threads(threads)
    run_deep(numba.set_num_threads, threads)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--targets", default="numpy,cpu",
                        help="comma-separated accel targets (default numpy,cpu)")
    parser.add_argument("--repeat", type=int, default=5, help="calls after the first")
    parser.add_argument("--budget", type=float, default=20.0,
                        help="stop repeating a variant (after one call) once its calls have "
                             "taken this many seconds")
    parser.add_argument("--only", help="comma-separated workload names")
    parser.add_argument("--threads", type=int,
                        help="numba threads (`numba.set_num_threads`; default: all cores)")
    args = parser.parse_args(argv)
    if args.threads:
        set_threads(args.threads)
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    if "cuda" in targets:              # the GPU table (benchmarks/run_cuda.py), on its own
        if targets != ["cuda"]:
            raise SystemExit("--targets cuda runs the GPU benchmarks on their own: "
                             "give it alone")
        from . import run_cuda
        return run_cuda.main(args)
    chosen = W.select(args.only)

    command = " ".join(["python -m benchmarks.run_targets"] + [
        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)])
    print(f"command: `{command}` ({date.today().isoformat()})")
    print(f"machine: {machine()}, {_memory_available():.0f} GiB available")
    others = OtherLoad()
    time.sleep(1.0)
    _warn_if_busy(others.cores(), "in the second before the run")
    print(f"scale {args.scale:g}; compile = the first call, on tiny inputs; first call = "
          f"compile + the first call on these inputs; median of {args.repeat} calls after "
          f"it (fewer, at least one, once they take {args.budget:g} s); × numba = median over hand-written numba's (`@njit(parallel=True)`) in this "
          f"run; agrees = the same output as numba's")
    print()
    rows: list[Timing] = []
    started = time.perf_counter()
    for workload in chosen:
        rows += run_workload(workload, args.scale, targets, args.repeat, args.budget)
        gc.collect()
    notes = print_table(rows)
    print()
    print_ceilings(rows)
    for number, note in enumerate(notes, start=1):
        print(f"[{number}] {note}")
    for w in chosen:
        if w.note:
            print(f"- {w.name}: {w.note}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2
    print()
    print(f"software: {versions()}")
    print(f"total {time.perf_counter() - started:.0f} s; peak memory (max RSS) {peak:.1f} GiB; "
          f"other processes used {others.cores():.2f} cores on average during the run")
    _warn_if_busy(others.cores(), "during the run")
    return 1 if any(r.agrees is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
