"""The fact checker (`Session(check_facts=True)`, backends/interp/facts.py): every shape,
regularity and independence fact of the `regularity` stage holds on the data of every example
program, notebook cell and random program; and a wrong fact is caught, naming its node."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from accel_kernel.backends.interp.facts import check_facts
from accel_kernel.lang import ast
from accel_kernel.lang.errors import AccelError, InternalError
from accel_kernel.passes import regularity as regularity_pass
from accel_kernel.passes.regularity import Regularity
from accel_kernel.passes.shape_terms import Const
from accel_kernel.session import Session
from test_differential import NOTEBOOKS, code_cells, nested_program

PROGRAMS = sorted((Path(__file__).parent / "programs").glob("**/*.accel"))    # regressions too

_SESSION: list[Session] = []


def checking_session() -> Session:
    """One checking session for the examples, reset before each (the prelude stays)."""
    if not _SESSION:
        _SESSION.append(Session(target="interp", check_facts=True))
    _SESSION[0].reset()
    return _SESSION[0]


def run_checked(session: Session, code: str, name: str = "cell") -> None:
    """Run a cell with the checker on; the program's own errors are fine, a wrong fact not."""
    try:
        session.execute(code, name)
    except InternalError:
        raise
    except AccelError:
        pass


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_every_fact_of_every_example_program_holds(path: Path):
    run_checked(checking_session(), path.read_text(encoding="utf-8"), path.name)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_fact_of_the_notebooks_holds(path: Path):
    session = Session(target="interp", check_facts=True)
    for k, code in enumerate(c for c in code_cells(path) if c.strip()):
        run_checked(session, code, f"cell{k}")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=nested_program())
def test_every_fact_of_random_programs_holds(text: str):
    run_checked(checking_session(), text)


TRICKY = [
    "let f = \\x -> iota x in (f 3, map f [1, 2])",
    "map (\\n -> map (\\k -> iota k) (iota n)) [2, 3]",
    "map (\\xs -> expand (\\x -> x) (\\x j -> x + j) xs) [[1, 2], [3]]",
    "map (\\xs -> sort_by (\\x -> 0 - x) xs) [[1, 2], [3]]",
    "map (\\n -> elements (produce n (\\i -> i * 2))) [2, 3]",
    "map (\\n -> [(i, j) | i <- iota n, j <- iota i]) [3, 4]",
    "map (\\xs -> partition (\\x -> x > 1) xs) [[1, 2, 3], [3]]",
    "map (\\n -> let g = \\k -> replicate k n in (g 1, g n)) [2, 3]",
    "map (\\n -> loop acc = [] for i < n do acc ++ [i]) [2, 0, 3]",
    "map (\\n -> loop (acc, k) = ([0], n) while k > 0 do (acc ++ [k], k - 1)) [2, 0, 3]",
    "let twice = \\f x -> f (f x) in map (\\n -> twice (\\xs -> xs ++ xs) (iota n)) [1, 2]",
    "map (\\n -> reduce_by_index (replicate n 0) (+) 0 [0, 1] [5, 6]) [2, 3]",
    "map (\\n -> scan (\\a b -> if length a > length b then a else b) [] "
    "(map (\\k -> iota k) (iota n))) [2, 3]",
    "map (\\n -> foldSeq (+) 0 (produce n (\\i -> i))) [2, 3]",
    "map (\\n -> while (\\xs -> length xs < n) (\\xs -> xs ++ xs) [1]) [2, 5]",
]


@pytest.mark.parametrize("text", TRICKY)
def test_facts_of_lambdas_loops_and_sequences_hold(text: str):
    """Let-bound lambdas applied in several contexts (GENERALISE), loops whose state changes
    shape, tuple states, sequences and map-like builtins inside maps."""
    checking_session().execute(text)


def test_the_paper_examples_and_the_wrong_answer_of_issue_18_are_checked():
    session = checking_session()
    result = session.execute("map (\\n -> iota (let (m, c) = loop (m, c) = (n, 1) while m >= 10 "
                             "do (m / 10, c + 1) in c)) [5, 123, 10]")
    assert result.text == "[[0], [0, 1, 2], [0, 1]]"


# ---------------------------------------------------------------- the checker catches

TEXT = "map (\\n -> iota n) [1, 3]"


def _stages(session: Session, text: str):
    compiled = session._compile(text, "t")
    return session._pipeline(compiled.program, compiled.checked, stop_after="regularity")


def _node(stage, kind, text: str):
    from accel_kernel.passes.base import show_node
    return next(n for f in stage.program.forms for n in ast.walk(f)
                if isinstance(n, kind) and show_node(n) == text)


def _with_fact(stages, analysis: str, node: ast.Node, fact):
    stage = stages[-1]
    facts = {**stage.facts, analysis: type(stage.facts[analysis])(stage.facts[analysis])}
    if hasattr(stage.facts[analysis], "deps"):
        facts[analysis].deps = stage.facts[analysis].deps
    facts[analysis][node.id] = fact
    return stages[:-1] + [replace(stage, facts=facts)]


def _check(session: Session, stages) -> None:
    check_facts(stages, {n: g.value for n, g in session._globals.items()}, session._types,
                session._instantiations)


def test_the_unchanged_facts_pass():
    session = checking_session()
    _check(session, _stages(session, TEXT))


def test_a_wrong_nest_is_caught_naming_the_node_and_rule():
    session = checking_session()
    stages = _stages(session, TEXT)
    mapped = _node(stages[-1], ast.Apply, TEXT)
    wrong = _with_fact(stages, "regularity", mapped, Regularity("R>R>S", True, None))
    with pytest.raises(InternalError) as caught:
        _check(session, wrong)
    message = caught.value.message
    assert caught.value.stage == "regularity"
    assert "`map (\\n -> iota n) [1, 3]`" in message and "GENERATE-3" in message
    assert "lengths 1, 3" in message and "[[0], [0, 1, 2]]" in message
    assert caught.value.span == mapped.span


def test_a_wrong_independence_is_caught():
    session = checking_session()
    stages = _stages(session, TEXT)
    iota = _node(stages[-1], ast.Apply, "iota n")
    wrong = _with_fact(stages, "regularity", iota, Regularity("R>S", True, None))
    with pytest.raises(InternalError) as caught:
        _check(session, wrong)
    message = caught.value.message
    assert "`iota n`" in message and "same shape" in message
    assert "map point [1]" in message and "map point [0]" in message


def test_a_wrong_scalar_independence_is_caught():
    session = checking_session()
    stages = _stages(session, TEXT)
    n = _node(stages[-1], ast.Var, "n")
    wrong = _with_fact(stages, "regularity", n, Regularity("S", True, None))
    with pytest.raises(InternalError, match="same value"):
        _check(session, wrong)


def test_a_wrong_shape_descriptor_is_caught():
    session = checking_session()
    stages = _stages(session, TEXT)
    iota = _node(stages[-1], ast.Apply, "iota n")
    wrong = _with_fact(stages, "shape", iota, Const((1,)))
    with pytest.raises(InternalError) as caught:
        _check(session, wrong)
    assert "`const [1]`" in caught.value.message
    assert "length 1, the value has length 3" in caught.value.message


def test_a_wrong_rule_is_caught_through_the_session(monkeypatch):
    """GENERATE-3 made to claim regular rows: the checking session refuses the cell."""
    monkeypatch.setattr(regularity_pass, "ir", lambda nest: nest)
    session = Session(target="interp", check_facts=True)
    with pytest.raises(InternalError, match="GENERATE-3"):
        session.execute(TEXT)
    assert Session(target="interp").execute(TEXT).text == "[[0], [0, 1, 2]]"


def test_the_command_line_checks_facts(capsys):
    from accel_kernel.cli import main
    path = Path(__file__).parent / "programs" / "loop_tuple_while_size.accel"
    assert main(["run", str(path), "--target", "interp", "--check-facts"]) == 0
    assert capsys.readouterr().out.strip() == "[[0], [0, 1, 2], [0, 1]]"


def test_the_command_line_reports_a_wrong_fact(capsys, monkeypatch, tmp_path):
    from accel_kernel.cli import main
    monkeypatch.setattr(regularity_pass, "ir", lambda nest: nest)
    path = tmp_path / "ragged.accel"
    path.write_text(TEXT + "\n")
    assert main(["run", str(path), "--target", "interp", "--check-facts"]) != 0
    err = capsys.readouterr().err
    assert "InternalError" in err and "regularity" in err and "GENERATE-3" in err
