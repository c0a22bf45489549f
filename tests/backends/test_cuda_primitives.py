"""The `cuda` target's device primitives (backends/cuda/primitives.py, segmented.py): run
under numba's simulator (with the warp intrinsics of backends/cuda/simulator.py) against
numpy on small inputs, and every kernel template compiled to PTX for sm_80 and sm_90 and
assembled by ptxas (no GPU needed for either)."""
from __future__ import annotations


import numpy as np
import pytest

numba_cuda = pytest.importorskip("numba.cuda")

from accel_kernel.backends.cuda import primitives as P  # noqa: E402
from accel_kernel.backends.cuda import ptx  # noqa: E402
from accel_kernel.backends.cuda import segmented as S  # noqa: E402
from accel_kernel.backends.cuda import sort  # noqa: E402
from accel_kernel.backends.cuda.blocks import Operator, numba_type  # noqa: E402
from accel_kernel.backends.cuda.simulator import simulated  # noqa: E402

pytestmark = pytest.mark.cuda

BLOCK = 32          # one warp per block: the simulator runs a Python thread per GPU thread
MAX_BLOCKS = 2      # so that inputs of a few tiles give blocks with several tiles each

OPS = '''
@jit(device=True)
def add(a, b, err):
    return a + b


@jit(device=True)
def biggest(a, b, err):
    return a if a >= b else b


@jit(device=True)
def last(a, b, err):
    # associative, not commutative: the last non-zero value
    return b if b != 0 else a


@jit(device=True)
def either(a, b, err):
    return a or b


@jit(device=True)
def get(i, a, err):
    return a[i]


@jit(device=True)
def bucket(i, ix, vs, err):
    return ix[i]


@jit(device=True)
def weight(i, ix, vs, err):
    return vs[i]


@jit(device=True)
def positive(i, a, err):
    return a[i] > 0
'''

F64, I64 = ("float64[::1]",), ("int64[::1]",)
CASES = {   # name: (operator, element type, numpy reference of the reduction and the scan)
    "sum_f": (Operator("add", "float64", "0.0"), F64, np.sum, np.cumsum),
    "sum_i": (Operator("add", "int64", "0"), I64, np.sum, np.cumsum),
    "max_f": (Operator("biggest", "float64", "-math.inf"), F64,
              lambda a: np.max(a, initial=-np.inf), np.maximum.accumulate),
    "last_i": (Operator("last", "int64", "0"), I64,
               lambda a: _last(a)[-1] if len(a) else 0, lambda a: _last(a)),
}


def _last(a: np.ndarray) -> np.ndarray:
    out, run = np.zeros_like(a), 0
    for k, x in enumerate(a):
        run = x if x != 0 else run
        out[k] = run
    return out


def _sources(block: int = BLOCK, max_blocks: int = MAX_BLOCKS) -> list[P.Source]:
    out = []
    for name, (op, types, _, _) in CASES.items():
        elem = P.Element("get", ("a",), types)
        out += [P.reduction(f"red_{name}", op, elem, block, max_blocks),
                P.scan(f"scan_{name}", op, elem, block, max_blocks),
                S.seg_reduce(f"seg_{name}", op, elem, block),
                S.seg_scan(f"segscan_{name}", op, elem, block)]
    sum_f = CASES["sum_f"][0]
    elem = P.Element("get", ("a",), F64)
    out += [P.reduction("red_comm", sum_f, elem, block, max_blocks, commutative=True),
            P.filter_("keep", P.Element("positive", ("a",), F64), elem, "float64", block,
                      max_blocks)]
    pair = ("ix", "vs"), I64 + I64
    out += [P.reduce_by_index(f"hist_{kind}", kind, "int64", P.Element("bucket", *pair),
                              P.Element("weight", *pair), block, max_blocks)
            for kind in P.ATOMIC]
    out += [sort.radix_sort(f"sort_{dtype}", dtype, block, max_blocks)
            for dtype in sort.SORTED_TYPES]
    out += [sort.rank_sort(f"rank_{dtype}", dtype, block, max_blocks)
            for dtype in sort.SORTED_TYPES]
    out.append(P.reduce_by_index_sorted("runs_add", "add", "float64", block, max_blocks))
    return out


@pytest.fixture(scope="module")
def sim():
    from numba.cuda import simulator
    ns = P.load([OPS] + [s.text for s in _sources()], simulate=True)
    return ns, simulator


def _data(name: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    if CASES[name][1] == I64:
        return rng.integers(-3, 4, size=n).astype(np.int64)
    return rng.normal(size=n)


def _run(sim, launcher, *args, **kw):
    ns, simulator = sim
    err = simulator.to_device(np.zeros(3, np.int64))
    dev = [simulator.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    out = ns[launcher](*dev, lambda count, dtype: simulator.device_array(count, dtype), err,
                       **kw)
    assert err.copy_to_host()[0] == 0
    return out


def _close(got, want, name) -> None:
    if CASES[name][1] == F64:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


# the kernels compiled to PTX (each compilation takes 0.1-0.3 s): every template once, and
# the reductions and scans with other operators and element types (booleans: `red_any`)
PTX_CHECKED = {"red_sum_f", "scan_sum_f", "seg_sum_f", "segscan_sum_f", "red_comm", "keep",
               "red_max_f", "hist_add", "hist_min", "hist_max", "sort_float64", "rank_float64",
               "runs_add"}
SIZES = (0, 1, 31, 33, 130)     # 130: five tiles of 32 over two blocks


@pytest.mark.parametrize("name", list(CASES))
def test_reduction(sim, name):
    ref = CASES[name][2]
    for n in SIZES:
        a = _data(name, n)
        got = _run(sim, f"red_{name}", n, a).copy_to_host()
        _close(got[0], ref(a), name)


def test_blocks_of_several_warps():
    """Blocks of two warps: the warps' totals meet through shared memory (in order: the
    operator does not commute)."""
    from numba.cuda import simulator
    op, types, reduce_ref, scan_ref = CASES["last_i"]
    elem = P.Element("get", ("a",), types)
    ns = P.load([OPS, P.reduction("red2", op, elem, 64, 2).text,
                 P.scan("scan2", op, elem, 64, 2).text], simulate=True)
    a = _data("last_i", 200)
    a[150:] = 0                          # the last non-zero value is in an earlier warp
    got = _run((ns, simulator), "red2", len(a), a).copy_to_host()[0]
    assert got == reduce_ref(a)
    out, total = _run((ns, simulator), "scan2", len(a), a)
    np.testing.assert_array_equal(out.copy_to_host(), scan_ref(a))
    assert total.copy_to_host()[0] == reduce_ref(a)


def test_reduction_commutative_grid_stride(sim):
    for n in (0, 33, 200):
        a = _data("sum_f", n)
        _close(_run(sim, "red_comm", n, a).copy_to_host()[0], np.sum(a), "sum_f")


@pytest.mark.parametrize("name", ["sum_f", "last_i"])
def test_scan_inclusive_and_exclusive(sim, name):
    op, _, reduce_ref, scan_ref = CASES[name]
    for n in (0, 33, 130):
        a = _data(name, n)
        out, total = _run(sim, f"scan_{name}", n, a)
        _close(out.copy_to_host(), scan_ref(a), name)
        _close(total.copy_to_host()[0], reduce_ref(a), name)
    for n in (0, 130):
        a = _data(name, n)
        out, _ = _run(sim, f"scan_{name}", n, a, exclusive=True)
        ne = -np.inf if name == "max_f" else 0
        want = np.concatenate([[ne], scan_ref(a)[:-1]]) if n else scan_ref(a)
        _close(out.copy_to_host(), want, name)


def test_filter(sim):
    for n in (0, 1, 33, 130):
        a = _data("sum_f", n)
        out, count = _run(sim, "keep", n, a)
        assert count == int((a > 0).sum())
        np.testing.assert_array_equal(out.copy_to_host()[:count], a[a > 0])


@pytest.mark.parametrize("kind", list(P.ATOMIC))
def test_reduce_by_index_atomics(sim, kind):
    """Integer `+`, `min`, `max` by atomics; out-of-range indices (negative, past the end)
    are ignored; `out` (the destination's copy) is updated in place."""
    ns, simulator = sim
    rng = np.random.default_rng(7)
    ix = rng.integers(-2, 7, size=75).astype(np.int64)
    vs = rng.integers(-50, 50, size=75).astype(np.int64)
    dest = rng.integers(-5, 5, size=5).astype(np.int64)
    want = dest.copy()
    ufunc = {"add": np.add, "min": np.minimum, "max": np.maximum}[kind]
    ok = (ix >= 0) & (ix < len(dest))
    ufunc.at(want, ix[ok], vs[ok])
    out = simulator.to_device(dest.copy())
    err = simulator.to_device(np.zeros(3, np.int64))
    ns[f"hist_{kind}"](len(ix), simulator.to_device(ix), simulator.to_device(vs), out, err)
    np.testing.assert_array_equal(out.copy_to_host(), want)
    with pytest.raises(NotImplementedError):
        P.reduce_by_index("h", kind, "float64", P.Element("bucket"), P.Element("weight"))


def test_radix_sort_is_stable(sim):
    """Integers in [0, 128) take 7 passes: the words differ in no higher bit; a pass count
    found too small (the 4 bits of the others) would misplace the 100 (the simulator takes
    ~0.1 s a launch: the 64 passes of any keys are the same kernels)."""
    for n in (0, 45):
        keys = np.random.default_rng(n).integers(0, 16, size=n).astype(np.int64)
        keys[:1] = 100
        order = _run(sim, "sort_int64", n, keys).copy_to_host()
        np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))


def test_radix_sort_words_order_floats_and_integers(sim):
    """The words' unsigned order is the keys' order: negative numbers, -0.0 equal to 0.0,
    infinities, NaN last."""
    ns, simulator = sim
    floats = np.array([0.5, -0.0, np.nan, 0.0, -np.inf, np.inf, -2.5, 0.5, -np.nan, -1e-300,
                       1e300, 5e-324, -0.0])
    ints = np.array([3, -1, 5, 3, -2**63, 2**63 - 1, 0, -1], dtype=np.int64)
    for keys, name in ((floats, "sort_float64_words"), (ints, "sort_int64_words")):
        n = len(keys)
        words, order = simulator.device_array(n, np.int64), simulator.device_array(n, np.int64)
        ns[name][1, BLOCK](n, simulator.to_device(keys.view(np.int64)), words, order,
                           simulator.to_device(np.zeros(3, np.int64)))
        by_words = np.argsort(words.copy_to_host().view(np.uint64), kind="stable")
        np.testing.assert_array_equal(by_words, np.argsort(keys, kind="stable"))
        np.testing.assert_array_equal(order.copy_to_host(), np.arange(n))


def test_rank_sort_per_segment(sim):
    """The order within each segment (empty ones too): stable, NaN last, -0.0 equal to 0.0;
    integers with the extremes."""
    offsets = _segments([0, 5, 1, 0, 40, 3])
    floats = np.random.default_rng(4).integers(-3, 4, size=49).astype(np.float64)
    floats[[1, 7, 20]] = np.nan
    floats[[2, 9, 30]] = -0.0
    ints = np.random.default_rng(5).integers(-3, 4, size=49).astype(np.int64)
    ints[[3, 8]] = -2**63, 2**63 - 1
    seg = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    for keys, name in ((floats, "rank_float64"), (ints, "rank_int64")):
        order = _run(sim, name, len(keys), keys, len(offsets) - 1, offsets).copy_to_host()
        np.testing.assert_array_equal(order, np.lexsort((keys, seg)))
    assert _run(sim, "rank_int64", 0, ints[:0], 1, np.zeros(2, np.int64)).shape == (0,)


def test_reduce_by_index_sorted_folds_in_input_order(sim):
    """Each bucket folded from the destination's value in input order, as a sequential
    loop (float sums to the last bit); bucket m (out of range) left alone."""
    ns, simulator = sim
    rng = np.random.default_rng(8)
    m = 6
    keys = rng.integers(0, m + 1, size=90).astype(np.int64)
    values = rng.normal(size=90) * 10.0 ** rng.integers(-8, 9, size=90)
    dest = rng.normal(size=m)
    want = dest.copy()
    for k, v in zip(keys, values):
        if k < m:
            want[k] = want[k] + v
    order = np.argsort(keys, kind="stable")
    out = simulator.to_device(dest.copy())
    ns["runs_add"](len(keys), simulator.to_device(order), simulator.to_device(keys),
                   simulator.to_device(values), out, simulator.to_device(np.zeros(3, np.int64)))
    assert out.copy_to_host().tobytes() == want.tobytes()


def _segments(lengths: list[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def _seg_ref(name: str, a: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    ref = CASES[name][2]
    return np.array([ref(a[lo:hi]) for lo, hi in zip(offsets[:-1], offsets[1:])],
                    dtype=a.dtype)


@pytest.mark.parametrize("name", ["sum_f", "sum_i", "max_f", "last_i"])
def test_segmented_reduce_every_variant(sim, name):
    lengths = [0, 3, 70, 0, 1, 33, 0]
    offsets = _segments(lengths)
    a = _data(name, int(offsets[-1]))
    for variant in ("thread", "warp", "block"):
        got = _run(sim, f"seg_{name}", variant, len(lengths), offsets, a).copy_to_host()
        _close(got, _seg_ref(name, a, offsets), name)
    empty = _run(sim, f"seg_{name}", "warp", 0, np.zeros(1, np.int64), a[:0])
    assert empty.copy_to_host().shape == (0,)


@pytest.mark.parametrize("name", ["sum_f", "last_i"])
def test_segmented_reduce_rows(sim, name):
    for rows, width in ((3, 40), (5, 0), (0, 4)):
        a = _data(name, rows * width)
        got = _run(sim, f"seg_{name}_rows_launch", rows, width, a).copy_to_host()
        _close(got, _seg_ref(name, a, _segments([width] * rows)), name)


@pytest.mark.parametrize("name", ["sum_i", "max_f", "last_i"])
def test_segmented_scan(sim, name):
    scan_ref = CASES[name][3]
    lengths = [0, 5, 40, 0, 1]
    offsets = _segments(lengths)
    a = _data(name, int(offsets[-1]))
    want = np.concatenate([scan_ref(a[lo:hi]) for lo, hi in zip(offsets[:-1], offsets[1:])])
    for variant in ("thread", "block"):
        got = _run(sim, f"segscan_{name}", variant, len(lengths), offsets, len(a), a)
        _close(got.copy_to_host(), want, name)
    got = _run(sim, f"segscan_{name}", "block", len(lengths), offsets, len(a), a,
               exclusive=True).copy_to_host()
    ne = -np.inf if name == "max_f" else 0
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        if hi > lo:
            _close(got[lo:hi], np.concatenate([[ne], scan_ref(a[lo:hi])[:-1]]), name)


def test_chooser():
    of = S.SegmentStats.of
    assert S.choose(of(np.array([4, 4, 4]))) == "rows"
    assert S.choose(of(np.array([0, 3, 5, 1]))) == "thread"
    assert S.choose(of(np.array([0, 3, 300, 1]))) == "warp"     # one long segment: not a thread
    assert S.choose(of(np.array([100, 200, 5]))) == "warp"
    assert S.choose(of(np.array([5000, 1, 3000]))) == "block"
    assert S.choose(of(np.array([], dtype=np.int64))) == "thread"
    assert S.SegmentStats.of(np.array([2, 6])) == S.SegmentStats(2, 4.0, 6, False)
    assert S.choose_scan(of(np.array([0, 3, 5, 1]))) == "thread"
    assert S.choose_scan(of(np.array([4, 4, 4000]))) == "block"


def test_templates_refuse_bad_blocks_and_types():
    with pytest.raises(ValueError):
        P.reduction("r", CASES["sum_f"][0], P.Element("get", ("a",), F64), block=48)
    with pytest.raises(NotImplementedError):
        Operator("add", "complex128", "0")
    assert numba_type("np.float64") == "float64" and numba_type("np.bool_") == "boolean"


def test_parse_ptxas_report():
    report = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z3foo' for 'sm_80'
ptxas info    : Function properties for _Z3foo
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 256 bytes smem, 380 bytes cmem[0]
ptxas info    : Compiling entry function '_Z3bar' for 'sm_80'
ptxas info    : Function properties for _Z3bar
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, 380 bytes cmem[0]
"""
    foo, bar = ptx.parse_report(report)
    assert foo == ptx.Resources("_Z3foo", "sm_80", 40, 256, 16, 8, 4)
    assert bar == ptx.Resources("_Z3bar", "sm_80", 12, 0, 0, 0, 0)


@pytest.mark.skipif(simulated(), reason="numba.cuda is the simulator: no NVVM")
@pytest.mark.parametrize("cc", ptx.CAPABILITIES)
def test_every_kernel_compiles_to_ptx_and_assembles(cc):
    """Each kernel template (block of 256, as launched on a GPU) through NVVM and ptxas; the
    real compiler refuses what the simulator accepts (allocations, numpy calls)."""
    arch = f"sm_{cc[0]}{cc[1]}"
    sources = [s for s in _sources(P.BLOCK, P.MAX_BLOCKS) if s.launcher in PTX_CHECKED]
    sources.append(P.reduction("red_any", Operator("either", "boolean", "False"),
                               P.Element("positive", ("a",), F64)))
    ns = P.load([OPS] + [s.text for s in sources], simulate=False)
    for source in sources:
        for kernel, res in zip(source.kernels, ptx.resources(ns, source.kernels, cc)):
            assert kernel.name in res.function and res.arch == arch
            assert res.spill_stores == 0 and res.registers <= 128, res.show()
            assert res.shared <= 8 * (P.BLOCK // 32) * 8, res.show()


@pytest.mark.skipif(simulated() or not numba_cuda.is_available(), reason="no GPU")
def test_on_a_gpu():
    """The templates as launched on a GPU (blocks of 256), on inputs of many blocks."""
    cuda = numba_cuda
    sources = [s for s in _sources(P.BLOCK, P.MAX_BLOCKS)
               if s.launcher in ("red_sum_i", "red_last_i", "scan_last_i", "seg_sum_f",
                                 "keep", "sort_float64")]
    ns = P.load([OPS] + [s.text for s in sources], simulate=False)

    def run(launcher, *args, **kw):
        err = cuda.to_device(np.zeros(3, np.int64))
        dev = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
        out = ns[launcher](*dev, lambda count, dtype: cuda.device_array(count, dtype), err,
                           **kw)
        assert err.copy_to_host()[0] == 0
        return out
    n = 1_000_003
    ints = np.random.default_rng(1).integers(-3, 4, size=n).astype(np.int64)
    floats = np.random.default_rng(2).normal(size=n)
    assert run("red_sum_i", n, ints).copy_to_host()[0] == ints.sum()
    assert run("red_last_i", n, ints).copy_to_host()[0] == _last(ints)[-1]
    out, _ = run("scan_last_i", n, ints)
    np.testing.assert_array_equal(out.copy_to_host(), _last(ints))
    out, count = run("keep", n, floats)
    np.testing.assert_array_equal(out.copy_to_host()[:count], floats[floats > 0])
    lengths = np.random.default_rng(3).integers(0, 3000, size=500)
    offsets = _segments(list(lengths))
    values = floats[:offsets[-1]]
    for variant in ("thread", "warp", "block"):
        got = run("seg_sum_f", variant, len(lengths), offsets, values).copy_to_host()
        np.testing.assert_allclose(got, _seg_ref("sum_f", values, offsets), rtol=1e-9)
    keys = floats[:100_000]
    np.testing.assert_array_equal(run("sort_float64", len(keys), keys).copy_to_host(),
                                  np.argsort(keys, kind="stable"))
