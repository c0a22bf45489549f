"""Deeply nested programs (issue 18): long operator chains nest to the left, one level a term.
Every target computes them (the stages run on `runtime.deep`'s large stack); beyond
`MAX_NESTING` levels a program is a SyntaxError before it runs, never a RecursionError."""
import subprocess
import sys

import pytest

from accel_kernel import AccelError, Session
from accel_kernel.lang.parser import MAX_NESTING
from accel_kernel.runtime.deep import run_deep

TARGETS = ["interp", "numpy", "cpu"]


def chain(n: int, term: str = "1") -> str:
    return " + ".join([term] * n)


@pytest.mark.parametrize("target", TARGETS)
def test_a_sum_of_2000_terms_on_every_target(target):
    assert Session(target=target).execute(chain(2000)).text == "2000"


@pytest.mark.parametrize("target", TARGETS)
def test_a_sum_inside_a_map_and_deep_lets_on_every_target(target):
    session = Session(target=target)
    assert session.execute(f"map (\\x -> {chain(1000, 'x')}) [1, 2]").text == "[1000, 2000]"
    lets = "".join(f"let x{i} = {i} in " for i in range(300)) + "x0 + x299"
    assert session.execute(lets).text == "299"


def test_the_deepest_program_allowed_runs():
    assert Session(target="interp").execute(chain(MAX_NESTING)).text == str(MAX_NESTING)
    parens = "(" * MAX_NESTING + "7" + ")" * MAX_NESTING
    assert Session(target="numpy").execute(parens).text == "7"


@pytest.mark.parametrize("target", TARGETS)
def test_one_level_more_is_a_syntax_error_at_the_first_node_beyond(target):
    with pytest.raises(AccelError) as info:
        Session(target=target).execute("let y = 2\n" + chain(MAX_NESTING + 1))
    assert info.value.kind == "SyntaxError"
    assert "nested too deeply" in info.value.message
    assert info.value.location() == "cell:2:1"


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 50_000])
def test_negations_nested_beyond_the_limit_are_a_syntax_error(depth):
    with pytest.raises(AccelError) as info:
        Session(target="interp").execute("-(" * depth + "1" + ")" * depth)
    assert info.value.kind == "SyntaxError"


def test_the_cli_runs_a_deep_program(tmp_path):
    path = tmp_path / "deep.accel"
    path.write_text(chain(3000) + "\n")
    out = subprocess.run([sys.executable, "-m", "accel_kernel", "run", "--target", "numpy",
                          str(path)], capture_output=True, text=True, timeout=300)
    assert (out.returncode, out.stdout.strip()) == (0, "3000")


def test_run_deep_gives_back_results_and_exceptions():
    assert run_deep(lambda a, b: a * b, 6, 7) == 42
    with pytest.raises(KeyError):
        run_deep({}.__getitem__, "missing")
    depth = lambda n: 0 if n == 0 else 1 + depth(n - 1)   # noqa: E731
    assert run_deep(depth, 20000) == 20000       # beyond the default recursion limit
