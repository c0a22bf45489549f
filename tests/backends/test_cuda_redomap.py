"""The `cuda` target's redomap kernels (`backends/cuda/codegen_redomap.py`): small programs
run on the CUDA simulator (a child process: numba.cuda picks the simulator when imported)
print what `interp` prints, value or error, on sizes 0, 1, 31, 33 and 130, under grids of
blocks of one, two and four warps, one block folding every tile and more partials than a
block's threads; and every kernel of them compiles to PTX for sm_80 and sm_90.

The programs hold several reductions in one kernel (f64, i64, i32, f32, bool), element
outputs beside reductions, operators that do not commute (the last non-zero value, the
right and left projections: any reordered step changes the result), an `ne` that is not
neutral (applied once, at the front: padding lanes never hold it), an `ne` and an operator
reading the program's variables, and an out-of-bounds index inside the kernel.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cuda_ptx import check_compiles, cuda_module  # noqa: E402

pytestmark = pytest.mark.cuda

REPO = Path(__file__).resolve().parents[2]

PROGRAMS = {
    # element outputs next to two reductions, a non-neutral ne, an ne that is a variable
    "elements": """let n = {n}
let z = 7
let xs = map (\\i -> f64 (i % 7) - 2.5) (iota n)
let r = let ys = map (\\x -> x * 2.0) xs in (ys, reduce (+) 100.0 ys, reduce max (-1000.0) ys)
(r, reduce (+) z (map (\\x -> i64 x * 3) xs))
""",
    # operators that do not commute
    "order": """let n = {n}
let xs = map (\\i -> (i * 7919) % 13 - 6) (iota n)
(reduce (\\a b -> if b != 0 then b else a) 5 xs,
 reduce (\\a b -> b) (-1) (map (\\x -> x * 3 + 1) xs), reduce (\\a b -> a) 3 xs)
""",
    # bool, i32 and f32 reductions, an operator reading a variable
    "types": """let n = {n}
let k = 100
let bs = map (\\i -> i % 5 != 4) (iota n)
(reduce (&&) true bs, reduce (||) false bs, reduce (\\a b -> min (max a b) k) 0 (iota n),
 reduce (+) 0i32 (map i32 (iota n)), reduce (+) 0.5f32 (map (\\i -> f32 i * 0.25f32) (iota n)))
""",
    # an index out of bounds in the element code (at the last element)
    "error": """let n = {n}
let xs = map (\\i -> i * 2) (iota n)
let idx = map (\\i -> if i == n - 1 then n + 5 else i) (iota n)
reduce (+) 0 (map (\\j -> xs[j]) idx)
""",
}
SIZES = (0, 1, 31, 33, 130)
# (threads per block, most blocks) of the simulator's grids: 130 elements in blocks of 32
# are 5 tiles over 3 blocks (two tiles each, the last one), in one block all 5
GRIDS = ((32, 4), (64, 2), (128, 2), (32, 1))
MANY = ("elements", 1100, (32, 40))     # 35 partials: more than the final block's threads


def cases() -> list[tuple[str, int, tuple[int, int]]]:
    out = [(name, n, grid) for name in PROGRAMS for n in SIZES for grid in GRIDS
           if n > 33 or grid[0] == 32]     # small sizes: one tile per block anyway
    return out + [MANY]


def run(args: list[str]) -> tuple[int, str]:
    from accel_kernel.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            code = main(args)
        except SystemExit as exit:
            code = exit.code
    return code, out.getvalue()


def compare(todo: list[tuple[str, int, tuple[int, int]]]) -> dict[str, str]:
    """Each case: "ok" when `cuda` prints what `interp` prints, else both outputs."""
    from accel_kernel.backends.cuda import device
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, n, (threads, most) in todo:
            path = os.path.join(tmp, f"{name}_{n}.accel")
            Path(path).write_text(PROGRAMS[name].format(n=n))
            expect = run(["run", path, "--target", "interp"])
            device.SIM_THREADS, device.SIM_MAX_BLOCKS = threads, most
            got = run(["run", path, "--target", "cuda"])
            key = f"{name} n={n} grid={threads}x{most}"
            results[key] = "ok" if got == expect else f"interp {expect!r}, cuda {got!r}"
    return results


def test_redomap_programs_on_the_simulator_give_interps_value_or_error():
    from cuda_child import on_the_simulator
    results = on_the_simulator(__file__, timeout=600)
    assert len(results) == len(cases())
    wrong = {k: v for k, v in results.items() if v != "ok"}
    assert not wrong, "\n".join(f"{k}: {v}" for k, v in wrong.items())


def test_the_error_is_interps_and_the_values_are_not_trivial():
    """The programs are what the comparison needs: the error case fails on `interp`, the
    others give values."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in PROGRAMS.items():
            path = os.path.join(tmp, f"{name}.accel")
            Path(path).write_text(text.format(n=130))
            code, out = run(["run", path, "--target", "interp"])
            if name == "error":
                assert code == 1 and out.startswith(f"error: IndexError at {path}:4:26: "), out
            else:
                assert code == 0 and out.startswith("(") and "error" not in out, out


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_every_redomap_kernel_compiles_to_ptx(name: str):
    module = cuda_module(PROGRAMS[name].format(n=130), f"{name}.accel")
    kinds = [k.kind for k in module.kernels.values()]
    assert "redomap" in kinds
    redomaps = [k.name for k in module.kernels.values() if k.kind == "redomap"]
    assert all(f"{k}_partials" in module.params and f"{k}_final" in module.params
               for k in redomaps)
    check_compiles(module)


def test_a_kernel_with_several_reductions_and_element_outputs_is_one_kernel():
    module = cuda_module(PROGRAMS["elements"].format(n=130), "elements.accel")
    (kernel, *_) = [k for k in module.kernels.values() if k.kind == "redomap"]
    assert len(kernel.outputs) == 3 and kernel.outputs[0].rep.rank == 1
    assert "atomic" not in module.source


if __name__ == "__main__":
    print(json.dumps(compare(cases())))
