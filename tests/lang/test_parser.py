"""The parser: every form of LANGUAGE.md §1–§7 and docs/language.md, checked as compact
S-expressions of the AST (`sx`), plus layout (offside rule), spans and ids."""
import itertools

import pytest

from accel_kernel.lang import ast
from accel_kernel.lang.errors import AccelSyntaxError
from accel_kernel.lang.parser import KEYWORDS, parse_expr, parse_program, parse_type
from accel_kernel.lang.printer import print_type
from accel_kernel.lang.source import Source


def sx(node) -> str:
    """A compact S-expression: `(+ 1 (* 2 3))`, `(app f x)`, `(idx xs i)`."""
    if node is None:
        return "_"
    if isinstance(node, tuple):
        return " ".join(sx(n) for n in node)
    if isinstance(node, ast.Lit):
        return {True: "true", False: "false"}.get(node.value, None) \
            if node.type == "bool" else (repr(node.value) + ("" if node.type in ("i64", "f64")
                                                             else node.type))
    if isinstance(node, ast.Var):
        return node.name
    if isinstance(node, ast.BinOp):
        return f"({node.op} {sx(node.left)} {sx(node.right)})"
    if isinstance(node, ast.UnOp):
        return f"(neg {sx(node.operand)})" if node.op == "-" else f"(not {sx(node.operand)})"
    if isinstance(node, ast.Apply):
        return f"(app {sx(node.fn)} {sx(node.args)})"
    if isinstance(node, ast.Index):
        return f"(idx {sx(node.expr)} {sx(node.index)})"
    if isinstance(node, ast.Slice):
        return f"(slice {sx(node.expr)} {sx(node.lo)} {sx(node.hi)})"
    if isinstance(node, ast.Project):
        return f"(proj {sx(node.expr)} {node.index})"
    if isinstance(node, ast.ArrayLit):
        return f"[{sx(node.elems)}]"
    if isinstance(node, ast.TupleLit):
        return f"(tuple {sx(node.elems)})"
    if isinstance(node, ast.Range):
        kind = "range=" if node.inclusive else "range<"
        return f"({kind} {sx(node.start)} {sx(node.end)} {sx(node.step)})"
    if isinstance(node, ast.OpFunc):
        return f"(op {node.op})"
    if isinstance(node, ast.LeftSection):
        return f"(lsec {sx(node.left)} {node.op})"
    if isinstance(node, ast.RightSection):
        return f"(rsec {node.op} {sx(node.right)})"
    if isinstance(node, ast.Lambda):
        return f"(fn ({sx(node.params)}) {sx(node.body)})"
    if isinstance(node, ast.Let):
        return f"(let {sx(node.pattern)} {sx(node.value)} {sx(node.body)})"
    if isinstance(node, ast.If):
        return f"(if {sx(node.cond)} {sx(node.then)} {sx(node.else_)})"
    if isinstance(node, ast.Loop):
        return f"(loop {sx(node.pattern)} {sx(node.init)} {sx(node.form)} {sx(node.body)})"
    if isinstance(node, ast.ForRange):
        return f"(for {node.var} {sx(node.bound)})"
    if isinstance(node, ast.ForIn):
        return f"(in {sx(node.pattern)} {sx(node.array)})"
    if isinstance(node, ast.While):
        return f"(while {sx(node.cond)})"
    if isinstance(node, ast.Update):
        return f"(with {sx(node.array)} ({sx(node.indices)}) {sx(node.value)})"
    if isinstance(node, ast.Ascribe):
        return f"(: {sx(node.expr)} {print_type(node.type)})"
    if isinstance(node, ast.Comprehension):
        branches = " | ".join(", ".join(sx(q) for q in b) for b in node.branches)
        return f"[{sx(node.body)} | {branches}]"
    if isinstance(node, ast.Generator):
        return f"{sx(node.pattern)} <- {sx(node.source)}"
    if isinstance(node, ast.Guard):
        return f"?{sx(node.cond)}"
    if isinstance(node, ast.LetQual):
        return f"let {sx(node.pattern)} = {sx(node.value)}"
    if isinstance(node, (ast.PVar, ast.PWild, ast.PTuple)):
        if isinstance(node, ast.PVar):
            text = node.name
        elif isinstance(node, ast.PWild):
            text = "_"
        else:
            text = "<" + " ".join(sx(p) for p in node.elems) + ">"
        return text if node.annot is None else f"{text}:{print_type(node.annot)}"
    if isinstance(node, ast.Def):
        return f"(def {node.name} ({sx(node.params)}) {print_type(node.result) if node.result else '_'} {sx(node.body)})"
    if isinstance(node, ast.GlobalLet):
        return f"(global {sx(node.pattern)} {sx(node.value)})"
    if isinstance(node, ast.TopExpr):
        return f"(top {sx(node.expr)})"
    raise AssertionError(f"no sx for {node!r}")


def e(text: str) -> str:
    return sx(parse_expr(Source("t", text)))


def forms(text: str) -> list[str]:
    return [sx(f) for f in parse_program(Source("t", text)).forms]


# ---------------------------------------------------------------- literals

@pytest.mark.parametrize("text,expected", [
    ("1", "1"), ("-2", "-2"), ("3i32", "3i32"), ("-3i32", "-3i32"), ("1.5", "1.5"),
    ("2.0f32", "2.0f32"), ("3f64", "3.0"), ("1e-3", "0.001"), ("2.5e+10f32", "25000000000.0f32"),
    ("true", "true"), ("false", "false"), ("0x1F", "31"), ("1_000", "1000"),
    ("-9223372036854775808", "-9223372036854775808"), ("-1.5", "-1.5"),
    ("- 1", "-1"), ("-(1)", "(neg 1)"), ("-x", "(neg x)"), ("!x", "(not x)"),
])
def test_literals(text, expected):
    assert e(text) == expected


def test_literal_types():
    lit = parse_expr(Source("t", "3f64"))
    assert lit == ast.Lit(3.0, "f64") and isinstance(lit.value, float)
    assert parse_expr(Source("t", "3i32")) == ast.Lit(3, "i32")
    assert parse_expr(Source("t", "true")) == ast.Lit(True, "bool")


# ---------------------------------------------------------------- operators

@pytest.mark.parametrize("text,expected", [
    ("1 + 2 * 3", "(+ 1 (* 2 3))"),
    ("1 * 2 + 3", "(+ (* 1 2) 3)"),
    ("10 - 4 - 3", "(- (- 10 4) 3)"),
    ("2 ** 3 ** 2", "(** 2 (** 3 2))"),
    ("-2 ** 2", "(** -2 2)"),
    ("-x ** 2", "(** (neg x) 2)"),
    ("-f x", "(neg (app f x))"),
    ("!f x && y", "(&& (not (app f x)) y)"),
    ("f x y + 1", "(+ (app f x y) 1)"),
    ("x -1", "(- x 1)"),
    ("f -1", "(- f 1)"),
    ("f (-1)", "(app f -1)"),
    ("a || b && c", "(|| a (&& b c))"),
    ("a && b == c", "(&& a (== b c))"),
    ("5 & 3 == 1", "(== (& 5 3) 1)"),
    ("1 << 2 | 1", "(| (<< 1 2) 1)"),
    ("1 << 2 + 1", "(<< 1 (+ 2 1))"),
    ("a | b ^ c & d", "(& (^ (| a b) c) d)"),
    ("xs ++ ys ++ zs", "(++ (++ xs ys) zs)"),
    ("a + b ++ c", "(++ (+ a b) c)"),
    ("7 % 2 * 3", "(* (% 7 2) 3)"),
    ("a < b", "(< a b)"), ("a <= b", "(<= a b)"), ("a > b", "(> a b)"), ("a >= b", "(>= a b)"),
    ("a != b", "(!= a b)"),
    ("1 + if c then 2 else 3", "(+ 1 (if c 2 3))"),
    ("if c then 2 else 3 + 1", "(if c 2 (+ 3 1))"),
    ("1 + \\x -> x", "(+ 1 (fn (x) x))"),
    ("1 + let a = 2 in a", "(+ 1 (let a 2 a))"),
    ("2 * loop a = 1 for i < 3 do a", "(* 2 (loop a 1 (for i 3) a))"),
    ("-if c then 1 else 2", "(neg (if c 1 2))"),
])
def test_precedence(text, expected):
    assert e(text) == expected


# ---------------------------------------------------------------- application and postfix

@pytest.mark.parametrize("text,expected", [
    ("f x y", "(app f x y)"),
    ("f (g x) y", "(app f (app g x) y)"),
    ("xs[i]", "(idx xs i)"),
    ("f [i]", "(app f [i])"),
    ("f xs[i]", "(app f (idx xs i))"),
    ("xss[i][j]", "(idx (idx xss i) j)"),
    ("xs[i:j]", "(slice xs i j)"), ("xs[i:]", "(slice xs i _)"), ("xs[:j]", "(slice xs _ j)"),
    ("xs[:]", "(slice xs _ _)"),
    ("t.0", "(proj t 0)"), ("t.1.0", "(proj (proj t 1) 0)"),
    ("(a, b).1", "(proj (tuple a b) 1)"), ("xs[0].1", "(proj (idx xs 0) 1)"),
    ("f t.1", "(app f (proj t 1))"),
    ("(f x)[0]", "(idx (app f x) 0)"),
    ("f (x)", "(app f x)"),
    ("map (+1) xs", "(app map (rsec + 1) xs)"),
    ("while p f x", "(app while p f x)"),
    ("xs[a | b]", "(idx xs (| a b))"),
])
def test_application_and_postfix(text, expected):
    assert e(text) == expected


# ---------------------------------------------------------------- brackets and parentheses

@pytest.mark.parametrize("text,expected", [
    ("[1, 2, 3]", "[1 2 3]"), ("[]", "[]"), ("[[1, 2], [3]]", "[[1 2] [3]]"),
    ("[-1, -2]", "[-1 -2]"),
    ("[a..<b]", "(range< a b _)"), ("[a..b]", "(range= a b _)"),
    ("[a..<b by s]", "(range< a b s)"), ("[10..0 by -1]", "(range= 10 0 -1)"),
    ("[1..n + 1]", "(range= 1 (+ n 1) _)"),
    ("[x | x <- xs]", "[x | x <- xs]"),
    ("[x | x <- xs, x > 0]", "[x | x <- xs, ?(> x 0)]"),
    ("[y | x <- xs, let y = x * 2, y > 3]", "[y | x <- xs, let y = (* x 2), ?(> y 3)]"),
    ("[(x, y) | (x, y) <- zip xs ys]", "[(tuple x y) | <x y> <- (app zip xs ys)]"),
    ("[x + y | x <- xs | y <- ys]", "[(+ x y) | x <- xs | y <- ys]"),
    ("[x | (x: i64) <- xs]", "[x | x:i64 <- xs]"),
    ("[x | x <- xs, (x | 1) > 2]", "[x | x <- xs, ?(> (| x 1) 2)]"),
    ("[x | x <- xs, (x, 1) == p]", "[x | x <- xs, ?(== (tuple x 1) p)]"),
    ("[x | x <- xs, let a = 1 in a < x]", "[x | x <- xs, ?(let a 1 (< a x))]"),
    ("[(a | b), c]", "[(| a b) c]"),
    ("(a, b, c)", "(tuple a b c)"), ("(x)", "x"), ("((x))", "x"),
    ("([] : []i64)", "(: [] []i64)"), ("(1 : i64)", "(: 1 i64)"),
    ("(+)", "(op +)"), ("(-)", "(op -)"), ("(*)", "(op *)"), ("(==)", "(op ==)"),
    ("(&&)", "(op &&)"), ("(++)", "(op ++)"), ("(|)", "(op |)"), ("(**)", "(op **)"),
    ("(+1)", "(rsec + 1)"), ("(2*)", "(lsec 2 *)"), ("(> 0)", "(rsec > 0)"),
    ("(< x)", "(rsec < x)"), ("(10-)", "(lsec 10 -)"), ("(/2)", "(rsec / 2)"),
    ("(-1)", "-1"), ("(-x)", "(neg x)"), ("(min)", "min"), ("(a + b *)", "(lsec (+ a b) *)"),
    ("(+ x * 2)", "(rsec + (* x 2))"),
])
def test_brackets(text, expected):
    assert e(text) == expected


# ---------------------------------------------------------------- keyword-led forms

@pytest.mark.parametrize("text,expected", [
    ("\\x y -> x + y", "(fn (x y) (+ x y))"),
    ("\\(a, b) -> a", "(fn (<a b>) a)"),
    ("\\(x: i64) -> x", "(fn (x:i64) x)"),
    ("\\_ -> 0", "(fn (_) 0)"),
    ("\\((a, b): (i64, f64)) (_: bool) -> a", "(fn (<a b>:(i64, f64) _:bool) a)"),
    ("let x = 1 in x", "(let x 1 x)"),
    ("let (a, b) = p in a", "(let <a b> p a)"),
    ("let x: i64 = 1 in x", "(let x:i64 1 x)"),
    ("let a = let b = 1 in b in a", "(let a (let b 1 b) a)"),
    ("if a then b else c", "(if a b c)"),
    ("if a then if b then c else d else e", "(if a (if b c d) e)"),
    ("loop acc = 1 for i < n do acc * (i + 1)", "(loop acc 1 (for i n) (* acc (+ i 1)))"),
    ("loop acc = 0 for x in xs do acc + x", "(loop acc 0 (in x xs) (+ acc x))"),
    ("loop (a, b) = (x, y) while a < b do (a + 1, b)",
     "(loop <a b> (tuple x y) (while (< a b)) (tuple (+ a 1) b))"),
    ("loop x = while p f 1 while x < 3 do x", "(loop x (app while p f 1) (while (< x 3)) x)"),
    ("loop (x: i64) = 0 for (a, b) in ps do x + a", "(loop x:i64 0 (in <a b> ps) (+ x a))"),
    ("xs with [i] = v", "(with xs (i) v)"),
    ("xss with [i][j] = v + 1", "(with xss (i j) (+ v 1))"),
    ("a ++ b with [0] = 1", "(with (++ a b) (0) 1)"),
    ("loop a = xs for i < 4 do a with [i] = i * i", "(loop a xs (for i 4) (with a (i) (* i i)))"),
    ("map (\\x -> x) xs", "(app map (fn (x) x) xs)"),
])
def test_keyword_forms(text, expected):
    assert e(text) == expected


# ---------------------------------------------------------------- types

@pytest.mark.parametrize("text,expected", [
    ("i64", ast.TScalar("i64")), ("bool", ast.TScalar("bool")),
    ("[]f32", ast.TArray(ast.TScalar("f32"))),
    ("[n]i64", ast.TArray(ast.TScalar("i64"), "n")),
    ("[3]i64", ast.TArray(ast.TScalar("i64"), 3)),
    ("[n][m]f64", ast.TArray(ast.TArray(ast.TScalar("f64"), "m"), "n")),
    ("(i64, f64)", ast.TTuple((ast.TScalar("i64"), ast.TScalar("f64")))),
    ("(i64)", ast.TScalar("i64")),
    ("i64 -> i64 -> bool", ast.TFunc(ast.TScalar("i64"),
                                     ast.TFunc(ast.TScalar("i64"), ast.TScalar("bool")))),
    ("(i64 -> i64) -> bool", ast.TFunc(ast.TFunc(ast.TScalar("i64"), ast.TScalar("i64")),
                                       ast.TScalar("bool"))),
    ("seq []i64", ast.TSeq(ast.TArray(ast.TScalar("i64")))),
    ("seq i64 -> i64", ast.TFunc(ast.TSeq(ast.TScalar("i64")), ast.TScalar("i64"))),
])
def test_types(text, expected):
    assert parse_type(Source("t", text)) == expected


# ---------------------------------------------------------------- top level and layout

def test_top_level_forms():
    assert forms("def add1 (x: i64) : i64 = x + 1\ndef sq x = x * x\nlet xs = iota 10\n"
                 "map add1 xs") == [
        "(def add1 (x:i64) i64 (+ x 1))", "(def sq (x) _ (* x x))",
        "(global xs (app iota 10))", "(top (app map add1 xs))"]
    assert forms("def c = 3") == ["(def c () _ 3)"]
    assert forms("def swap (a, b) = (b, a)") == ["(def swap (<a b>) _ (tuple b a))"]
    assert forms("def f ((a, b): (i64, f64)) _ = a") == [
        "(def f (<a b>:(i64, f64) _) _ a)"]
    assert forms("let (lo, hi) = p\nlet x: i64 = 5") == [
        "(global <lo hi> p)", "(global x:i64 5)"]
    assert forms("let x = 1 in x + 1") == ["(top (let x 1 (+ x 1)))"]
    assert forms("let x = 1\nin x + 1") == ["(top (let x 1 (+ x 1)))"]
    assert forms("") == [] and forms("-- only a comment\n\n") == []


def test_offside_rule_ends_forms():
    assert forms("def f x =\n  x +\n  1\nf 2\n") == ["(def f (x) _ (+ x 1))", "(top (app f 2))"]
    assert forms("1 +\n 2\n3") == ["(top (+ 1 2))", "(top 3)"]
    assert forms("f\n  x\n  y") == ["(top (app f x y))"]
    assert forms("f\nx") == ["(top f)", "(top x)"]


def test_let_chain_without_in():
    text = ("def f x =\n"
            "  let a = x + 1\n"
            "  let b = a * 2\n"
            "  a + b\n"
            "f 1\n")
    assert forms(text) == ["(def f (x) _ (let a (+ x 1) (let b (* a 2) (+ a b))))",
                           "(top (app f 1))"]


def test_let_chain_with_final_in_and_continuation_lines():
    text = ("def g (x: i64) : i64 =\n"
            "  let (q, r) = (x / 10,\n"
            "x % 10)\n"                       # free layout inside brackets
            "  let s = q +\n"
            "     r\n"                        # deeper than `let`: continues the value
            "  in s * s\n")
    assert forms(text) == [
        "(def g (x:i64) i64 (let <q r> (tuple (/ x 10) (% x 10)) (let s (+ q r) (* s s))))"]


def test_let_value_with_nested_layout():
    text = ("def collatz (n: i64) : i64 =\n"
            "  let r = loop (x, s) = (n, 0) while x != 1 do\n"
            "            if x % 2 == 0 then (x / 2, s + 1) else (3 * x + 1, s + 1)\n"
            "  r.1\n")
    [form] = forms(text)
    assert form.startswith("(def collatz (n:i64) i64 (let r (loop <x s>") and \
        form.endswith("(proj r 1)))")


def test_nested_let_in_brackets_keeps_its_column():
    text = "def f x = (let a = 1\n           let b = 2\n           a + b)\n"
    assert forms(text) == ["(def f (x) _ (let a 1 (let b 2 (+ a b))))"]
    assert forms("map (\\x -> let y = x\n            in y) xs") == [
        "(top (app map (fn (x) (let y x y)) xs))"]


def test_indented_if_branches():
    text = ("def f zs j =\n  if zs[j] > 0\n  then 1\n  else 2\n")
    assert forms(text) == ["(def f (zs j) _ (if (> (idx zs j) 0) 1 2))"]


def test_while_is_a_keyword_and_a_function():
    assert e("while (\\x -> x < 10) (\\x -> x * 2) 1") == \
        "(app while (fn (x) (< x 10)) (fn (x) (* x 2)) 1)"
    assert e("(while)") == "while"
    assert "while" in KEYWORDS


# ---------------------------------------------------------------- spans and ids

def test_every_node_has_a_span_and_a_unique_id():
    source = Source("t", "def f (x: i64) : []i64 =\n  let (a, _) = (x, [1..<x by 2])\n"
                         "  [y * a | y <- xs, y > 0, let z = y]\n"
                         "let g = \\p -> loop s = p for i < 3 do s with [i] = (+1) s[i]\n"
                         "(f 1).0")
    program = parse_program(source, itertools.count(100))
    nodes = list(ast.walk(program))
    assert all(n.span is not None and n.span.source is source for n in nodes)
    ids = [n.id for n in nodes]
    assert len(set(ids)) == len(ids) and min(ids) >= 100
    for node in nodes:
        for child in ast.children(node):
            assert node.span.start <= child.span.start <= child.span.end <= node.span.end, \
                (node, child)


def test_spans_cover_node_text():
    text = "1 + f xs[2] * t.1"
    source = Source("t", text)
    expr = parse_expr(source)
    assert text[expr.span.start:expr.span.end] == text
    mul = expr.right
    assert text[mul.span.start:mul.span.end] == "f xs[2] * t.1"
    assert text[mul.left.span.start:mul.left.span.end] == "f xs[2]"
    assert text[mul.left.args[0].span.start:mul.left.args[0].span.end] == "xs[2]"
    assert text[mul.right.span.start:mul.right.span.end] == "t.1"
    neg = parse_expr(Source("t", "f (-12)")).args[0]
    assert (neg.span.start, neg.span.end) == (3, 6)


def test_ids_default_to_a_fresh_counter():
    a = parse_expr(Source("t", "1 + 2"))
    b = parse_expr(Source("t", "1 + 2"))
    assert a.id == b.id and a == b


def test_ids_from_a_shared_counter_are_unique_across_cells():
    counter = itertools.count(1)
    first = parse_program(Source("c1", "let x = 1"), counter)
    second = parse_program(Source("c2", "let x = 1"), counter)
    first_ids = {n.id for n in ast.walk(first)}
    second_ids = {n.id for n in ast.walk(second)}
    assert not first_ids & second_ids


def test_parse_expr_and_type_reject_trailing_text():
    with pytest.raises(AccelSyntaxError):
        parse_expr(Source("t", "1 + 2 )"))
    with pytest.raises(AccelSyntaxError):
        parse_type(Source("t", "i64 i64"))
