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

The function is first lowered to the first-order scalar IR (`ir/scalar_lower.py`: lambdas,
sections and partial applications are reduced there, what cannot be made first-order raises
`NotImplementedError("cpu: ... is not built yet")`, an ill-typed function `ValueError`);
the translator here is a plain walk over that IR, and serves `cpu` and `cuda` (the `dialect`
argument: how each spells numpy's functions, `python_code.Dialect`).
Semantics are those of `backends/numpy/scalar_code.py` (and the interpreter) for one lane:
`if` runs one branch, `&&`/`||` short-circuit, loops run in order, errors come at the span
of the node that fails, with the numpy target's kinds and messages. Operators and builtins
are in `scalar_arith.py`.

Readability: the accel source of the function is a comment on top, accel variables keep
their names (a fresh suffix where a name is bound again), one statement per line.
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import Any

from ...ir import scalar as S
from ...ir.flat import OFFSETS, Regular, Rep, ScalarFn, ScalarRep, Segmented, TupleRep
from ...ir.scalar_index_facts import known_comparisons
from ...ir.scalar_lower import lower
from ...lang import ast
from ...lang.printer import print_expr
from ...lang.source import Span
from . import scalar_arith as arith
from .errors import ErrorSite, ErrorTable
from .python_code import (ATOM, NOT, NUMPY, RESERVED, SUM, TERNARY, Dialect, FunctionWriter,
                          Val, infix, operand, python_name)

__all__ = ["ErrorSite", "ErrorTable", "FreeParam", "ScalarType", "free_parameters",
           "scalar_function"]

ScalarType = S.ScalarType


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
                    free: dict[str, Rep], errors: ErrorTable,
                    dialect: Dialect = NUMPY) -> tuple[str, ScalarType]:
    """The source of `def NAME(args..., free params..., err)` computing `fn`, and the
    accel type of its result. `dialect`: how the target spells numpy's functions (`cpu`'s
    `np.sqrt`, `cuda`'s `math.sqrt`: `python_code.Dialect`)."""
    func = lower(fn, arg_types, free, dialect.name)
    params = free_parameters(free)
    writer = FunctionWriter(errors, {p.name for p in params} | {name}, dialect)
    translator = _Translator(writer, _free_values(free, params))
    env: dict[str, Any] = {}
    arg_names: list[str] = []
    for param in func.params:
        arg_name = writer.fresh(param.name)
        arg_names.append(arg_name)
        env[param.name] = _param_value(arg_name, param.type)
    result = translator.expr(func.body, env, "result")
    writer.emit(f"return {_code_of(result)}")
    header = f"def {name}({', '.join([*arg_names, *(p.name for p in params), 'err'])}):"
    lambda_text = print_expr(ast.Lambda(fn.params, fn.body) if fn.params else fn.body)
    comment = ["    # " + line for line in textwrap.wrap(lambda_text, 92,
                                                         subsequent_indent="  ")]
    lines = [header, *comment, *writer.render(_dummy(func.type))]
    return "\n".join(lines) + "\n", func.type


def _param_value(name: str, t: ScalarType, path: str = "") -> Any:
    if isinstance(t, tuple):
        return tuple(_param_value(name, part, f"{path}[{k}]") for k, part in enumerate(t))
    return Val(name + path, t, ATOM, True)


# ---------------------------------------------------------------- the translator


class _Translator:
    """Writes the statements of a scalar IR expression into `writer`; gives its value as
    `Val`s (a tuple of them for a tuple). `env` maps the IR's names to values; `hint` names
    the variables made for a value after the accel variable it is bound to."""

    def __init__(self, writer: FunctionWriter, free: dict[str, Any]):
        self.w = writer
        self.free = free
        # (index, length) of the `for index in range(length)` loops the code is inside: an
        # array read at that index of the dimension of that length needs no check
        self.in_range: set[tuple[str, str]] = set()

    def expr(self, node: S.Expr, env: dict, hint: str = "value") -> Any:
        return getattr(self, "_" + type(node).__name__.lower())(node, env, hint)

    # ------------------------------------------------------------------ binding

    def bind(self, target: S.Target, value: Any, env: dict, force: bool = False) -> dict:
        """Binds a target in `env` (in place). A computed scalar gets a variable named
        after the accel one; with `force` every scalar does."""
        if isinstance(target, tuple):
            for sub, part in zip(target, value):
                self.bind(sub, part, env, force)
        else:
            env[target] = self.settle(value, target, force)
        return env

    def settle(self, value: Any, base: str, force: bool = False) -> Any:
        """`value` with every computed scalar in it bound to a variable."""
        if isinstance(value, tuple):
            return tuple(self.settle(v, f"{base}_{k}", force) for k, v in enumerate(value))
        if force or not value.simple:
            return self.w.bind(value, base)
        return value

    # ------------------------------------------------------------------ leaves

    def _const(self, node: S.Const, env: dict, hint: str) -> Val:
        return arith.literal(node.value, node.type)

    def _var(self, node: S.Var, env: dict, hint: str) -> Any:
        return env[node.name] if node.name in env else self.free[node.name]

    def _free(self, node: S.Free, env: dict, hint: str) -> Val:
        return S.part(self.free[node.name], node.path)

    def _tuple(self, node: S.Tuple, env: dict, hint: str) -> tuple:
        return tuple(self.expr(e, env, f"{hint}_{k}") for k, e in enumerate(node.elems))

    def _project(self, node: S.Project, env: dict, hint: str) -> Any:
        return self.expr(node.expr, env, hint)[node.index]

    # ------------------------------------------------------------------ operators

    def _binary(self, node: S.Binary, env: dict, hint: str) -> Val:
        left = self.expr(node.left, env)
        if node.op in S.SHORT_CIRCUIT:
            return self._short_circuit(node, left, env, hint)
        right = self.expr(node.right, env)
        return arith.binary(self.w, node.op, left, right, node.span)

    def _short_circuit(self, node: S.Binary, left: Val, env: dict, hint: str) -> Val:
        with self.w.indented(), self.w.capture() as right_lines:
            right = self.expr(node.right, env)
        python = "and" if node.op == "&&" else "or"
        if not right_lines:
            if _eager(right.code):     # both sides computed, no branch: `&` / `|`
                return infix(left, "&" if python == "and" else "|", right, "bool")
            return infix(left, python, right, "bool")
        result = self.w.bind(left, hint if hint != "value" else "cond")
        self.w.emit(f"if {result.code}:" if python == "and" else f"if not {result.code}:")
        self.w.splice(right_lines)
        with self.w.indented():
            self.w.emit(f"{result.code} = {right.code}")
        return result

    def _unary(self, node: S.Unary, env: dict, hint: str) -> Val:
        return arith.unary(node.op, self.expr(node.operand, env))

    def _call(self, node: S.Call, env: dict, hint: str) -> Val:
        return arith.function(self.w, node.name, [self.expr(a, env) for a in node.args])

    # ------------------------------------------------------------------ let and if

    def _let(self, node: S.Let, env: dict, hint: str) -> Any:
        base = node.target if isinstance(node.target, str) else "value"
        value = self.expr(node.value, env, base)
        # a parameter's parts and a `for x in xs` element get a variable each, for reading
        force = (isinstance(node.target, tuple) and isinstance(node.value, S.Var)
                 or isinstance(node.value, S.Index) and not node.value.checked)
        return self.expr(node.body, self.bind(node.target, value, dict(env), force), hint)

    def _if(self, node: S.If, env: dict, hint: str) -> Any:
        cond = self.expr(node.cond, env, "cond")
        with self.w.indented():
            with self.w.capture() as then_lines:
                then = self.expr(node.then, env, hint)
            with self.w.capture() as else_lines:
                else_ = self.expr(node.else_, env, hint)
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

    def _loop(self, node: S.Loop, env: dict, hint: str) -> Any:
        node = known_comparisons(node)            # an argmin's `i2 < i1`: false
        init = self.expr(node.init, env, "init")
        state = self._state(node.state, init, hint)
        self._assign(state, init)
        if isinstance(node.state, str):
            hint = node.state         # the next state: `acc_1`, then `acc = acc_1`
        scope = self.bind(node.state, state, dict(env))
        form = node.form
        if isinstance(form, S.ForRange):
            bound = self.expr(form.bound, env, "bound")
            index = self.w.fresh(form.var)
            self.w.emit(f"for {index} in range({bound.code}):")
            fact = (index, bound.code)
            self.in_range.add(fact)
            with self.w.indented():
                scope[form.var] = Val(index, bound.type, ATOM, True)
                self._step(node, state, scope, hint)
            self.in_range.discard(fact)
        else:
            self._while(node, form, state, scope, hint)
        return state

    def _state(self, target: S.Target, init: Any, hint: str) -> Any:
        """The loop's state variables, named after the target's names."""
        if isinstance(target, tuple):
            return tuple(self._state(t, v, hint) for t, v in zip(target, init))
        return self._fresh_like(init, target)

    def _step(self, node: S.Loop, state: Any, scope: dict, hint: str) -> None:
        """The loop body: the next state from `scope`."""
        start = len(self.w.lines)
        self._assign(state, self.expr(node.body, scope, hint))
        if len(self.w.lines) == start:
            self.w.emit("pass")

    def _while(self, node: S.Loop, form: S.While, state: Any, scope: dict,
               hint: str) -> None:
        with self.w.indented(), self.w.capture() as cond_lines:
            cond = self.expr(form.cond, scope, "going")
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

    # ------------------------------------------------------------------ free arrays

    def _length(self, node: S.Length, env: dict, hint: str) -> Val:
        array = S.part(self.free[node.name], node.path)
        if isinstance(array, RegularArray):
            return Val(f"{array.name}.shape[0]", "i64", ATOM, True)
        return Val(f"{array.offsets}.shape[0] - 1", "i64", SUM)

    def _index(self, node: S.Index, env: dict, hint: str) -> Val:
        array = S.part(self.free[node.name], node.path)
        # all the indices first, then the checks, as the numpy target
        indices = [self.w.atom(self.expr(index, env, "i"), "i") for index in node.indices]
        return self._index_into(array, indices, list(node.spans),
                                0 if node.checked else len(indices))

    def _index_into(self, array: Any, indices: list[Val], spans: list,
                    checked: int = 0) -> Val:
        """`array[indices...]` with bounds checks (the first `checked` indices need none)."""
        if isinstance(array, SegmentedArray):
            segment, position = indices[0], indices[1]
            if not checked:
                self._check_index(segment, Val(f"{array.offsets}.shape[0] - 1", "i64", SUM),
                                  spans[0])
            start = self.w.bind(Val(f"{array.offsets}[{segment.code}]", "i64"), "start")
            row_length = self.w.bind(
                Val(f"{array.offsets}[{segment.code} + 1] - {start.code}", "i64", SUM),
                "row_length")
            if checked < 2:
                self._check_index(position, row_length, spans[1])
            flat = self.w.bind(infix(start, "+", position, "i64"), "flat")
            # within the values by construction: no check for the first index there
            return self._index_into(array.values, [flat, *indices[2:]], spans[1:],
                                    max(1, checked - 1))
        for k, (index, span) in enumerate(zip(indices, spans)):
            if k >= checked:
                self._check_index(index, Val(f"{array.name}.shape[{k}]", "i64", ATOM, True),
                                  span)
        subscript = ", ".join(i.code for i in indices)
        if self.w.dialect.unchecked_reads:      # every index is checked above (or in range)
            return Val(f"load({array.name}, {subscript})", array.elem, ATOM, True)
        return Val(f"{array.name}[{subscript}]", array.elem, ATOM, True)

    def _check_index(self, index: Val, length: Val, span: Span | None) -> None:
        if (index.code, length.code) in self.in_range:
            return                       # `for index in range(length)`: in bounds
        self.w.check(f"{index.code} < 0 or {index.code} >= {length.code}", "IndexError",
                     "index {0} out of bounds for array of length {1}", span,
                     [index.code, length.code])


_CALL = re.compile(r"([\w.]+)\(")
_CASTS = frozenset({"np.int8", "np.int16", "np.int32", "np.int64", "np.uint8", "np.uint16",
                    "np.uint32", "np.uint64", "np.float32", "np.float64", "np.bool_"})


def _eager(code: str) -> bool:
    """Whether the right side of `&&` / `||` can be computed whether or not it is reached:
    variables, literals, operators and casts only (no array read, which the left side may
    guard; no call, which may loop or fail). Then the generated code says `a & b`, which
    LLVM compiles without a branch: a mispredicted branch per point cost k-means' `nearer`
    (`d2 < d1 || d2 == d1 && i2 < i1`) three times the loop it sits in."""
    return "[" not in code and all(name in _CASTS for name in _CALL.findall(code))
