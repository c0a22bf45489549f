"""The `accel` command line, in process."""
import json

import pytest

from accel_kernel.cli import main


def write(tmp_path, text, name="prog.accel"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_run_prints_the_last_value(tmp_path, capsys):
    path = write(tmp_path, "def sq x = x * x\nmap sq [1, 2, 3]\n")
    assert main(["run", path]) == 0
    assert capsys.readouterr().out == "[1, 4, 9]\n"


def test_run_json(tmp_path, capsys):
    path = write(tmp_path, "([1, 2], true, 1.5)\n")
    assert main(["run", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [[1, 2], True, 1.5]


def test_error_format(tmp_path, capsys):
    path = write(tmp_path, "let xs = [1, 2, 3]\nxs[7]\n")
    assert main(["run", path]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"error: IndexError at {path}:2:1: ")
    assert err[1] == "xs[7]"
    assert err[2].startswith("^")


def test_unbuilt_target_exits_2(tmp_path, capsys):
    path = write(tmp_path, "1\n")
    assert main(["run", path, "--target", "cpu"]) == 2
    assert "not built yet" in capsys.readouterr().err


def test_missing_file_exits_2(tmp_path, capsys):
    assert main(["run", str(tmp_path / "none.accel")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_stages_is_not_built_yet(tmp_path, capsys):
    assert main(["stages", write(tmp_path, "1\n")]) == 2
    assert "not built yet" in capsys.readouterr().err


def test_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2
