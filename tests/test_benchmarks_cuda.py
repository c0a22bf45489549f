"""The hand-written numba.cuda baselines of the GPU benchmarks (benchmarks/cuda_baselines.py)
give the CPU numba baselines' answers (numpy's sum for the flat sum) on tiny inputs under the
CUDA simulator (a child process: the simulator replaces numba.cuda for a whole process), and
every one of their kernels compiles to PTX for sm_80 and sm_90 and assembles with `ptxas`
(the simulator accepts code a GPU compiler refuses)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cuda

REPO = Path(__file__).resolve().parent.parent
SCALE = 1e-4


def run_baselines() -> dict[str, str]:
    """Each baseline: "ok" or what it gave instead (run in the child)."""
    import numpy as np

    from accel_kernel.backends.cuda import simulator
    from benchmarks import cuda_baselines as G
    from benchmarks import workloads as W
    if simulator.simulated():
        simulator.install()         # its block runner: the baselines launch without it
    out = {}
    for workload in W.WORKLOADS:
        inputs = workload.make_inputs(SCALE)
        expected = workload.canonical(workload.baselines[0].run(inputs.data))
        got = workload.canonical(G.to_host(G.BASELINES[workload.name](G.to_device(inputs.data))))
        good = W.check(got, expected, workload.rtol, workload.atol)
        out[workload.name] = "ok" if good else f"{got!r} != {expected!r}"
    for n in (0, 1, 33, 1000):
        values = np.random.default_rng(n).standard_normal(n)
        (total,) = G.to_host(G.reduce_sum(G.to_device({"values": values})))
        good = np.isclose(total, values.sum(), rtol=1e-12, atol=1e-12)
        out[f"reduce {n}"] = "ok" if good else f"{total} != {values.sum()}"
    return out


def test_baselines_give_numpys_answers_on_the_simulator():
    from cuda_child import on_the_simulator
    results = on_the_simulator(__file__, timeout=900)
    wrong = {name: r for name, r in results.items() if r != "ok"}
    assert not wrong, wrong
    assert len(results) == 12


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
                    reason="PTX needs numba.cuda's compiler, not the simulator")
def test_baselines_compile_to_ptx():
    from accel_kernel.backends.cuda.ptx import assemble, compile_ptx
    from benchmarks import cuda_baselines
    from benchmarks.cuda_baselines import SIGNATURES
    kernels = {v for v in vars(cuda_baselines).values() if hasattr(v, "py_func")}
    assert kernels == set(SIGNATURES), "every kernel of cuda_baselines needs its signature"
    for kernel, signature in SIGNATURES.items():
        for cc in ((8, 0), (9, 0)):
            ptx = compile_ptx(kernel, signature, cc)
            (report,) = assemble(ptx, f"sm_{cc[0]}{cc[1]}")
            assert report.spill_stores == 0, (kernel.__name__, report.show())


@pytest.mark.parametrize("simulator", [True, False])
def test_the_gpu_benchmarks_refuse_without_a_gpu(simulator: bool):
    """`run_targets --targets cuda` with no GPU (or on the simulator): one line, exit 2."""
    from accel_kernel.kernel.cudasim import gpu_count
    if gpu_count() and not simulator:
        pytest.skip("a GPU is here: the benchmarks would run")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env.update({"PYTHONPATH": str(REPO), **({"NUMBA_ENABLE_CUDASIM": "1"} if simulator else {})})
    done = subprocess.run([sys.executable, "-m", "benchmarks.run_targets", "--targets", "cuda"],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2, done.stderr[-3000:]
    (line,) = done.stdout.splitlines()
    assert line.startswith("benchmarks: --targets cuda times a GPU and there is none here")
    assert line.endswith("no simulator timings")


if __name__ == "__main__":
    print(json.dumps(run_baselines()))
