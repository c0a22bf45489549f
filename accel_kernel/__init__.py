"""accel_kernel: the accel nested data-parallel array language as a library, CLI and kernel.

    import accel_kernel as acc
    prog = acc.compile(source)
    prog.run("main", xs)

Importing the package is light: numba, Jupyter and widgets are imported only where needed.
"""
from .api import Program, compile
from .lang.errors import (AccelError, AccelIndexError, AccelNameError, AccelSyntaxError,
                          AccelTypeError, DivisionByZero, InternalError, Interrupted,
                          OutOfMemory, SizeError)
from .session import CellResult, Session

__all__ = ["compile", "Program", "Session", "CellResult", "AccelError", "AccelSyntaxError",
           "AccelTypeError", "AccelNameError", "AccelIndexError", "DivisionByZero", "SizeError",
           "Interrupted", "OutOfMemory", "InternalError"]


def load_ipython_extension(ipython) -> None:
    """`%load_ext accel_kernel`: adds `%%accel` and `%accel` to an IPython kernel."""
    from .ipython_ext import load_ipython_extension as load
    load(ipython)
