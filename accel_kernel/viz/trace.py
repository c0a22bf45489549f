"""`%trace`: the scheduler's decisions of a sequence run, drawn after the fact from its
events (`runtime/events.py`): the dashboard's plots (chunk size, time per element,
utilisation) and a table of the steps with the rule that chose each next size. Pure: events
in, a mime bundle out."""
from __future__ import annotations

import html
from typing import Sequence

from ..runtime import events as ev
from ..runtime.memory import format_bytes
from .dashboard import DashboardState, chunk_plot, fold_all, time_plot, utilisation_plot

SHOWN = 12            # the first steps listed; then the last few
LAST = 4


def step_rows(steps: Sequence[ev.Step]) -> list[tuple[str, ...]]:
    """One row of text per step listed: the first `SHOWN`, a gap, the last `LAST`."""
    def row(s: ev.Step) -> tuple[str, ...]:
        return (str(s.step), f"{s.start:,}", f"{s.elements:,}", format_bytes(s.nbytes),
                _per_element(s.seconds / s.elements), f"{s.seconds / s.wall:.0%}",
                s.rule, f"{s.next_size:,}")
    if len(steps) <= SHOWN + LAST:
        return [row(s) for s in steps]
    return ([row(s) for s in steps[:SHOWN]] + [("…",) * 8]
            + [row(s) for s in steps[-LAST:]])


def _per_element(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


HEADER = ("step", "start", "elements", "bytes", "time / element", "utilisation", "rule",
          "next size")


def trace_bundle(events: Sequence[ev.Event]) -> dict[str, str]:
    steps = [e for e in events if isinstance(e, ev.Step)]
    state: DashboardState = fold_all(DashboardState(), events)
    rows = step_rows(steps)
    widths = [max(len(r[k]) for r in rows + [HEADER]) for k in range(len(HEADER))]
    text = "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                     for r in [HEADER, *rows])
    runs = sum(isinstance(e, ev.SeqBegin) for e in events)
    title = (f"scheduler trace: {runs} sequence run{'s' if runs != 1 else ''}, {len(steps)} "
             f"steps, {state.total_elements:,} elements ({state.policy or 'adaptive'})")
    cells = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                    for r in rows)
    head = "".join(f"<th>{h}</th>" for h in HEADER)
    page = ('<div class="accel-trace"><style>.accel-trace td,.accel-trace th{font-family:'
            'monospace;font-size:12px;padding:1px 8px;text-align:right}</style>'
            f"<h4>{html.escape(title)}</h4>"
            f"<div>{chunk_plot(state)}{time_plot(state)}{utilisation_plot(state)}</div>"
            f"<table><tr>{head}</tr>{cells}</table></div>")
    return {"text/html": page, "text/plain": title + "\n" + text}
