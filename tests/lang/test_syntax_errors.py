"""Syntax errors: kind, position (line:col of the offending token) and a message that says what
was expected. Nothing else is checked here: a failing parse produces no AST at all."""
import pytest

from accel_kernel.lang.errors import AccelSyntaxError
from accel_kernel.lang.parser import parse_program
from accel_kernel.lang.source import Source


def error(text: str) -> AccelSyntaxError:
    with pytest.raises(AccelSyntaxError) as info:
        parse_program(Source("cell[1]", text))
    return info.value


@pytest.mark.parametrize("text,line,col,message", [
    ("let x = 3\nx $ 4", 2, 3, "unexpected character `$`"),
    ("def = 3", 1, 5, "expected a name after `def`, found `=`"),
    ("[1, 2, , 3]", 1, 8, "expected an expression, found `,`"),
    ("map (\\x -> ) [1, 2]", 1, 12, "expected an expression, found `)`"),
    ("let x = 3\n(if x > 2 then 1)", 2, 17, "expected `else` to go with the `if` at 2:2, found `)`"),
    ("a + * 2", 1, 5, "expected an expression after `+`, found `*`"),
    ("let xs = [1, 2, 3\nlet ys = xs\nys", 2, 1,
     "expected `,` or `]` to close `[` opened at 1:10, found `let`"),
    ("f (1, 2", 1, 8, "expected `,` or `)` to close `(` opened at 1:3, found end of input"),
    ("1 + 2 )", 1, 7, "unexpected `)`: there is no open `(` to close"),
    ("]", 1, 1, "unexpected `]`: there is no open `[` to close"),
    ("if c then 1 else", 1, 17, "expected an expression, found end of input"),
    ("let x = in x", 1, 9, "expected an expression after `=`, found `in`"),
    ("def f x =\nx + 1", 2, 1, "found `x` starting a new form at 2:1 (indent the lines"),
    ("def f x =\n  let a = 1\ndef g = 2", 3, 1,
     "expected `in`, or the body of the `let` at 2:3 on a new line in its column, found `def`"),
    ("(let a = 1)", 1, 11, "expected `in`, or the body of the `let` at 1:2"),
    ("loop x = 0 do x", 1, 12, "expected `for` or `while` after the initial value of `loop`"),
    ("loop x = 0 for i n do x", 1, 18, "expected `in` or `<` after the loop variable, found `n`"),
    ("\\ -> 1", 1, 3, "expected a parameter after `\\`, found `->`"),
    ("xs[1", 1, 5, "expected `,`, `:` or `]` to close `[` opened at 1:3, found end of input"),
    ("xs with 0 = 1", 1, 9, "expected `[` after `with`, found `0`"),
    ("(x: int)", 1, 5, "unknown type `int`"),
    ("t. 0", 1, 2, "unexpected `.` (a projection is written `t.0`"),
    ("_ + 1", 1, 1, "`_` can only be used in a pattern"),
    ("[x | ]", 1, 6, "expected a qualifier"),
    ("99999999999999999999", 1, 1, "integer literal 99999999999999999999 is out of range for i64"),
    ("3000000000i32", 1, 1, "out of range for i32"),
    ("  let x = 1\n  x", 2, 3, "unexpected `x`: a new form must start in column 1"),
    ("[1 + ]", 1, 6, "expected an expression after `+`, found `]`"),
    ("f (x, 1 +)", 1, 10, "expected an expression after `+`, found `)`"),
    ("if c then 1 else 2 else 3", 1, 20, "unexpected `else`"),
    ("def f x : = 1", 1, 11, "expected a type, found `=`"),
    ("x with [0] 1", 1, 12, "expected `=` or `[` in `with`, found `1`"),
    ("let x: i64: i64 = 1", 1, 11, "expected `=` or `:` after the pattern of `let`"),
])
def test_syntax_error(text, line, col, message):
    err = error(text)
    assert err.kind == "SyntaxError"
    assert (err.span.line, err.span.col) == (line, col), err.message
    assert message in err.message


def test_error_formatting_shows_the_line_and_a_caret():
    err = error("let x = 3\nx $ 4")
    assert err.format() == ("error: SyntaxError at cell[1]:2:3: unexpected character `$`\n"
                            "x $ 4\n"
                            "  ^")


def test_end_of_input_caret_follows_the_last_token():
    err = error("f (1, 2\n\n")
    assert (err.span.line, err.span.col) == (1, 8)
    assert err.excerpt() == ["f (1, 2", "       ^"]


def test_a_later_form_error_rejects_the_whole_cell():
    err = error("let a = 1\nlet b = 2\n(a +")
    assert err.span.line == 3
