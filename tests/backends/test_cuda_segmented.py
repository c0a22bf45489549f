"""The `cuda` target's segmented and rows kernels (`backends/cuda/codegen_segmented.py`): each
variant (a thread, a warp, a block per segment or row), forced by the lengths, gives what
`interp` gives, value or error, on the CUDA simulator; and every kernel compiles to PTX for
sm_80 and sm_90. With `ACCEL_CUDA_SEGMENTED_ALL=1`, also every program of tests/programs/ with
every segmented and rows launch forced to the warp, then the block variant.

The programs run in a child process (numba.cuda chooses the simulator when imported), with
blocks of 64 threads (two warps: the block variant's fold across warps runs), and report
the variants their launches chose (`segmented.CHOSEN`).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.cuda

REPO = Path(__file__).resolve().parents[2]

# reductions of every element type, a non-neutral `ne` (used once), a non-commutative
# operator (the last non-zero element), element outputs beside the reductions
SEGMENTED = """
let lens = {lens}
let xss = map (\\n -> map (\\i -> i * 3 - n) (iota n)) lens
let ys = [5.0, 0.25, -1.5]
(map (\\r -> reduce (+) 100 r) xss,
 map (\\r -> reduce (\\a b -> if b != 0 then b else a) 42 r) xss,
 map (\\r -> reduce (&&) true (map (\\x -> x > -4) r)) xss,
 map (\\r -> reduce (+) 0.5 (map (\\x -> f64 x * 0.25) r)) xss,
 map (\\r -> reduce (+) (i32 1) (map (\\x -> i32 x) r)) xss,
 map (\\r -> reduce (+) (f32 1.0) (map (\\x -> f32 (x % 8)) r)) xss,
 map (\\r -> map (\\x -> x * 2 + length r) r) xss,
 map (\\r -> reduce max (-99.0) (map (\\x -> ys[(x % 3 + 3) % 3]) r)) xss)
"""

# an element out of bounds inside a segmented reduction: interp's IndexError and line
SEGMENTED_ERROR = """
let lens = {lens}
let xss = map (\\n -> iota n) lens
let ys = iota 40
map (\\r -> reduce (+) 0
              (map (\\x -> ys[x]) r)) xss
"""

ROWS = """
let m = map (\\i -> map (\\j -> i * j - 7) (iota {width})) (iota {rows})
(map (\\r -> reduce (+) 100 r) m,
 map (\\r -> reduce (\\a b -> if b != 0 then b else a) 42 r) m,
 map (\\r -> reduce (+) 0.5 (map (\\x -> f64 (x % 5) * 0.5) r)) m)
"""

SHORT = "[3, 0, 1, 5, 2, 0, 7, 1]"             # one thread per segment
MEDIUM = "[31, 33, 0, 130, 1, 100, 32]"        # one warp per segment
LONG = "[300, 0, 290, 500]"                    # one block per segment (mean >= BLOCK_MEAN)
BLOCK_MEAN = 256        # the simulator's (a thread per element is slow there): 1024 on a GPU
CASES = {
    "segmented thread": (SEGMENTED.format(lens=SHORT), "thread"),
    "segmented none": (SEGMENTED.format(lens="([] : []i64)"), None),
    "segmented one": (SEGMENTED.format(lens="[1]"), "thread"),
    "segmented warp": (SEGMENTED.format(lens=MEDIUM), "warp"),
    "segmented block": (SEGMENTED.format(lens=LONG), "block"),
    "error thread": (SEGMENTED_ERROR.format(lens="[3, 45, 0, 2, 1]"), "thread"),
    "error warp": (SEGMENTED_ERROR.format(lens="[30, 20, 45]"), "warp"),
    "error block": (SEGMENTED_ERROR.format(lens="[270, 300]"), "block"),
    "rows thread": (ROWS.format(width=5, rows=7), "thread"),
    "rows warp": (ROWS.format(width=100, rows=5), "warp"),
    "rows block": (ROWS.format(width=300, rows=3), "block"),
    # a grid of one block: every variant loops over more segments than it has threads for
    "thread, one block": (SEGMENTED.format(lens="map (\\i -> i % 5) (iota 70)"), "thread"),
    "warp, one block": (SEGMENTED.format(lens=MEDIUM), "warp"),
    "block, one block": (SEGMENTED.format(lens=LONG), "block"),
    "rows warp, one block": (ROWS.format(width=40, rows=5), "warp"),
}


def run_cases() -> dict[str, dict]:
    """Each case on interp and on cuda: what each printed, and the variants cuda chose."""
    from accel_kernel.backends.cuda import device, segmented
    from accel_kernel.cli import main
    device.SIM_THREADS = 64                 # two warps a block
    segmented.BLOCK_MEAN = BLOCK_MEAN       # a block per segment from shorter ones
    results = {}
    for name, (text, _) in CASES.items():
        with tempfile.NamedTemporaryFile("w", suffix=".accel", delete=False) as f:
            f.write(text)
        printed = {}
        device.SIM_MAX_BLOCKS = 1 if name.endswith("one block") else 4
        for target in ("interp", "cuda"):
            segmented.CHOSEN.clear()
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                try:
                    main(["run", f.name, "--target", target])
                except SystemExit:
                    pass
            printed[target] = out.getvalue()
        os.unlink(f.name)
        results[name] = {**printed, "chosen": sorted(set(segmented.CHOSEN))}
    return results


@pytest.fixture(scope="module")
def results() -> dict[str, dict]:
    from cuda_child import on_the_simulator
    return on_the_simulator(__file__, timeout=600)


@pytest.mark.parametrize("case", CASES)
def test_each_variant_gives_interps_value_or_error(results, case):
    got = results[case]
    if case.startswith("error"):     # the kind and position (which element: any failing one)
        assert got["cuda"].split(": index")[0] == got["interp"].split(": index")[0]
        assert got["cuda"].splitlines()[1:] == got["interp"].splitlines()[1:]
    else:
        assert got["cuda"] == got["interp"]
    assert "error" not in got["interp"] or "IndexError" in got["interp"]
    assert ("error" in got["interp"]) == case.startswith("error")
    variant = CASES[case][1]
    kernels = {kernel for kernel, _ in got["chosen"]}
    if variant is None:
        assert all(v == "thread" for _, v in got["chosen"])
    else:
        kind = "rows" if case.startswith("rows") else "segmented"
        assert any(kind in kernel for kernel in kernels)
        assert {v for k, v in got["chosen"] if kind in k} == {variant}


def test_every_segmented_kernel_compiles_to_ptx():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_cuda_ptx import check_compiles, cuda_module
    for text in (SEGMENTED.format(lens=SHORT), SEGMENTED_ERROR.format(lens=SHORT),
                 ROWS.format(width=5, rows=7)):
        module = cuda_module(text, "segmented.accel")
        assert any(name.endswith("_block") for name in module.params)
        check_compiles(module)


def run_programs_forced(variant: str, shard: int = 0, shards: int = 1) -> dict[str, str]:
    """Every `shards`-th program of tests/programs/ from the `shard`-th (`test_cuda_programs`)
    with every segmented and rows launch made with `variant`, in blocks of two warps."""
    from accel_kernel.backends.cuda import device, segmented
    device.SIM_THREADS = 64
    segmented.choose_kernel = lambda stats: variant
    from test_cuda_programs import run_every_program
    return run_every_program(shard, shards)


@pytest.mark.skipif(os.environ.get("ACCEL_CUDA_SEGMENTED_ALL") != "1",
                    reason="every program with every variant: ACCEL_CUDA_SEGMENTED_ALL=1 "
                           "(about 2 minutes)")
@pytest.mark.parametrize("variant", ["warp", "block"])
def test_every_program_with_each_variant(variant):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_cuda_programs import check
    from cuda_child import on_the_simulator
    check(on_the_simulator(__file__, variant, timeout=1200))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    print(json.dumps(run_programs_forced(sys.argv[1], *map(int, sys.argv[2:]))
                     if sys.argv[1:] else run_cases()))
