"""Meta-commands (`%` lines) of the accel kernel: parsing and behaviour, no Jupyter.

A cell is split by `split_cell` into `Segment`s in order: a meta-command line (`%name args`,
`%` in column 1) or a run of accel code lines. A `%%name` first line makes the whole cell a
cell magic. `run_magic` runs one meta-command against a `Session` and returns a `MagicOutput`
(text for stdout, mime bundles with their metadata to display); the kernel only sends those
as messages.

A cell is one transaction: the kernel checks every `%` line's name (`check_magic`) before
running any line, and when a line fails it restores the session's globals and target as they
were before the cell (`Session.snapshot`/`restore`), so nothing of a failed cell is kept.

`%budget [SIZE|off]` shows or sets the session's memory budget (`512MB`, `2GB`,
`1.5GiB`: `runtime.budget.parse_size`): it bounds the bytes a sequence's chunk may hold on
every target and the device memory of the `cuda` target (`runtime/budget.py` evicts least
recently used buffers to host memory past it); shown with each device pool's use.
`%schedule [adaptive|fixed N]` shows or sets how sequences choose their chunk sizes
(`session.schedule`, `runtime/scheduler.py`). `%cluster [local N|tcp://HOST:PORT|off]` shows
or sets the Dask cluster sequences run on (`Session.set_cluster`). `%dashboard` makes the kernel show the cell's
live dashboard there (`MagicOutput.dashboard`). `%cudasim` runs
the `cuda` target on numba's CUDA simulator where there is no GPU (`kernel/cudasim.py`).
`%time` adds a line counting the runtime's events of its run.

Errors: an unknown or misused meta-command raises `MagicError` (ename `MagicError`); a
meta-command that a later issue brings (`LATER`, empty now) raises `NotImplementedError`
naming the feature, and `%help` does not list it; `%time`, `%stages`, `%show` and `%step` let
the `AccelError` of their expression through.

`%load NAME PATH [KEY]` and `%%python` bind values from Python as global lets
(`loading.py`); `MagicContext.python` keeps the other names of `%%python` cells.

The stage views (`%stages`, `%show STAGE`, `%step STAGE`) take a global's name or an
expression (default: the last def or let of the session) and build their bundles with
`accel_kernel.viz`. `%show` sends the drawing as `image/svg+xml` and `text/html` (which
JupyterLab prefers, and which fits the page's width), with the text view as its `text/plain`
and the DOT in `metadata["image/svg+xml"]["accel/dot"]` (and `"accel/stage"`), then the text
view and source listing; without Graphviz one `text/plain` display (text, listing,
hint) with the DOT in `metadata["text/plain"]["accel/dot"]`. `%stages` and `%step` send an
ipywidgets view plus a static `text/html` copy and `text/plain`, the DOT in
`metadata["accel/dot"][STAGE]`.
"""
from __future__ import annotations

import shlex
import textwrap
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import targets
from ..runtime.budget import SIZE_FORMS
from . import display


class MagicError(Exception):
    """A meta-command that does not exist or was called wrongly."""

    kind = "MagicError"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Segment:
    """One piece of a cell: `magic` is set for a `%` line, `code` for a run of accel lines.

    `line` is the 1-based line of the cell where it starts; code keeps its original line
    numbers when passed through `padded_code`.
    """
    line: int
    magic: "MagicCall | None" = None
    code: str | None = None

    def padded_code(self) -> str:
        """The code preceded by blank lines, so errors point at the line of the cell."""
        assert self.code is not None
        return "\n" * (self.line - 1) + self.code


@dataclass(frozen=True)
class MagicCall:
    name: str        # without the `%` (or `%%`)
    args: str        # the rest of the line, stripped
    cell: bool = False   # a `%%` cell magic
    body: str = ""       # for a cell magic: the rest of the cell


@dataclass
class MagicOutput:
    """What a meta-command shows: stdout text and mime bundles (display_data), in order.
    `metadata[i]`, when present, is the display_data metadata of `displays[i]`."""
    stdout: list[str] = field(default_factory=list)
    displays: list[dict[str, Any]] = field(default_factory=list)
    metadata: list[dict[str, Any]] = field(default_factory=list)
    dashboard: bool = False        # `%dashboard`: the kernel shows the cell's dashboard now

    def show(self, data: dict[str, Any], metadata: dict[str, Any] | None = None) -> None:
        self.metadata.extend({} for _ in range(len(self.displays) - len(self.metadata)))
        self.displays.append(data)
        self.metadata.append(metadata or {})

    def metadata_of(self, index: int) -> dict[str, Any]:
        return self.metadata[index] if index < len(self.metadata) else {}


def is_magic_line(line: str) -> bool:
    return line.startswith("%")


def parse_magic(line: str) -> MagicCall:
    """`%name rest of line` → MagicCall(name, 'rest of line')."""
    cell = line.startswith("%%")
    text = line[2:] if cell else line[1:]
    name, _, args = text.strip().partition(" ")
    return MagicCall(name=name, args=args.strip(), cell=cell)


def split_cell(text: str) -> list[Segment]:
    """Split a cell into meta-command lines and runs of accel code, in order.

    Runs of code that are only blank lines and comments are dropped. A `%%name` first line
    makes the whole cell one cell magic whose body is the remaining lines.
    """
    lines = text.split("\n")
    if lines and lines[0].startswith("%%"):
        call = parse_magic(lines[0])
        return [Segment(1, magic=MagicCall(call.name, call.args, True, "\n".join(lines[1:])))]
    segments: list[Segment] = []
    code_start, code_lines = 0, []

    def flush() -> None:
        if any(_is_code(line) for line in code_lines):
            segments.append(Segment(code_start, code="\n".join(code_lines)))
        code_lines.clear()

    for number, line in enumerate(lines, start=1):
        if is_magic_line(line):
            flush()
            segments.append(Segment(number, magic=parse_magic(line)))
        else:
            if not code_lines:
                code_start = number
            code_lines.append(line)
    flush()
    return segments


def _is_code(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("--")


def strip_magics(text: str) -> str:
    """The cell with its meta-command lines blanked (for is_complete)."""
    return "\n".join("" if is_magic_line(line) else line for line in text.split("\n"))


# ---------------------------------------------------------------- the meta-commands

@dataclass(frozen=True)
class Magic:
    name: str
    usage: str
    summary: str
    run: Callable[["MagicContext", str], MagicOutput]
    details: Callable[[], str] | None = None      # more lines for `-h`


@dataclass
class MagicContext:
    """What a meta-command may use: the session, the name of the cell it runs in and the
    line of that cell it is on (so errors in `%time EXPR` point at the right line)."""
    session: object          # accel_kernel.session.Session (kept loose to stay importable)
    cell_name: str = "cell"
    line: int = 1
    python: dict[str, Any] = field(default_factory=dict)   # the names of `%%python` cells


def _who(ctx: MagicContext, args: str) -> MagicOutput:
    _no_args("who", args)
    infos = ctx.session.names()
    return MagicOutput(displays=[display.who_bundle(infos)])


def _reset(ctx: MagicContext, args: str) -> MagicOutput:
    _no_args("reset", args)
    count = len(ctx.session.names())
    ctx.session.reset()
    return MagicOutput(stdout=[f"forgot {count} user global{'s' if count != 1 else ''}\n"])


def _help(ctx: MagicContext, args: str) -> MagicOutput:
    _no_args("help", args)
    return MagicOutput(stdout=[help_text()])


def _target(ctx: MagicContext, args: str) -> MagicOutput:
    words = args.split()
    if len(words) > 1:
        raise MagicError(f"%target takes at most one name\n{MAGICS['target'].usage}")
    if not words:
        return MagicOutput(stdout=[f"target: {ctx.session.target}\n"
                                   f"{targets.describe(ctx.session.target_record)}\n"])
    try:
        ctx.session.set_target(words[0])
    except ValueError as err:   # an unknown name; NotImplementedError (not built) goes up
        raise MagicError(str(err)) from None
    return MagicOutput(stdout=[f"target: {ctx.session.target}\n"])


def _time(ctx: MagicContext, args: str) -> MagicOutput:
    if not args:
        raise MagicError(f"%time needs an expression\n{MAGICS['time'].usage}")
    from ..runtime.events import summary
    with ctx.session.events.recording() as log:
        result = ctx.session.execute("\n" * (ctx.line - 1) + args, name=ctx.cell_name)
    out: list[str] = []
    if result.has_value:                   # summarized like the cell's own result
        out.append(display.value_text(result.host, result.type) + "\n")
    timings = ", ".join(f"{stage} {_seconds(t)}" for stage, t in result.timings.items())
    total = sum(result.timings.values())
    out.append(f"time: {timings} (total {_seconds(total)})\n")
    if log:                                # what the runtime did (device memory, launches)
        out.append(f"runtime: {summary(log)}\n")
    out.extend(note + "\n" for note in result.notes)
    return MagicOutput(stdout=out)


def _budget(ctx: MagicContext, args: str) -> MagicOutput:
    """`%budget SIZE` sets the device memory budget, `%budget off` removes it, `%budget` alone
    shows it and the device memory in use."""
    from ..runtime.memory import format_bytes
    session = ctx.session
    if args:
        try:
            session.set_budget(None if args.strip().lower() == "off" else args)
        except ValueError as err:
            raise MagicError(f"{err}\n{MAGICS['budget'].usage}") from None
    budget = session.budget
    shown = "off" if budget is None else f"{format_bytes(budget)} ({budget} bytes)"
    lines = [f"budget: {shown}", f"({BUDGET_BOUNDS})"]
    pools = session.memory.devices.values()
    lines.extend(pool.describe() for pool in pools)
    if not pools:
        lines.append("no device memory used yet in this session")
    return MagicOutput(stdout=["\n".join(lines) + "\n"])


def _trace(ctx: MagicContext, args: str) -> MagicOutput:
    """`%trace [FILE.jsonl]`: the scheduler's decisions of the last cell that ran a sequence,
    drawn from its events; with a file name also written there, one JSON object a line."""
    from ..runtime.events import JsonLines
    from ..viz.trace import trace_bundle
    events = ctx.session.last_sequence_events
    if not events:
        return MagicOutput(stdout=["no sequence has run in this session yet\n"])
    out = MagicOutput()
    path = args.strip()
    if path:
        try:
            with open(path, "w", encoding="utf-8") as f:
                write = JsonLines(f)
                for event in events:
                    write(event)
        except OSError as err:
            raise MagicError(f"%trace: cannot write {path}: {err.strerror}") from None
        out.stdout.append(f"{len(events)} events written to {path}\n")
    out.show(trace_bundle(events))
    return out


def _dashboard(ctx: MagicContext, args: str) -> MagicOutput:
    """`%dashboard`: the kernel shows the cell's live dashboard here (`MagicOutput.dashboard`)."""
    _no_args("dashboard", args)
    return MagicOutput(dashboard=True)


def _schedule(ctx: MagicContext, args: str) -> MagicOutput:
    """`%schedule` shows how sequences choose their chunk sizes; `%schedule adaptive` or
    `%schedule fixed N` sets it (`runtime.scheduler.Scheduler.parse`)."""
    _set("schedule", args, ctx.session.set_schedule)
    return MagicOutput(stdout=[f"schedule: {ctx.session.schedule.describe()}\n"])


def _set(magic: str, args: str, setter: Callable[[str], None]) -> None:
    """Set a session's setting from a meta-command's arguments, if any (a value the setter
    refuses is a MagicError with the meta-command's usage)."""
    if args:
        try:
            setter(args)
        except ValueError as err:
            raise MagicError(f"{err}\n{MAGICS[magic].usage}") from None


def _cluster(ctx: MagicContext, args: str) -> MagicOutput:
    """`%cluster` shows where sequences run; `%cluster local N`, `%cluster tcp://HOST:8786`
    or `%cluster off` sets it (`Session.set_cluster`, `runtime/cluster.py`)."""
    session = ctx.session
    _set("cluster", args, session.set_cluster)
    where = session.cluster.describe() if session.cluster is not None else \
        "off (sequences run in this process)"
    return MagicOutput(stdout=[f"cluster: {where}\n"])


def _cudasim(ctx: MagicContext, args: str) -> MagicOutput:
    """`%cudasim`: the `cuda` target on numba's CUDA simulator where there is no GPU."""
    _no_args("cudasim", args)
    from .cudasim import simulate_without_gpu
    return MagicOutput(stdout=[simulate_without_gpu() + "\n"])


BUDGET_BOUNDS = ("it bounds the bytes a sequence's chunk may hold on every target (`cpu`, "
                 "`numpy`, `cuda`: the scheduler keeps chunks under it) and the device memory "
                 "of the `cuda` target (past it the least recently used buffers move to host "
                 "memory, and come back when used)")
CLUSTER_FORMS = ("    local N: a Dask LocalCluster of N worker processes, started by the first "
                 "sequence and closed with the kernel\n"
                 "    tcp://HOST:PORT: an existing Dask scheduler (`dask scheduler`, "
                 "`dask worker tcp://HOST:PORT`)\n"
                 "    off: sequences run in the kernel's process\n"
                 "    Each chunk of a top-level sequence becomes a task; each worker has its "
                 "own adaptive scheduler (numpy and cpu targets)\n")
SCHEDULE_RULES = ("    adaptive: the first step runs one element; the chunk grows while "
                  "utilisation is below 80%,\n    then grows while time per element falls and "
                  "shrinks when it rises (thesis 5.4)\n"
                  "    fixed N: every step runs N elements (for comparison)\n")


def _seconds(t: float) -> str:
    if t < 1e-3:
        return f"{t * 1e6:.0f} µs"
    if t < 1:
        return f"{t * 1e3:.1f} ms"
    return f"{t:.2f} s"


def _no_args(name: str, args: str) -> None:
    if args:
        raise MagicError(f"%{name} takes no arguments\n{MAGICS[name].usage}")


# ---------------------------------------------------------------- the stage views

def _stage_target(ctx: MagicContext, target: str, magic: str) -> str:
    """The target text (a global's name or an expression); by default the last user def."""
    if target:
        return target
    for info in reversed(ctx.session.names()):
        if info.kind in ("def", "let"):
            return info.name
    raise MagicError(f"%{magic} needs a def's name or an expression (no def yet)\n"
                     f"{MAGICS[magic].usage}")


def _compile_stages(ctx: MagicContext, target: str, magic: str,
                    stop_after: str | None = None) -> tuple[str, list]:
    target = _stage_target(ctx, target, magic)
    # pad the text so that an error in EXPR points at this line of the cell
    padded = "\n" * (ctx.line - 1) + target
    return target, ctx.session.stages(padded, name=ctx.cell_name, stop_after=stop_after)


def _stage_and_target(args: str, magic: str) -> tuple[str, str]:
    """`STAGE [NAME|EXPR]`; the stage name is checked before anything is compiled."""
    from ..compiler import LATER_STAGES, stage_names
    stage, _, target = args.strip().partition(" ")
    if not stage:
        raise MagicError(f"%{magic} needs a stage name\n{MAGICS[magic].usage}")
    known = ", ".join(stage_names())
    if stage in LATER_STAGES:
        raise NotImplementedError(f"the stage `{stage}` is not available yet: it arrives "
                                  f"with its pass (stages now: {known})")
    if stage not in stage_names():
        raise MagicError(f"unknown stage `{stage}` (stages: {known})\n"
                         f"{MAGICS[magic].usage}")
    return stage, target.strip()


def _title(target: str) -> str:
    text = " ".join(target.split())
    return text if len(text) <= 40 else text[:39] + "…"


def _compact(args: str) -> tuple[bool, str]:
    """`--compact` (drawings without node ids and types, no source listing: for slides),
    anywhere before the name or expression, and the rest of the arguments."""
    words = args.split(" ")
    return "--compact" in words, " ".join(w for w in words if w != "--compact").strip()


def _stages(ctx: MagicContext, args: str) -> MagicOutput:
    from ..viz.widgets import stage_views, stages_bundle
    compact, args = _compact(args)
    target, stages = _compile_stages(ctx, args.strip(), "stages")
    views = stage_views(stages, title=_title(target), compact=compact)
    out = MagicOutput()
    out.show(*stages_bundle(views))
    return out


def _show(ctx: MagicContext, args: str) -> MagicOutput:
    from ..viz.widgets import drawing_html, stage_view
    compact, args = _compact(args)
    if args.strip().split(" ", 1)[0] == "ptx":      # the cuda kernels' PTX, ptxas' report
        target, stages = _compile_stages(ctx, args.strip()[3:].strip(), "show",
                                         stop_after="codegen")
        if not hasattr(stages[-1].program, "params"):    # only cuda's module has them
            raise NotImplementedError("%show ptx shows the kernels of the cuda target: "
                                      "%target cuda first")
        from .cudasim import ptx_listing as listing
        return MagicOutput(displays=[{"text/plain": listing(stages[-1].program)}])
    name, target = _stage_and_target(args, "show")
    target, stages = _compile_stages(ctx, target, "show", stop_after=name)
    index = _stage_index(stages, name)
    view = stage_view(stages, index, _title(target), compact=compact)
    out = MagicOutput()
    if name == "codegen":            # the generated module, as highlighted Python
        out.show(_python_bundle(view.text))
        return out
    if not view.changed:
        out.stdout.append(view.header[3:] + "\n")
    meta = {"accel/dot": view.dot, "accel/stage": view.name}
    if view.svg is None:          # no Graphviz: the text view, the listing and the hint
        text = f"{view.text}\n{view.listing}({view.problem})\n"
        out.show({"text/plain": text}, {"text/plain": meta})
    else:
        # the HTML copy is what JupyterLab shows (it fits the page); the SVG stays for others
        out.show({"image/svg+xml": view.svg, "text/html": drawing_html(view.svg),
                  "text/plain": view.text}, {"image/svg+xml": meta})
        if not compact:
            out.show(_code_bundle(view.text + "\n" + view.listing))
    return out


def _stage_index(stages: list, name: str) -> int:
    names = [s.name for s in stages]
    if name not in names:
        raise NotImplementedError(f"the stage `{name}` is not available yet for this code: "
                                  f"the pipeline ends at `{names[-1]}`")
    return names.index(name)


def _python_bundle(text: str) -> dict[str, str]:
    """Python source for the notebook: plain text, and HTML highlighted by Pygments."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer
    html = highlight(text, PythonLexer(), HtmlFormatter(noclasses=True, nobackground=True))
    return {"text/plain": text, "text/html": html}


def _code_bundle(text: str) -> dict[str, str]:
    import html
    return {"text/plain": text, "text/html": f"<pre>{html.escape(text)}</pre>"}


def _step(ctx: MagicContext, args: str) -> MagicOutput:
    from ..viz.widgets import StepFrames, step_bundle, typed_types
    compact, args = _compact(args)
    name, target = _stage_and_target(args, "step")
    out = MagicOutput()
    run = None
    if name == "flatten":          # flattening on real data: run it on the session's values
        target = _stage_target(ctx, target, "step")
        run = ctx.session.flat_run("\n" * (ctx.line - 1) + target, name=ctx.cell_name)
        stages = run.stages
        if not run.runs:
            run = None
            out.stdout.append(f"{_title(target)} is a def: no values to show (`%step flatten "
                              f"{target.strip()} ARGS...` runs it on data)\n")
    else:
        target, stages = _compile_stages(ctx, target, "step", stop_after=name)
    index = _stage_index(stages, name)
    stage = stages[index]
    if not stage.steps:
        why = "it changed nothing" if not stage.changed else "it records no rewrite steps"
        out.stdout.append(f"stage {stage.name} of {_title(target)} has no steps "
                          f"to show: {why}\n")
        return out
    frames = StepFrames(stage, stages[index - 1] if index else None, typed_types(stages), run,
                        compact)
    out.show(*step_bundle(frames))
    return out


def _stage_details() -> str:
    from ..compiler import stage_names
    return (f"    STAGE: {' '.join(stage_names())}\n"
            "    NAME: a def or let of this session (default: the last one); or any EXPR\n"
            "    nodes are numbered #id, the same in every stage and in the source listing\n"
            "    --compact: drawings without ids and types, no listing (slides)\n")


# ---------------------------------------------------------------- data from Python

def _load(ctx: MagicContext, args: str) -> MagicOutput:
    """`%load NAME PATH [KEY]`: a data file as the global let NAME (`loading.read_data`)."""
    from .loading import bind_python, read_data
    try:
        words = shlex.split(args)
    except ValueError as err:
        raise MagicError(f"%load: {err}\n{MAGICS['load'].usage}") from None
    if len(words) not in (2, 3):
        raise MagicError(f"%load takes a name and a path\n{MAGICS['load'].usage}")
    value, how = read_data(words[1], words[2] if len(words) == 3 else None)
    lines = bind_python(ctx.session, {words[0]: value}, f"loaded {how}")
    return MagicOutput(stdout=[f"{lines[0]}  ({how})\n", *(f"note: {n}\n" for n in lines[1:])])


def _python(ctx: MagicContext, body: str) -> MagicOutput:
    """`%%python`: a Python cell sharing values with accel (`loading.run_python`)."""
    from .loading import run_python
    cell = run_python(ctx.session, ctx.python, "\n" * ctx.line + body, ctx.cell_name)
    out = MagicOutput(stdout=[cell.stdout] if cell.stdout else [])
    if cell.bound:
        out.stdout.append("accel globals: " + ", ".join(cell.bound) + "\n")
    if cell.result is not None:
        out.show({"text/plain": cell.result})
    return out


def _load_details() -> str:
    from .loading import FORMATS
    return (f"    PATH: {FORMATS} (.npy memory-mapped; .parquet needs pyarrow)\n"
            "    KEY: the array of a .npz, the field of a JSON object, the column of a "
            ".parquet\n")


def _python_details() -> str:
    return ("    the accel globals are numpy / Awkward values (read-only: copy to change one);"
            "\n    new variables holding arrays or numbers become accel globals; `np` is numpy"
            "\n")


# meta-commands that arrive with later issues: they answer so, and %help does not list them
LATER: dict[str, str] = {}


MAGICS: dict[str, Magic] = {m.name: m for m in [
    Magic("who", "%who", "table of your globals: name, kind, type", _who),
    Magic("reset", "%reset", "forget every global you defined (the library stays)", _reset),
    Magic("help", "%help", "this list and a reminder of the language", _help),
    Magic("target", f"%target [{'|'.join(targets.TARGETS)}]",
          f"show the targets and the current one (default {targets.DEFAULT_TARGET}), or "
          "choose one", _target),
    Magic("time", "%time EXPR", "evaluate EXPR and show its value, its check/compile/run times "
          "and its launches (on cpu: how many ran parallel or sequential)", _time),
    Magic("stages", "%stages [--compact] [NAME|EXPR]",
          "all stages of a def or EXPR, one tab each", _stages, _stage_details),
    Magic("show", "%show STAGE|ptx [NAME|EXPR]",
          "one stage drawn, e.g. %show regularity f", _show, _stage_details),
    Magic("step", "%step STAGE [NAME|EXPR]",
          "a slider over a stage's rewrite steps", _step, _stage_details),
    Magic("budget", "%budget [SIZE|off]",
          "show or set the memory budget (sequence chunks, cuda device memory), "
          "e.g. %budget 512MB", _budget,
          lambda: f"    SIZE: {SIZE_FORMS[len('a size: '):]}\n    {BUDGET_BOUNDS}\n"),
    Magic("dashboard", "%dashboard", "show this cell's live dashboard at once (sequences: "
          "progress, chunk sizes, memory, Cancel)", _dashboard),
    Magic("trace", "%trace [FILE.jsonl]", "plot the scheduler's steps of the last sequence "
          "run (and write its events to FILE.jsonl)", _trace),
    Magic("schedule", "%schedule [adaptive|fixed N]",
          "show or set how sequences choose their chunk sizes", _schedule,
          lambda: SCHEDULE_RULES),
    Magic("cluster", "%cluster [local N|tcp://HOST:PORT|off]",
          "show or set the Dask cluster whose workers run sequences' chunks", _cluster,
          lambda: CLUSTER_FORMS),
    Magic("cudasim", "%cudasim", "where there is no GPU, run the cuda target on numba's CUDA "
          "simulator (before the first cuda cell)", _cudasim),
    Magic("load", "%load NAME PATH [KEY]", "bind NAME to data from .npy/.npz/.json/.parquet",
          _load, _load_details),
    Magic("python", "%%python", "a Python cell sharing values with accel (numpy, Awkward)",
          _python, _python_details),
]}

_LANGUAGE_REMINDER = """\
accel in one breath:
  def sq x = x * x               -- a function (generic, non-recursive)
  let xs = iota 10               -- a global kept for later cells
  map sq xs                      -- the cell's last expression is its result
  [x * y | x <- [1..<4], y <- [x..<4], x != y]    -- comprehensions
  reduce (+) 0 xs   scan (+) 0 xs   filter (> 3) xs   \\x -> x + 1
Continuation lines are indented; a form starts in column 1. Comments start with --.
Tab completes names; Shift-Tab shows a name's type and doc."""


def help_text() -> str:
    width = max(len(m.usage) for m in MAGICS.values())
    lines = ["meta-commands (a line starting with %):"]
    for magic in MAGICS.values():        # a summary wraps under itself, in 100 columns
        lines.extend(textwrap.wrap(magic.summary, 100,
                                   initial_indent=f"  {magic.usage.ljust(width)}  ",
                                   subsequent_indent=" " * (width + 4)))
    lines.append("each takes -h for its usage")
    lines.append(f"cells run on the target {targets.DEFAULT_TARGET} by default; "
                 "`%target interp` runs the reference interpreter, which runs every program")
    return "\n".join(lines) + "\n\n" + _LANGUAGE_REMINDER + "\n"


def check_magic(call: MagicCall) -> Magic:
    """The meta-command a call names; MagicError when there is none (checked for every `%`
    line of a cell before any line runs, so a misspelt one fails the cell at once)."""
    magic = MAGICS.get(call.name)
    prefix = "%%" if call.cell else "%"
    if call.name in LATER and not call.cell:
        raise NotImplementedError(LATER[call.name])
    if magic is None or (call.cell != (magic.usage.startswith("%%"))):
        known = ", ".join(m.usage.split()[0] for m in MAGICS.values())
        raise MagicError(f"unknown meta-command {prefix}{call.name}; known: {known}")
    return magic


def run_magic(call: MagicCall, ctx: MagicContext) -> MagicOutput:
    """Run one meta-command. Raises MagicError, NotImplementedError or AccelError."""
    magic = check_magic(call)
    if _wants_help(call.args):
        more = magic.details() if magic.details is not None else ""
        return MagicOutput(stdout=[f"{magic.usage}\n    {magic.summary}\n{more}"])
    args = call.body if call.cell else call.args
    key = _view_key(call, ctx)
    if key is None:
        return magic.run(ctx, args)
    state = ctx.session.state()
    hit = _VIEWS.get(key)
    if hit is not None and len(hit[0]) == len(state) \
            and all(a is b for a, b in zip(hit[0], state)):
        _VIEWS.move_to_end(key)
        out = hit[1]
    else:
        out = magic.run(ctx, args)
        if ctx.cell_name not in repr((out.stdout, out.displays)):
            _VIEWS[key] = (state, out)
            while len(_VIEWS) > VIEW_CACHE_SIZE:
                _VIEWS.popitem(last=False)
    return MagicOutput(list(out.stdout), list(out.displays), list(out.metadata), out.dashboard)


# A view (`%stages f`, `%show fuse f`, `%step flatten f xs`, `%show ptx f`) is shown again
# from here while nothing it depends on changed (`Session.state`, compared by identity; the
# entry keeps those objects alive, so an id is never reused under it): a re-run costs
# microseconds, not the passes and Graphviz again (whose node ids and fresh names differ
# from run to run, so Graphviz' own cache by DOT text missed). A view whose output names
# its cell (an expression's listing) is not kept: a re-run renames the cell (`cell[N]`).
VIEW_CACHE_SIZE = 32
_VIEWS: "OrderedDict[tuple, tuple[tuple, MagicOutput]]" = OrderedDict()


def _view_key(call: MagicCall, ctx: MagicContext) -> tuple | None:
    """The cache key of a view (None: not a view)."""
    if call.cell or call.name not in ("stages", "show", "step"):
        return None
    return call.name, call.args, ctx.line, id(ctx.session), ctx.session.target_record.name


def _wants_help(args: str) -> bool:
    try:
        words = shlex.split(args)
    except ValueError:
        words = args.split()
    return bool(words) and words[0] in ("-h", "--help")


def magic_names() -> list[str]:
    """Every meta-command as typed: `%who`, ..., `%%python`."""
    return [m.usage.split()[0] for m in MAGICS.values()]
