"""What `accel run` imports: the `accel` command (`cli.command`, in a process of its own) runs a
program without importing the heavy modules it does not use (RESULTS.md, "Start-up of `accel
run`"), while `cli.main`, which runs in its caller's process, leaves numba's extensions alone.

Each case runs a small script in a subprocess that calls the command line and then writes the
names in `sys.modules` to a file; no timing is asserted. The last test is the command's own
end: a reader that leaves early (`accel stages F | head`) is no error.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROGRAM = REPO / "tests" / "programs" / "array_basics.accel"   # irregular rows in its value

# Never needed to run a program on one process: the cluster, the notebook, the drawings, the
# GPU, and Awkward (`accel run` prints values without it; numba loads it as an extension).
NEVER = ("awkward", "distributed", "dask", "IPython", "ipykernel", "ipywidgets", "graphviz",
         "zmq", "jupyter_client", "numba.cuda")

SCRIPT = """
import json, sys
from accel_kernel import cli
out, how, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
if how == "command":
    sys.argv = ["accel"] + argv
    code = cli.command()
else:
    code = cli.main(argv)
with open(out, "w") as f:
    json.dump(sorted(sys.modules), f)
sys.exit(code)
"""


def run(tmp_path: Path, how: str, target: str) -> tuple[set[str], str]:
    """The modules imported by `accel run PROGRAM --target TARGET` (through `cli.command` or
    `cli.main`), and what it printed."""
    out = tmp_path / "modules.json"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(out), how, "run", str(PROGRAM),
                           "--target", target], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    return set(json.loads(out.read_text())), done.stdout


def expected_value() -> str:
    line = PROGRAM.read_text().rstrip("\n").splitlines()[-1]
    assert line.startswith("-- expected: ")
    return line.removeprefix("-- expected: ") + "\n"


def test_the_command_on_cpu_imports_numba_and_none_of_the_heavy_modules(tmp_path):
    modules, printed = run(tmp_path, "command", "cpu")
    assert printed == expected_value()
    assert "numba" in modules                       # it did run compiled kernels
    assert [m for m in NEVER if m in modules] == []


def test_the_command_on_interp_imports_no_compiler_either(tmp_path):
    modules, printed = run(tmp_path, "command", "interp")
    assert printed == expected_value()
    assert [m for m in NEVER + ("numba", "llvmlite", "scipy") if m in modules] == []


def test_main_in_its_callers_process_leaves_numbas_extensions_loaded(tmp_path):
    registered = {ep.module.split(".")[0]
                  for ep in entry_points(group="numba_extensions", name="init")}
    modules, printed = run(tmp_path, "main", "cpu")
    assert printed == expected_value()
    assert registered <= modules


def test_a_reader_that_leaves_early_is_not_an_error():
    """`accel stages F | head`: the pipe closes before the output is written."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "accel_kernel", "stages", str(PROGRAM)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0, err
    assert err == ""
