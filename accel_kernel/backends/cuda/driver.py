"""The `cuda` target's host driver: runs a fused flat program whose kernels are numba.cuda
kernels (`codegen.generate`), and the rest (scalar code, descriptors, library functions,
`if` and `loop`) on the host as the `numpy` target does.

The host side is `cpu`'s (`backends/cpu/driver.py`): its module loader (the generated
source written to the kernel cache directory and imported, cached by the source's hash),
its `Compiled` record and its executor, which calls each kernel's host function
(`<name>_host(inputs..., alloc) -> (outputs, err)`) and raises the error its `err` array
reports, deferred length errors included. Only the library functions differ: `cpu`
compiles them for the CPU with numba, here `library.py` runs them on the device (else numpy).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...ir import flat as F
from ...runtime.memory import Memory
from ..cpu import driver as cpu_driver
from ..cpu.driver import Compiled
from .codegen import generate
from .device import unavailable
from .library import run_library, run_seglibrary
from .memory import RunAllocator

if TYPE_CHECKING:
    from ...targets import CompileOptions


def compile_program(program: F.FlatProgram, options: CompileOptions,
                    memory: Memory | None = None) -> Compiled:
    """The fused program's module, generated and imported from `options.cache_dir` (numba.cuda
    compiles each kernel on its first launch)."""
    reason = unavailable()
    if reason is not None:
        raise NotImplementedError(reason)
    code = generate(program)
    compiled = Compiled(program, code, cpu_driver.load(code, options.cache_dir),
                        memory or Memory())
    compiled.executor = _executor_class(compiled)    # what cpu's `run` runs it with
    return compiled


def _executor_class(compiled: Compiled) -> type:
    base = cpu_driver._executor_class(compiled)

    class CudaExecutor(base):              # type: ignore[misc, valid-type]
        """`cpu`'s executor (kernels through their host functions), with the library
        functions on the device where `library.py` takes them, else the `numpy` target's."""
        _library = run_library
        _seglibrary = run_seglibrary

        def allocator(self) -> Any:
            return RunAllocator(compiled.memory)

    return CudaExecutor


# run and call as `cpu` does, with the executor `compile_program` gave the compiled program
run = cpu_driver.run
run_call = cpu_driver.run_call
