"""Stage `flatten`: nested data parallelism removed (Clifton-Everest, ch. 4; Blelloch;
vectorisation avoidance; van den Haak et al. for keeping regular nests regular).

Takes the core IR (`ir/core.py`, after `desugar`, with the facts of `shape` and `regularity`)
and gives a flat program (`ir/flat.py`): one `FlatForm` per top-level form, a block of SSA
statements over flat arrays, with no nested parallelism left.

Terms:

- **Lifting.** Code inside `map f xs` runs once per element; flattening runs it once for all
  of them: every value the body computes becomes *lifted*, one value per point of the map,
  stacked along a new outer axis. In a nest of maps the points of the inner map are the pairs
  (outer point, inner element), and so on.
- **Env** (`context.Env`): the lifting context of the code being flattened: the scope (what
  each name stands for), the stack of map *levels* around it (`context.Level`, each regular,
  irregular or a restriction to some of its points) and whether the facts can be trusted.
- **Avoided** values are computed outside the innermost maps and used as they are: an
  unlifted scalar becomes a free variable of the scalar function that reads it, an unlifted
  array is read by a `gather` at lifted indices. Nothing is ever `replicate`d to be lifted
  unless an operation needs one copy per point; a computation whose operands are all avoided
  is itself done once, outside the maps (AVOID). Scalar code is never lifted operator by
  operator: a maximal scalar expression is one `map` of a `ScalarFn` (vectorisation
  avoidance).
- **Regular** lifted values: when every point's value has the same shape, the stacked values
  are one `Regular` block with one more dimension; no segment descriptor is made. Levels over
  the rows of a regular block, or over an extent the `regularity` stage shows to be the same
  everywhere, are regular; operations on such values are done along the inner axis (`reduce`
  of `[r2]`) or with index arithmetic (`row * m + i`).
- **Irregular** lifted values: per-point arrays of different lengths are `Segmented`: a
  segment descriptor (offsets) and the flat values; the segmented operations (`seg_reduce`,
  `seg_scan`, `seg_filter`, `seg_gather`) work on them. A level over an irregular array, or
  over extents that differ (`sizes_to_offsets`), is irregular.
- **tuple_F**: a tuple is flattened component by component (`TupleVal`): an array of tuples
  is a tuple of flat arrays, `zip` and `unzip` cost nothing, and each component gets its own
  representation.

Modules: `context` (values, levels, the statement builder and its log), `reps` (reps from
types and nests), `levels` (entering and leaving maps, moving values between levels,
partitions), `scalar` (scalar code), `expr` (the dispatcher, lets, patterns, size checks),
`arrays` (literals, indexing, slices, updates, the facts), `library` (SOACs), `wholearray`
(`concat`, `reverse`, `scatter`, ...), `control` (`if`, loops), `forms` (top-level forms).
Every rule application is logged under its name (docs/stages.md, "flatten").

What is not built yet raises `NotImplementedError` naming the construct ("flatten: `sort_by`
inside a map is not built yet"); the pipeline then ends before this stage unless the stage
was asked for by name.
"""
from __future__ import annotations

from ...ir.flat import FlatProgram
from ...ir.flat_printer import verify
from ...lang import ast
from ..base import PassContext, PassOutput
from .forms import Flattener, flatten_program


class FlattenPass:
    name = "flatten"
    transforms = True

    def run(self, program: ast.Program, ctx: PassContext) -> PassOutput:
        return PassOutput(flatten_program(program, ctx))    # type: ignore[arg-type]

    def verify(self, program: FlatProgram) -> list[str]:
        return verify(program)


FLATTEN = FlattenPass()

__all__ = ["FLATTEN", "FlattenPass", "Flattener", "flatten_program"]
