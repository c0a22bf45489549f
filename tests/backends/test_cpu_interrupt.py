"""Kernels of the `cpu` target that stop when asked (`backends/cpu/polling.py`): a loop inside
a `map`, a `while` loop, a long fused reduction, each set to run for hours, stopped by the
session's cancel token from another thread; `Interrupted` at the loop's place, the session
as it was, and the same kernel correct on the next run.

No timing is asserted: a loop whose natural end is hours away that ends at all was stopped.
A kernel that ignored the flag would hang the test, so each run waits at most
`GIVE_UP` seconds (a failure, not a hang)."""
from __future__ import annotations

import ast as python_ast
import threading
import time

import pytest

from accel_kernel import Interrupted, Session
from accel_kernel.backends.cpu.polling import poll_loops
from accel_kernel.ir.scalar import fresh_name

from .test_cpu import function, module_of

pytest.importorskip("numba")

GIVE_UP = 120.0            # seconds: generous, a kernel stops within milliseconds
HOURS = 10 ** 13           # iterations: hours of work at any speed


def run_interrupted(session: Session, code: str, after: float = 0.3) -> BaseException | None:
    """Run `code`, setting the cancel token `after` seconds after a kernel started (the
    token's watchers: so the kernel, not the executor between statements, is stopped);
    what it raised."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            session.execute(code, "cell[2]")
            outcome.append(None)
        except BaseException as error:          # handed to the test
            outcome.append(error)

    def stop() -> None:
        while worker.is_alive() and not session.cancel.watchers():
            time.sleep(0.01)
        time.sleep(after)
        session.cancel.set()

    worker = threading.Thread(target=run, daemon=True)
    stopper = threading.Thread(target=stop, daemon=True)
    worker.start()
    stopper.start()
    worker.join(GIVE_UP)
    assert not worker.is_alive(), f"not stopped {GIVE_UP} s after the cancel token was set"
    return outcome[0]


LOOP_IN_MAP = "let r = map (\\x -> loop acc = x for i < n do (acc * 7 + i) % 1000003) (iota 4)"
WHILE_IN_MAP = ("let r = map (\\x -> loop (k, acc) = (0, x) while k < n do "
                "(k + 1, (acc * 7 + k) % 1000003)) (iota 4)")
FUSED_SUM = "let r = reduce (+) 0 (map (\\i -> (i * i) % 7) (iota n))"
# loop nests poll on one counter (polling.py): a long inner loop in a short outer one, and
# a long outer loop of short inner ones
LONG_INNER = ("let r = map (\\x -> loop a = x for i < 3 do "
              "loop b = a for j < n do (b * 7 + j) % 1000003) (iota 4)")
LONG_OUTER = ("let r = map (\\x -> loop a = x for i < n do "
              "loop b = a for j < 2 do (b * 7 + j + i) % 1000003) (iota 4)")
# many short nests (the flag read once per nest, the loops plain)
SHORT_NESTS = ("let r = reduce (+) 0 (map (\\x -> loop a = x for i < 8 do "
               "loop b = a for j < 2 do (b * 7 + j + i) % 1000003) (iota n))")
# FUSE-HIST: a histogram of an iota (none of whose elements is stored)
FUSED_HIST = ("let r = reduce_by_index (replicate 7 0) (+) 0 (map (\\i -> i % 7) (iota n)) "
              "(map (\\i -> i % 3) (iota n))")


@pytest.mark.parametrize("code", [LOOP_IN_MAP, WHILE_IN_MAP, FUSED_SUM, LONG_INNER, LONG_OUTER,
                                  SHORT_NESTS, FUSED_HIST],
                         ids=["for-in-map", "while-in-map", "fused-reduce", "long-inner-loop",
                              "long-outer-loop", "short-nests-in-map", "fused-hist"])
def test_a_long_kernel_stops_and_the_next_run_is_right(code):
    session = Session(target="cpu")
    session.execute(f"let n = {HOURS}\nlet before = 42", "cell[1]")
    error = run_interrupted(session, "let before = 0\n" + code)
    assert isinstance(error, Interrupted), error
    assert error.span is not None and error.span.location().startswith("cell[2]:2:")
    assert session.target == "cpu"
    assert session.execute("before", "cell[3]").text == "42"      # the cell committed nothing
    assert session.lookup("r") is None
    # the same kernel (n is its input) on a short run: the interpreter's value
    session.execute("let n = 1000", "cell[4]")
    reference = Session(target="interp")
    reference.execute("let n = 1000", "cell[4]")
    assert session.execute(code + "\nr", "cell[5]").text == \
        reference.execute(code + "\nr", "cell[5]").text


def test_the_interrupt_names_the_loop():
    session = Session(target="cpu")
    session.execute(f"let n = {HOURS}", "cell[1]")
    error = run_interrupted(session, "1 + 1\n" + LOOP_IN_MAP)
    assert isinstance(error, Interrupted)
    column = LOOP_IN_MAP.index("loop") + 1
    assert error.span.location() == f"cell[2]:2:{column}"


# ---------------------------------------------------------------- the polled loops' text


def render(lines: list[tuple[int, str]]) -> str:
    used: set[str] = set()
    polled = poll_loops(lines, lambda base: fresh_name(base, used))
    return "\n".join("    " * depth + text for depth, text in polled)


def test_a_range_loop_is_strip_mined_and_its_body_unchanged():
    assert render([(1, "for i in range(n - 1):"), (2, "acc = acc + i"), (1, "return acc")]) \
        == """\
    poll_block = 0
    poll_stop = n - 1
    while not stop_asked(err):
        poll_end = min(poll_block + 4096, poll_stop)
        for i in range(poll_block, poll_end):
            acc = acc + i
        if poll_end >= poll_stop:
            break
        poll_block = poll_end
    return acc"""


def test_a_short_nest_of_range_loops_reads_the_flag_once():
    """The work of a nest whose inner loops' bounds are the same on every iteration is
    known on entry (at most n × (m + 1)): at most 4096, one read and the loops as written."""
    text = render([(1, "for i in range(n):"), (2, "t = 0"), (2, "for j in range(m):"),
                   (3, "t += j"), (2, "acc += t")])
    assert text.startswith("""\
    poll_stop = max(n, 0)
    poll_work = min(poll_stop, 4097)
    poll_work = min(poll_work * (min(max(m, 0), 4096) + 1), 16785409)
    if poll_work <= 4096 and not stop_asked(err):
        for i in range(poll_stop):
            t = 0
            for j in range(m):
                t += j
            acc += t
    else:
""")
    # an inner bound the body changes, or a while loop inside: no short path
    for inner in ([(2, "m = m + 1"), (2, "for j in range(m):"), (3, "t += j")],
                  [(2, "while t < m:"), (3, "t += 1")]):
        assert "poll_work" not in render([(1, "for i in range(n):"), *inner])


def test_a_while_loop_counts_down_and_polls_on_its_first_iteration():
    assert render([(1, "while True:"), (2, "going = k < n"), (2, "if not going:"),
                   (3, "break"), (2, "k = k + 1")]) == """\
    poll_count = 0
    while True:
        if poll_count == 0:
            if stop_asked(err):
                break
            poll_count = 4096
        poll_count -= 1
        going = k < n
        if not going:
            break
        k = k + 1"""


def test_the_loops_of_a_nest_count_on_one_counter():
    text = render([(1, "for i in range(n):"), (2, "for j in range(m):"), (3, "acc += j"),
                   (2, "for q in range(2, 5):"), (3, "break")])
    # the outer loop's poll, the strip-mined twin of `for j`, the count of `for q`
    assert text.count("stop_asked(err)") == 3
    assert text.startswith("    poll_nest = 4096\n    poll_block = 0\n    poll_stop = n\n")
    # `for j in range(m)` takes its trip off the nest's counter and runs plainly, or
    # strip-mined when that uses the counter up
    assert """\
            poll_trip = max(m, 0)
            if poll_trip > 4096 or poll_nest - poll_trip <= 0:
                poll_block_1 = 0
                poll_stop_1 = poll_trip
                while not stop_asked(err):
                    poll_end_1 = min(poll_block_1 + 4096, poll_stop_1)
                    for j in range(poll_block_1, poll_end_1):
                        acc += j
                    if poll_end_1 >= poll_stop_1:
                        break
                    poll_block_1 = poll_end_1
                poll_nest = 4096
            else:
                poll_nest -= poll_trip
                for j in range(poll_trip):
                    acc += j
""" in text
    # `for q in range(2, 5)` (two bounds, a break of its own) counts per iteration
    assert ("            for q in range(2, 5):\n                poll_nest -= 1\n"
            "                if poll_nest <= 0:\n") in text


def test_segments_and_chunks_poll_but_a_parallel_loop_does_not():
    module = module_of("def f (xss: [][]i64) : []i64 = map (\\r -> reduce (+) 0 r) xss\n"
                       "def g (xs: []i64) : i64 = reduce (+) 0 (map (\\x -> x * x) xs)")
    for kernel in module.kernels.values():
        body = python_ast.unparse(function(module.source, kernel.name))
        assert "while not stop_asked(err):" in body, body
        loops = [n for n in python_ast.walk(function(module.source, kernel.name))
                 if isinstance(n, python_ast.For) and "prange" in python_ast.unparse(n.iter)]
        assert loops and not any(isinstance(n, python_ast.Break)
                                 for loop in loops for n in loop.body)   # only nested ones
