"""The session: globals across cells, transactional cells, redefinition, cancellation."""
import threading

import pytest

from accel_kernel import AccelError, Interrupted, Session


@pytest.fixture
def session():
    return Session(target="interp")


def test_globals_persist_across_cells(session):
    session.execute("let x = 5\ndef inc y = y + x", "cell[1]")
    assert session.execute("inc 10", "cell[2]").text == "15"
    assert [info.name for info in session.names()] == ["x", "inc"]


def test_cell_value_is_the_last_expression(session):
    result = session.execute("1 + 1\n[1, 2] ++ [3]", "cell[1]")
    assert result.text == "[1, 2, 3]"
    assert result.json == [1, 2, 3]
    assert result.python.tolist() == [1, 2, 3]


def test_cell_without_expression_has_no_value(session):
    result = session.execute("let x = 1", "cell[1]")
    assert not result.has_value and result.text is None and result.defined == ["x"]


def test_failed_cell_changes_no_global(session):
    session.execute("let x = 5", "cell[1]")
    with pytest.raises(AccelError) as info:
        session.execute("let x = 7\nlet y = [1, 2][5]", "cell[2]")
    assert info.value.kind == "IndexError"
    assert info.value.location() == "cell[2]:2:9"
    assert session.execute("x", "cell[3]").text == "5"
    with pytest.raises(AccelError) as unbound:
        session.execute("y", "cell[4]")
    assert unbound.value.kind == "NameError"


def test_failed_type_check_changes_no_global(session):
    session.execute("def f x = x + 1", "cell[1]")
    with pytest.raises(AccelError):
        session.execute("def f x = x + 1.0\nf 1", "cell[2]")
    assert session.execute("f 1", "cell[3]").text == "2"


def test_redefinition_reaches_dependents_and_says_so(session):
    session.execute("def g x = x + 1\ndef f x = g x * 2", "cell[1]")
    result = session.execute("def g x = x + 10", "cell[2]")
    assert result.notes == ["redefined g; dependents now using the new definition: f"]
    assert session.execute("f 1", "cell[3]").text == "22"


def test_redefinition_breaking_a_dependent_fails_the_cell(session):
    session.execute("def g x = x + 1\ndef f (x: i64) = g x * 2", "cell[1]")
    with pytest.raises(AccelError) as info:
        session.execute("def g (x: f64) = x", "cell[2]")
    assert info.value.kind == "TypeError"
    assert "`f` uses g" in info.value.message
    assert session.execute("f 1", "cell[3]").text == "4"


def test_recursion_through_redefinition_is_a_type_error(session):
    session.execute("def g x = x\ndef f x = g x", "cell[1]")
    with pytest.raises(AccelError) as info:
        session.execute("def g x = f x", "cell[2]")
    assert info.value.kind == "TypeError"
    assert "recursive" in info.value.message


def test_reset_keeps_the_prelude(session):
    session.execute("let x = 1", "cell[1]")
    session.reset()
    assert session.names() == []
    assert session.execute("sum [1, 2, 3]", "cell[2]").text == "6"


def test_lookup_builtins_prelude_and_user_defs(session):
    session.execute("-- adds one\ndef inc (x: i64) = x + 1", "cell[1]")
    assert session.lookup("map").kind == "builtin"
    assert session.lookup("map").doc
    assert session.lookup("sum").kind == "prelude"
    inc = session.lookup("inc")
    assert (inc.kind, inc.type, inc.doc) == ("def", "i64 -> i64", "adds one")
    assert session.lookup("nope") is None


def test_completions(session):
    session.execute("def reduce_rows xss = map (\\r -> reduce (+) 0 r) xss", "cell[1]")
    assert {"reduce", "reduce_by_index", "reduce_rows"} <= set(session.completions("red"))
    assert "let" in session.completions("le")


def test_cancel_interrupts_a_long_evaluation(session):
    timer = threading.Timer(0.3, session.cancel.set)
    timer.start()
    with pytest.raises(Interrupted):
        session.execute("reduce (+) 0 (map (\\x -> x * x) (iota 100000000))", "cell[1]")
    timer.join()
    assert session.execute("1 + 1", "cell[2]").text == "2"


def test_unbuilt_target_says_so(session):
    with pytest.raises(NotImplementedError, match="not built yet"):
        session.set_target("cuda")
    with pytest.raises(ValueError, match="unknown target"):
        session.set_target("tpu")
    assert session.target == "interp"


def test_a_fresh_session_runs_on_cpu_and_gives_the_interpreters_values():
    from accel_kernel.targets import DEFAULT_TARGET
    fresh = Session()
    assert fresh.target == DEFAULT_TARGET == "cpu"
    code = "let xss = [[1, 2], [3], []]\nmap (\\r -> reduce (+) 0 r) xss"
    result = fresh.execute(code, "cell[1]")
    assert "compile" in result.timings                   # compiled, not interpreted
    assert result.text == Session(target="interp").execute(code, "cell[1]").text == "[3, 3, 0]"


def test_without_numba_the_cpu_target_says_so_and_does_not_fall_back(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "numba", None)       # `import numba` fails
    fresh = Session()                                      # starts all the same
    with pytest.raises(NotImplementedError, match="target 'cpu' .* needs numba"):
        fresh.execute("1 + 1", "cell[1]")
    with pytest.raises(NotImplementedError, match="needs numba"):
        fresh.set_target("cpu")
    fresh.set_target("interp")
    assert fresh.execute("1 + 1", "cell[2]").text == "2"
