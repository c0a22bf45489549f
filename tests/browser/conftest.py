"""The browser tests' fixtures: one JupyterLab server and one headless Chromium for the session.

The project's rule is to use the kernel as a user would: JupyterLab from this Python's
environment (the project's .venv), on 127.0.0.1, driven by Debian's `chromium` through
selenium. The server gets a random free port, a token, a temporary root directory (the
notebooks the tests write) and temporary settings, workspaces and runtime directories, so a
developer's own JupyterLab state never leaks in. The `accel` kernelspec it finds is written
for this checkout (this Python, `-m accel_kernel.kernel`) into a temporary directory put
first on JUPYTER_PATH, as tests/kernel/conftest.py does, with this checkout's built
highlighting extension (accel_kernel/labextension/); ipywidgets' JupyterLab extension comes
from the environment.

Without chromium, chromedriver or selenium the tests skip with the reason, except under
`CI=true`, where scripts/setup installs them and their absence is a failure.

Screenshots go to `$ACCEL_SCREENSHOTS` when it is set, else to a pytest temporary directory
(`screenshots`), so a person can look at them.
"""
from __future__ import annotations

import importlib.util
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from accel_kernel.kernel.install import KERNEL_NAME, write_kernelspec

from .lab import Lab

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60
LABEXTENSION_NAME = "accel-kernel-codemirror"

LAB_SETTINGS = {
    # no "Would you like to get notified about official Jupyter news?" toast on a first start
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false"},
    # every cell in the DOM, also those scrolled out of view
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def missing_tools() -> str:
    """Why the browser tests cannot run here ("" when they can)."""
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if importlib.util.find_spec("selenium") is None:
        missing.append("the selenium package")
    if not missing:
        return ""
    return ("the browser tests need " + ", ".join(missing)
            + " (apt-get install chromium chromium-driver; pip install -e '.[test]')")


@pytest.fixture(scope="session")
def browser_tools() -> None:
    reason = missing_tools()
    if reason and os.environ.get("CI") == "true":
        pytest.fail(reason + ": CI installs them (scripts/setup)")
    if reason:
        pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def lab_environment(root: Path) -> dict[str, str]:
    """The server's environment: temporary Jupyter state and this checkout first on the
    kernel's import path."""
    jupyter_path = root / "share"
    spec = jupyter_path / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True)
    write_kernelspec(spec)
    # this checkout's highlighting extension (first on the path: it wins over an installed one)
    (jupyter_path / "labextensions").mkdir()
    (jupyter_path / "labextensions" / LABEXTENSION_NAME).symlink_to(
        REPO / "accel_kernel" / "labextension")
    settings = root / "settings"
    for name, values in LAB_SETTINGS.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    env = dict(os.environ)
    env.update({
        "JUPYTER_PATH": os.pathsep.join(filter(None, [str(jupyter_path),
                                                      os.environ.get("JUPYTER_PATH")])),
        "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
        "JUPYTER_CONFIG_DIR": str(root / "config"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(root / "workspaces"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                    os.environ.get("PYTHONPATH")])),
    })
    return env


def wait_until_answering(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"jupyter lab exited ({server.returncode}):\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"jupyter lab did not answer {url} in {START_TIMEOUT} s:\n"
                       f"{log.read_text()}")


@pytest.fixture(scope="session")
def lab_server(browser_tools, tmp_path_factory: pytest.TempPathFactory):
    """A running `jupyter lab`: yields (base url, token, notebook directory)."""
    root = tmp_path_factory.mktemp("lab")
    notebooks = root / "notebooks"
    notebooks.mkdir()
    port, token = free_port(), secrets.token_hex(16)
    log = root / "server.log"
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser",
               "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
               "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={notebooks}"]
    if os.geteuid() == 0:
        command.append("--allow-root")      # CI runs as root
    with open(log, "w") as out:
        server = subprocess.Popen(command, env=lab_environment(root), stdout=out,
                                  stderr=subprocess.STDOUT, cwd=notebooks)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(f"{base}/api/status?token={token}", server, log)
        yield base, token, notebooks
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture(scope="session")
def driver(browser_tools):
    """One headless Chromium for the session."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--window-size=1400,1000", "--disable-gpu",
                     "--disable-dev-shm-usage"):
        options.add_argument(argument)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")   # Chromium refuses to run as root in its sandbox
    browser = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("ACCEL_SCREENSHOTS")
    directory = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.fixture
def lab(request, lab_server, driver, screenshots) -> Lab:
    """The browser on the server. Afterwards: a screenshot `failed-TEST` when the test failed,
    and every kernel the test started is shut down."""
    base, token, notebooks = lab_server
    page = Lab(driver, base, token, notebooks, screenshots)
    yield page
    report = getattr(request.node, "call_report", None)
    if report is not None and report.failed:
        page.screenshot(f"failed-{request.node.name}")
    page.shutdown_kernels()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps the test's own report on the item, for the `lab` fixture's teardown."""
    report = yield
    if report.when == "call":
        item.call_report = report
    return report


@pytest.hookimpl(trylast=True)      # after tests/conftest.py's sort by slowness
def pytest_collection_modifyitems(config, items):
    """The browser tests are marked `browser` and go first, one after the other: xdist's
    worksteal deals the front of the collection to one worker and steals from the back of a
    worker's queue, so in the suite one JupyterLab server and one browser serve them all. (In
    a small run, a worker that runs out of tests may take the last of them and start its own.)"""
    here = Path(__file__).parent
    mine = [item for item in items if here in item.path.parents]
    for item in mine:
        item.add_marker(pytest.mark.browser)
    others = [item for item in items if here not in item.path.parents]
    items[:] = mine + others
