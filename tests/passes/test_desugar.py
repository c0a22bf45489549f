"""The `desugar` stage: comprehensions, ranges, sections, `cond` and inlining to core IR.

Every example program is desugared, checked to be core (`verify_core`), printed, and run again
from the printed text: it must give the value (or the error kind) of the original. The
desugared AST is also run directly, where it keeps the original spans: its errors must be
reported at the original position. Unit tests check the printed output of each rule, and a
hypothesis test compares random comprehensions with the interpreter.
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

def test_simple_comprehension_is_a_map():
    assert printed("let xs = [1, 2]\n[x * x | x <- xs]").endswith("map (\\x -> x * x) xs")


def test_guard_is_a_filter_and_an_identity_body_is_left_out():
    assert printed("let xs = [1, 2]\n[x | x <- xs, x > 1]").endswith("filter (\\x -> x > 1) xs")


def test_let_qualifier_is_a_map_to_pairs():
    out = printed("let xs = [1, 2]\n[y | x <- xs, let y = x * 2]")
    assert out.endswith("map (\\(x, y) -> y) (map (\\x -> (x, x * 2)) xs)")


def test_dependent_generator_uses_expand():
    text = ("[(x,y,z) | x <- [1..<30], y <- [x..<30], z <- [y..<(x+y)], z < 30, "
            "x*x + y*y == z*z]")
    stage = desugar(text)
    out = print_program(stage.program)
    assert out.count("expand") == 2
    assert "expand (\\x -> max 0 (30 - x)) (\\x i_2 -> (x, x + i_2))" in out
    assert rules(stage) == ["range", "first-generator", "expand", "expand", "guard", "guard",
                            "body", "comprehension"]
    assert outcome(out) == outcome(text)


def test_invariant_generator_is_a_regular_map_nest():
    stage = desugar("let ys = [4, 5]\n[(x, y) | x <- [1..3], y <- ys]")
    out = print_program(stage.program)
    assert "expand" not in out
    assert "flatten (map (\\x -> map (\\v_1 -> (x, v_1)) ys) " in out
    assert "regular-nest" in rules(stage)


def test_size_invariant_but_array_dependent_is_a_regular_nest():
    # Size (map f (iota 3)) = 3 does not depend on x, though the elements do (their §4.1).
    stage = desugar("[(x, y) | x <- [1..3], y <- map (\\k -> k * x) (iota 3)]")
    assert "regular-nest" in rules(stage)
    assert "expand" not in print_program(stage.program)


def test_map_over_a_dependent_iota_fetches_through_the_function():
    out = printed("[y | x <- [1..3], y <- map (\\k -> k * x) (iota x)]")
    assert "expand (\\x -> x) (\\x i_2 -> (x, let k = i_2 in k * x))" in out


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


def test_row_of_an_earlier_generator_falls_back():
    stage = desugar("[x | row <- [[1, 2], [], [3]], x <- row]")
    assert print_program(stage.program).strip() == (
        "map (\\(row, x) -> x) "
        "(flatten (map (\\row -> map (\\v_1 -> (row, v_1)) row) [[1, 2], [], [3]]))")
    assert "`row` is an array bound by the comprehension" in stage.steps[-3].note


def test_zipped_branches_are_zipped():
    out = printed("let xs = [1, 2]\nlet ys = [3, 4]\n[a + b | a <- xs | b <- ys]")
    assert out.endswith("map (\\(a, b) -> a + b) (zip xs ys)")
    assert outcome("[a | a <- [1, 2] | b <- [1]]") == ("error", "SizeError")
    assert outcome(printed("[a | a <- [1, 2] | b <- [1]]")) == ("error", "SizeError")


def test_zipped_branches_binding_one_name_keep_the_later():
    text = "[x | x <- [1, 2] | x <- [3, 4]]"
    assert printed(text) == "map (\\(x_1, x) -> x) (zip [1, 2] [3, 4])"
    assert outcome(printed(text)) == outcome(text) == ("value", "[3, 4]")


def test_tuple_patterns_and_wildcards():
    text = "[a + b | (a, _) <- [(1, 2), (3, 4)], _ <- [0..<a], let b = 10]"
    out = printed(text)
    assert "(a, w_1)" in out
    assert outcome(out) == outcome(text) == ("value", "[11, 13, 13, 13]")


def test_a_name_bound_twice_is_renamed_at_the_first_binder():
    text = "[(x, y) | x <- [1..3], x <- [x..4], let y = x * 2]"
    out = printed(text)
    assert "expand (\\x_1 -> max 0 (4 - x_1 + 1)) (\\x_1 i_2 -> (x_1, x_1 + i_2))" in out
    assert outcome(out) == outcome(text)


def test_function_valued_let_is_bound_in_each_lambda():
    text = "[f 3 | x <- [1..3], let f = \\y -> x * y, z <- [0..<f 1]]"
    stage = desugar(text)
    assert "let-function" in rules(stage)
    assert outcome(print_program(stage.program)) == outcome(text) == \
        ("value", "[3, 6, 6, 9, 9, 9]")


def test_comprehension_starting_with_a_guard():
    assert printed("[5 | true]") == "map (\\u_1 -> 5) (filter (\\u_1 -> true) [0])"


def test_comprehension_error_keeps_kind_and_position():
    text = "[x | x <- [1..3], y <- iota (x - 2)]"
    session = Session(target="interp")
    stage = desugar(text, session)
    expected = error_location(lambda: Session(target="interp").execute(text, "t"))
    assert expected == ("SizeError", 1, 24)
    assert error_location(lambda: run_stage(session, stage)) == expected


# ---------------------------------------------------------------- ranges, sections, cond

@pytest.mark.parametrize("text, expected", [
    ("[0..<n]", "iota (max 0 n)"),
    ("[1..n]", "map (\\i_1 -> 1 + i_1) (iota (max 0 n))"),
    ("[0..<10 by 3]", "map (\\i_1 -> i_1 * 3) (iota 4)"),
    ("[10..<0 by -3]", "map (\\i_1 -> 10 + i_1 * -3) (iota 4)"),
    ("[n..1 by -2]", "map (\\i_1 -> n + i_1 * -2) (iota (max 0 ((n + 1) / 2)))"),
    ("[n * 2..<20]", "let lo_1 = n * 2 in map (\\i_1 -> lo_1 + i_1) (iota (max 0 (20 - lo_1)))"),
])
def test_ranges_become_iota_and_map(text, expected):
    assert printed(f"let n = 5\n{text}").splitlines()[-1] == expected
    assert outcome(printed(f"let n = 5\n{text}")) == outcome(f"let n = 5\n{text}")


def test_range_with_a_computed_step_is_kept():
    stage = desugar("let s = 0\n[0..<5 by s]")
    assert print_program(stage.program).splitlines()[-1] == "[0..<5 by s]"
    assert rules(stage) == ["range-kept"]
    assert "range step is 0" in stage.steps[0].note


def test_empty_and_inclusive_ranges_agree_with_the_interpreter():
    text = "let a = 5\n([a..<2], [a..a], [2..a by 2], [a..<a], [a..0 by -2], [0..a by 7])"
    assert outcome(printed(text)) == outcome(text)


def test_sections_become_lambdas():
    out = printed("let xs = [1, 2]\nlet n = 3\n(map (+1) xs, map (2*) xs, map (+ (n * 2)) xs)")
    assert out.splitlines()[-1] == (
        "(map (\\x_1 -> x_1 + 1) xs, map (\\y_1 -> 2 * y_1) xs, "
        "map (let r_1 = n * 2 in \\x_2 -> x_2 + r_1) xs)")


def test_section_operand_is_evaluated_once_even_when_unused():
    text = "map (/ (1 / 0)) ([] : []i64)"
    assert outcome(text) == outcome(printed(text)) == ("error", "DivisionByZero")


def test_cond_becomes_if_but_not_when_redefined_or_partial():
    assert printed("let c = true\ncond c 1 2").splitlines()[-1] == "if c then 1 else 2"
    assert printed("map (cond true 1) [2]") == "map (cond true 1) [2]"
    stage = desugar("def cond a b c = a + b + c\ncond 1 2 3")
    assert "cond" not in rules(stage)


# ---------------------------------------------------------------- inlining

def test_prelude_sum_is_inlined():
    stage = desugar("let xs = [1, 2]\nsum xs")
    assert print_program(stage.program).splitlines()[-1] == "reduce (+) zero xs"
    assert rules(stage) == ["inline"]


def test_prelude_with_a_lambda_argument():
    text = "count (\\x -> x > 2) [1, 2, 3, 4]"
    assert printed(text) == ("let p_1 = \\x -> x > 2 in let xs_1 = [1, 2, 3, 4] in "
                             "reduce (+) 0 (map (\\x -> if p_1 x then 1 else 0) xs_1)")
    assert outcome(printed(text)) == ("value", "2")


def test_user_def_called_at_two_types_gets_fresh_ids():
    stage = desugar("def sq x = x * x\n(sq 3, sq 1.5, map sq [2])")
    out = print_program(stage.program).splitlines()
    assert out == ["def sq x = x * x", "(3 * 3, 1.5 * 1.5, map (\\x_1 -> x_1 * x_1) [2])"]
    ids = node_ids(stage.program)
    assert len(ids) == len(set(ids))
    assert verify_core(stage.program) == []
    assert stage.types       # the pipeline type checked the output again


def test_higher_order_def_with_a_def_argument_is_first_order():
    text = "def twice f x = f (f x)\ndef sq x = x * x\ntwice sq 3"
    assert printed(text).splitlines()[-1] == "let x_1 = 3 * 3 in x_1 * x_1"


def test_partial_application_and_sized_parameters():
    text = ("def dot (xs: [n]i64) (ys: [n]i64) : i64 = reduce (+) 0 (map2 (*) xs ys)\n"
            "map (dot [1, 2]) [[1, 1], [2, 2]]")
    assert printed(text).splitlines()[-1] == (
        "map (let arg_1 = [1, 2] in \\arg_2 -> let xs_1: [n]i64 = arg_1 in "
        "let ys_1: [n]i64 = arg_2 in (reduce (+) 0 (map2 (*) xs_1 ys_1) : i64)) [[1, 1], [2, 2]]")
    assert outcome(printed(text)) == ("value", "[3, 6]")


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


def test_local_binder_shadowing_a_needed_global_is_renamed():
    text = "def h n = [i | i <- [0..<n], j <- [i..<n]]\n(\\map -> h map ++ [0]) 3"
    stage = desugar(text)
    assert "rename" in rules(stage)
    assert print_program(stage.program).splitlines()[-1].startswith("(\\map_1 -> map (")
    assert outcome(print_program(stage.program)) == outcome(text)


def test_global_shadowed_at_the_call_site_is_not_captured():
    text = "def g x = x + reduce (+) 0 (iota 3)\nlet reduce = 5 in (\\iota -> g iota) reduce"
    assert outcome(printed(text)) == outcome(text) == ("value", "8")


def test_redefined_library_function_keeps_the_form():
    stage = desugar("def iota n = [n]\n(iota 3, [x | x <- [1..3]])")
    assert rules(stage) == ["not-desugared"]
    assert "`iota` is redefined" in stage.steps[0].note
    assert print_program(stage.program).splitlines()[-1] == "(iota 3, [x | x <- [1..3]])"


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
