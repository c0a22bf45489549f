"""`%trace`: the scheduler's decisions of a sequence run, drawn after the fact from its
events (`runtime/events.py`): the dashboard's plots (chunk size, time per element,
utilisation) and a table of the steps with the rule that chose each next size. Pure: events
in, a mime bundle out.

On a cluster (`Step.worker` set) the steps come from several workers, each with its own
scheduler, listed in the order they finished: the table gets a `worker` column, the plots a
line per worker and a lane of chunks per worker, and two more tables follow: each worker's
first-task compile seconds (the `Compile` events) and its totals (steps, elements,
seconds)."""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Sequence

from ..runtime import events as ev
from ..runtime.memory import format_bytes
from .dashboard import (DashboardState, chunk_plot, fold_all, time_plot, utilisation_plot,
                        worker_timeline)
from .plots import seconds_text

SHOWN = 12            # the first steps listed; then the last few
LAST = 4


def step_rows(steps: Sequence[ev.Step], workers: bool = False) -> list[tuple[str, ...]]:
    """One row of text per step listed: the first `SHOWN`, a gap, the last `LAST`; with
    `workers`, the worker that ran it after the step's number."""
    def row(s: ev.Step) -> tuple[str, ...]:
        return ((str(s.step),) + ((s.worker,) if workers else ())
                + (f"{s.start:,}", f"{s.elements:,}", format_bytes(s.nbytes),
                   _per_element(s.seconds / s.elements), f"{s.seconds / s.wall:.0%}",
                   s.rule, f"{s.next_size:,}"))
    if len(steps) <= SHOWN + LAST:
        return [row(s) for s in steps]
    return ([row(s) for s in steps[:SHOWN]] + [("…",) * (8 + workers)]
            + [row(s) for s in steps[-LAST:]])


def _per_element(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


HEADER = ("step", "start", "elements", "bytes", "time / element", "utilisation", "rule",
          "next size")
WORKER_HEADER = ("step", "worker") + HEADER[1:]
COMPILE_HEADER = ("sequence", "worker", "compile")
TOTALS_HEADER = ("worker", "steps", "elements", "seconds", "wall", "time / element")


@dataclass(frozen=True)
class WorkerTotals:
    """One worker's steps over every sequence of the trace."""
    worker: str
    steps: int = 0
    elements: int = 0
    seconds: float = 0.0
    wall: float = 0.0


def worker_totals(steps: Sequence[ev.Step], order: Sequence[str] = ()) -> list[WorkerTotals]:
    """Each worker's totals, the workers in `order` (the `SeqBegin`s'), then any other in the
    order it first finished a step."""
    totals: dict[str, WorkerTotals] = {w: WorkerTotals(w) for w in order}
    for s in steps:
        t = totals.get(s.worker, WorkerTotals(s.worker))
        totals[s.worker] = WorkerTotals(s.worker, t.steps + 1, t.elements + s.elements,
                                        t.seconds + s.seconds, t.wall + s.wall)
    return [t for t in totals.values() if t.steps]


def totals_rows(steps: Sequence[ev.Step], order: Sequence[str] = ()) -> list[tuple[str, ...]]:
    return [(t.worker or "(this process)", f"{t.steps:,}", f"{t.elements:,}",
             seconds_text(t.seconds), seconds_text(t.wall),
             _per_element(t.seconds / t.elements if t.elements else 0.0))
            for t in worker_totals(steps, order)]


def compile_rows(compiles: Sequence[ev.Compile]) -> list[tuple[str, ...]]:
    return [(str(c.sequence), c.worker, seconds_text(c.seconds) if c.seconds > 0 else "cached")
            for c in compiles]


def _text_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[k]) for r in rows + [header]) for k in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                     for r in [header, *rows])


def _html_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    cells = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                    for r in rows)
    return f"<table><tr>{head}</tr>{cells}</table>"


def trace_bundle(events: Sequence[ev.Event]) -> dict[str, str]:
    steps = [e for e in events if isinstance(e, ev.Step)]
    compiles = [e for e in events if isinstance(e, ev.Compile)]
    state: DashboardState = fold_all(DashboardState(), events)
    on_workers = any(s.worker for s in steps)
    header = WORKER_HEADER if on_workers else HEADER
    rows = step_rows(steps, on_workers)
    runs = sum(isinstance(e, ev.SeqBegin) for e in events)
    workers = len({s.worker for s in steps if s.worker})
    title = (f"scheduler trace: {runs} sequence run{'s' if runs != 1 else ''}, {len(steps)} "
             f"steps, {state.total_elements:,} elements ({state.policy or 'adaptive'})"
             + (f" on {workers} worker{'s' if workers != 1 else ''}" if on_workers else ""))
    text = title + "\n" + _text_table(header, rows)
    page = ('<div class="accel-trace"><style>.accel-trace td,.accel-trace th{font-family:'
            'monospace;font-size:12px;padding:1px 8px;text-align:right}</style>'
            f"<h4>{html.escape(title)}</h4>"
            f"<div>{chunk_plot(state)}{time_plot(state)}{utilisation_plot(state)}</div>")
    if on_workers:
        page += f"<div>{worker_timeline(state)}</div>"
    page += _html_table(header, rows)
    if on_workers:
        totals = totals_rows(steps, state.workers)
        text += "\n\nper worker\n" + _text_table(TOTALS_HEADER, totals)
        page += "<h4>per worker</h4>" + _html_table(TOTALS_HEADER, totals)
    if compiles:
        compiled = compile_rows(compiles)
        text += ("\n\ncompiled on the workers (first task)\n"
                 + _text_table(COMPILE_HEADER, compiled))
        page += ("<h4>compiled on the workers (first task)</h4>"
                 + _html_table(COMPILE_HEADER, compiled))
    return {"text/html": page + "</div>", "text/plain": text}
