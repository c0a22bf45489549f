"""The one rewriter (`passes/base.RewriteLog.apply`): every rule application of every pass goes
through it, every rule name a program can log is written as a string literal in its stage's
modules (so grep finds the rule) and listed in docs/stages.md, and fuse names ops from the
flat IR's objects, not from printed text."""
from __future__ import annotations

import ast as python_ast
import re
from pathlib import Path

import pytest

from accel_kernel.ir import flat as F
from accel_kernel.ir.flat_printer import op_name, print_op
from accel_kernel.lang import ast
from accel_kernel.lang.errors import AccelError
from accel_kernel.lang.parser import parse_program
from accel_kernel.lang.source import Source
from accel_kernel.passes.base import RewriteLog
from accel_kernel.session import Session

REPO = Path(__file__).resolve().parent.parent.parent
PACKAGE = REPO / "accel_kernel"
PROGRAMS = (sorted((REPO / "tests" / "programs").glob("*.accel"))
            + sorted((REPO / "tests" / "programs").glob("regressions/*.accel")))

# where each stage's rules are written
STAGE_SOURCES = {
    "desugar": sorted((PACKAGE / "passes").glob("desugar*.py")),
    "shape": sorted((PACKAGE / "passes").glob("shape*.py")),
    "regularity": [PACKAGE / "passes" / "regularity.py"],
    "flatten": sorted((PACKAGE / "passes" / "flatten").glob("*.py")),
    "fuse": sorted((PACKAGE / "passes").glob("fuse*.py")),
    "codegen": [PACKAGE / "backends" / "cpu" / "codegen.py"],
}


# ---------------------------------------------------------------- the mechanism

def _nodes() -> list[ast.Node]:
    program = parse_program(Source("t", "let a = 1 + 2\nlet b = [a, a]\n"), iter(range(1, 99)))
    return [node for form in program.forms for node in ast.walk(form)
            if isinstance(node, (ast.BinOp, ast.ArrayLit))]


def test_apply_logs_the_rule_when_it_completes_with_before_after_and_span():
    plus, array = _nodes()
    log = RewriteLog("test")
    with log.apply("OUTER", plus, note="why") as outer:
        with log.apply("INNER", "text before") as inner:
            inner.after = "text after"
        outer.after = array
    first, second = log.steps
    assert (first.rule, first.before, first.after, first.node, first.span) == \
        ("INNER", "text before", "text after", 0, None)
    assert (second.stage, second.rule, second.before, second.after, second.note) == \
        ("test", "OUTER", "1 + 2", "[a, a]", "why")
    assert second.node == plus.id and second.span == plus.span
    assert second.changed == (array.id,)          # by default: what the rule made


def test_apply_first_logs_a_rule_before_the_rules_inside_it():
    plus, array = _nodes()
    log = RewriteLog("test")
    with log.apply("OUTER", plus, first=True) as outer:
        with log.apply("INNER", array) as inner:
            inner.after = "inner"
        outer.rule, outer.after, outer.changed = "OUTER-REFINED", "outer", (7,)
    assert [(s.rule, s.after, s.changed) for s in log.steps] == \
        [("OUTER-REFINED", "outer", (7,)), ("INNER", "inner", ())]


def test_a_rule_that_raises_logs_nothing_and_rollback_forgets_an_attempt():
    plus, _ = _nodes()
    log = RewriteLog("test")
    with pytest.raises(NotImplementedError):
        with log.apply("TRIED", plus, first=True):
            with log.apply("DONE", plus) as done:
                done.after = "done"
            raise NotImplementedError("not built")
    assert [s.rule for s in log.steps] == ["DONE"]
    mark = log.mark()
    with log.apply("UNDONE", plus, changed=(3, 4)) as undone:
        undone.after = "x"
    log.forget({3})
    assert log.steps[-1].changed == (4,)
    log.rollback(mark)
    assert [s.rule for s in log.steps] == ["DONE"]


def test_no_pass_makes_steps_or_edits_the_log_but_through_the_rewriter():
    by_hand = re.compile(r"\bStep\(|log\.steps|log\.record\(")
    offenders = [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
                 for paths in STAGE_SOURCES.values() for path in paths
                 for number, line in enumerate(path.read_text().splitlines(), start=1)
                 if by_hand.search(line)]
    assert offenders == []


# ---------------------------------------------------------------- every rule, found by name

@pytest.fixture(scope="module")
def logged_rules() -> dict[str, set[str]]:
    """stage -> the rule names logged for the programs of tests/programs (on `cpu`, whose
    flatten applies SEQ-INNER, and on `numpy`, whose flatten does not)."""
    rules: dict[str, set[str]] = {}
    for target in ("cpu", "numpy"):
        session = Session(target=target)
        for path in PROGRAMS:
            try:
                stages = session.program_stages(path.read_text(), path.name)
            except AccelError:
                continue                     # a program whose expectation is an error
            for stage in stages:
                for step in stage.steps:
                    rules.setdefault(stage.name, set()).add(step.rule)
    return rules


def _literals(paths: list[Path]) -> set[str]:
    return {node.value for path in paths for node in python_ast.walk(python_ast.parse(
        path.read_text())) if isinstance(node, python_ast.Constant) and isinstance(node.value, str)}


def _written(stage: str, rule: str, literals: set[str]) -> bool:
    if rule in literals:
        return True
    # flatten's lifted variants are named by `_rule` (flatten/library.py) from the literal
    # base name: `LIFT-GENERATE-REGULAR` from "GENERATE", `LIFT-REDUCE-SEQUENTIAL` from
    # "REDUCE-SEQUENTIAL"
    lifted = re.fullmatch(r"LIFT-(.+?)(-REGULAR|-IRREGULAR)?", rule)
    return stage == "flatten" and lifted is not None and lifted.group(1) in literals


def test_every_logged_rule_is_written_as_a_literal_in_its_stage(logged_rules):
    assert set(logged_rules) == set(STAGE_SOURCES)
    missing = {}
    for stage, names in logged_rules.items():
        literals = _literals(STAGE_SOURCES[stage])
        missing[stage] = sorted(rule for rule in names if not _written(stage, rule, literals))
    assert {stage: names for stage, names in missing.items() if names} == {}


def test_every_logged_rule_is_listed_in_its_stage_section_of_stages_md(logged_rules):
    sections: dict[str, str] = {}
    stage = None
    for line in (REPO / "docs" / "stages.md").read_text().splitlines():
        heading = re.match(r"^## (\w+)$", line)
        if heading:
            stage = heading.group(1)
        elif stage is not None:
            sections[stage] = sections.get(stage, "") + line + "\n"
    missing = {stage: sorted(rule for rule in names if f"`{rule}`" not in sections.get(stage, ""))
               for stage, names in logged_rules.items()}
    assert {stage: names for stage, names in missing.items() if names} == {}


# ---------------------------------------------------------------- fuse's op names

def _statements(block: F.Block):
    for stmt in block.stmts:
        yield stmt
        for inner in F.blocks_of(stmt.op):
            yield from _statements(inner)


def test_op_name_is_the_word_the_printer_writes_first():
    seen = set()
    for path in PROGRAMS[:60]:
        try:
            stages = Session().program_stages(path.read_text(), path.name, stop_after="fuse")
        except (AccelError, NotImplementedError):
            continue
        for stage in stages[-2:]:                 # flatten and fuse
            if stage.name not in ("flatten", "fuse"):
                continue
            for form in stage.program.forms:
                for stmt in _statements(form.body):
                    assert op_name(stmt.op) == print_op(stmt.op).split(" ", 1)[0]
                    seen.add(type(stmt.op))
    assert {F.Map, F.Kernel, F.Reduce, F.Library, F.Assert} <= seen


def test_a_kernel_step_names_its_ops():
    stages = Session().program_stages(
        "def total (n: i64) = reduce (+) 0 (map (\\x -> x * x) (iota n))", "t.accel",
        stop_after="fuse")
    [kernel] = [step for step in stages[-1].steps if step.rule == "KERNEL"]
    assert kernel.before == "3 statement(s): iota, map, reduce"
