"""The `cuda` target's library functions on the device (backends/cuda/library.py): `sort`,
`sort_by`, `scatter`, `reduce_by_index`, whole and per segment, on edge cases (empty,
duplicates, out-of-range indices, NaN and -0.0 keys, negative and extreme integers, i32/f32/
f64/i64, stability), under the CUDA simulator in a child process (this file run as a
script): programs print what `interp` prints, and the device ran them (not the host
fallback); the per-segment forms, which programs reach only with segmented kernels, are
called directly against the numpy target's library (the semantics `interp` is checked
against). The radix sort (longer segments) is run by lowering `sort.RANK_MAX`. Every new
kernel compiles to PTX for sm_80 and sm_90 and assembles with ptxas.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile

import numpy as np
import pytest

pytestmark = pytest.mark.cuda

PRELUDE = "let nan = 0.0 / 0.0\nlet inf = 1.0 / 0.0\n"

# name: (accel expression, how many library calls must run on the device)
PROGRAMS = {
    "sort_floats": ("sort [2.5, -0.0, nan, 0.0, -inf, inf, -2.5, 0.5, -0.0, nan, 0.0]", 1),
    "sort_ints": ("sort [3, -1, 2, -1, 0, -9223372036854775808, 9223372036854775807, 3]", 1),
    "sort_f32_i32": ("(sort (map f32 [2.5, -0.0, nan, 0.0, -1.5]), sort (map i32 [3, -1, 2, "
                     "-2147483648, 2147483647]))", 2),
    "sort_empty_and_one": ("(sort ([] : []f64), sort [7], sort_by (\\x -> -x) ([] : []i64))",
                           1),
    "sort_by_stable": ("sort_by (\\(k, v) -> k) (zip [2, 1, 2, 1, 0, 2, 1] "
                       "[0, 1, 2, 3, 4, 5, 6])", 1),
    "sort_by_float_key_stable": ("sort_by (\\(k, v) -> k) (zip [0.0, -0.0, nan, 1.0, nan, "
                                 "0.0, -1.0] [0, 1, 2, 3, 4, 5, 6])", 1),
    "sort_tuples": ("(sort (zip [2, 1, 2, 1] [0.5, nan, -0.5, -1.0]), "
                    "sort_by (\\(a, b, c) -> (b, a)) (zip3 [3, 1, 2, 1] [1, 2, 1, 2] "
                    "[10, 20, 30, 40]))", 2),
    "sort_bool_keys": ("sort_by (\\(b, i) -> b) (zip [true, false, true, false] "
                       "[0, 1, 2, 3])", 1),
    "scatter_last_write_wins": ("(scatter [0, 0, 0, 0] [2, 0, 2, 9, -1, 2, 0] "
                                "[1, 2, 3, 4, 5, 6, 7], scatter [1.5, 2.5] [1, 1] "
                                "[-0.0, nan])", 2),
    "scatter_tuples_and_empty": ("(scatter (zip [1, 2, 3] [1.0, 2.0, 3.0]) [2, 0, 2] "
                                 "(zip [7, 8, 9] [0.5, 0.25, 0.125]), scatter [1, 2] "
                                 "([] : []i64) ([] : []i64), scatter (map i32 [1, 2]) [1] "
                                 "(map i32 [-5]))", 3),
    "rbi_int_atomics": ("(reduce_by_index [0, 0, 0] (+) 0 [0, 2, 2, 5, -1, 0] "
                        "[9223372036854775807, 5, -7, 1, 1, 1], reduce_by_index [5, 5] min "
                        "100 [1, 1, 0, 1] [7, 3, 9, -4], reduce_by_index (map i32 [0, 0]) max "
                        "(i32 0) [1, 0, 1] (map i32 [-3, -2147483648, 8]))", 3),
    "rbi_float_order": ("(reduce_by_index [0.0, 1.0, 2.0] (+) 0.0 [0, 2, 5, -1, 0, 2, 0] "
                        "[0.1, 0.2, 0.3, 0.4, 1e16, 1.0, -1e16], reduce_by_index "
                        "(map f32 [0.0, 0.0]) (+) (f32 0.0) [1, 1, 1, 0] "
                        "(map f32 [1e8, 1.0, -1e8, 0.1]))", 2),
    "rbi_float_min_max_mul": ("(reduce_by_index [0.0, 0.0, 1.0] max (0.0 - inf) [0, 0, 1, 1] "
                              "[1.0, nan, -0.0, 0.0], reduce_by_index [0.0, 0.0] min inf "
                              "[0, 1, 1] [-0.0, 0.0, -0.0], reduce_by_index [1, 2] (*) 1 "
                              "[0, 0, 1, 7] [3, 4, 5, 6])", 3),
    "rbi_empty": ("(reduce_by_index [1.0, 2.0] (+) 0.0 ([] : []i64) ([] : []f64), "
                  "reduce_by_index ([] : []i64) (+) 0 [0, 1] [3, 4])", 0),
}
# run again with the radix sort (each sort of keys of both signs takes 64 passes of three
# launches, 10-15 s in the simulator: a few cases only)
RADIX = ("sort_floats", "sort_by_stable", "sort_tuples", "rbi_float_order")
SEGMENT_RADIX = ("seg_sort_by_tuple",)


def _run_program(text: str, target: str) -> str:
    from accel_kernel.cli import main
    with tempfile.NamedTemporaryFile("w", suffix=".accel", delete=False) as f:
        f.write(text)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                main(["run", f.name, "--target", target])
            except SystemExit:
                pass
    finally:
        os.unlink(f.name)
    return out.getvalue()


def _counting() -> list[str]:
    """Which calls of `library.library` / `seg_library` ran on the device (from here on)."""
    from accel_kernel.backends.cuda import library as L
    ran: list[str] = []
    for name in ("library", "seg_library"):
        original = getattr(L, name)

        def counted(*args, original=original, **kw):
            out = original(*args, **kw)
            if out is not None:
                ran.append(args[1])
            return out
        setattr(L, name, counted)
    return ran


def _segment_cases(only: tuple[str, ...] | None = None) -> dict[str, str]:
    """Per-segment sort, sort_by and scatter called directly, against the numpy target's."""
    from accel_kernel.backends.cuda import library as L
    from accel_kernel.backends.numpy import library as N
    offsets = np.array([0, 3, 3, 8, 9, 12], np.int64)
    floats = np.array([2.0, np.nan, -0.0, 5.0, 0.0, -0.0, np.nan, -1.0, 4.0, 1.0, 1.0, 0.5])
    ints = np.array([3, -1, 3, 0, 7, -9, 7, 7, 1, 2, 2, -2**63], np.int64)
    cases = {
        "seg_sort_floats": ("sort", offsets, floats, []),
        "seg_sort_i32": ("sort", offsets, ints.astype(np.int32), []),
        "seg_sort_by_tuple": ("sort_by", offsets, np.arange(12), [(ints, floats)]),
        "seg_sort_by_f32": ("sort_by", offsets, (ints, floats),
                            [floats.astype(np.float32)]),
        "seg_scatter": ("scatter", np.array([0, 2, 2, 5], np.int64), np.arange(5.0),
                        [np.array([0, 3, 3, 5], np.int64), np.array([1, 1, -1, 0, 2]),
                         np.array([0, 3, 3, 5], np.int64), np.array([8.0, 9.0, 7.0, -1.0,
                                                                     np.nan])]),
    }
    results = {}
    for name, (fn, offs, values, args) in cases.items():
        if only is not None and name not in only:
            continue
        got = L.seg_library(None, fn, offs, values, args, (), None)
        want = N.seg_library(None, fn, offs, values, args, (), None)
        results[name] = "ok" if got is not None and _same(got, want) else f"{got} != {want}"
    return results


def _pool_cases() -> dict[str, str]:
    """Through a device pool: the same values; every buffer freed when the call ends (an
    alloc and a free event each); a budget too small for the call is the accel error
    OutOfMemory."""
    from accel_kernel.backends.cuda import library as L
    from accel_kernel.backends.cuda.memory import NumbaAllocator
    from accel_kernel.lang.errors import OutOfMemory
    from accel_kernel.runtime.budget import DevicePool
    rng = np.random.default_rng(5)
    keys, ix = rng.normal(size=40), rng.integers(-2, 12, size=40)
    calls = {"pool_sort": ("sort", [keys]),
             "pool_scatter": ("scatter", [np.zeros(10), ix, keys]),
             "pool_rbi_float": ("reduce_by_index", [np.zeros(10), 0.0, ix, keys]),
             "pool_rbi_int": ("reduce_by_index", [np.zeros(10, np.int64), 0, ix, ix])}
    fns = (_plus(),)
    results = {}
    for name, (fn, args) in calls.items():
        pool = DevicePool(NumbaAllocator(), budget=1 << 20)
        with pool.events.recording() as events:
            got = L.library(None, fn, args, fns, None, pool)
        kinds = [e.kind for e in events]
        want = L.library(None, fn, args, fns, None, None)
        good = (got is not None and _same(got, want) and pool.live_bytes == 0
                and kinds.count("alloc") == kinds.count("free") > 0)
        results[name] = "ok" if good else f"{got} != {want}, {kinds}, {pool.describe()}"
    try:
        L.library(None, "sort", [keys], (), None, DevicePool(NumbaAllocator(), budget=200))
        results["pool_too_small"] = "no error"
    except OutOfMemory:
        results["pool_too_small"] = "ok"
    return results


def _plus():
    """The ScalarFn of `(+)`, as the flattener gives `reduce_by_index`."""
    from accel_kernel.ir.flat import ScalarFn
    from accel_kernel.lang import ast
    return ScalarFn((), ast.OpFunc("+"), ())


def _same(a, b) -> bool:
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(_same, a, b))
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()     # -0.0 and NaN bits too


def child() -> dict[str, str]:
    from accel_kernel.backends.cuda import sort
    ran = _counting()
    results = {}
    for label, names in (("", list(PROGRAMS)), ("radix ", RADIX)):
        sort.RANK_MAX = 2048 if not label else 0
        for name in names:
            text, on_device = PROGRAMS[name]
            text = PRELUDE + text + "\n"
            ran.clear()
            want, got = _run_program(text, "interp"), _run_program(text, "cuda")
            if got != want:
                results[label + name] = f"cuda printed {got!r}, interp {want!r}"
            elif len(ran) < on_device:
                results[label + name] = f"only {ran} ran on the device"
            else:
                results[label + name] = "ok"
    sort.RANK_MAX = 2048
    results.update(_segment_cases())
    sort.RANK_MAX = 2
    results.update({f"radix {k}": v for k, v in _segment_cases(SEGMENT_RADIX).items()})
    sort.RANK_MAX = 2048
    results.update(_pool_cases())
    return results


@pytest.fixture(scope="module")
def simulated_results() -> dict[str, str]:
    pytest.importorskip("numba.cuda")
    from cuda_child import on_the_simulator
    return on_the_simulator(__file__, timeout=900)


def test_every_case_on_the_simulator(simulated_results):
    expected = ({*PROGRAMS} | {f"radix {n}" for n in RADIX}
                | {"seg_sort_floats", "seg_sort_i32", "seg_sort_by_tuple", "seg_sort_by_f32",
                   "seg_scatter"})
    expected |= {f"radix {n}" for n in SEGMENT_RADIX}
    expected |= {"pool_sort", "pool_scatter", "pool_rbi_float", "pool_rbi_int",
                 "pool_too_small"}
    assert set(simulated_results) == expected
    bad = {k: v for k, v in simulated_results.items() if v != "ok"}
    assert not bad


def test_handles():
    from accel_kernel.backends.cuda.library import handles
    from accel_kernel.ir import flat as F
    assert handles(F.Library("sort", (), ()))
    assert handles(F.Library("reduce_by_index", (), ()))
    assert not handles(F.Library("transpose", (), ()))
    assert handles(F.SegLibrary("scatter", None, None, (), ()))
    assert not handles(F.SegLibrary("reduce_by_index", None, None, (), ()))


def test_every_kernel_compiles_to_ptx_and_assembles():
    """The library's kernels and templates, for every dtype they are launched with, through
    NVVM and ptxas for sm_80 and sm_90 (the simulator accepts code the real compiler
    refuses); each kernel lowered once for both."""
    numba_cuda = pytest.importorskip("numba.cuda")
    from accel_kernel.backends.cuda import library as L
    from accel_kernel.backends.cuda import primitives as P
    from accel_kernel.backends.cuda import ptx
    from accel_kernel.backends.cuda.simulator import simulated
    if simulated() or not hasattr(numba_cuda, "compile_ptx"):
        pytest.skip("numba.cuda is the simulator: no NVVM")
    kinds = [("radix", "int64"), ("radix", "float64"), ("rank", "int64"),
             ("rank", "float64")]
    kinds += [(f"atomic_{op}", d) for op in ("add", "min", "max") for d in P.ATOMIC_TYPES]
    kinds += [(f"runs_{op}", d) for op in ("add", "mul", "min", "max") for d in L.VALUE_TYPES]
    sources = [s for kind, dtype in kinds for s in L.sources(kind, dtype, P.BLOCK,
                                                            P.MAX_BLOCKS)]
    kernels = list(L.kernel_signatures())
    for source in sources:
        kernels += source.kernels
    ns = P.load([L.KERNELS, *[s.text for s in sources]], simulate=False)
    reports = ptx.resources_for(ns, kernels, ((8, 0), (9, 0)))
    for cc, arch in (((8, 0), "sm_80"), ((9, 0), "sm_90")):
        assert len(reports[cc]) == len(kernels)
        for report in reports[cc]:
            assert report.arch == arch and report.spill_stores == 0, report.show()


def test_on_a_gpu():
    """Large inputs on a real GPU (radix sorts, many blocks, contended atomics), against the
    numpy target's library; skips without a GPU."""
    numba_cuda = pytest.importorskip("numba.cuda")
    from accel_kernel.backends.cuda.simulator import simulated
    if simulated() or not numba_cuda.is_available():
        pytest.skip("no GPU")
    from accel_kernel.backends.cuda import library as L
    from accel_kernel.backends.numpy import library as N
    rng = np.random.default_rng(11)
    n = 300_000
    floats = rng.normal(size=n)
    floats[::97] = np.nan
    floats[::89] = -0.0
    ints = rng.integers(-1000, 1000, size=n)
    ix = rng.integers(-5, 5000, size=n)
    offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 5000, size=100))])
    offsets[-1] = n
    offsets = np.minimum(offsets, n)
    calls = [("sort", [floats]), ("sort", [ints.astype(np.int32)]),
             ("sort_by", [(ints // 7, floats), ints]),
             ("scatter", [np.zeros(5000), ix, floats]),
             ("reduce_by_index", [np.zeros(5000), 0.0, ix, floats]),
             ("reduce_by_index", [np.zeros(5000, np.int64), 0, ix, ints])]
    for name, args in calls:
        if name == "reduce_by_index":        # the numpy target's rule: ufunc.at, in order
            dest, _, indices, values = args
            want, ok = dest.copy(), (indices >= 0) & (indices < len(dest))
            np.add.at(want, indices[ok], values[ok])
        else:
            want = N.library(None, name, args, (), None)
        assert _same(L.library(None, name, args, (_plus(),), None), want), name
    for name, args in (("sort", []), ("sort_by", [ints])):
        want = N.seg_library(None, name, offsets, floats, args, (), None)
        got = L.seg_library(None, name, offsets, floats, args, (), None)
        assert got is not None and _same(got[1], want[1]), name


if __name__ == "__main__":
    print(json.dumps(child()))
