"""`python -m tests.fuzz`: random programs on the compiled targets, against `interp`.

    python -m tests.fuzz --programs N --targets interp,numpy,cpu --seed S
                         [--out tests/programs/regressions] [--timeout SECONDS]

Runs programs `0..N-1` of the stream `seed` (see `generate.py`) in a worker process, compares
every target with `interp` (value printed, or error kind and line), shrinks a few programs of
each failure class (disagreement, crash, timeout) and writes them into `--out` in the format
of `tests/programs/` with `interp`'s result as the expectation, then prints a table of counts.
A program the type checker rejects is a bug of the generator and is counted apart. The exit
code is 0 whatever was found: this command reports, the test suite judges.
"""
from __future__ import annotations

import argparse
import re
import signal
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from .generate import generate
from .program import Program
from .run import (COMPILE_TIME, CRASH, DISAGREE, TIMEOUT, UNBUILT, VERDICTS, Outcome, Worker,
                  verdict)
from .shrink import shrink

REPO = Path(__file__).resolve().parents[2]
FAILURES = (DISAGREE, CRASH, TIMEOUT)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("--programs", type=int, default=100, help="how many programs")
    parser.add_argument("--targets", default="interp,numpy,cpu",
                        help="comma-separated targets (interp is always the reference)")
    parser.add_argument("--seed", type=int, default=0, help="the program stream")
    parser.add_argument("--start", type=int, default=0, help="the first program's number")
    parser.add_argument("--out", default=str(REPO / "tests" / "programs" / "regressions"),
                        help="where the shrunk failures are written ('' writes nothing)")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds per program and target before it counts as a hang")
    parser.add_argument("--shrink-per-class", type=int, default=2,
                        help="failing programs shrunk and written per failure class")
    parser.add_argument("--budget", type=int, default=200,
                        help="runs of a shrinking candidate per failing program")
    parser.add_argument("--minutes", type=float, default=None,
                        help="stop starting new programs after this long (then shrink)")
    parser.add_argument("--check-facts", action="store_true",
                        help="interp checks every shape and regularity fact on the data "
                             "(a wrong fact is an interp failure, listed at the end)")
    parser.add_argument("--verbose", action="store_true", help="print every failure in full")
    return parser.parse_args(argv)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:60]


def expectation(reference: Outcome) -> str:
    if reference.kind == "value":
        return f"-- expected: {reference.detail}"
    if reference.line is None:
        return f"-- error: {reference.detail}"
    return f"-- error: {reference.detail} at {reference.line}:{reference.col}"


def usable(reference: Outcome) -> bool:
    """An interp outcome the targets can be judged against: a value or a run-time error."""
    return reference.kind == "value" or (reference.kind == "error"
                                         and reference.detail not in COMPILE_TIME)


class Fuzz:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.targets = [t for t in args.targets.split(",") if t and t != "interp"]
        self.runner = Worker(timeout=args.timeout, check_facts=args.check_facts)
        self.counts: Counter = Counter()                   # (target, verdict) -> programs
        self.unbuilt: Counter = Counter()                  # (target, construct) -> programs
        self.failures: dict[str, list[tuple[int, Program]]] = defaultdict(list)
        self.type_errors: list[tuple[int, str]] = []
        self.reference_failures: list[tuple[int, str]] = []
        self.written: dict[str, str] = {}                  # file written -> its text
        self.ran = 0                                       # programs run so far

    def say(self, text: str) -> None:
        print(text, flush=True)

    def run_all(self) -> None:
        args, started = self.args, time.perf_counter()
        for index in range(args.start, args.start + args.programs):
            if args.minutes is not None and time.perf_counter() - started > args.minutes * 60:
                self.say(f"time limit: stopped after {self.ran} programs")
                break
            self.run_one(index, generate(args.seed, index))
            self.ran += 1
            done = index - args.start + 1
            if done % 25 == 0 or done == args.programs:
                failing = sum(self.counts[(t, v)] for t in self.targets for v in FAILURES)
                self.say(f"[{done}/{args.programs}] {time.perf_counter() - started:.0f}s, "
                         f"{failing} failing target runs, {len(self.failures)} classes")

    def run_one(self, index: int, program: Program) -> None:
        text = program.text
        problem = self.runner.check(text)
        if problem is not None:
            self.type_errors.append((index, f"{problem}\n{text}"))
            return
        outcomes = self.runner.run(text, ["interp", *self.targets])
        reference = outcomes["interp"]
        if not usable(reference):
            what = f"interp: {reference.describe()}"
            rejected = reference.kind == "error"          # a compile-time error: the generator's
            (self.type_errors if rejected else self.reference_failures).append(
                (index, f"{what}\n{text}"))
            return
        for target in self.targets:
            judged, cls = verdict(reference, target, outcomes[target])
            self.counts[(target, judged)] += 1
            if judged == UNBUILT:
                self.unbuilt[(target, cls)] += 1
            elif judged in FAILURES:
                self.failures[cls].append((index, program))
                if self.args.verbose:
                    self.say(f"--- program {index}: {cls}\n{text}interp: "
                             f"{reference.describe()}\n{target}: {outcomes[target].describe()}")

    # ------------------------------------------------------------ shrinking and writing

    def class_of(self, text: str, target: str) -> str:
        outcomes = self.runner.run(text, ["interp", target])
        reference = outcomes["interp"]
        if not usable(reference):
            return ""
        return verdict(reference, target, outcomes[target])[1]

    def shrink_all(self) -> None:
        out = Path(self.args.out) if self.args.out else None
        for cls, examples in sorted(self.failures.items()):
            target = cls.split(":")[0]
            for index, program in examples[:self.args.shrink_per_class]:
                small = program
                if not cls.endswith("timeout"):
                    started = time.perf_counter()
                    small = shrink(program, lambda t: self.class_of(t, target) == cls,
                                   lambda t: self.runner.check(t) is None, self.args.budget)
                    self.say(f"shrunk program {index} ({cls}): {program.size()} -> "
                             f"{small.size()} nodes in {time.perf_counter() - started:.0f}s")
                if out is not None:
                    self.write(out, cls, index, small, target)

    def write(self, out: Path, cls: str, index: int, program: Program, target: str) -> None:
        header = (f"-- found by `python -m tests.fuzz --seed {self.args.seed}` (program "
                  f"{index}), shrunk\n-- {cls}; interp's result below\n")
        text = header + program.text
        # the same program shrunk for another target's class, now or by an earlier run: a
        # regression program runs on every target anyway
        known = [*self.written.values(), *(f.read_text(encoding="utf-8")
                                           for f in out.glob("*.accel"))]
        if any(f"\n{program.text}" in other for other in known):
            return
        outcomes = self.runner.run(text, ["interp", target])
        reference = outcomes["interp"]
        if not usable(reference) or "\n" in reference.detail:
            return
        out.mkdir(parents=True, exist_ok=True)
        name = f"{slug(cls)}_s{self.args.seed}_{index}.accel"
        (out / name).write_text(f"{text}{expectation(reference)}\n", encoding="utf-8")
        self.written[name] = text
        self.say(f"wrote {out / name}: {outcomes[target].describe()[:100]}")

    # ------------------------------------------------------------ the summary

    def summary(self) -> str:
        lines = ["", f"{'outcome':<16}" + "".join(f"{t:>10}" for t in self.targets)]
        for judged in VERDICTS:
            lines.append(f"{judged:<16}" + "".join(f"{self.counts[(t, judged)]:>10}"
                                                 for t in self.targets))
        lines.append(f"programs: {self.ran}, generator type errors: "
                     f"{len(self.type_errors)}, interp failures: {len(self.reference_failures)}, "
                     f"worker restarts: {self.runner.restarts}")
        if self.failures:
            lines += ["", "failure classes (programs; first program numbers):"]
            for cls, examples in sorted(self.failures.items(), key=lambda kv: -len(kv[1])):
                firsts = ", ".join(str(i) for i, _ in examples[:5])
                lines.append(f"  {len(examples):>5}  {cls}  [{firsts}]")
        if self.unbuilt:
            lines += ["", "not built yet (programs):"]
            for (target, construct), count in self.unbuilt.most_common():
                lines.append(f"  {count:>5}  {target}: {construct}")
        for title, items in (("generator type errors", self.type_errors),
                             ("interp failures", self.reference_failures)):
            if items:
                lines += ["", f"{title}:"]
                for index, what in items[:5]:
                    lines.append(f"  program {index}: {what.splitlines()[0]}")
        if self.written:
            lines += ["", f"written: {len(self.written)} files in {self.args.out}"]
        return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGINT, signal.default_int_handler)   # also when started with `&`
    fuzz = Fuzz(args)
    try:
        try:
            fuzz.run_all()
        except KeyboardInterrupt:          # a first ^C stops running programs, not shrinking
            fuzz.say(f"interrupted after {fuzz.ran} programs: shrinking what was found")
            fuzz.runner.reset()
        fuzz.shrink_all()
    except KeyboardInterrupt:
        fuzz.say("interrupted: the summary so far")
    finally:
        fuzz.runner.close()
    fuzz.say(fuzz.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
