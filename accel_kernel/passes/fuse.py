"""Stage `fuse`: the flat program's statements grouped into kernels (Futhark PLDI'17 §4,
Accelerate's delayed arrays, Obsidian's push arrays).

A *kernel* (`ir.flat.Kernel`) is a group of statements that run as one loop nest: values
passed between them at the same element index are never stored (pull arrays: a producer is
read by its consumers element by element), and only what is used outside the kernel is
written out. The rules, each logged under its name:

- FUSE-VERTICAL: an element-wise statement (a `map`, a `gather` at computed indices, the
  `project`ion of a mapped tuple, `iota`, `replicate` of a scalar, the views `values` and
  `reshape` of a block the kernel makes) that reads, at the same index, a value an open
  kernel makes, joins it (map∘map, map∘gather, ...). A view of anything else stays a view.
- FUSE-HORIZONTAL: an element-wise statement or a reduction that reads the same array at the
  same index as an open kernel joins it (one pass over the input for both).
- FUSE-REDOMAP, FUSE-SCANOMAP, FUSE-FILTER: a `reduce`, `scan` or `filter` of a value the
  kernel makes element-wise ends it in that reduction (reduced on the fly, nothing stored),
  scan or compaction. A kernel ending in a scan or a filter takes nothing more.
- FUSE-SEGMENTED-FILTER: a `filter` of the values a segmented kernel (one without a
  `seg_reduce`) makes element-wise: an expansion and the filter over it are one `filter`
  kernel that runs segment by segment, counting the kept elements, then writing them (the
  triples comprehension: no candidate is stored).
- FUSE-SEGMENTED: a `seg_reduce` of a value the kernel makes (or `segment_ids` /
  `segment_iota` of the same descriptor) makes it run segment by segment: segments in
  parallel, each segment's elements in order, the segment id and the position in it being
  the loop's own indices.
- FUSE-HIST: a `reduce_by_index` whose indices a `map` or `segmented` kernel makes joins
  that kernel, which becomes a `hist` kernel: no index or value is written out, unless
  something else reads it (`fuse_hist.py`).
- FUSE-ROWS: a `reduce` along the inner axis of a regular block the kernel makes: rows in
  parallel, each row in order.
- PUSH: `xs ++ ys` of regular arrays is a push kernel: one loop per part writing its own
  range of the result, so no element asks which part it is in.
- DEFER: a kernel that cannot fail, which nothing read yet, moves after an `assert` that
  came after it started, so that a statement that may fail can join it after the check.
- KERNEL: a kernel is made (one statement alone is still a kernel); its outputs are the
  values read outside it (MATERIALISE, logged per value, saying who reads it).
- REFUSE: a statement that could have joined an open kernel but did not, and why (it needs a
  value the kernel makes as a whole, a value bound after the kernel, the kernel already
  ends in a scan or filter, or it is a `gather` and an `assert` (the check of its indices)
  comes between them: the check runs first, so the error is the check's). Never by duplicating work: a value used by two consumers is
  computed once per element and written out if a reader is outside.

Everything else (scalar code, library functions, descriptors, asserts, `if` and `loop`, whose
blocks are fused on their own) stays a host statement, run by the host driver.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..ir.flat import (Assert, Atom, Block, Filter, FlatForm, FlatProgram, FVar, Gather, If, Iota,
                       Kernel, Length, Library, Loop, Map, Project, Reduce, Regular, Replicate,
                       Reshape, ScalarFn, ScalarRep, Scan, SegmentIds, SegmentIota, SegReduce,
                       Stmt, TupleRep, Values, SeqLoop, blocks_of, bound_inside, fields_of)
from ..ir.flat_printer import op_name, print_stmt
from ..lang import ast, scalar_ops
from .base import PassContext, PassOutput
from .fuse_hist import fuse_histograms

ELEMENT = "element"      # roles of a statement
TERMINAL = "terminal"
SEGMENT = "segment"
PUSH = "push"


@dataclass
class _Group:
    """An open kernel: its statements, the arrays it reads or makes at its element index,
    and where it stands among the block's items."""
    stmts: list[Stmt]
    kind: str      # map | redomap | scan | filter | segmented | rows | push | hist
    aligned: set[str]                           # arrays indexed by the kernel's element index
    made: set[str] = field(default_factory=set) # every name its statements bind
    offsets: str | None = None                  # segmented: the descriptor's name
    domain: Atom | None = None                  # iota / replicate: the element count
    closed: bool = False
    keep: str | None = None                     # filter: the mask of the kept elements
    kept: set[str] = field(default_factory=set) # filter: arrays over the kept elements only

    def can_take_elements(self) -> bool:
        return not self.closed and self.kind != "push"


def _fvars(op: Any) -> list[FVar]:
    """Every variable an operation reads (scalar functions' free variables included)."""
    out: list[FVar] = []
    for item in fields_of(op):
        if isinstance(item, FVar):
            out.append(item)
        elif isinstance(item, ScalarFn):
            out += list(item.free)
        elif isinstance(item, Block):
            out += _block_reads(item)
    return out


def _block_reads(block: Block) -> list[FVar]:
    bound: set[str] = set()
    out: list[FVar] = []
    for stmt in block.stmts:
        out += [v for v in _fvars(stmt.op) if v.name not in bound]
        bound.update(t.name for t in stmt.targets)
        bound |= bound_inside(stmt.op)
    out += [a for a in block.result if isinstance(a, FVar) and a.name not in bound]
    return out


def _array(rep: Any, rank: int | None = None) -> bool:
    return isinstance(rep, Regular) and (rank is None or rep.rank == rank)


def _elementwise_rep(rep: Any) -> bool:
    if isinstance(rep, TupleRep):
        return all(_elementwise_rep(p) for p in rep.parts)
    return isinstance(rep, Regular)


def classify(stmt: Stmt) -> tuple[str | None, list[str]]:
    """The role a statement can play in a kernel and the arrays it reads at the element
    index; (None, []) for a host statement."""
    op = stmt.op
    if isinstance(op, Map) and op.args and all(isinstance(a, FVar) and _array(a.rep)
                                                for a in op.args) \
            and len({a.rep.rank for a in op.args}) == 1 \
            and all(_elementwise_rep(t.rep) for t in stmt.targets):
        return ELEMENT, [a.name for a in op.args]
    if isinstance(op, Project) and isinstance(op.tup, FVar) and isinstance(op.tup.rep, TupleRep) \
            and _elementwise_rep(op.tup.rep):
        return ELEMENT, [op.tup.name]
    if isinstance(op, Gather) and _array(op.arr.rep, 1) and _array(op.indices.rep, 1):
        return ELEMENT, [op.indices.name]
    if isinstance(op, (Reshape, Values)) and isinstance(op.arr, FVar) and _array(op.arr.rep) \
            and all(_array(t.rep) for t in stmt.targets):
        return ELEMENT, [op.arr.name]           # the same elements seen with another shape
    if isinstance(op, (Iota, Replicate)) and (
            isinstance(op, Iota) or isinstance(op.x, FVar) and isinstance(op.x.rep, ScalarRep)
            or not isinstance(op.x, FVar)):
        return ELEMENT, []
    if isinstance(op, (Reduce, Scan)) and _array(op.arr.rep) and (
            op.arr.rep.rank == 1 or isinstance(op, Reduce) and op.arr.rep.rank == 2):
        return TERMINAL, [op.arr.name]
    if isinstance(op, Filter) and _array(op.keep.rep, 1) and _array(op.arr.rep, 1):
        return TERMINAL, [op.keep.name, op.arr.name]
    if isinstance(op, (SegmentIds, SegmentIota)):
        return SEGMENT, []
    if isinstance(op, SegReduce) and isinstance(op.values, FVar) and _array(op.values.rep, 1):
        return SEGMENT, [op.values.name]
    if isinstance(op, Library) and op.name == "concat" and len(op.args) == 2 \
            and all(isinstance(a, FVar) and _array(a.rep, 1) for a in op.args):
        return PUSH, []
    return None, []


class Fuser:
    def __init__(self, ctx: PassContext):
        self.ctx = ctx
        self.count = 0
        self._checked_after: set[int] = set()
        self._items: list = []                  # the block's items so far
        self._lengths: set[str] = set()         # the block's names bound by `length`

    # ------------------------------------------------------------------ the program
    def program(self, program: FlatProgram) -> FlatProgram:
        return FlatProgram(tuple(replace(f, body=self.block(f.body)) for f in program.forms))

    def block(self, block: Block) -> Block:
        stmts = [self._nested(s) for s in block.stmts]
        saved = self._checked_after, self._items, self._lengths
        self._checked_after = set()                # items an assert follows
        try:
            return self._block(block, stmts)
        finally:
            self._checked_after, self._items, self._lengths = saved

    def _block(self, block: Block, stmts: list[Stmt]) -> Block:
        items: list[Stmt | _Group] = []
        bound_at: dict[str, int] = {}           # name -> index of the item that binds it
        self._items = items
        self._lengths = {t.name for s in stmts if isinstance(s.op, Length) for t in s.targets}
        for stmt in stmts:
            role, aligned = classify(stmt)
            group = self._place(stmt, role, aligned, items, bound_at) if role else None
            if group is None:
                if role is not None and not _is_view(stmt):
                    group = self._open(stmt, role, aligned)
                    items.append(group)
                else:
                    items.append(stmt)
            index = items.index(group) if group is not None else len(items) - 1
            for t in stmt.targets:
                bound_at[t.name] = index
            if isinstance(stmt.op, Assert):    # a later statement joins no kernel before it
                self._checked_after.update(range(len(items) - 1))
        items = fuse_histograms(self, items, block.result)
        outside = _reads_outside(items, block.result)
        out = [self._kernel(item, outside) if isinstance(item, _Group) else item
               for item in items]
        return Block(tuple(out), block.result)

    def _nested(self, stmt: Stmt) -> Stmt:
        op = stmt.op
        if isinstance(op, If):
            return replace(stmt, op=If(op.cond, self.block(op.then), self.block(op.else_)))
        if isinstance(op, Loop):
            return replace(stmt, op=replace(op, body=self.block(op.body),
                                            cond=self.block(op.cond) if op.cond else None))
        if isinstance(op, SeqLoop):
            return replace(stmt, op=replace(
                op, body=self.block(op.body),
                combine=self.block(op.combine) if op.combine is not None else None))
        return stmt

    # ------------------------------------------------------------------ grouping
    def _open(self, stmt: Stmt, role: str, aligned: list[str]) -> _Group:
        op = stmt.op
        kind = {ELEMENT: "map", TERMINAL: "map", SEGMENT: "segmented", PUSH: "push"}[role]
        group = _Group([stmt], kind, set(aligned), {t.name for t in stmt.targets})
        if isinstance(op, (Iota, Replicate)):
            group.domain = op.n
        if isinstance(op, (SegmentIds, SegmentIota, SegReduce)):
            group.offsets = op.offsets.name
        if role == TERMINAL:
            self._terminal(group, stmt)
        if role == ELEMENT or isinstance(op, (Filter, SegmentIds, SegmentIota)):
            group.aligned |= group.made         # a reduction's result is not per element
        return group

    def _place(self, stmt: Stmt, role: str, aligned: list[str], items: list,
               bound_at: dict[str, int]) -> _Group | None:
        """The open kernel `stmt` joins (and joins it), or None."""
        reads = {v.name for v in _fvars(stmt.op)}
        for group in reversed([i for i in items if isinstance(i, _Group)]):
            rule, why = self._fits(group, stmt, role, aligned, reads, items.index(group),
                                   bound_at)
            if rule is None:
                if why:                         # kept out of the kernel: the line as it was
                    with self.ctx.log.apply("REFUSE", _line(stmt), changed=_ids(stmt),
                                            note=why) as step:
                        step.after = _line(stmt)
                continue
            with self.ctx.log.apply(rule, _line(stmt), changed=_ids(stmt),
                                    note=self._notes[rule]) as step:
                group.stmts.append(stmt)
                group.made |= {t.name for t in stmt.targets}
                if role == ELEMENT or isinstance(stmt.op, (Filter, SegmentIds, SegmentIota)):
                    group.aligned |= {t.name for t in stmt.targets} | set(aligned)
                else:
                    group.aligned |= set(aligned)
                step.after = "(in a kernel)"
            return group
        return None

    _notes = {
        "FUSE-VERTICAL": "reads a value of the kernel at the same index: computed in the "
                         "same loop, never stored",
        "FUSE-HORIZONTAL": "reads the same array at the same index as the kernel: one pass",
        "FUSE-REDOMAP": "reduces a value the kernel makes: reduced on the fly",
        "FUSE-SCANOMAP": "scans a value the kernel makes: scanned on the fly",
        "FUSE-FILTER": "filters a value the kernel makes: compacted on the fly",
        "FUSE-SEGMENTED-FILTER": "filters the elements of the segments the kernel runs over: "
                                 "it counts the kept elements of each chunk of segments, then "
                                 "writes them (no element stored before the compaction)",
        "FUSE-SEGMENTED": "per segment of the descriptor: segments in parallel, each "
                          "segment's elements in order",
        "FUSE-ROWS": "reduces the rows of a block the kernel makes: rows in parallel",
    }

    def _fits(self, group: _Group, stmt: Stmt, role: str, aligned: list[str],
              reads: set[str], position: int, bound_at: dict[str, int]
              ) -> tuple[str | None, str]:
        op = stmt.op
        shares = set(aligned) & group.aligned
        if role == PUSH or group.kind == "push":
            return None, ""
        if role == SEGMENT and isinstance(op, (SegmentIds, SegmentIota)) and not shares:
            if group.kind == "segmented" and group.offsets == op.offsets.name:
                return self._available(stmt, group, reads, position, bound_at, set(),
                                       "FUSE-SEGMENTED")
            return None, ""
        if not shares and not (isinstance(op, (Iota, Replicate)) and group.domain == op.n
                               and group.domain is not None):
            return None, ""
        if _is_view(stmt) and _viewed(stmt) not in group.made:
            return None, ""                     # a view of an input stays a view (no copy)
        if group.kind == "filter":
            return self._fits_filtered(group, stmt, role, aligned, reads, position, bound_at)
        if group.closed:
            return None, f"the kernel ends in a {group.kind}: it takes nothing more"
        # a value of the kernel read other than at the element index needs the whole kernel
        whole = (reads - set(aligned)) & group.made
        if whole:
            return None, f"needs {', '.join(sorted(whole))} of the kernel as a whole"
        rule = "FUSE-VERTICAL" if shares & group.made else "FUSE-HORIZONTAL"
        if role == TERMINAL:
            rule = self._terminal_rule(group, op)
            if rule is None:
                return None, f"a {type(op).__name__.lower()} cannot end a {group.kind} kernel"
        if role == SEGMENT:                     # a seg_reduce of the kernel's values
            if group.kind == "segmented" and group.offsets != op.offsets.name:
                return None, "another segment descriptor"
            if group.kind not in ("map", "segmented"):
                return None, f"a seg_reduce cannot join a {group.kind} kernel"
            rule = "FUSE-SEGMENTED"
        return self._available(stmt, group, reads, position, bound_at, shares, rule)

    def _fits_filtered(self, group: _Group, stmt: Stmt, role: str, aligned: list[str],
                       reads: set[str], position: int, bound_at: dict[str, int]
                       ) -> tuple[str | None, str]:
        """After a filter, a kernel takes element-wise statements and reductions over the kept
        elements (filter into its consumer: nothing is compacted unless a value is needed
        outside), another filter by the same mask, or more work over all elements."""
        op = stmt.op
        over_kept = set(aligned) <= group.kept
        over_all = not (set(aligned) & group.kept)
        whole = (reads - set(aligned)) & group.made
        if whole:
            return None, f"needs {', '.join(sorted(whole))} of the kernel as a whole"
        if isinstance(op, Filter):
            if op.keep.name != group.keep or not over_all:
                return None, "a filter by another mask"
            return self._available(stmt, group, reads, position, bound_at, set(),
                                   "FUSE-FILTER")
        if isinstance(op, Scan) or role == SEGMENT or (isinstance(op, Reduce)
                                                       and op.arr.rep.rank != 1):
            return None, "the kernel ends in a filter: a scan or segmented work cannot follow"
        if not (over_kept or over_all):
            return None, "mixes kept elements with all elements"
        if over_kept:
            rule = "FUSE-REDOMAP" if role == TERMINAL else "FUSE-VERTICAL"
            found = self._available(stmt, group, reads, position, bound_at, set(), rule)
            if found[0] is not None and role == ELEMENT:
                group.kept |= {t.name for t in stmt.targets}
            return found
        rule = "FUSE-REDOMAP" if role == TERMINAL else "FUSE-HORIZONTAL"
        return self._available(stmt, group, reads, position, bound_at, set(), rule)

    def _available(self, stmt, group, reads, position, bound_at, shares, rule):
        late = sorted(n for n in reads - group.made if bound_at.get(n, -1) >= position)
        if late:
            return None, f"reads {', '.join(late)}, bound after the kernel starts"
        if position in self._checked_after and may_fail(stmt.op) \
                and not self._defer(group, position, bound_at, stmt):
            # the assert's error comes first (it may check this statement's inputs: a
            # gather's indices, the lengths a map's function divides by)
            return None, (f"an assert between the kernel and this {op_name(stmt.op)} must run "
                          "first: the statement may fail")
        if rule in ("FUSE-REDOMAP", "FUSE-SCANOMAP", "FUSE-FILTER", "FUSE-ROWS",
                    "FUSE-SEGMENTED", "FUSE-SEGMENTED-FILTER"):
            self._terminal(group, stmt)
        return rule, ""

    def _defer(self, group: _Group, position: int, bound_at: dict[str, int],
               stmt: Stmt) -> bool:
        """DEFER: a kernel that cannot fail, and that nothing after it (so far) reads, moves
        after the items that follow it, the asserts among them: its loop then runs after
        the checks, and a statement that may fail can join it (k-means' `map` over `iota`,
        after the check that the points and the centroids have the same width)."""
        later = self._items[position + 1:]
        if any(self.may_fail_in_block(s.op) for s in group.stmts) \
                or any(group.made & {v.name for v in _item_reads(it)} for it in later):
            return False
        with self.ctx.log.apply("DEFER", _line(group.stmts[0]), changed=_ids(stmt),
                                note=f"the kernel cannot fail: it runs after the "
                                     f"{len(later)} item(s) after it, so "
                                     f"`{op_name(stmt.op)}` can join it") as step:
            self._items.append(self._items.pop(position))
            for name, k in bound_at.items():
                bound_at[name] = k - 1 if k > position else k
            for name in group.made:
                bound_at[name] = len(self._items) - 1
            self._checked_after = {k - 1 if k > position else k
                                   for k in self._checked_after if k != position}
            step.after = _line(group.stmts[0])
        return True

    def may_fail_in_block(self, op: Any) -> bool:
        """`may_fail`, but an `iota` or `replicate` of a literal or of a `length` cannot."""
        if isinstance(op, (Iota, Replicate)):
            n = op.n
            if n.name in self._lengths if isinstance(n, FVar) else n.value >= 0:
                return False
        return may_fail(op)

    def _terminal_rule(self, group: _Group, op: Any) -> str | None:
        if isinstance(op, Reduce) and op.arr.rep.rank == 2:
            return "FUSE-ROWS" if group.kind in ("map", "rows") else None
        if isinstance(op, Reduce):
            return "FUSE-REDOMAP" if group.kind in ("map", "redomap") else None
        if isinstance(op, Scan):
            return "FUSE-SCANOMAP" if group.kind == "map" else None
        if isinstance(op, Filter) and group.kind == "segmented" \
                and self.ctx.options.segmented_filter \
                and not any(isinstance(s.op, SegReduce) for s in group.stmts):
            return "FUSE-SEGMENTED-FILTER"
        if isinstance(op, Filter):
            return "FUSE-FILTER" if group.kind == "map" else None
        return None

    def _terminal(self, group: _Group, stmt: Stmt) -> None:
        op = stmt.op
        if isinstance(op, Reduce) and op.arr.rep.rank == 2:
            group.kind = "rows"
        elif isinstance(op, Reduce):
            group.kind = "redomap" if group.kind in ("map", "redomap") else group.kind
            if group.kind == "filter" and op.arr.name in group.kept:
                return
        elif isinstance(op, Scan):
            group.kind, group.closed = "scan", True
        elif isinstance(op, Filter):
            group.kind, group.keep = "filter", op.keep.name
            group.kept |= {t.name for t in stmt.targets}
        elif isinstance(op, (SegReduce, SegmentIds, SegmentIota)):
            group.kind, group.offsets = "segmented", op.offsets.name

    # ------------------------------------------------------------------ kernels
    def _kernel(self, group: _Group, outside: dict[str, list[str]]) -> Stmt:
        """The kernel statement of a group (KERNEL), its outputs the values read outside it
        (MATERIALISE, logged before the kernel's own step)."""
        self.count += 1
        name = f"k{self.count}_{group.kind}"
        ops = ", ".join(op_name(s.op) for s in group.stmts)
        lines = tuple(sorted({s.span.line for s in group.stmts if s.span is not None}))
        with self.ctx.log.apply("KERNEL", f"{len(group.stmts)} statement(s): {ops}",
                                note=f"lines {', '.join(map(str, lines))}" if lines else ""
                                ) as step:
            outputs = self._outputs(group, outside)
            body = Block(tuple(group.stmts), tuple(outputs))
            kernel = Stmt(tuple(outputs), Kernel(name, group.kind, body, lines),
                          span=group.stmts[0].span, id=self.ctx.fresh_id())
            step.after = (f"kernel {name} ({group.kind}) writes "
                          f"{', '.join(t.name for t in outputs) or 'nothing'}")
            step.changed = (kernel.id,)
        return kernel

    def _outputs(self, group: _Group, outside: dict[str, list[str]]) -> list[FVar]:
        outputs: list[FVar] = []
        for stmt in group.stmts:
            for t in stmt.targets:
                readers = outside.get(t.name, [])
                if readers:
                    with self.ctx.log.apply("MATERIALISE", _line(stmt), changed=_ids(stmt),
                                            note=f"{t.name} is read by "
                                                 f"{', '.join(sorted(set(readers)))}: "
                                                 f"written out") as step:
                        outputs.append(t)
                        step.after = _line(stmt)
        return outputs


def may_fail(op: Any) -> bool:
    """Whether a statement that may join a kernel can raise: a gather (its indices), an iota
    or replicate (a negative count), or a scalar function with an operator or builtin that
    raises (`lang/scalar_ops.py`: integer `/`, `%`, `**`, shifts) whose right operand is not
    a literal it is defined for, or with an array read, a call or a loop."""
    if isinstance(op, (Gather, Iota, Replicate)):
        return True
    fn = getattr(op, "fn", None) or getattr(op, "op", None)
    return isinstance(fn, ScalarFn) and _code_may_fail(fn.body)


def _code_may_fail(e: ast.Expr) -> bool:
    if isinstance(e, (ast.Lit, ast.Var)):
        return False
    if isinstance(e, ast.BinOp):
        entry = scalar_ops.BINARY_OPS.get(e.op)
        right = e.right.value if isinstance(e.right, ast.Lit) else None
        safe = entry is not None and (entry.error is None or (
            isinstance(right, (int, float)) and not isinstance(right, bool)
            and (right > 0 if e.op in ("/", "%") else right >= 0)))
        return not safe or _code_may_fail(e.left) or _code_may_fail(e.right)
    if isinstance(e, ast.Apply) and isinstance(e.fn, ast.Var) \
            and e.fn.name in scalar_ops.FUNCTIONS:
        return any(_code_may_fail(a) for a in e.args)
    if isinstance(e, ast.Ascribe):
        return _code_may_fail(e.expr)
    if isinstance(e, (ast.UnOp, ast.Project, ast.TupleLit, ast.If)):
        return any(_code_may_fail(c) for c in ast.children(e))
    return True


def _item_reads(item: Any) -> list[FVar]:
    """What a statement or an open kernel reads (a kernel: not what it makes itself)."""
    if isinstance(item, _Group):
        return [v for st in item.stmts for v in _fvars(st.op) if v.name not in item.made]
    return _fvars(item.op)


def _line(stmt: Stmt) -> str:
    """The statement's first printed line, as the log shows it."""
    return print_stmt(stmt)[0].strip()


def _ids(stmt: Stmt) -> tuple[int, ...]:
    return (stmt.id,) if stmt.id else ()


def _is_view(stmt: Stmt) -> bool:
    """A statement that only looks at an array another way (another shape, its values, a
    component of a tuple of arrays): in a kernel only when the kernel makes what it sees."""
    return isinstance(stmt.op, (Reshape, Values, Project))


def _viewed(stmt: Stmt) -> str:
    op = stmt.op
    return op.tup.name if isinstance(op, Project) else op.arr.name


def _reads_outside(items: list, result: tuple[Atom, ...]) -> dict[str, list[str]]:
    """For every name, who reads it other than the statements of its own kernel."""
    readers: dict[str, list[str]] = {}
    own: dict[str, int] = {}
    for k, item in enumerate(items):
        stmts = item.stmts if isinstance(item, _Group) else [item]
        for stmt in stmts:
            for t in stmt.targets:
                own[t.name] = k
    for k, item in enumerate(items):
        stmts = item.stmts if isinstance(item, _Group) else [item]
        who = "the kernel" if isinstance(item, _Group) else "a host statement"
        for stmt in stmts:
            for v in _fvars(stmt.op):
                if own.get(v.name, -1) != k:
                    readers.setdefault(v.name, []).append(
                        f"{who} #{stmt.id}" if stmt.id else who)
    for a in result:
        if isinstance(a, FVar):
            readers.setdefault(a.name, []).append("the result")
    return readers


class FusePass:
    name = "fuse"
    transforms = True

    def run(self, program: FlatProgram, ctx: PassContext) -> PassOutput:
        return PassOutput(Fuser(ctx).program(program))    # type: ignore[arg-type]

    def verify(self, program: FlatProgram) -> list[str]:
        from ..ir.flat_printer import verify
        return verify(program)


FUSE = FusePass()
