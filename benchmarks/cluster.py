"""The four workloads of Clifton-Everest's thesis, chapter 7, as accel sequences, on one process
and on a Dask cluster of two worker processes, against hand-written baselines (issue 14).

    python -m benchmarks.cluster [--scale S] [--repeat R] [--only NAME,...] [--workers N]
    python -m benchmarks.cluster --check [--scale S] [--targets interp,numpy,cpu] [--workers N]

The programs are benchmarks/programs/thesis_*.accel; each is a sequence at the top level of its
entry (or of a loop's body), so it runs chunk by chunk and, with a cluster, chunk by chunk on
the workers. Inputs are drawn with a fixed seed:

- **smvm**: a sparse matrix in CSR (the rows' non-zeros lognormal, median 12, mean about 25,
  up to 10,000, 5% of the rows empty: the spread of the thesis' Table 7.2, from a handful to
  thousands a row) times a dense vector; the sequence is over rows (`produce` of the row
  index; the row is the slice `offsets[i]:offsets[i+1]`). Baselines: scipy.sparse (`csr @ x`),
  numba (a prange over rows, benchmarks/baselines_numba.py).
- **audio**: a 63-tap low-pass FIR filter over a generated signal (three tones and noise at
  44.1 kHz); the sequence is over windows (`produce` of `signal[k : k + 63]`), one output
  sample per window. Baselines: numpy (`np.convolve`), numpy's `sliding_window_view` times
  the taps, numba (a prange over output samples).
- **pagerank**: 10 iterations over a power-law link graph (Zipf in- and out-degrees, pages
  without links among them) given as index pairs; each iteration streams the edges in blocks
  (`foldSeq` of a `reduce_by_index` per block). Baselines: scipy (the link matrix built from
  the pairs, then a sparse product per iteration), numba (per-thread histograms).
- **md5**: a dictionary of generated words (1 to 16 lowercase letters) hashed one by one to
  find the word with a target digest. accel has no `u32` yet (LANGUAGE.md §10 lists it as
  being added; `1u32` is a SyntaxError), but it has everything MD5 needs on i64: `& | ^`,
  `!`, `<< >>`, and wrapping addition; the program keeps each 32-bit word in [0, 2^32) by
  masking after each addition and rotates with two shifts. Baselines: numba (a prange over
  words, the same i64 arithmetic), Python's hashlib (OpenSSL, one thread).

`--check` runs every program at a tiny scale (1e-3 by default) on the targets named and
compares it with its first baseline; with `--workers N` also on a `LocalCluster` of N
processes. Without it, each workload is timed (the median of R runs after a first, compiling
one): accel on `cpu` in this process, accel on `cpu` with `set_cluster("local N")`, and each
baseline; the time per element of the sequence, the throughput, the speed-up against the
fastest baseline, the peak memory of this process above its baseline (VmHWM, reset before
each run; a cluster's workers are separate processes, their peak is given after a `+`), and
the chunk sizes the scheduler chose (from the run's `Step` events: steps, the first sizes, the
largest, per worker). The machine, its load before the run and the command go in the header.

`OMP_WAIT_POLICY=PASSIVE python -m benchmarks.cluster` runs it with OpenMP's threads sleeping
rather than spinning between parallel regions (numba's `omp` threading layer; the cluster's
worker processes inherit the variable): on a machine with no core to spare, a worker whose
idle threads spin takes the core the other worker needs (RESULTS.md has both runs).
"""
from __future__ import annotations

import argparse
import logging
import os
import shlex
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import baselines_numba as nb
from . import thesis_baselines as tb
from .run_targets import machine, versions

SEED = 2026
PROGRAMS = Path(__file__).parent / "programs"


@dataclass(frozen=True)
class Inputs:
    args: tuple                 # the accel entry's arguments
    data: dict[str, Any]        # the same data for the baselines
    elements: int               # the elements of the sequence (a run's, all iterations)
    size: str                   # what was drawn, in words


@dataclass(frozen=True)
class Workload:
    name: str
    program: str                # file in benchmarks/programs
    entry: str
    make_inputs: Callable[[float], Inputs]
    baselines: tuple[tuple[str, Callable[[dict], Any]], ...]   # the first is the reference
    rtol: float = 0.0           # 0: compared exactly

    def source(self) -> str:
        return (PROGRAMS / self.program).read_text(encoding="utf-8")

    def agrees(self, got: Any, expected: Any) -> bool:
        got, expected = np.asarray(got), np.asarray(expected)
        if self.rtol == 0.0:
            return got.shape == expected.shape and bool((got == expected).all())
        scale = max(float(np.abs(expected).max(initial=0.0)), 1e-300)
        return got.shape == expected.shape and bool(
            np.allclose(got, expected, rtol=self.rtol, atol=self.rtol * scale))


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng([SEED, sum(map(ord, name))])


def _scaled(full: int, scale: float, minimum: int) -> int:
    return max(minimum, round(full * scale))


# ---------------------------------------------------------------- the workloads' inputs


def smvm_inputs(scale: float) -> Inputs:
    rng = _rng("smvm")
    rows = _scaled(1_000_000, scale, 20)
    sizes = np.minimum(np.floor(rng.lognormal(2.5, 1.2, rows)), min(rows, 10_000))
    sizes[rng.random(rows) < 0.05] = 0
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    nnz = int(offsets[-1])
    cols = rng.integers(0, rows, nnz)
    vals = rng.standard_normal(nnz)
    x = rng.standard_normal(rows)
    return Inputs((offsets, cols, vals, x), dict(offsets=offsets, cols=cols, vals=vals, x=x),
                  rows, f"{rows:,} rows, {nnz:,} non-zeros (0 to {int(sizes.max()):,} a row)")


def _smvm_scipy(d: dict) -> np.ndarray:
    import scipy.sparse as sp
    rows = len(d["offsets"]) - 1
    matrix = sp.csr_matrix((d["vals"], d["cols"], d["offsets"]), shape=(rows, rows))
    return matrix @ d["x"]


def low_pass(width: int = 63, cutoff: float = 0.1) -> np.ndarray:
    """A windowed-sinc low-pass filter (Hamming window), its taps summing to 1."""
    k = np.arange(width) - (width - 1) / 2
    taps = np.sinc(2 * cutoff * k) * np.hamming(width)
    return taps / taps.sum()


def audio_inputs(scale: float) -> Inputs:
    rng = _rng("audio")
    samples = _scaled(8_000_000, scale, 200)
    t = np.arange(samples) / 44_100
    signal = (np.sin(2 * np.pi * 440 * t) + 0.5 * np.sin(2 * np.pi * 3_000 * t)
              + 0.25 * np.sin(2 * np.pi * 12_000 * t) + 0.1 * rng.standard_normal(samples))
    taps = low_pass()
    windows = samples - len(taps) + 1
    return Inputs((signal, taps), dict(signal=signal, taps=taps), windows,
                  f"{samples:,} samples, {len(taps)} taps, {windows:,} windows")


ITERATIONS = 10


def pagerank_inputs(scale: float) -> Inputs:
    rng = _rng("pagerank")
    pages = _scaled(400_000, scale, 30)
    edges = _scaled(8_000_000, scale, 200)
    popularity = 1.0 / np.arange(1, pages + 1) ** 0.9        # Zipf: a few pages get most links
    popularity /= popularity.sum()
    src = rng.permutation(pages)[rng.choice(pages, edges, p=popularity)]
    dst = rng.permutation(pages)[rng.choice(pages, edges, p=popularity)]
    outdeg = np.bincount(src, minlength=pages).astype(np.int64)
    block = max(64, edges // 32)
    blocks = -(-edges // block)
    return Inputs((pages, src, dst, outdeg, ITERATIONS, block),
                  dict(n=pages, src=src, dst=dst, outdeg=outdeg), blocks * ITERATIONS,
                  f"{pages:,} pages, {edges:,} links ({int((outdeg == 0).sum()):,} pages "
                  f"without), {ITERATIONS} iterations of {blocks} blocks of {block:,} links")


def md5_inputs(scale: float) -> Inputs:
    rng = _rng("md5")
    count = _scaled(2_000_000, scale, 20)
    lengths = np.minimum(rng.geometric(0.15, count), 16)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    chars = rng.integers(ord("a"), ord("z") + 1, int(offsets[-1])).astype(np.int64)
    hidden = (2 * count) // 3
    word = chars[offsets[hidden]:offsets[hidden + 1]].astype(np.uint8).tobytes()
    import hashlib
    digest = hashlib.md5(word).digest()
    target = tuple(int(v) for v in np.frombuffer(digest, dtype="<u4"))
    raw = chars.astype(np.uint8).tobytes()
    return Inputs((chars, offsets, *target),
                  dict(chars=chars, offsets=offsets, target=target, digest=digest,
                       words=[raw[offsets[i]:offsets[i + 1]] for i in range(count)]),
                  count, f"{count:,} words of 1 to 16 letters, the target's at {hidden:,}")


WORKLOADS = (
    Workload("smvm", "thesis_smvm.accel", "smvm", smvm_inputs,
             (("scipy.sparse", _smvm_scipy),
              ("numba", lambda d: nb.smvm(d["offsets"], d["cols"], d["vals"], d["x"]))),
             rtol=1e-9),
    Workload("audio", "thesis_audio.accel", "fir", audio_inputs,
             (("numpy convolve", lambda d: tb.fir_numpy(d["signal"], d["taps"])),
              ("numpy sliding_window_view", lambda d: tb.fir_windows_numpy(d["signal"],
                                                                           d["taps"])),
              ("numba", lambda d: tb.fir_numba(d["signal"], d["taps"]))),
             rtol=1e-9),
    Workload("pagerank", "thesis_pagerank.accel", "pagerank", pagerank_inputs,
             (("scipy.sparse", lambda d: tb.pagerank_scipy(d["n"], d["src"], d["dst"],
                                                           d["outdeg"], ITERATIONS)),
              ("numba", lambda d: tb.pagerank_numba(d["n"], d["src"], d["dst"], d["outdeg"],
                                                    ITERATIONS))),
             rtol=1e-9),
    Workload("md5", "thesis_md5.accel", "search", md5_inputs,
             (("numba", lambda d: tb.md5_numba(d["chars"], d["offsets"], d["target"])),
              ("hashlib (1 thread)", lambda d: tb.md5_hashlib(d["words"], d["digest"])))),
)


def compiled(workload: Workload, cluster: Any = None):
    """The workload's program; its sequences on `cluster` (`local N`, a
    `runtime.cluster.Cluster`, ...: `Program.set_cluster`) when given."""
    import accel_kernel as acc
    program = acc.compile(workload.source(), workload.program)
    if cluster:
        program.set_cluster(cluster)
    return program


def check(workload: Workload, scale: float, target: str, cluster: Any = None,
          program=None) -> tuple[bool, Any, Any]:
    """(agrees, accel's value, the first baseline's) at this scale."""
    inputs = workload.make_inputs(scale)
    program = program or compiled(workload, cluster)
    got = program.run(workload.entry, *inputs.args, target=target)
    expected = workload.baselines[0][1](inputs.data)
    return workload.agrees(got, expected), got, expected


# ---------------------------------------------------------------- measuring


def _peak_reset() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        return int(f.read().split(f"{field}:")[1].split()[0]) / 1024


@dataclass(frozen=True)
class Timing:
    seconds: float              # the median of the timed runs
    value: Any
    peak_mb: float              # this process's peak RSS above its RSS before the run
    workers_mb: tuple = ()      # the same for each cluster worker
    events: tuple = ()          # the last run's events (accel only)


def _peak_growth(client: Any) -> Callable[[], tuple[float, ...]]:
    """Resets the peak RSS of this process (and of the client's workers) and gives a function
    that reads how far each rose above its RSS now."""
    _peak_reset()
    base = _status_mb("VmRSS")
    workers = client.run(_reset_on_worker) if client is not None else {}

    def grown() -> tuple[float, ...]:
        peaks = client.run(_status_mb, "VmHWM") if client is not None else {}
        return (_status_mb("VmHWM") - base,) + tuple(peaks[w] - workers[w] for w in sorted(
            workers))
    return grown


def _reset_on_worker() -> float:
    _peak_reset()
    return _status_mb("VmRSS")


def timed(run: Callable[[], Any], repeat: int, traced=None, client=None) -> Timing:
    value = run()                                    # compiles
    times, peaks = [], []
    for _ in range(repeat):
        grown = _peak_growth(client)
        began = time.perf_counter()
        value = run()
        times.append(time.perf_counter() - began)
        peaks.append(grown())
    peak = tuple(max(p[k] for p in peaks) for k in range(len(peaks[0])))
    events = tuple(traced.events) if traced is not None else ()
    return Timing(statistics.median(times), value, peak[0], peak[1:], events)


def chunk_sizes(events: tuple) -> str:
    """The scheduler's chunk sizes: steps, the first sizes, the largest, per worker."""
    from accel_kernel.runtime import events as E
    steps = [e for e in events if isinstance(e, E.Step)]
    if not steps:
        return ""
    sizes = [s.elements for s in steps]
    text = (f"{len(steps)} steps: {', '.join(map(str, sizes[:5]))}, … largest {max(sizes):,}")
    workers = sorted({s.worker for s in steps if s.worker})
    for worker in workers:
        mine = [s.elements for s in steps if s.worker == worker]
        text += f"; worker {worker}: {len(mine)} steps, largest {max(mine):,}"
    compiles = [e for e in events if isinstance(e, E.Compile) and e.seconds > 0]
    if compiles:
        text += f"; compiled on workers {sum(e.seconds for e in compiles):.1f} s"
    return text


def measure(workload: Workload, scale: float, repeat: int,
            cluster: Any = None) -> tuple[Inputs, list[tuple[str, Timing]]]:
    """(inputs, rows (variant, Timing)) of one workload: accel on this process, on the
    cluster, and the baselines; every value checked against the first baseline."""
    inputs = workload.make_inputs(scale)
    rows = []
    variants = [("accel cpu, 1 process", None)]
    if cluster is not None:
        variants.append((f"accel cpu, local {cluster.workers}", cluster))
    for label, where in variants:
        program = compiled(workload, where)
        timing = timed(lambda: program.run(workload.entry, *inputs.args, target="cpu",
                                           trace=True), repeat, program,
                       where.client if where is not None else None)
        rows.append((label, timing))
    for name, run in workload.baselines:
        rows.append((name, timed(lambda: run(inputs.data), repeat)))
    expected = rows[-len(workload.baselines)][1].value
    for label, timing in rows:
        assert workload.agrees(timing.value, expected), (workload.name, label)
    return inputs, rows


def _memory(timing: Timing) -> str:
    workers = "".join(f" + {mb:.0f}" for mb in timing.workers_mb)
    return f"{timing.peak_mb:.0f}{workers}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--targets", default="interp,numpy,cpu")
    args = parser.parse_args()
    logging.getLogger("distributed").setLevel(logging.WARNING)   # the scheduler runs here
    from accel_kernel.runtime.cluster import Cluster
    cluster = Cluster.parse(f"local {args.workers}") if args.workers else None
    chosen = [w for w in WORKLOADS if not args.only or w.name in args.only.split(",")]
    try:
        if args.check:
            sys.exit(_check_all(chosen, args.scale or 1e-3, args.targets.split(","), cluster))
        load = os.getloadavg()[0]
        print(f"# cluster: {machine()}; load average {load:.2f} before the run; "
              f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}")
        print(f"# command: python -m benchmarks.cluster {shlex.join(sys.argv[1:])}\n")
        print("| workload | variant | median s | ns / element | M elements / s | vs best "
              "baseline | peak RSS above baseline, MB (this process + workers) | chunks |")
        print("|---|---|---:|---:|---:|---:|---:|---|")
        for workload in chosen:
            inputs, rows = measure(workload, args.scale or 1.0, args.repeat, cluster)
            best = min(t.seconds for _, t in rows[-len(workload.baselines):])
            print(f"| **{workload.name}** | {inputs.size} | | | | | | |")
            for label, timing in rows:
                per = timing.seconds / inputs.elements
                print(f"| {workload.name} | {label} | {timing.seconds:.3g} | {per * 1e9:.3g} | "
                      f"{inputs.elements / timing.seconds / 1e6:.3g} | "
                      f"{best / timing.seconds:.2f} | {_memory(timing)} | "
                      f"{chunk_sizes(timing.events)} |", flush=True)
        print(f"\n# {versions()}; load average {os.getloadavg()[0]:.2f} after the run")
    finally:
        if cluster is not None:
            cluster.close()


def _check_all(chosen: list[Workload], scale: float, targets: list[str], cluster) -> int:
    """Each workload on each target (and `cpu` on the cluster): 1 if one differs."""
    failed = 0
    for workload in chosen:
        places = [(t, None) for t in targets]
        places += [("cpu", cluster)] if cluster is not None else []
        for target, where in places:
            ok, _, _ = check(workload, scale, target, where)
            name = target + (f", local {where.workers}" if where is not None else "")
            print(f"{workload.name} on {name}: {'agrees' if ok else 'DIFFERS'}", flush=True)
            failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    main()
