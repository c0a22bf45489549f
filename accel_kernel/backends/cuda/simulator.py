"""numba's CUDA simulator, made to run our kernels and to run them fast.

Warp intrinsics, which the simulator lacks: `shfl_sync`, `shfl_up_sync`, `shfl_down_sync`,
`shfl_xor_sync` and `syncwarp`, so that the kernels that run on a GPU run unchanged under
`NUMBA_ENABLE_CUDASIM=1` (or `load(..., simulate=True)`). A shuffle here is what it is on the
device: every lane of the warp posts its value, waits for the others (a barrier of the 32
lanes), then reads its source lane's value. As on the device, all 32 lanes must take part (the
full mask): the primitives never shuffle under a divergent branch. The values go through two
alternating slot arrays, so one barrier a shuffle is enough: a lane writes the next shuffle's
slots only after every lane has arrived at this one's barrier, and it reads this one's before
it can arrive at the next.

A block runner (`Block`, in place of numba's `BlockManager`). numba runs each CUDA thread of
a block as a Python thread, all at once, and its manager busy-polls them (`is_alive`,
a flag per thread) to find when all wait at `syncthreads`: much of a simulated launch went to
the polling and to the GIL passing between hundreds of runnable threads. Here the threads of a
block take turns: each is still a Python thread (the kernel is plain Python that may block
anywhere), but only the one holding the block's baton runs. It runs until it waits at a
barrier (`syncthreads`, a warp's shuffle) or ends, then hands the baton to the next ready
thread and sleeps on its own lock; the last thread to arrive at a barrier makes its waiters
ready again. The launching thread sleeps until the block is done. Barriers count as numba's
do (`syncthreads` waits for the threads still running; a shuffle for the warp's 32 lanes); a
thread's exception aborts the block and is raised by the launch as numba raises it (the
thread and block in its message), and a block where no thread can go on (a deadlock, which
numba's would hang on) raises too. A block's threads are kept for the next blocks (starting
a Python thread costs more than most simulated threads' work). Only one thread runs at a time, so the atomics and the
scheduler's state need no more locking. The order of the threads is fixed, so a launch is
deterministic (the real-GPU runs check what interleavings could break), and a thread that
spins on another thread's write without a barrier between would spin forever here (no
kernel of ours does; blocks never waited on each other in numba's simulator either). The
programs of tests/programs/ on the simulator (four child processes, side by side on one
machine): 122 s of CPU with numba's manager (and a short thread switch interval), 39 s
with this one.

`launching()` wraps a launch: the intrinsics and the block runner installed, and `cuda.shared
.array` told its call site from the caller's frame (numba extracts the whole stack on every
call).
"""
from __future__ import annotations

import contextlib
import sys
import threading
from collections import deque
from typing import Any, Callable, Iterator

import numpy as np


class _Abort(BaseException):
    """Raised in a waiting thread when its block is aborted: the thread ends quietly."""


_idle: list["Lane"] = []    # lanes whose block ended normally, for the next blocks


class Lane(threading.Thread):
    """One simulated CUDA thread (what numba's `BlockThread` offers kernel code), kept for
    the next blocks once its block ends (starting a Python thread costs more than most
    simulated threads' work)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.go = threading.Lock()
        self.go.acquire()                 # released when this thread gets the baton

    def assign(self, block: "Block", target: Callable[[], None], block_idx: tuple,
               thread_idx: tuple) -> None:
        from numba.cuda.simulator.kernelapi import Dim3
        self._manager = block
        self._target_fn = target
        self.blockIdx = Dim3(*block_idx)
        self.threadIdx = Dim3(*thread_idx)
        dim = block._block_dim
        self.thread_id = thread_idx[0] + dim[0] * (thread_idx[1] + dim[1] * thread_idx[2])
        self.phase = 0                    # this lane's count of shuffles, mod 2

    def run(self) -> None:
        while True:
            self.go.acquire()
            block = self._manager
            try:
                if block.aborted:
                    return
                if block._debug:
                    np.seterr(divide="raise")
                self._target_fn()
            except _Abort:
                return
            except Exception as e:
                block.fail(self, e)
                return
            block.finish(self)
            if block.aborted:             # a deadlock found by `finish`, or another's error
                return

    def syncthreads(self) -> None:
        self._manager.wait_all(self)

    def _sync_with(self, value: Any, test: Callable[[np.ndarray], Any]) -> Any:
        self._manager.block_state[tuple(self.threadIdx)] = value
        self.syncthreads()
        result = test(self._manager.block_state)
        self.syncthreads()
        return result

    def syncthreads_count(self, value: Any) -> int:
        return self._sync_with(value, np.count_nonzero)

    def syncthreads_and(self, value: Any) -> int:
        return self._sync_with(value, lambda state: 1 if np.all(state) else 0)

    def syncthreads_or(self, value: Any) -> int:
        return self._sync_with(value, lambda state: 1 if np.any(state) else 0)

    def __str__(self) -> str:
        return f"Thread <<<{self.blockIdx}, {self.threadIdx}>>>"


class Block:
    """Runs one block's threads in turns (see the module docstring); numba's kernel launcher
    calls it as its `BlockManager`: `Block(f, grid_dim, block_dim, debug).run(point, *args)`."""

    def __init__(self, f: Callable, grid_dim: tuple, block_dim: tuple, debug: bool):
        self._f = f
        self._grid_dim = grid_dim
        self._block_dim = block_dim
        self._debug = debug
        self.block_state = np.zeros(block_dim, dtype=np.bool_)
        self.ready: deque[Lane] = deque()
        self.at_sync: list[Lane] = []
        self.warps: dict[int, tuple[list[Lane], dict]] = {}
        self.live = 0
        self.aborted = False
        self.error: tuple[BaseException, Any] | None = None
        self.lanes: list[Lane] = []
        self.done = threading.Lock()
        self.done.acquire()

    def run(self, grid_point: tuple, *args: Any) -> None:
        f = self._f
        points = list(np.ndindex(*self._block_dim))
        while len(_idle) < len(points):
            lane = Lane()
            lane.start()
            _idle.append(lane)
        lanes = self.lanes = _idle[len(_idle) - len(points):]
        del _idle[len(_idle) - len(points):]
        for lane, point in zip(lanes, points):
            lane.assign(self, lambda: f(*args), grid_point, point)
        self.live = len(lanes)
        self.ready.extend(lanes[1:])
        lanes[0].go.release()
        try:
            self.done.acquire()
        except BaseException:             # an interrupt: the next thread to run ends
            self.aborted = True
            raise
        if self.error is not None:        # the block's lanes end: none goes back
            raise self.error[0].with_traceback(self.error[1])
        _idle.extend(lanes)

    # the scheduler: only the thread holding the baton calls these

    def _switch(self, lane: Lane) -> None:
        """`lane` waits: the next ready thread runs, and `lane` sleeps until it is ready."""
        if not self.ready:
            self._stuck(lane)
            raise _Abort
        self.ready.popleft().go.release()
        lane.go.acquire()
        if self.aborted:
            raise _Abort

    def wait_all(self, lane: Lane) -> None:
        """`syncthreads`: wait until every thread still running waits here."""
        self.at_sync.append(lane)
        if len(self.at_sync) == self.live:
            self._release_sync(lane)
        else:
            self._switch(lane)

    def _release_sync(self, running: Lane | None) -> None:
        self.ready.extend(t for t in self.at_sync if t is not running)
        self.at_sync = []

    def warp(self, lane: Lane) -> dict:
        """The shared state of `lane`'s warp (its shuffle slots)."""
        entry = self.warps.get(lane.thread_id // 32)
        if entry is None:
            entry = self.warps[lane.thread_id // 32] = ([], {"slots": ([None] * 32,
                                                                      [None] * 32)})
        return entry[1]

    def wait_warp(self, lane: Lane) -> None:
        """A warp barrier: wait until the warp's 32 lanes wait here."""
        waiting = self.warps[lane.thread_id // 32][0]
        waiting.append(lane)
        if len(waiting) == 32:
            self.ready.extend(t for t in waiting if t is not lane)
            waiting.clear()
        else:
            self._switch(lane)

    def finish(self, lane: Lane) -> None:
        self.live -= 1
        if self.live == 0:
            self.done.release()
            return
        if self.at_sync and len(self.at_sync) == self.live:
            self._release_sync(None)
        if not self.ready:
            self._stuck(lane)
            return
        self.ready.popleft().go.release()

    def fail(self, lane: Lane, e: Exception) -> None:
        """numba's message: the failing thread and block, then the exception's own."""
        where = f"tid={list(lane.threadIdx)} ctaid={list(lane.blockIdx)}"
        message = f"{where}: {e}" if str(e) else where
        self._abort(type(e)(message), sys.exc_info()[2])

    def _stuck(self, lane: Lane) -> None:
        """No thread can go on: numba's manager would wait forever, this one raises."""
        self._abort(RuntimeError(f"simulator: every thread of block {tuple(lane.blockIdx)} "
                                 "waits (at a barrier that some threads never reach)"), None)

    def _abort(self, error: BaseException, traceback: Any) -> None:
        """Every other lane of the block ends (raising `_Abort` where it waits, or at its
        next turn), and the launch raises `error`."""
        self.error = (error, traceback)
        self.aborted = True
        running = threading.current_thread()
        for lane in self.lanes:
            if lane is not running:
                lane.go.release()
        self.done.release()


def _exchange(value: Any, source: Callable[[int], int]) -> Any:
    lane: Any = threading.current_thread()
    block = lane._manager
    phase = lane.phase
    lane.phase = 1 - phase
    values = block.warp(lane)["slots"][phase]
    values[lane.thread_id % 32] = value
    block.wait_warp(lane)
    src = source(lane.thread_id % 32)
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
    lane: Any = threading.current_thread()
    lane._manager.warp(lane)
    lane._manager.wait_warp(lane)


def _shared_array(self, shape, dtype, alignment=None):
    """numba's `FakeCUDAShared.array`, its allocation found by the caller's file and line
    without extracting the whole stack."""
    from numba.cuda.simulator.kernelapi import numpy_support, types
    if alignment is not None:
        raise RuntimeError("Array alignment is not supported in cudasim")
    if isinstance(dtype, types.Type):
        dtype = numpy_support.as_dtype(dtype)
    if shape == 0:                      # dynamic shared memory: one buffer for all
        count = self._dynshared_size // dtype.itemsize
        return np.frombuffer(self._dynshared.data, dtype=dtype, count=count)
    frame = sys._getframe(1)
    caller = (frame.f_code.co_filename, frame.f_lineno)
    allocation = self._allocations.get(caller)
    if allocation is None:
        allocation = self._allocations[caller] = np.empty(shape, dtype)
    return allocation


@contextlib.contextmanager
def launching() -> Iterator[None]:
    """Around a launch on the simulator: the intrinsics and the block runner."""
    install()
    yield


def install() -> None:
    """Give the simulator's `cuda` module the warp intrinsics, its launcher our block runner
    and its shared arrays a cheaper call-site lookup (idempotent)."""
    from numba.cuda.simulator import kernel, kernelapi
    for name, fn in (("shfl_sync", _shfl_sync), ("shfl_up_sync", _shfl_up_sync),
                     ("shfl_down_sync", _shfl_down_sync), ("shfl_xor_sync", _shfl_xor_sync),
                     ("syncwarp", _syncwarp)):
        setattr(kernelapi.FakeCUDAModule, name, fn)
    kernel.BlockManager = Block
    kernelapi.FakeCUDAShared.array = _shared_array


def simulated() -> bool:
    """Whether numba.cuda is the simulator (`NUMBA_ENABLE_CUDASIM=1` when it was imported)."""
    try:
        from numba.cuda.core import config
    except ImportError:                 # numba-cuda before its own config module
        from numba.core import config
    return bool(config.ENABLE_CUDASIM)
