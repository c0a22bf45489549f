"""The message of an `Assert` with the numbers that failed, in the interpreter's words.

An `Assert`'s message is a template that may name flat variables in braces:
`index {i_3} out of bounds for array of length {len_2}`. The flattener writes it with `fill`
(a constant is written as its value); the back end that runs the assert fills it in with
`format_message` when the check fails: a scalar variable gives its value, a variable with one
value per element of `ok` (the check of a lifted construct) gives its value at the first
element that failed. A variable the back end no longer has (the `cpu` target keeps the values
inside a fused kernel to itself) is shown as `?`. The names are not reads of the statement:
the variables are always the inputs of the computation of `ok`, so they exist where it does.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Mapping

import numpy as np

from .flat import Const

FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_']*)\}")


def field(atom: Any) -> str:
    """How an atom is written in a message template: a constant as its value, a variable
    as `{name}`."""
    if isinstance(atom, Const):
        return str(atom.value)
    return "{" + atom.name + "}"


def fill(template: str, atoms: Mapping[str, Any]) -> str:
    """`template` with every `{key}` of `atoms` replaced by that atom's field (keys that are
    not in `atoms` are left as they are)."""
    return FIELD.sub(lambda m: field(atoms[m.group(1)]) if m.group(1) in atoms
                     else m.group(0), template)


def format_message(template: str, ok: Any, lookup: Callable[[str], Any]) -> str:
    """The message of a failed assert: every `{name}` replaced by the value of that variable
    (`lookup(name)`, KeyError when unknown) where `ok` failed first."""
    if "{" not in template:
        return template
    flags = np.ravel(np.asarray(ok))
    failed = np.flatnonzero(~flags.astype(bool))
    first = int(failed[0]) if len(failed) else 0

    def value(match: re.Match) -> str:
        try:
            found = lookup(match.group(1))
        except KeyError:
            return "?"
        if isinstance(found, (np.ndarray, np.generic, int, float, bool)):
            arr = np.ravel(np.asarray(found))
            if arr.size == 1:
                return _show(arr[0])
            if arr.size == flags.size:
                return _show(arr[first])
        return "?"

    return FIELD.sub(value, template)


def _show(x: Any) -> str:
    return str(int(x)) if isinstance(x, (np.integer, int)) else str(x)
