"""The redomap kernels of the `cuda` target (`codegen.KIND_WRITERS`): not built yet."""
from __future__ import annotations

from typing import Any


def write(writer: Any) -> tuple[list[str], list[str]]:
    """The lines of the kernels and of the host function of one kernel statement."""
    raise NotImplementedError(f"cuda: {writer.op.kind} kernels are not built yet")
