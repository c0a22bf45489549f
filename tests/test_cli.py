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
    assert main(["run", path, "--target", "interp"]) == 0
    assert capsys.readouterr().out == "[1, 4, 9]\n"


def test_run_uses_cpu_by_default_and_prints_the_interpreters_value(tmp_path, capsys,
                                                                    monkeypatch):
    from accel_kernel.session import Session
    used = []
    execute = Session.execute

    def spy(self, code, name="cell"):
        used.append(self.target)
        return execute(self, code, name)

    monkeypatch.setattr(Session, "execute", spy)
    path = write(tmp_path, "def sq x = x * x\nmap sq [1, 2, 3]\n")
    assert main(["run", path]) == 0
    assert main(["run", path, "--target", "interp"]) == 0
    assert capsys.readouterr().out == "[1, 4, 9]\n" * 2
    assert used == ["cpu", "interp"]


def test_a_construct_the_default_target_does_not_build_exits_2(tmp_path, capsys, not_built):
    path = write(tmp_path, not_built + "\n")
    assert main(["run", path]) == 2
    err = capsys.readouterr().err
    assert "`sort` of tuples" in err and "(target cpu; --target interp runs it)" in err
    assert main(["run", path, "--target", "interp"]) == 0      # no silent fallback above


def test_run_json(tmp_path, capsys):
    path = write(tmp_path, "([1, 2], true, 1.5)\n")
    assert main(["run", path, "--json", "--target", "interp"]) == 0
    assert json.loads(capsys.readouterr().out) == [[1, 2], True, 1.5]


def test_error_format(tmp_path, capsys):
    path = write(tmp_path, "let xs = [1, 2, 3]\nxs[7]\n")
    assert main(["run", path, "--target", "interp"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"error: IndexError at {path}:2:1: ")
    assert err[1] == "xs[7]"
    assert err[2].startswith("^")


def test_target_that_cannot_run_here_exits_2(tmp_path, capsys, monkeypatch):
    from accel_kernel.backends.cuda import device
    monkeypatch.setattr(device, "unavailable", lambda: device.NO_GPU)
    path = write(tmp_path, "1\n")
    assert main(["run", path, "--target", "cuda"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cuda: no NVIDIA GPU found" in err


def test_missing_file_exits_2(tmp_path, capsys):
    assert main(["run", str(tmp_path / "none.accel")]) == 2
    assert "cannot read" in capsys.readouterr().err


REGULAR_ROWS = """\
def row_sums (xss: [n][m]i64) : []i64 = map (\\r -> reduce (+) 0 r) xss
def ragged (xs: []i64) : [][]i64 = map (\\k -> iota k) xs
"""


def test_stages_text_lists_every_stage(tmp_path, capsys):
    assert main(["stages", write(tmp_path, REGULAR_ROWS)]) == 0
    out = capsys.readouterr().out
    for stage in ("parse", "typed", "desugar", "shape", "regularity"):
        assert f"== {stage} ==" in out


def test_stages_json_of_one_stage_and_entry(tmp_path, capsys):
    path = write(tmp_path, REGULAR_ROWS)
    assert main(["stages", path, "--entry", "ragged", "--stage", "regularity",
                 "--format", "json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["stage"] == "regularity"
    assert set(view["bindings"]) == {"ragged"}
    assert view["bindings"]["ragged"]["regularity"] == "R>Ir>S"
    assert view["bindings"]["ragged"]["type"] == "[][]i64"
    assert all({"id", "op", "type"} <= set(node) for node in view["nodes"])


def test_stages_dot_needs_no_renderer(tmp_path, capsys):
    assert main(["stages", write(tmp_path, REGULAR_ROWS), "--stage", "shape",
                 "--format", "dot"]) == 0
    assert capsys.readouterr().out.lstrip().startswith("digraph")


def test_stages_a_stage_the_program_cannot_reach_yet(tmp_path, capsys, not_built):
    text = not_built + "\n"
    assert main(["stages", write(tmp_path, text), "--stage", "codegen"]) == 2
    err = capsys.readouterr().err
    assert "not built yet" in err and "`sort` of tuples" in err


def test_stages_unknown_stage_and_entry(tmp_path, capsys):
    path = write(tmp_path, REGULAR_ROWS)
    assert main(["stages", path, "--stage", "optimise"]) == 2
    assert "unknown stage" in capsys.readouterr().err
    assert main(["stages", path, "--entry", "nothing"]) == 1
    assert capsys.readouterr().err.startswith("error: NameError")


def test_stages_reports_accel_errors(tmp_path, capsys):
    path = write(tmp_path, "def f x = x +\n")
    assert main(["stages", path]) == 1
    assert capsys.readouterr().err.startswith(f"error: SyntaxError at {path}:")


def test_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2


# ---------------------------------------------------------------- only accel errors (issue 18)

def test_a_huge_size_is_out_of_memory(tmp_path, capsys):
    path = write(tmp_path, "let xs = iota 100000000000000\nxs\n")
    assert main(["run", path, "--target", "interp"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"error: OutOfMemory at {path}:1:10: iota 100000000000000 needs ")
    assert err[1:] == ["let xs = iota 100000000000000", " " * 9 + "^" * 20]


def _broken_fuse(monkeypatch):
    from accel_kernel.passes import fuse

    def broken(self, program):
        raise KeyError("no such statement")
    monkeypatch.setattr(fuse.Fuser, "program", broken)


def test_an_internal_error_is_one_message_without_a_traceback(tmp_path, capsys, monkeypatch):
    _broken_fuse(monkeypatch)
    path = write(tmp_path, "map (\\x -> x + 1) [1, 2]\n")
    assert main(["run", path, "--target", "cpu"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: InternalError at <unknown>: fuse: KeyError: 'no such "
                          "statement' (a bug of accel_kernel")
    assert "Traceback" not in err and "accel run --debug" in err
    assert main(["stages", path]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: InternalError") and "Traceback" not in err


def test_debug_prints_the_traceback_of_an_internal_error(tmp_path, capsys, monkeypatch):
    _broken_fuse(monkeypatch)
    path = write(tmp_path, "map (\\x -> x + 1) [1, 2]\n")
    assert main(["run", path, "--target", "cpu", "--debug"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: InternalError") and "Traceback (most recent call last)" in err
    assert "in broken" in err and 'KeyError: \'no such statement\'' in err
    assert main(["stages", path, "--debug"]) == 3
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_a_failure_outside_the_session_is_an_internal_error_too(tmp_path, capsys, monkeypatch):
    from accel_kernel import session

    def unprintable(self):
        raise ValueError("cannot show")
    monkeypatch.setattr(session.CellResult, "text", property(unprintable))
    path = write(tmp_path, "1 + 1\n")
    assert main(["run", path, "--target", "interp"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: InternalError at <unknown>: ") and "ValueError: cannot show" in err
    assert "Traceback" not in err


def test_run_with_a_budget_and_a_trace(tmp_path, capsys, monkeypatch):
    from accel_kernel.runtime.events import Alloc
    from accel_kernel.session import Session
    execute = Session.execute

    def with_an_event(self, code, name="cell"):      # what the cuda target's pool emits
        self.events.emit(Alloc("cuda:0", 1, 80, 80))
        return execute(self, code, name)
    monkeypatch.setattr(Session, "execute", with_an_event)
    path = write(tmp_path, "map (\\x -> x + 1) [1, 2]\n")
    trace = tmp_path / "t.jsonl"
    assert main(["run", path, "--target", "interp", "--budget", "1.5GiB",
                 "--trace", str(trace)]) == 0
    assert capsys.readouterr().out == "[2, 3]\n"
    (line,) = trace.read_text().splitlines()
    assert json.loads(line)["kind"] == "alloc" and json.loads(line)["nbytes"] == 80


def test_run_with_a_budget_that_is_not_a_size_exits_2(tmp_path, capsys):
    path = write(tmp_path, "1\n")
    assert main(["run", path, "--budget", "lots"]) == 2
    assert "cannot read `lots` as a size" in capsys.readouterr().err
    assert main(["run", path, "--trace", str(tmp_path / "no" / "such" / "t.jsonl")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_run_on_a_local_cluster_gives_the_same_value(tmp_path, capsys):
    path = write(tmp_path, "foldSeq (+) 0 (mapSeq (\\i -> i * i) (produce 1000 (\\i -> i)))\n")
    assert main(["run", path, "--workers", "2"]) == 0
    assert capsys.readouterr().out == f"{sum(i * i for i in range(1000))}\n"
    with pytest.raises(SystemExit) as exited:
        main(["run", path, "--workers", "2", "--scheduler", "tcp://127.0.0.1:9"])
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
    assert main(["run", path, "--workers", "0"]) == 2
    assert "a cluster is `local N`" in capsys.readouterr().err


def test_ctrl_c_stops_a_compiled_loop_without_a_traceback(tmp_path):
    """SIGINT to `accel run` (Ctrl-C) while a loop inside a map runs on `cpu` (its natural
    length: hours): the run ends with accel's Interrupted at the loop (or, if the signal came
    before the session was made, `error: interrupted`), never a Python traceback."""
    import signal
    import subprocess
    import sys
    import time
    program = tmp_path / "long.accel"
    program.write_text("map (\\n -> loop s = 0 for i < n do s + i % 7) [10000000000000, 3]\n")
    child = subprocess.Popen([sys.executable, "-m", "accel_kernel", "run", str(program),
                              "--target", "cpu"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    child.send_signal(signal.SIGINT)
    try:
        out, err = child.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        child.kill()
        raise AssertionError("accel run went on after Ctrl-C")
    assert "Traceback" not in err and out == ""
    assert (child.returncode, err.splitlines()[0]) in (
        (1, f"error: Interrupted at {program}:1:12: evaluation interrupted"),
        (130, "error: interrupted")), err
