"""Tiered kernels: every kernel of the `cpu` target is generated twice, as a parallel numba
function (`@njit(parallel=True)`, its loop over the elements a `prange`) and as its
sequential twin `<name>_seq` (`@njit(nogil=True)`: the same body, the `prange` a plain
loop). The twins compute the same values in the same order (the chunks of a reduction,
scan or filter are the same, only run one after the other), so which one ran never changes
a result.

numba compiles a function when it is first called, and the sequential variant compiles
three to four times faster. So a launch (`Launcher`, called by the generated host
functions as `launch(parallel, sequential, work, *args)`) runs:

- the sequential variant when the kernel's work is below `parallel_from` (a thread pool's
  start costs more than it gains there) — a notebook's small cells never compile a parallel
  kernel;
- the parallel one when the work is larger and the parallel variant is compiled for these
  argument types; while it is not, the sequential one, and the first such launch starts
  the parallel variant's compile in the background (a thread, one per kernel and argument
  types, that waits for it).

The compile runs in the compile worker (`compile_worker.py`), a second Python process that
compiles it into numba's disk cache; this process then loads it from there (the machine
code: 4 to 40 ms, no LLVM pass). Not in a thread here, as before: numba's compiler is
Python code and held this process's GIL for most of the compile's second or two, so a cell
re-run meanwhile (04-fusion's `both [1, 2, 3] [4, 5]`, 4.2 ms alone) took 5.3 ms at the
median and 10 ms at p90 on a quiet machine, 1.4 ms of it waiting for the GIL (with the
worker 4.2 and 4.7 ms; docs/stages.md, "Tiered kernels"); it never waited for numba's
compile lock (no launch of a compiled variant takes it), but the cells' own compiles
waited for a parallel variant's whole compile. The worker competes for a core, not for the
GIL, and only the load takes the compile lock. Where the
worker cannot (it failed to start, died, or numba failed there) the thread compiles
in-process as before: it first waits until the process has compiled nothing else for
`QUIET_SECONDS` (numba compiles one function at a time, a process-wide lock: a cell's own
compiles never wait for a parallel one), and the process's switch interval is
`SWITCH_SECONDS` meanwhile (0.5 ms, not Python's 5 ms), so a cell running then waits at
most that long each time it needs the GIL back. `Tiers.compiled_by` says which way each
variant came. The threads are not daemons (the cell's thread is), so a process's exit
waits for its compiles and the next process finds them in the cache.

The work of a launch is its elements (segments' elements, rows × width); a kernel with a
loop inside (a `loop`, a `while`, SEQ-INNER's loop over an array) counts `LOOP_WEIGHT` per
element. `PARALLEL_FROM` is measured (benchmarks/tiers.py, RESULTS.md "Tiered kernels").

`Tiers.mode` chooses: `tiered` (the above; the default), `sequential` or `parallel`
(always that variant, compiled when first needed: the tests run both).
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ...targets import KERNEL_MODES as MODES
from . import compile_worker, placement

PARALLEL = "@njit(parallel=True, cache=True)"          # a kernel's parallel variant
SEQUENTIAL = "@njit(cache=True, nogil=True)"           # and its sequential twin
PARALLEL_FROM = 32_768         # elements; below it the sequential variant is faster
LOOP_WEIGHT = 64               # what an element of a kernel with an inner loop counts
QUIET_SECONDS = 0.25           # a background compile waits for this long without others
SWITCH_SECONDS = 0.0005        # the switch interval while one compiles (Python's is 5 ms)
THREAD_NAME = "accel-parallel-compile"


class Tiers:
    """The variant choice of one process's launches, and the parallel variants compiling in
    the background (one thread per kernel and argument types, started once)."""

    def __init__(self, mode: str = "tiered", parallel_from: int = PARALLEL_FROM):
        if mode not in MODES:
            raise ValueError(f"kernels must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        self.parallel_from = parallel_from
        self._lock = threading.Lock()
        self._compiling: dict[tuple[int, tuple], threading.Thread] = {}
        # how each parallel variant came: `worker`, `in-process` or `failed` (`_compile`)
        self.compiled_by: dict[tuple[int, tuple], str] = {}

    def launcher(self) -> "Launcher":
        """A launch function for one host function call, recording which variants ran."""
        return Launcher(self)

    def variant(self, parallel: Any, work: int, args: tuple) -> str:
        """`parallel` or `sequential`: which one a launch of `work` runs now."""
        if self.mode != "tiered":
            return self.mode
        if work < self.parallel_from:
            return "sequential"
        return "parallel" if self._ready(parallel, args) else "sequential"

    def _ready(self, parallel: Any, args: tuple) -> bool:
        """Whether the parallel variant is compiled for these arguments' types; if not, its
        compile is started in a background thread (once)."""
        signature = tuple(parallel.typeof_pyval(a) for a in args)
        if signature in parallel.overloads:
            return True
        key = (id(parallel), signature)
        with self._lock:
            if key not in self._compiling:
                _FOREGROUND.install()
                # not a daemon (as the cell's thread is): the process's exit waits for it
                thread = threading.Thread(target=self._compile, args=(key, parallel, signature),
                                          name=THREAD_NAME, daemon=False)
                self._compiling[key] = thread
                thread.start()
        return False

    def _compile(self, key: tuple[int, tuple], parallel: Any, signature: tuple) -> None:
        self.compiled_by[key] = _compile(parallel, signature)

    def wait(self) -> None:
        """Wait for the background compiles started so far (tests; a process's exit waits
        for them too: they are not daemon threads, so numba's disk cache gets them)."""
        with self._lock:
            threads = list(self._compiling.values())
        for thread in threads:
            thread.join()


_SHARED: dict[str, Tiers] = {}


def shared(mode: str) -> Tiers:
    """The process's `Tiers` of a mode: one per process, so that a kernel shared by two
    programs (a compile unit, units.py) starts its background compile once."""
    if mode not in _SHARED:
        _SHARED[mode] = Tiers(mode)
    return _SHARED[mode]


class _Foreground:
    """When the process's other threads last compiled with numba (its `numba:compile`
    events, which a load from the disk cache does not fire), for the background compiles
    to wait their turn."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._installed = False
        self.compiling = 0          # compiles under way (they nest: a callee's in its caller's)
        self.last = 0.0             # time.monotonic() of the last start or end

    def install(self) -> None:
        with self._lock:
            if self._installed:
                return
            self._installed = True
            self.last = time.monotonic()    # the compiles before were not seen: one ends now
        from numba.core import event

        foreground = self

        class Listener(event.Listener):
            def on_start(self, _: Any) -> None:
                foreground._change(1)

            def on_end(self, _: Any) -> None:
                foreground._change(-1)
        event.register("numba:compile", Listener())

    def _change(self, step: int) -> None:
        if threading.current_thread().name == THREAD_NAME:
            _BACKGROUND.compiles += step > 0
            return
        with self._lock:
            self.compiling += step
            self.last = time.monotonic()

    def wait_until_quiet(self, seconds: float) -> None:
        while True:
            with self._lock:
                quiet = self.compiling <= 0 and time.monotonic() - self.last >= seconds
            if quiet:
                return
            time.sleep(seconds / 5)


_FOREGROUND = _Foreground()


class _ThreadCompiles(threading.local):
    compiles = 0                     # numba compiles this (background) thread started


_BACKGROUND = _ThreadCompiles()


class _ShortSwitches:
    """`sys.setswitchinterval(SWITCH_SECONDS)` while any background compile runs, the
    interval before restored after the last."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._saved = 0.0

    def __enter__(self) -> None:
        with self._lock:
            if self._running == 0:
                self._saved = sys.getswitchinterval()
                sys.setswitchinterval(min(self._saved, SWITCH_SECONDS))
            self._running += 1

    def __exit__(self, *_: Any) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0:
                sys.setswitchinterval(self._saved)


_SHORT_SWITCHES = _ShortSwitches()


def _compile(parallel: Any, signature: tuple) -> str:
    """Compile the parallel variant for `signature`: in the compile worker, then loaded from
    numba's disk cache (`worker`); where that fails, here (`in-process`: once the process
    has been quiet for `QUIET_SECONDS`, with short switch intervals); `failed` where numba
    cannot, or where the worker did not answer in time (`CompileTimeout`: a compile that
    hangs there would hang here too): the sequential variant goes on; a call of the
    parallel one would raise."""
    try:
        if compile_worker.WORKER.compile(parallel, signature):
            before = _BACKGROUND.compiles
            parallel.compile(signature)
            if _BACKGROUND.compiles == before:       # a load: no numba compile here
                return "worker"
            return "in-process"                      # not in the cache after all
        _FOREGROUND.wait_until_quiet(QUIET_SECONDS)
        with _SHORT_SWITCHES:
            parallel.compile(signature)
        return "in-process"
    except Exception:   # noqa: BLE001 - the sequential variant goes on; a call would raise
        return "failed"


@dataclass
class Launcher:
    """`launch(parallel, sequential, work, *args)` as the generated host functions call it:
    runs the chosen variant on `args`; `variants` and `called` list what ran, in order."""
    tiers: Tiers
    variants: list[str] = field(default_factory=list)
    called: list[Any] = field(default_factory=list)

    def __call__(self, parallel: Any, sequential: Any, work: int, *args: Any) -> Any:
        variant = self.tiers.variant(parallel, int(work), args)
        self.variants.append(variant)
        if variant == "parallel":
            self.called.append(parallel)
            # its threads on different cores (placement.py); tiered, it is compiled
            with placement.team(compiled=self.tiers.mode == "tiered"):
                return parallel(*args)
        self.called.append(sequential)
        return sequential(*args)
