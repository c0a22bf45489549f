"""Differential tests: every compiled target against `interp`, which defines meaning.

`tests/test_programs.py` runs every example program on every built target; here the code
cells of the notebooks run cell by cell in one session per target, and random nested
programs (hypothesis) run on both. Values must be equal; an error must have the same kind.
Float results are compared after printing, so they must agree to the printed digits.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accel_kernel.kernel.magics import strip_magics
from accel_kernel.lang.errors import AccelError
from accel_kernel.session import Session
from accel_kernel import targets
from accel_kernel.targets import BUILT
from notebook_inputs import cells  # tests/ is on the path

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def _compiled() -> list:
    """The compiled targets; one that cannot run here (`cuda` without a GPU: its simulator
    replaces numba.cuda for a whole process, so tests/backends/test_cuda_programs.py runs the
    programs on it in a child process) is skipped, saying why."""
    out = []
    for name in sorted(BUILT - {"interp"}):
        check = targets.get(name).unavailable
        reason = check() if check is not None else None
        out.append(pytest.param(name, marks=pytest.mark.skip(reason=reason)) if reason else name)
    return out


COMPILED = _compiled()


def outcome(session: Session, code: str, name: str = "cell") -> tuple[str, str | None]:
    """("value", printed value) or ("error", kind) of one cell."""
    try:
        return "value", session.execute(code, name).text
    except AccelError as err:
        return "error", err.kind


def code_cells(path: Path) -> list[str]:
    """The accel code of each cell (large inputs made small: `notebook_inputs.SMALLER`);
    `%%python` cells are left out."""
    return [strip_magics(source) for source, _ in cells(path)
            if not source.startswith("%%python")]


@pytest.mark.parametrize("target", COMPILED)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_cells_agree_with_the_interpreter(path: Path, target: str):
    reference, compiled = Session(target="interp"), Session(target=target)
    cells = [c for c in code_cells(path) if c.strip()]
    assert cells, f"{path.name} has no accel code"
    for k, code in enumerate(cells):
        expected = outcome(reference, code, f"cell{k}")
        assert outcome(compiled, code, f"cell{k}") == expected, code


# ---------------------------------------------------------------- random nested programs

@st.composite
def nested_program(draw) -> str:
    """A well-typed expression over two globals, `xs : []i64` and `xss : [][]i64` (rows of
    any length, empty ones included), nesting maps, reductions, scans, filters, `iota`,
    indexing, `if` and `loop`. Nothing in it can fail, so both targets must give values."""
    scalar_ops = ["+", "-", "*", "min", "max"]

    def var(scope, kind):
        names = [n for n, k in scope if k == kind]
        return draw(st.sampled_from(names)) if names else None

    def scalar(scope, depth) -> str:
        choice = draw(st.integers(2 if depth > 2 else 0, 11 if depth > 0 else 2))
        v = var(scope, "i")
        if choice == 0 or (choice == 1 and v is None):
            return f"({draw(st.integers(-3, 5))})"
        if choice == 1:
            return v
        op = draw(st.sampled_from(scalar_ops))
        a, b = scalar(scope, depth - 1), scalar(scope, depth - 1)
        if choice == 2:
            return f"({a} {op} {b})" if op in "+-*" else f"({op} {a} {b})"
        if choice == 3:
            return f"(reduce (+) 0 {array(scope, depth - 1)})"
        if choice == 4:
            return f"(length {array(scope, depth - 1)})"
        if choice == 5:
            return f"(if {a} < {b} then {scalar(scope, depth - 1)} else {a})"
        if choice == 6:
            xs = array(scope, depth - 1)
            return f"(let a = {xs} in if length a > 0 then a[(max 0 {a}) % length a] else {b})"
        if choice == 7:
            return f"(reduce max (-100) {array(scope, depth - 1)})"
        if choice == 8:
            return f"(loop acc = {a} for i < 3 do acc + i * {b})"
        if choice == 9:        # a count that differs per element
            return f"(loop acc = {a} for i < (max 0 {b}) % 5 do acc + i * {scalar(scope, 0)})"
        if choice == 10:       # a while whose iterations differ per element
            return (f"(let (p, q) = (loop (x, c) = ({a}, 0) while x > 0 && c < 6 do "
                    f"(x / 2, c + 1)) in p + q)")
        return f"({a} % 4 + {b} / 3)"

    def array(scope, depth) -> str:
        choice = draw(st.integers(2 if depth > 2 else 0, 9 if depth > 0 else 1))
        if choice == 0:
            return var(scope, "a") or "xs"
        if choice == 1:
            return f"[{scalar(scope, 0)}, {scalar(scope, 0)}]"
        inner = scope + [(f"x{depth}", "i")]
        if choice == 2:
            return f"(map (\\x{depth} -> {scalar(inner, depth - 1)}) {array(scope, depth - 1)})"
        if choice == 3:
            return (f"(filter (\\x{depth} -> {scalar(inner, depth - 1)} > 0) "
                    f"{array(scope, depth - 1)})")
        if choice == 4:
            return f"(scan (+) 0 {array(scope, depth - 1)})"
        if choice == 5:
            return f"(iota (max 0 {scalar(scope, depth - 1)} % 6))"
        if choice == 6:
            rows = rows_of(scope, depth - 1)
            return f"(map (\\r{depth} -> reduce (+) 0 r{depth}) {rows})"
        if choice == 7:
            return f"({array(scope, depth - 1)} ++ {array(scope, depth - 1)})"
        if choice == 8:
            return f"(reverse {array(scope, depth - 1)})"
        rows = rows_of(scope, depth - 1)
        return f"(map (\\r{depth} -> length r{depth}) {rows})"

    def rows_of(scope, depth) -> str:
        choice = draw(st.integers(1 if depth > 2 else 0, 4 if depth > 0 else 0))
        if choice == 0:
            return var(scope, "aa") or "xss"
        inner = scope + [(f"y{depth}", "i")]
        if choice == 1:
            return f"(map (\\y{depth} -> {array(inner, depth - 1)}) {array(scope, depth - 1)})"
        row_scope = scope + [(f"r{depth}", "a")]
        source = rows_of(scope, depth - 1)
        if choice == 2:
            return f"(map (\\r{depth} -> {array(row_scope, depth - 1)}) {source})"
        if choice == 3:
            return f"(map (\\r{depth} -> filter (\\z -> z > {scalar(scope, 0)}) r{depth}) {source})"
        return f"(map (\\r{depth} -> map (\\z -> z * {scalar(scope, 0)}) r{depth}) {source})"

    xs = draw(st.lists(st.integers(-5, 9), max_size=5))
    xss = draw(st.lists(st.lists(st.integers(-5, 9), max_size=4), max_size=4))
    kind = draw(st.sampled_from(["i", "a", "aa"]))
    scope = [("xs", "a"), ("xss", "aa")]
    body = {"i": scalar, "a": array, "aa": rows_of}[kind](scope, 4)
    return (f"let xs = ([{', '.join(map(str, xs))}] : []i64)\n"
            f"let xss = ([{', '.join('[' + ', '.join(map(str, r)) + ']' for r in xss)}] : [][]i64)\n"
            f"{body}\n")


SESSIONS: dict[str, Session] = {}


def fresh_session(target: str) -> Session:
    """One session per target for all examples, reset before each (the prelude stays)."""
    session = SESSIONS.setdefault(target, Session(target=target))
    session.reset()
    return session


def agrees_on_random_program(text: str, target: str) -> None:
    expected = outcome(fresh_session("interp"), text)
    assert expected[0] == "value", (expected, text)       # the generator makes no errors
    assert outcome(fresh_session(target), text) == expected, text


# derandomize: the same programs every run, so that the compiled targets' kernels come from
# the kernel cache. `numpy` compiles nothing and takes 80; a target that compiles kernels
# takes the first 25 of them (a cold numba compile is seconds a program: the suite's time
# budget), and `tests/test_fuzz.py` and `python -m tests.fuzz` run many more on `cpu`.
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=True)
@given(text=nested_program())
def test_random_nested_programs_agree_with_the_interpreter_on_numpy(text: str):
    agrees_on_random_program(text, "numpy")


@pytest.mark.parametrize("target", [t for t in COMPILED if getattr(t, "values", (t,))[0]
                                    != "numpy"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=True)
@given(text=nested_program())
def test_random_nested_programs_agree_with_the_interpreter(text: str, target: str):
    agrees_on_random_program(text, target)


# ---------------------------------------------------------------- every SOAC over empty arrays

# code that fails when it runs (`n` is 0); the ones with `{x}` read the enclosing map's point
BOMBS = ["(10 / n)", "(10 % n)", "(xs[n + 10])", "(head ([] : []i64))",
         "(length (iota (n - 1)))", "(last (filter (\\z -> z > 100) xs))",
         "(xs[{x} + 10])", "(10 / ({x} - {x}))"]
# operators may hold only scalar code (an operand read by an operator is not built yet)
INLINE_BOMBS = ["(10 / n)", "(10 % n)", "(1 << (n - 1))"]
EMPTIES = ["([] : []i64)", "(filter (\\z -> z > 100) xs)", "(iota 0)", "(take 0 xs)",
           "xs[0:0]", "(iota (length xs - length xs))"]
EMPTY_ROWS = ["([[], []] : [][]i64)", "(map (\\z -> filter (\\w -> w > 100) xs) xs)",
              "(map (\\z -> iota 0) xs)", "([] : [][]i64)"]
# {e}: an empty []i64, {r}: rows that are all empty, {b}: a bomb, {o}: an operator's bomb
SOACS = ["map (\\y -> y + {b}) {e}",
         "map2 (\\y v -> y * v + {b}) {e} {e}",
         "filter (\\y -> y + {b} > 0) {e}",
         "reduce (\\a c -> a + c + {o}) 0 {e}",
         "scan (\\a c -> a + c + {o}) 0 {e}",
         "partition (\\y -> y > {b}) {e}",
         "sort_by (\\y -> y + {b}) {e}",
         "generate (length {e}) (\\i -> i + {b})",
         "expand (\\y -> y + {b}) (\\y j -> j + {b}) {e}",
         "reduce_by_index (replicate 3 0) (\\a c -> a + c + {o}) 0 {e} {e}",
         "scatter (replicate 2 0) {e} (map (\\y -> y + {b}) {e})",
         "loop acc = 0 for i < length {e} do acc + {b}",
         "loop acc = [0] while length acc < length {e} do acc ++ [{b}]",
         "map (\\y -> if y > 100 then {b} else y) xs",
         "map (\\y -> if y > 100 then iota {b} else [y]) xs",
         "map (\\row -> map (\\y -> y + {b}) row) {r}",
         "map (\\row -> reduce (\\a c -> a + c + {o}) 0 row) {r}",
         "map (\\row -> filter (\\y -> y > {b}) row) {r}"]


@st.composite
def empty_soac_program(draw) -> str:
    """One SOAC (or loop, or lifted `if`) whose function never runs: over an empty array,
    rows that are all empty, a branch no point takes, a loop no point enters; at the top
    level or inside a map over `xs` (itself maybe empty). Its function holds code that fails
    when it runs and mostly reads nothing of the points, so flattening moves it out of the
    map: it must still never raise (LANGUAGE.md §4)."""
    inside = draw(st.booleans())
    bombs = BOMBS if inside else [b for b in BOMBS if "{x}" not in b]
    soac = draw(st.sampled_from(SOACS)).format(
        e=draw(st.sampled_from(EMPTIES)), r=draw(st.sampled_from(EMPTY_ROWS)),
        b=draw(st.sampled_from(bombs)).format(x="x"), o=draw(st.sampled_from(INLINE_BOMBS)))
    xs = draw(st.lists(st.integers(-5, 9), max_size=3))
    body = f"map (\\x -> {soac}) xs" if inside else soac
    return (f"let n = 0\nlet xs = ([{', '.join(map(str, xs))}] : []i64)\n{body}\n")


@pytest.mark.parametrize("target", COMPILED)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=True)
@given(text=empty_soac_program())
def test_unreached_code_in_empty_soacs_raises_nothing(text: str, target: str):
    expected = outcome(fresh_session("interp"), text)
    assert expected[0] == "value", (expected, text)       # nothing in it is reached
    assert outcome(fresh_session(target), text) == expected, text
