"""Every notebook in notebooks/ runs top to bottom on the `accel` kernel without errors.

The set-up (scripts/setup) registers the kernelspec into the virtual environment; without it
the execution test is skipped, saying so. The format checks need no kernel.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from notebook_inputs import SMALLER

pytestmark = pytest.mark.notebook          # `-m "not notebook"` skips these

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = REPO / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
KERNEL_NAME = "accel"
# notebooks run here on the smaller inputs of notebook_inputs.SMALLER: the thesis' workloads
# at full size (a dictionary of 26 ** 4 words, on 2 Dask workers too) took a minute of the
# suite; `bash scripts/run --headless` runs them as shipped
SHRUNK = {"07-workloads.ipynb"}
ACCEL_ERROR_KINDS = {"SyntaxError", "TypeError", "NameError", "IndexError", "DivisionByZero",
                     "SizeError", "OutOfMemory"}


def kernelspec_installed() -> bool:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    try:
        KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    except NoSuchKernel:
        return False
    return True


def last_form(source: str) -> str:
    """The last top-level form of a cell: from its last line that starts in column 1."""
    lines = [line for line in source.splitlines()
             if line.strip() and not line.lstrip().startswith("--")]
    starts = [i for i, line in enumerate(lines) if not line[0].isspace()]
    return "\n".join(lines[starts[-1]:]) if starts else ""


def has_expression(source: str) -> bool:
    """Whether a code cell ends with an expression (so it has a result to show).

    Cells of meta-commands (`%...`) are left out: what they display is theirs to choose.
    A final `let` without `in` binds a global; a final `def` defines a function.
    """
    if any(line.startswith("%") for line in source.splitlines()):
        return False
    form = last_form(source)
    if not form or re.match(r"def\b", form):
        return False
    if re.match(r"let\b", form):
        return re.search(r"\bin\b", form) is not None
    return True


WIDGET = "application/vnd.jupyter.widget-view+json"


def check_the_html_shows_every_widget(notebook) -> None:
    """nbconvert's HTML of the run notebook (what `--headless` writes to build/) shows every
    widget output's static copy, drawings included where `dot` is installed, and no widget
    (which would need the widget manager's JavaScript, and would be an empty box offline)."""
    import shutil

    from nbconvert import HTMLExporter
    page, _ = HTMLExporter().from_notebook_node(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    widgets = [out for cell in code for out in cell.outputs if WIDGET in out.get("data", {})]
    # a dashboard shows for `%dashboard`, and by itself for a sequence that runs over a
    # second (so the machine's speed decides that one): its static copy is a summary
    dashboards = [out for out in widgets if "accel-dashboard-summary" in out["data"]["text/html"]]
    asked = [cell for cell in code if re.search(r"^%dashboard\b", cell.source, re.M)]
    assert all(any(out in dashboards for out in cell.outputs) for cell in asked)
    widgets = [out for out in widgets if out not in dashboards]
    shown = [cell for cell in code if re.match(r"%(step|stages)\b", cell.source)]
    assert len(widgets) == len(shown)
    for cell in code:      # a cell that fails on purpose (05's budget) may have run a second
        failed = any(out.output_type == "error" for out in cell.outputs)
        ends = ("done after", "stopped by an error") if failed else ("done after",)
        for out in cell.outputs:
            if out in dashboards:
                text = out["data"]["text/plain"]
                assert "<svg" in out["data"]["text/html"] and any(e in text for e in ends)
    for out in widgets:
        static = out["data"]["text/html"]
        heading = re.search(r"<h4>[^<]*</h4>", static).group(0)
        assert heading in page, heading
        # every step of a %step (collapsible), every stage of a %stages (a section each)
        sections = re.findall(r"<details><summary>step \d+/\d+: [^<]*</summary>", static)
        assert all(section in page for section in sections)
        steps = re.match(r"(?:<style>.*?</style>)?<h4>[^<]*: (\d+) steps</h4>", static, re.S)
        if steps:
            assert len(sections) == int(steps.group(1)) > 0
        else:
            assert re.findall(r"<h4>([^<]*)</h4>", static) == \
                list(out.get("metadata", {}).get("accel/dot", {}))
        if shutil.which("dot"):
            assert "<svg" in static
    assert WIDGET not in page
    assert "<script type=\"application/vnd.jupyter.widget-view+json\">" not in page


def test_the_headless_run_keeps_no_widget_state():
    assert "--ExecutePreprocessor.store_widget_state=False" in (REPO / "scripts" / "run").read_text()


def test_there_is_a_tour():
    assert NOTEBOOK_DIR / "00-tour.ipynb" in NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_clean(path: Path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata.kernelspec.name == KERNEL_NAME
    assert notebook.metadata.language_info.name == "accel"
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, \
                f"{path.name}: store notebooks without outputs"


@pytest.mark.skipif(not kernelspec_installed(),
                    reason="the `accel` kernelspec is not installed: run `bash scripts/test` "
                           "(or `accel kernel install --sys-prefix`)")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path: Path):
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    for text, small in SMALLER.get(path.name, []) if path.name in SHRUNK else []:
        assert any(text in cell.source for cell in notebook.cells), f"{path.name}: {text!r}"
        for cell in notebook.cells:
            cell.source = cell.source.replace(text, small)
    # as `bash scripts/run --headless` runs it: no widget state kept
    client = NotebookClient(notebook, kernel_name=KERNEL_NAME, timeout=120, allow_errors=True,
                            store_widget_state=False,
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute()
    check_the_html_shows_every_widget(notebook)
    for number, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        errors = [output for output in cell.outputs if output.output_type == "error"]
        if "raises-exception" in cell.metadata.get("tags", []):
            # a cell that shows an error on purpose must show one, as an accel error
            assert errors and errors[0].ename in ACCEL_ERROR_KINDS, \
                f"{path.name}, cell {number} should fail with an accel error:\n{cell.source}"
            continue
        assert not errors, (f"{path.name}, cell {number}: {errors[0].get('ename')}: "
                            f"{errors[0].get('evalue')}\n{cell.source}")
        if has_expression(cell.source):
            assert any(output.output_type == "execute_result" for output in cell.outputs), \
                f"{path.name}, cell {number} has no result:\n{cell.source}"
