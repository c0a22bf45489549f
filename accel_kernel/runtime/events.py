"""The runtime's event stream: one per session (`Session.events`), typed frozen records.

Producers (the device memory manager, later the scheduler and the kernel launchers) call
`stream.emit(record)`; subscribers (the dashboard, `%time`, `--trace FILE.jsonl`) receive
every record in order. Nothing here draws anything: a subscriber is any callable taking an
`Event`.

Cheap when nobody listens: a producer that would build a record at some cost tests
`stream.active` first (a boolean read), and `emit` with no subscriber returns at once.

    stream = EventStream()
    with stream.recording() as log:          # a list of the events while the block runs
        ...
    with open("t.jsonl", "w") as f, stream.subscribed(JsonLines(f)):
        ...                                  # one JSON object a line (`Event.json`)

Every record has `time` (seconds, `time.perf_counter`) and a class-level `kind` (`alloc`,
`free`, `transfer`, `evict`, `reupload`, `launch`, and a sequence's `seq_begin`, `step`,
`seq_end`, and a cluster worker's `compile`); `json()` gives `{"kind": ..., fields}`.
Buffers are named by their number (`buffer`), unique within a pool, and carry the `device`
they live on and the bytes in use there after the event (`in_use`).
"""
from __future__ import annotations

import contextlib
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, ClassVar, Iterator, TextIO


def _now() -> float:
    return time.perf_counter()


@dataclass(frozen=True)
class Event:
    kind: ClassVar[str] = "event"
    time: float = field(default_factory=_now, kw_only=True)

    def json(self) -> dict:
        return {"kind": self.kind, **asdict(self)}


@dataclass(frozen=True)
class Alloc(Event):
    """A device buffer was made (`reused`: a dead buffer of the same size was taken again)."""
    kind: ClassVar[str] = "alloc"
    device: str
    buffer: int
    nbytes: int
    in_use: int
    reused: bool = False


@dataclass(frozen=True)
class Free(Event):
    """A device buffer's memory was given back (`reason`: `freed` by its owner, `dead`: its
    handle was dropped and the pool released it, `reset`)."""
    kind: ClassVar[str] = "free"
    device: str
    buffer: int
    nbytes: int
    in_use: int
    reason: str = "freed"


@dataclass(frozen=True)
class Transfer(Event):
    """Bytes copied between host and device (`direction`: `to_device` or `to_host`; `what`:
    `value`, or `err`, the error flag a kernel launch copies to the device and back)."""
    kind: ClassVar[str] = "transfer"
    device: str
    buffer: int
    nbytes: int
    direction: str
    seconds: float = 0.0
    what: str = "value"


@dataclass(frozen=True)
class Evict(Event):
    """A live buffer was copied to host memory and freed on the device to make room."""
    kind: ClassVar[str] = "evict"
    device: str
    buffer: int
    nbytes: int
    in_use: int


@dataclass(frozen=True)
class Reupload(Event):
    """An evicted buffer was brought back to the device on its next use."""
    kind: ClassVar[str] = "reupload"
    device: str
    buffer: int
    nbytes: int
    in_use: int


@dataclass(frozen=True)
class Launch(Event):
    """A kernel launch: its name, grid and block sizes and the buffers it uses."""
    kind: ClassVar[str] = "launch"
    device: str
    name: str
    grid: tuple[int, ...]
    block: tuple[int, ...]
    buffers: tuple[int, ...] = ()
    elements: int = 0                 # the elements (or segments, rows) it runs over
    seconds: float = 0.0              # its time when measured (cpu: always; cuda: when synced)
    nbytes: int = 0                   # the bytes it wrote (cpu: its outputs)
    variant: str = ""                 # cpu: `parallel` or `sequential` (backends/cpu/tiers.py)


@dataclass(frozen=True)
class SeqBegin(Event):
    """A sequence starts running chunk by chunk. `sequence` numbers it in the stream; `length`
    its elements (None: a host iterable of unknown length); `policy` `adaptive` or `fixed N`;
    `ceiling` the most bytes one chunk may hold (None: no budget); `line` its source line."""
    kind: ClassVar[str] = "seq_begin"
    sequence: int
    length: int | None
    policy: str
    ceiling: int | None = None
    target: str = ""
    line: int = 0
    workers: tuple[str, ...] = ()     # a cluster's workers (runtime/cluster.py); () here


@dataclass(frozen=True)
class Step(Event):
    """One step of a sequence: `elements` from `start` ran in `seconds` of computation and
    `wall` seconds in all (computation plus the host's work around it), holding `nbytes`;
    `utilisation` and `time_per_element` are the scheduler's smoothed samples after it, and
    `next_size` the chunk size it chose for the next step by `rule`
    (`runtime/scheduler.py`)."""
    kind: ClassVar[str] = "step"
    sequence: int
    step: int
    start: int
    elements: int
    nbytes: int
    seconds: float
    wall: float
    utilisation: float
    time_per_element: float
    next_size: int
    rule: str
    worker: str = ""                  # the cluster worker that ran it ("": this process)


@dataclass(frozen=True)
class SeqEnd(Event):
    """A sequence stopped: `outcome` is `done`, `cancelled` or `error`."""
    kind: ClassVar[str] = "seq_end"
    sequence: int
    elements: int
    steps: int
    seconds: float
    outcome: str = "done"


@dataclass(frozen=True)
class Compile(Event):
    """A cluster worker's first task of a sequence loaded its kernels: `seconds` in numba's
    compiler there (0.0 when its disk cache or an earlier task had them)."""
    kind: ClassVar[str] = "compile"
    sequence: int
    worker: str
    seconds: float


Subscriber = Callable[[Event], None]


class EventStream:
    """The subscribers of one session's events. `emit` calls each in the order they came."""

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    @property
    def active(self) -> bool:
        """Whether anyone listens (a producer may skip building a record when not)."""
        return bool(self._subscribers)

    def emit(self, event: Event) -> None:
        for subscriber in self._subscribers:
            subscriber(event)

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns the function that removes it."""
        self._subscribers.append(subscriber)
        return lambda: self.unsubscribe(subscriber)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        if subscriber in self._subscribers:
            self._subscribers.remove(subscriber)

    @contextlib.contextmanager
    def subscribed(self, subscriber: Subscriber) -> Iterator[Subscriber]:
        self.subscribe(subscriber)
        try:
            yield subscriber
        finally:
            self.unsubscribe(subscriber)

    @contextlib.contextmanager
    def recording(self) -> Iterator[list[Event]]:
        """The events emitted while the block runs, in a list."""
        log: list[Event] = []
        with self.subscribed(log.append):
            yield log


@dataclass
class JsonLines:
    """A subscriber writing each event as one JSON object on its own line (`--trace`)."""
    out: TextIO

    def __call__(self, event: Event) -> None:
        self.out.write(json.dumps(event.json()) + "\n")


def summary(events: list[Event]) -> str:
    """One line counting the events by kind with their bytes, e.g. `2 alloc (1.0 KiB),
    1 evict (512 B)`, and which variants the `cpu` launches ran (`3 launch (1.2 KiB,
    1 parallel, 2 sequential)`); empty for no events (what `%time` prints)."""
    from .memory import format_bytes
    counts: dict[str, list[int]] = {}
    variants: dict[str, int] = {}             # cpu launches: which variant ran (tiers.py)
    for event in events:
        entry = counts.setdefault(event.kind, [0, 0])
        entry[0] += 1
        entry[1] += getattr(event, "nbytes", 0)
        if isinstance(event, Launch) and event.variant:
            variants[event.variant] = variants.get(event.variant, 0) + 1
    parts = []
    for kind, (count, nbytes) in counts.items():
        notes = [format_bytes(nbytes)] if nbytes else []
        if kind == Launch.kind:
            notes += [f"{n} {variant}" for variant, n in sorted(variants.items())]
        parts.append(f"{count} {kind}" + (f" ({', '.join(notes)})" if notes else ""))
    return ", ".join(parts)
