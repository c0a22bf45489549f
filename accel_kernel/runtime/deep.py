"""Room for deeply nested programs: the compiler and the interpreter recurse over the syntax
tree, a few Python frames per level, so a sum of 2,000 terms is 2,000 levels deep (`1 + 1 +
...` nests to the left). Python's default limit (1,000 frames) and the main thread's stack
(8 MiB, where a C-level overflow would crash the process) are too small for that.

`run_deep(fn, ...)` runs `fn` on one worker thread with a large stack (`STACK_BYTES`) and a
recursion limit to match (`RECURSION_LIMIT`), so every stage has the same room whatever its
caller (`Session` runs every evaluation and compilation through it: `deep` decorates its
methods, `on_deep_stack` the back ends' entry points). The language's own limit is `MAX_NESTING` levels, checked by the parser
(`lang.parser`): a deeper program is a SyntaxError before anything runs, so a RecursionError
never reaches the user; were one to happen anyway, it is reported as the same SyntaxError.
The worker is one long-lived thread (the parallel runtime of the compiled kernels keeps its
thread pool per calling thread); calls from the worker itself run directly.
"""
from __future__ import annotations

import functools
import queue
import sys
import threading
from typing import Any, Callable, TypeVar

from ..lang.errors import AccelSyntaxError
from ..lang.parser import MAX_NESTING

STACK_BYTES = 1 << 30           # virtual: the pages a shallow program never touches cost nothing
RECURSION_LIMIT = 200_000       # ~5 KiB of stack per frame: well above what a frame takes

T = TypeVar("T")

_lock = threading.Lock()
_worker: "_Worker | None" = None


class _Worker:
    """One daemon thread with a large stack running the calls put into its queue."""

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue = queue.SimpleQueue()
        previous = threading.stack_size()
        threading.stack_size(STACK_BYTES)
        try:
            self.thread = threading.Thread(target=self._serve, name="accel-deep", daemon=True)
            self.thread.start()
        finally:
            threading.stack_size(previous)

    def _serve(self) -> None:
        while True:
            fn, done, box = self.calls.get()
            try:
                box.append((True, _with_limit(fn)))
            except BaseException as error:          # handed to the caller, raised there
                box.append((False, error))
            finally:
                done.set()


def _with_limit(fn: Callable[[], T]) -> T:
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, RECURSION_LIMIT))
    try:
        return fn()
    except RecursionError:
        raise too_deep() from None
    finally:
        sys.setrecursionlimit(previous)


def too_deep(span=None) -> AccelSyntaxError:
    return AccelSyntaxError(f"expression nested too deeply (at most {MAX_NESTING} levels)",
                            span)


def _get_worker() -> _Worker:
    global _worker
    with _lock:
        if _worker is None or not _worker.thread.is_alive():
            _worker = _Worker()
        return _worker


def run_deep(fn: Callable[..., T], *args: Any, on_interrupt: Callable[[], None] | None = None,
             **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` on the worker thread, its result or its exception here. A
    KeyboardInterrupt while waiting calls `on_interrupt` (the session's cancel token: the
    worker stops at its next check) and is raised again."""
    call = functools.partial(fn, *args, **kwargs)
    worker = _get_worker()
    if threading.current_thread() is worker.thread:
        return call()
    done, box = threading.Event(), []
    worker.calls.put((call, done, box))
    try:
        while not done.wait(0.05):          # short waits: signal handlers run in between
            pass
    except BaseException:
        if on_interrupt is not None:
            on_interrupt()
        done.wait()
        raise
    ok, value = box[0]
    if ok:
        return value
    raise value.with_traceback(value.__traceback__)


def deep(method: Callable[..., T]) -> Callable[..., T]:
    """A `Session` method run by `run_deep`, interrupted through the session's `cancel`."""
    @functools.wraps(method)
    def run(self, *args: Any, **kwargs: Any) -> T:
        return run_deep(method, self, *args, on_interrupt=self.cancel.set, **kwargs)
    return run


def on_deep_stack(fn: Callable[..., T]) -> Callable[..., T]:
    """A function run by `run_deep` (the back ends' entry points, which tests and the API
    also call directly); its `cancel` keyword argument, if any, is set on an interrupt."""
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> T:
        cancel = kwargs.get("cancel")
        return run_deep(fn, *args, on_interrupt=cancel.set if cancel is not None else None,
                        **kwargs)
    return run
