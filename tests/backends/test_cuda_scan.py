"""The `cuda` target's scan and filter kernels (`backends/cuda/codegen_scan.py`) against
`interp`, on the CUDA simulator in a child process (numba.cuda picks the simulator when it
is imported): sizes 0, 1, 33, 70 and 130 (an empty block, ranges of several tiles per
block), blocks of 32 and 128 threads (one warp, and the block scans' warp totals), a
non-neutral `ne`, non-commutative operators (first, last), operators with free variables, bool, i32, f64 and i64 scans,
compacted outputs beside values over all elements, reductions over kept and over all
elements, and index errors inside the kernels (interp's error kind and position). Every
kernel of those programs also compiles to PTX for sm_80 and sm_90 and assembles.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.cuda

REPO = Path(__file__).resolve().parents[2]

SCANS = """let xs = map (\\i -> (i * 7919) % 101 - 50) (iota {n})
let a = scan (+) 5 xs
let b = scan (\\p q -> q) 7 xs
let c = scan (\\p q -> p) 7 xs
let m = length xs
let d = scan (\\p q -> if m > 0 then max p q else p) 3 (map (\\x -> x % 7) xs)
let e = scan (||) false (map (\\x -> x > 40) xs)
let g = scan (+) 0.5 (map (\\x -> f64 x) xs)
let h = scan min (i32 1000) (map i32 xs)
let k = filter (\\y -> y > 0) (map (\\x -> x * 2) xs)
let (big, small) = partition (\\x -> x > 10) xs
let z = reduce (\\p q -> if m >= 0 then q else p) 3 (filter (\\x -> x < -45) xs)
let w = reduce (+) 5 (let (u, _) = partition (\\x -> x % 3 == 0) xs in u) * (let (p, q) = (2, [0 | x <- xs, let y = 0]) in p + length q)
(a, b, c, d, e, g, h, k, big, small, z, length (filter (\\x -> x == 0) xs), reduce (+) 1 xs, w)
"""

# f32 scans, reductions of kept bool, i32 and f64 values (non-neutral `ne`)
TYPES = """let xs = map (\\i -> (i * 37) % 11 - 5) (iota 45)
let a = scan (+) (f32 0.5) (map f32 xs)
let b = reduce (||) false (map (\\x -> x > 3) (filter (\\x -> x % 2 == 0) xs))
let c = reduce (+) (i32 2) (map i32 (filter (\\x -> x > 0) xs))
let d = reduce (+) 0.25 (map f64 (filter (\\x -> x < 0) xs))
(a, b, c, d)
"""

ERRORS = ["""let xs = map (\\i -> i * 3) (iota 40)
let a = scan (+) 0 (map (\\i -> xs[i + 1]) (iota 40))
a
""", """let xs = map (\\i -> i * 3) (iota 70)
let k = filter (\\i -> xs[i * 2] > 0) (iota 70)
k
""", """let xs = map (\\i -> i * 3) (iota 50)
let r = reduce (+) 0 (map (\\i -> xs[i + 10]) (filter (\\i -> i % 2 == 0) (iota 50)))
r
"""]

# (threads per block, most blocks) of the simulator's launches, and the sizes run with them
GRIDS = [((32, 4), (0, 1, 33, 130)), ((128, 1), (70,))]


def outcome(text: str, target: str) -> str:
    """What `accel run` prints (an error: its kind and position only: which failing
    element reports it is the device's choice)."""
    from accel_kernel.cli import main
    with tempfile.NamedTemporaryFile("w", suffix=".accel", delete=False) as f:
        f.write(text)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            main(["run", f.name, "--target", target])
        except SystemExit:
            pass
    os.unlink(f.name)
    printed = out.getvalue()
    error = re.match(r"error: (\w+) at \S+?:(\d+:\d+)", printed)
    return f"{error.group(1)} at {error.group(2)}" if error else printed


def run_all() -> list[str]:
    """Every program on every grid: the differences from interp."""
    from accel_kernel.backends.cuda import device
    wrong = []
    for (threads, blocks), sizes in GRIDS:
        device.SIM_THREADS, device.SIM_MAX_BLOCKS = threads, blocks
        texts = [SCANS.format(n=n) for n in sizes]
        texts += [TYPES, *ERRORS] if threads == 32 else []
        for text in texts:
            want, got = outcome(text, "interp"), outcome(text, "cuda")
            if want != got or "accel" in got:
                wrong.append(f"{threads}x{blocks}: {text.splitlines()[0]}: interp {want!r}, "
                             f"cuda {got!r}")
    return wrong


def test_scan_and_filter_kernels_give_interps_values_and_errors():
    from cuda_child import on_the_simulator
    wrong = on_the_simulator(__file__, timeout=600)
    assert wrong == [], "\n".join(wrong)


def test_scan_and_filter_kernels_compile_to_ptx():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_cuda_ptx import check_compiles, cuda_module
    for k, text in enumerate([SCANS.format(n=33), TYPES]):
        module = cuda_module(text, f"scan{k}.accel")
        kinds = {code.kind for code in module.kernels.values()}
        assert kinds & {"scan", "filter"}, kinds
        check_compiles(module)


if __name__ == "__main__":
    print(json.dumps(run_all()))
