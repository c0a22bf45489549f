"""`%load_ext accel_kernel` inside a plain IPython shell."""
import pytest

IPython = pytest.importorskip("IPython")


def test_cell_magic_runs_accel_and_returns_python_values(capsys):
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "accel_kernel")
    shell.run_cell_magic("accel", "", "def sq x = x * x")
    value = shell.run_cell_magic("accel", "", "map sq [1, 2, 3]")
    assert value.tolist() == [1, 4, 9]
    assert shell.run_line_magic("accel", "sq 1.5") == 2.25
    assert shell.run_cell_magic("accel", "", "[1][3]") is None
    assert "error: IndexError at accel[4]:1:1" in capsys.readouterr().out
