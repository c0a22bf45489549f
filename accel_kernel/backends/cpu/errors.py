"""Error sites of generated numba code (the `cpu` back end).

numba code cannot raise accel errors, so a failing check in generated code writes the code
of its *site* into `err[0]` and returns; the caller looks at `err` after the kernel and
raises the site's accel error. `err` is an int64 array of length 4: `err[0]` the site's
1-based code (0: no error), `err[1]` and `err[2]` the details the message needs (the bad
index and the length, the negative shift amount). A site's `message` is a `str.format`
template over those details: `index {0} out of bounds for array of length {1}`.

`err[3]` (`CANCEL_SLOT`) goes the other way: the session's `CancelToken` sets it while the
kernel runs (`CancelToken.watching`), and the compiled loops poll it (`polling.py`), so a
kernel asked to stop returns early and the driver raises `Interrupted` instead of reading
its (partial) outputs. Every numba function of a module already takes `err`, so the flag
reaches every loop without a parameter of its own.

One `ErrorTable` is shared by all the functions of one generated module; a site (kind,
message, span) gets one code however often it is written.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ...lang.errors import AccelError, AccelIndexError, DivisionByZero, SizeError
from ...lang.source import Span

ERROR_CLASSES: dict[str, type[AccelError]] = {
    "IndexError": AccelIndexError, "DivisionByZero": DivisionByZero, "SizeError": SizeError}

ERR_LENGTH = 4          # err[0]: the code, err[1], err[2]: details, err[3]: stop asked
CANCEL_SLOT = 3         # the element of `err` the cancel token sets


@dataclass(frozen=True)
class ErrorSite:
    kind: str                     # "DivisionByZero", "IndexError", "SizeError"
    message: str                  # a template: `{0}`, `{1}` are err[1], err[2]
    span: Span | None

    def error(self, details: Sequence[int] = ()) -> AccelError:
        """The accel error this site raises, its message filled in with `details`."""
        message = self.message.format(*(int(d) for d in details))
        return ERROR_CLASSES.get(self.kind, AccelError)(message, self.span)

    def where(self) -> str:
        """`DivisionByZero at cell:1:5`, for comments in generated code."""
        return f"{self.kind} at {self.span.location() if self.span else '<unknown>'}"


@dataclass
class ErrorTable:
    sites: list[ErrorSite] = field(default_factory=list)
    deferred: set[int] = field(default_factory=set)   # codes that wait for the host's checks
    _codes: dict[tuple, int] = field(default_factory=dict, repr=False)

    def code(self, kind: str, message: str, span: Span | None) -> int:
        """The 1-based code of a site (the same site always gets the same code)."""
        key = (kind, message, span)
        if key not in self._codes:
            self.sites.append(ErrorSite(kind, message, span))
            self._codes[key] = len(self.sites)
        return self._codes[key]

    def error(self, err: Any) -> AccelError | None:
        """The accel error an `err` array reports, or None when `err[0]` is 0."""
        code = int(err[0])
        if code == 0:
            return None
        return self.sites[code - 1].error([err[1], err[2]])

    def raise_if_failed(self, err: Any) -> None:
        error = self.error(err)
        if error is not None:
            raise error
