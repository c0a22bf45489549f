"""The AST printer: output reads like accel and parses back equal (`parse(print(ast)) == ast`),
on hand-written programs and on random ASTs from hypothesis strategies."""
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accel_kernel.lang import ast
from accel_kernel.lang.parser import BINARY_LEVELS, parse_expr, parse_program, parse_type
from accel_kernel.lang.printer import (print_expr, print_form, print_pattern, print_program,
                                        print_type)
from accel_kernel.lang.source import Source

ROOT = Path(__file__).resolve().parents[2]


def expr(text: str) -> ast.Expr:
    return parse_expr(Source("test", text))


def program(text: str) -> ast.Program:
    return parse_program(Source("test", text))


def round_trip_expr(text: str) -> str:
    e = expr(text)
    printed = print_expr(e)
    assert expr(printed) == e, printed
    return printed


# ---------------------------------------------------------------- hand-written

@pytest.mark.parametrize("text,printed", [
    ("1 + 2 * 3", "1 + 2 * 3"),
    ("(1 + 2) * 3", "(1 + 2) * 3"),
    ("1 - (2 - 3)", "1 - (2 - 3)"),
    ("(1 - 2) - 3", "1 - 2 - 3"),
    ("2 ** (3 ** 4)", "2 ** 3 ** 4"),
    ("(2 ** 3) ** 4", "(2 ** 3) ** 4"),
    ("-2 ** 2", "-2 ** 2"),
    ("-(2 ** 2)", "-(2 ** 2)"),
    ("-(2)", "-(2)"),
    ("- -x", "-(-x)"),
    ("f (-1) x", "f (-1) x"),
    ("f (g x) y", "f (g x) y"),
    ("(f x) y", "(f x) y"),
    ("f x y", "f x y"),
    ("-f x", "-f x"),
    ("(-f) x", "(-f) x"),
    ("xs[i + 1]", "xs[i + 1]"),
    ("(f x)[0]", "(f x)[0]"),
    ("f [1, 2]", "f [1, 2]"),
    ("t.1.0", "t.1.0"),
    ("(1, 2).0", "(1, 2).0"),
    ("((1)).0", "(1).0"),
    ("xs[1:]", "xs[1:]"), ("xs[:j]", "xs[:j]"), ("xs[i:j]", "xs[i:j]"),
    ("(+)", "(+)"), ("(+1)", "(+ 1)"), ("(2*)", "(2 *)"), ("(> 0)", "(> 0)"),
    ("(-1)", "-1"), ("(min)", "min"),
    ("\\x y -> x + y", "\\x y -> x + y"),
    ("\\(a, b) (c: i64) _ -> a", "\\(a, b) (c: i64) _ -> a"),
    ("1 + if c then 2 else 3", "1 + if c then 2 else 3"),
    ("(if c then 2 else 3) + 1", "(if c then 2 else 3) + 1"),
    ("f (\\x -> x) xs", "f (\\x -> x) xs"),
    ("let x = 1 in x + 1", "let x = 1 in x + 1"),
    ("let (a, b): (i64, f64) = p in a", "let (a, b): (i64, f64) = p in a"),
    ("loop acc = 0 for i < n do acc + i", "loop acc = 0 for i < n do acc + i"),
    ("loop (a, b) = (0, 1) for x in xs do (b, a + x)",
     "loop (a, b) = (0, 1) for x in xs do (b, a + x)"),
    ("loop x = 1 while x < 100 do x * 2", "loop x = 1 while x < 100 do x * 2"),
    ("xs with [i] = v + 1", "xs with [i] = v + 1"),
    ("xss with [i][j] = 0", "xss with [i][j] = 0"),
    ("(xs with [0] = 1) ++ ys", "(xs with [0] = 1) ++ ys"),
    ("[(a | b), c]", "[(a | b), c]"),
    ("xs[a | b]", "xs[a | b]"),
    ("[x | x <- xs, x > 0]", "[x | x <- xs, x > 0]"),
    ("[x + y | x <- xs | y <- ys]", "[x + y | x <- xs | y <- ys]"),
    ("[y | x <- xs, let y = x * 2, (y | 1) > 2]", "[y | x <- xs, let y = x * 2, (y | 1) > 2]"),
    ("[1..<10 by 2]", "[1..<10 by 2]"), ("[a..b]", "[a..b]"), ("[10..0 by -1]", "[10..0 by -1]"),
    ("([] : []i64)", "([] : []i64)"),
    ("while (\\x -> x < 10) (\\x -> x + 1) 0", "while (\\x -> x < 10) (\\x -> x + 1) 0"),
    ("3i32 + 1.5f32 + 2.0 + 1e-3", "3i32 + 1.5f32 + 2.0 + 0.001"),
    ("true && !false", "true && !false"),
    ("a && b || c && d", "a && b || c && d"),
    ("(a || b) && c", "(a || b) && c"),
    ("1 << 2 + 1", "1 << 2 + 1"),
    ("5 & 3 == 1", "5 & 3 == 1"),
])
def test_printed_form(text, printed):
    assert round_trip_expr(text) == printed


@pytest.mark.parametrize("text", [
    "[]i64", "[n][m]f32", "[3]bool", "(i64, f64)", "i64 -> i64 -> i64", "(i64 -> i64) -> i64",
    "seq []i64", "[](i64 -> bool)", "seq (i64, bool)", "[]seq i64",
])
def test_type_round_trip(text):
    t = parse_type(Source("t", text))
    assert print_type(t) == text
    assert parse_type(Source("t", print_type(t))) == t


def test_let_chain_def_is_printed_with_layout():
    text = "def f x =\n  let a = x + 1\n  let b = a * 2\n  a + b\nf 1\n"
    assert print_program(program(text)) == text
    text2 = "def g (x: i64) : i64 = let (q, r) = (x / 10, x % 10) in q + r\n"
    assert print_program(program(text2)) == ("def g (x: i64) : i64 =\n"
                                              "  let (q, r) = (x / 10, x % 10)\n  q + r\n")


PROGRAMS = [
    "def add1 (x: i64) : i64 = x + 1\ndef sq x = x * x\nlet xs = iota 10\nmap add1 xs\n",
    "let (lo, hi) = partition (> 0) xs\nlet x: i64 = 5\nlet y = 1 in y\n",
    "def scale ((v, s): (f64, f64)) : f64 = v * s\nscale (2.0, 4.5)\n",
    "def c = 3\nc\n",
    "[(x, y, z) | x <- [1..<100], y <- [x..<100], z <- [y..<(x + y)], z < 100, "
    "x * x + y * y == z * z]\n",
    "def bubble (xs: []i64) : []i64 =\n  let n = length xs\n  loop ys = xs for i < n do\n"
    "    loop zs = ys for j < n - 1 do\n      if zs[j] > zs[j + 1]\n"
    "      then scatter zs [j, j + 1] [zs[j + 1], zs[j]]\n      else zs\n",
    "def f x =\n  let g = \\y -> y + x\n  let h = g\n  in h 2\n",
]


@pytest.mark.parametrize("text", PROGRAMS)
def test_program_round_trip(text):
    p = program(text)
    printed = print_program(p)
    assert program(printed) == p
    assert print_program(program(printed)) == printed


def example_files():
    files = sorted((ROOT / "tests" / "programs").glob("*.accel"))
    files.append(ROOT / "accel_kernel" / "prelude.accel")
    return [f for f in files if "error_syntax" not in f.name]


@pytest.mark.parametrize("path", example_files(), ids=lambda p: p.name)
def test_example_programs_round_trip(path):
    p = parse_program(Source(path.name, path.read_text()))
    assert program(print_program(p)) == p


def test_pattern_printing():
    lam = expr("\\x _ (y: i64) (a, (b: f64, _)) ((c, d): (i64, i64)) (_: bool) -> 0")
    assert [print_pattern(p) for p in lam.params] == [
        "x", "_", "(y: i64)", "(a, (b: f64, _))", "((c, d): (i64, i64))", "(_: bool)"]


# ---------------------------------------------------------------- random ASTs

NAMES = st.sampled_from(["x", "y", "xs", "f", "acc", "n", "i_2", "zs"])
VAR_NAMES = st.sampled_from(["x", "y", "xs", "f", "map", "while", "n"])
OPS = sorted(BINARY_LEVELS)
SIZES = st.one_of(st.none(), st.integers(0, 99), st.sampled_from(["n", "m"]))


def types() -> st.SearchStrategy:
    leaf = st.builds(ast.TScalar, st.sampled_from(["bool", "i32", "i64", "f32", "f64"]))
    return st.recursive(leaf, lambda sub: st.one_of(
        st.builds(ast.TArray, sub, SIZES),
        st.builds(ast.TTuple, st.lists(sub, min_size=2, max_size=3).map(tuple)),
        st.builds(ast.TFunc, sub, sub),
        st.builds(ast.TSeq, sub)), max_leaves=5)


ANNOT = st.one_of(st.none(), types())


def patterns() -> st.SearchStrategy:
    leaf = st.one_of(st.builds(ast.PVar, NAMES, ANNOT), st.builds(ast.PWild, ANNOT))
    return st.recursive(leaf, lambda sub: st.builds(
        ast.PTuple, st.lists(sub, min_size=2, max_size=3).map(tuple), ANNOT), max_leaves=4)


def literals() -> st.SearchStrategy:
    return st.one_of(
        st.builds(ast.Lit, st.integers(-2 ** 63, 2 ** 63 - 1), st.just("i64")),
        st.builds(ast.Lit, st.integers(-2 ** 31, 2 ** 31 - 1), st.just("i32")),
        st.builds(ast.Lit, st.floats(allow_nan=False, allow_infinity=False),
                  st.sampled_from(["f32", "f64"])),
        st.builds(ast.Lit, st.booleans(), st.just("bool")))


def exprs() -> st.SearchStrategy:
    leaf = st.one_of(literals(), st.builds(ast.Var, VAR_NAMES),
                     st.builds(ast.OpFunc, st.sampled_from(OPS)))

    def extend(sub):
        small = st.lists(sub, min_size=1, max_size=3).map(tuple)
        pats = patterns()
        qualifier = st.one_of(st.builds(ast.Generator, pats, sub), st.builds(ast.Guard, sub),
                              st.builds(ast.LetQual, pats, sub))
        branch = st.lists(qualifier, min_size=1, max_size=3).map(tuple)
        form = st.one_of(st.builds(ast.ForRange, NAMES, sub), st.builds(ast.ForIn, pats, sub),
                         st.builds(ast.While, sub))
        return st.one_of(
            st.builds(ast.ArrayLit, st.lists(sub, max_size=3).map(tuple)),
            st.builds(ast.Range, sub, sub, st.booleans(), st.one_of(st.none(), sub)),
            st.builds(ast.TupleLit, st.lists(sub, min_size=2, max_size=3).map(tuple)),
            st.builds(ast.Project, sub, st.integers(0, 12)),
            st.builds(ast.Index, sub, sub),
            st.builds(ast.Slice, sub, st.one_of(st.none(), sub), st.one_of(st.none(), sub)),
            st.builds(ast.BinOp, st.sampled_from(OPS), sub, sub),
            st.builds(ast.UnOp, st.sampled_from(["-", "!"]), sub),
            st.builds(ast.Apply, sub, small),
            st.builds(ast.LeftSection, st.sampled_from(OPS), sub),
            st.builds(ast.RightSection, st.sampled_from([o for o in OPS if o != "-"]), sub),
            st.builds(ast.Lambda, st.lists(pats, min_size=1, max_size=2).map(tuple), sub),
            st.builds(ast.Let, pats, sub, sub),
            st.builds(ast.If, sub, sub, sub),
            st.builds(ast.Loop, pats, sub, form, sub),
            st.builds(ast.Update, sub, small, sub),
            st.builds(ast.Ascribe, sub, types()),
            st.builds(ast.Comprehension, sub, st.lists(branch, min_size=1, max_size=2).map(tuple)),
        )
    return st.recursive(leaf, extend, max_leaves=12)


def top_forms() -> st.SearchStrategy:
    e = exprs()
    return st.one_of(
        st.builds(ast.Def, NAMES, st.lists(patterns(), max_size=2).map(tuple), ANNOT, e),
        st.builds(ast.Def, NAMES, st.lists(patterns(), max_size=2).map(tuple), ANNOT,
                  st.builds(ast.Let, patterns(), e, st.builds(ast.Let, patterns(), e, e))),
        st.builds(ast.GlobalLet, patterns(), e),
        st.builds(ast.TopExpr, e))


SETTINGS = settings(max_examples=int(os.environ.get("ACCEL_HYPOTHESIS_EXAMPLES", "400")), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(exprs())
def test_random_expressions_round_trip(e):
    printed = print_expr(e)
    assert expr(printed) == e, printed


@SETTINGS
@given(types())
def test_random_types_round_trip(t):
    assert parse_type(Source("t", print_type(t))) == t


@SETTINGS
@given(patterns())
def test_random_patterns_round_trip(p):
    lam = expr(f"\\{print_pattern(p)} -> 0")
    assert lam.params == (p,)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(top_forms(), max_size=4).map(lambda fs: ast.Program(tuple(fs))))
def test_random_programs_round_trip(p):
    printed = print_program(p)
    assert program(printed) == p, printed


def test_long_forms_are_wrapped_and_still_parse_back():
    from accel_kernel.lang.printer import print_form_wrapped
    text = ("def triples (n: i64) : [](i64, i64, i64) = map (\\((x, y), z) -> (x, y, z)) "
            "(filter (\\((x, y), z) -> x * x + y * y == z * z) (expand (\\(x, y) -> "
            "max 0 (x + y - y)) (\\(x, y) i -> ((x, y), y + i)) (expand (\\x -> max 0 (n - x)) "
            "(\\x i -> (x, x + i)) (map (\\i -> 1 + i) (iota (max 0 (n - 1)))))))\n"
            "def escape (cr: f64) : i64 =\n"
            "  let r = loop (x, i) = (0.0, 0) while i < 50 && x * x <= 4.0 do "
            "(x * x + cr, i + 1) + (0.0, 0) + (0.0, 0) + (0.0, 0)\n"
            "  r.1\n")
    forms = parse_program(Source("t", text)).forms
    for form in forms:
        wrapped = print_form_wrapped(form, width=60)
        assert max(len(line) for line in wrapped.splitlines()) <= 60
        assert parse_program(Source("w", wrapped)).forms == (form,)
    assert print_form_wrapped(forms[0], width=1000) == print_form(forms[0])
