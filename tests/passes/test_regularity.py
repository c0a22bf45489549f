"""The `regularity` stage: the triple ⟨n, i, k⟩, its rules, and the paper's examples."""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_kernel.compiler import run_pipeline
from accel_kernel.lang import ast
from accel_kernel.lang.errors import AccelError
from accel_kernel.lang.parser import parse_program
from accel_kernel.lang.source import Source
from accel_kernel.lang.typecheck import check_program
from accel_kernel.passes.regularity import (REGULARITY, Regularity, ir, meet, meet_nests,
                                            nest_of, parse_nest)
from accel_kernel.passes.shape import SHAPE, Var
from accel_kernel.passes.shape_rules import equivalent
from accel_kernel.session import Session

from .helpers import binding
from .helpers import stages_of as _stages_of

PROGRAMS = sorted((Path(__file__).parent.parent / "programs").glob("*.accel"))


def stages_of(text: str, session: Session | None = None):
    return _stages_of(text, [SHAPE, REGULARITY], session)


def facts_of(text: str, *names: str):
    """The (shape, regularity) facts of the named bindings, and the regularity log."""
    stage = stages_of(text)[-1]
    found = [(stage.facts["shape"][binding(stage, n).id],
              stage.facts["regularity"][binding(stage, n).id]) for n in names]
    return found, stage.steps


def reg(text: str, name: str) -> Regularity:
    return facts_of(text, name)[0][0][1]


# ---------------------------------------------------------------- the acceptance items

def test_acceptance_nested_generate_is_regular_and_independent():
    text = """
def f (xss: [n][m]i64) =
  let yss = generate (length xss) (\\i -> generate (length xss[i]) (\\j -> xss[i][j] + 1))
  in yss
"""
    [(shape, r)], _ = facts_of(text, "yss")
    assert equivalent(shape, Var("xss"))
    assert r.nest == "R>R>S" and r.independent and r.level is None
    assert str(r) == "⟨R>R>S, independent, ∞⟩"


SECTION_4_3 = """
def f (xss: [n][m]i64) =
  let yss = generate (length xss) (\\sh ->
    let c = xss[sh][0] > 10
    let t = generate (length xss[sh]) (\\j -> xss[sh][j] + 1)
    let e = generate (length xss[sh]) (\\j -> xss[sh][j] * 2)
    in BRANCH)
  in yss
"""


def triples(text: str) -> list[tuple[str, str]]:
    """(name, printed triple) of every binding of the program (defs, parameters, lets, lambda
    parameters), in order."""
    stage = stages_of(text)[-1]
    regs = stage.facts["regularity"]
    return [(node.name, str(regs[node.id])) for form in stage.program.forms
            for node in ast.walk(form) if isinstance(node, (ast.Def, ast.PVar))]



def test_acceptance_section_4_2_every_binding():
    text = """
def f (xss: [n][m]i64) =
  let yss = generate (length xss) (\\i -> generate (length xss[i]) (\\j -> xss[i][j] + 1))
  in yss
"""
    assert triples(text) == [
        ("f", "⟨R>R>S, independent, ∞⟩"), ("xss", "⟨R>R>S, independent, ∞⟩"),
        ("yss", "⟨R>R>S, independent, ∞⟩"), ("i", "⟨S, dependent, 0⟩"),
        ("j", "⟨S, dependent, 1⟩")]


@pytest.mark.parametrize("branch", ["cond c t e", "if c then t else e"])
def test_acceptance_section_4_3(branch):
    text = SECTION_4_3.replace("BRANCH", branch)
    stage = stages_of(text)[-1]
    regs, shapes = stage.facts["regularity"], stage.facts["shape"]
    for name in ("t", "e"):
        r = regs[binding(stage, name).id]
        assert (r.nest, r.independent, r.level) == ("R>S", False, 0), name
        assert str(shapes[binding(stage, name).id]) == "xss[sh]"
    cond_node = next(n for n in ast.walk(binding(stage, "f"))
                     if isinstance(n, ast.If) or (isinstance(n, ast.Apply)
                                                  and getattr(n.fn, "name", "") == "cond"))
    r = regs[cond_node.id]
    assert (r.nest, r.independent, r.level) == ("R>S", False, 0)
    yss = regs[binding(stage, "yss").id]
    assert (yss.nest, yss.independent, yss.level) == ("R>R>S", True, None)
    assert equivalent(shapes[binding(stage, "yss").id], Var("xss"))
    # the paper: `c` reads the row of the point, so it is dependent (⊥) at level 0
    assert triples(text) == [
        ("f", "⟨R>R>S, independent, ∞⟩"), ("xss", "⟨R>R>S, independent, ∞⟩"),
        ("yss", "⟨R>R>S, independent, ∞⟩"), ("sh", "⟨S, dependent, 0⟩"),
        ("c", "⟨S, dependent, 0⟩"), ("t", "⟨R>S, dependent, 0⟩"), ("j", "⟨S, dependent, 1⟩"),
        ("e", "⟨R>S, dependent, 0⟩"), ("j", "⟨S, dependent, 1⟩")]


# ---------------------------------------------------------------- one program per COND/WHILE rule

def rules_of(text: str) -> list[str]:
    return [s.rule for s in stages_of(text)[-1].steps]


def test_cond_with_equal_branches_has_their_triple():
    text = """
def f (xss: [n][m]i64) =
  let r = map (\\row -> let c = row[0] > 0 in if c then map (\\x -> x + 1) row else map (\\x -> x * 2) row) xss
  in r
"""
    assert triples(text) == [
        ("f", "⟨R>R>S, independent, ∞⟩"), ("xss", "⟨R>R>S, independent, ∞⟩"),
        ("r", "⟨R>R>S, independent, ∞⟩"), ("row", "⟨R>S, dependent, 0⟩"),
        ("c", "⟨S, dependent, 0⟩"), ("x", "⟨S, dependent, 0⟩"), ("x", "⟨S, dependent, 0⟩")]
    assert "COND" in rules_of(text)


def test_cond_with_different_branches_and_a_dependent_condition_is_irregular():
    text = """
def f (xss: [n][m]i64) (ys: []i64) =
  let r = map (\\row -> let c = row[0] > 0 in if c then row else ys) xss
  in r
"""
    assert triples(text) == [
        ("f", "⟨R>Ir>S, independent, ∞⟩"), ("xss", "⟨R>R>S, independent, ∞⟩"),
        ("ys", "⟨R>S, independent, ∞⟩"), ("r", "⟨R>Ir>S, independent, ∞⟩"),
        ("row", "⟨R>S, dependent, 0⟩"), ("c", "⟨S, dependent, 0⟩")]
    assert "COND" in rules_of(text) and "GENERATE-3" in rules_of(text)


def test_cond_with_different_branches_and_an_independent_condition_stays_regular():
    text = """
def f (xss: [n][m]i64) (ys: []i64) (k: i64) =
  let r = map (\\row -> let c = k > 0 in if c then row else ys) xss
  in r
"""
    assert triples(text) == [
        ("f", "⟨R>R>S, independent, ∞⟩"), ("xss", "⟨R>R>S, independent, ∞⟩"),
        ("ys", "⟨R>S, independent, ∞⟩"), ("k", "⟨S, independent, ∞⟩"),
        ("r", "⟨R>R>S, independent, ∞⟩"), ("row", "⟨R>S, dependent, 0⟩"),
        ("c", "⟨S, independent, ∞⟩")]


def test_while_reg_every_binding():
    text = """
def f (xss: [n][m]i64) =
  let yss = map (\\row -> while (\\r -> r[0] < 100) (\\r -> map (\\x -> x * 2) r) row) xss
  in yss
"""
    assert triples(text) == [
        ("f", "⟨R>R>S, independent, ∞⟩"), ("xss", "⟨R>R>S, independent, ∞⟩"),
        ("yss", "⟨R>R>S, independent, ∞⟩"), ("row", "⟨R>S, dependent, 0⟩"),
        ("r", "⟨R>S, dependent, 0⟩"), ("r", "⟨R>S, dependent, 0⟩"), ("x", "⟨S, dependent, 0⟩")]
    assert "WHILE-REG" in rules_of(text)


def test_while_indep_every_binding():
    """The condition reads only the state's length and every row starts with length m: all
    points iterate alike, the state has one shape at every point (`r` independent)."""
    text = """
def f (xss: [n][m]i64) =
  let yss = map (\\row -> while (\\r -> length r < 16) (\\r -> r ++ r) row) xss
  in yss
"""
    assert triples(text) == [
        ("f", "⟨R>R>S, independent, ∞⟩"), ("xss", "⟨R>R>S, independent, ∞⟩"),
        ("yss", "⟨R>R>S, independent, ∞⟩"), ("row", "⟨R>S, dependent, 0⟩"),
        ("r", "⟨R>S, independent, ∞⟩"), ("r", "⟨R>S, independent, ∞⟩")]
    rules = rules_of(text)
    assert "WHILE-INDEP" in rules and "WHILE-IRR" not in rules


def test_while_irr_every_binding():
    text = """
def f (xss: [n][m]i64) =
  let yss = map (\\row -> while (\\r -> r[0] < 100) (\\r -> r ++ r) row) xss
  in yss
"""
    assert triples(text) == [
        ("f", "⟨R>Ir>S, independent, ∞⟩"), ("xss", "⟨R>R>S, independent, ∞⟩"),
        ("yss", "⟨R>Ir>S, independent, ∞⟩"), ("row", "⟨R>S, dependent, 0⟩"),
        ("r", "⟨R>S, dependent, 0⟩"), ("r", "⟨R>S, dependent, 0⟩")]
    assert "WHILE-IRR" in rules_of(text)


def test_while_with_an_irregular_initial_state_is_not_indep():
    """Rows of different lengths: the same condition on lengths iterates differently."""
    text = """
def f (xss: [][]i64) =
  let yss = map (\\row -> while (\\r -> length r < 16) (\\r -> r ++ r) row) xss
  in yss
"""
    assert dict(triples(text))["yss"] == "⟨R>Ir>S, independent, ∞⟩"
    assert "WHILE-IRR" in rules_of(text)


def test_tuple_state_loop_result_depends_on_the_point():
    """Issue 18's wrong answer: the state after a loop with tuple state is not its initial
    value, and depends on what the loop depends on."""
    text = """
def f (xs: []i64) =
  let r = map (\\n -> let (m, c) = loop (m, c) = (n, 1) while m >= 10 do (m / 10, c + 1) in iota c) xs
  in r
"""
    found = dict(triples(text))
    assert found["c"] == "⟨S, dependent, 0⟩" and found["r"] == "⟨R>Ir>S, independent, ∞⟩"


def test_acceptance_while_that_keeps_the_shape_stays_regular():
    text = """
def f (xss: [n][m]i64) =
  let yss = map (\\row -> while (\\r -> r[0] < 100) (\\r -> map (\\x -> x * 2) r) row) xss
  in yss
"""
    [(shape, r)], steps = facts_of(text, "yss")
    assert str(shape) == "xss"
    assert (r.nest, r.independent) == ("R>R>S", True)
    assert "WHILE-REG" in [s.rule for s in steps]


def test_acceptance_while_that_doubles_the_array_is_irregular():
    text = """
def f (xss: [n][m]i64) =
  let yss = map (\\row -> while (\\r -> r[0] < 100) (\\r -> r ++ r) row) xss
  in yss
"""
    [(shape, r)], steps = facts_of(text, "yss")
    assert r.nest == "R>Ir>S" and r.independent
    rules = [s.rule for s in steps]
    assert "WHILE-IRR" in rules and "GENERATE-3" in rules


def test_acceptance_map_of_iota_is_irregular():
    text = "def g (xs: []i64) = let zs = map (\\n -> iota n) xs in zs"
    [(shape, r)], steps = facts_of(text, "zs")
    assert r.nest == "R>Ir>S"
    assert "GENERATE-3" in [s.rule for s in steps]


def test_while_loop_form_and_bubble_sort_rows():
    text = """
def f (xss: [n][m]i64) =
  let sorted = map (\\xs ->
    loop ys = xs for i < length xs do
      loop zs = ys for j < length xs - 1 do
        if zs[j] > zs[j + 1] then scatter zs [j, j + 1] [zs[j + 1], zs[j]] else zs) xss
  let halved = map (\\row -> loop r = row while length r > 1 do r[0:length r / 2]) xss
  in (sorted, halved)
"""
    [(s1, r1), (s2, r2)], steps = facts_of(text, "sorted", "halved")
    assert str(s1) == "xss" and r1.nest == "R>R>S"
    # the condition reads only the length of rows that all have length m: every row halves
    # alike (WHILE-INDEP), so the result stays regular
    assert r2.nest == "R>R>S" and "WHILE-INDEP" in [s.rule for s in steps]


# ---------------------------------------------------------------- VAR

def test_var_declared_sizes_are_regular_unknown_ones_are_not():
    text = "def f (a: [n][m]i64) (b: [][]i64) (c: []i64) (d: [n][]i64) (e: [][m]f64) dd = (a, b, c, d, e, dd[0] + 1)"
    stage = stages_of(text)[-1]
    regs = stage.facts["regularity"]
    nest = lambda name: regs[binding(stage, name).id].nest
    assert nest("a") == "R>R>S"
    assert nest("b") == "R>Ir>S"
    assert nest("c") == "R>S"
    assert nest("d") == "R>Ir>S"
    assert nest("e") == "R>R>S"
    assert nest("dd") == "R>S"
    assert all(regs[binding(stage, n).id].independent for n in "abcde")


def test_index_and_tuples():
    text = """
def f (xss: [][]i64) (ps: [](i64, []f64)) =
  let row = xss[0]
  let q = ps[1]
  let both = (xss, 1)
  in (row, q, both)
"""
    stage = stages_of(text)[-1]
    regs = stage.facts["regularity"]
    assert regs[binding(stage, "row").id].nest == "R>S"
    assert regs[binding(stage, "ps").id].nest == "(R>S, R>Ir>S)"
    assert regs[binding(stage, "q").id].nest == "(S, R>S)"
    assert regs[binding(stage, "both").id].nest == "(R>Ir>S, S)"


# ---------------------------------------------------------------- GENERATE-1/2/3

def test_generate_rules():
    text = """
def f (xss: [n][m]i64) (yss: [][]i64) (k: i64) =
  let one = generate 4 (\\i -> iota k)
  let two = generate (length xss - 1) (\\i -> xss[i + 1])
  let two_irr = generate (length yss - 1) (\\i -> yss[i + 1])
  let three = generate 4 (\\i -> iota i)
  in (one, two, two_irr, three)
"""
    found, steps = facts_of(text, "one", "two", "two_irr", "three")
    nests = [r.nest for _, r in found]
    assert nests == ["R>R>S", "R>R>S", "R>Ir>S", "R>Ir>S"]
    rules = {s.before: s.rule for s in steps if s.rule.startswith("GENERATE")}
    assert rules["generate 4 (\\i -> generate k (\\j -> scalar))"] == "GENERATE-1"
    assert rules["generate (length xss - 1) (\\i -> xss[i + 1])"] == "GENERATE-2"
    assert rules["generate 4 (\\i -> generate i (\\j -> scalar))"] == "GENERATE-3"


def test_levels_of_dependence():
    text = """
def f (xsss: [][][]i64) =
  let r = map (\\xss -> map (\\xs -> let inner = map (\\x -> x + 1) xs in inner) xss) xsss
  in r
"""
    [(_, r), (_, inner)], _ = facts_of(text, "r", "inner")
    assert r.nest == "R>Ir>Ir>S" and r.independent
    assert inner.nest == "R>S" and inner.level == 0 and not inner.independent


def test_cond_of_different_branches_meets_them():
    text = """
def f (xss: [n][m]i64) (ys: []i64) =
  let r = map (\\row -> if row[0] > 0 then row else ys) xss
  in r
"""
    [(_, r)], steps = facts_of(text, "r")
    assert r.nest == "R>Ir>S"            # rows of length m or length ys: irregular
    assert "COND" in [s.rule for s in steps]


# ---------------------------------------------------------------- the lattice

def test_meet_lattice():
    rr = Regularity("R>R>S", True, None)
    ri = Regularity("R>Ir>S", False, 1)
    r0 = Regularity("R>R>S", False, 0)
    assert meet(rr, rr) == rr
    assert meet(rr, ri) == Regularity("R>Ir>S", False, 1)
    assert meet(ri, r0) == Regularity("R>Ir>S", False, 0)
    assert meet(ri, rr) == meet(rr, ri)
    tuples = meet(Regularity("(R>S, R>R>S)", True, None), Regularity("(R>S, R>Ir>S)", True, None))
    assert tuples.nest == "(R>S, R>Ir>S)"
    assert str(meet_nests(parse_nest("R>R>S"), parse_nest("R>Ir>S"))) == "R>Ir>S"


def test_ir_marks_every_dimension_irregular():
    assert str(ir(parse_nest("R>R>S"))) == "Ir>Ir>S"
    assert str(ir(parse_nest("S"))) == "S"
    assert str(ir(parse_nest("(R>S, S)"))) == "(Ir>S, S)"
    assert str(nest_of(Var("xs"))) == "S"           # no type known: nothing to say


def test_str_of_the_triple():
    assert str(Regularity("R>Ir>S", False, 0)) == "⟨R>Ir>S, dependent, 0⟩"
    assert str(Regularity("S", True, None)) == "⟨S, independent, ∞⟩"


# ---------------------------------------------------------------- every example program

@pytest.fixture(scope="module")
def session():
    return Session(target="interp")


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_every_node_of_every_program_gets_both_facts(path, session):
    try:
        program = parse_program(Source(path.name, path.read_text()), session._ids)
        checked = check_program(program, session._env())
    except AccelError:
        pytest.skip("does not parse or type check")
    definitions = {n: g.form for n, g in session._globals.items() if isinstance(g.form, ast.Def)}
    stage = run_pipeline(program, checked, session._env(), definitions, session._ids,
                         [SHAPE, REGULARITY])[-1]
    shapes, regs = stage.facts["shape"], stage.facts["regularity"]
    for form in stage.program.forms:
        for node in ast.walk(form):
            if isinstance(node, ast.Node) and node.id in checked.types:
                if isinstance(node, (ast.PWild, ast.PTuple)):
                    continue
                assert node.id in shapes, (type(node).__name__, node)
                assert isinstance(regs[node.id], Regularity)
