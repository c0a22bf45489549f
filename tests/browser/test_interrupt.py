"""Interrupt in JupyterLab stops a compiled loop: a cell whose `map` runs a loop of hours on
the `cpu` target (its kernel compiled by a short run first), Interrupt pressed as a user does
(`I I` in command mode), the cell ends with the interrupt message, the kernel lives on and a
global from before is unchanged. How long the stop took is printed (and screenshot), never
asserted: that the cell ends at all shows the loop stopped long before its natural end."""
from __future__ import annotations

import time

from .lab import wait_for

LOOP = ("let r = map (\\x -> loop acc = x for i < n do (acc * 7 + i) % 1000003) (iota 4)\n"
        "r")
GIVE_UP = 120.0           # seconds for the interrupted cell to end: a failure, not a hang


def test_interrupt_stops_a_loop_inside_a_map_on_cpu(lab):
    lab.write_notebook("interrupt.ipynb", [
        "%target cpu\nlet before = 42\nlet n = 1000",
        LOOP,                                            # compiles the kernel: a short run
        "let n = 10000000000000\nlet before = 0\n" + LOOP,   # hours long
        "before",
        "%target"])
    lab.open("interrupt.ipynb")
    lab.run_cell(0)
    short = lab.run_cell(1, timeout=GIVE_UP)
    assert "shape 4" in short                            # four values: it ran

    lab.start_cell(2)
    time.sleep(3.0)                                      # well inside the loop by now
    assert not lab.prompt(2).strip("[]:").isdigit()      # still running
    lab.screenshot("interrupt-running")
    pressed = _interrupt(lab)
    lab.wait_cell(2, timeout=GIVE_UP)
    took = time.monotonic() - pressed
    message = lab.output(2)
    lab.screenshot("interrupt-stopped")
    print(f"Interrupt to the cell's end: {took:.2f} s")
    lines = message.splitlines()
    assert lines[0].startswith("Interrupted at cell[")
    assert lines[0].endswith(": evaluation interrupted")
    assert lines[1] == LOOP.splitlines()[0] and lines[2].strip().startswith("^")
    assert "Traceback" not in message

    assert lab.run_cell(3).splitlines() == [": i64", "42"]   # the kernel lives; nothing
    #                                                               committed
    assert lab.run_cell(4).splitlines()[0] == "target: cpu"
    lab.screenshot("interrupt-after")


def _interrupt(lab) -> float:
    """Press `I I` in command mode (Escape leaves the editor), as a user does; the time."""
    from selenium.webdriver import ActionChains
    from selenium.webdriver.common.keys import Keys
    lab.cell(2).find_element("css selector", ".jp-InputPrompt").click()
    ActionChains(lab.driver).send_keys(Keys.ESCAPE).perform()
    wait_for(lambda: lab.cell(2).get_attribute("class") and
             "jp-mod-active" in lab.cell(2).get_attribute("class"), "cell 2 to be active")
    ActionChains(lab.driver).send_keys("i").send_keys("i").perform()
    return time.monotonic()
