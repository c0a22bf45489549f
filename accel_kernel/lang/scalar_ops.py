"""The scalar semantics of accel, written once (LANGUAGE.md §4, docs/language.md "Scalar
semantics"): every operator and scalar builtin with its arity, its type rule, the error it can
raise and the numpy function that computes it; and the one table from scalar type to numpy
dtype (`DTYPES`, and `DTYPE_SOURCE` for generated code).

An entry (`ScalarOp`) is one of five forms: a binary operator (`+`, `==`, `&&`, ...), a prefix
operator (`-`, `!`), a function (`min`, `sqrt`, `select`, ...), a conversion (`i32 i64 f32
f64 i8 i16 u8 u16 u32 u64`) or a constant (`pi`, and the type constants `zero one lowest highest`). Its type rule
is written with one type variable `a`, constrained to a class of `types.CLASSES`: `+` is
`num a => a -> a -> a`. `builtins.py` gives the type checker these signatures.

`numpy` names the numpy function (or constant) computing the entry, and `numpy_exact` the
class of operand types on which that function alone is accel's rule. Elsewhere a back end
writes the rule itself (integer `/` truncates, `**` by a negative power, shifts past the width,
conversions of floats to integers); `doc` says what it is and `error` what it raises.

The readers: `backends/interp/scalars.py` (numpy scalars, Python integer arithmetic with
wrapping: the reference), `backends/numpy/scalar_ops.py` (whole arrays of lanes) and
`backends/cpu/scalar_arith.py` (the source text numba compiles). Each implements every entry
and nothing else; `tests/lang/test_scalar_ops.py` checks the three agree on every entry.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import errors
from .types import CLASSES, SCALARS, SIGNED, UNSIGNED

# ---------------------------------------------------------------- scalar types

DTYPES: dict[str, type] = {"bool": np.bool_, "i32": np.int32, "i64": np.int64,
                           "f32": np.float32, "f64": np.float64, "i8": np.int8,
                           "i16": np.int16, "u8": np.uint8, "u16": np.uint16,
                           "u32": np.uint32, "u64": np.uint64}
DTYPE_SOURCE: dict[str, str] = {name: f"np.{cls.__name__}" for name, cls in DTYPES.items()}
INTS = (*SIGNED, *UNSIGNED)
FLOATS = ("f32", "f64")
BITS: dict[str, int] = {name: np.dtype(DTYPES[name]).itemsize * 8 for name in INTS}


def scalar_type(dtype: object) -> str | None:
    """The accel scalar type of a numpy dtype (or scalar class), None when it has none."""
    found = np.dtype(dtype)
    for name, cls in DTYPES.items():
        if found == np.dtype(cls):
            return name
    return None


def int_range(type: str) -> tuple[int, int]:
    """The lowest and highest value of the integer `type`."""
    if type in UNSIGNED:
        return 0, (1 << BITS[type]) - 1
    half = 1 << (BITS[type] - 1)
    return -half, half - 1


def wrap(value: int, type: str) -> int:
    """A Python int reduced modulo 2**bits into the range of the integer `type` (two's
    complement for the signed types, 0 .. 2**bits - 1 for the unsigned ones)."""
    low, high = int_range(type)
    if low <= value <= high:
        return value
    return ((value - low) % (1 << BITS[type])) + low


# ---------------------------------------------------------------- the entries

BINARY, UNARY, FUNCTION, CONVERSION, CONSTANT = ("binary", "unary", "function", "conversion",
                                                 "constant")


@dataclass(frozen=True)
class ScalarError:
    """An error an entry raises: `kind` names a class of `lang/errors.py`, `message` is a
    `str.format` template over the offending operand (`{0}`), `when` says when, in words."""
    kind: str
    message: str
    when: str

    def error(self, span: object = None, *details: object) -> errors.AccelError:
        return getattr(errors, self.kind)(self.message.format(*details), span)


@dataclass(frozen=True)
class ScalarOp:
    """One operator or scalar builtin. Its type rule: `params -> result` with `a` standing
    for one scalar type of `type_class` (`signature` writes it as the type checker reads it)."""
    name: str                      # the spelling: `+`, `min`, `i64`, `pi`
    form: str                      # BINARY, UNARY, FUNCTION, CONVERSION or CONSTANT
    params: tuple[str, ...]        # each `a` or a scalar type
    result: str                    # `a` or a scalar type
    type_class: str | None         # the class of `a` (`types.CLASSES`); None: unconstrained
    numpy: str | None              # the numpy function or constant computing it
    numpy_exact: str | None        # the class on which `numpy` alone is accel's rule
    doc: str
    error: ScalarError | None = None

    @property
    def arity(self) -> int:
        return len(self.params)

    @property
    def signature(self) -> str:
        """The type rule in accel type syntax (`num a => a -> a -> a`)."""
        text = " -> ".join((*self.params, self.result))
        return f"{self.type_class} a => {text}" if self.type_class else text

    def takes(self, type: str) -> bool:
        """Whether its type variable `a` may stand for the scalar type `type` (for an entry
        without one, `&&` and `||`: whether its operands are of type `type`)."""
        if self.type_class is not None:
            return type in CLASSES[self.type_class]
        if "a" in (*self.params, self.result):
            return type in SCALARS
        return all(p == type for p in self.params)

    def result_type(self, type: str) -> str:
        """The scalar type of its result for operands of scalar type `type`."""
        return type if self.result == "a" else self.result

    def numpy_is_exact(self, type: str) -> bool:
        """Whether `numpy` alone computes accel's result on operands of type `type`."""
        return self.numpy_exact is not None and type in CLASSES[self.numpy_exact]


def _op(name: str, form: str, signature: str, numpy: str | None, exact: str | None, doc: str,
        error: ScalarError | None = None) -> ScalarOp:
    """An entry from its signature: `[class a =>] t1 -> ... -> result`."""
    type_class, _, types = signature.rpartition("=>")
    parts = tuple(t.strip() for t in types.split("->"))
    return ScalarOp(name, form, parts[:-1], parts[-1], type_class.split()[0] if type_class
                    else None, numpy, exact, doc, error)


_BY_ZERO = "an integer divisor of 0"
_NEGATIVE_SHIFT = ScalarError("SizeError", "negative shift amount {0}", "a negative amount")

_NUM2, _INT2, _BITS2, _CMP = ("num a => a -> a -> a", "int a => a -> a -> a",
                              "bits a => a -> a -> a", "scalar a => a -> a -> bool")
_FLOAT1 = "float a => a -> a"

_ENTRIES: tuple[ScalarOp, ...] = (
    # binary operators (parser.BINARY_LEVELS; `++` is on arrays, in builtins.py)
    _op("+", BINARY, _NUM2, "add", "num", "x + y; integers wrap around"),
    _op("-", BINARY, _NUM2, "subtract", "num", "x - y; integers wrap around"),
    _op("*", BINARY, _NUM2, "multiply", "num", "x * y; integers wrap around"),
    _op("/", BINARY, _NUM2, "divide", "float",
        "x / y; integers truncate toward zero, floats are IEEE (x / 0.0 is inf or nan)",
        ScalarError("DivisionByZero", "integer division by zero", _BY_ZERO)),
    _op("%", BINARY, _NUM2, "fmod", "float",
        "x % y: the remainder with the sign of the dividend (C), integers and floats",
        ScalarError("DivisionByZero", "integer remainder by zero", _BY_ZERO)),
    _op("**", BINARY, _NUM2, "power", "float",
        "x ** n; integers wrap, and x ** n for n < 0 is 1 / x ** -n in integer division",
        ScalarError("DivisionByZero", "integer division by zero (negative power of 0)",
                    "an integer to a negative power n whose x ** -n wraps to 0")),
    _op("==", BINARY, _CMP, "equal", "scalar", "x == y (IEEE: nan == nan is false)"),
    _op("!=", BINARY, _CMP, "not_equal", "scalar", "x != y (IEEE: nan != nan is true)"),
    _op("<", BINARY, _CMP, "less", "scalar", "x < y (false when either is nan)"),
    _op("<=", BINARY, _CMP, "less_equal", "scalar", "x <= y (false when either is nan)"),
    _op(">", BINARY, _CMP, "greater", "scalar", "x > y (false when either is nan)"),
    _op(">=", BINARY, _CMP, "greater_equal", "scalar", "x >= y (false when either is nan)"),
    _op("&&", BINARY, "bool -> bool -> bool", "logical_and", "scalar",
        "x && y: y is evaluated only when x holds"),
    _op("||", BINARY, "bool -> bool -> bool", "logical_or", "scalar",
        "x || y: y is evaluated only when x does not hold"),
    _op("&", BINARY, _BITS2, "bitwise_and", "bits", "x & y: bitwise and (logical on bool)"),
    _op("|", BINARY, _BITS2, "bitwise_or", "bits", "x | y: bitwise or (logical on bool)"),
    _op("^", BINARY, _BITS2, "bitwise_xor", "bits", "x ^ y: bitwise exclusive or"),
    _op("<<", BINARY, _INT2, "left_shift", None,
        "x << n: 0 for n at or past the width", _NEGATIVE_SHIFT),
    _op(">>", BINARY, _INT2, "right_shift", None,
        "x >> n: arithmetic on signed types (past the width 0, or -1 for a negative x), "
        "logical on unsigned ones (past the width 0)", _NEGATIVE_SHIFT),
    # prefix operators
    _op("-", UNARY, "num a => a -> a", "negative", "num", "-x; integers wrap around"),
    _op("!", UNARY, "bits a => a -> a", "invert",
        "bits", "!x: logical not on bool, bitwise complement on integers"),
    # functions
    _op("min", FUNCTION, _NUM2, "minimum", "num",
        "min x y: the smaller of x and y (NaN if either is NaN)"),
    _op("max", FUNCTION, _NUM2, "maximum", "num",
        "max x y: the larger of x and y (NaN if either is NaN)"),
    _op("abs", FUNCTION, "num a => a -> a", "abs", "num", "abs x: the absolute value of x"),
    _op("sqrt", FUNCTION, _FLOAT1, "sqrt", "float", "sqrt x: the square root of x"),
    _op("exp", FUNCTION, _FLOAT1, "exp", "float", "exp x: e raised to the power x"),
    _op("log", FUNCTION, _FLOAT1, "log", "float", "log x: the natural logarithm of x"),
    _op("sin", FUNCTION, _FLOAT1, "sin", "float", "sin x: the sine of x (radians)"),
    _op("cos", FUNCTION, _FLOAT1, "cos", "float", "cos x: the cosine of x (radians)"),
    _op("tan", FUNCTION, _FLOAT1, "tan", "float", "tan x: the tangent of x (radians)"),
    _op("atan2", FUNCTION, "float a => a -> a -> a", "arctan2", "float",
        "atan2 y x: the angle of the point (x, y), in (-pi, pi]"),
    _op("floor", FUNCTION, _FLOAT1, "floor", "float",
        "floor x: the largest integral float not above x"),
    _op("ceil", FUNCTION, _FLOAT1, "ceil", "float",
        "ceil x: the smallest integral float not below x"),
    _op("round", FUNCTION, _FLOAT1, "rint", "float",
        "round x: x rounded to the nearest integral float, half to even"),
    _op("pi", CONSTANT, "f64", "pi", None, "pi: 3.141592653589793"),
    *(_op(name, CONVERSION, f"scalar a => a -> {name}", None, None,
          f"{name} x: x converted to {name} (integers wrap, floats truncate toward zero)"
          if name in INTS else f"{name} x: x converted to {name}")
      for name in SCALARS if name != "bool"),
    _op("select", FUNCTION, "bool -> a -> a -> a", "where", "scalar",
        "select c a b: a when c holds, else b; both a and b are evaluated"),
    _op("zero", CONSTANT, "num a => a", None, None,
        "zero: 0 of the numeric type the context needs"),
    _op("one", CONSTANT, "num a => a", None, None,
        "one: 1 of the numeric type the context needs"),
    _op("lowest", CONSTANT, "num a => a", None, None,
        "lowest: the lowest value of the numeric type the context needs (-inf for floats)"),
    _op("highest", CONSTANT, "num a => a", None, None,
        "highest: the highest value of the numeric type the context needs (inf for floats)"),
)

BINARY_OPS: dict[str, ScalarOp] = {e.name: e for e in _ENTRIES if e.form == BINARY}
UNARY_OPS: dict[str, ScalarOp] = {e.name: e for e in _ENTRIES if e.form == UNARY}
# the scalar builtins, by name (functions, conversions, constants), in LANGUAGE.md's order
BUILTINS: dict[str, ScalarOp] = {e.name: e for e in _ENTRIES
                                 if e.form in (FUNCTION, CONVERSION, CONSTANT)}
FUNCTIONS: dict[str, ScalarOp] = {name: e for name, e in BUILTINS.items() if e.arity}
CONVERSIONS = tuple(name for name, e in BUILTINS.items() if e.form == CONVERSION)
TYPE_CONSTANTS = tuple(name for name, e in BUILTINS.items()
                       if e.form == CONSTANT and e.result == "a")
COMPARISONS = tuple(name for name, e in BINARY_OPS.items()
                    if e.result == "bool" and e.type_class == "scalar")


def constant_value(name: str, type: str) -> float | int:
    """The value of a constant (`pi`, or a type constant of the numeric `type`)."""
    entry = BUILTINS[name]
    if entry.form != CONSTANT or not entry.takes(type):
        raise TypeError(f"`{name}` is not a constant of type {type}")
    if entry.numpy is not None:
        return float(getattr(np, entry.numpy))
    if name in ("zero", "one"):
        return int(name == "one")
    if type in FLOATS:
        return -math.inf if name == "lowest" else math.inf
    low, high = int_range(type)
    return low if name == "lowest" else high


assert set(SCALARS) == set(DTYPES) == set(DTYPE_SOURCE)
