"""The one table of scalar semantics (`lang/scalar_ops.py`) and its three readers.

The table: what the type checker reads is the table's (signatures, docs, arities), every
operator of the parser is in it, its errors are accel run-time errors, its numpy names exist,
and the package's dtype tables are the table's.

The readers: for every entry and every scalar type it takes, the interpreter
(`backends/interp/scalars.py`, the reference), the numpy lane evaluator
(`backends/numpy/scalar_ops.py`: all lanes at once, and lane by lane) and the numba source
writer (`backends/cpu/scalar_arith.py`: compiled by numba, operands as variables and, where
the writer has a path for them, as literals) give the same values of the same type and the
same errors (kind and message) on edge cases: wrap-around, division by zero, shifts out of
range, negative exponents, NaN, signed zeros, out-of-range floats converted to integers.
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Callable

import numpy as np
import pytest

from accel_kernel.backends.cpu import codegen_body
from accel_kernel.backends.cpu import scalar_arith as cpu
from accel_kernel.backends.cpu.errors import ErrorTable
from accel_kernel.backends.cpu.python_code import ATOM, RETURN_DUMMY, FunctionWriter, Val
from accel_kernel.backends.interp import library as interp_library
from accel_kernel.backends.interp import scalars as interp
from accel_kernel.backends.numpy import scalar_ops as lanes
from accel_kernel.backends.numpy import values as numpy_values
from accel_kernel.lang import errors, scalar_ops as table
from accel_kernel.lang import types as T
from accel_kernel.lang.builtins import BUILTINS, OPERATORS, UNARY_OPERATORS, parse_scheme
from accel_kernel.lang.parser import BINARY_LEVELS
from accel_kernel.lang.scalar_ops import DTYPES, ScalarOp
from accel_kernel.passes.flatten import scalar as flatten_scalar

ENTRIES: list[ScalarOp] = [*table.BINARY_OPS.values(), *table.UNARY_OPS.values(),
                           *table.BUILTINS.values()]
EDGES: dict[str, list] = {
    "bool": [False, True],
    "i32": [0, 1, -1, 2, -3, 7, 31, 32, 33, 100, -2 ** 31, 2 ** 31 - 1],
    "i64": [0, 1, -1, 2, -3, 7, 63, 64, 65, 2 ** 40, -2 ** 63, 2 ** 63 - 1],
    "f64": [0.0, -0.0, 0.5, 1.5, 2.5, -2.5, -2.7, 3.0, -7.5, math.inf, -math.inf, math.nan,
            1e20, -3e19, 1e300],
}
EDGES["f32"] = EDGES["f64"][:-1] + [3.4e38]
for _t in ("i8", "i16"):      # the edges of i32, at the width of each
    _b = table.BITS[_t]
    EDGES[_t] = [0, 1, -1, 2, -3, 7, _b - 1, _b, _b + 1, 100 % (1 << (_b - 1)), -2 ** (_b - 1),
                 2 ** (_b - 1) - 1]
for _t in table.UNSIGNED:     # and of the unsigned types: no negative values
    _b = table.BITS[_t]
    EDGES[_t] = [0, 1, 2, 3, 7, _b - 1, _b, _b + 1, 100, 2 ** (_b - 1), 2 ** (_b - 1) + 5,
                 2 ** _b - 1]
TRANSCENDENTAL = {"exp", "log", "sin", "cos", "tan", "atan2", "**"}   # libm may differ by ulps
# numpy's scalar power (the interpreter's) gives nan for (-inf) ** 0.5, its ufunc on arrays and
# C99's pow (numba's) inf: the only known disagreement, checked to stay the only one
KNOWN = {("**", -math.inf, 0.5): math.inf}


def entry_id(entry: ScalarOp) -> str:
    return f"{entry.form} {entry.name}"


def instances(entry: ScalarOp) -> list[tuple[str, tuple[str, ...], str]]:
    """(the type `a` stands for, the operand types, the result type) for every scalar type
    the entry takes."""
    out = []
    for t in T.SCALARS:
        if entry.takes(t):
            params = tuple(t if p == "a" else p for p in entry.params)
            out.append((t, params, entry.result_type(t)))
    return out


def samples(params: tuple[str, ...]) -> list[tuple]:
    if len(params) == 3:      # select: both conditions, a few values
        return list(itertools.product(EDGES["bool"], EDGES[params[1]][:5],
                                      EDGES[params[2]][-5:]))
    return list(itertools.product(*(EDGES[p] for p in params)))


def scalars_of(params: tuple[str, ...], values: tuple) -> list:
    return [DTYPES[p](v) for p, v in zip(params, values)]


# ---------------------------------------------------------------- outcomes

def outcome(compute: Callable[[], Any]) -> tuple:
    """("value", v) or ("error", kind, message)."""
    try:
        return ("value", compute())
    except errors.AccelError as e:
        return ("error", type(e).__name__, e.message)


def same_value(expected: Any, got: Any, result: str, approx: bool) -> bool:
    """`got` (a numpy scalar, or what numba returns: a Python number) is `expected`."""
    if result == "bool":
        return bool(got) == bool(expected) and type(got) in (bool, np.bool_)
    if result in table.INTS:
        return int(got) == int(expected)
    x, y = float(expected), float(got)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if approx:
        return math.isclose(x, y, rel_tol=4 * float(np.finfo(DTYPES[result]).eps))
    return x == y and math.copysign(1, x) == math.copysign(1, y)


def known(entry: ScalarOp, values: tuple, result: str) -> tuple | None:
    """The outcome of a known disagreement with the interpreter, None for any other case."""
    if result in table.FLOATS and (entry.name, *values) in KNOWN:
        return ("value", KNOWN[(entry.name, *values)])
    return None


def check_same(expected: tuple, got: tuple, result: str, approx: bool, what: str) -> None:
    if expected[0] == "error" or got[0] == "error":
        assert got == expected, what
        return
    assert same_value(expected[1], got[1], result, approx), f"{what}: {expected[1]!r} != {got[1]!r}"


# ---------------------------------------------------------------- the readers

def interp_apply(entry: ScalarOp, args: list, t: str) -> Any:
    if entry.form == table.BINARY:
        return interp.binop(entry.name, *args)
    if entry.form == table.UNARY:
        return (interp.negate if entry.name == "-" else interp.logical_not)(*args)
    if entry.form == table.CONSTANT:
        return (interp.CONSTANTS[entry.name] if entry.name in interp.CONSTANTS
                else interp.type_constant(entry.name, T.Scalar(t)))
    return interp.SCALAR_FUNCTIONS[entry.name](*args)


def lanes_apply(entry: ScalarOp, args: list, check: bool = True) -> Any:
    with np.errstate(all="ignore"):       # as the numpy target runs them
        return _lanes_apply(entry, args, check)


def _lanes_apply(entry: ScalarOp, args: list, check: bool) -> Any:
    if entry.form == table.BINARY:
        return lanes.binop(entry.name, *args, None, check)
    if entry.form == table.UNARY:
        return (lanes.negate if entry.name == "-" else lanes.logical_not)(*args)
    if entry.form == table.CONSTANT:
        return lanes.CONSTANTS[entry.name]
    arity, fn = lanes.FUNCTIONS[entry.name]
    assert arity == len(args)
    return fn(*args)


def cpu_apply(w: FunctionWriter, entry: ScalarOp, args: list[Val], t: str) -> Val:
    if entry.form == table.BINARY:
        return cpu.binary(w, entry.name, *args, None)
    if entry.form == table.UNARY:
        return cpu.unary(entry.name, *args)
    if entry.form == table.CONSTANT:
        return (cpu.CONSTANTS[entry.name] if entry.name in cpu.CONSTANTS
                else cpu.type_constant(entry.name, t))
    assert cpu.FUNCTION_ARITY[entry.name] == len(args)
    return cpu.function(w, entry.name, args)


# ---------------------------------------------------------------- the table


@pytest.mark.parametrize("entry", ENTRIES, ids=entry_id)
def test_the_type_checker_reads_the_table(entry):
    scheme = parse_scheme(entry.signature)
    if entry.form == table.BINARY:
        assert OPERATORS[entry.name] == scheme
    elif entry.form == table.UNARY:
        assert UNARY_OPERATORS[entry.name] == scheme
    else:
        assert BUILTINS[entry.name].scheme == scheme and BUILTINS[entry.name].doc == entry.doc
    arrows, t = 0, scheme.type
    while isinstance(t, T.Func):
        arrows, t = arrows + 1, t.result
    assert arrows == entry.arity


def test_every_operator_of_the_parser_is_in_the_table():
    assert set(table.BINARY_OPS) == set(BINARY_LEVELS) - {"++"}
    assert set(table.UNARY_OPS) == {"-", "!"}
    scalar_builtins = {name for name, b in BUILTINS.items() if _first_order(b.scheme.type)}
    assert scalar_builtins - {"cond"} == set(table.BUILTINS)   # `cond` is lazy, like `if`


def _first_order(t: T.Type) -> bool:
    """Whether `t` takes and gives values that are not functions nor arrays."""
    if isinstance(t, T.Func):
        return not isinstance(t.param, T.Func) and _first_order(t.param) and _first_order(t.result)
    return isinstance(t, (T.Scalar, T.TypeVar))


@pytest.mark.parametrize("entry", ENTRIES, ids=entry_id)
def test_errors_are_run_time_errors_and_numpy_names_exist(entry):
    if entry.error is not None:
        assert issubclass(getattr(errors, entry.error.kind), errors.AccelRuntimeError)
        made = entry.error.error(None, -3)
        assert type(made).__name__ == entry.error.kind and made.message
    if entry.numpy is not None:
        assert hasattr(np, entry.numpy)
    if entry.numpy_exact is not None:
        assert entry.numpy is not None and entry.numpy_exact in T.CLASSES


def test_the_dtype_table_is_the_only_one():
    assert tuple(DTYPES) == T.SCALARS
    for name, cls in DTYPES.items():
        assert eval(table.DTYPE_SOURCE[name], {"np": np}) is cls
        assert table.scalar_type(cls) == name and table.scalar_type(np.dtype(cls)) == name
    assert table.scalar_type(np.float16) is None and table.scalar_type(np.complex64) is None
    assert numpy_values.DTYPES is DTYPES
    assert codegen_body.DTYPES is table.DTYPE_SOURCE and cpu.NUMPY_TYPES is table.DTYPE_SOURCE


def test_the_readers_implement_exactly_the_entries():
    assert set(interp.SCALAR_FUNCTIONS) == set(lanes.FUNCTIONS) == set(cpu.FUNCTION_ARITY) \
        == set(table.FUNCTIONS)
    assert {name: arity for name, (arity, _) in lanes.FUNCTIONS.items()} == cpu.FUNCTION_ARITY \
        == interp.FUNCTION_ARITY == flatten_scalar.SCALAR_BUILTINS
    assert set(interp.CONSTANTS) == set(lanes.CONSTANTS) == set(cpu.CONSTANTS) == {"pi"}
    assert set(cpu.TYPE_CONSTANTS) == interp.TYPE_CONSTANTS == interp_library.TYPE_CONSTANTS \
        == {"zero", "one", "lowest", "highest"}
    assert set(flatten_scalar.CONSTANTS) == {"pi", "zero", "one", "lowest", "highest"}
    assert flatten_scalar.PARTIAL_OPS == {"/", "%", "**", "<<", ">>"}
    for name, arity in interp.FUNCTION_ARITY.items():
        assert interp_library.LIBRARY[name].arity == arity


def test_wrap_and_constants():
    assert table.wrap(2 ** 63, "i64") == -2 ** 63 and table.wrap(-2 ** 31 - 1, "i32") == 2 ** 31 - 1
    assert table.wrap(5, "i32") == 5 and table.wrap(2 ** 64 + 5, "i64") == 5
    assert table.constant_value("lowest", "i32") == -2 ** 31
    assert table.constant_value("highest", "i64") == 2 ** 63 - 1
    assert table.constant_value("lowest", "f32") == -math.inf
    assert table.constant_value("pi", "f64") == math.pi
    with pytest.raises(TypeError):
        table.constant_value("one", "bool")
    with pytest.raises(TypeError):
        interp.type_constant("zero", T.BOOL)


# ---------------------------------------------------------------- the readers agree


@pytest.mark.parametrize("entry", ENTRIES, ids=entry_id)
def test_the_numpy_lanes_compute_what_the_interpreter_computes(entry):
    for t, params, result in instances(entry):
        if entry.form == table.CONSTANT:
            if entry.name in lanes.CONSTANTS:
                got, expected = lanes.CONSTANTS[entry.name], interp.CONSTANTS[entry.name]
                assert type(got) is type(expected) is DTYPES[result] and got == expected
            continue
        cases = samples(params)
        expected = [outcome(lambda: interp_apply(entry, scalars_of(params, c), t))
                    for c in cases]
        approx = entry.name in TRANSCENDENTAL
        for case, want in zip(cases, expected):      # lane by lane: numpy scalars
            got = outcome(lambda: lanes_apply(entry, scalars_of(params, case)))
            if got[0] == "value":
                assert type(got[1]) is DTYPES[result], (entry.name, t, case)
            check_same(want, got, result, approx, f"{entry.name} {t} {case}")
        good = [k for k, want in enumerate(expected) if want[0] == "value"]
        columns = [np.array([cases[k][j] for k in good], dtype=DTYPES[p])
                   for j, p in enumerate(params)]
        batches = [lanes_apply(entry, columns)]       # all lanes at once
        if entry.error is not None:                   # check=False: the failing lanes too
            everything = [np.array([c[j] for c in cases], dtype=DTYPES[p])
                          for j, p in enumerate(params)]
            unchecked = lanes_apply(entry, everything, check=False)
            batches.append(np.asarray(unchecked)[good])
        for batch in batches:
            batch = np.asarray(batch)
            assert batch.dtype == DTYPES[result], (entry.name, t)
            for k, got in zip(good, batch):
                check_same(known(entry, cases[k], result) or expected[k], ("value", got), result, approx,
                           f"{entry.name} {t} {cases[k]} (all lanes)")


def _cpu_groups() -> dict[tuple, list]:
    """The cpu cases grouped by (operand types, result type): each group becomes one numba
    function whose argument `which` picks the case. A case: (entry, t, literal) where
    `literal` is None, or the value of the last operand written as a literal."""
    groups: dict[tuple, list] = {}
    for entry in ENTRIES:
        for t, params, result in instances(entry):
            groups.setdefault((params, result), []).append((entry, t, None))
            if entry.error is not None and t in table.INTS:     # the writer's literal paths
                for value in EDGES[t]:
                    groups[(params, result)].append((entry, t, value))
            if entry.name in ("/", "%", "**") and t in table.INTS:
                for value in (-1, 1, 2, 3) if t in T.SIGNED else (1, 2, 3):
                    groups[(params, result)].append((entry, t, value))
    return groups


def _cpu_source(name: str, params: tuple[str, ...], result: str, cases: list,
                errors_table: ErrorTable) -> str:
    names = [f"p{k}" for k in range(len(params))]
    w = FunctionWriter(errors_table, {"which", *names})
    operands = [Val(n, p, ATOM, True) for n, p in zip(names, params)]
    for k, (entry, t, literal) in enumerate(cases):
        args = list(operands)
        if literal is not None:
            args[-1] = cpu.literal(literal, params[-1])
        w.emit(f"if which == {k}:")
        with w.indented():
            value = cpu_apply(w, entry, args, t)
            assert value.type == result, (entry.name, t)
            w.emit(f"return {value.code}")
    w.emit(RETURN_DUMMY)
    body = "\n".join(w.render(cpu.zero_code(result)))
    return f"@njit(cache=False)\ndef {name}(which, {', '.join([*names, 'err'])}):\n{body}\n"


def test_the_numba_source_computes_what_the_interpreter_computes():
    pytest.importorskip("numba")
    groups = _cpu_groups()
    errors_table = ErrorTable()
    sources = [_cpu_source(f"f_{k}", params, result, cases, errors_table)
               for k, ((params, result), cases) in enumerate(groups.items())]
    text = ("import numpy as np\nfrom numba import njit\n"
            # signed `/` and `%` (the generated module imports them when it divides)
            "from accel_kernel.backends.cpu.int_division import trunc_div, trunc_rem\n"
            "from accel_kernel.backends.cpu.unchecked import load\n\n\n"
            + "\n\n".join(sources))
    namespace: dict = {}
    exec(compile(text, "<scalar_ops cpu>", "exec"), namespace)
    compared = 0
    for k, ((params, result), cases) in enumerate(groups.items()):
        function = namespace[f"f_{k}"]
        for which, (entry, t, literal) in enumerate(cases):
            approx = entry.name in TRANSCENDENTAL
            inputs = samples(params if literal is None else params[:-1])
            for values in inputs:
                values = values if literal is None else (*values, literal)
                args = scalars_of(params, values)
                want = known(entry, values, result) or outcome(lambda: interp_apply(entry, args, t))
                err = np.zeros(3, dtype=np.int64)
                value = function(which, *args, err)
                failed = errors_table.error(err)
                got = (("error", type(failed).__name__, failed.message) if failed is not None
                       else ("value", value))
                check_same(want, got, result, approx,
                           f"{entry.name} {t} {values}{' (literal)' if literal is not None else ''}")
                compared += 1
    assert compared > 10000
