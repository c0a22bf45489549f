"""A kernel's sequential twin (backends/cpu/tiers.py) without the loop copies that pay only at
scale (`polling.sequential_body`): its text, and its values against the parallel variant's on
segments short and long (a segment loop's plain copy and its strip-mined one), in sparse and
dense chunks of a segmented filter (the writing pass's per-segment count)."""
from __future__ import annotations

import numpy as np
import pytest

from accel_kernel.backends.cpu import tiers
from accel_kernel.backends.cpu.codegen import generate
from accel_kernel.backends.cpu.codegen_body import polled_segment
from accel_kernel.backends.cpu.polling import POLL_EVERY, sequential_body
from accel_kernel.kernel.loading import bind_python
from accel_kernel.session import Session
from accel_kernel.targets import CompileOptions

SEGMENTED_FILTER = ("def f (ns: []i64) : [](i64, i64) = "
                    "[(i, j) | i <- ns, j <- iota i, (i * 7 + j) % 1000 == 0]")


def functions(source: str) -> dict[str, str]:
    """The module's functions by name (their text from `def` to the next blank line)."""
    out = {}
    for chunk in source.split("\n\n"):
        for line in chunk.splitlines():
            if line.startswith("def "):
                out[line[4:].split("(", 1)[0]] = chunk
    return out


def generated(text: str) -> dict[str, str]:
    program = Session().program_stages(text, "t.accel", stop_after="fuse")[-1].program
    return functions(generate(program).source)


def test_the_sequential_twin_has_the_strip_mined_segment_loop_alone():
    body = polled_segment(" " * 8, "i", "start", "end", ["            x = i"])
    assert sequential_body(body) == [
        "        seg_end = end",
        "        block = start",
        "        block_stop = seg_end",
        "        while not stop_asked(err):",
        f"            block_end = min(block + {POLL_EVERY}, block_stop)",
        "            for i in range(block, block_end):",
        "                x = i",
        "            if block_end >= block_stop:",
        "                break",
        "            block = block_end"]


def test_a_segmented_filters_twins():
    fns = generated(SEGMENTED_FILTER)
    kernels = [name for name in fns if name.endswith("_filter")]
    assert kernels, list(fns)
    for name in kernels:
        parallel, sequential = fns[name], fns[name + "_seq"]
        for copy in ("sparse", f"<= {POLL_EVERY} and not stop_asked(err)"):
            assert copy in parallel
            assert copy not in sequential
        assert "searchsorted" not in parallel + sequential
        assert parallel.count("while not stop_asked(err)") == 2      # sparse count, long
        assert sequential.count("while not stop_asked(err)") == 1


def test_a_hist_kernels_twin_keeps_its_loops():
    """A one-row hist launch runs the sequential twin at any scale (codegen_hist.py)."""
    fns = generated("def f (is: []i64) : []i64 = "
                    "let ps = expand (\\i -> i % 13) (\\i j -> (i * 31 + j) % 1001) is "
                    "in reduce_by_index (replicate 997 0) max 0 ps (map (\\_ -> 1) ps)")
    def body(text: str) -> str:
        return text.split("\ndef ", 1)[1].split("\n", 1)[1]
    hist = [name for name in fns if name.endswith("_hist")]
    assert hist and all(f"<= {POLL_EVERY} and not stop_asked(err)" in fns[n] for n in hist)
    for name in hist:
        assert body(fns[name + "_seq"]) == body(fns[name])


@pytest.mark.parametrize("lengths", [
    [5, 0, 9000, 3, 20000, 0, 4096, 4097, 1],          # short and long, sparse chunks
    [3000] * 40,                                        # many short segments
])
def test_the_twins_give_the_same_values(lengths, tmp_path):
    results = {}
    for mode in ("interp", "sequential", "parallel"):
        s = (Session(target="interp") if mode == "interp" else
             Session(target="cpu", options=CompileOptions(tmp_path / mode, kernels=mode)))
        bind_python(s, {"ns": np.array(lengths, dtype=np.int64)}, "test")
        s.execute(SEGMENTED_FILTER)
        s.execute("def g (ns: []i64) : []i64 = "
                  "map (\\i -> reduce (+) 0 (map (\\j -> j * i % 11) (iota i))) ns")
        with s.events.recording() as log:
            results[mode] = (s.execute("f ns").text, s.execute("g ns").text)
        if mode != "interp":
            assert {e.variant for e in log if e.kind == "launch"} == {mode}
    assert results["sequential"] == results["parallel"] == results["interp"]
