"""The top-level forms: each `def`, global `let` and expression of the core program becomes a
`FlatForm` whose block is flattened outside every map.

- A def's parameters get the reps of their declared types and regularity facts (PARAM):
  `[n][m]t` is `[r2]t`, `[][]t` is `[seg][r1]t`, a tuple a tuple of reps. Its size
  annotations are checked in its block. A def that is generic or takes or gives functions has
  no flat form (DEF-INLINED): it is flattened where it is used, inlined by `desugar`.
- Globals of earlier forms and cells are read as variables named like the globals; their reps
  come from the flat forms that bound them, or (earlier cells) from their types.
"""
from __future__ import annotations

from typing import Any

from ...ir.flat import (Atom, Block, FlatForm, FlatProgram, FVar, MakeTuple, Rep, TupleRep)
from ...lang import ast
from ...ir.flat_printer import print_stmt
from ...lang import types as T
from ..base import PassContext
from .arrays import ArrayRules
from .context import Builder, Env, FunVal, Leaf
from .control import ControlRules
from .expr import Expressions
from .levels import LevelOps
from .library import LibraryRules
from .prune import prune
from .reps import rep_of_type
from .scalar import ScalarCode
from .sequences import SequenceRules
from .wholearray import WholeArrayRules


def _has(t: T.Type | None, kinds: tuple) -> bool:
    if t is None:
        return False
    if isinstance(t, kinds):
        return True
    if isinstance(t, (T.Array, T.Seq)):
        return _has(t.elem, kinds)
    if isinstance(t, T.Tuple):
        return any(_has(e, kinds) for e in t.elems)
    if isinstance(t, T.Func):
        return _has(t.param, kinds) or _has(t.result, kinds)
    return False


class Flattener(Expressions, ScalarCode, LevelOps, ArrayRules, LibraryRules, WholeArrayRules,
                ControlRules, SequenceRules):
    def __init__(self, ctx: PassContext, program: ast.Program):
        self.ctx = ctx
        names = {n for form in program.forms for node in ast.walk(form)
                 for n in _names(node)}
        names |= set(ctx.env.schemes)
        self.b = Builder(ctx, names)
        self.definitions = dict(ctx.definitions)
        self.definitions.update({f.name: f for f in program.forms if isinstance(f, ast.Def)})
        self.global_reps: dict[str, Rep] = {}
        for name, scheme in ctx.env.schemes.items():
            t = scheme.type
            if name in ctx.definitions or scheme.vars or _has(t, (T.Func, T.TypeVar)):
                continue
            self.global_reps[name] = ctx.options.global_reps.get(name) or rep_of_type(t)

    # ------------------------------------------------------------------ the program
    def program(self, program: ast.Program) -> FlatProgram:
        forms = []
        for form in program.forms:
            flat = self.form(form)
            if flat is not None:
                forms.append(flat)
        return FlatProgram(tuple(forms))

    def _globals(self) -> Env:
        return Env({name: Leaf(FVar(name, rep)) for name, rep in self.global_reps.items()})

    def form(self, form: ast.TopForm) -> FlatForm | None:
        self.b.frame.stmts.clear()
        self.b.frame.cache.clear()
        env = self._globals()
        if isinstance(form, ast.Def):
            return self.def_(form, env)
        if isinstance(form, ast.GlobalLet):
            value = self.arg(form.value, env)
            env = self.bind_pattern(form.pattern, value, env)
            names = tuple(ast.pattern_names(form.pattern))
            atoms = [self.result_atom(env.scope[n], form) for n in names]
            for name, atom in zip(names, atoms):
                self.global_reps[name] = atom.rep if isinstance(atom, FVar) else \
                    rep_of_type(T.Scalar(atom.elem))
            return FlatForm("let", names, (), self._block(atoms), span=form.span)
        assert isinstance(form, ast.TopExpr)
        value = self.flatten(form.expr, env)
        if isinstance(self.type_of(form.expr), T.Seq):     # shown: its elements, stacked
            value = self.as_seq(value, form.expr)
        return FlatForm("expr", (), (), self._block([self.result_atom(value, form)]),
                        span=form.span)

    def _block(self, atoms: list[Atom]) -> Block:
        """The form's statements, without those nothing reads (logged as `DEAD`)."""
        block, removed = prune(Block(tuple(self.b.frame.stmts), tuple(atoms)))
        self.b.frame.stmts.clear()
        if removed:
            self.ctx.log.forget({s.id for s in removed})
            text = "; ".join(print_stmt(s)[0].strip() for s in removed)
            with self.ctx.log.apply("DEAD", text, note="bound by a rule but read by nothing"
                                    ) as step:
                step.after = "(removed)"
        return block

    def def_(self, form: ast.Def, env: Env) -> FlatForm | None:
        t = self.type_of(form)
        param_types = [self.type_of(p) for p in form.params]
        if _has(t, (T.TypeVar,)) or any(_has(pt, (T.Func, T.TypeVar)) or pt is None
                                        for pt in param_types) \
                or _has(self.type_of(form.body), (T.Func, T.TypeVar)):
            with self.b.rule("DEF-INLINED", form, "a generic def, or one taking or giving "
                             "functions: flattened where it is used (desugar inlined it)"):
                pass
            return None
        params: list[FVar] = []
        with self.b.rule("PARAM", form, "parameters get the reps of their declared types"):
            for p, pt in zip(form.params, param_types):
                base = p.name if isinstance(p, ast.PVar) else "arg"
                var = FVar(self.b.fresh(base), self.rep_for(p, pt))
                params.append(var)
        for p, var in zip(form.params, params):
            value: Any = self.split(var, None) if isinstance(var.rep, TupleRep) else Leaf(var)
            env = self.bind_pattern(p, value, env)
        result = self.flatten(form.body, env)
        if form.result is not None and _sized(form.result):
            env = self.bind_pattern(ast.PWild(annot=form.result, span=form.span, id=form.id),
                                    result, env)
        return FlatForm("def", (form.name,), tuple(params),
                        self._block([self.result_atom(result, form)]), span=form.span)

    def result_atom(self, v: Any, node: ast.Node) -> Atom:
        v = self.settle(v)
        if isinstance(v, FunVal):
            raise NotImplementedError("flatten: a function as the value of a form")
        if isinstance(v, Leaf):
            return v.atom
        atoms = [self.result_atom(p, node) for p in v.parts]
        reps = tuple(a.rep if isinstance(a, FVar) else rep_of_type(T.Scalar(a.elem))
                     for a in atoms)
        with self.b.at_node(node):
            return self.b.emit(MakeTuple(tuple(atoms)), TupleRep(reps), "tup")


def _sized(t: ast.TypeExpr) -> bool:
    from ...ir.core import has_sizes
    return has_sizes(t)


def _names(node: ast.Node):
    if isinstance(node, (ast.Var, ast.PVar)):
        yield node.name
    elif isinstance(node, ast.ForRange):
        yield node.var
    elif isinstance(node, ast.Def):
        yield node.name


def flatten_program(program: ast.Program, ctx: PassContext) -> FlatProgram:
    return Flattener(ctx, program).program(program)
