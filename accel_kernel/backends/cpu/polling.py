"""Stage `codegen` for the `cpu` target: compiled loops that stop when asked.

A kernel cannot ask Python whether the user pressed Interrupt, so it reads memory: the
cancel slot of its error array, `err[CANCEL_SLOT]`, which the session's `CancelToken` sets
while the kernel runs (`runtime/cancel.py`, `CancelToken.watching`). A loop reads it once
every `POLL_EVERY` iterations, not at each one, so the polling costs nothing measurable:

- `for x in range(n)` is *strip-mined*: an outer `while` loop over blocks of `POLL_EVERY`
  iterations reads the flag before each block (so on entering the loop too); the inner
  loop is the original one over its block, unchanged (LLVM optimises it as before). A
  `while` with `min` costs less per entry than `range(start, end, POLL_EVERY)`, whose trip
  count numba computes with a division: on 1M segments of 10 values, summed on one thread,
  about 6% over the plain loop against 18%. A *short nest* is not: when the body has
  loops and they are all `for y in range(m)` with `m` the same on every iteration (the
  body assigns none of its names), the nest does at most `n × Π (m + 1)` iterations, known
  on entry; at most `POLL_EVERY` of them, the flag is read once and the loops run as
  written, else the nest is polled as below (its code is written twice: only nests get
  this, as it costs compile time). k-means' `nearest`, 8 centroids of 2 coordinates per
  point, called for 1M points: 16.0 ms, as hand-written numba, against 22.5 ms with the
  strip-mined loop and the nest's counter. One read per call, so a `map` kernel, whose
  `prange` loop does not poll, still reads the flag once per element;
- `while c` (and a `for` whose body has a `break` of its own) counts down from
  `POLL_EVERY` and reads the flag when the count reaches 0, starting with the first
  iteration, so a loop entered after the flag was set stops at once;
- a loop inside another loop's body counts down too, on one counter for the whole nest,
  set by the outermost loop: the nest reads the flag once every `POLL_EVERY` iterations of
  its inner loops together, not on every entry of an inner loop. k-means' `nearest` (8
  centroids of 2 coordinates a point) spent a quarter of its time polling when each inner
  loop, entered 8 times a point for 2 iterations, was strip-mined and read the flag on
  entry. An inner `for x in range(n)` takes its `n` off the counter on entry and runs as
  a plain loop (counting in its body cost `nearest` another 40%: 15.3 against 10.6 ms on
  1M points, two threads); when its `n` would use the counter up, or is over
  `POLL_EVERY`, it runs strip-mined (reading the flag on entry), and the counter starts
  again. An inner `while` (or `for` with a `break` of its own) counts per iteration; once
  the flag is seen its count stays at 0, so every later iteration reads it and stops at
  once until the outer loop's own poll ends the nest.

The read is `stop_asked(err)` (`stop_flag.py`, imported by the generated module): an atomic
load, which LLVM never hoists out of the loop as it would a plain `err[3]`. A loop that sees
the flag `break`s: the function goes on with what it has and returns a
value nobody reads, since the driver sees the flag after the kernel and raises `Interrupted`
instead (it also wins over an error the shortened loop may have caused). Every enclosing
loop stops at its own next poll, which for a loop just entered is its first iteration.

Two writers use this: `FunctionWriter.render` (`python_code.py`) rewrites the loops of a
scalar function (accel's `loop ... for i < n` and `loop ... while c`, in the
`(depth, line)` form it keeps), and the kernel bodies (`codegen_body.py`) write their
sequential loops (a segment's elements, a chunk's elements) with `polled_range`. The
`prange` loops are left alone: numba does not allow a `break` there, and each of their
iterations reaches a polled loop or ends soon. The `cuda` target's device code does not
poll (a launch cannot see host memory change); it stops between kernels.

A kernel's sequential twin (`tiers.py`), which runs small launches, keeps one copy of each
segment loop, the strip-mined one (`sequential_body`): a copy that pays only at scale costs
compile time on every cell's first run.
"""
from __future__ import annotations

import re
from typing import Callable

POLL_EVERY = 4096         # iterations between two reads of the flag

_RANGE_FOR = re.compile(r"for (\w+) in range\((.+)\):$")
_WHILE = re.compile(r"while .+:$")
_OWN_EXITS = {"break", "continue"}

Line = tuple[int, object]     # (depth, text), as `FunctionWriter` keeps them


def polled_range(indent: str, var: str, start: str, end: str
                 ) -> tuple[list[str], str, list[str]]:
    """`for var in range(start, end):` strip-mined: its lines at `indent` before the body,
    the indentation of the body, and the lines after it. Uses the kernel names `block`,
    `block_stop` and `block_end`."""
    inner = indent + "    "
    return ([f"{indent}block = {start}",
             f"{indent}block_stop = {end}",
             f"{indent}while not stop_asked(err):",
             f"{inner}block_end = min(block + {POLL_EVERY}, block_stop)",
             f"{inner}for {var} in range(block, block_end):"],
            inner + "    ",
            [f"{inner}if block_end >= block_stop:",
             f"{inner}    break",
             f"{inner}block = block_end"])


def poll_loops(lines: list[Line], fresh: Callable[[str], str],
               nest: str | None = None) -> list[Line]:
    """The lines of a function body with every `for ... in range(...)` and `while` loop
    polling the flag; `fresh` names the counters and bounds (names unused so far, an outer
    loop's first); `nest`: the counter of the loop nest these lines are inside."""
    out: list[Line] = []
    k = 0
    while k < len(lines):
        depth, text = lines[k]
        end = k + 1
        while end < len(lines) and lines[end][0] > depth:
            end += 1
        body = lines[k + 1:end]
        header = text if isinstance(text, str) else ""
        loop = _RANGE_FOR.match(header)
        if loop and nest is not None and "," not in loop.group(2) \
                and not _exits_itself(body):
            out += _ranged_in_nest(depth, loop.group(1), loop.group(2), body, fresh, nest)
        elif (loop or _WHILE.match(header)) and nest is not None:
            out += _counted_in_nest(depth, header, body, fresh, nest)
        elif loop and "," not in loop.group(2) and not _exits_itself(body):
            out += _strip_mined(depth, loop.group(1), loop.group(2), body, fresh)
        elif loop or _WHILE.match(header):
            out += _counted(depth, header, body, fresh)
        else:
            out += [(depth, text), *poll_loops(body, fresh, nest)]
        k = end
    return out


def _has_loop(body: list[Line]) -> bool:
    return any(isinstance(t, str) and (_RANGE_FOR.match(t) or _WHILE.match(t))
               for _, t in body)


def _nested(depth: int, body: list[Line], fresh: Callable[[str], str]
            ) -> tuple[list[Line], list[Line]]:
    """The body of an outermost loop with its inner loops counting on one counter, and
    the line setting that counter (before the loop; none without inner loops)."""
    if not _has_loop(body):
        return poll_loops(body, fresh), []
    count = fresh("poll_nest")
    return poll_loops(body, fresh, count), [(depth, f"{count} = {POLL_EVERY}")]


def _exits_itself(body: list[Line]) -> bool:
    """Whether a loop's body has a `break` or `continue` of the loop's own (not one of an
    inner loop's)."""
    inner: list[int] = []           # the depths of the inner loops around the line
    for depth, text in body:
        while inner and inner[-1] >= depth:
            inner.pop()
        if not isinstance(text, str):
            continue
        if text.startswith(("for ", "while ")):
            inner.append(depth)
        elif text in _OWN_EXITS and not inner:
            return True
    return False


def _strip_mined(depth: int, var: str, bound: str, body: list[Line],
                 fresh: Callable[[str], str]) -> list[Line]:
    block, stop, end = fresh("poll_block"), fresh("poll_stop"), fresh("poll_end")
    bounds = _inner_bounds(var, body)
    polled, start = _nested(depth, body, fresh)
    strip_mined = _blocks(depth, var, block, stop, end, polled)
    if not bounds:          # not a nest (the strip-mined loop alone is cheap), or not short
        return [*start, (depth, f"{block} = 0"), (depth, f"{stop} = {bound}"), *strip_mined]
    # a short nest: one read of the flag, then the loops as written
    work = fresh("poll_work")
    cap = (POLL_EVERY + 1) ** 2
    return [(depth, f"{stop} = max({bound}, 0)"),
            (depth, f"{work} = min({stop}, {POLL_EVERY + 1})"),
            *[(depth, f"{work} = min({work} * (min(max({b}, 0), {POLL_EVERY}) + 1), {cap})")
              for b in bounds],
            (depth, f"if {work} <= {POLL_EVERY} and not stop_asked(err):"),
            (depth + 1, f"for {var} in range({stop}):"),
            *[(d + 1, t) for d, t in body],
            (depth, "else:"),
            *[(d + 1, t) for d, t in [*start, (depth, f"{block} = 0"), *strip_mined]]]


def _blocks(depth: int, var: str, block: str, stop: str, end: str,
            body: list[Line]) -> list[Line]:
    """`for var in range(block, stop)` in blocks of `POLL_EVERY`, the flag read before each
    (`body` already one level deeper than `depth`, as a `for` at `depth` would have it)."""
    return [(depth, "while not stop_asked(err):"),
            (depth + 1, f"{end} = min({block} + {POLL_EVERY}, {stop})"),
            (depth + 1, f"for {var} in range({block}, {end}):"),
            *[(d + 1, t) for d, t in body],
            (depth + 1, f"if {end} >= {stop}:"),
            (depth + 2, "break"),
            (depth + 1, f"{block} = {end}")]


_NAME = re.compile(r"(?<![.\w])[A-Za-z_]\w*")       # a name, not an attribute
_ASSIGNED = re.compile(r"^([\w, ]+?)\s*(=|\+=|-=|\*=)(?!=)")


def _inner_bounds(var: str, body: list[Line]) -> list[str] | None:
    """The bounds of the loops inside a loop's body when every one is `for x in range(b)`
    with `b` the same on every iteration (it names nothing the body assigns, nor `var`)
    and no `break` or `continue` of its own; else None. The loop and these loops then do
    at most `n × Π (b + 1)` iterations, known on entry."""
    assigned = {var}
    bounds: list[str] = []
    for k, (_, text) in enumerate(body):
        if not isinstance(text, str):
            continue
        loop = _RANGE_FOR.match(text)
        if loop:
            if "," in loop.group(2) or _exits_itself(_block_of(body, k)):
                return None
            bounds.append(loop.group(2))
            assigned.add(loop.group(1))
        elif _WHILE.match(text):
            return None
        else:
            target = _ASSIGNED.match(text)
            if target:
                assigned |= set(_NAME.findall(target.group(1)))
    names = {n for b in bounds for n in _NAME.findall(b)}
    return None if names & assigned else bounds


def _block_of(lines: list[Line], k: int) -> list[Line]:
    """The lines inside the compound statement at `lines[k]`."""
    depth, end = lines[k][0], k + 1
    while end < len(lines) and lines[end][0] > depth:
        end += 1
    return lines[k + 1:end]


def _counted(depth: int, header: str, body: list[Line],
             fresh: Callable[[str], str]) -> list[Line]:
    count = fresh("poll_count")
    body, start = _nested(depth, body, fresh)
    return [*start,
            (depth, f"{count} = 0"),
            (depth, header),
            (depth + 1, f"if {count} == 0:"),
            (depth + 2, "if stop_asked(err):"),
            (depth + 3, "break"),
            (depth + 2, f"{count} = {POLL_EVERY}"),
            (depth + 1, f"{count} -= 1"),
            *body]


def _ranged_in_nest(depth: int, var: str, bound: str, body: list[Line],
                    fresh: Callable[[str], str], nest: str) -> list[Line]:
    """`for var in range(bound)` inside a loop: its trip count is taken off the nest's
    counter on entry, and it runs as a plain loop; when that would use the counter up (or
    the loop is longer than `POLL_EVERY`), it runs strip-mined instead, reading the flag on
    entry and every `POLL_EVERY` iterations, and the counter starts again. The body is
    written twice."""
    trip, block, stop, end = (fresh("poll_trip"), fresh("poll_block"), fresh("poll_stop"),
                              fresh("poll_end"))
    inner = poll_loops(body, fresh, nest)
    return [(depth, f"{trip} = max({bound}, 0)"),
            (depth, f"if {trip} > {POLL_EVERY} or {nest} - {trip} <= 0:"),
            (depth + 1, f"{block} = 0"),
            (depth + 1, f"{stop} = {trip}"),
            *_blocks(depth + 1, var, block, stop, end, [(d + 1, t) for d, t in inner]),
            (depth + 1, f"{nest} = {POLL_EVERY}"),
            (depth, "else:"),
            (depth + 1, f"{nest} -= {trip}"),
            (depth + 1, f"for {var} in range({trip}):"),
            *[(d + 1, t) for d, t in poll_loops(body, fresh, nest)]]


def _counted_in_nest(depth: int, header: str, body: list[Line],
                     fresh: Callable[[str], str], nest: str) -> list[Line]:
    """A loop inside a loop: it counts on the nest's counter (the flag stays unread until
    the nest's inner loops together ran `POLL_EVERY` iterations)."""
    return [(depth, header),
            (depth + 1, f"{nest} -= 1"),
            (depth + 1, f"if {nest} <= 0:"),
            (depth + 2, "if stop_asked(err):"),
            (depth + 3, "break"),
            (depth + 2, f"{nest} = {POLL_EVERY}"),
            *poll_loops(body, fresh, nest)]


_SHORT_SEGMENT = re.compile(rf"( *)if seg_end - .+ <= {POLL_EVERY} and not stop_asked\(err\):$")
_SPARSE = re.compile(r"( *)(sparse = .+|if sparse:)$")


def sequential_body(lines: list[str]) -> list[str]:
    """A kernel's lines for its sequential twin (`tiers.py`): the copies that only pay at
    scale left out. A segment's loop (`codegen_body.polled_segment`) is the strip-mined
    loop alone, not also the plain loop for a short segment, and a segmented filter's
    writing pass does not first count the kept elements of each segment of a sparse chunk
    (`codegen_body.KernelBody._skip_empty_segments`). Both copies compute what the loops
    they stand in for compute, so the twins still give the same values; the sequential
    twin runs launches below `tiers.PARALLEL_FROM` elements, where the loops' speed is
    microseconds and their compile (LLVM optimises each copy of a loop body) is most of a
    cell's first run."""
    out: list[str] = []
    k = 0
    while k < len(lines):
        line = lines[k]
        short, sparse = _SHORT_SEGMENT.match(line), _SPARSE.match(line)
        if not (short or sparse):
            out.append(line)
            k += 1
            continue
        indent = (short or sparse).group(1)     # type: ignore[union-attr]
        end = _block_end(lines, k, len(indent))
        if short and end < len(lines) and lines[end] == f"{indent}else:":
            rest = _block_end(lines, end, len(indent))
            out += sequential_body([text[4:] for text in lines[end + 1:rest]])
            end = rest
        k = end
    return out


def _block_end(lines: list[str], k: int, indent: int) -> int:
    """The index after the block of the statement at `lines[k]` (its lines indented deeper
    than `indent`)."""
    end = k + 1
    while end < len(lines) and len(lines[end]) - len(lines[end].lstrip(" ")) > indent:
        end += 1
    return end
