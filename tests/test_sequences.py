"""Sequences run chunk by chunk (docs/sequences.md): the steps and the scheduler's decisions
as events, memory bounded by one chunk in flight, the budget's ceiling, cancellation between
steps, Python iterables streamed in, and traces of a run. Every sequence program of
tests/programs is compared with interp on every target by tests/test_programs.py."""
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import accel_kernel as acc
from accel_kernel.kernel.loading import bind_python
from accel_kernel.lang.errors import Interrupted, OutOfMemory, SizeError, StreamError
from accel_kernel.runtime import events as E
from accel_kernel.session import Session

REPO = Path(__file__).resolve().parent.parent
ROWS = "foldSeq (+) 0 (mapSeq (\\r -> reduce (+) 0 r) (produce {n} (\\i -> iota (i % 10))))"


def _rows_total(n: int) -> int:
    return sum(m * (m - 1) // 2 for m in (i % 10 for i in range(n)))


def _steps(log: list) -> list[E.Step]:
    return [e for e in log if isinstance(e, E.Step)]


@pytest.mark.parametrize("target", ["numpy", "cpu"])
def test_a_run_is_steps_over_the_whole_sequence_in_order(target):
    session = Session(target)
    with session.events.recording() as log:
        assert session.execute(ROWS.format(n=3000)).text == str(_rows_total(3000))
    begin = [e for e in log if isinstance(e, E.SeqBegin)]
    end = [e for e in log if isinstance(e, E.SeqEnd)]
    steps = _steps(log)
    assert len(begin) == len(end) == 1 and begin[0].length == 3000
    assert begin[0].target == target and begin[0].policy == "adaptive"
    assert steps[0].elements == 1                    # the thesis' first step: one element
    assert [s.start for s in steps] == list(np.cumsum([0] + [s.elements for s in steps])[:-1])
    assert sum(s.elements for s in steps) == 3000 and end[0].elements == 3000
    assert end[0].outcome == "done" and end[0].steps == len(steps)
    assert all(s.nbytes > 0 and s.wall >= s.seconds > 0 for s in steps)
    assert all(s.rule in {"first", "under-utilised", "faster", "slower", "steady", "ceiling"}
               for s in steps)
    if target == "cpu":                              # the kernels' launches, with elements
        launches = [e for e in log if isinstance(e, E.Launch)]
        assert launches and all(e.device == "cpu" and e.seconds > 0 for e in launches)
        assert max(e.elements for e in launches) > 1
        assert all(e.nbytes == 8 * e.elements for e in launches if e.name.endswith("_map"))


def test_a_fixed_schedule_takes_the_same_chunk_every_step():
    session = Session("cpu")
    session.set_schedule("fixed 256")
    assert session.schedule.describe() == "fixed 256"
    with session.events.recording() as log:
        assert session.execute(ROWS.format(n=1000)).text == str(_rows_total(1000))
    assert [s.elements for s in _steps(log)] == [256, 256, 256, 232]
    assert {s.rule for s in _steps(log)} == {"fixed"}
    with pytest.raises(ValueError, match="fixed"):
        session.set_schedule("fixed zero")


def test_the_chunk_grows_from_one_and_falls_again_when_elements_grow():
    """Small elements, then elements 100 times bigger: under a budget the chunk's bytes stay
    under the ceiling, so the chunk grows from 1 while elements are small and falls when they
    grow (bytes are measured, not times: this does not depend on the machine's speed)."""
    session = Session("cpu", budget="2MB")              # a chunk may hold 1 MB
    program = "length (elements (produce 60000 (\\i -> iota (if i < 30000 then 2 else 200))))"
    with session.events.recording() as log:
        assert session.execute(program).text == str(30000 * 2 + 30000 * 200)
    steps = _steps(log)
    small = [s for s in steps if s.start + s.elements <= 30000]
    big = [s for s in steps if s.start >= 30000]
    assert small[0].elements == 1 and max(s.elements for s in small) >= 1024
    assert max(s.elements for s in big[1:]) < max(s.elements for s in small)
    assert "ceiling" in {s.rule for s in steps}
    assert all(s.nbytes <= 1_000_000 for s in big[1:])   # the ceiling held


def test_one_element_over_the_budget_is_an_accel_error_naming_the_sizes():
    session = Session("cpu", budget="64KB")
    with pytest.raises(OutOfMemory, match=r"one element of the sequence holds .*KiB, more "
                                          r"than the .* a chunk may hold"):
        session.execute("foldSeq (+) 0 (mapSeq (\\r -> reduce (+) 0 r) "
                        "(produce 10 (\\i -> iota 100000)))")


def test_cancel_stops_the_sequence_between_steps_and_changes_nothing():
    session = Session("cpu")
    session.execute("let x = 1")
    seen = []

    def cancel_at_third_step(event):
        if isinstance(event, E.Step):
            seen.append(event.step)
            if event.step == 2:
                session.cancel.set()
    program = "let x = " + ROWS.format(n=10 ** 9).replace("foldSeq", "foldSeq", 1)
    with session.events.recording() as log, session.events.subscribed(cancel_at_third_step):
        worker = threading.Thread(target=lambda: _expect_interrupted(session, program))
        worker.start()
        worker.join(120)
    assert not worker.is_alive()
    assert seen == [0, 1, 2]                         # stopped before a fourth step
    assert [e.outcome for e in log if isinstance(e, E.SeqEnd)] == ["cancelled"]
    assert session.execute("x").text == "1"          # the failed cell changed nothing


def _expect_interrupted(session: Session, program: str) -> None:
    with pytest.raises(Interrupted):
        session.execute(program)


@pytest.mark.parametrize("target", ["interp", "numpy", "cpu"])
def test_a_python_generator_streams_into_a_sequence_once(target):
    session = Session(target)
    rows = (np.arange(i % 7, dtype=np.int64) for i in range(500))
    assert bind_python(session, {"g": rows}, "test") == ["g : seq []i64"]
    total = sum(m * (m - 1) // 2 for m in (i % 7 for i in range(500)))
    assert session.execute("foldSeq (+) 0 (mapSeq (\\r -> reduce (+) 0 r) (stream g))").text \
        == str(total)
    with pytest.raises(StreamError, match="consumed by an earlier run"):
        session.execute("tabulate g")
    bind_python(session, {"h": iter([1.5, 2.5]), "k": iter([[1], [2], [3]])}, "test")
    with pytest.raises(SizeError, match=r"zipWithSeq: sequence lengths differ \(2 and 3\)"):
        session.execute("tabulate (zipWithSeq (\\a b -> (a, b)) h k)")

    def broken():
        yield 1
        raise RuntimeError("the sensor went away")
    bind_python(session, {"b": broken()}, "test")
    with pytest.raises(StreamError, match="RuntimeError: the sensor went away"):
        session.execute("foldSeq (+) 0 b")


def test_the_api_streams_a_generator_argument_and_traces_the_run(tmp_path):
    prog = acc.compile("def total (s: seq []i64) = foldSeq (+) 0 (mapSeq (\\r -> reduce (+) "
                       "0 r) s)")
    rows = (np.arange(i % 7) for i in range(1000))
    trace = tmp_path / "run.jsonl"
    assert prog.run("total", rows, target="cpu", trace=str(trace)) == \
        sum(m * (m - 1) // 2 for m in (i % 7 for i in range(1000)))
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    kinds = [line["kind"] for line in lines]
    assert kinds[0] == "seq_begin" and kinds[-1] == "seq_end" and "step" in kinds
    assert lines[0]["length"] is None                # a generator's length is not known
    assert sum(line["elements"] for line in lines if line["kind"] == "step") == 1000
    assert [e.kind for e in prog.events] == kinds


_RSS = """
def peak_mb():
    with open("/proc/self/status") as f:
        return int(f.read().split("VmHWM:")[1].split()[0]) // 1024
"""


def _child(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", _RSS + code], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_memory_stays_bounded_when_the_elements_would_not_fit():
    """The issue's program: its elements as one array would take 40 GB."""
    out = _child("""
from accel_kernel.session import Session
s = Session("cpu")
s.execute("foldSeq (+) 0 (mapSeq (\\\\i -> i) (produce 3 (\\\\i -> i)))")
base = peak_mb()
program = ("foldSeq (+) 0 (mapSeq (\\\\i -> reduce (+) 0 (iota (i % 1000))) "
           "(produce 10000000 (\\\\i -> i)))")
print(s.execute(program).text, peak_mb() - base)
""")
    value, grown = out.split()
    assert int(value) == 10000 * sum(m * (m - 1) // 2 for m in range(1000))
    assert int(grown) < 1024, f"peak RSS grew by {grown} MB"


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_streaming_a_memory_mapped_file_holds_one_chunk_of_it(tmp_path):
    path = tmp_path / "rows.npy"
    rows = np.lib.format.open_memmap(path, mode="w+", dtype=np.int64, shape=(50_000, 1000))
    rows[:] = np.arange(1000)                        # 400 MB, every row 0..999
    rows.flush()
    del rows
    out = _child(f"""
import numpy as np
from accel_kernel.session import Session
from accel_kernel.kernel.loading import bind_python
s = Session("cpu", budget="32MB")
bind_python(s, {{"rows": np.load({str(path)!r}, mmap_mode="r")}}, "test")
s.execute("foldSeq (+) 0 (mapSeq (\\\\r -> reduce (+) 0 r) (stream [[1, 2]]))")
base = peak_mb()
print(s.execute("foldSeq (+) 0 (mapSeq (\\\\r -> reduce (+) 0 r) (stream rows))").text,
      peak_mb() - base)
""")
    value, grown = out.split()
    assert int(value) == 50_000 * 499500
    assert int(grown) < 200, f"peak RSS grew by {grown} MB streaming a 400 MB file"
