"""Flattening on real data: the flat program run on the session's values, every binding's
value (elided in the middle when long), work and depth next to the interpreter's, in the
text, the drawing and `%step flatten EXPR`."""
from __future__ import annotations

import re

import numpy as np
import pytest

from accel_kernel.backends.numpy.values import Segs
from accel_kernel.ir import flat as F
from accel_kernel.kernel.magics import MagicContext, parse_magic, run_magic
from accel_kernel.session import Session
from accel_kernel.viz.flat_run import format_flat
from accel_kernel.viz.flat_views import statements
from accel_kernel.viz.graphs import stage_dot


@pytest.fixture
def session():
    s = Session(target="interp")
    s.execute("let xss = [[1, 2, 3], [], [4, 5]]\nlet m = [[1, 2, 3], [4, 5, 6]]\n"
              "def rowsums (rows: [][]i64) : []i64 = map (\\r -> reduce (+) 0 r) rows")
    return s


def value_of(run, name: str):
    stmt = next(s for s in statements(run.stage.program) if name in [t.name for t in s.targets])
    return run.values[stmt.id]


def test_long_arrays_are_elided_in_the_middle():
    assert format_flat(np.arange(4)) == "[0, 1, 2, 3]"
    assert format_flat(np.arange(100), limit=6) == "[0, 1, 2, …, 97, 98, 99] (n=100)"
    assert format_flat(Segs(np.array([0, 2, 2]), np.array([1.5, 2.0]))) == \
        "offsets [0, 2, 2] values [1.5, 2.0]"
    assert format_flat((np.int64(3), np.array([True]))) == "(3, [true])"
    assert format_flat(np.arange(6).reshape(2, 3)) == "[[0, 1, 2], [3, 4, 5]]"


def test_every_binding_has_its_value_on_the_sessions_data(session):
    run = session.flat_run("map (\\r -> reduce (+) 0 (map (\\x -> 2 * x + 1) r)) xss")
    assert run.result == "[15, 0, 20]" and run.error is None
    seg = next(s for s in statements(run.stage.program) if isinstance(s.op, F.SegReduce))
    offsets = seg.op.offsets.name
    assert value_of(run, offsets).tolist() == [0, 3, 3, 5]       # the descriptor of xss
    assert run.values[seg.id].tolist() == [15, 0, 20]
    assert set(run.values) == {s.id for s in statements(run.stage.program)}
    assert run.work == sum(w for w, _ in run.costs.values()) > 0
    assert run.interp_work is not None and run.interp_work > 0
    assert run.interp_depth is not None and run.depth > 0
    text = run.text()
    assert "input xss = offsets [0, 3, 3, 5] values [1, 2, 3, 4, 5]" in text
    assert f"{offsets} = [0, 3, 3, 5]" in text and "work ratio" in text


def test_a_regular_global_stays_regular(session):
    """`m` is rectangular: its rows are summed by a 2-D reduction, no descriptor."""
    run = session.flat_run("map (\\r -> reduce (+) 0 r) m")
    ops = [type(s.op) for s in statements(run.stage.program)]
    assert F.Reduce in ops and F.SegReduce not in ops and F.Offsets not in ops
    assert run.result == "[6, 15]"


def test_a_failing_run_keeps_the_values_so_far(session):
    run = session.flat_run("map (\\r -> r[2]) xss")
    assert run.result is None and run.error.startswith("error: IndexError")
    assert run.values and "(not run)" in run.text()


def test_the_drawing_shows_values_and_the_inputs_reps(session):
    run = session.flat_run("map (\\r -> reduce (+) 0 r) xss")
    dot = stage_dot(run.stage, run=run)
    assert "= [0, 3, 3, 5]" in dot and "= [6, 0, 9]" in dot
    assert "[seg][r1]i64" in dot and "?" not in dot.split("xss")[1].split("]")[0]


def test_step_flatten_on_an_expression_shows_values_and_counters(session):
    ctx = MagicContext(session, cell_name="cell[3]", line=1)
    out = run_magic(parse_magic("%step flatten rowsums xss"), ctx)
    text = out.displays[0]["text/plain"]
    assert text.startswith("flat: work ") and "interp: work" in text
    assert "result: [6, 0, 9]" in text
    assert "values on real data:" in text and "= [6, 0, 9]" in text
    assert "= [6, 0, 9]" in out.metadata_of(0)["accel/dot"]["flatten"]


def test_step_flatten_on_a_def_says_how_to_give_it_data(session):
    ctx = MagicContext(session, cell_name="cell[3]", line=1)
    out = run_magic(parse_magic("%step flatten rowsums"), ctx)
    assert "no values to show" in out.stdout[0] and "rowsums ARGS" in out.stdout[0]
    assert "values on real data" not in out.displays[0]["text/plain"]


def test_dead_statements_are_removed_and_logged(session):
    run = session.flat_run("map (\\r -> reduce (+) 0 (map (\\x -> x + 1) r)) xss")
    ops = [type(s.op) for s in statements(run.stage.program)]
    assert F.Rebuild not in ops          # the rows of the inner map are never read
    dead = [s for s in run.stage.steps if s.rule == "DEAD"]
    assert dead and "rebuild" in dead[0].before


def test_the_library_runs_a_def_on_python_data():
    import awkward as ak
    import accel_kernel as acc
    prog = acc.compile("def rowsums (rows: [][]i64) : []i64 = map (\\r -> reduce (+) 0 r) rows")
    run = prog.flat_run("rowsums", ak.Array([[1, 2], [], [3]]))
    assert run.result == "[3, 0, 3]"
    assert re.search(r"input rows_\d+ = offsets \[0, 2, 2, 3\] values \[1, 2, 3\]", run.text())
    assert "= [3, 0, 3]" in run.dot()
    regular = prog.flat_run("rowsums", np.arange(6, dtype=np.int64).reshape(2, 3))
    assert regular.result == "[3, 12]"
    assert not any(isinstance(s.op, F.SegReduce) for s in statements(regular.stage.program))
