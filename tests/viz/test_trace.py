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
