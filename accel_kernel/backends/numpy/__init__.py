"""The `numpy` back end: the flat IR (`ir/flat.py`) run with whole-array numpy operations.

    execute(program, globals, counters=None, trace=False, cancel=None) -> FlatCellValues
    call(form, args, globals, counters=None, cancel=None) -> flat value
    to_flat(interp_value, rep) / from_flat(flat_value, type_or_rep)
    rep_of_type(t, regular=True) / rep_of_value(interp_value, t)

Flat values: numpy scalars, `np.ndarray` (Regular), `Segs(offsets, values)` (Segmented),
tuples (TupleRep). `Counters` accumulates work and depth per executed statement (and the
value of each statement with `trace=True`). docs/flat.md documents every operation's cost and
what this target does for it.
"""
from .costs import Counters, StepCost
from .executor import FlatCellValues, call, execute
from .values import Segs, from_flat, rep_of_type, rep_of_value, to_flat

__all__ = ["execute", "call", "FlatCellValues", "Counters", "StepCost", "Segs", "to_flat",
           "from_flat", "rep_of_type", "rep_of_value"]
