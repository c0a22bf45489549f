"""How the `cuda` target's device functions spell numpy's scalar functions: the scalar
translator is `cpu`'s (`backends/cpu/scalar_source.py`), with this `Dialect`.

Inside kernels numba.cuda takes `math.*`, not numpy's ufuncs: the simulator
would accept `np.sqrt`, the real compiler not. numba.cuda's `math.floor`, `math.ceil` and
`math.trunc` give floats (not Python's ints), `math.sqrt` and the others keep `f32` as `f32`;
`np.rint` (half to even) is `device_math.rint` (libdevice's has no simulator version). Float `/` is
IEEE in device code (numba.cuda compiles with numpy's error model), so `np.divide` is `/`.
numpy's scalar types (`np.int32(...)`) and constants (`np.nan`) work on the device as they
are; the uint64 of wrapping arithmetic is taken from an int64 (`np.uint64(np.int64(x))`, a
no-op on the device) because the simulator runs the code with numpy scalars, and numpy
refuses `np.uint64` of a negative Python int (a loop index).
"""
from __future__ import annotations

import math
from typing import Sequence

from ..cpu.python_code import Dialect, Val, call, infix
from ..cpu.scalar_arith import literal

# numpy's function -> the device function computing it (operands and result of one type)
MATH = {"sqrt": "math.sqrt", "exp": "math.exp", "log": "math.log", "sin": "math.sin",
        "cos": "math.cos", "tan": "math.tan", "arctan2": "math.atan2",
        "floor": "math.floor", "ceil": "math.ceil", "trunc": "math.trunc",
        "fmod": "math.fmod", "power": "math.pow", "abs": "abs",
        "isnan": "math.isnan", "isfinite": "math.isfinite"}


def _spell(name: str, type: str, args: Sequence[Val]) -> Val | None:
    if name == "uint64":      # from an int64: the simulator's numpy refuses a negative int
        return call("np.uint64", [call("np.int64", args, "i64")], type)
    if name == "divide":
        left, right = args
        return _literal_quotient(left, right, type) or infix(left, "/", right, type)
    if name in MATH:
        return call(MATH[name], args, type)
    if name == "rint":        # in f64 (exact for an f32), back to f32 where it was one
        rounded = call("device_math.rint", [call("np.float64", args, "f64")]
                       if type == "f32" else args, "f64")
        return call("np.float32", [rounded], "f32") if type == "f32" else rounded
    raise NotImplementedError(f"cuda: numpy's `{name}` in device code is not built yet")


def _literal_quotient(left: Val, right: Val, type: str) -> Val | None:
    """A literal divided by a literal 0 (`highest` is `1.0 / 0.0` in scalar code): the IEEE
    value, as a literal. The device gives it too, but the simulator runs the code with Python
    floats, whose `/` raises."""
    try:
        a, b = float(left.code), float(right.code)
    except ValueError:
        return None
    if b != 0.0:
        return None
    if a == 0.0 or math.isnan(a):
        return literal(math.nan, type)
    return literal(math.copysign(math.inf, a) * math.copysign(1.0, b), type)


DEVICE = Dialect("cuda", _spell)
