"""`%load NAME PATH [KEY]`, `%%python` and `Session.bind`: Python values into a session (without
copies) and back, on a Session; then both through a running kernel."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest
from jupyter_client.manager import start_new_kernel

from accel_kernel.kernel.loading import LoadError, PythonError, accel_value
from accel_kernel.kernel.magics import MagicContext, MagicError, parse_magic, run_magic, split_cell
from accel_kernel.lang.errors import AccelError, AccelNameError, AccelTypeError
from accel_kernel.session import Session


@pytest.fixture(params=["interp", "numpy"])
def ctx(request) -> MagicContext:
    return MagicContext(Session(target=request.param), cell_name="cell[3]")


def load(line: str, ctx: MagicContext) -> str:
    (text,) = run_magic(parse_magic(line), ctx).stdout
    return text


def python(body: str, ctx: MagicContext):
    (segment,) = split_cell("%%python\n" + body)
    return run_magic(segment.magic, ctx)


# ---------------------------------------------------------------- %load

def test_load_npy_is_memory_mapped_and_not_copied(ctx, tmp_path):
    np.save(tmp_path / "points.npy", np.arange(12.0).reshape(4, 3))
    text = load(f"%load points {tmp_path / 'points.npy'}", ctx)
    assert text.startswith("points : [][]f64  (memory-mapped from ")
    stored = ctx.session.global_value("points").flat
    assert isinstance(stored.base, np.memmap) or isinstance(stored, np.memmap)
    assert not stored.flags.writeable
    result = ctx.session.execute("map (\\r -> reduce (+) 0.0 r) points")
    assert result.text == "[3.0, 12.0, 21.0, 30.0]"


def test_loaded_and_python_values_run_on_cpu(tmp_path):
    """The compiled target reads a read-only memory map, ragged data and a %%python value."""
    ctx = MagicContext(Session(target="cpu"), cell_name="cell[1]")
    np.save(tmp_path / "m.npy", np.arange(6.0).reshape(2, 3))
    (tmp_path / "rows.json").write_text(json.dumps([[1, 2], [3]]))
    load(f"%load m {tmp_path / 'm.npy'}", ctx)
    load(f"%load rows {tmp_path / 'rows.json'}", ctx)
    python("both = (np.asarray(m).sum(axis=1), np.array([len(r) for r in rows]))", ctx)
    result = ctx.session.execute("(map (\\r -> reduce (+) 0.0 r) m,\n"
                                 " map (\\r -> reduce (+) 0 r) rows, both)")
    assert result.text == "([3.0, 12.0], [3, 3], ([3.0, 12.0], [2, 1]))"


def test_load_json_keeps_ragged_data_ragged(ctx, tmp_path):
    (tmp_path / "rows.json").write_text(json.dumps([[1, 2, 3], [], [4]]))
    (tmp_path / "grid.json").write_text(json.dumps({"grid": [[1.5, 2.5], [3.5, 4.5]],
                                                    "n": 7, "flag": True}))
    assert load(f"%load rows {tmp_path / 'rows.json'}", ctx).startswith("rows : [][]i64")
    assert type(ctx.session.global_value("rows").rep).__name__ == "Segmented"
    assert ctx.session.execute("map length rows").text == "[3, 0, 1]"
    assert "field `grid`" in load(f"%load g {tmp_path / 'grid.json'} grid", ctx)
    assert type(ctx.session.global_value("g").rep).__name__ == "Regular"
    load(f"%load n {tmp_path / 'grid.json'} n", ctx)
    load(f"%load flag {tmp_path / 'grid.json'} flag", ctx)
    assert ctx.session.execute("if flag then n + length g else 0").text == "9"
    with pytest.raises(LoadError, match="holds 3 fields .*`%load NAME .* FIELD`"):
        load(f"%load g {tmp_path / 'grid.json'}", ctx)


def test_load_npz_picks_an_array(ctx, tmp_path):
    np.savez(tmp_path / "data.npz", a=np.arange(3, dtype=np.int32), b=np.ones(2))
    np.savez(tmp_path / "one.npz", only=np.arange(4))
    assert load(f"%load a {tmp_path / 'data.npz'} a", ctx).startswith("a : []i32")
    assert load(f"%load o {tmp_path / 'one.npz'}", ctx).startswith("o : []i64")
    with pytest.raises(LoadError, match="holds 2 arrays \\(a, b\\)"):
        load(f"%load x {tmp_path / 'data.npz'}", ctx)
    with pytest.raises(LoadError, match="has no array `c`"):
        load(f"%load x {tmp_path / 'data.npz'} c", ctx)


def test_load_parquet_needs_pyarrow(ctx, tmp_path):
    path = tmp_path / "t.parquet"
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        path.write_bytes(b"PAR1")
        with pytest.raises(LoadError, match="needs pyarrow.*`pip install pyarrow`"):
            load(f"%load t {path}", ctx)
        return
    import awkward as ak
    ak.to_parquet(ak.Array({"x": [[1.0], [], [2.0, 3.0]], "y": [1, 2, 3]}), path)
    assert load(f"%load x {path} x", ctx).startswith("x : [][]f64")
    assert type(ctx.session.global_value("x").rep).__name__ == "Segmented"


def test_load_errors_say_what_to_do(ctx, tmp_path):
    (tmp_path / "a.csv").write_text("1,2\n")
    with pytest.raises(LoadError, match="cannot read `.csv` files: %load reads .npy"):
        load(f"%load a {tmp_path / 'a.csv'}", ctx)
    with pytest.raises(LoadError, match="no file"):
        load(f"%load a {tmp_path / 'nosuch.npy'}", ctx)
    with pytest.raises(MagicError, match="takes a name and a path"):
        load("%load a", ctx)
    np.save(tmp_path / "s.npy", np.array(["a", "b"]))
    with pytest.raises(AccelTypeError, match="unsupported dtype"):
        load(f"%load s {tmp_path / 's.npy'}", ctx)
    np.save(tmp_path / "x.npy", np.arange(3))
    with pytest.raises(AccelNameError, match="cannot bind `map`: it is a def or builtin"):
        load(f"%load map {tmp_path / 'x.npy'}", ctx)
    assert ctx.session.names() == []


# ---------------------------------------------------------------- Session.bind

def test_rebinding_a_let_rechecks_the_defs_that_read_it():
    session = Session(target="interp")
    session.bind({"xs": accel_value(np.arange(3))}, "test")
    session.execute("def total u = reduce (+) 0 xs + u")
    assert session.execute("total 1").text == "4"
    with pytest.raises(AccelError, match="`total` uses xs"):
        session.bind({"xs": accel_value(np.arange(3.0))}, "test")
    assert session.execute("total 1").text == "4"           # nothing changed
    session.bind({"xs": accel_value(np.arange(5))}, "test")  # same type: fine
    assert session.execute("total 0").text == "10"
    with pytest.raises(AccelNameError):
        session.bind({"total": accel_value(1)}, "test")       # a def


def test_a_bound_value_has_stages_like_any_global():
    session = Session(target="interp")
    session.bind({"xs": accel_value(np.arange(3))}, "test")
    assert [s.name for s in session.stages("xs", stop_after="typed")][-1] == "typed"


# ---------------------------------------------------------------- %%python

def test_python_sees_accel_globals_and_defines_new_ones(ctx):
    ctx.session.execute("let xs = [[1.0, 2.0], [3.0]]\nlet m = [[1, 2], [3, 4]]")
    out = python("import math\nprint(type(xs).__name__, type(m).__name__)\n"
                 "ys = np.asarray(m) * 2\nk = math.floor(2.5)\nlabel = 'not data'\nrow = [1, 2]\n"
                 "len(xs)", ctx)
    assert out.stdout == ["Array ndarray\n", "accel globals: ys : [][]i64, k : i64\n"]
    assert out.displays == [{"text/plain": "2"}]
    assert ctx.session.execute("map (\\r -> reduce (+) 0 r) ys").text == "[6, 14]"
    assert ctx.session.lookup("label") is None               # only data becomes accel
    assert ctx.session.lookup("row") is None                  # a list stays Python too
    assert {"math", "label", "row"} <= set(ctx.python)               # the rest stays in Python
    assert python("label + str(k)", ctx).displays == [{"text/plain": "'not data2'"}]


def test_python_values_are_read_only_views(ctx):
    ctx.session.execute("let v = [1, 2, 3]")
    if ctx.session.target == "numpy":        # a view of the session's own buffer
        with pytest.raises(PythonError) as info:
            python("v[0] = 5", ctx)
        assert info.value.kind == "ValueError" and "read-only" in info.value.message
    else:                                    # interp's lists: converted, a copy
        python("v[0] = 5", ctx)
    assert ctx.session.execute("v").text == "[1, 2, 3]"


def test_a_failing_python_cell_changes_nothing(ctx):
    python("a = 1", ctx)
    with pytest.raises(PythonError) as info:
        python("a = 2\nb = np.arange(3)\nc = 1 / 0", ctx)
    assert info.value.kind == "ZeroDivisionError"
    assert info.value.message.splitlines() == ["division by zero", "  line 4: c = 1 / 0"]
    assert ctx.session.execute("a").text == "1" and ctx.session.lookup("b") is None
    with pytest.raises(PythonError) as info:
        python("x = (", ctx)
    assert info.value.kind == "SyntaxError" and "line 2" in info.value.message
    with pytest.raises(PythonError, match="cannot bind `map`"):
        python("map = np.arange(2)", ctx)
    assert ctx.session.lookup("map").kind == "builtin"


# ---------------------------------------------------------------- through the kernel

def test_load_and_python_in_the_kernel(tmp_path):
    np.save(tmp_path / "xs.npy", np.arange(4))
    km, kc = start_new_kernel(kernel_name="accel")
    try:
        kc.execute_interactive("%target interp", timeout=60)
        outputs = []
        reply = kc.execute_interactive(f"%load xs {tmp_path / 'xs.npy'}\nreduce (+) 0 xs",
                                       timeout=60, output_hook=outputs.append)
        assert reply["content"]["status"] == "ok"
        results = [o["content"]["data"]["text/plain"] for o in outputs
                   if o["msg_type"] == "execute_result"]
        assert results == ["6"]
        reply = kc.execute_interactive("%%python\nys = xs[::-1] * 10", timeout=60)
        assert reply["content"]["status"] == "ok"
        # stop_on_error=False: ipykernel aborts the requests that arrive just after a failed
        # one (its `stop_on_error`), and on a busy machine that was the next cell of this test
        reply = kc.execute_interactive("%%python\nys = 0\nraise KeyError('k')", timeout=60,
                                       stop_on_error=False)
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "KeyError"
        assert not any("Traceback" in line for line in reply["content"]["traceback"])
        outputs.clear()
        kc.execute_interactive("ys", timeout=60, output_hook=outputs.append)
        assert [o["content"]["data"]["text/plain"] for o in outputs
                if o["msg_type"] == "execute_result"] == ["[30, 20, 10, 0]"]
        started = tmp_path / "started"             # the loop runs before the interrupt
        msg_id = kc.execute(f"%%python\nimport time, pathlib\nys = 1\n"
                            f"pathlib.Path({str(started)!r}).touch()\n"
                            f"while True: time.sleep(0.01)", stop_on_error=False)
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        km.interrupt_kernel()                       # a Python loop stops at an interrupt
        reply = kc.get_shell_msg(timeout=60)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["content"]["ename"] == "Interrupted"
        outputs.clear()
        reply = kc.execute_interactive("%%python\nimport sys\nprint('out'); "
                                       "print('err', file=sys.stderr)\nys", timeout=60,
                                       output_hook=outputs.append)
        assert reply["content"]["status"] == "ok", (reply["content"], outputs)
        texts = [o["content"].get("text") or o["content"]["data"]["text/plain"]
                 for o in outputs if o["msg_type"] in ("stream", "execute_result",
                                                        "display_data")]
        assert texts == ["out\nerr\n", "array([30, 20, 10,  0])"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
