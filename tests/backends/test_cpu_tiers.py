"""Tiered kernels (backends/cpu/tiers.py): every `cpu` kernel has a parallel variant and a
sequential twin; which one ran never changes a result. The rest of the suite runs `cpu` as
a user does (tiered: its small inputs run the sequential variants); here kernels of every
kind run with every launch sequential, with every launch parallel, and tiered across the
threshold, on inputs long enough to be cut into several chunks, and must agree exactly."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from accel_kernel.backends.cpu import compile_worker, tiers
from accel_kernel.backends.cpu.codegen import generate
from accel_kernel.kernel.loading import bind_python
from accel_kernel.kernel.magics import MagicContext, parse_magic, run_magic
from accel_kernel.session import Session
from accel_kernel.targets import CompileOptions

N = tiers.PARALLEL_FROM + 4321          # over the threshold; floats: sums depend on order

# one program per kernel kind (ir.flat.Kernel.kind), each over `xs` (f64) or `is` (i64)
KINDS = {
    "map": "map (\\x -> x * 3.0 + 1.0) xs",
    "redomap": "reduce (+) 0.0 (map (\\x -> x * x) xs)",
    "scan": "scan (+) 0.0 xs",
    "filter": "filter (\\x -> x > 0.5) xs",
    "filter with a reduction": "reduce (+) 0.0 (filter (\\x -> x > 0.5) xs)",
    "segmented": "map (\\r -> reduce (+) 0.0 r) (unflatten 3 (length xs / 3) xs)",
    "irregular segments": "map (\\i -> reduce (+) 0 (iota (i % 97))) is",
    "rows": "map (\\r -> reduce (+) 0.0 r) (unflatten (length xs / 4) 4 xs)",
    "push": "xs ++ map (\\x -> -x) xs",
    "a loop per element": "map (\\i -> loop a = i for j < 5 do (a * 31 + j) % 1000003) is",
    # FUSE-HIST: integer `+` into a row per thread, merged; floats in element order; and a
    # segmented expansion's elements counted (`lines`)
    "hist": "reduce_by_index (replicate 1000 0) (+) 0 (map (\\i -> (i * 7919) % 1013 - 3) is) "
            "(map (\\i -> i % 5 - 2) is)",
    "hist of floats": "reduce_by_index (replicate 7 0.0) (+) 0.0 (map (\\x -> i64 (x * 9.0)) xs) xs",
    "hist of an expansion": "let ps = expand (\\i -> i % 13) (\\i j -> (i * 31 + j) % 1001) is "
                            "in reduce_by_index (replicate 997 0) max 0 ps (map (\\_ -> 1) ps)",
    # a filter segment by segment whose scalar function builds a tuple of tuples, which
    # numba's parallel compiler failed on (numba_fixes.py)
    "nested tuples": "[(a, b, c) | a <- [1..<70], b <- [a..<70], c <- [b..<(a + b)], c < 70, "
                     "a * a + b * b == c * c]",
}


def session(mode: str, tmp_path) -> Session:
    s = Session(target="cpu", options=CompileOptions(tmp_path, kernels=mode))
    rng = np.random.default_rng(7)
    xs = rng.random(N - N % 12)           # divisible by 3 and by 4
    bind_python(s, {"xs": xs, "is": np.arange(N, dtype=np.int64)}, "test")
    return s


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    cache = tmp_path_factory.mktemp("tiers")
    return {mode: session(mode, cache) for mode in ("sequential", "parallel", "tiered")}


@pytest.mark.parametrize("kind", KINDS)
def test_both_variants_give_the_same_values(kind, sessions):
    results = {}
    for mode, s in sessions.items():
        with s.events.recording() as log:
            results[mode] = s.execute(KINDS[kind]).text
        ran = {e.variant for e in log if e.kind == "launch"}
        if mode != "tiered":
            assert ran == {mode}, (mode, ran)
    assert results["sequential"] == results["parallel"] == results["tiered"]


def test_a_large_launch_runs_sequentially_until_its_parallel_variant_is_compiled(tmp_path):
    s = Session(target="cpu", options=CompileOptions(tmp_path))
    s.execute("def f (n: i64) : i64 = reduce (+) 0 (map (\\x -> x * 5 + 2) (iota n))")

    def variants(text: str) -> list[str]:
        with s.events.recording() as log:
            s.execute(text)
        return [e.variant for e in log if e.kind == "launch"]

    assert variants("f 100") == ["sequential"]                  # small: never parallel
    assert variants(f"f {N}") == ["sequential"]                 # compiling in the background
    tiers.shared("tiered").wait()
    assert variants(f"f {N}") == ["parallel"]
    assert variants("f 100") == ["sequential"]


def test_the_work_of_a_kernel_with_a_loop_is_weighed(tmp_path):
    """A kernel whose scalar function loops counts `LOOP_WEIGHT` per element, one without a
    loop its elements; segmented kernels count their segments' elements."""
    def host(text: str) -> str:
        program = Session().program_stages(text, "t.accel", stop_after="fuse")[-1].program
        return generate(program).source
    assert "work = n\n" in host("def f (is: []i64) : []i64 = map (\\i -> i + 1) is")
    assert f"work = n * {tiers.LOOP_WEIGHT}" in host(
        "def f (is: []i64) : []i64 = map (\\i -> loop a = i for j < 3 do a + j) is")
    assert "work = max(n, int(" in host(
        "def f (xss: [][]i64) : []i64 = map (\\r -> reduce (+) 0 r) xss")


def test_percent_time_says_which_variant_ran(tmp_path):
    s = Session(target="cpu", options=CompileOptions(tmp_path))
    ctx = MagicContext(s, "cell[1]", 1, {})
    texts = ["".join(run_magic(parse_magic("%time reduce (+) 0 (map (\\x -> x * 9) (iota "
                                           "1000))"), ctx).stdout) for _ in range(2)]
    assert all("runtime: 1 launch (1 sequential)" in text for text in texts), texts

    def compile_seconds(text: str) -> float:     # `compile 427.4 ms` or `compile 1.2 s`
        number, unit = re.search(r"compile ([\d.]+) (µs|ms|s)\b", text).groups()
        return float(number) * {"µs": 1e-6, "ms": 1e-3, "s": 1.0}[unit]
    # `compile` is the passes and numba: the first run's numba compiles the sequential
    # variant (a new cache), the second's nothing (0.53 s against 0.06 s when written)
    assert compile_seconds(texts[0]) > 2 * compile_seconds(texts[1]), texts


def test_the_environment_chooses_the_variants():
    assert CompileOptions.from_environment({}).kernels == "tiered"
    assert CompileOptions.from_environment({"ACCEL_KERNELS": "parallel"}).kernels == "parallel"
    with pytest.raises(ValueError, match="ACCEL_KERNELS must be one of tiered, sequential, "
                                         "parallel, not 'fast'"):
        CompileOptions.from_environment({"ACCEL_KERNELS": "fast"})


def test_a_background_compile_in_process_shortens_the_switch_interval_while_it_runs(
        monkeypatch):
    """numba's compiler holds the GIL: while it compiles in a background thread (no compile
    worker) a cell's host code waits at most `SWITCH_SECONDS` for it, not Python's 5 ms;
    the interval is restored after, and after a compile that fails."""
    monkeypatch.setattr(tiers, "QUIET_SECONDS", 0.0)
    monkeypatch.setattr(compile_worker, "WORKER", _broken_worker())
    before = sys.getswitchinterval()
    seen = []

    class Parallel:
        def __init__(self, fails: bool):
            self.fails = fails

        def compile(self, _signature):
            seen.append(sys.getswitchinterval())
            if self.fails:
                raise RuntimeError("numba could not")

    assert tiers._compile(Parallel(False), ()) == "in-process"   # noqa: SLF001 - the thread's
    assert tiers._compile(Parallel(True), ()) == "failed"        # noqa: SLF001
    assert seen == [min(before, tiers.SWITCH_SECONDS)] * 2
    assert sys.getswitchinterval() == before


def _broken_worker() -> compile_worker.CompileWorker:
    """A compile worker whose process ends at once, as one that crashed."""
    class Broken(compile_worker.CompileWorker):
        def _start(self):
            self._process = subprocess.Popen([sys.executable, "-c", "pass"],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            return self._process
    return Broken()


def _large_launch(tmp_path, name: str, step: int):
    """A session whose `name n` launches one kernel (its own: `step` differs, as the
    process imports a kernel's compile unit once), and that launch's value, its parallel
    variant compiling in the background."""
    s = Session(target="cpu", options=CompileOptions(tmp_path))
    s.execute(f"def {name} (n: i64) : i64 = reduce (+) 0 (map (\\x -> x * 3 + {step}) (iota n))")
    with s.events.recording() as log:
        value = s.execute(f"{name} {N}").text
    assert [e.variant for e in log if e.kind == "launch"] == ["sequential"]
    return s, value


def _numba_compiles():
    """The numba functions this process compiles from now on (`numba:compile` events, which
    a load from numba's disk cache does not fire)."""
    from numba.core import event
    compiled = []

    class Listener(event.Listener):
        def on_start(self, e):
            compiled.append(e.data["dispatcher"])

        def on_end(self, e):
            pass
    listener = Listener()
    event.register("numba:compile", listener)
    return compiled, listener


def _parallel_variants(since: int) -> dict:
    """How the parallel variants whose compiles started after the first `since` were had."""
    return dict(list(tiers.shared("tiered").compiled_by.items())[since:])


def test_a_parallel_variant_compiles_in_the_worker_process_not_here(tmp_path):
    """The background compile runs in the compile worker (another process): this process
    only loads the machine code from numba's disk cache, so it never runs numba's compiler
    (which would hold its GIL and take numba's compile lock) for a parallel variant, and
    `wait()` returns once the variant is loaded."""
    from numba.core import event
    before = len(tiers.shared("tiered").compiled_by)
    compiled, listener = _numba_compiles()
    try:
        s, value = _large_launch(tmp_path, "f_worker", 11)
        tiers.shared("tiered").wait()
    finally:
        event.unregister("numba:compile", listener)
    assert list(_parallel_variants(before).values()) == ["worker"]
    assert compile_worker.WORKER.pid not in (None, os.getpid())
    assert not any(getattr(d, "targetoptions", {}).get("parallel") for d in compiled), compiled
    with s.events.recording() as log:                   # loaded by `wait()`: no compile
        assert s.execute(f"f_worker {N}").text == value
    assert [e.variant for e in log if e.kind == "launch"] == ["parallel"]


def test_the_worker_ignores_an_interrupt_meant_for_the_cells(tmp_path):
    """Ctrl-C and Jupyter's interrupt reach the process group, the worker too: it goes on."""
    import signal
    before = len(tiers.shared("tiered").compiled_by)
    _large_launch(tmp_path, "f_first", 13)
    tiers.shared("tiered").wait()
    pid = compile_worker.WORKER.pid
    os.kill(pid, signal.SIGINT)
    _large_launch(tmp_path, "f_second", 14)
    tiers.shared("tiered").wait()
    assert list(_parallel_variants(before).values()) == ["worker", "worker"]
    assert compile_worker.WORKER.pid == pid


def test_a_failed_worker_falls_back_to_compiling_in_process(tmp_path, monkeypatch):
    broken = _broken_worker()
    monkeypatch.setattr(compile_worker, "WORKER", broken)
    before = len(tiers.shared("tiered").compiled_by)
    s, value = _large_launch(tmp_path, "f_fallback", 12)
    tiers.shared("tiered").wait()
    assert broken.failed and broken.pid is None
    assert list(_parallel_variants(before).values()) == ["in-process"]
    with s.events.recording() as log:
        assert s.execute(f"f_fallback {N}").text == value
    assert [e.variant for e in log if e.kind == "launch"] == ["parallel"]


def test_a_worker_that_does_not_answer_is_killed_and_the_kernel_stays_sequential(
        monkeypatch):
    """A compile that never ends in the worker would hold the background thread (and the
    process's exit, which waits for it) forever: past `ANSWER_SECONDS` the worker is
    killed, the variant is `failed` (not compiled here, where it would hang as well) and
    the next request starts a new worker."""
    started_workers = []

    class Silent(compile_worker.CompileWorker):
        def _start(self):            # reads the request, never answers
            self._process = subprocess.Popen(
                [sys.executable, "-c", "import sys, time; sys.stdin.buffer.read(4); "
                 "time.sleep(120)"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            started_workers.append(self._process)
            return self._process
    silent = Silent()
    monkeypatch.setattr(compile_worker, "WORKER", silent)
    monkeypatch.setattr(compile_worker, "ANSWER_SECONDS", 0.5)
    compiled = []

    class Parallel:
        py_func = _sample_function

        def compile(self, signature):
            compiled.append(signature)
    started = time.monotonic()
    assert tiers._compile(Parallel(), ()) == "failed"           # noqa: SLF001
    assert time.monotonic() - started < 30
    assert compiled == []
    assert silent.pid is None and not silent.failed
    assert started_workers[0].poll() is not None                # killed
    assert tiers._compile(Parallel(), ()) == "failed"           # noqa: SLF001 - a new one
    assert len(started_workers) == 2 and started_workers[1].poll() is not None


def _sample_function(x):
    return x


def test_a_process_exits_while_its_worker_compiles_and_the_worker_ends_with_it(tmp_path):
    """A process that ends right after starting a background compile waits for it (the
    next process finds the variant in numba's cache) and ends its worker."""
    program = textwrap.dedent(f"""
        import atexit, sys, time
        from pathlib import Path
        from accel_kernel.backends.cpu import compile_worker, tiers
        from accel_kernel.session import Session
        from accel_kernel.targets import CompileOptions
        s = Session(target="cpu", options=CompileOptions(Path(sys.argv[1])))
        s.execute("reduce (+) 0 (map (\\\\x -> x * 7) (iota {N}))")
        while compile_worker.WORKER.pid is None:
            time.sleep(0.01)
        print(compile_worker.WORKER.pid, flush=True)
        # after the background threads, before the worker is closed
        atexit.register(lambda: print(*tiers.shared("tiered").compiled_by.values()))
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", program, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    pid, how = done.stdout.split()
    assert how == "worker"
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid), 0)


def test_a_forked_child_starts_its_own_worker(tmp_path):
    """A child made by `fork` does not talk to its parent's worker (their requests would
    mix in one pipe) and holds none of its pipes (the worker ends with the parent)."""
    _large_launch(tmp_path, "f_parent", 15)
    tiers.shared("tiered").wait()
    parent_worker = compile_worker.WORKER.pid
    assert parent_worker is not None
    process = compile_worker.WORKER._process               # noqa: SLF001 - its pipes
    pipes = [process.stdin.fileno(), process.stdout.fileno()]
    child = os.fork()
    if child == 0:                                      # the child: its exit code says
        def closed(fd: int) -> bool:
            try:
                os.fstat(fd)
            except OSError:
                return True
            return False
        os._exit(0 if compile_worker.WORKER.pid is None and all(map(closed, pipes)) else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert compile_worker.WORKER.pid == parent_worker
