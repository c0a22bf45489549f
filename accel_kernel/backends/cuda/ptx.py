"""PTX for the `cuda` target with no GPU needed: kernels compiled to PTX for a compute
capability (numba.cuda's NVVM) and assembled by the `ptxas` of the same CUDA toolkit wheel,
whose `-v` report is parsed per kernel (`Resources`: registers, shared memory, stack, spills).

- `compile_ptx(kernel, signature, cc)` / `assemble(ptx, arch)` / `resources(...)`: one
  `@cuda.jit` kernel of the device primitives (`primitives.load(..., simulate=False)`);
- `compile_module(code)` / `listing(code)`: every kernel of a generated `cuda` module
  (stage `codegen`'s `--format ptx` and `%show ptx`, and the tests' proof that every kernel
  compiles for real hardware: the simulator accepts code the real compiler refuses).

numba.cuda compiles a device function for the *current* device, so while compiling, the
current device is one of capability `cc` (there may be no GPU). Any failure raises (numba's
typing and lowering errors, NVVM's, a non-zero exit of `ptxas`).
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
import types
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from .codegen import CudaModule, ParamType

CAPABILITIES = ((8, 0), (9, 0))


@dataclass(frozen=True)
class Resources:
    """`ptxas -v`'s report of one kernel."""
    function: str
    arch: str
    registers: int
    shared: int            # bytes of static shared memory
    stack: int             # bytes of stack frame
    spill_stores: int
    spill_loads: int

    def show(self) -> str:
        return (f"{self.function} ({self.arch}): {self.registers} registers, {self.shared} "
                f"bytes shared, {self.stack} bytes stack, {self.spill_stores}/"
                f"{self.spill_loads} bytes spilled (stores/loads)")


def ptxas_path() -> Path:
    """The `ptxas` of the nvidia-cuda-nvcc wheel (the toolkit of numba.cuda's NVVM)."""
    import nvidia.cuda_nvcc
    for base in nvidia.cuda_nvcc.__path__:
        exe = Path(base) / "bin" / "ptxas"
        if exe.exists():
            return exe
    raise FileNotFoundError("cuda: no ptxas in the nvidia-cuda-nvcc wheel")


@contextmanager
def _capability(cc: tuple[int, int]) -> Iterator[None]:
    """Device functions are compiled for the current device's capability, which a machine
    with no GPU has not: while compiling for `cc`, numba.cuda sees a device of that one."""
    from numba.cuda import dispatcher
    saved = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)
    try:
        yield
    finally:
        dispatcher.get_current_device = saved


def compile_ptx(kernel: Any, signature: str, cc: tuple[int, int] = (8, 0)) -> str:
    """The PTX of a `@cuda.jit` kernel (its dispatcher, from `primitives.load(...,
    simulate=False)`) for this signature and compute capability. Load the source afresh for
    each capability: device functions keep their first compilation."""
    from numba import cuda
    with _capability(cc):
        ptx, _ = cuda.compile_ptx(kernel.py_func, signature, cc=cc)
    return ptx


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:, used \d+ barriers)?(.*)")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_report(text: str) -> list[Resources]:
    """The resources of each entry function in `ptxas -v`'s report."""
    out: list[Resources] = []
    entry: dict[str, Any] = {}
    for line in text.splitlines():
        if m := _ENTRY.search(line):
            entry = {"function": m.group(1), "arch": m.group(2), "stack": 0,
                     "spill_stores": 0, "spill_loads": 0}
        elif (m := _FRAME.search(line)) and entry:
            entry.update(stack=int(m.group(1)), spill_stores=int(m.group(2)),
                         spill_loads=int(m.group(3)))
        elif (m := _USED.search(line)) and entry:
            smem = _SMEM.search(m.group(2))
            out.append(Resources(registers=int(m.group(1)),
                                 shared=int(smem.group(1)) if smem else 0, **entry))
            entry = {}
    return out


def assemble(ptx: str, arch: str = "sm_80") -> list[Resources]:
    """Assemble PTX with `ptxas -v` (raising on any error) and give its resource report."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "kernel.ptx")
        Path(src).write_text(ptx)
        done = subprocess.run([str(ptxas_path()), f"-arch={arch}", "-v", src, "-o",
                               os.path.join(tmp, "kernel.cubin")],
                              capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"cuda: ptxas failed for {arch}:\n{done.stderr}")
    return parse_report(done.stderr + done.stdout)


def resources(namespace: dict[str, Any], kernels: Any, cc: tuple[int, int] = (8, 0)
              ) -> list[Resources]:
    """The `ptxas` report of each kernel (`primitives.Kernel`: name and signature) of source
    loaded for a GPU (`primitives.load(..., simulate=False)`), for capability `cc`."""
    arch = f"sm_{cc[0]}{cc[1]}"
    out = []
    for kernel in kernels:
        (report,) = assemble(compile_ptx(namespace[kernel.name], kernel.signature, cc), arch)
        out.append(report)
    return out


# ---------------------------------------------------------------- generated modules


@dataclass(frozen=True)
class KernelPtx:
    name: str                  # the kernel's function in the module
    cc: tuple[int, int]
    ptx: str
    report: list[Resources]    # `ptxas -v`'s report (empty when not assembled)


def numba_type(param: "ParamType") -> Any:
    """The numba type of a kernel parameter as the host function passes it."""
    import numba
    kind, elem = param
    scalar = {"bool": numba.boolean, "i32": numba.int32, "i64": numba.int64,
              "f32": numba.float32, "f64": numba.float64}[elem]
    return scalar if kind == "scalar" else scalar[::1]


def compile_module(code: "CudaModule", cc: tuple[int, int] | None = None,
                   assemble_it: bool = True, ccs=CAPABILITIES) -> list[KernelPtx]:
    """The PTX of every kernel of `code` for each capability of `ccs` (or for `cc` alone),
    each assembled by `ptxas` for its architecture (unless not `assemble_it`).

    Each kernel is typed and lowered to NVVM IR once (for the first capability) and that IR is
    compiled by NVVM for every capability, as `nvcc -gencode` compiles one source for several
    architectures: numba's lowering of these kernels does not depend on the capability (it
    gates only half-precision and a few atomics, which the kernels do not use)."""
    from numba.cuda import compiler
    ccs = (cc,) if cc is not None else tuple(ccs)
    namespace: dict = {"__name__": f"accel_ptx_{code.key}"}
    exec(compile(code.source, f"<accel cuda module {code.key}>", "exec"), namespace)
    out: dict[tuple[int, int], list[KernelPtx]] = {c: [] for c in ccs}
    for name, params in code.params.items():      # every `@cuda.jit` kernel, in order
        signature = tuple(numba_type(p) for p in params)
        with _capability(ccs[0]):
            library, _ = compiler._compile_pyfunc_with_fixup(
                namespace[name].py_func, signature, debug=None, lineinfo=False, device=False,
                fastmath=False, cc=ccs[0], opt=None, abi="numba", abi_info=None,
                forceinline=False, launch_bounds=None, lto=False)
        for c in ccs:
            (ptx,) = library.get_asm_strs(cc=c)
            report = assemble(ptx, f"sm_{c[0]}{c[1]}") if assemble_it else []
            out[c].append(KernelPtx(name, c, ptx, report))
    return [kernel for c in ccs for kernel in out[c]]


def listing(code: "CudaModule", ccs=CAPABILITIES) -> str:
    """Every kernel's PTX with its resources per capability, as one text."""
    parts = []
    for kernel in compile_module(code, ccs=ccs):
        used = "; ".join(r.show() for r in kernel.report)
        parts.append(f"// kernel {kernel.name}, sm_{kernel.cc[0]}{kernel.cc[1]}: {used}\n"
                     f"{kernel.ptx}")
    return "\n".join(parts)
