"""`%trace`: the scheduler's steps of the last sequence run, from its events."""
import json
import xml.etree.ElementTree as ET

import pytest

from accel_kernel.kernel.magics import MagicContext, MagicError, parse_magic, run_magic
from accel_kernel.runtime import events as E
from accel_kernel.session import Session
from accel_kernel.viz.trace import SHOWN, trace_bundle


def _steps(n: int) -> list:
    out = [E.SeqBegin(1, 2 ** n - 1, "adaptive", None, "cpu", 1)]
    for k in range(n):
        out.append(E.Step(1, k, 2 ** k - 1, 2 ** k, 8 * 2 ** k, 1e-3, 2e-3, 0.5, 1e-3 / 2 ** k,
                          2 ** (k + 1), "under-utilised"))
    return out + [E.SeqEnd(1, 2 ** n - 1, n, 0.1)]


def test_the_trace_lists_the_first_and_last_steps_with_their_rules():
    bundle = trace_bundle(_steps(20))
    text = bundle["text/plain"].splitlines()
    assert text[0] == "scheduler trace: 1 sequence run, 20 steps, 1,048,575 elements (adaptive)"
    assert text[1].split() == ["step", "start", "elements", "bytes", "time", "/", "element",
                               "utilisation", "rule", "next", "size"]
    assert len(text) == 2 + SHOWN + 1 + 4 and text[2 + SHOWN].split() == ["…"] * 8
    assert text[2].split()[:3] == ["0", "0", "1"] and "under-utilised" in text[-1]
    for svg in bundle["text/html"].split("<svg")[1:]:
        ET.fromstring("<svg" + svg.split("</svg>")[0] + "</svg>")


def test_the_magic_plots_the_last_sequence_run_and_writes_its_events(tmp_path):
    session = Session("numpy")
    context = MagicContext(session)
    assert run_magic(parse_magic("%trace"), context).stdout == \
        ["no sequence has run in this session yet\n"]
    session.execute("foldSeq (+) 0 (produce 100 (\\i -> i))")
    session.execute("1 + 2")                        # no sequence: the last one is kept
    path = tmp_path / "t.jsonl"
    out = run_magic(parse_magic(f"%trace {path}"), context)
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert out.stdout == [f"{len(events)} events written to {path}\n"]
    assert events[0]["kind"] == "seq_begin" and events[-1]["kind"] == "seq_end"
    assert sum(e["elements"] for e in events if e["kind"] == "step") == 100
    assert "scheduler trace: 1 sequence run" in out.displays[0]["text/plain"]
    with pytest.raises(MagicError, match="cannot write"):
        run_magic(parse_magic("%trace /nonexistent/dir/t.jsonl"), context)


def test_on_a_cluster_the_steps_name_their_worker_and_each_worker_is_summed_up():
    from .test_dashboard import WORKERS, cluster_events
    events = cluster_events(length=3000)
    steps = [e for e in events if isinstance(e, E.Step)]
    bundle = trace_bundle(events)
    text = bundle["text/plain"].splitlines()
    assert text[0] == ("scheduler trace: 1 sequence run, 21 steps, 3,000 elements (adaptive) "
                       "on 2 workers")
    assert text[1].split()[:3] == ["step", "worker", "start"]
    assert [line.split()[:4] for line in text[2:2 + SHOWN]] == [
        [str(s.step), s.worker, f"{s.start:,}", f"{s.elements:,}"] for s in steps[:SHOWN]]
    assert [s.start for s in steps] != sorted(s.start for s in steps)    # as they finished
    assert text[2 + SHOWN].split() == ["…"] * 9
    per_worker = text.index("per worker")
    assert text[per_worker + 1].split() == ["worker", "steps", "elements", "seconds", "wall",
                                            "time", "/", "element"]
    for k, worker in enumerate(WORKERS):
        mine = [s for s in steps if s.worker == worker]
        row = text[per_worker + 2 + k].split()
        assert row[:3] == [worker, str(len(mine)), f"{sum(s.elements for s in mine):,}"]
    compiled = text.index("compiled on the workers (first task)")
    assert [line.split() for line in text[compiled + 1:]] == [
        ["sequence", "worker", "compile"], ["1", WORKERS[1], "cached"],
        ["1", WORKERS[0], "20", "ms"]]
    page = bundle["text/html"]
    assert "<th>worker</th>" in page and "accel-plot-workers" in page
    assert page.count("<polyline") == 3 * len(WORKERS)
    for svg in page.split("<svg")[1:]:
        ET.fromstring("<svg" + svg.split("</svg>")[0] + "</svg>")


def test_without_workers_the_trace_has_no_worker_column():
    bundle = trace_bundle(_steps(3))
    assert "worker" not in bundle["text/plain"] and "worker" not in bundle["text/html"]
    assert "compiled" not in bundle["text/plain"]


def test_the_workers_are_summed_up_in_the_order_the_sequence_named_them():
    from .test_dashboard import WORKERS, cluster_events
    events = cluster_events()
    steps = [e for e in events if isinstance(e, E.Step)]
    assert steps[0].worker == WORKERS[1]                # the second named ends first
    text = trace_bundle(events)["text/plain"].splitlines()
    per_worker = text.index("per worker")
    assert [line.split()[0] for line in text[per_worker + 2:per_worker + 4]] == list(WORKERS)
