"""The dashboard's pure model (`fold` over synthetic events), its SVG drawings and static copy,
and the widget's updater thread and Cancel button (no kernel: ipywidgets' comms are dummies)."""
from __future__ import annotations

import threading
import xml.etree.ElementTree as ET

import pytest

from accel_kernel.runtime import events as ev
from accel_kernel.viz import dashboard as dash


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
