"""The dashboard's pure model (`fold` over synthetic events), its SVG drawings and static copy,
and the widget's updater thread and Cancel button (no kernel: ipywidgets' comms are dummies)."""
from __future__ import annotations

import re
import threading
import xml.etree.ElementTree as ET

import pytest

from accel_kernel.runtime import events as ev
from accel_kernel.viz import dashboard as dash
from accel_kernel.viz.plots import PLOT_HEIGHT


def sequence_events(length: int = 1000, chunks=(1, 2, 4, 8, 985), sequence: int = 1,
                    t0: float = 100.0, outcome: str = "done") -> list[ev.Event]:
    """A sequence of `length` elements run in `chunks`, with a launch per step."""
    out: list[ev.Event] = [ev.SeqBegin(sequence, length, "adaptive", ceiling=1 << 20,
                                       target="cpu", line=2, time=t0)]
    start, t = 0, t0
    for step, size in enumerate(chunks, start=1):
        t += 0.01 * step
        out.append(ev.Launch("cpu", "map_body", (size,), (1,), elements=size, seconds=0.004,
                             time=t - 0.001))
        out.append(ev.Step(sequence, step, start, size, nbytes=8 * size, seconds=0.008,
                           wall=0.01, utilisation=0.5 + 0.1 * step,
                           time_per_element=0.008 / size, next_size=2 * size,
                           rule="grow", time=t))
        start += size
    out.append(ev.SeqEnd(sequence, start, len(chunks), t - t0, outcome=outcome, time=t + 0.001))
    return out


def parses(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return root


def test_fold_keeps_the_series_and_the_totals():
    events = sequence_events()
    state = dash.fold_all(dash.DashboardState(), events[:6])    # begin and two steps
    assert state.running and state.length == 1000 and state.target == "cpu"
    assert (state.done, state.steps, state.chunk, state.next_size) == (3, 2, 2, 4)
    assert dash.progress_fraction(state) == pytest.approx(0.003)
    assert "running, step 2, chunk 2" in dash.status_text(state)
    state = dash.fold_all(state, events[6:])
    assert not state.running and state.outcome == "done"
    assert state.done == 1000 and state.total_elements == 1000 and state.total_steps == 5
    assert [p.elements for p in state.points] == [1, 2, 4, 8, 985]
    assert state.total_seconds == pytest.approx(5 * 0.008)
    assert state.peak_chunk_bytes == 8 * 985
    assert state.launch_count == 5 and state.launch_seconds == pytest.approx(0.02)
    assert state.points[0].time == pytest.approx(0.01)        # seconds since the first event
    assert dash.progress_fraction(state) == 1.0
    assert dash.status_text(state) == "sequence 1 (cpu, adaptive) at line 2: done after 5 steps"
    rows = dict(dash.totals(state))
    assert rows["elements"] == "1,000" and rows["steps"] == "5" and rows["utilisation"] == "80%"


def test_two_sequences_and_a_cancelled_one():
    events = sequence_events() + sequence_events(None, (1, 2, 4), sequence=2, t0=101.0,
                                                 outcome="cancelled")
    state = dash.fold_all(dash.DashboardState(), events)
    assert state.sequences == 2 and state.sequence == 2 and state.outcome == "cancelled"
    assert state.done == 7 and state.steps == 3 and state.total_steps == 8
    assert state.total_elements == 1007
    assert dash.progress_fraction(state) is None
    assert dash.elements_text(state) == "7 elements"
    assert "cancelled after 3 steps" in dash.status_text(state)


def test_device_memory_and_evictions():
    events = [ev.Alloc("cuda:0", 1, 1000, 1000), ev.Alloc("cuda:0", 2, 500, 1500),
              ev.Evict("cuda:0", 1, 1000, 500), ev.Free("cuda:0", 2, 500, 0)]
    state = dash.fold_all(dash.DashboardState(budget=1024), events)
    assert state.devices == (("cuda:0", 0),) and state.device_peak == 1500
    assert (state.evictions, state.evicted_bytes) == (1, 1000)
    assert "device: 0 B of 1.0 KiB in use (peak 1.5 KiB)" in dash.memory_text(state)
    assert dash.evictions_text(state) == "evictions: 1 (1000 B)"


def test_the_series_stays_bounded_and_spans_every_step():
    steps = 5 * dash.MAX_POINTS
    events = sequence_events(steps, (1,) * steps)
    state = dash.fold_all(dash.DashboardState(), events)
    assert state.total_steps == steps and state.done == steps
    assert dash.MAX_POINTS // 2 <= len(state.points) <= dash.MAX_POINTS
    numbers = [p.step for p in state.points]
    assert numbers == sorted(numbers) and numbers[-1] > steps * 0.9
    assert len(state.launches) == dash.MAX_LAUNCHES and state.launch_count == steps


def test_plots_are_svg_that_parses():
    state = dash.fold_all(dash.DashboardState(), sequence_events())
    for svg in (dash.chunk_plot(state), dash.time_plot(state), dash.utilisation_plot(state),
                dash.launch_timeline(state.launches)):
        root = parses(svg)
        assert root.findall(".//{http://www.w3.org/2000/svg}polyline") or \
            root.findall(".//{http://www.w3.org/2000/svg}rect")
    chunk = parses(dash.chunk_plot(state))
    line = chunk.find(".//{http://www.w3.org/2000/svg}polyline")
    assert len(line.get("points").split()) == 5
    labels = [t.text for t in chunk.iter("{http://www.w3.org/2000/svg}text")]
    assert "985" in labels and "1" in labels and "5 points, log scale" in labels
    timeline = parses(dash.launch_timeline(state.launches))
    assert len(timeline.findall(".//{http://www.w3.org/2000/svg}rect")) == 5
    empty = parses(dash.line_plot([], [], "nothing <yet>"))
    assert [t.text for t in empty.iter("{http://www.w3.org/2000/svg}text")] == \
        ["nothing <yet>", "no data"]


def test_static_summary_has_the_plots_and_the_totals():
    state = dash.fold_all(dash.DashboardState(), sequence_events())
    page = dash.summary_html(state)
    ET.fromstring(f"<div>{page.split('</style>', 1)[1]}</div>")     # well formed
    assert page.count("<svg") == 4 and "accel-plot-chunk" in page
    assert "<td>elements</td><td>1,000</td>" in page
    text = dash.summary_text(state)
    assert text.startswith("sequence 1 (cpu, adaptive)") and "  steps: 5\n" in text
    nothing = dash.DashboardState()
    assert "no sequence has run" in dash.summary_html(nothing)
    assert dash.summary_text(nothing) == "no sequence has run in this cell\n"


# ---------------------------------------------------------------- the widget

def test_widget_updates_from_its_thread_and_cancel_calls_back():
    cancelled = threading.Event()
    board = dash.Dashboard(cancel=cancelled.set, interval=0.01)
    events = sequence_events()
    for event in events[:4]:
        board.receive(event)
    data = board.bundle()
    assert set(data) == {dash.WIDGET_MIME, "text/html", "text/plain"}
    parts = board._widgets
    assert parts.steps.value == "steps: 1" and not parts.cancel.disabled
    assert set(parts.box._dom_classes) == {"accel-dashboard"}
    assert "accel-dash-cancel" in parts.cancel._dom_classes
    thread = board._thread
    assert thread is not None and thread.is_alive() and thread is not threading.current_thread()
    parts.cancel.click()                            # what a click's comm message does
    assert cancelled.is_set() and board.cancel_requested
    for event in events[4:]:
        board.receive(event)
    board.stop()
    assert not thread.is_alive()
    assert parts.steps.value == "steps: 5" and parts.progress.value == 1.0
    assert parts.cancel.disabled and parts.progress.bar_style == "success"
    cancelled.clear()
    parts.cancel.click()                            # after the cell: does nothing
    assert not cancelled.is_set()
    final = board.bundle()
    assert final[dash.WIDGET_MIME] == data[dash.WIDGET_MIME]       # the same widget
    assert "done after 5 steps" in final["text/plain"] and "<svg" in final["text/html"]


def test_every_part_has_its_css_class():
    board = dash.Dashboard(cancel=lambda: None)
    board.bundle()
    board.stop()
    for name, css_class in dash.CSS_CLASSES.items():
        assert css_class in getattr(board._widgets, name)._dom_classes


# ---------------------------------------------------------------- a cluster's workers

SVG = "{http://www.w3.org/2000/svg}"
WORKERS = ("tcp://127.0.0.1:40001", "tcp://127.0.0.1:40002")


def cluster_events(length: int = 60, t0: float = 200.0, outcome: str = "done",
                   workers: tuple[str, ...] = WORKERS, sequence: int = 1) -> list[ev.Event]:
    """A sequence of `length` elements on two workers, each with its own scheduler doubling
    its chunk (1, 2, 4, …); the second is three times slower, so its chunks finish later and
    the steps arrive with their starts out of order. Each worker compiles in its first task
    (20 ms; the second found the kernels cached), and says so just before that task's step."""
    fast, slow = workers
    out: list[ev.Event] = [ev.SeqBegin(sequence, length, "adaptive", None, "cpu", 3,
                                       workers=workers, time=t0)]
    size = {fast: 1, slow: 1}
    free = {fast: t0 + 0.5, slow: t0 + 0.5}        # when each worker is idle again
    per_element = {fast: 1e-3, slow: 3e-3}
    compile_seconds = {fast: 0.02, slow: 0.0}
    finished: list[ev.Event] = []
    start, step = 0, 0
    while start < length:                           # give the next chunk to the idle worker
        worker = min(workers, key=lambda w: free[w])
        count_ = min(size[worker], length - start)
        seconds = count_ * per_element[worker] + (compile_seconds[worker] if size[worker] == 1
                                                  else 0.0)
        free[worker] += seconds + 0.002
        if size[worker] == 1:
            finished.append(ev.Compile(sequence, worker, compile_seconds[worker],
                                       time=free[worker]))
        finished.append(ev.Step(sequence, step, start, count_, 8 * count_, seconds,
                                seconds + 0.002, 0.7, per_element[worker], 2 * size[worker],
                                "under-utilised", worker=worker, time=free[worker]))
        size[worker] *= 2
        start += count_
        step += 1
    out += sorted(finished, key=lambda e: e.time)     # stable: a Compile before its Step
    return out + [ev.SeqEnd(sequence, length, step, max(free.values()) - t0, outcome=outcome,
                            time=max(free.values()) + 0.001)]


def test_the_steps_of_the_workers_arrive_out_of_order():
    steps = [e for e in cluster_events() if isinstance(e, ev.Step)]
    starts = [s.start for s in steps]
    assert starts != sorted(starts) and {s.worker for s in steps} == set(WORKERS)


def test_fold_keeps_one_lane_per_worker_and_counts_every_worker():
    events = cluster_events()
    steps = [e for e in events if isinstance(e, ev.Step)]
    state = dash.fold_all(dash.DashboardState(), events[:1])
    assert state.workers == WORKERS and [lane.worker for lane in state.lanes] == list(WORKERS)
    assert [lane.compile_seconds for lane in state.lanes] == [None, None]
    assert state.running and "running on 2 workers, step 0" in dash.status_text(state)
    half = dash.fold_all(state, events[1:events.index(steps[5])])
    assert half.steps == 5 and half.done == sum(s.elements for s in steps[:5])
    assert half.done == sum(lane.elements for lane in half.lanes)
    assert dash.progress_fraction(half) == pytest.approx(half.done / 60)
    state = dash.fold_all(state, events[1:])
    assert [lane.compile_seconds for lane in state.lanes] == [0.02, 0.0]
    assert state.done == 60 == state.total_elements and dash.progress_fraction(state) == 1.0
    fast, slow = state.lanes
    mine = {w: [s for s in steps if s.worker == w] for w in WORKERS}
    for lane in state.lanes:                    # each worker's own scheduler, its own numbers
        last = mine[lane.worker][-1]
        assert lane.steps == len(mine[lane.worker])
        assert lane.elements == sum(s.elements for s in mine[lane.worker])
        assert (lane.chunk, lane.next_size) == (last.elements, last.next_size)
        assert lane.time_per_element == last.time_per_element
    assert fast.time_per_element < slow.time_per_element
    assert dash.status_text(state).endswith(f"done after {len(steps)} steps on 2 workers")
    assert dict(dash.totals(state))["workers"] == "2"
    assert [p.worker for p in state.points] == [s.worker for s in steps]
    assert len(state.chunks) == len(steps)


def test_the_order_of_the_steps_does_not_change_the_counts():
    events = cluster_events()
    steps = [e for e in events if isinstance(e, ev.Step)]
    compiles = [e for e in events if isinstance(e, ev.Compile)]
    shuffled = events[:1] + compiles + steps[::-1] + events[-1:]
    a = dash.fold_all(dash.DashboardState(), events)
    b = dash.fold_all(dash.DashboardState(), shuffled)
    assert (a.done, a.total_elements, a.steps) == (b.done, b.total_elements, b.steps)
    assert {(l.worker, l.steps, l.elements) for l in a.lanes} == \
        {(l.worker, l.steps, l.elements) for l in b.lanes}


def test_a_worker_not_named_at_the_start_joins_and_compiles_of_other_sequences_are_not_its():
    events = cluster_events()
    late = ev.Step(1, 99, 60, 5, 40, 0.005, 0.006, 0.5, 1e-3, 10, "grow", worker="w-new",
                   time=events[-1].time)
    other = ev.Compile(7, WORKERS[0], 9.0, time=events[-1].time)
    state = dash.fold_all(dash.DashboardState(), events[:-1] + [late, other])
    assert [lane.worker for lane in state.lanes] == [*WORKERS, "w-new"]
    assert state.workers == (*WORKERS, "w-new") and state.lanes[2].steps == 1
    assert state.lanes[0].compile_seconds == 0.02 and state.lanes[2].compile_seconds is None


def test_the_plots_draw_a_line_per_worker_in_its_colour_with_a_legend():
    state = dash.fold_all(dash.DashboardState(), cluster_events())
    colours = [dash.worker_colour(state, w) for w in WORKERS]
    assert len(set(colours)) == 2
    for svg in (dash.chunk_plot(state), dash.time_plot(state), dash.utilisation_plot(state)):
        root = parses(svg)
        lines = root.findall(f".//{SVG}polyline")
        assert [line.get("stroke") for line in lines] == colours
        assert [line.find(f"{SVG}title").text for line in lines] == list(WORKERS)
        legend = [g.find(f"{SVG}title").text for g in root.iter(f"{SVG}g")]
        assert legend == list(WORKERS)
        assert [r.get("fill") for r in root.iter(f"{SVG}rect")] == colours
        assert any("2 workers" in (t.text or "") for t in root.iter(f"{SVG}text"))
    chunk = parses(dash.chunk_plot(state))
    fast_points = chunk.findall(f".//{SVG}polyline")[0].get("points").split()
    assert len(fast_points) == state.lanes[0].steps
    assert "per worker" in chunk.find(f"{SVG}text").text


def test_the_workers_lanes_hold_their_chunks():
    state = dash.fold_all(dash.DashboardState(), cluster_events())
    root = parses(dash.worker_timeline(state))
    bars = root.findall(f"{SVG}rect")
    assert len(bars) == len(state.chunks) + 1 == state.total_steps + 1     # and a compile
    by_lane = {}
    for bar in bars:
        if bar.get("class") != "accel-compile":
            by_lane.setdefault(bar.get("y"), set()).add(bar.get("fill"))
    assert len(by_lane) == 2 and all(len(fills) == 1 for fills in by_lane.values())
    labels = [t.find(f"{SVG}title").text for t in root.iter(f"{SVG}text")
              if t.find(f"{SVG}title") is not None]
    assert labels == list(WORKERS)
    titles = [bar.find(f"{SVG}title").text for bar in bars if bar.find(f"{SVG}title") is not None]
    assert titles[0] == f"{WORKERS[1]}: 1 elements from 1, 5 ms"      # the first to end
    assert f"{WORKERS[0]}: 1 elements from 0, 23 ms, 20 ms of it compiling" in titles


def test_a_workers_first_chunk_shows_its_compile():
    state = dash.fold_all(dash.DashboardState(), cluster_events())
    firsts: dict[str, dash.ChunkMark] = {}
    for chunk in state.chunks:
        firsts.setdefault(chunk.worker, chunk)
    assert firsts[WORKERS[0]].compiled == 0.02 < firsts[WORKERS[0]].wall
    assert firsts[WORKERS[1]].compiled == 0.0                        # it was cached
    assert [c for c in state.chunks if c.compiled] == [firsts[WORKERS[0]]]
    root = parses(dash.worker_timeline(state))
    assert len([r for r in root.iter(f"{SVG}rect") if r.get("class") == "accel-compile"]) == 1


def test_the_static_copy_and_the_text_list_the_workers():
    state = dash.fold_all(dash.DashboardState(), cluster_events())
    page = dash.summary_html(state)
    ET.fromstring(f"<div>{re.sub('<style>.*?</style>', '', page)}</div>")    # well formed
    assert page.count("<svg") == 4 and "accel-plot-workers" in page
    assert page.count("<tr>") - page.count("<tr><th>") == len(dash.totals(state)) + 2
    assert "<th>compile</th>" in page and "<td>20 ms</td>" in page and "<td>cached</td>" in page
    text = dash.summary_text(state)
    fast, slow = state.lanes
    assert (f"  worker {WORKERS[0]}: steps {fast.steps}, elements {fast.elements}, "
            f"chunk {fast.chunk}") in text
    assert "compile 20 ms" in text and "compile cached" in text


def test_a_sequence_in_this_process_draws_no_worker():
    state = dash.fold_all(dash.DashboardState(), sequence_events())
    assert state.workers == () and state.lanes == () and state.chunks == ()
    assert dash.workers_html(state) == "" and "worker" not in dash.summary_text(state)
    page = dash.summary_html(state)
    assert "accel-workers" not in page and "accel-legend" not in page
    chunk = parses(dash.chunk_plot(state))
    assert [line.get("stroke") for line in chunk.iter(f"{SVG}polyline")] == [dash.PALETTE[0]]
    assert chunk.find(f"{SVG}text").text == "chunk size (elements) by step"
    assert chunk.get("height") == str(PLOT_HEIGHT)


def test_the_widget_shows_the_workers():
    board = dash.Dashboard(cancel=lambda: None, interval=0.01)
    events = cluster_events()
    for event in events[:2]:                         # the start and the first compile
        board.receive(event)
    board.bundle()
    parts = board._widgets
    assert "<td>cached</td>" in parts.workers.value and "<svg" not in parts.workers.value
    for event in events[2:]:
        board.receive(event)
    board.stop()
    assert parts.elements.value == "60 of 60 elements" and parts.progress.value == 1.0
    assert "accel-plot-workers" in parts.workers.value
    assert parts.chunk.value.count("<polyline") == 2
    local = dash.Dashboard(cancel=lambda: None)
    for event in sequence_events():
        local.receive(event)
    local.bundle()
    local.stop()
    assert local._widgets.workers.value == ""


def test_a_cell_with_a_sequence_here_and_one_on_the_cluster_draws_this_process_too():
    events = sequence_events(t0=100.0) + cluster_events(t0=101.0, sequence=2)
    state = dash.fold_all(dash.DashboardState(), events)
    assert state.sequences == 2 and state.workers == WORKERS
    assert state.total_elements == 1000 + 60 and state.done == 60
    chunk = parses(dash.chunk_plot(state))
    lines = chunk.findall(f".//{SVG}polyline")
    assert [line.find(f"{SVG}title").text for line in lines] == ["this process", *WORKERS]
    assert lines[0].get("stroke") == dash.THIS_PROCESS
    assert len(lines[0].get("points").split()) == 5
