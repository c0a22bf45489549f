"""Text of the flat IR (`ir/flat.py`): a printer that reads like accel, its parser, `verify`.

    def rowsums (xss_1: [seg][r1]i64) =
      let offs_2: [r1]i64 = offsets xss_1
      let vals_3: [r1]i64 = values xss_1
      let sums_4: [r1]i64 = seg_reduce (\\a b -> a + b) 0 offs_2 vals_3
      in sums_4

A form is `def NAME (param: rep)... =`, `let NAME =` / `let (A, B) =` (a global let) or
`expr =` (a top-level expression), then its block: statements, one per line, and
`in RESULT`. A statement is `let x: rep = op args` (`let (o: rep, v: rep) = ...` for several
targets) or `assert OK KIND "message"`. Arguments are variables or constants (`1`, `2i32`,
`1.5`, `0.5f32`, `true`, `inf`); a scalar function is an accel lambda in parentheses; an
`if` and a `loop` carry their blocks, each ended by its `in`. Reps are printed by
`flat.show_rep` (`i64`, `[r2]f64`, `[seg][r1]i64`, `([r1]i64, f64)`).

`parse_flat(print_flat(p)) == p` for every flat program (spans and ids aside, as in the AST).
`verify(program)` lists what is wrong with a flat program: names bound twice or used before
they are bound, and arguments whose reps do not fit their operation.
"""
from __future__ import annotations

import math
import re
from typing import Callable, Iterable

from ..lang import ast
from ..lang.parser import parse_expr
from ..lang.printer import print_expr, print_pattern
from ..lang.lexer import SUFFIXES
from ..lang.scalar_ops import DTYPES
from ..lang.source import Source
from . import core
from .flat import (Assert, Atom, Block, Const, Copy, FlatForm, FlatProgram, Filter, FVar,
                   Gather, If, Index, Iota, Kernel, Length, Lengths, Library, Literal, Loop, SeqLoop,
                   MakeTuple, Map, Offsets, Op, Project, Rebuild, Reduce, Regular, Rep,
                   Replicate, Reshape, Scalar, ScalarFn, ScalarRep, Scan, SegFilter, SegGather,
                   SegLibrary, SegmentIds, SegmentIota, Segmented, SegReduce, SegScan,
                   SizesToOffsets, Stmt, TupleRep, Values, WriteRows, show_rep)

INDENT = "  "

# op class -> (keyword, field names in printed order)
_SIMPLE: dict[type, tuple[str, tuple[str, ...]]] = {
    Iota: ("iota", ("n",)),
    Replicate: ("replicate", ("n", "x")),
    Map: ("map", ("fn", "*args")),
    Reduce: ("reduce", ("op", "ne", "arr")),
    SegReduce: ("seg_reduce", ("op", "ne", "offsets", "values")),
    Scan: ("scan", ("op", "ne", "arr")),
    SegScan: ("seg_scan", ("op", "ne", "offsets", "values")),
    Filter: ("filter", ("keep", "arr")),
    Copy: ("copy", ("arr",)),
    WriteRows: ("write_rows", ("arr", "indices", "rows")),
    SegFilter: ("seg_filter", ("keep", "offsets", "values")),
    SizesToOffsets: ("sizes_to_offsets", ("sizes",)),
    Lengths: ("lengths", ("offsets",)),
    SegmentIds: ("segment_ids", ("offsets",)),
    SegmentIota: ("segment_iota", ("offsets",)),
    Gather: ("gather", ("arr", "indices")),
    SegGather: ("seg_gather", ("offsets", "values", "segments", "indices")),
    Index: ("index", ("arr", "index")),
    Length: ("length", ("arr",)),
    Rebuild: ("rebuild", ("offsets", "values")),
    Offsets: ("offsets", ("arr",)),
    Values: ("values", ("arr",)),
    Reshape: ("reshape", ("arr", "rows")),
    MakeTuple: ("tuple", ("*parts",)),
}
_BY_KEYWORD = {kw: (cls, fields) for cls, (kw, fields) in _SIMPLE.items()}
KEYWORDS = set(_BY_KEYWORD) | {"scalar", "literal", "project", "if", "loop", "kernel"}


# ---------------------------------------------------------------- printing

def print_atom(a: Atom) -> str:
    if isinstance(a, FVar):
        return a.name
    return print_const(a.value, a.elem)


def print_const(value, elem: str) -> str:
    if elem == "bool":
        return "true" if value else "false"
    if elem in ("f32", "f64"):
        v = float(value)
        text = "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) \
            else repr(v)
        return text if elem == "f64" else text + "f32"
    text = str(int(value))
    return text if elem == "i64" else text + elem


def print_fn(fn: ScalarFn) -> str:
    if not fn.params:
        return "(" + print_expr(fn.body) + ")"
    return "(\\" + " ".join(_param(p) for p in fn.params) + " -> " + print_expr(fn.body) + ")"


def _param(p: ast.Pattern) -> str:
    text = print_pattern(p)
    return text if isinstance(p, ast.PVar) and p.annot is None else \
        (text if text.startswith("(") else f"({text})")


def print_value(value, rep: Rep) -> str:
    if isinstance(rep, ScalarRep):
        return print_const(value, rep.elem)
    if isinstance(rep, TupleRep):
        return "(" + ", ".join(print_value(v, r) for v, r in zip(value, rep.parts)) + ")"
    row = _row(rep)
    return "[" + ", ".join(print_value(v, row) for v in value) + "]"


def _row(rep: Rep) -> Rep:
    if isinstance(rep, Regular):
        return ScalarRep(rep.elem) if rep.rank == 1 else Regular(rep.elem, rep.rank - 1)
    if isinstance(rep, Segmented):
        return rep.inner
    if isinstance(rep, TupleRep):
        return TupleRep(tuple(_row(p) for p in rep.parts))
    raise ValueError(f"no rows in {rep}")


def print_op(op: Op, rep: Rep | None = None) -> str:
    """One line for a simple op (not `if`/`loop`, which `print_stmt` lays out)."""
    if isinstance(op, Scalar):
        return "scalar " + print_fn(op.fn)
    if isinstance(op, Assert):
        return f'assert {print_atom(op.ok)} {op.kind} "{_escape(op.message)}"'
    if isinstance(op, If):
        return f"if {print_atom(op.cond)} ..."
    if isinstance(op, Loop):
        return "loop ..."
    if isinstance(op, SeqLoop):
        return "seq_loop ..."
    if isinstance(op, Kernel):
        return f"kernel {op.name} {op.kind} ..."
    if isinstance(op, Literal):
        return "literal " + print_value(op.value, op.rep)
    if isinstance(op, Project):
        return f"project {op.index} {print_atom(op.tup)}"
    if isinstance(op, Library):
        return " ".join([op.name, *(print_fn(f) for f in op.fns),
                         *(print_atom(a) for a in op.args)])
    if isinstance(op, SegLibrary):
        return " ".join(["seg_" + op.name, *(print_fn(f) for f in op.fns),
                         print_atom(op.offsets), print_atom(op.values),
                         *(print_atom(a) for a in op.args)])
    keyword, fields = _SIMPLE[type(op)]
    parts = [keyword]
    for name in fields:
        value = getattr(op, name.lstrip("*"))
        if name.startswith("*"):
            parts += [print_atom(a) for a in value]
        elif isinstance(value, ScalarFn):
            parts.append(print_fn(value))
        else:
            parts.append(print_atom(value))
    return " ".join(parts)


def op_name(op: Op) -> str:
    """The op's keyword: the first word `print_op` writes for it (`map`, `seg_reduce`, a
    library function's name)."""
    if isinstance(op, Library):
        return op.name
    if isinstance(op, SegLibrary):
        return "seg_" + op.name
    named = {Scalar: "scalar", Assert: "assert", If: "if", Loop: "loop", SeqLoop: "seq_loop",
             Kernel: "kernel",
             Literal: "literal", Project: "project"}
    return named.get(type(op)) or _SIMPLE[type(op)][0]


def _targets(targets: tuple[FVar, ...]) -> str:
    shown = [f"{t.name}: {show_rep(t.rep)}" for t in targets]
    return shown[0] if len(shown) == 1 else "(" + ", ".join(shown) + ")"


def _atoms(atoms: Iterable[Atom]) -> str:
    shown = [print_atom(a) for a in atoms]
    return shown[0] if len(shown) == 1 else "(" + ", ".join(shown) + ")"


def print_stmt(stmt: Stmt, indent: str = "") -> list[str]:
    op = stmt.op
    if isinstance(op, Assert):
        return [indent + print_op(op)]
    head = f"{indent}let {_targets(stmt.targets)} = "
    if isinstance(op, If):
        inner = indent + INDENT
        return ([head + f"if {print_atom(op.cond)}", f"{inner}then"]
                + print_block(op.then, inner + INDENT)
                + [f"{inner}else"] + print_block(op.else_, inner + INDENT))
    if isinstance(op, Kernel):
        lines = " ".join(str(n) for n in op.lines)
        return ([head + f"kernel {op.name} {op.kind} [{lines}] do"]
                + print_block(op.body, indent + INDENT + INDENT))
    if isinstance(op, SeqLoop):
        # let (acc: i64, out: [r1]i64) = seq_loop (p: i64) = (0) of n by start count
        #     stream c: [r1]i64 <- xs do
        params = "(" + ", ".join(f"{p.name}: {show_rep(p.rep)}" for p in op.params) + ")"
        inits = "(" + ", ".join(print_atom(a) for a in op.init) + ")"
        length = "_" if op.length is None else print_atom(op.length)
        streams = "".join(f" stream {c.name}: {show_rep(c.rep)} <- {print_atom(x)}"
                          for x, c in op.streams)
        lines = ([head + f"seq_loop {params} = {inits} of {length} by {op.start.name} "
                  f"{op.count.name}{streams} do"]
                 + print_block(op.body, indent + INDENT + INDENT))
        if op.combine is not None:      # combine (r: i64) do ... in (joined)
            right = ", ".join(f"{r.name}: {show_rep(r.rep)}" for r in op.right)
            lines += ([f"{indent + INDENT}combine ({right}) do"]
                      + print_block(op.combine, indent + INDENT + INDENT))
        return lines
    if isinstance(op, Loop):
        params = "(" + ", ".join(f"{p.name}: {show_rep(p.rep)}" for p in op.params) + ")"
        inits = "(" + ", ".join(print_atom(a) for a in op.init) + ")"
        inner = indent + INDENT
        line = head + f"loop {params} = {inits}"
        if op.cond is not None:
            return ([line + " while"] + print_block(op.cond, inner + INDENT)
                     + [f"{inner}do"] + print_block(op.body, inner + INDENT))
        index = f"{op.index.name}" if op.index is not None else "_"
        return ([line + f" for {index} < {print_atom(op.bound)} do"]
                + print_block(op.body, inner + INDENT))
    return [head + print_op(op)]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def print_block(block: Block, indent: str) -> list[str]:
    lines: list[str] = []
    for stmt in block.stmts:
        lines += print_stmt(stmt, indent)
    lines.append(f"{indent}in {_atoms(block.result) if block.result else '()'}")
    return lines


def print_form(form: FlatForm) -> str:
    if form.kind == "def":
        params = " ".join(f"({p.name}: {show_rep(p.rep)})" for p in form.params)
        head = f"def {form.names[0]}" + (f" {params}" if params else "") + " ="
    elif form.kind == "let":
        names = form.names[0] if len(form.names) == 1 else "(" + ", ".join(form.names) + ")"
        head = f"let {names} ="
    else:
        head = "expr ="
    return "\n".join([head] + print_block(form.body, INDENT))


def print_flat(program: FlatProgram) -> str:
    return "\n\n".join(print_form(f) for f in program.forms) + "\n"


# ---------------------------------------------------------------- parsing

class FlatSyntaxError(ValueError):
    pass


_NUMBER = re.compile(r"-?(?:\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?|inf|nan)"
                     r"(?:[iu](?:8|16|32|64)|f32|f64)?(?![A-Za-z_0-9'])")
_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9']*")


class _Reader:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.reps: dict[str, Rep] = {}       # every name seen bound, for ScalarFn.free

    # -- characters
    def skip(self) -> None:
        while self.pos < len(self.text):
            if self.text[self.pos].isspace():
                self.pos += 1
            elif self.text.startswith("--", self.pos):
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end
            else:
                return

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)

    def peek_word(self) -> str | None:
        self.skip()
        m = _NAME.match(self.text, self.pos)
        return m.group(0) if m else None

    def peek(self, s: str) -> bool:
        self.skip()
        return self.text.startswith(s, self.pos)

    def take(self, s: str) -> None:
        if not self.peek(s):
            raise self.error(f"expected `{s}`")
        self.pos += len(s)

    def word(self) -> str:
        self.skip()
        m = _NAME.match(self.text, self.pos)
        if not m:
            raise self.error("expected a name")
        self.pos = m.end()
        return m.group(0)

    def keyword(self, kw: str) -> None:
        if self.peek_word() != kw:
            raise self.error(f"expected `{kw}`")
        self.word()

    def error(self, message: str) -> FlatSyntaxError:
        line = self.text.count("\n", 0, self.pos) + 1
        return FlatSyntaxError(f"flat IR line {line}: {message} at "
                               f"{self.text[self.pos:self.pos + 30]!r}")

    def balanced(self, opener: str = "(", closer: str = ")") -> str:
        """The text between a bracket here and its match (the brackets not included)."""
        self.take(opener)
        depth, start = 1, self.pos
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
                if depth == 0:
                    self.pos += 1
                    return self.text[start:self.pos - 1]
            self.pos += 1
        raise self.error("unclosed bracket")

    # -- pieces
    def rep(self) -> Rep:
        self.skip()
        if self.peek("[seg]"):
            self.take("[seg]")
            return Segmented(self.rep())
        if self.peek("[r"):
            self.take("[r")
            m = re.compile(r"\d+").match(self.text, self.pos)
            if not m:
                raise self.error("expected a rank")
            self.pos = m.end()
            self.take("]")
            return Regular(self.word(), int(m.group(0)))
        if self.peek("("):
            self.take("(")
            parts = [self.rep()]
            while self.peek(","):
                self.take(",")
                parts.append(self.rep())
            self.take(")")
            return TupleRep(tuple(parts))
        return ScalarRep(self.word())

    def binding(self) -> FVar:
        name = self.word()
        self.take(":")
        var = FVar(name, self.rep())
        self.reps[name] = var.rep
        return var

    def atom(self) -> Atom:
        self.skip()
        m = _NUMBER.match(self.text, self.pos)
        if m:
            self.pos = m.end()
            return _const(m.group(0))
        word = self.word()
        if word in ("true", "false"):
            return Const(word == "true", "bool")
        if word in ("in", "let", "assert", "then", "else", "do", "while", "for", "combine"):
            raise self.error(f"`{word}` where a variable or constant was expected")
        if word not in self.reps:
            raise self.error(f"`{word}` is not bound")
        return FVar(word, self.reps[word])

    def field(self) -> Atom:
        """An argument of an operation: on the operation's line."""
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1
        if self.pos >= len(self.text) or self.text[self.pos] in "\r\n":
            raise self.error("expected an argument")
        return self.atom()

    def atoms(self) -> tuple[Atom, ...]:
        if self.peek("()"):
            self.take("()")
            return ()
        if self.peek("("):
            self.take("(")
            out = [self.atom()]
            while self.peek(","):
                self.take(",")
                out.append(self.atom())
            self.take(")")
            return tuple(out)
        return (self.atom(),)

    def fn(self) -> ScalarFn:
        text = self.balanced()
        expr = parse_expr(Source("flat", text))
        if isinstance(expr, ast.Lambda) and text.lstrip().startswith("\\"):
            return make_fn(expr.params, expr.body, self.reps)
        return make_fn((), expr, self.reps)


def _const(text: str) -> Const:
    elem = None
    for suffix in SUFFIXES:
        if text.endswith(suffix):
            text, elem = text[:-len(suffix)], suffix
            break
    is_float = any(c in text for c in ".e") or "inf" in text or "nan" in text
    elem = elem or ("f64" if is_float else "i64")
    if elem in ("f32", "f64"):
        return Const(float(text), elem)
    return Const(int(text.replace("_", "")), elem)


def make_fn(params: tuple[ast.Pattern, ...], body: ast.Expr,
            reps: dict[str, Rep] | Callable[[str], Rep | None]) -> ScalarFn:
    """A ScalarFn whose `free` are the variables of `body` (in order of first use) that are
    not bound by `params` or inside the body and that `reps` knows."""
    lookup = reps.get if isinstance(reps, dict) else reps
    free_names = core.free_vars(ast.Lambda(params, body)) if params else core.free_vars(body)
    free: list[FVar] = []
    for node in ast.walk(body):
        if isinstance(node, ast.Var) and node.name in free_names \
                and node.name not in [f.name for f in free]:
            rep = lookup(node.name)
            if rep is not None:
                free.append(FVar(node.name, rep))
    return ScalarFn(tuple(params), body, tuple(free))


def parse_value(text: str, rep: Rep):
    """A literal value (nested lists of numpy scalars) of rep `rep`."""
    reader = _Reader(text)
    value = _value(reader, rep)
    if not reader.at_end():
        raise reader.error("trailing text after a literal")
    return value


def _value(reader: _Reader, rep: Rep):
    if isinstance(rep, ScalarRep):
        const = reader.atom()
        if not isinstance(const, Const):
            raise reader.error("expected a constant")
        return DTYPES[rep.elem](const.value)
    if isinstance(rep, TupleRep):
        reader.take("(")
        out = []
        for k, part in enumerate(rep.parts):
            if k:
                reader.take(",")
            out.append(_value(reader, part))
        reader.take(")")
        return tuple(out)
    reader.take("[")
    out = []
    row = _row(rep)
    while not reader.peek("]"):
        if out:
            reader.take(",")
        out.append(_value(reader, row))
    reader.take("]")
    return out


class _Parser(_Reader):
    def program(self) -> FlatProgram:
        forms = []
        while not self.at_end():
            forms.append(self.form())
        return FlatProgram(tuple(forms))

    def form(self) -> FlatForm:
        kind = self.word()
        params: list[FVar] = []
        if kind == "def":
            names = (self.word(),)
            while self.peek("("):
                self.take("(")
                params.append(self.binding())
                self.take(")")
        elif kind == "let":
            if self.peek("("):
                self.take("(")
                names_list = [self.word()]
                while self.peek(","):
                    self.take(",")
                    names_list.append(self.word())
                self.take(")")
                names = tuple(names_list)
            else:
                names = (self.word(),)
        elif kind == "expr":
            names = ()
        else:
            raise self.error(f"expected a form, not `{kind}`")
        self.take("=")
        return FlatForm(kind, names, tuple(params), self.block())

    def block(self) -> Block:
        stmts = []
        while True:
            word = self.peek_word()
            if word == "in":
                self.word()
                return Block(tuple(stmts), self.atoms())
            if word == "assert":
                self.word()
                ok = self.atom()
                kind = self.word()
                stmts.append(Stmt((), Assert(ok, kind, self.string())))
            elif word == "let":
                self.word()
                stmts.append(self.stmt())
            else:
                raise self.error("expected `let`, `assert` or `in`")

    def string(self) -> str:
        self.take('"')
        out = []
        while self.pos < len(self.text) and self.text[self.pos] != '"':
            if self.text[self.pos] == "\\":
                self.pos += 1
            out.append(self.text[self.pos])
            self.pos += 1
        self.take('"')
        return "".join(out)

    def stmt(self) -> Stmt:
        if self.peek("("):
            self.take("(")
            targets = [] if self.peek(")") else [self.binding()]   # `()`: a kernel run only
            while self.peek(","):                                   # for its checks
                self.take(",")
                targets.append(self.binding())
            self.take(")")
        else:
            targets = [self.binding()]
        self.take("=")
        for t in targets:             # bound after the op, but SSA names are unique anyway
            self.reps.pop(t.name, None)
        op = self.op(targets)
        for t in targets:
            self.reps[t.name] = t.rep
        return Stmt(tuple(targets), op)

    def op(self, targets: list[FVar]) -> Op:
        word = self.word()
        if word == "scalar":
            return Scalar(self.fn())
        if word == "literal":
            self.skip()
            start = self.pos
            if self.peek("["):
                self.balanced("[", "]")
            elif self.peek("("):
                self.balanced("(", ")")
            else:
                self.atom()
            return Literal(parse_value(self.text[start:self.pos], targets[0].rep),
                           targets[0].rep)
        if word == "project":
            index = int(self.word_or_number())
            tup = self.atom()
            return Project(tup, index)  # type: ignore[arg-type]
        if word == "if":
            cond = self.atom()
            self.keyword("then")
            then = self.block()
            self.keyword("else")
            return If(cond, then, self.block())
        if word == "loop":
            return self.loop()
        if word == "seq_loop":
            return self.seq_loop()
        if word == "kernel":
            name, kind = self.word(), self.word()
            self.take("[")
            lines = []
            while not self.peek("]"):
                lines.append(int(self.word_or_number()))
            self.take("]")
            self.keyword("do")
            return Kernel(name, kind, self.block(), tuple(lines))
        if word in _BY_KEYWORD:
            cls, fields = _BY_KEYWORD[word]
            values = []
            for name in fields:
                if name.startswith("*"):
                    values.append(tuple(self.rest_atoms()))
                elif name in ("fn", "op"):
                    values.append(self.fn())
                else:
                    values.append(self.field())
            return cls(*values)
        if word.startswith("seg_"):
            fns = self.fns()
            offsets, values_ = self.atom(), self.atom()
            return SegLibrary(word[4:], offsets, values_, tuple(self.rest_atoms()), fns)
        fns = self.fns()
        return Library(word, tuple(self.rest_atoms()), fns)

    def word_or_number(self) -> str:
        self.skip()
        m = re.compile(r"\d+").match(self.text, self.pos)
        if not m:
            raise self.error("expected a number")
        self.pos = m.end()
        return m.group(0)

    def fns(self) -> tuple[ScalarFn, ...]:
        out = []
        while self.peek("(\\"):
            out.append(self.fn())
        return tuple(out)

    def rest_atoms(self) -> list[Atom]:
        """Atoms up to the end of the line."""
        out = []
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in " \t":
                self.pos += 1
            if self.pos >= len(self.text) or self.text[self.pos] in "\n\r":
                return out
            out.append(self.atom())

    def bindings(self) -> list[FVar]:
        """`(name: rep, ...)`, possibly empty."""
        self.take("(")
        out = [] if self.peek(")") else [self.binding()]
        while self.peek(","):
            self.take(",")
            out.append(self.binding())
        self.take(")")
        return out

    def state(self) -> tuple[list[FVar], tuple[Atom, ...]]:
        """A loop's `(p: rep, ...) = (init, ...)`: its parameters are bound only after their
        initial values, which are read outside the loop (the caller binds them)."""
        params = self.bindings()
        self.take("=")
        for p in params:
            self.reps.pop(p.name, None)
        return params, self.atoms()

    def loop(self) -> Loop:
        params, init = self.state()
        for p in params:
            self.reps[p.name] = p.rep
        word = self.word()
        if word == "while":
            cond = self.block()
            self.keyword("do")
            return Loop(tuple(params), init, self.block(), cond=cond)
        if word != "for":
            raise self.error("expected `for` or `while`")
        index_name = self.word()
        index = None if index_name == "_" else FVar(index_name, ScalarRep("i64"))
        self.take("<")
        bound = self.atom()
        if index is not None:
            self.reps[index.name] = index.rep
        self.keyword("do")
        return Loop(tuple(params), init, self.block(), bound=bound, index=index)

    def seq_loop(self) -> SeqLoop:
        params, init = self.state()
        self.keyword("of")
        if self.peek_word() == "_":
            self.word()
            length = None
        else:
            length = self.atom()
        for p in params:
            self.reps[p.name] = p.rep
        self.keyword("by")
        start = FVar(self.word(), ScalarRep("i64"))
        count = FVar(self.word(), ScalarRep("i64"))
        self.reps[start.name] = start.rep
        self.reps[count.name] = count.rep
        streams = []
        while self.peek_word() == "stream":
            self.keyword("stream")
            chunk = self.binding()
            self.take("<-")
            streams.append((self.atom(), chunk))
        self.keyword("do")
        body = self.block()
        right: list[FVar] = []
        combine = None
        if self.peek_word() == "combine":
            self.keyword("combine")
            right = self.bindings()
            self.keyword("do")
            combine = self.block()
        return SeqLoop(tuple(params), init, length, start, count, tuple(streams), body,
                       tuple(right), combine)


def parse_flat(text: str, globals: dict[str, Rep] | None = None) -> FlatProgram:
    """The flat program `print_flat` printed. `globals` are the reps of the variables the
    forms read without binding them (earlier globals); a global let's names are added as
    their forms are read."""
    parser = _Parser(text)
    parser.reps.update(globals or {})
    forms = []
    while not parser.at_end():
        form = parser.form()
        forms.append(form)
        if form.kind == "let":
            for name, atom in zip(form.names, form.body.result):
                rep = atom.rep if isinstance(atom, FVar) else ScalarRep(atom.elem)
                parser.reps[name] = rep
    return FlatProgram(tuple(forms))


from .flat_verify import verify  # noqa: E402  (re-exported: the checks live there)

__all__ = ["print_flat", "print_form", "print_block", "print_stmt", "print_op", "print_atom",
           "print_fn", "print_value", "parse_flat", "parse_value", "make_fn", "verify",
           "FlatSyntaxError", "KEYWORDS"]
