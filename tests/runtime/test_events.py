"""The runtime event stream (runtime/events.py): records, subscribers, JSON lines."""
from __future__ import annotations

import io
import json

import pytest

from accel_kernel.runtime import events as E


def test_subscribers_get_every_event_in_order_until_they_leave():
    stream = E.EventStream()
    assert not stream.active
    first, second = [], []
    leave = stream.subscribe(first.append)
    with stream.subscribed(second.append):
        assert stream.active
        stream.emit(E.Alloc("cuda:0", 1, 80, 80))
    stream.emit(E.Free("cuda:0", 1, 80, 0))
    leave()
    stream.emit(E.Evict("cuda:0", 2, 8, 0))
    assert [e.kind for e in first] == ["alloc", "free"] and [e.kind for e in second] == ["alloc"]
    assert not stream.active


def test_records_are_frozen_and_time_stamped():
    event = E.Transfer("cuda:0", 3, 800, "to_host", 0.5)
    with pytest.raises(AttributeError):
        event.nbytes = 1                                     # type: ignore[misc]
    later = E.Transfer("cuda:0", 3, 800, "to_host", 0.5)
    assert later.time >= event.time > 0


def test_json_lines_write_one_object_a_line():
    out = io.StringIO()
    stream = E.EventStream()
    with stream.subscribed(E.JsonLines(out)):
        stream.emit(E.Reupload("cuda:0", 4, 16, 32))
        stream.emit(E.Launch("cuda:0", "map_1", (4,), (128,), (4, 5)))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["kind"] for line in lines] == ["reupload", "launch"]
    assert lines[1]["grid"] == [4] and lines[1]["buffers"] == [4, 5]
    assert {"device", "buffer", "nbytes", "in_use", "time"} <= set(lines[0])


def test_recording_and_summary():
    stream = E.EventStream()
    with stream.recording() as log:
        stream.emit(E.Alloc("cuda:0", 1, 1024, 1024))
        stream.emit(E.Alloc("cuda:0", 2, 1024, 2048))
        stream.emit(E.Evict("cuda:0", 1, 1024, 1024))
        stream.emit(E.Launch("cuda:0", "k", (1,), (32,)))
    assert E.summary(log) == "2 alloc (2.0 KiB), 1 evict (1.0 KiB), 1 launch"
    assert E.summary([]) == "" and not stream.active
