"""`%load_ext accel_kernel` inside a plain IPython shell."""
import pytest

IPython = pytest.importorskip("IPython")


def test_cell_magic_runs_accel_and_returns_python_values(capsys):
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "accel_kernel")
    shell.run_cell_magic("accel", "--target interp", "def sq x = x * x")
    value = shell.run_cell_magic("accel", "--target interp", "map sq [1, 2, 3]")
    assert value.tolist() == [1, 4, 9]
    assert shell.run_cell_magic("accel", "--target=interp", "sq 1.5") == 2.25
    assert shell.run_cell_magic("accel", "--target interp", "[1][3]") is None
    assert "error: IndexError at accel[4]:1:1" in capsys.readouterr().out
    assert shell.run_cell_magic("accel", "--frobnicate", "1") is None
    assert "takes only `--target NAME`" in capsys.readouterr().out


def test_cells_run_on_cpu_by_default_without_falling_back(capsys, not_built):
    from accel_kernel.ipython_ext import AccelMagics
    magics = AccelMagics()
    assert magics.session.target == "cpu"
    code = "map (\\r -> reduce (+) 0 r) [[1, 2], [3], []]"
    assert magics.run(code).tolist() == magics.run(code, "--target interp").tolist() == [3, 3, 0]
    assert magics.session.target == "cpu"             # --target chose one cell's target
    unbuilt = not_built
    assert magics.run(unbuilt) is None
    out = capsys.readouterr().out
    assert out.startswith("NotImplementedError: ") and "`sort` of tuples" in out
    assert "(target cpu; `%%accel --target interp` runs it)" in out
    assert magics.run(unbuilt, "--target interp").tolist() == [[(1, 1), (2, 2)], [(3, 3)]]
