"""The flat IR's text (`ir/flat_printer.py`): it reads like accel, parses back to the same
program, and `verify` finds what is wrong with a flat program."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from accel_kernel.ir import flat as F
from accel_kernel.ir.flat_printer import (FlatSyntaxError, make_fn, parse_flat, parse_value,
                                          print_atom, print_flat, print_value, verify)
from accel_kernel.lang import ast
from accel_kernel.lang.errors import AccelError
from accel_kernel.session import Session

PROGRAMS = sorted((Path(__file__).parent.parent / "programs").glob("**/*.accel"))

ROWSUMS = """\
def rowsums (xss_1: [seg][r1]i64) =
  let offs_2: [r1]i64 = offsets xss_1
  let vals_3: [r1]i64 = values xss_1
  let sums_4: [r1]i64 = seg_reduce (\\a b -> a + b) 0 offs_2 vals_3
  in sums_4
"""

EVERYTHING = """\
def f (xs_1: [r1]i64) (t_2: ([r2]f64, bool)) (n_3: i64) =
  let m_4: [r1]i64 = map (\\x -> 2 * x + n_3) xs_1
  let s_5: i64 = scalar (n_3 * 2)
  let lit_6: [seg][r1]i32 = literal [[1i32, 2i32], [], [3i32]]
  let f_7: f64 = scalar (-1.0 / 0.0)
  let c_8: [r2]f64 = project 0 t_2
  let (o_9: [r1]i64, v_10: [r1]i64) = seg_filter k_11 offs_12 m_4
  assert ok_13 SizeError "the \\"rows\\" differ"
  let y_14: ([r1]i64, i64) = tuple m_4 s_5
  let z_15: [r1]i64 = scatter m_4 m_4 m_4
  let w_16: (i64, [r1]i64) = if b_17
    then
      let q_18: i64 = index m_4 0
      in (q_18, m_4)
    else
      in (s_5, m_4)
  let (a_19: i64, k_20: i64) = loop (a_21: i64, k_22: i64) = (0, n_3) while
      let c_23: bool = scalar (a_21 < k_22)
      in c_23
    do
      let a_24: i64 = scalar (a_21 + 1)
      in (a_24, k_22)
  let r_25: [r1]i64 = loop (acc_26: [r1]i64) = (m_4) for i_27 < n_3 do
      let g_28: [r1]i64 = seg_sort_by offs_12 acc_26 m_4
      in g_28
  let sorted_29: [r1]f64 = sort_by (\\x -> 0.0 - x) lit_30
  in (r_25, 2.5f32, true)

let (a, b) =
  let x_31: i64 = scalar (1)
  in (x_31, 7)

expr =
  let y_32: i64 = scalar (a + b)
  in y_32
"""


def flat_of(path: Path, stage: str = "flatten"):
    text = path.read_text()
    try:
        Session().check(text, path.name)
    except AccelError:
        return None
    return Session().program_stages(text, path.name, stop_after=stage)[-1].program


@pytest.mark.parametrize("stage", ["flatten", "fuse"])
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_every_flattened_and_fused_program_prints_parses_back_and_verifies(path, stage):
    program = flat_of(path, stage)
    if program is None:
        pytest.skip("a compile-time error: nothing to flatten")
    assert verify(program) == []
    text = print_flat(program)
    assert parse_flat(text) == program
    assert print_flat(parse_flat(text)) == text


def test_a_program_reads_like_accel_and_parses_back():
    program = parse_flat(ROWSUMS)
    assert print_flat(program) == ROWSUMS
    form = program.forms[0]
    assert form.kind == "def" and form.names == ("rowsums",)
    assert form.params == (F.FVar("xss_1", F.Segmented(F.Regular("i64", 1))),)
    reduce = form.body.stmts[2].op
    assert isinstance(reduce, F.SegReduce) and reduce.ne == F.Const(0, "i64")
    assert verify(program) == []


def test_every_kind_of_statement_round_trips():
    globals_ = {"k_11": F.Regular("bool", 1), "offs_12": F.OFFSETS, "ok_13": F.ScalarRep("bool"),
                "b_17": F.ScalarRep("bool"), "lit_30": F.Regular("f64", 1)}
    program = parse_flat(EVERYTHING, globals_)
    assert print_flat(program) == EVERYTHING
    body = program.forms[0].body
    m = body.stmts[0].op
    assert isinstance(m, F.Map) and m.fn.free == (F.FVar("n_3", F.ScalarRep("i64")),)
    assert isinstance(body.stmts[6].op, F.Assert) and body.stmts[6].op.message == \
        'the "rows" differ'
    loop = body.stmts[11].op
    assert isinstance(loop, F.Loop) and loop.index == F.FVar("i_27", F.ScalarRep("i64"))
    assert isinstance(body.stmts[11].op.body.stmts[0].op, F.SegLibrary)
    assert body.result[1] == F.Const(2.5, "f32")
    assert program.forms[1].names == ("a", "b")
    expr = program.forms[2].body.stmts[0].op.fn
    assert [f.name for f in expr.free] == ["a", "b"]       # globals of the earlier form


@pytest.mark.parametrize("value, elem, text", [
    (3, "i64", "3"), (-3, "i32", "-3i32"), (1.5, "f64", "1.5"), (2.0, "f32", "2.0f32"),
    (float("inf"), "f64", "inf"), (float("-inf"), "f32", "-inff32"), (True, "bool", "true"),
    (1e20, "f64", "1e+20"),
])
def test_constants(value, elem, text):
    assert print_atom(F.Const(value, elem)) == text
    parsed = parse_flat(f"expr =\n  in {text}\n").forms[0].body.result[0]
    assert parsed == F.Const(value, elem)


def test_literal_values():
    rep = F.Segmented(F.Regular("f64", 1))
    value = [[np.float64(1.5)], [], [np.float64(-2.0)]]
    assert print_value(value, rep) == "[[1.5], [], [-2.0]]"
    assert parse_value("[[1.5], [], [-2.0]]", rep) == value
    assert isinstance(parse_value("[[1.5]]", rep)[0][0], np.float64)


def test_syntax_errors_say_where():
    with pytest.raises(FlatSyntaxError, match="line 2"):
        parse_flat("expr =\n  let x: i64 = iota\n  in x\n")
    with pytest.raises(FlatSyntaxError, match="not bound"):
        parse_flat("expr =\n  let x: [r1]i64 = iota y\n  in x\n")


# ---------------------------------------------------------------- verify

I64, OFFS = F.ScalarRep("i64"), F.OFFSETS


def program_of(*stmts: F.Stmt, result=()) -> F.FlatProgram:
    return F.FlatProgram((F.FlatForm("expr", (), (), F.Block(tuple(stmts), tuple(result))),))


def test_verify_finds_names_bound_twice_and_used_before_binding():
    x = F.FVar("x", F.Regular("i64", 1))
    n = F.FVar("n", I64)
    twice = program_of(F.Stmt((x,), F.Iota(F.Const(3, "i64"))),
                       F.Stmt((x,), F.Iota(F.Const(3, "i64"))), result=(x,))
    assert any("bound twice" in p for p in verify(twice))
    early = program_of(F.Stmt((x,), F.Iota(n)), F.Stmt((n,), F.Length(x)), result=(x,))
    assert any("`n` is used where it is not bound" in p for p in verify(early))


def test_verify_checks_reps_of_arguments_and_targets():
    vals = F.FVar("v", F.Regular("i64", 1))
    bad_offsets = F.FVar("o", F.Regular("i64", 2))
    out = F.FVar("r", F.Regular("i64", 1))
    fn = make_fn((ast.PVar("a"), ast.PVar("b")),
                 ast.BinOp("+", ast.Var("a"), ast.Var("b")), {})
    prog = program_of(F.Stmt((vals,), F.Iota(F.Const(3, "i64"))),
                      F.Stmt((bad_offsets,), F.Replicate(F.Const(2, "i64"), vals)),
                      F.Stmt((out,), F.SegReduce(fn, F.Const(0, "i64"), bad_offsets, vals)),
                      result=(out,))
    assert any("offsets must be [r1]i64" in p for p in verify(prog))
    wrong_target = program_of(F.Stmt((F.FVar("s", I64),), F.Iota(F.Const(3, "i64"))),
                              result=())
    assert any("Iota gives [r1]i64" in p for p in verify(wrong_target))


def test_verify_checks_blocks_of_if_and_loop():
    c = F.FVar("c", F.ScalarRep("bool"))
    y = F.FVar("y", I64)
    branches = F.If(c, F.Block((), (F.Const(1, "i64"),)), F.Block((), (F.Const(1.0, "f64"),)))
    prog = program_of(F.Stmt((c,), F.Scalar(make_fn((), ast.Lit(True, "bool"), {}))),
                      F.Stmt((y,), branches), result=(y,))
    assert any("branches give different reps" in p for p in verify(prog))
    p = F.FVar("p", I64)
    loop = F.Loop((p,), (F.Const(0, "i64"),), F.Block((), (F.Const(1.0, "f64"),)),
                  bound=F.Const(3, "i64"))
    prog = program_of(F.Stmt((F.FVar("z", I64),), loop))
    assert any("the body gives f64 for i64" in p for p in verify(prog))


def test_scalar_functions_read_scalars_and_arrays_of_scalars_only():
    xs = F.FVar("xs", F.Regular("i64", 1))
    xss = F.FVar("xss", F.Regular("i64", 2))
    xsss = F.FVar("xsss", F.Regular("i64", 3))
    fn = F.ScalarFn((), ast.Var("xsss"), (xsss,))
    prog = program_of(F.Stmt((xs,), F.Iota(F.Const(3, "i64"))),
                      F.Stmt((xss,), F.Reshape(xs, F.Const(1, "i64"))),
                      F.Stmt((xsss,), F.Reshape(xss, F.Const(1, "i64"))),
                      F.Stmt((F.FVar("s", I64),), F.Scalar(fn)))
    assert any("neither a scalar nor a free array (or block of rows) of scalars" in p
               for p in verify(prog))
    # SEQ-INNER's loops read a free array of scalars element by element, SEQ-INNER-ROWS's a
    # block of rows of scalars
    for free, read in ((xs, ast.Index(ast.Var("xs"), ast.Lit(0, "i64"))),
                       (xss, ast.Index(ast.Index(ast.Var("xss"), ast.Lit(0, "i64")),
                                       ast.Lit(1, "i64")))):
        fn = F.ScalarFn((), read, (free,))
        prog = program_of(F.Stmt((xs,), F.Iota(F.Const(3, "i64"))),
                          F.Stmt((xss,), F.Reshape(xs, F.Const(1, "i64"))),
                          F.Stmt((F.FVar("s", I64),), F.Scalar(fn)))
        assert verify(prog) == []
