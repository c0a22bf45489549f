"""Every kernel of a generated `cuda` module compiled to PTX for a compute capability, and
the PTX assembled by `ptxas`, with no GPU (stage `codegen`'s `--format ptx` and `%show
ptx`, and the proof in the tests that every kernel compiles for real hardware: the
simulator accepts code the real compiler refuses).

`compile_module(code, cc)` gives one `KernelPtx` a kernel: its PTX and `ptxas -v`'s report
(registers, shared memory, spills). The module's source is executed afresh for each
compute capability; numba.cuda compiles a device function for the *current* device, so
while compiling, the current device is one of capability `cc` (there may be no GPU).
`ptxas` is the CUDA wheel's (`nvidia.cuda_nvcc`), of the same toolkit as NVVM. Any failure
raises (numba's typing and lowering errors, NVVM's, a non-zero exit of `ptxas`).
"""
from __future__ import annotations

import os
import subprocess
import tempfile
import types
from dataclasses import dataclass
from unittest import mock

from .codegen import CudaModule, ParamType

CAPABILITIES = ((8, 0), (9, 0))        # sm_80 (A100) and sm_90 (H100)


@dataclass(frozen=True)
class KernelPtx:
    name: str                  # the kernel's function in the module
    cc: tuple[int, int]
    ptx: str
    report: str                # `ptxas -v`'s report: registers, shared memory, spills


def numba_type(param: ParamType):
    """The numba type of a kernel parameter as the host function passes it."""
    import numba
    kind, elem = param
    scalar = {"bool": numba.boolean, "i32": numba.int32, "i64": numba.int64,
              "f32": numba.float32, "f64": numba.float64}[elem]
    return scalar if kind == "scalar" else scalar[::1]


def compile_module(code: CudaModule, cc: tuple[int, int] = (8, 0),
                   assemble: bool = True) -> list[KernelPtx]:
    """The PTX of every kernel of `code` for capability `cc`, each assembled by `ptxas`
    (unless not `assemble`)."""
    from numba import cuda
    from numba.cuda import dispatcher
    namespace: dict = {"__name__": f"accel_ptx_{code.key}_sm{cc[0]}{cc[1]}"}
    exec(compile(code.source, f"<accel cuda module {code.key}>", "exec"), namespace)
    device = types.SimpleNamespace(compute_capability=cc)
    out = []
    with mock.patch.object(dispatcher, "get_current_device", lambda: device):
        for kernel in code.kernels.values():
            signature = tuple(numba_type(p) for p in code.params[kernel.name])
            ptx, _ = cuda.compile_ptx(namespace[kernel.name].py_func, signature, cc=cc)
            report = ptxas(ptx, cc) if assemble else ""
            out.append(KernelPtx(kernel.name, cc, ptx, report))
    return out


def ptxas_path() -> str:
    import nvidia.cuda_nvcc
    return os.path.join(list(nvidia.cuda_nvcc.__path__)[0], "bin", "ptxas")


def ptxas(ptx: str, cc: tuple[int, int]) -> str:
    """Assemble `ptx` for `sm_<cc>`; gives `ptxas -v`'s report, raises RuntimeError when
    it fails."""
    with tempfile.TemporaryDirectory(prefix="accel_ptx_") as tmp:
        source, cubin = os.path.join(tmp, "kernel.ptx"), os.path.join(tmp, "kernel.cubin")
        with open(source, "w") as f:
            f.write(ptx)
        done = subprocess.run([ptxas_path(), f"-arch=sm_{cc[0]}{cc[1]}", "-v", source,
                               "-o", cubin], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"ptxas -arch=sm_{cc[0]}{cc[1]} failed: {done.stderr.strip()}")
    return done.stderr


def resources(report: str) -> str:
    """The kernel's own lines of a `ptxas -v` report (registers, shared memory, spills)."""
    lines = [line.split(":", 1)[-1].strip() for line in report.splitlines()
             if "Used" in line or "spill" in line]
    return "; ".join(lines[:2])


def listing(code: CudaModule, ccs=CAPABILITIES) -> str:
    """Every kernel's PTX with its resources per capability, as one text."""
    parts = []
    for cc in ccs:
        for kernel in compile_module(code, cc):
            parts.append(f"// kernel {kernel.name}, sm_{cc[0]}{cc[1]}: "
                         f"{resources(kernel.report)}\n{kernel.ptx}")
    return "\n".join(parts)
