"""Values stay in their flat form (`accel_kernel/host.py`): the session keeps what a target
made, converts only what is read, and the display reads only the elements it shows."""
import gc
import weakref

import numpy as np
import pytest

from accel_kernel import AccelError, Session, host
from accel_kernel.backends.numpy.values import FlatView, Segs
from accel_kernel.host import FLAT, INTERP, HostValue
from accel_kernel.kernel import display
from accel_kernel.lang import types as T


@pytest.fixture
def no_conversion(monkeypatch):
    """Any conversion between forms fails the test."""
    def refuse(value, t):
        raise AssertionError(f"converted a value of type {T.show(t)}")
    monkeypatch.setattr(host, "CONVERSIONS", {key: refuse for key in host.CONVERSIONS})


def stored(session: Session, name: str) -> HostValue:
    value = session._globals[name].value
    assert isinstance(value, HostValue)
    return value


@pytest.mark.parametrize("target", ["numpy", "cpu"])
def test_a_compiled_global_is_its_flat_buffer_and_is_read_as_it_is(target, no_conversion):
    session = Session(target=target)
    session.execute("let a = iota 5000", "cell[1]")
    a = stored(session, "a")
    buffer = a.forms[FLAT]
    assert a.forms.keys() == {FLAT} and isinstance(buffer, np.ndarray)
    assert buffer.dtype == np.int64 and buffer.shape == (5000,)
    assert session.execute("a[7]", "cell[2]").text == "7"
    assert session.execute("reduce (+) 0 a", "cell[3]").text == str(sum(range(5000)))
    shown = session.execute("a", "cell[4]")
    assert display.result_bundle(shown.host, shown.type)["text/plain"] == \
        "[0, 1, 2, ..., 4997, 4998, 4999] : [5000]i64"
    assert stored(session, "a") is a and a.forms[FLAT] is buffer and a.forms.keys() == {FLAT}


@pytest.mark.parametrize("target", ["numpy", "cpu"])
def test_a_redefined_global_frees_its_buffer_at_once(target):
    """Nothing but the global holds a cell's buffers once the cell is done (no reference
    cycle that only Python's cyclic collector would break)."""
    session = Session(target=target)
    session.execute("let a = iota 1000", "cell[1]")
    session.execute("a[3]", "cell[2]")
    buffer = weakref.ref(stored(session, "a").forms[FLAT])
    gc.disable()
    try:
        session.execute("let a = 0", "cell[3]")
        assert buffer() is None
    finally:
        gc.enable()


def test_snapshot_and_restore_share_the_stored_values():
    session = Session(target="numpy")
    session.execute("let a = iota 100", "cell[1]")
    a = stored(session, "a")
    snapshot = session.snapshot()
    with pytest.raises(AccelError):
        session.execute("let a = [1]\nlet b = a[5]", "cell[2]")
    session.execute("let a = [1, 2]", "cell[3]")
    session.restore(snapshot)
    assert stored(session, "a") is a and a.forms.keys() == {FLAT}
    assert session.execute("a[99]", "cell[4]").text == "99"


def test_interp_reads_an_element_or_a_slice_of_a_flat_global_without_converting_it():
    session = Session(target="numpy")
    session.execute("let a = iota 1000\nlet m = [[1, 2], [3, 4, 5]]", "cell[1]")
    session.set_target("interp")
    assert session.execute("a[7] + a[999]", "cell[2]").text == "1006"
    assert session.execute("a[3:6]", "cell[3]").text == "[3, 4, 5]"
    assert session.execute("m[1]", "cell[4]").text == "[3, 4, 5]"
    assert INTERP not in stored(session, "a").forms and INTERP not in stored(session, "m").forms
    with pytest.raises(AccelError) as info:
        session.execute("a[1000]", "cell[5]")
    assert info.value.kind == "IndexError"
    assert session.execute("length (map (+1) a)", "cell[6]").text == "1000"
    assert INTERP in stored(session, "a").forms       # read whole: converted once, kept
    assert stored(session, "a").forms[INTERP][:3] == [0, 1, 2]


def test_an_interp_global_is_converted_once_for_a_compiled_target():
    session = Session(target="interp")
    session.execute("let xs = [[1.5, 2.0], [3.0]]", "cell[1]")
    xs = stored(session, "xs")
    assert xs.forms.keys() == {INTERP}
    session.set_target("numpy")
    assert session.execute("map length xs", "cell[2]").text == "[2, 1]"
    flat = xs.forms[FLAT]
    assert isinstance(flat, Segs)
    assert session.execute("map (reduce (+) 0.0) xs", "cell[3]").text == "[3.5, 3.0]"
    assert xs.forms[FLAT] is flat


VALUES = [
    ("iota 4", "[]i64"),
    ("[[1, 2], [3]]", "[][]i64"),
    ("[[1i32, 2i32], [3i32, 4i32]]", "[][]i32"),
    ("[[[1.5f32], []], [[2.0f32, 3.0f32]]]", "[][][]f32"),
    ("[(1, true), (2, false)]", "[](i64, bool)"),
    ("[[(1, 2.5)], [(2, 0.5), (3, 1.0)]]", "[][](i64, f64)"),
    ("(iota 3, [[true], []])", "([]i64, [][]bool)"),
    ("([] : []i64)", "[]i64"),
    ("([] : [][]f64)", "[][]f64"),
    ("7i32", "i32"),
]


@pytest.mark.parametrize("code, type_text", VALUES)
def test_a_flat_value_shows_as_its_interp_value(code, type_text, no_conversion):
    flat = Session(target="numpy").execute(code, "cell[1]")
    interp = Session(target="interp").execute(code, "cell[1]")
    assert T.show(flat.type) == type_text
    assert display.result_bundle(flat.host, flat.type) == \
        display.result_bundle(interp.value, interp.type)


def test_big_arrays_show_their_ends_and_their_sized_type():
    session = Session(target="numpy")
    cases = {
        "iota 50000": "[0, 1, 2, ..., 49997, 49998, 49999] : [50000]i64",
        "map (\\i -> [i, i + 1]) (iota 2000)":
            "[[0, 1], [1, 2], [2, 3], ..., [1997, 1998], [1998, 1999], [1999, 2000]]"
            " : [2000][2]i64",
        "map (\\i -> iota (i % 3)) (iota 3000)":
            "[[], [0], [0, 1], ..., [], [0], [0, 1]] : [3000][]i64",
        "map (\\i -> (i, i % 2 == 0)) (iota 1001)":
            "[(0, true), (1, false), (2, true), ..., (998, true), (999, false), "
            "(1000, true)] : [1001](i64, bool)",
    }
    for code, text in cases.items():
        result = session.execute(code, "cell")
        assert display.result_bundle(result.host, result.type)["text/plain"] == text
        interp = Session(target="interp").execute(code, "cell")
        assert display.value_text(interp.value, interp.type) == text
    for target in ("numpy", "interp"):
        sequence = Session(target=target).execute("produce 5000 (\\i -> i * 2)", "cell")
        assert display.value_text(sequence.host, sequence.type) == \
            "[0, 2, 4, ..., 9994, 9996, 9998] : seq i64"
    small = session.execute("iota 1000", "cell")
    assert display.result_bundle(small.host, small.type)["text/plain"] == \
        "[" + ", ".join(map(str, range(1000))) + "]"


def test_big_html_table_reads_only_what_it_shows(no_conversion):
    session = Session(target="numpy")
    result = session.execute("map (\\i -> map (+i) (iota 50)) (iota 50)", "cell[1]")
    html = display.result_bundle(result.host, result.type)["text/html"]
    assert "shape 50 × 50" in html and html.count("<tr>") == 1 + 21


def test_python_of_a_flat_result_is_a_read_only_view_of_its_buffer():
    session = Session(target="numpy")
    session.execute("let a = iota 10", "cell[1]")
    result = session.execute("a", "cell[2]")
    out = result.python
    assert out.tolist() == list(range(10)) and not out.flags.writeable
    assert np.shares_memory(out, stored(session, "a").forms[FLAT])
    ragged = session.execute("[[1, 2], [3]]", "cell[3]").python
    assert ragged.tolist() == [[1, 2], [3]]


def test_flat_view_reads_rows_shapes_and_elements():
    segs = Segs(np.array([0, 2, 2, 5]), np.arange(5, dtype=np.float64))
    view = FlatView(segs, T.Array(T.Array(T.F64)))
    assert len(view) == 3 and view.size == 5 and view.regular_shape(2) is None
    assert list(view[2]) == [2.0, 3.0, 4.0] and len(view[1]) == 0
    block = FlatView(np.arange(12).reshape(3, 4), T.Array(T.Array(T.I64)))
    assert block.regular_shape(2) == (3, 4) and block[2][3] == 11 and block[-1][0] == 8
    nested = FlatView(Segs(np.array([0, 2, 4]), np.arange(8).reshape(4, 2)),
                      T.Array(T.Array(T.Array(T.I64))))
    assert nested.regular_shape(3) == (2, 2, 2) and list(nested[1][0]) == [4, 5]
    with pytest.raises(IndexError):
        view[3]


def test_a_device_form_is_read_as_flat_once_and_only_when_read():
    class OnDevice:                          # any object with to_flat (backends/cuda/memory.py)
        reads = 0

        def to_flat(self):
            OnDevice.reads += 1
            return Segs(np.array([0, 1, 3], np.int64), np.array([5, 6, 7], np.int64))

    value = HostValue.of(host.DEVICE, OnDevice(), T.Array(T.Array(T.I64)))
    assert repr(value) == "HostValue([][]i64, forms device)" and OnDevice.reads == 0
    assert value.text() == "[[5], [6, 7]]" and value.rep is not None
    assert value.interp == [[5], [6, 7]] and len(value) == 2
    assert [a.tolist() for a in value.python()] == [[5], [6, 7]]
    assert OnDevice.reads == 1 and value.has(FLAT) and value.has(INTERP)
