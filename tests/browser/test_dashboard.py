"""The live dashboard in JupyterLab (issue 13's acceptance): while a long sequence runs on
`cpu` the widget's values change; Cancel stops it within one step with `Interrupted`, and the
kernel, its target and every global are as they were.

The widget's parts are found by their CSS classes (docs/kernel.md lists them):
`accel-dashboard` (the box), `accel-dash-steps` ("steps: N"), `accel-dash-elements`,
`accel-dash-progress`, `accel-dash-status` (its text: `cancelled after N steps (Cancel
clicked after step M)`), `accel-dash-cancel` (the button).

"Within one step" is seen from the browser: the steps shown when Cancel is clicked, against
those shown once the cell has ended. A click reaches the kernel some 50-150 ms after the
browser showed a count (the dashboard's update interval, the websocket, the kernel's poll),
so the steps must be longer than that for the check to mean anything: the cell runs a fixed
schedule of 400,000 elements a step (about half a second each here; the adaptive schedule's
steps on this sequence are some 25-70 ms), and the click comes just after the shown count
changed."""
from __future__ import annotations

import re
import time

from .lab import wait_for

# 2e9 elements of up to 1000 multiplications each: far longer than the test waits
SEQUENCE = ("foldSeq (+) 0 (mapSeq (\\i -> reduce (+) 0 (map (\\j -> (j * j) % 7) "
            "(iota (i % 1000)))) (produce 2000000000 (\\i -> i)))")
COMPILE_TIMEOUT = 180     # the first `cpu` run compiles its kernels (an empty cache in CI)


def steps_shown(lab, index: int) -> int | None:
    """The count of `steps: N`; None while the label is being drawn."""
    found = re.fullmatch(r"steps: (\d+)", lab.text(index, ".accel-dash-steps").strip())
    return int(found.group(1)) if found else None


def values_shown(lab, index: int) -> tuple[str, str, str]:
    """What the dashboard shows in words: steps, elements and the progress bar's width."""
    bar = lab.within(index, ".accel-dash-progress .progress-bar")
    return (lab.text(index, ".accel-dash-steps"), lab.text(index, ".accel-dash-elements"),
            bar[0].get_attribute("style") if bar else "")


def test_dashboard_updates_and_cancel_stops_the_sequence(lab):
    lab.write_notebook("dashboard.ipynb", [
        "%target cpu\n%schedule fixed 400000\nlet before = 7",
        f"%dashboard\nlet total = {SEQUENCE}",
        "%target\nbefore + 1",
        "total"])
    lab.open("dashboard.ipynb")
    lab.run_cell(0)

    lab.start_cell(1)
    wait_for(lambda: lab.within(1, ".accel-dashboard"), "the dashboard")
    wait_for(lambda: (steps_shown(lab, 1) or 0) > 0, "the first step", COMPILE_TIMEOUT)
    first = values_shown(lab, 1)
    lab.screenshot("dashboard-running-1")
    time.sleep(1.5)
    second = wait_for(lambda: values_shown(lab, 1) != first and values_shown(lab, 1),
                      "the dashboard to change")
    lab.screenshot("dashboard-running-2")
    assert second[0] != first[0] and second[1] != first[1]      # steps and elements

    # click just after the shown count changed: it is then the count of the step running
    shown = steps_shown(lab, 1)
    at_click = wait_for(lambda: steps_shown(lab, 1) not in (None, shown) and steps_shown(lab, 1),
                        "the next step", interval=0.01)
    lab.within(1, ".accel-dash-cancel")[0].click()
    lab.wait_cell(1)
    error = lab.output(1).splitlines()
    assert any(line.startswith("Interrupted at cell[2]:2:") for line in error), error
    # the kernel's own account: the step after which it got the click, and the last step
    status = wait_for(lambda: re.search(r"cancelled after (\d+) steps \(Cancel clicked after "
                                        r"step (\d+)\)", lab.text(1, ".accel-dash-status")),
                      "the dashboard's final status")
    ran, clicked = map(int, status.groups())
    lab.screenshot("dashboard-cancelled")
    assert ran == steps_shown(lab, 1) and clicked <= ran <= clicked + 1
    assert at_click <= ran <= at_click + 1
    assert "progress-bar-warning" in \
        lab.within(1, ".accel-dash-progress .progress-bar")[0].get_attribute("class")

    # the kernel lives on; the target and the globals are as they were
    after = lab.run_cell(2)
    assert "target: cpu" in after
    assert lab.text(2, ".accel-value").split()[-1] == "8"
    assert lab.run_cell(3).startswith("NameError at cell[4]:1:1: unknown name `total`")
    lab.screenshot("dashboard-after")
