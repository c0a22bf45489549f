"""Values of the `cuda` target stay on the device (backends/cuda/driver.py, memory.py): between
kernels of a run and between cells, read on the host only when something on the host reads
them, and the memory budget evicts and uploads them again with results unchanged.

Under the simulator (NUMBA_ENABLE_CUDASIM=1, which must be set before numba is imported) the
tests run in a child process (`test_in_the_simulator`), or in this one on a GPU."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.cuda

SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def _has_gpu() -> bool:
    try:
        from numba import cuda
        return bool(cuda.is_available())
    except Exception:        # no numba-cuda, or a driver that fails to load
        return False


ON_DEVICE = SIMULATED or _has_gpu()
needs_device = pytest.mark.skipif(not ON_DEVICE, reason="no GPU and no simulator "
                                  "(test_in_the_simulator runs these in a child process)")

# four arrays of 64 i64 (512 B each) live at once, then a kernel reading the first and the
# last: live data 2.5 KiB, the largest working set two inputs, an output and the error flag
CELLS = ["let a = map (\\x -> x + 1) (iota 64)",
         "let b = map (\\x -> x * 2) a",
         "let c = map (\\x -> x * 3) b",
         "let d = map (\\x -> x - 1) c",
         "let e = map (\\p -> p.0 + p.1) (zip a d)",
         "(e, a, c)"]
BUDGET = 1600
CHAIN = "let ys = map (\\x -> x * 2) (iota 100)\nlet zs = map (\\y -> y + 1) ys\nmap (\\z -> z * 3) zs"


@pytest.mark.skipif(ON_DEVICE, reason="numba.cuda runs in this process")
def test_in_the_simulator():
    pytest.importorskip("numba.cuda")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-n", "0", str(Path(__file__).resolve())],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "13 passed, 1 skipped" in done.stdout.splitlines()[-1]


def _session(target: str = "cuda", budget=None):
    from accel_kernel.session import Session
    return Session(target=target, budget=budget)


def _values(log) -> list[tuple[str, int, int]]:
    """The transfers of values (not of error flags): (direction, buffer, bytes)."""
    return [(e.direction, e.buffer, e.nbytes) for e in log
            if e.kind == "transfer" and e.what == "value"]


def _interp(cells: list[str]) -> str:
    session = _session("interp")
    for cell in cells:
        result = session.execute(cell)
    return result.text


@needs_device
@pytest.mark.parametrize("as_cells", [False, True], ids=["one program", "one cell each"])
def test_live_data_over_the_budget_is_evicted_and_uploaded_again(as_cells):
    cells = CELLS if as_cells else ["\n".join(CELLS)]
    expected = _interp(cells)
    for budget in (BUDGET, None):
        session = _session(budget=budget)
        with session.events.recording() as log:
            for cell in cells:
                result = session.execute(cell)
            assert result.text == expected
        kinds = [e.kind for e in log]
        if budget is None:
            assert "evict" not in kinds and "reupload" not in kinds
            continue
        assert kinds.count("evict") >= 2 and kinds.count("reupload") >= 1
        assert all(e.in_use <= budget for e in log if hasattr(e, "in_use"))
        evicted = {e.buffer for e in log if e.kind == "evict"}
        again = [e.buffer for e in log if e.kind == "reupload"]
        assert set(again) <= evicted
        # `a` (buffer 1) went to the host to make room, and came back for the last kernel
        assert 1 in evicted and 1 in again
        launch = max(k for k, e in enumerate(log) if e.kind == "launch")
        assert kinds.index("reupload") < launch


@needs_device
def test_a_working_set_over_the_budget_is_out_of_memory_and_changes_nothing():
    from accel_kernel.lang.errors import OutOfMemory
    session = _session(budget="1000B")      # an input and an output of 512 B cannot fit
    session.execute(CELLS[0])
    with pytest.raises(OutOfMemory) as info:
        session.execute(CELLS[1])
    message = info.value.message
    assert "a device buffer of 512 B does not fit in the memory budget of 1000 B" in message
    assert (info.value.requested, info.value.available) == (512, 1000)
    assert info.value.span is not None
    assert session.lookup("b") is None
    assert session.execute("a").value == list(range(1, 65))
    session.set_budget(None)
    assert session.execute(CELLS[1] + "\nb").value == [2 * x for x in range(1, 65)]


@needs_device
def test_an_upload_over_the_budget_is_out_of_memory_at_the_kernel_reading_it():
    from accel_kernel.lang.errors import OutOfMemory
    session = _session("cpu", budget="300B")
    session.execute("let xs = iota 64")
    session.set_target("cuda")
    with pytest.raises(OutOfMemory) as info:
        session.execute("map (\\x -> x + 1) xs")
    assert "a device buffer of 512 B does not fit in the memory budget of 300 B" \
        in info.value.message
    assert info.value.span is not None and info.value.span.line == 1


@needs_device
def test_a_chain_of_kernels_downloads_nothing_until_its_result_is_read():
    session = _session()
    with session.events.recording() as log:
        result = session.execute(CHAIN)
        assert [e.kind for e in log].count("launch") == 3 and _values(log) == []
        assert result.value == [3 * (2 * x + 1) for x in range(100)]
        assert result.text.startswith("[3, 9, 15")
    (download,) = _values(log)                       # read twice, downloaded once
    assert download[0] == "to_host" and download[2] == 800


@needs_device
def test_a_global_made_on_cuda_stays_there_and_cpu_downloads_it_once():
    from accel_kernel.host import DEVICE, FLAT
    session = _session()
    session.execute(CHAIN.replace("\nmap", "\nlet ws = map"))
    with session.events.recording() as log:
        assert session.execute("map (\\w -> w - 3) ws").value[:3] == [0, 6, 12]
    assert [d for d, _, _ in _values(log)] == ["to_host"]     # nothing uploaded; the result
    session.set_target("cpu")
    with session.events.recording() as log:
        assert session.execute("map (\\w -> w + 1) ws").value[:2] == [4, 10]
        assert session.execute("reduce (+) 0 ws").value == sum(3 * (2 * x + 1)
                                                                for x in range(100))
    assert _values(log) == [("to_host", log[0].buffer, 800)]     # once, for both cells
    host = session._globals["ws"].value
    assert host.has(DEVICE) and host.has(FLAT)


@needs_device
def test_a_flat_global_is_uploaded_once_by_the_first_kernel_that_reads_it():
    session = _session("cpu")
    session.execute("let xs = map (\\x -> x * 2) (iota 50)")
    session.set_target("cuda")
    with session.events.recording() as log:
        session.execute("let ys = map (\\x -> x + 1) xs")
        session.execute("let zs = map (\\x -> x + 2) xs")
        assert session.execute("length xs").value == 50
    assert _values(log) == [("to_device", log[0].buffer, 400)]
    assert session.execute("zs").value == [2 * x + 2 for x in range(50)]


@needs_device
def test_host_statements_read_a_device_value_once():
    session = _session()
    cell = ("let ys = map (\\x -> x * 2) (iota 40)\n"
            "let s = ys[3] + ys[5]\n"          # indexing reads one element each
            "let n = length ys\n"              # its length reads none
            "let r = reverse ys\n"             # a library function reads them all, once
            "let m = reverse ys\n"
            "(s, n, ys[7], r[0] + m[1])")        # ys[7] from its host copy
    with session.events.recording() as log:
        assert session.execute(cell).value == (16, 40, 14, 78 + 76)
    assert [(d, n) for d, _, n in _values(log)] == [("to_host", 8), ("to_host", 8),
                                                    ("to_host", 320)]


@needs_device
def test_a_loops_states_read_on_the_host_do_not_pile_up_on_the_device():
    session = _session()
    cell = ("loop xs = map (\\x -> x * 2) (iota 1000) for i < 20 do "
            "map (\\x -> x + xs[0] + 1) xs")           # xs[0]: the host reads each state
    with session.events.recording() as log:
        assert session.execute(cell).text == _interp([cell])
    assert [e.kind for e in log].count("launch") == 21
    pool = session.memory.devices["cuda:0"]
    assert pool.live_bytes <= 8000 and pool.peak <= 6 * 8000


@needs_device
def test_a_def_called_from_python_on_cuda_gives_numpy_arrays():
    import accel_kernel as acc
    prog = acc.compile("let k = map (\\x -> x * 10) (iota 4)\n"
                       "def addk (xs: []i64) : []i64 = map (\\p -> p.0 + p.1) (zip xs k)\n")
    out = prog.run("addk", np.arange(4), target="cuda")
    assert isinstance(out, np.ndarray) and out.tolist() == [0, 11, 22, 33]


@needs_device
def test_device_arrays_are_handles_on_pool_buffers():
    from accel_kernel.backends.cuda import device
    from accel_kernel.backends.cuda.memory import RunAllocator
    session = _session()
    alloc = RunAllocator(session.memory)
    xs = alloc.upload(np.arange(12, dtype=np.float64).reshape(3, 4))
    flat = xs.reshape(-1)
    assert (xs.shape, xs.size, xs.ndim, len(xs), xs.dtype) == ((3, 4), 12, 2, 3, np.float64)
    assert flat.buffer is xs.buffer and flat.shape == (12,) and xs.reshape(2, 6).shape == (2, 6)
    with session.events.recording() as log:
        assert device.host(flat).tolist() == list(range(12))
        assert device.host(xs).shape == (3, 4)
    assert [e.direction for e in log] == ["to_host", "to_host"]
    with session.events.recording() as log:
        assert xs.row(1).tolist() == [4.0, 5.0, 6.0, 7.0] and flat.row(11) == 11.0
    assert [(e.direction, e.nbytes) for e in log] == [("to_host", 32), ("to_host", 8)]
    session.set_budget(0)                     # evicted: rows read from the host copy
    with session.events.recording() as log:
        assert xs.row(2).tolist() == [8.0, 9.0, 10.0, 11.0] and not xs.buffer.resident
    assert [e.kind for e in log] == []
    with pytest.raises(TypeError, match="device.host"):
        np.asarray(xs)
    with pytest.raises(ValueError):
        xs.reshape(5)


if ON_DEVICE:
    from numba import cuda        # a module global: the simulator swaps it inside kernels

    @cuda.jit
    def add_one(n, xs, out, err):
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            out[i] = xs[i] + 1
        if cuda.grid(1) == 0 and n > 3:
            err[1] = n


@needs_device
def test_a_launch_writes_device_outputs_in_place_and_copies_back_only_err():
    from accel_kernel.backends.cuda import device
    from accel_kernel.backends.cuda.memory import RunAllocator
    session = _session()
    alloc = RunAllocator(session.memory)
    xs, err = alloc.upload(np.arange(40)), np.zeros(3, np.int64)
    with session.events.recording() as log:
        out = alloc((40,), np.int64)
        device.launch(add_one, 40, [xs], [out], err, alloc)
    assert err.tolist() == [0, 40, 0] and device.host(out).tolist() == list(range(1, 41))
    assert [(e.kind, getattr(e, "what", "")) for e in log if e.kind != "alloc"] == [
        ("transfer", "err"), ("launch", ""), ("transfer", "err")]
    # host arrays: the input uploaded and the output copied back, both freed after
    host_out = np.zeros(5, np.int64)
    with session.events.recording() as log:
        device.launch(add_one, 5, [np.arange(5) * 2], [host_out], err, alloc)
    assert host_out.tolist() == [1, 3, 5, 7, 9] and err.tolist() == [0, 5, 0]
    values = [(e.kind, e.direction if e.kind == "transfer" else "") for e in log
              if e.kind == "free" or e.kind == "transfer" and e.what == "value"]
    assert values == [("transfer", "to_device"), ("transfer", "to_host"), ("free", ""),
                      ("free", "")]


@needs_device
def test_the_trace_of_a_run_under_a_budget_shows_evictions(tmp_path):
    import json
    from accel_kernel.cli import main
    program, trace = tmp_path / "p.accel", tmp_path / "t.jsonl"
    program.write_text("\n".join(CELLS) + "\n")
    assert main(["run", str(program), "--target", "cuda", "--budget", f"{BUDGET}B",
                 "--trace", str(trace)]) == 0
    kinds = [json.loads(line)["kind"] for line in trace.read_text().splitlines()]
    assert {"alloc", "transfer", "launch", "evict", "reupload"} <= set(kinds)
