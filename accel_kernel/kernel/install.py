"""Install the `accel` kernelspec so Jupyter can find the kernel, and the JupyterLab extension
that gives the editor the accel language.

`install_kernelspec()` writes `kernel.json` (this Python, `-m accel_kernel.kernel`,
`interrupt_mode: signal`), the logos and `kernel.js` (with highlight.py's word lists written
in) from `resources/` into a temporary directory and hands it to jupyter_client's
`KernelSpecManager`; then it copies the prebuilt extension (`accel_kernel/labextension/`) to
`labextensions/accel-kernel-codemirror/` of the same Jupyter data directory. A wheel installs
that extension by itself (pyproject.toml's data-files); an editable install (`pip install -e
.`, scripts/setup) does not, so scripts/setup's `accel kernel install --sys-prefix` does. The
CLI's `accel kernel install [--user|--sys-prefix|--prefix DIR]` calls it.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

KERNEL_NAME = "accel"
RESOURCE_FILES = ("logo-32x32.png", "logo-64x64.png", "kernel.js")
LABEXTENSION_NAME = "accel-kernel-codemirror"     # labextension/package.json's name
_WORDS_MARKER = re.compile(r"/\* ACCEL_WORDS \*/ \{.*\};")


def kernel_json(python: str | None = None) -> dict[str, Any]:
    """The kernelspec: how Jupyter starts the kernel."""
    return {
        "argv": [python or sys.executable, "-m", "accel_kernel.kernel", "-f",
                 "{connection_file}"],
        "display_name": "accel",
        "language": "accel",
        "interrupt_mode": "signal",
        "metadata": {"debugger": False},
    }


def write_kernelspec(directory: str | Path) -> Path:
    """Write kernel.json and the resources into `directory` (which must exist)."""
    directory = Path(directory)
    (directory / "kernel.json").write_text(json.dumps(kernel_json(), indent=2) + "\n")
    package = resources.files("accel_kernel.kernel").joinpath("resources")
    for name in RESOURCE_FILES:
        source = package.joinpath(name)
        if source.is_file():
            with resources.as_file(source) as path:
                shutil.copyfile(path, directory / name)
    script = directory / "kernel.js"
    if script.is_file():
        script.write_text(with_word_lists(script.read_text()))
    return directory


def with_word_lists(script: str) -> str:
    """kernel.js with highlight.py's word lists in place of its empty ones."""
    from .highlight import word_lists
    words = json.dumps(word_lists())
    return _WORDS_MARKER.sub(lambda _: f"/* ACCEL_WORDS */ {words};", script, count=1)


def install_labextension(data_dir: str | Path) -> Path | None:
    """Copy the prebuilt JupyterLab extension into `data_dir`/labextensions (replacing an
    older copy); returns where, or None when this package carries no built extension."""
    source = resources.files("accel_kernel").joinpath("labextension")
    if not source.joinpath("package.json").is_file():
        return None
    target = Path(data_dir) / "labextensions" / LABEXTENSION_NAME
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with resources.as_file(source) as path:
        shutil.copytree(path, target)
    return target


def install_kernelspec(user: bool = False, sys_prefix: bool = False,
                       prefix: str | None = None) -> str:
    """Install the `accel` kernelspec and the JupyterLab extension; returns the directory
    the kernelspec was installed in.

    With none of the options it goes to the system-wide Jupyter data directory, as
    `jupyter kernelspec install` does; `sys_prefix` means this Python environment.
    """
    from jupyter_client.kernelspec import KernelSpecManager
    if sys_prefix:
        prefix = sys.prefix
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / KERNEL_NAME
        source.mkdir()
        write_kernelspec(source)
        installed = KernelSpecManager().install_kernel_spec(
            str(source), kernel_name=KERNEL_NAME, user=user, prefix=prefix)
    # .../share/jupyter/kernels/accel -> .../share/jupyter
    install_labextension(Path(installed).parent.parent)
    return installed
