"""The error kinds of LANGUAGE.md §8. Every accel error has a kind, a message and a span.

`AccelError.kind` is the CamelCase name users see (`error: KIND at FILE:LINE:COL: message`).
Kinds: SyntaxError, TypeError, NameError (compile time); IndexError, DivisionByZero, SizeError
(run time); Interrupted (the user cancelled a running evaluation).
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


class Interrupted(AccelError):
    kind = "Interrupted"
