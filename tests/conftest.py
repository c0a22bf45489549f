"""Fixtures and options shared by the whole suite.

One kernel cache for the whole run: `$ACCEL_CACHE_DIR` when it is set, else `.cache/kernels`
in the repository (gitignored). It is set in the environment when pytest starts, before any
session is made and before the xdist workers and the subprocesses (`accel run`, the kernel,
the notebooks) start, so that all of them read the same directory: a kernel compiled once by
any of them is a numba cache hit for the others, and for the next run (a fresh clone, as CI
runs, starts empty).
"""
import os
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parent.parent

# Tests never assert on wall-clock time: no per-example deadline and no "input generation is
# slow" health check for any property test (a loaded machine failed them, not the code).
settings.register_profile("accel", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("accel")
KERNEL_CACHE = Path(os.environ.get("ACCEL_CACHE_DIR") or REPO / ".cache" / "kernels")
os.environ["ACCEL_CACHE_DIR"] = str(KERNEL_CACHE)


def pytest_configure(config):
    """Under xdist, the run's id is made here (the workers get it as
    $PYTEST_XDIST_TESTRUNUID), so that the run's PTX record can be removed at its end."""
    if not hasattr(config, "workerinput") and getattr(config.option, "testrunuid", 0) is None:
        config.option.testrunuid = uuid.uuid4().hex


def pytest_unconfigure(config):
    """The record of the PTX check's passed kernels, shared by the workers of this run
    (tests/backends/test_cuda_ptx.py, `_run_record`), goes with the run."""
    run = getattr(config.option, "testrunuid", None)
    if run and not hasattr(config, "workerinput"):
        shutil.rmtree(Path(tempfile.gettempdir()) / f"accel-ptx-checked-{run}",
                      ignore_errors=True)


def pytest_addoption(parser):
    parser.addoption("--update-fixtures", action="store_true", default=False,
                     help="rewrite the expected text of tests/passes/fixtures/ from what the "
                          "passes print now (also: ACCEL_UPDATE_FIXTURES=1)")


def pytest_collection_modifyitems(config, items):
    """The slow tests first: the notebooks run in a kernel, then the tests that compile `cpu`
    kernels (numba). Dealt out first, they run side by side on the two workers, and the quick
    tests fill in at the end, so that no slow test is left to run alone while the other
    worker idles. The notebooks come before the other runs of their cells on `cpu`
    (test_differential.py), which then find the cells' kernels in the cache. The order within
    each group is kept (a stable sort)."""
    items.sort(key=_slowness)


def _slowness(item) -> int:
    """0: a notebook run; 1: compiles cpu kernels; 2: the rest."""
    if item.get_closest_marker("notebook") is not None:
        return 0
    callspec = getattr(item, "callspec", None)
    on_cpu = callspec is not None and callspec.params.get("target") == "cpu"
    if on_cpu or "cpu" in item.originalname or item.path.name.startswith("test_cpu"):
        return 1
    return 2


def pytest_report_header(config):
    return f"accel kernel cache: {KERNEL_CACHE}"


NOT_BUILT = "map (\\r -> sort (zip r r)) [[2, 1], [3]]"


@pytest.fixture
def not_built(monkeypatch):
    """A program the compiled targets do not build, for the tests of the "not built yet"
    answer (`NotImplementedError` naming the construct, no fallback to interp, nothing bound,
    `accel` exiting 2). Every construct of LANGUAGE.md flattens today, so this takes one
    flatten rule away for the test: `sort` of tuples inside a map."""
    from accel_kernel.passes.flatten.wholearray import WholeArrayRules

    def refuse(self, *args):
        raise NotImplementedError("flatten: `sort` of tuples inside a map is not built yet")
    monkeypatch.setattr(WholeArrayRules, "_sort_tuples_lifted", refuse)
    return NOT_BUILT
