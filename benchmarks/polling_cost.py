"""What the cancel polling costs (docs/kernel.md, "Interrupt"): each workload of
benchmarks/workloads.py on the `cpu` target twice in one process, its kernels generated with
the polled loops (as always) and without them (`polling.py`'s rewrites switched off while
that copy's code is generated), called in alternating order, round after round, on the same
inputs. A comparison within one process, call against call, holds up on a busy machine far
better than two runs of benchmarks/run_targets.py minutes apart; on a busy machine the
ratio of the minima is the steadier one (other processes only ever add time).

    python -m benchmarks.polling_cost [--scale S] [--repeat N] [--only NAME[,NAME]]
                                      [--threads T]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from typing import Any, Iterator

from . import workloads as W
from .run_targets import TINY, OtherLoad, machine


@contextlib.contextmanager
def unpolled() -> Iterator[None]:
    """Code generated inside has no polls: scalar functions' loops as written, kernels'
    sequential loops plain `range` loops."""
    from accel_kernel.backends.cpu import codegen_body, python_code

    def plain_range(indent: str, var: str, start: str, end: str
                    ) -> tuple[list[str], str, list[str]]:
        return [f"{indent}for {var} in range({start}, {end}):"], indent + "    ", []

    saved = python_code.poll_loops, codegen_body.polled_range
    python_code.poll_loops = lambda lines, fresh: lines
    codegen_body.polled_range = plain_range
    try:
        yield
    finally:
        python_code.poll_loops, codegen_body.polled_range = saved


def compiled(workload: W.Workload, tiny: W.Inputs) -> Any:
    import accel_kernel as acc
    prog = acc.compile(workload.source, f"benchmarks/workloads.py:{workload.name}")
    prog.run(workload.entry, *tiny.args, target="cpu")        # generates and compiles
    return prog


def measure(workload: W.Workload, scale: float, repeat: int, budget: float,
            clock: Any = time.perf_counter) -> str:
    inputs, tiny = workload.make_inputs(scale), workload.make_inputs(TINY)
    polled = compiled(workload, tiny)
    with unpolled():
        plain = compiled(workload, tiny)
    runs = {"polled": polled, "plain": plain}
    outputs = {name: workload.canonical(prog.run(workload.entry, *inputs.args, target="cpu"))
               for name, prog in runs.items()}         # first calls: touch the memory
    agrees = W.check(outputs["polled"], outputs["plain"], workload.rtol, workload.atol)
    times: dict[str, list[float]] = {name: [] for name in runs}
    began = time.perf_counter()
    for round_ in range(repeat):
        order = list(runs) if round_ % 2 == 0 else list(runs)[::-1]
        for name in order:
            start = clock()
            runs[name].run(workload.entry, *inputs.args, target="cpu")
            times[name].append(clock() - start)
        if time.perf_counter() - began > budget and round_ >= 2:
            break
    medians = {name: statistics.median(t) for name, t in times.items()}
    spread = {name: (min(t), max(t)) for name, t in times.items()}
    return (f"| {workload.name} | {inputs.size} | {medians['plain']:.4g} "
            f"({spread['plain'][0]:.3g}–{spread['plain'][1]:.3g}) | {medians['polled']:.4g} "
            f"({spread['polled'][0]:.3g}–{spread['polled'][1]:.3g}) | "
            f"{medians['polled'] / medians['plain']:.3f} | "
            f"{spread['polled'][0] / spread['plain'][0]:.3f} | {len(times['plain'])} | "
            f"{'yes' if agrees else 'NO'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--budget", type=float, default=30.0,
                        help="seconds of calls per workload before stopping early (3 rounds "
                             "at least)")
    parser.add_argument("--only", help="comma-separated workload names")
    parser.add_argument("--threads", type=int, help="numba threads (default: all cores)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall: time.perf_counter; cpu: time.process_time, the CPU time "
                             "of all the process's threads (waiting for a core is not "
                             "counted: steadier on a busy machine, with --threads 1)")
    args = parser.parse_args()
    if args.threads:
        from .run_targets import set_threads
        set_threads(args.threads)
    print(f"command: `python -m benchmarks.polling_cost --scale {args.scale} "
          f"--repeat {args.repeat}{f' --threads {args.threads}' if args.threads else ''}"
          f"{f' --clock {args.clock}' if args.clock != 'wall' else ''}"
          f"{f' --only {args.only}' if args.only else ''}`")
    print(f"machine: {machine()}; load average before: {os.getloadavg()[0]:.2f}")
    others = OtherLoad()
    print("| workload | size | without polls s, median (min–max) | with polls s, median "
          "(min–max) | with / without, medians | with / without, minima | calls each | "
          "agree |")
    print("|---|---|---:|---:|---:|---:|---:|:-:|")
    for workload in W.select(args.only):
        clock = time.process_time if args.clock == "cpu" else time.perf_counter
        print(measure(workload, args.scale, args.repeat, args.budget, clock), flush=True)
    print(f"other processes used {others.cores():.2f} cores on average during the run")


if __name__ == "__main__":
    main()
