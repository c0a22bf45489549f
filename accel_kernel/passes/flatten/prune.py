"""Dead statements: flattening a construct sometimes binds a value nothing reads (the
`rebuild` of a nested map's rows when only a reduction of them is used, a descriptor made
for a branch that did not need it). They are removed at the end of each form (rule
`DEAD`), so the flat program and its drawing show only what runs. A statement that may fail
(`assert`, or an `if`/`loop` with a check inside) is never removed: the error is part of
the meaning."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...ir.flat import (Assert, Block, FVar, ScalarFn, SeqLoop, Stmt, blocks_of, bound_inside,
                        fields_of)


def reads(op: Any) -> set[str]:
    """The names an operation reads, its nested blocks and scalar functions included."""
    out: set[str] = set()
    for item in fields_of(op):
        if isinstance(item, FVar):
            out.add(item.name)
        elif isinstance(item, ScalarFn):
            out.update(f.name for f in item.free)
        elif isinstance(item, Block):
            out |= block_reads(item)
    return out - bound_inside(op)


def block_reads(block: Block) -> set[str]:
    out = {a.name for a in block.result if isinstance(a, FVar)}
    for stmt in block.stmts:
        out |= reads(stmt.op)
    return out


def may_fail(op: Any) -> bool:
    if isinstance(op, Assert):
        return True
    return any(may_fail(s.op) for b in blocks_of(op) for s in b.stmts)


def prune(block: Block) -> tuple[Block, list[Stmt]]:
    """The block without the statements whose values nothing reads (and that cannot fail),
    and the statements removed."""
    live = {a.name for a in block.result if isinstance(a, FVar)}
    kept: list[Stmt] = []
    removed: list[Stmt] = []
    for stmt in reversed(block.stmts):
        if not may_fail(stmt.op) and not any(t.name in live for t in stmt.targets):
            removed.append(stmt)
            continue
        if isinstance(stmt.op, SeqLoop):        # a sequence's body runs at every step
            body, inner = prune(stmt.op.body)
            stmt = replace(stmt, op=replace(stmt.op, body=body))
            removed += inner
            if stmt.op.combine is not None:
                combine, inner = prune(stmt.op.combine)
                stmt = replace(stmt, op=replace(stmt.op, combine=combine))
                removed += inner
        kept.append(stmt)
        live |= reads(stmt.op)
    return Block(tuple(reversed(kept)), block.result), list(reversed(removed))
