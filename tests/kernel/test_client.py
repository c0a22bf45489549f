"""The accel kernel as a notebook sees it: a real kernel process driven by jupyter_client."""
from __future__ import annotations

import time
from typing import Any

import pytest
from jupyter_client.manager import KernelManager

TIMEOUT = 60


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
    # these tests are about the protocol: the interpreter, which compiles nothing, runs them
    # (and stops at an interrupt between any two steps); silent, so no cell is counted
    msg_id = client.execute("%target interp", silent=True)
    assert reply_to(client, msg_id)["content"]["status"] == "ok"
    yield client
    client.stop_channels()


def reply_to(kc, msg_id: str, timeout: float = TIMEOUT) -> dict[str, Any]:
    while True:
        msg = kc.get_shell_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


def execute(kc, code: str, timeout: float = TIMEOUT) -> tuple[dict, list[dict]]:
    """Run a cell; return the reply content and its iopub outputs (stream, results, errors).
    Not `stop_on_error`: ipykernel would abort the next request if it came in just after a
    failed one (as it can on a busy machine), and these tests run cells after failed ones."""
    msg_id = kc.execute(code, stop_on_error=False)
    reply = reply_to(kc, msg_id, timeout)
    return reply["content"], outputs_of(kc, msg_id, timeout)


def outputs_of(kc, msg_id: str, timeout: float = TIMEOUT) -> list[dict]:
    outputs = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return outputs
        if msg["msg_type"] in ("stream", "execute_result", "display_data", "error"):
            outputs.append(msg)


def result_text(outputs: list[dict]) -> str | None:
    for msg in outputs:
        if msg["msg_type"] == "execute_result":
            return msg["content"]["data"]["text/plain"]
    return None


def who(kc) -> str:
    reply, outputs = execute(kc, "%who")
    assert reply["status"] == "ok"
    return outputs[0]["content"]["data"]["text/plain"]


def test_globals_live_across_cells(kc):
    assert execute(kc, "def sq x = x * x\nlet xs = [1, 2, 3]")[0]["status"] == "ok"
    reply, outputs = execute(kc, "map sq xs")
    assert reply["status"] == "ok"
    assert result_text(outputs) == "[1, 4, 9]"
    assert "sq" in who(kc)


def test_completions_for_builtins_and_own_defs(kc):
    execute(kc, "def client_helper x = x + 1")
    reply = reply_to(kc, kc.complete("reduce (+) 0 (red"))["content"]
    assert {"reduce", "reduce_by_index"} <= set(reply["matches"])
    assert reply["cursor_start"] == 14 and reply["cursor_end"] == 17
    reply = reply_to(kc, kc.complete("client_h"))["content"]
    assert reply["matches"] == ["client_helper"]


def test_is_complete(kc):
    reply = reply_to(kc, kc.is_complete("let f = (1 +"))["content"]
    assert reply["status"] == "incomplete"
    assert reply_to(kc, kc.is_complete("let f = (1 + 2)"))["content"]["status"] == "complete"


def test_inspect_map(kc):
    reply = reply_to(kc, kc.inspect("map", 3))["content"]
    assert reply["found"]
    text = reply["data"]["text/plain"]
    assert text.startswith("map : ") and "->" in text


def test_failed_cell_changes_no_global(kc):
    assert execute(kc, "let x = 5")[0]["status"] == "ok"
    reply, outputs = execute(kc, "let x = 7\nlet y = [1, 2, 3][100]")
    assert reply["status"] == "error" and reply["ename"] == "IndexError"
    assert [m["msg_type"] for m in outputs] == ["error"]
    assert "cell[" in reply["traceback"][0] and ":2:" in reply["traceback"][0]
    assert result_text(execute(kc, "x")[1]) == "5"
    assert not any(line.split()[:1] == ["y"] for line in who(kc).splitlines())


def test_syntax_error(kc):
    reply, _ = execute(kc, "let = 3")
    assert reply["status"] == "error" and reply["ename"] == "SyntaxError"
    assert reply["traceback"][1] == "let = 3" and "^" in reply["traceback"][2]
    assert result_text(execute(kc, "1 + 1")[1]) == "2"


def test_unbound_name(kc):
    reply, _ = execute(kc, "not_defined_anywhere + 1")
    assert reply["status"] == "error" and reply["ename"] == "NameError"
    assert "not_defined_anywhere" in reply["evalue"]
    assert result_text(execute(kc, "2 * 3")[1]) == "6"


def test_redefinition_reports_dependents(kc):
    execute(kc, "def base x = x + 1\ndef uses_base x = base x * 2")
    reply, outputs = execute(kc, "def base x = x + 10")
    assert reply["status"] == "ok"
    notes = "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")
    assert "redefined base" in notes and "uses_base" in notes
    assert result_text(execute(kc, "uses_base 1")[1]) == "22"


def test_unknown_magic(kc):
    reply, outputs = execute(kc, "%frobnicate now")
    assert reply["status"] == "error" and reply["ename"] == "MagicError"
    assert "%who" in reply["evalue"]
    assert [m["msg_type"] for m in outputs] == ["error"]


def test_interrupt_stops_a_long_evaluation(km, kc):
    msg_id = kc.execute("loop acc = 0 for i < 1000000000 do acc + i % 7", stop_on_error=False)
    # wait until the cell is running (its execute_input went out), then a moment more
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_input":
            break
    time.sleep(1.0)
    km.interrupt_kernel()
    reply = reply_to(kc, msg_id, timeout=TIMEOUT)["content"]
    outputs_of(kc, msg_id)
    assert reply["status"] == "error" and reply["ename"] == "Interrupted"
    assert km.is_alive()
    assert result_text(execute(kc, "1 + 2")[1]) == "3"


def test_comm_info_and_widget_control_comm(kc):
    reply = reply_to(kc, kc.comm_info())["content"]
    assert reply["status"] == "ok" and isinstance(reply["comms"], dict)

    # what JupyterLab's widget manager does when it connects: open the control comm and ask
    # for the state of every widget
    comm_id = "test-control-comm"
    open_msg = kc.session.msg("comm_open", {"comm_id": comm_id, "target_name":
                                            "jupyter.widget.control", "data": {}},
                              metadata={"version": "1.0.0"})
    kc.shell_channel.send(open_msg)
    request = kc.session.msg("comm_msg", {"comm_id": comm_id,
                                          "data": {"method": "request_states"}})
    kc.shell_channel.send(request)
    deadline = time.monotonic() + TIMEOUT
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["msg_type"] == "comm_msg" and msg["content"]["comm_id"] == comm_id:
            assert msg["content"]["data"]["method"] == "update_states"
            break
        assert time.monotonic() < deadline
    reply = reply_to(kc, kc.comm_info(target_name="jupyter.widget.control"))["content"]
    assert reply["comms"] == {comm_id: {"target_name": "jupyter.widget.control"}}
    kc.shell_channel.send(kc.session.msg("comm_close", {"comm_id": comm_id, "data": {}}))
    assert result_text(execute(kc, "1")[1]) == "1"


def test_a_big_array_stays_flat_and_shows_its_ends(kc):
    """A compiled target's array is kept as its buffer: reading one element and showing it
    read only those elements (numpy's summary: the first and last three, then the shape)."""
    assert execute(kc, "%target numpy")[0]["status"] == "ok"
    try:
        reply, outputs = execute(kc, "let big_flat = iota 200000\nbig_flat[7]")
        assert reply["status"] == "ok" and result_text(outputs) == "7"
        assert result_text(execute(kc, "big_flat")[1]) == \
            "[0, 1, 2, ..., 199997, 199998, 199999] : [200000]i64"
    finally:
        assert execute(kc, "%target interp")[0]["status"] == "ok"
    assert result_text(execute(kc, "big_flat[199999] - big_flat[9]")[1]) == "199990"
