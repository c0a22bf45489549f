"""Tiered kernels (backends/cpu/tiers.py): every `cpu` kernel has a parallel variant and a
sequential twin; which one ran never changes a result. The rest of the suite runs `cpu` as
a user does (tiered: its small inputs run the sequential variants); here kernels of every
kind run with every launch sequential, with every launch parallel, and tiered across the
threshold, on inputs long enough to be cut into several chunks, and must agree exactly."""
from __future__ import annotations

import re

import numpy as np
import pytest

from accel_kernel.backends.cpu import tiers
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


def test_a_background_compile_shortens_the_switch_interval_while_it_runs(monkeypatch):
    """numba's compiler holds the GIL: while it compiles in the background a cell's host
    code waits at most `SWITCH_SECONDS` for it, not Python's 5 ms; the interval is restored
    after, and after a compile that fails."""
    import sys
    monkeypatch.setattr(tiers, "QUIET_SECONDS", 0.0)
    before = sys.getswitchinterval()
    seen = []

    class Parallel:
        def __init__(self, fails: bool):
            self.fails = fails

        def compile(self, _signature):
            seen.append(sys.getswitchinterval())
            if self.fails:
                raise RuntimeError("numba could not")

    tiers._compile(Parallel(False), ())                 # noqa: SLF001 - the thread's target
    tiers._compile(Parallel(True), ())                  # noqa: SLF001
    assert seen == [min(before, tiers.SWITCH_SECONDS)] * 2
    assert sys.getswitchinterval() == before
