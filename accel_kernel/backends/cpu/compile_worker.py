"""The compile worker: a second Python process that compiles kernels' parallel variants into
numba's disk cache, so that the process running the cells never runs numba's compiler for
them (tiers.py says why: a compile in a thread of the cells' own process holds its GIL).

    WORKER.compile(dispatcher, signature) -> bool

asks the worker to compile `dispatcher` (a `@njit(..., cache=True)` function of a generated
module: a compile unit under the kernel cache directory, units.py) for `signature` (numba
types) and waits for its answer: True once the worker compiled it (numba's cache beside the
module then has it: `dispatcher.compile(signature)` here loads the machine code, no LLVM
pass runs), False when it could not (no worker, it failed or died: the caller compiles
in-process, as before). One worker per process, started on the first request (0.3 s of
CPU: `import numba`), its requests one at a time; it imports the module from its file
under its own name (numba's cache is keyed by both) and keeps it. The worker ends when this
process ends: its end of the pipe closes, the worker reads the end of its input and exits
(after the compile under way, if any; `close()` at exit waits for that). It stays in
this process's process group (a signal that ends the group ends it too) but ignores
Ctrl-C and Jupyter's interrupt (SIGINT to the group), which are meant for the cells, and
runs `NICE` steps below this process's priority: where the two want one core, the cells
get it (no session of its own either: Linux's autogroups would make it an equal). A child
made by `fork` forgets its parent's worker and starts its own.

A request waits at most `ANSWER_SECONDS` for its answer; past it the worker is killed
(`CompileTimeout`: the background thread, and this process's exit, which waits for it, are
not held by a compile that never ends) and the next request starts another.

The protocol is pickled `(module, path, function, signature)` requests and `(ok, message)`
answers, each a 4-byte length then the pickle, over the worker's stdin and stdout; the worker
writes nothing else there (its own stdout goes to stderr, which goes nowhere: numba's
warnings of a failed compile reappear in the in-process compile that follows).
"""
from __future__ import annotations

import atexit
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
from typing import Any, BinaryIO

_LENGTH = struct.Struct("!I")
STOP_SECONDS = 10.0          # how long a process's exit waits for the compile under way
ANSWER_SECONDS = 300.0       # how long a request waits for its answer (a compile takes 1-5 s)
NICE = 10                    # the worker's priority below the cells' process (os.nice)


class CompileWorker:
    """This process's compile worker (`WORKER`): started on the first request; `failed`
    once it could not start or died, after which every request answers False."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self.failed = False

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def compile(self, dispatcher: Any, signature: tuple) -> bool:
        try:                         # a request it cannot make is no fault of the worker's
            py_func = dispatcher.py_func
            request = pickle.dumps((py_func.__module__, py_func.__code__.co_filename,
                                    py_func.__name__, signature))
        except Exception:            # noqa: BLE001 - the caller compiles
            return False
        with self._lock:
            if self.failed:
                return False
            try:
                process = self._process or self._start()
                _send(process.stdin, request)
                answered = _readable(process.stdout, ANSWER_SECONDS)
                if answered:
                    ok, _message = pickle.loads(_receive(process.stdout))
            except Exception:        # noqa: BLE001 - no worker: the caller compiles
                self._fail()
                return False
            if not answered:         # hung: killed, the next request starts another
                self._end(self._process)
                self._process = None
                raise CompileTimeout(f"the compile worker did not answer in "
                                     f"{ANSWER_SECONDS:g} s")
            return bool(ok)

    def forget(self) -> None:
        """In a child made by `fork`: the parent's worker is the parent's (the child's
        copies of its pipes are closed: the worker must see its input end with the
        parent); this process starts its own when it needs one."""
        process, self._process = self._process, None
        self._lock = threading.Lock()
        self.failed = False
        if process is not None:
            process.returncode = 0               # not this process's child to wait for
            for pipe in (process.stdin, process.stdout):
                try:
                    os.close(pipe.fileno())
                except OSError:
                    pass

    def close(self) -> None:
        """End the worker (at this process's exit): its input closed, the compile under way
        finished, killed after `STOP_SECONDS`."""
        with self._lock:
            process, self._process = self._process, None
        if process is None:
            return
        try:
            process.stdin.close()
            process.wait(STOP_SECONDS)
        except Exception:            # noqa: BLE001 - a hung worker is killed
            process.kill()
            process.wait()
        finally:
            process.stdout.close()

    def _start(self) -> subprocess.Popen:
        if not sys.executable:
            raise RuntimeError("no Python to start the worker with")
        # this process's import path (the generated modules import accel_kernel), and its
        # environment (numba's settings), which a child inherits
        start = (f"import sys; sys.path[:0] = {sys.path!r}; "
                 f"from accel_kernel.backends.cpu.compile_worker import serve; serve({NICE})")
        self._process = subprocess.Popen(
            [sys.executable, "-c", start], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL)
        return self._process

    def _fail(self) -> None:
        self.failed = True
        process, self._process = self._process, None
        self._end(process)

    @staticmethod
    def _end(process: subprocess.Popen | None) -> None:
        if process is not None:
            process.kill()
            process.wait()
            process.stdin.close()
            process.stdout.close()


class CompileTimeout(TimeoutError):
    """The worker did not answer a request in `ANSWER_SECONDS` (a compile that never ends
    would otherwise hold the background thread, and with it this process's exit, forever):
    it was killed, and the kernel keeps its sequential variant (tiers.py: `failed`)."""


def _readable(stream: BinaryIO, seconds: float) -> bool:
    """Whether the worker's answer starts within `seconds` (nothing is left in `stream`'s
    buffer between answers: a request has exactly one)."""
    ready, _, _ = select.select([stream], [], [], seconds)
    return bool(ready)


def _send(stream: BinaryIO, data: bytes) -> None:
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def _receive(stream: BinaryIO) -> bytes:
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError("the compile worker ended")
    (length,) = _LENGTH.unpack(head)
    data = stream.read(length)
    if len(data) < length:
        raise EOFError("the compile worker ended")
    return data


def serve(nice: int = NICE) -> None:
    """The worker's loop: answers requests until its input ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if nice and hasattr(os, "nice"):
        os.nice(nice)
    requests = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)                               # a print in the worker is not an answer
    import warnings
    warnings.simplefilter("ignore")
    modules: dict[str, Any] = {}
    while True:
        try:
            request = _receive(requests)
        except EOFError:
            return
        try:
            module, path, name, signature = pickle.loads(request)
            if module not in modules:
                modules[module] = _import(module, path)
            getattr(modules[module], name).compile(signature)
            answer = (True, "")
        except Exception as error:              # noqa: BLE001 - told, the caller compiles
            answer = (False, f"{type(error).__name__}: {error}")
        _send(answers, pickle.dumps(answer))


def _import(name: str, path: str) -> Any:
    if name in sys.modules:
        return sys.modules[name]
    directory = os.path.dirname(path)
    if directory not in sys.path:               # a main module imports its units by name
        sys.path.append(directory)
    return exec_file(name, path)


def exec_file(name: str, path: Any) -> Any:
    """The module `name` executed from the file `path` (a generated module: the driver's
    and this worker's one way to load one)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


WORKER = CompileWorker()
atexit.register(WORKER.close)
if hasattr(os, "register_at_fork"):            # POSIX
    os.register_at_fork(after_in_child=WORKER.forget)
