"""Pass tests as text: a fixture file (`tests/passes/fixtures/*.accel`, format in the README
there) holds a program, the stage to compile it up to, and the printed IR of that stage (and,
if asked, the rules the stage logged). This module reads and writes fixture files and makes
their actual text; `test_fixtures.py` compares."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from accel_kernel.ir.flat_printer import print_flat
from accel_kernel.lang.printer import print_program
from accel_kernel.session import Session

FIXTURES = Path(__file__).parent / "fixtures"
FLAT_STAGES = ("flatten", "fuse")           # printed by ir/flat_printer.py, the rest by lang/
STAGES = ("desugar", "shape", "regularity") + FLAT_STAGES
LOGS = ("rules", "notes")                   # the rule names; the rules with their notes
MARK = "=== "                               # starts a section's line (`--` is an accel comment)
NODE_ID = re.compile(r" #\d+")               # a node's id in a note: changes with the prelude


@dataclass(frozen=True)
class Fixture:
    path: Path
    comment: str           # what the fixture shows (its `#` lines)
    stage: str             # compiled up to this stage (the default passes, in order)
    target: str            # the session's target: its options shape the passes (`seq_inner`)
    log: str | None        # "rules", "notes", or None: the log is not compared
    program: str
    output: str            # the stage's program, printed
    logged: str            # the stage's log, as `log` says (empty when None)

    @property
    def name(self) -> str:
        return self.path.stem


def read(path: Path) -> Fixture:
    header, sections = _split(path.read_text(encoding="utf-8"), path)
    comment = "\n".join(line for line in header if line.startswith("#"))
    keys = dict(_key(line, path) for line in header if line.strip() and not line.startswith("#"))
    unknown = set(keys) - {"stage", "target", "log"}
    if unknown or keys.get("stage") not in STAGES or keys.get("log", "rules") not in LOGS:
        raise ValueError(f"{path.name}: the header needs `stage:` (one of {', '.join(STAGES)}), "
                         f"may have `target:` and `log:` ({' or '.join(LOGS)}); got {keys}")
    return Fixture(path, comment, keys["stage"], keys.get("target", "cpu"), keys.get("log"),
                   sections.get("program", ""), sections.get("output", ""),
                   sections.get("log", ""))


def _split(text: str, path: Path) -> tuple[list[str], dict[str, str]]:
    header: list[str] = []
    sections: dict[str, list[str]] = {}
    current = header
    for line in text.splitlines():
        if line.startswith(MARK):
            current = sections.setdefault(line[len(MARK):].strip(), [])
        else:
            current.append(line)
    if set(sections) - {"program", "output", "log"} or "program" not in sections:
        raise ValueError(f"{path.name}: sections are `=== program`, `=== output`, `=== log`; "
                         f"got {', '.join(sections) or 'none'}")
    return header, {name: "\n".join(lines).strip("\n") for name, lines in sections.items()}


def _key(line: str, path: Path) -> tuple[str, str]:
    key, colon, value = line.partition(":")
    if not colon:
        raise ValueError(f"{path.name}: `{line}` is no `key: value` header line")
    return key.strip(), value.strip()


def write(fixture: Fixture) -> None:
    keys = [f"stage: {fixture.stage}"]
    if fixture.target != "cpu":
        keys.append(f"target: {fixture.target}")
    if fixture.log is not None:
        keys.append(f"log: {fixture.log}")
    parts = [fixture.comment, *keys, f"{MARK}program", fixture.program, f"{MARK}output",
             fixture.output]
    if fixture.log is not None:
        parts += [f"{MARK}log", fixture.logged]
    fixture.path.write_text("\n".join(p for p in parts if p) + "\n", encoding="utf-8")


def compile_stages(fixture: Fixture):
    """The stages of the fixture's program, from `parse` through its stage."""
    session = Session(target=fixture.target)
    return session.program_stages(fixture.program + "\n", f"{fixture.name}.accel",
                                  stop_after=fixture.stage)


def printed(stage) -> str:
    text = print_flat(stage.program) if stage.name in FLAT_STAGES else print_program(stage.program)
    return text.strip("\n")


def logged(stage, log: str | None) -> str:
    if log is None:
        return ""
    if log == "rules":
        return "\n".join(step.rule for step in stage.steps)
    return "\n".join(f"{step.rule}: {NODE_ID.sub('', step.note)}" if step.note else step.rule
                     for step in stage.steps)


def actual(fixture: Fixture, stage) -> Fixture:
    """The fixture with the text its stage prints now."""
    return replace(fixture, output=printed(stage), logged=logged(stage, fixture.log))


def all_fixtures() -> list[Path]:
    return sorted(FIXTURES.glob("*.accel"))
