"""benchmarks/latency.py on a few tiny cells: a fresh process with an empty kernel cache, the
kernel's own cell path (magics included), well-formed rows and tables. No timing is asserted."""
from __future__ import annotations

import math
from pathlib import Path

from benchmarks import latency as L

REPO = Path(__file__).resolve().parent.parent

CELLS = [
    "def inc (xs: []i64) : []i64 = map (\\x -> x + 1) xs\ninc [1, 2, 3]",
    "%time inc [1, 2]",
    "%target interp",
    "inc [1",
]


def test_tiny_cells_give_well_formed_rows(capsys):
    rows = L.run_fresh("tiny", CELLS)
    assert [r.cell for r in rows] == [1, 2, 3, 4]
    assert [r.source for r in rows] == ["def inc (xs: []i64) : []i64 = map (\\x -> x + 1) xs",
                                        "%time inc [1, 2]", "%target interp", "inc [1"]
    # the target column is the session's when the cell starts: `%target` changes the next
    assert [r.target for r in rows] == ["cpu", "cpu", "cpu", "interp"]
    assert [r.outcome for r in rows] == ["ok", "ok", "ok", "AccelSyntaxError"]
    for r in rows:
        times = (r.first_s, r.first_compile_s, r.rerun_s, r.rerun_compile_s, r.rerun_kernels_s)
        assert all(math.isfinite(t) and t >= 0 for t in times)
        assert math.isclose(r.rerun_overhead_s, r.rerun_s - r.rerun_kernels_s)
    # the cache was empty: the kernel compiled on the first run; the re-run compiled nothing
    assert rows[0].first_compiles > 0 and rows[0].first_compile_s > 0
    assert all(r.rerun_compiles == 0 for r in rows)
    assert rows[3].first_compiles == 0                 # interp compiles no kernel

    L.print_cells(rows)
    L.print_summary(rows)
    out = capsys.readouterr().out.splitlines()
    cells = [line.split("|")[1:-1] for line in out if line.count("|") == 12]
    assert len(cells) == 1 + 1 + len(CELLS)                  # the header, the rule, the rows
    assert [c[1].strip() for c in cells[2:]] == ["1", "2", "3", "4"]
    summary = {line.split("|")[1].strip(): line.split("|")[2].strip()
               for line in out if line.count("|") == 10}
    assert summary["tiny"] == summary["all"] == "3"          # the cells run on cpu


def test_summary_counts_cpu_cells_and_recompiles():
    row = dict(source="x", first_compiles=0, first_compile_s=0.0, rerun_compile_s=0.0,
               rerun_kernels_s=0.0, outcome="ok")
    rows = [L.CellRow("a", 1, target="cpu", first_s=1.0, rerun_s=0.5, rerun_compiles=1,
                      rerun_overhead_s=0.5, **row),
            L.CellRow("a", 2, target="cpu", first_s=3.0, rerun_s=0.1, rerun_compiles=0,
                      rerun_overhead_s=0.1, **row),
            L.CellRow("b", 1, target="numpy", first_s=9.0, rerun_s=9.0, rerun_compiles=0,
                      rerun_overhead_s=9.0, **row)]
    # (what, cells, median and max first run, over 2 s, median and max overhead, over 20 ms,
    # re-runs that compiled): the numpy cell left out
    assert L.summarise(rows) == [("a", 2, 2.0, 3.0, 1, 0.3, 0.5, 2, 1),
                                 ("all", 2, 2.0, 3.0, 1, 0.3, 0.5, 2, 1)]


def test_startup_program_and_notebooks_are_there():
    from accel_kernel.session import Session
    assert Session(target="interp").execute(L.STARTUP_PROGRAM).text == "[14, 16, 0, 61]"
    for notebook in L.NOTEBOOKS:
        assert L.code_cells(REPO / notebook)


def test_cells_through_a_real_kernel(capsys):
    rows = L.through_kernel("tiny", ["%target interp", "1 + 2", "1 +"])
    assert [(r.cell, r.status) for r in rows] == [(1, "ok"), (2, "ok"), (3, "error")]
    assert all(math.isfinite(t) and t > 0 for r in rows for t in (r.first_s, r.rerun_s))
    L.print_kernel(rows, [])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.count("|") == 8]
    assert len(lines) == 2 + len(rows)
