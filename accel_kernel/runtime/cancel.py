"""Cooperative cancellation: a flag the kernel's SIGINT handler (or a timer, a dashboard's
Cancel button, a test's thread) sets and the back ends poll, raising `errors.Interrupted`.

Python code (the interpreter, the numpy executor, the host side of the compiled targets)
polls `is_set()` at every statement or loop step. Compiled code cannot call back into Python
to ask, so it polls memory instead: while a `cpu` kernel runs, its error array is *watched*
(`watching(err, slot)`), and `set()` writes 1 into that slot of every watched array. The
kernel's loops read the slot every few thousand iterations (`backends/cpu/polling.py`).
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Iterator


class CancelToken:
    """A settable flag, like `threading.Event` without waiting. Safe to set from any thread
    or from a signal handler (no lock is taken: the watched arrays are a dict that `set`
    copies in one step, under the GIL)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._watched: dict[int, tuple[Any, int]] = {}    # id(array) -> (array, slot)

    def set(self) -> None:
        self._event.set()
        for array, slot in list(self._watched.values()):
            array[slot] = 1

    def clear(self) -> None:
        """Clear the flag for the next run (the watched arrays keep what they were given:
        a kernel told to stop is stopped)."""
        self._event.clear()

    def is_set(self) -> bool:
        return self._event.is_set()

    @contextlib.contextmanager
    def watching(self, array: Any, slot: int) -> Iterator[None]:
        """While inside, `set()` also writes 1 into `array[slot]` (a running kernel's flag);
        an already set token writes it at once. Registered before the check, so a `set()`
        from another thread between the two is never lost."""
        key = id(array)
        self._watched[key] = (array, slot)
        try:
            if self.is_set():
                array[slot] = 1
            yield
        finally:
            self._watched.pop(key, None)

    def watchers(self) -> int:
        """How many running kernels watch the token now (a test waits for one)."""
        return len(self._watched)

    def __repr__(self) -> str:
        return f"CancelToken(set={self.is_set()})"


@contextlib.contextmanager
def sigint_handler(handler: Any) -> Iterator[None]:
    """While inside, SIGINT calls `handler` (a signal handler). Outside the main thread
    signals cannot be handled: then nothing changes."""
    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:        # not the main thread
        previous = None
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def on_sigint(token: CancelToken) -> Iterator[None]:
    """While inside, SIGINT (Ctrl-C, the kernel's Interrupt) sets `token` instead of raising
    KeyboardInterrupt: the evaluation stops where it polls, compiled loops included."""
    token.clear()
    with sigint_handler(lambda signum, frame: token.set()):
        yield
