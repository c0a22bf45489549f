"""Signed integer `/` and `%` of the `cpu` target (`backends/cpu/int_division.py`: LLVM's
`sdiv` and `srem` instead of numba's floor division corrected back) on every pair of a
type's edge values, the lowest value over -1 and zero divisors included, against C's
truncating division computed exactly in Python; the `cuda` dialect keeps `//` corrected."""
from __future__ import annotations

import numpy as np
import pytest

from accel_kernel.backends.cpu.errors import ERR_LENGTH, ErrorTable
from accel_kernel.backends.cpu.scalar_source import scalar_function
from accel_kernel.lang import scalar_ops as table

from .test_numpy_build import fn

numba = pytest.importorskip("numba")

SIGNED = ["i8", "i16", "i32", "i64"]


def edges(t: str) -> list[int]:
    low, high = table.int_range(t)
    return sorted({0, 1, -1, 2, -2, 3, -3, 7, -7, low, low + 1, high, high - 1,
                   high // 2, low // 2})


def c_division(a: int, b: int, t: str) -> tuple[int, int]:
    """C's quotient (toward zero) and remainder (the dividend's sign), wrapped to `t`."""
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return table.wrap(q, t), table.wrap(a - b * q, t)


@pytest.mark.parametrize("t", SIGNED)
def test_division_and_remainder_truncate_on_every_pair_of_edges(t):
    errors = ErrorTable()
    source, _ = scalar_function(fn(r"\x y -> (x / y, x % y)"), "f", [t, t], {}, errors)
    assert "trunc_div(" in source and "trunc_rem(" in source and "//" not in source
    namespace: dict = {}
    exec("import numpy as np\nfrom numba import njit\n"
         "from accel_kernel.backends.cpu.int_division import trunc_div, trunc_rem\n\n"
         "@njit(cache=False)\n" + source, namespace)
    f = namespace["f"]
    dtype = table.DTYPES[t]
    failures = []
    for a in edges(t):
        for b in edges(t):
            err = np.zeros(ERR_LENGTH, dtype=np.int64)
            got = f(dtype(a), dtype(b), err)
            if b == 0:
                if errors.error(err) is None:
                    failures.append(f"{a} / {b}: no DivisionByZero")
                continue
            if errors.error(err) is not None or tuple(map(int, got)) != c_division(a, b, t):
                failures.append(f"{a} / {b}, {a} % {b}: {got} against {c_division(a, b, t)}")
    assert not failures, "\n".join(failures[:20])


def test_the_intrinsics_are_sdiv_and_srem():
    from accel_kernel.backends.cpu.int_division import trunc_div, trunc_rem

    @numba.njit(cache=False)
    def both(a, b):
        return trunc_div(a, b), trunc_rem(a, b)

    for a, b in [(7, 2), (-7, 2), (7, -2), (-7, -2), (-2 ** 63, 3), (2 ** 63 - 1, -5)]:
        assert both(a, b) == c_division(a, b, "i64")
    assert both(np.int32(-17), np.int32(5)) == (-3, -2)


def test_the_cuda_dialect_keeps_floor_division_corrected():
    from accel_kernel.backends.cuda.dialect import DEVICE
    source, _ = scalar_function(fn(r"\x y -> (x / y, x % y)"), "f", ["i64", "i64"], {},
                                ErrorTable(), DEVICE)
    assert "trunc_" not in source and "//" in source
