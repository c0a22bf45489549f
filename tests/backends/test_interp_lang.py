"""The language through the reference interpreter: source text is parsed, type checked (with
the prelude loaded first) and run; results are compared as printed accel values."""
import itertools
import threading
from importlib import resources

import awkward as ak
import numpy as np
import pytest

from accel_kernel.backends.interp import Interpreter
from accel_kernel.lang.errors import AccelError, Interrupted
from accel_kernel.lang.source import Source
from accel_kernel.runtime.cancel import CancelToken
from accel_kernel.values import format_value, to_python

parser = pytest.importorskip("accel_kernel.lang.parser")
typecheck = pytest.importorskip("accel_kernel.lang.typecheck")


class Runner:
    """A minimal session: globals, schemes and the type tables, kept across `run` calls."""

    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.cancel = CancelToken()
        self.globals: dict = {}
        self.schemes: dict = {}
        self.deps: dict = {}
        self.types: dict = {}
        self.instantiations: dict = {}
        prelude = resources.files("accel_kernel").joinpath("prelude.accel").read_text()
        self.run(prelude, "prelude.accel")

    def run(self, text: str, name: str = "cell"):
        program = parser.parse_program(Source(name, text), self.ids)
        checked = typecheck.check_program(program, typecheck.GlobalEnv(self.schemes, self.deps))
        self.types.update(checked.types)
        self.instantiations.update(checked.instantiations)
        interp = Interpreter(self.globals, self.types, self.instantiations, cancel=self.cancel)
        values = interp.run_forms(program.forms)
        self.globals.update(values.bindings)
        self.schemes.update(checked.schemes)
        self.deps.update(checked.deps)
        return values, checked

    def value(self, text: str):
        values, checked = self.run(text)
        return values.results[-1], checked.expr_types[-1]

    def text(self, text: str) -> str:
        return format_value(*self.value(text))

    def error(self, text: str) -> AccelError:
        with pytest.raises(AccelError) as info:
            self.run(text)
        return info.value


@pytest.fixture(scope="module")
def acc() -> Runner:
    return Runner()


LIBRARY_CASES = [
    ("map (\\x -> x * 2) [1, 2, 3]", "[2, 4, 6]"),
    ("map2 (+) [1, 2] [10, 20]", "[11, 22]"),
    ("map3 (\\a b c -> a + b * c) [1, 2] [2, 3] [3, 4]", "[7, 14]"),
    ("zip [1, 2] [true, false]", "[(1, true), (2, false)]"),
    ("zip3 [1] [2.0] [3i32]", "[(1, 2.0, 3i32)]"),
    ("unzip [(1, 2.0), (3, 4.0)]", "([1, 3], [2.0, 4.0])"),
    ("unzip3 [(1, 2.0, true)]", "([1], [2.0], [true])"),
    ("reduce (-) 10 [1, 2, 3]", "4"),
    ("scan (+) 0 [1, 2, 3]", "[1, 3, 6]"),
    ("filter (\\x -> x % 2 == 0) (iota 7)", "[0, 2, 4, 6]"),
    ("partition (>2) [1, 5, 2, 7]", "([5, 7], [1, 2])"),
    ("iota 4", "[0, 1, 2, 3]"),
    ("iota 0", "[]"),
    ("replicate 3 1.5", "[1.5, 1.5, 1.5]"),
    ("generate 3 (\\i -> i * i)", "[0, 1, 4]"),
    ("expand (\\x -> x) (*) [2, 3, 1]", "[0, 2, 0, 3, 6, 0]"),
    ("scatter [0, 0, 0] [2, 5, -1, 0] [7, 8, 6, 9]", "[9, 0, 7]"),
    ("reduce_by_index [0, 0] (+) 0 [0, 1, 0, 3] [1, 2, 3, 4]", "[4, 2]"),
    ("sort [3.0, 1.0, 2.0]", "[1.0, 2.0, 3.0]"),
    ("sort [2.0, 0.0 / 0.0, 1.0]", "[1.0, 2.0, nan]"),
    ("sort [(2, 1), (1, 5), (1, 2)]", "[(1, 2), (1, 5), (2, 1)]"),
    ("sort_by (\\p -> p.0) [(2, 1), (1, 2), (2, 0), (1, 3)]", "[(1, 2), (1, 3), (2, 1), (2, 0)]"),
    ("length [1, 2]", "2"),
    ("flatten [[1], [], [2, 3]]", "[1, 2, 3]"),
    ("concat [1] [2, 3]", "[1, 2, 3]"),
    ("[1] ++ [2, 3]", "[1, 2, 3]"),
    ("reverse [1, 2, 3]", "[3, 2, 1]"),
    ("transpose [[1, 2], [3, 4], [5, 6]]", "[[1, 3, 5], [2, 4, 6]]"),
    ("take 2 [1, 2, 3]", "[1, 2]"),
    ("drop 2 [1, 2, 3]", "[3]"),
    ("head [4, 5]", "4"),
    ("last [4, 5]", "5"),
    ("interleave [1, 2] [3, 4]", "[1, 3, 2, 4]"),
    ("rotate 1 [1, 2, 3]", "[2, 3, 1]"),
    ("rotate (-1) [1, 2, 3]", "[3, 1, 2]"),
    ("while (\\x -> x < 100) (\\x -> x * 2) 1", "128"),
    ("while (\\x -> false) (\\x -> x / 0) 5", "5"),
    ("sum [1, 2, 3]", "6"),
    ("sum [1.5, 2.5]", "4.0"),
    ("sum ([] : []f32)", "0.0f32"),
    ("product [2, 3, 4]", "24"),
    ("maximum [3, 9, 2]", "9"),
    ("maximum ([] : []f64)", "-inf"),
    ("maximum ([] : []i32)", "-2147483648i32"),
    ("minimum [3, 1, 2]", "1"),
    ("all (>0) [1, 2]", "true"),
    ("any (>1) [1]", "false"),
    ("count (>1) [1, 2, 3]", "2"),
    ("map (2*) [1, 2]", "[2, 4]"),
    ("map (+1) [1, 2]", "[2, 3]"),
    ("let f = \\x -> x + 1 in f 2", "3"),
    ("(min 3 4, max 3.0 4.0, abs (-3), select true 1 2)", "(3, 4.0, 3, 1)"),
]


@pytest.mark.parametrize("source, expected", LIBRARY_CASES)
def test_library(acc, source, expected):
    assert acc.text(source) == expected


SCALAR_CASES = [
    ("(7 / 2, -7 / 2, 7 / -2, -7 / -2)", "(3, -3, -3, 3)"),
    ("(7 % 2, -7 % 2, 7 % -2, -7 % -2)", "(1, -1, 1, -1)"),
    ("9223372036854775807 + 1", "-9223372036854775808"),
    ("2147483647i32 + 1i32", "-2147483648i32"),
    ("(-9223372036854775807 - 1) / -1", "-9223372036854775808"),
    ("(i64 2.7, i64 (-2.7), i32 5, f32 1, f64 0.5f32)", "(2, -2, 5i32, 1.0f32, 0.5)"),
    ("(round 0.5, round 1.5, round 2.5, round (-2.5))", "(0.0, 2.0, 2.0, -2.0)"),
    ("(floor 1.5, ceil 1.5, floor (-1.5))", "(1.0, 2.0, -2.0)"),
    ("(2 ** 10, 2 ** -1, 1 ** -3, 2.0 ** -1.0)", "(1024, 0, 1, 0.5)"),
    ("(1.0 / 0.0, -1.0 / 0.0)", "(inf, -inf)"),
    ("(1 << 3, -8 >> 1, 6 & 3, 6 | 3, 6 ^ 3)", "(8, -4, 2, 7, 5)"),
    ("(1.5f32 + 2.0f32, 0.1 + 0.2)", "(3.5f32, 0.30000000000000004)"),
    ("(1 < 2, 2.0 == 2.0, true != false, !true)", "(true, true, true, false)"),
    ("(sqrt 4.0, exp 0.0, log 1.0, sin 0.0, cos 0.0, tan 0.0, atan2 0.0 1.0)",
     "(2.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0)"),
    ("pi", "3.141592653589793"),
    ("-2 ** 2", "4"),
]


@pytest.mark.parametrize("source, expected", SCALAR_CASES)
def test_scalars(acc, source, expected):
    assert acc.text(source) == expected


ERROR_CASES = [
    ("[1, 2, 3][5]", "IndexError", "cell:1:1", "index 5 out of bounds for array of length 3"),
    ("let xs = [1, 2]\nxs[-1]", "IndexError", "cell:2:1",
     "index -1 out of bounds for array of length 2"),
    ("[1, 2][1:3]", "IndexError", "cell:1:1", None),
    ("1 + 1 / 0", "DivisionByZero", "cell:1:5", None),
    ("7 % 0", "DivisionByZero", "cell:1:1", None),
    ("0 ** -1", "DivisionByZero", "cell:1:1", None),
    ("length (map2 (+) [1] [1, 2])", "SizeError", "cell:1:9", None),
    ("zip [1, 2] [1]", "SizeError", "cell:1:1", None),
    ("iota (-1)", "SizeError", "cell:1:1", None),
    ("replicate (-2) 0", "SizeError", "cell:1:1", None),
    ("head ([] : []i64)", "SizeError", "cell:1:1", None),
    ("last ([] : []i64)", "SizeError", "cell:1:1", None),
    ("take 4 [1]", "SizeError", "cell:1:1", None),
    ("drop (-1) [1]", "SizeError", "cell:1:1", None),
    ("interleave [1] [1, 2]", "SizeError", "cell:1:1", None),
    ("transpose [[1, 2], [3]]", "SizeError", "cell:1:1", None),
    ("[0..<5 by 0]", "SizeError", "cell:1:1", None),
    ("[x + y | x <- [1, 2] | y <- [1]]", "SizeError", "cell:1:1", None),
    ("def f x = x / 0\nmap f [1]", "DivisionByZero", "cell:1:11", None),
    ("let xs = [1]\nlet ys = xs with [3] = 2", "IndexError", "cell:2:10", None),
]


@pytest.mark.parametrize("source, kind, location, message", ERROR_CASES)
def test_runtime_errors(acc, source, kind, location, message):
    err = acc.error(source)
    assert err.kind == kind
    assert err.location() == location
    if message is not None:
        assert err.message == message


def test_map2_error_names_both_lengths(acc):
    assert "1 and 2" in acc.error("map2 (+) [1] [1, 2]").message


def test_size_annotations(acc):
    acc.run("def size_of (xs: [n]f64) = n\ndef same (xs: [n]i64) (ys: [n]i64) = n")
    assert acc.text("size_of [1.0, 2.0]") == "2"
    assert acc.text("same [1, 2] [3, 4]") == "2"
    err = acc.error("same [1, 2] [3, 4, 5]")
    assert err.kind == "SizeError"
    assert err.message == "expected 2 elements for size n, got 3"
    acc.run("def rows (xss: [n][m]i64) = m")
    assert acc.text("rows [[1, 2], [3, 4]]") == "2"
    assert acc.error("rows [[1, 2], [3]]").kind == "SizeError"


def test_short_circuit_and_unreached_errors(acc):
    assert acc.text("let xs = [1, 2] in 5 < length xs && xs[5] > 0") == "false"
    assert acc.text("let xs = [1, 2] in 5 >= length xs || xs[5] > 0") == "true"
    assert acc.text("if true then 1 else 1 / 0") == "1"
    assert acc.text("map (\\x -> if x == 0 then 0 else 10 / x) [0, 5]") == "[0, 2]"


def test_loops_and_updates(acc):
    assert acc.text("loop acc = 0 for i < 5 do acc + i") == "10"
    assert acc.text("loop (a, b) = (0, 1) for i < 10 do (b, a + b)") == "(55, 89)"
    assert acc.text("loop x = 1 while x < 100 do x * 3") == "243"
    assert acc.text("loop s = 0 for x in [1, 2, 3] do s + x") == "6"
    assert acc.text("let xs = [[1, 2], [3]] in xs with [1][0] = 9") == "[[1, 2], [9]]"


def test_functions_partial_application_and_late_binding(acc):
    acc.run("def add x y = x + y\ndef g x = x + 1\ndef f x = g x * 2")
    assert acc.text("map (add 1) [1, 2]") == "[2, 3]"
    assert acc.text("f 1") == "4"
    acc.run("def g x = x + 10")
    assert acc.text("f 1") == "22"


def test_comprehensions(acc):
    assert acc.text("[(i, j) | i <- [0..<3], j <- [i..<3]]") == \
        "[(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]"
    assert acc.text("[x | x <- iota 10, x % 3 == 0]") == "[0, 3, 6, 9]"
    assert acc.text("[y | x <- [1, 2, 3], let y = x * x, y > 1]") == "[4, 9]"
    assert acc.text("[x + y | x <- [1, 2] | y <- [10, 20]]") == "[11, 22]"
    assert acc.text("[a * b | (a, b) <- zip [1, 2] [3, 4]]") == "[3, 8]"
    assert acc.text("[x | x <- [10..0 by -3]]") == "[10, 7, 4, 1]"


def test_pythagorean_triples(acc):
    source = ("[(x, y, z) | x <- [1..<30], y <- [x..<30], z <- [y..<(x+y)], z < 30, "
              "x*x + y*y == z*z]")
    expected = [(x, y, z) for x in range(1, 30) for y in range(x, 30) for z in range(y, x + y)
                if z < 30 and x * x + y * y == z * z]
    value, _ = acc.value(source)
    assert [tuple(int(v) for v in t) for t in value] == expected


def test_irregular_nesting_depth_three(acc):
    value, t = acc.value("map (\\xss -> map (\\xs -> filter (>0) xs) xss) "
                         "[[[1, -1], [2]], [], [[-3]]]")
    assert format_value(value, t) == "[[[1], [2]], [], [[]]]"
    out = to_python(value, t)
    assert isinstance(out, ak.Array) and out.tolist() == [[[1], [2]], [], [[]]]
    assert np.asarray(out.layout.offsets).tolist() == [0, 2, 2, 3]
    value, t = acc.value("generate 3 (\\i -> generate i (\\j -> iota j))")
    assert format_value(value, t) == "[[], [[]], [[], [0]]]"


def test_sequences(acc):
    assert acc.text("elements (produce 3 (\\i -> iota i))") == "[0, 0, 1]"
    assert acc.text("tabulate (mapSeq (map (*2)) (stream [[1], [2, 3]]))") == "[[2], [4, 6]]"
    assert acc.text("foldSeq (+) 0 (mapSeq sum (stream [[1, 2], [3]]))") == "6"
    assert acc.text("zipWithSeq (+) (stream [1, 2]) (stream [10, 20])") == "[11, 22]"


def test_cancellation(acc):
    acc.cancel.set()
    try:
        err = acc.error("reduce (+) 0 (iota 1000)")
        assert isinstance(err, Interrupted)
    finally:
        acc.cancel.clear()
    timer = threading.Timer(0.2, acc.cancel.set)
    timer.start()
    try:
        with pytest.raises(Interrupted):
            acc.run("loop x = 0 while x >= 0 do x + 1")
    finally:
        timer.join()
        acc.cancel.clear()
    assert acc.text("1 + 1") == "2"
