"""Where a parallel kernel's threads run (backends/cpu/placement.py): the pool threads of a
launching thread's team are found on its first parallel launch, and before each later one
kept off the core the launching thread is on; the `cpu` target's launches do this on its
worker thread."""
from __future__ import annotations

import os
import threading

import numba
import numpy as np
import pytest
from numba import njit, prange

import accel_kernel as acc
from accel_kernel.backends.cpu import placement, tiers

pytestmark = pytest.mark.skipif(
    not placement.SUPPORTED or len(os.sched_getaffinity(0)) < 2,
    reason="needs sched_setaffinity, sched_getcpu and two cores")


@njit(parallel=True, cache=False)
def _squares(n):
    out = np.empty(n)
    for i in prange(n):
        out[i] = i * i
    return out


def _on_new_thread(fn):
    box = []
    thread = threading.Thread(target=lambda: box.append(fn()))
    thread.start()
    thread.join()
    return box[0]


def test_the_pool_is_kept_off_the_launching_core():
    _squares(10)                         # compiled (a compile may start threads of its own)

    def launches():
        with placement.team():
            _squares(1000)
        if numba.threading_layer() != "omp":
            return None
        with placement.team():
            _squares(1000)
        team = placement._TEAMS[threading.get_native_id()]
        return team, {t: os.sched_getaffinity(t) for t in team.pool}

    found = _on_new_thread(launches)
    if found is None:
        pytest.skip("the threads of numba's omp layer are per launching thread")
    team, masks = found
    assert len(team.pool) == numba.get_num_threads() - 1
    assert team.kept_off in team.cores
    for mask in masks.values():
        assert mask == set(team.cores) - {team.kept_off}


def test_a_launch_that_compiles_finds_no_pool():
    @njit(parallel=True, cache=False)
    def fresh(n):
        out = np.zeros(n)
        for i in prange(n):
            out[i] = 1.0
        return out

    def launch():
        with placement.team(compiled=False):
            fresh(100)
        return threading.get_native_id() in placement._TEAMS
    assert _on_new_thread(launch) is False


def test_without_support_a_launch_runs_as_it_is(monkeypatch):
    monkeypatch.setattr(placement, "SUPPORTED", False)
    before = dict(placement._TEAMS)

    def launch():
        with placement.team():
            return _squares(10)
    np.testing.assert_array_equal(_on_new_thread(launch), np.arange(10.0) ** 2)
    assert placement._TEAMS == before


def test_the_cpu_targets_parallel_launches_use_it():
    prog = acc.compile("def f (xs: []f64) : []f64 = map (\\x -> x * 2.0) xs")
    xs = np.arange(float(tiers.PARALLEL_FROM * 2))
    prog.run("f", xs, target="cpu")
    tiers.shared("tiered").wait()              # the parallel variant, compiled
    np.testing.assert_array_equal(prog.run("f", xs, target="cpu"), xs * 2.0)
    from accel_kernel.runtime import deep
    worker = deep._get_worker().thread.native_id
    assert worker in placement._TEAMS
