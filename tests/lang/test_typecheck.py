"""Type inference and checking (stage `typed`): programs are written as accel source, parsed,
and checked; types are compared in accel syntax (`types.show`)."""
import itertools
from importlib import resources
from pathlib import Path

import pytest

from accel_kernel.lang import ast
from accel_kernel.lang.builtins import BUILTINS
from accel_kernel.lang.errors import AccelNameError, AccelTypeError
from accel_kernel.lang.source import Source
from accel_kernel.lang.typecheck import CheckResult, GlobalEnv, check_program
from accel_kernel.lang.types import F64, I64, Scalar, TypeVar, show, show_scheme

parser = pytest.importorskip("accel_kernel.lang.parser")

_ids = itertools.count(1)
EMPTY = GlobalEnv({}, {})


def parse(text: str) -> ast.Program:
    return parser.parse_program(Source("cell", text), _ids)


def check(text: str, env: GlobalEnv = EMPTY) -> CheckResult:
    return check_program(parse(text), env)


def type_of(text: str, env: GlobalEnv = EMPTY) -> str:
    """The type of the last top-level expression."""
    return show(check(text, env).expr_types[-1])


def scheme_of(text: str, name: str, env: GlobalEnv = EMPTY) -> str:
    return show_scheme(check(text, env).schemes[name])


def fails(text: str, kind=AccelTypeError, env: GlobalEnv = EMPTY):
    with pytest.raises(kind) as info:
        check(text, env)
    return info.value


def at(err) -> tuple[int, int]:
    return err.span.line, err.span.col


def env_after(*cells: str, base: GlobalEnv = EMPTY) -> GlobalEnv:
    """The globals after checking cells in turn (what a session passes on)."""
    schemes, deps = dict(base.schemes), dict(base.deps)
    for text in cells:
        result = check(text, GlobalEnv(schemes, deps))
        schemes.update(result.schemes)
        deps.update(result.deps)
    return GlobalEnv(schemes, deps)


@pytest.fixture(scope="module")
def prelude() -> GlobalEnv:
    text = resources.files("accel_kernel").joinpath("prelude.accel").read_text()
    return env_after(text)


# ---------------------------------------------------------------- every form

@pytest.mark.parametrize("text,expected", [
    ("1", "i64"), ("3i32", "i32"), ("-2", "i64"), ("1.5", "f64"), ("2.0f32", "f32"),
    ("true", "bool"),
    ("[1, 2, 3]", "[]i64"), ("[[1, 2], [3]]", "[][]i64"), ("[[], [1.5]]", "[][]f64"),
    ("([] : []i64)", "[]i64"), ("[(1, true)]", "[](i64, bool)"),
    ("[0..<5]", "[]i64"), ("[1..10 by 2]", "[]i64"), ("[10..0 by -1]", "[]i64"),
    ("(1, 2.0, true)", "(i64, f64, bool)"), ("(1, 2.0).1", "f64"), ("((1, 2), 3).0.1", "i64"),
    ("[1, 2][0]", "i64"), ("[[1], [2]][1]", "[]i64"), ("[[1], [2]][1][0]", "i64"),
    ("[1, 2, 3][1:]", "[]i64"), ("[1, 2, 3][:2]", "[]i64"), ("[1, 2, 3][0:1]", "[]i64"),
    ("1 + 2 * 3", "i64"), ("1.5 / 2.0", "f64"), ("7 % 2", "i64"), ("2 ** 10", "i64"),
    ("1 < 2", "bool"), ("1.0 >= 2.0", "bool"), ("true == false", "bool"), ("1 != 2", "bool"),
    ("true && false || true", "bool"), ("3 & 5", "i64"), ("true ^ false", "bool"),
    ("(1i32 | 2i32)", "i32"), ("1 << 3", "i64"), ("[1] ++ [2, 3]", "[]i64"),
    ("-1.5", "f64"), ("-(1 + 2)", "i64"), ("!true", "bool"), ("!3i32", "i32"),
    ("(\\x -> x + 1) 2", "i64"), ("(\\x y -> x * y) 2.0 3.0", "f64"),
    ("(\\(a, b) -> a + b) (1, 2)", "i64"), ("(\\(x: f32) -> x) 1.0f32", "f32"),
    ("let x = 1 in x + 1", "i64"), ("let (a, b) = (1, 2.0) in b", "f64"),
    ("let f = \\x -> x * 2 in f 21", "i64"),
    ("if true then 1 else 2", "i64"), ("cond (1 < 2) [1] []", "[]i64"),
    ("loop acc = 0 for i < 10 do acc + i", "i64"),
    ("loop acc = 0.0 for x in [1.0, 2.0] do acc + x", "f64"),
    ("loop (a, b) = (0, 1) while a < 100 do (b, a + b)", "(i64, i64)"),
    ("loop acc = [] for i < 3 do acc ++ [i]", "[]i64"),
    ("[1, 2] with [0] = 5", "[]i64"), ("[[1], [2, 3]] with [1][0] = 7", "[][]i64"),
    ("(1 : i64)", "i64"), ("([] : [][]f32)", "[][]f32"), ("([1, 2] : [2]i64)", "[]i64"),
    ("[x * 2 | x <- [1, 2, 3]]", "[]i64"),
    ("[(x, y) | x <- [1..<4], y <- [x..<4], x + y > 2]", "[](i64, i64)"),
    ("[y | x <- [1, 2], let y = f64 x, y > 0.5]", "[]f64"),
    ("[(a, b) | (a, b) <- zip [1] [true]]", "[](i64, bool)"),
    ("[x + y | x <- [1, 2] | y <- [10, 20]]", "[]i64"),
    ("[[x | x <- iota n] | n <- [1, 2]]", "[][]i64"),
    ("map (+1) [1, 2]", "[]i64"), ("map (2.0*) [1.0]", "[]f64"), ("map (10-) [1]", "[]i64"),
    ("reduce (+) 0 [1, 2]", "i64"), ("reduce (min) 0.0 [1.0]", "f64"),
    ("map2 (max) [1] [2]", "[]i64"),
])
def test_expression_types(text, expected):
    assert type_of(text) == expected


def test_defs_and_annotations():
    result = check("def inc (x: i64) : i64 = x + 1\n"
                   "def twice f x = f (f x)\n"
                   "twice inc 1")
    assert show_scheme(result.schemes["inc"]) == "i64 -> i64"
    assert show_scheme(result.schemes["twice"]) == "(a -> a) -> a -> a"
    assert [show(t) for t in result.expr_types] == ["i64"]


def test_schemes_in_source_order_and_global_lets():
    result = check("let n = 10\n"
                   "def f x = x\n"
                   "let (lo, hi) = partition (\\x -> x < n) (iota n)\n"
                   "let n = 2.5\n")
    assert list(result.schemes) == ["n", "f", "lo", "hi"]
    assert show_scheme(result.schemes["lo"]) == "[]i64"
    assert show_scheme(result.schemes["n"]) == "f64"       # re-defining replaces
    assert result.deps["lo"] == frozenset({"partition", "n", "iota"})


def test_later_forms_see_earlier_ones_and_expr_types_are_in_order():
    result = check("let xs = [1, 2]\nxs\ndef f x = x + 1.0\nf 2.0\n(xs, 1)")
    assert [show(t) for t in result.expr_types] == ["[]i64", "f64", "([]i64, i64)"]


def test_every_expression_and_pattern_node_has_a_type():
    program = parse("def f (a, b) (c: [n]i64) =\n"
                    "  let d = [x + n | x <- c, x > a] in (d, loop s = b for i < 3 do s)\n"
                    "let (p, q) = f (1, 2.0) [3]\n"
                    "map (\\(x, _) -> x) (zip p [true])")
    result = check_program(program, EMPTY)
    for form in program.forms:
        for node in ast.walk(form):
            if isinstance(node, (ast.PVar, ast.PWild, ast.PTuple)) or type(node) in (
                    ast.Lit, ast.Var, ast.ArrayLit, ast.Range, ast.TupleLit, ast.Project,
                    ast.Index, ast.Slice, ast.BinOp, ast.UnOp, ast.Apply, ast.OpFunc,
                    ast.LeftSection, ast.RightSection, ast.Lambda, ast.Let, ast.If, ast.Loop,
                    ast.Update, ast.Ascribe, ast.Comprehension):
                assert node.id in result.types, node


# ---------------------------------------------------------------- generalisation

def test_identity_is_generic():
    program = parse("def id x = x\n(id 1, id 1.5)")
    result = check_program(program, EMPTY)
    assert show_scheme(result.schemes["id"]) == "a -> a"
    assert show(result.expr_types[0]) == "(i64, f64)"
    defn = program.forms[0]
    assert result.types[defn.params[0].id] == TypeVar("a")   # named after the scheme
    uses = [n for n in ast.walk(program.forms[1]) if isinstance(n, ast.Var) and n.name == "id"]
    assert [result.instantiations[u.id] for u in uses] == [{"a": I64}, {"a": F64}]


@pytest.mark.parametrize("text,name,expected", [
    ("def sq x = x * x", "sq", "num a => a -> a"),
    ("def swap (a, b) = (b, a)", "swap", "(a, b) -> (b, a)"),
    ("def fst (p: (i64, f64)) = p.0", "fst", "(i64, f64) -> i64"),
    ("def compose f g x = f (g x)", "compose", "(a -> b) -> (c -> a) -> c -> b"),
    ("def z = zero", "z", "num a => a"),
    ("def plus = (+)", "plus", "num a => a -> a -> a"),
    ("def size = 4", "size", "i64"),
    ("def lt x y = x < y", "lt", "scalar a => a -> a -> bool"),
    ("def both x y = x & y", "both", "bits a => a -> a -> a"),
    ("def half x = x / 2.0", "half", "f64 -> f64"),
    ("def norm x = sqrt (x * x)", "norm", "float a => a -> a"),
    ("def shift x = x << x", "shift", "int a => a -> a"),
    ("def mask x = x & x + one", "mask", "int a => a -> a"),
    ("def pairs xs = map (\\x -> (x, x)) xs", "pairs", "[]a -> [](a, a)"),
    ("def len (xs: [n]f64) : i64 = n", "len", "[]f64 -> i64"),
    ("def dims (m: [r][c]i64) = (r, c)", "dims", "[][]i64 -> (i64, i64)"),
    ("def take2 (n: i64) (xs: [n]i64) = n", "take2", "i64 -> []i64 -> i64"),
    ("def rows xss = map length xss", "rows", "[][]a -> []i64"),
])
def test_schemes(text, name, expected):
    assert scheme_of(text, name) == expected


def test_generic_defs_at_several_types():
    assert type_of("def twice f x = f (f x)\ndef sq x = x * x\ndef double x = x + x\n"
                   "(twice sq 3, twice sq 1.5, twice (\\x -> x ++ x) [1], double 3i32)"
                   ) == "(i64, f64, []i64, i32)"


def test_instantiations_of_a_sum_like_def():
    program = parse("def total xs = reduce (+) zero xs\ntotal [1.5f32]")
    result = check_program(program, EMPTY)
    assert show_scheme(result.schemes["total"]) == "num a => []a -> a"
    body = list(ast.walk(program.forms[0].body))
    reduce_var = next(n for n in body if isinstance(n, ast.Var) and n.name == "reduce")
    zero_var = next(n for n in body if isinstance(n, ast.Var) and n.name == "zero")
    plus = next(n for n in body if isinstance(n, ast.OpFunc))
    # inside the generic def, in terms of its own variable
    assert result.instantiations[reduce_var.id] == {"a": TypeVar("a")}
    assert result.instantiations[zero_var.id] == {"a": TypeVar("a")}
    assert result.instantiations[plus.id] == {"a": TypeVar("a")}
    assert result.types[zero_var.id] == TypeVar("a")
    use = next(n for n in ast.walk(program.forms[1]) if isinstance(n, ast.Var))
    assert result.instantiations[use.id] == {"a": Scalar("f32")}
    assert result.deps["total"] == frozenset({"reduce", "zero"})


def test_operator_nodes_record_instantiations():
    program = parse("(1.0 + 2.0, -(3i32), 1 < 2)")
    result = check_program(program, EMPTY)
    ops = [n for n in ast.walk(program) if isinstance(n, (ast.BinOp, ast.UnOp))]
    assert [result.instantiations[n.id] for n in ops] == [{"a": F64}, {"a": Scalar("i32")},
                                                          {"a": I64}]


def test_prelude_functions(prelude):
    assert show_scheme(prelude.schemes["sum"]) == "num a => []a -> a"
    assert show_scheme(prelude.schemes["count"]) == "(a -> bool) -> []a -> i64"
    assert type_of("(sum [1.5], maximum [1i32], count (\\x -> x > 1) [1, 2])",
                   prelude) == "(f64, i32, i64)"


def test_leftover_variables_default_to_i64():
    program = parse("length []")
    result = check_program(program, EMPTY)
    assert show(result.expr_types[0]) == "i64"
    empty = next(n for n in ast.walk(program) if isinstance(n, ast.ArrayLit))
    assert show(result.types[empty.id]) == "[]i64"


def test_lambda_arguments_are_checked_after_the_others():
    assert type_of("map (\\p -> p.1) (zip [1] [2.0])") == "[]f64"
    assert type_of("reduce (\\a b -> (a.0 + b.0, a.1)) (0, true) [(1, false)]") == "(i64, bool)"


def test_sort_orders_scalars_and_tuples_of_scalars():
    assert type_of("sort [(2, 1.0), (1, 2.0)]") == "[](i64, f64)"
    assert type_of("sort_by (\\p -> (p.1, p.0)) [(1, true)]") == "[](i64, bool)"
    assert scheme_of("def srt xs = sort xs", "srt") == "scalar a => []a -> []a"
    assert scheme_of("def by_len xss = sort_by length xss", "by_len") == "[][]a -> [][]a"
    err = fails("sort [[1]]")
    assert err.message == "`sort` orders scalars and tuples of scalars, but its elements have type []i64"
    assert at(err) == (1, 1)
    assert fails("sort_by (\\x -> [x]) [1]").message.endswith("its keys have type []i64")
    fails("sort [((1, 2), 3)]")


def test_elements_of_sequences():
    assert type_of("elements (produce 3 (\\i -> iota i))") == "[]i64"
    assert type_of("elements (produce 3 (\\i -> f64 i))") == "[]f64"
    assert type_of("tabulate (mapSeq (\\r -> map (*2) r) (stream [[1], [2, 3]]))") == "[][]i64"
    assert type_of("mapSeq (\\x -> x + 1) (produce 4 (\\i -> i * 10))") == "seq i64"


# ---------------------------------------------------------------- every builtin

BUILTIN_USES = [
    ("map", "map (\\x -> x > 0) [1]", "[]bool"),
    ("map2", "map2 (\\x y -> (x, y)) [1] [true]", "[](i64, bool)"),
    ("map3", "map3 (\\x y z -> x + y + z) [1.0] [2.0] [3.0]", "[]f64"),
    ("zip", "zip [1] [2.0]", "[](i64, f64)"),
    ("zip3", "zip3 [1] [2.0] [true]", "[](i64, f64, bool)"),
    ("unzip", "unzip [(1, 2.0)]", "([]i64, []f64)"),
    ("unzip3", "unzip3 [(1, 2.0, true)]", "([]i64, []f64, []bool)"),
    ("reduce", "reduce (*) 1 [2, 3]", "i64"),
    ("scan", "scan (+) 0.0 [1.0]", "[]f64"),
    ("filter", "filter (\\x -> x > 1) [1, 2]", "[]i64"),
    ("partition", "partition (\\x -> x > 1) [1, 2]", "([]i64, []i64)"),
    ("iota", "iota 3", "[]i64"),
    ("replicate", "replicate 3 [true]", "[][]bool"),
    ("generate", "generate 3 (\\i -> f32 i)", "[]f32"),
    ("expand", "expand (\\x -> x) (\\x i -> x * i) [2, 3, 1]", "[]i64"),
    ("scatter", "scatter [0.0, 0.0] [1] [5.0]", "[]f64"),
    ("reduce_by_index", "reduce_by_index [0, 0] (+) 0 [0, 1, 0] [1, 2, 3]", "[]i64"),
    ("sort", "sort [3.0, 1.0]", "[]f64"),
    ("sort_by", "sort_by (\\p -> p.1) [(1, 2.0)]", "[](i64, f64)"),
    ("length", "length [[1]]", "i64"),
    ("flatten", "flatten [[1], [2, 3]]", "[]i64"),
    ("concat", "concat [1] [2]", "[]i64"),
    ("reverse", "reverse [true]", "[]bool"),
    ("transpose", "transpose [[1, 2], [3, 4]]", "[][]i64"),
    ("take", "take 1 [1, 2]", "[]i64"),
    ("drop", "drop 1 [[1], [2]]", "[][]i64"),
    ("head", "head [1.0]", "f64"),
    ("last", "last [[1]]", "[]i64"),
    ("interleave", "interleave [1] [2]", "[]i64"),
    ("rotate", "rotate 1 [1, 2]", "[]i64"),
    ("while", "while (\\x -> x < 100) (\\x -> x * 2) 1", "i64"),
    ("cond", "cond true 1.0 2.0", "f64"),
    ("min", "min 1 2", "i64"), ("max", "max 1.0 2.0", "f64"), ("abs", "abs (-3i32)", "i32"),
    ("sqrt", "sqrt 2.0", "f64"), ("exp", "exp 1.0f32", "f32"), ("log", "log 2.0", "f64"),
    ("sin", "sin 1.0", "f64"), ("cos", "cos 1.0", "f64"), ("tan", "tan 1.0", "f64"),
    ("atan2", "atan2 1.0 2.0", "f64"), ("floor", "floor 2.5", "f64"),
    ("ceil", "ceil 2.5f32", "f32"), ("round", "round 2.5", "f64"), ("pi", "pi", "f64"),
    ("i32", "i32 2.7", "i32"), ("i64", "i64 true", "i64"), ("f32", "f32 3", "f32"),
    ("f64", "f64 3i32", "f64"), ("i8", "i8 300", "i8"), ("i16", "i16 2.5f32", "i16"),
    ("u8", "u8 (-1)", "u8"), ("u16", "u16 7u8", "u16"), ("u32", "u32 true", "u32"),
    ("u64", "u64 1.5", "u64"),
    ("select", "select true [1] [2]", "[]i64"),
    ("zero", "zero + 1.0", "f64"), ("one", "one * 2i32", "i32"),
    ("lowest", "max lowest 1", "i64"), ("highest", "min highest 1.0f32", "f32"),
    ("produce", "produce 3 (\\i -> iota i)", "seq []i64"),
    ("stream", "stream [[1], [2]]", "seq []i64"),
    ("mapSeq", "mapSeq length (stream [[1], [2]])", "seq i64"),
    ("zipWithSeq", "zipWithSeq (\\a b -> a ++ b) (stream [[1]]) (stream [[4, 5]])",
     "seq []i64"),
    ("foldSeq", "foldSeq (+) 0 (stream [1, 2])", "i64"),
    ("elements", "elements (stream [[1], [2]])", "[]i64"),
    ("tabulate", "tabulate (stream [[1], [2]])", "[][]i64"),
]


@pytest.mark.parametrize("name,text,expected", BUILTIN_USES)
def test_builtin_use(name, text, expected):
    assert type_of(text) == expected


def test_stream_of_a_sequence_is_that_sequence():
    """A Python iterable given to accel is a `seq t`: `stream` of it (LANGUAGE.md §7)."""
    assert type_of("stream (produce 3 (\\i -> [i]))") == "seq []i64"
    assert type_of("foldSeq (+) 0 (stream (stream [1, 2]))") == "i64"


def test_every_builtin_is_used_above():
    assert {name for name, _, _ in BUILTIN_USES} == set(BUILTINS)


@pytest.mark.parametrize("text", [
    "map 1 [1]", "reduce (+) 0.0 [1]", "iota 2.0", "zip [1] 2", "filter (\\x -> x + 1) [1]",
    "length 3", "sort [[1]]", "sort_by (\\x -> [x]) [1]", "expand (\\x -> 1.0) (\\x i -> x) [1]",
    "scatter [1] [1.0] [2]", "head 1", "i64 [1]", "pi 1", "produce 2 (\\i -> i) 3",
    "foldSeq (+) 0 [1]", "elements [1]", "flatten [1]", "transpose [1]", "while (\\x -> x) (+1) 1",
])
def test_builtin_misuse_is_a_type_error(text):
    fails(text)


# ---------------------------------------------------------------- errors

def test_constraint_errors():
    err = fails("true + 1")
    assert err.message == "`+` expects numeric operands (integers or f32 or f64), got bool"
    assert at(err) == (1, 1)
    err = fails("1 + 1.0")
    assert err.message == "`+` expects operands of the same type, got i64 and f64"
    assert at(err) == (1, 5)
    err = fails("sqrt 2")
    assert "float" in err.message and "got i64" in err.message and at(err) == (1, 6)
    assert "bool or integer" in fails("1.0 & 2.0").message
    assert "integer operands" in fails("1.0 << 2.0").message
    assert fails("[1] == [1]").message.startswith("`==` expects scalar operands")
    assert fails("-true").message.startswith("`-` expects numeric operands")
    assert fails("!1.5").message.startswith("`!` expects bool or integer operands")
    assert fails("1 && true").message == "`&&` expects bool operands, got i64"
    assert fails("[1] ++ 2").message == "`++` expects arrays, got i64"
    assert fails("[1] ++ [2.0]").message == "`++` expects operands of the same type, got []i64 and []f64"


def test_application_errors():
    err = fails("map 1 [1]")
    assert err.message == "`map` expects a function as its first argument, got i64"
    assert at(err) == (1, 5)
    err = fails("def inc (x: i64) : i64 = x + 1\ninc true")
    assert err.message == "`inc` expects i64 as its first argument, got bool" and at(err) == (2, 5)
    err = fails("map (+1) [1.0]")
    assert err.message == "`map` expects []i64 as its second argument, got []f64"
    err = fails("let n = 1 in n 2")
    assert err.message.startswith("`n` is not a function") and at(err) == (1, 14)
    err = fails("def inc (x: i64) = x + 1\ninc 1 2")
    assert "too many arguments" in err.message and at(err) == (2, 7)


def test_form_errors_show_both_types_at_the_responsible_node():
    err = fails("if true then 1 else [1]")
    assert err.message == "if branches differ: i64 and []i64" and at(err) == (1, 21)
    err = fails("let n = 5\nif n then 1 else 2")
    assert err.message == "the condition of `if` must be bool, got i64" and at(err) == (2, 4)
    err = fails("[1, 2.0]")
    assert err.message == "array elements differ: i64 and f64" and at(err) == (1, 5)
    assert fails("5[0]").message == "expected an array, got i64"
    err = fails("[1, 2][1i32]")
    assert err.message == "an array index must be i64, got i32" and at(err) == (1, 8)
    assert fails("[1, 2, 3][1.0:]").message == "a slice bound must be i64, got f64"
    assert fails("[0..<3i32]").message == "a range bound must be i64, got i32"
    assert fails("[0..<3 by 1.0]").message == "a range step must be i64, got f64"
    assert fails("(1, 2).2").message == "tuple index 2 out of range for (i64, i64)"
    assert fails("let x = 1 in x.0").message == "expected a tuple, got i64"
    err = fails("loop acc = 0 for i < 3 do 1.0")
    assert err.message == "the loop body has type f64, but the loop variable has type i64"
    assert at(err) == (1, 27)
    assert "bound of `for i < ...` must be i64" in fails("loop a = 0 for i < 3i32 do a").message
    assert "condition of `while` must be bool" in fails("loop a = 0 while a do a").message
    assert fails("loop a = 0 for x in 5 do a").message == "expected an array, got i64"
    err = fails("[1, 2] with [0] = 1.0")
    assert err.message == ("the new element has type f64, but the array's elements have type "
                           "i64")
    assert fails("[[1]] with [0][0][0] = 1").message == "expected an array, got i64"
    err = fails("(1 : f64)")
    assert err.message == "this expression has type i64, but is ascribed f64" and at(err) == (1, 2)
    assert fails("[x | x <- [1], x]").message == "a comprehension guard must be bool, got i64"
    assert fails("[x | x <- 3]").message == "expected an array, got i64"
    err = fails("def f (x: i64) : f64 = x")
    assert err.message == "the body of `f` has type i64, but its result is annotated f64"
    err = fails("(\\(x: f64) -> x) 1")
    assert "as its first argument" in err.message
    err = fails("let (a, b) = 1 in a")
    assert err.message == "a pattern of 2 elements cannot match a value of type i64"
    err = fails("let (x: f64) = 1 in x")
    assert err.message == "this pattern is annotated f64, but matches a value of type i64"


def test_projection_needs_a_known_tuple_type():
    err = fails("def fst p = p.0")
    assert "add a type annotation" in err.message and at(err) == (1, 13)
    err = fails("let f = \\p -> p.1 in f (1, 2)")
    assert "add a type annotation" in err.message


def test_functions_are_not_first_class_everywhere():
    err = fails("let fs = [(+1), (*2)]\nlength fs")
    assert err.message.startswith("an array cannot contain functions") and at(err) == (1, 11)
    err = fails("length (replicate 2 (+1))")
    assert err.message.startswith("an array cannot contain functions") and at(err) == (1, 9)
    err = fails("[\\x -> x + 1 | y <- [1]]")
    assert err.message.startswith("an array cannot contain functions")
    err = fails("def inc (x: i64) : i64 = x + 1\ninc")
    assert err.message.startswith("the value of a top-level expression cannot be a function")
    assert at(err) == (2, 1)
    err = fails("let f = \\x -> x + 1")
    assert err.message.startswith("the value of a global `let` cannot be a function")
    err = fails("let f = if true then (+1) else (*2) in f 1")
    assert err.message.startswith("the branches of an `if` cannot be functions")
    err = fails("let f = loop g = (+1) for i < 2 do g in f 1")
    assert err.message.startswith("a loop variable cannot be a function")
    # ... but they may be arguments, let-bound and def results
    assert type_of("def adder n = \\x -> x + n\nlet f = adder 2 in map f [1]") == "[]i64"


def test_ambiguous_top_level():
    err = fails("[]")
    assert err.message == ("cannot infer the type of this expression (got []a); add an "
                           "annotation, e.g. ([] : []i64)")
    assert fails("zero").message.startswith("cannot infer the type of this expression (got a (num a))")
    assert "cannot infer" in fails("let e = []").message
    assert "cannot infer" in fails("let (a, b) = ([], 1)").message
    assert "cannot infer" in fails("[[]]").message


def test_unknown_names():
    err = fails("let xs = [1, 2, 3]\nmapp (+1) xs", AccelNameError)
    assert err.message == "unknown name `mapp`; did you mean `map`?" and at(err) == (2, 1)
    err = fails("let x = 1\nx + y", AccelNameError)
    assert err.message.startswith("unknown name `y`") and at(err) == (2, 5)
    err = fails("let f = map (\\k -> k + 1) [1, 2]\nk", AccelNameError)
    assert at(err) == (2, 1)
    err = fails("def f (xs: [n]i64) = n\nn", AccelNameError)
    assert err.message.startswith("unknown name `n`")
    fails("\\x x -> x", AccelNameError)


def test_used_before_definition():
    err = fails("def g x = h x\ndef h x = x", AccelNameError)
    assert err.message == "`h` is used before its definition" and at(err) == (1, 11)
    fails("let y = h 1\ndef h x = x", AccelNameError)
    # a def is late-bound: it would see the later definition, even with an earlier one around
    env = env_after("def h x = x + 1")
    err = fails("def g x = h x\ndef h x = x", AccelNameError, env=env)
    assert "defined again later" in err.message
    # a global let or an expression is evaluated in order and sees the earlier one
    assert type_of("h 1\ndef h x = x * 2.0", env) == "i64"


def test_recursion_is_a_type_error():
    err = fails("def f x = f x\nf 1")
    assert err.message.startswith("recursive definition: f -> f")
    err = fails("def even (n: i64) : bool = if n == 0 then true else odd (n - 1)\n"
                "def odd (n: i64) : bool = if n == 0 then false else even (n - 1)")
    assert err.message.startswith("recursive definition: even -> odd -> even")


def test_recursion_through_earlier_cells():
    env = env_after("def g (x: i64) : i64 = x", "def f (x: i64) : i64 = g x + 1")
    assert env.deps["f"] == frozenset({"g"})
    err = fails("def g (x: i64) : i64 = f x", env=env)
    assert err.message.startswith("recursive definition: g -> f -> g")
    # a redefinition that does not close a cycle is fine
    assert scheme_of("def g (x: i64) : i64 = x * 2", "g", env) == "i64 -> i64"
    # a longer cycle, through three defs of two earlier cells
    longer = env_after("def h (x: i64) : i64 = f x", base=env)
    err = fails("def g (x: i64) : i64 = h x", env=longer)
    assert err.message.startswith("recursive definition: g -> h -> f -> g")


def test_user_globals_shadow_builtins():
    env = env_after("def map x = x + 1")
    assert type_of("map 2", env) == "i64"
    assert type_of("def length = 3\nlength + 1") == "i64"


def test_locals_shadow_globals_and_deps_only_name_globals():
    result = check("def f map = map 1\ndef g x = let iota = x in iota + 1")
    assert result.deps["f"] == frozenset() and result.deps["g"] == frozenset()
    assert show_scheme(result.schemes["f"]) == "(i64 -> a) -> a"


def test_size_names():
    assert type_of("def dot (xs: [n]i64) (ys: [n]i64) : i64 = reduce (+) 0 (map2 (*) xs ys)\n"
                   "dot [1] [2]") == "i64"
    assert type_of("(\\(xs: [m]f64) -> m) [1.0]") == "i64"
    assert type_of("let (xs: [k]bool) = [true] in k") == "i64"
    err = fails("def f (n: f64) (xs: [n]i64) = n")
    assert err.message == "size `n` is a variable of type f64, not an integer"


# ---------------------------------------------------------------- the example programs

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"


def _programs(prefixes: tuple[str, ...]):
    return sorted(p.name for p in PROGRAMS.glob("*.accel") if p.name.startswith(prefixes))


@pytest.mark.parametrize("name", _programs(("error_type_", "error_name_")))
def test_example_program_errors(name, prelude):
    text = (PROGRAMS / name).read_text()
    expectation = text.strip().splitlines()[-1]
    kind, _, position = expectation.removeprefix("-- error: ").partition(" at ")
    program = parser.parse_program(Source(name, text), _ids)
    with pytest.raises((AccelTypeError, AccelNameError)) as info:
        check_program(program, prelude)
    assert info.value.kind == kind
    if position:
        assert f"{info.value.span.line}:{info.value.span.col}" == position


@pytest.mark.parametrize("name", [n for n in _programs(("",))
                                  if not n.startswith("error_")])
def test_example_programs_type_check(name, prelude):
    text = (PROGRAMS / name).read_text()
    check_program(parser.parse_program(Source(name, text), _ids), prelude)
