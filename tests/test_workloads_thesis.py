"""The thesis' four workloads (benchmarks/cluster.py, benchmarks/programs/thesis_*.accel) at a
tiny scale: every program agrees with its baselines on `interp`, `numpy` and `cpu`, also with
its sequences on a 2-worker LocalCluster (one, shared by the module), and the baselines agree
with each other."""
from __future__ import annotations

import hashlib

import awkward as ak
import numpy as np
import pytest

from benchmarks import cluster as C

SCALE = 1e-4                # a few hundred rows, samples, links, words
WORKLOADS = {w.name: w for w in C.WORKLOADS}
TARGETS = ["interp", "numpy", "cpu"]


@pytest.fixture(scope="module")
def programs():
    return {name: C.compiled(w) for name, w in WORKLOADS.items()}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_the_program_agrees_with_its_baselines(programs, name: str, target: str):
    ok, got, expected = C.check(WORKLOADS[name], SCALE, target, program=programs[name])
    assert ok, (got, expected)


@pytest.fixture(scope="module")
def cluster():
    from accel_kernel.runtime.cluster import Cluster
    chosen = Cluster.parse("local 2")
    yield chosen
    chosen.close()


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_the_program_agrees_on_a_cluster(cluster, name: str):
    from accel_kernel.runtime import events as E
    workload = WORKLOADS[name]
    program = C.compiled(workload, cluster)
    inputs = workload.make_inputs(SCALE)
    got = program.run(workload.entry, *inputs.args, target="cpu", trace=True)
    assert workload.agrees(got, workload.baselines[0][1](inputs.data))
    assert {e.worker for e in program.events if isinstance(e, E.Step)} <= {"0", "1"}
    assert any(isinstance(e, E.Step) and e.worker for e in program.events)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_the_baselines_agree(name: str):
    workload = WORKLOADS[name]
    data = workload.make_inputs(SCALE).data
    first, *others = [run(data) for _, run in workload.baselines]
    for other in others:
        assert workload.agrees(other, first)


def test_the_inputs_have_the_spread_the_workloads_need():
    smvm = C.smvm_inputs(1e-2).data
    per_row = np.diff(smvm["offsets"])
    assert (per_row == 0).any() and per_row.max() > 20 * np.median(per_row[per_row > 0])
    pages = C.pagerank_inputs(1e-2).data
    indegree = np.bincount(pages["dst"], minlength=pages["n"])
    assert (pages["outdeg"] == 0).any() and indegree.max() > 20 * np.median(indegree)
    words = C.md5_inputs(1e-3).data
    assert max(map(len, words["words"])) <= 55


@pytest.mark.parametrize("target", TARGETS)
def test_md5_digests_are_hashlibs(programs, target: str):
    words = [b"", b"a", b"abc", b"message digest", b"x" * 55,
             b"abcdefghijklmnopqrstuvwxyz"]
    chars = np.frombuffer(b"".join(words), dtype=np.uint8).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum([len(w) for w in words])]).astype(np.int64)
    got = np.asarray(programs["md5"].run("digests", chars, offsets, target=target))
    assert [got[4 * k:4 * k + 4].astype("<u4").tobytes() for k in range(len(words))] == \
        [hashlib.md5(w).digest() for w in words]
    target_words = np.frombuffer(hashlib.md5(b"abc").digest(), dtype="<u4")
    found = programs["md5"].run("search", chars, offsets, *map(int, target_words),
                                target=target)
    assert int(found) == 2
    assert int(programs["md5"].run("search", chars, offsets, 1, 2, 3, 4, target=target)) == -1


@pytest.mark.parametrize("target", TARGETS)
def test_the_streamed_rows_give_the_same_product(programs, target: str):
    data = C.smvm_inputs(SCALE).data
    sizes = np.diff(data["offsets"])
    rows = (ak.unflatten(data["cols"], sizes), ak.unflatten(data["vals"], sizes), data["x"])
    got = programs["smvm"].run("smvm_rows", *rows, target=target)
    assert WORKLOADS["smvm"].agrees(got, C._smvm_scipy(data))


@pytest.mark.parametrize("target", TARGETS)
def test_the_envelope_is_the_windows_rms(programs, target: str):
    signal = C.audio_inputs(SCALE).data["signal"]
    got = programs["audio"].run("envelope", signal, 64, 16, target=target)
    windows = np.lib.stride_tricks.sliding_window_view(signal, 64)[::16]
    np.testing.assert_allclose(got, np.sqrt((windows ** 2).mean(axis=1)), rtol=1e-12)


def test_the_chunk_sizes_are_read_from_the_steps():
    from accel_kernel.runtime import events as E

    def step(k, elements, worker=""):
        return E.Step(time=0.0, sequence=1, step=k, start=0, elements=elements, nbytes=8,
                      seconds=1e-3, wall=1e-3, utilisation=1.0, time_per_element=1e-6,
                      next_size=1, rule="first", worker=worker)
    events = (step(0, 1, "0"), step(1, 2, "1"), step(2, 64, "0"))
    assert C.chunk_sizes(events) == ("3 steps: 1, 2, 64, … largest 64; worker 0: 2 steps, "
                                     "largest 64; worker 1: 1 steps, largest 2")
    assert C.chunk_sizes(()) == ""
