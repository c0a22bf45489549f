"""Stage `codegen` for the `cpu` target: a `hist` kernel (FUSE-HIST, `passes/fuse_hist.py`),
a `map` or `segmented` kernel ending in a `reduce_by_index` whose indices (and values) it
makes element by element. `codegen.KernelWriter` calls `hist_body` for the kernel
function's body and `hist_host` for its host function.

The kernel cuts its elements into `chunks` chunks (of a segmented kernel: whole segments,
about equal numbers of elements each, as a segmented filter's), and chunk `c` combines its
elements in order into row `c` of `part`: each element's index, when it is in range, and
its value, by the statement's operator (its scalar function: numpy's `min`/`max`, NaN
propagating, equal operands giving the second). The host function chooses the rows
(`histogram.hist_rows`): one, `part` being the result itself (a copy of `dest`, or `dest`'s
`replicate` filled in), so the elements are combined in element order, as the interpreter
does; or one per thread for an integer `+ * min max` or a float `+ *`, each row from the
operator's identity, merged into the result in row order after the launch
(`histogram.hist_merge`). Values the kernel makes and something else reads (the indices
too) are written at every element, as a map's are.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir import flat as F
from ..numpy.operators import binary_operator
from .codegen_body import DTYPES, element_type, polled_segment, python_name
from .histogram import OPERATORS

if TYPE_CHECKING:
    from .codegen import KernelWriter
    from .codegen_body import KernelBody


def histogram_stmt(body: list[F.Stmt]) -> F.Stmt:
    (stmt,) = [s for s in body if isinstance(s.op, F.Library) and s.op.name == "reduce_by_index"]
    return stmt


def fill_stmt(body: list[F.Stmt]) -> F.Stmt | None:
    """The `replicate m x` the kernel fills the histogram's destination from, or None when
    the destination is an input (copied)."""
    dest = histogram_stmt(body).op.args[0]
    return next((s for s in body if dest in s.targets and isinstance(s.op, F.Replicate)), None)


def operator_code(stmt: F.Stmt) -> int:
    """The histogram's operator as `histogram.OPERATORS` numbers it, -1 for another."""
    return OPERATORS.get(binary_operator(stmt.op.fns[0]) or "", -1)


def hist_body(body: KernelBody, outputs: list[F.FVar]) -> None:
    """The chunks' loops: element code, the values written out, the histogram's update."""
    k = body.k
    stmt = histogram_stmt(k.body)
    _, _, indices, values = stmt.op.args
    elem = element_type(stmt.targets[0].rep)
    fname, _ = k.module.scalar_fn(stmt.op.fns[0], [elem, elem], stmt.targets[0].name + "_op")
    free = body.free_args(stmt.op.fns[0])
    combine = f"{fname}(part[c, at_hist], {{}}{''.join(', ' + f for f in free)}, err)"
    element_stmts = [s for s in k.body if s is not stmt]
    per_segment, per_element = body._per_segment(element_stmts)
    offsets = k.segment_offsets()
    inner = " " * (12 if offsets is None else 20)
    body.locals = {}
    body.count_divisions = offsets is None      # the chunk's elements in order from `lo`
    segment = body.element(per_segment, " " * 16, segment="s", start="start")
    element = body.element(per_element, inner, segment="s", start="start")
    element += body.store(outputs, inner)
    element += [f"{inner}at_hist = numba.intp({body.value(indices)})",
                f"{inner}if numba.uint64(at_hist) < numba.uint64(buckets):",
                f"{inner}    part[c, at_hist] = " + combine.format(body.value(values))]
    body.lines += ["    for c in prange(chunks):", *body._chunk_bounds()]
    if offsets is None:
        body.lines += body.counter_start(" " * 8, "lo") + body._chunk_elements(element)
    else:
        body.lines += _segments(body, python_name(offsets), segment, element)


def _segments(body: KernelBody, offsets: str, segment: list[str],
              element: list[str]) -> list[str]:
    """A chunk's segments, each one's elements in order (the loop of a segmented kernel's
    segment, `codegen_body.polled_segment`: a plain loop for a short segment; the
    strip-mined one of `polling.polled_range` cost 20% of `lines`' time, whose segments
    have 470 elements on average: 410 against 335 ms, one thread)."""
    return [*body.nonempty_segments(offsets), *segment,
            *polled_segment(" " * 16, "i", "start", "end", element)]


def hist_host(k: KernelWriter, aligned: set[str], outputs: list[F.FVar],
              out_params: list[str]) -> list[str]:
    """Size and check as a map's or a segmented kernel's host function does, make the
    result (`dest` copied, or filled), choose the rows, launch, merge."""
    stmt = histogram_stmt(k.op.body.stmts)
    fill = fill_stmt(k.op.body.stmts)
    dest = stmt.op.args[0]
    result = stmt.targets[0]
    out = "out_" + python_name(result.name)
    dtype = DTYPES[element_type(result.rep)]
    params = [python_name(v.name) for v in k.inputs]
    lines = [f"def {k.name}_host({', '.join(params + ['alloc', 'launch', 'err'])}):"]
    lines += k.size_checks()
    lines.append(f"    n = {k.size_expr('hist', aligned)}")
    lines.append(f"    work = {k.work_expr('hist')}")
    checks = (k.segmented_checks(aligned, outputs, []) if k.segment_offsets() is not None
              else k.length_checks(aligned))
    lines += checks
    if fill is not None:
        count = _atom(fill.op.n, integer=True)
        lines += [f"    {out} = alloc((max({count}, 0),), {dtype})",
                  f"    {out}[:] = {_atom(fill.op.x)}"]
    else:
        lines += [f"    {out} = alloc({python_name(dest.name)}.shape, {dtype})",
                  f"    {out}[:] = {python_name(dest.name)}"]
    for t in outputs:
        if t != result:
            lines.append(f"    out_{python_name(t.name)} = alloc("
                         f"{k.shape_expr('map' if k.segment_offsets() is None else 'segmented', t, [])}, "
                         f"{DTYPES[element_type(t.rep)]})")
    if checks:      # the outputs, unwritten: their lengths are known, their values not
        unwritten = ["out_" + python_name(t.name) for t in outputs]
        comma = "," if len(unwritten) == 1 else ""
        lines += ["    if err[0]:", f"        return ({', '.join(unwritten)}{comma}), err"]
    op = operator_code(stmt)
    element_outs = [p for p in out_params if p != out]
    args = ", ".join(k.host_args() + element_outs + ["part", f"{out}.shape[0]", "err"])
    lines += [f"    chunks = hist_rows({out}.shape[0], work, {op}, {out}.dtype)",
              f"    part = hist_partials({out}, chunks, {op})",
              "    " + k.launch("work if chunks > 1 else 0", f"n, chunks, {args}"),
              "    if not err[0]:",
              f"        hist_merge({out}, part, {op})"]
    if fill is not None and not (isinstance(fill.op.n, F.Const) and fill.op.n.value >= 0):
        # the replicate's own check, after the elements (where the replicate ran)
        code = k.module.errors.code("SizeError", "replicate: negative size {0}", fill.span)
        count = _atom(fill.op.n, integer=True)
        lines += [f"    if {count} < 0 and not err[0]:",
                  f"        err[0], err[1] = {code}, {count}"]
    results = ", ".join("out_" + python_name(t.name) for t in outputs)
    return lines + [f"    return ({results}{',' if len(outputs) == 1 else ''}), err"]


def _atom(a: F.Atom, integer: bool = False) -> str:
    if isinstance(a, F.Const):
        return repr(a.value)
    return f"int({python_name(a.name)})" if integer else python_name(a.name)
