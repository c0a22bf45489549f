"""The live dashboard of a cell that runs sequences (`%dashboard`, or shown by the kernel when
a sequence has run for about a second): what the runtime's events (`runtime/events.py`) say,
drawn while the cell runs, and a Cancel button.

Three layers:

- a pure model: `DashboardState` (frozen) and `fold(state, event) -> state` over the event
  records (`SeqBegin`, `Step`, `SeqEnd`, `Launch`, `Alloc`/`Free`/`Evict`/`Reupload`,
  `Compile`). It keeps the per-step series (at most `MAX_POINTS` points: past that every
  other point is dropped and later steps are sampled more sparsely), the recent launches,
  and the totals.
- drawings and text: the plots and the launch timeline (`viz/plots.py`), `summary_html` (the
  static copy: the plots and the totals) and `summary_text`.
- `Dashboard`: the widget tree (ipywidgets imported only when it is built), the subscriber
  `receive` (it only puts the event into a queue: the executing thread never blocks and never
  touches a widget), and ONE updater thread that every `INTERVAL` seconds drains the queue,
  folds, and sets the widgets' traits; `stop()` makes it do one last update and end.
  `bundle()` is what the kernel displays: the widget view, a `text/html` static copy and
  `text/plain` (the scheme of `viz/widgets.py`); at the end of the cell the kernel sends
  `bundle()` again as `update_display_data`, so the saved notebook holds the final summary.
  The Cancel button calls the `cancel` function it was given (the session's
  `CancelToken.set`): the executor stops at its next step.

On a cluster (`runtime/cluster.py`) a sequence's steps come from several workers, each with
its own scheduler, in the order they finish (a later chunk may end first). The model then
keeps one `WorkerLane` per worker (its steps, elements, last chunk and next size, its first
task's compile seconds), counts the elements done over all of them, and keeps the recent
chunks (`ChunkMark`); the plots draw one line per worker over time, coloured by worker
(`worker_colour`) with a legend, and `workers_html` adds the table of workers and their lanes
of chunks (`worker_timeline`). A sequence run in this process looks as it did before.

Every widget carries a CSS class (`CSS_CLASSES`), so a browser test can find it.
"""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable

from ..runtime import events as ev
from ..runtime.memory import format_bytes
from .plots import (MARGIN_BOTTOM, MARGIN_RIGHT, MARGIN_TOP, PALETTE, PLOT_WIDTH, THIS_PROCESS,
                    LaunchMark, Series, count, escape, launch_timeline, line_plot,
                    seconds_text, series_plot, short, svg)
from .widgets import WIDGET_MIME

MAX_POINTS = 400          # steps kept for the plots (the totals count every step)
MAX_LAUNCHES = 300        # the most recent launches kept for the timeline
INTERVAL = 0.075          # seconds between two updates of the widgets (about 13 Hz)

# the CSS class of each part of the widget (docs/kernel.md lists them)
CSS_CLASSES = {
    "box": "accel-dashboard",
    "status": "accel-dash-status",
    "progress": "accel-dash-progress",
    "elements": "accel-dash-elements",
    "steps": "accel-dash-steps",
    "chunk": "accel-dash-chunk",
    "time": "accel-dash-time",
    "utilisation": "accel-dash-utilisation",
    "memory": "accel-dash-memory",
    "evictions": "accel-dash-evictions",
    "launches": "accel-dash-launches",
    "workers": "accel-dash-workers",
    "cancel": "accel-dash-cancel",
}


# ---------------------------------------------------------------- the model

@dataclass(frozen=True)
class StepPoint:
    """One step as plotted: `time` in seconds since the first event of the cell."""
    sequence: int
    step: int
    time: float
    elements: int
    time_per_element: float
    utilisation: float
    nbytes: int
    worker: str = ""                     # the cluster worker that ran it ("": this process)


@dataclass(frozen=True)
class WorkerLane:
    """One cluster worker's part of the current sequence. Each worker has its own scheduler,
    so `chunk`, `next_size`, `rule`, `time_per_element` and `utilisation` are its own;
    `compile_seconds` is numba's time in its first task (None: no `Compile` event yet)."""
    worker: str
    steps: int = 0
    elements: int = 0
    seconds: float = 0.0
    wall: float = 0.0
    chunk: int = 0
    next_size: int = 0
    rule: str = ""
    time_per_element: float = 0.0
    utilisation: float = 0.0
    compile_seconds: float | None = None


@dataclass(frozen=True)
class ChunkMark:
    """One chunk a worker ran, on the workers' timeline: it ended at `time` (seconds since the
    first event) after `wall` seconds, `compiled` of them in numba (a worker's first task)."""
    worker: str
    time: float
    wall: float
    start: int
    elements: int
    compiled: float = 0.0


@dataclass(frozen=True)
class DashboardState:
    """What the events of one cell said so far. Counts and sums cover every event; `points`
    and `launches` are bounded samples for drawing."""
    budget: int | None = None            # the session's memory budget when the cell began
    origin: float | None = None          # `time` of the first event
    last_time: float = 0.0               # seconds since origin of the latest event
    # the current (or last) sequence
    sequence: int | None = None
    running: bool = False
    began: float | None = None           # `time` of its SeqBegin (perf_counter seconds)
    length: int | None = None
    policy: str = ""
    ceiling: int | None = None
    target: str = ""
    line: int = 0
    done: int = 0                        # its elements done
    steps: int = 0                       # its steps
    chunk: int = 0                       # its last step's elements
    next_size: int = 0
    rule: str = ""
    time_per_element: float = 0.0
    utilisation: float = 0.0
    chunk_bytes: int = 0
    outcome: str = ""                    # of the last SeqEnd: done, cancelled, error
    cancel_clicked: int | None = None    # the steps done when Cancel was clicked
    lanes: tuple[WorkerLane, ...] = ()   # its cluster workers (SeqBegin's, then as seen)
    # every sequence of the cell
    sequences: int = 0
    total_elements: int = 0
    total_steps: int = 0
    total_seconds: float = 0.0           # computation
    total_wall: float = 0.0
    peak_chunk_bytes: int = 0
    points: tuple[StepPoint, ...] = ()
    stride: int = 1                      # the n-th step is kept when n % stride == 0
    workers: tuple[str, ...] = ()        # every cluster worker seen, in first-seen order
    chunks: tuple[ChunkMark, ...] = ()   # the workers' most recent chunks
    # runtime
    launch_count: int = 0
    launch_seconds: float = 0.0
    launches: tuple[LaunchMark, ...] = ()
    devices: tuple[tuple[str, int], ...] = ()       # device -> bytes in use, in first-seen order
    device_peak: int = 0
    evictions: int = 0
    evicted_bytes: int = 0

    @property
    def device_in_use(self) -> int:
        return sum(in_use for _, in_use in self.devices)

    def running_for(self, now: float) -> float:
        """Seconds the running sequence has run at `now` (perf_counter); 0 when none runs."""
        return now - self.began if self.running and self.began is not None else 0.0


def fold(state: DashboardState, event: ev.Event) -> DashboardState:
    """The state after one more event (unknown kinds only move the clock)."""
    origin = state.origin if state.origin is not None else event.time
    state = replace(state, origin=origin, last_time=max(state.last_time, event.time - origin))
    rule = _RULES.get(event.kind)
    return rule(state, event) if rule is not None else state


def fold_all(state: DashboardState, events: Iterable[ev.Event]) -> DashboardState:
    for event in events:
        state = fold(state, event)
    return state


def _seq_begin(state: DashboardState, event: ev.SeqBegin) -> DashboardState:
    return replace(state, sequence=event.sequence, running=True, began=event.time,
                   length=event.length, policy=event.policy, ceiling=event.ceiling,
                   target=event.target, line=event.line, done=0, steps=0, chunk=0,
                   next_size=1, rule="", time_per_element=0.0, utilisation=0.0,
                   chunk_bytes=0, outcome="", sequences=state.sequences + 1,
                   lanes=tuple(WorkerLane(name) for name in event.workers),
                   workers=_seen(state.workers, *event.workers))


def _step(state: DashboardState, event: ev.Step) -> DashboardState:
    total_steps = state.total_steps + 1
    points, stride = state.points, state.stride
    if total_steps % stride == 0:
        point = StepPoint(event.sequence, event.step, event.time - (state.origin or 0.0),
                          event.elements, event.time_per_element, event.utilisation,
                          event.nbytes, event.worker)
        points = points + (point,)
        if len(points) > MAX_POINTS:          # keep every other one, sample half as often
            points, stride = points[1::2], stride * 2
    if event.worker:      # workers' chunks finish in any order: count them, not their ends
        state = _worker_step(state, event)
        done = state.done + event.elements
    else:
        done = event.start + event.elements
    return replace(state, sequence=event.sequence, done=done,
                   steps=state.steps + 1, chunk=event.elements, next_size=event.next_size,
                   rule=event.rule, time_per_element=event.time_per_element,
                   utilisation=event.utilisation, chunk_bytes=event.nbytes,
                   total_elements=state.total_elements + event.elements,
                   total_steps=total_steps,
                   total_seconds=state.total_seconds + event.seconds,
                   total_wall=state.total_wall + event.wall,
                   peak_chunk_bytes=max(state.peak_chunk_bytes, event.nbytes),
                   points=points, stride=stride)


def _worker_step(state: DashboardState, event: ev.Step) -> DashboardState:
    def update(lane: WorkerLane) -> WorkerLane:
        return replace(lane, steps=lane.steps + 1, elements=lane.elements + event.elements,
                       seconds=lane.seconds + event.seconds, wall=lane.wall + event.wall,
                       chunk=event.elements, next_size=event.next_size, rule=event.rule,
                       time_per_element=event.time_per_element,
                       utilisation=event.utilisation)
    first = next((lane.compile_seconds or 0.0 for lane in state.lanes
                  if lane.worker == event.worker and lane.steps == 0), 0.0)
    mark = ChunkMark(event.worker, event.time - (state.origin or 0.0), event.wall,
                     event.start, event.elements, min(first, event.wall))
    return replace(state, lanes=_update_lane(state.lanes, event.worker, update),
                   workers=_seen(state.workers, event.worker),
                   chunks=(state.chunks + (mark,))[-MAX_LAUNCHES:])


def _compile(state: DashboardState, event: ev.Compile) -> DashboardState:
    if event.sequence != state.sequence:
        return state
    return replace(state, workers=_seen(state.workers, event.worker),
                   lanes=_update_lane(state.lanes, event.worker,
                                      lambda lane: replace(lane,
                                                           compile_seconds=event.seconds)))


def _update_lane(lanes: tuple[WorkerLane, ...], worker: str,
                 update: Callable[[WorkerLane], WorkerLane]) -> tuple[WorkerLane, ...]:
    """The lanes with `worker`'s updated (a worker not named at SeqBegin joins the end)."""
    if all(lane.worker != worker for lane in lanes):
        lanes = lanes + (WorkerLane(worker),)
    return tuple(update(lane) if lane.worker == worker else lane for lane in lanes)


def _seen(workers: tuple[str, ...], *names: str) -> tuple[str, ...]:
    return workers + tuple(dict.fromkeys(n for n in names if n not in workers))


def _seq_end(state: DashboardState, event: ev.SeqEnd) -> DashboardState:
    return replace(state, sequence=event.sequence, running=False, outcome=event.outcome,
                   done=max(state.done, event.elements) if event.outcome == "done"
                   else state.done)


def _launch(state: DashboardState, event: ev.Launch) -> DashboardState:
    start = event.time - event.seconds - (state.origin or 0.0)
    mark = LaunchMark(start, event.seconds, event.name, event.device, event.elements)
    return replace(state, launch_count=state.launch_count + 1,
                   launch_seconds=state.launch_seconds + event.seconds,
                   launches=(state.launches + (mark,))[-MAX_LAUNCHES:])


def _in_use(state: DashboardState, event: Any) -> DashboardState:
    devices = dict(state.devices)
    devices[event.device] = event.in_use
    new = replace(state, devices=tuple(devices.items()))
    return replace(new, device_peak=max(state.device_peak, new.device_in_use))


def _evict(state: DashboardState, event: ev.Evict) -> DashboardState:
    state = _in_use(state, event)
    return replace(state, evictions=state.evictions + 1,
                   evicted_bytes=state.evicted_bytes + event.nbytes)


_RULES: dict[str, Callable[[DashboardState, Any], DashboardState]] = {
    ev.SeqBegin.kind: _seq_begin, ev.Step.kind: _step, ev.SeqEnd.kind: _seq_end,
    ev.Launch.kind: _launch, ev.Alloc.kind: _in_use, ev.Free.kind: _in_use,
    ev.Reupload.kind: _in_use, ev.Evict.kind: _evict, ev.Compile.kind: _compile,
}


# ---------------------------------------------------------------- words and numbers

def status_text(state: DashboardState) -> str:
    """One line: which sequence, how far, and how it ended."""
    if state.sequence is None:
        return "no sequence has run in this cell"
    where = ", ".join(filter(None, [state.target, state.policy]))
    head = f"sequence {state.sequence}" + (f" ({where})" if where else "")
    if state.line:
        head += f" at line {state.line}"
    clicked = (f" (Cancel clicked after step {state.cancel_clicked})"
               if state.cancel_clicked is not None else "")
    on = f" on {len(state.lanes)} workers" if state.lanes else ""
    if state.running and state.lanes:
        return f"{head}: running{on}, step {state.steps}{clicked}"
    if state.running:
        return f"{head}: running, step {state.steps}, chunk {count(state.chunk)}{clicked}"
    ending = {"done": "done", "cancelled": "cancelled", "error": "stopped by an error"}
    return (f"{head}: {ending.get(state.outcome, state.outcome)} after {state.steps} steps"
            + on + clicked)


def elements_text(state: DashboardState) -> str:
    of = f" of {count(state.length)}" if state.length is not None else ""
    return f"{count(state.done)}{of} elements"


def progress_fraction(state: DashboardState) -> float | None:
    """Elements done of the total, 0..1; None when the total is unknown."""
    if state.length is None:
        return None
    if state.length == 0:
        return 1.0 if state.sequence is not None and not state.running else 0.0
    return min(1.0, state.done / state.length)


def memory_text(state: DashboardState) -> str:
    parts = [f"host: chunk {format_bytes(state.chunk_bytes)} "
             f"(peak {format_bytes(state.peak_chunk_bytes)})"
             + (f" of {format_bytes(state.ceiling)} a chunk may hold"
                if state.ceiling is not None else "")]
    if state.devices:
        budget = f" of {format_bytes(state.budget)}" if state.budget is not None else ""
        parts.append(f"device: {format_bytes(state.device_in_use)}{budget} in use "
                     f"(peak {format_bytes(state.device_peak)})")
    return "; ".join(parts)


def evictions_text(state: DashboardState) -> str:
    if not state.evictions:
        return "evictions: 0"
    return f"evictions: {state.evictions} ({format_bytes(state.evicted_bytes)})"


def launches_text(state: DashboardState) -> str:
    return (f"launches: {count(state.launch_count)} "
            f"({seconds_text(state.launch_seconds)} in kernels)")


def totals(state: DashboardState) -> list[tuple[str, str]]:
    """The totals of the cell as (label, value) rows."""
    per_element = state.total_seconds / state.total_elements if state.total_elements else 0.0
    utilisation = state.total_seconds / state.total_wall if state.total_wall else 0.0
    rows = [("sequences", str(state.sequences)),
            ("elements", count(state.total_elements)),
            ("steps", count(state.total_steps)),
            ("last chunk", count(state.chunk)),
            ("computation", seconds_text(state.total_seconds)),
            ("wall", seconds_text(state.total_wall)),
            ("time per element", seconds_text(per_element)),
            ("utilisation", f"{utilisation:.0%}"),
            ("peak chunk bytes", format_bytes(state.peak_chunk_bytes)),
            ("kernel launches", count(state.launch_count))]
    if state.devices:
        rows.append(("peak device memory", format_bytes(state.device_peak)))
    if state.evictions:
        rows.append(("evictions", f"{state.evictions} ({format_bytes(state.evicted_bytes)})"))
    if state.lanes:
        rows.append(("workers", str(len(state.lanes))))
    return rows


WORKER_HEADER = ("worker", "steps", "elements", "chunk", "next size", "time / element",
                 "utilisation", "compile")


def worker_rows(state: DashboardState) -> list[tuple[str, ...]]:
    """One row of text per worker of the current sequence (`WORKER_HEADER`); `compile` is
    numba's seconds in the worker's first task, `cached` when it compiled nothing."""
    def compiled(seconds: float | None) -> str:
        return "" if seconds is None else seconds_text(seconds) if seconds > 0 else "cached"
    return [(lane.worker, count(lane.steps), count(lane.elements), count(lane.chunk),
             count(lane.next_size), seconds_text(lane.time_per_element),
             f"{lane.utilisation:.0%}", compiled(lane.compile_seconds))
            for lane in state.lanes]


def summary_text(state: DashboardState) -> str:
    lines = [status_text(state)]
    if state.sequence is not None:
        lines += [f"  {label}: {value}" for label, value in totals(state)]
    for row in worker_rows(state):
        lines.append(f"  worker {row[0]}: " + ", ".join(
            f"{name} {value}" for name, value in zip(WORKER_HEADER[1:], row[1:]) if value))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- SVG

def worker_colour(state: DashboardState, worker: str) -> str:
    """A worker's colour, the same in every plot of the cell (orange: this process)."""
    if worker not in state.workers:
        return THIS_PROCESS
    return PALETTE[state.workers.index(worker) % len(PALETTE)]


def has_workers(state: DashboardState) -> bool:
    """Whether any plotted step ran on a cluster worker (then the plots draw a line each)."""
    return bool(state.workers) and any(p.worker for p in state.points)


def _lines(state: DashboardState, value: Callable[[StepPoint], float]) -> list[Series]:
    """The points' `value` over time, one line per worker (steps run in this process, in a
    cell that also used a cluster, are the line "this process")."""
    names = [w for w in ("",) + state.workers if any(p.worker == w for p in state.points)]
    return [Series(name or "this process", [p.time for p in state.points if p.worker == name],
                   [value(p) for p in state.points if p.worker == name],
                   worker_colour(state, name)) for name in names]


def chunk_plot(state: DashboardState) -> str:
    if has_workers(state):
        return series_plot(_lines(state, lambda p: p.elements),
                           "chunk size (elements) per worker over time (s)", log=True,
                           label=lambda v: count(int(v)), css_class="accel-plot-chunk")
    return line_plot([p.step for p in state.points] if _one_sequence(state)
                     else range(len(state.points)),
                     [p.elements for p in state.points], "chunk size (elements) by step",
                     log=True, label=lambda v: count(int(v)), css_class="accel-plot-chunk")


def time_plot(state: DashboardState) -> str:
    if has_workers(state):
        return series_plot(_lines(state, lambda p: p.time_per_element),
                           "time per element per worker over time (s)", log=True,
                           label=seconds_text, css_class="accel-plot-time")
    return line_plot([p.time for p in state.points], [p.time_per_element for p in state.points],
                     "time per element over time (s)", log=True, label=seconds_text,
                     css_class="accel-plot-time")


def utilisation_plot(state: DashboardState) -> str:
    if has_workers(state):
        return series_plot(_lines(state, lambda p: p.utilisation),
                           "utilisation per worker over time (s)", label=lambda v: f"{v:.0%}",
                           css_class="accel-plot-utilisation")
    return line_plot([p.time for p in state.points], [p.utilisation for p in state.points],
                     "utilisation over time (s)", label=lambda v: f"{v:.0%}",
                     css_class="accel-plot-utilisation")


def _one_sequence(state: DashboardState) -> bool:
    return len({p.sequence for p in state.points}) <= 1


def worker_timeline(state: DashboardState, *, width: int = 2 * PLOT_WIDTH) -> str:
    """The workers' recent chunks as bars on a time axis, one lane per worker (a bar from
    the chunk's start to its end; its elements on hover)."""
    chunks = state.chunks
    if not chunks:
        return line_plot([], [], "chunks per worker", width=width, height=40,
                         css_class="accel-plot-workers")
    names = [w for w in state.workers if any(c.worker == w for c in chunks)]
    lane_height = 16
    left, right, top = 120, width - MARGIN_RIGHT, MARGIN_TOP
    height = top + lane_height * len(names) + MARGIN_BOTTOM
    start = min(c.time - c.wall for c in chunks)
    end = max(c.time for c in chunks)
    span = (end - start) or 1e-9
    parts = [f'<text x="4" y="12" font-weight="bold">chunks per worker (the last '
             f'{len(chunks)}, {escape(seconds_text(end - start))})</text>']
    for row, name in enumerate(names):
        parts.append(f'<text x="{left - 4}" y="{top + row * lane_height + 11}" '
                     f'text-anchor="end" fill="{worker_colour(state, name)}">'
                     f'<title>{escape(name)}</title>{escape(short(name, 20))}</text>')
    for chunk in chunks:
        row = names.index(chunk.worker)
        x = left + (chunk.time - chunk.wall - start) / span * (right - left)
        w = max(1.0, chunk.wall / span * (right - left))
        y = top + row * lane_height + 2
        compiled = (f", {seconds_text(chunk.compiled)} of it compiling"
                    if chunk.compiled else "")
        parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" '
                     f'height="{lane_height - 4}" fill="{worker_colour(state, chunk.worker)}" '
                     f'stroke="white" stroke-width="0.5"><title>{escape(chunk.worker)}: '
                     f'{count(chunk.elements)} elements from {count(chunk.start)}, '
                     f'{escape(seconds_text(chunk.wall) + compiled)}</title></rect>')
        if chunk.compiled:                # the compile is the task's start: drawn paler
            parts.append(f'<rect class="accel-compile" x="{x:.1f}" y="{y}" '
                         f'width="{chunk.compiled / span * (right - left):.1f}" '
                         f'height="{lane_height - 4}" fill="white" fill-opacity="0.5"/>')
    parts.append(f'<text x="{right}" y="{height - 3}" text-anchor="end" fill="#666">'
                 f'{len(names)} workers</text>')
    return svg(width, height, "".join(parts), "accel-plot-workers")


_WORKERS_CSS = ("<style>.accel-workers table{border-collapse:collapse;margin:4px 0}"
                ".accel-workers td,.accel-workers th{font-family:monospace;font-size:12px;"
                "padding:1px 8px;text-align:right}</style>")


def workers_html(state: DashboardState) -> str:
    """The current sequence's workers as a table (a colour swatch each) and their lanes of
    chunks; empty when it ran in this process."""
    if not state.lanes:
        return ""
    head = "".join(f"<th>{escape(h)}</th>" for h in WORKER_HEADER)
    rows = "".join(
        f'<tr><td><span style="color:{worker_colour(state, row[0])}">■</span> '
        f"{escape(row[0])}</td>" + "".join(f"<td>{escape(c)}</td>" for c in row[1:]) + "</tr>"
        for row in worker_rows(state))
    return (f'{_WORKERS_CSS}<div class="accel-workers"><table><tr>{head}</tr>{rows}</table>'
            f"{worker_timeline(state) if state.chunks else ''}</div>")


# ---------------------------------------------------------------- the static copy

_CSS = ("<style>.accel-dashboard-summary table{border-collapse:collapse;margin:4px 0}"
        ".accel-dashboard-summary td{font-family:monospace;font-size:12px;padding:1px 8px;"
        "text-align:left}.accel-dashboard-summary svg{margin:2px 8px 2px 0}</style>")


def summary_html(state: DashboardState) -> str:
    """The static copy: the status line, the totals, the plots (chunk size, time per element,
    utilisation; a line per worker on a cluster), the workers and the launch timeline. What
    a saved notebook and nbconvert show."""
    if state.sequence is None:
        return (f'{_CSS}<div class="accel-dashboard-summary"><h4>accel dashboard</h4>'
                f"<p>{escape(status_text(state))}"
                + (f"; {escape(launches_text(state))}" if state.launch_count else "")
                + "</p></div>")
    rows = "".join(f"<tr><td>{escape(label)}</td><td>{escape(value)}</td></tr>"
                   for label, value in totals(state))
    return (f'{_CSS}<div class="accel-dashboard-summary"><h4>accel dashboard</h4>'
            f"<p>{escape(status_text(state))}</p><table>{rows}</table>"
            f"<div>{chunk_plot(state)}{time_plot(state)}{utilisation_plot(state)}</div>"
            + workers_html(state)
            + (f"<div>{launch_timeline(state.launches)}</div>" if state.launches else "")
            + "</div>")


def summary_bundle(state: DashboardState) -> dict[str, str]:
    return {"text/html": summary_html(state), "text/plain": summary_text(state)}


# ---------------------------------------------------------------- the widget

@dataclass
class _Widgets:
    """The parts of the widget tree that change."""
    box: Any
    status: Any
    progress: Any
    elements: Any
    steps: Any
    chunk: Any
    time: Any
    utilisation: Any
    memory: Any
    evictions: Any
    launches: Any
    workers: Any
    cancel: Any


def _build_widgets(on_cancel: Callable[[Any], None]) -> _Widgets:
    """The widget tree, each part with its CSS class from the start (in its comm_open)."""
    import ipywidgets as widgets

    def part(name: str, kind: Any, **traits: Any) -> Any:
        return kind(_dom_classes=(CSS_CLASSES[name],), **traits)

    def label(name: str) -> Any:          # a Label set apart from its left neighbour
        return part(name, widgets.Label, layout=widgets.Layout(margin="0 0 0 1.5em"))
    parts = _Widgets(
        box=None,
        status=part("status", widgets.HTML),
        progress=part("progress", widgets.FloatProgress, value=0.0, min=0.0, max=1.0,
                      description="progress", layout=widgets.Layout(width="50%")),
        elements=label("elements"),
        steps=label("steps"),
        chunk=part("chunk", widgets.HTML),
        time=part("time", widgets.HTML),
        utilisation=part("utilisation", widgets.HTML),
        memory=label("memory"),
        evictions=label("evictions"),
        launches=part("launches", widgets.HTML),
        workers=part("workers", widgets.HTML),
        cancel=part("cancel", widgets.Button, description="Cancel", button_style="danger",
                    icon="stop", tooltip="stop the sequence at its next step; the cell then "
                                         "changes no global"))
    parts.cancel.on_click(on_cancel)
    parts.box = part("box", widgets.VBox, children=[
        parts.status,
        widgets.HBox([parts.progress, parts.elements, parts.steps]),
        widgets.HBox([parts.chunk, parts.time, parts.utilisation]),
        parts.workers,
        widgets.HBox([parts.memory, parts.evictions]),
        parts.launches,
        parts.cancel])
    return parts


class Dashboard:
    """One cell's dashboard. `receive` is the event subscriber (any thread, never blocks);
    `poll()` folds what arrived; `bundle()` builds the widgets (call it from the thread that
    displays them) and starts the updater thread; `stop()` ends it after a final update."""

    def __init__(self, cancel: Callable[[], None], budget: int | None = None,
                 interval: float = INTERVAL) -> None:
        self._queue: queue.SimpleQueue[ev.Event] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._state = DashboardState(budget=budget)
        self._cancel = cancel
        self._interval = interval
        self._widgets: _Widgets | None = None
        self._shown: dict[str, Any] = {}     # what the widgets show now
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.cancel_requested = False

    # the producer's side: the executing thread, never blocked
    def receive(self, event: ev.Event) -> None:
        self._queue.put(event)

    def set_budget(self, budget: int | None) -> None:
        """The session's memory budget (device memory is drawn against it)."""
        with self._lock:
            self._state = replace(self._state, budget=budget)

    @property
    def state(self) -> DashboardState:
        return self._state

    def poll(self) -> DashboardState:
        """Fold every event that arrived; the new state."""
        with self._lock:
            state = self._state
            while True:
                try:
                    event = self._queue.get_nowait()
                except queue.Empty:
                    break
                state = fold(state, event)
            self._state = state
            return state

    def bundle(self) -> dict[str, Any]:
        """The mime bundle to display: the widget view (built, and its updater started, on the
        first call), the static copy in `text/html` and `text/plain`."""
        state = self.poll()
        if self._widgets is None:
            self._widgets = _build_widgets(self._on_cancel)
            self._apply(state)
            self._thread = threading.Thread(target=self._run, name="accel-dashboard",
                                            daemon=True)
            self._thread.start()
        data = dict(self._widgets.box._repr_mimebundle_())
        data.update(summary_bundle(state))
        return data

    def stop(self) -> None:
        """End the updater thread after one last update (no-op when never shown)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()

    # the updater thread
    def _run(self) -> None:
        while not self._stopping.wait(self._interval):
            self._apply(self.poll())
        self._apply(self.poll(), final=True)

    def _on_cancel(self, _button: Any) -> None:
        """The click (handled on the kernel's main thread): stop the sequence at its next
        step, and note how many steps it had done (the summary says it, so a reader sees
        that it stopped within one step)."""
        if self._stopping.is_set():       # a dashboard of an earlier cell: its widget
            return                        # lives on, its button must not stop a later cell
        self.cancel_requested = True
        self._cancel()
        state = self.poll()
        with self._lock:
            if self._state.cancel_clicked is None:
                self._state = replace(self._state, cancel_clicked=state.steps)

    def _apply(self, state: DashboardState, final: bool = False) -> None:
        """Set the traits whose value changed (an unchanged trait sends nothing)."""
        parts = self._widgets
        assert parts is not None
        fraction = progress_fraction(state)
        values: dict[str, Any] = {
            "status": f"<b>accel dashboard</b>: {escape(status_text(state))}",
            "progress": fraction if fraction is not None else 0.0,
            "elements": elements_text(state),
            "steps": f"steps: {state.total_steps}",
            "memory": memory_text(state),
            "evictions": evictions_text(state),
        }
        plotted = (state.total_steps, state.launch_count,
                   sum(lane.compile_seconds is not None for lane in state.lanes))
        if self._shown.get("plotted") != plotted:
            values["plotted"] = plotted
            values["workers"] = workers_html(state)
            values["chunk"] = chunk_plot(state)
            values["time"] = time_plot(state)
            values["utilisation"] = utilisation_plot(state)
            values["launches"] = (f"{launch_timeline(state.launches)}"
                                  f"<div>{escape(launches_text(state))}</div>"
                                  if state.launch_count else "")
        changed = {k: v for k, v in values.items() if self._shown.get(k) != v}
        for name, value in changed.items():
            if name != "plotted":
                getattr(parts, name).value = value
        self._shown.update(changed)
        running = state.running and not final
        if parts.cancel.disabled != (not running or self.cancel_requested):
            parts.cancel.disabled = not running or self.cancel_requested
        label = "Cancelling…" if self.cancel_requested and running else "Cancel"
        if parts.cancel.description != label:
            parts.cancel.description = label
        style = "" if fraction is None and running else _bar_style(state, final)
        if parts.progress.bar_style != style:
            parts.progress.bar_style = style


def _bar_style(state: DashboardState, final: bool) -> str:
    if state.running and not final:
        return "info"
    return {"done": "success", "cancelled": "warning", "error": "danger"}.get(state.outcome, "")
