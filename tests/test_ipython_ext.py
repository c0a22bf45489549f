"""`%load_ext accel_kernel` inside a plain IPython shell, and in a Python notebook (nbclient)."""
from pathlib import Path

import numpy as np
import pytest

IPython = pytest.importorskip("IPython")

from accel_kernel.ipython_ext import (AccelCellError, AccelMagics, magic_advice,  # noqa: E402
                                      parse_options)

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "accel_kernel")
    yield shell
    shell.run_line_magic("reload_ext", "accel_kernel")      # a fresh session for the next


def test_cell_magic_runs_accel_and_returns_python_values(shell):
    shell.run_cell_magic("accel", "--target interp", "def sq x = x * x")
    value = shell.run_cell_magic("accel", "--target interp", "map sq [1, 2, 3]")
    assert value.tolist() == [1, 4, 9]
    assert shell.run_cell_magic("accel", "--target=interp", "sq 1.5") == 2.25
    assert shell.run_line_magic("accel", "sq 4") == 16                # the line magic
    with pytest.raises(AccelCellError, match=r"NameError at cell\[\d+\]:1:1"):
        shell.run_line_magic("accel", "nosuch")


def test_an_accel_error_fails_the_cell_with_the_accel_message_only(shell, capsys):
    result = shell.run_cell("%%accel\nlet kept = 1\n[1][3]", store_history=True)
    assert not result.success and isinstance(result.error_in_exec, AccelCellError)
    shown = capsys.readouterr().out
    count = result.execution_count
    # labelled with IPython's execution count, lines counted in the cell (`%%accel` is line 1)
    assert f"IndexError at cell[{count}]:3:1" in shown
    assert "[1][3]\n^^^^^^" in shown
    assert "Traceback" not in shown and "File " not in shown      # no Python traceback
    assert not shell.run_cell("%%accel\nkept").success            # the failed cell kept nothing
    assert "NameError" in capsys.readouterr().out


def test_bad_options_fail_the_cell(shell):
    for line in ["--frobnicate", "--target", "--in", "--out 1x", "--target interp --target cpu"]:
        with pytest.raises(AccelCellError, match="%%accel"):
            shell.run_cell_magic("accel", line, "1")
    with pytest.raises(AccelCellError, match="unknown target 'tpu'"):
        shell.run_cell_magic("accel", "--target tpu", "1")
    assert parse_options("--in xs,ys --out=r") == {"in": ["xs", "ys"], "out": "r"}


def test_python_variables_go_in_by_name_without_copies_and_the_result_comes_out(shell):
    import awkward as ak
    xs = np.arange(6.0)
    regular = ak.to_regular(ak.Array([[1, 2, 3], [4, 5, 6]]), axis=1)    # a RegularArray
    ragged = ak.Array([[1.5], [], [2.5, 3.5]])
    shell.user_ns.update(xs=xs, regular=regular, ragged=ragged)
    value = shell.run_cell_magic("accel", "--in xs,regular,ragged --out r",
                                 "map (\\r -> reduce (+) 0 r) regular")
    assert value.tolist() == shell.user_ns["r"].tolist() == [6, 15]
    magics = _magics_of(shell)
    stored = magics.session.global_value("xs").flat
    assert np.shares_memory(stored, xs)                                   # no copy
    block = magics.session.global_value("regular")
    assert block.flat.shape == (2, 3)                                     # [n][m]i64: regular
    assert np.shares_memory(block.flat, ak.to_numpy(ak.flatten(regular)))
    segs = magics.session.global_value("ragged").flat                    # ragged: segments
    assert type(magics.session.global_value("ragged").rep).__name__ == "Segmented"
    assert np.shares_memory(segs.values, np.asarray(ragged.layout.content.data))
    assert np.shares_memory(segs.offsets, np.asarray(ragged.layout.offsets.data))
    assert magics.session.lookup("regular").type == "[][]i64"
    out = shell.run_cell_magic("accel", "--out total", "reduce (+) 0.0 xs")
    assert shell.user_ns["total"] == out == 15.0
    with pytest.raises(AccelCellError, match="no such Python variable"):
        shell.run_cell_magic("accel", "--in nosuch_var", "1")
    shell.user_ns["text"] = "abc"
    with pytest.raises(AccelCellError, match="TypeError"):
        shell.run_cell_magic("accel", "--in text", "1")


def _magics_of(shell) -> AccelMagics:
    """The extension's AccelMagics (the closure of the registered cell magic)."""
    function = shell.magics_manager.magics["cell"]["accel"]
    cells = [c.cell_contents for c in function.__closure__ or ()]
    return next(c for c in cells if isinstance(c, AccelMagics))


def test_advice_is_in_magic_syntax(not_built):
    magics = AccelMagics()
    assert magics.session.target == "cpu"
    code = "map (\\r -> reduce (+) 0 r) [[1, 2], [3], []]"
    assert magics.run(code).tolist() == magics.run(code, "--target interp").tolist() == [3, 3, 0]
    assert magics.session.target == "cpu"             # --target chose one cell's target
    with pytest.raises(AccelCellError) as info:
        magics.run(not_built)
    (line,) = info.value.lines
    assert line.startswith("NotImplementedError: ") and "`sort` of tuples" in line
    assert "(target cpu; `%%accel --target interp` runs it)" in line
    assert magics.run(not_built, "--target interp").tolist() == [[(1, 1), (2, 2)], [(3, 3)]]
    assert magic_advice("not built yet; use --target interp", "cuda") == \
        "not built yet; use `%%accel --target interp`"


def test_a_failing_accel_cell_stops_a_python_notebook():
    """Acceptance (issue 16): nbclient runs a Python notebook; the failing `%%accel` cell
    stops the run with the accel message, and the cells after it do not run."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        pytest.skip("no python3 kernel")
    cells = [f"import sys; sys.path.insert(0, {str(REPO)!r})\n%load_ext accel_kernel",
             "import numpy as np\nxs = np.arange(4)",
             "%%accel --target interp --in xs --out r\nmap (\\x -> x * 2) xs",
             "assert r.tolist() == [0, 2, 4, 6]",
             "%%accel --target interp\nlet ok = 1\nxs[ok + 10]",
             "print('this cell must not run')"]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = nbclient.NotebookClient(notebook, kernel_name="python3", timeout=120)
    with pytest.raises(nbclient.exceptions.CellExecutionError) as info:
        client.execute()
    message = str(info.value)
    assert "IndexError at cell[5]:3:1" in message       # the In[5] of the failing cell
    assert "xs[ok + 10]" in message
    assert notebook.cells[-1].get("outputs") == []      # the run stopped there
    (error,) = [o for o in notebook.cells[4].outputs if o.output_type == "error"]
    assert error.ename == "AccelCellError"
    assert not any("File " in line for line in error.traceback)   # no Python traceback


def test_a_python_generator_streams_into_an_accel_sequence(shell):
    shell.user_ns["readings"] = (np.full(i % 4, 2.0) for i in range(1000))
    total = shell.run_cell_magic("accel", "--in readings",
                                 "foldSeq (+) 0.0 (mapSeq (\\r -> reduce (+) 0.0 r) "
                                 "(stream readings))")
    assert total == 2.0 * sum(i % 4 for i in range(1000))
    magics = _magics_of(shell)
    assert magics.session.lookup("readings").type == "seq []f64"
