"""A cell's compiled form, kept for the next run of the same text (`Session.execute`).

Running a cell again (Shift-Enter twice, `%time` twice, a notebook re-run) parses, type checks
and runs every compiler pass again, for the same result: 15 to 30 ms for a def of a few
lines, most of a re-run's overhead. A `CellMemo` keeps the cell's parsed and checked program
and its stages through the target's last stage; a run of the same text uses them when what
they were computed from is unchanged, and still evaluates the cell and commits its globals
as a first run does (the values are computed again: only the compiling is skipped).

What a cell's compile reads, besides its text:
- the globals it names (its forms' free names, less those an earlier form of the cell binds),
  and through their `deps` every global those read in turn: a pass inlines defs, and a
  global let's flat representation is a fact the passes use. Each is compared by identity
  (a global's entry is replaced, never changed, when its name is bound again; a name that
  was not bound must still not be);
- the target record and the compile options (compared by identity).
A cell one of whose forms reads a name the cell binds at that form or later (`let x = x + 1`:
its compile reads the entry its own last run made) is never kept.

The memo does not keep globals alive: it holds weak references to their entries (an entry
that is gone no longer matches).

Error positions. The kept program's spans point into the `Source` of the run that compiled it;
a later run under another cell name renames that Source (`Source.rename`), so the spans of the
globals the cell defines, and of any error of this run, name the cell run last.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Mapping

from .lang import ast
from .lang.typecheck import bound_names
from .lang.typecheck_names import free_names

KEPT = 64          # cells kept (the oldest is dropped first)


@dataclass(frozen=True)
class CellMemo:
    compiled: Any                          # session._Compiled (with its Source)
    stages: list | None                    # through the target's last stage (None: interp)
    target: Any
    options: Any
    reads: tuple[tuple[str, Any], ...]     # (name, weak reference to its entry, or None)

    def matches(self, globals_: Mapping[str, Any], target: Any, options: Any) -> bool:
        if target is not self.target or options is not self.options:
            return False
        for name, ref in self.reads:
            entry = globals_.get(name)
            if ref is None:                  # not bound then: must not be bound now
                if entry is not None:
                    return False
            elif entry is None or ref() is not entry:
                return False
        return True


def reads(program: ast.Program, globals_: Mapping[str, Any]) -> tuple[tuple[str, Any], ...] | None:
    """The globals a cell's compile reads, with weak references to their entries now; None
    when a form reads a name the cell binds at that form or later."""
    bound_before: set[str] = set()
    bound_all = [set(bound_names(form)) for form in program.forms]
    names: list[str] = []
    for k, form in enumerate(program.forms):
        later = set().union(*bound_all[k:])
        for name in free_names(form):
            if name in bound_before:
                continue
            if name in later:
                return None
            names.append(name)
        bound_before |= bound_all[k]
    seen: dict[str, Any] = {}
    while names:
        name = names.pop()
        if name in seen:
            continue
        entry = globals_.get(name)
        seen[name] = None if entry is None else weakref.ref(entry)
        if entry is not None:
            names.extend(entry.deps)
    return tuple(seen.items())


class CellMemos:
    """The kept cells of a session, by text."""

    def __init__(self) -> None:
        self._by_text: dict[str, CellMemo] = {}

    def find(self, code: str, globals_: Mapping[str, Any], target: Any,
             options: Any) -> CellMemo | None:
        memo = self._by_text.get(code)
        if memo is None or not memo.matches(globals_, target, options):
            return None
        return memo

    def keep(self, code: str, memo: CellMemo) -> None:
        self._by_text.pop(code, None)
        self._by_text[code] = memo
        while len(self._by_text) > KEPT:
            del self._by_text[next(iter(self._by_text))]

    def clear(self) -> None:
        self._by_text.clear()
