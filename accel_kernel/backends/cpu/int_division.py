"""accel's integer `/` and `%` on signed integers for the `cpu` target's generated code:
LLVM's `sdiv` and `srem`, which truncate toward zero and give the remainder the dividend's
sign, as accel does (C). Imported by a generated module that divides
(`scalar_arith._int_div`, `_int_rem`); nothing else imports it, so `import accel_kernel`
stays light.

numba's `//` and `%` floor (Python): each is an `sdiv` and an `srem` with a correction after
them (and a branch for the lowest int64 over -1), which the generated code then undid
(`if quotient < 0 and dividend % divisor != 0: quotient += 1`). On `lines` (two divisions a
point, 46.9M points) the two corrections were a quarter of the hist kernel's time: 330 ms
against 252 ms with `sdiv` (one thread; hand-written numba 275 ms, whose divisor LLVM knows
to be positive and whose correction is therefore shorter).

Both are undefined for a zero divisor and for the lowest value over -1 (x86 traps): the
generated code tests the divisor for zero before (DivisionByZero), and for int64 operands
writes `-a if b == -1 else trunc_div(a, b)` (`0 if b == -1 else trunc_rem(a, b)`). Narrower
signed types are widened to int64 first, where neither can overflow.
"""
from __future__ import annotations

from numba import types
from numba.extending import intrinsic

__all__ = ["trunc_div", "trunc_rem"]


def _signature(a, b):
    """int64(a, b) for two signed integers (their literals included), else None (a typing
    error at compile time: generated code never passes anything else)."""
    if all(isinstance(t, types.Integer) and t.signed for t in (a, b)):
        return types.int64(a, b)
    return None


def _lower(instruction: str):
    def codegen(context, builder, sig, args):
        a, b = (context.cast(builder, v, t, types.int64) for v, t in zip(args, sig.args))
        return getattr(builder, instruction)(a, b)
    return codegen


@intrinsic
def trunc_div(typingctx, a, b):
    """`a / b` rounded toward zero (`b` neither 0 nor, for the lowest int64, -1)."""
    sig = _signature(a, b)
    return (sig, _lower("sdiv")) if sig is not None else None


@intrinsic
def trunc_rem(typingctx, a, b):
    """`a % b` with the sign of `a` (`b` neither 0 nor, for the lowest int64, -1)."""
    sig = _signature(a, b)
    return (sig, _lower("srem")) if sig is not None else None
