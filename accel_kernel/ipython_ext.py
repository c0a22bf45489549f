"""`%load_ext accel_kernel` in an IPython kernel: the `%%accel` cell magic and `%accel` line magic.

Each IPython shell gets one accel Session, so definitions persist across `%%accel` cells. The
value of a cell's last expression is returned as a Python value (numpy / awkward), so IPython
shows it and `_` holds it.

    %%accel [--target NAME] [--in xs,ys] [--out r]

- `--target NAME` runs this cell on another target (default `cpu`: `targets.DEFAULT_TARGET`);
  a construct the target does not build fails the cell (no fallback to `interp`).
- `--in xs,ys` binds the Python variables `xs` and `ys` as accel global lets first: numpy and
  Awkward arrays cross without copying their buffers (`kernel/loading.accel_value`; a regular
  Awkward array, such as a `RegularArray`, stays a regular block).
- `--out r` binds the cell's result to the Python variable `r` as well.

A failing cell raises `AccelCellError`, so the cell fails (Run All and nbconvert stop) and
IPython shows only the accel message (`_render_traceback_`): the headline with its position,
labelled with IPython's execution count (`cell[6]:2:5`, lines counted in the cell, the
`%%accel` line being line 1), the source line and a caret. A failed cell changes no accel
global (its `--in` bindings included).
"""
from __future__ import annotations

import re
from typing import Any

from . import targets
from .lang.errors import AccelError
from .session import Session

USAGE = "usage: %%accel [--target NAME] [--in NAME,NAME...] [--out NAME]"
RED, RESET = "\x1b[31m", "\x1b[0m"


class AccelCellError(Exception):
    """A failed `%%accel` cell; IPython renders it as its accel message alone."""

    def __init__(self, kind: str, lines: list[str]):
        super().__init__("\n".join(lines))
        self.kind = kind
        self.lines = lines

    def _render_traceback_(self) -> list[str]:
        return [f"{RED}{self.lines[0]}{RESET}", *self.lines[1:]]


class AccelMagics:
    def __init__(self, target: str = targets.DEFAULT_TARGET, shell: Any = None) -> None:
        self.session = Session(target=target)
        self.shell = shell
        self.count = 0

    def run(self, code: str, line: str | None = "", count: int | None = None) -> Any:
        """Run one `%%accel` cell body `code` with the options of `line` (its lines numbered
        from 2, after the `%%accel` line), or with `line=None` the code of an `%accel` line
        magic (line 1). `count` is IPython's execution count (the cell's label), else the
        cells run here are counted. Raises AccelCellError."""
        self.count += 1
        name = f"cell[{self.count if count is None else count}]"
        default = self.session.target_record
        snapshot = self.session.snapshot()
        chosen = default.name
        try:
            options = parse_options(line)
            chosen = options.get("target", default.name)
            self.session.set_target(chosen)
            if options.get("in") or options.get("out"):
                self._user_namespace()              # they need a shell: checked first
            if options.get("in"):
                self._bind_inputs(options["in"], name)
            result = self.session.execute("\n" + code if line is not None else code, name=name)
        except AccelError as err:
            self.session.restore(snapshot)
            raise AccelCellError(err.kind, [err.headline(), *err.excerpt()]) from None
        except (NotImplementedError, ValueError) as err:   # not built here; a bad option
            self.session.restore(snapshot)
            kind = type(err).__name__
            text = str(err)
            if isinstance(err, NotImplementedError):
                text = magic_advice(text, chosen)
            raise AccelCellError(kind, [f"{kind}: {text}"]) from None
        finally:
            self.session.target_record = default
        for note in result.notes:
            print(note)
        value = result.python
        if options.get("out"):
            self._user_namespace()[options["out"]] = value
        return value

    def _bind_inputs(self, names: list[str], cell: str) -> None:
        from .kernel.loading import bind_python
        namespace = self._user_namespace()
        missing = [n for n in names if n not in namespace]
        if missing:
            raise ValueError(f"--in {','.join(missing)}: no such Python variable")
        bind_python(self.session, {n: namespace[n] for n in names}, f"from Python ({cell})")

    def _user_namespace(self) -> dict[str, Any]:
        if self.shell is None:
            raise ValueError("--in and --out need an IPython shell")
        return self.shell.user_ns


def parse_options(line: str) -> dict[str, Any]:
    """`--target NAME`, `--in a,b`, `--out r` (also `--opt=value`) → {"target": NAME, "in":
    [a, b], "out": r}; ValueError for anything else."""
    words = (line or "").replace("=", " ").split()
    options: dict[str, Any] = {}
    for option, value in zip(words[::2], words[1::2] + [None]):
        key = option[2:] if option.startswith("--") else None
        if key not in ("target", "in", "out") or value is None or key in options:
            raise ValueError(f"%%accel: cannot read {line.strip()!r}; {USAGE}")
        if key == "in":
            value = [n for n in value.split(",") if n]
        if any(not re.fullmatch(r"[A-Za-z_]\w*", n) for n in
               (value if key == "in" else [value])):
            raise ValueError(f"%%accel --{key} {value}: not a name; {USAGE}")
        options[key] = value
    return options


def magic_advice(message: str, target: str) -> str:
    """A message with its advice in magic syntax: `--target interp` → `%%accel --target
    interp`, and that advice added for a target that is not the reference one."""
    message = re.sub(r"(?<!%%accel )--target (\w+)", r"`%%accel --target \1`", message)
    chosen = targets.find(target)
    if "--target interp" not in message and not (chosen is not None and chosen.reference):
        message += f" (target {target}; `%%accel --target interp` runs it)"
    return message


def execution_count(ipython) -> int:
    """The In[N] of the cell running now: its ExecutionResult's count while `run_cell` runs
    it (IPython 9 counts the next cell in `execution_count` by then, IPython 8 not yet)."""
    running = getattr(ipython.displayhook, "exec_result", None)
    count = getattr(running, "execution_count", None)
    return count if count is not None else ipython.execution_count


def load_ipython_extension(ipython) -> None:
    magics = AccelMagics(shell=ipython)

    def cell_magic(line: str, cell: str) -> Any:
        return magics.run(cell, line, execution_count(ipython))

    def line_magic(line: str) -> Any:
        return magics.run(line, None, execution_count(ipython))

    ipython.register_magic_function(cell_magic, "cell", "accel")
    ipython.register_magic_function(line_magic, "line", "accel")
