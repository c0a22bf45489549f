"""Representations of the `flatten` stage: from accel types and regularity nests to flat reps.

A value's representation (`ir.flat.Rep`) is chosen from its type and the regularity nest of the
node that computes it (`regularity.Nest`, one `R`/`Ir` per array dimension, outermost first):
a dimension that is `R` all the way down gives one `Regular` buffer, the first `Ir` (or any
later one) starts a segment descriptor (`Segmented`). Arrays of tuples are tuples of arrays.

*Stacked* values: inside a map nest a lifted value holds one per-point value for every point
of the current level, stacked along a new outermost axis. A stacked value's rep is an ordinary
rep whose outermost axis is the points: `row_rep(stacked)` is the rep of one point's value.
"""
from __future__ import annotations

from ...ir.flat import Regular, Rep, ScalarRep, Segmented, TupleRep
from ...lang import types as T
from ..regularity import Nest


def elem_name(t: T.Type | None) -> str:
    """The scalar type name of a scalar type (a type variable nothing fixed is `i64`)."""
    if isinstance(t, T.Scalar):
        return t.name
    return "i64"


def rep_from_dims(dims: tuple[bool, ...] | list[bool], elem: str) -> Rep:
    """The rep of an array of scalars whose dimensions are `dims` (True: regular)."""
    dims = list(dims)
    if not dims:
        return ScalarRep(elem)
    if all(dims[1:]):
        return Regular(elem, len(dims))
    return Segmented(rep_from_dims([True] + dims[2:], elem))


def rep_of_type(t: T.Type | None, nest: Nest | None = None) -> Rep:
    """The rep of a value of type `t` whose regularity nest is `nest` (None: unknown, every
    inner dimension irregular, as the VAR rule of `regularity` says)."""
    if isinstance(t, T.Tuple):
        parts = nest.parts if nest is not None and nest.parts is not None \
            and len(nest.parts) == len(t.elems) else None
        return TupleRep(tuple(rep_of_type(e, parts[k] if parts else None)
                              for k, e in enumerate(t.elems)))
    rank, inner = 0, t
    while isinstance(inner, (T.Array, T.Seq)):
        rank, inner = rank + 1, inner.elem
    if rank == 0:
        return ScalarRep(elem_name(t))
    if isinstance(inner, T.Tuple):         # an array of tuples is a tuple of arrays
        parts = nest.parts if nest is not None and nest.parts is not None \
            and len(nest.parts) == len(inner.elems) else None
        out = []
        for k, e in enumerate(inner.elems):
            wrapped: T.Type = e
            for _ in range(rank):
                wrapped = T.Array(wrapped)
            out.append(rep_of_type(wrapped, parts[k] if parts else None))
        return TupleRep(tuple(out))
    dims = list(nest.dims) if nest is not None and nest.parts is None else []
    dims = (dims + [False] * rank)[:rank]
    dims[0] = True
    return rep_from_dims(dims, elem_name(inner))


def row_rep(rep: Rep) -> Rep:
    """The rep of one element (row) of an array of rep `rep`."""
    if isinstance(rep, Regular):
        return ScalarRep(rep.elem) if rep.rank == 1 else Regular(rep.elem, rep.rank - 1)
    if isinstance(rep, Segmented):
        return rep.inner
    if isinstance(rep, TupleRep):
        return TupleRep(tuple(row_rep(p) for p in rep.parts))
    raise ValueError(f"a scalar has no rows: {rep}")


def stack_regular(rep: Rep) -> Rep:
    """The rep of an array whose elements all have rep `rep` and one shape (a new regular
    outer axis)."""
    if isinstance(rep, ScalarRep):
        return Regular(rep.elem, 1)
    if isinstance(rep, Regular):
        return Regular(rep.elem, rep.rank + 1)
    if isinstance(rep, Segmented):
        return Segmented(rep)
    return TupleRep(tuple(stack_regular(p) for p in rep.parts))


def stack_irregular(rep: Rep) -> Rep:
    """The rep of an array of elements of rep `rep` whose lengths differ."""
    if isinstance(rep, ScalarRep):
        return Regular(rep.elem, 1)
    if isinstance(rep, TupleRep):
        return TupleRep(tuple(stack_irregular(p) for p in rep.parts))
    if isinstance(rep, Regular) and rep.rank > 1:
        # rows of different lengths and (possibly) different inner extents
        return Segmented(as_irregular(rep))
    return Segmented(rep)


def as_irregular(rep: Rep) -> Rep:
    """The most general rep of an array of the same rank: every inner dimension irregular."""
    if isinstance(rep, TupleRep):
        return TupleRep(tuple(as_irregular(p) for p in rep.parts))
    if isinstance(rep, ScalarRep):
        return rep
    rank = array_rank(rep)
    return rep_from_dims([True] + [False] * (rank - 1), scalar_elem(rep))


def array_rank(rep: Rep) -> int:
    """The number of array dimensions of a rep (of the first part of a tuple)."""
    if isinstance(rep, ScalarRep):
        return 0
    if isinstance(rep, Regular):
        return rep.rank
    if isinstance(rep, Segmented):
        return 1 + array_rank(rep.inner)
    return array_rank(rep.parts[0]) if rep.parts else 0


def scalar_elem(rep: Rep) -> str:
    if isinstance(rep, (ScalarRep, Regular)):
        return rep.elem
    if isinstance(rep, Segmented):
        return scalar_elem(rep.inner)
    raise ValueError(f"a tuple has no single element type: {rep}")


def is_scalar(rep: Rep) -> bool:
    if isinstance(rep, ScalarRep):
        return True
    return isinstance(rep, TupleRep) and all(is_scalar(p) for p in rep.parts)


def is_array(rep: Rep) -> bool:
    if isinstance(rep, (Regular, Segmented)):
        return True
    return isinstance(rep, TupleRep) and any(is_array(p) for p in rep.parts)


def has_segments(rep: Rep) -> bool:
    if isinstance(rep, Segmented):
        return True
    return isinstance(rep, TupleRep) and any(has_segments(p) for p in rep.parts)


def generalise(a: Rep, b: Rep) -> Rep:
    """The rep both `a` and `b` convert to: equal reps stay, a Regular meets a Segmented of
    the same rank as the Segmented one (or, failing that, the most irregular)."""
    if a == b:
        return a
    if isinstance(a, TupleRep) and isinstance(b, TupleRep) and len(a.parts) == len(b.parts):
        return TupleRep(tuple(generalise(x, y) for x, y in zip(a.parts, b.parts)))
    if isinstance(a, Segmented) and isinstance(b, Segmented):
        return Segmented(generalise(a.inner, b.inner))
    if isinstance(a, Segmented) and isinstance(b, Regular):
        return generalise(a, _regular_as_segmented(b))
    if isinstance(b, Segmented) and isinstance(a, Regular):
        return generalise(_regular_as_segmented(a), b)
    return as_irregular(a)


def _regular_as_segmented(rep: Regular) -> Rep:
    return Segmented(row_rep(rep)) if rep.rank > 1 else rep


def type_of_rep(rep: Rep) -> T.Type:
    """An accel type with the same nesting as `rep` (for printing literal values)."""
    if isinstance(rep, ScalarRep):
        return T.Scalar(rep.elem)
    if isinstance(rep, Regular):
        out: T.Type = T.Scalar(rep.elem)
        for _ in range(rep.rank):
            out = T.Array(out)
        return out
    if isinstance(rep, Segmented):
        return T.Array(type_of_rep(rep.inner))
    return T.Tuple(tuple(type_of_rep(p) for p in rep.parts))
