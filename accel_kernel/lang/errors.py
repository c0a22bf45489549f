"""The error kinds of LANGUAGE.md §8. Every accel error has a kind, a message and a span.

`AccelError.kind` is the CamelCase name users see (`error: KIND at FILE:LINE:COL: message`).
Kinds: SyntaxError, TypeError, NameError (compile time); IndexError, DivisionByZero, SizeError
(run time); StreamError, ClusterError (a streamed iterable, a cluster failed); OutOfMemory (an allocation larger than the memory available, raised before it is
made); Interrupted (the user cancelled a running evaluation); InternalError (a bug of the
implementation, naming the stage it happened in: never the answer to a valid program).
"""
from __future__ import annotations

from .source import Span


class AccelError(Exception):
    kind = "Error"

    def __init__(self, message: str, span: Span | None = None):
        super().__init__(message)
        self.message = message
        self.span = span

    def location(self) -> str:
        return self.span.location() if self.span is not None else "<unknown>"

    def headline(self) -> str:
        """`KIND at FILE:LINE:COL: message`, the line after `error: ` on the CLI."""
        return f"{self.kind} at {self.location()}: {self.message}"

    def excerpt(self) -> list[str]:
        return self.span.excerpt() if self.span is not None else []

    def format(self) -> str:
        """The full text: `error: ` headline, the source line and a caret line."""
        return "\n".join([f"error: {self.headline()}", *self.excerpt()])

    def __str__(self) -> str:
        return self.headline()

    def __reduce__(self):
        """Pickled with its span and fields (a cluster's task sends its error back)."""
        return _restore, (type(self), self.args, self.__dict__)


def _restore(cls: type, args: tuple, state: dict) -> AccelError:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class AccelSyntaxError(AccelError):
    kind = "SyntaxError"


class AccelTypeError(AccelError):
    kind = "TypeError"


class AccelNameError(AccelError):
    kind = "NameError"


class AccelRuntimeError(AccelError):
    """Base of the run-time kinds, so back ends can catch any of them in one place."""


class AccelIndexError(AccelRuntimeError):
    kind = "IndexError"


class DivisionByZero(AccelRuntimeError):
    kind = "DivisionByZero"


class SizeError(AccelRuntimeError):
    kind = "SizeError"


class StreamError(AccelRuntimeError):
    """A Python iterable streamed into a sequence failed: it raised, gave a row of another
    type, or was already consumed by an earlier run."""
    kind = "StreamError"


class ClusterError(AccelRuntimeError):
    """The cluster a sequence runs on failed: it could not be started or reached, or a
    task's worker died more often than Dask retries (runtime/cluster.py)."""
    kind = "ClusterError"


class Interrupted(AccelError):
    kind = "Interrupted"


class OutOfMemory(AccelRuntimeError):
    """An allocation the memory available cannot hold: the bytes asked for, the bytes
    available, and the span of the node that asked."""
    kind = "OutOfMemory"

    def __init__(self, message: str, span: Span | None = None, *, requested: int = 0,
                 available: int = 0):
        super().__init__(message, span)
        self.requested = requested
        self.available = available


class InternalError(AccelError):
    """A failure of the implementation in stage `stage` (a bug). `details` keeps the original
    traceback text for bug reports (the CLI shows it with `--debug`)."""
    kind = "InternalError"

    def __init__(self, stage: str, message: str, span: Span | None = None, *,
                 details: str = ""):
        super().__init__(f"{stage}: {message}", span)
        self.stage = stage
        self.details = details
