"""Every accel cell of every notebook on the `cuda` target under numba's CUDA simulator,
against `interp`: the same printed value, or an error of the same kind on the same line.

The cells run in order, in one session per target and notebook, in a child process (this
file run as a script: the simulator replaces numba.cuda for a whole process), as the kernel
runs them: a cell's code segments in turn, the cell one transaction (a failed cell leaves the
globals as they were). Meta-commands are left out (`%target` would leave `cuda`; `%time`
re-runs its expression), except `%budget`, which the `cuda` session takes, so that the
evictions a notebook forces happen here too. `OutOfMemory` on `cuda` is accepted only in a
cell tagged `raises-exception` (a budget too small on purpose: `interp` has no budget).

The simulator runs a Python thread per GPU thread, so the few cells made of large inputs run
here on smaller ones: `SMALLER` lists each replacement (each must still match its notebook).
A cell that needs a kernel kind not built yet on `cuda` must say so (NotImplementedError,
"not built yet"): those are listed (`-rA` or `-s` prints them), never silently skipped, and
then run on `interp` in the `cuda` session, so that the next cells find their globals.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cuda

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))

from notebook_inputs import SMALLER, cells  # noqa: E402,F401  (tests/ is on the path)


def outcome(session, source: str, name: str, cuda: bool) -> list:
    """["value", text], ["error", kind, line] or ["not built", message] of one cell. A cell
    not built on `cuda` then runs on `interp` in the same session (as `%target interp` would),
    so that the globals it binds are there for the next cells."""
    from accel_kernel.lang.errors import AccelError
    snapshot = session.snapshot()
    try:
        return ["value", run_cell(session, source, name, cuda)]
    except AccelError as err:
        session.restore(snapshot)
        return ["error", err.kind, err.span.line if err.span is not None else None]
    except NotImplementedError as err:
        session.restore(snapshot)
        target = session.target
        session.set_target("interp")
        try:
            run_cell(session, source, name, cuda)
        except AccelError:
            session.restore(snapshot)
        session.set_target(target)
        return ["not built", str(err)]


def run_cell(session, source: str, name: str, cuda: bool) -> str | None:
    """The cell's code segments in turn (`%budget` on `cuda`); the last value's text."""
    from accel_kernel.kernel.magics import split_cell
    text = None
    for segment in split_cell(source):
        if segment.magic is None:
            result = session.execute(segment.padded_code(), name)
            text = result.text if result.has_value else text
        elif cuda and segment.magic.name == "budget" and segment.magic.args:
            args = segment.magic.args.strip()
            session.set_budget(None if args.lower() == "off" else args)
    return text


def run_every_cell() -> dict[str, list]:
    """Per cell (`NOTEBOOK cell K`): [interp's outcome, cuda's outcome, tagged]."""
    from accel_kernel.session import Session
    results = {}
    for path in NOTEBOOKS:
        interp, cuda = Session(target="interp"), Session(target="cuda")
        for k, (source, tagged) in enumerate(cells(path)):
            name = f"cell{k}"
            results[f"{path.name} cell {k}"] = [outcome(interp, source, name, False),
                                                outcome(cuda, source, name, True), tagged]
    return results


def test_every_notebook_cell_on_the_simulator():
    from cuda_child import on_the_simulator
    results = on_the_simulator(__file__, timeout=1800)
    wrong, not_built, ran = [], [], 0
    for cell, (expected, got, tagged) in results.items():
        if got[0] == "not built":
            assert "not built yet" in got[1], f"{cell}: {got[1]}"
            not_built.append(f"  {cell}: {got[1]}")
        elif got[:2] == ["error", "OutOfMemory"] and tagged:
            ran += 1
        elif got != expected:
            wrong.append(f"{cell}: interp {expected}, cuda {got}")
        else:
            ran += 1
    assert not wrong, "\n".join(wrong)
    print(f"\ncuda: {ran} notebook cells give interp's value or error; "
          f"{len(not_built)} need a kernel not built yet:")
    print("\n".join(not_built))
    assert ran >= len(results) // 2


def test_cudasim_chooses_the_simulator_after_numba_is_imported():
    """`%cudasim` on a machine with no GPU, numba already imported (by `cpu`) and numba.cuda
    not yet: the cuda target then runs on the simulator."""
    from accel_kernel.kernel.cudasim import ON_SIMULATOR, gpu_count
    if gpu_count():
        pytest.skip("a GPU is here: %cudasim leaves numba.cuda on it")
    script = ("import numba, sys\n"
              "from accel_kernel.kernel.magics import MagicContext, parse_magic, run_magic\n"
              "from accel_kernel.session import Session\n"
              "session = Session(target='interp')\n"
              "print(run_magic(parse_magic('%cudasim'), MagicContext(session)).stdout[0], end='')\n"
              "session.set_target('cuda')\n"
              "print(session.execute('map (\\\\x -> x * 3) [1, 2, 3]').text)\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == f"{ON_SIMULATOR}\n[3, 6, 9]\n"


def test_show_ptx_on_the_simulator():
    """`%show ptx` in a process on the simulator (notebook 06 on a machine with no GPU): the
    listing comes from a child process without it, with ptxas' report per kernel."""
    script = ("from accel_kernel.kernel.magics import MagicContext, parse_magic, run_magic\n"
              "from accel_kernel.session import Session\n"
              "session = Session(target='cuda')\n"
              "session.execute('def inc (xs: []i64) : []i64 = map (\\\\x -> x + 1) xs')\n"
              "out = run_magic(parse_magic('%show ptx inc'), MagicContext(session))\n"
              "print(out.displays[0]['text/plain'])\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    heads = [line for line in done.stdout.splitlines() if line.startswith("// kernel")]
    assert [h.split(",")[1].split(":")[0].strip() for h in heads] == ["sm_80", "sm_90"]
    assert all("registers" in h and "0/0 bytes spilled" in h for h in heads), heads
    assert ".entry" in done.stdout


if __name__ == "__main__":
    print(json.dumps(run_every_cell()))
