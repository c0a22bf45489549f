"""The lexer: token kinds and texts, numeric literals, projections, layout facts, comments."""
import pytest

from accel_kernel.lang.errors import AccelSyntaxError
from accel_kernel.lang.lexer import KEYWORDS, literal_value, tokenize
from accel_kernel.lang.source import Source


def toks(text: str) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tokenize(Source("t", text))][:-1]


def texts(text: str) -> list[str]:
    return [t for _, t in toks(text)]


def value(text: str):
    (token, _eof) = tokenize(Source("t", text))
    return literal_value(token)


def test_kinds():
    assert toks("def f x = x + 1") == [
        ("keyword", "def"), ("name", "f"), ("name", "x"), ("symbol", "="), ("name", "x"),
        ("symbol", "+"), ("int", "1")]
    assert toks("true _ _x x1 while") == [
        ("keyword", "true"), ("name", "_"), ("name", "_x"), ("name", "x1"), ("keyword", "while")]


def test_eof_token_and_empty_text():
    tokens = tokenize(Source("t", ""))
    assert [t.kind for t in tokens] == ["eof"]
    tokens = tokenize(Source("t", "x  \n"))
    assert tokens[-1].kind == "eof" and tokens[-1].span.start == 1


def test_symbols_longest_match():
    assert texts("a..<b a..b x<-xs \\x->x a<=b a==b a!=b a&&b a||b a**b a++b a<<b a>>b") == [
        "a", "..<", "b", "a", "..", "b", "x", "<-", "xs", "\\", "x", "->", "x", "a", "<=", "b",
        "a", "==", "b", "a", "!=", "b", "a", "&&", "b", "a", "||", "b", "a", "**", "b",
        "a", "++", "b", "a", "<<", "b", "a", ">>", "b"]
    assert texts("(+) [a|b] x%y !x a^b a&b") == [
        "(", "+", ")", "[", "a", "|", "b", "]", "x", "%", "y", "!", "x", "a", "^", "b",
        "a", "&", "b"]


def test_symbol_spans_stop_at_the_end_of_the_input():
    tokens = tokenize(Source("t", "xs[5]"))
    assert [(t.text, t.span.start, t.span.end) for t in tokens] == [
        ("xs", 0, 2), ("[", 2, 3), ("5", 3, 4), ("]", 4, 5), ("", 5, 5)]
    assert [(t.span.start, t.span.end) for t in tokenize(Source("t", "a+"))][1] == (1, 2)


def test_comments():
    assert texts("x -- a comment\n-- whole line\ny") == ["x", "y"]
    assert texts("x--y") == ["x"]
    assert texts("a - -b") == ["a", "-", "-", "b"]


@pytest.mark.parametrize("text,expected", [
    ("42", (42, "i64")), ("3i32", (3, "i32")), ("3i64", (3, "i64")), ("1_000_000", (1000000, "i64")),
    ("0xff", (255, "i64")), ("0x10i32", (16, "i32")),
    ("1.5", (1.5, "f64")), ("2.0f32", (2.0, "f32")), ("3f64", (3.0, "f64")), ("3f32", (3.0, "f32")),
    ("1e-3", (0.001, "f64")), ("2.5e+10f32", (2.5e10, "f32")), ("1E3", (1000.0, "f64")),
])
def test_number_values(text, expected):
    got = value(text)
    assert got == expected and type(got[0]) is type(expected[0])


def test_number_kinds():
    assert toks("1 1.5 3f64 3i32 1e3") == [
        ("int", "1"), ("float", "1.5"), ("float", "3f64"), ("int", "3i32"), ("float", "1e3")]
    assert texts("[1..5]") == ["[", "1", "..", "5", "]"]
    assert texts("[1..<5]") == ["[", "1", "..<", "5", "]"]
    assert texts("[1.5..2.5]") == ["[", "1.5", "..", "2.5", "]"]


def test_projection_tokens():
    assert toks("t.1.0") == [("name", "t"), ("proj", ".1"), ("proj", ".0")]
    assert toks("(a, b).1") == [("symbol", "("), ("name", "a"), ("symbol", ","), ("name", "b"),
                                ("symbol", ")"), ("proj", ".1")]
    assert toks("xs[0].12") == [("name", "xs"), ("symbol", "["), ("int", "0"), ("symbol", "]"),
                                ("proj", ".12")]
    assert toks("1.0") == [("float", "1.0")]
    assert toks("t .0") == [("name", "t"), ("symbol", "."), ("int", "0")]


def test_layout_facts():
    tokens = tokenize(Source("t", "def f =\n  let a = 1\n  a  [0]\nxs[0]"))
    facts = [(t.text, t.line, t.col, t.first_on_line, t.space_before) for t in tokens[:-1]]
    assert facts == [
        ("def", 1, 1, True, True), ("f", 1, 5, False, True), ("=", 1, 7, False, True),
        ("let", 2, 3, True, True), ("a", 2, 7, False, True), ("=", 2, 9, False, True),
        ("1", 2, 11, False, True), ("a", 3, 3, True, True), ("[", 3, 6, False, True),
        ("0", 3, 7, False, False), ("]", 3, 8, False, False), ("xs", 4, 1, True, True),
        ("[", 4, 3, False, False), ("0", 4, 4, False, False), ("]", 4, 5, False, False)]


def test_spans():
    tokens = tokenize(Source("t", "ab + 12"))
    assert [(t.span.start, t.span.end) for t in tokens] == [(0, 2), (3, 4), (5, 7), (7, 7)]


def test_keywords():
    assert "def" in KEYWORDS and "while" in KEYWORDS and "by" in KEYWORDS
    assert "map" not in KEYWORDS and "i64" not in KEYWORDS


@pytest.mark.parametrize("text,col,message", [
    ("x $ 4", 3, "unexpected character `$`"),
    ("let s = \"a\"", 9, "unexpected character `\"`"),
    ("1 @ 2", 3, "unexpected character `@`"),
    ("3abc", 1, "invalid number literal `3abc`"),
    ("1.5i32", 1, "integer suffix"),
    ("0x", 1, "hexadecimal digits"),
    ("1__0", 1, "misplaced `_`"),
    ("x = é", 5, "unexpected character `é`"),
])
def test_lexical_errors(text, col, message):
    with pytest.raises(AccelSyntaxError) as info:
        tokenize(Source("t", text))
    assert info.value.span.col == col
    assert message in info.value.message
