"""The math of generated `cuda` code: `math` (what its device functions call `math.sqrt`)
and device functions for what numba.cuda has no function of numpy's meaning.

On a GPU `math` is Python's module, which numba.cuda compiles to the device's IEEE
functions (`math.log(-1.0)` is NaN, `math.floor` a float). The simulator instead runs the
code as Python, where `math.log(-1.0)` raises and `math.floor` gives an int: there `math`
is a namespace of numpy's functions with the device's meaning, so the simulator computes
what the GPU computes.
"""
from __future__ import annotations

import math as _math
from types import SimpleNamespace

import numpy as np
from numba import config, cuda

if config.ENABLE_CUDASIM:
    math = SimpleNamespace(
        sqrt=np.sqrt, exp=np.exp, log=np.log, sin=np.sin, cos=np.cos, tan=np.tan,
        atan2=np.arctan2, floor=np.floor, ceil=np.ceil, trunc=np.trunc, fmod=np.fmod,
        pow=np.power, isnan=np.isnan, isfinite=np.isfinite, copysign=np.copysign)
else:
    math = _math


@cuda.jit(device=True)
def rint(x):
    """`np.rint` in f64: the nearest integral float, half to even, the sign of zero kept
    (libdevice's `rint` has no simulator version; `round(x)` gives an int64)."""
    if not abs(x) < 4503599627370496.0:      # 2**52 and beyond are integral; NaN; infinities
        return x
    r = math.floor(x + 0.5)                  # exact below 2**52
    if r - x == 0.5 and math.fmod(r, 2.0) != 0.0:
        r -= 1.0                             # a half: to the even neighbour
    return math.copysign(r, x)
