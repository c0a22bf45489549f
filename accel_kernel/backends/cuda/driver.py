"""The `cuda` target's host driver: runs a fused flat program whose kernels are numba.cuda
kernels (`codegen.generate`), and the rest (scalar code, descriptors, library functions,
`if` and `loop`) on the host as the `numpy` target does.

The host side is `cpu`'s (`backends/cpu/driver.py`): its module loader (the generated
source written to the kernel cache directory and imported, cached by the source's hash),
its `Compiled` record and its executor, which calls each kernel's host function
(`<name>_host(inputs..., alloc) -> (outputs, err)`) and raises the error its `err` array
reports, deferred length errors included. The library functions run on the device where
`library.py` takes them (host values in and out), else as the `numpy` target runs them.

Values stay where they are made. A kernel's outputs are device arrays (`memory.DeviceArray`)
and stay in the executor's environment as such. What reads a value decides where it must
be (`Residency`, one per run):

- a kernel reads device arrays: a host array is uploaded once (the device array is kept);
- a host statement (scalar code, a library function, a descriptor, a condition, an assert)
  reads host arrays: a device array is downloaded once (the host copy is kept);
- the statements that only pass arrays along (`STRUCTURAL`: tuples, views of segments,
  reshapes, lengths, `if` and `loop` states, a block's results) take them as they are.

A run reads globals in the `"device"` form (`memory.DeviceValue`, `host.py`) and gives its
values in that form: a global made here stays on the device for the next cell, a flat global
is uploaded by the first kernel that reads it and keeps its device array. A def called from
Python (`run_call`) gives a flat value (its arrays downloaded).
"""
from __future__ import annotations

import weakref
from collections import ChainMap
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from ...ir import flat as F
from ...lang.errors import OutOfMemory
from ...runtime.cancel import CancelToken
from ...runtime.memory import Memory
from ..cpu import driver as cpu_driver
from ..cpu.driver import Compiled
from ..numpy.executor import FlatCellValues
from ..numpy.costs import count
from ..numpy.rows import check_indices
from ..numpy.values import Segs
from .codegen import generate
from .device import quiet, unavailable
from .library import run_library, run_seglibrary
from .memory import DeviceArray, DeviceValue, Placed, RunAllocator, map_tree

if TYPE_CHECKING:
    from ...targets import CompileOptions

# statements that pass arrays along without reading their elements: they run on whatever the
# environment holds, device arrays included
STRUCTURAL = (F.MakeTuple, F.Project, F.Rebuild, F.Offsets, F.Values, F.Reshape, F.Length,
              F.If, F.Loop, F.Kernel)


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


class Residency:
    """Where the arrays of one run are: a device array's host copy (downloaded once, kept on
    the handle: `DeviceArray.host_copy`), a host array's device array (uploaded once, kept
    here while the host array lives). Nothing here outlives the arrays it pairs: a loop's
    states come and go without piling up on the device."""

    def __init__(self, alloc: RunAllocator):
        self.alloc = alloc
        # id of a host array -> (weak reference to it, its device array: held strongly when
        # uploaded for it, weakly when it is the device array's own host copy)
        self._device: dict[int, tuple[weakref.ref, Any]] = {}

    def host(self, value: Any) -> Any:
        """`value` with every device array replaced by its host copy."""
        return map_tree(value, self._host_array, DeviceArray)

    def device(self, value: Any) -> Any:
        """`value` with every host array replaced by its device array."""
        return map_tree(value, self._device_array, np.ndarray)

    def forget(self, value: Any) -> None:
        """Forget the other form of `value`'s host arrays (they were written in place)."""
        for leaf in _leaves(value):
            known = self.device_of(leaf) if isinstance(leaf, np.ndarray) else leaf
            self._device.pop(id(leaf), None)
            if known is not None:
                known.host_copy = None

    def device_of(self, host: np.ndarray) -> DeviceArray | None:
        known = self._device.get(id(host))
        if known is None or known[0]() is not host:
            return None
        device = known[1]
        return device() if isinstance(device, weakref.ref) else device

    def _remember(self, host: np.ndarray, device: DeviceArray, uploaded: bool) -> None:
        key = id(host)
        self._device[key] = (weakref.ref(host, lambda _: self._device.pop(key, None)),
                             device if uploaded else weakref.ref(device))
        if not uploaded:
            device.host_copy = host

    def _host_array(self, device: DeviceArray) -> np.ndarray:
        if device.host_copy is None:
            self._remember(device.to_host(), device, uploaded=False)
        return device.host_copy

    def _device_array(self, host: np.ndarray) -> DeviceArray:
        device = self.device_of(host)
        if device is None:
            device = self.alloc.upload(host)
            self._remember(host, device, uploaded=True)
        return device

    # ------------------------------------------------------------ values between cells

    def enter(self, value: Any) -> Any:
        """A global as the run's environment holds it: a `DeviceValue`'s arrays where they
        are (on this run's device when they are there), both forms known."""
        if not isinstance(value, DeviceValue):
            return value
        return map_tree(value.tree, self._enter_placed, Placed)

    def _enter_placed(self, placed: Placed) -> Any:
        device = placed.device
        if device is not None and device.buffer.pool is not self.alloc.pool:
            placed.to_host()                 # another session's device: read from the host
            device = None
        if device is None:
            return placed.host
        if placed.host is not None:          # the global keeps both alive
            self._remember(placed.host, device, uploaded=False)
        return device

    def settle(self, value: Any) -> None:
        """Keep in a global's `DeviceValue` the device arrays this run uploaded for it (and
        the host copies it downloaded), for the next runs."""
        if isinstance(value, DeviceValue):
            for placed in value.placed():
                if placed.device is None:
                    placed.device = self.device_of(placed.host)
                elif placed.host is None:
                    placed.host = placed.device.host_copy

    def leave(self, value: Any) -> DeviceValue:
        """A value the run made, in the `"device"` form (with what is known of both forms)."""
        def place(leaf: Any) -> Placed:
            if isinstance(leaf, DeviceArray):
                return Placed(leaf.host_copy, leaf)
            return Placed(leaf, self.device_of(leaf))
        return DeviceValue(map_tree(value, place, (DeviceArray, np.ndarray)))


def _executor_class(compiled: Compiled) -> type:
    base = cpu_driver._executor_class(compiled)

    class CudaExecutor(base):              # type: ignore[misc, valid-type]
        """`cpu`'s executor (kernels through their host functions), with the library
        functions on the device where `library.py` takes them, else the `numpy` target's,
        and each value where its readers need it."""
        _library = run_library
        _seglibrary = run_seglibrary
        target = "cuda"

        def worker_factory(self) -> None:
            """Sequences of the cuda target do not run on a cluster (not built)."""
            return None

        def _launched(self, name: str, values: Any, seconds: float,
                      variants: list[str]) -> None:
            """Nothing: the device pool's launcher writes each launch's event."""

        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            self.residency: Residency = (getattr(compiled, "residency", None)    # `run`'s
                                         or Residency(RunAllocator(compiled.memory)))
            self.structural = True           # a top-level block's results stay as they are
            for cls in self._ops:
                self._ops[cls] = self._reading(self._ops[cls], issubclass(cls, STRUCTURAL))

        def _reading(self, run: Any, structural: bool) -> Any:
            def op(stmt: F.Stmt, node: Any) -> Any:
                saved, self.structural = self.structural, structural
                try:
                    return run(stmt, node)
                finally:
                    self.structural = saved
            return op

        def allocator(self) -> Any:
            return self.residency.alloc

        def atom(self, atom: F.Atom) -> Any:
            value = super().atom(atom)
            return value if self.structural else self.residency.host(value)

        def kernel_arg(self, value: Any) -> Any:
            return self.residency.device(value)

        def is_buffer(self, value: Any) -> bool:
            return isinstance(value, (np.ndarray, DeviceArray))

        def evaluator(self, fn: F.ScalarFn) -> Any:
            evaluator = super().evaluator(fn)
            evaluator.fallback = _HostView(self.env, self.residency)
            return evaluator

        def assert_message(self, stmt: F.Stmt, op: F.Assert, ok: Any) -> str:
            saved = self.env
            self.env = ChainMap({}, _HostView(saved, self.residency))
            try:
                return super().assert_message(stmt, op, ok)
            finally:
                self.env = saved

        def coerce(self, value: Any, rep: F.Rep) -> Any:
            if not _shallow(value, rep):      # a scalar, or segments made regular: on the host
                value = self.residency.host(value)
            return super().coerce(value, rep)

        def _index(self, stmt: F.Stmt, op: F.Index) -> Any:
            """`a[i]` of a device array reads row i alone (not a download of the array)."""
            arr = super().atom(op.arr)
            if not isinstance(arr, DeviceArray) or arr.host_copy is not None:
                return super()._index(stmt, op)
            i = self.atom(op.index)
            check_indices(np.asarray(i), len(arr), stmt.span)
            out = arr.row(int(i))
            self._cost(stmt, count(out), 1)
            return out

        def _kernel(self, stmt: F.Stmt, op: F.Kernel) -> Any:
            try:
                return super()._kernel(stmt, op)
            except OutOfMemory as error:       # an input's upload, before its host function
                if error.span is None:
                    error.span = stmt.span
                raise

        def _writerows(self, stmt: F.Stmt, op: F.WriteRows) -> Any:
            out = super()._writerows(stmt, op)
            self.residency.forget(out)          # written in place: its device copy is old
            return out

    return CudaExecutor


def _shallow(value: Any, rep: F.Rep) -> bool:
    """Whether `rows.coerce(value, rep)` reads no element of `value`'s device arrays (then
    they stay on the device)."""
    if not any(isinstance(leaf, DeviceArray) for leaf in _leaves(value)):
        return True
    if isinstance(rep, F.Regular):            # checks the dtype and rank
        return isinstance(value, DeviceArray)
    if isinstance(rep, F.TupleRep):
        return isinstance(value, tuple) and all(map(_shallow, value, rep.parts))
    if isinstance(rep, F.Segmented):          # segments, or a block seen as segments
        return (_shallow(value.values, rep.inner) if isinstance(value, Segs)
                else isinstance(value, DeviceArray))
    return False                              # a scalar: read on the host


class _HostView(Mapping):
    """An environment seen from the host: device arrays read as their host copies."""

    def __init__(self, env: Mapping[str, Any], residency: Residency):
        self.env, self.residency = env, residency

    def __getitem__(self, name: str) -> Any:
        return self.residency.host(self.env[name])

    def __contains__(self, name: object) -> bool:
        return name in self.env

    def __iter__(self) -> Iterator[str]:
        return iter(self.env)

    def __len__(self) -> int:
        return len(self.env)


def _leaves(value: Any) -> list[Any]:
    found: list[Any] = []
    map_tree(value, lambda x: found.append(x) or x, (np.ndarray, DeviceArray))
    return found


def _begin(compiled: Compiled, globals: Mapping[str, Any]) -> tuple[Residency, dict]:
    residency = Residency(RunAllocator(compiled.memory))
    compiled.residency = residency                       # type: ignore[attr-defined]
    return residency, {name: residency.enter(v) for name, v in globals.items()}


def run(compiled: Compiled, globals: Mapping[str, Any], cancel: CancelToken | None = None
        ) -> FlatCellValues:
    """Run the program as `cpu` does; its bindings and results in the `"device"` form."""
    residency, env = _begin(compiled, globals)
    try:
        with quiet():
            out = cpu_driver.run(compiled, env, cancel=cancel)
        for value in globals.values():
            residency.settle(value)
    finally:
        compiled.residency = None                        # type: ignore[attr-defined]
    out.bindings = {name: residency.leave(v) for name, v in out.bindings.items()}
    out.results = [residency.leave(v) for v in out.results]
    return out


def run_call(compiled: Compiled, form: F.FlatForm, args: list[Any], globals: Mapping[str, Any],
             cancel: CancelToken | None = None) -> Any:
    """Call a def as `cpu` does; its result flat (on the host)."""
    residency, env = _begin(compiled, globals)
    try:
        with quiet():
            out = cpu_driver.run_call(compiled, form, args, env, cancel=cancel)
        for value in globals.values():
            residency.settle(value)
        return residency.host(out)
    finally:
        compiled.residency = None                        # type: ignore[attr-defined]
