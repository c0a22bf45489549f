"""The one place where failures that are not accel errors become accel errors.

`accel_errors(phase, target)` wraps what the `Session` does for a caller (a cell, a call, a
stage view): an `AccelError` goes through unchanged, and so does `NotImplementedError` (the
documented answer for a construct not built yet) and `KeyboardInterrupt`. Everything else
is a failure of the implementation and is raised as one accel error:

- `MemoryError` (an allocation whose size was not checked before) → `OutOfMemory`;
- `PassError` (a pass produced an invalid program) → `InternalError` naming that pass;
- any other exception (`ValueError`, `KeyError`, `RecursionError`, numba's errors, ...) →
  `InternalError` naming the stage it happened in, found from the traceback: the outermost
  frame that belongs to a stage's modules (`parse`, `typed`, `desugar`, ..., `codegen`, the
  run on a target), else `phase`. The traceback text is kept in `.details` (the CLI prints
  it with `--debug`, the kernel logs it).
"""
from __future__ import annotations

import contextlib
import os
import traceback
from collections.abc import Iterator

from .lang.errors import AccelError, InternalError

_PACKAGE = os.path.dirname(os.path.abspath(__file__))

# module (path under accel_kernel/, without .py; a prefix ending in `/` is a folder) -> stage
_STAGES: tuple[tuple[str, str], ...] = (
    ("lang/lexer", "parse"), ("lang/parser", "parse"), ("lang/completeness", "parse"),
    ("lang/typecheck", "typed"), ("passes/desugar", "desugar"), ("passes/shape", "shape"),
    ("passes/regularity", "regularity"), ("passes/flatten/", "flatten"),
    ("passes/fuse", "fuse"), ("backends/cpu/codegen", "codegen"),
    ("backends/cpu/scalar_source", "codegen"), ("backends/cpu/python_code", "codegen"),
    ("backends/cuda/codegen", "codegen"), ("backends/cuda/dialect", "codegen"),
    ("backends/cuda/ptx", "codegen"), ("backends/cuda/", "run"),
    ("backends/interp/", "run"), ("backends/numpy/", "run"), ("backends/cpu/", "run"),
    ("values", "run"),
)
# functions of the run modules that compile rather than run
_COMPILING = {("backends/cpu/driver", "compile_program"), ("backends/cpu/driver", "load"),
              ("backends/cuda/driver", "compile_program")}


@contextlib.contextmanager
def accel_errors(phase: str, target: str | None = None) -> Iterator[None]:
    """Re-raise every failure inside as an AccelError (see the module docstring). `phase`
    names the stage when the traceback does not; `target` is said for a failing run."""
    try:
        yield
    except (AccelError, NotImplementedError, KeyboardInterrupt):
        raise
    except MemoryError:
        from .runtime.memory import out_of_memory
        raise out_of_memory() from None
    except Exception as err:
        raise internal_error(err, phase, target) from err


def internal_error(err: BaseException, phase: str, target: str | None = None) -> InternalError:
    """The InternalError for an exception that escaped: its stage, a one-line message that
    says it is a bug, and the traceback in `.details`."""
    details = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    stage = getattr(err, "stage", None) or stage_of(err.__traceback__) or phase
    if stage == "run" and target is not None:
        stage = f"run on {target}"
    text = str(err).strip().split("\n")[0] or "(no message)"
    if len(text) > 300:
        text = text[:297] + "..."
    return InternalError(stage, f"{type(err).__name__}: {text} (a bug of accel_kernel; "
                                "please report it with the code that caused it)",
                         details=details)


def stage_of(tb) -> str | None:
    """The stage of the outermost frame of `tb` that is in a stage's module."""
    for frame, _ in traceback.walk_tb(tb):
        path = os.path.abspath(frame.f_code.co_filename)
        if os.path.basename(path).startswith("accel_") and not path.startswith(_PACKAGE):
            return "run"                 # a generated module of the cpu target
        if not path.startswith(_PACKAGE + os.sep):
            continue
        module = os.path.relpath(path, _PACKAGE).replace(os.sep, "/").removesuffix(".py")
        if (module, frame.f_code.co_name) in _COMPILING:
            return "codegen"
        for prefix, stage in _STAGES:
            if module == prefix or (module.startswith(prefix) and
                                    (prefix.endswith("/") or module[len(prefix)] in "_/")):
                return stage
    return None
