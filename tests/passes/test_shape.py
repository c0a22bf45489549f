"""The `shape` stage: descriptors, S1–S4, E1–E2, equivalence, and shapes of whole programs."""
from __future__ import annotations

import pytest

from accel_kernel.lang import ast
from accel_kernel.lang.types import I64, Array
from accel_kernel.passes.regularity import REGULARITY
from accel_kernel.passes.shape import (SCALAR, SHAPE, Cond, Const, Generate, Index, IndexVar,
                                       Label, Length, Project, Read, SizeLit, SizeOp, SizeVar,
                                       TupleShape, Unknown, Var)
from accel_kernel.passes.shape_rules import equivalent, simplify, simplify_size, size_equal
from accel_kernel.passes.shape_terms import index_vars, substitute

from .helpers import binding
from .helpers import stages_of as _stages_of

MATRIX = Array(Array(I64))
VECTOR = Array(I64)
xss = Var("xss", MATRIX)
xs = Var("xs", VECTOR)
i, j = IndexVar("i", 0), IndexVar("j", 1)


# ---------------------------------------------------------------- running the stages

def stages_of(text: str, passes=(SHAPE, REGULARITY)):
    """The stages of `text`, built as the session builds them."""
    return _stages_of(text, passes)


def shape_of(text: str, name: str):
    stage = stages_of(text)[-1]
    return stage.facts["shape"][binding(stage, name).id]


# ---------------------------------------------------------------- descriptors and printing

def test_descriptors_print_like_accel():
    g = Generate(Length(xss), i, Generate(Length(Index(xss, i)), j, SCALAR))
    assert str(g) == "generate (length xss) (\\i -> generate (length xss[i]) (\\j -> scalar))"
    assert str(Const((2, 3))) == "const [2, 3]"
    assert str(Project(TupleShape((xs, xss)), 1)) == "(xs, xss).1"
    assert str(Cond(SizeOp(">", (Read(SizeVar("xs"), i), SizeLit(0))), xs, SCALAR)) == \
        "cond (xs[i] > 0) xs scalar"
    assert str(Label(3, (i,))) == "ℓ3 i" and str(Label(4)) == "ℓ4"
    assert str(SizeOp("+", (Length(xs), SizeLit(1)))) == "length xs + 1"


def test_index_vars_and_capture_avoiding_substitution():
    g = Generate(Length(xs), j, Index(Index(xss, i), j))
    assert index_vars(g) == {i}
    # substituting i := j must rename the binder j
    out = substitute(g, i, j)
    assert index_vars(out) == {j}
    assert isinstance(out, Generate) and out.var != j
    assert equivalent(out, Generate(Length(xs), IndexVar("k", 1), Index(Index(xss, j),
                                                                       IndexVar("k", 1))))


# ---------------------------------------------------------------- S1–S4

def test_s1_indexing_a_generate_substitutes():
    g = Generate(Length(xss), i, Generate(Read(SizeVar("xs"), i), j, SCALAR))
    out, steps = simplify(Index(g, SizeLit(2)))
    assert out == Generate(Read(SizeVar("xs"), SizeLit(2)), j, SCALAR)
    assert [s[0] for s in steps] == ["S1"]


def test_s2_projecting_a_tuple():
    out, steps = simplify(Project(TupleShape((xs, xss)), 1))
    assert out == xss and steps[0][0] == "S2"


def test_s3_length_of_a_generate():
    out, steps = simplify_size(Length(Generate(SizeVar("n"), i, Index(xss, i))))
    assert out == SizeVar("n") and steps[0][0] == "S3"


def test_s4_const_length_and_index():
    out, steps = simplify_size(Length(Const((4, 2))))
    assert out == SizeLit(4) and steps[0][0] == "S4"
    out, steps = simplify(Index(Const((4, 2)), i))
    assert out == Const((2,)) and steps[0][0] == "S4"
    assert simplify(Index(Const((4,)), i))[0] == SCALAR


def test_const_shape_from_literal_sizes():
    out, steps = simplify(Generate(SizeLit(3), i, Generate(SizeLit(2), j, SCALAR)))
    assert out == Const((3, 2))
    assert {s[0] for s in steps} == {"CONST-SHAPE"}


# ---------------------------------------------------------------- E1, E2 and equivalence

def test_e1_generate_of_rows_is_the_array():
    out, steps = simplify(Generate(Length(xss), i, Index(xss, i)))
    assert out == xss and [s[0] for s in steps] == ["E1"]


def test_e1_needs_the_whole_length_and_the_index_itself():
    assert simplify(Generate(SizeVar("n"), i, Index(xss, i)))[0] != xss
    shifted = Generate(Length(xss), i, Index(xss, SizeOp("+", (i, SizeLit(1)))))
    assert simplify(shifted)[0] == shifted


def test_e2_generate_of_scalars_is_the_array():
    row = Index(xss, i)
    out, steps = simplify(Generate(Length(row), j, SCALAR))
    assert out == row and [s[0] for s in steps] == ["E2"]


def test_e2_needs_scalar_elements():
    g = Generate(Length(xss), i, SCALAR)   # the rows of xss are arrays: not xss's shape
    assert simplify(g)[0] == g
    assert not equivalent(g, xss)


def test_equivalence_up_to_renaming_and_both_ways():
    k = IndexVar("k", 0)
    a = Generate(Length(xss), i, Generate(Length(Index(xss, i)), j, SCALAR))
    b = Generate(Length(xss), k, Index(xss, k))
    assert equivalent(a, xss) and equivalent(b, xss) and equivalent(a, b)
    assert not equivalent(xss, xs)
    assert not equivalent(Generate(SizeOp("+", (Length(xs), Length(xs))), i, SCALAR), xs)


def test_equivalence_with_declared_sizes():
    declared = Var("xss", MATRIX, (SizeVar("n"), SizeVar("m")))
    assert size_equal(Length(declared), SizeVar("n"))
    assert size_equal(Length(Index(declared, i)), SizeVar("m"))
    assert equivalent(Generate(SizeVar("n"), i, Generate(SizeVar("m"), j, SCALAR)), declared)


def test_cond_shape_collapses_equivalent_branches():
    c = SizeOp(">", (Read(Read(SizeVar("xss"), i), SizeLit(0)), SizeLit(0)))
    row = Index(xss, i)
    out, steps = simplify(Cond(c, Generate(Length(row), j, SCALAR), row))
    assert out == row and "COND-SHAPE" in [s[0] for s in steps]
    assert simplify(Cond(c, row, xs))[0] == Cond(c, row, xs)


def test_tuples_of_arrays_split():
    pair = TupleShape((xs, xss))
    out, _ = simplify(Index(pair, i))
    assert out == TupleShape((SCALAR, Index(xss, i)))
    assert simplify_size(Length(pair))[0] == Length(xs)
    out, steps = simplify(Generate(Length(xss), i, TupleShape((Index(xss, i), Index(xss, i)))))
    assert out == TupleShape((xss, xss)) and steps[0][0] == "SPLIT"


def test_labels_are_equivalent_only_to_themselves():
    assert equivalent(Label(1, (i,)), Label(1, (i,)))
    assert not equivalent(Label(1, (i,)), Label(2, (i,)))
    assert Unknown(3, (i,)) != Unknown(3, (j,))


# ---------------------------------------------------------------- the stage on programs

ACCEPTANCE_1 = """
def f (xss: [n][m]i64) =
  let yss = generate (length xss) (\\i -> generate (length xss[i]) (\\j -> xss[i][j] + 1))
  in yss
"""


def test_acceptance_generate_of_generate_has_the_shape_of_xss():
    stage = stages_of(ACCEPTANCE_1)[-1]
    yss = stage.facts["shape"][binding(stage, "yss").id]
    assert equivalent(yss, Var("xss")) and str(yss) == "xss"
    shape_stage = stages_of(ACCEPTANCE_1)[-2]
    assert shape_stage.name == "shape"
    rules = [s.rule for s in shape_stage.steps]
    assert "E2" in rules and "E1" in rules and "GENERATE" in rules


def test_var_rule_parameter_shapes():
    stage = stages_of("def f (xss: [n][m]i64) (yss: [][]i64) (k: i64) = (xss, yss, k)")[-1]
    facts = stage.facts["shape"]
    assert facts[binding(stage, "xss").id] == Var("xss")
    assert facts[binding(stage, "xss").id].sizes == (SizeVar("n"), SizeVar("m"))
    assert facts[binding(stage, "yss").id] == Var("yss")
    assert facts[binding(stage, "k").id] == SCALAR


def test_let_inlining_sees_through_lets():
    text = """
def f (xss: [][]i64) =
  let rows = xss
  let ys = map (\\r -> let s = r in map (\\x -> x + 1) s) rows
  in ys
"""
    assert str(shape_of(text, "ys")) == "xss"


def test_map_of_iota_depends_on_the_data():
    shape = shape_of("def g (xs: []i64) = let zs = map (\\n -> iota n) xs in zs", "zs")
    assert str(shape) == "generate (length xs) (\\i -> generate xs[i] (\\j -> scalar))"


def test_literals_and_library_functions():
    text = """
def f (xs: []i64) =
  let a = [[1, 2], [3, 4], [5, 6]]
  let b = iota 5
  let c = take 2 xs
  let d = reverse xs
  let e = zip xs xs
  let g = filter (\\x -> x > 0) xs
  let h = [[1], [2, 3]]
  let k = xs ++ xs
  in (a, b, c, d, e, g, h, k)
"""
    stage = stages_of(text)[-1]
    facts = stage.facts["shape"]
    shape = lambda name: str(facts[binding(stage, name).id])
    assert shape("a") == "const [3, 2]"
    assert shape("b") == "const [5]"
    assert shape("c") == "const [2]"
    assert shape("d") == "xs"                         # a permutation of scalars: E2
    assert shape("e") == "(xs, xs)"
    assert shape("g").startswith("generate ℓ")
    assert shape("h").startswith("ℓ")                 # rows of different shapes: FALLBACK
    assert shape("k") == "generate (length xs + length xs) (\\i -> scalar)"


def test_fold_keeps_the_accumulator_shape():
    text = """
def f (xss: [n][m]i64) =
  let s = reduce (\\a b -> map2 (+) a b) (replicate m 0) xss
  let t = reduce (\\a b -> a ++ b) [] xss
  in (s, t)
"""
    stage = stages_of(text)[-1]
    facts = stage.facts["shape"]
    assert str(facts[binding(stage, "s").id]) == "generate m (\\i -> scalar)"
    assert isinstance(facts[binding(stage, "t").id], Label)


def test_loop_that_keeps_the_shape():
    text = """
def bubble (xs: []i64) : []i64 =
  let n = length xs
  loop ys = xs for i < n do
    loop zs = ys for j < n - 1 do
      if zs[j] > zs[j + 1] then scatter zs [j, j + 1] [zs[j + 1], zs[j]] else zs
"""
    assert str(shape_of(text, "bubble")) == "xs"


def test_undesugared_comprehension_is_a_label():
    shape = shape_of("def f (n: i64) = let c = [x * y | x <- iota n, y <- iota x] in c", "c")
    assert isinstance(shape, Label)


def test_every_node_of_a_tuple_type_program_has_a_fact():
    stage = stages_of("let ps = zip [1, 2] [[3], [4, 5]]\nlet (a, b) = unzip ps")[-1]
    facts = stage.facts["shape"]
    for form in stage.program.forms:
        for node in ast.walk(form):
            if isinstance(node, (ast.PVar, ast.Lit, ast.Var, ast.Apply, ast.ArrayLit)):
                assert node.id in facts
    assert str(facts[binding(stage, "a").id]) == "const [2]"


@pytest.mark.parametrize("text", [
    "def f (xs: []i64) = map (+1) xs",
    "def f (xs: []i64) = map (\\x -> [x..<x + 3]) xs",
    "def f (xss: [][]i64) = map (\\r -> r[1:]) xss",
    "def f (t: ([]i64, i64)) = t.0",
])
def test_sugar_and_odd_forms_do_not_fail(text):
    stage = stages_of(text)[-1]
    assert stage.facts["shape"]
