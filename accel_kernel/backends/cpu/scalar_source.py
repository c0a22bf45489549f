"""Scalar code for the `cpu` back end: a `ScalarFn` (a scalar lambda in core accel) as the
Python source of one numba function, to be called element by element from generated kernel
loops (`for i in prange(n): out[i] = f_12(x[i], y[i], free_k, err)`).

    scalar_function(fn, name, arg_types, free, errors) -> (source, result type)
    free_parameters(free) -> [FreeParam]      # the free parameters, in order, and what to pass

The source is `def NAME(<params>, <free params>, err):` without a decorator: the caller adds
`@njit` and puts the functions of one kernel in a module that does `import numpy as np` and
`from numba import njit`. Parameters, in order:

- one per element of `arg_types` (an accel `ScalarType`: "bool", "i32", "i64", "f32", "f64",
  or a tuple of them, passed as a Python tuple), named after the lambda's parameter;
- the free variables (`free`, in its order) split into leaves: a scalar or a `Regular`
  array is one parameter; a `TupleRep` gives one per part (`<name>_0`, `<name>_1`, ...); a
  `Segmented` array gives `<name>_offsets` and `<name>_values` (recursively for deeper
  nesting). `free_parameters` lists them with the path from the free value to each leaf;
- `err`, an int64 array of length 3 (`errors.py`): a failing check writes its site's code
  into `err[0]` (details in `err[1]`, `err[2]`) and the function returns a dummy value of
  its result type (zeros, False); the caller raises `errors.error(err)` after the kernel.

Semantics are those of `backends/numpy/scalar_code.py` (and the interpreter) for one lane:
`if` runs one branch, `&&`/`||` short-circuit, loops run in order, errors come at the span
of the node that fails, with the numpy target's kinds and messages. Operators and builtins
are in `scalar_arith.py`. Function values (lambdas, operator sections, partial
applications) exist only while translating: every application is beta-reduced. What cannot
be translated raises `NotImplementedError("cpu: ... is not built yet")`; an ill-typed
function (a compiler bug) raises `ValueError`.

Readability: the accel source of the function is a comment on top, accel variables keep
their names (a fresh suffix where a name is bound again), one statement per line.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, Union

from ...ir.flat import OFFSETS, Regular, Rep, ScalarFn, ScalarRep, Segmented, TupleRep
from ...lang import ast
from ...lang.printer import print_expr
from ...lang.source import Span
from . import scalar_arith as arith
from .errors import ErrorSite, ErrorTable
from .python_code import (ATOM, NOT, RESERVED, SUM, TERNARY, FunctionWriter, Val, infix,
                          operand, python_name)

__all__ = ["ErrorSite", "ErrorTable", "FreeParam", "ScalarType", "free_parameters",
           "scalar_function"]

ScalarType = Union[str, tuple["ScalarType", ...]]


# ---------------------------------------------------------------- values while translating


@dataclass(frozen=True)
class RegularArray:
    name: str                   # the parameter holding the ndarray
    elem: str
    rank: int


@dataclass(frozen=True)
class SegmentedArray:
    offsets: str                # the parameter holding the offsets
    values: Any                 # RegularArray, SegmentedArray or a tuple of them


@dataclass(frozen=True, eq=False)
class Closure:
    params: tuple[ast.Pattern, ...]
    body: ast.Expr
    env: dict


@dataclass(frozen=True, eq=False)
class Builtin:
    """A scalar function (`min`), `length`, or with `operator` a binary operator (`(+)`)."""
    name: str
    arity: int
    operator: bool = False
    flipped: bool = False
    span: Span | None = None


@dataclass(frozen=True, eq=False)
class Partial:
    fn: Any
    args: tuple


def _is_array(value: Any) -> bool:
    while isinstance(value, tuple) and value:
        value = value[0]
    return isinstance(value, (RegularArray, SegmentedArray))


def _is_data(value: Any) -> bool:
    """A scalar or a tuple of scalars: what generated code can hold in variables."""
    if isinstance(value, tuple):
        return all(_is_data(v) for v in value)
    return isinstance(value, Val)


def _type_of(value: Any) -> ScalarType:
    if isinstance(value, tuple):
        return tuple(_type_of(v) for v in value)
    return value.type


def _code_of(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_code_of(v) for v in value) + ")"
    return value.code


def _dummy(t: ScalarType) -> str:
    if isinstance(t, tuple):
        return "(" + ", ".join(_dummy(p) for p in t) + ")"
    return arith.zero_code(t)


def _leaves(value: Any) -> list[Val]:
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _not_built(what: str) -> NotImplementedError:
    return NotImplementedError(f"cpu: {what} in scalar code is not built yet")


# ---------------------------------------------------------------- free parameters


@dataclass(frozen=True)
class FreeParam:
    """A parameter of the generated function for (part of) a free variable: `path` leads
    from the variable's flat value to what to pass (`"offsets"`/`"values"` of a `Segs`, an
    int for a tuple's part); `rep` is the passed value's rep (a scalar or a Regular array)."""
    name: str
    var: str
    path: tuple[str | int, ...]
    rep: Rep


def free_parameters(free: dict[str, Rep]) -> list[FreeParam]:
    """The free parameters of a generated function, in order (after the arguments)."""
    params: list[FreeParam] = []
    used = set(RESERVED)

    def add(var: str, rep: Rep, path: tuple, base: str) -> None:
        if isinstance(rep, TupleRep):
            for k, part in enumerate(rep.parts):
                add(var, part, (*path, k), f"{base}_{k}")
        elif isinstance(rep, Segmented):
            add(var, OFFSETS, (*path, "offsets"), f"{base}_offsets")
            add(var, rep.inner, (*path, "values"), f"{base}_values")
        else:
            name, k = python_name(base), 0
            while name in used:
                k += 1
                name = f"{python_name(base)}_{k}"
            used.add(name)
            params.append(FreeParam(name, var, path, rep))

    for var, rep in free.items():
        add(var, rep, (), var)
    return params


def _free_values(free: dict[str, Rep], params: list[FreeParam]) -> dict[str, Any]:
    """The translation-time value of every free variable, built on its parameters."""
    names = {(p.var, p.path): p.name for p in params}

    def build(var: str, rep: Rep, path: tuple) -> Any:
        if isinstance(rep, TupleRep):
            return tuple(build(var, part, (*path, k)) for k, part in enumerate(rep.parts))
        if isinstance(rep, Segmented):
            return SegmentedArray(names[(var, (*path, "offsets"))],
                                  build(var, rep.inner, (*path, "values")))
        name = names[(var, path)]
        if isinstance(rep, ScalarRep):
            return Val(name, rep.elem, ATOM, True)
        assert isinstance(rep, Regular)
        return RegularArray(name, rep.elem, rep.rank)

    return {var: build(var, rep, ()) for var, rep in free.items()}


# ---------------------------------------------------------------- the entry point


def scalar_function(fn: ScalarFn, name: str, arg_types: list[ScalarType],
                    free: dict[str, Rep], errors: ErrorTable) -> tuple[str, ScalarType]:
    """The source of `def NAME(args..., free params..., err)` computing `fn`, and the
    accel type of its result."""
    if len(arg_types) < len(fn.params):
        raise ValueError(f"{name}: {len(fn.params)} parameters but {len(arg_types)} "
                         f"argument types")
    params = free_parameters(free)
    writer = FunctionWriter(errors, {p.name for p in params} | {name})
    translator = _Translator(writer, _free_values(free, params))
    env: dict[str, Any] = {}
    arg_names: list[str] = []
    extra: list[Any] = []
    for k, arg_type in enumerate(arg_types):
        pattern = fn.params[k] if k < len(fn.params) else None
        arg_name = writer.fresh(pattern.name if isinstance(pattern, ast.PVar) else f"p{k}")
        arg_names.append(arg_name)
        value = _param_value(arg_name, arg_type)
        if pattern is None:
            extra.append(value)
        else:       # a tuple pattern gets a variable per component
            translator.bind(pattern, value, env, force=isinstance(pattern, ast.PTuple))
    result = translator.expr(fn.body, env, "result")
    if extra:
        result = translator.call(result, extra, fn.body.span)
    if not _is_data(result):
        raise _not_built("a result that is a function or an array")
    writer.emit(f"return {_code_of(result)}")
    result_type = _type_of(result)
    header = f"def {name}({', '.join([*arg_names, *(p.name for p in params), 'err'])}):"
    lambda_text = print_expr(ast.Lambda(fn.params, fn.body) if fn.params else fn.body)
    comment = ["    # " + line for line in textwrap.wrap(lambda_text, 92,
                                                         subsequent_indent="  ")]
    lines = [header, *comment, *writer.render(_dummy(result_type))]
    return "\n".join(lines) + "\n", result_type


def _param_value(name: str, t: ScalarType, path: str = "") -> Any:
    if isinstance(t, tuple):
        return tuple(_param_value(name, part, f"{path}[{k}]") for k, part in enumerate(t))
    return Val(name + path, t, ATOM, True)


# ---------------------------------------------------------------- the translator


class _Translator:
    """Translates core expressions into statements of `writer`; gives translation-time
    values (`Val`s, tuples, functions, free arrays). `hint` names the variables made for a
    value after the accel variable it is bound to."""

    def __init__(self, writer: FunctionWriter, free: dict[str, Any]):
        self.w = writer
        self.free = free

    def expr(self, node: ast.Expr, env: dict, hint: str = "value") -> Any:
        method = getattr(self, "_" + type(node).__name__.lower(), None)
        if method is None:
            raise _not_built(f"`{type(node).__name__}` ({print_expr(node)})")
        return method(node, env, hint)

    # ------------------------------------------------------------------ binding

    def bind(self, pattern: ast.Pattern, value: Any, env: dict, force: bool = False) -> dict:
        """Binds a pattern in `env` (in place). A computed scalar gets a variable named
        after the accel one; with `force` every scalar does."""
        if isinstance(pattern, ast.PVar):
            env[pattern.name] = self.settle(value, pattern.name, force)
        elif isinstance(pattern, ast.PTuple):
            if not isinstance(value, tuple) or len(value) != len(pattern.elems):
                raise ValueError("a tuple pattern bound to a value that is not a tuple")
            for sub, part in zip(pattern.elems, value):
                self.bind(sub, part, env, force)
        return env

    def settle(self, value: Any, base: str, force: bool = False) -> Any:
        """`value` with every computed scalar in it bound to a variable."""
        if isinstance(value, tuple):
            return tuple(self.settle(v, f"{base}_{k}", force) for k, v in enumerate(value))
        if isinstance(value, Val) and (force or not value.simple):
            return self.w.bind(value, base)
        return value

    # ------------------------------------------------------------------ leaves

    def _lit(self, node: ast.Lit, env: dict, hint: str) -> Any:
        return arith.literal(node.value, node.type)

    def _var(self, node: ast.Var, env: dict, hint: str = "") -> Any:
        name = node.name
        if name in env:
            return env[name]
        if name in self.free:
            return self.free[name]
        if name in arith.CONSTANTS:
            return arith.CONSTANTS[name]
        if name in arith.FUNCTION_ARITY:
            return Builtin(name, arith.FUNCTION_ARITY[name], span=node.span)
        if name == "length":
            return Builtin(name, 1, span=node.span)
        if name in arith.TYPE_CONSTANTS:
            raise ValueError(f"`{name}` must come resolved (flatten resolves type constants)")
        raise ValueError(f"`{name}` is not bound in scalar code (not a parameter and not in "
                         f"`free`)")

    def _ascribe(self, node: ast.Ascribe, env: dict, hint: str) -> Any:
        if (isinstance(node.expr, ast.Var) and node.expr.name in arith.TYPE_CONSTANTS
                and isinstance(node.type, ast.TScalar) and node.expr.name not in env):
            return arith.type_constant(node.expr.name, node.type.name)
        return self.expr(node.expr, env, hint)

    def _tuplelit(self, node: ast.TupleLit, env: dict, hint: str) -> Any:
        return tuple(self.expr(e, env, f"{hint}_{k}") for k, e in enumerate(node.elems))

    def _project(self, node: ast.Project, env: dict, hint: str) -> Any:
        value = self.expr(node.expr, env, hint)
        if not isinstance(value, tuple):
            raise ValueError(f"projection .{node.index} of a value that is not a tuple")
        return value[node.index]

    # ------------------------------------------------------------------ operators

    def _binop(self, node: ast.BinOp, env: dict, hint: str) -> Any:
        left = self.expr(node.left, env)
        if node.op in ("&&", "||"):
            return self._short_circuit(node, left, env, hint)
        right = self.expr(node.right, env)
        return self.binary(node.op, left, right, node.span)

    def binary(self, op: str, left: Any, right: Any, span: Span | None) -> Val:
        if not (isinstance(left, Val) and isinstance(right, Val)):
            raise _not_built(f"operator {op} on tuples, functions or arrays")
        return arith.binary(self.w, op, left, right, span)

    def _short_circuit(self, node: ast.BinOp, left: Val, env: dict, hint: str) -> Val:
        with self.w.indented(), self.w.capture() as right_lines:
            right = self.expr(node.right, env)
        python = "and" if node.op == "&&" else "or"
        if not right_lines:
            return infix(left, python, right, "bool")
        result = self.w.bind(left, hint if hint != "value" else "cond")
        self.w.emit(f"if {result.code}:" if python == "and" else f"if not {result.code}:")
        self.w.splice(right_lines)
        with self.w.indented():
            self.w.emit(f"{result.code} = {right.code}")
        return result

    def _unop(self, node: ast.UnOp, env: dict, hint: str) -> Any:
        value = self.expr(node.operand, env)
        if not isinstance(value, Val):
            raise ValueError(f"unary {node.op} of a value that is not a scalar")
        return arith.unary(node.op, value)

    def _opfunc(self, node: ast.OpFunc, env: dict, hint: str) -> Any:
        if node.op.isidentifier():
            return self._var(ast.Var(node.op, span=node.span), env)
        return Builtin(node.op, 2, operator=True, span=node.span)

    def _leftsection(self, node: ast.LeftSection, env: dict, hint: str) -> Any:
        return Partial(Builtin(node.op, 2, operator=True, span=node.span),
                       (self.expr(node.left, env),))

    def _rightsection(self, node: ast.RightSection, env: dict, hint: str) -> Any:
        return Partial(Builtin(node.op, 2, operator=True, flipped=True, span=node.span),
                       (self.expr(node.right, env),))

    # ------------------------------------------------------------------ functions

    def _lambda(self, node: ast.Lambda, env: dict, hint: str) -> Any:
        return Closure(node.params, node.body, env)

    def _apply(self, node: ast.Apply, env: dict, hint: str) -> Any:
        fn = self.expr(node.fn, env)
        args = [self.expr(a, env) for a in node.args]
        return self.call(fn, args, node.span, hint)

    def call(self, fn: Any, args: list, span: Span | None, hint: str = "value") -> Any:
        """Curried application, as the numpy target's `call`."""
        while args:
            if isinstance(fn, Partial):
                fn, args = fn.fn, [*fn.args, *args]
            if isinstance(fn, Closure):
                arity = len(fn.params)
            elif isinstance(fn, Builtin):
                arity = fn.arity
            else:
                raise ValueError("application of a value that is not a function")
            if len(args) < arity:
                return Partial(fn, tuple(args))
            fn, args = self._invoke(fn, args[:arity], span, hint), args[arity:]
        return fn

    def _invoke(self, fn: Closure | Builtin, args: list, span: Span | None,
                hint: str) -> Any:
        if isinstance(fn, Closure):           # beta reduction
            env = dict(fn.env)
            for param, arg in zip(fn.params, args):
                self.bind(param, arg, env)
            return self.expr(fn.body, env, hint)
        if fn.operator:
            left, right = (args[1], args[0]) if fn.flipped else (args[0], args[1])
            return self.binary(fn.name, left, right, fn.span or span)
        if fn.name == "length":
            return self._length(args[0])
        if fn.name == "select" and isinstance(args[1], tuple):
            cond = self.w.atom(args[0], "cond")     # both sides are evaluated already
            return self._select(cond, args[1], args[2])
        if not all(isinstance(a, Val) for a in args):
            raise _not_built(f"`{fn.name}` of tuples, functions or arrays")
        return arith.function(self.w, fn.name, args)

    def _select(self, cond: Val, a: Any, b: Any) -> Any:
        if isinstance(a, tuple):
            return tuple(self._select(cond, x, y) for x, y in zip(a, b))
        return arith.function(self.w, "select", [cond, a, b])

    # ------------------------------------------------------------------ let and if

    def _let(self, node: ast.Let, env: dict, hint: str) -> Any:
        name = node.pattern.name if isinstance(node.pattern, ast.PVar) else "value"
        value = self.expr(node.value, env, name)
        return self.expr(node.body, self.bind(node.pattern, value, dict(env)), hint)

    def _if(self, node: ast.If, env: dict, hint: str) -> Any:
        cond = self.expr(node.cond, env, "cond")
        if not (isinstance(cond, Val) and cond.type == "bool"):
            raise ValueError("the condition of an `if` is not a bool")
        with self.w.indented():
            with self.w.capture() as then_lines:
                then = self.expr(node.then, env, hint)
            with self.w.capture() as else_lines:
                else_ = self.expr(node.else_, env, hint)
        if not (_is_data(then) and _is_data(else_)):
            raise _not_built("an `if` that chooses a function or an array")
        if _type_of(then) != _type_of(else_):
            raise ValueError(f"if branches of types {_type_of(then)} and {_type_of(else_)}")
        if not then_lines and not else_lines:
            if isinstance(then, tuple):
                cond = self.w.atom(cond, "cond")
            return self._choose(cond, then, else_)
        result = self._fresh_like(then, hint)
        self.w.emit(f"if {cond.code}:")
        self.w.splice(then_lines)
        with self.w.indented():
            self._assign(result, then)
        self.w.emit("else:")
        self.w.splice(else_lines)
        with self.w.indented():
            self._assign(result, else_)
        return result

    def _choose(self, cond: Val, then: Any, else_: Any) -> Any:
        if isinstance(then, tuple):
            return tuple(self._choose(cond, a, b) for a, b in zip(then, else_))
        return Val(f"{operand(then, TERNARY, True)} if {operand(cond, TERNARY, True)} "
                   f"else {operand(else_, TERNARY)}", then.type, TERNARY)

    def _fresh_like(self, value: Any, base: str) -> Any:
        """New variables with the structure and types of `value`."""
        if isinstance(value, tuple):
            return tuple(self._fresh_like(v, f"{base}_{k}") for k, v in enumerate(value))
        return Val(self.w.fresh(base), value.type, ATOM, True)

    def _assign(self, targets: Any, value: Any) -> None:
        """`targets = value` leaf by leaf, all at once (`a, b = b, a` swaps)."""
        pairs = [(t, v) for t, v in zip(_leaves(targets), _leaves(value)) if t.code != v.code]
        if len(pairs) == 1:
            self.w.emit(f"{pairs[0][0].code} = {pairs[0][1].code}")
        elif pairs:
            self.w.emit(f"{', '.join(t.code for t, _ in pairs)} = "
                        f"{', '.join(v.code for _, v in pairs)}")

    # ------------------------------------------------------------------ loops

    def _loop(self, node: ast.Loop, env: dict, hint: str) -> Any:
        init = self.expr(node.init, env, "init")
        if not _is_data(init):
            raise _not_built("a loop whose state holds a function or an array")
        state = self._state(node.pattern, init, hint)
        self._assign(state, init)
        if isinstance(node.pattern, ast.PVar):
            hint = node.pattern.name        # the next state: `acc_1`, then `acc = acc_1`
        form = node.form
        if isinstance(form, ast.ForRange):
            bound = self.expr(form.bound, env, "bound")
            if not (isinstance(bound, Val) and bound.type in arith.INTS):
                raise ValueError("the bound of `for i < n` is not an integer")
            index = self.w.fresh(form.var)
            self.w.emit(f"for {index} in range({bound.code}):")
            with self.w.indented():
                scope = self.bind(node.pattern, state, dict(env))
                scope[form.var] = Val(index, bound.type, ATOM, True)
                self._step(node, state, scope, hint)
        elif isinstance(form, ast.While):
            self._while(node, form, state, env, hint)
        else:
            self._for_in(node, form, state, env, hint)
        return state

    def _state(self, pattern: ast.Pattern, init: Any, hint: str) -> Any:
        """The loop's state variables, named after the pattern's variables."""
        if isinstance(pattern, ast.PTuple) and isinstance(init, tuple):
            return tuple(self._state(p, v, hint) for p, v in zip(pattern.elems, init))
        base = pattern.name if isinstance(pattern, ast.PVar) else hint
        return self._fresh_like(init, base)

    def _step(self, node: ast.Loop, state: Any, scope: dict, hint: str) -> None:
        """The loop body: the next state from `scope`."""
        start = len(self.w.lines)
        new = self.expr(node.body, scope, hint)
        if not _is_data(new) or _type_of(new) != _type_of(state):
            raise ValueError("a loop body gives a value of another type than its state")
        self._assign(state, new)
        if len(self.w.lines) == start:
            self.w.emit("pass")

    def _while(self, node: ast.Loop, form: ast.While, state: Any, env: dict,
               hint: str) -> None:
        scope = self.bind(node.pattern, state, dict(env))
        with self.w.indented(), self.w.capture() as cond_lines:
            cond = self.expr(form.cond, scope, "going")
        if not (isinstance(cond, Val) and cond.type == "bool"):
            raise ValueError("the condition of `while` is not a bool")
        if cond_lines:
            self.w.emit("while True:")
            self.w.splice(cond_lines)
            with self.w.indented():
                self.w.emit(f"if not {operand(cond, NOT)}:")
                with self.w.indented():
                    self.w.emit("break")
        else:
            self.w.emit(f"while {cond.code}:")
        with self.w.indented():
            self._step(node, state, scope, hint)

    def _for_in(self, node: ast.Loop, form: ast.ForIn, state: Any, env: dict,
                hint: str) -> None:
        array = self.expr(form.array, env, "array")
        leaves = _leaves(array) if isinstance(array, tuple) else [array]
        if not all(isinstance(a, RegularArray) and a.rank == 1 for a in leaves):
            raise _not_built("`for x in xs` over anything but a free array of scalars")
        length = self._length(array)
        position = self.w.fresh("k")
        self.w.emit(f"for {position} in range({length.code}):")
        with self.w.indented():
            element = self._elements(array, position)
            scope = self.bind(node.pattern, state, dict(env))
            self.bind(form.pattern, element, scope, force=True)
            self._step(node, state, scope, hint)

    def _elements(self, array: Any, position: str) -> Any:
        if isinstance(array, tuple):
            return tuple(self._elements(a, position) for a in array)
        return Val(f"{array.name}[{position}]", array.elem, ATOM, True)

    # ------------------------------------------------------------------ free arrays

    def _length(self, array: Any) -> Val:
        while isinstance(array, tuple):
            array = array[0]
        if isinstance(array, RegularArray):
            return Val(f"{array.name}.shape[0]", "i64", ATOM, True)
        if isinstance(array, SegmentedArray):
            return Val(f"{array.offsets}.shape[0] - 1", "i64", SUM)
        raise _not_built("`length` of something that is not a free array")

    def _index(self, node: ast.Index, env: dict, hint: str) -> Any:
        chain: list[ast.Index] = []
        base: ast.Expr = node
        while isinstance(base, ast.Index):
            chain.append(base)
            base = base.expr
        chain.reverse()
        array = self.expr(base, env) if not isinstance(base, ast.Var) else self._var(base, env)
        if not _is_array(array):
            raise _not_built("indexing something that is not a free array")
        # all the indices first, then the checks, as the numpy target
        indices = [self.w.atom(self._scalar(self.expr(level.index, env, "i"), "an index"), "i")
                   for level in chain]
        return self._index_into(array, indices, [level.span for level in chain])

    def _scalar(self, value: Any, what: str) -> Val:
        if not isinstance(value, Val):
            raise ValueError(f"{what} that is not a scalar")
        return value

    def _index_into(self, array: Any, indices: list[Val], spans: list,
                    checked: int = 0) -> Any:
        """`array[indices...]` with bounds checks (the first `checked` indices need none)."""
        if isinstance(array, tuple):
            return tuple(self._index_into(a, indices, spans, checked) for a in array)
        if isinstance(array, SegmentedArray):
            if len(indices) < 2:
                raise _not_built("a row of an irregular array")
            segment, position = indices[0], indices[1]
            if not checked:
                self._check_index(segment, Val(f"{array.offsets}.shape[0] - 1", "i64", SUM),
                                  spans[0])
            start = self.w.bind(Val(f"{array.offsets}[{segment.code}]", "i64"), "start")
            row_length = self.w.bind(
                Val(f"{array.offsets}[{segment.code} + 1] - {start.code}", "i64", SUM),
                "row_length")
            self._check_index(position, row_length, spans[1])
            flat = self.w.bind(infix(start, "+", position, "i64"), "flat")
            # within the values by construction: no check for the first index there
            return self._index_into(array.values, [flat, *indices[2:]], spans[1:], 1)
        if len(indices) != array.rank:
            raise _not_built(f"a row of a rank-{array.rank} array ({len(indices)} "
                             f"ind{'ex' if len(indices) == 1 else 'ices'})")
        for k, (index, span) in enumerate(zip(indices, spans)):
            if k >= checked:
                self._check_index(index, Val(f"{array.name}.shape[{k}]", "i64", ATOM, True),
                                  span)
        subscript = ", ".join(i.code for i in indices)
        return Val(f"{array.name}[{subscript}]", array.elem, ATOM, True)

    def _check_index(self, index: Val, length: Val, span: Span | None) -> None:
        self.w.check(f"{index.code} < 0 or {index.code} >= {length.code}", "IndexError",
                     "index {0} out of bounds for array of length {1}", span,
                     [index.code, length.code])
