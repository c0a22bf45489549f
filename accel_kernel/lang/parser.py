"""The accel parser (stage `parse`): tokens to the AST of `ast.py`, with a span and an id on
every node.

A hand-written recursive-descent parser; binary operators by precedence climbing over
`BINARY_LEVELS` (LANGUAGE.md §3, loosest first). Layout follows docs/language.md: a token that
is first on its line stops the construct being parsed when its column is at or left of the
current *offside column*: 1 for a top-level form, the `let` keyword's column for the value of a
`let`, none inside brackets. The parser sees such a token as a `stop` token, so every rule
ends there as it would at the end of the input.

Public: `parse_program`, `parse_expr`, `parse_type`, `KEYWORDS`, `BINARY_LEVELS`.
"""
from __future__ import annotations

import itertools
from contextlib import contextmanager
from dataclasses import replace
from typing import Iterator

from . import ast, unflatten
from .errors import AccelSyntaxError
from .lexer import KEYWORDS, Token, literal_value, tokenize
from .scalar_ops import INTS, UNSIGNED, int_range, wrap
from .types import SCALARS
from .source import Source, Span

__all__ = ["KEYWORDS", "BINARY_LEVELS", "parse_program", "parse_expr", "parse_type"]

# Binding strength of each binary operator, loosest first. All are left-associative but `**`.
BINARY_LEVELS: dict[str, int] = {
    "||": 1, "&&": 2,
    "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
    "|": 4, "^": 4, "&": 4,
    "<<": 5, ">>": 5,
    "+": 6, "-": 6, "++": 6,
    "*": 7, "/": 7, "%": 7,
    "**": 8,
}
RIGHT_ASSOC = frozenset({"**"})
# Futhark's operators on functions, read as applications and lambdas here (docs/language.md,
# "From Futhark"), with Futhark's binding strengths: a backtick infix ``x `f` y`` loosest,
# then `|>`, then `<|` (right-associative), all looser than `||`; `>->` and `<-<` (function
# composition) bind like the comparisons, whose first character they share.
FUNCTION_LEVELS: dict[str, int] = {"`": -2, "|>": -1, "<|": 0, ">->": 3, "<-<": 3}
LOOSEST = min(FUNCTION_LEVELS.values())
# Futhark's qualified names read as accel's builtins (`qualified`)
QUALIFIED_FUNCTIONS = frozenset({"abs", "max", "min", "sqrt", "exp", "log", "sin", "cos",
                                 "tan", "atan2", "floor", "ceil", "round", "sum", "product",
                                 "maximum", "minimum"})
QUALIFIED_CONSTANTS = frozenset({"highest", "lowest", "pi"})
FLOAT_ONLY = frozenset({"sqrt", "exp", "log", "sin", "cos", "tan", "atan2", "floor", "ceil",
                        "round", "pi"})     # in the f32 and f64 modules only, as in Futhark


def qualified_names() -> list[str]:
    """Every qualified name built (`f64.sqrt`, `i64.f64`, ...), for completion."""
    numeric = SCALAR_TYPES[1:]
    names = sorted(QUALIFIED_FUNCTIONS | QUALIFIED_CONSTANTS | set(numeric))
    return [f"{t}.{n}" for t in numeric for n in names
            if n not in FLOAT_ONLY or t in ("f32", "f64")]
SCALAR_TYPES = SCALARS
INT_RANGES = {t: int_range(t) for t in INTS}
_OPEN_FORMS = ("if", "let", "loop")


class Parser:
    """One use per `Source`. `limits` is the stack of offside columns (None: free layout)."""

    def __init__(self, source: Source, ids: Iterator[int] | None = None):
        self.source = source
        self.tokens = tokenize(source)
        self.ids = ids if ids is not None else itertools.count(1)
        self.pos = 0
        self.limits: list[int | None] = [None]
        self.no_bar = False        # a bracket-level `|` is a comprehension bar, not bitwise or
        self.unblocked = -1        # the first token of a top-level form is never a stop
        self.composed = 0          # the compositions' parameters made so far (`fresh_name`)

    # ------------------------------------------------------------------ tokens

    def blocked(self, index: int) -> bool:
        token = self.tokens[index]
        limit = self.limits[-1]
        return (token.first_on_line and limit is not None and token.col <= limit
                and index != self.unblocked and token.kind != "eof")

    @property
    def tok(self) -> Token:
        """The current token, or a `stop` token where the layout ends the construct."""
        token = self.tokens[self.pos]
        return replace(token, kind="stop") if self.blocked(self.pos) else token

    def peek(self, ahead: int = 1) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def advance(self) -> Token:
        token = self.tok
        assert token.kind not in ("stop", "eof"), "advanced past the end of a form"
        self.pos += 1
        return token

    @contextmanager
    def nested(self, limit: int | None, no_bar: bool | None = None):
        """Parse inside a new offside column (or free layout); `no_bar` sets the `|` mode
        (brackets set it, parentheses and index brackets clear it, a `let` keeps it)."""
        saved_bar = self.no_bar
        self.limits.append(limit)
        if no_bar is not None:
            self.no_bar = no_bar
        try:
            yield
        finally:
            self.limits.pop()
            self.no_bar = saved_bar

    def node(self, cls, start: int, *fields, **named):
        """A node of `cls` spanning from offset `start` to the end of the last token taken."""
        end = self.tokens[self.pos - 1].span.end if self.pos else start
        return cls(*fields, span=Span(self.source, start, max(start, end)), id=next(self.ids),
                   **named)

    # ------------------------------------------------------------------ errors

    def found(self) -> str:
        token = self.tok
        if token.kind == "eof":
            return "end of input"
        if token.kind == "stop":
            if token.col == 1:
                return (f"`{token.text}` starting a new form at {token.line}:1 "
                        "(indent the lines that continue a form)")
            return f"`{token.text}` at {token.line}:{token.col}, a line that ends the `let` above"
        return f"`{token.text}`"

    def error(self, message: str, token: Token | None = None) -> AccelSyntaxError:
        token = token or self.tok
        return AccelSyntaxError(message, token.span)

    def expected(self, what: str) -> AccelSyntaxError:
        token = self.tok
        if token.sym(")", "]") and self.open_brackets() <= 0:
            return self.error(self.unexpected(token))
        return self.error(f"expected {what}, found {self.found()}")

    def open_brackets(self) -> int:
        """How many `(` and `[` before the current token are still open."""
        depth = 0
        for token in self.tokens[:self.pos]:
            if token.sym("(", "["):
                depth += 1
            elif token.sym(")", "]"):
                depth -= 1
        return depth

    def expect_sym(self, text: str, what: str | None = None) -> Token:
        if not self.tok.sym(text):
            raise self.expected(what or f"`{text}`")
        return self.advance()

    def expect_kw(self, text: str, what: str | None = None) -> Token:
        if not self.tok.kw(text):
            raise self.expected(what or f"`{text}`")
        return self.advance()

    def close(self, opener: Token, closer: str, alternatives: str = "") -> Token:
        """Take the bracket that closes `opener`, or say which one is missing."""
        if self.tok.sym(closer):
            return self.advance()
        token = self.tok
        if token.kind == "symbol" and token.text in BINARY_LEVELS and self.peek().sym(")"):
            raise self.error(f"expected an expression after `{token.text}`, found `)`",
                             self.peek())
        where = f"{opener.line}:{opener.col}"
        raise self.expected(f"{alternatives}`{closer}` to close `{opener.text}` opened at {where}")

    # ------------------------------------------------------------------ top level

    def program(self) -> ast.Program:
        forms: list[ast.TopForm] = []
        while self.tokens[self.pos].kind != "eof":
            self.unblocked = self.pos
            with self.nested(1):
                forms.append(unflatten.resolve(self.top_form(), self.ids))
            token = self.tokens[self.pos]
            if token.kind != "eof" and not (token.first_on_line and token.col == 1):
                if token.first_on_line:
                    raise self.error(f"unexpected `{token.text}`: a new form must start in "
                                     "column 1, and a line continuing a form must be indented "
                                     "more than a `let` it continues", token)
                raise self.error(self.unexpected(token), token)
        program = ast.Program(tuple(forms), span=Span(self.source, 0, len(self.source.text)),
                              id=next(self.ids))
        return program

    def unexpected(self, token: Token) -> str:
        if token.sym(")", "]"):
            opener = "(" if token.text == ")" else "["
            return f"unexpected `{token.text}`: there is no open `{opener}` to close"
        if token.sym("."):
            return "unexpected `.` (a projection is written `t.0`, with no space around `.`)"
        return f"unexpected `{token.text}`"

    def top_form(self) -> ast.TopForm:
        start = self.tokens[self.pos].span.start
        if self.tokens[self.pos].kw("def"):
            return self.definition()
        if self.tokens[self.pos].kw("let"):
            let = self.let_expr(top_level=True)
            if isinstance(let, ast.GlobalLet):
                return let
            return self.node(ast.TopExpr, start, let)
        return self.node(ast.TopExpr, start, self.expr())

    def definition(self) -> ast.Def:
        start = self.advance().span.start
        name = self.tok
        if name.kind != "name" or name.text == "_":
            raise self.expected("a name after `def`")
        self.advance()
        params, result, body = self.function_rest()
        return self.node(ast.Def, start, name.text, tuple(params), result, body)

    def function_rest(self) -> tuple[list[ast.Pattern], ast.TypeExpr | None, ast.Expr]:
        """A function's parameters, optional `: result type`, `=` and body (after its name:
        a `def`, or Futhark's `let f x = ...`)."""
        params: list[ast.Pattern] = []
        while self.starts_pattern(self.tok):
            params.append(self.pattern_atom())
        result = None
        if self.tok.sym(":"):
            self.advance()
            result = self.type_expr()
        self.expect_sym("=", "`=`, `:` or a parameter" if not result else "`=`")
        if not self.starts_operand(self.tok):
            raise self.expected("an expression after `=`")
        return params, result, self.expr()

    def let_update(self) -> tuple[ast.Pattern, ast.Expr]:
        """Futhark's `let xs[i] = v` (also `let a[i, j] = v`, `let xs[i:j] = ys`):
        `let xs = xs with [i] = v`."""
        name = self.advance()
        start = name.span.start
        parts = self.update_parts()
        self.expect_sym("=", "`=` after `let " + name.text + "[...]`")
        if not self.starts_operand(self.tok):
            raise self.expected("an expression after `=`")
        value = self.expr()
        array = self.node(ast.Var, start, name.text)
        return (self.node(ast.PVar, start, name.text),
                self.updated(array, start, parts, value))

    def update_parts(self) -> list:
        """The brackets of an update: `[i]`, `[i][j]`, `[i, j]`, `[i:j]`, `[i, j:k:s]`; each
        part with the token it starts at."""
        opener = self.advance()
        parts: list = []
        with self.nested(None, no_bar=False):
            first = self.tok
            parts.append((*self.index_part(), first))
            while self.tok.sym(","):       # Futhark's `with [i, j] = v`
                self.advance()
                first = self.tok
                parts.append((*self.index_part(), first))
            self.close(opener, "]", "`,`, `:` or ")
        return parts

    def updated(self, array: ast.Expr, start: int, parts: list, value: ast.Expr) -> ast.Expr:
        """`array with [parts] = value`. Indices only: an `Update`. A slice, which must come
        last, is a scatter at the slice's indices (the slice checks the bounds and the step,
        scatter the length of `value`): `xs with [i:j:s] = ys` is
        `let x'1 = xs in scatter x'1 ((iota (length x'1))[i:j:s]) ys`, and
        `a with [i, j:k] = v` is `let x'1 = a in let x'2 = i in x'1 with [x'2] =
        scatter x'1[x'2] ((iota (length x'1[x'2]))[j:k]) v`."""
        indices = [low for low, _, _, is_slice, _ in parts if not is_slice]
        for *_, is_slice, token in parts[:-1]:
            if is_slice:
                raise self.error("in an update, a slice can only be the last index "
                                 "(`a with [i, j:k] = v`)", token)
        if not parts[-1][3]:
            return self.node(ast.Update, start, array, tuple(indices), value)
        var = lambda name: self.node(ast.Var, start, name)   # noqa: E731
        name = self.fresh_name()
        bound = [(name, array)] + [(self.fresh_name(), index) for index in indices]

        def row() -> ast.Expr:           # `x'1[x'2]...`: a new node at each use
            out: ast.Expr = var(name)
            for index_name, _ in bound[1:]:
                out = self.node(ast.Index, start, out, var(index_name))
            return out
        low, high, step, _, _ = parts[-1]
        every = self.node(ast.Apply, start, var("iota"),
                          (self.node(ast.Apply, start, var("length"), (row(),)),))
        where = self.node(ast.Slice, start, every, low, high, step)
        out = self.node(ast.Apply, start, var("scatter"), (row(), where, value))
        if indices:
            out = self.node(ast.Update, start, var(name),
                            tuple(var(index_name) for index_name, _ in bound[1:]), out)
        for bound_name, bound_value in reversed(bound):
            out = self.node(ast.Let, start, self.node(ast.PVar, start, bound_name), bound_value,
                            out)
        return out

    def local_function(self, start: int) -> tuple[ast.Pattern, ast.Expr]:
        """Futhark's `let f p1 p2 [: t] = body`: the pattern `f` and the value
        `\\p1 p2 -> body` (the body ascribed `t`)."""
        name = self.advance()
        params, result, body = self.function_rest()
        if result is not None:
            assert body.span is not None
            body = self.node(ast.Ascribe, body.span.start, body, result)
        return (self.node(ast.PVar, name.span.start, name.text),
                self.node(ast.Lambda, start, tuple(params), body))

    # ------------------------------------------------------------------ expressions

    def expr(self) -> ast.Expr:
        """A whole expression: operators, then an optional `with [i] = v`."""
        start = self.tok.span.start
        expr = self.binary(LOOSEST)
        if self.tok.kw("with"):
            self.advance()
            parts: list = []
            while self.tok.sym("["):
                parts += self.update_parts()
            if not parts:
                raise self.expected("`[` after `with`")
            self.expect_sym("=", "`=` or `[` in `with`")
            value = self.expr()
            expr = self.updated(expr, start, parts, value)
        return expr

    def binary_level(self, token: Token) -> int | None:
        if token.kind == "symbol" and token.text in FUNCTION_LEVELS:
            return FUNCTION_LEVELS[token.text]
        if token.kind != "symbol" or token.text not in BINARY_LEVELS:
            return None
        if token.text == "|" and self.no_bar:
            return None
        return BINARY_LEVELS[token.text]

    def binary(self, min_level: int) -> ast.Expr:
        start = self.tok.span.start
        left = self.unary()
        while True:
            level = self.binary_level(self.tok)
            if level is None or level < min_level:
                return left
            if self.peek().sym(")"):      # `(e op)` is a left section: the paren rule takes it
                return left
            op = self.advance().text
            infix = self.backtick_name() if op == "`" else None
            if not self.starts_operand(self.tok):
                raise self.expected(f"an expression after `{op}`" if infix is None
                                    else f"an expression after `{infix.name}`")
            right = self.binary(level if op in RIGHT_ASSOC or op == "<|" else level + 1)
            if op in FUNCTION_LEVELS:
                left = self.function_op(op, start, left, right, infix)
            else:
                left = self.node(ast.BinOp, start, op, left, right)

    def qualified(self, token: Token) -> ast.Expr:
        """A name of Futhark's numeric modules as accel's builtin: `f64.i64` is the
        conversion `f64`; `f64.sqrt`, `i64.sum`, `i32.max` are `sqrt`, `sum`, `max`; the
        constants `i32.highest`, `f32.pi` are ascribed their module's type."""
        module, name = token.text.split(".", 1)
        start = token.span.start
        if name in SCALAR_TYPES and name != "bool":
            return self.node(ast.Var, start, module)
        if name == "pi" and module in ("f32", "f64"):       # accel's `pi` is an f64
            return self.node(ast.Apply, start, self.node(ast.Var, start, module),
                             (self.node(ast.Var, start, name),))
        if name in FLOAT_ONLY and module not in ("f32", "f64"):
            raise self.error(f"`{token.text}` is not built: `{name}` is in the modules f32 "
                             f"and f64 only (`f64.{name}`)", token)
        if name in QUALIFIED_CONSTANTS:
            return self.node(ast.Ascribe, start, self.node(ast.Var, start, name),
                             self.node(ast.TScalar, start, module))
        if name in QUALIFIED_FUNCTIONS:
            return self.node(ast.Var, start, name)
        types = ", ".join(SCALAR_TYPES[1:])
        raise self.error(f"`{token.text}` is not built: the qualified names built are T.U, "
                         f"the conversion to T, and T.F for F one of "
                         f"{', '.join(sorted(QUALIFIED_FUNCTIONS | QUALIFIED_CONSTANTS))}, "
                         f"with T and U among {types}", token)

    def backtick_name(self) -> ast.Var:
        """The function of a backtick infix, ``x `f` y``, after its opening backtick."""
        token = self.tok
        if token.kind != "name":
            raise self.expected("a function name after a backtick (x `f` y)")
        self.advance()
        name = self.node(ast.Var, token.span.start, token.text)
        if not self.tok.sym("`"):
            raise self.expected(f"a backtick after `{token.text}` (x `{token.text}` y)")
        self.advance()
        return name

    def function_op(self, op: str, start: int, left: ast.Expr, right: ast.Expr,
                    infix: ast.Var | None) -> ast.Expr:
        """Futhark's function operators as the applications they mean: ``x `f` y`` is
        `f x y`, `x |> f` and `f <| x` are `f x`, `f >-> g` and `g <-< f` are
        `\\x -> g (f x)` (its parameter a name the program does not use)."""
        if op == "`":
            return self.node(ast.Apply, start, infix, (left, right))
        if op == "|>":
            return self.applied(start, right, left)
        if op == "<|":
            return self.applied(start, left, right)
        first, second = (left, right) if op == ">->" else (right, left)
        name = self.fresh_name()
        param = self.node(ast.PVar, start, name)
        inner = self.applied(start, first, self.node(ast.Var, start, name))
        return self.node(ast.Lambda, start, (param,), self.applied(start, second, inner))

    def applied(self, start: int, fn: ast.Expr, arg: ast.Expr) -> ast.Expr:
        """`fn arg`, one application: `map f |> ...` gives `map f xs`, not `(map f) xs`."""
        if isinstance(fn, ast.Apply):
            return self.node(ast.Apply, start, fn.fn, fn.args + (arg,))
        return self.node(ast.Apply, start, fn, (arg,))

    def fresh_name(self) -> str:
        """A parameter name that appears nowhere in the source (`x'1`, `x'2`, ...)."""
        while True:
            self.composed += 1
            name = f"x'{self.composed}"
            if name not in self.source.text:
                return name

    def starts_operand(self, token: Token) -> bool:
        return (self.starts_arg(token) or token.sym("-", "!", "\\") or token.kw(*_OPEN_FORMS)
                or token.kw("while"))

    def starts_arg(self, token: Token) -> bool:
        return (token.kind in ("int", "float", "name") or token.kw("true", "false")
                or token.sym("(", "["))

    def unary(self) -> ast.Expr:
        token = self.tok
        folds = self.peek().kind in ("int", "float") and not self.blocked(self.pos + 1)
        if token.sym("-") and folds:
            self.advance()
            literal = self.literal(negate=True, start=token.span.start)
            return self.application(self.postfix(literal))
        if token.sym("-", "!"):
            self.advance()
            if not self.starts_operand(self.tok):
                raise self.expected(f"an expression after `{token.text}`")
            operand = self.unary()
            return self.node(ast.UnOp, token.span.start, token.text, operand)
        if token.kw(*_OPEN_FORMS) or token.sym("\\"):
            return self.open_form()
        return self.application()

    def application(self, head: ast.Expr | None = None) -> ast.Expr:
        if head is None:
            head = self.postfix(self.atom(head=True))
        args: list[ast.Expr] = []
        while self.starts_arg(self.tok):
            args.append(self.postfix(self.atom()))
        if not args:
            return head
        return self.node(ast.Apply, head.span.start, head, tuple(args))

    def literal(self, negate: bool = False, start: int | None = None) -> ast.Lit:
        token = self.advance()
        value, type_name = literal_value(token)
        if type_name in INT_RANGES:
            low, high = INT_RANGES[type_name]
            signed = -value if negate else value
            if not low <= (value if type_name in UNSIGNED else signed) <= high:
                raise self.error(f"integer literal {signed} is out of range for {type_name} "
                                 f"({low} to {high})", token)
            # `-1u8` is the negation of `1u8`, which wraps around: 255
            value = wrap(signed, type_name)
        elif negate:
            value = -value
        return self.node(ast.Lit, token.span.start if start is None else start, value, type_name)

    def atom(self, head: bool = False) -> ast.Expr:
        token = self.tok
        if token.kind in ("int", "float"):
            return self.literal()
        if token.kw("true", "false"):
            self.advance()
            return self.node(ast.Lit, token.span.start, token.text == "true", "bool")
        if token.kind == "name":
            if token.text == "_":
                raise self.error("`_` can only be used in a pattern, not as a value")
            self.advance()
            if "." in token.text:
                return self.qualified(token)
            return self.node(ast.Var, token.span.start, token.text)
        if token.kw("while") and head:      # the library's `while p f x`
            self.advance()
            return self.node(ast.Var, token.span.start, "while")
        if token.sym("("):
            return self.paren()
        if token.sym("["):
            return self.bracket()
        raise self.expected("an expression")

    def postfix(self, expr: ast.Expr) -> ast.Expr:
        start = expr.span.start
        while True:
            token = self.tok
            if token.kind == "proj":
                self.advance()
                expr = self.node(ast.Project, start, expr, int(token.text[1:]))
            elif token.sym("[") and not token.space_before:
                expr = self.index(expr, start)
            else:
                return expr

    def index(self, expr: ast.Expr, start: int) -> ast.Expr:
        """`xs[i]`, `xs[i:j]`, and Futhark's several dimensions at once: `a[i, j]`,
        `a[i, :]`, `a[:, j]`, `a[i:j, k:l]` (`indexed`)."""
        opener = self.advance()
        parts = []
        with self.nested(None, no_bar=False):
            while True:
                parts.append(self.index_part())
                if not self.tok.sym(","):
                    break
                self.advance()
            self.close(opener, "]", "`,`, `:` or ")
        return self.indexed(expr, start, parts)

    def index_part(self) -> tuple[ast.Expr | None, ast.Expr | None, ast.Expr | None, bool]:
        """One dimension of an index: `(i, None, None, False)`, or a slice
        `(lo, hi, step, True)` (`i:j`, `i:j:s`, `::s`; each part may be left out)."""
        low = None if self.tok.sym(":") else self.expr()
        if not self.tok.sym(":"):
            return low, None, None, False
        self.advance()
        high = None if self.tok.sym("]", ",", ":") else self.expr()
        step = None
        if self.tok.sym(":"):
            self.advance()
            step = None if self.tok.sym("]", ",") else self.expr()
        return low, high, step, True

    def indexed(self, expr: ast.Expr, start: int, parts: list) -> ast.Expr:
        """The dimensions one after the other: an index takes a row, and a slice followed by
        more dimensions maps them over its rows: `a[i:j, k]` is
        `map (\\r -> r[k]) a[i:j]` (`r` a name the program does not use)."""
        (low, high, step, is_slice), rest = parts[0], parts[1:]
        here = self.node(ast.Slice, start, expr, low, high, step) if is_slice else \
            self.node(ast.Index, start, expr, low)
        if not rest:
            return here
        if not is_slice:
            return self.indexed(here, start, rest)
        name = self.fresh_name()
        row = self.indexed(self.node(ast.Var, start, name), start, rest)
        fn = self.node(ast.Lambda, start, (self.node(ast.PVar, start, name),), row)
        return self.node(ast.Apply, start, self.node(ast.Var, start, "map"), (fn, here))

    def paren(self) -> ast.Expr:
        opener = self.advance()
        start = opener.span.start
        with self.nested(None, no_bar=False):
            token = self.tok
            if token.kind == "symbol" and token.text in BINARY_LEVELS:
                if self.peek().sym(")"):
                    self.advance()
                    self.advance()
                    return self.node(ast.OpFunc, start, token.text)
                if token.text != "-":           # `(-1)` and `(-x)` are negations
                    self.advance()
                    if not self.starts_operand(self.tok):
                        raise self.expected(f"an expression or `)` after `{token.text}`")
                    operand = self.expr()
                    self.close(opener, ")")
                    return self.node(ast.RightSection, start, token.text, operand)
            inner = self.expr()
            token = self.tok
            if token.kind == "symbol" and token.text in BINARY_LEVELS and self.peek().sym(")"):
                self.advance()
                self.advance()
                return self.node(ast.LeftSection, start, token.text, inner)
            if token.sym(":"):
                self.advance()
                annotation = self.type_expr()
                self.close(opener, ")")
                return self.node(ast.Ascribe, start, inner, annotation)
            if token.sym(","):
                elems = [inner]
                while self.tok.sym(","):
                    self.advance()
                    elems.append(self.expr())
                self.close(opener, ")", "`,` or ")
                return self.node(ast.TupleLit, start, tuple(elems))
            self.close(opener, ")", "`,`, `:` or ")
            return inner

    def bracket(self) -> ast.Expr:
        opener = self.advance()
        start = opener.span.start
        with self.nested(None, no_bar=True):
            if self.tok.sym("]"):
                self.advance()
                return self.node(ast.ArrayLit, start, ())
            first = self.expr()
            token = self.tok
            if token.sym("..", "..<"):
                self.advance()
                end = self.expr()
                step = None
                if self.tok.kw("by"):
                    self.advance()
                    step = self.expr()
                self.close(opener, "]", "`by` or " if step is None else "")
                return self.node(ast.Range, start, first, end, token.text == "..", step)
            if token.sym("|"):
                branches: list[tuple[ast.Qualifier, ...]] = []
                while self.tok.sym("|"):
                    self.advance()
                    qualifiers = [self.qualifier()]
                    while self.tok.sym(","):
                        self.advance()
                        qualifiers.append(self.qualifier())
                    branches.append(tuple(qualifiers))
                self.close(opener, "]", "`,`, `|` or ")
                return self.node(ast.Comprehension, start, first, tuple(branches))
            elems = [first]
            while self.tok.sym(","):
                self.advance()
                elems.append(self.expr())
            self.close(opener, "]", "`,` or " if len(elems) > 1 else "`,`, `|`, `..` or ")
            return self.node(ast.ArrayLit, start, tuple(elems))

    def qualifier(self) -> ast.Qualifier:
        token = self.tok
        start = token.span.start
        if token.kw("let"):
            self.advance()
            pattern = self.pattern_annotated()
            self.expect_sym("=", "`=` or `:`")
            value = self.expr()
            if self.tok.kw("in"):                 # a guard that is a `let ... in` expression
                self.advance()
                body = self.expr()
                return self.node(ast.Guard, start, self.node(ast.Let, start, pattern, value, body))
            return self.node(ast.LetQual, start, pattern, value)
        saved = (self.pos, len(self.limits))
        if self.starts_pattern(token):
            try:
                pattern = self.pattern_atom()
                if self.tok.sym("<-"):
                    self.advance()
                    return self.node(ast.Generator, start, pattern, self.expr())
            except AccelSyntaxError:
                pass
            self.pos = saved[0]
            del self.limits[saved[1]:]
        if not self.starts_operand(self.tok):
            raise self.expected("a qualifier (`p <- e`, a condition or `let p = e`)")
        return self.node(ast.Guard, start, self.expr())

    # ------------------------------------------------------------------ keyword-led forms

    def open_form(self) -> ast.Expr:
        """`if`, `let`, `\\` and `loop`: each extends as far right as it can."""
        token = self.tok
        if token.kw("let"):
            result = self.let_expr(top_level=False)
            assert isinstance(result, ast.Let)
            return result
        start = self.advance().span.start
        if token.sym("\\"):
            params: list[ast.Pattern] = []
            while self.starts_pattern(self.tok):
                params.append(self.pattern_atom())
            if not params:
                raise self.expected("a parameter after `\\`")
            self.expect_sym("->", "`->` or a parameter")
            body = self.expr()
            return self.node(ast.Lambda, start, tuple(params), body)
        if token.kw("if"):
            cond = self.expr()
            self.expect_kw("then")
            then = self.expr()
            self.expect_kw("else", f"`else` to go with the `if` at {token.line}:{token.col}")
            return self.node(ast.If, start, cond, then, self.expr())
        pattern = self.pattern_annotated()
        if self.tok.kw("for", "while"):       # Futhark's `loop x for ...`: x starts as itself
            init = self.pattern_value(pattern)
        else:
            self.expect_sym("=", "`=` after the pattern of `loop`")
            init = self.expr()
        form = self.loop_form()
        self.expect_kw("do")
        return self.node(ast.Loop, start, pattern, init, form, self.expr())

    def pattern_value(self, pattern: ast.Pattern) -> ast.Expr:
        """The value a loop pattern names when it has no `= init`: `loop (a, b) for ...`
        starts from the `a` and `b` in scope (names and tuples of names only)."""
        assert pattern.span is not None
        start = pattern.span.start
        if isinstance(pattern, ast.PVar):
            return self.node(ast.Var, start, pattern.name)
        if isinstance(pattern, ast.PTuple):
            return self.node(ast.TupleLit, start,
                             tuple(self.pattern_value(p) for p in pattern.elems))
        raise AccelSyntaxError("a loop without `= init` starts from the variables its pattern "
                               "names: `_` names none", pattern.span)

    def loop_form(self) -> ast.LoopForm:
        token = self.tok
        start = token.span.start
        if token.kw("while"):
            self.advance()
            return self.node(ast.While, start, self.expr())
        if not token.kw("for"):
            raise self.expected("`for` or `while` after the initial value of `loop`")
        self.advance()
        name = self.tok
        if name.kind == "name" and name.text != "_" and self.peek().sym("<"):
            self.advance()
            self.advance()
            return self.node(ast.ForRange, start, name.text, self.expr())
        pattern = self.pattern_atom()
        self.expect_kw("in", "`in` or `<` after the loop variable")
        return self.node(ast.ForIn, start, pattern, self.expr())

    def let_expr(self, top_level: bool) -> ast.Let | ast.GlobalLet:
        """`let p = e in body`, or the layout form with the body on a later line. At the top
        level, a `let` with no `in` is a global binding."""
        let = self.advance()
        start = let.span.start
        with self.nested(let.col):
            if self.tok.kind == "name" and self.peek().sym("[") \
                    and not self.peek().space_before:         # `let xs[i] = v` (Futhark)
                pattern, value = self.let_update()
            elif self.tok.kind == "name" and self.tok.text != "_" \
                    and self.starts_pattern(self.peek()):     # `let f x = ...` (Futhark)
                pattern, value = self.local_function(start)
            else:
                pattern = self.pattern_annotated()
                self.expect_sym("=", "`=` or `:` after the pattern of `let`")
                if not self.starts_operand(self.tok):
                    raise self.expected("an expression after `=`")
                value = self.expr()
        raw = self.tokens[self.pos]
        # `in` continues the `let` unless the layout puts it left of the `let` and outside.
        if raw.kw("in") and (raw.col >= let.col or not self.blocked(self.pos)):
            self.pos += 1
            return self.node(ast.Let, start, pattern, value, self.expr())
        if top_level:
            return self.node(ast.GlobalLet, start, pattern, value)
        if raw.first_on_line and raw.col <= let.col and self.starts_operand(self.tok):
            return self.node(ast.Let, start, pattern, value, self.expr())
        where = f"{let.line}:{let.col}"
        raise self.expected(f"`in`, or the body of the `let` at {where} on a new line in its "
                            "column")

    # ------------------------------------------------------------------ patterns

    def starts_pattern(self, token: Token) -> bool:
        return token.kind == "name" or token.sym("(")

    def pattern_atom(self) -> ast.Pattern:
        token = self.tok
        start = token.span.start
        if token.kind == "name":
            self.advance()
            if token.text == "_":
                return self.node(ast.PWild, start)
            return self.node(ast.PVar, start, token.text)
        if not token.sym("("):
            raise self.expected("a pattern (a name, `_` or a parenthesised pattern)")
        opener = self.advance()
        with self.nested(None):
            first = self.pattern_annotated()
            if not self.tok.sym(","):
                self.close(opener, ")", "`,`, `:` or ")
                return first
            elems = [first]
            while self.tok.sym(","):
                self.advance()
                elems.append(self.pattern_annotated())
            self.close(opener, ")", "`,` or ")
        return self.node(ast.PTuple, start, tuple(elems))

    def pattern_annotated(self) -> ast.Pattern:
        """A pattern with an optional `: type` (`x: i64`, `(a, b): (i64, f64)`)."""
        pattern = self.pattern_atom()
        if not self.tok.sym(":"):
            return pattern
        colon = self.advance()
        if pattern.annot is not None:
            raise self.error("this pattern already has a type annotation", colon)
        annotation = self.type_expr()
        assert pattern.span is not None and annotation.span is not None
        return replace(pattern, annot=annotation, span=pattern.span.to(annotation.span))

    # ------------------------------------------------------------------ types

    def type_expr(self) -> ast.TypeExpr:
        start = self.tok.span.start
        param = self.type_atom()
        if self.tok.sym("->"):
            self.advance()
            return self.node(ast.TFunc, start, param, self.type_expr())
        return param

    def size_factor(self) -> str | int | None:
        """A size in brackets, or a factor of a product size: a name or an integer."""
        size_token = self.tok
        if size_token.kind == "int":
            value, type_name = literal_value(size_token)
            if type_name != "i64":
                raise self.error("an array size is a plain integer", size_token)
            self.advance()
            return int(value)
        if size_token.kind == "name" and size_token.text != "_" and "." not in size_token.text:
            self.advance()
            return size_token.text
        return None

    def type_atom(self) -> ast.TypeExpr:
        token = self.tok
        start = token.span.start
        if token.sym("("):
            opener = self.advance()
            with self.nested(None):
                first = self.type_expr()
                if not self.tok.sym(","):
                    self.close(opener, ")", "`,` or ")
                    return first
                elems = [first]
                while self.tok.sym(","):
                    self.advance()
                    elems.append(self.type_expr())
                self.close(opener, ")", "`,` or ")
            return self.node(ast.TTuple, start, tuple(elems))
        if token.sym("["):
            opener = self.advance()
            size: ast.Size = None
            with self.nested(None):
                size = self.size_factor()
                if size is not None and self.tok.sym("*"):    # `[n * m]t`: checked, not bound
                    factors = [size]
                    while self.tok.sym("*"):
                        self.advance()
                        factor = self.size_factor()
                        if factor is None:
                            raise self.expected("a size name or an integer after `*`")
                        factors.append(factor)
                    size = tuple(factors)
                self.close(opener, "]", "a size or " if size is None else "`*` or ")
            return self.node(ast.TArray, start, self.type_atom(), size)
        if token.kind == "name":
            if token.text == "seq":
                self.advance()
                return self.node(ast.TSeq, start, self.type_atom())
            if token.text in SCALAR_TYPES:
                self.advance()
                return self.node(ast.TScalar, start, token.text)
            raise self.error(f"unknown type `{token.text}` (the types are {', '.join(SCALARS)}, "
                             "[]t, [n]t, (t1, t2), t1 -> t2 and seq t)")
        raise self.expected("a type")

    def finish(self, what: str) -> None:
        token = self.tokens[self.pos]
        if token.kind != "eof":
            raise self.error(self.unexpected(token) + f" after the {what}", token)


@contextmanager
def _depth_guard(parser: Parser):
    """Recursive descent has a depth limit: report it as a syntax error, not a crash."""
    try:
        yield
    except RecursionError:
        token = parser.tokens[min(parser.pos, len(parser.tokens) - 1)]
        raise AccelSyntaxError("expression nested too deeply to parse", token.span) from None


# How deeply expressions may nest (`1 + 1 + ... + 1` with 5,000 terms is 5,000 levels: the
# operators nest to the left). Every stage recurses over the tree; `runtime.deep` gives them
# the room for this many levels.
MAX_NESTING = 5_000


def check_nesting(node: ast.Node) -> None:
    """SyntaxError at the first node (in source order) deeper than MAX_NESTING, counted
    without recursion; a program's forms are at depth 0, their expressions from 1."""
    pending = [(node, -1 if isinstance(node, ast.Program) else 1)]
    while pending:
        current, depth = pending.pop()
        if depth > MAX_NESTING:
            raise AccelSyntaxError(f"expression nested too deeply (more than {MAX_NESTING} "
                                   "levels)", current.span)
        pending += [(child, depth + 1) for child in reversed(ast.children(current))]


def parse_program(source: Source, ids: Iterator[int] | None = None) -> ast.Program:
    """A cell or file: its top-level forms (`def`, global `let`, expressions)."""
    parser = Parser(source, ids)
    with _depth_guard(parser):
        program = parser.program()
    check_nesting(program)
    return program


def parse_expr(source: Source, ids: Iterator[int] | None = None) -> ast.Expr:
    """One expression filling the whole text."""
    parser = Parser(source, ids)
    with _depth_guard(parser):
        expr = parser.expr()
    parser.finish("expression")
    check_nesting(expr)
    return expr


def parse_type(source: Source) -> ast.TypeExpr:
    """One type expression filling the whole text (`[]i64`, `(i64, f64) -> bool`)."""
    parser = Parser(source)
    with _depth_guard(parser):
        type_expr = parser.type_expr()
    parser.finish("type")
    return type_expr
