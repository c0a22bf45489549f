"""The pass fixtures of `tests/passes/fixtures/` (README there): every fixture's program
compiled up to its stage must print its expected text (and log its expected rules); the
printed text must parse back through the stage's parser and print the same; and the printed
program must compute what the interpreter computes on the original (the core IR run again by
the interpreter, the flat IR by the `numpy` target). `--update-fixtures` (or
`ACCEL_UPDATE_FIXTURES=1`) rewrites the expected text from what the passes print now."""
from __future__ import annotations

import difflib
import os

import pytest

from accel_kernel.backends.numpy import execute, from_flat
from accel_kernel.ir.core import verify_core
from accel_kernel.ir.flat_printer import parse_flat, print_flat, verify
from accel_kernel.lang import ast
from accel_kernel.lang.errors import AccelError
from accel_kernel.lang.parser import parse_program
from accel_kernel.lang.printer import print_program
from accel_kernel.lang.source import Source
from accel_kernel.session import Session
from accel_kernel.values import format_value

from .helpers import unseq
from .fixture_files import (FIXTURES, FLAT_STAGES, Fixture, actual, all_fixtures, compile_stages,
                       read, write)

# every rule of `desugar` (docs/stages.md) is shown by some fixture, but `inline-skipped`
# (its program prints thousands of lines: test_desugar.py checks it)
DESUGAR_RULES = {"first-generator", "start", "regular-nest", "expand", "nested-fallback",
                 "guard", "let", "let-function", "zip", "body", "comprehension", "range",
                 "range-kept", "left-section", "right-section", "cond", "inline", "rename",
                 "not-desugared"}
# the main flatten rules and fuse decisions
FLATTEN_RULES = {"LIFT-MAP-REGULAR", "LIFT-MAP-IRREGULAR", "LIFT-MAP-SCALAR", "REDUCE",
                 "LIFT-REDUCE-REGULAR", "LIFT-REDUCE-SEGMENTED", "SCAN", "LIFT-SCAN-SEGMENTED",
                 "FILTER", "LIFT-FILTER-SEGMENTED", "IOTA", "REPLICATE", "LIFT-IF-SELECT",
                 "LIFT-IF-PARTITION", "LOOP", "LIFT-LOOP-ACTIVE", "EXPAND", "AVOID"}
FUSE_RULES = {"FUSE-REDOMAP", "FUSE-FILTER", "FUSE-SEGMENTED", "FUSE-ROWS", "FUSE-HORIZONTAL",
              "MATERIALISE", "REFUSE"}

PATHS = all_fixtures()


def updating(config) -> bool:
    return bool(config.getoption("--update-fixtures")
                or os.environ.get("ACCEL_UPDATE_FIXTURES", "") not in ("", "0"))


def diff(name: str, expected: str, got: str) -> str:
    return "\n".join(difflib.unified_diff(expected.splitlines(), got.splitlines(),
                                          f"{name} (expected)", f"{name} (printed now)",
                                          lineterm=""))


def compare(fixture: Fixture, now: Fixture, update: bool) -> None:
    """Fail with a diff where the text printed now differs; or accept it (`update`)."""
    if update:
        if now != fixture:
            write(now)
        return
    hint = "\n(to accept: pytest tests/passes/test_fixtures.py --update-fixtures)"
    name = fixture.path.name
    assert now.output == fixture.output, \
        f"{name}: the printed {fixture.stage} IR differs\n" + \
        diff(name, fixture.output, now.output) + hint
    assert now.logged == fixture.logged, \
        f"{name}: the {fixture.stage} log differs\n" + diff(name, fixture.logged, now.logged) + hint


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_fixture(path, request):
    fixture = read(path)
    stages = compile_stages(fixture)
    assert stages[-1].name == fixture.stage
    now = actual(fixture, stages[-1])
    compare(fixture, now, updating(request.config))
    if fixture.stage in FLAT_STAGES:
        assert verify(stages[-1].program) == []
        assert print_flat(parse_flat(now.output + "\n")).strip("\n") == now.output
        assert flat_outcome(stages) == interp_outcome(fixture.program)
    else:
        if not any(step.rule == "not-desugared" for step in stages[-1].steps):
            assert verify_core(stages[-1].program) == []
        assert print_program(parse_program(Source("again", now.output))).strip("\n") \
            == now.output
        assert interp_outcome(now.output) == interp_outcome(fixture.program), now.output


def interp_outcome(text: str) -> tuple:
    try:
        return ("value", Session(target="interp").execute(text, "fixture").text)
    except AccelError as err:
        return ("error", err.kind)


def flat_outcome(stages) -> tuple:
    """The value of the program's last expression, its flat program run on `numpy`."""
    typed = next(s for s in stages if s.name == "typed")
    exprs = [f.expr for f in typed.program.forms if isinstance(f, ast.TopExpr)]
    try:
        out = execute(stages[-1].program, {})
    except AccelError as err:
        return ("error", err.kind)
    if not exprs:
        return ("value", None)
    t = unseq(typed.types[exprs[-1].id])
    return ("value", format_value(from_flat(out.results[-1], t), t))


@pytest.mark.parametrize("stage, rules", [("desugar", DESUGAR_RULES),
                                          ("flatten", FLATTEN_RULES), ("fuse", FUSE_RULES)])
def test_the_fixtures_show_every_rule(stage, rules):
    shown = set()
    for path in PATHS:
        fixture = read(path)
        if fixture.stage == stage and fixture.log is not None:
            shown |= {line.split(":")[0] for line in fixture.logged.splitlines()}
    assert rules - shown == set()


def test_a_changed_fixture_fails_with_a_diff_and_is_updated_on_request(tmp_path):
    path = tmp_path / "fuse_refuse.accel"
    original = (FIXTURES / "fuse_refuse.accel").read_text()
    path.write_text(original.replace("kernel k2_map map", "kernel k2_map redomap"))
    fixture = read(path)
    now = actual(fixture, compile_stages(fixture)[-1])
    with pytest.raises(AssertionError) as failure:
        compare(fixture, now, update=False)
    message = str(failure.value)
    assert "fuse_refuse.accel: the printed fuse IR differs" in message
    assert "-  let m_1: [r1]i64 = kernel k2_map redomap [2] do" in message
    assert "+  let m_1: [r1]i64 = kernel k2_map map [2] do" in message
    assert "--update-fixtures" in message
    compare(fixture, now, update=True)
    assert path.read_text() == original
