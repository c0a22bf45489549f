"""accel's scalar operators and functions written as Python code for numba (the `cpu` back
end): element by element what `backends/numpy/scalar_ops.py` computes, errors included. The
operators, functions, arities, errors and numpy functions are those of the one table of
scalar semantics, `lang/scalar_ops.py`; this module only writes them as source text.

Each function takes `Val`s (typed Python expressions, `python_code.py`) and gives a `Val`,
writing statements into a `FunctionWriter` where one expression is not enough. What numba
does differently from accel, and how the code here corrects it:

- arithmetic on the integer types narrower than 64 bits (`i8 i16 i32 u8 u16 u32`) is done in
  int64 or uint64: results are wrapped back with `np.int32(...)` (`np.uint8(...)`, ...); their
  literals are written typed (`np.uint8(3)`), and so are u64's (`np.uint64(3)`: numba types a
  uint64 with an int64 as float64);
- int64 `+ - *` are emitted with LLVM's `nsw` flag (signed overflow is undefined, and LLVM
  then rewrites `max 0 (n - 2)` as if it could not wrap): they are done in uint64 and cast
  back, `np.int64(np.uint64(a) + np.uint64(b))`, which wraps;
- `//` and `%` floor (Python), accel truncates (C): where the dialect has
  `truncating_division` (the `cpu` target's) signed `/` and `%` are LLVM's `sdiv` and `srem`
  (`int_division.trunc_div`, `trunc_rem`: numba's floor and the correction back cost a
  quarter of `lines`' time); elsewhere (`cuda`) the quotient of `//` is moved one toward
  zero and the remainder given the dividend's sign. The lowest int64 over -1 overflows
  (`x // -1` gives 0, `sdiv` traps): that divisor is negation (a remainder of 0);
- float `/` by zero raises ZeroDivisionError under numba's default error model: `np.divide`;
- shifts by the width or more are undefined in LLVM: amounts are clamped (`>>` on unsigned
  types is logical: 0 past the width);
- `min`/`max` of floats follow numpy (NaN propagates, equal operands give the second);
- float to int conversion of NaN, infinities and values out of range is undefined: done as
  numpy does (0, and modulo 2**64).
"""
from __future__ import annotations

import math

from ...lang import scalar_ops as table
from ...lang.scalar_ops import BINARY_OPS, BITS, FLOATS, INTS, UNSIGNED, ScalarError
from ...lang.source import Span
from .python_code import (ATOM, COMPARE, NOT, NUMPY, SUM, TERNARY, UNARY, Dialect,
                          FunctionWriter, Val, call, infix, operand)

NUMPY_TYPES = table.DTYPE_SOURCE
FUNCTION_ARITY = {name: entry.arity for name, entry in table.FUNCTIONS.items()}
CONSTANTS = {name: Val(f"np.{entry.numpy}", entry.result, ATOM, True)
             for name, entry in table.BUILTINS.items()
             if entry.form == table.CONSTANT and entry.numpy}
TYPE_CONSTANTS = table.TYPE_CONSTANTS
# the operators on bool as generated code spells them
_BOOL_SOURCE = {"&": "&", "|": "|", "^": "!=", "&&": "and", "||": "or"}
_OVERFLOWING = ("+", "-", "*")    # the integer operators numba must be kept from assuming
                                  # do not overflow (see the module docstring)


# ---------------------------------------------------------------- literals


def literal(value: bool | int | float, type: str) -> Val:
    """A literal of accel type `type` (integers wrap, as `make_scalar` does)."""
    if type == "bool":
        return Val("True" if value else "False", "bool", ATOM, True)
    if type in INTS:
        number = table.wrap(int(value), type)
        if type != "i64":
            return Val(f"{NUMPY_TYPES[type]}({number})", type, ATOM, True)
        return Val(str(number), type, UNARY if number < 0 else ATOM, True)
    number = float(value)
    if math.isnan(number):
        text = "np.nan"
    elif math.isinf(number):
        text = "np.inf" if number > 0 else "-np.inf"
    else:
        text = repr(number)
    if type == "f32":
        return Val(f"np.float32({text})", type, ATOM, True)
    return Val(text, type, UNARY if text.startswith("-") else ATOM, True)


def type_constant(name: str, type: str) -> Val:
    """`zero`, `one`, `lowest`, `highest` of a numeric type."""
    return literal(table.constant_value(name, type), type)


def zero_code(type: str) -> str:
    """A dummy value of a scalar type, as code (what a failed check returns)."""
    return literal(False if type == "bool" else 0, type).code


def int_constant(val: Val) -> int | None:
    """The value of an integer literal, None for anything else."""
    code = val.code
    if val.type in INTS and code.startswith(f"{NUMPY_TYPES[val.type]}(") and code.endswith(")"):
        code = code[len(NUMPY_TYPES[val.type]) + 1:-1]
    try:
        return int(code)
    except ValueError:
        return None


def wrap(val: Val) -> Val:
    """An integer result back in its accel type (numba computes int32 in int64, uint8 in
    uint64, ...)."""
    if val.type in INTS and val.type != "i64":
        return call(NUMPY_TYPES[val.type], [val], val.type)
    return val


def wrapping(op: str, a: Val, b: Val, dialect: Dialect = NUMPY) -> Val:
    """`a op b` for `+ - *` on integers, wrapping around (see the module docstring)."""
    if a.type != "i64":       # narrower types: computed in 64 bits; u64: wraps in numba
        return wrap(infix(a, op, b, a.type)) if a.type != "u64" else infix(a, op, b, "u64")
    left = a.unsigned or dialect.call("uint64", [a], "u64")
    right = b.unsigned or dialect.call("uint64", [b], "u64")
    unsigned = infix(left, op, right, "u64")
    return Val(f"np.int64({unsigned.code})", "i64", ATOM, False, unsigned)


# ---------------------------------------------------------------- operators


def binary(w: FunctionWriter, op: str, a: Val, b: Val, span: Span | None) -> Val:
    """`a op b` on scalars of one type (`&&`/`||` here evaluate both sides: the caller
    short-circuits them)."""
    if a.type != b.type:
        raise ValueError(f"operator {op} on {a.type} and {b.type}: the types must agree")
    entry, t = BINARY_OPS.get(op), a.type
    if entry is None or not entry.takes(t):
        raise ValueError(f"operator {op} is not defined on {t}")
    if op in table.COMPARISONS:
        return infix(a, op, b, "bool")
    if t == "bool":
        return infix(a, _BOOL_SOURCE[op], b, "bool")
    if op in _OVERFLOWING:
        return wrapping(op, a, b, w.dialect) if t in INTS else infix(a, op, b, t)
    if t in FLOATS:     # IEEE: x / 0.0 is inf or nan; fmod takes the dividend's sign
        return w.dialect.call(entry.numpy, [a, b], t)
    if entry.numpy_is_exact(t):
        return wrap(infix(a, op, b, t))
    return _INTEGER_RULES[op](w, op, a, b, entry.error, span)


def _divisor_checked(w: FunctionWriter, a: Val, b: Val, error: ScalarError,
                     span: Span | None) -> tuple[Val, Val] | None:
    """The dividend and divisor as atoms after the divisor's check; None when the divisor
    is the literal 0 (the check always fails)."""
    a, b = w.atom(a, "dividend"), w.atom(b, "divisor")
    divisor = int_constant(b)
    if divisor == 0:
        w.check("True", error.kind, error.message, span)
        return None
    if divisor is None:
        w.check(f"{operand(b, COMPARE)} == 0", error.kind, error.message, span)
    return a, b


def _corrected(w: FunctionWriter, result: str, type: str, test: str, fix: str) -> Val:
    """`result` (a variable) with `fix` applied where `test` holds (a line with its why)."""
    w.emit(f"if {test}")
    with w.indented():
        w.emit(fix)
    return wrap(Val(result, type, ATOM, True))


def _int_div(w: FunctionWriter, op: str, a: Val, b: Val, error: ScalarError,
             span: Span | None) -> Val:
    if int_constant(b) == 1:
        return a
    if int_constant(b) == -1:
        return unary("-", a)
    operands = _divisor_checked(w, a, b, error, span)
    if operands is None:
        return literal(0, a.type)
    a, b = operands
    q = w.fresh("quotient")
    if a.type in UNSIGNED:        # no signs: // is accel's /
        w.emit(f"{q} = {operand(a, SUM)} // {operand(b, SUM, True)}")
        return wrap(Val(q, a.type, ATOM, True))
    if w.dialect.truncating_division:       # LLVM's sdiv (int_division.py)
        return _truncating(w, q, "trunc_div", a, b, f"-{operand(a, UNARY, True)}")
    if a.type == "i64" and int_constant(b) is None:
        w.emit(f"{q} = -{operand(a, UNARY, True)} if {b.code} == -1 "
               f"else {operand(a, SUM)} // {operand(b, SUM, True)}  "
               f"# numba's // gives 0 for the lowest i64 over -1")
    else:
        w.emit(f"{q} = {operand(a, SUM)} // {operand(b, SUM, True)}")
    return _corrected(w, q, a.type, f"{q} < 0 and {operand(a, SUM)} % {operand(b, SUM, True)} "
                      f"!= 0:  # // floors, accel truncates toward zero", f"{q} += 1")


def _truncating(w: FunctionWriter, var: str, function: str, a: Val, b: Val,
                at_minus_one: str) -> Val:
    """`var = function(a, b)`, `int_division.py`'s `trunc_div` or `trunc_rem` (LLVM's sdiv,
    srem); an int64 divisor that is not a literal is tested for -1 first, whose result is
    `at_minus_one` (the lowest i64 over -1 overflows)."""
    code = f"{function}({a.code}, {b.code})"
    if a.type == "i64" and int_constant(b) is None:
        code = f"{at_minus_one} if {b.code} == -1 else {code}  # the lowest i64 over -1 overflows"
    w.emit(f"{var} = {code}")
    return wrap(Val(var, a.type, ATOM, True))


def _int_rem(w: FunctionWriter, op: str, a: Val, b: Val, error: ScalarError,
             span: Span | None) -> Val:
    if int_constant(b) in (1, -1):
        return literal(0, a.type)
    operands = _divisor_checked(w, a, b, error, span)
    if operands is None:
        return literal(0, a.type)
    a, b = operands
    r = w.fresh("remainder")
    if a.type not in UNSIGNED and w.dialect.truncating_division:      # LLVM's srem
        return _truncating(w, r, "trunc_rem", a, b, zero_code(a.type))
    w.emit(f"{r} = {operand(a, SUM)} % {operand(b, SUM, True)}")
    if a.type in UNSIGNED:        # no signs: % is accel's %
        return wrap(Val(r, a.type, ATOM, True))
    return _corrected(w, r, a.type, f"{r} != 0 and ({r} < 0) != ({a.code} < 0):  "
                      f"# % takes the divisor's sign, accel the dividend's",
                      f"{r} -= {operand(b, SUM, True)}")


def _int_pow(w: FunctionWriter, op: str, a: Val, n: Val, error: ScalarError,
             span: Span | None) -> Val:
    exponent = int_constant(n)
    if exponent == 0:
        return literal(1, a.type)
    if exponent == 1:
        return a
    if exponent in (2, 3):
        a = w.atom(a, "base")
        square = wrapping("*", a, a, w.dialect)
        return square if exponent == 2 else wrapping("*", square, a, w.dialect)
    a, n = w.atom(a, "base"), w.atom(n, "exponent")
    one = literal(1, a.type).code
    power, base, e = w.fresh("power"), w.fresh("base"), w.fresh("e")
    w.emit(f"{power} = {one}")
    w.emit(f"{base} = {a.code}")
    negative = a.type not in UNSIGNED and (exponent is None or exponent < 0)
    if not negative:
        w.emit(f"{e} = {n.code}")
    else:
        w.emit(f"{e} = {n.code} if {n.code} >= 0 else -({n.code} + 1)  "
               f"# x ** -k is 1 / (x ** (k - 1) * x): -(n + 1) cannot overflow")
    w.emit(f"while {e} > 0:  # by squaring; products wrap")
    with w.indented():
        w.emit(f"if {e} & 1:")
        with w.indented():
            w.emit(f"{power} = {wrapping('*', Val(power, a.type), Val(base, a.type), w.dialect).code}")
        w.emit(f"{base} = {wrapping('*', Val(base, a.type), Val(base, a.type), w.dialect).code}")
        w.emit(f"{e} >>= 1")
    if negative:
        w.emit(f"if {n.code} < 0:  # x ** n for n < 0 is 1 / x ** -n in integer division")
        with w.indented():
            w.emit(f"{power} = {wrapping('*', Val(power, a.type), a, w.dialect).code}")
            w.check(f"{power} == 0", error.kind, error.message, span)
            w.emit(f"{power} = {one} if {power} == 1 else "
                   f"({literal(-1, a.type).code} if {power} == -1 else {zero_code(a.type)})")
    return Val(power, a.type, ATOM, True)


def _shift(w: FunctionWriter, op: str, a: Val, n: Val, error: ScalarError,
           span: Span | None) -> Val:
    bits, t = BITS[a.type], a.type
    amount = int_constant(n)
    if t not in UNSIGNED and (amount is None or amount < 0):
        n = w.atom(n, "amount")
        w.check(f"{operand(n, COMPARE)} < 0", error.kind, error.message, span, [n.code])
    if op == ">>" and t not in UNSIGNED:   # arithmetic: past the width, 0 or -1 like a shift
        clamped = (literal(min(amount, bits - 1), n.type) if amount is not None   # by width - 1
                   else Val(f"min({n.code}, {literal(bits - 1, n.type).code})", n.type))
        return wrap(infix(a, ">>", clamped, t))
    if amount is not None:
        if amount >= bits:
            return literal(0, t)
        return wrap(infix(a, op, literal(amount, n.type), t))
    shifted = wrap(infix(a, op, n, t))
    return Val(f"{operand(shifted, TERNARY, True)} if {n.code} < {literal(bits, n.type).code} "
               f"else {zero_code(t)}", t, TERNARY)


# the integer rules numpy's own functions do not give (`numpy_exact` in the table)
_INTEGER_RULES = {"/": _int_div, "%": _int_rem, "**": _int_pow, "<<": _shift, ">>": _shift}


def unary(op: str, a: Val) -> Val:
    """`-a`, and `!a`: logical not on bool, bitwise complement on integers."""
    entry = table.UNARY_OPS.get(op)
    if entry is None or not entry.takes(a.type):
        raise ValueError(f"unary {op} is not defined on {a.type}")
    if a.type == "bool":
        return Val(f"not {operand(a, NOT)}", "bool", NOT)
    if op == "-" and a.type in UNSIGNED:      # 0 - a, wrapping
        return wrapping("-", literal(0, a.type), a)
    python = "-" if op == "-" else "~"
    return wrap(Val(f"{python}{operand(a, UNARY, True)}", a.type, UNARY))


# ---------------------------------------------------------------- functions


def function(w: FunctionWriter, name: str, args: list[Val]) -> Val:
    """A scalar builtin (`FUNCTION_ARITY`) applied to scalars."""
    entry = table.FUNCTIONS.get(name)
    if entry is None:
        raise ValueError(f"`{name}` is not a scalar function")
    if entry.form == table.CONVERSION:
        return convert(w, name, args[0])
    if name == "select":
        c, a, b = args
        return Val(f"{operand(a, TERNARY, True)} if {operand(c, TERNARY, True)} "
                   f"else {operand(b, TERNARY)}", a.type, TERNARY)
    if entry.type_class == "float":
        floats = [_as_float(x) for x in args]
        return w.dialect.call(entry.numpy, floats, floats[0].type)
    if any(x.type != args[0].type for x in args):
        raise ValueError(f"{name} on {' and '.join(x.type for x in args)}: the types must agree")
    if args[0].type in FLOATS:
        if name == "abs":
            return w.dialect.call(entry.numpy, args, args[0].type)
        a, b = w.atom(args[0], "a"), w.atom(args[1], "b")    # min, max: numpy's: NaN
        test = "<" if name == "min" else ">"                  # propagates, equal operands give b
        isnan = w.dialect.call("isnan", [a], "bool").code
        return Val(f"{a.code} if {a.code} {test} {b.code} or {isnan} "
                   f"else {b.code}", a.type, TERNARY)
    if name == "abs" and args[0].type in UNSIGNED:
        return args[0]
    return wrap(call(name, args, args[0].type))       # Python's min, max, abs on integers


def _as_float(a: Val) -> Val:
    return a if a.type in FLOATS else call("np.float64", [a], "f64")


def convert(w: FunctionWriter, target: str, a: Val) -> Val:
    """The conversions (`i32 u8 f64 ...`): integers wrap, floats truncate toward zero, NaN and infinities
    give 0, floats beyond the i64 range are reduced modulo 2**64 (as `scalar_ops.convert`)."""
    if a.type == target:
        return a
    if target in FLOATS or a.type not in FLOATS:
        return call(NUMPY_TYPES[target], [a], target)
    x = w.atom(a, "x")
    t = w.fresh("truncated")
    as_f64 = call("np.float64", [x], "f64")
    trunc = w.dialect.call("trunc", [as_f64], "f64").code
    isfinite = w.dialect.call("isfinite", [x], "bool").code
    w.emit(f"{t} = {trunc} if {isfinite} else 0.0  # NaN and infinities give 0")
    w.emit(f"if not -2.0 ** 63 <= {t} < 2.0 ** 63:  # beyond i64: modulo 2**64, like numpy")
    with w.indented():
        w.emit(f"{t} = {w.dialect.call('fmod', [Val(t, 'f64'), Val('2.0 ** 64', 'f64')], 'f64').code}")
        w.emit(f"if {t} >= 2.0 ** 63:")
        with w.indented():
            w.emit(f"{t} -= 2.0 ** 64")
        w.emit(f"elif {t} < -2.0 ** 63:")
        with w.indented():
            w.emit(f"{t} += 2.0 ** 64")
    as_i64 = call("np.int64", [t], "i64")
    return as_i64 if target == "i64" else call(NUMPY_TYPES[target], [as_i64], target)
