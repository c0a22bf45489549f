"""The Python library: `acc.compile(source)` and `Program.run(name, *args)`.

Errors: only accel errors (`AccelError` subclasses: a failure inside accel_kernel is an
`InternalError` naming its stage, with the traceback in `.details`; see `boundary`), plus
NotImplementedError for a construct the target does not build and ValueError for an unknown
target name.

Arguments and results cross the boundary as LANGUAGE.md §9 says: numpy arrays for regular
arrays, `ak.Array` for irregular ones, tuples, numpy scalars. The argument types of a generic
def are taken from the Python values (dtype and nesting) and matched against its type scheme.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from . import targets
from .boundary import accel_errors
from .lang import types as T
from .lang.errors import AccelNameError, AccelTypeError
from .lang.scalar_ops import DTYPES
from .runtime.events import JsonLines
from .session import Session

_DTYPES = {np.dtype(cls): T.Scalar(name) for name, cls in DTYPES.items()}


class Program:
    """A compiled accel source: its definitions are type checked; `run` calls one of them."""

    def __init__(self, source: str, name: str = "<string>"):
        self.source = source
        self.name = name
        self._session = Session()
        self.checked = self._session.check(source, name)   # raises AccelError with spans
        self._loaded = False
        self.events: list = []           # the last traced run's events (`run(trace=...)`)

    def set_cluster(self, cluster: Any) -> None:
        """Run this program's sequences as tasks on a Dask cluster: `local N`, a scheduler's
        address (`tcp://HOST:8786`), a `distributed.Client`, or None (`Session.set_cluster`)."""
        self._session.set_cluster(cluster)

    def close(self) -> None:
        """Close the local cluster this program started, if any."""
        self._session.close()

    def type_of(self, name: str) -> str:
        scheme = self.checked.schemes.get(name)
        if scheme is None:
            raise AccelNameError(f"`{name}` is not defined by this program")
        return T.show_scheme(scheme)

    def run(self, entry: str, *args: Any, target: str = targets.DEFAULT_TARGET,
            trace: bool | str = False) -> Any:
        """Call the def `entry` with Python arguments on `target` (default `cpu`); return its
        value as numpy/awkward. A construct the target does not build raises
        NotImplementedError (target="interp" runs every program). With `trace`, the run's
        events (`runtime/events.py`: a sequence's steps and the scheduler's decisions, kernel
        launches, device memory) are kept in `self.events` (a list), and with a file name
        also written there, one JSON object a line. A Python generator argument is streamed
        into a `seq` parameter chunk by chunk."""
        chosen = targets.get(target)     # an unknown name is the caller's ValueError
        if not trace:
            return self._run(entry, args, chosen)
        with self._session.events.recording() as log:
            try:
                return self._run(entry, args, chosen)
            finally:
                self.events = list(log)
                if isinstance(trace, str):
                    with open(trace, "w", encoding="utf-8") as out:
                        write = JsonLines(out)
                        for event in self.events:
                            write(event)

    def _run(self, entry: str, args: tuple, chosen: targets.Target) -> Any:
        args = tuple(_streamed(a) for a in args)
        with accel_errors("call", chosen.name):   # the arguments' and result's conversions too
            params, result = self._signature(entry, args, chosen)
            # the target's boundary: on the flat targets numpy and Awkward arrays cross
            # without loops; the reference interpreter takes and gives interp values
            values = [chosen.from_host(a, p) for a, p in zip(args, params)]
            if chosen.reference:
                out = self._session.call(entry, values)
            else:
                out = self._session.call_flat(entry, values, params, chosen)
            return chosen.to_host(out, result)

    def flat_run(self, entry: str, *args: Any):
        """Flattening on real data: `entry` called on these arguments on the `numpy` target
        with every flat binding's value traced, and work and depth next to the
        interpreter's (`viz.flat_run.FlatRun`: `.text()`, `.dot()`, `.svg()`)."""
        traced = targets.TRACED
        with accel_errors("flat_run", traced.name):
            params, result = self._signature(entry, args, traced)
            flat = [traced.from_host(a, p) for a, p in zip(args, params)]
            return self._session.flat_call_run(entry, flat, params, result)

    def _signature(self, entry: str, args: tuple,
                   target: targets.Target) -> tuple[list[T.Type], T.Type]:
        """The concrete parameter types and result type of this call of `entry` (checked
        against the arguments' types; the program is run once, first, on the target of this
        first call: its global lets keep those values for every later call)."""
        if not self._loaded:
            self._session.set_target(target)
            self._session.execute(self.source, self.name)
            self._loaded = True
        scheme = self._session.scheme(entry)
        if scheme is None or entry not in self.checked.schemes:
            raise AccelNameError(f"`{entry}` is not defined by this program")
        params, result = _split_params(scheme.type, len(args), entry)
        mapping: dict[str, T.Type] = {}
        for position, (param, arg) in enumerate(zip(params, args), start=1):
            actual = python_type(arg)
            if not _match(param, actual, mapping):
                raise AccelTypeError(f"argument {position} of `{entry}`: expected "
                                     f"{T.show(T.substitute(param, mapping))}, got {T.show(actual)}")
            for var, cls in scheme.constraints.items():
                bound = mapping.get(var)
                if bound is not None and not (isinstance(bound, T.Scalar)
                                              and bound.name in T.CLASSES[cls]):
                    allowed = ", ".join(sorted(T.CLASSES[cls]))
                    raise AccelTypeError(f"argument {position} of `{entry}`: `{var}` must be "
                                         f"one of {allowed}, got {T.show(bound)}")
        return [T.substitute(p, mapping) for p in params], T.substitute(result, mapping)

    def stages(self, entry: str | None = None, stop_after: str | None = None) -> "Stages":
        """The compilation stages of the program, or of the def `entry` only:
        `prog.stages("main")["regularity"].svg()`. Nothing is evaluated."""
        return Stages(Session().program_stages(self.source, self.name, entry, stop_after))


class StageView:
    """One stage for a user: `.text`, `.dot`, `.svg()`, `.json`; shows as SVG in notebooks."""

    def __init__(self, stage):
        self.stage = stage
        self.name = stage.name
        self.changed = stage.changed
        self.steps = stage.steps

    @property
    def text(self) -> str:
        from .viz.text import stage_text
        return stage_text(self.stage)

    @property
    def dot(self) -> str:
        from .viz.graphs import stage_dot
        return stage_dot(self.stage)

    @property
    def json(self) -> dict:
        from .viz.json_view import stage_json
        return stage_json(self.stage)

    def svg(self) -> str | None:
        """The drawing as SVG, or None when no Graphviz renderer is installed."""
        from .viz.render import render_svg
        return render_svg(self.dot)

    def _repr_svg_(self) -> str | None:
        return self.svg()

    def __repr__(self) -> str:
        return self.text


class Stages:
    """All stages of a compilation, in pipeline order; index by position or by stage name."""

    def __init__(self, stages):
        self._views = [StageView(s) for s in stages]

    def __getitem__(self, key: int | str) -> StageView:
        if isinstance(key, str):
            for view in self._views:
                if view.name == key:
                    return view
            raise KeyError(f"no stage {key!r}: the stages are {', '.join(self.names)}")
        return self._views[key]

    def __iter__(self):
        return iter(self._views)

    def __len__(self) -> int:
        return len(self._views)

    @property
    def names(self) -> list[str]:
        return [v.name for v in self._views]

    def __repr__(self) -> str:
        return "\n\n".join(f"== {v.name} ==\n{v.text}" for v in self._views)


def compile(source: str, name: str = "<string>") -> Program:   # noqa: A001 - the library's verb
    return Program(source, name)


def _split_params(t: T.Type, count: int, entry: str) -> tuple[list[T.Type], T.Type]:
    params = []
    for _ in range(count):
        if not isinstance(t, T.Func):
            raise AccelTypeError(f"`{entry}` takes {len(params)} argument(s), got {count}")
        params.append(t.param)
        t = t.result
    return params, t


def _match(pattern: T.Type, actual: T.Type, mapping: dict[str, T.Type]) -> bool:
    """One-way matching of a scheme's type against a concrete type, binding its variables."""
    if isinstance(pattern, T.TypeVar):
        if pattern.name in mapping:
            return mapping[pattern.name] == actual
        mapping[pattern.name] = actual
        return True
    if type(pattern) is not type(actual):
        return False
    if isinstance(pattern, T.Scalar):
        return pattern == actual
    if isinstance(pattern, (T.Array, T.Seq)):
        return _match(pattern.elem, actual.elem, mapping)
    if isinstance(pattern, T.Tuple):
        return (len(pattern.elems) == len(actual.elems)
                and all(_match(p, a, mapping) for p, a in zip(pattern.elems, actual.elems)))
    return False


def _streamed(obj: Any) -> Any:
    """A Python iterator (a generator) as a stream pulled chunk by chunk, its element type
    read from its first row; anything else as it is."""
    if not isinstance(obj, Iterator):
        return obj
    from .kernel.loading import host_stream
    return host_stream(obj).flat


def python_type(obj: Any) -> T.Type:
    """The accel type of a Python value: numpy arrays and scalars, ak.Array, tuples, lists."""
    from .runtime.sequences import HostStream
    if isinstance(obj, HostStream):
        return T.Seq(obj.elem_type)
    if isinstance(obj, (bool, np.bool_)):
        return T.BOOL
    if isinstance(obj, int):
        return T.I64
    if isinstance(obj, float):
        return T.F64
    if isinstance(obj, np.generic):
        return _scalar_of(obj.dtype)
    if isinstance(obj, tuple):
        return T.Tuple(tuple(python_type(o) for o in obj))
    if isinstance(obj, np.ndarray):
        t = _scalar_of(obj.dtype)
        for _ in range(obj.ndim):
            t = T.Array(t)
        return t
    import awkward as ak
    if isinstance(obj, list):
        obj = ak.Array(obj)
    if isinstance(obj, ak.Array):
        found = _layout_type(obj.layout)      # reading the layout is much cheaper than
        if found is not None:                 # `obj.type` (which builds the whole form)
            return found
        # obj.type is an ArrayType: its length is the outermost dimension.
        return T.Array(_awkward_type(obj.type.content))
    raise AccelTypeError(f"cannot pass a {type(obj).__name__} to accel")


def _scalar_of(dtype: np.dtype) -> T.Type:
    if dtype not in _DTYPES:
        raise AccelTypeError(f"unsupported dtype {dtype}: use bool, int32, int64, float32 or float64")
    return _DTYPES[dtype]


def _layout_type(layout: Any) -> T.Type | None:
    """The accel type of the common Awkward layouts (lists, regular arrays, numpy arrays,
    tuples of them); None for anything else (`_awkward_type` of `.type` says why)."""
    import awkward as ak
    contents = ak.contents
    if isinstance(layout, (contents.ListOffsetArray, contents.ListArray,
                           contents.RegularArray)):
        inner = _layout_type(layout.content)
        return None if inner is None else T.Array(inner)
    if isinstance(layout, contents.NumpyArray) and layout.data.dtype in _DTYPES:
        t = _DTYPES[layout.data.dtype]
        for _ in range(layout.data.ndim):
            t = T.Array(t)
        return t
    if isinstance(layout, contents.RecordArray) and layout.is_tuple and layout.contents:
        parts = [_layout_type(c) for c in layout.contents]
        if any(p is None or not isinstance(p, T.Array) for p in parts):
            return None
        return T.Array(T.Tuple(tuple(p.elem for p in parts)))
    return None


def _awkward_type(t: Any) -> T.Type:
    import awkward as ak
    if isinstance(t, (ak.types.ListType, ak.types.RegularType)):
        return T.Array(_awkward_type(t.content))
    if isinstance(t, ak.types.NumpyType):
        return _scalar_of(np.dtype(t.primitive if t.primitive != "bool" else np.bool_))
    if isinstance(t, ak.types.RecordType) and t.is_tuple:
        return T.Tuple(tuple(_awkward_type(c) for c in t.contents))
    raise AccelTypeError(f"cannot pass awkward type {t} to accel")
