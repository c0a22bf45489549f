"""`%load_ext accel_kernel` in an IPython kernel: the `%%accel` cell magic and `%accel` line magic.

Each IPython shell gets one accel Session, so definitions persist across `%%accel` cells. The
value of a cell's last expression is returned as a Python value (numpy / awkward), so IPython
shows it and `_` holds it. Errors print the accel error text (no Python traceback).

Cells run on the target `cpu` by default (`targets.DEFAULT_TARGET`); `%%accel --target NAME`
runs one cell on another target. A construct the target does not build prints its
NotImplementedError message (no fallback to `interp`).
"""
from __future__ import annotations

from typing import Any

from . import targets
from .lang.errors import AccelError
from .session import Session


class AccelMagics:
    def __init__(self, target: str = targets.DEFAULT_TARGET) -> None:
        self.session = Session(target=target)
        self.count = 0

    def run(self, code: str, line: str = "") -> Any:
        """Run one cell (on the target `--target NAME` of `line`, else the session's)."""
        self.count += 1
        default = self.session.target_record
        target = default.name
        try:
            target = _target_option(line) or default.name
            self.session.set_target(target)
            result = self.session.execute(code, name=f"accel[{self.count}]")
        except AccelError as err:
            print(err.format())
            return None
        except (NotImplementedError, ValueError) as err:   # not built here; a bad option
            chosen = targets.find(target)          # None for an unknown name
            hint = "" if chosen is not None and chosen.reference else \
                "; `%%accel --target interp` runs it"
            print(f"{type(err).__name__}: {err} (target {target}{hint})")
            return None
        finally:
            self.session.target_record = default
        for note in result.notes:
            print(note)
        return result.python


def _target_option(line: str) -> str | None:
    """NAME from a `%%accel --target NAME` (or `--target=NAME`) line; None without one."""
    words = line.replace("=", " ").split()
    if not words:
        return None
    if len(words) == 2 and words[0] == "--target":
        return words[1]
    raise ValueError(f"%%accel takes only `--target NAME`, not {line.strip()!r}")


def load_ipython_extension(ipython) -> None:
    magics = AccelMagics()
    ipython.register_magic_function(lambda line, cell: magics.run(cell, line), "cell", "accel")
    ipython.register_magic_function(lambda line: magics.run(line), "line", "accel")
