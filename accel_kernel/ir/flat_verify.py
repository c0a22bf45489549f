"""`verify(program)`: the invariants of a flat program (`ir/flat.py`), as a list of problems.

- SSA: every variable is bound once in the whole program (def parameters, statement targets,
  loop parameters and indices) and used only after its binding, in its block or a block nested
  in it. A variable no form binds is a global (a name an earlier form or cell bound); every use
  of one global has one rep.
- Reps: each argument has the rep its operation needs (`iota` an `i64`, `seg_reduce` offsets
  `[r1]i64`, `map` arrays of one kind, `rebuild` gives `[seg]` of its values, ...), and each
  statement's targets have the reps the operation gives, where the operation fixes them.
- Blocks: an `if`'s two blocks and a loop's body give what its targets (parameters) hold; a
  `while` block gives one `bool`.
- Scalar functions: their free variables are bound scalars.
"""
from __future__ import annotations

from .flat import (OFFSETS, Assert, Atom, Block, Const, Copy, FlatProgram, Filter, FVar,
                   Gather, If, Kernel, WriteRows, blocks_of,
                   Index, Iota, Length, Lengths, Library, Literal, Loop, MakeTuple, Map, Offsets, SeqLoop,
                   Project, Rebuild, Reduce, Regular, Rep, Replicate, Reshape, Scalar, ScalarFn,
                   ScalarRep, Scan, SegFilter, SegGather, SegLibrary, SegmentIds, SegmentIota,
                   Segmented, SegReduce, SegScan, SizesToOffsets, Stmt, TupleRep, Values,
                   show_rep)

I64 = ScalarRep("i64")
BOOL = ScalarRep("bool")


def _rep(a: Atom) -> Rep:
    return a.rep if isinstance(a, FVar) else ScalarRep(a.elem)


def _row(rep: Rep) -> Rep | None:
    if isinstance(rep, Regular):
        return ScalarRep(rep.elem) if rep.rank == 1 else Regular(rep.elem, rep.rank - 1)
    if isinstance(rep, Segmented):
        return rep.inner
    if isinstance(rep, TupleRep):
        rows = [_row(p) for p in rep.parts]
        return None if any(r is None for r in rows) else TupleRep(tuple(rows))  # type: ignore
    return None


def _is_array(rep: Rep) -> bool:
    return _row(rep) is not None


def _scalar_like(rep: Rep) -> bool:
    return isinstance(rep, ScalarRep) or (isinstance(rep, TupleRep)
                                          and all(_scalar_like(p) for p in rep.parts))


def _kind(rep: Rep) -> str:
    if isinstance(rep, TupleRep):
        kinds = {_kind(p) for p in rep.parts}
        return kinds.pop() if len(kinds) == 1 else "mixed"
    return type(rep).__name__


class _Verifier:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.bound: set[str] = set()          # every name bound so far, anywhere
        self.globals: dict[str, Rep] = {}
        self.all_bound: set[str] = set()

    def problem(self, stmt: Stmt | None, text: str) -> None:
        where = f" (statement #{stmt.id})" if stmt is not None and stmt.id else ""
        self.problems.append(text + where)

    def bind(self, var: FVar, scope: dict[str, Rep], stmt: Stmt | None) -> None:
        if var.name in self.bound:
            self.problem(stmt, f"`{var.name}` is bound twice")
        self.bound.add(var.name)
        scope[var.name] = var.rep

    def use(self, a: Atom, scope: dict[str, Rep], stmt: Stmt | None) -> None:
        if isinstance(a, Const):
            return
        if a.name in scope:
            if scope[a.name] != a.rep:
                self.problem(stmt, f"`{a.name}` is used as {show_rep(a.rep)} but bound as "
                                   f"{show_rep(scope[a.name])}")
        elif a.name in self.all_bound:
            self.problem(stmt, f"`{a.name}` is used where it is not bound")
        else:
            known = self.globals.setdefault(a.name, a.rep)
            if known != a.rep:
                self.problem(stmt, f"the global `{a.name}` is used as {show_rep(a.rep)} and "
                                   f"as {show_rep(known)}")

    def fn(self, fn: ScalarFn, scope: dict[str, Rep], stmt: Stmt, arity: int | None) -> None:
        if arity is not None and len(fn.params) != arity:
            self.problem(stmt, f"a function of {len(fn.params)} parameters where {arity} "
                               "are needed")
        for f in fn.free:
            self.use(f, scope, stmt)
            if not (_scalar_like(f.rep) or isinstance(f.rep, Regular) and f.rep.rank <= 2):
                self.problem(stmt, f"the scalar function reads `{f.name}`, which is neither "
                                   "a scalar nor a free array (or block of rows) of scalars")

    # ------------------------------------------------------------------ blocks
    def block(self, block: Block, scope: dict[str, Rep]) -> list[Rep]:
        scope = dict(scope)
        for stmt in block.stmts:
            self.stmt(stmt, scope)
        for a in block.result:
            self.use(a, scope, None)
        return [_rep(a) for a in block.result]

    def stmt(self, stmt: Stmt, scope: dict[str, Rep]) -> None:
        op = stmt.op
        for name in _atom_fields(op):
            self.use(name, scope, stmt)
        expected = self.op(stmt, op, scope)
        if expected is not None:
            if len(expected) != len(stmt.targets):
                self.problem(stmt, f"{type(op).__name__} gives {len(expected)} values, "
                                   f"bound to {len(stmt.targets)} names")
            else:
                for t, rep in zip(stmt.targets, expected):
                    if rep is not None and rep != t.rep:
                        self.problem(stmt, f"`{t.name}` is {show_rep(t.rep)} but "
                                           f"{type(op).__name__} gives {show_rep(rep)}")
        if isinstance(op, Kernel):           # a kernel writes out the names its body bound
            results = [a.name for a in op.body.result if isinstance(a, FVar)]
            if [t.name for t in stmt.targets] != results:
                self.problem(stmt, "a kernel's targets must be the names its body gives")
            for t in stmt.targets:
                scope[t.name] = t.rep
            return
        for t in stmt.targets:
            self.bind(t, scope, stmt)

    def need(self, stmt: Stmt, ok: bool, text: str) -> None:
        if not ok:
            self.problem(stmt, f"{type(stmt.op).__name__}: {text}")

    def op(self, stmt: Stmt, op, scope: dict[str, Rep]) -> list[Rep | None] | None:
        need = lambda ok, text: self.need(stmt, ok, text)     # noqa: E731
        if isinstance(op, Scalar):
            self.fn(op.fn, scope, stmt, 0)
            return [None]
        if isinstance(op, Literal):
            return [op.rep]
        if isinstance(op, Iota):
            need(_rep(op.n) == I64, "the size must be an i64")
            return [Regular("i64", 1)]
        if isinstance(op, Replicate):
            need(_rep(op.n) == I64, "the count must be an i64")
            x = _rep(op.x)
            return [Regular(x.elem, 1) if isinstance(x, ScalarRep) else
                    Regular(x.elem, x.rank + 1) if isinstance(x, Regular) else None]
        if isinstance(op, Map):
            self.fn(op.fn, scope, stmt, len(op.args))
            kinds = {_kind(_rep(a)) for a in op.args}
            need(bool(op.args) and len(kinds) == 1 and all(_is_array(_rep(a)) for a in op.args),
                 "the arguments must be arrays of one kind (all regular or all segmented)")
            return [None]
        if isinstance(op, (Reduce, Scan)):
            self.fn(op.op, scope, stmt, 2)
            arr = _rep(op.arr)
            need(_is_array(arr), "the array is not an array")
            need(_scalar_like(_rep(op.ne)), "the neutral element must be a scalar")
            if isinstance(op, Scan):
                return [arr]
            row = _row(arr)
            return [_rep(op.ne) if row is not None and _scalar_like(row) else
                    _drop_inner(arr)]
        if isinstance(op, (SegReduce, SegScan)):
            self.fn(op.op, scope, stmt, 2)
            need(_rep(op.offsets) == OFFSETS, "offsets must be [r1]i64")
            values = _rep(op.values)
            need(_is_array(values), "the values are not an array")
            if isinstance(op, SegScan):
                return [values]
            return [values if isinstance(values, (Regular, TupleRep)) else None]
        if isinstance(op, Filter):
            need(_rep(op.keep) == Regular("bool", 1), "keep must be [r1]bool")
            return [_rep(op.arr)]
        if isinstance(op, Copy):
            need(isinstance(_rep(op.arr), Regular), "copies a regular array")
            return [_rep(op.arr)]
        if isinstance(op, WriteRows):
            need(isinstance(_rep(op.arr), Regular), "writes rows of a regular array")
            need(_rep(op.indices) == Regular("i64", 1), "indices must be [r1]i64")
            need(_rep(op.rows) == _rep(op.arr), "rows must have the array's rep")
            return [_rep(op.arr)]
        if isinstance(op, SegFilter):
            need(_rep(op.keep) == Regular("bool", 1), "keep must be [r1]bool")
            need(_rep(op.offsets) == OFFSETS, "offsets must be [r1]i64")
            return [OFFSETS, _rep(op.values)]
        if isinstance(op, SizesToOffsets):
            need(_rep(op.sizes) == Regular("i64", 1), "sizes must be [r1]i64")
            return [OFFSETS]
        if isinstance(op, (Lengths, SegmentIds, SegmentIota)):
            need(_rep(op.offsets) == OFFSETS, "offsets must be [r1]i64")
            return [Regular("i64", 1)]
        if isinstance(op, Gather):
            arr, idx = _rep(op.arr), _rep(op.indices)
            need(isinstance(idx, Regular) and idx.elem == "i64", "indices must be i64 arrays")
            need(_is_array(arr), "gathers from a non-array")
            if isinstance(arr, Regular) and isinstance(idx, Regular):
                return [Regular(arr.elem, arr.rank - 1 + idx.rank)]
            return [arr if isinstance(idx, Regular) and idx.rank == 1 else None]
        if isinstance(op, SegGather):
            need(_rep(op.offsets) == OFFSETS, "offsets must be [r1]i64")
            need(_rep(op.segments) == Regular("i64", 1), "segments must be [r1]i64")
            need(_rep(op.indices) == Regular("i64", 1), "indices must be [r1]i64")
            return [_rep(op.values)]
        if isinstance(op, Index):
            need(_rep(op.index) == I64, "the index must be an i64")
            return [_row(_rep(op.arr))]
        if isinstance(op, Length):
            need(_is_array(_rep(op.arr)), "the length of a non-array")
            return [I64]
        if isinstance(op, Rebuild):
            need(_rep(op.offsets) == OFFSETS, "offsets must be [r1]i64")
            return [Segmented(_rep(op.values))]
        if isinstance(op, Offsets):
            need(isinstance(_rep(op.arr), Segmented), "offsets of a non-segmented array")
            return [OFFSETS]
        if isinstance(op, Values):
            arr = _rep(op.arr)
            need(isinstance(arr, Segmented) or (isinstance(arr, Regular) and arr.rank > 1),
                 "values of an array without inner dimension")
            return [arr.inner if isinstance(arr, Segmented) else _row(arr)]
        if isinstance(op, Reshape):
            arr = _rep(op.arr)
            need(isinstance(arr, Regular), "reshape of a non-regular array")
            need(_rep(op.rows) == I64, "rows must be an i64")
            return [Regular(arr.elem, arr.rank + 1) if isinstance(arr, Regular) else None]
        if isinstance(op, MakeTuple):
            return [TupleRep(tuple(_rep(a) for a in op.parts))]
        if isinstance(op, Project):
            tup = _rep(op.tup)
            ok = isinstance(tup, TupleRep) and 0 <= op.index < len(tup.parts)
            need(ok, f"no component {op.index}")
            return [tup.parts[op.index] if ok else None]  # type: ignore[union-attr]
        if isinstance(op, (Library, SegLibrary)):
            for f in op.fns:
                self.fn(f, scope, stmt, None)
            if isinstance(op, SegLibrary):
                need(_rep(op.offsets) == OFFSETS, "offsets must be [r1]i64")
                return [OFFSETS, _rep(op.values)]
            return None
        if isinstance(op, Assert):
            ok = _rep(op.ok)
            need(ok == BOOL or (isinstance(ok, Regular) and ok.elem == "bool"),
                 "the condition must be bool")
            return []
        if isinstance(op, If):
            need(_rep(op.cond) == BOOL, "the condition must be a bool")
            then = self.block(op.then, scope)
            else_ = self.block(op.else_, scope)
            need(then == else_, "the branches give different reps "
                 f"({', '.join(map(show_rep, then))} and {', '.join(map(show_rep, else_))})")
            return list(then)
        if isinstance(op, Loop):
            return self.loop(stmt, op, scope)
        if isinstance(op, SeqLoop):
            return self.seq_loop(stmt, op, scope)
        if isinstance(op, Kernel):
            return list(self.block(op.body, scope))
        self.problem(stmt, f"unknown operation {type(op).__name__}")
        return None

    def loop(self, stmt: Stmt, op: Loop, scope: dict[str, Rep]) -> list[Rep | None]:
        inner = dict(scope)
        need = lambda ok, text: self.need(stmt, ok, text)     # noqa: E731
        need(len(op.params) == len(op.init), "parameters and initial values differ in number")
        for p, a in zip(op.params, op.init):
            need(p.rep == _rep(a), f"`{p.name}` is {show_rep(p.rep)}, its initial value "
                                   f"{show_rep(_rep(a))}")
            self.bind(p, inner, stmt)
        if op.cond is not None:
            need(op.bound is None, "both a bound and a condition")
            need(self.block(op.cond, inner) == [BOOL], "the condition must give one bool")
        else:
            need(op.bound is not None and _rep(op.bound) == I64, "the bound must be an i64")
            if op.index is not None:
                self.bind(op.index, inner, stmt)
        body = self.block(op.body, inner)
        need(body == [p.rep for p in op.params],
             "the body gives " + ", ".join(map(show_rep, body)) + " for "
             + ", ".join(show_rep(p.rep) for p in op.params))
        return [p.rep for p in op.params]


    def seq_loop(self, stmt: Stmt, op: SeqLoop, scope: dict[str, Rep]) -> list[Rep | None]:
        inner = dict(scope)
        need = lambda ok, text: self.need(stmt, ok, text)     # noqa: E731
        need(len(op.params) == len(op.init), "parameters and initial values differ in number")
        need(op.length is None or _rep(op.length) == I64, "the length must be an i64")
        need(op.length is not None or bool(op.streams), "no length and nothing streamed")
        for p, a in zip(op.params, op.init):
            need(p.rep == _rep(a), f"`{p.name}` is {show_rep(p.rep)}, its initial value "
                                   f"{show_rep(_rep(a))}")
            self.bind(p, inner, stmt)
        for var in (op.start, op.count):
            need(var.rep == I64, f"`{var.name}` must be an i64")
            self.bind(var, inner, stmt)
        for source, chunk in op.streams:
            need(not isinstance(_rep(source), ScalarRep) and chunk.rep == _rep(source),
                 f"the chunk `{chunk.name}` of a streamed value must have its rep")
            self.bind(chunk, inner, stmt)
        body = self.block(op.body, inner)
        need(body[:len(op.params)] == [p.rep for p in op.params],
             "the body gives " + ", ".join(map(show_rep, body)) + " for "
             + ", ".join(show_rep(p.rep) for p in op.params))
        need(all(r is not None and not isinstance(r, ScalarRep)
                 for r in body[len(op.params):]), "an appended part must be an array")
        if op.combine is not None:
            joined = dict(scope) | {p.name: p.rep for p in op.params}  # bound above
            need([r.rep for r in op.right] == [p.rep for p in op.params],
                 "the combine's right operand must have the parameters' reps")
            for r in op.right:
                self.bind(r, joined, stmt)
            combined = self.block(op.combine, joined)
            need(combined == [p.rep for p in op.params],
                 "the combine gives " + ", ".join(map(show_rep, combined)))
        else:
            need(not op.right, "a right operand without a combine")
        return list(body)


def _drop_inner(rep: Rep) -> Rep | None:
    if isinstance(rep, Regular) and rep.rank > 1:
        return Regular(rep.elem, rep.rank - 1)
    if isinstance(rep, TupleRep):
        parts = [_drop_inner(p) for p in rep.parts]
        return None if any(p is None for p in parts) else TupleRep(tuple(parts))  # type: ignore
    return None


def _atom_fields(op) -> list[Atom]:
    out: list[Atom] = []
    for name in op.__dataclass_fields__:
        value = getattr(op, name)
        if isinstance(value, (FVar, Const)):
            out.append(value)
        elif isinstance(value, tuple) and name not in ("params", "fns"):
            out += [v for v in value if isinstance(v, (FVar, Const))]
    if isinstance(op, Loop):           # parameters are bound by the loop, not read
        names = {p.name for p in op.params}
        out = [a for a in out if not (isinstance(a, FVar) and a.name in names)]
        if op.index is not None:
            out = [a for a in out if a != op.index]
    if isinstance(op, SeqLoop):        # so are a sequence's; its streamed values are read
        names = ({p.name for p in op.params} | {op.start.name, op.count.name}
                 | {r.name for r in op.right})
        out = [a for a in out if not (isinstance(a, FVar) and a.name in names)]
        out += [source for source, _ in op.streams]
    return out


def _bound_names(block: Block, out: set[str]) -> None:
    for stmt in block.stmts:
        out.update(t.name for t in stmt.targets)
        op = stmt.op
        if isinstance(op, Loop):
            out.update(p.name for p in op.params)
            if op.index is not None:
                out.add(op.index.name)
        if isinstance(op, SeqLoop):
            out.update(p.name for p in op.params)
            out.update((op.start.name, op.count.name))
            out.update(chunk.name for _, chunk in op.streams)
            out.update(r.name for r in op.right)
        for inner in blocks_of(op):
            _bound_names(inner, out)


def verify(program: FlatProgram) -> list[str]:
    """The problems of a flat program; empty when it is well formed."""
    v = _Verifier()
    for form in program.forms:
        names: set[str] = {p.name for p in form.params}
        _bound_names(form.body, names)
        v.all_bound |= names
    for form in program.forms:
        scope: dict[str, Rep] = {}
        for p in form.params:
            v.bind(p, scope, None)
        before = len(v.problems)
        v.block(form.body, scope)
        label = form.names[0] if form.names else "expression"
        v.problems[before:] = [f"{form.kind} {label}: {p}" for p in v.problems[before:]]
        if form.kind == "let":          # later forms read the new binding of these names
            for name in form.names:
                v.globals.pop(name, None)
    return v.problems
