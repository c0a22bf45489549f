"""PTX for the `cuda` target with no GPU needed: kernels compiled to PTX for a compute
capability (numba.cuda's NVVM) and assembled by the `ptxas` of the same CUDA toolkit wheel,
whose `-v` report is parsed per kernel (`Resources`: registers, shared memory, stack, spills).

- `compile_ptx(kernel, signature, cc)` / `compile_ptx_for(kernel, signature, ccs)` /
  `assemble(ptx, arch)` / `resources(...)` / `resources_for(...)`: one `@cuda.jit` kernel of
  the device primitives (`primitives.load(..., simulate=False)`), lowered once for all
  capabilities;
- `compile_module(code)` / `listing(code)`: every kernel of a generated `cuda` module
  (stage `codegen`'s `--format ptx` and `%show ptx`, and the tests' proof that every kernel
  compiles for real hardware: the simulator accepts code the real compiler refuses);
- `kernel_keys(code)`: a key per kernel, the same for kernels that are the same up to names
  (the tests compile each key once).

numba.cuda compiles a device function for the *current* device, so while compiling, the
current device is one of capability `cc` (there may be no GPU). Any failure raises (numba's
typing and lowering errors, NVVM's, a non-zero exit of `ptxas`).
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
import types
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

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
    return compile_ptx_for(kernel, signature, (cc,))[cc]


def compile_ptx_for(kernel: Any, signature: Any, ccs=CAPABILITIES) -> dict[tuple[int, int], str]:
    """The PTX of a `@cuda.jit` kernel for each capability of `ccs`: typed and lowered to NVVM
    IR once (for the first), that IR compiled by NVVM for each, as `nvcc -gencode` compiles
    one source for several architectures: numba's lowering does not tell sm_80 from sm_90
    (its capability gates, float64 atomics from sm_60 and a fast float32 tanh from sm_75,
    are all below sm_80)."""
    from numba.cuda import compiler
    with _capability(ccs[0]):
        library, _ = compiler._compile_pyfunc_with_fixup(
            kernel.py_func, signature, debug=None, lineinfo=False, device=False,
            fastmath=False, cc=ccs[0], opt=None, abi="numba", abi_info=None,
            forceinline=False, launch_bounds=None, lto=False)
    out = {}
    for cc in ccs:
        (out[cc],) = library.get_asm_strs(cc=cc)
    return out


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
    return resources_for(namespace, kernels, (cc,))[cc]


def resources_for(namespace: dict[str, Any], kernels: Any, ccs=CAPABILITIES
                  ) -> dict[tuple[int, int], list[Resources]]:
    """`resources` for each capability of `ccs`, each kernel lowered once
    (`compile_ptx_for`)."""
    out: dict[tuple[int, int], list[Resources]] = {cc: [] for cc in ccs}
    for kernel in kernels:
        for cc, text in compile_ptx_for(namespace[kernel.name], kernel.signature, ccs).items():
            (report,) = assemble(text, f"sm_{cc[0]}{cc[1]}")
            out[cc].append(report)
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
    import numpy as np
    from ...lang.scalar_ops import DTYPES
    scalar = numba.from_dtype(np.dtype(DTYPES[elem]))
    if kind == "array2":
        return scalar[:, ::1]
    return scalar if kind == "scalar" else scalar[::1]


def compile_module(code: "CudaModule", cc: tuple[int, int] | None = None,
                   assemble_it: bool = True, ccs=CAPABILITIES,
                   kernels: Iterable[str] | None = None, shared: dict[str, Any] | None = None
                   ) -> list[KernelPtx]:
    """The PTX of every kernel of `code` (or of those named in `kernels`) for each capability
    of `ccs` (or for `cc` alone), each assembled by `ptxas` for its architecture (unless not
    `assemble_it`), each kernel lowered once (`compile_ptx_for`). An exception names the
    kernel in a note.

    `shared`: device functions by key (`function_keys`) from earlier modules, compiled
    once for all of them: the kernels call those in place of their own copies (the same up
    to names), and this module's others are added."""
    ccs = (cc,) if cc is not None else tuple(ccs)
    names = list(code.params) if kernels is None else [k for k in code.params if k in kernels]
    out: dict[tuple[int, int], list[KernelPtx]] = {c: [] for c in ccs}
    if not names:
        return []
    namespace: dict = {"__name__": f"accel_ptx_{code.key}"}
    exec(compile(code.source, f"<accel cuda module {code.key}>", "exec"), namespace)
    if shared is not None:
        for name, key in function_keys(code).items():
            if name not in code.params:
                namespace[name] = shared.setdefault(key, namespace[name])
    for name in names:                        # `@cuda.jit` kernels, in order
        try:
            for kernel in _compile_kernel(namespace[name], code.params[name], ccs,
                                          assemble_it):
                out[kernel.cc].append(kernel)
        except Exception as err:
            err.add_note(f"cuda: compiling kernel {name} of module {code.key}")
            raise
    return [kernel for c in ccs for kernel in out[c]]


def _compile_kernel(kernel: Any, params: "tuple[ParamType, ...]", ccs, assemble_it: bool
                    ) -> Iterator[KernelPtx]:
    signature = tuple(numba_type(p) for p in params)
    for cc, ptx in compile_ptx_for(kernel, signature, ccs).items():
        report = assemble(ptx, f"sm_{cc[0]}{cc[1]}") if assemble_it else []
        yield KernelPtx(kernel.py_func.__name__, cc, ptx, report)


def listing(code: "CudaModule", ccs=CAPABILITIES) -> str:
    """Every kernel's PTX with its resources per capability, as one text."""
    parts = []
    for kernel in compile_module(code, ccs=ccs):
        used = "; ".join(r.show() for r in kernel.report)
        parts.append(f"// kernel {kernel.name}, sm_{kernel.cc[0]}{kernel.cc[1]}: {used}\n"
                     f"{kernel.ptx}")
    return "\n".join(parts)


# ---------------------------------------------------------------- kernels up to names


def kernel_keys(code: "CudaModule") -> dict[str, str]:
    """A key per kernel of `code` (by name) that two kernels share only when they compile the
    same: the hash of its `function_keys` key and its parameter types. Many kernels are the
    same across programs up to names (a map over an iota, a concat...): the PTX check
    compiles each key once."""
    functions = function_keys(code)
    return {kernel: hashlib.sha256(f"{functions[kernel]} {params!r}".encode()).hexdigest()
            for kernel, params in code.params.items()}


def function_keys(code: "CudaModule") -> dict[str, str]:
    """A key for every kernel and device function of `code` (every decorated module-level
    function), by name: the hash of its compile unit, the text the `cpu` target's kernel
    cache keys by too (`cpu/units.py`: it and the functions it calls, transitively, in
    canonical names, after the module's imports); a unit that text does not follow (a
    keyword argument naming a renamed parameter) is a key of its own."""
    from ..cpu.units import unit_sources
    units = unit_sources(code.source, lambda f: bool(f.decorator_list))
    return {name: hashlib.sha256((text if text is not None else f"{code.key} {name}").encode()
                                 ).hexdigest() for name, text in units.items()}
