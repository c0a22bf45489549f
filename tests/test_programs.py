"""The example programs of tests/programs/: each must print its expected value or fail with its
expected error (format: tests/programs/README.md).

Every program runs in process through `accel_kernel.cli.main`; three also run through the real
`accel` console script to check exit codes and the stderr layout end to end.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PROGRAMS_DIR = REPO / "tests" / "programs"
# The regressions found by `python -m tests.fuzz` (expectations from interp: their README.md)
PROGRAMS = (sorted(PROGRAMS_DIR.glob("*.accel"))
            + sorted(PROGRAMS_DIR.glob("regressions/*.accel")))

# The error kinds of LANGUAGE.md §8 a program can raise (Interrupted needs a user).
ERROR_KINDS = ("SyntaxError", "TypeError", "NameError", "IndexError", "DivisionByZero", "SizeError")

# Back ends every program is checked on; the others join as they are built.
TARGETS = ("interp", "numpy", "cpu")

EXPECTED_LINE = re.compile(r"^-- expected: (?P<value>.+)$")
ERROR_LINE = re.compile(r"^-- error: (?P<kind>\w+)(?: at (?P<line>\d+):(?P<col>\d+))?$")
JSON_LINE = re.compile(r"^-- json: (?P<json>.+)$")


@dataclass(frozen=True)
class Expectation:
    value: str | None = None           # the printed line, for `-- expected:`
    json: str | None = None            # the `--json` output, when given
    kind: str | None = None            # the error kind, for `-- error:`
    line: int | None = None            # the error position, when given
    col: int | None = None


def read_expectation(path: Path) -> Expectation:
    """The expectation comments at the end of a program file."""
    lines = path.read_text(encoding="utf-8").rstrip("\n").splitlines()
    found: dict[str, re.Match] = {}
    for text in lines:
        for name, pattern in (("expected", EXPECTED_LINE), ("error", ERROR_LINE),
                              ("json", JSON_LINE)):
            match = pattern.match(text)
            if match:
                assert name not in found, f"{path.name}: two `-- {name}:` lines"
                found[name] = match
    assert ("expected" in found) != ("error" in found), \
        f"{path.name}: needs exactly one `-- expected:` or `-- error:` line"
    assert "json" not in found or "expected" in found, f"{path.name}: `-- json:` needs a value"
    tail = len(found)
    assert all(EXPECTED_LINE.match(t) or ERROR_LINE.match(t) or JSON_LINE.match(t)
               for t in lines[-tail:]), f"{path.name}: the expectation must end the file"
    if "expected" in found:
        json_match = found.get("json")
        return Expectation(value=found["expected"]["value"],
                           json=json_match["json"] if json_match else None)
    error = found["error"]
    line, col = error["line"], error["col"]
    return Expectation(kind=error["kind"], line=int(line) if line else None,
                       col=int(col) if col else None)


def run_in_process(argv: list[str], capsys) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `accel ARGV`; `main` returns the code or exits."""
    from accel_kernel.cli import main  # here, so the format checks run on their own
    try:
        code = main(argv)
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    return (0 if code is None else code), out, err


def same_json(a, b) -> bool:
    """JSON equality that keeps bool, int and float apart (`1`, `1.0` and `true` differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    return a == b


def check_error_report(err: str, path: str, source: str, expect: Expectation) -> None:
    """First stderr line `error: KIND at FILE:LINE:COL: ...`, then the line and the carets."""
    lines = err.splitlines()
    assert lines, "nothing on stderr"
    if expect.line is None:
        assert lines[0].startswith(f"error: {expect.kind} at {path}:"), lines[0]
        assert len(lines) >= 3 and lines[1] in source.splitlines(), err
        return
    assert lines[0].startswith(f"error: {expect.kind} at {path}:{expect.line}:{expect.col}: "), \
        lines[0]
    assert len(lines) >= 3, err
    assert lines[1] == source.splitlines()[expect.line - 1], err
    carets = lines[2]
    assert carets.strip(" ") and set(carets.strip(" ")) == {"^"}, err
    assert len(carets) - len(carets.lstrip(" ")) == expect.col - 1, err


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_program(program: Path, target: str, capsys):
    expect = read_expectation(program)
    path = str(program)
    code, out, err = run_in_process(["run", path, "--target", target], capsys)
    if expect.kind is None:
        assert (code, err) == (0, ""), err
        assert out == expect.value + "\n"
        if expect.json is not None:
            code, out, err = run_in_process(["run", path, "--target", target, "--json"], capsys)
            assert code == 0, err
            assert same_json(json.loads(out), json.loads(expect.json)), out
    else:
        assert code == 1, (out, err)
        assert out == ""
        check_error_report(err, path, program.read_text(encoding="utf-8"), expect)


def test_there_are_enough_programs():
    assert len(PROGRAMS) >= 60


def test_every_error_kind_is_covered():
    kinds = {read_expectation(p).kind for p in PROGRAMS}
    assert set(ERROR_KINDS) <= kinds, set(ERROR_KINDS) - kinds


def test_expectations_are_well_formed():
    for program in PROGRAMS:
        expect = read_expectation(program)
        if expect.json is not None:
            json.loads(expect.json)
        if expect.kind is not None:
            assert expect.kind in ERROR_KINDS, program.name
            if expect.line is not None:
                source = program.read_text(encoding="utf-8").splitlines()
                assert expect.col <= len(source[expect.line - 1]), program.name


# ---------------------------------------------------------------- the real console script

ACCEL = Path(sys.executable).parent / "accel"


def run_console(relative_path: str, *options: str) -> subprocess.CompletedProcess:
    if not ACCEL.exists():
        pytest.fail(f"the console script {ACCEL} is missing: is the package installed?")
    return subprocess.run([str(ACCEL), "run", relative_path, *options], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_console_prints_the_value():
    done = run_console("tests/programs/pythagorean_triples.accel")     # on cpu, the default
    expect = read_expectation(PROGRAMS_DIR / "pythagorean_triples.accel")
    assert done.returncode == 0, done.stderr
    assert done.stdout == expect.value + "\n"
    assert done.stderr == ""


@pytest.mark.parametrize("name", ["error_index_oob", "error_syntax_missing_operand"])
def test_console_reports_errors(name: str):
    relative = f"tests/programs/{name}.accel"
    done = run_console(relative, "--target", "interp")     # the report, not a target, is tested
    expect = read_expectation(REPO / relative)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == ""
    check_error_report(done.stderr, relative, (REPO / relative).read_text(encoding="utf-8"),
                       expect)
