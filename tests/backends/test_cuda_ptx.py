"""Every kernel the `cuda` target generates compiles for real GPUs: for every program of
tests/programs/, every `@cuda.jit` kernel of its module is typed and lowered by numba.cuda,
compiled by NVVM to PTX for sm_80 and assembled by the wheel's `ptxas`, failing on any
exception (the simulator accepts code the real compiler refuses), each kernel once a test
run up to names (`check_compiles`). No GPU is needed. sm_90 too for the kernels of the
scalar builtins and of the programs of every kernel kind (`BOTH_ARCHS`): numba's lowering
does not tell sm_80 from sm_90 (`ptx.compile_ptx_for`), so the second architecture of every
kernel would only be NVVM's and ptxas' time again (a fifth of the suite's PTX time). Also:
one map over every scalar builtin in f32, f64 and integers, the device dialect, the no-GPU
line, `%show ptx` and `accel stages --format ptx`.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from accel_kernel.session import Session

pytestmark = pytest.mark.cuda

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from test_programs import PROGRAMS  # noqa: E402


# every scalar builtin, on f64, f32 and integers, in one map
BUILTINS = """
let xs = [0.5, 1.5, -2.25, 3.0, 2.5, -0.5]
let ys = map f32 xs
let ns = [7, -3, 12, 5, 0, -9223372036854775807]
let a = map (\\x -> (sqrt x, exp x + log x, sin x + cos x + tan x + atan2 x 1.0, floor x,
                    ceil x, round x, abs x + min x pi + max x 0.0, x ** 1.5, x % 0.7,
                    x / 0.0, i64 (x * 1.0e30), i32 x)) xs
let b = map (\\y -> (sqrt y + exp y, log y, floor y + ceil y, round y, abs y + min y one,
                    y ** y, y % y, i64 y, y / zero)) ys
let c = map (\\n -> (n / 2 + n % 3, n ** 2 + n ** n, (n << 3) + (n >> 1), abs n + min n 4
                    + max n 0, i64 (i32 n * i32 n), n * 4611686018427387904 - n,
                    if n > 0 && n != 5 || n == -3 then 1 else 0)) ns
(a, b, c)
"""


def cuda_module(text: str, name: str):
    from accel_kernel.backends.cuda.codegen import generate
    stages = Session(target="interp").program_stages(text, name, stop_after="fuse",
                                                     target="cuda")
    return generate(stages[-1].program)


# The keys (`ptx.kernel_keys`: a kernel up to names) of the kernels compiled and assembled
# in this test run: by this process, and by every xdist worker of the run (an empty file
# per key in a directory of the run, made once the kernel has passed)
_CHECKED: set[str] = set()
CAPABILITIES = ((8, 0), (9, 0))              # ptx.CAPABILITIES (imported when first used)
# programs whose kernels are checked for both: together, kernels of every kind
BOTH_ARCHS = {"error_hoisted_loop_reached", "matmul"}
_DEVICE_FUNCTIONS: dict = {}    # by key: compiled once per process (`ptx.compile_module`)


def _run_record() -> Path | None:
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        return None
    record = Path(tempfile.gettempdir()) / f"accel-ptx-checked-{run}"
    record.mkdir(exist_ok=True)
    return record


def check_compiles(module, ccs=((8, 0),)) -> int:
    """Every kernel of `module` is typed and lowered by numba.cuda, compiled by NVVM for
    each of `ccs` (sm_80) and assembled by ptxas, with no exception: the kernels that are
    not the same up to names as one already checked in this test run (for these
    architectures) are compiled here (how many: the result), each once."""
    from accel_kernel.backends.cuda import ptx
    assert len(module.params) >= len(module.kernels)
    record = _run_record()

    def checked(key: str) -> bool:
        return key in _CHECKED or (record is not None and (record / key).exists())
    arch = "".join(f"-sm_{a}{b}" for a, b in ccs)
    keys = {name: key + arch for name, key in ptx.kernel_keys(module).items()}
    todo: dict[str, str] = {}          # key -> the first kernel of that key
    for name, key in keys.items():
        if not checked(key):
            todo.setdefault(key, name)
    kernels = ptx.compile_module(module, kernels=set(todo.values()), shared=_DEVICE_FUNCTIONS,
                                 ccs=ccs)
    assert len(kernels) == len(ccs) * len(todo)
    for kernel in kernels:
        cc = kernel.cc
        assert f".target sm_{cc[0]}{cc[1]}" in kernel.ptx
        assert kernel.report and all(r.registers > 0 for r in kernel.report), kernel.report
        assert {r.arch for r in kernel.report} == {f"sm_{cc[0]}{cc[1]}"}
    for key in todo:
        _CHECKED.add(key)
        if record is not None:
            (record / key).touch()
    assert all(checked(key) for key in keys.values())
    return len(todo)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_every_kernel_compiles_to_ptx_and_assembles(program: Path):
    try:
        module = cuda_module(program.read_text(encoding="utf-8"), str(program))
    except NotImplementedError as err:
        assert "kernels are not built yet" in str(err)
        pytest.skip(str(err))
    except Exception as err:          # a program whose error comes before codegen
        if type(err).__name__.startswith("Accel"):
            pytest.skip(f"no codegen: {err}")
        raise
    check_compiles(module, CAPABILITIES if program.stem in BOTH_ARCHS else ((8, 0),))


def test_every_scalar_builtin_compiles_to_ptx():
    module = cuda_module(BUILTINS, "builtins.accel")
    assert {k.kind for k in module.kernels.values()} == {"map"}
    source = module.source
    assert "math.sqrt(" in source and "device_math.rint(np.float64(" in source
    assert not any(f"np.{f}(" in source for f in ("sqrt", "exp", "divide", "fmod", "isnan",
                                                    "trunc", "isfinite", "power", "rint"))
    from accel_kernel.backends.cuda import ptx
    assert CAPABILITIES == ptx.CAPABILITIES
    check_compiles(module, CAPABILITIES)


def test_kernels_share_a_key_only_when_the_same_up_to_names():
    from accel_kernel.backends.cuda.ptx import kernel_keys

    def keys(text: str) -> list[str]:
        return list(kernel_keys(cuda_module(text, "k.accel")).values())
    one = keys("let xs = [1.0, 2.0]\nmap (\\x -> sqrt x + 1.0) xs")
    assert len(one) == 1
    assert keys("let ys = [3.0, 2.0, 5.0]\nmap (\\y -> sqrt y + 1.0) ys") == one
    assert keys("let xs = [1.0, 2.0]\nmap (\\x -> sqrt x + 2.0) xs") != one
    assert keys("let xs = [1.0, 2.0]\nmap (\\x -> exp x + 1.0) xs") != one
    assert keys("let xs = map f32 [1.0, 2.0]\nmap (\\x -> sqrt x + one) xs")[-1] != one[0]
    # the device function a kernel calls is part of its key
    calls = keys("def f (x: i64) : i64 = x * 3\nmap (\\x -> f x + 1) [1, 2]")
    assert calls != keys("def f (x: i64) : i64 = x * 4\nmap (\\x -> f x + 1) [1, 2]")
    assert calls == keys("def g (y: i64) : i64 = y * 3\nmap (\\z -> g z + 1) [5, 2, 7]")


def test_the_same_writer_spells_numpy_for_cpu_and_math_for_cuda():
    from accel_kernel.backends.cpu.codegen import generate as cpu_generate
    stages = Session(target="interp").program_stages(BUILTINS, "b.accel", stop_after="fuse")
    cpu = cpu_generate(stages[-1].program).source
    cuda = cuda_module(BUILTINS, "b.accel").source
    assert "np.sqrt(" in cpu and "math.sqrt(" not in cpu and "@njit(inline=\"always\")" in cpu
    assert "@cuda.jit(device=True)" in cuda and "cuda.grid(1)" in cuda


def test_no_gpu_is_one_line(monkeypatch):
    from numba import config, cuda

    from accel_kernel import targets
    from accel_kernel.backends.cuda import device
    monkeypatch.setattr(config, "ENABLE_CUDASIM", 0)
    monkeypatch.setattr(cuda, "is_available", lambda: False)
    assert device.unavailable() == device.NO_GPU
    with pytest.raises(NotImplementedError) as err:
        targets.get("cuda").check_compiler()
    assert str(err.value) == ("cuda: no NVIDIA GPU found (numba.cuda.is_available() is false); "
                              "set NUMBA_ENABLE_CUDASIM=1 to run on the CUDA simulator")
    monkeypatch.setattr(config, "ENABLE_CUDASIM", 1)
    assert device.unavailable() is None


def test_a_kernel_kind_not_built_says_so(monkeypatch):
    from accel_kernel.backends.cuda import codegen
    monkeypatch.delitem(codegen.KIND_WRITERS, "redomap")    # every kind is built now
    with pytest.raises(NotImplementedError, match=r"^cuda: redomap kernels are not built yet$"):
        cuda_module("reduce (+) 0 (map (\\x -> x * 2) [1, 2, 3])", "r.accel")


def test_the_command_line_shows_cuda_kernels_and_their_ptx(tmp_path, capsys):
    from accel_kernel.cli import main
    path = tmp_path / "p.accel"
    path.write_text("let xs = [1.0, 2.0]\nmap (\\x -> sqrt x) xs ++ xs\n")
    assert main(["stages", str(path), "--stage", "codegen", "--target", "cuda"]) == 0
    out = capsys.readouterr().out
    assert "@cuda.jit\ndef k1_map(" in out and "launch(k2_push, n" in out
    assert main(["stages", str(path), "--stage", "codegen", "--target", "cuda",
                 "--format", "ptx"]) == 0
    headers = [line for line in capsys.readouterr().out.splitlines()
               if line.startswith("// kernel ")]
    assert [h.split(":")[0] for h in headers] == [
        "// kernel k1_map, sm_80", "// kernel k2_push, sm_80",
        "// kernel k1_map, sm_90", "// kernel k2_push, sm_90"]
    assert all("registers" in h and "spill" in h for h in headers)
    assert main(["stages", str(path), "--stage", "codegen", "--format", "ptx"]) == 2


def test_show_ptx_in_the_kernel(monkeypatch):
    from accel_kernel.backends.cuda import device
    from accel_kernel.kernel.magics import MagicContext, parse_magic, run_magic
    monkeypatch.setattr(device, "unavailable", lambda: None)    # no launch: PTX only
    session = Session(target="interp")
    ctx = MagicContext(session, cell_name="cell[1]")
    with pytest.raises(NotImplementedError, match="%target cuda first"):
        run_magic(parse_magic("%show ptx map (\\x -> x + 1.0) [1.0]"), ctx)
    session.set_target("cuda")
    out = run_magic(parse_magic("%show ptx map (\\x -> x + 1.0) [1.0]"), ctx)
    (text,) = [d["text/plain"] for d in out.displays]
    assert text.startswith("// kernel k1_map, sm_80: ") and "// kernel k1_map, sm_90: " in text
    assert "registers" in text and ".entry" in text
