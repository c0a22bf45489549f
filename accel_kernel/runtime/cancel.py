"""Cooperative cancellation: a flag the kernel's SIGINT handler (or a timer) sets and the
back ends poll at every function call and loop iteration, raising `errors.Interrupted`."""
from __future__ import annotations

import threading


class CancelToken:
    """A settable flag, like `threading.Event` without waiting. Safe to set from any thread
    or from a signal handler."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def clear(self) -> None:
        self._event.clear()

    def is_set(self) -> bool:
        return self._event.is_set()

    def __repr__(self) -> str:
        return f"CancelToken(set={self.is_set()})"
