"""The accel lexer (first half of stage `parse`): source text to a list of tokens.

`tokenize(source)` gives every token with its span and the layout facts the parser needs:
its 1-based line and column, whether it is the first token on its line (the offside rule of
docs/language.md) and whether whitespace or a comment comes right before it (`xs[i]` indexes,
`f [i]` applies). The list always ends with one `eof` token.

Token kinds: `int`, `float` (numeric literals, suffix included: `3i32`, `2.5e+10f32`),
`name`, `keyword` (`KEYWORDS`), `proj` (`.0` after a name, `)`, `]` or another projection:
`t.1.0`), `symbol` (operators and punctuation) and `eof`. Comments run from `--` to the end
of the line. A character that is not part of the language is an `AccelSyntaxError`.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import AccelSyntaxError
from .source import Source, Span
from .types import SCALARS

KEYWORDS: tuple[str, ...] = ("def", "let", "in", "if", "then", "else", "loop", "for", "while",
                             "do", "with", "by", "true", "false")

# Longest first, so that `..<` wins over `..` and `<=` over `<`.
SYMBOLS: tuple[str, ...] = tuple(sorted(
    ["..<", "..", "<-", "->", "==", "!=", "<=", ">=", "&&", "||", "**", "++", "<<", ">>",
     "+", "-", "*", "/", "%", "<", ">", "!", "&", "|", "^", "=", "(", ")", "[", "]", ",",
     ":", ".", "\\", "|>", "<|", ">->", "<-<", "`"], key=len, reverse=True))

_SYMBOL_SET = frozenset(SYMBOLS)
# a literal's type suffix: every scalar type but bool (`3u8`, `1.5f32`)
SUFFIXES: tuple[str, ...] = tuple(t for t in SCALARS if t != "bool")


@dataclass(frozen=True)
class Token:
    kind: str                 # int float name keyword proj symbol eof
    text: str
    span: Span
    line: int                 # 1-based
    col: int                  # 1-based
    first_on_line: bool       # no other token before it on its line
    space_before: bool        # whitespace, a comment or the start of the text right before it

    def sym(self, *texts: str) -> bool:
        return self.kind == "symbol" and self.text in texts

    def kw(self, *texts: str) -> bool:
        return self.kind == "keyword" and self.text in texts


def _is_name_start(ch: str) -> bool:
    return ch.isascii() and (ch.isalpha() or ch == "_")


def _is_name_char(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "_")


# Futhark's modules of numeric functions: `f64.sqrt`, `i64.sum`, `f64.i64` are one name token
QUALIFIERS = frozenset(SUFFIXES)


class _Lexer:
    def __init__(self, source: Source):
        self.source = source
        self.text = source.text
        self.pos = 0
        self.tokens: list[Token] = []
        self.line_has_token = False
        self.space = True
        self.line = 1
        self.line_start = 0

    def error(self, message: str, start: int, end: int | None = None) -> AccelSyntaxError:
        return AccelSyntaxError(message, Span(self.source, start, end if end else start + 1))

    def emit(self, kind: str, start: int) -> None:
        line, col = self.line, start - self.line_start + 1
        span = Span(self.source, start, self.pos)
        self.tokens.append(Token(kind, self.text[start:self.pos], span, line, col,
                                 not self.line_has_token, self.space))
        self.line_has_token = True
        self.space = False

    def skip_blank(self) -> None:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch == "\n":
                self.line_has_token = False
                self.space = True
                self.pos += 1
                self.line += 1
                self.line_start = self.pos
            elif ch in " \t\r":
                self.space = True
                self.pos += 1
            elif text.startswith("--", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
                self.space = True
            else:
                return

    def name_chars(self) -> None:
        text = self.text
        while self.pos < len(text) and (_is_name_char(text[self.pos])
                                        or text[self.pos] == "'"):
            self.pos += 1

    def after_projectable(self) -> bool:
        """Whether a `.` here (with no space before it) would be a projection."""
        if self.space or not self.tokens:
            return False
        prev = self.tokens[-1]
        return prev.kind in ("name", "proj") or prev.sym(")", "]")

    def run(self) -> list[Token]:
        text = self.text
        while True:
            self.skip_blank()
            if self.pos >= len(text):
                break
            start = self.pos
            ch = text[start]
            if ch == "." and self.after_projectable() and text[start + 1:start + 2].isdigit():
                self.pos += 1
                while self.pos < len(text) and text[self.pos].isdigit():
                    self.pos += 1
                self.emit("proj", start)
            elif ch.isascii() and ch.isdigit():
                self.number()
            elif _is_name_start(ch):
                self.name_chars()                  # primes after the first: `xs'`, `x''`
                if text[start:self.pos] in QUALIFIERS and text[self.pos:self.pos + 1] == "." \
                        and _is_name_start(text[self.pos + 1:self.pos + 2]):
                    self.pos += 1                  # a qualified name: `f64.i64`
                    self.name_chars()
                word = text[start:self.pos]
                self.emit("keyword" if word in KEYWORDS else "name", start)
            else:
                for size in (3, 2, 1):
                    # near the end of the input the slice is shorter than `size`
                    if len(text) - start >= size and text[start:start + size] in _SYMBOL_SET:
                        self.pos += size
                        self.emit("symbol", start)
                        break
                else:
                    shown = ch if ch.isprintable() else repr(ch)
                    raise self.error(f"unexpected character `{shown}`", start)
        # End of input sits right after the last token, so a caret points at the line it ends.
        end = self.tokens[-1].span.end if self.tokens else 0
        line, col = self.source.line_col(end)
        self.tokens.append(Token("eof", "", Span(self.source, end, end), line, col, False, True))
        return self.tokens

    def digits(self, allowed: str) -> None:
        text = self.text
        while self.pos < len(text) and (text[self.pos] in allowed or text[self.pos] == "_"):
            self.pos += 1

    def number(self) -> None:
        text, start = self.text, self.pos
        dec = "0123456789"
        kind = "int"
        if text.startswith(("0x", "0X"), start):
            self.pos += 2
            self.digits(dec + "abcdefABCDEF")
            if self.pos == start + 2:
                raise self.error("expected hexadecimal digits after `0x`", start, self.pos)
        else:
            self.digits(dec)
            if text[self.pos:self.pos + 1] == "." and text[self.pos + 1:self.pos + 2].isdigit():
                kind = "float"
                self.pos += 1
                self.digits(dec)
            if text[self.pos:self.pos + 1] in ("e", "E"):
                mark = self.pos + 1
                if text[mark:mark + 1] in ("+", "-"):
                    mark += 1
                if text[mark:mark + 1].isdigit():
                    kind = "float"
                    self.pos = mark
                    self.digits(dec)
        if self.pos < len(text) and _is_name_char(text[self.pos]):
            suffix_start = self.pos
            while self.pos < len(text) and _is_name_char(text[self.pos]):
                self.pos += 1
            suffix = text[suffix_start:self.pos]
            if suffix not in SUFFIXES:
                raise self.error(f"invalid number literal `{text[start:self.pos]}` "
                                 f"(suffixes are {', '.join(SUFFIXES)})", start, self.pos)
            if suffix[0] in "iu" and kind == "float":
                raise self.error(f"a float literal cannot have the integer suffix `{suffix}`",
                                 start, self.pos)
            if suffix[0] == "f" and text.startswith(("0x", "0X"), start):
                raise self.error("a hexadecimal literal cannot have a float suffix",
                                 start, self.pos)
            if suffix[0] == "f":
                kind = "float"
        if text[self.pos - 1] == "_" or "__" in text[start:self.pos]:
            raise self.error(f"misplaced `_` in number literal `{text[start:self.pos]}`",
                             start, self.pos)
        self.emit(kind, start)


def tokenize(source: Source) -> list[Token]:
    """All tokens of `source`, ending with an `eof` token."""
    return _Lexer(source).run()


def literal_value(token: Token) -> tuple[int | float, str]:
    """The value and scalar type of an `int` or `float` token (`3i32` → (3, "i32"))."""
    text = token.text.replace("_", "")
    type_name = "i64" if token.kind == "int" else "f64"
    for suffix in SUFFIXES:
        if text.endswith(suffix) and not text.lower().startswith("0x"):
            text, type_name = text[:-len(suffix)], suffix
            break
        if text.lower().startswith("0x") and suffix[0] in "iu" and text.endswith(suffix):
            text, type_name = text[:-len(suffix)], suffix
            break
    if type_name in ("f32", "f64"):
        return float(text), type_name
    return int(text, 0) if text.lower().startswith("0x") else int(text), type_name
