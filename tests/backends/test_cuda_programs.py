"""The `cuda` target on every program of tests/programs/: the value or the error (kind and
position) that `interp` gives, on the CUDA simulator (no GPU needed), and on a GPU when
there is one.

numba.cuda chooses the simulator when it is imported (`NUMBA_ENABLE_CUDASIM=1`), so the
programs run in a child process (this file run as a script), all of them in one process
(about a minute), and a program of every scalar builtin on edge values (NaN, infinities,
-0.0, wrapping integers) prints what `interp` prints. Every kernel kind is built on `cuda`:
a program that says "not built yet" fails the test as a wrong answer does.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cuda_ptx import BUILTINS  # noqa: E402  (every scalar builtin, edge values)

pytestmark = pytest.mark.cuda

REPO = Path(__file__).resolve().parents[2]


SHARDS = 4            # child processes (the suite's two workers run two at a time)


def run_every_program(shard: int = 0, shards: int = 1) -> dict[str, str]:
    """The outcome on `cuda` of every `shards`-th program from the `shard`-th: "ok",
    "not built: <message>" or what went wrong."""
    sys.path.insert(0, str(REPO / "tests"))
    from test_programs import PROGRAMS, check_error_report, read_expectation

    from accel_kernel.cli import main
    results = {}
    for program in PROGRAMS[shard::shards]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(["run", str(program), "--target", "cuda"])
            except SystemExit as exit:
                code = exit.code
        expect, printed, report = read_expectation(program), out.getvalue(), err.getvalue()
        name = str(program.relative_to(REPO / "tests" / "programs"))
        if code == 2 and "not built yet" in report:
            results[name] = "not built: " + report.strip()
        elif expect.kind is None:
            good = code == 0 and printed == expect.value + "\n" and report == ""
            results[name] = "ok" if good else f"exit {code}, printed {printed!r}, {report!r}"
        else:
            try:
                assert code == 1 and printed == ""
                check_error_report(report, str(program), program.read_text(encoding="utf-8"),
                                   expect)
                results[name] = "ok"
            except AssertionError:
                results[name] = f"exit {code}, expected {expect}, reported {report!r}"
    if shard == 0:
        results["<every scalar builtin>"] = same_as_interp(BUILTINS)
    return results


def same_as_interp(text: str) -> str:
    """"ok" when `text` prints the same on `cuda` as on `interp` (edge values: NaN,
    infinities, -0.0, wrapping integers), else both outputs. On a GPU the transcendental
    functions are libdevice's, within a few units in the last place of the correctly
    rounded result (docs/cuda.md, "Floating point on a GPU"): floats there agree to ULPS
    units; on the simulator (Python's math) they agree exactly."""
    import tempfile

    from accel_kernel.backends.cuda.simulator import simulated
    from accel_kernel.cli import main
    with tempfile.NamedTemporaryFile("w", suffix=".accel", delete=False) as f:
        f.write(text)
    printed = []
    for target in ("interp", "cuda"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            main(["run", f.name, "--target", target])
        printed.append(out.getvalue())
    os.unlink(f.name)
    same = printed[0] == printed[1] or (not simulated() and within_ulps(*printed, ULPS))
    return "ok" if same else f"interp: {printed[0]!r}, cuda: {printed[1]!r}"


ULPS = 8        # libdevice's documented bounds are 1-4 ulp a call; the program sums a few
FLOAT = re.compile(r"(-?\d+\.\d+(?:e[-+]?\d+)?(?:f32)?)")


def within_ulps(a: str, b: str, ulps: int) -> bool:
    """The same printed text, except floats that differ by at most `ulps` units in the last
    place of the larger (f32 values: of f32)."""
    import numpy as np
    pa, pb = FLOAT.split(a), FLOAT.split(b)
    if len(pa) != len(pb) or pa[::2] != pb[::2]:
        return False
    for x, y in zip(pa[1::2], pb[1::2]):
        if x.endswith("f32") != y.endswith("f32"):
            return False
        kind = np.float32 if x.endswith("f32") else np.float64
        u, v = kind(x.removesuffix("f32")), kind(y.removesuffix("f32"))
        if abs(u - v) > ulps * np.spacing(max(abs(u), abs(v))):
            return False
    return True


def outcomes(simulator: bool, shard: int) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    done = subprocess.run([sys.executable, __file__, str(shard), str(SHARDS)], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def check(results: dict[str, str]) -> None:
    wrong = {name: r for name, r in results.items() if r != "ok"}
    assert not wrong, "\n".join(f"{name}: {r}" for name, r in wrong.items())
    assert len(results) > 200 // SHARDS


@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_program_on_the_simulator(shard: int):
    check(outcomes(simulator=True, shard=shard))


def gpu_present() -> bool:
    try:
        from numba import config, cuda
        return not config.ENABLE_CUDASIM and cuda.is_available()
    except ImportError:
        return False


@pytest.mark.skipif(not gpu_present(), reason="no NVIDIA GPU here")
def test_every_program_on_a_gpu():
    for shard in range(SHARDS):
        check(outcomes(simulator=False, shard=shard))


def test_floats_compare_within_ulps_and_nothing_else_does():
    a = "([(0.7071067811865476, 0.3535533905932738, 0.4054651f32, nan, -0.0, 3)], 1e-05)"
    b = "([(0.7071067811865476, 0.35355339059327373, 0.40546513f32, nan, -0.0, 3)], 1e-05)"
    assert within_ulps(a, b, 8) and not within_ulps(a, b, 0)
    assert not within_ulps(a, b.replace("0.35355339059327373", "0.3535533905932"), 8)
    assert not within_ulps(a, b.replace(", 3)", ", 4)"), 8)          # integers: exactly
    assert not within_ulps(a, b.replace("0.40546513f32", "0.40546513"), 8)  # the type too


if __name__ == "__main__":
    print(json.dumps(run_every_program(int(sys.argv[1]), int(sys.argv[2]))))
