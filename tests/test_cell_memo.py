"""A cell run again with the same text reuses its parse, type check and compiled stages
(`cell_memo.py`) only while nothing its compile read has changed; it is still evaluated and
committed, and its spans name the cell run last."""
import pytest

from accel_kernel import AccelError, Session

TARGETS = ["interp", "numpy", "cpu"]


def counting(session: Session) -> list[str]:
    """The names of the cells `session` compiled (parsed and type checked) from now on."""
    compiled: list[str] = []
    compile_cell = session._compile

    def spy(code, name):
        compiled.append(name)
        return compile_cell(code, name)
    session._compile = spy
    return compiled


@pytest.mark.parametrize("target", TARGETS)
def test_the_same_cell_again_is_not_compiled_again_and_still_runs(target):
    session = Session(target=target)
    compiled = counting(session)
    cell = "def sq (x: i64) : i64 = x * x\nmap sq [1, 2, 3]"
    first = session.execute(cell, "cell[1]")
    again = session.execute(cell, "cell[2]")
    assert compiled == ["cell[1]"]
    assert first.text == again.text == "[1, 4, 9]"
    assert again.defined == ["sq"] and again.notes == ["redefined sq"]


@pytest.mark.parametrize("target", TARGETS)
def test_a_changed_global_it_reads_compiles_it_again(target):
    session = Session(target=target)
    compiled = counting(session)
    session.execute("def g (x: i64) : i64 = x + 1", "cell[1]")
    cell = "def h (x: i64) : i64 = g x * 2\nh 3"
    assert session.execute(cell, "cell[2]").text == "8"
    session.execute("def g (x: i64) : i64 = x + 2", "cell[3]")
    assert session.execute(cell, "cell[4]").text == "10"
    assert compiled == ["cell[1]", "cell[2]", "cell[3]", "cell[4]"]


@pytest.mark.parametrize("target", TARGETS)
def test_a_global_read_through_a_def_counts_too(target):
    # `total` reads the global `xs`: the cell `total 2` reads it through `total`
    session = Session(target=target)
    compiled = counting(session)
    session.execute("let xs = [1, 2, 3]\ndef total (k: i64) : i64 = k * reduce (+) 0 xs",
                    "cell[1]")
    assert session.execute("total 2", "cell[2]").text == "12"
    session.execute("let xs = [[1], [2, 3]][1]", "cell[3]")
    assert session.execute("total 2", "cell[4]").text == "10"
    assert compiled == ["cell[1]", "cell[2]", "cell[3]", "cell[4]"]


@pytest.mark.parametrize("target", TARGETS)
def test_a_cell_reading_what_it_binds_is_compiled_every_time(target):
    session = Session(target=target)
    compiled = counting(session)
    session.execute("let x = 1", "cell[1]")
    assert [session.execute("let x = x + 1\nx", f"cell[{k}]").text
            for k in (2, 3, 4)] == ["2", "3", "4"]
    assert compiled == ["cell[1]", "cell[2]", "cell[3]", "cell[4]"]


def test_a_def_redefined_elsewhere_is_defined_again_by_its_cell():
    session = Session(target="numpy")
    compiled = counting(session)
    cell = "def sq (x: i64) : i64 = x * x"
    session.execute(cell, "cell[1]")
    session.execute("def sq (x: i64) : i64 = x + x", "cell[2]")
    assert session.execute("sq 5", "cell[3]").text == "10"
    session.execute(cell, "cell[4]")                   # nothing it reads changed
    assert session.execute("sq 5", "cell[5]").text == "25"
    assert compiled == ["cell[1]", "cell[2]", "cell[3]", "cell[5]"]


def test_another_target_compiles_it_again():
    session = Session(target="numpy")
    compiled = counting(session)
    session.execute("reduce (+) 0 [1, 2, 3]", "cell[1]")
    session.set_target("interp")
    assert session.execute("reduce (+) 0 [1, 2, 3]", "cell[2]").text == "6"
    assert compiled == ["cell[1]", "cell[2]"]


@pytest.mark.parametrize("target", TARGETS)
def test_errors_name_the_cell_run_last(target):
    session = Session(target=target)
    cell = "def at (xs: []i64) (i: i64) : i64 =\n  xs[i]"
    session.execute(cell, "cell[1]")
    session.execute(cell, "cell[2]")
    with pytest.raises(AccelError) as info:
        session.execute("at [1, 2] 5", "cell[3]")
    assert info.value.kind == "IndexError"
    assert info.value.location() == "cell[2]:2:3"
    for name in ("cell[4]", "cell[5]"):                 # a failed cell is not kept
        with pytest.raises(AccelError) as info:
            session.execute("[1, 2][9]", name)
        assert info.value.location() == f"{name}:1:1"


def test_reset_forgets_the_kept_cells():
    session = Session(target="numpy")
    compiled = counting(session)
    session.execute("def f (x: i64) : i64 = x + 1", "cell[1]")
    session.reset()
    session.execute("def f (x: i64) : i64 = x + 1", "cell[2]")
    assert compiled == ["cell[1]", "cell[2]"]
