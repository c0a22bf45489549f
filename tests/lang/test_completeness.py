"""`is_complete`: whether the kernel should run a cell or wait for more lines."""
import pytest

from accel_kernel.lang.completeness import is_complete


@pytest.mark.parametrize("text", [
    "1 + 2", "let x = 1", "let f = (1 + 2)", "def f x = x + 1", "def f x =\n  let a = 1\n  a",
    "map (+1) [1, 2]", "%who", "%time 1 + 2\n", "", "   \n", "-- a comment", "1 + 2 -- note",
    "(1 +)", "xs[0]", "[x | x <- xs]",
    "def f x =\nlet y = 2",            # a syntax error not at the end: run it, show the error
    "if c then 1 else 2 else",         # also an error elsewhere (the parser stops at `else`)
])
def test_complete(text):
    assert is_complete(text) == ("complete", "")


@pytest.mark.parametrize("text", [
    "let f = (1 +", "[1, 2", "f (x", "map (\\x ->", "x +", "x ++", "x &&", "def f x =",
    "let x = 1 in", "if c then", "if c then 1 else", "if c then 1", "if", "let", "def", "loop",
    "\\", "\\x ->", "xs with [0] =", "xs with", "loop x = 0 for i < n do",
    "loop x = 0 while x < 3", "[x | x <-", "def f x =\n  let a = 1", "x + -- comment",
    "[1..<", "let x =\n", "f (1,",
])
def test_incomplete(text):
    status, indent = is_complete(text)
    assert status == "incomplete"
    assert isinstance(indent, str) and indent.strip() == ""


@pytest.mark.parametrize("text", [")", "]", "1 + 2)", "(1 ]", "x $ 1", "[1, 2)", "let s = \"a\""])
def test_invalid(text):
    assert is_complete(text) == ("invalid", "")


def test_meta_command_lines_are_ignored():
    assert is_complete("%target cpu\n1 + 2") == ("complete", "")
    assert is_complete("%target cpu\n(1 +")[0] == "incomplete"


def test_indent_suggestion():
    assert is_complete("def f x =")[1] == "  "
    assert is_complete("def f x =\n  let a =")[1] == "    "
    assert is_complete("def f x =\n  let a = 1")[1] == "  "
    assert is_complete("map (\\x ->\n    x +")[1] == "    "
