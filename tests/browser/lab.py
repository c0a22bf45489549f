"""What a user does in JupyterLab, as helpers for the browser tests: write a notebook, open
it, run a cell, read its output, press a widget's button, take a screenshot.

A `Lab` is one browser tab on one server (tests/browser/conftest.py makes both). Cells are
found by their index in the open notebook's DOM (JupyterLab draws every cell: the settings
conftest.py writes turn its windowing off). Every wait polls the DOM until a condition holds
or `TIMEOUT` seconds pass, then fails with what the page showed.
"""
from __future__ import annotations

import json
import re
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

import nbformat

TIMEOUT = 60
EXECUTED = re.compile(r"^\[(\d+)\]:$")
T = TypeVar("T")

PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"     # the notebook tab in view
KERNELSPEC = {"name": "accel", "display_name": "accel", "language": "accel"}


def wait_for(condition: Callable[[], T], what: str, timeout: float = TIMEOUT,
             interval: float = 0.1) -> T:
    """Poll `condition` every `interval` seconds until it gives a true value, which is
    returned."""
    from selenium.common.exceptions import StaleElementReferenceException
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except StaleElementReferenceException:   # JupyterLab redrew the node meanwhile
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


@dataclass
class Lab:
    driver: object          # a selenium WebDriver
    base: str               # http://127.0.0.1:PORT
    token: str
    notebooks: Path         # the server's root directory
    screenshots: Path

    # ------------------------------------------------------------ notebooks

    def write_notebook(self, name: str, cells: list[str]) -> Path:
        """An accel notebook of code cells, on disk in the server's root."""
        notebook = nbformat.v4.new_notebook(metadata={"kernelspec": KERNELSPEC})
        notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
        path = self.notebooks / name
        nbformat.write(notebook, path)
        return path

    def open(self, name: str) -> None:
        """Open `name` in JupyterLab and wait until its kernel is idle."""
        # `reset`: a fresh layout, not the tabs an earlier test left open
        self.driver.get(f"{self.base}/lab/tree/{name}?reset&token={self.token}")
        wait_for(lambda: self._css(f"{PANEL} .jp-Cell") and not self._css(f"{PANEL} .jp-Spinner"),
                 f"the notebook {name} to show its cells")
        self.wait_idle()

    def kernel_status(self) -> str:
        """The status bar's "accel | Idle" ("No Kernel | Initializing" while it starts)."""
        texts = [item.text for item in self._css(".jp-StatusBar-Item")]
        return next((text for text in texts if " | " in text), "")

    def wait_idle(self, timeout: float = TIMEOUT) -> None:
        """Wait until the open notebook's accel kernel is connected and idle."""
        wait_for(lambda: self.kernel_status() == "accel | Idle",
                 "the kernel to be idle", timeout)

    def shutdown_kernels(self) -> None:
        """Shut down every kernel of the server (through its REST API)."""
        for kernel in self._api("GET", "kernels"):
            self._api("DELETE", f"kernels/{kernel['id']}")

    def _api(self, method: str, path: str):
        request = urllib.request.Request(f"{self.base}/api/{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None

    # ------------------------------------------------------------ cells

    def cells(self) -> list:
        return self._css(f"{PANEL} .jp-Notebook .jp-Cell")

    def cell(self, index: int):
        return self.cells()[index]

    def prompt(self, index: int) -> str:
        return self.cell(index).find_element("css selector", ".jp-InputPrompt").text.strip()

    def type_into(self, index: int, text: str) -> None:
        """Replace cell `index`'s source by typing into its editor, as a user does."""
        from selenium.webdriver import ActionChains
        from selenium.webdriver.common.keys import Keys
        self.edit(index)
        (ActionChains(self.driver).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL)
         .send_keys(Keys.DELETE).send_keys(text).perform())
        wait_for(lambda: self.source(index) == text, f"cell {index} to read {text!r}")

    def edit(self, index: int) -> None:
        """Click into cell `index`'s editor (its cursor ends up there)."""
        self.cell(index).find_element("css selector", ".jp-InputArea-editor").click()
        wait_for(lambda: self.cell(index).find_elements("css selector", ".cm-focused"),
                 f"cell {index}'s editor to have the focus")

    def source(self, index: int) -> str:
        lines = self.cell(index).find_elements("css selector", ".cm-content .cm-line")
        return "\n".join(line.text for line in lines)

    def start_cell(self, index: int) -> str:
        """Shift-Enter in cell `index`; returns its prompt from before."""
        from selenium.webdriver import ActionChains
        from selenium.webdriver.common.keys import Keys
        before = self.prompt(index)
        self.edit(index)
        (ActionChains(self.driver).key_down(Keys.SHIFT).send_keys(Keys.ENTER)
         .key_up(Keys.SHIFT).perform())
        wait_for(lambda: self.prompt(index) != before, f"cell {index} to start")
        return before

    def wait_cell(self, index: int, timeout: float = TIMEOUT) -> int:
        """Wait until cell `index` has run; returns its execution count."""
        found = wait_for(lambda: EXECUTED.match(self.prompt(index)),
                         f"cell {index} to finish (prompt {self.prompt(index)!r})", timeout)
        return int(found.group(1))

    def run_cell(self, index: int, timeout: float = TIMEOUT) -> str:
        """Run cell `index` and return its output's text once it has run."""
        self.start_cell(index)
        self.wait_cell(index, timeout)
        return self.output(index)

    def outputs(self, index: int) -> list:
        return self.cell(index).find_elements("css selector", ".jp-OutputArea-output")

    def output(self, index: int) -> str:
        """The text of cell `index`'s outputs (read again while one is being redrawn)."""
        from selenium.common.exceptions import StaleElementReferenceException
        for _ in range(50):
            try:
                return "\n".join(output.text for output in self.outputs(index))
            except StaleElementReferenceException:
                time.sleep(0.1)
        raise AssertionError(f"cell {index}'s outputs kept changing")

    def within(self, index: int, css: str) -> list:
        """The elements matching `css` in cell `index`'s outputs."""
        return self.cell(index).find_elements("css selector", f".jp-OutputArea {css}")

    def text(self, index: int, css: str) -> str:
        """The text of the first element matching `css` in cell `index`'s outputs; "" while
        there is none (a widget being drawn or redrawn)."""
        from selenium.common.exceptions import StaleElementReferenceException
        try:
            found = self.within(index, css)
            return found[0].text if found else ""
        except StaleElementReferenceException:
            return ""

    def drag(self, element, dx: int) -> None:
        """Press the mouse on `element`, move it `dx` pixels right (left if negative), let go."""
        from selenium.webdriver import ActionChains
        (ActionChains(self.driver).click_and_hold(element).move_by_offset(dx, 0).release()
         .perform())

    def press(self, element, key: str) -> None:
        """A key (a name of selenium's `Keys`: `ARROW_LEFT`, `ENTER`) sent to `element`."""
        from selenium.webdriver.common.keys import Keys
        element.send_keys(getattr(Keys, key))

    def save(self) -> None:
        from selenium.webdriver import ActionChains
        from selenium.webdriver.common.keys import Keys
        (ActionChains(self.driver).key_down(Keys.CONTROL).send_keys("s")
         .key_up(Keys.CONTROL).perform())

    # ------------------------------------------------------------ pictures

    def screenshot(self, name: str) -> Path:
        path = self.screenshots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def _css(self, selector: str) -> list:
        return self.driver.find_elements("css selector", selector)
