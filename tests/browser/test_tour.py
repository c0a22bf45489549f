"""Issue 16's acceptance in JupyterLab: the tour runs top to bottom as a new user runs it (Run >
Run All Cells), and a `%step` output, saved, then reopened in a fresh page and read again from
disk with its kernel shut down ("No Kernel"), still shows its content.

Widget outputs survive a reopened notebook through the widget state JupyterLab saves in the
notebook ("Save Widget State Automatically", which `scripts/setup` turns on for the project's
JupyterLab: docs/kernel.md). The test turns it on as the settings editor does, through JupyterLab's
settings API, since the browser tests' server keeps its settings in a temporary directory.
"""
from __future__ import annotations

import json
import re
import shutil
import urllib.request
from pathlib import Path

import nbformat

from accel_kernel.compiler import stage_names

from .lab import PANEL, wait_for

REPO = Path(__file__).resolve().parents[2]
TOUR = REPO / "notebooks" / "00-tour.ipynb"
WIDGETS_PLUGIN = "@jupyter-widgets/jupyterlab-manager:plugin"


def menu(lab, top: str, item: str) -> None:
    """Click the menu bar's `top` menu, then its entry `item` (as a user does)."""
    [bar] = [e for e in lab.driver.find_elements("css selector", ".lm-MenuBar-item")
             if e.text == top]
    bar.click()
    entries = wait_for(lambda: [e for e in lab.driver.find_elements("css selector",
                                                                    ".lm-Menu-item")
                                if e.text.split("\n")[0] == item], f"the menu entry {item}")
    entries[0].click()


def save_widget_state(lab) -> None:
    """Settings > Save Widget State Automatically, through the settings API."""
    request = urllib.request.Request(
        f"{lab.base}/lab/api/settings/{WIDGETS_PLUGIN}", method="PUT",
        data=json.dumps({"raw": json.dumps({"saveState": True})}).encode(),
        headers={"Authorization": f"token {lab.token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 204


def shoot(lab, element, name: str) -> Path:
    """A screenshot of one element (scrolled into view), for a person to look at."""
    lab.driver.execute_script("arguments[0].scrollIntoView({block: 'start'});", element)
    path = lab.screenshots / f"{name}.png"
    element.screenshot(str(path))
    return path


def saved_metadata(path: Path) -> dict:
    """The notebook's metadata on disk; {} while JupyterLab is still writing the file."""
    try:
        return json.loads(path.read_text())["metadata"]
    except json.JSONDecodeError:
        return {}


def code_cells(notebook) -> list[tuple[int, object]]:
    return [(i, cell) for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"]


def test_the_tour_runs_top_to_bottom(lab):
    shutil.copy(TOUR, lab.notebooks / TOUR.name)
    notebook = nbformat.read(TOUR, as_version=4)
    lab.open(TOUR.name)
    menu(lab, "Run", "Run All Cells")
    cells = code_cells(notebook)
    for index, _ in cells:                      # the first run compiles kernels: seconds
        lab.wait_cell(index, timeout=240)
    lab.wait_idle()

    for index, cell in cells:
        errors = lab.within(index, '[data-mime-type="application/vnd.jupyter.stderr"]')
        if "raises-exception" in cell.metadata.get("tags", []):
            text = errors[0].text.splitlines()
            assert re.match(r"TypeError at cell\[\d+\]:1:\d+: ", text[0]) and "^" in text[-1]
            assert "Traceback" not in errors[0].text
        else:
            assert not errors, f"cell {index} failed:\n{errors[0].text}"

    def cell_of(prefix: str) -> int:
        return next(i for i, cell in cells if cell.source.startswith(prefix))

    # the program's result, as the reference interpreter computes it
    from accel_kernel.session import Session
    first = cells[0]
    expected = Session(target="interp").execute(first[1].source, name="c").host
    shown = [td.text for td in lab.within(first[0], ".accel-value td")]
    assert shown == [str(x) for x in expected]

    # %stages: a tab per stage, drawn; the flatten tab shows its drawing
    stages = cell_of("%stages")
    tabs = lab.within(stages, ".lm-TabBar-tab")
    titles = [tab.text for tab in tabs]
    assert [title.removesuffix(" (=)") for title in titles] == list(stage_names())
    [flatten] = [tab for tab in tabs if tab.text == "flatten"]
    flatten.click()
    panel = wait_for(lambda: [p for p in lab.within(stages, ".widget-tab-contents > *")
                              if p.is_displayed() and p.find_elements("css selector", "svg")],
                     "the flatten tab's drawing")[0]
    assert "stage flatten" in panel.text
    shoot(lab, lab.outputs(stages)[0], "tour-stages-flatten")

    # %step flatten on real data: the first step, its values and its drawing
    step = cell_of("%step flatten")
    info = wait_for(lambda: lab.text(step, ".widget-html-content pre"), "the %step widget")
    assert re.match(r"flat: work \d+, depth \d+", info) and re.search(r"step 1/\d+: ", info)
    wait_for(lambda: lab.within(step, ".accel-graph svg"), "the step's drawing")
    shoot(lab, lab.outputs(step)[0], "tour-step-flatten")

    # the fused kernels drawn, the generated code, %time on cpu
    assert lab.within(cell_of("%show fuse"), ".accel-graph svg")          # fits the page
    assert "kernel k1_" in lab.output(cell_of("%show fuse"))
    assert "@njit(parallel=True" in lab.output(cell_of("%show codegen"))
    timed = [i for i, cell in cells if cell.source.startswith("%time")]
    assert timed and all(re.search(r"^time: check .*\(total ", lab.output(i), re.M)
                         for i in timed)
    lab.screenshot("tour-end")


def test_a_saved_step_output_shows_without_a_kernel(lab):
    save_widget_state(lab)
    lab.write_notebook("saved-step.ipynb", [
        "let xss = [[1, 2, 3], [4], [], [5, 6]]\n"
        "def row_sums (rows: [][]i64) : []i64 = map (\\r -> reduce (+) 0 r) rows",
        "%step flatten row_sums xss"])
    lab.open("saved-step.ipynb")
    lab.run_cell(0)
    lab.run_cell(1)
    live = wait_for(lambda: lab.text(1, ".widget-html-content pre"), "the %step widget")
    lab.save()
    saved = lab.notebooks / "saved-step.ipynb"
    wait_for(lambda: "widgets" in saved_metadata(saved), "the notebook saved with its widget state")

    # the kernel that made the widgets shut down; a fresh page (a new kernel, which knows no
    # widget, then shut down too), the notebook read again from disk: what shows comes from
    # the saved file alone
    lab.shutdown_kernels()
    wait_for(lambda: not lab._api("GET", "kernels"), "the kernel that ran it to stop")
    lab.open("saved-step.ipynb")
    menu(lab, "Kernel", "Shut Down Kernel")
    wait_for(lambda: lab.kernel_status().startswith("No Kernel"), "the kernel to shut down")
    menu(lab, "File", "Reload Notebook from Disk")
    wait_for(lambda: [b for b in lab.driver.find_elements("css selector", ".jp-Dialog-button")
                      if b.text == "Reload"], "the question whether to reload")[0].click()
    wait_for(lambda: not lab.driver.find_elements("css selector", ".jp-Dialog"),
             "the notebook read again")
    wait_for(lambda: lab.driver.find_elements("css selector", f"{PANEL} .jp-Cell"),
             "the cells")
    shown = wait_for(lambda: lab.text(1, ".widget-html-content pre"),
                     "the saved %step output's content")
    assert shown == live and re.search(r"step 1/\d+: ", shown)
    assert lab.within(1, ".accel-graph svg")                     # its drawing too
    assert "model not found" not in lab.output(1)
    shoot(lab, lab.outputs(1)[0], "saved-step-no-kernel")
    assert not lab._api("GET", "kernels")                        # nothing runs it

    # the same file as someone else's, who added a note (a notebook this server did not sign:
    # JupyterLab does not trust it, so it renders no widget and sanitizes HTML): the static
    # copy, every step, no loose words of the dropped drawing
    shared = nbformat.read(saved, as_version=4)
    shared.cells.append(nbformat.v4.new_markdown_cell("Sent by a colleague."))
    nbformat.write(shared, lab.notebooks / "shared-step.ipynb")
    lab.open("shared-step.ipynb")
    static = wait_for(lambda: lab.output(1), "the static copy")
    assert re.match(r"flatten: \d+ steps\n", static)
    total = int(re.match(r"flatten: (\d+) steps", static).group(1))
    assert len(lab.within(1, "details > summary")) == total
    assert not lab.within(1, ".accel-graph svg")                  # sanitized away
    words = lab.driver.execute_script(
        "return Array.from(arguments[0].querySelectorAll('div')).filter("
        "d => getComputedStyle(d).fontSize !== '0px' && /->/.test("
        "Array.from(d.childNodes).filter(n => n.nodeType === 3).map(n => n.data).join('')))"
        ".length", lab.outputs(1)[0])
    assert words == 0                                  # edges as `s348->s350` would show
    shoot(lab, lab.outputs(1)[0], "shared-step-untrusted")
