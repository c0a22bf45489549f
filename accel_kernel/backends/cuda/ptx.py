"""PTX for the `cuda` target with no GPU needed: `compile_ptx` compiles one kernel of
generated source for a compute capability (numba.cuda's NVVM), `assemble` runs the `ptxas`
of the same CUDA toolkit wheel on it and parses its resource report (`Resources`: registers,
shared memory, stack, spills) per kernel. `%show ptx` and the PTX tests use both.
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
from typing import Any, Iterator

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
