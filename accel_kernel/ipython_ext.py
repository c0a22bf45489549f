"""`%load_ext accel_kernel` in an IPython kernel: the `%%accel` cell magic and `%accel` line magic.

Each IPython shell gets one accel Session, so definitions persist across `%%accel` cells. The
value of a cell's last expression is returned as a Python value (numpy / awkward), so IPython
shows it and `_` holds it. Errors print the accel error text (no Python traceback).
"""
from __future__ import annotations

from typing import Any

from .lang.errors import AccelError
from .session import Session


class AccelMagics:
    def __init__(self) -> None:
        self.session = Session()
        self.count = 0

    def run(self, code: str) -> Any:
        self.count += 1
        try:
            result = self.session.execute(code, name=f"accel[{self.count}]")
        except AccelError as err:
            print(err.format())
            return None
        for note in result.notes:
            print(note)
        return result.python


def load_ipython_extension(ipython) -> None:
    magics = AccelMagics()
    ipython.register_magic_function(lambda line, cell: magics.run(cell), "cell", "accel")
    ipython.register_magic_function(lambda line: magics.run(line), "line", "accel")
