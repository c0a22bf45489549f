"""Install the `accel` kernelspec so Jupyter can find the kernel.

`install_kernelspec()` writes `kernel.json` (this Python, `-m accel_kernel.kernel`,
`interrupt_mode: signal`), the logos and `kernel.js` from `resources/` into a temporary
directory and hands it to jupyter_client's `KernelSpecManager`. The CLI's
`accel kernel install [--user|--sys-prefix|--prefix DIR]` calls it.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

KERNEL_NAME = "accel"
RESOURCE_FILES = ("logo-32x32.png", "logo-64x64.png", "kernel.js")


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
    return directory


def install_kernelspec(user: bool = False, sys_prefix: bool = False,
                       prefix: str | None = None) -> str:
    """Install the `accel` kernelspec; returns the directory it was installed in.

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
        return KernelSpecManager().install_kernel_spec(
            str(source), kernel_name=KERNEL_NAME, user=user, prefix=prefix)
