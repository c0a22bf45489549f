"""The accel kernel in JupyterLab, as a user sees it: cells typed and run in a real browser,
their results, an accel error with its caret, and the `%step` widget's slider."""
from __future__ import annotations

import json
import re
import shutil

from .lab import wait_for


def test_cells_run_and_errors_show_the_caret(lab):
    lab.write_notebook("cells.ipynb", ["", "map (*2) xs", "map (*2) ys"])
    lab.open("cells.ipynb")
    lab.type_into(0, "let xs = [1, 2, 3]")
    assert lab.run_cell(0) == ""                      # a let shows nothing

    lab.run_cell(1)
    assert lab.text(1, ".accel-type") == ": []i64"
    rows = lab.within(1, ".accel-value tr")
    assert [cell.text for cell in rows[-1].find_elements("css selector", "td")] == \
        ["2", "4", "6"]

    error = lab.run_cell(2)
    lab.screenshot("cells")
    assert error.splitlines() == ["NameError at cell[3]:1:10: unknown name `ys`",
                                  "map (*2) ys",
                                  "         ^^"]
    assert "Traceback" not in error

    # what a user saves keeps the values as text too
    lab.save()
    saved = wait_for(lambda: _outputs_on_disk(lab.notebooks / "cells.ipynb"),
                     "the saved notebook")
    assert saved[1] == "[2, 4, 6]"


def _outputs_on_disk(path) -> list[str] | None:
    cells = json.loads(path.read_text())["cells"]
    texts = []
    for cell in cells:
        results = [o for o in cell["outputs"] if o["output_type"] == "execute_result"]
        texts.append("".join(results[0]["data"]["text/plain"]) if results else "")
    return texts if texts[1] else None


def test_step_slider_changes_the_step(lab):
    lab.write_notebook("step.ipynb", [
        "def sums xs = map (\\x -> reduce (+) 0 (iota x)) xs",
        "%step flatten sums"])
    lab.open("step.ipynb")
    lab.run_cell(0)
    lab.run_cell(1)

    def shown() -> str:
        return lab.text(1, ".widget-html-content pre")

    def readout() -> str:
        return lab.text(1, ".widget-readout")

    def drawing_title() -> str:
        return lab.text(1, ".accel-graph svg .graph > text")

    first = wait_for(shown, "the %step widget")
    total = int(re.match(r"step 1/(\d+): ", first).group(1))
    assert total > 2 and readout() == "1"
    lab.screenshot("step-first")

    # drag the handle past the track's end: the last step
    handle = lab.within(1, ".noUi-handle")[0]
    track = lab.within(1, ".noUi-base")[0]
    lab.drag(handle, track.size["width"] + 50)
    last = wait_for(lambda: shown() if shown() != first else "", "the slider to move")
    assert last.startswith(f"step {total}/{total}: ") and readout() == str(total)
    if shutil.which("dot"):       # the drawing follows (without Graphviz: a hint instead)
        # (the kernel sets the text first, then draws: the drawing comes a moment later)
        wait_for(lambda: drawing_title().startswith(f"flatten step {total}/{total}: "),
                 "the drawing of the last step")
    lab.screenshot("step-last")

    # the left arrow key on the handle: one step back
    lab.press(handle, "ARROW_LEFT")
    back = wait_for(lambda: shown() if shown() != last else "", "the arrow key to move it")
    assert back.startswith(f"step {total - 1}/{total}: ")
    assert readout() == str(total - 1)
