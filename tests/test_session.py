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
        # a loop allocates nothing: the memory check of a large iota cannot answer first
        session.execute("loop acc = 0 for i < 100000000 do acc + i * i", "cell[1]")
    timer.join()
    assert session.execute("1 + 1", "cell[2]").text == "2"


def test_unbuilt_target_says_so(session, monkeypatch):
    from accel_kernel.backends.cuda import device
    monkeypatch.setattr(device, "unavailable", lambda: device.NO_GPU)
    with pytest.raises(NotImplementedError, match="no NVIDIA GPU found"):
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


# ---------------------------------------------------------------- only accel errors (issue 18)

HUGE = "iota 100000000000000"


@pytest.mark.parametrize("target", ["interp", "numpy"])
def test_a_huge_size_is_out_of_memory_before_anything_is_allocated(target):
    from accel_kernel import OutOfMemory
    fresh = Session(target=target)
    fresh.execute("let keep = 1", "cell[1]")
    for code, col in [(HUGE, 11), ("replicate 99999999999 1.0", 11),
                      ("map (\\n -> iota n) [1, 100000000000000]", 22),
                      ("[0..<100000000000000]", 11)]:
        with pytest.raises(OutOfMemory) as info:
            fresh.execute(f"let big = {code}", "cell[2]")
        err = info.value
        assert err.kind == "OutOfMemory" and err.requested > err.available > 0
        assert "needs" in err.message and "available" in err.message
        assert err.span is not None and err.span.location() == f"cell[2]:1:{col}", code
    assert [g.name for g in fresh.names()] == ["keep"]


def test_the_runtime_allocator_refuses_what_cannot_fit():
    from accel_kernel import OutOfMemory
    from accel_kernel.runtime.memory import Memory
    memory = Memory()
    with pytest.raises(OutOfMemory, match="a buffer of shape"):
        memory.alloc((10 ** 9, 10 ** 9), "f8")
    assert memory.allocations == 0 and memory.in_use == 0
    assert memory.alloc(3, "i8").shape == (3,) and memory.allocations == 1


def test_a_memory_error_that_escapes_is_out_of_memory(session, monkeypatch):
    from accel_kernel import OutOfMemory
    from accel_kernel.backends.interp import library
    from accel_kernel.backends.interp.model import BuiltinFunc

    def no_memory(it, n):
        raise MemoryError()
    monkeypatch.setitem(library.LIBRARY, "iota", BuiltinFunc("iota", 1, no_memory))
    with pytest.raises(OutOfMemory, match="out of memory"):
        session.execute("iota 3", "cell[1]")


def test_an_internal_failure_is_an_internal_error_naming_its_stage(session, monkeypatch):
    from accel_kernel import InternalError
    from accel_kernel.passes import fuse

    def broken(self, program):
        raise KeyError("no such statement")
    monkeypatch.setattr(fuse.Fuser, "program", broken)
    session.set_target("numpy")
    assert session.execute("map (\\x -> x + 1) [1, 2]", "cell[1]").text == "[2, 3]"
    session.set_target("cpu")
    with pytest.raises(InternalError) as info:
        session.execute("let lost = map (\\x -> x + 1) [1, 2]", "cell[2]")
    err = info.value
    assert err.kind == "InternalError" and err.stage == "fuse"
    assert err.message.startswith("fuse: KeyError: 'no such statement'")
    assert "a bug" in err.message and "\n" not in err.message
    assert "Traceback" in err.details and "broken" in err.details
    assert session.lookup("lost") is None


def test_a_recursion_error_in_a_pass_is_an_internal_error(session, monkeypatch):
    from accel_kernel import InternalError
    from accel_kernel.passes import desugar

    def deep(self, program):
        raise RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(desugar.Desugarer, "program", deep)
    session.set_target("numpy")          # (interp runs no pass)
    for call in [lambda: session.execute("1 + 1", "cell[1]"),
                 lambda: session.stages("1 + 1"),
                 lambda: session.program_stages("def f x = x", "prog.accel")]:
        with pytest.raises(InternalError, match="desugar: RecursionError"):
            call()


def test_a_pass_error_is_an_internal_error_of_that_pass(session, monkeypatch):
    from accel_kernel import InternalError
    from accel_kernel.passes import fuse
    monkeypatch.setattr(fuse.FusePass, "verify", lambda self, program: ["a broken kernel"])
    session.set_target("cpu")
    with pytest.raises(InternalError) as info:
        session.execute("map (\\x -> x + 1) [1, 2]", "cell[1]")
    assert info.value.stage == "fuse" and "a broken kernel" in info.value.message


def test_not_built_stays_not_implemented(session, not_built):
    session.set_target("numpy")
    with pytest.raises(NotImplementedError, match="sort"):
        session.execute(not_built, "cell[1]")


def test_snapshot_and_restore_undo_a_cell_and_a_target_change(session):
    session.execute("let a = 1\ndef f x = x + a", "cell[1]")
    saved = session.snapshot()
    session.execute("let a = 2\nlet b = 3", "cell[2]")
    session.set_target("numpy")
    session.reset()
    session.restore(saved)
    assert session.target == "interp" and [g.name for g in session.names()] == ["a", "f"]
    assert session.execute("f 10", "cell[3]").text == "11"


# run-time errors of every target in the interpreter's words (kind, position and message)
SAME_ERRORS = [
    "map2 (+) [1, 2] [1, 2, 3]",
    "map3 (\\a b c -> a + b + c) [1, 2] [1, 2, 3] [1, 2]",
    "zip3 [1, 2] [1, 2, 3] [1]",
    "map (\\xs -> map2 (+) xs [1, 2]) [[1, 2], [3, 4, 5]]",
    "map (\\n -> zip (iota n) [1, 2]) [2, 3, 2]",
    "let xs = [1, 2, 3, 4]\nin xs[2:9]",
    "map (\\k -> (iota 4)[1:k]) [2, 9]",
    "map (\\k -> (iota 4)[k]) [2, 9, 1]",
    "map (\\r -> r[2]) [[1, 2, 3], [4, 5]]",
    "map (\\r -> r[5]) [[1, 2, 3], [4, 5, 6]]",
    "[1, 2, 3] with [7] = 1",
    "take 5 [1, 2]",
    "map (\\k -> drop k [1, 2, 3]) [1, 7]",
    "map (\\n -> generate n (\\i -> i)) [2, -3]",
    "def dot (xs: [n]i64) (ys: [n]i64) : i64 = reduce (+) 0 (map2 (*) xs ys)\n"
    "map (\\k -> dot (iota k) [1, 2]) [2, 3]",
    "def rows (m: [r][c]i64) : i64 = r\nrows [[1, 2], [3]]",
    "def rows (m: [r][3]i64) : i64 = r\nrows [[1, 2, 3], [3]]",
]


def _headline(target: str, code: str) -> str:
    with pytest.raises(AccelError) as info:
        Session(target=target).execute(code, "cell[1]")
    return info.value.headline()


@pytest.mark.parametrize("code", SAME_ERRORS)
def test_numpy_errors_carry_the_interpreters_numbers(code):
    assert _headline("numpy", code) == _headline("interp", code)


@pytest.mark.parametrize("code", [SAME_ERRORS[3], SAME_ERRORS[4], SAME_ERRORS[9],
                                  SAME_ERRORS[15]])
def test_cpu_errors_carry_the_interpreters_numbers(code):
    assert _headline("cpu", code) == _headline("interp", code)


def test_a_doubling_loop_stops_with_out_of_memory_at_the_limit(session, monkeypatch):
    from accel_kernel import OutOfMemory
    from accel_kernel.runtime import memory
    monkeypatch.setattr(memory, "available_bytes", lambda: 1 << 20)   # 1 MiB left
    with pytest.raises(OutOfMemory, match=r"\+\+ needs .* but only 1.0 MiB") as info:
        session.execute("loop acc = [1.0] for i < 60 do acc ++ acc", "cell[1]")
    assert info.value.span.location() == "cell[1]:1:32"     # `acc ++ acc`
    with pytest.raises(OutOfMemory, match="concat needs"):
        session.execute("loop acc = [1] for i < 60 do concat acc acc", "cell[1]")
    assert session.execute("length (loop acc = [1] for i < 10 do acc ++ acc)", "c").text == "1024"


def test_the_budget_is_a_session_setting_kept_by_snapshots():
    session = Session(target="interp", budget="2GB")
    assert session.budget == 2 * 10**9 and session.memory.budget == session.budget
    saved = session.snapshot()
    session.set_budget(4096)
    assert session.budget == 4096
    session.restore(saved)
    assert session.budget == 2 * 10**9
    session.set_budget(None)
    assert session.budget is None and Session(target="interp").budget is None
    for bad in ["lots", -1]:
        with pytest.raises(ValueError):
            session.set_budget(bad)
    assert session.events is session.memory.events and not session.events.active
