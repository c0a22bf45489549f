"""The accel Jupyter kernel: translates the Jupyter messaging protocol to a `Session`.

`AccelKernel` (ipykernel's `Kernel` base, so comms and ipywidgets work) owns one
`accel_kernel.session.Session`. `do_execute` splits a cell into meta-command lines and accel
code (`magics.split_cell`), runs them in order, and turns results into messages: the value of
the last code run as `execute_result` (`display.result_bundle`), notes as stdout, errors as an
`error` message whose traceback is the accel headline, source line and caret. A Python
exception from our insides becomes an `InternalError` reply (its traceback goes to the
kernel's log, not to the notebook); the kernel stays alive.

A cell is one transaction, meta-command lines included: every `%` line is checked before
anything runs, and if any line fails the session is put back as it was before the cell
(globals and target), so a failed cell commits nothing.

Interrupts: during a cell a SIGINT handler sets `session.cancel`, so the evaluator stops with
`errors.Interrupted` at its next check (kernelspec `interrupt_mode: signal`).

While a cell runs: its work runs on a cell thread and `do_execute` awaits in short steps, so
ipykernel handles comm messages during the cell (a widget's click); a sequence running for
`dashboard_after` seconds, or a `%dashboard` line, shows the live dashboard
(`viz/dashboard.py`), displayed from here and updated by its own thread; at the end of the cell
its final summary replaces it (`update_display_data`). docs/kernel.md has the details.
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import fnmatch
import gc
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

# Importing ipykernel.ipkernel makes `comm.create_comm` / `comm.get_comm_manager` return
# ipykernel's Comm and its one CommManager (it patches the `comm` package on import), which
# is what ipywidgets use to open comms. We use its wiring, not its IPython shell.
import ipykernel.ipkernel  # noqa: F401
import comm
from ipykernel.kernelbase import Kernel
from traitlets import Float

from ..boundary import internal_error
from ..lang.errors import AccelError, InternalError
from ..runtime.cancel import on_sigint
from ..targets import DEFAULT_TARGET
from . import display, magics

POLL_SECONDS = 0.03       # do_execute's await between looks at the running cell
DASHBOARD_WAIT = 10.0     # the most a `%dashboard` line waits for the dashboard to be shown
SETTLE_AFTER = 0.1        # s: a cell that ran this long (a compile does) settles the heap

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_']*")
_IDENT_CHAR = re.compile(r"[A-Za-z0-9_']")


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("accel_kernel")
    except PackageNotFoundError:
        return "0+unknown"


_accel_version = _package_version()


@dataclass(frozen=True)
class HistoryEntry:
    session: int
    line: int
    input: str
    output: str | None


class History:
    """The cells executed in this kernel, in memory (protocol `history_request`)."""

    SESSION = 1   # one kernel process is one history session

    def __init__(self) -> None:
        self.entries: list[HistoryEntry] = []

    def add(self, line: int, source: str, output: str | None) -> None:
        self.entries.append(HistoryEntry(self.SESSION, line, source, output))

    def query(self, access: str, *, session: int | None = None, start: int | None = None,
              stop: int | None = None, n: int | None = None, pattern: str | None = None,
              unique: bool = False) -> list[HistoryEntry]:
        if access == "tail":
            return self.entries[-n:] if n else list(self.entries)
        if access == "range":
            if session not in (None, 0, self.SESSION):
                return []
            low, high = start or 0, stop
            return [e for e in self.entries if e.line >= low and (high is None or e.line < high)]
        if access == "search":
            found = [e for e in self.entries
                     if fnmatch.fnmatchcase(e.input, pattern or "*")]
            if unique:
                seen: set[str] = set()
                kept = []
                for entry in reversed(found):     # keep the latest of each input
                    if entry.input not in seen:
                        seen.add(entry.input)
                        kept.append(entry)
                found = kept[::-1]
            return found[-n:] if n else found
        return []


@dataclass
class _LiveCell:
    """The running cell's dashboard: `wanted` when the cell thread reached a `%dashboard`
    line, `shown` (and `display_id`) once the main thread displayed it."""
    board: Any
    wanted: threading.Event = field(default_factory=threading.Event)
    shown: threading.Event = field(default_factory=threading.Event)
    display_id: str | None = None


def settle_heap(seconds: float) -> None:
    """After a cell that ran `SETTLE_AFTER` or longer: collect Python's garbage, then freeze
    what is left (`gc.freeze`: the objects alive now are never walked again). numba's
    compiles leave a large heap of long-lived objects; a full collection then walks all of
    it (80 to 90 ms after the tours' first cells), and it fell, at random, into whichever
    cell allocated next: a 2 ms re-run took 88 ms. Collecting at the end of the long cell
    costs that cell the walk once; frozen, a later full collection walks only what came
    after (7 to 8 ms). A short cell (a re-run) never pays."""
    if seconds >= SETTLE_AFTER:
        gc.collect()
        gc.freeze()


class AccelKernel(Kernel):
    implementation = "accel_kernel"
    implementation_version = _accel_version
    language = "accel"
    language_info = {
        "name": "accel",
        "version": _accel_version,
        "mimetype": "text/x-accel",
        "file_extension": ".accel",
        "pygments_lexer": "accel",
        # JupyterLab 4 looks the language up by this name first (the accel language of the
        # accel-kernel-codemirror extension, accel_kernel/labextension/), then by this MIME
        # type: without the extension, Haskell's mode, whose `--` comments, `\x ->` and
        # `let ... in` fit accel well. The classic Notebook takes the name (kernel.js).
        "codemirror_mode": {"name": "accel", "mime": "text/x-haskell"},
    }
    banner = (f"accel {_accel_version}: a nested data-parallel array language.\n"
              f"Cells run on the target {DEFAULT_TARGET} by default; %target lists the others.\n"
              "%help lists the meta-commands; Tab completes; Shift-Tab shows a type.")
    help_links: list[dict[str, str]] = []
    dashboard_after = Float(1.0, help="seconds a sequence runs before the kernel shows its "
                            "dashboard by itself").tag(config=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        from ..session import Session
        self.accel = Session()
        self.python: dict[str, Any] = {}     # what `%%python` cells define besides data
        self.history = History()
        self._live: _LiveCell | None = None        # the running cell's dashboard
        self._setup_comms()

    # ------------------------------------------------------------------ kernel_info

    @property
    def kernel_info(self) -> dict[str, Any]:
        info = super().kernel_info
        info["supported_features"] = [f for f in info.get("supported_features", [])
                                      if f != "debugger"]
        info["debugger"] = False
        return info

    # ------------------------------------------------------------------ comms / widgets

    def _setup_comms(self) -> None:
        """The comm manager ipywidgets use, its shell handlers and the widget targets."""
        self.comm_manager = comm.get_comm_manager()
        for msg_type in ("comm_open", "comm_msg", "comm_close"):
            self.shell_handlers[msg_type] = getattr(self.comm_manager, msg_type)
        self.comm_manager.register_target("jupyter.widget", _open_widget_comm)
        self.comm_manager.register_target("jupyter.widget.control", _open_widget_control_comm)

    def display_data(self, data: dict[str, Any], metadata: dict[str, Any] | None = None,
                     display_id: str | None = None, update: bool = False) -> None:
        """Show a mime bundle (e.g. a widget's `_repr_mimebundle_()`) in the current cell;
        with `update`, replace the one shown earlier with the same `display_id`."""
        transient = {"display_id": display_id} if display_id is not None else {}
        self.send_response(self.iopub_socket,
                           "update_display_data" if update else "display_data",
                           {"data": data, "metadata": metadata or {}, "transient": transient})

    # ------------------------------------------------------------------ execute

    async def do_execute(self, code: str, silent: bool, store_history: bool = True,
                         user_expressions: dict | None = None, allow_stdin: bool = False,
                         **_: Any) -> dict[str, Any]:
        count = self.execution_count
        name = f"cell[{count}]"
        output: str | None = None
        error: dict[str, Any] | None = None
        try:
            with self._cancel_on_sigint():
                if code.startswith("%%"):   # `%%python`: Python code, which only a
                    output = self._run_cell(code, name, silent)   # KeyboardInterrupt here stops
                else:
                    output = await self._run_cell_live(code, name, silent)
        except InternalError as err:           # our bug, caught at the session's boundary
            (self.log or logging.getLogger(__name__)).error(
                "internal error in %s:\n%s", name, err.details)
            error = display.error_content(err)
        except AccelError as err:
            error = display.error_content(err)
        except magics.MagicError as err:
            error = display.plain_error(err.kind, err.message)
        except NotImplementedError as err:
            error = display.plain_error("NotImplementedError", str(err))
        except KeyboardInterrupt:
            error = display.plain_error("Interrupted", "interrupted by the user")
        except Exception as err:   # our bug outside the session: one line, keep running
            (self.log or logging.getLogger(__name__)).exception("internal error in %s", name)
            error = display.error_content(internal_error(err, "kernel", self.accel.target))
        if store_history and not silent:
            self.history.add(count, code, output)
        if error is not None:
            if not silent:
                self.send_response(self.iopub_socket, "error", error)
            return {"status": "error", "execution_count": count, **error}
        return {"status": "ok", "execution_count": count, "payload": [],
                "user_expressions": self._user_expressions(user_expressions or {})}

    async def _run_cell_live(self, code: str, name: str, silent: bool) -> str | None:
        """`_run_cell` on the cell thread while this coroutine awaits in short steps, so that
        ipykernel handles comm messages (a dashboard's Cancel click) during the cell. The
        thread runs in a copy of this context: what it sends has the cell's parent header.
        The dashboard is shown from here (never from a thread): when the cell reaches a
        `%dashboard` line (the cell thread waits until it is shown, so outputs stay in the
        order of the lines), or when a sequence has run for `dashboard_after` seconds."""
        from ..viz.dashboard import Dashboard
        live = None if silent else _LiveCell(Dashboard(cancel=self.accel.cancel.set))
        unsubscribe = self.accel.events.subscribe(live.board.receive) if live else None
        self._live = live
        work = _on_cell_thread(self._run_cell, code, name, silent)
        try:
            while not work.done():
                await asyncio.wait([work], timeout=POLL_SECONDS)
                if live is not None and live.display_id is None and (
                        live.wanted.is_set() or live.board.poll().running_for(
                            time.perf_counter()) >= self.dashboard_after):
                    self._show_dashboard(live)
            return work.result()
        except BaseException:
            if not work.done():           # we were stopped: stop the cell too, then wait
                self.accel.cancel.set()
                await asyncio.wait([work])
            raise
        finally:
            self._live = None
            if unsubscribe is not None:
                unsubscribe()
            if live is not None and live.display_id is not None:
                live.board.stop()         # its last update, then the final static copy
                self.display_data(live.board.bundle(), display_id=live.display_id,
                                  update=True)

    def _show_dashboard(self, live: "_LiveCell") -> None:
        live.board.set_budget(self.accel.budget)
        live.display_id = uuid.uuid4().hex
        self.display_data(live.board.bundle(), display_id=live.display_id)
        live.shown.set()

    def _wait_for_dashboard(self) -> None:
        """On the cell thread, at a `%dashboard` line: ask the awaiting loop to show the
        dashboard, and wait until it has (a bounded wait: never a deadlock)."""
        live = self._live
        if live is None or live.display_id is not None:
            return
        live.wanted.set()
        live.shown.wait(timeout=DASHBOARD_WAIT)

    def _run_cell(self, code: str, name: str, silent: bool) -> str | None:
        """Run the segments of a cell in order; returns the text/plain of its result."""
        segments = magics.split_cell(code)
        for segment in segments:             # a misspelt `%` line fails before anything runs
            if segment.magic is not None:
                magics.check_magic(segment.magic)
        snapshot = self.accel.snapshot()
        started = time.perf_counter()
        try:
            return self._run_segments(segments, name, silent)
        except BaseException:                # interrupts too: the cell commits nothing
            self.accel.restore(snapshot)
            raise
        finally:
            settle_heap(time.perf_counter() - started)

    def _run_segments(self, segments: list, name: str, silent: bool) -> str | None:
        code_segments = [s for s in segments if s.code is not None]
        last_code = code_segments[-1] if code_segments else None
        shown: str | None = None
        for segment in segments:
            if segment.magic is not None:
                context = magics.MagicContext(self.accel, name, segment.line, self.python)
                out = magics.run_magic(segment.magic, context)
                if out.dashboard and not silent:
                    self._wait_for_dashboard()
                if not silent:
                    for text in out.stdout:
                        self._send_stdout(text)
                    for index, bundle in enumerate(out.displays):
                        self.display_data(bundle, out.metadata_of(index))
                continue
            try:
                result = self.accel.execute(segment.padded_code(), name=name)
            except NotImplementedError as err:     # a construct this target does not build
                target = self.accel.target_record
                raise NotImplementedError(str(err) if target.reference else
                                          f"{err} (target {target.name}; `%target interp` "
                                          "runs it)") from None
            if silent:
                continue
            for note in result.notes:
                self._send_stdout(f"note: {note}\n")
            if result.type is None:
                continue
            bundle = display.result_bundle(result.host, result.type)
            if segment is last_code:
                shown = bundle["text/plain"]
                self.send_response(self.iopub_socket, "execute_result",
                                   {"execution_count": self.execution_count, "data": bundle,
                                    "metadata": {}})
            else:
                self.display_data(bundle)
        return shown

    def _user_expressions(self, expressions: dict[str, str]) -> dict[str, Any]:
        replies: dict[str, Any] = {}
        for key, expr in expressions.items():
            try:
                result = self.accel.execute(expr, name=f"user_expressions[{key}]")
                data = ({} if result.type is None
                        else display.result_bundle(result.host, result.type))
                replies[key] = {"status": "ok", "data": data, "metadata": {}}
            except AccelError as err:
                replies[key] = {"status": "error", **display.error_content(err)}
            except Exception as err:
                internal = internal_error(err, "kernel", self.accel.target)
                replies[key] = {"status": "error", **display.error_content(internal)}
        return replies

    def _send_stdout(self, text: str) -> None:
        self.send_response(self.iopub_socket, "stream", {"name": "stdout", "text": text})

    @contextlib.contextmanager
    def _cancel_on_sigint(self) -> Iterator[None]:
        """While a cell runs, SIGINT asks the evaluator to stop instead of raising."""
        with on_sigint(self.accel.cancel):
            yield

    # ------------------------------------------------------------------ complete / inspect

    async def do_shutdown(self, restart: bool) -> dict[str, Any]:
        """Close what the session started (a `%cluster local N`) before the process ends."""
        self.accel.close()
        return {"status": "ok", "restart": restart}

    async def do_complete(self, code: str, cursor_pos: int | None) -> dict[str, Any]:
        cursor = len(code) if cursor_pos is None else cursor_pos
        line_start = code.rfind("\n", 0, cursor) + 1
        before = code[line_start:cursor]
        if before.startswith("%"):
            return self._complete_magic(before, cursor)
        start = _word_start(code, cursor)
        end = _word_end(code, cursor)
        prefix = code[start:cursor]
        if not prefix and cursor > 0 and _IDENT_CHAR.match(code[cursor - 1]):
            matches: list[str] = []     # inside a number such as 3i32
        else:
            matches = self.accel.completions(prefix)
        return {"status": "ok", "matches": matches, "cursor_start": start,
                "cursor_end": end, "metadata": {}}

    def _complete_magic(self, before: str, cursor: int) -> dict[str, Any]:
        target = re.fullmatch(r"%target\s+(\w*)", before)
        if target:
            from ..targets import TARGETS
            word = target.group(1)
            matches = sorted(t for t in TARGETS if t.startswith(word))
            start = cursor - len(word)
        elif re.fullmatch(r"%%?\w*", before):
            matches = [m for m in magics.magic_names() if m.startswith(before)]
            start = cursor - len(before)
        else:
            matches, start = [], cursor
        return {"status": "ok", "matches": matches, "cursor_start": start,
                "cursor_end": cursor, "metadata": {}}

    async def do_inspect(self, code: str, cursor_pos: int | None, detail_level: int = 0,
                         omit_sections: Any = ()) -> dict[str, Any]:
        cursor = len(code) if cursor_pos is None else cursor_pos
        name = code[_word_start(code, cursor):_word_end(code, cursor)]
        if not name and cursor > 0:    # just after a name and a space or `(`
            stripped = code[:cursor].rstrip(" (")
            name = code[_word_start(code, len(stripped)):len(stripped)]
        info = self.accel.lookup(name) if IDENTIFIER.fullmatch(name or "") else None
        if info is None:
            return {"status": "ok", "found": False, "data": {}, "metadata": {}}
        text = f"{info.name} : {info.type}\n\n{info.doc}".rstrip() + f"\n\n({info.kind})"
        markdown = f"**{info.name}** : `{info.type}`\n\n{info.doc}\n\n*{info.kind}*"
        return {"status": "ok", "found": True, "metadata": {},
                "data": {"text/plain": text, "text/markdown": markdown}}

    # ------------------------------------------------------------------ is_complete / history

    async def do_is_complete(self, code: str) -> dict[str, Any]:
        lines = code.split("\n")
        if lines[0].startswith("%%") or all(magics.is_magic_line(line) or not line.strip()
                                            for line in lines):
            return {"status": "complete"}
        from ..lang.completeness import is_complete
        status, indent = is_complete(magics.strip_magics(code))
        reply: dict[str, Any] = {"status": status}
        if status == "incomplete":
            reply["indent"] = " " * indent if isinstance(indent, int) else str(indent or "")
        return reply

    async def do_history(self, hist_access_type: str, output: bool, raw: bool,
                         session: int | None = None, start: int | None = None,
                         stop: int | None = None, n: int | None = None,
                         pattern: str | None = None, unique: bool = False,
                         **_: Any) -> dict[str, Any]:
        entries = self.history.query(hist_access_type, session=session, start=start, stop=stop,
                                     n=n, pattern=pattern, unique=unique)
        if output:
            history = [(e.session, e.line, (e.input, e.output)) for e in entries]
        else:
            history = [(e.session, e.line, e.input) for e in entries]
        return {"status": "ok", "history": history}


def _on_cell_thread(fn: Callable[..., Any], *args: Any) -> asyncio.Future:
    """`fn(*args)` on a new daemon thread (`accel-cell`: a kernel shutting down never waits
    for it) in a copy of the current context (so what it sends has the cell's parent
    header); its result or exception comes in the returned future."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    context = contextvars.copy_context()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.cancelled():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def run() -> None:
        try:
            result, error = context.run(fn, *args), None
        except BaseException as err:       # handed to the awaiting coroutine
            result, error = None, err
        with contextlib.suppress(RuntimeError):     # the loop closed meanwhile
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=run, name="accel-cell", daemon=True).start()
    return future


def _word_start(code: str, cursor: int) -> int:
    start = cursor
    while start > 0 and _IDENT_CHAR.match(code[start - 1]):
        start -= 1
    # a name starts with a letter or `_`: `3i32` is a number, not the name `i32`
    while start < cursor and not re.match(r"[A-Za-z_]", code[start]):
        start += 1
    if start > 0 and code[start - 1].isdigit():
        return cursor
    qualifier = re.search(r"(?<![A-Za-z0-9_'])(?:[iu](?:8|16|32|64)|f32|f64)\.$", code[:start])
    return qualifier.start() if qualifier else start      # `f64.sq`: the whole name


def _word_end(code: str, cursor: int) -> int:
    end = cursor
    while end < len(code) and _IDENT_CHAR.match(code[end]):
        end += 1
    return end


def _open_widget_comm(comm_: Any, msg: dict[str, Any]) -> None:
    """Target `jupyter.widget`: a frontend creates a widget model (ipywidgets imported lazily,
    so that starting the kernel stays fast)."""
    from ipywidgets import Widget
    Widget.handle_comm_opened(comm_, msg)


def _open_widget_control_comm(comm_: Any, msg: dict[str, Any]) -> None:
    """Target `jupyter.widget.control`: the frontend asks for the state of every widget."""
    from ipywidgets import Widget
    Widget.handle_control_comm_opened(comm_, msg)
