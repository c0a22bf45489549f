"""Python values into a session and back: `%load`, `%%python` and `%%accel --in/--out`.

- `read_data(path, key)`: the Python value of a data file: `.npy` memory-mapped (read-only),
  `.npz` (one array, or the one named KEY), `.json` (numbers, booleans and nested lists; a
  field KEY of an object) and `.parquet` through Awkward (a column KEY; only when pyarrow is
  installed). Nested lists become Awkward arrays, so ragged data stays ragged.
- `accel_value(obj)`: the `host.HostValue` of a numpy / Awkward / Python value, its type read
  from the value (`api.python_type`) and its flat form made without copying the buffers of a
  contiguous numpy array or an Awkward array (`backends/numpy/boundary.flat_from_python`): a
  regular Awkward array (a `RegularArray`, or lists of one length) is a regular block.
- `bind_python(session, values, doc)`: those values as global lets of the session.
- `run_python(session, namespace, code, name)`: a `%%python` cell. It sees the session's
  globals as numpy / Awkward values (read-only views of the session's buffers) next to the
  names of earlier Python cells (`namespace`); afterwards every new or changed variable whose
  value is data (arrays, numbers, booleans, tuples of them) becomes a global let, the others
  stay in `namespace`. A cell that raises changes nothing. Its stdout and stderr are its
  output; an interrupt stops it (KeyboardInterrupt goes up to the kernel).

Errors are `MagicError`s (`LoadError`, or `PythonError` named after the Python exception,
with the traceback of the cell's own lines only); a value without an accel type is the
`AccelTypeError` of `api.python_type`.
"""
from __future__ import annotations

import ast
import contextlib
import io
import json
import linecache
import os
import signal
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..host import FLAT, HostValue
from ..lang.errors import AccelError
from ..runtime.cancel import sigint_handler
from .magics import MagicError

FORMATS = ".npy, .npz, .json, .parquet"


class LoadError(MagicError):
    """A data file that cannot be read (missing, unknown format, no such array or field)."""

    kind = "LoadError"


class PythonError(MagicError):
    """A `%%python` cell that raised: `kind` is the Python exception's name."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


# ---------------------------------------------------------------- data files

def read_data(path: str, key: str | None = None) -> tuple[Any, str]:
    """The value of the file at `path` (or of its array / field / column `key`) and a few
    words on how it was read."""
    path = os.path.expanduser(path)
    suffix = os.path.splitext(path)[1].lower()
    reader = _READERS.get(suffix)
    if reader is None:
        raise LoadError(f"cannot read `{suffix or path}` files: %load reads {FORMATS}")
    if not os.path.isfile(path):
        raise LoadError(f"no file {path} (relative paths start at {os.getcwd()})")
    return reader(path, key)


def _npy(path: str, key: str | None) -> tuple[Any, str]:
    _no_key(key, path)
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as err:
        raise LoadError(f"cannot read {path}: {err}") from None
    return array, f"memory-mapped from {path}"


def _npz(path: str, key: str | None) -> tuple[Any, str]:
    with np.load(path, allow_pickle=False) as archive:
        names = list(archive.files)
        chosen = _choose(key, names, path, "array")
        return archive[chosen], f"array `{chosen}` of {path}"


def _json(path: str, key: str | None) -> tuple[Any, str]:
    with open(path) as file:
        try:
            value = json.load(file)
        except json.JSONDecodeError as err:
            raise LoadError(f"cannot read {path}: {err}") from None
    where = path
    if isinstance(value, dict):
        key = _choose(key, list(value), path, "field")
        value, where = value[key], f"field `{key}` of {path}"
    else:
        _no_key(key, path)
    if isinstance(value, list):
        import awkward as ak
        value = ak.from_iter(value)         # one buffer per level: ragged rows stay ragged
    return value, f"from {where}"


def _parquet(path: str, key: str | None) -> tuple[Any, str]:
    try:
        import pyarrow  # noqa: F401  (Awkward reads Parquet through it)
    except ImportError:
        raise LoadError("reading .parquet needs pyarrow, which is not installed: "
                        "`pip install pyarrow` into this kernel's environment") from None
    import awkward as ak
    array = ak.from_parquet(path)
    columns = ak.fields(array)
    if not columns:
        _no_key(key, path)
        return array, f"from {path}"
    column = _choose(key, columns, path, "column")
    return array[column], f"column `{column}` of {path}"


_READERS = {".npy": _npy, ".npz": _npz, ".json": _json, ".parquet": _parquet}


def _choose(key: str | None, names: list[str], path: str, what: str) -> str:
    if key is not None:
        if key not in names:
            raise LoadError(f"{path} has no {what} `{key}` (its {what}s: {', '.join(names)})")
        return key
    if len(names) == 1:
        return names[0]
    raise LoadError(f"{path} holds {len(names)} {what}s ({', '.join(names)}): name one, "
                    f"`%load NAME {path} {what.upper()}`")


def _no_key(key: str | None, path: str) -> None:
    if key is not None:
        raise LoadError(f"{path} holds one value: %load NAME PATH takes no KEY for it")


# ---------------------------------------------------------------- values into a session

def accel_value(obj: Any) -> HostValue:
    """The host value of a Python value (AccelTypeError when it has no accel type)."""
    from ..api import python_type
    from ..backends.numpy.boundary import flat_from_python
    if isinstance(obj, Iterator):            # a generator: streamed lazily (`stream`)
        return host_stream(obj)
    if isinstance(obj, list):
        import awkward as ak
        obj = ak.from_iter(obj)
    t = python_type(obj)
    try:
        return HostValue.of(FLAT, flat_from_python(obj, t), t)
    except TypeError as err:               # e.g. an int too big for i64
        from ..lang.errors import AccelTypeError
        raise AccelTypeError(str(err)) from None


def host_stream(iterable: Iterator) -> HostValue:
    """A Python iterator as a sequence (`seq t`, t the type of its first row, read ahead):
    `stream`, `mapSeq`, `foldSeq` pull its rows chunk by chunk; it can be run once."""
    from ..api import python_type
    from ..lang import types as T
    from ..lang.errors import AccelTypeError
    from ..runtime.sequences import HostStream
    stream = HostStream(iterable)
    try:
        first = stream.peek()
    except StopIteration:
        raise AccelTypeError("an empty Python iterator has no element type: pass an empty "
                             "array of the type instead") from None
    stream.elem_type = python_type(first)
    return HostValue.of(FLAT, stream, T.Seq(stream.elem_type))


def bind_python(session: Any, values: dict[str, Any], doc: str) -> list[str]:
    """Bind each Python value as a global let; the lines that say what was bound (`name :
    type`) and what the rebinding changed."""
    hosts = {name: accel_value(obj) for name, obj in values.items()}
    result = session.bind(hosts, doc)
    lines = [f"{name} : {session.lookup(name).type}" for name in hosts]
    return lines + list(result.notes)


def python_values(session: Any) -> dict[str, Any]:
    """Every user global let of the session as its Python value (numpy arrays are read-only
    views of the session's buffers)."""
    values = {}
    for info in session.names():
        if info.kind == "let" and "->" not in info.type:      # functions stay in accel
            values[info.name] = session.global_value(info.name).python()
    return values


# ---------------------------------------------------------------- %%python

@dataclass
class PythonCell:
    """What a `%%python` cell did: its printed text, the repr of its last expression (None
    without one), the lines about the globals it bound and the names left in Python."""
    stdout: str = ""
    result: str | None = None
    bound: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def run_python(session: Any, namespace: dict[str, Any], code: str, name: str) -> PythonCell:
    inputs = python_values(session)
    scope: dict[str, Any] = {"np": np, **namespace, **inputs}
    before = dict(scope)
    out = io.StringIO()
    result = None
    filename = f"<{name}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        tree = ast.parse(code, filename)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), _interruptible():
            exec(compile(tree, filename, "exec"), scope)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), filename, "eval"), scope)
                result = None if value is None else repr(value)
    except Exception as err:
        raise _python_error(err, filename) from None
    changed = {n: v for n, v in scope.items()
               if not n.startswith("_") and (n not in before or v is not before[n])}
    data = {n: v for n, v in changed.items() if _is_data(v)}
    cell = PythonCell(stdout=out.getvalue(), result=result)
    if data:
        try:
            cell.bound = bind_python(session, data, f"from Python ({name})")
        except AccelError as err:
            raise PythonError(err.kind, f"{err.message} (nothing of {name} was kept)") from None
    namespace.clear()
    namespace.update((n, v) for n, v in scope.items()
                     if n not in data and n not in inputs and n != "__builtins__")
    cell.kept = sorted(n for n in changed if n not in data)
    return cell


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """Python code stops at an interrupt (KeyboardInterrupt), which the kernel's SIGINT
    handler (it asks the accel evaluator to stop at its next check) would not do."""
    with sigint_handler(signal.default_int_handler):
        yield


def _is_data(value: Any) -> bool:
    """Arrays, numbers and booleans (and tuples of them), and iterators (generators: a
    sequence streamed chunk by chunk): what becomes an accel global."""
    if isinstance(value, Iterator):
        return True
    if isinstance(value, tuple):
        return bool(value) and all(_is_data(v) for v in value)
    if isinstance(value, (bool, int, float, np.generic, np.ndarray)):
        return True
    return type(value).__module__.startswith("awkward") and hasattr(value, "layout")


def _python_error(err: Exception, filename: str) -> PythonError:
    """The error of a failing cell: the exception and the frames of the cell's own code."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == filename]
    lines = [f"{type(err).__name__}: {err}"]
    if isinstance(err, SyntaxError) and err.filename == filename:
        lines = [f"SyntaxError: {err.msg} (line {err.lineno})",
                 *(["    " + (err.text or "").rstrip()] if err.text else [])]
    for frame in frames:
        lines.append(f"  line {frame.lineno}: {(frame.line or '').strip()}")
    first, *rest = lines
    return PythonError(type(err).__name__, "\n".join([first.split(": ", 1)[-1], *rest]))
