"""FUSE-HIST, a rule of stage `fuse` (`fuse.py`): a histogram joins the kernel that makes its
indices (Futhark's `hist` SOAC: Henriksen et al., "Histogram computations", and PLDI'17).

`reduce_by_index dest op ne is vs` is a host statement (a library call over whole arrays):
its indices `is` and values `vs` are written out by the kernels that make them and read
back. When a `map` or `segmented` kernel makes `is` element-wise, the statement joins that
kernel instead, which becomes a `hist` kernel: each element's index and value are combined
into the histogram as they are computed, and neither array is written. When something else
reads `is` too, the kernel also writes it out, and the histogram joins only when it can run
as partial histograms in parallel (an integer `+ * min max`, a float `+ *`: the back end's
other histograms run the whole kernel in element order, and the kernel would lose its
parallel loop; k-means' counts join the kernel of the nearest centroids, whose result the
sums read too). What the statement reads must then be available to the kernel:

- values: made by the same kernel element-wise (and read by nothing else); or an array
  bound before the kernel, read at the element index (its length is checked by the kernel:
  `reduce_by_index`'s SizeError); or `replicate c x` of a scalar (`map (\\_ -> 1) pixels`
  after flattening), `c` being the kernel's element count (`length is`, the `length` of an
  array the kernel makes element-wise, or the count of its `iota`), which becomes `map (\\_
  -> x) is` in the kernel (the `length` and the replicate made for it go);
- dest: an array bound before the kernel (copied); or `replicate m x` of a scalar read by
  nothing else (the `hist` prelude function's destination), which the kernel fills itself
  (its negative-size check runs after the elements, where the replicate ran), taken out of
  the kernel it was fused into, if any;
- the scalars these read: bound before the kernel, or host statements between the kernel
  and the histogram that cannot fail and read only what is bound before the kernel (`w * h`),
  which move before it.

A statement left between the kernel and the histogram that may fail keeps its place only if
nothing the rule moves into the kernel may fail (else the errors could come in another
order). How the kernel combines (in parallel into per-chunk histograms, or in element order)
is the back end's choice (`backends/cpu/codegen_hist.py`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..backends.numpy.operators import binary_operator
from ..ir.flat import (Assert, Const, FVar, Iota, Library, Length, Map, Regular, Replicate,
                       ScalarFn, ScalarRep, Scalar, SegReduce, Stmt)
from ..lang import ast
from ..lang.scalar_ops import FLOATS, INTS

if TYPE_CHECKING:
    from .fuse import Fuser

NOTE = ("combines each element's index and value into the histogram as the kernel makes "
        "them: neither the indices nor the values are written out")


def fuse_histograms(fuser: Fuser, items: list, result: tuple) -> list:
    """The block's items with every `reduce_by_index` that can join the kernel making its
    indices joined to it (FUSE-HIST); the others are left as they are."""
    if not fuser.ctx.options.hist:
        return items
    k = 0
    while k < len(items):
        item = items[k]
        if isinstance(item, Stmt) and _is_histogram(item):
            joined = _Histogram(fuser, items, result, k).join()
            if joined is not None:
                items = joined
                k = 0                   # items moved: look again from the start
                continue
        k += 1
    return items


def _is_histogram(stmt: Stmt) -> bool:
    op = stmt.op
    return isinstance(op, Library) and op.name == "reduce_by_index" and len(op.args) == 4 \
        and len(op.fns) == 1 and len(stmt.targets) == 1


def _in_parallel(stmt: Stmt) -> bool:
    """Whether the back end runs the histogram as partial histograms in parallel (integer
    `+ * min max`, float `+ *`; `backends/cpu/histogram.py`)."""
    op, elem = binary_operator(stmt.op.fns[0]), stmt.targets[0].rep.elem
    return elem in INTS and op in ("+", "*", "min", "max") or elem in FLOATS and op in ("+", "*")


def _rank1(a: Any) -> bool:
    return isinstance(a, FVar) and isinstance(a.rep, Regular) and a.rep.rank == 1


def _scalar(a: Any) -> bool:
    return isinstance(a, Const) or isinstance(a, FVar) and isinstance(a.rep, ScalarRep)


class _Histogram:
    """One `reduce_by_index` statement (at `items[at]`) and what joining it takes."""

    def __init__(self, fuser: Fuser, items: list, result: tuple, at: int):
        from .fuse import _Group, _fvars
        self.fuser, self.items, self.at = fuser, items, at
        self.stmt: Stmt = items[at]
        self._group_type = _Group
        self._fvars = _fvars
        self.position: dict[str, int] = {}      # name -> index of the item binding it
        self.readers: dict[str, int] = {}       # name -> how many statements read it
        for k, it in enumerate(items):
            for s in self._stmts(it):
                for t in s.targets:
                    self.position[t.name] = k
                for v in _fvars(s.op):
                    self.readers[v.name] = self.readers.get(v.name, 0) + 1
        for a in result:
            if isinstance(a, FVar):
                self.readers[a.name] = self.readers.get(a.name, 0) + 1

    def _stmts(self, item: Any) -> list[Stmt]:
        return item.stmts if isinstance(item, self._group_type) else [item]

    def _only(self, name: str, k: int) -> Stmt | None:
        """The one statement of item `k` when it binds only `name` and is read once."""
        found = self._binding(name, k)
        return found if found is not None and len(self._stmts(self.items[k])) == 1 else None

    def _binding(self, name: str, k: int) -> Stmt | None:
        """The statement of item `k` (a statement or a kernel) that binds only `name`, when
        `name` is read once."""
        found = [s for s in self._stmts(self.items[k]) if [t.name for t in s.targets] == [name]]
        return found[0] if found and self.readers.get(name, 0) == 1 else None

    def _counts_elements(self, count: Any, group: Any, indices: FVar) -> int | None:
        """Whether `count` is the kernel's element count (`length is`, the `length` of an
        array the kernel makes element-wise, or the count of its `iota`): the index of the
        `length` item to absorb with it (read only there), -1 when nothing is absorbed,
        None when it is not the count."""
        if not isinstance(count, FVar):
            return None
        if isinstance(group.domain, FVar) and group.domain.name == count.name:
            return -1
        c = self.position.get(count.name, -1)
        found = [s for s in self._stmts(self.items[c]) if isinstance(s.op, Length)
                 and [t.name for t in s.targets] == [count.name]] if c >= 0 else []
        if not found:
            return None
        arr = found[0].op.arr.name
        if arr != indices.name and not (arr in group.aligned and arr in group.made):
            return None
        return c if self._only(count.name, c) is not None else -1

    def _before(self, a: Any, start: int) -> bool:
        """Bound before item `start` (a parameter or a constant too)."""
        return not isinstance(a, FVar) or self.position.get(a.name, -1) < start

    def join(self) -> list | None:
        from .fuse import _ids, _line, may_fail
        dest, ne, indices, values = self.stmt.op.args
        if not (_rank1(dest) and _rank1(indices) and _rank1(values) and _scalar(ne)):
            return None
        if not (isinstance(dest.rep.elem, str) and dest.rep.elem == values.rep.elem):
            return None
        g = self.position.get(indices.name, -1)
        group = self.items[g] if g >= 0 else None
        if not (isinstance(group, self._group_type) and group.kind in ("map", "segmented")
                and indices.name in group.aligned and indices.name in group.made
                and not any(isinstance(s.op, SegReduce) for s in group.stmts)):
            return None
        shared = self.readers.get(indices.name, 0) != 1 + self._length_readers(indices)
        if shared and not _in_parallel(self.stmt):
            return None
        moved: list[Stmt] = []                  # into the kernel, before the histogram
        absorbed: set[int] = {self.at}          # items that go (into the kernel, or away)
        needs: list[Any] = [ne]                 # scalars the moved statements read
        may_fail_inside = False
        # values
        if values.name in group.made:
            if values.name not in group.aligned or self.readers.get(values.name, 0) != 1:
                return None
        elif self._before(values, g):
            may_fail_inside = True              # the kernel checks their lengths
        else:
            v = self.position[values.name]
            rep = self._only(values.name, v)
            if rep is None or not isinstance(rep.op, Replicate) or not _scalar(rep.op.x):
                return None
            c = self._counts_elements(rep.op.n, group, indices)
            if c is None:
                return None
            moved.append(_as_map(rep, indices))
            absorbed |= {v, c} - {-1}
            needs.append(rep.op.x)
        # dest
        taken = None                            # the fill, out of another kernel
        if not self._before(dest, g):
            d = self.position[dest.name]
            fill = self._binding(dest.name, d)
            if fill is None or not isinstance(fill.op, Replicate) or not _scalar(fill.op.x) \
                    or d < g:
                return None
            moved.insert(0, fill)
            if len(self._stmts(self.items[d])) == 1:
                absorbed.add(d)
            else:
                taken = self.items[d], fill
            needs += [fill.op.n, fill.op.x]
            may_fail_inside = may_fail_inside or self.fuser.may_fail_in_block(fill.op)
        hoisted = self._hoist(needs, g, absorbed)
        if hoisted is None:
            return None
        between = [k for k in range(g + 1, self.at) if k not in absorbed and k not in hoisted]
        if may_fail_inside and any(self._may_fail(self.items[k]) for k in between):
            return None
        with self.fuser.ctx.log.apply("FUSE-HIST", _line(self.stmt), changed=_ids(self.stmt),
                                      note=NOTE) as step:
            if taken is not None:
                other, fill = taken
                other.stmts.remove(fill)
                other.made.discard(dest.name)
                other.aligned.discard(dest.name)
            group.stmts += [*moved, self.stmt]
            group.made |= {t.name for s in (*moved, self.stmt) for t in s.targets}
            group.kind, group.closed = "hist", True
            step.after = "(in a kernel)"
        out = [it for k, it in enumerate(self.items)
               if k not in absorbed and k not in hoisted]
        place = out.index(group)
        return out[:place] + [self.items[k] for k in sorted(hoisted)] + out[place:]

    def _length_readers(self, indices: FVar) -> int:
        """Reads of the indices by `length is` statements (replaced when the values are
        `replicate (length is) x`)."""
        return sum(1 for it in self.items for s in self._stmts(it)
                   if isinstance(s.op, Length) and s.op.arr.name == indices.name)

    def _hoist(self, needs: list[Any], g: int, absorbed: set[int]) -> set[int] | None:
        """The items between the kernel and the histogram that compute the scalars `needs`
        (host `scalar` statements that cannot fail, reading only names bound before the
        kernel or by other such statements), or None when a scalar comes from elsewhere."""
        from .fuse import may_fail
        out: set[int] = set()
        todo = [a for a in needs if isinstance(a, FVar)]
        while todo:
            a = todo.pop()
            k = self.position.get(a.name, -1)
            if k < g or k in out or k in absorbed:
                continue
            it = self.items[k]
            if k == g or not isinstance(it, Stmt) or not isinstance(it.op, Scalar) \
                    or may_fail(it.op):
                return None
            out.add(k)
            todo += list(self._fvars(it.op))
        return out

    def _may_fail(self, item: Any) -> bool:
        return any(isinstance(s.op, Assert) or self.fuser.may_fail_in_block(s.op)
                   or not isinstance(s.op, (Scalar, Length, Iota, Replicate))
                   for s in self._stmts(item))


def _as_map(rep: Stmt, indices: FVar) -> Stmt:
    """`replicate (length is) x` as `map (\\_ -> x) is`: the same elements, at the kernel's
    element index."""
    x = rep.op.x
    body = ast.Lit(x.value, x.elem) if isinstance(x, Const) else ast.Var(x.name)
    free = () if isinstance(x, Const) else (x,)
    fn = ScalarFn((ast.PWild(),), body, free)
    return Stmt(rep.targets, Map(fn, (indices,)), span=rep.span, id=rep.id)
