"""The `cuda` target on random programs (`tests/fuzz/`'s generator, the suite's stream): each
gives `interp`'s value, or `interp`'s error (kind and line), under the CUDA simulator, in a
child process (numba.cuda picks the simulator when it is imported). A program with a kernel
kind not built yet on `cuda` is listed, never counted as agreeing; anything else (a wrong
value, another error, a crash) fails the test. `python -m tests.fuzz --targets cuda` (with
`NUMBA_ENABLE_CUDASIM=1`) runs many more outside the suite.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cuda

REPO = Path(__file__).resolve().parents[2]
SEED, COUNT = 18, 40          # the suite's fuzz stream (tests/test_fuzz.py), its first programs


def run_random_programs() -> dict[str, list[str]]:
    """Verdicts of `cuda` against `interp`: {"agree": [...], "unbuilt": [...], "wrong": [...]}."""
    sys.path.insert(0, str(REPO))
    from tests.fuzz.generate import generate
    from tests.fuzz.run import AGREE_ERROR, AGREE_VALUE, UNBUILT, InProcess, verdict
    runner = InProcess(timeout=120.0)
    out: dict[str, list[str]] = {"agree": [], "unbuilt": [], "wrong": []}
    for index in range(COUNT):
        text = generate(SEED, index).text
        got = runner.run(text, ["interp", "cuda"])
        if got["interp"].kind not in ("value", "error"):
            continue                              # the reference itself did not finish
        judged, detail = verdict(got["interp"], "cuda", got["cuda"])
        name = f"{SEED}/{index}"
        if judged in (AGREE_VALUE, AGREE_ERROR):
            out["agree"].append(name)
        elif judged == UNBUILT:
            out["unbuilt"].append(f"{name}: {detail}")
        else:
            out["wrong"].append(f"{name}: {detail}: interp {got['interp'].describe()}, "
                                f"cuda {got['cuda'].describe()}\n{text}")
    return out


def test_random_programs_on_the_simulator():
    from cuda_child import on_the_simulator
    result = on_the_simulator(__file__, timeout=900)
    assert not result["wrong"], "\n\n".join(result["wrong"])
    print(f"\ncuda: {len(result['agree'])} random programs agree with interp; "
          f"{len(result['unbuilt'])} not built:", *result["unbuilt"], sep="\n  ")
    assert len(result["agree"]) >= COUNT // 4


if __name__ == "__main__":
    print(json.dumps(run_random_programs()))
