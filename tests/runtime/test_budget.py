"""The device pool's policy (runtime/budget.py) over a fake allocator: bookkeeping, the
budget, LRU eviction, dead buffers freed first, re-upload on use, the OutOfMemory text."""
from __future__ import annotations

import gc

import numpy as np
import pytest

from accel_kernel.lang.errors import OutOfMemory
from accel_kernel.runtime import events as E
from accel_kernel.runtime.budget import DeviceFull, DevicePool, parse_size


class FakeArray:
    """A 'device array': numpy data that may not be touched once released."""

    def __init__(self, data: np.ndarray):
        self.data, self.released = data, False


class FakeDevice:
    """An allocator over host memory; `capacity` bytes at most (DeviceFull past it)."""

    def __init__(self, capacity: int | None = None):
        self.capacity, self.used, self.calls = capacity, 0, []

    def _take(self, nbytes: int) -> None:
        if self.capacity is not None and self.used + nbytes > self.capacity:
            raise DeviceFull("out of memory")
        self.used += nbytes

    def allocate(self, shape, dtype):
        self._take(int(np.prod(shape)) * np.dtype(dtype).itemsize)
        self.calls.append("allocate")
        return FakeArray(np.full(shape, 7, dtype))

    def upload(self, host):
        self._take(host.nbytes)
        self.calls.append("upload")
        return FakeArray(host.copy())

    def download(self, device):
        assert not device.released
        self.calls.append("download")
        return device.data.copy()

    def release(self, device):
        assert not device.released
        device.released = True
        self.used -= device.data.nbytes
        self.calls.append("release")


def pool_of(budget=None, capacity=None):
    stream = E.EventStream()
    log: list[E.Event] = []
    stream.subscribe(log.append)
    return DevicePool(FakeDevice(capacity), stream, "fake:0", budget), log


def kinds(log, *only):
    return [(e.kind, e.buffer) for e in log if not only or e.kind in only]


def test_bytes_in_use_peak_and_events():
    pool, log = pool_of()
    a = pool.to_device(np.arange(4, dtype=np.int64))
    b = pool.alloc((2, 3), np.float32)
    assert (pool.in_use, pool.peak) == (32 + 24, 56)
    assert b.shape == (2, 3) and b.dtype == np.float32 and b.nbytes == 24
    assert pool.to_host(a).tolist() == [0, 1, 2, 3]
    pool.free(a)
    assert (pool.in_use, pool.peak) == (24, 56)
    assert kinds(log) == [("alloc", 1), ("transfer", 1), ("alloc", 2), ("transfer", 1),
                          ("free", 1)]
    assert [e.direction for e in log if e.kind == "transfer"] == ["to_device", "to_host"]
    assert log[-1].reason == "freed" and log[-1].in_use == 24
    with pytest.raises(ValueError, match="not a live buffer"):
        pool.to_host(a)


def test_over_budget_evicts_the_least_recently_used_and_reuploads_on_use():
    pool, log = pool_of(budget=3 * 80)
    xs = [pool.to_device(np.arange(10, dtype=np.int64) + 10 * i) for i in range(3)]
    pool.touch(xs[0])                        # now xs[1] is the least recently used
    extra = pool.alloc(10, np.int64)
    assert not xs[1].resident and xs[0].resident and xs[2].resident
    assert kinds(log, "evict") == [("evict", 2)] and pool.in_use == 240
    # an evicted buffer is read from its host copy, and uploaded again when used
    assert pool.to_host(xs[1]).tolist() == list(range(10, 20))
    device = pool.touch(xs[1])
    assert xs[1].resident and device.data.tolist() == list(range(10, 20))
    assert kinds(log, "evict", "reupload")[-2:] == [("evict", 3), ("reupload", 2)]
    assert all(pool.to_host(x).tolist() == list(range(10 * i, 10 * i + 10))
               for i, x in enumerate(xs))
    assert pool.peak <= 240 and extra.resident


def test_dead_buffers_are_reused_then_freed_before_any_live_one_is_evicted():
    pool, log = pool_of(budget=3 * 80)
    keep = pool.to_device(np.zeros(10, np.int64))
    dropped = pool.alloc(10, np.int64)
    number = dropped.number
    del dropped
    gc.collect()
    again = pool.alloc(10, np.int64)         # same size: the dead buffer is taken again
    assert again.number == number and log[-1].reused and pool.in_use == 160
    del again
    gc.collect()
    big = pool.alloc(20, np.int64)           # 160 more bytes: the dead one goes, not `keep`
    assert keep.resident and big.resident
    assert [(e.kind, e.buffer, getattr(e, "reason", None)) for e in log if e.kind == "free"] \
        == [("free", number, "dead")]
    assert not [e for e in log if e.kind == "evict"]


def test_a_working_set_is_never_evicted():
    pool, log = pool_of(budget=240)
    a, b = pool.alloc(10, np.int64), pool.alloc(10, np.int64)
    with pool.working_set(a, b) as (da, db):
        c = pool.alloc(10, np.int64)
        with pytest.raises(OutOfMemory) as info:
            pool.alloc(20, np.int64)         # evicting c cannot help: 80 + 80 + 160 > 240
        assert c.resident and a.resident and b.resident     # nothing evicted in vain
        d = pool.alloc(10, np.int64)         # c goes (a and b are older but in use)
        assert not c.resident and a.resident and b.resident and d.resident
        assert not da.released and not db.released
    err = info.value
    assert err.kind == "OutOfMemory" and err.requested == 160 and err.available == 240
    assert err.message.startswith("a device buffer of 160 B does not fit in the memory budget "
                                  "of 240 B (even after evicting every buffer not in use; "
                                  "160 B in use by the running operation")
    pool.launched("k", (1,), (32,), a, c)
    assert log[-1] == E.Launch("fake:0", "k", (1,), (32,), (a.number, c.number),
                               time=log[-1].time)


def test_release_dead_gives_back_every_dead_buffer():
    pool, log = pool_of()
    pool.alloc(10, np.int64)
    pool.alloc(4, np.int64)                  # both dropped at once: dead
    gc.collect()
    assert pool.in_use == 112 and pool.release_dead() == 112 and pool.in_use == 0
    assert [e.reason for e in log if e.kind == "free"] == ["dead", "dead"]
    assert "0 live buffers" in pool.describe()


def test_the_device_refusing_an_allocation_evicts_too():
    pool, log = pool_of(capacity=160)        # no budget: the device itself is full
    a, b = pool.alloc(10, np.int64), pool.alloc(10, np.int64)
    c = pool.alloc(10, np.int64)
    assert not a.resident and b.resident and c.resident
    with pool.working_set(b, c), pytest.raises(OutOfMemory, match="the memory of fake:0"):
        pool.alloc(10, np.int64)


def test_a_smaller_budget_evicts_at_once_and_none_removes_it():
    pool, log = pool_of()
    xs = [pool.alloc(100, np.uint8) for _ in range(4)]
    pool.set_budget(250)
    assert pool.in_use == 200 and [x.resident for x in xs] == [False, False, True, True]
    pool.set_budget(None)
    pool.touch(xs[0])
    pool.touch(xs[1])
    assert pool.in_use == 400 and "no budget" in pool.describe()


def test_dropping_an_evicted_buffer_forgets_its_host_copy():
    pool, _ = pool_of(budget=100)
    a = pool.alloc(100, np.uint8)
    pool.alloc(100, np.uint8)                # evicts a; the new one is dropped at once
    assert not a.resident
    del a
    gc.collect()
    assert pool.live_bytes == 0 and pool.in_use == 100


def test_nothing_is_built_when_nobody_listens():
    pool = DevicePool(FakeDevice(), E.EventStream(), "fake:0", budget=80)
    assert not pool.events.active
    a = pool.alloc(10, np.int64)
    pool.alloc(10, np.int64)
    pool.touch(a)                            # evictions and re-uploads with no subscriber
    assert pool.in_use == 80 and a.resident


@pytest.mark.parametrize("text, size", [("512MB", 512 * 10**6), ("2GB", 2 * 10**9),
                                        ("1.5GiB", 3 * 2**29), ("4096", 4096),
                                        ("64 kib", 65536), ("1m", 2**20), ("10B", 10)])
def test_parse_size(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "x", "-1MB", "1.5.2GB", "2 GB more", "5PB"])
def test_parse_size_refuses_what_is_not_a_size(text):
    with pytest.raises(ValueError, match="as a size: 512MB, 2GB, 1.5GiB"):
        parse_size(text)
