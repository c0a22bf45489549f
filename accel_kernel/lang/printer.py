"""The AST printer: accel source text back from `ast` nodes (the inverse of `parser`).

`print_program`, `print_expr`, `print_pattern` and `print_type` give text that reads like
hand-written accel and parses back to an equal AST (`parse(print(ast)) == ast`, equality ignoring
spans and ids). Parentheses are added only where precedence or the grammar needs them:

- each expression form has a *level* (0 for `if`/`let`/`\\`/`loop`/`with`, 1..8 for the binary
  operators of `parser.BINARY_LEVELS`, 9 for unary, 10 for application, 11 for atoms); a form is
  parenthesised where its context needs a tighter level;
- the keyword-led forms (`if`, `let`, `\\`, `loop`) extend to the right, so they stay bare only
  in *tail* position, where nothing of the enclosing expression follows them;
- directly inside `[` `]` a bitwise `|` is parenthesised (the bracket-level `|` is the
  comprehension bar).

Top-level forms are printed one per line from column 1; a `def` whose body is a chain of
`let`s is printed one `let` per line, indented, relying on the layout rule.
"""
from __future__ import annotations

from . import ast
from .parser import BINARY_LEVELS, RIGHT_ASSOC

UNARY_LEVEL = 9
APPLY_LEVEL = 10
ATOM_LEVEL = 11
INDENT = "  "


# ---------------------------------------------------------------- types and patterns

def print_type(t: ast.TypeExpr) -> str:
    """`[]i64`, `[n][m]f32`, `(i64, bool)`, `i64 -> i64 -> i64`, `seq []i64`."""
    if isinstance(t, ast.TScalar):
        return t.name
    if isinstance(t, ast.TArray):
        size = "" if t.size is None else \
            " * ".join(map(str, t.size)) if isinstance(t.size, tuple) else str(t.size)
        return f"[{size}]{_type_atom(t.elem)}"
    if isinstance(t, ast.TTuple):
        return "(" + ", ".join(print_type(e) for e in t.elems) + ")"
    if isinstance(t, ast.TFunc):
        return f"{_type_atom(t.param)} -> {print_type(t.result)}"
    if isinstance(t, ast.TSeq):
        return f"seq {_type_atom(t.elem)}"
    raise TypeError(f"not a type expression: {t!r}")


def _type_atom(t: ast.TypeExpr) -> str:
    text = print_type(t)
    return f"({text})" if isinstance(t, ast.TFunc) else text


def print_pattern(p: ast.Pattern) -> str:
    """A pattern as it appears as a parameter: `x`, `_`, `(x: i64)`, `((a, b): (i64, f64))`."""
    bare = _pattern_bare(p)
    if p.annot is None:
        return bare
    return f"({bare}: {print_type(p.annot)})"


def _pattern_bare(p: ast.Pattern) -> str:
    """The pattern without its own annotation (elements of a tuple keep theirs)."""
    if isinstance(p, ast.PVar):
        return p.name
    if isinstance(p, ast.PWild):
        return "_"
    if isinstance(p, ast.PTuple):
        return "(" + ", ".join(_pattern_element(e) for e in p.elems) + ")"
    raise TypeError(f"not a pattern: {p!r}")


def _pattern_element(p: ast.Pattern) -> str:
    """An element of a tuple pattern, or a `let` pattern: `x: i64` needs no parentheses."""
    bare = _pattern_bare(p)
    return bare if p.annot is None else f"{bare}: {print_type(p.annot)}"


# ---------------------------------------------------------------- expressions

def _is_open(e: ast.Expr) -> bool:
    """Forms that start with a keyword and extend as far right as they can."""
    return isinstance(e, (ast.If, ast.Let, ast.Lambda, ast.Loop))


def _level(e: ast.Expr) -> int:
    if _is_open(e) or isinstance(e, ast.Update):
        return 0
    if isinstance(e, ast.BinOp):
        return BINARY_LEVELS[e.op]
    if isinstance(e, ast.UnOp):
        return UNARY_LEVEL
    if isinstance(e, ast.Lit) and not isinstance(e.value, bool) and _is_negative(e.value):
        return UNARY_LEVEL
    if isinstance(e, ast.Apply):
        return APPLY_LEVEL
    return ATOM_LEVEL


def _is_negative(value: int | float) -> bool:
    return value < 0 or (isinstance(value, float) and str(value).startswith("-"))


def print_lit(e: ast.Lit) -> str:
    if isinstance(e.value, bool) or e.type == "bool":
        return "true" if e.value else "false"
    if e.type in ("f32", "f64"):
        text = repr(float(e.value))
        return text if e.type == "f64" else text + "f32"
    text = str(int(e.value))
    return text if e.type == "i64" else text + e.type


class _Printer:
    def expr(self, e: ast.Expr, level: int = 0, tail: bool = True, bar: bool = False) -> str:
        """`e` in a context that needs at least `level`; `tail`: nothing follows it there;
        `bar`: directly inside square brackets, where `|` is the comprehension bar."""
        if _is_open(e):
            needs_parens = not tail
        else:
            needs_parens = _level(e) < level or (not tail and isinstance(e, ast.Update))
        if isinstance(e, ast.BinOp) and e.op == "|" and bar:
            needs_parens = True
        if needs_parens:
            return "(" + self.form(e, True, False) + ")"
        return self.form(e, tail, bar)

    def form(self, e: ast.Expr, tail: bool, bar: bool) -> str:
        method = getattr(self, "print_" + type(e).__name__)
        return method(e, tail, bar)

    # -- atoms and brackets

    def print_Lit(self, e: ast.Lit, tail: bool, bar: bool) -> str:
        return print_lit(e)

    def print_Var(self, e: ast.Var, tail: bool, bar: bool) -> str:
        # `while` is a keyword that names the library function only at the head of an
        # application; `(while)` reads as that function everywhere.
        return "(while)" if e.name == "while" else e.name

    def print_ArrayLit(self, e: ast.ArrayLit, tail: bool, bar: bool) -> str:
        return "[" + ", ".join(self.expr(x, bar=True) for x in e.elems) + "]"

    def print_Range(self, e: ast.Range, tail: bool, bar: bool) -> str:
        dots = ".." if e.inclusive else "..<"
        text = f"[{self.expr(e.start, bar=True)}{dots}{self.expr(e.end, bar=True)}"
        if e.step is not None:
            text += f" by {self.expr(e.step, bar=True)}"
        return text + "]"

    def print_TupleLit(self, e: ast.TupleLit, tail: bool, bar: bool) -> str:
        return "(" + ", ".join(self.expr(x) for x in e.elems) + ")"

    def print_Comprehension(self, e: ast.Comprehension, tail: bool, bar: bool) -> str:
        branches = " | ".join(", ".join(self.qualifier(q) for q in branch)
                              for branch in e.branches)
        return f"[{self.expr(e.body, bar=True)} | {branches}]"

    def qualifier(self, q: ast.Qualifier) -> str:
        if isinstance(q, ast.Generator):
            return f"{print_pattern(q.pattern)} <- {self.expr(q.source, bar=True)}"
        if isinstance(q, ast.LetQual):
            return f"let {_pattern_element(q.pattern)} = {self.expr(q.value, bar=True)}"
        return self.expr(q.cond, bar=True)

    def print_Ascribe(self, e: ast.Ascribe, tail: bool, bar: bool) -> str:
        return f"({self.expr(e.expr)} : {print_type(e.type)})"

    def print_OpFunc(self, e: ast.OpFunc, tail: bool, bar: bool) -> str:
        return f"({e.op})"

    def print_LeftSection(self, e: ast.LeftSection, tail: bool, bar: bool) -> str:
        return f"({self.expr(e.left, tail=False)} {e.op})"

    def print_RightSection(self, e: ast.RightSection, tail: bool, bar: bool) -> str:
        # `(- e)` would read as a negation: the parser never makes RightSection("-").
        return f"({e.op} {self.expr(e.right)})"

    # -- postfix, application, operators

    def print_Project(self, e: ast.Project, tail: bool, bar: bool) -> str:
        # `.0` is a projection only right after a name, `)`, `]` or another projection.
        inner = e.expr
        if isinstance(inner, ast.Lit) or _level(inner) < ATOM_LEVEL:
            return f"({self.expr(inner)}).{e.index}"
        return f"{self.expr(inner, ATOM_LEVEL, False)}.{e.index}"

    def print_Index(self, e: ast.Index, tail: bool, bar: bool) -> str:
        return f"{self.expr(e.expr, ATOM_LEVEL, False)}[{self.expr(e.index)}]"

    def print_Slice(self, e: ast.Slice, tail: bool, bar: bool) -> str:
        lo = "" if e.lo is None else self.expr(e.lo)
        hi = "" if e.hi is None else self.expr(e.hi)
        step = "" if e.step is None else f":{self.expr(e.step)}"
        return f"{self.expr(e.expr, ATOM_LEVEL, False)}[{lo}:{hi}{step}]"

    def print_Apply(self, e: ast.Apply, tail: bool, bar: bool) -> str:
        head = "while" if e.fn == ast.Var("while") else self.expr(e.fn, ATOM_LEVEL, False)
        args = [self.expr(a, ATOM_LEVEL, False) for a in e.args]
        return " ".join([head, *args])

    def print_BinOp(self, e: ast.BinOp, tail: bool, bar: bool) -> str:
        level = BINARY_LEVELS[e.op]
        left_level, right_level = (level + 1, level) if e.op in RIGHT_ASSOC else (level, level + 1)
        left = self.expr(e.left, left_level, False, bar)
        right = self.expr(e.right, right_level, tail, bar)
        return f"{left} {e.op} {right}"

    def print_UnOp(self, e: ast.UnOp, tail: bool, bar: bool) -> str:
        operand = self.expr(e.operand, UNARY_LEVEL, tail, bar)
        # `--` starts a comment, `-1` would fold into a literal, `!=` is an operator.
        if operand[:1] == "-" or (e.op == "-" and operand[:1].isdigit()):
            operand = f"({self.form(e.operand, True, False)})"
        return e.op + operand

    # -- keyword-led forms

    def print_Lambda(self, e: ast.Lambda, tail: bool, bar: bool) -> str:
        params = " ".join(print_pattern(p) for p in e.params)
        return f"\\{params} -> {self.expr(e.body, bar=bar)}"

    def print_Let(self, e: ast.Let, tail: bool, bar: bool) -> str:
        return (f"let {_pattern_element(e.pattern)} = {self.expr(e.value, bar=bar)} "
                f"in {self.expr(e.body, bar=bar)}")

    def print_If(self, e: ast.If, tail: bool, bar: bool) -> str:
        return (f"if {self.expr(e.cond, bar=bar)} then {self.expr(e.then, bar=bar)} "
                f"else {self.expr(e.else_, bar=bar)}")

    def print_Loop(self, e: ast.Loop, tail: bool, bar: bool) -> str:
        form = e.form
        if isinstance(form, ast.ForRange):
            head = f"for {form.var} < {self.expr(form.bound, bar=bar)}"
        elif isinstance(form, ast.ForIn):
            head = f"for {print_pattern(form.pattern)} in {self.expr(form.array, bar=bar)}"
        else:
            head = f"while {self.expr(form.cond, bar=bar)}"
        return (f"loop {print_pattern(e.pattern)} = {self.expr(e.init, bar=bar)} {head} "
                f"do {self.expr(e.body, bar=bar)}")

    def print_Update(self, e: ast.Update, tail: bool, bar: bool) -> str:
        indices = "".join(f"[{self.expr(i)}]" for i in e.indices)
        return (f"{self.expr(e.array, 1, False, bar)} with {indices} = "
                f"{self.expr(e.value, bar=bar)}")


_PRINTER = _Printer()


def print_expr(e: ast.Expr) -> str:
    """One expression on one line."""
    return _PRINTER.expr(e)


# ---------------------------------------------------------------- top level

def print_form(form: ast.TopForm) -> str:
    if isinstance(form, ast.Def):
        head = " ".join(["def", form.name, *(print_pattern(p) for p in form.params)])
        if form.result is not None:
            head += f" : {print_type(form.result)}"
        if isinstance(form.body, ast.Let):
            return head + " =\n" + _let_chain(form.body, INDENT)
        return f"{head} = {print_expr(form.body)}"
    if isinstance(form, ast.GlobalLet):
        return f"let {_pattern_element(form.pattern)} = {print_expr(form.value)}"
    if isinstance(form, ast.TopExpr):
        return print_expr(form.expr)
    raise TypeError(f"not a top-level form: {form!r}")


def _let_chain(body: ast.Expr, indent: str) -> str:
    """A chain of `let`s, one a line with no `in`, then the final body (layout rule)."""
    lines = []
    while isinstance(body, ast.Let):
        lines.append(f"{indent}let {_pattern_element(body.pattern)} = {print_expr(body.value)}")
        body = body.body
    lines.append(indent + print_expr(body))
    return "\n".join(lines)


def print_program(program: ast.Program) -> str:
    """All top-level forms, each starting in column 1, one after another."""
    return "\n".join(print_form(f) for f in program.forms) + ("\n" if program.forms else "")


# ---------------------------------------------------------------- line breaking for views

_BREAK_BEFORE = {"(", "\\", "let", "if", "then", "else", "loop", "do"}


def print_form_wrapped(form: ast.TopForm, width: int = 88) -> str:
    """`print_form`, with lines longer than `width` broken before an argument, a lambda or a
    keyword and continued, indented by their bracket depth (the layout rule reads an indented
    line as a continuation). Falls back to the unbroken text if the broken one would not parse
    back to the same form."""
    from .parser import parse_program
    from .source import Source
    text = print_form(form)
    lines = [_wrap_line(line, width) for line in text.split("\n")]
    wrapped = "\n".join(lines)
    if wrapped == text:
        return text
    try:
        same = parse_program(Source("wrapped", wrapped)).forms == (form,)
    except Exception:        # a parse failure here means only: keep the unbroken text
        same = False
    return wrapped if same else text


def _wrap_line(line: str, width: int) -> str:
    from .lexer import tokenize
    from .source import Source
    if len(line) <= width:
        return line
    indent = len(line) - len(line.lstrip(" "))
    tokens = tokenize(Source("line", line))[:-1]
    depth = 0
    open_lets: list[int] = []     # offsets of `let`s whose `in` has not come yet
    # (offset, bracket depth, offset of the innermost open `let`): where a break may go. A
    # line inside a `let`'s binding must start right of that `let` (the layout rule).
    candidates: list[tuple[int, int, int | None]] = []
    for k, token in enumerate(tokens):
        after = tokens[k - 1] if k > 0 else None
        keyword = token.kind == "keyword"
        if keyword and token.text == "in" and open_lets:
            open_lets.pop()
        if after is not None and (after.sym(",") or (
                token.text in _BREAK_BEFORE and not after.sym("(", "[", "]", "\\", ":", "="))):
            candidates.append((token.span.start, depth, open_lets[-1] if open_lets else None))
        if keyword and token.text == "let":
            open_lets.append(token.span.start)
        if token.sym("(", "["):
            depth += 1
        elif token.sym(")", "]"):
            depth -= 1
    out: list[str] = []
    segments: list[tuple[int, int]] = []          # (offset where an output line starts, pad)
    start, pad = indent, indent
    while True:
        segments.append((start, pad))
        rest = line[start:]
        if pad + len(rest) <= width:
            out.append(" " * pad + rest)
            break
        limit = start + width - pad
        fits = [c for c in candidates if start < c[0] <= limit]
        # the shallowest break that fits (the last of those): arguments of the outer call
        # go on their own lines before inner ones do
        cut = (max(fits, key=lambda c: (-c[1], c[0])) if fits
               else next((c for c in candidates if c[0] > start), None))
        if cut is None:
            out.append(" " * pad + rest)
            break
        out.append(" " * pad + line[start:cut[0]].rstrip())
        new_pad = indent + 2 + 2 * min(cut[1], 8)
        if cut[2] is not None:
            seg_start, seg_pad = max(seg for seg in segments if seg[0] <= cut[2])
            new_pad = max(new_pad, seg_pad + (cut[2] - seg_start) + 2)
        start, pad = cut[0], new_pad
    return "\n".join(out)
