"""The `desugar` stage: comprehensions, ranges, sections, `cond` and inlining to core IR.

Every example program is desugared, checked to be core (`verify_core`), printed, and run again
from the printed text: it must give the value (or the error kind) of the original. The
desugared AST is also run directly, where it keeps the original spans: its errors must be
reported at the original position. The printed output of each rule is checked by the text
fixtures of tests/passes/fixtures/ (test_fixtures.py); the tests here check what the printed
text does not show (spans, ids, options, earlier cells), and a hypothesis test compares random
comprehensions with the interpreter.
"""
from __future__ import annotations

from collections import ChainMap, Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accel_kernel.compiler import Stage, run_pipeline
from accel_kernel.ir.core import verify_core
from accel_kernel.lang import ast
from accel_kernel.lang.errors import AccelError
from accel_kernel.lang.parser import parse_program
from accel_kernel.lang.printer import print_program
from accel_kernel.lang.source import Source
from accel_kernel.lang.typecheck import check_program
from accel_kernel.passes.base import Options
from accel_kernel.passes.desugar import DESUGAR
from accel_kernel.session import Session

PROGRAMS = sorted((Path(__file__).resolve().parents[1] / "programs").glob("*.accel"))


# ---------------------------------------------------------------- helpers

def desugar(text: str, session: Session | None = None, name: str = "t",
            options: Options = Options()) -> Stage:
    """The `desugar` stage of a program, as the session's pipeline runs it."""
    session = session or Session(target="interp")
    program = parse_program(Source(name, text), session._ids)
    env = session._env()
    checked = check_program(program, env)
    definitions = {n: g.form for n, g in session._globals.items() if isinstance(g.form, ast.Def)}
    stages = run_pipeline(program, checked, env, definitions, session._ids, [DESUGAR],
                          options=options)
    assert [s.name for s in stages] == ["parse", "typed", "desugar"]
    return stages[-1]


def printed(text: str, **kwargs) -> str:
    return print_program(desugar(text, **kwargs).program).strip()


def outcome(text: str, name: str = "t") -> tuple:
    """("value", text) or ("error", kind) of running `text` in a fresh session."""
    try:
        return ("value", Session(target="interp").execute(text, name).text)
    except AccelError as err:
        return ("error", err.kind)


def error_location(run) -> tuple | None:
    try:
        run()
    except AccelError as err:
        return (err.kind, err.span.line if err.span else None,
                err.span.col if err.span else None)
    return None


def run_stage(session: Session, stage: Stage):
    """Run the desugared AST itself, with the types the pipeline gave it (spans preserved)."""
    interp = session._interpreter(ChainMap(dict(stage.types), session._types),
                                  ChainMap(dict(stage.instantiations), session._instantiations))
    return interp.run_forms(stage.program.forms)


def node_ids(program: ast.Program) -> list[int]:
    return [n.id for form in program.forms for n in ast.walk(form)]


def rules(stage: Stage) -> list[str]:
    return [step.rule for step in stage.steps]


# ---------------------------------------------------------------- every example program

@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_example_program_gives_the_same_result_desugared(path: Path):
    text = path.read_text(encoding="utf-8")
    session = Session(target="interp")
    try:
        stage = desugar(text, session, name=path.name)
    except AccelError as err:
        pytest.skip(f"{err.kind}: the program never reaches desugar")
    assert verify_core(stage.program) == []
    assert Counter(node_ids(stage.program)).most_common(1)[0][1] == 1
    out = print_program(stage.program)
    assert parse_program(Source("again", out)) == stage.program
    original = outcome(text, path.name)
    assert outcome(out, "desugared") == original, out
    if original[0] == "error":
        # Run directly, the desugared AST keeps the source spans: same kind, same place.
        expected = error_location(lambda: Session(target="interp").execute(text, path.name))
        assert error_location(lambda: run_stage(session, stage)) == expected, out


# ---------------------------------------------------------------- comprehensions

def test_filter_source_falls_back_with_its_reason_logged():
    stage = desugar("let xs = [1, 2, 3]\n[y | x <- xs, y <- filter (> x) xs]")
    out = print_program(stage.program)
    assert "expand" not in out
    assert "flatten (map (\\x -> map (\\v_1 -> (x, v_1)) (filter (\\x_1 -> x_1 > x) xs)) xs)" \
        in out
    [step] = [s for s in stage.steps if s.rule == "nested-fallback"]
    assert step.before == "y <- filter (> x) xs"
    assert step.note.startswith("Size of `filter (> x) xs` is undefined: the length of a "
                                "`filter` result is known only once it has run")
    assert outcome(out) == ("value", "[2, 3, 3]")


def test_a_run_of_guards_is_one_filter():
    """`guards`: the second condition joins the first with `&&`, so it is still evaluated
    only where the first holds (10 / y never divides by 0), and fusion compacts once."""
    text = "def t (xs: []i64) = [x | x <- xs, y <- [0..<x], y != 0, 10 / y > 2, x > 1]"
    stage = desugar(text)
    assert [step.rule for step in stage.steps if step.rule.startswith("guard")] == \
        ["guard", "guards", "guards"]
    out = printed(text)
    assert out.count("filter") == 1
    assert "y != 0 && 10 / y > 2 && x > 1" in out
    assert outcome(text + "\nt [3, 0, 5]") == ("value", "[3, 3, 5, 5, 5]")


def test_a_bound_guard_after_a_range_is_the_range_s_end():
    """`range-guard`: `c < n` right after `c <- [b..<(a + b)]` stops the range at
    `min (a + b) n`; the guard after it stays a guard."""
    text = ("def t (n: i64) = [(a, b, c) | a <- [1..<n], b <- [a..<n], c <- [b..<(a + b)], "
            "c < n, a * a + b * b == c * c]")
    stage = desugar(text)
    assert [step.rule for step in stage.steps if "guard" in step.rule] == \
        ["range-guard", "guard"]
    out = printed(text)
    assert "min (a + b) n" in out and "c < n" not in out
    assert outcome(text + "\nt 14") == ("value", "[(3, 4, 5), (5, 12, 13), (6, 8, 10)]")


def test_zipped_branches_are_zipped():
    out = printed("let xs = [1, 2]\nlet ys = [3, 4]\n[a + b | a <- xs | b <- ys]")
    assert out.endswith("map (\\(a, b) -> a + b) (zip xs ys)")
    assert outcome("[a | a <- [1, 2] | b <- [1]]") == ("error", "SizeError")
    assert outcome(printed("[a | a <- [1, 2] | b <- [1]]")) == ("error", "SizeError")


def test_comprehension_error_keeps_kind_and_position():
    text = "[x | x <- [1..3], y <- iota (x - 2)]"
    session = Session(target="interp")
    stage = desugar(text, session)
    expected = error_location(lambda: Session(target="interp").execute(text, "t"))
    assert expected == ("SizeError", 1, 24)
    assert error_location(lambda: run_stage(session, stage)) == expected


# ---------------------------------------------------------------- ranges, sections, cond

def test_empty_and_inclusive_ranges_agree_with_the_interpreter():
    text = "let a = 5\n([a..<2], [a..a], [2..a by 2], [a..<a], [a..0 by -2], [0..a by 7])"
    assert outcome(printed(text)) == outcome(text)


def test_section_operand_is_evaluated_once_even_when_unused():
    text = "map (/ (1 / 0)) ([] : []i64)"
    assert outcome(text) == outcome(printed(text)) == ("error", "DivisionByZero")


# ---------------------------------------------------------------- inlining

def test_user_def_called_at_two_types_gets_fresh_ids():
    stage = desugar("def sq x = x * x\n(sq 3, sq 1.5, map sq [2])")
    out = print_program(stage.program).splitlines()
    assert out == ["def sq x = x * x", "(3 * 3, 1.5 * 1.5, map (\\x_1 -> x_1 * x_1) [2])"]
    ids = node_ids(stage.program)
    assert len(ids) == len(set(ids))
    assert verify_core(stage.program) == []
    assert stage.types       # the pipeline type checked the output again


def test_sized_result_annotation_is_still_checked():
    text = "def f (xs: []i64) : [3]i64 = xs\nf [1, 2]"
    session = Session(target="interp")
    stage = desugar(text, session)
    assert error_location(lambda: run_stage(session, stage)) == ("SizeError", 1, 21)


def test_size_names_do_not_capture_caller_variables():
    text = ("def f (xs: [n]i64) : i64 = n\n"
            "let n = 7 in (f [1, 2], n)")
    assert outcome(printed(text)) == outcome(text) == ("value", "(2, 7)")


def test_inlining_stops_at_its_budget():
    # Each level calls the one below twice: full inlining would copy 2**11 bodies.
    lines = ["def f0 x = x + 1"] + [f"def f{k} x = f{k - 1} (f{k - 1} x)" for k in range(1, 12)]
    stage = desugar("\n".join(lines + ["f11 0"]))
    assert "inline-skipped" in rules(stage)
    assert verify_core(stage.program) == []
    assert outcome(print_program(stage.program)) == ("value", "2048")


def test_inlining_can_be_turned_off():
    stage = desugar("def sq x = x * x\n(sum [1], sq 2)", options=Options(inline_prelude=False))
    assert print_program(stage.program).splitlines()[-1] == "(sum [1], sq 2)"
    assert rules(stage) == []


def test_def_of_an_earlier_cell_is_inlined_late_bound():
    session = Session(target="interp")
    session.execute("def g x = x + 1\ndef h x = g x * 2", "c1")
    text = "def g x = x * 10\nh 2"
    stage = desugar(text, session)
    assert print_program(stage.program).splitlines()[-1] == "2 * 10 * 2"
    assert run_stage(session, stage).results[-1] == 40


def test_comprehension_in_a_def_of_an_earlier_cell():
    # The pass gets no types for an earlier cell's nodes: a `let` of unknown type is bound
    # again in each later lambda, which is right for any type (a function here).
    session = Session(target="interp")
    session.execute("def g n = [f 3 | x <- [1..n], let f = \\y -> x * y, let z = x + 1, "
                    "z > 2]", "c1")
    stage = desugar("g 3", session)
    assert rules(stage).count("let-function") == 2
    assert outcome(print_program(stage.program)) == ("value", "[6, 9]")


def test_global_shadowed_at_the_call_site_is_not_captured():
    text = "def g x = x + reduce (+) 0 (iota 3)\nlet reduce = 5 in (\\iota -> g iota) reduce"
    assert outcome(printed(text)) == outcome(text) == ("value", "8")


def test_nothing_to_desugar_gives_an_equal_program_and_no_steps():
    text = "let xs = [1, 2]\nmap (\\x -> x + 1) xs"
    session = Session(target="interp")
    program = parse_program(Source("t", text), session._ids)
    checked = check_program(program, session._env())
    stages = run_pipeline(program, checked, session._env(), {}, session._ids, [DESUGAR])
    assert stages[-1].program is program
    assert stages[-1].steps == () and not stages[-1].changed


# ---------------------------------------------------------------- random comprehensions

_VAR = st.sampled_from(["x", "y"])


@st.composite
def _comprehension(draw) -> str:
    """A small comprehension over small ranges and arrays: a first generator, then up to
    three qualifiers that may depend on what is bound before them; sometimes zipped."""
    bound: list[str] = []

    def atom() -> str:
        return draw(st.sampled_from(bound)) if bound and draw(st.booleans()) else \
            f"({draw(st.integers(-1, 4))})"

    def source() -> str:
        a, b = atom(), atom()
        return draw(st.sampled_from([
            f"[{a}..<{b}]", f"[{a}..{b}]", f"[{a}..<{b} by 2]", f"[{b}..{a} by -1]",
            f"iota (max 0 {a})", f"map (\\k -> k * {a}) (iota (max 0 {b}))",
            f"filter (\\k -> k != {a}) [0..<{b}]", f"[{a}, {b}]", f"map (+ {a}) [{b}..3]",
        ]))

    def qualifiers(count: int) -> list[str]:
        out = []
        for k in range(count):
            kind = "gen" if k == 0 else draw(st.sampled_from(["gen", "gen", "guard", "let"]))
            if kind == "gen":
                src = source()
                name = f"v{len(bound)}"
                out.append(f"{name} <- {src}")
                bound.append(name)
            elif kind == "guard":
                out.append(f"{atom()} {draw(st.sampled_from(['<', '!=', '>='])) } {atom()}")
            else:
                name = f"l{len(bound)}"
                out.append(f"let {name} = {atom()} * 2")
                bound.append(name)
        return out

    first = qualifiers(draw(st.integers(1, 4)))
    names = list(bound)
    if draw(st.integers(0, 3)) == 0:
        bound.clear()
        second = qualifiers(draw(st.integers(1, 2)))
        names += bound
        body = "(" + ", ".join(names[:1] + bound[:1]) + ")" if bound[:1] != names[:1] else names[0]
        return f"[{body} | {', '.join(first)} | {', '.join(second)}]"
    body = "(" + ", ".join(names) + ")" if len(names) > 1 else names[0]
    return f"[{body} | {', '.join(first)}]"


_ORIGINAL = Session(target="interp")
_DESUGARED = Session(target="interp")


def _run(session: Session, text: str) -> tuple:
    try:
        return ("value", session.execute(text, "h").text)
    except AccelError as err:
        return ("error", err.kind)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_comprehension())
def test_random_comprehensions_agree_with_the_interpreter(text):
    stage = desugar(text)
    assert verify_core(stage.program) == []
    out = print_program(stage.program)
    assert _run(_DESUGARED, out) == _run(_ORIGINAL, text), out
