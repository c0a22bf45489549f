"""The `cpu` target's host driver: runs a fused flat program whose kernels are compiled with
numba (`codegen.generate`), library functions over numeric arrays compiled too
(`library.py`), and the rest (scalar code, descriptors, other library functions, `if` and
`loop`) as the `numpy` target does.

Compiled modules are cached: in memory by the hash of their source (a re-run cell costs a
dictionary lookup), and by kernel: each numba function with the ones it calls is a compile
unit in canonical names (`units.py`), written to `<cache dir>/accel_unit_<hash>.py` and
imported once per process, so the same kernel in two programs compiles once, and numba's
cache (`cache=True`) keeps its machine code beside the file across processes. The host
functions go to `<cache dir>/accel_<hash>.py`, which imports the kernels from their units.
The cache directory comes in the caller's `targets.CompileOptions` (the session makes it
from `$ACCEL_CACHE_DIR`, else `~/.cache/accel_kernel/kernels`), and so does which variant of
a kernel a launch runs (`tiers.py`: the host functions launch through a `tiers.Launcher`);
nothing here reads the environment.
"""
from __future__ import annotations

import os
import sys
import time
from collections import ChainMap
from dataclasses import dataclass, field, is_dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from ...ir import flat as F
from ...ir.assert_message import FIELD
from ...lang import ast as lang_ast
from ...lang.errors import AccelError, Interrupted, OutOfMemory, SizeError
from ...runtime import events as E
from ...runtime.cancel import CancelToken
from ...runtime.memory import Memory, check_allocation
from ..numpy.costs import Counters, count, lib_cost, log_depth
from ..numpy.executor import Executor, FlatCellValues, call, execute
from ..numpy.rows import size_error_name
from . import library, tiers
from .codegen import KernelCode, Module, generate, scalar_functions
from .compile_worker import exec_file
from .errors import CANCEL_SLOT, ERR_LENGTH
from .units import split

if TYPE_CHECKING:
    from ...targets import CompileOptions

_MODULES: dict[str, ModuleType] = {}         # source hash -> the imported module


def load(code: Module, cache_dir: Path) -> ModuleType:
    """The imported module of generated code (from the in-memory cache when it is there):
    its numba functions each from its compile unit (`units.py`: one file per kernel, shared
    by every program that has the same kernel), the rest from the main file; every file
    kept in `cache_dir`, where numba keeps their machine code."""
    module = _MODULES.get(code.key)
    if module is not None:
        return module
    cache_dir.mkdir(parents=True, exist_ok=True)
    parts = split(code.source)
    for name, source in parts.units.items():
        if name not in sys.modules:
            _import(name, cache_dir / f"{name}.py", source)
    module = _import(f"accel_kernel_generated_{code.key}", cache_dir / f"accel_{code.key}.py",
                     parts.main)
    _MODULES[code.key] = module
    return module


def _import(name: str, path: Path, source: str) -> ModuleType:
    """The module `name` executed from `path` (written first unless it holds `source`)."""
    if not path.exists() or path.read_text() != source:
        _write_once(path, source)
    return exec_file(name, path)


def _write_once(path: Path, source: str) -> None:
    """Write the module's source, whole or not at all. Where it is there already (another
    process sharing the cache wrote it meanwhile) it is left untouched: numba's cache of the
    module is valid only while the file's time stamp stays the same."""
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(source)
    try:
        os.link(tmp, path)              # fails where the file exists
    except FileExistsError:
        if path.read_text() != source:  # a damaged file: replaced
            tmp.replace(path)
    except OSError:                     # a file system without hard links
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


@dataclass
class Compiled:
    """A fused program with its generated module, ready to run."""
    program: F.FlatProgram
    code: Module
    module: ModuleType
    memory: Memory = field(default_factory=Memory)
    compile_seconds: float = 0.0      # time spent in numba's compiler on the last run
    executor: type | None = None      # its CpuExecutor class, made on the first run
    tiers: tiers.Tiers = field(default_factory=lambda: tiers.shared("tiered"))


def compile_program(program: F.FlatProgram, options: CompileOptions,
                    memory: Memory | None = None) -> Compiled:
    code = generate(program)
    return Compiled(program, code, load(code, options.cache_dir), memory or Memory(),
                    tiers=tiers.shared(options.kernels))


@dataclass(frozen=True)
class _Unrun:
    """An output of a kernel that did not run because its inputs differ in length (a
    deferred error, codegen's `length_checks`): its length is known (`buffer`, unwritten;
    None for compacted outputs), reading its values raises `error`."""
    error: Exception
    buffer: Any = None


def _executor(compiled: Compiled) -> type:
    if compiled.executor is None:
        compiled.executor = _executor_class(compiled)
    return compiled.executor


def _executor_class(compiled: Compiled) -> type:
    class CpuExecutor(Executor):
        """Host statements as the numpy target runs them; kernels compiled."""
        target = "cpu"

        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            self.kernel_of: dict[str, F.Stmt] = {}   # a kernel's inner value -> the kernel

        def allocator(self) -> Any:
            """What a kernel's host function allocates its outputs with."""
            return compiled.memory.alloc

        def atom(self, atom: F.Atom) -> Any:
            value = super().atom(atom)
            if isinstance(value, _Unrun):
                raise value.error
            return value

        def _bind_targets(self, stmt: F.Stmt, value: Any) -> Any:
            if isinstance(value, tuple) and value and isinstance(value[0], _Unrun):
                for target, part in zip(stmt.targets, value):
                    self.env[target.name] = part
                return ()
            return super()._bind_targets(stmt, value)

        def _sizestooffsets(self, stmt: F.Stmt, op: F.SizesToOffsets) -> Any:
            """Compiled, one pass (`library.offsets_of_sizes`); the numpy target's way
            reports a negative size or a total too large (and runs other dtypes)."""
            sizes = self.atom(op.sizes)
            if not (isinstance(sizes, np.ndarray) and sizes.dtype == np.int64
                    and sizes.ndim == 1):
                return super()._sizestooffsets(stmt, op)
            offsets, found = library.offsets_of_sizes(sizes)
            if found != library.SIZES_OK:
                return super()._sizestooffsets(stmt, op)
            total = int(offsets[-1])
            check_allocation(total * 8, f"{size_error_name(stmt.span)}: {total} elements "
                             "in all", stmt.span)
            self._cost(stmt, len(sizes), log_depth(len(sizes)))
            return offsets

        def _length(self, stmt: F.Stmt, op: F.Length) -> Any:
            value = self.env[op.arr.name] if isinstance(op.arr, F.FVar) else None
            if isinstance(value, _Unrun) and value.buffer is not None:
                return np.int64(len(value.buffer))      # the flattener's length checks
            return super()._length(stmt, op)

        def _kernel(self, stmt: F.Stmt, op: F.Kernel) -> Any:
            self.kernel_of.update({t.name: stmt for s in op.body.stmts for t in s.targets})
            kernel = compiled.code.kernels[stmt.id]
            host = getattr(compiled.module, kernel.name + "_host")
            args = [self.kernel_arg(self.atom(F.FVar(name, None))) for name in kernel.inputs]
            functions = _functions(compiled.module, kernel.name)
            versions = [len(fn.overloads) for fn in functions]
            began = time.perf_counter()
            launch = compiled.tiers.launcher()
            try:
                values, err = self._call_host(kernel, host, args, stmt, launch)
            except OutOfMemory as error:        # a buffer too large, refused before it was made
                if error.span is None:
                    error.span = stmt.span
                raise
            if compiled.memory.events.active:
                self._launched(kernel.name, values, time.perf_counter() - began,
                               launch.variants)
            for fn, n in zip(functions, versions):
                if len(fn.overloads) != n and any(fn is ran for ran in launch.called):
                    compiled.compile_seconds += _compile_time(fn, since=n)
            if err is not None and int(err[0]) in compiled.code.errors.deferred:
                self._earlier_error(op)
                error = compiled.code.errors.error(err)
                buffers = values if values is not None else [None] * len(stmt.targets)
                return tuple(_Unrun(error, b if self.is_buffer(b) else None)
                             for b in buffers)
            if err is not None:
                compiled.code.errors.raise_if_failed(err)
            return values[0] if len(values) == 1 else tuple(values)

        def _call_host(self, kernel: KernelCode, host: Any, args: list, stmt: F.Stmt,
                       launch: tiers.Launcher) -> tuple[Any, Any]:
            """The host function's outputs and error array. A cancellable kernel gets its
            error array from here, watched by the cancel token while it runs: one that was
            asked to stop raises `Interrupted` (at the kernel's place in the cell), whatever
            it wrote, its error included."""
            if not kernel.cancellable:
                return host(*args, self.allocator())
            flags = np.zeros(ERR_LENGTH, np.int64)
            if self.cancel is None:
                return host(*args, self.allocator(), launch, flags)
            with self.cancel.watching(flags, CANCEL_SLOT):
                out = host(*args, self.allocator(), launch, flags)
            if flags[CANCEL_SLOT]:
                raise Interrupted("evaluation interrupted", _loop_span(stmt))
            return out

        def _launched(self, name: str, values: Any, seconds: float,
                      variants: list[str]) -> None:
            """A `Launch` event: the kernel, the elements of its first output, its time,
            the bytes of its outputs and which variant ran (tiers.py)."""
            arrays = [v for v in values or () if isinstance(v, np.ndarray)]
            elements = len(arrays[0]) if arrays and arrays[0].ndim else 0
            compiled.memory.events.emit(E.Launch(self.target, name, (elements,), (), (),
                                                 elements, seconds,
                                                 sum(a.nbytes for a in arrays),
                                                 variants[-1] if variants else ""))

        def worker_factory(self) -> "CpuFactory":
            """The compiled module's code and kernel cache, for a cluster's workers."""
            return CpuFactory(replace(compiled.code, program=None),
                              str(Path(compiled.module.__file__).parent), compiled.tiers.mode)

        def kernel_arg(self, value: Any) -> Any:
            """A kernel's input as its host function takes it (a contiguous array)."""
            return _kernel_arg(value)

        def is_buffer(self, value: Any) -> bool:
            """Whether a host function's output is an array (its length is known)."""
            return isinstance(value, np.ndarray)

        def _run_body(self, op: F.Kernel) -> None:
            """The kernel's statements one by one, as the numpy target runs them."""
            for inner in op.body.stmts:
                self._bind(inner, self._ops[type(inner.op)](inner, inner.op))

        def _earlier_error(self, op: F.Kernel) -> None:
            """A kernel stopped by a deferred length check ran none of its statements. An
            error the interpreter meets before that check (a division in a map fused with
            the map2 whose lengths differ) must still be the one raised: the statements run
            as the numpy target runs them, and any error but the lengths' own is raised."""
            saved = self.env
            self.env = self.env.new_child({})
            try:
                self._run_body(op)
            except SizeError:             # the deferred check's own failure: raised later
                pass
            finally:
                self.env = saved

        def assert_message(self, stmt: F.Stmt, op: F.Assert, ok: Any) -> str:
            """As the numpy target words it: the values a kernel kept to itself are
            computed again, statement by statement as the numpy target runs a kernel (only
            when an assert failed, so never on the way of a correct program)."""
            saved = self.env
            wanted = {m.group(1) for m in FIELD.finditer(op.message)} - set(saved)
            for kernel in {id(k): k for n in wanted if (k := self.kernel_of.get(n))}.values():
                self.env = self.env.new_child({})
                try:
                    self._run_body(kernel.op)
                except AccelError:       # the values before the failing one are kept
                    pass
            try:
                return super().assert_message(stmt, op, ok)
            finally:
                self.env = saved

        # library functions compiled where their arguments allow (library.py), else numpy's
        def _library(self, stmt: F.Stmt, op: F.Library) -> Any:
            args = [self.atom(a) for a in op.args]
            out = library.library(self, op.name, args, op.fns, stmt.span)
            self._cost(stmt, *lib_cost(op.name, sum(count(a) for a in args), count(out)))
            return out

        def _seglibrary(self, stmt: F.Stmt, op: F.SegLibrary) -> Any:
            offsets, values = self.atom(op.offsets), self.atom(op.values)
            args = [self.atom(a) for a in op.args]
            out = library.seg_library(self, op.name, offsets, values, args, op.fns, stmt.span)
            self._cost(stmt, *lib_cost(op.name, count(values) + len(offsets) - 1, count(out)))
            return out
    return CpuExecutor


class CpuFactory:
    """The `cpu` target's executor on a cluster's worker (`numpy/cluster.py`): the module is
    loaded once per worker process from the kernel cache's files (`load`, by its source's
    hash), so numba's disk cache is shared by the processes of one machine; a worker whose
    cache directory cannot be made (another machine) uses its own default one. The program's
    own tables (its kernels' statements, its errors' messages and places) are this code's,
    kept with the factory, which a worker unpickles once per sequence."""

    def __init__(self, code: Module, cache_dir: str, kernels: str = "tiered"):
        self.code = code
        self.cache_dir = cache_dir
        self.kernels = kernels               # the variants' choice (tiers.py)
        self._compiled: Compiled | None = None

    def __getstate__(self) -> dict:
        return {"code": self.code, "cache_dir": self.cache_dir, "kernels": self.kernels,
                "_compiled": None}

    def executor(self, values: Mapping[str, Any]) -> Executor:
        compiled = self._load()
        return _executor(compiled)(ChainMap(dict(values)), Counters(), None, compiled.memory)

    def compile_seconds(self) -> float:
        """Seconds numba compiled this module's kernels for this factory so far."""
        return self._compiled.compile_seconds if self._compiled is not None else 0.0

    def _load(self) -> Compiled:
        if self._compiled is None:
            cache = Path(self.cache_dir)
            try:
                cache.mkdir(parents=True, exist_ok=True)
            except OSError:
                cache = Path.home() / ".cache" / "accel_kernel" / "kernels"
            self._compiled = Compiled(F.FlatProgram(()), self.code, load(self.code, cache),
                                      tiers=tiers.shared(self.kernels))
        return self._compiled


def _loop_span(stmt: F.Stmt) -> Any:
    """Where an interrupted kernel was: the first `loop` of its scalar functions (where it
    spends its time, most likely), else the kernel's own place."""
    pending: list[Any] = [fn.body for fn in scalar_functions(stmt)]
    while pending:
        node = pending.pop(0)
        if isinstance(node, lang_ast.Loop) and node.span is not None:
            return node.span
        if is_dataclass(node):
            for value in vars(node).values():
                pending += value if isinstance(value, tuple) else [value]
    return stmt.span


def _kernel_arg(value: Any) -> Any:
    if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
        return np.ascontiguousarray(value)
    return value


def _functions(module: ModuleType, name: str) -> list[Any]:
    """The numba functions of a kernel: its own and a filter's counting pass, each with its
    sequential twin (tiers.py). Their compiled versions (`overloads`) are counted before
    and after a launch: a change in a function the launch called means numba compiled it
    then (counting is much cheaper than reading the compile timers); a parallel variant
    compiled in the background is not the launch's compile."""
    names = (name, name + "_seq", name + "_count", name + "_count_seq")
    return [fn for fn in (getattr(module, n, None) for n in names)
            if fn is not None and hasattr(fn, "signatures")]


def _compile_time(fn: Any, since: int) -> float:
    """Seconds numba spent compiling a function's versions after its first `since` (0 for
    those it loaded from its cache)."""
    total = 0.0
    try:
        for signature in fn.signatures[since:]:
            meta = fn.get_metadata(signature)
            total += float(meta.get("timers", {}).get("compiler_lock", 0.0))
    except Exception:       # numba's metadata is informative only
        pass
    return total


def run(compiled: Compiled, globals: Mapping[str, Any], cancel: CancelToken | None = None
        ) -> FlatCellValues:
    with np.errstate(all="ignore"):
        return execute(compiled.program, globals, counters=Counters(), cancel=cancel,
                       executor=_executor(compiled), memory=compiled.memory)


def run_call(compiled: Compiled, form: F.FlatForm, args: list[Any], globals: Mapping[str, Any],
             cancel: CancelToken | None = None) -> Any:
    with np.errstate(all="ignore"):
        return call(form, args, globals, counters=Counters(), cancel=cancel,
                    executor=_executor(compiled), memory=compiled.memory)
