"""The Jupyter messaging protocol: jupyter_kernel_test's conformance suite against the running
`accel` kernel, then the kernel's translation (messages, bundles, history, lexer) in process."""
from __future__ import annotations

import asyncio
import signal
from typing import Any

import jupyter_kernel_test as jkt
import pytest
from jupyter_client.manager import start_new_kernel

from accel_kernel.kernel import display
from accel_kernel.kernel.kernel import AccelKernel, History
from accel_kernel.lang import types as T


class AccelKernelTests(jkt.KernelTests):
    kernel_name = "accel"
    language_name = "accel"
    file_extension = ".accel"

    # accel has no print or any other way to write to stdout or stderr (it is pure), so
    # code_hello_world and code_stderr stay unset and those two tests are skipped.

    completion_samples = [
        {"text": "red", "matches": {"reduce", "reduce_by_index", "reduce_by_index_2d",
                                    "reduce_comm"}},
        {"text": "zipW", "matches": {"zipWithSeq"}},
        {"text": "let ys = map proto_sq", "matches": {"proto_square"}},   # a user def
    ]
    complete_code_samples = ["1 + 2", "def f x = x + 1", "let xs = [1, 2, 3]", "%who",
                             "%who\nmap (\\x -> x) [1]"]
    incomplete_code_samples = ["let f = (1 +", "def f x =", "map (\\x ->", "[1, 2,",
                               "let a = 1 in"]
    invalid_code_samples = ["let x = )", "1 + ]"]

    code_generate_error = "[1, 2, 3][10]"
    code_execute_result = [
        {"code": "1 + 2", "result": "3"},
        {"code": "[1, 2, 3]", "result": "[1, 2, 3]"},
        {"code": "map (\\x -> x * 2) (iota 4)", "result": "[0, 2, 4, 6]"},
        {"code": "(1, 2.5, true)", "result": "(1, 2.5, true)"},
        {"code": "[[1, 2], [3]]", "result": "[[1, 2], [3]]"},
        {"code": "3i32 * 2i32", "result": "6i32"},
        {"code": "[[1, 2], [3, 4]]", "mime": "text/html"},
    ]
    # %who shows its table as display_data (accel code itself displays nothing but its result)
    code_display_data = [{"code": "%who", "mime": "text/plain"},
                         {"code": "%who", "mime": "text/html"}]
    code_history_pattern = "1 + *"
    supported_history_operations = ("tail", "range", "search")
    code_inspect_sample = "map"
    # the kernel never clears output, so code_clear_output stays unset

    @classmethod
    def setUpClass(cls) -> None:
        cls.km, cls.kc = start_new_kernel(kernel_name=cls.kernel_name)
        # the protocol, not a target, is tested here: the interpreter compiles nothing
        reply = cls.kc.execute_interactive("%target interp", silent=True, timeout=30)
        assert reply["content"]["status"] == "ok"
        reply = cls.kc.execute_interactive("def proto_square x = x * x", timeout=30)
        assert reply["content"]["status"] == "ok"

    def test_kernel_info_has_no_debugger(self) -> None:
        self.flush_channels()
        self.kc.kernel_info()
        reply = self.kc.get_shell_msg(timeout=jkt.TIMEOUT)
        content = reply["content"]
        assert content["debugger"] is False
        assert "debugger" not in content.get("supported_features", [])
        info = content["language_info"]
        assert info["mimetype"] == "text/x-accel"
        assert info["pygments_lexer"] == "accel"
        assert content["implementation"] == "accel_kernel"


# ---------------------------------------------------------------- in process, no ZMQ

class RecordingKernel(AccelKernel):
    """The kernel class with its messages recorded instead of sent."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sent: list[tuple[str, dict]] = []

    def send_response(self, stream, msg_or_type, content=None, *args, **kwargs):  # type: ignore[override]
        self.sent.append((msg_or_type, content))

    def run(self, code: str, **kwargs: Any) -> dict:
        self.execution_count += 1
        self.sent.clear()
        return asyncio.run(self.do_execute(code, silent=False, **kwargs))


@pytest.fixture
def kernel() -> RecordingKernel:
    recording = RecordingKernel()
    recording.accel.set_target("interp")     # the translation is tested, not a target
    return recording


def test_a_fresh_kernel_runs_on_cpu_and_gives_the_interpreters_values():
    fresh = RecordingKernel()
    assert fresh.accel.target == "cpu" and "cpu by default" in fresh.banner
    assert fresh.run("%target")["status"] == "ok"
    (_, shown), = fresh.sent
    assert shown["text"].startswith("target: cpu\n") and "* cpu" in shown["text"]
    code = "let xss = [[1, 2], [3], []]\nmap (\\r -> reduce (+) 0 r) xss"
    values = []
    for target in ("cpu", "interp"):
        fresh.run(f"%target {target}")
        assert fresh.run(code)["status"] == "ok"
        values.append(next(c for t, c in fresh.sent if t == "execute_result")["data"])
    assert values[0] == values[1] and values[0]["text/plain"] == "[3, 3, 0]"


def test_execute_sends_result_and_reply(kernel):
    reply = kernel.run("let xs = [1, 2, 3]\nmap (\\x -> x + 1) xs")
    assert reply["status"] == "ok" and reply["execution_count"] == 1
    (msg_type, content), = kernel.sent
    assert msg_type == "execute_result"
    assert content["data"]["text/plain"] == "[2, 3, 4]"
    assert "<table>" in content["data"]["text/html"]


def test_cell_of_only_definitions_sends_nothing(kernel):
    assert kernel.run("def f x = x + 1")["status"] == "ok"
    assert kernel.sent == []


def test_error_reply_has_headline_line_and_caret(kernel):
    reply = kernel.run("let ok = 1\n[1, 2][7]")
    assert reply["status"] == "error" and reply["ename"] == "IndexError"
    assert "out of bounds" in reply["evalue"]
    headline, source, caret = reply["traceback"]
    assert "IndexError at cell[1]:2:1" in headline
    assert source == "[1, 2][7]" and caret.startswith("^")
    assert [m for m, _ in kernel.sent] == ["error"]
    assert kernel.accel.lookup("ok") is None          # a failed cell changes no global


def test_error_after_a_magic_points_at_the_right_line(kernel):
    reply = kernel.run("%target interp\n\nnope + 1")
    assert reply["ename"] == "NameError"
    assert "cell[1]:3:1" in reply["traceback"][0]


def test_internal_error_is_one_line_and_kernel_survives(kernel, monkeypatch):
    def broken(code, name="cell"):
        raise RuntimeError("boom\nwith a second line")
    monkeypatch.setattr(kernel.accel, "execute", broken)
    reply = kernel.run("1 + 1")
    assert reply["status"] == "error" and reply["ename"] == "InternalError"
    assert "RuntimeError: boom" in reply["evalue"] and "report" in reply["evalue"]
    assert all("Traceback" not in line for line in reply["traceback"])
    monkeypatch.undo()
    assert kernel.run("1 + 1")["status"] == "ok"


def test_unknown_magic_and_target_that_cannot_run_here(kernel, monkeypatch):
    reply = kernel.run("%frobnicate")
    assert reply["ename"] == "MagicError" and "%who" in reply["evalue"]
    from accel_kernel.backends.cuda import device
    monkeypatch.setattr(device, "unavailable", lambda: device.NO_GPU)
    reply = kernel.run("%target cuda")
    assert reply["ename"] == "NotImplementedError" and "no NVIDIA GPU found" in reply["evalue"]


def test_a_construct_the_numpy_target_does_not_run_yet_is_reported(kernel, not_built):
    kernel.run("%target numpy")
    assert kernel.run("let ok = map (\\x -> x + 1) [1, 2]")["status"] == "ok"
    reply = kernel.run("let t = " + not_built)
    assert reply["ename"] == "NotImplementedError" and "`sort` of tuples" in reply["evalue"]
    assert all("Traceback" not in line for line in reply["traceback"])
    assert kernel.run("ok")["status"] == "ok"
    assert kernel.run("t")["status"] == "error"         # the failed cell bound nothing


def test_the_default_target_reports_what_it_does_not_build_and_does_not_fall_back(not_built):
    fresh = RecordingKernel()                         # on cpu, the default
    code = not_built
    reply = fresh.run(code)
    assert reply["ename"] == "NotImplementedError" and "`sort` of tuples" in reply["evalue"]
    assert "target cpu; `%target interp` runs it" in reply["evalue"]
    fresh.run("%target interp")
    assert fresh.run(code)["status"] == "ok"


def test_notes_go_to_stdout(kernel):
    kernel.run("def f x = x + 1\ndef g x = f x * 2")
    kernel.run("def f x = x + 10")
    streams = [c["text"] for m, c in kernel.sent if m == "stream"]
    assert streams and "redefined f" in streams[0] and "g" in streams[0]


def test_sigint_handler_is_restored(kernel):
    before = signal.getsignal(signal.SIGINT)
    seen = []
    original = kernel.accel.execute

    def execute(code, name="cell"):
        handler = signal.getsignal(signal.SIGINT)
        handler(signal.SIGINT, None)            # what an interrupt does meanwhile
        seen.append(kernel.accel.cancel.is_set())
        return original(code, name)
    kernel.accel.execute = execute
    kernel.run("1")
    assert seen == [True]
    assert signal.getsignal(signal.SIGINT) is before


def test_silent_execution_sends_nothing_and_keeps_no_history(kernel):
    kernel.execution_count += 1
    asyncio.run(kernel.do_execute("let s = 3\ns", silent=True))
    assert kernel.sent == [] and kernel.history.entries == []
    assert kernel.accel.lookup("s") is not None


def test_user_expressions(kernel):
    kernel.run("let u = 4")
    reply = kernel.run("1", user_expressions={"a": "u * 2", "b": "nope"})
    assert reply["user_expressions"]["a"]["data"]["text/plain"] == "8"
    assert reply["user_expressions"]["b"]["ename"] == "NameError"


def complete(kernel, code, cursor=None):
    return asyncio.run(kernel.do_complete(code, len(code) if cursor is None else cursor))


def test_complete_cursor_range(kernel):
    kernel.run("def my_fun x = x")
    reply = complete(kernel, "map (my_f")
    assert reply["matches"] == ["my_fun"]
    assert (reply["cursor_start"], reply["cursor_end"]) == (5, 9)
    reply = complete(kernel, "map (my_fx) 1", cursor=9)     # the word after the cursor too
    assert (reply["cursor_start"], reply["cursor_end"]) == (5, 10)
    assert complete(kernel, "3i3")["matches"] == []          # inside a number literal
    assert "reduce" in complete(kernel, "reduce (+) 0 (red")["matches"]


def test_complete_qualified_names_and_primed_names(kernel):
    reply = complete(kernel, "let x = f64.sq")
    assert reply["matches"] == ["f64.sqrt"]
    assert (reply["cursor_start"], reply["cursor_end"]) == (8, 14)
    assert complete(kernel, "i64.ma")["matches"] == ["i64.max", "i64.maximum"]
    assert "i32.f64" in complete(kernel, "i32.")["matches"]
    kernel.run("let xs' = iota 3")
    assert complete(kernel, "xs' |> map (+1) |> reduce (+) 0 xs")["matches"] == ["xs'"]


def test_complete_magics(kernel):
    reply = complete(kernel, "%ta")
    assert reply["matches"] == ["%target"] and reply["cursor_start"] == 0
    reply = complete(kernel, "let x = 1\n%targ")
    assert reply["matches"] == ["%target"] and reply["cursor_start"] == 10
    reply = complete(kernel, "%target c")
    assert reply["matches"] == ["cpu", "cuda"] and reply["cursor_start"] == 8


def test_inspect(kernel):
    reply = asyncio.run(kernel.do_inspect("reduce (+) 0 (map f xs)", 16))
    assert reply["found"] and reply["data"]["text/plain"].startswith("map : ")
    kernel.run("-- Doubles a number.\ndef dbl x = x * 2")
    reply = asyncio.run(kernel.do_inspect("dbl ", 4))
    assert "Doubles a number." in reply["data"]["text/plain"]
    assert "**dbl**" in reply["data"]["text/markdown"]
    assert not asyncio.run(kernel.do_inspect("nothing_here", 3))["found"]


def test_is_complete(kernel):
    def status(code):
        return asyncio.run(kernel.do_is_complete(code))
    assert status("%who")["status"] == "complete"
    assert status("%%python\nx = (")["status"] == "complete"
    assert status("1 + 2")["status"] == "complete"
    reply = status("let f = (1 +")
    assert reply["status"] == "incomplete" and isinstance(reply["indent"], str)


def test_kernel_info_property(kernel):
    info = kernel.kernel_info
    assert info["debugger"] is False and "debugger" not in info["supported_features"]
    assert info["language_info"]["name"] == "accel"


def test_comm_targets_registered(kernel):
    assert {"jupyter.widget", "jupyter.widget.control"} <= set(kernel.comm_manager.targets)
    for msg_type in ("comm_open", "comm_msg", "comm_close", "comm_info_request"):
        assert msg_type in kernel.shell_handlers


# ---------------------------------------------------------------- history

def test_history_queries():
    history = History()
    for line, code in enumerate(["1 + 2", "let x = 1", "1 + 2", "x * 2"], start=1):
        history.add(line, code, None)
    assert [e.input for e in history.query("tail", n=2)] == ["1 + 2", "x * 2"]
    assert [e.line for e in history.query("range", session=0, start=2, stop=4)] == [2, 3]
    assert history.query("range", session=-1, start=1, stop=3) == []
    assert [e.line for e in history.query("search", pattern="1 + *")] == [1, 3]
    assert [e.line for e in history.query("search", pattern="1 + *", unique=True)] == [3]
    assert [e.line for e in history.query("search", pattern="*", n=1)] == [4]


# ---------------------------------------------------------------- display bundles

def test_value_html_escapes_and_truncates():
    arr = [list(map(lambda v: __import__("numpy").int64(v), range(i * 50, i * 50 + 50)))
           for i in range(50)]
    bundle = display.result_bundle(arr, T.Array(T.Array(T.I64)))
    html = bundle["text/html"]
    assert "…" in html and "⋮" in html and "shape 50 × 50" in html
    assert html.count("<tr>") == 1 + 21            # header, 20 rows and the ellipsis row
    assert ": []" in html and "[]i64" in html


def test_ragged_html_is_a_nested_list():
    import numpy as np
    value = [[np.int64(1), np.int64(2)], [np.int64(3)]]
    html = display.value_html(value, T.Array(T.Array(T.I64)))
    assert "<ol" in html and "<code>[1, 2]</code>" in html and "<table>" not in html


def test_who_bundle_escapes():
    from accel_kernel.session import GlobalInfo
    bundle = display.who_bundle([GlobalInfo("f", "def", "a -> []<b>", "")])
    assert "&lt;b&gt;" in bundle["text/html"]


# ---------------------------------------------------------------- Pygments lexer

def test_lexer_is_registered_and_knows_every_builtin():
    from pygments.lexers import get_lexer_by_name
    from pygments.token import Name

    from accel_kernel.kernel.highlight import AccelLexer, BUILTINS, TYPES, KEYWORDS
    from accel_kernel.lang.builtins import BUILTINS as LANGUAGE_BUILTINS
    try:
        lexer = get_lexer_by_name("accel")
    except Exception:   # entry point not installed yet (package not reinstalled)
        lexer = AccelLexer()
    assert isinstance(lexer, AccelLexer)
    assert set(LANGUAGE_BUILTINS) <= set(BUILTINS) | set(TYPES) | set(KEYWORDS)
    tokens = [(t, v) for t, v in lexer.get_tokens("map (\\x -> x + 3i32) xs -- hi\n") if v.strip()]
    assert tokens[0] == (Name.Builtin, "map")
    assert ("Token.Literal.Number.Integer", "3i32") in [(str(t), v) for t, v in tokens]
    assert str(tokens[-1][0]) == "Token.Comment.Single"


# ---------------------------------------------------------------- kernelspec

def test_install_kernelspec_into_a_prefix(tmp_path):
    import json
    from pathlib import Path

    from accel_kernel.kernel.install import install_kernelspec
    where = Path(install_kernelspec(prefix=str(tmp_path)))
    assert where == tmp_path / "share" / "jupyter" / "kernels" / "accel"
    spec = json.loads((where / "kernel.json").read_text())
    assert spec["argv"][1:] == ["-m", "accel_kernel.kernel", "-f", "{connection_file}"]
    assert spec["language"] == "accel" and spec["interrupt_mode"] == "signal"
    for name in ("logo-32x32.png", "logo-64x64.png", "kernel.js"):
        assert (where / name).is_file()
