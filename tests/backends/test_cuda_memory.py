"""The numba.cuda device memory manager (backends/cuda/memory.py) on numba.cuda: a real GPU
when there is one, else the simulator (NUMBA_ENABLE_CUDASIM=1). The simulator replaces the
whole `numba.cuda` module, so without a GPU these tests run in a child process that has it
on (`test_in_the_simulator`), leaving this process's numba.cuda as it is for other tests."""
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


@pytest.mark.skipif(ON_DEVICE, reason="numba.cuda runs in this process")
def test_in_the_simulator():
    pytest.importorskip("numba.cuda")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-n", "0", str(Path(__file__).resolve())],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "5 passed, 1 skipped" in done.stdout.splitlines()[-1]


@pytest.fixture
def session():
    from accel_kernel.session import Session
    return Session(target="interp", budget=3 * 8 * 64)      # three buffers of 64 i64


if ON_DEVICE:
    from numba import cuda        # a module global: the simulator swaps it inside kernels

    @cuda.jit
    def add_one(xs, out):
        i = cuda.grid(1)
        if i < xs.shape[0]:
            out[i] = xs[i] + 1


@needs_device
def test_eviction_under_a_tiny_budget_keeps_every_value(session):
    from accel_kernel.backends.cuda.memory import device_pool
    pool = device_pool(session.memory)
    with session.events.recording() as log:
        chain = [pool.to_device(np.arange(64, dtype=np.int64))]
        for step in range(4):                # five buffers of 512 B under a 1.5 KiB budget
            out = pool.alloc(64, np.int64)
            with pool.working_set(chain[-1], out) as (xs, ys):
                add_one[2, 32](xs, ys)
            pool.launched("add_one", (2,), (32,), chain[-1], out)
            chain.append(out)
        for k, buffer in enumerate(chain):   # the evicted ones come back unchanged
            with pool.working_set(buffer) as (array,):
                assert array.copy_to_host().tolist() == list(range(k, 64 + k))
    kinds = [e.kind for e in log]
    assert kinds.count("evict") >= 2 and kinds.count("reupload") >= 2
    assert kinds.count("launch") == 4 and pool.peak <= session.budget
    assert all(e.in_use <= session.budget for e in log if hasattr(e, "in_use"))


@needs_device
def test_a_device_value_is_read_on_the_host_only_when_read(session):
    from accel_kernel.backends.cuda.memory import device_pool, device_value
    from accel_kernel.backends.numpy.values import Segs
    from accel_kernel.host import DEVICE, FLAT, HostValue
    from accel_kernel.lang import types as T
    pool = device_pool(session.memory)
    flat = Segs(np.array([0, 2, 2, 5], np.int64), np.arange(5, dtype=np.float64))
    on_device = device_value(pool, flat)
    assert [b.nbytes for b in on_device.buffers()] == [32, 40] and on_device.nbytes == 72
    host = HostValue.of(DEVICE, on_device, T.Array(T.Array(T.F64)))
    with session.events.recording() as log:
        assert host.text() == "[[0.0, 1.0], [], [2.0, 3.0, 4.0]]"
        assert host.has(FLAT) and host.interp[2] == [2.0, 3.0, 4.0]
        assert str(host.python()) == "[[0, 1], [], [2, 3, 4]]"
    assert [(e.kind, e.direction) for e in log] == [("transfer", "to_host")] * 2


@needs_device
def test_live_data_over_the_budget_is_the_accel_error_out_of_memory(session):
    from accel_kernel.backends.cuda.memory import device_pool
    from accel_kernel.lang.errors import OutOfMemory
    session.set_budget("1KB")
    pool = device_pool(session.memory)
    a = pool.alloc(64, np.int64)
    with pool.working_set(a), pytest.raises(OutOfMemory) as info:
        pool.alloc(64, np.int64)
    assert info.value.message.startswith("a device buffer of 512 B does not fit in the memory "
                                         "budget of 1000 B")
    assert (info.value.requested, info.value.available) == (512, 1000)
    session.set_budget(None)
    assert pool.budget is None and pool.alloc(64, np.int64).resident


@needs_device
def test_the_cuda_targets_launches_go_through_the_pool():
    from accel_kernel.lang.errors import OutOfMemory
    from accel_kernel.session import Session
    cell = "let ys = map (\\x -> x * 2) (iota 100)\nmap (\\y -> y + 1) ys"
    session = Session(target="cuda", budget="2KB")
    with session.events.recording() as log:
        result = session.execute(cell)
        assert not [e for e in log if e.kind == "transfer" and e.what == "value"]
        assert result.value == [2 * x + 1 for x in range(100)]      # read: downloaded once
    kinds = [e.kind for e in log]
    assert kinds.count("launch") == 2 and kinds.count("alloc") == 3     # two outputs, err
    assert [(e.direction, e.nbytes) for e in log if e.kind == "transfer" and
            e.what == "value"] == [("to_host", 800)]
    assert all(e.in_use <= 2000 for e in log if hasattr(e, "in_use"))
    small = Session(target="cuda", budget="500B")      # one kernel's 800 B output cannot fit
    with pytest.raises(OutOfMemory) as info:
        small.execute(cell)
    assert "does not fit in the memory budget of 500 B" in info.value.message
    assert info.value.span is not None


def test_a_cuda_out_of_memory_is_device_full():
    pytest.importorskip("numba.cuda")
    from numba.cuda.cudadrv.driver import CudaAPIError

    from accel_kernel.backends.cuda.memory import NumbaAllocator
    from accel_kernel.runtime.budget import DeviceFull

    def refuse():
        raise CudaAPIError(2, "Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY")
    with pytest.raises(DeviceFull):
        NumbaAllocator()._refusing_full(refuse)
    with pytest.raises(CudaAPIError):        # any other CUDA error is not ours to hide
        NumbaAllocator()._refusing_full(lambda: (_ for _ in ()).throw(
            CudaAPIError(1, "CUDA_ERROR_INVALID_VALUE")))
