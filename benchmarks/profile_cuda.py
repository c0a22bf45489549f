"""Where the time of one workload on `cuda` goes, on a real GPU.

    python -m benchmarks.profile_cuda NAME [--scale S]

Launches are made synchronous (CUDA_LAUNCH_BLOCKING=1, set before numba is imported) and a
launch's event comes after its kernel ran, so the time up to a launch event is its kernel's
(with the host work just before it), and the time after any other event (a transfer, an
allocation) is that event's. The run after a warm-up is recorded and
those times are summed by event (a launch by its kernel's name): the top of that table,
then the host functions that took the most time themselves (cProfile).
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from collections import defaultdict

os.environ["CUDA_LAUNCH_BLOCKING"] = "1"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)
    import accel_kernel as acc
    from accel_kernel.runtime.deep import run_deep

    from . import run_cuda
    (workload,) = run_cuda.workloads(args.name)
    inputs = workload.make_inputs(args.scale)
    prog = acc.compile(workload.source, f"benchmarks:{workload.name}")
    prog.run(workload.entry, *workload.make_inputs(run_cuda.TINY).args, target="cuda")
    prog.run(workload.entry, *inputs.args, target="cuda")
    events = prog._session.events                 # the session's event stream
    profile = cProfile.Profile()

    def profiled() -> None:                       # on the thread that runs programs
        profile.enable()
        try:
            prog.run(workload.entry, *inputs.args, target="cuda")
        finally:
            profile.disable()
    with events.recording() as log:
        started = time.perf_counter()
        run_deep(profiled)
        finished = time.perf_counter()
    # a launch event comes after its kernel ran (synchronously): the time up to a launch is
    # that kernel's; the time after any other event is that event's (a copy, an allocation)
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    stamps = [started] + [e.time for e in log] + [finished]
    first = stamps[1]
    for index, (begin, end) in enumerate(zip(stamps, stamps[1:])):
        after = log[index] if index < len(log) else None
        before = log[index - 1] if index else None
        event = after if after is not None and after.kind == "launch" else before
        key = ("host (before the first event)" if event is None else
               f"{event.kind} {getattr(event, 'name', '')}{getattr(event, 'direction', '')}"
               f"{' ' + event.what if getattr(event, 'what', 'value') != 'value' else ''}")
        totals[key][0] += 1
        totals[key][1] += end - begin
    print(f"{workload.name} ({inputs.size}): {1e3 * (finished - started):.1f} ms, "
          f"{len(log)} events, {1e3 * (first - started):.1f} ms before the first")
    print(f"{'event':60} {'count':>6} {'ms':>9}")
    for key, (count, seconds) in sorted(totals.items(), key=lambda kv: -kv[1][1])[:args.top]:
        print(f"{key[:60]:60} {count:6d} {1e3 * seconds:9.2f}")
    print()
    pstats.Stats(profile, stream=sys.stdout).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
