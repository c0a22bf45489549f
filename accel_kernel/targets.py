"""The execution targets: one `Target` record each, in one table (`TARGETS`, keyed by name).

A target's name is looked up here and nowhere else: `get(name)` gives its record (ValueError
for an unknown name, NotImplementedError for one not built), and `Session`, `api`, the CLI and
the kernel then read the record's fields and call its functions; none of them compares target
names. A target is one record here plus its back-end package (`cuda`: `backends/cuda/`).

`cpu` (numba-compiled fused kernels) is the default everywhere: `Session()`, `Program.run`,
`accel run`, the Jupyter kernel and the IPython extension all read `DEFAULT_TARGET`. `interp`
is the reference interpreter that defines what programs mean; every other target is tested
against it.

There is no fallback from one target to another. A target that is not built, a compiled
target whose compiler (numba) cannot be imported, and a construct a compiled target does not
build yet all raise NotImplementedError naming what is missing; nothing is re-run on `interp`
behind the user's back, so a result always comes from the target the user sees (`%target`).
Choosing `interp` (`%target interp`, `--target interp`, `target="interp"`) runs everything.

The back ends are imported only when a target first runs something (`import accel_kernel`
stays light).
"""
from __future__ import annotations

import importlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping


@dataclass(frozen=True)
class Target:
    """One execution target.

    `run(program, globals, memory, cancel, options) -> (FlatCellValues, compile seconds)`
    runs a cell's program of stage `last_stage` on the flat values `globals` of the global
    lets it reads; `call(program, form, args, globals, memory, cancel, counters, cache,
    options) -> flat value` calls its def `form` (`cache`: the session's, where a target
    keeps what it compiled; `options`: the session's `CompileOptions`).
    The value boundary: `from_host(obj, type)` makes the value a call takes from a Python
    (numpy, Awkward) argument, `to_host(value, type)` the Python result from what it gives.
    The reference target has no `run` and `call`: the session's interpreter runs the typed
    AST with interp values (its boundary converts to and from those). `value_form` is the
    form (`host.FLAT`, `host.INTERP`, `host.DEVICE`) its runs read and give (`cuda`'s calls
    give flat values): the session keeps every global
    as the target that made it gave it, converted to another target's form only when read."""
    name: str
    what: str                                  # what it is, in words
    last_stage: str | None                     # the last compiler stage its programs need
    run: Callable[..., tuple[Any, float]] | None = None
    call: Callable[..., Any] | None = None
    from_host: Callable[[Any, Any], Any] | None = None
    to_host: Callable[[Any, Any], Any] | None = None
    value_form: str = "flat"                   # the form of its values (`host.py`)
    compiler: str | None = None                # the module its compiled code needs
    reference: bool = False                    # defines what programs mean; runs every one
    counts_costs: bool = False                 # its runs count work and depth (`Counters`)
    # SEQ-INNER (`passes.base.Options.seq_inner`): off where scalar functions run lane by lane
    seq_inner: bool = True
    # FUSE-SEGMENTED-FILTER (`passes.base.Options.segmented_filter`): off where no kernel
    # writer runs a filter segment by segment
    segmented_filter: bool = True
    # FUSE-HIST (`passes.base.Options.hist`): off where no kernel writer makes histograms
    hist: bool = True
    pending: str | None = None                 # why it is not built yet; None: built
    # its `codegen` stage's pass, where it is not cpu's (`compiler.default_passes`)
    codegen: Callable[[], Any] | None = None
    # why it cannot run on this machine (one line), None when it can: `cuda` without a GPU
    unavailable: Callable[[], str | None] | None = None

    @property
    def built(self) -> bool:
        return self.pending is None

    def check_compiler(self) -> None:
        """Raise NotImplementedError when the compiler this target needs cannot be imported,
        or when the target cannot run here (`unavailable`: `cuda` without a GPU).
        Called when the target is chosen explicitly or first compiles something (not when a
        session starts, so the kernel and the library start without it)."""
        if self.compiler is None:
            return
        try:
            importlib.import_module(self.compiler)
        except ImportError as err:
            raise NotImplementedError(
                f"target '{self.name}' ({self.what}) needs {self.compiler}, which cannot be "
                f"imported ({err}); install {self.compiler}, or choose the target interp"
            ) from None
        reason = self.unavailable() if self.unavailable is not None else None
        if reason is not None:
            raise NotImplementedError(reason)


@dataclass(frozen=True)
class CompileOptions:
    """How the compiled targets build their code, given to their drivers explicitly (the
    back ends read no environment variable): made once where a session is made, from the
    environment (`from_environment`), or by whoever makes the session (the tests)."""
    cache_dir: Path      # where `cpu` keeps its generated modules and numba their machine code
    # which variant of a `cpu` kernel runs (backends/cpu/tiers.py): `tiered` (sequential
    # below a launch size, parallel above it once compiled), `sequential` or `parallel`
    kernels: str = "tiered"

    @staticmethod
    def from_environment(environ: Mapping[str, str] = os.environ) -> "CompileOptions":
        """The options a user sets through the environment: `$ACCEL_CACHE_DIR`, else
        `~/.cache/accel_kernel/kernels`; `$ACCEL_KERNELS` (`tiered`, the default,
        `sequential` or `parallel`)."""
        cache = environ.get("ACCEL_CACHE_DIR")
        kernels = environ.get("ACCEL_KERNELS") or "tiered"
        if kernels not in KERNEL_MODES:
            raise ValueError(f"$ACCEL_KERNELS must be one of {', '.join(KERNEL_MODES)}, "
                             f"not {kernels!r}")
        return CompileOptions(Path(cache) if cache else
                              Path.home() / ".cache" / "accel_kernel" / "kernels", kernels)


KERNEL_MODES = ("tiered", "sequential", "parallel")     # CompileOptions.kernels


# ---------------------------------------------------------------- the back ends' entry points

def _interp_from_host(obj: Any, t: Any) -> Any:
    from .values import from_python
    return from_python(obj, t)


def _interp_to_host(value: Any, t: Any) -> Any:
    from .values import to_python
    return to_python(value, t)


def _flat_from_host(obj: Any, t: Any) -> Any:
    from .backends.numpy.boundary import flat_from_python
    return flat_from_python(obj, t)


def _flat_to_host(value: Any, t: Any) -> Any:
    from .backends.numpy.boundary import python_from_flat
    return python_from_flat(value, t)


def _numpy_run(program, globals, memory, cancel, options):
    from .backends import numpy as flat_numpy
    return flat_numpy.execute(program, globals, cancel=cancel, memory=memory), 0.0


def _numpy_call(program, form, args, globals, memory, cancel, counters, cache, options):
    from .backends import numpy as flat_numpy
    return flat_numpy.call(form, args, globals, counters=counters, cancel=cancel,
                           memory=memory)


def _numba_driver(name: str) -> Any:
    """The driver module of a numba target (`cpu`, `cuda`), imported when first used."""
    return importlib.import_module(f".backends.{name}.driver", __package__)


def _numba_run(name: str) -> Callable:
    def run(program, globals, memory, cancel, options):
        driver = _numba_driver(name)
        started = time.perf_counter()
        compiled = driver.compile_program(program, options, memory)
        generated = time.perf_counter()
        out = driver.run(compiled, globals, cancel=cancel)
        return out, (generated - started) + compiled.compile_seconds
    return run


def _numba_call(name: str) -> Callable:
    def call(program, form, args, globals, memory, cancel, counters, cache, options):
        driver = _numba_driver(name)
        key = (name, "compiled", id(program))
        if key not in cache:
            cache[key] = driver.compile_program(program, options, memory)
        return driver.run_call(cache[key], form, args, globals, cancel=cancel)
    return call


_cpu_run, _cpu_call = _numba_run("cpu"), _numba_call("cpu")
_cuda_run, _cuda_call = _numba_run("cuda"), _numba_call("cuda")


def _cuda_codegen():
    from .backends.cuda.codegen import CUDA_CODEGEN
    return CUDA_CODEGEN


def _cuda_unavailable() -> str | None:
    from .backends.cuda.device import unavailable
    return unavailable()


# ---------------------------------------------------------------- the table

TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("interp", "the reference interpreter (defines the meaning of programs)",
           last_stage="typed", from_host=_interp_from_host, to_host=_interp_to_host,
           value_form="interp", reference=True),
    Target("numpy", "the flat segmented IR run with whole-array numpy operations",
           last_stage="flatten", run=_numpy_run, call=_numpy_call,
           from_host=_flat_from_host, to_host=_flat_to_host, counts_costs=True,
           seq_inner=False),
    Target("cpu", "numba-compiled fused kernels on the CPU",
           last_stage="fuse", run=_cpu_run, call=_cpu_call,
           from_host=_flat_from_host, to_host=_flat_to_host, compiler="numba"),
    Target("cuda", "numba.cuda kernels on an NVIDIA GPU", last_stage="fuse",
           run=_cuda_run, call=_cuda_call, from_host=_flat_from_host,
           to_host=_flat_to_host, compiler="numba.cuda", codegen=_cuda_codegen,
           unavailable=_cuda_unavailable, value_form="device",      # kept on the device
           segmented_filter=False, hist=False),
)}

DEFAULT_TARGET = "cpu"

BUILT: frozenset[str] = frozenset(name for name, t in TARGETS.items() if t.built)

REFERENCE = TARGETS["interp"]
# the target the flat views (`%step flatten`, `Program.flat_run`) run on, every value traced
TRACED = TARGETS["numpy"]


def get(target: str | Target) -> Target:
    """The record of a built target, from its name (or the record itself); raise otherwise,
    saying why: ValueError for an unknown name, NotImplementedError for one not built."""
    record = target if isinstance(target, Target) else find(target)
    if record is None:
        raise ValueError(f"unknown target '{target}': choose one of {', '.join(TARGETS)}")
    if not record.built:
        raise NotImplementedError(f"target '{record.name}' ({record.what}) is not built yet: "
                                  f"{record.pending}; use --target interp")
    return record


def find(name: str) -> Target | None:
    """The record named `name`, built or not; None for an unknown name."""
    return TARGETS.get(name)


def describe(current: Target) -> str:
    """The targets, one a line, the current one marked, built or not, and the default."""
    lines = []
    for name, target in TARGETS.items():
        mark = "*" if target is current else " "
        notes = [n for n, on in (("default", name == DEFAULT_TARGET),
                                 ("not built yet", not target.built)) if on]
        suffix = f" ({', '.join(notes)})" if notes else ""
        lines.append(f" {mark} {name.ljust(6)}  {target.what}{suffix}")
    return "\n".join(lines)
