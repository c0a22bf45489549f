"""Running one program on several targets and judging each target against `interp`.

An `Outcome` is what one target did with a program: a printed value, an accel error (kind and
position), a construct it does not build yet (NotImplementedError), a crash (any other Python
exception, or an `InternalError`: a bug either way), or a timeout (the run was cancelled, or
the worker running it had to be killed). `verdict` compares a target's outcome with
`interp`'s and gives one of the `VERDICTS`, plus, for a failure, its class: a short text that
stays the same while the shrinker cuts the program (`numpy: value vs SizeError`).

`InProcess` runs programs in this process (the test suite); `Worker` runs them in a child
process that is killed and restarted when a program hangs where the cancel token is not
polled (the fuzz command).
"""
from __future__ import annotations

import multiprocessing
import re
import signal
import threading
from dataclasses import dataclass

AGREE_VALUE, AGREE_ERROR = "agree value", "agree error"
DISAGREE, CRASH, UNBUILT, TIMEOUT = "disagree", "crash", "not built yet", "timeout"
VERDICTS = (AGREE_VALUE, AGREE_ERROR, DISAGREE, CRASH, UNBUILT, TIMEOUT)
COMPILE_TIME = ("SyntaxError", "TypeError", "NameError")


@dataclass(frozen=True)
class Outcome:
    kind: str                    # 'value' | 'error' | 'unbuilt' | 'crash' | 'timeout'
    detail: str = ""             # the printed value, the error kind, the exception type
    line: int | None = None      # error position
    col: int | None = None
    message: str = ""            # the error's or exception's message

    def describe(self) -> str:
        if self.kind == "value":
            return f"value {self.detail}"
        if self.kind == "error":
            return f"{self.detail} at {self.line}:{self.col}: {self.message}"
        return f"{self.kind} {self.detail}: {self.message}".rstrip(": ")


def normalise(message: str, width: int = 70) -> str:
    """A message with its numbers and generated names blurred, so that one bug is one class."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    first = re.sub(r"\b(?![iuf](?:8|16|32|64)\b)([A-Za-z_]+?)\d+\b", r"\1#", first)
    first = re.sub(r"(?<![\w#])-?\d+", "N", first)
    return first[:width]


def outcome(session, text: str, timeout: float | None = None) -> Outcome:
    """Run `text` as one cell of a fresh `session`; what happened."""
    from accel_kernel.lang.errors import AccelError, Interrupted, InternalError
    session.reset()
    timer = None
    if timeout is not None:
        timer = threading.Timer(timeout, session.cancel.set)
        timer.daemon = True
        timer.start()
    try:
        result = session.execute(text, "fuzz")
        return Outcome("value", result.text or "")
    except Interrupted as err:
        return Outcome("timeout", "cancelled", message=err.message)
    except InternalError as err:
        return Outcome("crash", f"InternalError({err.stage})", message=err.message)
    except AccelError as err:
        span = err.span
        return Outcome("error", err.kind, span.line if span else None, span.col if span else None,
                       err.message)
    except NotImplementedError as err:
        return Outcome("unbuilt", message=str(err))
    except Exception as err:                   # noqa: BLE001 -- a crash is what we look for
        return Outcome("crash", type(err).__name__, message=str(err))
    finally:
        if timer is not None:
            timer.cancel()


def verdict(reference: Outcome, target: str, got: Outcome) -> tuple[str, str]:
    """(one of VERDICTS, the failure class or the unbuilt construct, '' for agreement)."""
    if got.kind == "crash":
        return CRASH, f"{target}: crash {got.detail}: {normalise(got.message, 50)}"
    if got.kind == "timeout":
        return TIMEOUT, f"{target}: timeout"
    if got.kind == "unbuilt":
        return UNBUILT, normalise(got.message)
    if reference.kind == "value":
        if got.kind == "value":
            return (AGREE_VALUE, "") if got.detail == reference.detail else \
                (DISAGREE, f"{target}: wrong value")
        return DISAGREE, f"{target}: value vs {got.detail}"
    if got.kind == "value":
        return DISAGREE, f"{target}: {reference.detail} vs value"
    if got.detail != reference.detail:
        return DISAGREE, f"{target}: {reference.detail} vs {got.detail}"
    if got.line != reference.line:
        return DISAGREE, f"{target}: {reference.detail} on another line"
    return AGREE_ERROR, ""


# ---------------------------------------------------------------- where programs run

class InProcess:
    """One session per target in this process; a hang is stopped by the cancel token."""

    def __init__(self, timeout: float | None = 60.0, check_facts: bool = False):
        self.timeout = timeout
        self.check_facts = check_facts     # interp verifies every regularity fact on the way
        self.sessions: dict = {}

    def run(self, text: str, targets: list[str]) -> dict[str, Outcome]:
        from accel_kernel.session import Session
        out = {}
        for target in targets:
            session = self.sessions.get(target)
            if session is None:
                session = self.sessions[target] = Session(
                    target=target, check_facts=self.check_facts and target == "interp")
            out[target] = outcome(session, text, self.timeout)
        return out

    def check(self, text: str) -> str | None:
        """None when `text` type checks, else the error."""
        from accel_kernel.lang.errors import AccelError
        from accel_kernel.session import Session
        session = self.sessions.get("interp")
        if session is None:
            session = self.sessions["interp"] = Session(target="interp")
        session.reset()
        try:
            session.check(text, "fuzz")
        except AccelError as err:
            return err.format()
        return None

    def close(self) -> None:
        pass


def _serve(conn, timeout: float | None, check_facts: bool = False) -> None:
    """The child process of `Worker`: answers ('run', text, targets) and ('check', text).
    It ignores ^C, which is meant for the parent (it stops the run, then kills the child)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    runner = InProcess(timeout, check_facts)
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request[0] == "run":
            conn.send(runner.run(request[1], request[2]))
        else:
            conn.send(runner.check(request[1]))


class Worker:
    """`InProcess` in a child process: a program that does not answer within the hard limit
    (its targets' timeouts plus `grace`) is a timeout of every target it was running, and
    the child is replaced. The child is also replaced after `recycle` programs: numba never
    frees compiled code, so a process that compiles every program's kernels grows by some
    20-30 MB a program on `cpu`."""

    def __init__(self, timeout: float = 60.0, grace: float = 30.0, check_facts: bool = False,
                 recycle: int = 100):
        self.timeout, self.grace, self.check_facts = timeout, grace, check_facts
        self.recycle = recycle
        self.context = multiprocessing.get_context("spawn")
        self.process = None
        self.conn = None
        self.restarts = 0
        self.served = 0                 # programs run by the current child

    def _start(self) -> None:
        self.served = 0
        parent, child = self.context.Pipe()
        self.process = self.context.Process(target=_serve,
                                            args=(child, self.timeout, self.check_facts),
                                            daemon=True)
        self.process.start()
        child.close()
        self.conn = parent

    def _ask(self, request: tuple, limit: float):
        """('ok', answer), or ('hung', None) / ('died', None) after replacing the child."""
        if self.process is None or not self.process.is_alive():
            self._start()
        status = "hung"
        try:
            self.conn.send(request)
            if self.conn.poll(limit):
                return "ok", self.conn.recv()
        except (EOFError, OSError):
            status = "died"
        self._kill()
        return status, None

    def reset(self) -> None:
        """Replace the child (after an interrupted request, whose answer may still come)."""
        self._kill()

    def _kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.join()
            self.restarts += 1
        self.process = None

    def run(self, text: str, targets: list[str]) -> dict[str, Outcome]:
        if self.served >= self.recycle:
            self.close()
        self.served += 1
        status, answer = self._ask(("run", text, list(targets)),
                                   self.timeout * len(targets) + self.grace)
        if status == "ok":
            return answer
        # the worker hung or died: ask again target by target, to know which one
        out = {}
        for target in targets:
            status, answer = self._ask(("run", text, [target]), self.timeout + self.grace)
            if status == "ok":
                out[target] = answer[target]
            elif status == "hung":
                out[target] = Outcome("timeout", "killed", message="the worker was killed")
            else:
                out[target] = Outcome("crash", "process died",
                                      message="the worker process died")
        return out

    def check(self, text: str) -> str | None:
        status, answer = self._ask(("check", text), self.timeout + self.grace)
        return answer if status == "ok" else f"the type checker {status}"

    def close(self) -> None:
        if self.process is not None:
            self.conn.close()
            self.process.join(timeout=5)
            if self.process.is_alive():
                self.process.kill()
            self.process = None
