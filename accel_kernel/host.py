"""Host values: what a session keeps for each global let and each cell result.

A `HostValue` holds one accel value in the form of the target that made it, and converts it
to another form only when something reads it in that form, once (the conversion is kept):

- `"flat"`: the compiled targets' form (`backends/numpy/values.py`): numpy scalars,
  `np.ndarray` blocks, `Segs` (offsets over values), tuples of arrays for arrays of tuples;
- `"interp"`: the interpreter's form (`backends/interp/model.py`): numpy scalars, lists,
  tuples, `Sequence`, functions;
- `"device"`: a flat value whose arrays are on the device (`backends/cuda/memory.py`'s
  `DeviceValue`: `to_flat()`, `skeleton()`); read as flat, it is copied to the host once.
  A flat value read in this form gets it with its arrays still on the host: the `cuda` run
  that reads it uploads each array once (it needs its session's device pool) and keeps it.

A target says which form its runs read (`targets.Target.value_form`), so a global made by
`cpu` and read by `cpu` or `numpy` is never converted; `interp` converts what it reads (and
reads one element of a flat array, `a[7]`, without converting the array: `Stored`). A new
form is one more entry of `CONVERSIONS` to and from `"flat"`.

The text of a value (`text`, with the display's elision) reads a flat array through a
`FlatView`: only the elements shown are touched. `python` gives numpy and Awkward arrays
straight from the flat buffers (`backends/numpy/boundary.py`).

A host value is never changed once made (its conversions are the same value in another
form), so a session's snapshot shares them without copying any buffer.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .backends.interp.model import Stored
from .lang import types as T

FLAT = "flat"
INTERP = "interp"
DEVICE = "device"


def _flat_to_interp(value: Any, t: T.Type) -> Any:
    from .backends.numpy.values import from_flat
    return from_flat(value, t)


def _interp_to_flat(value: Any, t: T.Type) -> Any:
    from .backends.numpy.values import rep_of_value, to_flat
    return to_flat(value, rep_of_value(value, t))


# (from form, to form) -> conversion(value, accel type); every form converts to and from "flat"
CONVERSIONS: dict[tuple[str, str], Callable[[Any, T.Type], Any]] = {
    (FLAT, INTERP): _flat_to_interp,
    (INTERP, FLAT): _interp_to_flat,
    (DEVICE, FLAT): lambda value, t: value.to_flat(),
    (FLAT, DEVICE): lambda value, t: _flat_to_device(value),
}


def _flat_to_device(value: Any) -> Any:
    """A flat value in the device form, its arrays still on the host: the first `cuda` run
    that reads one uploads it and keeps it there (`backends/cuda/driver.py`)."""
    from .backends.cuda.memory import DeviceValue
    from .runtime.sequences import HostStream
    if isinstance(value, HostStream):         # pulled on the host, step by step
        return value
    return DeviceValue.from_flat(value)


@dataclass(frozen=True, eq=False)
class HostValue(Stored):
    """One accel value of type `type`, in the forms made so far (`forms`: form -> value; the
    first is the form it was made in)."""
    type: T.Type
    forms: dict[str, Any]
    _derived: dict[str, Any] = field(default_factory=dict, repr=False)

    @staticmethod
    def of(form: str, value: Any, t: T.Type) -> "HostValue":
        return HostValue(t, {form: value})

    def __repr__(self) -> str:                 # never the elements: a value may be huge
        return f"HostValue({T.show(self.type)}, forms {', '.join(self.forms)})"

    def has(self, form: str) -> bool:
        return form in self.forms

    def get(self, form: str) -> Any:
        """The value in `form`, converted (through `"flat"` if need be) the first time."""
        if form not in self.forms:
            source = next((f for f in self.forms if (f, form) in CONVERSIONS), None)
            value = (CONVERSIONS[source, form](self.forms[source], self.type)
                     if source is not None
                     else CONVERSIONS[FLAT, form](self.get(FLAT), self.type))
            if self.streamed:                  # read once: every run pulls it afresh
                return value
            self.forms[form] = value
        return self.forms[form]

    @property
    def streamed(self) -> bool:
        """Whether this is a Python iterable pulled row by row (`runtime/sequences.py`): it
        has no other form, and can be run once."""
        from .runtime.sequences import HostStream
        return isinstance(self.forms.get(FLAT), HostStream)

    @property
    def interp(self) -> Any:
        return self.get(INTERP)

    @property
    def flat(self) -> Any:
        return self.get(FLAT)

    @property
    def rep(self) -> Any:
        """Its flat representation (`ir/flat.py`), read off the flat form where there is one
        (no conversion); None for a value without one (a function)."""
        if "rep" not in self._derived:
            from .backends.numpy.boundary import rep_of_flat
            from .backends.numpy.values import rep_of_value
            try:
                self._derived["rep"] = (
                    rep_of_value(self.forms[INTERP], self.type)
                    if INTERP in self.forms and FLAT not in self.forms
                    else rep_of_flat(self.forms[DEVICE].skeleton(), self.type)
                    if DEVICE in self.forms and FLAT not in self.forms    # nothing downloaded
                    else rep_of_flat(self.flat, self.type))
            except ValueError:
                self._derived["rep"] = None
        return self._derived["rep"]

    # ------------------------------------------------------------ reading without converting

    def view(self) -> Any:
        """What the display reads: the flat form seen through `FlatView`s (nothing converted;
        `values.format_value` reads a view as it reads a list), else the interp value."""
        if FLAT in self.forms or DEVICE in self.forms:
            from .backends.numpy.values import flat_view
            return flat_view(self.flat, self.type)
        return self.interp

    def array(self) -> Any:
        """For `interp`'s indexing: this value itself while it is a flat array (`len` and
        `[k]` read it without converting), else its interp value."""
        if INTERP not in self.forms and isinstance(self.type, T.Array):
            return self
        return self.interp

    def __bool__(self) -> bool:
        return True                  # a value, not a container (`__len__` is an array's)

    def __len__(self) -> int:
        from .backends.numpy.values import flat_length
        return flat_length(self.flat)

    def __getitem__(self, k: int | slice) -> Any:
        """Element k (0 <= k < len) or the slice `lo:hi` (0 <= lo <= hi <= len) as interp
        values, converting only what is read."""
        from .backends.numpy.values import flat_rows, from_flat
        assert isinstance(self.type, T.Array)
        if isinstance(k, slice):
            return from_flat(flat_rows(self.flat, k.start or 0, k.stop), self.type)
        return from_flat(flat_rows(self.flat, k, k + 1), self.type)[0]

    # ------------------------------------------------------------ the boundary

    def text(self, max_elems: int | None = None) -> str:
        from .values import format_value
        return format_value(self.view(), self.type, max_elems)

    def json(self) -> Any:
        from .values import to_json
        return to_json(self.interp, self.type)

    def python(self) -> Any:
        """numpy / Awkward / tuples / numpy scalars (LANGUAGE.md §9), from the flat buffers
        without a per-element copy where the value is flat."""
        if (FLAT in self.forms or DEVICE in self.forms) and not isinstance(self.type, T.Seq):
            from .backends.numpy.boundary import python_from_flat
            return _read_only(python_from_flat(self.flat, self.type))
        from .values import to_python
        return to_python(self.interp, self.type)


def _read_only(obj: Any) -> Any:
    """numpy arrays that share the session's buffers, as read-only views: a flat value is
    never changed (snapshots and later cells share it)."""
    import numpy as np
    if isinstance(obj, tuple):
        return tuple(_read_only(x) for x in obj)
    if isinstance(obj, np.ndarray):
        obj = obj.view()
        obj.flags.writeable = False
    return obj


def interp_of(value: Any) -> Any:
    """The interp value of a global's stored value (a `HostValue`, or a def's function)."""
    return value.interp if isinstance(value, HostValue) else value
