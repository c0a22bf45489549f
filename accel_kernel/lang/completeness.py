"""Whether a cell is ready to run (the kernel's `is_complete` request).

`is_complete(text)` gives `(status, indent)`:

- `"invalid"`: a character the lexer rejects, or a closing bracket with no matching opener (or
  the wrong one): more lines cannot fix it;
- `"incomplete"`: an unclosed `(`/`[`, or text that stops where more must follow (a trailing
  `in`, `->`, `=`, `then`, `else`, `do`, `with`, `<-`, `|`, `,`, a binary operator, `\\`,
  `let`/`def`/`if`/`loop` ...): the parser fails at the end of the input;
- `"complete"` otherwise, syntax errors elsewhere included (running the cell shows them).

`indent` is the indentation suggested for the next line ("" unless incomplete). Lines starting
with `%` (meta-commands) are ignored; a cell of only those is complete.
"""
from __future__ import annotations

from .errors import AccelSyntaxError
from .lexer import tokenize
from .parser import parse_program
from .source import Source

_PAIRS = {")": "(", "]": "["}
# A line ending in one of these continues in a deeper block.
_OPENERS = ("=", "->", "then", "else", "do", "in", "(", "[", "with", "let", "if", "loop", "\\")


def is_complete(text: str) -> tuple[str, str]:
    """("complete" | "incomplete" | "invalid", indent for the next line)."""
    code = "\n".join("" if line.startswith("%") else line for line in text.split("\n"))
    if not code.strip():
        return "complete", ""
    source = Source("cell", code)
    try:
        tokens = tokenize(source)
    except AccelSyntaxError:
        return "invalid", ""
    stack: list[str] = []
    for token in tokens:
        if token.sym("(", "["):
            stack.append(token.text)
        elif token.sym(")", "]"):
            if not stack or stack[-1] != _PAIRS[token.text]:
                return "invalid", ""
            stack.pop()
    if stack:
        return "incomplete", _indent(code, tokens[-2].text)
    try:
        parse_program(source)
    except AccelSyntaxError as err:
        if err.span is not None and err.span.start >= tokens[-1].span.start:
            return "incomplete", _indent(code, tokens[-2].text)
    return "complete", ""


def _indent(code: str, last: str) -> str:
    """Continuation lines of a form are indented (column 1 would start a new form)."""
    lines = [line for line in code.split("\n")
             if line.strip() and not line.lstrip().startswith("--")]
    last_line = lines[-1] if lines else ""
    current = len(last_line) - len(last_line.lstrip(" "))
    if current == 0 or last in _OPENERS:
        return " " * (current + 2)
    return " " * current
