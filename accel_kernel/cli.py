"""The `accel` command line: run programs and install the Jupyter kernel.

    accel run FILE [--target interp|numpy|cpu|cuda] [--json]
    accel kernel install [--user|--sys-prefix|--prefix DIR]

Exit codes: 0 success; 1 an accel error (first stderr line `error: KIND at FILE:LINE:COL:
message`, then the source line and a caret); 2 a usage problem or a target not built yet.
"""
from __future__ import annotations

import argparse
import json
import sys

from . import targets
from .lang.errors import AccelError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="accel", description="The accel array language.")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run a program and print its last expression's value")
    run.add_argument("file")
    run.add_argument("--target", default="interp", choices=sorted(targets.TARGETS))
    run.add_argument("--json", action="store_true", help="print the value as JSON")

    stages = commands.add_parser("stages", help="show the compilation stages of a program")
    stages.add_argument("file")
    stages.add_argument("--entry")
    stages.add_argument("--stage")
    stages.add_argument("--format", default="text", choices=["text", "dot", "svg", "json"])

    kernel = commands.add_parser("kernel", help="manage the Jupyter kernel")
    kernel_commands = kernel.add_subparsers(dest="kernel_command", required=True)
    install = kernel_commands.add_parser("install", help="register the `accel` kernelspec")
    where = install.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true")
    where.add_argument("--sys-prefix", action="store_true")
    where.add_argument("--prefix")
    return parser


def _run(args: argparse.Namespace) -> int:
    from .session import Session
    try:
        text = open(args.file, encoding="utf-8").read()
    except OSError as err:
        print(f"accel: cannot read {args.file}: {err.strerror}", file=sys.stderr)
        return 2
    try:
        session = Session(target=args.target)
    except NotImplementedError as err:
        print(f"accel: {err}", file=sys.stderr)
        return 2
    try:
        result = session.execute(text, name=args.file)
    except AccelError as err:
        print(err.format(), file=sys.stderr)
        return 1
    if result.has_value:
        print(json.dumps(result.json) if args.json else result.text)
    return 0


def _kernel(args: argparse.Namespace) -> int:
    from .kernel.install import install_kernelspec
    path = install_kernelspec(user=args.user, sys_prefix=args.sys_prefix, prefix=args.prefix)
    print(f"installed the accel kernelspec in {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "run":
        return _run(args)
    if args.command == "kernel":
        return _kernel(args)
    print("accel: `accel stages` is not built yet: the visible compilation stages arrive with "
          "'Stages you can see'", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
