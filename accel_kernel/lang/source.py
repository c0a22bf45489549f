"""Source text and spans: where every AST node and every error comes from.

A `Source` is one cell or file (its name, e.g. `cell[3]` or `prog.accel`, and its text).
A `Span` is a half-open range of character offsets into one `Source`; line and column are
1-based and computed on demand.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, eq=False)
class Source:
    """One piece of accel text. Compared by identity: two cells with equal text are still two."""

    name: str
    text: str
    _line_starts: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        starts = [0]
        for i, ch in enumerate(self.text):
            if ch == "\n":
                starts.append(i + 1)
        object.__setattr__(self, "_line_starts", tuple(starts))

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        lo, hi = 0, len(self._line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, offset - self._line_starts[lo] + 1

    def rename(self, name: str) -> None:
        """Name this text after the cell that ran it last. A cell run again with the same
        text reuses the program parsed from this Source (`cell_memo.py`), so the spans of
        the globals it defines, and of the errors of that run, must name the new cell; the
        name is the one field that changes (the text never does)."""
        object.__setattr__(self, "name", name)

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its newline."""
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]


@dataclass(frozen=True)
class Span:
    source: Source
    start: int
    end: int

    @property
    def line(self) -> int:
        return self.source.line_col(self.start)[0]

    @property
    def col(self) -> int:
        return self.source.line_col(self.start)[1]

    def to(self, other: "Span | None") -> "Span":
        """The span from the start of self to the end of other."""
        if other is None or other.source is not self.source:
            return self
        return Span(self.source, min(self.start, other.start), max(self.end, other.end))

    def location(self) -> str:
        line, col = self.source.line_col(self.start)
        return f"{self.source.name}:{line}:{col}"

    def excerpt(self) -> list[str]:
        """The source line and a caret line under the span (the first line of it only)."""
        line, col = self.source.line_col(self.start)
        text = self.source.line_text(line)
        end_line, end_col = self.source.line_col(max(self.start, self.end - 1))
        width = max(1, (end_col - col + 1) if end_line == line else len(text) - col + 1)
        return [text, " " * (col - 1) + "^" * width]

    def __repr__(self) -> str:
        return f"Span({self.location()})"
