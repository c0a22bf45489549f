"""The execution targets a program can run on, which of them are built, and the default.

`cpu` (numba-compiled fused kernels) is the default everywhere: `Session()`, `Program.run`,
`accel run`, the Jupyter kernel and the IPython extension all read `DEFAULT_TARGET`. `interp`
is the reference interpreter that defines what programs mean; every other target is tested
against it.

There is no fallback from one target to another. A target that is not built, a compiled
target whose compiler (numba) cannot be imported, and a construct a compiled target does not
build yet all raise NotImplementedError naming what is missing; nothing is re-run on `interp`
behind the user's back, so a result always comes from the target the user sees (`%target`).
Choosing `interp` (`%target interp`, `--target interp`, `target="interp"`) runs everything.
"""
from __future__ import annotations

import importlib

TARGETS: dict[str, str] = {
    "interp": "the reference interpreter (defines the meaning of programs)",
    "numpy": "the flat segmented IR run with whole-array numpy operations",
    "cpu": "numba-compiled fused kernels on the CPU",
    "cuda": "numba.cuda kernels on an NVIDIA GPU",
}

DEFAULT_TARGET = "cpu"

BUILT: frozenset[str] = frozenset({"interp", "numpy", "cpu"})

_PENDING = {
    "cuda": "it arrives with the numba.cuda back end",
}

_COMPILER = {"cpu": "numba"}       # target -> the module its compiled code needs


def check_target(name: str) -> str:
    """Return `name` if it is a built target; raise otherwise, saying why."""
    if name not in TARGETS:
        raise ValueError(f"unknown target '{name}': choose one of {', '.join(TARGETS)}")
    if name not in BUILT:
        raise NotImplementedError(f"target '{name}' ({TARGETS[name]}) is not built yet: "
                                  f"{_PENDING[name]}; use --target interp")
    return name


def check_compiler(name: str) -> None:
    """Raise NotImplementedError when the compiler a target needs cannot be imported. Called
    when the target first compiles something (not when a session starts, so the kernel and
    the library start without it)."""
    module = _COMPILER.get(name)
    if module is None:
        return
    try:
        importlib.import_module(module)
    except ImportError as err:
        raise NotImplementedError(
            f"target '{name}' ({TARGETS[name]}) needs {module}, which cannot be imported "
            f"({err}); install {module}, or choose the target interp") from None


def describe(current: str) -> str:
    """The targets, one a line, the current one marked, built or not, and the default."""
    lines = []
    for name, what in TARGETS.items():
        mark = "*" if name == current else " "
        notes = [n for n, on in (("default", name == DEFAULT_TARGET),
                                 ("not built yet", name not in BUILT)) if on]
        suffix = f" ({', '.join(notes)})" if notes else ""
        lines.append(f" {mark} {name.ljust(6)}  {what}{suffix}")
    return "\n".join(lines)
