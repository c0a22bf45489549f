"""Time of all compilation stages of a 50-line program (issue "Stages you can see").

    python -m benchmarks.stages [--repeat N]

Measures, for benchmarks/programs/fifty_lines.accel: parsing and type checking plus every pass
of the pipeline (`Session.program_stages`), then the same plus the text, JSON and DOT views of
every stage, then SVG rendering of the last stage's graph with `dot`. Median of N runs after
one warm-up run, in a fresh session each time (as `accel stages` does).
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

PROGRAM = Path(__file__).parent / "programs" / "fifty_lines.accel"


def _median_ms(action, repeat: int) -> float:
    action()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def _cpu() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown cpu"


def _render_uncached(dot: str) -> None:
    from accel_kernel.viz import render
    render._render.cache_clear()
    render.render_svg(dot)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    from accel_kernel.session import Session
    from accel_kernel.viz.graphs import stage_dot
    from accel_kernel.viz.json_view import stage_json
    from accel_kernel.viz.text import stage_text

    text = PROGRAM.read_text()
    lines = len(text.splitlines())

    def pipeline():
        return Session().program_stages(text, PROGRAM.name)

    session = Session()    # the prelude is loaded once per session: time it apart
    def pipeline_only():
        return session.program_stages(text, PROGRAM.name)

    def with_views():
        for stage in pipeline_only():
            stage_text(stage), stage_json(stage), stage_dot(stage)

    stages = pipeline_only()
    last_dot = stage_dot(stages[-1])
    rows = [
        ("new session (prelude parsed and checked)", _median_ms(Session, args.repeat)),
        ("all stages (parse … regularity)", _median_ms(pipeline_only, args.repeat)),
        ("all stages + text, JSON and DOT views of each", _median_ms(with_views, args.repeat)),
        ("SVG of the last stage with `dot` (uncached)", _median_ms(lambda: _render_uncached(last_dot), 5)),
    ]
    per_stage = {s.name: s.seconds * 1000 for s in stages}
    print(f"program: {PROGRAM.relative_to(PROGRAM.parent.parent.parent)} ({lines} lines), "
          f"median of {args.repeat} runs")
    print(f"machine: {platform.machine()}, {_cpu()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
    print()
    print("| what | median ms |")
    print("|---|---:|")
    for name, ms in rows:
        print(f"| {name} | {ms:.1f} |")
    print()
    print("| pass | ms (last run) |")
    print("|---|---:|")
    for name, ms in per_stage.items():
        if name not in ("parse", "typed"):
            print(f"| {name} | {ms:.1f} |")


if __name__ == "__main__":
    main()
