"""The cancel token: a flag, and the running kernels' flags it writes (`watching`)."""
from __future__ import annotations

import threading

import numpy as np

from accel_kernel.runtime.cancel import CancelToken


def test_set_writes_the_slot_of_every_watched_array_and_only_while_watched():
    token = CancelToken()
    a, b, later = np.zeros(4, np.int64), np.zeros(4, np.int64), np.zeros(4, np.int64)
    with token.watching(a, 3), token.watching(b, 1):
        assert token.watchers() == 2 and not a.any() and not b.any()
        token.set()
        assert a.tolist() == [0, 0, 0, 1] and b.tolist() == [0, 1, 0, 0]
    assert token.watchers() == 0
    token.clear()
    assert not token.is_set() and a[3] == 1       # a kernel told to stop stays told
    token.set()
    assert not later.any()                         # not watched: untouched


def test_a_token_set_before_the_kernel_starts_stops_it_at_once():
    token = CancelToken()
    token.set()
    flags = np.zeros(4, np.int64)
    with token.watching(flags, 3):
        assert flags[3] == 1


def test_kernels_running_when_set_is_called_and_those_started_after_all_see_it():
    token = CancelToken()
    entered, go = threading.Semaphore(0), threading.Event()
    seen: list[int] = []

    def kernel() -> None:
        flags = np.zeros(4, np.int64)
        with token.watching(flags, 3):
            entered.release()
            go.wait()
            seen.append(int(flags[3]))

    before = [threading.Thread(target=kernel) for _ in range(3)]
    for worker in before:
        worker.start()
    for _ in before:
        entered.acquire()
    token.set()                                 # from this thread, as a signal handler
    after = [threading.Thread(target=kernel) for _ in range(3)]
    for worker in after:
        worker.start()
    go.set()
    for worker in before + after:
        worker.join()
    assert seen == [1] * 6 and token.watchers() == 0
