"""The dashboard through the kernel: a real kernel process driven by jupyter_client (the widget's
display, its trait updates as comm messages while the cell runs, a Cancel click as a comm
message during the cell), and the kernel class in process (which cells show it, the final
`update_display_data`, the parent header of what the cell thread sends).

The sequences are a test hook (`FAKE`): a cell whose code has a line `-- fake_sequence N`
runs its code, then N steps of a synthetic sequence that emits the runtime's events and polls
the session's cancel token between steps like the executor does."""
from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from accel_kernel.kernel import kernel as kernel_module
from accel_kernel.lang.errors import Interrupted
from accel_kernel.runtime import events as ev
from accel_kernel.session import Session

from .test_protocol import RecordingKernel

WIDGET = "application/vnd.jupyter.widget-view+json"
TIMEOUT = 60
STEP_SECONDS = 0.02


def fake_sequence(session: Session, code: str) -> None:
    """N steps of a sequence of 1000 N elements, STEP_SECONDS each; Interrupted when the
    session's cancel token is set between steps."""
    marker = next((line for line in code.splitlines() if line.startswith("-- fake_sequence")),
                  None)
    if marker is None:
        return
    steps = int(marker.split()[2])
    session.events.emit(ev.SeqBegin(1, 1000 * steps, "adaptive", target=session.target, line=1))
    for step in range(1, steps + 1):
        if session.cancel.is_set():
            session.events.emit(ev.SeqEnd(1, 1000 * (step - 1), step - 1, 0.0, "cancelled"))
            raise Interrupted("evaluation interrupted")
        time.sleep(STEP_SECONDS)
        session.events.emit(ev.Launch("cpu", "body", (1000,), (1,), elements=1000,
                                      seconds=STEP_SECONDS))
        session.events.emit(ev.Step(1, step, 1000 * (step - 1), 1000, 8000, STEP_SECONDS,
                                    STEP_SECONDS, 0.9, STEP_SECONDS / 1000, 1000, "steady"))
    session.events.emit(ev.SeqEnd(1, 1000 * steps, steps, steps * STEP_SECONDS))


def with_fake_sequences(session: Session) -> None:
    real = session.execute

    def execute(code: str, name: str = "cell"):
        result = real(code, name)
        fake_sequence(session, code)
        return result
    session.execute = execute


FAKE_KERNEL = f"""
import sys
sys.path.insert(0, {json.dumps(str(__import__("pathlib").Path(__file__).parents[2]))})
from ipykernel.kernelapp import IPKernelApp
from accel_kernel.kernel.kernel import AccelKernel
from tests.kernel.test_dashboard_kernel import with_fake_sequences

class FakeSequencesKernel(AccelKernel):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with_fake_sequences(self.accel)

IPKernelApp.launch_instance(kernel_class=FakeSequencesKernel)
"""


# ---------------------------------------------------------------- a real kernel process

@pytest.fixture(scope="module")
def km(tmp_path_factory):
    spec = tmp_path_factory.mktemp("fake-kernel") / "kernels" / "accel-fake"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-c", FAKE_KERNEL, "-f", "{connection_file}"],
        "display_name": "accel (fake sequences)", "language": "accel",
        "interrupt_mode": "signal"}))
    manager = KernelManager(kernel_name="accel-fake",
                            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec.parent)]))
    manager.start_kernel()
    yield manager
    manager.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def kc(km):
    client = km.client()
    client.start_channels()
    client.wait_for_ready(timeout=TIMEOUT)
    msg_id = client.execute("%target interp", silent=True)
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
    code = "%dashboard\nlet shown_while = 7\n-- fake_sequence 40\nshown_while * 6"
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
    assert len(values) >= 3 and values[-1] == "steps: 40"
    counts = [int(v.split()[-1]) for v in values]
    assert counts == sorted(counts) and counts[0] < 40
    # then the final summary replaced the running one, same display, widget kept
    (update,) = of_cell(messages, msg_id, "update_display_data")
    assert update["content"]["transient"]["display_id"] == display_id
    final = update["content"]["data"]
    assert final[WIDGET]["model_id"] == box
    assert "done after 40 steps" in final["text/plain"] and "<svg" in final["text/html"]
    # the cell's own result still lands in the cell, after the dashboard
    (result,) = of_cell(messages, msg_id, "execute_result")
    assert result["content"]["data"]["text/plain"] == "42"
    order = [m["msg_type"] for m in of_cell(messages, msg_id, "display_data", "execute_result",
                                            "update_display_data")]
    assert order == ["display_data", "execute_result", "update_display_data"]


def test_a_long_sequence_shows_the_dashboard_by_itself_a_short_cell_does_not(kc):
    msg_id = kc.execute("let quick = 1\n-- fake_sequence 5\nquick")
    messages = iopub_until_idle(kc, msg_id)
    assert of_cell(messages, msg_id, "display_data", "update_display_data") == []
    assert [m["msg_type"] for m in of_cell(messages, msg_id, "execute_result")] == \
        ["execute_result"]
    steps = int(1.5 / STEP_SECONDS)                       # runs about 1.5 s
    msg_id = kc.execute(f"-- fake_sequence {steps}\n1 + 1")
    messages = iopub_until_idle(kc, msg_id)
    (display,) = of_cell(messages, msg_id, "display_data")
    assert WIDGET in display["content"]["data"]
    (update,) = of_cell(messages, msg_id, "update_display_data")
    assert f"done after {steps} steps" in update["content"]["data"]["text/plain"]


def test_cancel_clicked_during_the_cell_interrupts_it_and_keeps_the_globals(kc):
    assert reply_to(kc, kc.execute("let kept = 5"))["content"]["status"] == "ok"
    msg_id = kc.execute("%dashboard\nlet kept = 6\nlet added = 1\n-- fake_sequence 3000")
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
    assert state["clicked"] <= stopped_at < 3000
    cancel = state["accel-dash-cancel"]
    assert any(s.get("disabled") is True for s in widget_updates(messages, cancel))
    # the kernel and every global are as they were
    msg_id = kc.execute("kept")
    messages = iopub_until_idle(kc, msg_id)
    (result,) = of_cell(messages, msg_id, "execute_result")
    assert result["content"]["data"]["text/plain"] == "5"
    msg_id = kc.execute("added")
    assert reply_to(kc, msg_id)["content"]["ename"] == "NameError"


# ---------------------------------------------------------------- the kernel class in process

@pytest.fixture
def kernel() -> RecordingKernel:
    recording = RecordingKernel()
    recording.accel.set_target("interp")
    with_fake_sequences(recording.accel)
    return recording


def sent_types(kernel: RecordingKernel) -> list[str]:
    return [t for t, _ in kernel.sent]


def test_a_cell_without_a_sequence_shows_nothing_extra(kernel):
    assert kernel.run("let a = 2\na + 1")["status"] == "ok"
    assert sent_types(kernel) == ["execute_result"]


def test_dashboard_line_without_a_sequence_says_so(kernel):
    assert kernel.run("%dashboard\n1")["status"] == "ok"
    assert sent_types(kernel) == ["display_data", "execute_result", "update_display_data"]
    final = kernel.sent[-1][1]["data"]
    assert final["text/plain"] == "no sequence has run in this cell\n"


def test_silent_cells_show_no_dashboard(kernel):
    kernel.execution_count += 1
    asyncio.run(kernel.do_execute("%dashboard\n-- fake_sequence 3\n1", silent=True))
    assert kernel.sent == []


def test_the_cell_runs_on_its_own_thread_and_sigint_cancels_it(kernel):
    import signal
    import threading
    seen: dict[str, Any] = {}

    def interrupt_at_the_start(event: ev.Event) -> None:
        if event.kind == "seq_begin":
            seen["thread"] = threading.current_thread().name
            signal.getsignal(signal.SIGINT)(signal.SIGINT, None)     # what an interrupt does
    kernel.accel.events.subscribe(interrupt_at_the_start)
    reply = kernel.run("%dashboard\nlet lost = 1\n-- fake_sequence 100")
    assert seen["thread"].startswith("accel-cell")
    assert reply["ename"] == "Interrupted"
    assert kernel.accel.lookup("lost") is None
    assert sent_types(kernel) == ["display_data", "update_display_data", "error"]
    assert "cancelled after 0 steps" in kernel.sent[1][1]["data"]["text/plain"]


def test_the_dashboard_shows_after_about_a_second(kernel, monkeypatch):
    monkeypatch.setattr(kernel_module, "DASHBOARD_AFTER", 0.1)
    assert kernel.run("-- fake_sequence 20\n3")["status"] == "ok"
    assert sent_types(kernel) == ["display_data", "execute_result", "update_display_data"]
    assert kernel.run("-- fake_sequence 1\n3")["status"] == "ok"
    assert sent_types(kernel) == ["execute_result"]
