"""Every `cuda` correctness check on a real NVIDIA GPU, in parallel, with a short table last.

    python scripts/gpu_check.py [OUTDIR] [--fuzz N] [--jobs J]

The suite runs these checks on numba's simulator (tests/backends/test_cuda_*.py run their
cases in a child process with NUMBA_ENABLE_CUDASIM=1). Here the same children run with the
simulator off, so every kernel is compiled by NVVM and runs on the GPU: every program of
tests/programs/ (in shards), the redomap, scan, segmented (each variant forced on every
program) and library cases, the suite's random programs and N more from the fuzzer, then the
tests that run in-process only when a GPU is present (device memory, residency, the library's
large inputs). Each child's output and log go to OUTDIR ($OUT, else /tmp/gpu_check); the
exit status is 1 when any check disagrees with `interp`.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests" / "backends"
PROGRAM_SHARDS = 8


def judge_mapping(results: dict) -> list[str]:
    """{name: "ok" | what went wrong} -> what went wrong."""
    return [f"{k}: {v}" for k, v in results.items() if v != "ok"]


def judge_segmented(results: dict) -> list[str]:
    """{case: {"interp": printed, "cuda": printed, ...}}: errors agree on kind and position."""
    wrong = []
    for case, got in results.items():
        same = (got["cuda"].split(": index")[0] == got["interp"].split(": index")[0]
                if case.startswith("error") else got["cuda"] == got["interp"])
        if not same:
            wrong.append(f"{case}: interp {got['interp']!r}, cuda {got['cuda']!r}")
    return wrong


def judge_random(results: dict) -> list[str]:
    return results["unbuilt"] + results["wrong"]


def jobs(fuzz: int, minutes: float = 4) -> list[tuple[str, list[str], object]]:
    py = sys.executable
    out = [(f"programs {s}/{PROGRAM_SHARDS}",
            [py, str(TESTS / "test_cuda_programs.py"), str(s), str(PROGRAM_SHARDS)],
            judge_mapping) for s in range(PROGRAM_SHARDS)]
    out += [("redomap", [py, str(TESTS / "test_cuda_redomap.py")], judge_mapping),
            ("scan", [py, str(TESTS / "test_cuda_scan.py")], lambda wrong: wrong),
            ("segmented cases", [py, str(TESTS / "test_cuda_segmented.py")], judge_segmented),
            ("library", [py, str(TESTS / "test_cuda_library.py")], judge_mapping),
            ("random (the suite's)", [py, str(TESTS / "test_cuda_random.py")], judge_random)]
    out += [(f"programs, {v} per segment {s}/{PROGRAM_SHARDS // 2}",
             [py, str(TESTS / "test_cuda_segmented.py"), v, str(s), str(PROGRAM_SHARDS // 2)],
             judge_mapping) for v in ("warp", "block") for s in range(PROGRAM_SHARDS // 2)]
    if fuzz:
        out.append((f"fuzz {fuzz}", [py, "-m", "tests.fuzz", "--programs", str(fuzz),
                                      "--seed", "7", "--minutes", str(minutes),
                                      "--targets", "interp,cuda"], None))
    return out


def run(name: str, argv: list[str], judge, outdir: Path, env: dict) -> tuple[str, str, float]:
    stem = "".join(c if c.isalnum() else "_" for c in name)
    start = time.perf_counter()
    if judge is None:
        argv = argv + ["--out", str(outdir / stem)]
    try:
        done = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True,
                              timeout=560)
    except subprocess.TimeoutExpired:
        return name, "TIMEOUT", time.perf_counter() - start
    took = time.perf_counter() - start
    (outdir / f"{stem}.log").write_text(done.stdout + "\n--- stderr\n" + done.stderr)
    if judge is None:                      # the fuzzer: its own exit status and summary
        last = done.stdout.strip().splitlines()[-1:] or ["(no output)"]
        return name, ("ok: " if done.returncode == 0 else "WRONG: ") + last[0], took
    if done.returncode != 0 or not done.stdout.strip():
        return name, f"FAILED (exit {done.returncode}): {done.stderr[-2000:]}", took
    results = json.loads(done.stdout.splitlines()[-1])
    wrong = judge(results)
    if wrong:
        return name, f"WRONG {len(wrong)} of {len(results)}:\n    " + "\n    ".join(
            w[:600] for w in wrong), took
    if isinstance(results, list):              # the scan cases: their differences
        checked = "no differences"
    elif "agree" in results:                   # random programs: verdict lists
        checked = f"{len(results['agree'])} agree"
    else:
        checked = f"{len(results)} checked"
    return name, f"ok ({checked})", took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", nargs="?", default=os.environ.get("OUT", "/tmp/gpu_check"))
    parser.add_argument("--fuzz", type=int, default=200, help="random programs beyond the suite's")
    parser.add_argument("--fuzz-minutes", type=float, default=4.0, help="the fuzzer's time limit")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    parser.add_argument("--only", default="", help="only the checks whose name contains this")
    parser.add_argument("--simulator", action="store_true",
                        help="the children on the simulator (to check this script, no GPU)")
    args = parser.parse_args()
    outdir = Path(args.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    if args.simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    from numba import cuda
    if not cuda.is_available():
        print("gpu_check: no NVIDIA GPU here (numba.cuda.is_available() is false)")
        return 2
    name = getattr(cuda.get_current_device(), "name", "the simulator")
    print("gpu:", name.decode() if isinstance(name, bytes) else name, flush=True)
    todo = [job for job in jobs(args.fuzz, args.fuzz_minutes) if args.only in job[0]]
    with ThreadPoolExecutor(args.jobs) as pool:
        done = list(pool.map(lambda job: run(*job, outdir, env), todo))
    in_process = [str(TESTS / "test_cuda_memory.py"), str(TESTS / "test_cuda_residency.py"),
                  f"{TESTS / 'test_cuda_library.py'}::test_on_a_gpu"]
    start = time.perf_counter()
    pytest = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "-rs", *in_process], env=env, cwd=REPO, capture_output=True,
                            text=True, timeout=560)
    (outdir / "pytest.log").write_text(pytest.stdout + pytest.stderr)
    tail = pytest.stdout.strip().splitlines()[-1:] or ["(no output)"]
    done.append(("pytest (GPU-only tests)", ("ok: " if pytest.returncode == 0 else "FAILED: ")
                 + tail[0], time.perf_counter() - start))
    bad = 0
    for name, verdict, took in done:
        bad += not verdict.startswith("ok")
        print(f"{name:32} {took:6.1f} s  {verdict}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
