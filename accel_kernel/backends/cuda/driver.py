"""The `cuda` target's host driver: runs a fused flat program whose kernels are numba.cuda
kernels (`codegen.generate`), and the rest (scalar code, descriptors, library functions,
`if` and `loop`) on the host as the `numpy` target does.

The host side is `cpu`'s (`backends/cpu/driver.py`): its module loader (the generated
source written to the kernel cache directory and imported, cached by the source's hash),
its `Compiled` record and its executor, which calls each kernel's host function
(`<name>_host(inputs..., alloc) -> (outputs, err)`) and raises the error its `err` array
reports, deferred length errors included. Only the library functions differ: `cpu`
compiles them for the CPU with numba, here they run as the `numpy` target runs them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from ...ir import flat as F
from ...runtime.cancel import CancelToken
from ...runtime.memory import Memory
from ..cpu import driver as cpu_driver
from ..cpu.driver import Compiled
from ..numpy.costs import Counters
from ..numpy.executor import Executor, FlatCellValues, call, execute
from .codegen import generate
from .device import unavailable
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
    return Compiled(program, code, cpu_driver.load(code, options.cache_dir), memory or Memory())


def _executor(compiled: Compiled) -> type:
    if compiled.executor is None:
        base = cpu_driver._executor_class(compiled)

        class CudaExecutor(base):              # type: ignore[misc, valid-type]
            """`cpu`'s executor (kernels through their host functions), with the library
            functions of the `numpy` target."""
            _library = Executor._library
            _seglibrary = Executor._seglibrary

            def allocator(self) -> Any:
                return RunAllocator(compiled.memory)

        compiled.executor = CudaExecutor
    return compiled.executor


def run(compiled: Compiled, globals: Mapping[str, Any], cancel: CancelToken | None = None
        ) -> FlatCellValues:
    with np.errstate(all="ignore"):
        return execute(compiled.program, globals, counters=Counters(), cancel=cancel,
                       executor=_executor(compiled))


def run_call(compiled: Compiled, form: F.FlatForm, args: list[Any], globals: Mapping[str, Any],
             cancel: CancelToken | None = None) -> Any:
    with np.errstate(all="ignore"):
        return call(form, args, globals, counters=Counters(), cancel=cancel,
                    executor=_executor(compiled))
