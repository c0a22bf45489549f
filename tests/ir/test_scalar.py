"""The scalar IR (`ir/scalar.py`) and its lowering from flat `ScalarFn`s (`ir/scalar_lower.py`):
every scalar function of every example program lowers, verifies, and prints as core accel
that parses back and type checks to the same type; lambdas, sections, partial applications
and builtins as values are reduced away."""
from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from accel_kernel.ir import flat as F
from accel_kernel.ir import scalar as S
from accel_kernel.ir.scalar_lower import lower
from accel_kernel.lang import ast
from accel_kernel.lang import types as T
from accel_kernel.lang.errors import AccelError
from accel_kernel.lang.parser import parse_expr, parse_program
from accel_kernel.lang.printer import print_pattern, print_type
from accel_kernel.lang.source import Source
from accel_kernel.lang.typecheck import GlobalEnv, check_program
from accel_kernel.session import Session

PROGRAMS = sorted((Path(__file__).parent.parent / "programs").glob("**/*.accel"))
R1 = F.Regular("i64", 1)


def leaf_type(rep: F.Rep) -> S.ScalarType:
    if isinstance(rep, F.TupleRep):
        return tuple(leaf_type(p) for p in rep.parts)
    if isinstance(rep, F.Segmented):
        return leaf_type(rep.inner)
    return rep.elem


def scalar_functions(block: F.Block):
    """(fn, argument types) of every scalar function a statement applies."""
    for stmt in block.stmts:
        op = stmt.op
        if isinstance(op, F.Map):
            yield op.fn, [leaf_type(a.rep) for a in op.args]
        elif isinstance(op, F.Scalar):
            yield op.fn, []
        elif isinstance(op, (F.Reduce, F.Scan)):
            yield op.op, [leaf_type(op.arr.rep)] * 2
        elif isinstance(op, (F.SegReduce, F.SegScan)):
            yield op.op, [leaf_type(op.values.rep)] * 2
        for inner in F.blocks_of(op):
            yield from scalar_functions(inner)


@cache
def program_functions(path: Path) -> list:
    try:
        stages = Session().program_stages(path.read_text(), path.name, stop_after="flatten")
    except (AccelError, NotImplementedError):
        return []                     # the programs that test compile-time errors
    return [(fn, types) for form in stages[-1].program.forms
            for fn, types in scalar_functions(form.body)]


def accel_result_type(func: S.ScalarFunc) -> str:
    """The type the type checker gives the printed function, its free variables as
    parameters: `def check (x: i64) (xs: []i64) = <body>`."""
    params = [ast.PVar(p.name, S.accel_type(p.type)) for p in func.params]
    params += [ast.PVar(v.name, S.rep_type(v.rep)) for v in func.free]
    text = (f"def check_scalar {' '.join(print_pattern(p) for p in params)} = "
            f"{S.print_expr_ir(func.body, func.free_reps())}")
    if not params:
        text = f"def check_scalar (unused_: i64) = {S.print_expr_ir(func.body)}"
    checked = check_program(parse_program(Source("scalar", text)), GlobalEnv())
    t = checked.schemes["check_scalar"].type
    for _ in range(max(1, len(params))):
        assert isinstance(t, T.Func)
        t = t.result
    return T.show(t)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_every_scalar_function_lowers_verifies_and_prints_as_accel_that_type_checks(path):
    for fn, arg_types in program_functions(path):
        func = lower(fn, arg_types, {v.name: v.rep for v in fn.free})
        S.verify(func)
        parse_expr(Source("scalar", S.print_func(func)))
        assert accel_result_type(func) == print_type(S.accel_type(func.type)), \
            S.print_func(func)


# ---------------------------------------------------------------- lowering by hand


def lowered(params: str, body: str, arg_types: list, free: dict | None = None) -> str:
    expr = parse_expr(Source("fn", body))
    patterns = parse_expr(Source("fn", f"\\{params} -> 0")).params if params else ()
    fn = F.ScalarFn(tuple(patterns), expr, tuple(F.FVar(n, r) for n, r in (free or {}).items()))
    func = lower(fn, arg_types, free or {}, "test")
    S.verify(func)
    return S.print_func(func)


@pytest.mark.parametrize("params, body, types, expected", [
    ("x", "(\\y -> y * 2) (x + 1)", ["i64"], "\\(x: i64) -> let y = x + 1 in y * 2"),
    ("x", "(\\y -> y * 2) x", ["i64"], "\\(x: i64) -> x * 2"),
    ("x", "(+ 1) x", ["i64"], "\\(x: i64) -> x + 1"),
    ("x", "(2 -) x", ["i64"], "\\(x: i64) -> 2 - x"),
    ("x", "(-) x 1", ["i64"], "\\(x: i64) -> x - 1"),
    ("", "(+)", ["i64", "i64"], "\\(p0: i64) (p1: i64) -> p0 + p1"),
    ("", "min", ["f64", "f64"], "\\(p0: f64) (p1: f64) -> min p0 p1"),
    ("x", "let f = (\\a b -> a / b) x in f 2 + f 3", ["i64"],
     "\\(x: i64) -> x / 2 + x / 3"),
    ("a b", "(\\(p, q) -> p + q) (a, b)", ["i64", "i64"], "\\(a: i64) (b: i64) -> a + b"),
    ("(a, b)", "a - b", [("i64", "i64")],
     "\\(p0: (i64, i64)) -> let (a, b) = p0 in a - b"),
    ("x", "(\\a -> \\b -> a * b) (x + 1) x", ["i64"],
     "\\(x: i64) -> let a = x + 1 in a * x"),
    ("x", "(zero : f64) + highest", ["f64"], None),
    ("x", "(/ (x / 2)) (x / 3)", ["i64"],
     "\\(x: i64) -> let operand = x / 2 in x / 3 / operand"),
    ("c x y", "select c (x, y) (y, x)", ["bool", "i64", "i64"],
     "\\(c: bool) (x: i64) (y: i64) -> (select c x y, select c y x)"),
    ("i", "xs[i] + length xs", ["i64"],
     "\\(i: i64) -> xs[i] + length xs"),
    ("s", "loop acc = s for x in xs do acc + x", ["i64"],
     "\\(s: i64) -> loop acc = s for k < length xs do let x = xs[k] in acc + x"),
    ("n", "loop (a, b) = (0, 1) for i < n do (b, a + b)", ["i64"],
     "\\(n: i64) -> loop (a, b) = (0, 1) for i < n do (b, a + b)"),
])
def test_lowering_reduces_functions_at_compile_time(params, body, types, expected):
    got = lowered(params, body.replace("highest", "(highest : f64)"), types, {"xs": R1})
    if expected is not None:
        assert got == expected


def test_a_free_tuple_of_arrays_and_an_irregular_array_are_read_by_path():
    free = {"t": F.TupleRep((R1, F.ScalarRep("f64"))),
            "xss": F.Segmented(F.Regular("i32", 1))}
    got = lowered("i", "(t.0[i], t.1, xss[i][0], length xss)", ["i64"], free)
    assert got == "\\(i: i64) -> (t.0[i], t.1, xss[i][0], length xss)"


@pytest.mark.parametrize("body, message", [
    ("\\y -> x + y", "a result that is a function or an array"),
    ("(if x > 0 then (+ 1) else (- 1)) x", "an `if` that chooses a function"),
    ("xs", "a result that is a function or an array"),
    ("xss[x]", "a row of an irregular array"),
])
def test_what_cannot_be_first_order_is_not_built(body, message):
    free = {"xs": R1, "xss": F.Segmented(R1)}
    with pytest.raises(NotImplementedError, match="test: .*not built yet") as info:
        lowered("x", body, ["i64"], free)
    assert message in str(info.value)


def test_an_ill_typed_function_is_a_value_error():
    with pytest.raises(ValueError, match="must agree"):
        lowered("x", "x + 1.0", ["i64"])


def test_verify_finds_a_wrong_type():
    bad = S.ScalarFunc((S.Param("x", "i64"),),
                       S.Binary("+", S.Var("x", "i64"), S.Const(1, "i64"), "f64"))
    with pytest.raises(ValueError, match="operands give i64"):
        S.verify(bad)
