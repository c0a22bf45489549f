"""What a notebook user waits for (issue "Fast from the first keystroke", item 5): the first
run and the re-run of every code cell of the tour notebooks on a fresh kernel with an empty
kernel cache, and `accel run`'s start-up with a warm one.

    python -m benchmarks.latency [--notebooks NB[,NB]] [--repeat 5] [--no-startup]
                                 [--no-pyc] [--kernel NB[,NB]]

(default notebooks: notebooks/00-tour.ipynb and notebooks/04-fusion.ipynb)

Cells. Each notebook runs in a fresh process (`python -m benchmarks.latency --worker`) whose
`$ACCEL_CACHE_DIR` (where `targets.CompileOptions.from_environment` puts the `cpu` target's
generated modules and numba's machine code) is a new empty temporary directory. The process
first does what the kernel does when it starts (imports `accel_kernel.kernel.kernel`, makes a
`Session`: not timed), then runs the notebook's code cells in order, each twice in a row: the
first run, then the re-run (Shift-Enter twice). A cell runs through the kernel's own code
(`AccelKernel._run_cell`: `%` lines checked, the session snapshot, `magics.run_magic` for
`%stages`, `%step`, `%show`, `%time`, `%target`, `Session.execute` for code, the result's
display bundle), with a stand-in for the Jupyter messaging (what the kernel would send is
kept in a list); not timed: ZeroMQ and the cell thread's hand-off (`--kernel` measures them).
The cells are the notebook's as written (no smaller inputs), on the notebook's targets (`cpu`,
the default, unless a `%target` cell says otherwise; the target column says which ran).

Per cell: the wall time of each run; the numba compiles during it (numba's `numba:compile`
events, which fire on a real compile only, not on a load from numba's cache) and their time
(outermost compiles); on the re-run, the time spent inside compiled kernels (the `Launch`
events' seconds) and the overhead, the re-run's wall time minus that: parsing, type checking,
the compiler's passes or their cached result, host statements, boxing the result and
building its display.

Python's bytecode: this project's machines set `PYTHONDONTWRITEBYTECODE=1`, so there a
process compiles accel_kernel's ~100 modules (and the generated ones) from source unless
their `.pyc` files are already there, which an installed package's are (0.1 to 0.4 s of
`accel run`). So every process here runs with Python's bytecode cache on
(`PYTHONDONTWRITEBYTECODE` removed from its environment; `compileall` writes accel_kernel's
`.pyc` files first, into the `__pycache__` folders git ignores; the site packages have
theirs). `--no-pyc` runs the processes as the environment has it (Python still reads `.pyc`
files already there: to measure without them, remove accel_kernel's `__pycache__` folders
first). `PYTHONPYCACHEPREFIX` would not do: it moves every package's `.pyc` files, so numba
and awkward would compile from source on their first import.

`--kernel NOTEBOOKS` also runs those notebooks' cells through a real accel kernel process
(`jupyter_client`, on its own empty cache), timed from `execute_request` to `execute_reply`,
beside the in-process times: what the messaging and the cell thread add.

Start-up: `python -m accel_kernel run FILE` (a small program: the tour's first cell) on
`cpu` with a warm cache (one untimed run first, in the same cache directory) and on `interp`,
the median of `--repeat` wall times each, beside `python -c pass` (the interpreter alone).
The runs go in rounds, every command once a round.
"""
from __future__ import annotations

import argparse
import importlib.abc
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, fields
from datetime import date
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parent.parent
# the bars, counted in the summary: no first run over 2 s, re-runs under 20 ms overhead
FIRST_RUN_BAR, OVERHEAD_BAR = 2.0, 0.020
NOTEBOOKS = ("notebooks/00-tour.ipynb", "notebooks/04-fusion.ipynb")

# the program `accel run` starts: the tour's first cell
STARTUP_PROGRAM = """\
let xss = [[1, 2, 3], [4], [], [5, 6]]

def sum_sq_rows (rows: [][]i64) : []i64 =
  map (\\r -> reduce (+) 0 (map (\\x -> x * x) r)) rows

sum_sq_rows xss
"""


@dataclass
class CellRow:
    notebook: str
    cell: int                    # 1-based, counting code cells only
    source: str                  # the cell's first line
    target: str                  # the session's target when the cell started
    first_s: float
    first_compiles: int          # numba compiles during the first run
    first_compile_s: float       # their time (outermost compiles)
    rerun_s: float
    rerun_compiles: int
    rerun_compile_s: float
    rerun_kernels_s: float       # time inside compiled kernels on the re-run (Launch events)
    rerun_overhead_s: float      # rerun_s - rerun_kernels_s
    outcome: str                 # "ok", or the error's kind (both runs must agree)


def code_cells(path: Path) -> list[str]:
    """The sources of a notebook's code cells, in order, as written."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]


# ---------------------------------------------------------------- the worker (a fresh process)


class NumbaCompiles:
    """Counts numba's compiles (`numba:compile` events) and times the outermost ones. numba is
    not imported before the first cell that needs it (as in the kernel), so the listener is
    registered by an import hook as soon as numba has been imported."""

    def __init__(self) -> None:
        self.count, self.seconds = 0, 0.0
        self._depth, self._began = 0, 0.0
        if "numba" in sys.modules:
            self._register()
        else:
            sys.meta_path.insert(0, _AfterImport("numba", self._register))

    def _register(self) -> None:
        from numba.core import event

        counter = self

        class Listener(event.Listener):
            def on_start(self, _event: Any) -> None:
                counter.count += 1
                if counter._depth == 0:
                    counter._began = time.perf_counter()
                counter._depth += 1

            def on_end(self, _event: Any) -> None:
                counter._depth -= 1
                if counter._depth == 0:
                    counter.seconds += time.perf_counter() - counter._began

        event.register("numba:compile", Listener())

    def sample(self) -> tuple[int, float]:
        return self.count, self.seconds


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls `then()` once the module `name` has been executed (then leaves `sys.meta_path`)."""

    def __init__(self, name: str, then: Any) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        import importlib.util
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        execute, then = spec.loader.exec_module, self.then

        def exec_module(module: Any) -> None:
            execute(module)
            then()

        spec.loader.exec_module = exec_module        # type: ignore[method-assign]
        return spec


class CellRunner:
    """Runs cells as `AccelKernel` does (its `_run_cell` and `_run_segments`, on this object
    standing in for the kernel), keeping what it would send instead of sending it."""

    def __init__(self) -> None:
        from accel_kernel.kernel.kernel import AccelKernel
        from accel_kernel.session import Session

        self._kernel = AccelKernel
        self.accel = Session()
        self.python: dict[str, Any] = {}
        self.execution_count = 0
        self.iopub_socket = None
        self.sent: list[tuple[str, Any]] = []

    # what `_run_cell` and `_run_segments` call on the kernel
    def send_response(self, _socket: Any, msg_type: str, content: Any) -> None:
        self.sent.append((msg_type, content))

    def display_data(self, data: Any, metadata: Any = None, display_id: Any = None,
                     update: bool = False) -> None:
        self.sent.append(("display_data", (data, metadata)))

    def _send_stdout(self, text: str) -> None:
        self.sent.append(("stream", text))

    def _wait_for_dashboard(self) -> None:
        pass

    def _run_segments(self, segments: list, name: str, silent: bool) -> Any:
        return self._kernel._run_segments(self, segments, name, silent)

    def run(self, code: str) -> str:
        """One execution of a cell (as `do_execute` does, less the messaging): "ok" or the
        kind of its error."""
        from accel_kernel.kernel.magics import MagicError
        from accel_kernel.lang.errors import AccelError

        self.execution_count += 1
        self.sent.clear()
        try:
            self._kernel._run_cell(self, code, f"cell[{self.execution_count}]", False)
        except AccelError as err:
            return type(err).__name__
        except MagicError as err:
            return err.kind
        except NotImplementedError:
            return "NotImplementedError"
        return "ok"


def measure_cells(notebook: str, cells: list[str]) -> list[CellRow]:
    """Each cell's first run and re-run in this process (see the module's docstring)."""
    compiles = NumbaCompiles()
    runner = CellRunner()
    rows = []
    for number, code in enumerate(cells, start=1):
        target = runner.accel.target
        timed = []
        for _run in range(2):
            count, seconds = compiles.sample()
            with runner.accel.events.recording() as log:
                began = time.perf_counter()
                outcome = runner.run(code)
                wall = time.perf_counter() - began
            kernels = sum(getattr(e, "seconds", 0.0) for e in log if e.kind == "launch")
            now_count, now_seconds = compiles.sample()
            timed.append((wall, now_count - count, now_seconds - seconds, kernels, outcome))
        (first, c1, s1, _, o1), (rerun, c2, s2, k2, o2) = timed
        lines = [line for line in code.splitlines() if line.strip()
                 and not line.lstrip().startswith("--")]
        rows.append(CellRow(notebook, number, lines[0] if lines else "", target, first, c1, s1,
                            rerun, c2, s2, k2, rerun - k2,
                            o1 if o1 == o2 else f"{o1}, then {o2}"))
    return rows


def worker(cells_file: str, out_file: str) -> int:
    spec = json.loads(Path(cells_file).read_text())
    rows = measure_cells(spec["notebook"], spec["cells"])
    Path(out_file).write_text(json.dumps([asdict(r) for r in rows]))
    return 0


# ---------------------------------------------------------------- the parent


def _env(pyc: bool = False, **extra: str) -> dict[str, str]:
    """This environment, the repository on the path; with `pyc`, Python's bytecode cache on
    (`PYTHONDONTWRITEBYTECODE` removed), else as the environment has it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    if pyc:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra)
    return env


def bytecode_cache() -> bool:
    """The `.pyc` files of accel_kernel's and the benchmarks' modules (`compileall`, into
    their `__pycache__` folders, which git ignores), as an installed package has them; the
    site packages have theirs already."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "accel_kernel", "benchmarks"],
                   cwd=REPO, env=_env(True), check=True, stdout=subprocess.DEVNULL)
    return True


def run_fresh(notebook: str, cells: list[str], pyc: bool = False) -> list[CellRow]:
    """`measure_cells` in a fresh process with a new empty kernel cache (with Python's
    bytecode cache on where `pyc`, see `_env`)."""
    with tempfile.TemporaryDirectory(prefix="accel-latency-") as tmp:
        cache = Path(tmp) / "kernels"
        spec, out = Path(tmp) / "cells.json", Path(tmp) / "rows.json"
        spec.write_text(json.dumps({"notebook": notebook, "cells": cells}))
        subprocess.run([sys.executable, "-m", "benchmarks.latency", "--worker", str(spec),
                        str(out)], cwd=REPO, env=_env(pyc, ACCEL_CACHE_DIR=str(cache)),
                       check=True)
        names = {f.name for f in fields(CellRow)}
        return [CellRow(**{k: v for k, v in row.items() if k in names})
                for row in json.loads(out.read_text())]


@dataclass
class KernelRow:
    notebook: str
    cell: int
    first_s: float               # execute request to its reply, a real kernel process
    rerun_s: float
    status: str                  # the reply's status ("ok", "error")


def through_kernel(notebook: str, cells: list[str], pyc: bool = False,
                   timeout: float = 600.0) -> list[KernelRow]:
    """The cells' first runs and re-runs as a notebook client sees them: a real accel kernel
    process (jupyter_client, kernelspec `accel`) started on a new empty kernel cache, each
    time from sending `execute_request` to its `execute_reply` (which the kernel sends after
    the cell's outputs): the in-process numbers plus the messaging and the cell thread."""
    from jupyter_client.manager import KernelManager

    with tempfile.TemporaryDirectory(prefix="accel-latency-") as tmp:
        manager = KernelManager(kernel_name="accel")
        manager.start_kernel(env=_env(pyc, ACCEL_CACHE_DIR=str(Path(tmp) / "kernels")))
        client = manager.client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=timeout)
            rows = []
            for number, code in enumerate(cells, start=1):
                timed = []
                for _run in range(2):
                    began = time.perf_counter()
                    # not stop_on_error: ipykernel would abort a request that comes in
                    # just after a failed one (the re-run of a failing cell)
                    msg_id = client.execute(code, stop_on_error=False)
                    while True:
                        reply = client.get_shell_msg(timeout=timeout)
                        if reply["parent_header"].get("msg_id") == msg_id:
                            break
                    timed.append((time.perf_counter() - began, reply["content"]["status"]))
                (first, s1), (rerun, s2) = timed
                rows.append(KernelRow(notebook, number, first, rerun,
                                      s1 if s1 == s2 else f"{s1}, then {s2}"))
            return rows
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)


def print_kernel(rows: list[KernelRow], cells: list[CellRow]) -> None:
    """The real kernel's times beside the in-process ones of the same cells (another
    process, another moment: both are samples)."""
    inproc = {(r.notebook, r.cell): r for r in cells}
    print("| notebook | cell | first run ms, kernel | in-process | re-run ms, kernel | "
          "in-process | status |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, r in _first_names(rows):
        mine = inproc.get((r.notebook, r.cell))
        first, rerun = ((_ms(mine.first_s), _ms(mine.rerun_s)) if mine else ("—", "—"))
        print(f"| {name} | {r.cell} | {_ms(r.first_s)} | {first} | {_ms(r.rerun_s)} | "
              f"{rerun} | {r.status} |")


@dataclass
class Startup:
    what: str
    median_s: float
    runs: list[float]


def _wall(command: list[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


def startup(repeat: int, pyc: bool = False) -> list[Startup]:
    """`accel run` of the small program on `interp` and on `cpu` with a warm kernel cache,
    beside bare Python (with Python's bytecode cache on where `pyc`). One untimed run of
    each first, then `repeat` rounds, each running every command once (the machine's drift
    falls on all alike)."""
    with tempfile.TemporaryDirectory(prefix="accel-latency-") as tmp:
        program = Path(tmp) / "tour_first_cell.accel"
        program.write_text(STARTUP_PROGRAM)
        run = [sys.executable, "-m", "accel_kernel", "run", str(program), "--target"]
        env = _env(pyc, ACCEL_CACHE_DIR=str(Path(tmp) / "kernels"))
        cases = [("python -c pass", [sys.executable, "-c", "pass"]),
                 ("accel run --target interp", run + ["interp"]),
                 ("accel run --target cpu, warm cache", run + ["cpu"])]
        for _what, command in cases:
            _wall(command, env)       # fills the kernel cache, warms the pages
        runs: list[list[float]] = [[] for _ in cases]
        for _round in range(repeat):
            for (_what, command), mine in zip(cases, runs):
                mine.append(_wall(command, env))
    return [Startup(what, statistics.median(mine), mine)
            for (what, _command), mine in zip(cases, runs)]


# ---------------------------------------------------------------- the report


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}" if seconds >= 0.0095 else f"{seconds * 1000:.1f}"


def _cell_text(text: str, width: int = 48) -> str:
    text = text.replace("|", "\\|").replace("`", "'")
    return "`" + (text if len(text) <= width else text[:width - 1] + "…") + "`"


def _first_names(rows: list) -> Iterator[tuple[str, Any]]:
    """Each row with its notebook's name, given on the notebook's first row only."""
    shown = None
    for r in rows:
        yield (Path(r.notebook).name if r.notebook != shown else ""), r
        shown = r.notebook


def print_cells(rows: list[CellRow]) -> None:
    print("| notebook | cell | first line | target | first run ms | compiles (s) | re-run ms "
          "| re-run compiles | in kernels ms | re-run overhead ms | outcome |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---|")
    for name, r in _first_names(rows):
        print(f"| {name} | {r.cell} | {_cell_text(r.source)} | {r.target} | {_ms(r.first_s)} | "
              f"{r.first_compiles} ({r.first_compile_s:.2f}) | {_ms(r.rerun_s)} | "
              f"{r.rerun_compiles} | {_ms(r.rerun_kernels_s)} | {_ms(r.rerun_overhead_s)} | "
              f"{r.outcome} |")


def summarise(rows: list[CellRow]) -> list[tuple]:
    """Per notebook and over all, the cells run on `cpu`: (what, cells, median and max first
    run, first runs over `FIRST_RUN_BAR`, median and max re-run overhead, re-runs over
    `OVERHEAD_BAR` of overhead, re-runs that compiled)."""
    groups = {Path(n).name: [r for r in rows if r.notebook == n and r.target == "cpu"]
              for n in dict.fromkeys(r.notebook for r in rows)}
    groups["all"] = [r for r in rows if r.target == "cpu"]
    out = []
    for what, group in groups.items():
        if not group:
            continue
        firsts = [r.first_s for r in group]
        overheads = [r.rerun_overhead_s for r in group]
        out.append((what, len(group), statistics.median(firsts), max(firsts),
                    sum(f > FIRST_RUN_BAR for f in firsts),
                    statistics.median(overheads), max(overheads),
                    sum(o > OVERHEAD_BAR for o in overheads),
                    sum(r.rerun_compiles > 0 for r in group)))
    return out


def print_summary(rows: list[CellRow]) -> None:
    print(f"| cells on cpu | count | median first run s | max first run s | over "
          f"{FIRST_RUN_BAR:g} s | median re-run overhead ms | max re-run overhead ms | over "
          f"{OVERHEAD_BAR * 1000:g} ms | re-runs that compiled |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for what, n, med, top, slow, omed, otop, heavy, recompiled in summarise(rows):
        print(f"| {what} | {n} | {med:.2f} | {top:.2f} | {slow} | {_ms(omed)} | {_ms(otop)} | "
              f"{heavy} | {recompiled} |")


def print_startup(found: list[Startup]) -> None:
    print("| command | median s | runs s |")
    print("|---|---:|---|")
    for s in found:
        print(f"| `{s.what}` | {s.median_s:.2f} | {', '.join(f'{r:.2f}' for r in s.runs)} |")


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", default=",".join(NOTEBOOKS),
                        help="comma-separated notebooks, relative to the repository")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each start-up command")
    parser.add_argument("--no-startup", action="store_true", help="cells only")
    parser.add_argument("--kernel", metavar="NOTEBOOKS",
                        help="also run these notebooks' cells through a real kernel process "
                             "(jupyter_client), for comparison")
    parser.add_argument("--no-pyc", action="store_true",
                        help="run the processes as the environment has it (no bytecode "
                             "written where PYTHONDONTWRITEBYTECODE is set)")
    parser.add_argument("--worker", nargs=2, metavar=("CELLS_JSON", "OUT_JSON"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(*args.worker)

    from .run_targets import OtherLoad, machine
    command = " ".join(["python -m benchmarks.latency"] + [
        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)])
    print(f"command: `{command}` ({date.today().isoformat()})")
    print(f"machine: {machine()}; load average (1, 5, 15 min) before: {_load()}")
    print(f"this environment: PYTHONDONTWRITEBYTECODE="
          f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '(unset)')}; the processes "
          + ("as it is" if args.no_pyc else "with Python's bytecode cache (compileall "
                                            "first)"))
    others = OtherLoad()
    started = time.perf_counter()
    rows: list[CellRow] = []
    pyc = not args.no_pyc and bytecode_cache()
    for notebook in (n.strip() for n in args.notebooks.split(",") if n.strip()):
        rows += run_fresh(notebook, code_cells(REPO / notebook), pyc)
    print()
    print_cells(rows)
    print()
    print_summary(rows)
    if args.kernel:
        print()
        kernel_rows: list[KernelRow] = []
        for notebook in (n.strip() for n in args.kernel.split(",") if n.strip()):
            kernel_rows += through_kernel(notebook, code_cells(REPO / notebook), pyc)
        print_kernel(kernel_rows, rows)
    if not args.no_startup:
        print()
        print_startup(startup(args.repeat, pyc))
    print()
    print(f"total {time.perf_counter() - started:.0f} s; other processes used "
          f"{others.cores():.2f} cores on average during the run; load average after: "
          f"{_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
