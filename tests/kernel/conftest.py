"""Make the `accel` kernelspec findable for the kernel tests, on a fresh clone too.

The kernelspec (this Python, `-m accel_kernel.kernel`) is written into a temporary directory
that is put first on JUPYTER_PATH for the whole test session, so nothing needs to be installed
beforehand and an older installed `accel` kernelspec cannot shadow this checkout's.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from accel_kernel.kernel.install import KERNEL_NAME, write_kernelspec


@pytest.fixture(scope="session", autouse=True)
def accel_kernelspec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True)
    write_kernelspec(spec)
    previous = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(root), previous]))
    yield spec
    if previous is None:
        os.environ.pop("JUPYTER_PATH", None)
    else:
        os.environ["JUPYTER_PATH"] = previous


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of this folder is marked `kernel` (`-m "not kernel"` skips them)."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.kernel)
