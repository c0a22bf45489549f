"""The interpreter's work and depth counters (docs/flat.md, "Work and depth of the
interpreter"): exact counts on tiny programs, derived by hand from the definitions."""
import pytest

from accel_kernel.backends.interp import LIBRARY, Interpreter
from accel_kernel.backends.interp.costs import RULES, InterpCosts
from accel_kernel.lang.errors import DivisionByZero
from accel_kernel.lang.parser import parse_program
from accel_kernel.lang.source import Source
from accel_kernel.lang.typecheck import GlobalEnv, check_program


def interpreter_for(code: str):
    program = parse_program(Source("cell", code))
    checked = check_program(program, GlobalEnv())
    return Interpreter({}, checked.types, checked.instantiations), program.forms


def costs(code: str) -> tuple[int, int]:
    interp, forms = interpreter_for(code)
    out = interp.run_forms(forms)
    return out.costs.work, out.costs.depth


@pytest.mark.parametrize("code, work, depth", [
    # literal: 3 scalars, one step; 3 adds in parallel (1 + 1); the result: 3 scalars
    (r"map (\x -> x + 1) [1, 2, 3]", 3 + 3 + 3, 1 + (1 + 1)),
    # scalars: an operator, a comparison, `if`, an index, a scalar builtin, `!`
    ("1 + 2 * 3", 2, 2),
    ("if 1 < 2 then 3 else 4", 2, 2),
    ("[1, 2, 3][1]", 3 + 1, 1 + 1),
    ("min 1 2", 1, 1),
    ("-(1 + 2)", 2, 2),
    ("true || 1 / 0 == 0", 1, 1),                          # short-circuited: one operator
    ("(1, 2 + 3).1", 1, 1),                                # tuples and projections are free
    ("let x = 1 + 2 in x * x", 2, 2),
    # arrays built in one step: N(result), depth 1
    ("iota 5", 5, 1),
    ("replicate 3 (1, 2)", 6, 1),
    ("[1..4]", 4, 1),
    ("zip [1, 2] [3, 4]", 2 + 2 + 4, 3),
    ("[[1, 2], [3]]", 2 + 1 + 2, 3),                       # rows, then the outer's 2 rows
    ("[1, 2, 3] with [0] = 7", 3 + 3, 2),                  # a copy
    # library functions: docs/flat.md's table, N_in + N_out
    ("[1, 2] ++ [3]", 2 + 1 + (3 + 3), 3),
    ("reverse [1, 2, 3]", 3 + 6, 2),
    ("scatter [0, 0, 0] [0, 2] [5, 6]", 3 + 2 + 2 + (7 + 3), 4),
    ("sort [3, 1, 2, 0]", 4 + 4 * 2, 1 + 2 ** 2),          # N log N, (log N)^2
    ("length [1, 2, 3]", 3 + 1, 2),
    # filter: the predicate in parallel, then the kept elements
    (r"filter (\x -> x > 1) [1, 2, 3]", 3 + 3 + 2, 1 + (1 + 1)),
    # expand: per element its size, then its outputs in parallel
    (r"expand (\x -> x) (\x i -> x * i) [1, 2, 3]", 3 + 6 + 6, 1 + (1 + (1 + 1))),
    # a comprehension: each element with the qualifiers that produce it
    ("[x * y | x <- [1, 2], y <- [3, 4, 5], x != y]",
     # depth along the deepest path: [1, 2], a step, [3, 4, 5], a step, the guard, the body
     2 + 3 + 3 + 6 + 6 + 6, 1 + (1 + 1 + 1 + 1 + 1 + 1)),
    # each branch a parallel step over its generator (1 + (1 + 1)), then the bodies
    ("[x + y | x <- [1, 2] | y <- [3, 4]]", 2 + 2 + 2 + 2, 3 + 3 + (1 + 1)),
])
def test_counts_of_small_programs(code, work, depth):
    assert costs(code) == (work, depth)


def test_parallel_elements_cost_the_deepest_not_the_sum():
    # The elements run 1, 3 and 2 iterations of (bound check + add): depths 2, 6 and 4.
    work, depth = costs(r"map (\x -> loop a = x for i < x do a + 1) [1, 3, 2]")
    assert work == 3 + (2 + 6 + 4) + 3
    assert depth == 1 + (1 + 6)


def test_reduce_is_a_tree_of_operator_applications():
    # 8 elements: 8 visited, 8 operator applications; depth ceil(log2 8) = 3 times the op's.
    assert costs("reduce (+) 0 [1, 2, 3, 4, 5, 6, 7, 8]") == (8 + 8 + 8, 1 + 3 * 1)
    assert costs(r"reduce (\a b -> a * 2 + b) 0 (iota 8)") == (8 + 8 + 8 * 2, 1 + 3 * 2)
    assert costs("reduce (+) 0 (iota 5)") == (5 + 5 + 5, 1 + 3)
    assert costs("reduce (+) 0 ([] : []i64)") == (0, 1 + 1)      # at least one step
    assert costs("scan (+) 0 [1, 2, 3, 4]") == (4 + 4 + 4, 1 + 2)
    assert costs("reduce min 100 [5, 1]") == (2 + 2 + 2, 1 + 1)


def test_loops_add_the_depths_of_their_iterations():
    # each iteration: its bound check, `*` and `+`
    assert costs("loop acc = 0 for i < 4 do acc + i * 2") == (4 * 3, 4 * 3)
    # 5 tests of the condition, 4 iterations of (iteration + `*`)
    assert costs("loop x = 1 while x < 10 do x * 2") == (5 + 4 * 2, 5 + 4 * 2)
    assert costs(r"while (\x -> x < 10) (\x -> x * 2) 1") == (5 + 4 * 2, 5 + 4 * 2)


def test_nested_map_depth_adds_levels_and_does_not_grow_with_lengths():
    nested = r"map (\r -> map (\x -> x * 2) r) (replicate {rows} (iota {cols}))"
    # iota, replicate: one step each; the maps: 1 + (1 + 1)
    small = costs(nested.format(rows=2, cols=3))
    large = costs(nested.format(rows=40, cols=50))
    assert small[1] == large[1] == 2 + 1 + (1 + 1)
    # work: iota, replicate, one `*` per element, the rows, then the outer array's 40 rows
    # (the scalars were counted in the rows: nesting is not counted twice)
    assert large[0] == 50 + 2000 + 2000 + 2000 + 40


def test_a_cell_reports_its_own_costs_and_the_interpreter_keeps_the_total():
    interp, forms = interpreter_for("def f x = x + 1\nlet a = f 1\nf a * 2")
    first = interp.run_forms(forms)
    assert (first.costs.work, first.costs.depth) == (3, 3)
    assert first.results == [6]
    second = interp.run_forms(forms[2:])
    assert (second.costs.work, second.costs.depth) == (2, 2)
    assert interp.costs == InterpCosts(5, 5)


def test_counting_changes_no_value_or_error():
    interp, forms = interpreter_for(r"map (\x -> 10 / x) [5, 2, 0, 1]")
    with pytest.raises(DivisionByZero):
        interp.run_forms(forms)
    assert costs(r"scan (\a b -> a * 10 + b) 0 [1, 2, 3]") == (3 + 3 + 6, 1 + 2 * 2)
    interp, forms = interpreter_for(r"scan (\a b -> a * 10 + b) 0 [1, 2, 3]")
    assert interp.run_forms(forms).results == [[1, 12, 123]]


def test_every_builtin_has_a_cost_rule():
    assert set(RULES) == set(LIBRARY)
