"""The adaptive chunk scheduler (runtime/scheduler.py) over synthetic samples from a cost
model: a step of `n` elements computes for `launch + n * cost` seconds and takes `overhead`
more on the host around it; it holds `n * bytes_per_element` bytes."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest

from accel_kernel.runtime.scheduler import (Policy, Sample, Scheduler, Smoothed, decide,
                                            fits, single_element_too_big)

KiB = 1024


def cost_model(elements: int, cost: float, overhead: float = 1e-3, launch: float = 0.0,
               bytes_per_element: int = 8) -> Sample:
    seconds = launch + elements * cost
    return Sample(elements, seconds, overhead + seconds, elements * bytes_per_element)


def run(scheduler: Scheduler, steps: int, **model) -> list[tuple[int, str]]:
    """(size, rule) per step; a model argument may be a function of the step's index."""
    trace = []
    for step in range(steps):
        size = scheduler.next_size()
        at_step = {k: v(step) if callable(v) else v for k, v in model.items()}
        trace.append((size, scheduler.record(cost_model(size, **at_step))))
    return trace


def jump(before, after, at=40):
    """A measure that changes from `before` to `after` at step `at` (the elements grow)."""
    return lambda step: before if step < at else after


# A state in the middle of a run: utilised, 1 us and 8 bytes per element, 1024 elements next.
UTILISED = Smoothed(size=1024, steps=10, time_per_element=1e-6, utilisation=0.9,
                    bytes_per_element=8.0, utilised=True)


def test_grows_from_one_to_a_plateau_on_a_uniform_sequence():
    trace = run(Scheduler(), 60, cost=1e-6)
    sizes = [size for size, _ in trace]
    assert sizes[0] == 1
    assert sizes == sorted(sizes)                        # never falls on a uniform sequence
    plateau = sizes[-1]
    assert sizes[-40:] == [plateau] * 40                 # and stays put once there
    assert {rule for _, rule in trace[-40:]} == {"steady"}
    # the plateau is where the host's overhead is small: utilisation above the threshold ...
    at_plateau = cost_model(plateau, cost=1e-6)
    assert at_plateau.seconds / at_plateau.wall >= 0.8
    # ... reached a few doublings past the first size that is utilised (the averages lag)
    first_utilised = next(n for n in sizes if cost_model(n, 1e-6).utilisation >= 0.8)
    assert plateau <= 8 * first_utilised


def test_falls_again_when_the_elements_grow_costlier():
    # no ceiling: time per element rises tenfold at step 40, `slower` shrinks the chunk
    trace = run(Scheduler(), 80, cost=jump(1e-6, 1e-5))
    plateau, after = trace[39][0], trace[-1][0]
    assert [rule for _, rule in trace[40:44]] == ["slower"] * 4
    assert after < plateau / 2
    assert [size for size, _ in trace[60:]] == [after] * 20    # settles again
    assert all(rule == "steady" for _, rule in trace[60:])


def test_falls_under_the_ceiling_when_the_elements_grow_bigger():
    ceiling = 512 * KiB                                  # 64 Ki elements of 8 bytes, 4 Ki of 128
    trace = run(Scheduler(ceiling=ceiling), 80, cost=jump(1e-6, 1e-5),
                bytes_per_element=jump(8, 128))
    sizes = [size for size, _ in trace]
    assert trace[40][1] == "ceiling"
    assert sizes[41] == ceiling // 128                   # at once: the newest sample counts
    assert all(size * 128 <= ceiling for size in sizes[41:])
    assert sizes[-1] < sizes[39]


def test_grows_while_bigger_chunks_are_faster():
    # kernels dominate each step (utilised from the first), but a launch costs 100 us: time
    # per element falls with the chunk's size until the launch is paid off
    trace = run(Scheduler(), 40, cost=1e-7, overhead=1e-5, launch=1e-4)
    rules = [rule for _, rule in trace]
    assert rules[0] == "first"
    assert "faster" in rules and "under-utilised" not in rules
    plateau = trace[-1][0]
    assert trace[-10:] == [(plateau, "steady")] * 10
    assert 1e-4 / plateau < 0.1 * 1e-7                   # the launch is a small part per element


def test_grows_at_twice_the_rate_of_shrinking():
    policy = Policy()
    assert math.log(policy.grow) == pytest.approx(2 * math.log(policy.shrink))
    faster = Sample(1024, 0.5e-3, 0.55e-3, 8 * 1024)
    state, rule = decide(UTILISED, faster, None)
    assert (state.size, rule) == (2048, "faster")
    for expected in (1448, 1024):                        # two shrinks undo one grow
        seconds = 4 * state.time_per_element * state.size
        slower = Sample(state.size, seconds, 1.1 * seconds, 8)
        state, rule = decide(state, slower, None)
        assert (state.size, rule) == (expected, "slower")


def test_moving_averages():
    first = Sample(elements=4, seconds=2.0, wall=4.0, nbytes=64)
    state, _ = decide(Smoothed(), first, None)
    assert (state.time_per_element, state.utilisation, state.bytes_per_element) == (0.5, 0.5, 16)
    second = Sample(elements=8, seconds=8.0, wall=8.0, nbytes=0)
    state, _ = decide(state, second, None)
    assert state.steps == 2
    assert state.time_per_element == pytest.approx(0.5 * 1.0 + 0.5 * 0.5)
    assert state.utilisation == pytest.approx(0.5 * 1.0 + 0.5 * 0.5)
    assert state.bytes_per_element == pytest.approx(0.5 * 0 + 0.5 * 16)
    light, _ = decide(replace(state, time_per_element=1.0), second, None, Policy(weight=0.25))
    assert light.time_per_element == pytest.approx(0.25 * 1.0 + 0.75 * 1.0)


@pytest.mark.parametrize("state, sample, ceiling, rule, size", [
    (Smoothed(), Sample(1, 1e-6, 1e-3, 8), None, "under-utilised", 2),
    (Smoothed(), Sample(1, 1e-3, 1.1e-3, 8), None, "first", 2),
    (UTILISED, Sample(1024, 0.5e-3, 0.6e-3, 8 * 1024), None, "faster", 2048),
    (UTILISED, Sample(1024, 2e-3, 2.1e-3, 8 * 1024), None, "slower", 724),
    (UTILISED, Sample(1024, 1.02e-3, 1.1e-3, 8 * 1024), None, "steady", 1024),
    (UTILISED, Sample(1024, 1e-3, 1.1e-3, 8 * 1024), 4 * KiB, "ceiling", 512),
    (UTILISED, Sample(1024, 1e-3, 1.1e-3, 64 * KiB * 1024), 4 * KiB, "ceiling", 1),
])
def test_each_rule(state, sample, ceiling, rule, size):
    new, decided = decide(state, sample, ceiling)
    assert (decided, new.size) == (rule, size)


def test_low_utilisation_grows_again_after_it_was_reached():
    state, rule = decide(UTILISED, Sample(1024, 1e-4, 1e-2, 8), None)
    assert (rule, state.size, state.utilised) == ("under-utilised", 2048, True)


def test_sizes_stay_within_the_largest():
    trace = run(Scheduler(rules=Policy(largest=100)), 20, cost=1e-9)
    assert max(size for size, _ in trace) == 100
    state, rule = decide(replace(UTILISED, size=1), Sample(1, 1.0, 1.0, 8), None)
    assert (rule, state.size) == ("slower", 1)           # never below one element


def test_decide_is_pure():
    sample = Sample(1024, 0.5e-3, 0.6e-3, 8 * 1024)
    before = replace(UTILISED)
    first, second = decide(UTILISED, sample, 4 * KiB), decide(UTILISED, sample, 4 * KiB)
    assert first == second and UTILISED == before
    scheduler = Scheduler(ceiling=KiB)
    scheduler.record(sample)
    fresh = scheduler.fresh()
    assert (fresh.state, fresh.describe(), fresh.ceiling) == (Smoothed(), "adaptive", KiB)
    assert scheduler.state.steps == 1


def test_fixed_keeps_its_size_under_the_ceiling():
    scheduler = Scheduler("fixed", 4096, ceiling=64 * KiB)
    trace = run(scheduler, 30, cost=1e-6, bytes_per_element=jump(8, 64, at=10))
    assert trace[:10] == [(4096, "fixed")] * 10
    assert trace[10] == (4096, "ceiling")                 # chosen before the elements grew
    assert trace[11:] == [(1024, "ceiling")] * 19          # 64 KiB / 64 bytes
    assert scheduler.state.time_per_element == pytest.approx(1e-6)   # still smoothed
    back = run(scheduler, 20, cost=1e-6)                   # small elements again: back to N
    assert back[-1] == (4096, "fixed")


@pytest.mark.parametrize("text, described", [
    ("adaptive", "adaptive"), ("fixed 4096", "fixed 4096"), ("  Fixed   16 ", "fixed 16")])
def test_parse_and_describe(text, described):
    scheduler = Scheduler.parse(text)
    assert scheduler.describe() == described
    assert Scheduler.parse(scheduler.describe()).describe() == described
    assert scheduler.next_size() == (1 if described == "adaptive" else int(described.split()[1]))


@pytest.mark.parametrize("text, message", [
    ("greedy", "cannot read `greedy` as a schedule: `adaptive` or `fixed N`"),
    ("", "cannot read `` as a schedule"),
    ("adaptive 3", "cannot read `adaptive 3`"),
    ("fixed", "`fixed` takes one chunk size in elements"),
    ("fixed 4k", "`fixed` takes one chunk size in elements, a whole number >= 1"),
    ("fixed -3", "not `fixed -3`"),
    ("fixed 0", "a fixed chunk size is from 1 to 67108864 elements, not 0"),
])
def test_parse_errors(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        Scheduler.parse(text)


def test_constructor_errors():
    for args, message in [(("fixed",), "goes with `fixed`"), (("adaptive", 8), "goes with"),
                          (("eager",), "unknown schedule `eager`")]:
        with pytest.raises(ValueError, match=message):
            Scheduler(*args)
    with pytest.raises(ValueError, match="positive number of bytes"):
        Scheduler(ceiling=0)
    with pytest.raises(ValueError, match="not a usable scheduling policy"):
        Policy(shrink=1.0)
    with pytest.raises(ValueError, match="elements >= 1"):
        Sample(0, 1.0, 1.0, 8)


def test_a_single_element_over_the_budget():
    assert fits(512, 512) and fits(10**12, None) and not fits(513, 512)
    assert single_element_too_big(3 * 2**29, 2**29) == (
        "one element of the sequence holds 1.5 GiB, more than the 512.0 MiB a chunk may hold "
        "under the budget (%budget)")
