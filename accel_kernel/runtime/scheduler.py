"""The adaptive chunk scheduler of a sequence run (Clifton-Everest, thesis 5.4).

A sequence runs step by step; before each step the executor asks `Scheduler.next_size()` for
the chunk's elements, runs the chunk, and hands what it measured to `Scheduler.record(Sample)`,
which returns the name of the rule that chose the next size (the executor puts it in the
`Step` event, `runtime/events.py`). The policy itself is one pure function, `decide`: the old
state and a sample in, the new state and a rule name out.

Terms:
- utilisation: a step's time in computation (its kernels) over its wall time (computation plus
  the host's work around it: slicing the producer, copying, folding the results). Low
  utilisation means the fixed cost of a step dominates: the chunks are too small.
- time per element: a step's computation time over its elements. On a parallel device it falls
  while bigger chunks fill the device better, and rises when the elements themselves grow.
- bytes per element: the bytes a step held over its elements, for the memory ceiling.

Each measure is smoothed by a weighted moving average, `new = weight * sample + (1 - weight) *
old` (the first sample is taken as is), so one noisy step does not swing the size.

The rules, in the order they are tried (the first chunk has one element):
- `under-utilised`: the smoothed utilisation is below `Policy.threshold` (80%): grow the chunk
  by `Policy.grow`. This holds whenever utilisation is low, also after it was reached once
  (our choice: a step that spends most of its time outside its kernels should grow whatever
  came before); `Smoothed.utilised` only records that the threshold was reached once.
- `first`: utilised at the very first step, so there is no time per element to compare with:
  grow (keeping the size would never learn whether bigger chunks pay off; a one-element chunk
  whose kernels dominate its step would stay at one element for the whole run).
- `faster`: utilised, and the smoothed time per element fell by more than `Policy.tolerance`
  (relative) against the previous smoothed value: bigger chunks pay off, grow.
- `slower`: utilised, and it rose by more than the tolerance (the elements got costlier, or the
  chunk no longer fits a cache): shrink, dividing by `Policy.shrink`.
- `steady`: utilised and within the tolerance: keep the size.
- `ceiling`: whatever the rule above said, when a memory ceiling is given (the bytes one chunk
  may hold under `%budget`) and the chosen size times the bytes per element passes it, the size
  becomes `max(1, floor(ceiling / bytes_per_element))`. The bytes per element used here are the
  larger of the smoothed value and the newest sample's: when elements grow, the average lags
  behind and would let the next chunk pass the ceiling.
- `fixed`: the `fixed N` schedule (for comparison, `%schedule fixed 4096`): always N elements,
  still capped by the ceiling.

Growing multiplies by 2 and shrinking divides by sqrt 2: on a log scale the chunk grows at
twice the rate it shrinks, so it climbs fast from 1 and backs off gently. Sizes are whole
numbers from 1 to `Policy.largest`.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from .memory import format_bytes


@dataclass(frozen=True)
class Sample:
    """What one step measured."""
    elements: int             # the chunk's elements (>= 1)
    seconds: float            # time in the step's computation (kernels)
    wall: float               # the step's wall time: computation + the host's work around it
    nbytes: int               # bytes the step held (its values)

    def __post_init__(self) -> None:
        if self.elements < 1 or self.seconds < 0 or self.wall < 0 or self.nbytes < 0:
            raise ValueError(f"a step's sample needs elements >= 1 and no negative measure: {self}")

    @property
    def utilisation(self) -> float:
        # clocks read apart may put `seconds` a hair above `wall`; a zero wall is all computation
        return min(1.0, self.seconds / self.wall) if self.wall > 0 else 1.0


@dataclass(frozen=True)
class Smoothed:
    """The scheduler's state: pure data."""
    size: int = 1                            # the chunk size for the next step
    steps: int = 0
    time_per_element: float | None = None    # weighted moving averages of the samples
    utilisation: float | None = None
    bytes_per_element: float | None = None
    utilised: bool = False                   # reached the utilisation threshold once


@dataclass(frozen=True)
class Policy:
    """The constants of the adaptive rules, named."""
    threshold: float = 0.8    # utilisation below this: grow
    grow: float = 2.0         # factor when growing
    shrink: float = 2 ** 0.5  # divisor when shrinking: grows twice as fast (log scale)
    weight: float = 0.5       # weight of the newest sample in the moving averages
    tolerance: float = 0.05   # time per element within this relative band: keep
    largest: int = 1 << 26    # never more elements per chunk than this

    def __post_init__(self) -> None:
        if not (self.grow > 1 and self.shrink > 1 and 0 < self.weight <= 1
                and 0 < self.threshold <= 1 and self.tolerance >= 0 and self.largest >= 1):
            raise ValueError(f"not a usable scheduling policy: {self}")


def _average(old: float | None, new: float, weight: float) -> float:
    return new if old is None else weight * new + (1 - weight) * old


def smooth(state: Smoothed, sample: Sample, policy: Policy = Policy()) -> Smoothed:
    """The state with `sample` folded into its moving averages (the size unchanged)."""
    utilisation = _average(state.utilisation, sample.utilisation, policy.weight)
    return replace(
        state,
        steps=state.steps + 1,
        time_per_element=_average(state.time_per_element, sample.seconds / sample.elements,
                                  policy.weight),
        utilisation=utilisation,
        bytes_per_element=_average(state.bytes_per_element, sample.nbytes / sample.elements,
                                   policy.weight),
        utilised=state.utilised or utilisation >= policy.threshold)


def _rule(old: Smoothed, new: Smoothed, policy: Policy) -> str:
    if new.utilisation < policy.threshold:
        return "under-utilised"
    if old.time_per_element is None:
        return "first"
    if new.time_per_element < old.time_per_element * (1 - policy.tolerance):
        return "faster"
    if new.time_per_element > old.time_per_element * (1 + policy.tolerance):
        return "slower"
    return "steady"


def _resize(size: int, rule: str, policy: Policy) -> int:
    if rule in ("under-utilised", "first", "faster"):
        size = max(size + 1, round(size * policy.grow))
    elif rule == "slower":
        size = min(size - 1, round(size / policy.shrink))
    return min(max(size, 1), policy.largest)


def _capped(size: int, bytes_per_element: float, ceiling: int | None) -> int | None:
    """The size the ceiling allows when `size` elements would pass it, else None."""
    if ceiling is None or size * bytes_per_element <= ceiling:
        return None
    return max(1, math.floor(ceiling / bytes_per_element))


def _cap(state: Smoothed, sample: Sample, ceiling: int | None, rule: str) -> tuple[Smoothed, str]:
    per_element = max(state.bytes_per_element, sample.nbytes / sample.elements)
    capped = _capped(state.size, per_element, ceiling)
    return (state, rule) if capped is None else (replace(state, size=capped), "ceiling")


def decide(state: Smoothed, sample: Sample, ceiling: int | None,
           policy: Policy = Policy()) -> tuple[Smoothed, str]:
    """PURE: the next state (with its `size`) and the rule that decided (module docstring)."""
    new = smooth(state, sample, policy)
    rule = _rule(state, new, policy)
    return _cap(replace(new, size=_resize(state.size, rule, policy)), sample, ceiling, rule)


def decide_fixed(state: Smoothed, sample: Sample, size: int,
                 ceiling: int | None, policy: Policy = Policy()) -> tuple[Smoothed, str]:
    """PURE: the `fixed N` schedule's next state: `size` elements (rule `fixed`), capped by
    the ceiling (rule `ceiling`); the samples are still smoothed for the events."""
    return _cap(replace(smooth(state, sample, policy), size=size), sample, ceiling, "fixed")


def fits(bytes_per_element: float, ceiling: int | None) -> bool:
    """Whether one element fits a chunk under the ceiling (None: no budget, always)."""
    return ceiling is None or bytes_per_element <= ceiling


def single_element_too_big(nbytes: int, ceiling: int) -> str:
    """The accel error's text when one element does not fit the ceiling."""
    return (f"one element of the sequence holds {format_bytes(nbytes)}, more than the "
            f"{format_bytes(ceiling)} a chunk may hold under the budget (%budget)")


SCHEDULE_FORMS = "`adaptive` or `fixed N` (N elements per chunk, e.g. `fixed 4096`)"


class Scheduler:
    """The chunk sizes of one sequence run: a stateful shell around `decide` (or, for `fixed
    N`, `decide_fixed`). `state` is readable; `fresh()` gives a new one with the same
    settings for the next run. `ceiling`: the most bytes one chunk may hold (None: no budget)."""

    def __init__(self, policy: str = "adaptive", fixed: int | None = None,
                 ceiling: int | None = None, rules: Policy = Policy()):
        if policy not in ("adaptive", "fixed"):
            raise ValueError(f"unknown schedule `{policy}`: {SCHEDULE_FORMS}")
        if (policy == "fixed") != (fixed is not None):
            raise ValueError(f"a chunk size goes with `fixed` and only with it: {SCHEDULE_FORMS}")
        if fixed is not None and not 1 <= fixed <= rules.largest:
            raise ValueError(f"a fixed chunk size is from 1 to {rules.largest} elements, "
                             f"not {fixed}")
        if ceiling is not None and ceiling < 1:
            raise ValueError(f"a chunk's ceiling is a positive number of bytes, not {ceiling}")
        self.policy, self.fixed, self.ceiling, self.rules = policy, fixed, ceiling, rules
        self.state = Smoothed(size=fixed if fixed is not None else 1)

    @classmethod
    def parse(cls, text: str) -> "Scheduler":
        """`adaptive` or `fixed 4096` (what `%schedule` takes); ValueError otherwise."""
        words = text.lower().split()
        if words == ["adaptive"]:
            return cls()
        if words[:1] == ["fixed"] and len(words) == 2 and re.fullmatch(r"\d+", words[1]):
            return cls("fixed", int(words[1]))
        if words[:1] == ["fixed"]:
            raise ValueError(f"`fixed` takes one chunk size in elements, a whole number "
                             f">= 1 (e.g. `fixed 4096`), not `{text.strip()}`")
        raise ValueError(f"cannot read `{text.strip()}` as a schedule: {SCHEDULE_FORMS}")

    def describe(self) -> str:
        """`adaptive` or `fixed 4096` (`parse` reads it back)."""
        return self.policy if self.fixed is None else f"fixed {self.fixed}"

    def next_size(self) -> int:
        """The elements of the next step's chunk."""
        return self.state.size

    def record(self, sample: Sample) -> str:
        """Take one step's sample; returns the rule that chose the next size."""
        if self.fixed is None:
            self.state, rule = decide(self.state, sample, self.ceiling, self.rules)
        else:
            self.state, rule = decide_fixed(self.state, sample, self.fixed, self.ceiling,
                                            self.rules)
        return rule

    def fresh(self, ceiling: int | None = None) -> "Scheduler":
        """A new scheduler with the same settings (one per sequence run); `ceiling`, when
        given, replaces the prototype's (the run's budget)."""
        return Scheduler(self.policy, self.fixed,
                         self.ceiling if ceiling is None else ceiling, self.rules)

    def __repr__(self) -> str:
        return f"Scheduler({self.describe()!r}, ceiling={self.ceiling}, state={self.state})"
