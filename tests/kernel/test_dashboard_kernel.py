"""The dashboard through the kernel, on real sequences (`%target cpu`, chunked by the adaptive
scheduler): a real kernel process driven by jupyter_client (the widget's display, its trait
updates as comm messages while the cell runs, a Cancel click sent as a comm message during the
cell), and the kernel class in process (which cells show it, the final `update_display_data`,
SIGINT, the cell thread)."""
from __future__ import annotations

import asyncio
import signal
import threading
from typing import Any

import pytest
from jupyter_client.manager import KernelManager

from accel_kernel.runtime import events as ev

from .test_protocol import RecordingKernel

WIDGET = "application/vnd.jupyter.widget-view+json"
TIMEOUT = 120
# a sequence whose elements are irregular rows (`iota (i % 1000)`), N of them
SEQUENCE = "foldSeq (+) 0 (mapSeq (\\i -> reduce (+) 0 (iota (i % 1000))) (produce {} (\\i -> i)))"
SETUP = "%target cpu\n%budget 256MB"          # the budget bounds the chunks
LONG = 300_000_000          # a sequence that runs for seconds here


def sequence(n: int) -> str:
    return SEQUENCE.format(n)


def sequence_sum(n: int) -> int:
    """What `sequence(n)` computes, for n a multiple of 1000."""
    return n // 1000 * sum(r * (r - 1) // 2 for r in range(1000))


# ---------------------------------------------------------------- a real kernel process

@pytest.fixture(scope="module")
def km():
    manager = KernelManager(kernel_name="accel")
    # a sequence shows its dashboard after 0.5 s (not 1 s): the tests' sequences stay short
    manager.start_kernel(extra_arguments=["--AccelKernel.dashboard_after=0.5"])
    yield manager
    manager.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def kc(km):
    client = km.client()
    client.start_channels()
    client.wait_for_ready(timeout=TIMEOUT)
    msg_id = client.execute(SETUP + "\n" + sequence(1000), silent=True)   # compiles it
    assert reply_to(client, msg_id)["content"]["status"] == "ok"
    yield client
    client.stop_channels()


def reply_to(kc, msg_id: str, timeout: float = TIMEOUT) -> dict[str, Any]:
    while True:
        msg = kc.get_shell_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


def iopub_until_idle(kc, msg_id: str, on_message=None) -> list[dict]:
    """Every iopub message until the cell's idle status (comm messages included, whatever
    their parent); `on_message(msg)` is called on each as it comes."""
    messages = []
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        messages.append(msg)
        if on_message is not None:
            on_message(msg)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status" \
                and msg["content"]["execution_state"] == "idle":
            return messages


def of_cell(messages: list[dict], msg_id: str, *types: str) -> list[dict]:
    return [m for m in messages if m["parent_header"].get("msg_id") == msg_id
            and m["msg_type"] in types]


def widget_updates(messages: list[dict], model_id: str) -> list[dict]:
    """The state updates the kernel sent to one widget model."""
    return [m["content"]["data"]["state"] for m in messages
            if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == model_id
            and m["content"]["data"].get("method") == "update"]


def children_of(messages: list[dict], model_id: str) -> list[str]:
    """The model ids of a box's children, from its comm_open."""
    for m in messages:
        if m["msg_type"] == "comm_open" and m["content"]["comm_id"] == model_id:
            return [c.removeprefix("IPY_MODEL_") for c in m["content"]["data"]["state"]["children"]]
    raise AssertionError(f"no comm_open for {model_id}")


def opened_with_class(messages: list[dict], css_class: str) -> str:
    for m in messages:
        if m["msg_type"] == "comm_open" and css_class in \
                m["content"]["data"]["state"].get("_dom_classes", []):
            return m["content"]["comm_id"]
    raise AssertionError(f"no widget with class {css_class}")


def test_a_dashboard_cell_shows_the_widget_updates_it_and_leaves_a_summary(kc):
    code = f"%dashboard\nlet shown_while = 7\n{sequence(LONG)} + shown_while"
    msg_id = kc.execute(code)
    messages = iopub_until_idle(kc, msg_id)
    assert reply_to(kc, msg_id)["content"]["status"] == "ok"
    shown = of_cell(messages, msg_id, "display_data")
    (display,) = shown
    data = display["content"]["data"]
    assert set(data) == {WIDGET, "text/html", "text/plain"}
    display_id = display["content"]["transient"]["display_id"]
    # the widget's box, with its class, opened before it was displayed
    box = data[WIDGET]["model_id"]
    assert box == opened_with_class(messages, "accel-dashboard")
    assert len(children_of(messages, box)) >= 5
    # the steps label was updated while the cell ran (many times, by the updater thread)
    steps = opened_with_class(messages, "accel-dash-steps")
    values = [s["value"] for s in widget_updates(messages, steps) if "value" in s]
    counts = [int(v.split()[-1]) for v in values]
    assert len(counts) >= 3 and counts == sorted(counts) and counts[0] < counts[-1]
    result_at = next(i for i, m in enumerate(messages) if m["msg_type"] == "execute_result")
    assert len(widget_updates(messages[:result_at], steps)) >= 2     # while the cell ran
    # then the final summary replaced the running one, same display, widget kept
    (update,) = of_cell(messages, msg_id, "update_display_data")
    assert update["content"]["transient"]["display_id"] == display_id
    final = update["content"]["data"]
    assert final[WIDGET]["model_id"] == box
    assert f"done after {counts[-1]} steps" in final["text/plain"]
    assert f"elements: {LONG:,}" in final["text/plain"] and "<svg" in final["text/html"]
    # the cell's own result still lands in the cell, after the dashboard
    (result,) = of_cell(messages, msg_id, "execute_result")
    assert result["content"]["data"]["text/plain"] == str(sequence_sum(LONG) + 7)
    order = [m["msg_type"] for m in of_cell(messages, msg_id, "display_data", "execute_result",
                                            "update_display_data")]
    assert order == ["display_data", "execute_result", "update_display_data"]


def test_a_long_sequence_shows_the_dashboard_by_itself_a_short_cell_does_not(kc):
    msg_id = kc.execute(f"let quick = 1\n{sequence(1000)}")
    messages = iopub_until_idle(kc, msg_id)
    assert of_cell(messages, msg_id, "display_data", "update_display_data") == []
    (result,) = of_cell(messages, msg_id, "execute_result")
    assert result["content"]["data"]["text/plain"] == str(sequence_sum(1000))
    msg_id = kc.execute(sequence(LONG))
    messages = iopub_until_idle(kc, msg_id)
    (display,) = of_cell(messages, msg_id, "display_data")
    assert WIDGET in display["content"]["data"]
    (update,) = of_cell(messages, msg_id, "update_display_data")
    assert "done after" in update["content"]["data"]["text/plain"]


def test_cancel_clicked_during_the_cell_interrupts_it_and_keeps_the_globals(kc):
    assert reply_to(kc, kc.execute("let kept = 5"))["content"]["status"] == "ok"
    msg_id = kc.execute(f"%dashboard\nlet kept = 6\nlet added = {sequence(10_000_000_000)}",
                        stop_on_error=False)
    state: dict[str, Any] = {}

    def click_when_running(msg: dict) -> None:
        """Once the steps label shows a few steps, send the Cancel button's click."""
        if msg["msg_type"] == "comm_open":
            classes = msg["content"]["data"]["state"].get("_dom_classes", [])
            for css_class in ("accel-dash-steps", "accel-dash-cancel"):
                if css_class in classes:
                    state[css_class] = msg["content"]["comm_id"]
        if msg["msg_type"] == "comm_msg" and "clicked" not in state and \
                msg["content"]["comm_id"] == state.get("accel-dash-steps"):
            value = msg["content"]["data"].get("state", {}).get("value", "steps: 0")
            if int(value.split()[-1]) >= 5:
                state["clicked"] = int(value.split()[-1])
                kc.shell_channel.send(kc.session.msg("comm_msg", {
                    "comm_id": state["accel-dash-cancel"],
                    "data": {"method": "custom", "content": {"event": "click"}}}))

    messages = iopub_until_idle(kc, msg_id, click_when_running)
    reply = reply_to(kc, msg_id)["content"]
    assert reply["status"] == "error" and reply["ename"] == "Interrupted"
    assert "clicked" in state
    (update,) = of_cell(messages, msg_id, "update_display_data")
    text = update["content"]["data"]["text/plain"]
    assert "cancelled after" in text
    stopped_at = int(text.split("cancelled after ")[1].split()[0])
    clicked_at = int(text.split("Cancel clicked after step ")[1].split(")")[0])
    assert state["clicked"] <= clicked_at <= stopped_at <= clicked_at + 1    # within one step
    cancel = state["accel-dash-cancel"]
    assert any(s.get("disabled") is True for s in widget_updates(messages, cancel))
    # the kernel and every global are as they were
    msg_id = kc.execute("kept")
    messages = iopub_until_idle(kc, msg_id)
    (result,) = of_cell(messages, msg_id, "execute_result")
    assert result["content"]["data"]["text/plain"] == "5"
    msg_id = kc.execute("added", stop_on_error=False)    # (the next cell is not aborted)
    iopub_until_idle(kc, msg_id)
    assert reply_to(kc, msg_id)["content"]["ename"] == "NameError"


def test_comm_messages_during_a_cell_leave_its_outputs_in_the_cell(kc):
    """A click on the Cancel button of an earlier cell's dashboard (its widget lives on) while
    a cell runs: handled during the cell, it stops nothing, and what the cell sends after it
    (a note on stdout, its result) still has the cell's parent header."""
    msg_id = kc.execute(f"%dashboard\n{sequence(1000)}")
    old_cancel = opened_with_class(iopub_until_idle(kc, msg_id), "accel-dash-cancel")
    assert reply_to(kc, kc.execute("def later_f x = x + 1\ndef later_g x = later_f x"))
    msg_id = kc.execute(f"%dashboard\nlet later = {sequence(100_000_000)}\n"
                        "def later_f x = x + 2\nlater_g later")
    clicked: list[str] = []

    def click_old_cancel(msg: dict) -> None:
        if msg["msg_type"] == "comm_msg" and not clicked:
            clicked.append(msg["content"]["comm_id"])
            kc.shell_channel.send(kc.session.msg("comm_msg", {
                "comm_id": old_cancel,
                "data": {"method": "custom", "content": {"event": "click"}}}))
            kc.comm_info()              # what JupyterLab's widget manager asks on a first view
            kc.shell_channel.send(kc.session.msg("comm_open", {   # and the control comm it opens
                "comm_id": "control-in-test", "target_name": "jupyter.widget.control",
                "data": {}}, metadata={"version": "1.0.0"}))

    messages = iopub_until_idle(kc, msg_id, click_old_cancel)
    assert reply_to(kc, msg_id)["content"]["status"] == "ok" and clicked
    outputs = of_cell(messages, msg_id, "stream", "execute_result")
    assert [m["msg_type"] for m in outputs] == ["stream", "execute_result"]
    assert "redefined later_f" in outputs[0]["content"]["text"]
    assert outputs[1]["content"]["data"]["text/plain"] == str(sequence_sum(100_000_000) + 2)
    assert not [m for m in messages if m["msg_type"] in ("stream", "execute_result")
                and m["parent_header"].get("msg_id") != msg_id]
    # the click changed no status: the kernel stayed busy until the cell's own idle
    assert not [m for m in messages if m["msg_type"] == "status"
                and m["parent_header"].get("msg_type") in ("comm_msg", "comm_info_request",
                                                           "comm_open")]
    assert [m["content"]["execution_state"] for m in of_cell(messages, msg_id, "status")] == \
        ["busy", "idle"]


def test_a_saved_notebook_and_its_html_keep_the_final_summary():
    """nbclient applies the final `update_display_data` to the output; saved without widget
    state, nbconvert's HTML shows the summary (totals and plots), not a widget."""
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(f"{SETUP}\n%dashboard\n{sequence(1_000_000)}")]
    NotebookClient(notebook, kernel_name="accel", timeout=TIMEOUT,
                   store_widget_state=False).execute()
    (shown,) = [out for out in notebook.cells[0].outputs if out.output_type == "display_data"]
    assert WIDGET in shown.data and "done after" in shown.data["text/plain"]
    page, _ = HTMLExporter().from_notebook_node(notebook)
    assert "accel-dashboard-summary" in page and "<td>elements</td><td>1,000,000</td>" in page
    assert page.count("<svg") >= 4 and WIDGET not in page


# ---------------------------------------------------------------- the kernel class in process

@pytest.fixture(scope="module")
def kernel() -> RecordingKernel:
    recording = RecordingKernel()
    for line in SETUP.splitlines():
        recording.run(line)
    return recording


def sent_types(kernel: RecordingKernel) -> list[str]:
    return [t for t, _ in kernel.sent]


def test_a_cell_without_a_sequence_shows_nothing_extra(kernel):
    assert kernel.run("let a = 2\na + 1")["status"] == "ok"
    assert sent_types(kernel) == ["execute_result"]


def test_dashboard_line_without_a_sequence_says_so(kernel):
    assert kernel.run("%target cpu\n%dashboard\n1")["status"] == "ok"
    # shown where its line is: after what the lines before it printed
    assert sent_types(kernel) == ["stream", "display_data", "execute_result",
                                  "update_display_data"]
    final = kernel.sent[-1][1]["data"]
    assert final["text/plain"] == "no sequence has run in this cell\n"


def test_silent_cells_show_no_dashboard(kernel):
    kernel.execution_count += 1
    kernel.sent.clear()
    asyncio.run(kernel.do_execute(f"%dashboard\n{sequence(1000)}", silent=True))
    assert kernel.sent == []


def test_the_cell_runs_on_its_own_thread_and_sigint_cancels_it(kernel, monkeypatch):
    seen: dict[str, Any] = {}
    execute = kernel.accel.execute

    def execute_noting_the_thread(code: str, name: str = "cell"):
        seen["thread"] = threading.current_thread()
        return execute(code, name)
    monkeypatch.setattr(kernel.accel, "execute", execute_noting_the_thread)

    def interrupt_at_the_start(event: ev.Event) -> None:
        if event.kind == "seq_begin":
            signal.getsignal(signal.SIGINT)(signal.SIGINT, None)     # what an interrupt does
    with kernel.accel.events.subscribed(interrupt_at_the_start):
        reply = kernel.run(f"%dashboard\nlet lost = {sequence(10_000_000_000)}")
    assert seen["thread"].name == "accel-cell" and seen["thread"].daemon
    assert reply["ename"] == "Interrupted"
    assert kernel.accel.lookup("lost") is None
    assert sent_types(kernel) == ["display_data", "update_display_data", "error"]
    text = kernel.sent[1][1]["data"]["text/plain"]
    assert "cancelled after" in text and int(text.split("cancelled after ")[1].split()[0]) <= 1
    assert kernel.run("1 + 1")["status"] == "ok"


def test_the_dashboard_shows_after_about_a_second(kernel, monkeypatch):
    monkeypatch.setattr(kernel, "dashboard_after", 0.2)
    assert kernel.run(sequence(100_000_000))["status"] == "ok"
    assert sent_types(kernel) == ["display_data", "execute_result", "update_display_data"]
    assert kernel.run("1 + 2")["status"] == "ok"
    assert sent_types(kernel) == ["execute_result"]


# ---------------------------------------------------------------- %schedule and %budget

def stdout_of(kernel: RecordingKernel) -> str:
    return "".join(c["text"] for t, c in kernel.sent if t == "stream")


def test_schedule_shows_sets_and_refuses(kernel):
    assert kernel.run("%schedule")["status"] == "ok"
    assert stdout_of(kernel) == "schedule: adaptive\n"
    assert kernel.run("%schedule fixed 4096")["status"] == "ok"
    assert stdout_of(kernel) == "schedule: fixed 4096\n"
    assert kernel.accel.schedule.describe() == "fixed 4096"
    # a fixed chunk: every step but the last runs 4096 elements
    with kernel.accel.events.recording() as log:
        assert kernel.run(sequence(10_000))["status"] == "ok"
    assert [e.elements for e in log if e.kind == "step"] == [4096, 4096, 1808]
    reply = kernel.run("%schedule fixed many")
    assert reply["ename"] == "MagicError" and "%schedule [adaptive|fixed N]" in reply["evalue"]
    reply = kernel.run("%schedule adaptive\nnope")          # a failed cell keeps nothing
    assert reply["ename"] == "NameError"
    assert kernel.accel.schedule.describe() == "fixed 4096"
    assert kernel.run("%schedule adaptive")["status"] == "ok"
    assert kernel.accel.schedule.describe() == "adaptive"
    assert kernel.run("%schedule -h")["status"] == "ok"
    assert "fixed N: every step runs N elements" in stdout_of(kernel)


def test_budget_help_names_the_chunks_of_every_target(kernel):
    assert kernel.run("%budget -h")["status"] == "ok"
    text = stdout_of(kernel)
    assert "a sequence's chunk may hold on every target" in text and "`cpu`" in text
