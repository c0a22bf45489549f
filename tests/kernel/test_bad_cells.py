"""A real kernel survives hundreds of bad cells: each one is answered by an error reply whose
`ename` is an accel error kind (or the kernel's own `MagicError`, or `NotImplementedError` for
what is not built yet), never a Python exception and never `InternalError`, and no global
changes: a failed cell is one transaction, its `%` lines included.

The cells come from templates filled in by a generator with a fixed seed (the same cells on
every run): garbage text, unbalanced brackets, huge sizes (OutOfMemory, checked before the
allocation), type, name and run-time errors, bad meta-commands, cells that define or redefine
globals (or change the target) and then fail, and long loops interrupted while they run. Most
run on `interp`, which compiles nothing; a few run on `cpu`. After every cell a probe cell shows
`%who`, the target and the values of the known globals, which must be what they were.
"""
from __future__ import annotations

import random
import time
from typing import Any

import pytest
from jupyter_client.manager import KernelManager

SEED = 18
CELLS = 320          # random cells, besides the interrupted and the cpu ones below
TIMEOUT = 60

KINDS = {"SyntaxError", "TypeError", "NameError", "IndexError", "DivisionByZero", "SizeError",
         "OutOfMemory", "Interrupted", "MagicError", "NotImplementedError", "LoadError",
         "ZeroDivisionError"}

SETUP = ("let probe_a = 41\n"
         "def probe_f x = x * 2\n"
         "let probe_xs = [[1, 2], [3]]")
PROBE = "%who\n%target\n(probe_a, probe_f 3, probe_xs)"
PROBE_VALUE = "(41, 6, [[1, 2], [3]])"


# ---------------------------------------------------------------- the generator

def _huge(rng: random.Random) -> str:
    return str(rng.choice([10 ** rng.randint(11, 18), rng.randint(10 ** 11, 9 * 10 ** 18),
                           9223372036854775807]))


def _garbage(rng: random.Random) -> str:
    pieces = ["let", "def", "=", "->", "\\", "(", ")", "[", "]", ",", "+", "*", "in", "if",
              "then", "map", "iota", "1", "2.5", "x", "|", "<-", "..<", "`", "$", "@", "?"]
    words = [rng.choice(pieces) for _ in range(rng.randint(1, 12))]
    words.insert(rng.randint(0, len(words)), rng.choice(["$", "@", "?", "`", "#", "!", ";"]))
    return " ".join(words)


def _unbalanced(rng: random.Random) -> str:
    depth = rng.randint(1, 6)
    opener = rng.choice(["(", "["])
    inner = rng.choice(["1 + 2", "map (\\x -> x + 1) [1, 2", "probe_a", "iota 3", "1, 2"])
    text = opener * depth + inner
    return rng.choice([text, text + ")" * (depth + 1) + "]", "]" * depth + inner,
                       f"let u = {text}", f"map (\\x -> {text}) [1]", inner + ")" * depth])


def _huge_size(rng: random.Random) -> str:
    n = _huge(rng)
    return rng.choice([f"iota {n}", f"replicate {n} 1.0", "iota (2**62)",
                       f"length (iota {n})", f"[0..<{n}]", f"map (\\n -> iota n) [1, {n}]",
                       f"generate {n} (\\i -> i * 2)", f"reduce (+) 0 (iota {n})",
                       f"let big = replicate {n} probe_a", f"map (\\r -> replicate {n} r) [1, 2]",
                       f"let probe_a = length (iota {n})"])


def _type_error(rng: random.Random) -> str:
    return rng.choice(["1 + 1.0", "probe_f true", "if 1 then 2 else 3", "[1, 2.0]",
                       "map 3 [1]", "probe_a probe_a", "let probe_xs = probe_xs + 1",
                       "def probe_f x = x + true", "reduce (+) 0 [true]", "(1, 2).5",
                       "map (\\x -> x[0]) [1, 2]", f"iota {rng.randint(1, 9)}.5"])


def _name_error(rng: random.Random) -> str:
    name = f"nosuch_{rng.randint(0, 10 ** 6)}"
    return rng.choice([f"{name} + 1", f"let probe_a = {name}", f"map {name} [1, 2]",
                       f"def g_{rng.randint(0, 99)} x = {name} x"])


def _run_time_error(rng: random.Random) -> str:
    k = rng.randint(3, 1000)
    return rng.choice([f"[1, 2, 3][{k}]", f"probe_xs[{k}]", "probe_a / 0",
                       "head ([] : []i64)", f"map2 (+) (iota {k}) (iota {k + 1})",
                       f"iota (-{k})", f"replicate (-{k}) 1.0", f"take {k} [1, 2]",
                       f"(iota 4)[1:{k + 2}]", f"map (\\r -> r[{k}]) probe_xs",
                       f"map (\\n -> 100 / (n - {k})) (iota {k + 2})",
                       f"loop x = 1 for i < {k} do x / (x - x)", "[0..<10 by 0]",
                       "transpose [[1, 2], [3]]", f"zip (iota {k}) [1]"])


def _bad_magic(rng: random.Random) -> str:
    return rng.choice(["%target nosuch", "%show nosuch", "%budget x", "%", "%%python\nx = 1 / 0",
                       "%target interp extra", "%who extra", "%time", "%step", "%%who",
                       f"%frob_{rng.randint(0, 99)}", "%load a b", "%show ptx", "%reset now",
                       "%show", "%stages nosuch_name + 1", "%time 1 / 0", "%show typed )(",
                       "%step nosuch", "%help me", "%%time 1"])


FAILING = [_garbage, _unbalanced, _huge_size, _type_error, _name_error, _run_time_error,
           _bad_magic]


def _mixed(rng: random.Random) -> str:
    """Definitions, redefinitions and meta-commands that change the session, then a failure:
    nothing of it may stay."""
    good = rng.choice(["let g_new = 7", "let probe_a = 1000", "def probe_f x = x + 100",
                       "let probe_xs = [[9]]", "%target numpy", "%reset", "%target numpy",
                       "def h_new y = y", "%who", "let probe_a = probe_a + 1"])
    parts = [good, rng.choice(["%target interp", "let g_two = 2", "%who", "%target numpy"]),
             rng.choice(FAILING)(rng)]
    if rng.random() < 0.5:
        parts.insert(rng.randint(0, 2), rng.choice(["%target numpy", "let g_three = 3"]))
    if parts[-1].startswith("%%"):           # a cell magic only as a first line
        parts[-1] = "%frob"
    return "\n".join(parts)


def bad_cells(seed: int = SEED, count: int = CELLS) -> list[str]:
    """`count` bad cells, the same for the same seed."""
    rng = random.Random(seed)
    return [(_mixed if rng.random() < 0.25 else rng.choice(FAILING))(rng)
            for _ in range(count)]


def test_the_generator_is_deterministic_and_covers_every_kind_of_cell():
    cells = bad_cells()
    assert cells == bad_cells() and len(cells) >= 300
    for marker in ["iota (2**62)", "%target nosuch", "%budget x", "%%python", "[1, 2, 3][",
                   "let probe_a = 1000", "$", "(((", "1 + 1.0", "nosuch_"]:
        assert any(marker in c for c in cells), marker


# ---------------------------------------------------------------- the kernel

@pytest.fixture(scope="module")
def km():
    manager = KernelManager(kernel_name="accel")
    manager.start_kernel()
    yield manager
    manager.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def kc(km):
    client = km.client()
    client.start_channels()
    client.wait_for_ready(timeout=TIMEOUT)
    yield client
    client.stop_channels()


def _reply(kc, msg_id: str) -> dict[str, Any]:
    while True:
        msg = kc.get_shell_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg["content"]


def _outputs(kc, msg_id: str) -> list[dict]:
    out = []
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return out
        out.append(msg)


def _execute(kc, code: str) -> tuple[dict, list[dict]]:
    msg_id = kc.execute(code, stop_on_error=False)
    return _reply(kc, msg_id), _outputs(kc, msg_id)


def _state(kc) -> tuple[str, str, str]:
    """What the probe shows: the %who table, the target line, the globals' values."""
    reply, outputs = _execute(kc, PROBE)
    assert reply["status"] == "ok", reply
    who = next(m["content"]["data"]["text/plain"] for m in outputs
               if m["msg_type"] == "display_data")
    target = next(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")
    value = next(m["content"]["data"]["text/plain"] for m in outputs
                 if m["msg_type"] == "execute_result")
    return who, target.split("\n")[0], value


def _check_failed(reply: dict, outputs: list[dict], cell: str) -> None:
    assert reply["status"] == "error", (cell, reply)
    assert reply["ename"] in KINDS, (cell, reply["ename"], reply["evalue"])
    errors = [m for m in outputs if m["msg_type"] == "error"]
    assert len(errors) == 1 and errors[0]["content"]["ename"] == reply["ename"], cell
    assert not any("Traceback" in line for line in reply["traceback"]), cell


def _interrupted(km, kc, cell: str) -> tuple[dict, list[dict]]:
    """Run `cell` and interrupt it once it is running."""
    msg_id = kc.execute(cell, stop_on_error=False)
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_input":
            break
    time.sleep(0.5)
    km.interrupt_kernel()
    return _reply(kc, msg_id), _outputs(kc, msg_id)


LONG = "loop x = 0 for i < 100000000 do x + i"
INTERRUPTED = [LONG, f"let g_new = 1\n{LONG}", f"let probe_a = 5\n%target interp\n{LONG}",
               f"%reset\n{LONG}", f"def probe_f x = x\n{LONG}",
               f"reduce (+) 0 (map (\\i -> loop x = i for j < 100000000 do x + j) [1, 2])"]
ON_CPU = ["%target cpu\nmap2 (+) [1, 2] [1, 2, 3]", "%target cpu\nlet g_new = 1\n[1, 2, 3][7]",
          "%target cpu\niota 100000000000000", "%target cpu\nlet probe_a = 2\n1 / 0",
          "%target cpu\nlet big = replicate 99999999999 1.0"]


def test_the_kernel_survives_bad_cells_and_keeps_every_global(km, kc):
    started = time.monotonic()
    reply, _ = _execute(kc, "%target interp\n" + SETUP)
    assert reply["status"] == "ok", reply
    before = _state(kc)
    assert before[1] == "target: interp" and before[2] == PROBE_VALUE
    assert "probe_a" in before[0] and "probe_f" in before[0]
    kinds: dict[str, int] = {}
    for cell in bad_cells():
        reply, outputs = _execute(kc, cell)
        _check_failed(reply, outputs, cell)
        kinds[reply["ename"]] = kinds.get(reply["ename"], 0) + 1
        assert _state(kc) == before, cell
    for cell in INTERRUPTED:
        reply, outputs = _interrupted(km, kc, cell)
        _check_failed(reply, outputs, cell)
        assert reply["ename"] == "Interrupted", cell
        assert _state(kc) == before, cell
    for cell in ON_CPU:
        reply, outputs = _execute(kc, cell)
        _check_failed(reply, outputs, cell)
        kinds[reply["ename"]] = kinds.get(reply["ename"], 0) + 1
        assert _state(kc) == before, cell
    # every family of error was met, the huge sizes as OutOfMemory
    assert {"SyntaxError", "TypeError", "NameError", "IndexError", "DivisionByZero",
            "SizeError", "OutOfMemory", "MagicError", "NotImplementedError"} <= set(kinds)
    assert km.is_alive()
    reply, outputs = _execute(kc, "map (\\x -> x * probe_a) (iota 4)")
    assert reply["status"] == "ok"
    assert [m["content"]["data"]["text/plain"] for m in outputs
            if m["msg_type"] == "execute_result"] == ["[0, 41, 82, 123]"]
    print(f"{len(bad_cells()) + len(INTERRUPTED) + len(ON_CPU)} bad cells in "
          f"{time.monotonic() - started:.1f} s: {sorted(kinds.items())}")


# ---------------------------------------------------------------- the transaction, in process

@pytest.fixture
def kernel():
    from .test_protocol import RecordingKernel
    recording = RecordingKernel()
    recording.accel.set_target("interp")
    return recording


def _names(kernel) -> list[str]:
    return [g.name for g in kernel.accel.names()]


def test_a_failing_meta_command_commits_nothing_of_its_cell(kernel):
    reply = kernel.run("let g = 7\n%target nosuch")
    assert reply["ename"] == "MagicError" and "unknown target" in reply["evalue"]
    assert kernel.accel.lookup("g") is None
    reply = kernel.run("let g = 7\n%target numpy\nlet h = g + 1\n%show nosuch")
    assert reply["ename"] == "MagicError"
    assert kernel.accel.target == "interp" and _names(kernel) == []


def test_a_misspelt_meta_command_fails_before_any_line_runs(kernel):
    kernel.run("let keep = 1")
    reply = kernel.run("let keep = 2\n%who\n%frobnicate")
    assert reply["ename"] == "MagicError" and "%frobnicate" in reply["evalue"]
    assert [m for m, _ in kernel.sent] == ["error"]          # %who did not run either
    assert kernel.run("keep")["status"] == "ok"
    assert next(c for t, c in kernel.sent if t == "execute_result")["data"]["text/plain"] == "1"


def test_reset_and_target_are_undone_when_a_later_line_fails(kernel):
    kernel.run("let a = 1\ndef f x = x + a")
    assert kernel.run("%reset\n%target numpy\nlet b = 2\n1 / 0")["ename"] == "DivisionByZero"
    assert _names(kernel) == ["a", "f"] and kernel.accel.target == "interp"
    assert kernel.run("let a = 5\n%time f 1\nnope")["ename"] == "NameError"
    assert kernel.run("f 1")["status"] == "ok"
    assert next(c for t, c in kernel.sent if t == "execute_result")["data"]["text/plain"] == "2"


def test_a_budget_set_by_a_failing_cell_is_undone(kernel):
    kernel.run("%budget 1GB")
    assert kernel.run("%budget 2MB\n1 / 0")["ename"] == "DivisionByZero"
    assert kernel.accel.budget == 10**9
    assert kernel.run("%budget off")["status"] == "ok" and kernel.accel.budget is None


def test_an_interrupt_undoes_the_cell(kernel, monkeypatch):
    kernel.run("let a = 1")
    execute = kernel.accel.execute

    def interrupted(code, name="cell"):
        if "stop" in code:
            raise KeyboardInterrupt
        return execute(code, name)
    monkeypatch.setattr(kernel.accel, "execute", interrupted)
    reply = kernel.run("let a = 2\n%target numpy\nlet stop = 1")
    assert reply["ename"] == "Interrupted"
    assert kernel.accel.target == "interp" and kernel.accel.lookup("a") is not None
    monkeypatch.undo()
    kernel.run("a")
    assert next(c for t, c in kernel.sent if t == "execute_result")["data"]["text/plain"] == "1"


def test_out_of_memory_and_not_built_are_clean_messages(kernel):
    reply = kernel.run("let big = iota 100000000000000")
    assert reply["ename"] == "OutOfMemory" and "needs" in reply["evalue"]
    assert "OutOfMemory at cell[1]:1:11" in reply["traceback"][0]
    reply = kernel.run("%dashboard now")
    assert reply["ename"] == "MagicError" and "takes no arguments" in reply["evalue"]
    assert all("Traceback" not in line for line in reply["traceback"])


def test_an_internal_error_names_its_stage_and_logs_the_traceback(kernel, monkeypatch, caplog):
    from accel_kernel.passes import fuse

    def broken(self, program):
        raise KeyError("no such statement")
    monkeypatch.setattr(fuse.Fuser, "program", broken)
    kernel.accel.set_target("cpu")
    with caplog.at_level("ERROR"):
        reply = kernel.run("let lost = 1\nmap (\\x -> x + 1) [1, 2]")
    assert reply["ename"] == "InternalError" and reply["evalue"].startswith("fuse: KeyError")
    assert all("Traceback" not in line for line in reply["traceback"])
    assert "Traceback" in caplog.text and kernel.accel.lookup("lost") is None
