"""Building small flat programs by hand for the `numpy` target's tests (and tests of that).

`fn("\\a b -> a + b")` parses a scalar lambda; `prog(stmts, result)` wraps statements in one
"expr" form; `run(...)` executes it and gives the flat result. Spans come from `src(text)`:
`at(source, "xs[i]")` is the span of the first occurrence of a piece of text.
"""
import itertools

import numpy as np
import pytest

from accel_kernel.backends.numpy import Counters, Segs, execute
from accel_kernel.ir import flat as F
from accel_kernel.lang import ast
from accel_kernel.lang.parser import parse_expr
from accel_kernel.lang.source import Source, Span
from accel_kernel.session import Session

_ids = itertools.count(1)

I64, F64, BOOL, I32 = F.ScalarRep("i64"), F.ScalarRep("f64"), F.ScalarRep("bool"), \
    F.ScalarRep("i32")
R1 = F.Regular("i64", 1)
R2 = F.Regular("i64", 2)
RF1 = F.Regular("f64", 1)
RB1 = F.Regular("bool", 1)
SEG = F.Segmented(R1)


def fn(text: str, *free: F.FVar, source: Source | None = None) -> F.ScalarFn:
    """A ScalarFn from the text of a lambda (or of any function expression: `(+)`)."""
    expr = parse_expr(source or Source("fn", text), _ids) if source is None else _sub(source, text)
    if isinstance(expr, ast.Lambda):
        return F.ScalarFn(expr.params, expr.body, tuple(free))
    return F.ScalarFn((), expr, tuple(free))


def _sub(source: Source, text: str) -> ast.Expr:
    """The expression `text`, parsed where it stands inside `source` (spans point there)."""
    start = source.text.index(text)
    padded = Source(source.name, " " * start + text)
    expr = parse_expr(padded, _ids)
    return _respan(expr, source)


def _respan(node, source: Source):
    import dataclasses
    changes = {}
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if isinstance(value, ast.Node):
            changes[f.name] = _respan(value, source)
        elif isinstance(value, tuple):
            changes[f.name] = tuple(_respan(v, source) if isinstance(v, ast.Node) else v
                                    for v in value)
    span = node.span
    if span is not None:
        changes["span"] = Span(source, span.start, span.end)
    return dataclasses.replace(node, **changes)


def src(text: str) -> Source:
    return Source("cell", text)


def at(source: Source, piece: str) -> Span:
    start = source.text.index(piece)
    return Span(source, start, start + len(piece))


def v(name: str, rep: F.Rep = R1) -> F.FVar:
    return F.FVar(name, rep)


def c(value, elem: str = "i64") -> F.Const:
    return F.Const(value, elem)


def st(targets, op, span: Span | None = None) -> F.Stmt:
    if isinstance(targets, F.FVar):
        targets = (targets,)
    return F.Stmt(tuple(targets), op, span=span, id=next(_ids))


def prog(stmts, result, kind: str = "expr", names=()) -> F.FlatProgram:
    if not isinstance(result, (tuple, list)):
        result = (result,)
    block = F.Block(tuple(stmts), tuple(result))
    return F.FlatProgram((F.FlatForm(kind, tuple(names), (), block),))


def run(stmts, result, globals=None, counters: Counters | None = None, trace: bool = False):
    out = execute(prog(stmts, result), globals or {}, counters=counters, trace=trace)
    return out.results[0]


def interp(code: str):
    """The interpreter's value of the last expression of `code`."""
    return Session(target="interp").execute(code).value


def segs(rows) -> Segs:
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    flat = [x for r in rows for x in r]
    return Segs(offsets, np.array(flat, dtype=np.int64))


def rows_of(value: Segs) -> list:
    o = value.offsets.tolist()
    flat = value.values.tolist()
    return [flat[o[k]:o[k + 1]] for k in range(len(o) - 1)]


# ---------------------------------------------------------------- the builders themselves


def test_fn_parses_lambdas_and_operator_functions():
    add = fn("\\a b -> a + b")
    assert [p.name for p in add.params] == ["a", "b"] and isinstance(add.body, ast.BinOp)
    plus = fn("(+)")
    assert plus.params == () and isinstance(plus.body, ast.OpFunc)


def test_fn_inside_a_source_keeps_spans_there():
    source = src("map (\\x -> 10 / x) xs")
    f = fn("\\x -> 10 / x", source=source)
    assert f.body.span.source is source
    assert source.text[f.body.span.start:f.body.span.end] == "10 / x"


def test_run_gives_the_result_of_the_expression():
    xs = v("xs")
    out = run([st(xs, F.Iota(c(4)))], xs)
    assert out.tolist() == [0, 1, 2, 3]


def test_segs_and_rows_of_round_trip():
    assert rows_of(segs([[1], [], [2, 3]])) == [[1], [], [2, 3]]


@pytest.mark.parametrize("code, value", [("1 + 2", 3)])
def test_interp_helper(code, value):
    assert interp(code) == value
