"""numba.cuda chooses the simulator when it is imported (`NUMBA_ENABLE_CUDASIM=1`), so the
suite's cuda tests run their cases in a child process: the test file run as a script, which
prints its results as JSON on its last line (scripts/gpu_check.py runs the same children on a
GPU, with the simulator off)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def on_the_simulator(script: str, *args: str, timeout: float = 600) -> Any:
    """The JSON that `python script *args` prints last, run with the simulator on."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run([sys.executable, script, *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])
