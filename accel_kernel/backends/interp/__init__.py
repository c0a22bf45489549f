"""The `interp` back end: the reference interpreter that defines the meaning of accel.

    Interpreter(globals, types, instantiations, cancel=None).run_forms(forms) -> CellValues
    Interpreter(...).call(fn, args)

Values are numpy scalars, Python lists (arrays), tuples, function objects and `Sequence`s
(see `model`). Nothing here imports numba or Jupyter.
"""
from .evaluator import CellValues, Interpreter, value_type
from .library import ALL_NAMES, LIBRARY
from .model import (BuiltinFunc, Closure, DefFunc, OperatorFunc, Partial, Sequence, Value,
                    is_function)

__all__ = ["Interpreter", "CellValues", "Sequence", "Closure", "DefFunc", "BuiltinFunc",
           "OperatorFunc", "Partial", "Value", "is_function", "value_type", "LIBRARY",
           "ALL_NAMES"]
