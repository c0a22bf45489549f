"""Warp intrinsics for numba's CUDA simulator, which has none: `shfl_sync`,
`shfl_up_sync`, `shfl_down_sync`, `shfl_xor_sync` and `syncwarp`, so that the kernels that
run on a GPU run unchanged under `NUMBA_ENABLE_CUDASIM=1` (or `load(..., simulate=True)`).

The simulator runs each thread of a block as a Python thread. A shuffle here is what it is on
the device: every lane of the warp posts its value, waits for the others (a barrier of 32),
reads its source lane's value and waits again. As on the device, all 32 lanes must take part
(the full mask): the primitives never shuffle under a divergent branch. The values go
through two alternating slot arrays, so one barrier a shuffle is enough: a lane writes the
next shuffle's slots only after every lane has arrived at this one's barrier, and it reads
this one's before it can arrive at the next.

`launching()` wraps a launch: the warp intrinsics installed, and Python's thread switch
interval at 0.1 ms while the simulator's threads run (they wait on each other's barriers all
the time; the default 5 ms makes a kernel of block scans several times slower).
"""
from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any, Iterator

_lock = threading.Lock()


def _warp() -> tuple[int, dict, threading.Barrier]:
    thread: Any = threading.current_thread()
    manager = thread._manager
    with _lock:
        warps = manager.__dict__.setdefault("_accel_warps", {})
        key = (tuple(thread.blockIdx), thread.thread_id // 32)
        if key not in warps:
            warps[key] = ({"slots": ([None] * 32, [None] * 32)}, threading.Barrier(32))
    state, barrier = warps[key]
    return thread.thread_id % 32, state, barrier


def _exchange(value: Any, source: Any) -> Any:
    lane, state, barrier = _warp()
    thread: Any = threading.current_thread()
    phase = getattr(thread, "_accel_phase", 0)        # this lane's count of shuffles, mod 2
    thread._accel_phase = 1 - phase
    values = state["slots"][phase]
    values[lane] = value
    barrier.wait()
    src = source(lane)
    return values[src] if 0 <= src < 32 else value


def _shfl_sync(self, mask, value, src):
    return _exchange(value, lambda lane: src % 32)


def _shfl_up_sync(self, mask, value, delta):
    return _exchange(value, lambda lane: lane - delta)


def _shfl_down_sync(self, mask, value, delta):
    return _exchange(value, lambda lane: lane + delta)


def _shfl_xor_sync(self, mask, value, lane_mask):
    return _exchange(value, lambda lane: lane ^ lane_mask)


def _syncwarp(self, mask=0xFFFFFFFF):
    _warp()[2].wait()


@contextlib.contextmanager
def launching() -> Iterator[None]:
    """Around a launch on the simulator: the warp intrinsics, a short thread switch interval."""
    install()
    saved = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    try:
        yield
    finally:
        sys.setswitchinterval(saved)


def install() -> None:
    """Give the simulator's `cuda` module the warp intrinsics (idempotent)."""
    from numba.cuda.simulator.kernelapi import FakeCUDAModule
    for name, fn in (("shfl_sync", _shfl_sync), ("shfl_up_sync", _shfl_up_sync),
                     ("shfl_down_sync", _shfl_down_sync), ("shfl_xor_sync", _shfl_xor_sync),
                     ("syncwarp", _syncwarp)):
        if not hasattr(FakeCUDAModule, name):
            setattr(FakeCUDAModule, name, fn)


def simulated() -> bool:
    """Whether numba.cuda is the simulator (`NUMBA_ENABLE_CUDASIM=1` when it was imported)."""
    try:
        from numba.cuda.core import config
    except ImportError:                 # numba-cuda before its own config module
        from numba.core import config
    return bool(config.ENABLE_CUDASIM)
